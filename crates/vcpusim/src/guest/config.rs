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

/// `SPIN_THRESHOLD` (arch/x86/include/asm/spinlock.h, Linux 4.4: `1 << 15`): the loop count a
/// PV qspinlock waiter spins in `pv_wait_node` / `pv_wait_head` before `pv_wait`.
pub const SPIN_THRESHOLD: u64 = 1 << 15;

/// Cycles of one spin iteration (`READ_ONCE` + `cpu_relax`, i.e. PAUSE): about 10 on the
/// seed's Westmere Xeon E5645 (Intel's optimization manual gives "about 10 cycles" for PAUSE
/// before Skylake). Assumed: the loop's load hits the cache.
pub const PAUSE_LOOP_CYCLES: u64 = 10;

/// The E5645's clock, 2.40 GHz (seed 002 section 3.1), in cycles per microsecond.
pub const E5645_CYCLES_PER_US: u64 = 2400;

/// Default `pv_spin`: SPIN_THRESHOLD iterations of PAUSE_LOOP_CYCLES at 2.4 GHz = 136.5 us.
pub const PV_SPIN_DEFAULT: Nanos = SPIN_THRESHOLD * PAUSE_LOOP_CYCLES * 1000 / E5645_CYCLES_PER_US;

/// The guest kernel versions a `[guest] kernel` preset names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelPreset {
    /// The seeds' Linux 3.2 guest: ticket spinlocks, futex wake IPI under the bucket lock, no
    /// yield after call-function IPIs, every mm_cpumask vCPU interrupted. The default.
    Linux32,
    /// Linux 4.4 as a Xen HVM guest with PV extensions (seed 002's guest): PV qspinlocks,
    /// wake_q futex wake-ups, SCHEDOP_yield after call-function IPIs to a stolen vCPU; TLB
    /// shootdowns still interrupt lazy-TLB vCPUs (4.4's native_flush_tlb_others sends to the
    /// whole mm_cpumask; docs/model.md § seed 002: the Linux 4.4 guest).
    Linux44,
}

impl KernelPreset {
    pub const NAMES: &'static [&'static str] = &["linux-3.2", "linux-4.4"];

    pub fn name(self) -> &'static str {
        match self {
            KernelPreset::Linux32 => "linux-3.2",
            KernelPreset::Linux44 => "linux-4.4",
        }
    }

    pub fn from_name(name: &str) -> Option<KernelPreset> {
        match name {
            "linux-3.2" => Some(KernelPreset::Linux32),
            "linux-4.4" => Some(KernelPreset::Linux44),
            _ => None,
        }
    }

    /// The preset's behaviour keys on top of `base` (which keeps its tick and bucket count).
    pub fn apply(self, base: &GuestConfig) -> GuestConfig {
        let mut c = base.clone();
        match self {
            KernelPreset::Linux32 => {
                let d = GuestConfig::default();
                c.futex_wake_ipi = d.futex_wake_ipi;
                c.tlb_targets = d.tlb_targets;
                c.spinlock = d.spinlock;
                c.call_function_yield = d.call_function_yield;
            }
            KernelPreset::Linux44 => {
                c.futex_wake_ipi = FutexWakeIpi::AfterUnlock;
                c.tlb_targets = TlbTargets::AllInMask;
                c.spinlock = SpinlockKind::PvQueued;
                c.call_function_yield = true;
            }
        }
        c
    }
}

/// `GuestConfig::irs_handler`'s default (see there).
pub const IRS_HANDLER_DEFAULT: Nanos = 20 * crate::time::US;

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
    /// PV qspinlock: how long a waiter spins (time on its vCPU) before it blocks in
    /// SCHEDOP_poll (`SPIN_THRESHOLD` iterations; `PV_SPIN_DEFAULT`).
    pub pv_spin: Nanos,
    /// After sending call-function IPIs (a TLB shootdown's `smp_call_function_many`), yield
    /// the pCPU (SCHEDOP_yield) if a target vCPU's runstate is runnable (Linux 4.4
    /// `xen_smp_send_call_function_ipi`, arch/x86/xen/smp.c).
    pub call_function_yield: bool,
    /// Seed 003 (IRS): the guest registered the SA vIRQ and handles preemption notices
    /// (`Upcall::PreemptNotice`, guest/irs.rs: "Linux kernel: 130 LOC", slide 9).
    pub irs: bool,
    /// The IRS notice handler's work (deschedule the current thread, pick the least-waiting
    /// sibling, move the thread, acknowledge): 20 us, the low end of the slides' measured
    /// "20-26 us" for SA send + migration + completion (seed 003 slide 7). The model delivers
    /// the notice at once and completes the switch at the ack, so the handler carries the whole
    /// delay; its split among the three steps is not given.
    pub irs_handler: Nanos,
}

impl Default for GuestConfig {
    fn default() -> Self {
        GuestConfig {
            futex_wake_ipi: FutexWakeIpi::UnderLock,
            tlb_targets: TlbTargets::AllInMask,
            spinlock: SpinlockKind::Ticket,
            tick: 4 * MS,
            futex_buckets: 256,
            pv_spin: PV_SPIN_DEFAULT,
            call_function_yield: false,
            irs: false,
            irs_handler: IRS_HANDLER_DEFAULT,
        }
    }
}
