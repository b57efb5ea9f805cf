//! The host's side of the VM-exit line (`vmexit.rs`): every exit a guest vCPU takes is carried
//! out by `on_exit`, and every way the host enters a guest goes through `upcall`, which calls the
//! guest kernel's method for it (`GuestKernel::run` through `dispatch`, `interrupt`,
//! `timer_tick`). The host never writes the guest's state itself.

use super::state::{Activity, Event, Sim, TimeKind};
use crate::hypervisor::policy::VcpuState;
use crate::hypervisor::policy::YieldReason;
use crate::ids::VcpuId;
use crate::vmexit::{Exit, Hypercall, IpiKind, Upcall};

impl Sim {
    /// Guest vCPU `v` traps to the host with `exit`. (Inlined: each caller passes one kind, and
    /// the match folds away.)
    #[inline(always)]
    pub fn on_exit(&mut self, v: VcpuId, exit: Exit) {
        match exit {
            Exit::Hlt => {
                // The exit's cost first; `on_activity_done` then blocks the vCPU (`halt`) unless an
                // interrupt or work arrived meanwhile. A HLT in a PV qspinlock wait (KVM's
                // `kvm_wait`) is a poll as SCHEDOP_poll is: it ends on a kick or an interrupt.
                let slot = self.vcpus[v.idx()].slot;
                if self.guests[slot.vm as usize].vcpus[slot.index as usize].pv_polled {
                    self.vcpus[v.idx()].polling = true;
                }
                let cost = self.charged(v, self.vm_costs[slot.vm as usize].hlt_exit);
                self.vcpus[v.idx()].remaining = cost;
                self.start_timed(v, Activity::Overhead { halting: true }, TimeKind::Overhead, cost);
            }
            Exit::IpiSendStarted => self.with_vcpu_policy(v, |pol, ctx| pol.ipi_send_started(ctx, v)),
            Exit::IpiSend { kind, targets, shootdown, pages } => {
                self.deliver_ipis(v, kind, &targets, shootdown, pages);
                // The list goes back to the sender's guest for its next send (no allocation per send).
                let vm = self.vcpus[v.idx()].slot.vm as usize;
                self.guests.kernel_mut(vm).scratch.recycle_ipi_targets(targets);
            }
            Exit::PauseLoop => self.pause_loop_exit(v),
            Exit::Eoi { kind } => self.with_vcpu_policy(v, |pol, ctx| pol.ipi_handled(ctx, v, kind)),
            Exit::NetTx { device, acked, window } => self.net_tx(device, acked, window),
            Exit::Hypercall(h) => self.hypercall(v, h),
        }
    }

    /// `v` sends one reschedule IPI to `to` from interrupt context (a tick's balancing IPI, an
    /// IRS notice's migration, a device softirq's wake-up). The one-target list is a spent one of
    /// `v`'s guest, given back when the send is delivered (above), so a send allocates nothing.
    pub(super) fn send_resched_ipi(&mut self, v: VcpuId, to: VcpuId) {
        let vm = self.vcpus[v.idx()].slot.vm as usize;
        let mut targets = self.guests.kernel_mut(vm).scratch.ipi_targets();
        targets.push(to);
        self.on_exit(v, Exit::IpiSend { kind: IpiKind::Resched, targets, shootdown: 0, pages: 0 });
    }

    /// A paravirtual hypercall from `v` (Linux 4.4 on Xen, seed 002; the Linux 6.x guest on KVM),
    /// under every policy: the host's side is Xen's (xen/common/schedule.c `do_sched_op`,
    /// xen/common/event_channel.c) or KVM's (arch/x86/kvm/x86.c `kvm_emulate_hypercall`); the
    /// policy hears only the yields (`Policy::yield_vcpu`) and the block / wake-up it always
    /// hears (`sleep`, `wake`).
    fn hypercall(&mut self, v: VcpuId, h: Hypercall) {
        match h {
            // SCHEDOP_yield -> `vcpu_yield`: as a pause-loop exit, a yield the policy takes.
            Hypercall::Yield => self.yield_exit(v, YieldReason::Hypercall),
            // SCHEDOP_poll -> `do_poll`: the guest cleared the kicker event and re-checked its
            // lock at this instant (`xen_qlock_wait`); the exit's cost follows (`hlt_exit`: the
            // VMCALL and the block, as HLT's), then `on_activity_done` blocks the vCPU unless the
            // event came meanwhile or an interrupt awaits delivery.
            Hypercall::Poll => {
                let cost = self.charged(v, self.vm_costs[self.vcpus[v.idx()].slot.vm as usize].hlt_exit);
                let vc = &mut self.vcpus[v.idx()];
                vc.kick_pending = false;
                vc.polling = true;
                vc.remaining = cost;
                self.start_timed(v, Activity::Overhead { halting: true }, TimeKind::Overhead, cost);
            }
            // EVTCHNOP_send on the target's spinlock-kicker port (its cost was the guest's step):
            // `evtchn_set_pending` marks it pending; a vCPU blocked polling it is woken
            // (`vcpu_unblock`), one still paying its poll exit sees the event and does not block.
            Hypercall::PreemptAck { moved } => {
                if !self.native_resched(v) {
                    self.preempt_ack(v, moved)
                }
            }
            Hypercall::Kick(u) => {
                let vm = self.vcpus[v.idx()].slot.vm as usize;
                self.vms[vm].stats.kicks += 1;
                if self.trace.is_some() {
                    let target = self.vcpu_label(u);
                    let (pid, tid) = (1 + vm as u32, self.vinfo[v.idx()].index);
                    if let Some(tr) = self.trace.as_mut() {
                        tr.instant_with(pid, tid, "pv kick", self.now, &[("to", target.into())]);
                    }
                }
                self.vcpus[u.idx()].kick_pending = true;
                if self.vcpus[u.idx()].polling && self.vinfo[u.idx()].state == VcpuState::Halted {
                    self.vcpus[u.idx()].kick_pending = false;
                    self.wake_vcpu(u, Some(v));
                }
            }
            // KVM_HC_KICK_CPU (x86.c `kvm_pv_kick_cpu_op`, the hypercall's cost was the guest's
            // step): `pv_unhalted = true`, then `kvm_vcpu_kick`, which wakes a halted vCPU or ends
            // a halt poll; a running one keeps the flag until its halt ends (`vcpu_block` clears
            // it). Then `kvm_sched_yield` to the kicked vCPU (the queue-head boost):
            // `Sim::kvm_kick_cpu` (sim/mechanisms/halt_poll/).
            Hypercall::KickCpu(u) => {
                let vm = self.vcpus[v.idx()].slot.vm as usize;
                self.vms[vm].stats.kicks += 1;
                self.kvm_kick_cpu(v, u);
            }
            // KVM_HC_SCHED_YIELD: a directed yield the policy takes (`kvm_sched_yield`).
            Hypercall::SchedYield(u) => self.yield_exit(v, YieldReason::DirectedTo(u)),
        }
    }

    /// The host set `v`'s PV-area preempted flag (a preemption): the guest's vCPUs whose spin
    /// loops read it (`GuestKernel::preempted_flag_readers`: mmap_sem's optimistic spinners on an
    /// owner running on `v`) look again, and take the slow path (guest/mm_sem.rs).
    pub(super) fn preempted_flag_set(&mut self, v: VcpuId) {
        let (vm, _) = self.gslot(v);
        for u in self.guests[vm].preempted_flag_readers(self.guests.threads(), v) {
            self.poke(u);
        }
    }

    /// KVM's `record_steal_time` at `v`'s VM entry after a switch-in: a `KVM_VCPU_FLUSH_TLB` the
    /// Linux 6.x guest set while `v` was preempted (`pv_tlb_flush`) is cleared and the guest's
    /// TLB flushed (`kvm_vcpu_flush_tlb_guest`). Returns the flush's cost, which the switch-in
    /// adds to its own: the per-page flush cost of the pages of the shootdowns it replaced
    /// (docs/model.md § Linux 6.x guest (KVM PV)). 0, at the cost of one load, without it.
    #[inline]
    pub(super) fn take_pv_tlb_flush(&mut self, v: VcpuId) -> crate::time::Nanos {
        let pages = std::mem::take(&mut self.pv[v.idx()].flush_tlb_pages);
        if pages == 0 {
            return 0;
        }
        let vm = self.vcpus[v.idx()].slot.vm as usize;
        self.vm_costs[vm].tlb_flush_per_page.saturating_mul(u64::from(pages))
    }

    /// The host enters guest vCPU `v` with `upcall`. (Inlined, as `on_exit`.)
    #[inline(always)]
    pub fn upcall(&mut self, v: VcpuId, upcall: Upcall) {
        match upcall {
            Upcall::Resume => self.dispatch(v),
            Upcall::Interrupt(ipi) => {
                let (vm, i) = self.gslot(v);
                self.guests.kernel_mut(vm).interrupt(i, ipi);
                let vc = &self.vcpus[v.idx()];
                if self.vinfo[v.idx()].state == VcpuState::Running && vc.activity == Activity::Thread {
                    // Interrupt the thread: pause its step and run the handler first.
                    self.settle(v);
                    self.dispatch(v);
                } else if vc.activity == Activity::HaltPoll && self.halt_polling(v) {
                    // kvm_vcpu_check_block sees the interrupt: the poll succeeds.
                    self.halt_poll_wake(v);
                }
            }
            Upcall::DeviceIrq(virq) => self.device_irq(v, virq),
            Upcall::TimerTick => self.timer_tick(v),
            // IRS's SA vIRQ (seed 003): the guest takes it as an interrupt (guest/irs.rs).
            Upcall::PreemptNotice => self.preempt_notice(v),
        }
    }

    /// `Upcall::PreemptNotice` (IRS's SA vIRQ): pending in the guest, taken at once by a vCPU
    /// executing thread code (its step pauses for the handler), as `Upcall::Interrupt`.
    fn preempt_notice(&mut self, v: VcpuId) {
        let (vm, i) = self.gslot(v);
        self.guests.kernel_mut(vm).preempt_notice(i);
        if self.vinfo[v.idx()].state == VcpuState::Running && self.vcpus[v.idx()].activity == Activity::Thread {
            self.settle(v);
            self.dispatch(v);
        }
    }

    /// The IRS notice handler on `v` ended (guest/irs.rs): the moved thread's sibling gets a
    /// resched IPI (sent from interrupt context, as the tick's balancing IPI), then the guest
    /// acknowledges; if `v` still runs after that (the policy changed its mind), it resumes.
    pub(super) fn notice_handler_done(&mut self, v: VcpuId) {
        let (vm, i) = self.gslot(v);
        let now = self.now;
        let done = {
            let (g, env) = self.guest_env(vm);
            g.notice_done(env.threads, env.pv, i, now)
        };
        if let Some((_, to)) = done.moved {
            self.send_resched_ipi(v, to);
        }
        if self.vinfo[v.idx()].state == VcpuState::Running {
            self.on_exit(v, Exit::Hypercall(Hypercall::PreemptAck { moved: u32::from(done.moved.is_some()) }));
        }
        if self.vinfo[v.idx()].state == VcpuState::Running && self.vcpus[v.idx()].activity == Activity::Irq {
            self.upcall(v, Upcall::Resume);
        }
    }

    /// The guest's timer fired on `v` (`Event::GuestTick`, armed by `Next::SetTimer`). A vCPU the
    /// host does not run takes no tick (`tick_missed`); a running one runs the guest's tick
    /// (`GuestKernel::timer_tick`), whose balancing IPI the host sends from interrupt context,
    /// and, if the tick interrupted thread code at a preemptible point and the vCPU still runs,
    /// the guest round-robins on return; then the guest re-arms its timer if threads still wait.
    fn timer_tick(&mut self, v: VcpuId) {
        let (vm, i) = self.gslot(v);
        if self.vinfo[v.idx()].state != VcpuState::Running || self.vcpus[v.idx()].activity == Activity::HaltPoll {
            self.guests.kernel_mut(vm).tick_missed(i);
            return;
        }
        if self.guests[vm].balance.is_some() {
            return self.native_tick(v);
        }
        let (guest, threads) = self.guests.kernel_and_threads(vm);
        let Some(tick) = guest.timer_tick(threads, i) else { return };
        if let Some(u) = tick.resched_ipi {
            self.send_resched_ipi(v, u);
        }
        if tick.round_robin && self.vcpus[v.idx()].activity == Activity::Thread {
            self.settle(v);
            self.guests.kernel_mut(vm).round_robin(i);
            self.dispatch(v);
        }
        if let Some(delay) = self.guests.kernel_mut(vm).arm_tick(i) {
            self.queue.push(self.now + delay, Event::GuestTick(v));
        }
    }

    /// The tick of a running bare-metal CPU `v` (Linux 3.13's `scheduler_tick` ->
    /// `trigger_load_balance`, guest/bare_metal_balance.rs): the balancer's reschedule IPIs go
    /// out from interrupt context; at the tick's return, if it interrupted thread code, the
    /// CPU's own stopper pushes its thread away (an active balance it was asked for) or the
    /// guest round-robins; then the tick re-arms while a thread runs.
    fn native_tick(&mut self, v: VcpuId) {
        let (vm, i) = self.gslot(v);
        let now = self.now;
        let (guest, threads) = self.guests.kernel_and_threads(vm);
        let tick = guest.native_tick(threads, i, now);
        if tick.resched.is_empty() {
            self.guests.kernel_mut(vm).scratch.recycle_ipi_targets(tick.resched);
        } else {
            self.on_exit(v, Exit::IpiSend { kind: IpiKind::Resched, targets: tick.resched, shootdown: 0, pages: 0 });
        }
        if self.vinfo[v.idx()].state == VcpuState::Running
            && self.vcpus[v.idx()].activity == Activity::Thread
            && (tick.stop_here || tick.round_robin)
        {
            self.settle(v);
            let (guest, threads) = self.guests.kernel_and_threads(vm);
            let pushed = if tick.stop_here { guest.native_active_stop(threads, i) } else { None };
            if let Some(to) = pushed {
                self.send_resched_ipi(v, to);
            } else if tick.round_robin {
                self.guests.kernel_mut(vm).round_robin(i);
            }
            self.dispatch(v);
        }
        if let Some(delay) = self.guests.kernel_mut(vm).arm_tick(i) {
            self.queue.push(self.now + delay, Event::GuestTick(v));
        }
    }
}
