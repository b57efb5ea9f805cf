//! Per-VM counters the host collects during a run: what a hypervisor sees of a VM (its time
//! split, IPIs, exits, preemptions and lock preemptions). What the guest kernel counts about
//! itself is in `guest/stats.rs`.

use crate::vmexit::{IpiKind, TimeKind};
use crate::time::Nanos;
use std::collections::BTreeMap;

#[derive(Clone, Debug, Default)]
pub struct VmStats {
    pub user_ns: Nanos,
    pub kernel_ns: Nanos,
    pub spin_ns: Nanos,
    pub tlb_wait_ns: Nanos,
    pub user_spin_ns: Nanos,
    pub irq_ns: Nanos,
    pub overhead_ns: Nanos,
    /// Lock-holder preemptions: a vCPU descheduled (not halted) while its thread holds a
    /// spinlock, by lock class.
    pub lhp: BTreeMap<String, u64>,
    /// Lock-waiter preemptions: descheduled while spinning on a ticket lock.
    pub lwp: u64,
    pub ipis_sent: BTreeMap<IpiKind, u64>,
    pub ple_exits: u64,
    pub yields: u64,
    /// Times one of its vCPUs entered urgent state (UVF, seed 000 section 3.1.3).
    pub urgent_entered: u64,
    /// Involuntary deschedules (preemptions) of its vCPUs.
    pub preemptions: u64,
    /// Times one of its vCPUs was switched in.
    pub switches_in: u64,
    pub halts: u64,
    pub wakeups: u64,
    /// vCPUs whose hard affinity lost its last pCPU in their pool and was reset to every pCPU
    /// (Xen's "Breaking affinity" in cpu_disable_scheduler).
    pub affinity_broken: u64,
}

impl VmStats {
    pub fn charge(&mut self, kind: TimeKind, ns: Nanos) {
        let slot = match kind {
            TimeKind::User => &mut self.user_ns,
            TimeKind::Kernel => &mut self.kernel_ns,
            TimeKind::Spin => &mut self.spin_ns,
            TimeKind::TlbWait => &mut self.tlb_wait_ns,
            TimeKind::UserSpin => &mut self.user_spin_ns,
            TimeKind::Irq => &mut self.irq_ns,
            TimeKind::Overhead => &mut self.overhead_ns,
        };
        *slot += ns;
    }

    /// The sum of the time columns (cpu_time_ms), saturating: check mode compares it with their
    /// checked sum, so an overflow is an invariant error, never a wrapped number.
    pub fn cpu_ns(&self) -> Nanos {
        [self.user_ns, self.kernel_ns, self.spin_ns, self.tlb_wait_ns, self.user_spin_ns, self.irq_ns, self.overhead_ns]
            .iter()
            .fold(0, |a: Nanos, &c| a.saturating_add(c))
    }

    pub fn lhp_count(&self) -> u64 {
        self.lhp.values().sum()
    }
}
