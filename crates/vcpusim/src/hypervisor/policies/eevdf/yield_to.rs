//! EEVDF's side of KVM's directed yield (hypervisor/kvm.rs `kvm_vcpu_on_spin`): Linux 6.6's
//! `yield_to` (kernel/sched/core.c) -> `yield_to_task_fair` (kernel/sched/fair.c).
//!
//! `yield_to` answers `-ESRCH` when the spinner's and the target's run queues both hold one
//! task, fails for a target running or not runnable, and otherwise calls
//! `yield_to_task_fair`: it sets the target as the next buddy, which 6.6's `pick_next_entity`
//! reads only with NEXT_BUDDY (false by default), so the boost itself does nothing; what
//! remains is `yield_task_fair`, which pushes the spinner's deadline one request later. Then
//! the target's pCPU reschedules (`preempt`, another run queue) and the spinner's schedules.

use super::Eevdf;
use crate::hypervisor::kvm::{KvmSpin, KvmYieldTo, YieldTo};
use crate::hypervisor::policy::PolicyCtx;
use crate::ids::VcpuId;

impl KvmYieldTo for Eevdf {
    fn kvm_spin(&mut self) -> &mut KvmSpin {
        &mut self.kvm
    }

    /// `yield_to(task, preempt = 1)` from `v` to `target`.
    fn yield_to(&mut self, ctx: &mut PolicyCtx, v: VcpuId, target: VcpuId) -> YieldTo {
        let Some(me) = self.task_rq[v.idx()] else { return YieldTo::Failed };
        // yield_to_task_fair: `!se->on_rq` (a vCPU of another pool is on none here).
        let Some(tp) = self.task_rq[target.idx()] else { return YieldTo::Failed };
        if self.rqs[me].nr_running == 1 && self.rqs[tp].nr_running == 1 {
            return YieldTo::Esrch;
        }
        // task_on_cpu(p_rq, p).
        if self.running_task(tp).map(|(_, c)| c) == Some(target) {
            return YieldTo::Failed;
        }
        self.yield_task(ctx.now(), me);
        if tp != me {
            self.resched(ctx, tp);
        }
        self.resched(ctx, me);
        YieldTo::Yielded
    }
}
