//! The engine's side of KVM's host halt polling (`[host.halt_poll]`; the rule is
//! sim/mechanisms/halt_poll/rule.rs) and of the `KVM_HC_KICK_CPU` host path.
//!
//! After a HLT exit with nothing pending (`on_activity_done`), `kvm_vcpu_halt` polls: the vCPU
//! stays Running on its pCPU in `Activity::HaltPoll`, its time charged as `TimeKind::Overhead`
//! (vms.csv `overhead`: host work on the guest's behalf, as the HLT exit itself), until
//! - an interrupt or kick reaches it (`kvm_vcpu_check_block` < 0): `Sim::halt_poll_wake`
//!   resumes the guest with no block, no wake-up and no switch;
//! - the poll ends (`ktime_before(cur, stop)` fails) or another vCPU waits for its pCPU
//!   (`kvm_vcpu_can_poll`: `single_task_running() && !need_resched()`, checked when the pCPU is
//!   asked to reschedule and after every wake-up): it blocks as without polling (`halt`).
//!
//! Its `halt_poll_ns` is updated when it runs again, from the halt's whole length
//! (`HaltPoll::after_halt`). Off (`halt_poll` None), none of this runs: the hooks test one
//! `Option` or `Activity` before doing anything.

pub mod rule;

use super::super::state::{Activity, Event, Sim, TimeKind};
use crate::hypervisor::policy::VcpuState;
use crate::ids::VcpuId;
use crate::vmexit::Upcall;

impl Sim {
    /// `kvm_vcpu_halt` for running `v`, whose HLT found nothing pending: poll, or block at once
    /// (a zero poll, or another vCPU already waiting for this pCPU).
    pub(in crate::sim) fn kvm_vcpu_halt(&mut self, v: VcpuId) {
        let hp = self.mechanisms.halt_poll.expect("called with halt polling on");
        if self.guests[self.vinfo[v.idx()].vm.idx()].config.haltpoll.is_some() {
            // The guest's haltpoll driver turned host polling off (`arch_haltpoll_enable` writes
            // MSR_KVM_POLL_CONTROL = 0; x86 `kvm_arch_no_poll` then stops `kvm_vcpu_halt`
            // polling, and its halt_poll_ns is not updated).
            return self.halt(v);
        }
        let p = self.vinfo[v.idx()].pcpu.expect("a halting vCPU is running");
        let vc = &mut self.vcpus[v.idx()];
        vc.halt_poll_ns = hp.capped(vc.halt_poll_ns);
        vc.halt_start = Some(self.now);
        let poll = vc.halt_poll_ns;
        let vm = vc.slot.vm as usize;
        if poll == 0 {
            return self.halt(v);
        }
        self.vms[vm].stats.halt_polls += 1;
        if !self.single_task_running(p) {
            return self.halt(v);
        }
        let vc = &mut self.vcpus[v.idx()];
        vc.activity = Activity::HaltPoll;
        vc.time_kind = TimeKind::Overhead;
        vc.seg_start = self.now;
        vc.epoch += 1;
        let e = vc.epoch;
        self.queue.push(self.now + poll, Event::ActivityDone(v, e));
        self.mechanisms.pollers.push(v);
    }

    /// Whether `v` is halt-polling now.
    #[inline]
    pub(in crate::sim) fn halt_polling(&self, v: VcpuId) -> bool {
        self.vcpus[v.idx()].activity == Activity::HaltPoll && self.vinfo[v.idx()].state == VcpuState::Running
    }

    /// Linux `single_task_running()` on `p`, from the KVM host scheduler of `p`'s pool (true
    /// from a policy that is not one: halt polling runs only under KVM host schedulers).
    fn single_task_running(&mut self, p: crate::ids::PcpuId) -> bool {
        self.placement.policy_mut(self.placement.pcpu_pool(p)).kvm_host().is_none_or(|k| k.single_task_running(p))
    }

    pub(in crate::sim) fn stop_polling(&mut self, v: VcpuId) {
        self.settle(v);
        if let Some(i) = self.mechanisms.pollers.iter().position(|&u| u == v) {
            self.mechanisms.pollers.swap_remove(i);
        }
    }

    /// A wake-up event reached polling `v` (an interrupt injected, a kick): the poll succeeds
    /// and the guest resumes where its HLT returns.
    pub(in crate::sim) fn halt_poll_wake(&mut self, v: VcpuId) {
        self.stop_polling(v);
        let vm = self.vcpus[v.idx()].slot.vm as usize;
        self.vms[vm].stats.halt_poll_successes += 1;
        self.halt_ended(v);
        self.vinfo[v.idx()].pv_unhalted = false;
        self.vinfo[v.idx()].pending_interrupt = false;
        self.vcpus[v.idx()].activity = Activity::Thread;
        self.upcall(v, Upcall::Resume);
    }

    /// The poll of `v` timed out (its `ActivityDone`): resume if an event is pending after all,
    /// else block.
    pub(in crate::sim) fn halt_poll_timeout(&mut self, v: VcpuId) {
        let (vm, i) = self.gslot(v);
        // A `kvm_wait` halt (the PV spinlock's, `Vcpu::polling`) ends on a kick or an interrupt
        // only; its thread waiting for the lock is not an event.
        let pending = if self.vcpus[v.idx()].polling {
            self.vinfo[v.idx()].pv_unhalted || self.vcpus[v.idx()].kick_pending || self.guests[vm].has_interrupts(i)
        } else {
            self.guests[vm].has_events(i)
        };
        if pending {
            return self.halt_poll_wake(v);
        }
        self.stop_polling(v);
        self.halt(v);
    }

    /// `kvm_vcpu_can_poll` failed for the vCPU polling on `p`'s current: it blocks.
    fn halt_poll_abort(&mut self, v: VcpuId) {
        self.stop_polling(v);
        self.halt(v);
    }

    /// Before `do_schedule` on `p`: a vCPU polling there stops (`need_resched`) if another vCPU
    /// waits for `p`; alone, it polls on. Returns whether it blocked (which rescheduled `p`).
    #[inline]
    pub(in crate::sim) fn halt_poll_resched(&mut self, p: crate::ids::PcpuId) -> bool {
        let Some(v) = self.pinfo[p.idx()].current else { return false };
        if !self.halt_polling(v) || self.single_task_running(p) {
            return false;
        }
        self.halt_poll_abort(v);
        true
    }

    /// After a wake-up: every polling vCPU whose pCPU now has another vCPU waiting stops
    /// (`single_task_running` fails). Only the vCPUs polling now are looked at.
    pub(in crate::sim) fn halt_poll_check_pollers(&mut self) {
        let mut k = 0;
        while k < self.mechanisms.pollers.len() {
            let v = self.mechanisms.pollers[k];
            let p = self.vinfo[v.idx()].pcpu.expect("a polling vCPU is running");
            if self.single_task_running(p) {
                k += 1;
            } else {
                self.halt_poll_abort(v);
                k = 0;
            }
        }
    }

    /// The halt of `v` that began at `halt_start` ended (it runs guest code again): update its
    /// `halt_poll_ns` from the halt's length (end of `kvm_vcpu_halt`).
    pub(in crate::sim) fn halt_ended(&mut self, v: VcpuId) {
        let Some(hp) = self.mechanisms.halt_poll else { return };
        let vc = &mut self.vcpus[v.idx()];
        if let Some(start) = vc.halt_start.take() {
            vc.halt_poll_ns = hp.after_halt(vc.halt_poll_ns, self.now - start);
        }
    }

    /// The host half of `KVM_HC_KICK_CPU` from running `from` to `to` (arch/x86/kvm/x86.c,
    /// v6.6 `kvm_emulate_hypercall`): `kvm_pv_kick_cpu_op` delivers an `APIC_DM_REMRD`, which
    /// sets `to`'s `pv_unhalted` and kicks it (a polling vCPU resumes, a blocked one is woken),
    /// then `kvm_sched_yield` lets `from` yield to `to` if `to` waits for a pCPU (commit
    /// 266e85a5ec91, the queue-head boost; `KvmHost::kvm_sched_yield`). For the guest's
    /// hypercall (pvguest); the yield happens only under a KVM host policy that implements it.
    pub fn kvm_kick_cpu(&mut self, from: VcpuId, to: VcpuId) {
        self.kvm_pv_unhalt(to);
        if self.halt_polling(to) {
            self.halt_poll_wake(to);
        } else if self.vinfo[to.idx()].state == VcpuState::Halted {
            self.wake_vcpu(to, Some(from));
        }
        if self.vinfo[from.idx()].state == VcpuState::Running {
            self.with_vcpu_policy(from, |pol, ctx| {
                if let Some(k) = pol.kvm_host() {
                    k.kvm_sched_yield(ctx, from, to);
                }
            });
        }
    }

    /// Set `v`'s `VcpuInfo::pv_unhalted` (`vcpu->arch.pv.pv_unhalted = 1`): until it runs
    /// again, `kvm_vcpu_on_spin` (6.6) treats it as runnable though it blocked.
    pub fn kvm_pv_unhalt(&mut self, v: VcpuId) {
        self.vinfo[v.idx()].pv_unhalted = true;
    }
}
