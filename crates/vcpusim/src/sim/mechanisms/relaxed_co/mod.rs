//! The engine side of relaxed co-scheduling (`overlay = "relaxed-co"`; the model, its sources
//! and the skew arithmetic are in sim/mechanisms/relaxed_co/rule.rs).
//!
//! - **Accounting**: each VM's skews are brought up to date (`account`) just before any of its
//!   vCPUs changes state (switched in or out, halted, woken, co-stopped, co-started), so every
//!   interval is accounted with the states that held over it, exactly.
//! - **Checks** (`rc_check`) follow each change: a vCPU above the threshold co-stops the VM's
//!   running vCPUs; no vCPU owing skew any more co-starts the stopped ones. The check decides
//!   and returns its actions; the core carries them out, in order. Between changes a
//!   lagging vCPU's skew grows at wall-clock rate while a sibling runs, so the check is also
//!   scheduled for the instant the first laggard would cross the threshold
//!   (`Event::RelaxedCoCheck`): a skew never exceeds the threshold by more than that event's
//!   granularity (it is the check a real scheduler makes at its ticks; check mode allows one
//!   tick, `TICK_SLACK`).
//! - **Co-stop** (`HostAction::CoStop`, carried out by the core's `stop_vcpu`): the vCPU is taken off its pCPU and is not runnable for the policy
//!   (the host's state `Halted` and the policy's `sleep`: Xen's `vcpu_pause` ->
//!   `vcpu_sleep_nosync` path), while the guest sees it descheduled while runnable (the PV area's
//!   preempted and runnable flags, its time counted as steal). An interrupt for it stays pending
//!   in the guest until the co-start. A vCPU paying its halt exit is not co-stopped (it is
//!   about to idle, which is progress).
//! - **Co-start** (`HostAction::CoStart`, the core's `restart_vcpu`): runnable again through the policy's `wake` (Xen's
//!   `vcpu_unpause` -> `vcpu_wake`, BOOST included under credit).

pub mod rule;

use super::super::state::{Activity, Event, Sim};
use super::{HostAction, MechanismEvent};
use crate::engine::event_queue::EventId;
use crate::hypervisor::policy::VcpuState;
use crate::ids::VcpuId;
use crate::metrics::table::{MetricRows, F3};
use crate::scenario::overlay_sections::RelaxedCoConfig;
use crate::time::{to_ms, Nanos};
use rule::{account, Progress};

/// Relaxed co-scheduling's state (`Sim::relaxed`).
pub struct RelaxedCoState {
    pub cfg: RelaxedCoConfig,
    /// Per vCPU (host-wide index): accumulated skew, ns.
    pub skew: Vec<Nanos>,
    /// Per vCPU: the largest skew it reached (for the tests and the docs).
    pub max_skew: Vec<Nanos>,
    /// Per vCPU: co-stopped now.
    pub stopped: Vec<bool>,
    /// Per VM: when its skews were last brought up to date.
    pub last: Vec<Nanos>,
    /// Per VM: the pending threshold-crossing check.
    pub next_check: Vec<Option<EventId>>,
    /// Per VM: co-stops (vCPUs stopped) and the total time vCPUs spent co-stopped (esxtop's
    /// %CSTP numerator).
    pub costops: Vec<u64>,
    pub costop_ns: Vec<Nanos>,
    /// A check is running (its co-stops and co-starts change states, which must not re-check).
    busy: bool,
    /// Scratch for one VM's states and skews (`rc_account`, `rc_schedule_check`), kept between
    /// calls: each state change of a vCPU accounts its VM, and a `Vec` per call would be a malloc
    /// and a free per event and a half at 1,024 pCPUs (docs/speed.md).
    states: Vec<Progress>,
    skews: Vec<Nanos>,
    /// Scratch for the co-stops or co-starts one check asks of the core (`rc_check`).
    actions: Vec<HostAction>,
}

impl RelaxedCoState {
    pub fn new(cfg: RelaxedCoConfig, nvcpus: usize, nvms: usize) -> Self {
        RelaxedCoState {
            cfg,
            skew: vec![0; nvcpus],
            max_skew: vec![0; nvcpus],
            stopped: vec![false; nvcpus],
            last: vec![0; nvms],
            next_check: vec![None; nvms],
            costops: vec![0; nvms],
            costop_ns: vec![0; nvms],
            busy: false,
            states: Vec::new(),
            skews: Vec::new(),
            actions: Vec::new(),
        }
    }
}

impl Sim {
    /// Check mode: a co-stopped vCPU is off every pCPU and not runnable for the policy, and no
    /// skew exceeds the threshold by more than a credit tick (`TICK_SLACK`; the
    /// crossing checks keep it within nanoseconds).
    pub(in crate::sim) fn check_relaxed_co(&self) -> Result<(), String> {
        let Some(rc) = self.mechanisms.relaxed_co.as_ref() else { return Ok(()) };
        let slack = rule::TICK_SLACK;
        for (v, info) in self.vinfo.iter().enumerate() {
            if rc.stopped[v] && (info.state != VcpuState::Halted || info.pcpu.is_some()) {
                return Err(format!("relaxed-co: vCPU {v} is co-stopped but {:?} on {:?}", info.state, info.pcpu));
            }
            if rc.skew[v] > rc.cfg.skew_threshold + slack {
                return Err(format!(
                    "relaxed-co: vCPU {v}'s skew {} ns exceeds the threshold {} ns by more than a tick",
                    rc.skew[v], rc.cfg.skew_threshold
                ));
            }
        }
        Ok(())
    }

    /// `v` is co-stopped (relaxed co-scheduling).
    #[inline]
    pub fn co_stopped(&self, v: VcpuId) -> bool {
        self.mechanisms.relaxed_co.as_ref().is_some_and(|r| r.stopped[v.idx()])
    }

    /// What `v` does as far as skew goes.
    fn progress_of(&self, v: VcpuId) -> Progress {
        match self.vinfo[v.idx()].state {
            VcpuState::Running => Progress::Running,
            VcpuState::Runnable => Progress::Lagging,
            VcpuState::Halted if self.co_stopped(v) => Progress::Stopped,
            VcpuState::Halted => Progress::Idle,
        }
    }

    /// The states of `vm`'s vCPUs in its order, in the kept scratch (`RelaxedCoState::states`);
    /// the caller puts it back when done.
    fn take_states(&mut self, vm: usize) -> Vec<Progress> {
        let mut states = std::mem::take(&mut self.mechanisms.relaxed_co.as_mut().expect("called with relaxed co-scheduling").states);
        states.clear();
        states.extend(self.vminfo[vm].vcpus.iter().map(|u| self.progress_of(*u)));
        states
    }

    /// Bring the skews of `v`'s VM up to date (before one of its vCPUs changes state).
    #[inline(never)]
    pub(in crate::sim) fn rc_account(&mut self, v: VcpuId) {
        let vm = self.vinfo[v.idx()].vm.idx();
        let Some(rc) = self.mechanisms.relaxed_co.as_ref() else { return };
        let dt = self.now - rc.last[vm];
        if dt == 0 || self.vminfo[vm].vcpus.len() < 2 {
            if let Some(rc) = self.mechanisms.relaxed_co.as_mut() {
                rc.last[vm] = self.now;
            }
            return;
        }
        let states = self.take_states(vm);
        let ids = &self.vminfo[vm].vcpus;
        let rc = self.mechanisms.relaxed_co.as_mut().expect("checked above");
        let mut skew = std::mem::take(&mut rc.skews);
        skew.clear();
        skew.extend(ids.iter().map(|u| rc.skew[u.idx()]));
        account(&mut skew, &states, dt);
        for (k, u) in ids.iter().enumerate() {
            rc.skew[u.idx()] = skew[k];
            rc.max_skew[u.idx()] = rc.max_skew[u.idx()].max(skew[k]);
            if states[k] == Progress::Stopped {
                rc.costop_ns[vm] += dt;
            }
        }
        rc.last[vm] = self.now;
        (rc.states, rc.skews) = (states, skew);
    }

    /// After a state change of `v`: check its VM at once, from the event loop (never inside the
    /// reschedule that made the change).
    #[inline(never)]
    pub(in crate::sim) fn rc_poke(&mut self, v: VcpuId) {
        let vm = self.vinfo[v.idx()].vm.idx();
        if self.vminfo[vm].vcpus.len() < 2 {
            return;
        }
        let Some(rc) = self.mechanisms.relaxed_co.as_mut() else { return };
        if rc.busy {
            return;
        }
        if let Some(old) = rc.next_check[vm].take() {
            self.queue.cancel(old);
        }
        let e = self.queue.push(self.now, Event::Mechanism(MechanismEvent::RelaxedCoCheck(vm as u32)));
        self.mechanisms.relaxed_co.as_mut().expect("checked").next_check[vm] = Some(e);
    }

    /// Check `v`'s VM: co-stop or co-start, and schedule the next crossing.
    fn rc_check(&mut self, v: VcpuId) {
        let vm = self.vinfo[v.idx()].vm.idx();
        if self.mechanisms.relaxed_co.as_ref().is_none_or(|r| r.busy) || self.vminfo[vm].vcpus.len() < 2 {
            return;
        }
        self.rc_account(v);
        self.mechanisms.relaxed_co.as_mut().expect("checked").busy = true;
        let mut actions = std::mem::take(&mut self.mechanisms.relaxed_co.as_mut().expect("checked").actions);
        actions.clear();
        let threshold = self.mechanisms.relaxed_co.as_ref().expect("checked").cfg.skew_threshold;
        let rc = self.mechanisms.relaxed_co.as_ref().expect("checked");
        let ids = &self.vminfo[vm].vcpus;
        // A co-stopped vCPU's skew is frozen (it neither lags nor leads while stopped), so only
        // the others can call for co-stops; otherwise a vCPU stopped past the threshold would
        // keep its siblings stopped for good.
        let skewed = ids.iter().any(|u| !rc.stopped[u.idx()] && rc.skew[u.idx()] > threshold);
        if skewed {
            // Co-stop the leaders: every running sibling within the threshold; and while a
            // *waiting* vCPU is past it, every running sibling, since any sibling's progress
            // widens that laggard's skew (a running vCPU that is itself past the threshold would
            // otherwise keep it growing without bound). The co-stops are decided on the VM as the
            // check found it, then made: each frees a pCPU whose reschedule may switch in that
            // waiting laggard, and a decision taken after it would co-stop the laggard too, past
            // the threshold, leaving only caught-up siblings idle at the barrier, none of which
            // would change state and poke the co-start (the VM would stop for good; docs/model.md,
            // relaxed co-scheduling).
            let laggard_past = ids.iter().any(|u| self.progress_of(*u) == Progress::Lagging && rc.skew[u.idx()] > threshold);
            actions.extend(
                self.vminfo[vm]
                    .vcpus
                    .iter()
                    .copied()
                    .filter(|u| {
                        let running = self.vinfo[u.idx()].state == VcpuState::Running;
                        let halting = matches!(self.vcpus[u.idx()].activity, Activity::Overhead { halting: true });
                        running && !halting && (laggard_past || rc.skew[u.idx()] <= threshold)
                    })
                    .map(HostAction::CoStop),
            );
        } else {
            // Co-start when no vCPU that is not stopped owes skew any more (the laggards caught up).
            // A co-start changes no other vCPU's stop (the check is busy), so the list is final.
            let caught_up = ids.iter().all(|u| rc.stopped[u.idx()] || rc.skew[u.idx()] == 0);
            if caught_up {
                actions.extend(ids.iter().copied().filter(|u| rc.stopped[u.idx()]).map(HostAction::CoStart));
            }
        }
        self.run_host_actions(&actions);
        self.mechanisms.relaxed_co.as_mut().expect("checked").actions = actions;
        self.mechanisms.relaxed_co.as_mut().expect("checked").busy = false;
        self.rc_schedule_check(vm);
    }

    /// Arm the next check of `vm`, replacing the pending one: the instant the first lagging
    /// vCPU would cross the threshold (while a sibling runs), or, while some are co-stopped, the
    /// instant the last running or idle one with skew would have caught up (skew 0).
    fn rc_schedule_check(&mut self, vm: usize) {
        let states = self.take_states(vm);
        let ids = &self.vminfo[vm].vcpus;
        let rc = self.mechanisms.relaxed_co.as_ref().expect("called with relaxed co-scheduling");
        let any_running = states.contains(&Progress::Running);
        let any_stopped = states.contains(&Progress::Stopped);
        let threshold = rc.cfg.skew_threshold;
        let crossing = ids
            .iter()
            .zip(&states)
            // A laggard already past the threshold grows only while a sibling that could not be
            // co-stopped runs (one paying its halt exit); that sibling's next state change pokes
            // a check, so no crossing event is armed for it (one would fire every nanosecond).
            .filter(|(u, s)| any_running && **s == Progress::Lagging && rc.skew[u.idx()] <= threshold)
            .map(|(u, _)| threshold - rc.skew[u.idx()] + 1)
            .min();
        let caught_up = ids
            .iter()
            .zip(&states)
            .filter(|(u, s)| any_stopped && matches!(s, Progress::Running | Progress::Idle) && rc.skew[u.idx()] > 0)
            .map(|(u, _)| rc.skew[u.idx()])
            .max();
        // A laggard past the threshold while a sibling that can be co-stopped runs (one switched
        // in while this check co-started the VM, when pokes are not taken): check again now.
        let past_now = ids.iter().zip(&states).any(|(u, s)| *s == Progress::Lagging && rc.skew[u.idx()] > threshold)
            && ids
                .iter()
                .zip(&states)
                .any(|(u, s)| *s == Progress::Running && !matches!(self.vcpus[u.idx()].activity, Activity::Overhead { halting: true }));
        let next = match (crossing, caught_up) {
            _ if past_now => Some(0),
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.mechanisms.relaxed_co.as_mut().expect("checked").states = states;
        if let Some(old) = self.mechanisms.relaxed_co.as_mut().expect("checked").next_check[vm].take() {
            self.queue.cancel(old);
        }
        if let Some(dt) = next {
            let e = self.queue.push(self.now + dt, Event::Mechanism(MechanismEvent::RelaxedCoCheck(vm as u32)));
            self.mechanisms.relaxed_co.as_mut().expect("checked").next_check[vm] = Some(e);
        }
    }

    /// `Event::RelaxedCoCheck(vm)`: a laggard of `vm` may have crossed the threshold.
    pub(in crate::sim) fn rc_check_event(&mut self, vm: u32) {
        if let Some(rc) = self.mechanisms.relaxed_co.as_mut() {
            rc.next_check[vm as usize] = None;
        }
        let v = self.vminfo[vm as usize].vcpus[0];
        self.rc_check(v);
    }

    /// The core is about to carry out `action` (sim/hypervisor_ops.rs `run_host_actions`): bring
    /// the skews up to date with the states that held until now, then mark the stop.
    pub(in crate::sim) fn rc_before_action(&mut self, action: HostAction) {
        let (HostAction::CoStop(v) | HostAction::CoStart(v)) = action;
        self.rc_account(v);
        let vm = self.vinfo[v.idx()].vm.idx();
        let Some(rc) = self.mechanisms.relaxed_co.as_mut() else { return };
        match action {
            HostAction::CoStop(_) => {
                rc.stopped[v.idx()] = true;
                rc.costops[vm] += 1;
            }
            HostAction::CoStart(_) => rc.stopped[v.idx()] = false,
        }
    }
}

impl Sim {
    /// VM `i`'s metrics.csv rows: co-stops, the time its vCPUs spent co-stopped (esxtop's %CSTP
    /// numerator) and the largest skew any of them reached.
    pub(in crate::sim) fn relaxed_co_metrics(&self, i: usize, rows: &mut MetricRows) {
        let Some(rc) = self.mechanisms.relaxed_co.as_deref() else { return };
        rows.put("co_stops", rc.costops[i]);
        rows.put("co_stop_ms", F3(to_ms(rc.costop_ns[i])));
        let max = self.vminfo[i].vcpus.iter().map(|v| rc.max_skew[v.idx()]).max().unwrap_or(0);
        rows.put("skew_max_ms", F3(to_ms(max)));
    }
}
