//! The urgent-vCPU-first overlay wired into Credit (seed 000 section 3.1.3; state and rules in
//! hypervisor/uvf.rs and uvf/carrier.rs). The seed implemented UVF over CFS and says that "in the
//! Xen Credit scheduler, [the urgent allowance] can be specified as credit": an urgent vCPU may
//! run ahead of the vCPU it displaces while its credit is at most the allowance below that
//! vCPU's, converted at Credit's own rate of 10 credits per ms run (`CSCHED_CREDITS_PER_MSEC`),
//! so the default 18 ms allows 180 credits. Like a CFS vCPU borrowing virtual time, it pays the
//! borrowed run back through the credits it burns.
//!
//! Departures from plain Credit while UVF is on (`do_schedule` in credit/mod.rs): an eligible urgent
//! vCPU preempts regardless of priority and of the 1 ms ratelimit (the seed's urgent tslice,
//! 500 us, is shorter than the ratelimit, which would otherwise hide it); a protected urgent
//! runner keeps its pCPU through slice ends, tickles and tick-flagged migrations until the UVF
//! timer ends its tslice.

use super::{Credit, CREDITS_PER_MSEC, KIND_SHIFT, PCPU_MASK, TIMER_UVF};
use crate::hypervisor::policy::PolicyCtx;
use crate::hypervisor::uvf::carrier::UrgentBase;
use crate::hypervisor::uvf::Uvf;
use crate::ids::VcpuId;
use crate::time::{Nanos, MS};

impl UrgentBase for Credit {
    fn uvf_slot(&mut self) -> &mut Option<Uvf> {
        &mut self.uvf
    }
    fn uvf_ref(&self) -> Option<&Uvf> {
        self.uvf.as_ref()
    }
    fn waiting_on(&self, v: VcpuId) -> Option<usize> {
        self.vcpus.get(v.idx()).and_then(|s| s.queued_on).map(|p| p.idx())
    }
    fn running_on(&self, p: usize) -> Option<VcpuId> {
        self.pcpus[p].curr
    }
    fn charge_running(&mut self, ctx: &PolicyCtx, p: usize) {
        if let Some(c) = self.pcpus[p].curr {
            self.burn_credits(c, ctx.now());
        }
    }
    /// Credit: `v`'s credit at most the allowance below the displaced vCPU's (the first other
    /// vCPU of `p`'s run queue when none is named).
    fn within_allowance(&self, v: VcpuId, p: usize, displaced: Option<VcpuId>, allowance: Nanos) -> bool {
        let allowance = (allowance * CREDITS_PER_MSEC / MS) as i64;
        let reference = displaced.or_else(|| self.pcpus[p].runq.iter().copied().find(|x| *x != v));
        reference.is_none_or(|r| self.vcpus[v.idx()].credit + allowance >= self.vcpus[r.idx()].credit)
    }
    /// `__runq_tickle`'s "send the scheduler interrupt", held back while the runner is protected.
    fn resched(&mut self, ctx: &mut PolicyCtx, p: usize) {
        if let Some(c) = self.pcpus[p].curr {
            if self.hold_back_preemption(ctx.now(), p, c) {
                return;
            }
        }
        self.idlers.remove(crate::ids::PcpuId(p as u32));
        ctx.reschedule(crate::ids::PcpuId(p as u32));
    }
    fn uvf_timer_key(&self, p: usize) -> u64 {
        (TIMER_UVF << KIND_SHIFT) | (p as u64 & PCPU_MASK)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{cfg, Ev, FakeHost};
    use super::super::{CreditConfig, PRI_BOOST, PRI_UNDER};
    use crate::hardware::topology::Topology;
    use crate::hypervisor::policy::{IpiKind, Policy, VcpuState};
    use crate::hypervisor::uvf::UvfHost;
    use crate::hypervisor::uvf::{UvfConfig, UvfVm};
    use crate::ids::VcpuId;
    use crate::time::{Nanos, MS, US};

    /// vCPU roles on one pCPU: VM0 = {RECIPIENT, SENDER}, VM1 = {RIVAL}, VM2 = {SLEEPER}.
    const RECIPIENT: usize = 0;
    const SENDER: usize = 1;
    const RIVAL: usize = 2;
    const SLEEPER: usize = 3;

    /// Credit without the ratelimit, so a BOOSTed wake-up preempts at once unless UVF holds it.
    fn no_ratelimit() -> CreditConfig {
        let mut c = cfg();
        c.ratelimit = 0;
        c
    }

    /// One pCPU, UVF on with `allowance`, VM0's knobs `knobs`; settled so that RIVAL runs,
    /// RECIPIENT waits queued and SENDER and SLEEPER are halted. Then credits are set by hand:
    /// RIVAL 100, RECIPIENT 0, both UNDER.
    fn host(allowance: Nanos, knobs: UvfVm, config: CreditConfig) -> FakeHost {
        let host = UvfHost { urgent_tslice: 500 * US, urgent_allowance: allowance };
        let uvf = UvfConfig { host, vms: vec![knobs] };
        let mut h = FakeHost::with_uvf(Topology::flat(1), &[(2, 256), (1, 256), (1, 256)], config, Some(uvf));
        h.start();
        for _ in 0..20_000 {
            match h.running_on(0) {
                Some(v) if v == SENDER || v == SLEEPER => h.push(h.now, Ev::Halt(v)),
                Some(RIVAL) if h.vcpus[RECIPIENT].state == VcpuState::Runnable => {
                    let halted = |v: usize| h.vcpus[v].state == VcpuState::Halted;
                    if halted(SENDER) && halted(SLEEPER) {
                        h.call(|pol, ctx| {
                            pol.burn_credits(VcpuId(RIVAL as u32), ctx.now());
                            pol.vcpus[RIVAL].credit = 100;
                            pol.vcpus[RECIPIENT].credit = 0;
                            pol.set_pri(VcpuId(RIVAL as u32), PRI_UNDER);
                            pol.set_pri(VcpuId(RECIPIENT as u32), PRI_UNDER);
                        });
                        return h;
                    }
                }
                _ => {}
            }
            let t = h.now + 100 * US;
            h.run_until(t);
        }
        panic!("the host never settled");
    }

    fn ipi(h: &mut FakeHost, from: usize, to: usize, kind: IpiKind) {
        h.call(|pol, ctx| pol.ipi_sent(ctx, VcpuId(from as u32), VcpuId(to as u32), kind));
        h.run_until(h.now);
    }

    fn tlb_co() -> UvfVm {
        UvfVm { tlb_co: true, ..UvfVm::default() }
    }

    #[test]
    fn an_urgent_vcpu_runs_first_within_its_credit_allowance_and_not_beyond() {
        // 18 ms = 180 credits: RECIPIENT at 0 may run ahead of RIVAL at 100, even inside the
        // default 1 ms ratelimit.
        let mut h = host(18 * MS, tlb_co(), cfg());
        ipi(&mut h, SENDER, RECIPIENT, IpiKind::TlbShootdown);
        assert_eq!(h.running_on(0), Some(RECIPIENT), "urgent and within 180 credits of the runner: it preempts");

        // 5 ms = 50 credits: 0 + 50 < 100.
        let mut h = host(5 * MS, tlb_co(), cfg());
        ipi(&mut h, SENDER, RECIPIENT, IpiKind::TlbShootdown);
        assert_eq!(h.running_on(0), Some(RIVAL), "beyond its allowance it waits for its fair turn");

        let mut h = host(18 * MS, UvfVm::default(), cfg());
        ipi(&mut h, SENDER, RECIPIENT, IpiKind::TlbShootdown);
        assert_eq!(h.running_on(0), Some(RIVAL), "TLB-Co off for this VM: no urgency");
    }

    #[test]
    fn tlb_co_urgency_protects_until_the_acknowledgement() {
        let mut h = host(18 * MS, tlb_co(), no_ratelimit());
        ipi(&mut h, SENDER, RECIPIENT, IpiKind::TlbShootdown);
        assert_eq!(h.running_on(0), Some(RECIPIENT));
        h.policy.set_pri(VcpuId(RECIPIENT as u32), PRI_UNDER);
        // A sleeper wakes BOOSTed: it would preempt an UNDER runner at once, but the urgent vCPU
        // is protected until its EOI.
        h.push(h.now + 100 * US, Ev::Wake(SLEEPER));
        h.run_until(h.now + 100 * US);
        assert_eq!(h.policy.vcpus[SLEEPER].pri, PRI_BOOST);
        assert_eq!(h.running_on(0), Some(RECIPIENT), "protected while the shootdown is unacknowledged");
        h.call(|pol, ctx| pol.ipi_handled(ctx, VcpuId(RECIPIENT as u32), IpiKind::TlbShootdown));
        h.run_until(h.now);
        assert_eq!(h.running_on(0), Some(SLEEPER), "the held-back preemption happens at the EOI");
    }

    #[test]
    fn a_resched_dp_sender_is_not_preempted_inside_the_delay_and_is_after_it() {
        for dp in [None, Some(500 * US)] {
            let mut h = host(18 * MS, UvfVm { resched_dp: dp, ..UvfVm::default() }, no_ratelimit());
            // RECIPIENT (VM0, whose knobs apply) becomes the runner through a TLB-free route:
            // RIVAL halts.
            h.push(h.now, Ev::Halt(RIVAL));
            h.run_until(h.now);
            assert_eq!(h.running_on(0), Some(RECIPIENT));
            h.policy.set_pri(VcpuId(RECIPIENT as u32), PRI_UNDER);
            ipi(&mut h, RECIPIENT, SENDER, IpiKind::Resched);
            let at = h.now;
            h.push(at, Ev::Wake(SLEEPER));
            h.run_until(at);
            if dp.is_none() {
                assert_eq!(h.running_on(0), Some(SLEEPER), "without Resched-DP the BOOSTed sleeper preempts at once");
                continue;
            }
            assert_eq!(h.running_on(0), Some(RECIPIENT), "inside the delay the sender keeps its pCPU");
            h.run_until(at + 499 * US);
            assert_eq!(h.running_on(0), Some(RECIPIENT));
            h.run_until(at + 500 * US);
            assert_eq!(h.running_on(0), Some(SLEEPER), "after the delay the held-back preemption happens");
        }
    }

    #[test]
    fn a_pause_loop_exit_cancels_urgency() {
        let mut h = host(18 * MS, tlb_co(), cfg());
        ipi(&mut h, SENDER, RECIPIENT, IpiKind::TlbShootdown);
        assert_eq!(h.running_on(0), Some(RECIPIENT));
        h.push(h.now, Ev::Yield(RECIPIENT));
        h.run_until(h.now);
        assert_eq!(h.running_on(0), Some(RIVAL), "the spinning urgent vCPU gives way");
        // No longer urgent: the urgent queue's round robin does not bring it back.
        h.run_until(h.now + 600 * US);
        assert_eq!(h.running_on(0), Some(RIVAL));
    }

    #[test]
    fn invariants_hold_with_urgency_under_churn() {
        // Two pCPUs, TLB-Co and Resched-DP on: IPIs between random vCPUs while they halt, wake
        // and yield; `check` runs after every event.
        let knobs = UvfVm { tlb_co: true, resched_dp: Some(500 * US), ..UvfVm::default() };
        let host = UvfHost { urgent_tslice: 500 * US, urgent_allowance: 18 * MS };
        let uvf = UvfConfig { host, vms: vec![knobs, knobs] };
        let mut h = FakeHost::with_uvf(Topology::flat(2), &[(3, 256), (2, 256)], cfg(), Some(uvf));
        h.start();
        let mut lcg: u64 = 7;
        let mut next = |n: u64| {
            lcg = lcg.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (lcg >> 33) % n
        };
        let mut ipis = 0;
        for step in 1..=4000u64 {
            h.run_until(step * 200 * US);
            let v = next(5) as usize;
            match (h.vcpus[v].state, next(4)) {
                (VcpuState::Running, 0) => h.push(h.now, Ev::Halt(v)),
                (VcpuState::Running, 1) => h.push(h.now, Ev::Yield(v)),
                (VcpuState::Running, _) => {
                    let to = next(5) as usize;
                    let kind = if next(2) == 0 { IpiKind::Resched } else { IpiKind::TlbShootdown };
                    if to != v {
                        ipis += 1;
                        h.call(|pol, ctx| pol.ipi_sent(ctx, VcpuId(v as u32), VcpuId(to as u32), kind));
                        if kind == IpiKind::TlbShootdown && h.vcpus[to].state == VcpuState::Running {
                            h.call(|pol, ctx| pol.ipi_handled(ctx, VcpuId(to as u32), kind));
                        }
                    }
                }
                (VcpuState::Halted, _) => h.push(h.now, Ev::Wake(v)),
                _ => {}
            }
        }
        assert!(ipis > 500, "the churn sent IPIs ({ipis})");
        let total: Nanos = h.run_times().iter().sum();
        assert!(total > 2 * 700 * MS, "both pCPUs stayed mostly busy: {total} ns of 1.6 s");
    }
}
