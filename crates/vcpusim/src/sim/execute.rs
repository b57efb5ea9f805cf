//! Executing running vCPUs: charging time, running steps, handling interrupts.
//!
//! A running vCPU does one thing at a time (its `Activity`): hypervisor overhead, an interrupt
//! handler, or its current thread's front step. Timed work is an amount of work done at the
//! vCPU's speed (`hardware/speed.rs`; `sim/speed.rs` re-times it when the speed changes) and
//! ends with an `ActivityDone` event; spinning is time, not work, and has no end event: whoever
//! changes what it waits for "pokes" it, and a pause-loop exit event fires if it spins in the
//! kernel longer than the PLE window.

use super::state::{Activity, Event, Ipi, Sim, TimeKind};
use crate::guest::kernel_fn::KernelFn;
use crate::guest::spinlock::Acquire;
use crate::guest::thread::{Action, SpinCond, Step};
use crate::hypervisor::policy::VcpuState;
use crate::vmexit::{Exit, IpiKind, Upcall};
use crate::ids::{ThreadId, VcpuId};
use crate::SimError;

/// Steps a vCPU may run without simulated time passing before the run is declared runaway.
const MAX_ZERO_TIME_STEPS: u64 = 1_000_000;

/// What happened when a thread's front step was started.
enum StepOutcome {
    /// The step finished at once; run the next one.
    Continue,
    /// The vCPU is now busy with a timed step or a spin.
    Busy,
}

impl Sim {
    /// Charge the time since the segment began and pause the current activity, invalidating
    /// its pending events. The caller decides what the vCPU does next.
    pub fn settle(&mut self, v: VcpuId) {
        let vc = &mut self.vcpus[v.idx()];
        if matches!(vc.activity, Activity::Off | Activity::Starting) {
            return;
        }
        let elapsed = self.now - vc.seg_start;
        vc.seg_start = self.now;
        vc.epoch += 1;
        if elapsed == 0 {
            return;
        }
        let kind = vc.time_kind;
        let vm = self.vinfo[v.idx()].vm.idx();
        self.vms[vm].stats.charge(kind, elapsed);
        // Work done in the segment at the speed it ran at (floor: never credit undone work);
        // spins are time, not work (`hardware/speed.rs`).
        let speed = vc.speed;
        match vc.activity {
            Activity::Overhead { .. } | Activity::Irq => vc.remaining = vc.remaining.saturating_sub(speed.work_in(elapsed)),
            Activity::Thread => {
                if let Some(t) = self.guests[vc.slot.vm as usize].vcpus[vc.slot.index as usize].current {
                    let th = &mut self.threads[t.idx()];
                    match kind {
                        TimeKind::UserSpin => {
                            if let Some(left) = th.spin_budget_left.as_mut() {
                                *left = left.saturating_sub(elapsed);
                            }
                        }
                        TimeKind::Spin | TimeKind::TlbWait => {}
                        _ => {
                            if let Some(r) = th.step_remaining.as_mut() {
                                *r = r.saturating_sub(speed.work_in(elapsed));
                            }
                        }
                    }
                }
            }
            Activity::Off | Activity::Starting => {}
        }
        if let Some(tr) = self.trace.as_mut() {
            let name = match kind {
                TimeKind::User => "user",
                TimeKind::Kernel => "kernel",
                TimeKind::Spin => "spin",
                TimeKind::TlbWait => "tlb-wait",
                TimeKind::UserSpin => "user-spin",
                TimeKind::Irq => "irq",
                TimeKind::Overhead => "overhead",
            };
            tr.span(1 + vm as u32, self.vinfo[v.idx()].index, name, self.now - elapsed, self.now);
        }
    }

    fn running(&self, v: VcpuId) -> bool {
        self.vinfo[v.idx()].state == VcpuState::Running
    }

    /// Start a timed activity of `work` work-ns on running `v`: it ends when its pCPU has done
    /// that much work at the vCPU's current speed (`speed_changed` re-times it if that moves).
    pub(super) fn start_timed(&mut self, v: VcpuId, activity: Activity, kind: TimeKind, func: KernelFn, work: u64) {
        let vc = &mut self.vcpus[v.idx()];
        vc.activity = activity;
        vc.time_kind = kind;
        vc.seg_start = self.now;
        vc.epoch += 1;
        let e = vc.epoch;
        let ns = vc.speed.time_for(work);
        self.guests[vc.slot.vm as usize].vcpus[vc.slot.index as usize].func = func;
        self.queue.push(self.now + ns, Event::ActivityDone(v, e));
    }

    /// Start spinning (no end event); arm the PLE exit for kernel spins.
    fn start_spin(&mut self, v: VcpuId, kind: TimeKind, func: KernelFn, budget: Option<u64>) {
        let vc = &mut self.vcpus[v.idx()];
        vc.activity = Activity::Thread;
        vc.time_kind = kind;
        vc.seg_start = self.now;
        vc.epoch += 1;
        let e = vc.epoch;
        self.guests[vc.slot.vm as usize].vcpus[vc.slot.index as usize].func = func;
        if let Some(b) = budget {
            self.queue.push(self.now + b, Event::ActivityDone(v, e));
        }
        // PLE fires only for PAUSE loops at CPL 0 (Intel SDM; scheduler-facts.md section 4).
        if self.ple.enabled && kind != TimeKind::UserSpin {
            let window = self.ple.window_ns(self.vcpus[v.idx()].ple_exits);
            self.queue.push(self.now + window, Event::PauseLoopExit(v, e));
        }
    }

    /// Let a spinning thread re-check what it waits for, soon (a zero-delay dispatch).
    pub fn poke_thread(&mut self, t: ThreadId) {
        let v = self.threads[t.idx()].vcpu;
        if !self.running(v) || self.gvcpu(v).current != Some(t) {
            return;
        }
        if self.vcpus[v.idx()].activity != Activity::Thread {
            return; // in an IRQ or overhead: it re-checks when that ends
        }
        let spinning = matches!(self.vcpus[v.idx()].time_kind, TimeKind::Spin | TimeKind::TlbWait | TimeKind::UserSpin);
        if !spinning {
            return;
        }
        self.settle(v);
        let vc = &mut self.vcpus[v.idx()];
        vc.activity = Activity::Starting;
        let e = vc.epoch;
        self.queue.push(self.now, Event::Dispatch(v, e));
    }

    pub fn on_dispatch(&mut self, v: VcpuId, epoch: u64) {
        if self.vcpus[v.idx()].epoch != epoch || !self.running(v) {
            return;
        }
        self.vcpus[v.idx()].seg_start = self.now;
        self.upcall(v, Upcall::Resume);
    }

    pub fn on_activity_done(&mut self, v: VcpuId, epoch: u64) {
        if self.vcpus[v.idx()].epoch != epoch || !self.running(v) {
            return;
        }
        let activity = self.vcpus[v.idx()].activity;
        self.settle(v);
        match activity {
            Activity::Overhead { halting: true } => {
                // HLT does not block with an interrupt pending or work queued meanwhile
                // (KVM: kvm_vcpu_has_events / kvm_arch_vcpu_runnable).
                let (vm, i) = self.gslot(v);
                if !self.guests[vm].has_events(i) {
                    self.halt(v);
                    return;
                }
            }
            Activity::Overhead { halting: false } => {}
            Activity::Irq => {
                let ipi = self.gvcpu_mut(v).irq.take().expect("an IRQ activity has its IPI");
                self.finish_ipi_handler(v, ipi);
            }
            Activity::Thread => {
                let t = self.gvcpu(v).current.expect("a thread activity has a thread");
                if let Some(Step::SendIpis { .. }) = self.threads[t.idx()].steps.front() {
                    let Some(Step::SendIpis { kind, targets, shootdown, pages, .. }) = self.threads[t.idx()].steps.pop_front() else {
                        unreachable!()
                    };
                    self.threads[t.idx()].step_remaining = None;
                    self.on_exit(v, Exit::IpiSend { kind, targets, shootdown, pages });
                    // The exit may have made the policy preempt the sender: only continue if not.
                    if !self.running(v) || self.vcpus[v.idx()].activity != Activity::Thread {
                        return;
                    }
                }
            }
            Activity::Off | Activity::Starting => return,
        }
        self.upcall(v, Upcall::Resume);
    }

    /// Decide and start what running `v` does next.
    pub fn dispatch(&mut self, v: VcpuId) {
        let (vm, i) = self.gslot(v);
        loop {
            if self.stop.is_some() || !self.running(v) {
                return;
            }
            // Executing guest code from here on (a poke or an IPI arrival may now interrupt it).
            self.vcpus[v.idx()].activity = Activity::Thread;
            let gv = &mut self.guests[vm].vcpus[i];
            if gv.irq.is_some() {
                // A handler interrupted by a deschedule resumes where it stopped.
                let left = self.vcpus[v.idx()].remaining;
                self.start_timed(v, Activity::Irq, TimeKind::Irq, KernelFn::IpiHandler, left);
                return;
            }
            if let Some(ipi) = gv.pending_ipis.pop_front() {
                let cost = self.costs.ipi_handler + ipi.pages as u64 * self.costs.tlb_flush_per_page;
                gv.irq = Some(ipi);
                self.vcpus[v.idx()].remaining = cost;
                self.start_timed(v, Activity::Irq, TimeKind::Irq, KernelFn::IpiHandler, cost);
                return;
            }
            let t = match gv.current {
                Some(t) => t,
                None => match self.guest_pick_next(v) {
                    Some(t) => t,
                    None => {
                        // Guest idle loop: HLT exits to the hypervisor, which blocks the vCPU.
                        self.on_exit(v, Exit::Hlt);
                        return;
                    }
                },
            };
            if let Some(tick) = self.guests[vm].arm_tick(i) {
                self.queue.push(self.now + tick, Event::GuestTick(v));
            }
            match self.run_front_step(v, t) {
                StepOutcome::Busy => {
                    self.zero_time_steps = 0;
                    return;
                }
                StepOutcome::Continue => {
                    self.zero_time_steps += 1;
                    if self.zero_time_steps > MAX_ZERO_TIME_STEPS {
                        let vm = self.threads[t.idx()].vm.idx();
                        self.stop = Some(SimError::Limit {
                            message: format!(
                                "VM {:?} thread {} ran {MAX_ZERO_TIME_STEPS} steps without simulated time passing; \
                                 its program loops without a timed op (compute, syscall, mmap...)",
                                self.vminfo[vm].name, self.threads[t.idx()].index
                            ),
                        });
                        return;
                    }
                }
            }
        }
    }

    fn run_front_step(&mut self, v: VcpuId, t: ThreadId) -> StepOutcome {
        if self.threads[t.idx()].steps.is_empty() {
            self.threads[t.idx()].steps.push_back(Step::Do(Action::FetchOp));
        }
        let step = self.threads[t.idx()].steps.front().expect("just ensured").clone();
        match step {
            Step::Run { ns, func } => {
                let th = &mut self.threads[t.idx()];
                let left = *th.step_remaining.get_or_insert(ns);
                if left == 0 {
                    th.steps.pop_front();
                    th.step_remaining = None;
                    return StepOutcome::Continue;
                }
                let kind = if func == KernelFn::User { TimeKind::User } else { TimeKind::Kernel };
                self.start_timed(v, Activity::Thread, kind, func, left);
                StepOutcome::Busy
            }
            Step::RunDist { dist, func } => {
                let th = &mut self.threads[t.idx()];
                let ns = dist.sample(&mut th.rng);
                *th.steps.front_mut().expect("front exists") = Step::Run { ns, func };
                StepOutcome::Continue
            }
            Step::Lock { lock, func } => match self.locks[lock.idx()].try_acquire(t) {
                Acquire::Got => {
                    let th = &mut self.threads[t.idx()];
                    th.steps.pop_front();
                    th.held.push(lock);
                    // Only contended acquisitions: uncontended ones would bury the tail in zeros.
                    if let Some(started) = th.wait_started.take() {
                        let vm = th.vm.idx();
                        self.vms[vm].stats.spin_wait.record(self.now - started);
                    }
                    StepOutcome::Continue
                }
                Acquire::Spin => {
                    self.threads[t.idx()].wait_started.get_or_insert(self.now);
                    self.start_spin(v, TimeKind::Spin, func, None);
                    StepOutcome::Busy
                }
            },
            Step::Unlock { lock } => {
                self.threads[t.idx()].steps.pop_front();
                self.threads[t.idx()].held.retain(|l| *l != lock);
                let next = {
                    let (threads, vcpus, vinfo, guests) = (&self.threads, &self.vcpus, &self.vinfo, &self.guests);
                    self.locks[lock.idx()].release(t, |w| {
                        let wv = threads[w.idx()].vcpu;
                        let s = vcpus[wv.idx()].slot;
                        vinfo[wv.idx()].state == VcpuState::Running && guests[s.vm as usize].vcpus[s.index as usize].current == Some(w)
                    })
                };
                if let Some(n) = next {
                    self.poke_thread(n);
                }
                StepOutcome::Continue
            }
            Step::SendIpis { targets, .. } => {
                if self.threads[t.idx()].step_remaining.is_none() {
                    // The first APIC access of the send exits: the hypervisor sees it coming.
                    self.on_exit(v, Exit::IpiSendStarted);
                    if !self.running(v) {
                        return StepOutcome::Busy;
                    }
                }
                // One APIC ICR write (a VMEXIT) per target without APICv (seed 000 section 4.2).
                let cost = self.costs.ipi_send * targets.len().max(1) as u64;
                let left = *self.threads[t.idx()].step_remaining.get_or_insert(cost);
                if left == 0 {
                    // Only reachable if the exit time was already spent: deliver now.
                    self.vcpus[v.idx()].activity = Activity::Thread;
                    self.vcpus[v.idx()].epoch += 1;
                    let e = self.vcpus[v.idx()].epoch;
                    self.queue.push(self.now, Event::ActivityDone(v, e));
                    return StepOutcome::Busy;
                }
                let func = match self.threads[t.idx()].steps.front() {
                    Some(Step::SendIpis { func, .. }) => *func,
                    _ => unreachable!(),
                };
                self.start_timed(v, Activity::Thread, TimeKind::Overhead, func, left);
                StepOutcome::Busy
            }
            Step::WaitAcks { shootdown } => {
                let vm = self.threads[t.idx()].vm.idx();
                if let Some(latency) = self.guests[vm].finish_shootdown(shootdown, self.now) {
                    self.vms[vm].stats.tlb_shootdown.record(latency);
                    self.threads[t.idx()].steps.pop_front();
                    StepOutcome::Continue
                } else {
                    self.start_spin(v, TimeKind::TlbWait, KernelFn::FlushTlbOthers, None);
                    StepOutcome::Busy
                }
            }
            Step::UserSpin { cond, budget } => {
                let vm = self.threads[t.idx()].vm.idx();
                let satisfied = match cond {
                    SpinCond::BarrierGeneration { barrier, generation } => {
                        self.guests[vm].objects.barriers[barrier].generation != generation
                    }
                };
                let th = &mut self.threads[t.idx()];
                if satisfied {
                    th.steps.pop_front();
                    th.spin_budget_left = None;
                    return StepOutcome::Continue;
                }
                let left = match (th.spin_budget_left, budget) {
                    (Some(l), _) => Some(l),
                    (None, b) => b,
                };
                if left == Some(0) {
                    th.steps.pop_front();
                    th.spin_budget_left = None;
                    return StepOutcome::Continue;
                }
                th.spin_budget_left = left;
                let SpinCond::BarrierGeneration { barrier, .. } = cond;
                let spinners = &mut self.guests[vm].objects.barriers[barrier].spinners;
                if !spinners.contains(&t) {
                    spinners.push(t);
                }
                self.start_spin(v, TimeKind::UserSpin, KernelFn::User, left);
                StepOutcome::Busy
            }
            Step::Do(action) => {
                self.threads[t.idx()].steps.pop_front();
                self.do_action(v, t, action);
                StepOutcome::Continue
            }
        }
    }

    /// The IPI-send exit completed on `from`: the hypervisor delivers the virtual IPIs. A running
    /// target gets it after the delivery latency; a halted one is woken (policy `wake`); a
    /// preempted one keeps it pending until it runs again.
    pub(super) fn deliver_ipis(&mut self, from: VcpuId, kind: IpiKind, targets: &[VcpuId], shootdown: u32, pages: u32) {
        let vm = self.vinfo[from.idx()].vm.idx();
        *self.vms[vm].stats.ipis_sent.entry(kind).or_insert(0) += targets.len() as u64;
        for &to in targets {
            let ipi = Ipi { kind, from, shootdown, pages };
            if let Some(tr) = self.trace.as_mut() {
                tr.instant(1 + vm as u32, self.vinfo[from.idx()].index, kind.name(), self.now);
            }
            // The send exits on the sender's pool; a recipient in another pool is that pool's
            // business too (each policy acts only on the vCPUs it holds).
            self.with_vcpu_policy(from, |pol, ctx| pol.ipi_sent(ctx, from, to, kind));
            if self.vcpu_pool[to.idx()] != self.vcpu_pool[from.idx()] {
                self.with_vcpu_policy(to, |pol, ctx| pol.ipi_sent(ctx, from, to, kind));
            }
            match self.vinfo[to.idx()].state {
                VcpuState::Running => {
                    self.ipis_in_flight += 1;
                    self.queue.push(self.now + self.costs.ipi_delivery, Event::IpiArrive(to, ipi));
                }
                VcpuState::Runnable => self.upcall(to, Upcall::Interrupt(ipi)),
                VcpuState::Halted => {
                    self.upcall(to, Upcall::Interrupt(ipi));
                    self.wake_vcpu(to, Some(from));
                }
            }
        }
    }

    /// A virtual IPI reaches `v` after the delivery latency: inject it (interrupting a running
    /// thread); a vCPU that halted meanwhile is woken.
    pub fn on_ipi_arrive(&mut self, v: VcpuId, ipi: Ipi) {
        self.ipis_in_flight -= 1;
        let halted = self.vinfo[v.idx()].state == VcpuState::Halted;
        self.upcall(v, Upcall::Interrupt(ipi));
        if halted {
            self.wake_vcpu(v, None);
        }
    }

    fn finish_ipi_handler(&mut self, v: VcpuId, ipi: Ipi) {
        // The handler's EOI exits to the hypervisor.
        self.on_exit(v, Exit::Eoi { kind: ipi.kind });
        match ipi.kind {
            // scheduler_ipi: the guest scheduler runs on return; dispatch() picks up new work.
            IpiKind::Resched => {}
            IpiKind::TlbShootdown => {
                let gv = self.gvcpu_mut(v);
                if gv.current.is_none() {
                    // An idle vCPU in lazy-TLB mode leaves the mm (leave_mm, Linux 3.2).
                    gv.mm_loaded = false;
                }
                let vm = self.vinfo[v.idx()].vm.idx();
                if let Some(initiator) = self.guests[vm].ack_shootdown(ipi.shootdown) {
                    self.poke_thread(initiator);
                }
            }
        }
    }
}
