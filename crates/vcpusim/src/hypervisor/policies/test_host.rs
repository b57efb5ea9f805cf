//! A fake host for policy unit tests: the test plays the engine (state changes, timers,
//! reschedules) so a policy can be driven call by call and checked after each.

use super::HostShape;
use crate::engine::event_queue::EventQueue;
use crate::hardware::cpumask::IndexMask;
use crate::hardware::topology::Topology;
use crate::hypervisor::policy::{
    Decision, HostView, PcpuInfo, Policy, PolicyCtx, Request, TimerId, TimerTable, VcpuInfo, VcpuState, VmInfo, VmSched,
};
use crate::hypervisor::uvf::UvfConfig;
use crate::ids::{PcpuId, VcpuId, VmId};
use crate::time::Nanos;

/// A fake host where the test plays the engine.
/// The VMs of a test host, `vms` = (number of vCPUs, weight) per VM: every vCPU runnable and
/// never run, numbered host-wide in VM order; one `VmInfo` and one `VmSched` per VM.
pub(crate) fn vms_of(vms: &[(u32, u32)]) -> (Vec<VcpuInfo>, Vec<VmInfo>, Vec<VmSched>) {
    let mut vcpus = Vec::new();
    let (mut vm_infos, mut sched) = (Vec::new(), Vec::new());
    for (i, &(n, weight)) in vms.iter().enumerate() {
        let vm = VmId(i as u32);
        let first = vcpus.len() as u32;
        vcpus.extend((0..n).map(|index| VcpuInfo::new(VcpuId(first + index), vm, index, PcpuId(0))));
        vm_infos.push(VmInfo {
            id: vm,
            name: format!("vm{i}"),
            vcpus: (first..first + n).map(VcpuId).collect(),
            node_affinity: Default::default(),
            memory_nodes: vec![0],
            runnable: IndexMask::full(n as usize),
        });
        sched.push(VmSched::with_weight(weight));
    }
    (vcpus, vm_infos, sched)
}

pub struct FakeHost {
    pub now: Nanos,
    pub vcpus: Vec<VcpuInfo>,
    pub pcpus: Vec<PcpuInfo>,
    pub vms: Vec<VmInfo>,
    /// Each VM's settings, handed to the policy by `adjust`.
    pub sched: Vec<VmSched>,
    pub topology: Topology,
    /// The policy's timers, as the engine keeps them.
    pub timers: TimerTable,
    /// Pending timer expiries, fired in time order then by arming order.
    pub timer_queue: EventQueue<TimerId>,
    /// `on_timer` calls so far, as (time, key).
    pub fired: Vec<(Nanos, u64)>,
    pub policy: Box<dyn Policy>,
    /// Times a vCPU that had run before started on a different pCPU.
    pub migrations: u32,
    pub context_switches: u32,
    /// Policy-specific assertions run by `check`.
    pub extra_check: Option<fn(&FakeHost)>,
    /// `note_urgent` requests seen.
    pub urgent_entered: u32,
    /// The slice of the last decision.
    pub last_slice: Option<Nanos>,
    /// `schedule` calls the policy said it would answer by keeping its vCPU (`keeps_current`).
    pub kept: u32,
}

impl FakeHost {
    /// VMs given as (vCPU count, weight), on `npcpus` pCPUs, under the policy `build` makes
    /// for this host shape; `extra_check` adds policy-specific assertions to `check`.
    pub fn new(npcpus: u32, vms: &[(u32, u32)], uvf: Option<UvfConfig>, build: impl FnOnce(HostShape) -> Box<dyn Policy>) -> Self {
        Self::new_configured(npcpus, vms, uvf, |_| {}, build)
    }

    /// Like `new`, with `configure` run on the VMs' settings (weight, cap, the policy's own
    /// `params`) before the policy is built; `adjust` hands them over before any vCPU is inserted.
    pub fn new_configured(
        npcpus: u32,
        vms: &[(u32, u32)],
        uvf: Option<UvfConfig>,
        configure: impl FnOnce(&mut [VmSched]),
        build: impl FnOnce(HostShape) -> Box<dyn Policy>,
    ) -> Self {
        let (vcpus, vm_infos, mut sched) = vms_of(vms);
        configure(&mut sched);
        let pcpus = (0..npcpus).map(|p| PcpuInfo { id: PcpuId(p), current: None }).collect();
        let shape = HostShape { uvf, ..HostShape::new(npcpus, vcpus.len() as u32, vms.len() as u32) };
        let policy = build(shape);
        let mut host = FakeHost {
            now: 0,
            vcpus,
            pcpus,
            vms: vm_infos,
            sched,
            topology: Topology::flat(npcpus),
            timers: TimerTable::default(),
            timer_queue: EventQueue::new(),
            fired: Vec::new(),
            policy,
            migrations: 0,
            context_switches: 0,
            extra_check: None,
            urgent_entered: 0,
            last_slice: None,
            kept: 0,
        };
        for vm in 0..host.vms.len() {
            host.adjust(vm);
        }
        for v in 0..host.vcpus.len() as u32 {
            host.call(|pol, ctx| pol.insert_vcpu(ctx, VcpuId(v)));
        }
        for p in 0..npcpus {
            host.schedule(PcpuId(p));
        }
        host.check();
        host
    }

    /// Hand VM `vm`'s settings (`self.sched`) to the policy, as the engine does before the
    /// inserts and at a run-time change.
    pub fn adjust(&mut self, vm: usize) {
        let sched = self.sched[vm].clone();
        self.call(|pol, ctx| pol.adjust(ctx, VmId(vm as u32), &sched));
    }

    /// Run one policy call and carry out its requests.
    pub fn call<R>(&mut self, f: impl FnOnce(&mut dyn Policy, &mut PolicyCtx) -> R) -> R {
        let (result, requests) = self.call_unapplied(f);
        self.apply(requests);
        result
    }

    /// One policy call; its requests are returned, not carried out.
    fn call_unapplied<R>(&mut self, f: impl FnOnce(&mut dyn Policy, &mut PolicyCtx) -> R) -> (R, Vec<Request>) {
        let mut requests = Vec::new();
        let result = {
            let view = HostView::new(self.now, &self.vcpus, &self.pcpus, &self.vms, &self.topology);
            let mut ctx = PolicyCtx::new(view, &mut requests, &mut self.timers);
            f(self.policy.as_mut(), &mut ctx)
        };
        (result, requests)
    }

    pub fn apply(&mut self, requests: Vec<Request>) {
        for r in requests {
            match r {
                Request::Reschedule(p) => self.schedule(p),
                Request::SetTimer { timer, at } => {
                    let ev = self.timer_queue.push(at, timer);
                    if let Some(old) = self.timers.arm(timer, ev) {
                        self.timer_queue.cancel(old);
                    }
                }
                Request::StopTimer(timer) => {
                    if let Some(old) = self.timers.disarm(timer) {
                        self.timer_queue.cancel(old);
                    }
                }
                Request::UrgentEntered(_) => self.urgent_entered += 1,
                Request::MoveToPool(..) => panic!("the fake host has one pool"),
                Request::Accelerate(..) | Request::CountUrgent(_) | Request::SkipYield(..) => {
                    panic!("the fake host has no micro-sliced pool")
                }
                Request::Fail(_) => panic!("a built-in policy asked to stop the run"),
            }
        }
    }

    /// `do_schedule(p)` and apply the decision as the engine would.
    /// The engine skips the call when the policy says it keeps the Running vCPU of `p`
    /// (`Policy::keeps_current`); here it is made all the same, and the policy held to its word.
    pub fn schedule(&mut self, p: PcpuId) {
        let current = self.pcpus[p.idx()].current.filter(|c| self.vcpus[c.idx()].state == VcpuState::Running);
        let promised = current.filter(|_| self.policy.keeps_current(p));
        let (decision, requests) = self.call_unapplied(|pol, ctx| pol.do_schedule(ctx, p));
        if let Some(c) = promised {
            self.kept += 1;
            assert_eq!(decision, Decision::run(c, None), "{} said do_schedule({p}) keeps vCPU {c}", self.policy.name());
            assert_eq!(requests, [], "{} said do_schedule({p}) keeps vCPU {c} and asks nothing", self.policy.name());
        }
        self.last_slice = decision.slice;
        let prev = self.pcpus[p.idx()].current;
        if let Some(next) = decision.next {
            let info = &self.vcpus[next.idx()];
            assert_ne!(info.state, VcpuState::Halted, "picked halted vCPU {next}");
            if info.state == VcpuState::Running {
                assert_eq!(info.pcpu, Some(p), "picked vCPU {next} running elsewhere");
            }
        }
        if prev == decision.next {
            self.apply(requests);
            return;
        }
        if let Some(v) = prev {
            let info = &mut self.vcpus[v.idx()];
            if info.state == VcpuState::Running {
                info.run_time += self.now - info.run_start;
                info.state = VcpuState::Runnable;
                info.preempted = true;
            }
            info.pcpu = None;
            self.note_state(v);
        }
        if let Some(v) = decision.next {
            let info = &mut self.vcpus[v.idx()];
            if info.last_pcpu != p && info.run_time > 0 {
                self.migrations += 1;
            }
            info.state = VcpuState::Running;
            info.pcpu = Some(p);
            info.last_pcpu = p;
            info.run_start = self.now;
            info.preempted = false;
            self.note_state(v);
        }
        self.context_switches += 1;
        self.pcpus[p.idx()].current = decision.next;
        // The engine switches first and carries out the call's requests after
        // (`Sim::carry_out`).
        self.apply(requests);
    }

    /// Keep `v`'s bit of its VM's `runnable` mask after its state changed, as the engine does.
    fn note_state(&mut self, v: VcpuId) {
        let info = &self.vcpus[v.idx()];
        self.vms[info.vm.idx()].runnable.put(info.index as usize, info.state == VcpuState::Runnable);
    }

    /// The running vCPU `v` halts: state first, then `sleep`, then `do_schedule` on its pCPU.
    pub fn halt(&mut self, v: VcpuId) {
        let p = self.vcpus[v.idx()].pcpu.expect("only a running vCPU halts");
        let info = &mut self.vcpus[v.idx()];
        info.run_time += self.now - info.run_start;
        info.state = VcpuState::Halted;
        info.pcpu = None;
        self.note_state(v);
        self.call(|pol, ctx| pol.sleep(ctx, v));
        self.schedule(p);
        self.check();
    }

    pub fn wake(&mut self, v: VcpuId) {
        assert_eq!(self.vcpus[v.idx()].state, VcpuState::Halted);
        self.vcpus[v.idx()].state = VcpuState::Runnable;
        self.note_state(v);
        self.call(|pol, ctx| pol.wake(ctx, v, None));
        self.check();
    }

    /// Fire every timer due up to `until`, then move the clock to `until`.
    pub fn advance_to(&mut self, until: Nanos) {
        while self.timer_queue.peek_time().is_some_and(|at| at <= until) {
            let (at, timer) = self.timer_queue.pop().expect("peeked");
            self.now = at;
            if let Some((_owner, key)) = self.timers.fire(timer) {
                self.fired.push((at, key));
                self.call(|pol, ctx| pol.on_timer(ctx, key));
                self.check();
            }
        }
        self.now = until;
    }

    /// Advance 1 ms at a time, for at most 200 ms, until `v` runs on `p`.
    pub fn advance_until_running(&mut self, p: PcpuId, v: VcpuId) {
        let start = self.now;
        for t in 1..200 {
            if self.pcpus[p.idx()].current == Some(v) {
                return;
            }
            self.advance_to(start + t * crate::time::MS);
        }
        assert_eq!(self.pcpus[p.idx()].current, Some(v), "vCPU {v} never ran on pCPU {p}");
    }

    /// Run time of every vCPU of `vm` up to now, including the current run.
    pub fn vm_run_time(&self, vm: usize) -> Nanos {
        self.vms[vm]
            .vcpus
            .iter()
            .map(|v| {
                let info = &self.vcpus[v.idx()];
                info.run_time + if info.state == VcpuState::Running { self.now - info.run_start } else { 0 }
            })
            .sum()
    }

    pub fn running(&self, vm: usize) -> usize {
        self.vms[vm].vcpus.iter().filter(|v| self.vcpus[v.idx()].state == VcpuState::Running).count()
    }

    /// Drive `steps` steps of `step` each: at every step a pseudo-random vCPU (a fixed LCG, so
    /// the pattern is the same every run) halts if running (1 in 3) or wakes if halted (1 in 2).
    /// `check` runs after every event, so policy invariants are exercised under churn.
    pub fn random_halts_and_wakes(&mut self, steps: u64, step: Nanos) {
        let mut next = lcg(0x2545_f491_4f6c_dd1d);
        let nvcpus = self.vcpus.len() as u64;
        for i in 1..=steps {
            self.advance_to(i * step);
            let v = VcpuId((next() % nvcpus) as u32);
            match self.vcpus[v.idx()].state {
                VcpuState::Running if next().is_multiple_of(3) => self.halt(v),
                VcpuState::Halted if next().is_multiple_of(2) => self.wake(v),
                _ => {}
            }
        }
    }

    /// A pause-loop storm: at every step each running vCPU of VM 0 takes a pause-loop exit
    /// (`yield_vcpu`, its requests carried out, then `do_schedule` on its pCPU, as the engine
    /// does); every third step a pseudo-random vCPU halts or wakes as in
    /// `random_halts_and_wakes`.
    pub fn pause_loop_storm(&mut self, steps: u64, step: Nanos) {
        let mut next = lcg(0x9e37_79b9_7f4a_7c15);
        let nvcpus = self.vcpus.len() as u64;
        for i in 1..=steps {
            self.advance_to(i * step);
            for v in self.vms[0].vcpus.clone() {
                let Some(p) = self.vcpus[v.idx()].pcpu else { continue };
                self.call(|pol, ctx| pol.yield_vcpu(ctx, v, crate::hypervisor::policy::YieldReason::PauseLoop));
                self.schedule(p);
                self.check();
            }
            if i % 3 == 0 {
                let v = VcpuId((next() % nvcpus) as u32);
                match self.vcpus[v.idx()].state {
                    VcpuState::Running => self.halt(v),
                    VcpuState::Halted => self.wake(v),
                    VcpuState::Runnable => {}
                }
            }
        }
    }

    pub fn idle_pcpus(&self) -> usize {
        self.pcpus.iter().filter(|p| p.current.is_none()).count()
    }

    /// The policy's own invariants, the extra check, and pCPU/vCPU agreement.
    pub fn check(&self) {
        let view = HostView::new(self.now, &self.vcpus, &self.pcpus, &self.vms, &self.topology);
        self.policy.check(&view).unwrap();
        if let Some(extra) = self.extra_check {
            extra(self);
        }
        for p in &self.pcpus {
            if let Some(v) = p.current {
                assert_eq!(self.vcpus[v.idx()].pcpu, Some(p.id));
            }
        }
    }
}

/// The drivers' pseudo-random numbers: a fixed 64-bit LCG (Knuth's MMIX constants) from `seed`,
/// its high 31 bits per draw, so a driven pattern is the same on every run.
fn lcg(seed: u64) -> impl FnMut() -> u64 {
    let mut state = seed;
    move || {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        state >> 33
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hypervisor::policy::{Decision, YieldReason};
    use crate::time::MS;

    /// A policy that never runs anything: the test drives its timers by hand.
    struct Idle;
    impl Policy for Idle {
        fn name(&self) -> &'static str {
            "idle"
        }
        fn insert_vcpu(&mut self, _ctx: &mut PolicyCtx, _v: VcpuId) {}
        fn wake(&mut self, _ctx: &mut PolicyCtx, _v: VcpuId, _waker: Option<PcpuId>) {}
        fn sleep(&mut self, _ctx: &mut PolicyCtx, _v: VcpuId) {}
        fn yield_vcpu(&mut self, _ctx: &mut PolicyCtx, _v: VcpuId, _reason: YieldReason) {}
        fn do_schedule(&mut self, _ctx: &mut PolicyCtx, _pcpu: PcpuId) -> Decision {
            Decision::idle()
        }
        fn adjust(&mut self, _ctx: &mut PolicyCtx, _vm: VmId, _sched: &crate::hypervisor::policy::VmSched) {}
    }

    #[test]
    fn a_stopped_timer_never_fires_and_a_rearmed_one_fires_once_at_its_new_time() {
        let mut h = FakeHost::new(1, &[(1, 256)], None, |_| Box::new(Idle));
        let (a, b, c) = h.call(|_, ctx| {
            let (a, b, c) = (ctx.init_timer(1), ctx.init_timer(2), ctx.init_timer(3));
            ctx.set_timer(&a, 5 * MS);
            ctx.set_timer(&b, 5 * MS);
            ctx.set_timer(&c, 8 * MS);
            (a, b, c)
        });
        assert_eq!(h.timers.entry(a.id()).owner, 0, "the one policy instance owns its timers");
        h.advance_to(2 * MS);
        // Stop `a`; re-arm `b` later and `c` earlier (set_timer cancels the pending expiry).
        h.call(|_, ctx| {
            ctx.stop_timer(&a);
            ctx.set_timer(&b, 9 * MS);
            ctx.set_timer(&c, 3 * MS);
        });
        assert!(h.timers.entry(a.id()).pending.is_none());
        h.advance_to(20 * MS);
        assert_eq!(h.fired, vec![(3 * MS, 3), (9 * MS, 2)]);
        // A fired timer is disarmed; stopping it is harmless, and it can be armed again.
        h.call(|_, ctx| {
            ctx.stop_timer(&b);
            ctx.set_timer(&a, 25 * MS);
        });
        h.advance_to(30 * MS);
        assert_eq!(h.fired.last(), Some(&(25 * MS, 1)));
        assert_eq!(h.fired.len(), 3);
    }
}
