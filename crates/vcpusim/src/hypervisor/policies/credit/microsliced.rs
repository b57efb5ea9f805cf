//! Seed 002's micro-sliced cores as credit carries them (`[host.microsliced]`): detection at
//! the yield entry, at relayed IPIs and vIRQs (`hypervisor/critical_detect.rs`), and the books
//! of a vCPU lent to the micro pool. In the authors' Xen 4.7 (github.com/Jeongseob/xen) the
//! hidden pool shares this scheduler instance, so a vCPU there keeps its `csched_vcpu`: it stays
//! on its domain's active list and burns its own credit; `csched_schedule` on the hidden pCPU
//! resets its `CSCHED_PRI_TS_TURBO_BOOST` to UNDER when it leaves ("Clear TURBO flag"), and
//! `context_saved` -> `vcpu_migrate_to_cpu(prev, prev_processor, 0)` -> `vcpu_wake` ->
//! `csched_vcpu_wake` queues it on its previous pCPU, where, UNDER and not MIGRATING, it is
//! BOOSTed.

use super::*;
use crate::hypervisor::critical_detect::{self as detect, YieldOutcome};

impl Credit {
    /// At `csched_unit_yield`: the detection; false if the yield does not happen (then the
    /// YIELD flag is not set either).
    pub(super) fn micro_yield(&mut self, ctx: &mut PolicyCtx, v: VcpuId, reason: YieldReason) -> bool {
        let Some(d) = self.micro else { return true };
        match detect::on_yield(&d, ctx, v, reason) {
            YieldOutcome::Yield => true,
            YieldOutcome::Continue => {
                ctx.skip_yield(v, false);
                false
            }
            YieldOutcome::ContinueIfAccelerated => {
                // The host yields only if no sibling went to a micro core; the flag is set for
                // that case (left set otherwise, until the next schedule-out clears it).
                ctx.skip_yield(v, true);
                true
            }
        }
    }

    pub(super) fn micro_ipi_sent(&mut self, ctx: &mut PolicyCtx, from: VcpuId, to: VcpuId, kind: IpiKind) {
        if let Some(d) = self.micro {
            detect::on_ipi_relay(&d, ctx, from, to, kind);
        }
    }

    pub(super) fn micro_virq_sent(&mut self, ctx: &mut PolicyCtx, v: VcpuId) {
        if let Some(d) = self.micro {
            detect::on_virq(&d, ctx, v);
        }
    }

    /// `v` (Runnable, queued here) goes to a micro core: off the run queue, its books kept.
    pub(super) fn micro_lend(&mut self, _ctx: &mut PolicyCtx, v: VcpuId) {
        if self.vcpus[v.idx()].queued_on.is_some() {
            self.runq_remove(v);
        }
        // Not awake here while away (an unpark must not queue it).
        self.vcpus[v.idx()].awake = false;
    }

    /// `v` is back after running `ran` on a micro core: burn its credits as `burn_credits` would
    /// have, UNDER ("Clear TURBO flag"), and unless it halted there, woken on its previous pCPU.
    pub(super) fn micro_return(&mut self, ctx: &mut PolicyCtx, v: VcpuId, ran: Nanos) {
        let svc = &mut self.vcpus[v.idx()];
        let val = ran * CREDITS_PER_MSEC + svc.residual;
        svc.residual = val % MS;
        svc.credit -= (val / MS) as i64;
        self.set_pri(v, PRI_UNDER);
        if ctx.host.vcpu(v).state == VcpuState::Halted {
            return;
        }
        let svc = &mut self.vcpus[v.idx()];
        svc.awake = true;
        if svc.parked {
            return;
        }
        self.rehome_if_disallowed(&ctx.host, v);
        self.queue_woken(ctx, v);
    }
}
