//! What a guest kernel counts about itself (`GuestKernel::stats`): its workload's progress, its
//! futex and TLB-shootdown activity, and the latencies its threads saw. The host counts what a
//! hypervisor sees (time split, IPIs, exits, preemptions: `metrics/vm_stats.rs`); the report
//! (`run/report.rs`) reads both.

use super::spinlock::Spinlock;
use crate::ids::LockId;
use crate::metrics::histogram::Histogram;
use crate::time::Nanos;
use std::collections::BTreeMap;

/// Count, sum and extremes of a set of waits (one lock class's contended acquisitions).
#[derive(Clone, Copy, Debug, Default)]
pub struct WaitTally {
    pub count: u64,
    pub sum: u128,
    pub min: Nanos,
    pub max: Nanos,
}

impl WaitTally {
    pub fn record(&mut self, v: Nanos) {
        self.min = if self.count == 0 { v } else { self.min.min(v) };
        self.max = self.max.max(v);
        self.count += 1;
        self.sum += v as u128;
    }

    /// Add another set's waits: the tally of the union (exact: integer sums).
    pub fn merge(&mut self, other: &WaitTally) {
        if other.count == 0 {
            return;
        }
        self.min = if self.count == 0 { other.min } else { self.min.min(other.min) };
        self.max = self.max.max(other.max);
        self.count += other.count;
        self.sum += other.sum;
    }

    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum as f64 / self.count as f64
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct GuestStats {
    /// `Progress` ops executed.
    pub progress: u64,
    /// Times a thread went to sleep in futex_wait.
    pub futex_waits: u64,
    /// TaskQ tasks moved between queues by `stealTasks` (`Op::TaskqSteal`).
    pub taskq_stolen: u64,
    /// Idle polls the haltpoll governor started (`[guest] haltpoll`).
    pub idle_polls: u64,
    /// Of those, polls a wake-up ended in time (no HLT followed).
    pub idle_poll_wakeups: u64,
    /// futex_wake calls, whether or not anyone was woken.
    pub futex_wakes: u64,
    /// TLB shootdowns with at least one target.
    pub tlb_shootdowns: u64,
    /// PV qspinlock waits that reached `pv_wait` (SCHEDOP_poll), whether or not they blocked.
    pub pv_polls: u64,
    /// PV qspinlock unlocks that kicked the head (`_Q_SLOW_VAL`).
    pub pv_kicks: u64,
    /// Linux 6.x `pv_tlb_flush`: shootdown targets left out of the IPI mask because they were
    /// preempted (`KVM_VCPU_FLUSH_TLB` set instead).
    pub pv_tlb_deferred: u64,
    /// Linux 6.x `pv_sched_yield`: `KVM_HC_SCHED_YIELD` hypercalls made.
    pub pv_sched_yields: u64,
    /// Contended spinlock acquisitions: from the first failed attempt to acquisition.
    pub spin_wait: Histogram,
    /// The same waits by lock, indexed by `LockId` (grown when a lock is first waited for):
    /// recording one is an index, not a String-keyed lookup; the report
    /// merges them by class (`spin_wait_by_class`).
    pub spin_wait_by_lock: Vec<WaitTally>,
    /// From the start of a shootdown until its initiator sees the last acknowledgement.
    pub tlb_shootdown: Histogram,
    /// PARSEC barrier (`parsec_barrier_wait`) block-waits, `pthread_cond_wait` calls by phase:
    /// `[ARRIVAL]` waits for the last arriver, `[DEPARTURE]` waits for the previous use's last
    /// leaver (seed 000 section 4.2.3's "departure barrier waits"). Reported with `[run]
    /// barrier_waits`.
    pub barrier_waits: [u64; 2],
}

/// Indexes of [`GuestStats::barrier_waits`].
pub const ARRIVAL: usize = 0;
pub const DEPARTURE: usize = 1;

impl GuestStats {
    /// A contended acquisition of `lock` that waited `wait`.
    #[inline]
    pub fn record_spin_wait(&mut self, lock: LockId, wait: Nanos) {
        let i = lock.idx();
        if i >= self.spin_wait_by_lock.len() {
            self.spin_wait_by_lock.resize(i + 1, WaitTally::default());
        }
        self.spin_wait_by_lock[i].record(wait);
    }

    /// The waits by lock class (seed 002 Table 4a: page reclaim, page allocator, dentry, run
    /// queue ...; here `futex-queue`, `mm-sem-wait` and the programs' kernel lock names): every
    /// class of `always` (the program's `kernel_locks`), zero or not, and every other class once
    /// one of its locks was waited for. `locks` is the host-wide table that names each lock's
    /// class.
    pub fn spin_wait_by_class(&self, locks: &[Spinlock], always: &[LockId]) -> BTreeMap<String, WaitTally> {
        let mut by_class: BTreeMap<String, WaitTally> =
            always.iter().map(|l| (locks[l.idx()].class.clone(), WaitTally::default())).collect();
        for (i, w) in self.spin_wait_by_lock.iter().enumerate() {
            if w.count > 0 {
                by_class.entry(locks[i].class.clone()).or_default().merge(w);
            }
        }
        by_class
    }
}
