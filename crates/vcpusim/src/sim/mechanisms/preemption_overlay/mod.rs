//! The engine's side of preemption overlays (sim/mechanisms/preemption_overlay/rule.rs): the one place where the
//! host asks the overlay before completing a policy's involuntary preemption of a running,
//! willing vCPU (`overlay_holds`, called by `Sim::reschedule` between `do_schedule` and the
//! switch), the holds it keeps, and their end (the guest's acknowledgement, or the deadline).
//!
//! A hold keeps `prev` running on its pCPU: the policy undid its pick (`HoldPreemption::keep_running`).
//! When the hold ends, `release_hold` asks the policy again with the overlay's answer fixed to
//! `Go` for that vCPU on that pCPU (`OverlayState::go`), as Xen's `schedule()` runs again when
//! the SA handler's hypercall (or the timeout) raises SCHEDULE_SOFTIRQ. A hold also ends when
//! `prev` leaves its pCPU by itself (it halts or yields: `switch_out` drops it).

pub mod delay_preempt;
pub mod rule;

use super::super::state::{Event, Sim};
use super::MechanismEvent;
use crate::engine::event_queue::EventId;
use crate::hypervisor::policy::{Decision, VcpuState};
use crate::ids::{PcpuId, ThreadId, VcpuId};
use crate::metrics::table::{MetricRows, F3};
use crate::scenario::overlay_sections::OverlayConfig;
use crate::time::Nanos;
use crate::vmexit::Upcall;
use rule::{Overlay, Verdict};

/// A preemption held back on one pCPU.
#[derive(Clone, Copy, Debug)]
pub struct PreemptHold {
    /// The vCPU kept running.
    pub vcpu: VcpuId,
    /// When the policy decided the preemption.
    pub decided: Nanos,
    /// The latest the switch may happen (the notify delay, or the deferral bound).
    pub until: Nanos,
    /// The deadline's event (owned: cancelled when the hold ends another way).
    pub event: EventId,
    /// The guest was sent a preemption notice.
    pub notified: bool,
    /// Check mode: the thread the vCPU ran when notified (the host reads it only for the
    /// invariant that it is on a sibling before the vCPU is descheduled).
    pub thread: Option<ThreadId>,
}

/// What IRS and the other overlays count (metrics.csv rows, only in runs with an overlay).
#[derive(Clone, Copy, Debug, Default)]
pub struct OverlayStats {
    /// Involuntary preemptions the overlay was asked about.
    pub asked: u64,
    /// Preemptions held back (deferred or notified).
    pub held: u64,
    /// Preemption notices sent (`Upcall::PreemptNotice`).
    pub notices: u64,
    /// Holds ended by the guest's acknowledgement.
    pub acks: u64,
    /// Holds ended at their deadline.
    pub timeouts: u64,
    /// Holds ended because the vCPU left its pCPU by itself (halt, yield).
    pub dropped: u64,
    /// Sum and maximum of decision-to-switch delays of completed holds, ns.
    pub delay_sum_ns: u64,
    pub delay_max_ns: u64,
    /// Threads the guests' notice handlers moved to a sibling (reported with the ack).
    pub migrated: u64,
    /// Decisions that took a vCPU off its pCPU and were not involuntary preemptions, so the
    /// overlay was not asked: the vCPU halted (HLT, a SCHEDOP_poll block), or yielded by a
    /// pause-loop exit or a SCHEDOP_yield.
    pub not_asked_halt: u64,
    pub not_asked_ple: u64,
    pub not_asked_yield: u64,
}

/// One VM's share of the overlay's counts (metrics.csv rows of overlay runs).
#[derive(Clone, Copy, Debug, Default)]
pub struct OverlayVmStats {
    /// Preemptions of its vCPUs held back, and of those notified.
    pub held: u64,
    pub notices: u64,
    pub acks: u64,
    pub timeouts: u64,
    /// Held preemptions that completed with a switch, and their decision-to-switch delays.
    pub switches: u64,
    pub delay_sum_ns: u64,
    pub delay_max_ns: u64,
}

/// The overlay of a run and its holds (`Sim::overlay`; None without `[host] overlay`).
pub struct OverlayState {
    pub cfg: OverlayConfig,
    pub overlay: Box<dyn Overlay>,
    /// The hold on each pCPU, if any.
    pub holds: Vec<Option<PreemptHold>>,
    /// A released hold being completed: `Go` for this vCPU on this pCPU.
    pub go: Option<(PcpuId, VcpuId)>,
    /// The reason of the yield being carried out (`Sim::yield_exit`), for the counts.
    pub yielding: Option<crate::hypervisor::policy::YieldReason>,
    /// Per VM: its guest registered the overlay's channel (IRS: `[vm.guest] irs`, the SA vIRQ).
    pub registered: Vec<bool>,
    pub stats: OverlayStats,
    /// Per VM (by VM index).
    pub per_vm: Vec<OverlayVmStats>,
}

impl Sim {
    /// The seam (sim/mechanisms/preemption_overlay/rule.rs): `decision` of `do_schedule(p)` preempts the vCPU running
    /// on `p`, which is willing to run; ask the overlay, and if it holds the preemption back
    /// (the policy agreeing to keep the vCPU), start or keep the hold and return true: the
    /// caller then does not switch. Not inlined: only runs with an overlay get here.
    #[inline(never)]
    pub(in crate::sim) fn overlay_holds(&mut self, p: PcpuId, decision: Decision) -> bool {
        let Some(prev) = self.pinfo[p.idx()].current else { return false };
        let Some(next) = decision.next else { return false };
        if next == prev {
            return false;
        }
        if self.vinfo[prev.idx()].state != VcpuState::Running || self.vcpus[prev.idx()].yielding {
            // Voluntary: never notified (seed 003 slide 7: "only when target vCPU is
            // involuntarily preempted and is willing to run").
            let ov = self.mechanisms.preemption_overlay.as_mut().expect("called with an overlay");
            match (self.vinfo[prev.idx()].state, ov.yielding) {
                (VcpuState::Running, Some(crate::hypervisor::policy::YieldReason::PauseLoop)) => ov.stats.not_asked_ple += 1,
                (VcpuState::Running, _) => ov.stats.not_asked_yield += 1,
                _ => ov.stats.not_asked_halt += 1,
            }
            return false;
        }
        // Leaving because its affinity or pool no longer allows p is not a preemption to hold.
        if !self.placement.trivial()
            && (self.placement.vcpu_pool(prev) != self.placement.pcpu_pool(p) || !self.placement.affinity(prev).hard.contains(p))
        {
            return false;
        }
        if matches!(self.mechanisms.preemption_overlay.as_ref().map(|o| &o.cfg), Some(OverlayConfig::DelayPreempt(_))) {
            // The guest's lock mark, published lazily: copied just before the overlay is asked.
            let (g, i) = self.gslot(prev);
            self.guests[g].publish_lock_mark(self.guests.threads(), i, &mut self.pv);
        }
        let ov = self.mechanisms.preemption_overlay.as_mut().expect("called with an overlay");
        if ov.go == Some((p, prev)) {
            return false;
        }
        let holding = ov.holds[p.idx()].is_some_and(|h| h.vcpu == prev);
        let verdict = if holding {
            // Still within the hold: the policy decided again (a tick, a tickle); keep holding.
            Verdict::Defer { until: ov.holds[p.idx()].map_or(self.now, |h| h.until) }
        } else {
            ov.stats.asked += 1;
            let vm = self.vinfo[prev.idx()].vm.idx();
            let registered = ov.registered.get(vm).copied().unwrap_or(false);
            let host = crate::hypervisor::policy::HostView::new(self.now, &self.vinfo, &self.pinfo, &self.vminfo, &self.topology);
            ov.overlay.preempt(&host, p, prev, Some(next), registered, &self.pv[prev.idx()])
        };
        let (until, notify) = match verdict {
            Verdict::Go => return false,
            Verdict::Defer { until } => (until, false),
            Verdict::Notify { deadline } => (deadline, true),
        };
        if until <= self.now {
            return false;
        }
        let pool = self.placement.pcpu_pool(p);
        if !self.call_policy(pool, |pol, ctx| pol.hold_preemption().is_some_and(|h| h.keep_running(ctx, p, prev, next))) {
            return false;
        }
        if holding {
            return true;
        }
        let event = self.queue.push(until, Event::Mechanism(MechanismEvent::PreemptDeadline(p)));
        let thread = if self.check {
            let (g, i) = self.gslot(prev);
            self.guests[g].vcpus[i].current
        } else {
            None
        };
        let ov = self.mechanisms.preemption_overlay.as_mut().expect("called with an overlay");
        ov.stats.held += 1;
        let vm = self.vinfo[prev.idx()].vm.idx();
        ov.per_vm[vm].held += 1;
        ov.per_vm[vm].notices += u64::from(notify);
        ov.holds[p.idx()] = Some(PreemptHold { vcpu: prev, decided: self.now, until, event, notified: notify, thread });
        if !notify {
            // Deferred: the guest is told a preemption is pending (delayed preemption).
            self.pv[prev.idx()].preempt_pending = true;
        }
        if notify {
            ov.stats.notices += 1;
            if let Some(tr) = self.trace.as_mut() {
                let vm = self.vinfo[prev.idx()].vm.idx();
                tr.instant_with(1 + vm as u32, self.vinfo[prev.idx()].index, "preempt notice", self.now, &[]);
            }
            self.upcall(prev, Upcall::PreemptNotice);
        }
        true
    }

    /// The hold on `p` ends (`acked`: the guest acknowledged; else its deadline passed): the
    /// policy decides again and the switch goes ahead if it still wants it.
    pub fn release_hold(&mut self, p: PcpuId, acked: bool) {
        let Some(ov) = self.mechanisms.preemption_overlay.as_mut() else { return };
        let Some(hold) = ov.holds[p.idx()].take() else { return };
        self.queue.cancel(hold.event);
        self.pv[hold.vcpu.idx()].preempt_pending = false;
        let vm = self.vinfo[hold.vcpu.idx()].vm.idx();
        if acked {
            ov.stats.acks += 1;
            ov.per_vm[vm].acks += 1;
        } else {
            ov.stats.timeouts += 1;
            ov.per_vm[vm].timeouts += 1;
        }
        if let Some(ov) = self.mechanisms.preemption_overlay.as_mut() {
            ov.go = Some((p, hold.vcpu));
        }
        self.reschedule(p);
        let moved = self.pinfo[p.idx()].current != Some(hold.vcpu);
        if let Some(ov) = self.mechanisms.preemption_overlay.as_mut() {
            ov.go = None;
            if moved {
                let delay = self.now - hold.decided;
                ov.stats.delay_sum_ns += delay;
                ov.stats.delay_max_ns = ov.stats.delay_max_ns.max(delay);
                let s = &mut ov.per_vm[vm];
                s.switches += 1;
                s.delay_sum_ns += delay;
                s.delay_max_ns = s.delay_max_ns.max(delay);
            }
        }
    }

    /// The deadline event of the hold on `p` (`Event::PreemptDeadline`).
    pub(in crate::sim) fn preempt_deadline(&mut self, p: PcpuId) {
        self.release_hold(p, false);
    }

    /// The guest on `v` acknowledged its preemption notice (`Hypercall::PreemptAck`), having
    /// moved `moved` threads to siblings. Check mode: a moved thread is on its sibling (and off
    /// `v`) before `v` is descheduled.
    pub(in crate::sim) fn preempt_ack(&mut self, v: VcpuId, moved: u32) {
        let Some(p) = self.vinfo[v.idx()].pcpu else { return };
        let Some(ov) = self.mechanisms.preemption_overlay.as_mut() else { return };
        ov.stats.migrated += u64::from(moved);
        // A notified hold (IRS) or a deferred one (delayed preemption's give-back).
        let Some(hold) = ov.holds[p.idx()].filter(|h| h.vcpu == v) else { return };
        if self.check && moved > 0 {
            // The thread the guest was notified about is on a sibling before `v` is descheduled.
            if let Some(t) = hold.thread {
                let (g, i) = self.gslot(v);
                if self.guests[g].vcpus[i].current == Some(t) || self.guests.threads()[t.idx()].vcpu == v {
                    self.stop.get_or_insert(crate::SimError::Invariant {
                        time_ns: self.now,
                        message: format!("IRS: vCPU {v} acknowledged moving thread {t}, which is still on it"),
                    });
                }
            }
        }
        self.release_hold(p, true);
    }

    /// `v` leaves `p` by itself (a halt, a yield, a pool or affinity change) while held: the
    /// hold ends here.
    pub(in crate::sim) fn overlay_switch_out(&mut self, v: VcpuId, p: PcpuId) {
        let Some(ov) = self.mechanisms.preemption_overlay.as_mut() else { return };
        if let Some(h) = ov.holds[p.idx()].filter(|h| h.vcpu == v) {
            ov.holds[p.idx()] = None;
            self.queue.cancel(h.event);
            self.pv[v.idx()].preempt_pending = false;
            ov.stats.dropped += 1;
        }
    }

    /// Check mode: every hold is within its bound (the switch completes within the notify
    /// delay, or the deferral bound, of the decision) and holds a running vCPU on its pCPU.
    pub(in crate::sim) fn check_overlay(&self) -> Result<(), String> {
        let Some(ov) = self.mechanisms.preemption_overlay.as_ref() else { return Ok(()) };
        for (p, h) in ov.holds.iter().enumerate() {
            let Some(h) = h else { continue };
            if self.now > h.until {
                return Err(format!("overlay: vCPU {} still held on pCPU {p} at {} ns, past its bound {} ns", h.vcpu, self.now, h.until));
            }
            if self.pinfo[p].current != Some(h.vcpu) || self.vinfo[h.vcpu.idx()].state != VcpuState::Running {
                return Err(format!("overlay: pCPU {p} holds vCPU {} which does not run there", h.vcpu));
            }
        }
        Ok(())
    }
}

impl Sim {
    /// CPU stacking of VM `vm` now (seed 003 slides 17-18): how many of its non-halted vCPUs sit
    /// on a pCPU with another of them, beyond the first, summed over pCPUs (0: every runnable
    /// vCPU has a pCPU of its own). A running vCPU sits on its pCPU; a runnable one on the pCPU
    /// it last ran on (the host does not see the policy's run queues: a vCPU a wake placed on
    /// another pCPU counts where it last ran until it runs). Time-averaged by sampling in
    /// tests/irs.rs; not a metrics.csv row (the golden outputs stay unchanged).
    pub fn stacked_vcpus(&self, vm: usize) -> u32 {
        let mut on = vec![0u32; self.pinfo.len()];
        for &v in &self.vminfo[vm].vcpus {
            let info = &self.vinfo[v.idx()];
            let at = match info.state {
                VcpuState::Running => info.pcpu,
                VcpuState::Runnable => Some(info.last_pcpu),
                VcpuState::Halted => None,
            };
            if let Some(p) = at {
                on[p.idx()] += 1;
            }
        }
        on.iter().map(|n| n.saturating_sub(1)).sum()
    }
}

impl Sim {
    /// VM `i`'s metrics.csv rows: the overlay's holds of its vCPUs and their ends, the notices'
    /// delays, and what its guest's IRS moved (guest/irs.rs).
    pub(in crate::sim) fn overlay_metrics(&self, i: usize, rows: &mut MetricRows) {
        let Some(ov) = self.mechanisms.preemption_overlay.as_deref() else { return };
        let o = &ov.per_vm[i];
        rows.put("overlay_held", o.held);
        rows.put("preempt_notices", o.notices);
        rows.put("preempt_acks", o.acks);
        rows.put("preempt_timeouts", o.timeouts);
        let mean = if o.switches > 0 { o.delay_sum_ns as f64 / o.switches as f64 } else { 0.0 };
        rows.put("notify_to_switch_mean_us", F3(mean / 1e3));
        rows.put("notify_to_switch_max_us", F3(o.delay_max_ns as f64 / 1e3));
        let (moved, wake) = self.guests[i].irs.as_deref().map_or((0, 0), |g| (g.moved, g.wake_preemptions));
        rows.put("irs_migrations", moved);
        rows.put("irs_wake_preemptions", wake);
    }
}
