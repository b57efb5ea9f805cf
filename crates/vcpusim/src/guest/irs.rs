//! Seed 003 (IRS, "Interference-Resilient Scheduling"), the guest side: the SA receiver (the
//! preemption notice's interrupt handler, slide 7) and the migrator (slide 8).
//!
//! The authors' Linux patch ("Linux kernel: 130 LOC", slide 9) is not public; this follows the
//! slides' description, on the model's guest scheduler (guest/scheduler.rs):
//! - **SA receiver.** `Upcall::PreemptNotice` is a per-CPU vIRQ (a Xen VIRQ is bound with
//!   `bind_virq_to_irqhandler` and handled by `handle_percpu_irq`): it becomes pending and the
//!   vCPU takes it before thread code (`take_notice`). Its handler (`irs_handler`, 20 us by
//!   default) "deschedules the thread on the to-be-preempted vCPU" and "moves the thread to a
//!   sibling vCPU with the least waiting time" (`notice_done`), then acknowledges
//!   (`Hypercall::PreemptAck`). Linux 3.x with CONFIG_PREEMPT_VOLUNTARY (the distributions'
//!   setting) reschedules on return from an interrupt only to user mode, so a thread interrupted
//!   in kernel code or holding a spinlock is not moved (it stays, and the hypervisor switches
//!   at the ack).
//! - **Least waiting time.** A sibling's wait is its runnable threads (current and queued) plus
//!   one if the hypervisor has it runnable but not running (the PV runstate, `PvArea::runnable`:
//!   a thread moved there waits for the pCPU too). With the migrator, each is divided by the
//!   sibling's capacity after steal time (`capacity`): Linux 3.x `scale_rt_power`.
//! - **Migrator.** (1) Load from `rt_avg` including steal: Linux 3.x `update_rq_clock_task`
//!   (kernel/sched/core.c) adds steal time to `rq->rt_avg` (`sched_rt_avg_update`, with
//!   CONFIG_PARAVIRT_TIME_ACCOUNTING and NONTASK_POWER) where `paravirt_steal_rq_enabled` is set,
//!   which in 3.x only KVM's guest does (Xen's from Linux 4.8): for a 3.x Xen guest the steal in
//!   `rt_avg` is the IRS patch's own (slide 8: "rt_avg which considers steal time"; our reading;
//!   docs/model.md § seed 003). `sched_avg_update` halves it every half
//!   `sysctl_sched_time_avg` (1000 ms), and `scale_rt_power` (kernel/sched/fair.c) scales a CPU's
//!   power by `(total - rt_avg) / total`, `total = sched_avg_period() + (clock - age_stamp)`.
//!   Wake placement then prefers an idle sibling whose capacity is not eaten by steal
//!   (`wake_capacity_ok`). (2) The wake-up balancer may preempt a task that IRS migrated: a
//!   thread waking on its previous vCPU, where an IRS-migrated thread now runs, is queued first
//!   there and that vCPU reschedules on its resched IPI (`irs_wake_preempt`), so the preempted
//!   vCPU's thread goes back (by idle balancing) and the woken one keeps its cache.
//! - **Cache warm-up** after a migration is **not modelled**: a thread runs at the same speed on
//!   any vCPU (docs/model.md § seed 003).

use super::kernel::GuestKernel;
use super::thread::{Step, Thread};
use crate::ids::ThreadId;
use crate::time::{Nanos, MS};
use crate::vmexit::{KernelFn, PvArea};

/// Half of `sysctl_sched_time_avg` (1000 ms, kernel/sched/core.c, Linux 3.x): `sched_avg_period`.
pub const SCHED_AVG_PERIOD: Nanos = 500 * MS;

/// The migrator's wake placement skips an idle sibling that has lost more than this share of
/// its time to steal (`rt_avg`): Linux's `select_idle_sibling` has no such threshold; an idle
/// CPU whose `cpu_power` is scaled down is avoided by the periodic balancer's load/power
/// comparison (`find_busiest_group`). One half is our reading of "estimate vCPU load based on
/// rt_avg which considers steal time" (seed 003 slide 8); assumed.
pub const STEAL_CAPACITY_FLOOR: f64 = 0.5;

/// Per-vCPU `rt_avg` as Linux 3.x keeps it (steal only: the model's guest has no RT tasks and
/// charges no IRQ time to it).
#[derive(Clone, Copy, Debug, Default)]
pub struct RtAvg {
    pub rt_avg: Nanos,
    pub age_stamp: Nanos,
    /// The PV area's steal time already added.
    pub steal_seen: Nanos,
}

/// The IRS state of a guest that handles preemption notices.
#[derive(Clone, Debug, Default)]
pub struct IrsGuest {
    /// The migrator is on (`[host.irs] migrator`).
    pub migrator: bool,
    /// Per vCPU index: a notice is pending (not yet taken).
    pub pending: Vec<bool>,
    /// Per vCPU index: in the notice handler, with the kernel function it interrupted.
    pub active: Vec<Option<KernelFn>>,
    /// Threads IRS moved, with the vCPU index they were moved from (cleared when they block,
    /// exit, or run on that vCPU again).
    pub migrated: Vec<(ThreadId, usize)>,
    /// Per vCPU index: a woken thread was queued first to preempt an IRS-migrated one.
    pub preempt_on_ipi: Vec<bool>,
    pub rt: Vec<RtAvg>,
    /// Threads moved by notice handlers, and wake-up preemptions of migrated threads.
    pub moved: u64,
    pub wake_preemptions: u64,
}

impl IrsGuest {
    pub fn new(vcpus: usize, migrator: bool) -> Self {
        IrsGuest {
            migrator,
            pending: vec![false; vcpus],
            active: vec![None; vcpus],
            migrated: Vec::new(),
            preempt_on_ipi: vec![false; vcpus],
            rt: vec![RtAvg::default(); vcpus],
            moved: 0,
            wake_preemptions: 0,
        }
    }
}

/// What the notice handler did (`GuestKernel::notice_done`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NoticeDone {
    /// The thread moved and the sibling (host-wide id) it went to, which needs a resched IPI.
    pub moved: Option<(ThreadId, crate::ids::VcpuId)>,
}

impl GuestKernel {
    /// `Upcall::PreemptNotice` on vCPU `i`: the SA vIRQ becomes pending (ignored by a guest that
    /// did not register it, which the hypervisor does not notify anyway).
    pub fn preempt_notice(&mut self, i: usize) {
        if let Some(irs) = self.irs.as_mut() {
            irs.pending[i] = true;
        }
    }

    /// Whether vCPU `i` is in (or was interrupted in) the notice handler.
    #[inline]
    pub fn in_notice_handler(&self, i: usize) -> bool {
        self.irs.as_ref().is_some_and(|irs| irs.active[i].is_some())
    }

    /// `run`: take a pending notice on vCPU `i` (the handler's work), if any.
    // Out of the interpreter's hot loop (IRS only): docs/speed.md.
    #[inline(never)]
    pub(super) fn take_notice(&mut self, i: usize) -> Option<Nanos> {
        let irs = self.irs.as_mut()?;
        if !irs.pending[i] || irs.active[i].is_some() {
            return None;
        }
        irs.pending[i] = false;
        irs.active[i] = Some(self.vcpus[i].func);
        self.vcpus[i].func = KernelFn::HandlePercpuIrq;
        Some(self.config.irs_handler)
    }

    /// The notice handler on vCPU `i` ended: deschedule its current thread if it was
    /// interrupted at a preemptible point (user mode, no spinlock held) and queue it on the
    /// sibling with the least waiting time. The caller sends that sibling a resched IPI and
    /// acknowledges the notice.
    pub fn notice_done(&mut self, threads: &mut [Thread], pv: &[PvArea], i: usize, now: Nanos) -> NoticeDone {
        let Some(irs) = self.irs.as_mut() else { return NoticeDone::default() };
        let interrupted = irs.active[i].take().unwrap_or(KernelFn::Idle);
        self.vcpus[i].func = interrupted;
        let Some(t) = self.vcpus[i].current else { return NoticeDone::default() };
        if interrupted != KernelFn::User || !threads[t.idx()].held.is_empty() || self.vcpus.len() < 2 {
            return NoticeDone::default();
        }
        let Some(to) = self.least_waiting_sibling(pv, i, now, threads[t.idx()].cpus.as_ref()) else { return NoticeDone::default() };
        self.vcpus[i].current = None;
        let to_id = self.vcpus[to].id;
        self.vcpus[to].runqueue.push_back(t);
        self.note_vcpu(i);
        self.note_vcpu(to);
        threads[t.idx()].vcpu = to_id;
        let irs = self.irs.as_mut().expect("checked above");
        irs.migrated.retain(|(m, _)| *m != t);
        irs.migrated.push((t, i));
        irs.moved += 1;
        NoticeDone { moved: Some((t, to_id)) }
    }

    /// The sibling of `i` with the least waiting time (module doc); ties go to the first after
    /// `i` in index order. Only siblings in the thread's CPU affinity `cpus` qualify.
    fn least_waiting_sibling(
        &mut self,
        pv: &[PvArea],
        i: usize,
        now: Nanos,
        cpus: Option<&crate::hardware::cpumask::IndexMask>,
    ) -> Option<usize> {
        let n = self.vcpus.len();
        let migrator = self.irs.as_ref().is_some_and(|irs| irs.migrator);
        let mut best: Option<(f64, usize)> = None;
        for k in 1..n {
            let u = (i + k) % n;
            if cpus.is_some_and(|m| !m.contains(u)) {
                continue;
            }
            let gv = &self.vcpus[u];
            let threads = gv.runqueue.len() + usize::from(gv.current.is_some());
            let waiting = threads + usize::from(pv[gv.id.idx()].runnable);
            let score = if migrator { (waiting as f64 + 1.0) / self.capacity(pv, u, now).max(1e-3) } else { waiting as f64 };
            if best.is_none_or(|(b, _)| score < b) {
                best = Some((score, u));
            }
        }
        best.map(|(_, u)| u)
    }

    /// vCPU `u`'s capacity after steal: `scale_rt_power`'s `available / total` (module doc),
    /// with the steal the PV area reports folded into `rt_avg` and aged (`sched_avg_update`).
    /// Steal is taken in whole ticks, the rest carried, as 3.x's `update_rq_clock_task`
    /// (`steal_ticks(steal) * TICK_NSEC`, `prev_steal_time_rq`).
    pub fn capacity(&mut self, pv: &[PvArea], u: usize, now: Nanos) -> f64 {
        let id = self.vcpus[u].id;
        let tick = self.config.tick.max(1);
        let Some(irs) = self.irs.as_mut() else { return 1.0 };
        let rt = &mut irs.rt[u];
        let steal = pv[id.idx()].steal_time_ns.saturating_sub(rt.steal_seen) / tick * tick;
        rt.rt_avg += steal;
        rt.steal_seen += steal;
        while now.saturating_sub(rt.age_stamp) > SCHED_AVG_PERIOD {
            rt.age_stamp += SCHED_AVG_PERIOD;
            rt.rt_avg /= 2;
        }
        let total = SCHED_AVG_PERIOD + (now - rt.age_stamp);
        (total.saturating_sub(rt.rt_avg)) as f64 / total as f64
    }

    /// The migrator's test in wake placement: idle sibling `u` still has most of its capacity.
    pub(super) fn wake_capacity_ok(&mut self, pv: &[PvArea], u: usize, now: Nanos) -> bool {
        if !self.irs.as_ref().is_some_and(|irs| irs.migrator) {
            return true;
        }
        !pv[self.vcpus[u].id.idx()].runnable && self.capacity(pv, u, now) >= STEAL_CAPACITY_FLOOR
    }

    /// The migrator's wake-up preemption: thread `t` wakes with `prev` (an index) its previous
    /// vCPU, where an IRS-migrated thread runs; returns true if `t` was queued first there to
    /// preempt it at the resched IPI.
    pub(super) fn irs_wake_preempt(&mut self, t: ThreadId, prev: usize) -> bool {
        let Some(irs) = self.irs.as_mut() else { return false };
        if !irs.migrator {
            return false;
        }
        let Some(cur) = self.vcpus[prev].current else { return false };
        if !irs.migrated.iter().any(|(m, _)| *m == cur) || cur == t {
            return false;
        }
        self.vcpus[prev].runqueue.push_front(t);
        irs.preempt_on_ipi[prev] = true;
        irs.wake_preemptions += 1;
        self.note_vcpu(prev);
        true
    }

    /// On return from a resched IPI on vCPU `i`: the migrator's pending wake-up preemption of an
    /// IRS-migrated thread, if its thread is at a preemptible point (user mode, no lock). The
    /// host round-robins then (`round_robin`): the woken thread, first in the queue, runs.
    pub fn irs_preempt_due(&mut self, threads: &[Thread], i: usize) -> bool {
        let Some(irs) = self.irs.as_mut() else { return false };
        if !std::mem::take(&mut irs.preempt_on_ipi[i]) {
            return false;
        }
        self.vcpus[i].current.is_some_and(|cur| {
            let th = &threads[cur.idx()];
            th.held.is_empty() && user_mode(th.steps.front())
        })
    }

    /// Thread `t` blocked: it is no longer a migrated task running away from its vCPU.
    #[inline]
    pub fn irs_forget(&mut self, t: ThreadId) {
        if let Some(irs) = self.irs.as_mut() {
            irs.migrated.retain(|(m, _)| *m != t);
        }
    }
}

/// Whether a thread whose next step is `front` was interrupted in user mode: a user-mode run or
/// poll (or a step that has not started kernel work yet). A thread spinning for a kernel lock
/// (`Step::Lock`, possibly holding a ticket), waiting for TLB acknowledgements or in any kernel
/// function is in kernel mode, where Linux 3.x (CONFIG_PREEMPT_VOLUNTARY) does not reschedule on
/// interrupt return.
pub(super) fn user_mode(front: Option<&Step>) -> bool {
    match front {
        None => true,
        Some(Step::Run { func, .. } | Step::RunDist { func, .. }) => *func == KernelFn::User,
        Some(Step::UserSpin { .. } | Step::UserLock { .. }) => true,
        Some(_) => false,
    }
}
