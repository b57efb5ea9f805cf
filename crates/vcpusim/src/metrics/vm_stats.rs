//! Per-VM counters the host collects during a run: what a hypervisor sees of a VM (its time
//! split, its vCPUs' runnable waits, IPIs, exits, preemptions and lock preemptions). What the
//! guest kernel counts about itself is in `guest/stats.rs`.

use super::histogram::Histogram;
use crate::time::Nanos;
use crate::vmexit::{IpiKind, TimeKind};
use std::collections::BTreeMap;

/// Where a yield's vCPU was, for [`VmStats::yields_by_fn`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum YieldFnClass {
    IpiWait = 0,
    LockSpin = 1,
    Other = 2,
}

#[derive(Clone, Debug, Default)]
pub struct VmStats {
    pub user_ns: Nanos,
    pub kernel_ns: Nanos,
    pub spin_ns: Nanos,
    pub tlb_wait_ns: Nanos,
    pub user_spin_ns: Nanos,
    /// Idle polling before HLT (`[guest] haltpoll`).
    pub idle_poll_ns: Nanos,
    pub irq_ns: Nanos,
    pub overhead_ns: Nanos,
    /// Lock-holder preemptions: a vCPU descheduled (not halted) while its thread holds a
    /// spinlock, by lock (indexed by `LockId`, grown on first count: an index per count, not a
    /// String-keyed lookup); `lhp_by_class` sums them by class.
    pub lhp_by_lock: Vec<u64>,
    /// Lock-waiter preemptions: descheduled while spinning on a ticket lock.
    pub lwp: u64,
    pub ipis_sent: BTreeMap<IpiKind, u64>,
    pub ple_exits: u64,
    /// Every yield the host took: pause-loop exits and SCHEDOP_yield hypercalls.
    pub yields: u64,
    /// SCHEDOP_yield hypercalls taken (Linux 4.4's `xen_smp_send_call_function_ipi`: seed 002's
    /// IPI yields).
    pub yields_ipi: u64,
    /// The same yields (`yields`) by the guest kernel function the yielding vCPU was in, as seed
    /// 002 section 4.1 reads its instruction pointer (`hypervisor::critical_detect::yield_class`):
    /// waiting for IPI acknowledgements (`smp_call_function_*`, `flush_tlb_others`), spinning for
    /// a lock (a spinlock slow path, `rwsem_spin_on_owner`), anything else. Indexed by
    /// [`YieldFnClass`].
    pub yields_by_fn: [u64; 3],
    /// Blocks in SCHEDOP_poll (a PV spinlock waiter's `xen_qlock_wait`); HLT blocks are `halts`.
    pub poll_blocks: u64,
    /// Kicks (EVTCHNOP_send to a spinlock waiter, `xen_qlock_kick`) the host carried out.
    pub kicks: u64,
    /// Times one of its vCPUs entered urgent state (UVF, seed 000 section 3.1.3).
    pub urgent_entered: u64,
    /// Seed 002: vCPUs moved into the micro-sliced pool, by reason
    /// (`hypervisor::critical_events::AccelReason::idx`).
    pub accelerated: [u64; 4],
    /// Involuntary deschedules (preemptions) of its vCPUs.
    pub preemptions: u64,
    /// Times one of its vCPUs was switched in.
    pub switches_in: u64,
    pub halts: u64,
    pub wakeups: u64,
    /// HLTs after which a vCPU halt-polled (`[host.halt_poll]`; KVM `halt_attempted_poll`).
    pub halt_polls: u64,
    /// Of those, polls a wake-up ended before the vCPU blocked (KVM `halt_successful_poll`).
    pub halt_poll_successes: u64,
    /// vCPUs whose hard affinity lost its last pCPU in their pool and was reset to every pCPU
    /// (Xen's "Breaking affinity" in cpu_disable_scheduler).
    pub affinity_broken: u64,
    /// Time its vCPUs were runnable but not running, summed over them, the waits still open at
    /// the end of the run included: the steal time a guest is told of (KVM: the vCPU thread's
    /// `sched_info.run_delay`, arch/x86/kvm/x86.c `accumulate_steal_time`, Linux 3.2; Xen: time
    /// in RUNSTATE_runnable, xen/common/schedule.c `vcpu_runstate_change`, 4.4).
    pub runnable_wait_ns: Nanos,
    /// One sample per runnable wait that ended on a pCPU: from the moment a vCPU became runnable
    /// (created, preempted, yielding, or woken) to its switch-in (Xen 4.4's `schedule()` traces
    /// the same span, `now - next->runstate.state_entry_time`, in TRC_SCHED_SWITCH_INFNEXT).
    pub runnable_wait: Histogram,
    /// The waits of `runnable_wait` that began with a wake-up (Halted → Runnable): scheduling
    /// latency, wake to run, as `perf sched latency` measures it for a task.
    pub sched_latency: Histogram,
    /// Work done and work lost to each contention source (seed 001's model; zero without it).
    pub contention: ContentionTally,
}

/// What the contention model (`hardware/contention.rs`) cost a VM: the work its vCPUs did
/// (work-ns) and, per source, the work they would have done more in the same time with that
/// source's factor at 1.0 (`Factors::lost`). vms.csv `slowdown_<source>` = lost / done.
#[derive(Clone, Copy, Debug, Default)]
pub struct ContentionTally {
    pub work_ns: u64,
    pub lost_ns: [u64; crate::hardware::contention::SOURCES],
}

impl ContentionTally {
    /// Work lost to `source` per unit of work done (0 when nothing was done).
    pub fn slowdown(&self, source: crate::hardware::contention::Source) -> f64 {
        if self.work_ns == 0 {
            0.0
        } else {
            self.lost_ns[source.index()] as f64 / self.work_ns as f64
        }
    }
}

impl VmStats {
    pub fn charge(&mut self, kind: TimeKind, ns: Nanos) {
        let slot = match kind {
            TimeKind::User => &mut self.user_ns,
            TimeKind::Kernel => &mut self.kernel_ns,
            TimeKind::Spin => &mut self.spin_ns,
            TimeKind::TlbWait => &mut self.tlb_wait_ns,
            TimeKind::UserSpin => &mut self.user_spin_ns,
            TimeKind::IdlePoll => &mut self.idle_poll_ns,
            TimeKind::Irq => &mut self.irq_ns,
            TimeKind::Overhead => &mut self.overhead_ns,
        };
        *slot += ns;
    }

    /// The sum of the time columns (cpu_time_ms), saturating: check mode compares it with their
    /// checked sum, so an overflow is an invariant error, never a wrapped number.
    pub fn cpu_ns(&self) -> Nanos {
        [self.user_ns, self.kernel_ns, self.spin_ns, self.tlb_wait_ns, self.user_spin_ns, self.idle_poll_ns, self.irq_ns, self.overhead_ns]
            .iter()
            .fold(0, |a: Nanos, &c| a.saturating_add(c))
    }

    pub fn lhp_count(&self) -> u64 {
        self.lhp_by_lock.iter().sum()
    }

    /// One lock-holder preemption holding lock number `lock`.
    #[inline]
    pub fn count_lhp(&mut self, lock: usize) {
        if lock >= self.lhp_by_lock.len() {
            self.lhp_by_lock.resize(lock + 1, 0);
        }
        self.lhp_by_lock[lock] += 1;
    }

    /// Lock-holder preemptions by lock class (`class_of` names lock number `i`'s), classes with
    /// at least one only.
    pub fn lhp_by_class<'a>(&self, class_of: impl Fn(usize) -> &'a str) -> BTreeMap<&'a str, u64> {
        let mut by_class = BTreeMap::new();
        for (i, &n) in self.lhp_by_lock.iter().enumerate() {
            if n > 0 {
                *by_class.entry(class_of(i)).or_insert(0) += n;
            }
        }
        by_class
    }

    /// A runnable wait of `waited` ns ended with the vCPU put on a pCPU; `woken`: it began with a
    /// wake-up.
    #[inline]
    pub fn waited(&mut self, waited: Nanos, woken: bool) {
        self.runnable_wait_ns += waited;
        self.runnable_wait.record(waited);
        if woken {
            self.sched_latency.record(waited);
        }
    }
}
