//! KVM's directed yield on a pause-loop exit (arch/x86/kvm/vmx.c `handle_pause` ->
//! virt/kvm/kvm_main.c `kvm_vcpu_on_spin` -> kernel/sched.c `yield_to` ->
//! `yield_to_task_fair`), by Linux version (`[host.params] kvm`), each read in that version's
//! source:
//! - **3.2** (the default; seed 000's host): two passes over the VM's vCPUs, the first after
//!   `last_boosted_vcpu` (`if (!pass && i < last_boosted_vcpu) { i = last_boosted_vcpu;
//!   continue; }`, which starts at vCPU 0 itself when that was the last boosted), the second
//!   from 0 up to it. A candidate is skipped only if
//!   it is the spinner, halted (`waitqueue_active(&vcpu->wq)`) or running (`PF_VCPU`);
//!   `yield_to` then fails only for a task that is running or not runnable. So a vCPU woken by
//!   an IPI and still waiting in its run queue is a candidate. The first success boosts the
//!   target (`set_next_buddy`), makes the spinner yield (`yield_task_fair`: the skip buddy, unless
//!   it is alone on its pCPU), reschedules the target's pCPU and the spinner's, and becomes
//!   `last_boosted_vcpu`.
//! - **3.9**: the first pass starts after `last_boosted_vcpu` (`i <= last_boosted_vcpu`, as
//!   since 3.6), and `yield_to` answers `-ESRCH` without yielding when both the spinner's and the
//!   target's run queues hold one task. `yield_to` still returns `bool` there (3.9-3.15), so
//!   `kvm_vcpu_yield_to` turns `-ESRCH` into `true`: the scan stops as if the target had been
//!   boosted (and it becomes `last_boosted_vcpu`), nothing yields. (The `dy_eligible` filter of
//!   3.7-3.8 changes nothing here: a candidate that is not running is never inside
//!   `kvm_vcpu_on_spin`, so it is always eligible.)
//! - **3.10**: also skip a candidate that was not preempted while runnable
//!   (`if (!ACCESS_ONCE(vcpu->preempted)) continue;`: absent in 3.9.6, present in 3.10.99 and
//!   3.11): a vCPU woken and not yet run is no longer a candidate.
//! - **3.16**: `yield_to` returns `int` (still `bool` in 3.15.5, `int` in 3.16.0), so `-ESRCH`
//!   counts as a failure and the scan gives up after three (`try = 3`).
//!
//! Siblings in another pool (another policy instance) are not candidates here.

use super::{Buddy, Cfs};
use crate::hypervisor::policy::{PolicyCtx, VcpuState};
use crate::ids::VcpuId;

/// The candidates `kvm_vcpu_on_spin` tries before giving up on `-ESRCH` results (`try`,
/// kvm_main.c, counted from 3.16 on).
const DIRECTED_YIELD_TRIES: u32 = 3;

/// The Linux version whose `kvm_vcpu_on_spin` / `yield_to` the policy follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum KvmVersion {
    V3_2,
    V3_9,
    V3_10,
    V3_16,
}

impl KvmVersion {
    pub(super) const NAMES: &'static [&'static str] = &["3.2", "3.9", "3.10", "3.16"];

    pub(super) fn from_name(name: &str) -> Option<Self> {
        match name {
            "3.2" => Some(KvmVersion::V3_2),
            "3.9" => Some(KvmVersion::V3_9),
            "3.10" => Some(KvmVersion::V3_10),
            "3.16" => Some(KvmVersion::V3_16),
            _ => None,
        }
    }
}

/// What `yield_to` answered.
enum YieldTo {
    Yielded,
    Failed,
    /// `-ESRCH`: both run queues hold one task (3.9 on).
    Esrch,
}

impl Cfs {
    /// `kvm_vcpu_on_spin(me)` for the spinning vCPU `v`.
    pub(super) fn kvm_vcpu_on_spin(&mut self, ctx: &mut PolicyCtx, v: VcpuId) {
        let vm = Self::vm_of(ctx, v);
        let host = ctx.host;
        let siblings = &host.vm(host.vcpu(v).vm).vcpus;
        let last = self.last_boosted[vm];
        let mut tries = DIRECTED_YIELD_TRIES;
        for pass in 0..2 {
            for (i, &target) in siblings.iter().enumerate() {
                // 3.2's `i = last_boosted_vcpu; continue;` lands on last + 1 unless last is 0.
                let skip_first = if self.kvm >= KvmVersion::V3_9 { i <= last } else { last > 0 && i <= last };
                if pass == 0 && skip_first {
                    continue;
                }
                if pass == 1 && i > last {
                    break;
                }
                let info = host.vcpu(target);
                if self.kvm >= KvmVersion::V3_10 && !info.preempted {
                    continue;
                }
                // The spinner itself; a halted vCPU (waitqueue_active); a running one (PF_VCPU).
                if target == v || info.state != VcpuState::Runnable {
                    continue;
                }
                match self.yield_to(ctx, v, target) {
                    YieldTo::Yielded => {
                        self.last_boosted[vm] = i;
                        return;
                    }
                    YieldTo::Esrch if self.kvm < KvmVersion::V3_16 => {
                        // A bool `true`: the scan ends as after a boost.
                        self.last_boosted[vm] = i;
                        return;
                    }
                    YieldTo::Esrch => {
                        tries -= 1;
                        if tries == 0 {
                            return;
                        }
                    }
                    YieldTo::Failed => {}
                }
            }
        }
    }

    /// `yield_to(task, preempt = 1)` from `v` to `target`.
    fn yield_to(&mut self, ctx: &mut PolicyCtx, v: VcpuId, target: VcpuId) -> YieldTo {
        let me = ctx.host.vcpu(v).pcpu.expect("a yielding vCPU is running").idx();
        // A throttled or foreign vCPU is on no run queue here (yield_to_task_fair: !on_rq).
        let Some(tp) = self.se[target.idx()].rq else { return YieldTo::Failed };
        if self.kvm >= KvmVersion::V3_9 && self.rqs[me].nr_running == 1 && self.rqs[tp].nr_running == 1 {
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
        for t in 1..200 {
            if h.pcpus[0].current == Some(TARGET) {
                break;
            }
            h.advance_to(t * MS);
        }
        assert_eq!(h.pcpus[0].current, Some(TARGET), "TARGET never ran");
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
