//! What a guest kernel counts about itself (`GuestKernel::stats`): its workload's progress, its
//! futex and TLB-shootdown activity, and the latencies its threads saw. The host counts what a
//! hypervisor sees (time split, IPIs, exits, preemptions: `metrics/vm_stats.rs`); the report
//! (`run/report.rs`) reads both.

use crate::metrics::histogram::Histogram;

#[derive(Clone, Debug, Default)]
pub struct GuestStats {
    /// `Progress` ops executed.
    pub progress: u64,
    /// Times a thread went to sleep in futex_wait.
    pub futex_waits: u64,
    /// futex_wake calls, whether or not anyone was woken.
    pub futex_wakes: u64,
    /// TLB shootdowns with at least one target.
    pub tlb_shootdowns: u64,
    /// PV qspinlock waits that reached `pv_wait` (SCHEDOP_poll), whether or not they blocked.
    pub pv_polls: u64,
    /// PV qspinlock unlocks that kicked the head (`_Q_SLOW_VAL`).
    pub pv_kicks: u64,
    /// Contended spinlock acquisitions: from the first failed attempt to acquisition.
    pub spin_wait: Histogram,
    /// From the start of a shootdown until its initiator sees the last acknowledgement.
    pub tlb_shootdown: Histogram,
}
