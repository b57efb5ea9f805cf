//! Hypervisor mechanics: carrying out policy decisions, switching vCPUs, waking, halting,
//! yielding on pause-loop exits. Policies decide; this file is the only place that changes
//! which vCPU runs where.

use super::mechanisms::HostAction;
use super::state::{Activity, Event, Sim, TimeKind, Vcpu};
use crate::guest::kernel::GuestKernel;
use crate::hypervisor::critical_detect::YieldClass;
use crate::hypervisor::policy::{Decision, HostView, Policy, PolicyCtx, Request, TimerId, VcpuState, YieldReason};
use crate::ids::{PcpuId, PoolId, VcpuId};
use crate::metrics::vm_stats::YieldFnClass;
use crate::time::Nanos;
use crate::vmexit::{KernelFn, KernelFnSource};
use crate::SimError;

/// The `kernel_fn` channel's source (`vmexit::KernelFnSource`): a vCPU's function is read from
/// its guest when a policy asks (`GuestVcpu::func`, the model of its instruction pointer), so a
/// call costs nothing until the policy reads one.
struct GuestSymbols<'a> {
    vcpus: &'a [Vcpu],
    guests: &'a [GuestKernel],
}

impl KernelFnSource for GuestSymbols<'_> {
    fn kernel_fn(&self, v: VcpuId) -> Option<KernelFn> {
        let s = self.vcpus.get(v.idx())?.slot;
        Some(self.guests[s.vm as usize].vcpus[s.index as usize].func)
    }
}

impl Sim {
    /// The host as the policy of `pool` sees it.
    pub fn host_view(&self, pool: PoolId) -> HostView<'_> {
        HostView::new(self.now, &self.vinfo, &self.pinfo, &self.vminfo, &self.topology).scoped(self.placement.scope(pool))
    }

    /// Call the policy of `pool` with a fresh context; its requests wait in `self.calls` (timers
    /// it makes belong to it: their owner is the pool). Always inlined: the context is built in
    /// the caller's frame, and the calls (two per pause-loop exit) skip a prologue each.
    #[inline(always)]
    pub(super) fn call_policy<R>(&mut self, pool: PoolId, f: impl FnOnce(&mut dyn Policy, &mut PolicyCtx) -> R) -> R {
        let symbols = GuestSymbols { vcpus: &self.vcpus, guests: self.guests.kernels() };
        let (policy, scope, channels) = self.placement.call_parts(pool);
        let host = HostView::new(self.now, &self.vinfo, &self.pinfo, &self.vminfo, &self.topology).scoped(scope);
        let (requests, timers) = self.calls.outbox();
        let mut ctx = PolicyCtx::for_owner(host, requests, timers, pool.0, &symbols, channels);
        f(policy, &mut ctx)
    }

    /// Call the policy of `pool`, then carry out what it asked for.
    pub fn with_policy<R>(&mut self, pool: PoolId, f: impl FnOnce(&mut dyn Policy, &mut PolicyCtx) -> R) -> R {
        let r = self.call_policy(pool, f);
        self.flush_requests();
        r
    }

    /// Call the policy of the pool `v` belongs to, then carry out what it asked for.
    pub fn with_vcpu_policy<R>(&mut self, v: VcpuId, f: impl FnOnce(&mut dyn Policy, &mut PolicyCtx) -> R) -> R {
        self.with_policy(self.placement.vcpu_pool(v), f)
    }

    /// Carry out pending policy requests, including any they cause, until none remain.
    /// Reschedules run synchronously: a vCPU whose exit made the policy preempt it must not run
    /// another guest instruction first (seed 000 section 3.1.1: preemption right after the
    /// reschedule-IPI exit, inside the futex critical section).
    ///
    /// Each batch is the list pending when it starts; what its requests cause waits for the next
    /// batch (a nested flush, inside `reschedule`, takes those first). Batch lists are reused
    /// (`PolicyCalls::give_back`), so a reschedule request costs no allocation. Most calls find none
    /// (every `do_schedule` is followed by one): that test is inlined into the caller.
    #[inline(always)]
    pub fn flush_requests(&mut self) {
        if self.calls.pending() {
            self.flush_pending_requests();
        }
    }

    /// `flush_requests` when some are pending.
    #[inline(never)]
    fn flush_pending_requests(&mut self) {
        // A lone timer request (a tick re-arming itself: half of a long credit run's events)
        // causes no other: carried out in place, without swapping the batch lists.
        if let Some((timer, at)) = self.calls.take_lone_timer() {
            self.set_timer(timer, at);
            return;
        }
        while self.calls.pending() {
            let batch = self.calls.take_batch();
            for &r in &batch {
                match r {
                    Request::Reschedule(p) => self.reschedule_requested(p),
                    Request::SetTimer { timer, at } => self.set_timer(timer, at),
                    Request::StopTimer(timer) => {
                        if let Some(old) = self.calls.disarm(timer) {
                            self.queue.cancel(old);
                        }
                    }
                    Request::MoveToPool(v, pool) => {
                        if let Err(message) = self.move_vcpu(v, pool) {
                            self.stop = Some(SimError::Invariant { time_ns: self.now, message: format!("a policy asked: {message}") });
                        }
                    }
                    Request::Accelerate(v, reason, func) => self.accelerate(v, reason, func),
                    Request::CountUrgent(event) => self.micro_count(event),
                    Request::SkipYield(v, if_accelerated) => self.micro_skip_yield(v, if_accelerated),
                    Request::Fail(owner) => self.policy_failed(PoolId(owner)),
                    Request::UrgentEntered(v) => {
                        let vm = self.vinfo[v.idx()].vm.idx();
                        self.vms[vm].stats.urgent_entered += 1;
                    }
                }
            }
            self.calls.give_back(batch);
        }
    }

    /// `Request::Fail`: the run stops after this event with the policy's reason (the first
    /// failure wins).
    #[cold]
    #[inline(never)]
    fn policy_failed(&mut self, pool: PoolId) {
        if self.stop.is_some() {
            return;
        }
        let policy = self.placement.policy_mut(pool);
        let name = policy.name().to_string();
        let message = policy.failure().unwrap_or_else(|| "it gave no reason".to_string());
        self.stop = Some(SimError::Policy { time_ns: self.now, policy: name, message });
    }

    /// `Request::SetTimer`, Xen's `set_timer`: a pending expiry is cancelled, the new one pushed
    /// here (the same point in the request order as every earlier timer push).
    #[inline(always)]
    fn set_timer(&mut self, timer: TimerId, at: Nanos) {
        let pending = self.calls.timer(timer).pending;
        let ev = self.queue.replace(pending, at, Event::PolicyTimer(timer));
        self.calls.arm(timer, ev);
    }

    /// Ask the policy what runs next on `p` and switch to it.
    pub fn reschedule(&mut self, p: PcpuId) {
        if !self.may_reschedule(p) {
            return;
        }
        let pool = self.placement.pcpu_pool(p);
        match self.kept_current(pool, p) {
            Some(c) if self.check => self.schedule_checked(pool, p, c),
            Some(_) => self.keep_current(p),
            None => self.schedule(pool, p),
        }
    }

    /// `Request::Reschedule(p)`: the policy asked, so by its own account it has work there;
    /// it is not asked whether it keeps the running vCPU (`kept_current`) as well.
    fn reschedule_requested(&mut self, p: PcpuId) {
        if self.may_reschedule(p) {
            self.schedule(self.placement.pcpu_pool(p), p);
        }
    }

    /// Whether `p` reschedules at all: the run goes on, `p` is online, and no vCPU stops
    /// halt-polling there instead (sim/mechanisms/halt_poll/: it stops if another waits).
    #[inline(always)]
    fn may_reschedule(&mut self, p: PcpuId) -> bool {
        if self.stop.is_some() || !self.pcpus[p.idx()].online {
            return false;
        }
        self.mechanisms_let_reschedule(p)
    }

    /// `do_schedule(p)` and what it decided. Out of line: `reschedule`'s keep path then sets up
    /// no frame for it.
    #[inline(never)]
    fn schedule(&mut self, pool: PoolId, p: PcpuId) {
        let decision = self.call_policy(pool, |pol, ctx| pol.do_schedule(ctx, p));
        self.carry_out(pool, p, decision);
    }

    /// Switch `p` as `decision` says (checked first), then carry out the requests pending.
    #[inline(always)]
    fn carry_out(&mut self, pool: PoolId, p: PcpuId, decision: Decision) {
        if let Err(message) = self.validate_decision(p, decision) {
            let policy = self.placement.pool(pool).policy.name().to_string();
            self.stop.get_or_insert(SimError::Policy { time_ns: self.now, policy, message });
            return;
        }
        // An involuntary preemption may be held back (the preemption overlay).
        if self.holds_preemption(p, decision) {
            self.flush_requests();
            return;
        }
        self.apply_decision(p, decision);
        self.flush_requests();
        self.after_decision(pool, p);
    }

    /// The Running vCPU of `p`, when the policy of `pool` says `do_schedule(p)` would keep it
    /// and change nothing (`Policy::keeps_current`): a pause-loop exit's own reschedule, after
    /// its directed yield has switched the pCPU already, is one per exit. The engine then does
    /// only what that decision would have done (`keep_current`). Not with an overlay or in the
    /// micro pool (they act on every decision), nor when the engine would refuse the decision.
    /// (A policy that reads the kernel-function channel qualifies too: it reads the guests'
    /// functions in place, `GuestSymbols`.)
    #[inline(always)]
    fn kept_current(&self, pool: PoolId, p: PcpuId) -> Option<VcpuId> {
        let c = self.pinfo[p.idx()].current?;
        let eligible = self.vinfo[c.idx()].state == VcpuState::Running
            && self.decisions_unwatched(pool)
            && (self.placement.trivial() || self.validate_decision(p, Decision::run(c, None)).is_ok());
        (eligible && self.placement.pool(pool).policy.keeps_current(p)).then_some(c)
    }

    /// `carry_out` of `Decision::run(current, None)`: the pending slice end, if any, is
    /// cancelled, and nothing switches.
    #[inline]
    fn keep_current(&mut self, p: PcpuId) {
        if let Some(ev) = self.pcpus[p.idx()].slice_event.take() {
            self.queue.cancel(ev);
        }
        self.flush_requests();
    }

    /// Check mode: the policy is asked all the same, and held to its word (`Policy::keeps_current`).
    #[cold]
    #[inline(never)]
    fn schedule_checked(&mut self, pool: PoolId, p: PcpuId, c: VcpuId) {
        let asked = self.calls.pending_count();
        let decision = self.call_policy(pool, |pol, ctx| pol.do_schedule(ctx, p));
        let made = self.calls.pending_count() - asked;
        if decision != Decision::run(c, None) || made > 0 {
            let name = self.placement.pool(pool).policy.name();
            let message = format!(
                "policy {name} said do_schedule would keep vCPU {c} on pCPU {p}, then decided {decision:?} and made {made} requests"
            );
            self.stop = Some(SimError::Invariant { time_ns: self.now, message });
            return;
        }
        self.carry_out(pool, p, decision);
    }

    /// The contract check on every decision. The common case is a few loads and compares; the
    /// messages are built out of line (`decision_error`), which keeps this small enough to inline
    /// into `reschedule`, the hottest path of the engine.
    #[inline(always)]
    fn validate_decision(&self, p: PcpuId, d: Decision) -> Result<(), String> {
        let ok = match d.next {
            None => true,
            Some(n) => self.vinfo.get(n.idx()).is_some_and(|info| {
                let here = self.pinfo[p.idx()].current == Some(n);
                let state_ok = if here { info.state == VcpuState::Running } else { info.state == VcpuState::Runnable };
                // With one pool and no mask short of the host, pool and affinity hold trivially.
                state_ok && self.placement.may_run(n, p)
            }),
        };
        if ok && d.slice != Some(0) {
            Ok(())
        } else {
            self.decision_error(p, d)
        }
    }

    /// Why `validate_decision` refused `d` (the same tests, in order, each with its message: the
    /// callback and the decision, for `SimError::Policy`, which names the policy).
    #[cold]
    #[inline(never)]
    fn decision_error(&self, p: PcpuId, d: Decision) -> Result<(), String> {
        let pool = self.placement.pool(self.placement.pcpu_pool(p));
        let call = format!("do_schedule(pCPU {p})");
        if let Some(n) = d.next {
            let info = self
                .vinfo
                .get(n.idx())
                .ok_or_else(|| format!("{call} picked vCPU {n}, which does not exist (the host has {})", self.vinfo.len()))?;
            let here = self.pinfo[p.idx()].current == Some(n);
            if !here && info.state != VcpuState::Runnable {
                return Err(format!(
                    "{call} picked vCPU {n}, but it is {:?}{}",
                    info.state,
                    info.pcpu.map(|q| format!(" on pCPU {q}")).unwrap_or_default()
                ));
            }
            if here && info.state != VcpuState::Running {
                return Err(format!("{call} kept vCPU {n}, but it halted"));
            }
            // Pools and hard affinity are the engine's to enforce: a vCPU runs only on a pCPU
            // of its own pool and of its hard affinity (Xen: cpupool_domain_master_cpumask and
            // cpu_hard_affinity), whatever the policy believes.
            if self.placement.vcpu_pool(n) != self.placement.pcpu_pool(p) {
                return Err(format!(
                    "{call} of pool {:?} picked vCPU {n} of pool {:?}",
                    pool.view.name,
                    self.placement.view(self.placement.vcpu_pool(n)).name
                ));
            }
            if !self.placement.affinity(n).hard.contains(p) {
                return Err(format!("{call} picked vCPU {n}, outside its hard affinity {}", self.placement.affinity(n).hard.to_cpulist()));
            }
        }
        if d.slice == Some(0) {
            return Err(format!("{call} returned a zero-length slice"));
        }
        Ok(())
    }

    #[inline(always)]
    fn apply_decision(&mut self, p: PcpuId, d: Decision) {
        let prev = self.pinfo[p.idx()].current;
        // One live slice end per pCPU: a new slice cancels the pending one and pushes its own
        // (`EventQueue::replace`; the cancelled key is dropped or compacted away).
        let old = self.pcpus[p.idx()].slice_event.take();
        if let Some(slice) = d.slice {
            self.pcpus[p.idx()].slice_event = Some(self.queue.replace(old, self.now + slice, Event::SliceEnd(p)));
        } else if let Some(ev) = old {
            self.queue.cancel(ev);
        }
        if prev == d.next {
            return;
        }
        if let Some(c) = prev {
            self.switch_out(c, p);
        }
        if let Some(n) = d.next {
            self.switch_in(n, p);
        }
        if !self.speed_constant {
            // p became busy, idle or busy with someone else: its neighbours may speed up or slow down.
            self.notify_coupled(p);
        }
    }

    /// Take `v` off pCPU `p`. If it was still Running this is a preemption.
    pub(super) fn switch_out(&mut self, v: VcpuId, p: PcpuId) {
        self.before_switch_out(v);
        let in_kernel = self.in_guest_kernel(v);
        self.leaving_pcpu(v);
        self.settle(v);
        self.switched_out(v, p);
        let now = self.now;
        let info = &mut self.vinfo[v.idx()];
        let vm = info.vm;
        let was_running = info.state == VcpuState::Running;
        if was_running {
            // KVM marks a yielding vCPU preempted too (still runnable, kvm_sched_out).
            info.preempted = true;
            // kvm_arch_vcpu_put: `preempted_in_kernel = !kvm_x86_get_cpl(vcpu)`.
            info.preempted_in_kernel = in_kernel;
            let pv = &mut self.pv[v.idx()];
            pv.preempted = true;
            pv.runnable = true;
            self.set_vcpu_state(v, VcpuState::Runnable);
            let vc = &mut self.vcpus[v.idx()];
            vc.runnable_since = now;
            vc.woken = false;
            // A pause-loop yield is voluntary: not a preemption; but a lock holder or ticket
            // waiter descheduled by it still stalls its lock, so LHP/LWP count it.
            if !vc.yielding {
                self.vms[vm.idx()].stats.preemptions += 1;
            }
            self.count_lock_preemptions(v);
        }
        let info = &mut self.vinfo[v.idx()];
        let start = info.run_start;
        info.run_time += now - start;
        info.pcpu = None;
        self.usage.add_busy(vm.idx(), p, now - start);
        self.pinfo[p.idx()].current = None;
        let vc = &mut self.vcpus[v.idx()];
        vc.activity = Activity::Off;
        vc.epoch += 1;
        if self.trace.is_some() {
            self.trace_switch_out(v, p);
        }
        self.after_switch_out(v);
        if was_running {
            self.preempted_flag_set(v);
        }
    }

    /// Whether running `v` executes guest kernel code (CPL 0) now, as the host reads it from
    /// the VMCS at a deschedule (`kvm_x86_get_cpl`): user work and user-space spins are CPL 3;
    /// kernel work, kernel spins, interrupt handlers and exits (IPI sends, HLT, PLE) are CPL 0.
    /// The host's own switch-in cost precedes any guest code: the CPL it last saw stands.
    fn in_guest_kernel(&self, v: VcpuId) -> bool {
        let vc = &self.vcpus[v.idx()];
        match vc.time_kind {
            TimeKind::User | TimeKind::UserSpin => false,
            TimeKind::Overhead if vc.activity == Activity::Overhead { halting: false } && vc.seg_start == self.vinfo[v.idx()].run_start => {
                self.vinfo[v.idx()].preempted_in_kernel
            }
            _ if vc.activity == Activity::Starting => self.vinfo[v.idx()].preempted_in_kernel,
            _ => true,
        }
    }

    /// LHP: descheduled while its thread holds spinlocks (counted per lock class);
    /// LWP: descheduled while spinning in a ticket-lock queue. What the thread holds and waits
    /// for is the guest's to say (`GuestKernel::lock_state`); the counts are the host's.
    pub(super) fn count_lock_preemptions(&mut self, v: VcpuId) {
        let (g, i) = self.gslot(v);
        let Some((held, ticket_waiter)) = self.guests[g].lock_state(self.guests.threads(), self.guests.locks(), i) else { return };
        let vm = self.vinfo[v.idx()].vm.idx();
        let stats = &mut self.vms[vm].stats;
        for l in held {
            stats.count_lhp(l.idx());
            if let Some(tr) = self.trace.as_mut() {
                let class = &self.guests.locks()[l.idx()].class;
                let args = [("lock_class", class.as_str().into())];
                tr.instant_with(1 + vm as u32, self.vinfo[v.idx()].index, "lock-holder preempted", self.now, &args);
            }
        }
        if ticket_waiter {
            stats.lwp += 1;
        }
    }

    fn switch_in(&mut self, v: VcpuId, p: PcpuId) {
        self.before_switch_in(v);
        let now = self.now;
        let (woken, runnable_since) = (self.vcpus[v.idx()].woken, self.vcpus[v.idx()].runnable_since);
        let info = &mut self.vinfo[v.idx()];
        let vm = info.vm;
        info.pcpu = Some(p);
        info.last_pcpu = p;
        info.run_start = self.now;
        info.preempted = false;
        // kvm_sched_in / vcpu_enter_guest: pending events are injected, the spin loop it yielded
        // from returns; a vCPU resuming from a block leaves `vcpu_block`, which clears
        // `pv_unhalted`.
        info.pending_interrupt = false;
        info.in_spin_loop = false;
        if woken {
            info.pv_unhalted = false;
        }
        self.set_vcpu_state(v, VcpuState::Running);
        let waited = now - runnable_since;
        let pv = &mut self.pv[v.idx()];
        pv.preempted = false;
        pv.runnable = false;
        pv.steal_time_ns += waited;
        self.pinfo[p.idx()].current = Some(v);
        let pc = &mut self.pcpus[p.idx()];
        pc.run_start = now;
        let switched = pc.last != Some(v);
        let stats = &mut self.vms[vm.idx()].stats;
        stats.switches_in += 1;
        stats.waited(waited, woken);
        let mut host = if switched { self.vm_costs[vm.idx()].context_switch } else { 0 };
        if woken {
            // Back from a block: the host's wake-up path (`[host.costs] halt_wake`, 0 by default).
            host += self.vm_costs[vm.idx()].halt_wake;
        }
        let mut cost = self.charged(v, host);
        cost += self.take_pv_tlb_flush(v);
        self.halt_ends(v);
        self.pcpus[p.idx()].last = Some(v);
        if !self.speed_constant {
            // A new pCPU (a migration, another NUMA node) or a new neighbourhood: ask again.
            let (speed, factors) = self.vcpu_speed(v, p);
            self.vcpus[v.idx()].speed = speed;
            if let Some(f) = self.speed_factors.get_mut(v.idx()) {
                *f = factors;
            }
        }
        let vc = &mut self.vcpus[v.idx()];
        // vmx_vcpu_load after kvm_sched_out: shrink_ple_window (ple_window_shrink = 0: reset).
        if self.ple.shrink == 0 {
            vc.ple_cycles = self.ple.window_cycles;
            vc.ple_ns = self.ple_base_ns;
        } else if vc.ple_cycles != self.ple.window_cycles {
            vc.ple_cycles = self.ple.shrunk(vc.ple_cycles);
            vc.ple_ns = self.ple.ns(vc.ple_cycles);
        }
        vc.epoch += 1;
        vc.seg_start = self.now;
        if cost > 0 {
            vc.activity = Activity::Overhead { halting: false };
            vc.time_kind = TimeKind::Overhead;
            vc.remaining = cost;
            let e = vc.epoch;
            self.queue.push(self.now + vc.speed.time_for(cost), Event::ActivityDone(v, e));
        } else {
            vc.activity = Activity::Starting;
            let e = vc.epoch;
            self.queue.push(self.now, Event::Dispatch(v, e));
        }
        if self.trace.is_some() {
            self.trace_switch_in(v, p);
        }
        self.after_switch_in(v);
    }

    /// The guest on `v` executed HLT and the exit cost is paid: block it.
    pub fn halt(&mut self, v: VcpuId) {
        let p = self.vinfo[v.idx()].pcpu.expect("a halting vCPU is running");
        self.on_halt(v);
        self.settle(v);
        self.set_vcpu_state(v, VcpuState::Halted);
        self.pv[v.idx()].runnable = false;
        let vm = self.vinfo[v.idx()].vm.idx();
        if self.vcpus[v.idx()].polling {
            // Blocked in SCHEDOP_poll (`do_poll`), not HLT.
            self.vms[vm].stats.poll_blocks += 1;
            if let Some(tr) = self.trace.as_mut() {
                tr.instant_with(1 + vm as u32, self.vinfo[v.idx()].index, "pv poll block", self.now, &[]);
            }
        } else {
            self.vms[vm].stats.halts += 1;
        }
        // The guest's kernel function is already `Idle`: it set it when it executed HLT.
        self.with_vcpu_policy(v, |pol, ctx| pol.sleep(ctx, v));
        self.reschedule(p);
    }

    /// Carry out the actions a mechanism returned, in order (sim/mechanisms/ `HostAction`): a
    /// stop of a vCPU no longer running by then is dropped.
    pub(super) fn run_host_actions(&mut self, actions: &[HostAction]) {
        for &action in actions {
            match action {
                HostAction::CoStop(v) => {
                    let Some(p) = self.vinfo[v.idx()].pcpu else { continue };
                    self.before_host_action(action);
                    self.stop_vcpu(v, p, "co-stop");
                }
                HostAction::CoStart(v) => {
                    self.before_host_action(action);
                    self.restart_vcpu(v, "co-start");
                }
            }
        }
    }

    /// Take running `v` off `p` and out of its policy's run queues (the host's state `Halted`
    /// and the policy's `sleep`: Xen's `vcpu_pause` -> `vcpu_sleep_nosync`), while the guest
    /// sees it descheduled while runnable (the PV area's preempted and runnable flags, its time
    /// counted as steal). `label` names the instant on its trace track.
    fn stop_vcpu(&mut self, v: VcpuId, p: PcpuId, label: &'static str) {
        self.settle(v);
        let vm = self.vinfo[v.idx()].vm.idx();
        self.set_vcpu_state(v, VcpuState::Halted);
        self.vinfo[v.idx()].preempted = true;
        self.pv[v.idx()].preempted = true;
        self.pv[v.idx()].runnable = true;
        self.vcpus[v.idx()].runnable_since = self.now;
        self.vcpus[v.idx()].woken = false;
        self.vms[vm].stats.preemptions += 1;
        self.count_lock_preemptions(v);
        if let Some(tr) = self.trace.as_mut() {
            tr.instant_with(1 + vm as u32, self.vinfo[v.idx()].index, label, self.now, &[]);
        }
        self.with_vcpu_policy(v, |pol, ctx| pol.sleep(ctx, v));
        self.reschedule(p);
    }

    /// Make `v`, stopped by [`Sim::stop_vcpu`], runnable again through its policy's `wake`
    /// (Xen's `vcpu_unpause` -> `vcpu_wake`, BOOST included under credit).
    fn restart_vcpu(&mut self, v: VcpuId, label: &'static str) {
        self.set_vcpu_state(v, VcpuState::Runnable);
        if let Some(tr) = self.trace.as_mut() {
            let vm = self.vinfo[v.idx()].vm.idx();
            tr.instant_with(1 + vm as u32, self.vinfo[v.idx()].index, label, self.now, &[]);
        }
        self.with_vcpu_policy(v, |pol, ctx| pol.wake(ctx, v, None));
    }

    /// Set `v`'s state, and its bit of its VM's `VmInfo::runnable` with it: every change of
    /// `VcpuInfo::state` after the build goes through here (check mode compares the two).
    #[inline(always)]
    pub(super) fn set_vcpu_state(&mut self, v: VcpuId, state: VcpuState) {
        let info = &mut self.vinfo[v.idx()];
        info.state = state;
        self.vminfo[info.vm.idx()].runnable.put(info.index as usize, state == VcpuState::Runnable);
    }

    /// An interrupt for halted `v` arrived: make it runnable. `waker` is the running vCPU whose
    /// IPI-send exit does the wakeup (KVM kicks the target from the sender's thread), if any.
    pub fn wake_vcpu(&mut self, v: VcpuId, waker: Option<VcpuId>) {
        if self.vinfo[v.idx()].state != VcpuState::Halted {
            return;
        }
        if !self.may_wake(v) {
            return;
        }
        self.set_vcpu_state(v, VcpuState::Runnable);
        self.vinfo[v.idx()].preempted = false;
        self.pv[v.idx()].preempted = false;
        self.pv[v.idx()].runnable = true;
        // A wake-up ends a SCHEDOP_poll block (a kick, or an interrupt: `vcpu_unblock`).
        self.vcpus[v.idx()].polling = false;
        self.vcpus[v.idx()].runnable_since = self.now;
        self.vcpus[v.idx()].woken = true;
        if self.trace.is_some() {
            self.trace_wake(v);
        }
        let vm = self.vinfo[v.idx()].vm.idx();
        self.vms[vm].stats.wakeups += 1;
        let waker_pcpu = waker.and_then(|w| self.vinfo[w.idx()].pcpu);
        if self.placement.take_insert_on_wake(v) {
            // Moved to this pool while halted (`move_vcpu`): it enters the pool now.
            self.with_vcpu_policy(v, |pol, ctx| pol.insert_vcpu(ctx, v));
        } else {
            self.with_vcpu_policy(v, |pol, ctx| pol.wake(ctx, v, waker_pcpu));
        }
        self.after_wake();
    }

    /// A pause-loop exit (`Exit::PauseLoop`): the spinning vCPU traps to the hypervisor, which
    /// yields it.
    pub(super) fn pause_loop_exit(&mut self, v: VcpuId) {
        self.yield_exit(v, YieldReason::PauseLoop);
    }

    /// The class of the guest kernel function `v` yields in (seed 002 section 4.1's lookup of the
    /// yielding vCPU's instruction pointer), for the per-VM counts; the policies read the
    /// function only through their declared channel.
    fn yield_fn_class(&self, v: VcpuId) -> YieldFnClass {
        let info = &self.vinfo[v.idx()];
        let func = self.guests[info.vm.idx()].vcpus[info.index as usize].func;
        match crate::hypervisor::critical_detect::yield_class(func) {
            YieldClass::IpiMany | YieldClass::IpiSingle => YieldFnClass::IpiWait,
            YieldClass::LockSpin => YieldFnClass::LockSpin,
            YieldClass::Other => YieldFnClass::Other,
        }
    }

    /// A yield the host takes from running `v` (a pause-loop exit, or the guest's SCHEDOP_yield:
    /// both reach Xen's `vcpu_yield`, seed 002 section 5): counted by `reason`, handed to the
    /// policy's `yield_vcpu`, then `v`'s pCPU reschedules; if `v` stays, it pays the exit's
    /// round trip (`ipi_send`) and resumes.
    pub(super) fn yield_exit(&mut self, v: VcpuId, reason: YieldReason) {
        let Some(p) = self.vinfo[v.idx()].pcpu else { return };
        self.settle(v);
        let vm = self.vinfo[v.idx()].vm.idx();
        self.vms[vm].stats.yields += 1;
        let class = self.yield_fn_class(v);
        self.vms[vm].stats.yields_by_fn[class as usize] += 1;
        match reason {
            YieldReason::PauseLoop => {
                self.vms[vm].stats.ple_exits += 1;
                // handle_pause: grow_ple_window.
                let vc = &mut self.vcpus[v.idx()];
                let grown = self.ple.grown(vc.ple_cycles);
                if grown != vc.ple_cycles {
                    vc.ple_cycles = grown;
                    vc.ple_ns = self.ple.ns(grown);
                }
            }
            YieldReason::Hypercall | YieldReason::DirectedTo(_) => self.vms[vm].stats.yields_ipi += 1,
        }
        self.vcpus[v.idx()].epoch += 1;
        let epoch = self.vcpus[v.idx()].epoch;
        self.vcpus[v.idx()].yielding = true;
        self.yield_begins(reason);
        if self.yield_entry(v, reason) {
            self.reschedule(p);
        }
        // Descheduled by its own directed yield: KVM's `yield_to` calls `schedule()` inside
        // `kvm_vcpu_on_spin`, so it waits with `in_spin_loop` set until it runs again.
        if reason == YieldReason::PauseLoop && self.vinfo[v.idx()].state == VcpuState::Runnable {
            self.vinfo[v.idx()].in_spin_loop = true;
        }
        self.yield_ends();
        self.vcpus[v.idx()].yielding = false;
        // Still here (no one else to run, or the policy kept it): the exit itself costs a VMEXIT
        // round trip, then the guest resumes its spin.
        if self.vinfo[v.idx()].pcpu == Some(p) && self.vcpus[v.idx()].epoch == epoch {
            let cost = self.charged(v, self.vm_costs[vm].ipi_send);
            let vc = &mut self.vcpus[v.idx()];
            vc.activity = Activity::Overhead { halting: false };
            vc.time_kind = TimeKind::Overhead;
            vc.remaining = cost;
            vc.seg_start = self.now;
            vc.epoch += 1;
            let e = vc.epoch;
            self.queue.push(self.now + vc.speed.time_for(cost), Event::ActivityDone(v, e));
        }
    }
}
