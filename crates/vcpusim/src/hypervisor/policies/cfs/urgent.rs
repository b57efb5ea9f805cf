//! The urgent-vCPU-first overlay wired into CFS (seed 000 section 3.1.3; state and rules in
//! hypervisor/uvf.rs). Fairness is CFS's: an urgent vCPU may run first only while its vruntime
//! is at most `urgent_allowance` ahead of the vCPU it displaces, so it borrows from its future
//! share instead of taking more than it.

use super::{Cfs, UVF_TIMER};
use crate::hypervisor::policy::{IpiKind, PolicyCtx, VcpuState};
use crate::ids::{PcpuId, VcpuId};
use crate::time::Nanos;

/// An urgent vCPU at `vruntime` may displace one at `reference` (none: nothing to displace).
fn within(vruntime: u64, reference: Option<u64>, allowance: u64) -> bool {
    reference.is_none_or(|r| vruntime <= r.saturating_add(allowance))
}

impl Cfs {
    fn allowance(&self) -> u64 {
        self.uvf.as_ref().map_or(0, |u| u.cfg.urgent_allowance)
    }

    /// Whether urgent `v` may displace a vCPU at virtual time `reference`.
    fn within_allowance(&self, v: VcpuId, reference: Option<u64>) -> bool {
        within(self.se[v.idx()].vruntime, reference, self.allowance())
    }

    /// The vruntime an urgent candidate on `p` is compared with: the vCPU that was running
    /// (`prev`) unless that is the candidate, else the leftmost other queued vCPU.
    fn displaced_vruntime(&self, p: usize, prev: Option<VcpuId>, candidate: VcpuId) -> Option<u64> {
        match prev {
            Some(c) if c != candidate => Some(self.se[c.idx()].vruntime),
            _ => self.rqs[p].tree.iter().find(|(_, v)| *v != candidate).map(|(vr, _)| *vr),
        }
    }

    /// do_schedule's first look: an eligible vCPU from `p`'s urgent queue. `prev` is the vCPU
    /// that was running (already back in the tree).
    pub(super) fn pick_urgent(&mut self, ctx: &PolicyCtx, p: usize, prev: Option<VcpuId>) -> Option<VcpuId> {
        let allowance = self.allowance();
        let mut uvf = self.uvf.take()?;
        let pick = uvf.pick(
            PcpuId(p as u32),
            ctx.now(),
            |v| self.se[v.idx()].queued && self.se[v.idx()].rq == Some(p),
            |v| within(self.se[v.idx()].vruntime, self.displaced_vruntime(p, prev, v), allowance),
        );
        self.uvf = Some(uvf);
        pick
    }

    /// After do_schedule chose `next` for `p`: an urgent vCPU gets a protected urgent tslice.
    pub(super) fn start_urgent_tslice(&mut self, ctx: &mut PolicyCtx, p: usize, next: Option<VcpuId>) {
        let Some(u) = self.uvf.as_mut() else { return };
        let pc = PcpuId(p as u32);
        match next {
            Some(n) if u.is_urgent(n, ctx.now()) => {
                let end = u.protect(pc, ctx.now());
                ctx.set_timer(end, UVF_TIMER | p as u64);
            }
            _ => u.unprotect(pc),
        }
    }

    /// A waking vCPU is urgent: queue it as urgent and preempt if allowed. False if it is not
    /// urgent (the caller does the normal wakeup preemption check).
    pub(super) fn wake_urgent(&mut self, ctx: &mut PolicyCtx, v: VcpuId, p: usize) -> bool {
        let Some(u) = self.uvf.as_mut() else { return false };
        if !u.is_urgent(v, ctx.now()) {
            return false;
        }
        u.enqueue(PcpuId(p as u32), v);
        self.urgent_preempt_check(ctx, v, p);
        true
    }

    /// Queued urgent `v` on `p`: preempt the current vCPU if `v` is within its allowance of it
    /// (`resched` defers if the current one is itself protected).
    fn urgent_preempt_check(&mut self, ctx: &mut PolicyCtx, v: VcpuId, p: usize) {
        match self.rqs[p].curr {
            None => self.resched(ctx, p),
            Some(c) => {
                self.update_curr(ctx, p);
                if self.within_allowance(v, Some(self.se[c.idx()].vruntime)) {
                    self.resched(ctx, p);
                }
            }
        }
    }

    /// `v` entered or extended urgent state (`entered`: it was not urgent before).
    fn became_urgent(&mut self, ctx: &mut PolicyCtx, v: VcpuId, entered: bool) {
        if entered {
            ctx.note_urgent(v);
        }
        let now = ctx.now();
        let info = ctx.host.vcpu(v);
        match info.state {
            VcpuState::Running => {
                // A running vCPU requesting urgency (a Resched-DP sender, a recipient that is on
                // a pCPU already) is protected from now on.
                let p = info.pcpu.expect("a running vCPU has a pCPU").idx();
                let u = self.uvf.as_mut().expect("only called with UVF on");
                let pc = PcpuId(p as u32);
                if !u.protecting(pc, now) {
                    let end = u.protect(pc, now);
                    ctx.set_timer(end, UVF_TIMER | p as u64);
                }
                // A time-based request may end before the tslice: release then.
                if let Some(end) = u.time_based_end(v) {
                    ctx.set_timer(end, UVF_TIMER | p as u64);
                }
            }
            VcpuState::Runnable => {
                if let Some(p) = self.se[v.idx()].rq {
                    self.uvf.as_mut().expect("only called with UVF on").enqueue(PcpuId(p as u32), v);
                    self.urgent_preempt_check(ctx, v, p);
                }
            }
            // The IPI wakes it next; `wake` sees it urgent.
            VcpuState::Halted => {}
        }
    }

    fn request_time(&mut self, ctx: &mut PolicyCtx, v: VcpuId, dur: Nanos) {
        let entered = self.uvf.as_mut().expect("only called with UVF on").request_time(v, ctx.now(), dur);
        self.became_urgent(ctx, v, entered);
    }

    /// Policy hook: an IPI was sent. Resched-DP makes the sender urgent, Resched-Co and TLB-Co
    /// the recipient (section 4's three features), per the sender's VM knobs.
    pub(super) fn uvf_ipi_sent(&mut self, ctx: &mut PolicyCtx, from: VcpuId, to: VcpuId, kind: IpiKind) {
        if self.uvf.is_none() {
            return;
        }
        let knobs = ctx.host.vm_of(from).uvf;
        match kind {
            IpiKind::Resched => {
                if let Some(dp) = knobs.resched_dp {
                    self.request_time(ctx, from, dp);
                }
                if let Some(co) = knobs.resched_co {
                    self.request_time(ctx, to, co);
                }
            }
            IpiKind::TlbShootdown => {
                if knobs.tlb_co {
                    let entered = self.uvf.as_mut().expect("checked").request_event(to, ctx.now());
                    self.became_urgent(ctx, to, entered);
                }
            }
        }
    }

    /// Policy hook: the first APIC access of an IPI send (early delayed preemption).
    pub(super) fn uvf_ipi_send_started(&mut self, ctx: &mut PolicyCtx, v: VcpuId) {
        if self.uvf.is_none() {
            return;
        }
        let knobs = ctx.host.vm_of(v).uvf;
        if let (true, Some(dp)) = (knobs.early_dp, knobs.resched_dp) {
            self.request_time(ctx, v, dp);
        }
    }

    /// Policy hook: an IPI's EOI. A TLB-Co request ends; a preemption held back for it happens.
    pub(super) fn uvf_ipi_handled(&mut self, ctx: &mut PolicyCtx, v: VcpuId, kind: IpiKind) {
        let Some(u) = self.uvf.as_mut() else { return };
        if kind != IpiKind::TlbShootdown || !ctx.host.vm_of(v).uvf.tlb_co {
            return;
        }
        u.ack_event(v);
        if let Some(p) = ctx.host.vcpu(v).pcpu {
            if !u.is_urgent(v, ctx.now()) && u.take_deferred(p) {
                self.resched(ctx, p.idx());
            }
        }
    }

    /// Policy hook: a pause-loop exit cancels urgency (section 4.3).
    pub(super) fn uvf_cancel(&mut self, ctx: &PolicyCtx, v: VcpuId) {
        if let Some(u) = self.uvf.as_mut() {
            u.cancel(v, ctx.host.vcpu(v).pcpu);
        }
    }

    /// Policy hook: `v` halted; it waits in no urgent queue.
    pub(super) fn uvf_sleep(&mut self, v: VcpuId) {
        if let Some(u) = self.uvf.as_mut() {
            u.remove(v);
        }
    }

    /// The UVF timer of `p`: a protected tslice or a time-based request ended. A still-urgent
    /// runner goes to the tail of the urgent queue (round robin); held-back preemptions happen.
    pub(super) fn uvf_timer(&mut self, ctx: &mut PolicyCtx, p: usize) {
        let now = ctx.now();
        let pc = PcpuId(p as u32);
        let Some(u) = self.uvf.as_mut() else { return };
        let Some(c) = self.rqs[p].curr else {
            u.take_deferred(pc);
            return;
        };
        if u.protects(pc, c, now) {
            return; // a stale timer: the tslice was renewed
        }
        let deferred = u.take_deferred(pc);
        if u.is_urgent(c, now) {
            u.unprotect(pc);
            u.enqueue(pc, c);
            if deferred || u.others_waiting(pc, c) {
                self.resched(ctx, p);
            }
        } else if deferred {
            self.resched(ctx, p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::CfsKind;
    use crate::hypervisor::policies::test_host::FakeHost;
    use crate::hypervisor::policies::PolicyKind;
    use crate::hypervisor::policy::{IpiKind, VcpuState, YieldReason};
    use crate::hypervisor::uvf::{UvfHost, UvfVm};
    use crate::ids::{PcpuId, VcpuId};
    use crate::params::{ParamValue, Params};
    use crate::time::{MS, US};

    /// vCPU roles on one pCPU: VM0 = {RECIPIENT, SENDER}, VM1 = {RIVAL}, VM2 = {SLEEPER}.
    const RECIPIENT: VcpuId = VcpuId(0);
    const SENDER: VcpuId = VcpuId(1);
    const RIVAL: VcpuId = VcpuId(2);
    const SLEEPER: VcpuId = VcpuId(3);
    const P0: PcpuId = PcpuId(0);

    /// One pCPU, UVF on with `allowance`, VM0's knobs `knobs`; settled so that RIVAL runs,
    /// RECIPIENT waits queued (with more vruntime than RIVAL) and SENDER and SLEEPER are halted.
    fn host(allowance: u64, knobs: UvfVm) -> FakeHost {
        let uvf = UvfHost { urgent_tslice: 500 * US, urgent_allowance: allowance };
        let mut params = Params::defaults(&CfsKind.params());
        params.set("directed_yield", ParamValue::Bool(false));
        let mut h = FakeHost::new(1, &[(2, 256), (1, 256), (1, 256)], Some(uvf), |shape| CfsKind.build(&params, shape));
        h.vms[0].uvf = knobs;
        for _ in 0..1000 {
            let running = h.pcpus[0].current;
            if let Some(v) = running.filter(|v| [SENDER, SLEEPER].contains(v)) {
                h.halt(v);
            } else if running == Some(RIVAL) && h.vcpus[RECIPIENT.idx()].state == VcpuState::Runnable {
                let halted = |v: VcpuId| h.vcpus[v.idx()].state == VcpuState::Halted;
                if halted(SENDER) && halted(SLEEPER) {
                    return h;
                }
            }
            let t = h.now + 100 * US;
            h.advance_to(t);
        }
        panic!("the host never settled");
    }

    fn running(h: &FakeHost) -> Option<VcpuId> {
        h.pcpus[0].current
    }

    fn tlb_ipi(h: &mut FakeHost) {
        h.call(|pol, ctx| pol.ipi_sent(ctx, SENDER, RECIPIENT, IpiKind::TlbShootdown));
        h.check();
    }

    #[test]
    fn an_urgent_vcpu_runs_first_within_its_allowance_and_not_beyond() {
        let tlb_co = UvfVm { tlb_co: true, ..UvfVm::default() };
        let mut h = host(18 * MS, tlb_co);
        tlb_ipi(&mut h);
        assert_eq!(running(&h), Some(RECIPIENT), "urgent and within 18 ms of the runner: it preempts");
        assert_eq!(h.urgent_entered, 1);

        let mut h = host(0, tlb_co);
        tlb_ipi(&mut h);
        assert_eq!(running(&h), Some(RIVAL), "zero allowance: it may not run ahead of its fair turn");

        let mut h = host(18 * MS, UvfVm::default());
        tlb_ipi(&mut h);
        assert_eq!(running(&h), Some(RIVAL), "TLB-Co off for this VM: no urgency");
        assert_eq!(h.urgent_entered, 0);
    }

    #[test]
    fn tlb_co_urgency_protects_until_the_acknowledgement() {
        let mut h = host(18 * MS, UvfVm { tlb_co: true, ..UvfVm::default() });
        tlb_ipi(&mut h);
        assert_eq!(running(&h), Some(RECIPIENT));
        // A long sleeper wakes with sleeper credit: it would preempt, but the urgent vCPU is
        // protected until its EOI.
        h.wake(SLEEPER);
        assert_eq!(running(&h), Some(RECIPIENT), "protected while the shootdown is unacknowledged");
        h.call(|pol, ctx| pol.ipi_handled(ctx, RECIPIENT, IpiKind::TlbShootdown));
        h.check();
        assert_ne!(running(&h), Some(RECIPIENT), "the held-back preemption happens at the EOI");
    }

    #[test]
    fn a_resched_dp_sender_is_not_preempted_inside_the_delay_and_is_after_it() {
        for dp in [None, Some(500 * US)] {
            let mut h = host(18 * MS, UvfVm { resched_dp: dp, ..UvfVm::default() });
            // Make RECIPIENT the runner and let it build up vruntime: it plays the sender.
            h.call(|pol, ctx| pol.ipi_sent(ctx, SENDER, RECIPIENT, IpiKind::TlbShootdown));
            let start = h.now;
            h.advance_to(start + 20 * MS);
            let Some(runner) = running(&h) else { panic!("the pCPU idles") };
            h.call(|pol, ctx| pol.ipi_sent(ctx, runner, SENDER, IpiKind::Resched));
            h.wake(SLEEPER);
            let at = h.now;
            if dp.is_none() {
                assert_eq!(running(&h), Some(SLEEPER), "without Resched-DP the sleeper preempts at once");
                continue;
            }
            assert_eq!(running(&h), Some(runner), "inside the delay the sender keeps its pCPU");
            h.advance_to(at + 499 * US);
            assert_eq!(running(&h), Some(runner));
            h.advance_to(at + 500 * US);
            assert_eq!(running(&h), Some(SLEEPER), "after the delay the held-back preemption happens");
        }
    }

    #[test]
    fn a_pause_loop_exit_cancels_urgency() {
        let mut h = host(18 * MS, UvfVm { tlb_co: true, ..UvfVm::default() });
        tlb_ipi(&mut h);
        assert_eq!(running(&h), Some(RECIPIENT));
        h.call(|pol, ctx| pol.yield_vcpu(ctx, RECIPIENT, YieldReason::PauseLoop));
        h.schedule(P0);
        h.check();
        assert_eq!(running(&h), Some(RIVAL), "the spinning urgent vCPU gives way");
        // No longer urgent: a later round of the urgent queue does not bring it back.
        let t = h.now + 600 * US;
        h.advance_to(t);
        assert_eq!(running(&h), Some(RIVAL));
    }
}
