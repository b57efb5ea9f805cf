//! Guest-kernel options: which Linux behaviour the guest kernel follows.

use crate::time::{Nanos, MS};
use crate::workload::program::SpinlockKind;

/// When `futex_wake` sends the reschedule IPI relative to releasing the hash-bucket lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FutexWakeIpi {
    /// Inside the bucket-lock critical section, as the seed's Linux 3.2 guests do
    /// (seed 000 section 3.1.1, Figure 4). Default.
    UnderLock,
    /// After releasing the lock (wake_q, Linux 4.2+, commit 1d0dcb3ad9d3).
    AfterUnlock,
}

/// Which vCPUs a TLB shootdown interrupts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlbTargets {
    /// Every other vCPU in the mm's cpumask, including idle ones in lazy-TLB mode (Linux 3.2).
    /// Default.
    AllInMask,
    /// Skip vCPUs in lazy-TLB mode (on_each_cpu_cond_mask(tlb_is_not_lazy), Linux 5.x+).
    SkipLazy,
}

#[derive(Clone, Debug, PartialEq)]
pub struct GuestConfig {
    pub futex_wake_ipi: FutexWakeIpi,
    pub tlb_targets: TlbTargets,
    /// Kind of the guest's kernel spinlocks (futex buckets, kernel locks).
    pub spinlock: SpinlockKind,
    /// Guest scheduler tick (CONFIG_HZ=250 -> 4 ms): time-slicing between threads on one vCPU and
    /// periodic load balancing.
    pub tick: Nanos,
    /// Number of futex hash buckets (Linux: 256 per CPU, rounded to a power of two; here what
    /// matters is which futexes share a bucket lock).
    pub futex_buckets: usize,
}

impl Default for GuestConfig {
    fn default() -> Self {
        GuestConfig {
            futex_wake_ipi: FutexWakeIpi::UnderLock,
            tlb_targets: TlbTargets::AllInMask,
            spinlock: SpinlockKind::Ticket,
            tick: 4 * MS,
            futex_buckets: 256,
        }
    }
}
