//! The urgent-vCPU-first overlay wired into CFS (seed 000 section 3.1.3; state and rules in
//! hypervisor/uvf.rs and uvf/carrier.rs). Fairness is CFS's: an urgent vCPU may run first only
//! while its vruntime is at most `urgent_allowance` ahead of the vCPU it displaces, so it borrows
//! from its future share instead of taking more than it.

use super::{Cfs, UVF_TIMER};
use crate::hypervisor::policy::PolicyCtx;
use crate::hypervisor::uvf::carrier::UrgentBase;
use crate::hypervisor::uvf::Uvf;
use crate::ids::VcpuId;
use crate::time::Nanos;

impl UrgentBase for Cfs {
    fn uvf_slot(&mut self) -> &mut Option<Uvf> {
        &mut self.uvf
    }
    fn uvf_ref(&self) -> Option<&Uvf> {
        self.uvf.as_ref()
    }
    fn waiting_on(&self, v: VcpuId) -> Option<usize> {
        let e = &self.se[v.idx()];
        e.rq.filter(|_| e.queued)
    }
    fn running_on(&self, p: usize) -> Option<VcpuId> {
        self.curr_task(p)
    }
    fn charge_running(&mut self, ctx: &PolicyCtx, p: usize) {
        self.update_curr(ctx, p);
    }
    /// Virtual time at the level the two entities share (`find_matching_se`): `v`'s vruntime
    /// against the displaced vCPU's when they are of one VM, else their VMs' group entities'
    /// on `p`. With no displaced vCPU, against the leftmost other VM's group entity, else the
    /// leftmost other vCPU of `v`'s VM.
    fn within_allowance(&self, v: VcpuId, p: usize, displaced: Option<VcpuId>, allowance: Nanos) -> bool {
        let vm = self.vm_index(v);
        let gse = |vm: usize| self.groups[self.gi(vm, p)].se.vruntime;
        let (mine, reference) = match displaced {
            Some(c) if self.vm_index(c) == vm => (self.se[v.idx()].vruntime, Some(self.se[c.idx()].vruntime)),
            Some(c) => (gse(vm), Some(gse(self.vm_index(c)))),
            None => match self.rqs[p].root.tree.iter().find(|(_, x)| *x as usize != vm) {
                Some(&(vr, _)) => (gse(vm), Some(vr)),
                None => {
                    let g = &self.groups[self.gi(vm, p)];
                    (self.se[v.idx()].vruntime, g.rq.tree.iter().find(|(_, x)| *x != v.0).map(|(vr, _)| *vr))
                }
            },
        };
        reference.is_none_or(|r| mine <= r.saturating_add(allowance))
    }
    fn resched(&mut self, ctx: &mut PolicyCtx, p: usize) {
        Cfs::resched(self, ctx, p);
    }
    fn uvf_timer_key(&self, p: usize) -> u64 {
        UVF_TIMER | p as u64
    }
}

#[cfg(test)]
mod tests {
    use super::super::CfsKind;
    use crate::hypervisor::policies::test_host::FakeHost;
    use crate::hypervisor::policies::PolicyKind;
    use crate::hypervisor::policy::{IpiKind, VcpuState, YieldReason};
    use crate::hypervisor::uvf::UvfHost;
    use crate::hypervisor::uvf::{UvfConfig, UvfVm};
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
        let host = UvfHost { urgent_tslice: 500 * US, urgent_allowance: allowance };
        let uvf = UvfConfig { host, vms: vec![knobs] };
        let mut params = Params::defaults(&CfsKind.params());
        params.set("directed_yield", ParamValue::Bool(false));
        let mut h = FakeHost::new(1, &[(2, 256), (1, 256), (1, 256)], Some(uvf), |shape| CfsKind.build(&params, shape));
        h.adjust(0);
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
    fn an_urgent_pick_borrows_one_tslice_and_the_pcpu_is_picked_afresh_after_it() {
        let mut h = host(18 * MS, UvfVm { tlb_co: true, ..UvfVm::default() });
        tlb_ipi(&mut h);
        let at = h.now;
        assert_eq!(running(&h), Some(RECIPIENT), "it preempts RIVAL on a borrowed tslice");
        // The shootdown is acknowledged at once: no longer urgent, but the tslice is lent.
        h.call(|pol, ctx| pol.ipi_handled(ctx, RECIPIENT, IpiKind::TlbShootdown));
        h.check();
        h.advance_to(at + 499 * US);
        assert_eq!(running(&h), Some(RECIPIENT), "it keeps the pCPU for the tslice it borrowed");
        // At the tslice's end CFS picks again, not at the next tick: RIVAL, whose vruntime is
        // lower, runs.
        h.advance_to(at + 500 * US);
        assert_eq!(running(&h), Some(RIVAL), "the loan ends with the tslice");
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
