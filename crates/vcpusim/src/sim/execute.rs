//! Executing running vCPUs: charging time, running steps, handling interrupts.
//!
//! A running vCPU does one thing at a time (its `Activity`): hypervisor overhead, an interrupt
//! handler, or its current thread's front step. What the guest does next is its answer when the
//! host enters it (`dispatch` → `GuestKernel::run` → `vmexit::Next`); this file runs that answer.
//! Timed work is an amount of work done at the vCPU's speed (`hardware/speed.rs`; `sim/speed_change.rs`
//! re-times it when the speed changes) and ends with an `ActivityDone` event, reported back to
//! the guest (`step_done`, `handler_done`); spinning is time, not work, and has no end event: the
//! guest "pokes" a spinner when what it waits for changes (`Next::Poke`), and a pause-loop exit
//! event fires if it spins in the kernel longer than the PLE window.

use super::state::{Activity, Event, Ipi, Sim, TimeKind};
use crate::hypervisor::policy::VcpuState;
use crate::ids::VcpuId;
use crate::vmexit::{Entry, Exit, Hypercall, IpiKind, Next, Upcall};

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
        // The vCPU's VM is also where its guest state is (`slot.vm`, the same index as `VcpuInfo::vm`).
        let vm = vc.slot.vm as usize;
        self.vms[vm].stats.charge(kind, elapsed);
        // Work done in the segment at the speed it ran at (floor: never credit undone work);
        // spins are time, not work (`hardware/speed.rs`).
        let speed = vc.speed;
        if !self.speed_constant {
            self.count_contention(v, vm, kind, elapsed, speed);
        }
        let vc = &mut self.vcpus[v.idx()];
        match vc.activity {
            Activity::Overhead { .. } | Activity::Irq => vc.remaining = vc.remaining.saturating_sub(speed.work_in(elapsed)),
            Activity::Thread => {
                // The guest's step keeps what is left of its work (or of a user spin's budget).
                let s = vc.slot;
                let (guest, threads) = self.guests.kernel_and_threads(s.vm as usize);
                guest.executed(threads, s.index as usize, kind, elapsed, || speed.work_in(elapsed));
            }
            Activity::Off | Activity::Starting | Activity::HaltPoll => {}
        }
        if self.trace.is_some() {
            self.trace_segment(v, vm, kind, elapsed);
        }
    }

    /// A traced run: the segment `v` just ended as a span on its track (`settle`). Cold and out of
    /// line: a run without a trace never comes here (docs/speed.md).
    #[cold]
    #[inline(never)]
    fn trace_segment(&mut self, v: VcpuId, vm: usize, kind: TimeKind, elapsed: u64) {
        if let Some(tr) = self.trace.as_mut() {
            let name = match kind {
                TimeKind::User => "user",
                TimeKind::Kernel => "kernel",
                TimeKind::Spin => "spin",
                TimeKind::TlbWait => "tlb-wait",
                TimeKind::UserSpin => "user-spin",
                TimeKind::IdlePoll => "idle-poll",
                TimeKind::Irq => "irq",
                TimeKind::Overhead => "overhead",
            };
            let index = self.vinfo[v.idx()].index;
            if matches!(kind, TimeKind::Kernel | TimeKind::Spin) {
                // The guest kernel function it was in (vmexit::KernelFn; the guest's current one).
                let function = self.guests[vm].vcpus[index as usize].func.name();
                tr.span_with(1 + vm as u32, index, name, self.now - elapsed, self.now, &[("function", function.into())]);
            } else {
                tr.span(1 + vm as u32, index, name, self.now - elapsed, self.now);
            }
        }
    }

    fn running(&self, v: VcpuId) -> bool {
        self.vinfo[v.idx()].state == VcpuState::Running
    }

    /// Start a timed activity of `work` work-ns on running `v`: it ends when its pCPU has done
    /// that much work at the vCPU's current speed (`speed_changed` re-times it if that moves).
    pub(super) fn start_timed(&mut self, v: VcpuId, activity: Activity, kind: TimeKind, work: u64) {
        let vc = &mut self.vcpus[v.idx()];
        vc.activity = activity;
        vc.time_kind = kind;
        vc.seg_start = self.now;
        vc.epoch += 1;
        let e = vc.epoch;
        let ns = vc.speed.time_for(work);
        // Saturating: work that would end past the end of time simply does not end in the run.
        self.queue.push(self.now.saturating_add(ns), Event::ActivityDone(v, e));
    }

    /// Start spinning (no end event but the budget's); arm the PLE exit for kernel spins.
    fn start_spin(&mut self, v: VcpuId, kind: TimeKind, budget: Option<u64>) {
        let vc = &mut self.vcpus[v.idx()];
        vc.activity = Activity::Thread;
        vc.time_kind = kind;
        vc.seg_start = self.now;
        vc.epoch += 1;
        let e = vc.epoch;
        if let Some(b) = budget {
            self.queue.push(self.now + b, Event::ActivityDone(v, e));
        }
        // Intel's PLE fires only for PAUSE loops at CPL 0 (SDM vol. 3C, "PAUSE-loop exiting": "a
        // series of executions of PAUSE at CPL 0"); KVM's handle_pause (arch/x86/kvm/vmx.c) takes
        // the exit. AMD's pause filter counts them at any CPL (`Ple::any_cpl`). Bare metal and host
        // processes have no hypervisor to exit to.
        // A lock-statistics kernel's spinlock wait executes no PAUSE (`SpinlockKind::Debug`).
        let vm = &self.vms[self.vcpus[v.idx()].slot.vm as usize];
        if self.ple.enabled
            && (kind != TimeKind::UserSpin || self.ple.any_cpl)
            && (kind != TimeKind::Spin || vm.spin_pauses)
            && vm.virtualized()
        {
            let vc = &mut self.vcpus[v.idx()];
            vc.ple_due = self.now + vc.ple_ns;
            self.queue.push(vc.ple_due, Event::PauseLoopExit(v, e));
        }
    }

    /// `Next::Store`: running `writer` stored to the line the kernel spinner on `spinner` polls
    /// (its lock word). The spinner's next load misses; if the miss outlasts `PLE_Gap` (a line
    /// from another socket, on the default X5550 figures), the PAUSE after it starts a new loop
    /// and the window counts from now (SDM vol. 3C 25.1.3). The armed exit moves by `ple_due`.
    fn line_store(&mut self, writer: VcpuId, spinner: VcpuId) {
        if !self.running(spinner)
            || self.vcpus[spinner.idx()].activity != Activity::Thread
            || self.vcpus[spinner.idx()].time_kind != TimeKind::Spin
        {
            return;
        }
        let place = |v: VcpuId| self.topology.place(self.vinfo[v.idx()].last_pcpu).socket;
        if self.ple.store_restarts_loop(place(writer) == place(spinner)) {
            let vc = &mut self.vcpus[spinner.idx()];
            vc.ple_due = self.now + vc.ple_ns;
        }
    }

    /// `Next::Poke`: what the thread spinning on `v` polls changed; if `v` is running and
    /// spinning, let it re-check soon (a zero-delay dispatch). One in a handler or an overhead
    /// re-checks when that ends.
    pub fn poke(&mut self, v: VcpuId) {
        if !self.running(v) || self.vcpus[v.idx()].activity != Activity::Thread {
            return;
        }
        let spinning =
            matches!(self.vcpus[v.idx()].time_kind, TimeKind::Spin | TimeKind::TlbWait | TimeKind::UserSpin | TimeKind::IdlePoll);
        if spinning {
            self.restart(v);
        }
    }

    /// `Next::Poll`: the thread running on `v` polls a flag that was just set; if `v` is doing
    /// its user work, settle it and enter it again at once (a zero-delay dispatch), where the
    /// guest reaches its poll point.
    pub fn poll(&mut self, v: VcpuId) {
        if !self.running(v) || self.vcpus[v.idx()].activity != Activity::Thread || self.vcpus[v.idx()].time_kind != TimeKind::User {
            return;
        }
        self.restart(v);
    }

    /// Settle `v`'s current step and ask its guest again at once (a zero-delay dispatch).
    fn restart(&mut self, v: VcpuId) {
        self.settle(v);
        let vc = &mut self.vcpus[v.idx()];
        vc.activity = Activity::Starting;
        let e = vc.epoch;
        self.queue.push(self.now, Event::Dispatch(v, e));
    }

    pub fn on_dispatch(&mut self, v: VcpuId, epoch: u64) {
        if self.vcpus[v.idx()].epoch != epoch || !self.running(v) {
            self.stale_events += 1;
            return;
        }
        self.vcpus[v.idx()].seg_start = self.now;
        self.upcall(v, Upcall::Resume);
    }

    /// The current timed activity of `v` ended: finish what it was (block after HLT, the
    /// handler's EOI, a step's exit) and resume the guest.
    pub fn on_activity_done(&mut self, v: VcpuId, epoch: u64) {
        if self.vcpus[v.idx()].epoch != epoch || !self.running(v) {
            self.stale_events += 1;
            return;
        }
        let activity = self.vcpus[v.idx()].activity;
        self.settle(v);
        let (vm, i) = self.gslot(v);
        match activity {
            Activity::Overhead { halting: true } if self.vcpus[v.idx()].polling => {
                // SCHEDOP_poll (`do_poll`) does not block when the polled event is pending or
                // an interrupt awaits delivery (`local_events_need_delivery`).
                // KVM's `kvm_wait` HLT: `vcpu_block` ends on `pv_unhalted` and clears it.
                let unhalted = std::mem::take(&mut self.vinfo[v.idx()].pv_unhalted);
                if unhalted || self.vcpus[v.idx()].kick_pending || self.guests[vm].has_interrupts(i) {
                    let vc = &mut self.vcpus[v.idx()];
                    vc.kick_pending = false;
                    vc.polling = false;
                } else if self.mechanisms.halt_poll.is_some() {
                    // KVM's `kvm_wait` is a HLT: `kvm_vcpu_halt` polls it as any other.
                    return self.kvm_vcpu_halt(v);
                } else {
                    self.halt(v);
                    return;
                }
            }
            Activity::Overhead { halting: true } => {
                // HLT does not block with an interrupt pending or work queued meanwhile
                // (KVM: kvm_vcpu_has_events / kvm_arch_vcpu_runnable, which also counts a PV
                // kick's `pv_unhalted`, cleared as the halt ends).
                let unhalted = std::mem::take(&mut self.vinfo[v.idx()].pv_unhalted);
                if !unhalted && !self.guests[vm].has_events(i) {
                    if self.mechanisms.halt_poll.is_some() {
                        return self.kvm_vcpu_halt(v);
                    }
                    self.halt(v);
                    return;
                }
            }
            Activity::Overhead { halting: false } => {}
            Activity::Irq if self.guests[vm].in_device_irq(i) => return self.device_handler_done(v),
            Activity::Irq if self.guests[vm].in_notice_handler(i) => return self.notice_handler_done(v),
            Activity::Irq => {
                // The handler's EOI exits to the hypervisor; then the guest returns from it.
                let ipi = self.guests.kernel_mut(vm).handler_done(i);
                self.on_exit(v, Exit::Eoi { kind: ipi.kind });
                let (guest, threads) = self.guests.kernel_and_threads(vm);
                if let Some(u) = guest.interrupt_return(threads, i, ipi) {
                    self.poke(u);
                }
                // Bare metal: the stopper an active balance woke pushes the running thread away
                // (guest/bare_metal_balance.rs).
                if ipi.kind == crate::vmexit::IpiKind::Resched && self.guests[vm].balance.is_some() {
                    let (guest, threads) = self.guests.kernel_and_threads(vm);
                    if let Some(to) = guest.native_active_stop(threads, i) {
                        self.send_resched_ipi(v, to);
                    }
                }
                // IRS's migrator: a woken thread preempts an IRS-migrated one here (guest/irs.rs).
                if self.guests[vm].irs.is_some() && ipi.kind == crate::vmexit::IpiKind::Resched && {
                    let (guest, threads) = self.guests.kernel_and_threads(vm);
                    guest.irs_preempt_due(threads, i)
                } {
                    self.guests.kernel_mut(vm).round_robin(i);
                }
            }
            Activity::Thread => {
                let (guest, threads) = self.guests.kernel_and_threads(vm);
                if let Some(exit) = guest.step_done(threads, i) {
                    self.on_exit(v, exit);
                    // The exit may have made the policy preempt the sender: only continue if not.
                    if !self.running(v) || self.vcpus[v.idx()].activity != Activity::Thread {
                        return;
                    }
                }
            }
            Activity::HaltPoll => return self.halt_poll_timeout(v),
            Activity::Off | Activity::Starting => return,
        }
        self.upcall(v, Upcall::Resume);
    }

    /// `Upcall::Resume`: enter running `v` and run what its guest does next (`GuestKernel::run`,
    /// `vmexit::Next`) until it is busy with work, a spin or an exit.
    pub fn dispatch(&mut self, v: VcpuId) {
        let (vm, i) = self.gslot(v);
        // Entering the guest ends any SCHEDOP_poll (or KVM `kvm_wait` halt) it was in (one
        // preempted in its exit re-checks its lock now); KVM's `vcpu_block` clears
        // `pv_unhalted` as that halt ends.
        if std::mem::take(&mut self.vcpus[v.idx()].polling) {
            self.vinfo[v.idx()].pv_unhalted = false;
        }
        let mut entry = Entry::Resume;
        loop {
            if self.stop.is_some() || !self.running(v) {
                return;
            }
            // Executing guest code from here on (a poke or an IPI arrival may now interrupt it).
            self.vcpus[v.idx()].activity = Activity::Thread;
            let (guest, mut env) = self.guest_env(vm);
            let next = guest.run(&mut env, i, entry);
            entry = Entry::Resume;
            if self.trace.is_some() {
                self.trace_handoffs(vm);
            }
            match next {
                Next::Run { kind, work } => return self.start_timed(v, Activity::Thread, kind, work),
                Next::Handler { work } => {
                    self.vcpus[v.idx()].remaining = work;
                    return self.start_timed(v, Activity::Irq, TimeKind::Irq, work);
                }
                Next::ResumeHandler => {
                    let left = self.vcpus[v.idx()].remaining;
                    return self.start_timed(v, Activity::Irq, TimeKind::Irq, left);
                }
                Next::Spin { kind, budget } => return self.start_spin(v, kind, budget),
                Next::Complete => {
                    let vc = &mut self.vcpus[v.idx()];
                    vc.activity = Activity::Thread;
                    vc.epoch += 1;
                    let e = vc.epoch;
                    self.queue.push(self.now, Event::ActivityDone(v, e));
                    return;
                }
                // Exits after which the host runs something else first (an exit's cost, a block,
                // a switch): the guest is entered again when that ends.
                Next::Exit(exit @ (Exit::Hlt | Exit::Hypercall(Hypercall::Poll | Hypercall::Yield))) => return self.on_exit(v, exit),
                Next::Exit(exit) => {
                    self.on_exit(v, exit);
                    entry = Entry::AfterExit;
                }
                Next::Poke(u) => self.poke(u),
                Next::Store(u) => self.line_store(v, u),
                Next::Poll(u) => self.poll(u),
                Next::SetTimer(delay) => {
                    self.queue.push(self.now + delay, Event::GuestTick(v));
                }
                Next::TargetReached => self.unfinished_targets -= 1,
                Next::Stop(err) => {
                    self.stop = Some(*err);
                    return;
                }
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
            if self.trace.is_some() {
                self.trace_ipi_sent(from, to, kind);
            }
            // The send exits on the sender's pool; a recipient in another pool is that pool's
            // business too (each policy acts only on the vCPUs it holds).
            self.with_vcpu_policy(from, |pol, ctx| pol.ipi_sent(ctx, from, to, kind));
            if self.placement.vcpu_pool(to) != self.placement.vcpu_pool(from) {
                self.with_vcpu_policy(to, |pol, ctx| pol.ipi_sent(ctx, from, to, kind));
            }
            match self.vinfo[to.idx()].state {
                VcpuState::Running => {
                    self.ipis_in_flight += 1;
                    let delivery = self.vm_costs[vm].ipi_delivery;
                    self.queue.push(self.now + delivery, Event::IpiArrive(to, ipi));
                }
                VcpuState::Runnable => {
                    if self.trace.is_some() {
                        self.trace_ipi_received(to, from, kind);
                    }
                    self.vinfo[to.idx()].pending_interrupt = true;
                    self.upcall(to, Upcall::Interrupt(ipi))
                }
                VcpuState::Halted => {
                    if self.trace.is_some() {
                        self.trace_ipi_received(to, from, kind);
                    }
                    self.vinfo[to.idx()].pending_interrupt = true;
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
        if self.trace.is_some() {
            self.trace_ipi_received(v, ipi.from, ipi.kind);
        }
        if self.vinfo[v.idx()].state != VcpuState::Running {
            self.vinfo[v.idx()].pending_interrupt = true;
        }
        self.upcall(v, Upcall::Interrupt(ipi));
        if halted {
            self.wake_vcpu(v, None);
        }
    }
}
