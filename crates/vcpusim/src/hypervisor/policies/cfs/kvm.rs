//! KVM's directed yield on a pause-loop exit: virt/kvm/kvm_main.c `kvm_vcpu_on_spin` and the
//! scheduler's `yield_to` / `yield_to_task_fair`.

use super::{Cfs, DIRECTED_YIELD_TRIES};
use crate::hypervisor::policy::{PolicyCtx, VcpuState};
use crate::ids::VcpuId;

impl Cfs {
    /// kvm_vcpu_on_spin: try to yield to a preempted sibling, round robin from the last boosted.
    pub(super) fn directed_yield(&mut self, ctx: &mut PolicyCtx, v: VcpuId) -> bool {
        let vm = ctx.host.vcpu(v).vm;
        let siblings = &ctx.host.vm(vm).vcpus;
        if siblings.len() < 2 {
            return false;
        }
        let me = ctx.host.vcpu(v).pcpu.expect("a yielding vCPU is running").idx();
        let start = self.last_boosted[vm.idx()];
        let mut failures = 0;
        for i in 1..=siblings.len() {
            let idx = (start + i) % siblings.len();
            let target = siblings[idx];
            let info = ctx.host.vcpu(target);
            if target == v || info.state != VcpuState::Runnable || !info.preempted {
                continue;
            }
            let Some(tp) = self.se[target.idx()].rq else { continue };
            // yield_to: -ESRCH when both run queues hold a single task.
            if self.rqs[me].nr_running == 1 && self.rqs[tp].nr_running == 1 {
                failures += 1;
                if failures >= DIRECTED_YIELD_TRIES {
                    return false;
                }
                continue;
            }
            // yield_to_task_fair: target becomes the next buddy on its rq, the yielder the
            // skip buddy on its own; both run queues reschedule.
            self.rqs[tp].next_buddy = Some(target);
            self.rqs[me].skip_buddy = Some(v);
            self.last_boosted[vm.idx()] = idx;
            self.resched(ctx, tp);
            self.resched(ctx, me);
            return true;
        }
        false
    }
}
