//! CFS's side of KVM's directed yield (hypervisor/kvm.rs `kvm_vcpu_on_spin`): Linux 3.2's
//! `yield_to` -> `yield_to_task_fair` (kernel/sched.c, kernel/sched_fair.c), with the `-ESRCH`
//! answer of 3.9 on (`[host.params] kvm`).

use super::{Buddy, Cfs};
use crate::hypervisor::kvm::{KvmSpin, KvmVersion, KvmYieldTo, YieldTo};
use crate::hypervisor::policy::PolicyCtx;
use crate::ids::VcpuId;

impl KvmYieldTo for Cfs {
    fn kvm_spin(&mut self) -> &mut KvmSpin {
        &mut self.kvm
    }

    /// `yield_to(task, preempt = 1)` from `v` to `target`.
    fn yield_to(&mut self, ctx: &mut PolicyCtx, v: VcpuId, target: VcpuId) -> YieldTo {
        let me = ctx.host.vcpu(v).pcpu.expect("a yielding vCPU is running").idx();
        // A throttled or foreign vCPU is on no run queue here (yield_to_task_fair: !on_rq).
        let Some(tp) = self.se[target.idx()].rq else { return YieldTo::Failed };
        if self.kvm.version >= KvmVersion::V3_9 && self.rqs[me].nr_running == 1 && self.rqs[tp].nr_running == 1 {
            return YieldTo::Esrch;
        }
        if self.curr_task(tp) == Some(target) {
            return YieldTo::Failed;
        }
        // yield_to_task_fair: the target becomes the next buddy at both levels, the spinner
        // yields (yield_task_fair); the target's pCPU reschedules, then the spinner's.
        let tvm = self.vm_index(target);
        self.set_buddy(Buddy::Next, tvm, tp, target);
        self.yield_task(ctx, me);
        if tp != me {
            self.resched(ctx, tp);
        }
        self.resched_now(ctx, me);
        YieldTo::Yielded
    }
}

#[cfg(test)]
mod tests {
    use super::super::CfsKind;
    use crate::hypervisor::kvm::KvmVersion;
    use crate::hypervisor::policies::test_host::FakeHost;
    use crate::hypervisor::policies::PolicyKind;
    use crate::hypervisor::policy::{IpiKind, VcpuState, YieldReason};
    use crate::ids::{PcpuId, VcpuId};
    use crate::params::{ParamValue, Params};
    use crate::time::MS;

    const SPINNER: VcpuId = VcpuId(0);
    const TARGET: VcpuId = VcpuId(1);
    const P0: PcpuId = PcpuId(0);

    /// One pCPU, one 2-vCPU VM under `kvm`: SPINNER runs and TARGET has just been woken by
    /// SPINNER's TLB-shootdown IPI and waits in the run queue (a wakeup granularity of 1 s keeps
    /// the wakeup from preempting). Returns the host at that point.
    fn woken_target_waits(kvm: &str) -> FakeHost {
        let mut params = Params::defaults(&CfsKind.params());
        params.set("kvm", ParamValue::Choice(kvm.to_string()));
        params.set("wakeup_granularity", ParamValue::Duration(1000 * MS));
        let mut h = FakeHost::new(1, &[(2, 256)], None, |shape| CfsKind.build(&params, shape));
        // Let the two share the pCPU until TARGET is the one running, then halt it.
        h.advance_until_running(P0, TARGET);
        h.halt(TARGET);
        assert_eq!(h.pcpus[0].current, Some(SPINNER));
        // SPINNER sends TARGET a TLB-shootdown IPI, which wakes it.
        h.call(|pol, ctx| pol.ipi_sent(ctx, SPINNER, TARGET, IpiKind::TlbShootdown));
        h.wake(TARGET);
        assert_eq!(h.vcpus[TARGET.idx()].state, VcpuState::Runnable);
        assert!(!h.vcpus[TARGET.idx()].preempted, "a woken vCPU is not 'preempted'");
        assert_eq!(h.pcpus[0].current, Some(SPINNER), "the wakeup preempted the spinner");
        h
    }

    /// The spinner waits for TARGET's acknowledgement in the kernel and takes a pause-loop exit.
    fn pause_loop_exit(h: &mut FakeHost) {
        h.call(|pol, ctx| pol.yield_vcpu(ctx, SPINNER, YieldReason::PauseLoop));
        h.schedule(P0);
        h.check();
    }

    /// `keeps_current` (the engine then skips `do_schedule`) holds at every
    /// reschedule of a pause-loop storm (`FakeHost::schedule` asserts it) under each KVM
    /// version, and says true for the spinner's own reschedule after its directed yield.
    #[test]
    fn keeps_current_is_exact_through_a_pause_loop_storm() {
        for kvm in KvmVersion::NAMES {
            let mut params = Params::defaults(&CfsKind.params());
            params.set("kvm", ParamValue::Choice(kvm.to_string()));
            let mut h = FakeHost::new(3, &[(4, 256), (1, 256), (1, 256)], None, |shape| CfsKind.build(&params, shape));
            h.pause_loop_storm(300, 200 * crate::time::US);
            assert!(h.kept > 100, "{kvm}: keeps_current said true {} times", h.kept);
        }
    }

    #[test]
    fn kvm_3_2_boosts_a_woken_queued_tlb_target_and_3_10_does_not() {
        // 3.2: any runnable sibling that is not running is a candidate; TARGET is boosted (the
        // next buddy) and the spinner yields (the skip buddy), so TARGET runs.
        let mut h = woken_target_waits("3.2");
        pause_loop_exit(&mut h);
        assert_eq!(h.pcpus[0].current, Some(TARGET), "3.2 did not boost the woken TLB target");
        // 3.10 and later: only a sibling preempted while runnable is a candidate; TARGET was
        // woken, not preempted, so nothing is boosted and the spinner keeps the pCPU.
        for later in ["3.10", "3.16"] {
            let mut h = woken_target_waits(later);
            pause_loop_exit(&mut h);
            assert_eq!(h.pcpus[0].current, Some(SPINNER), "{later} boosted a vCPU that was not preempted");
        }
        // 3.9 has no preempted-only rule: TARGET is boosted as in 3.2 (two tasks on the run
        // queue, so no -ESRCH).
        let mut h = woken_target_waits("3.9");
        pause_loop_exit(&mut h);
        assert_eq!(h.pcpus[0].current, Some(TARGET));
    }
}
