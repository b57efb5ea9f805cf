//! The micro-sliced pool's scheduler (seed 002 section 5, "CPU pool management" and "Other
//! considerations"). In the authors' Xen the hidden cpupool shares its parent's credit
//! scheduler (`cpupool_create`: `c->sched = parent->sched`) and credit special-cases the hidden
//! pCPUs (released sched_credit.c): `csched_schedule` there skips the ratelimit and the load
//! balancer and returns `HCPU_TSLICE_US` (100 us); `csched_runq_steal` and
//! `csched_load_balance` never steal from them; `__runq_tickle` on one only wakes it if idle; a
//! vCPU woken there (`need_boost`) gets `CSCHED_PRI_TS_TURBO_BOOST`, above BOOST; and
//! `context_saved` sends a runnable vCPU descheduled there back to its previous pCPU.
//!
//! Here the micro pool is its own engine pool with this small scheduler, and the parent's policy
//! keeps the vCPU's books while it is lent (`MicroSliced::lend_vcpu` / `return_vcpu`), which is what
//! sharing the scheduler instance achieves. With at most one vCPU per pCPU, nothing can preempt
//! it (no BOOST, no balancing, no second vCPU), and nothing is ever balanced into the pool: a
//! vCPU enters only when the host accelerates it onto an idle micro pCPU (`Sim::accelerate`,
//! which picks that pCPU and sets it as the vCPU's `last_pcpu` before `insert_vcpu`). When the
//! slice ends, or the vCPU halts or yields first, `do_schedule` idles the pCPU, and the host sends
//! the vCPU back (`Sim::micro_after_schedule`). No accounting runs here: the parent charges the
//! run time when the vCPU returns.

use crate::hypervisor::policy::{Decision, Policy, PolicyCtx, VcpuState, VmSched, YieldReason};
use crate::ids::{PcpuId, VcpuId, VmId};
use crate::time::Nanos;

/// One micro pCPU's state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Slot {
    /// The vCPU assigned here (inserted, running, or done and about to leave).
    vcpu: Option<VcpuId>,
    /// Its slice has started (the first `do_schedule` ran it).
    started: bool,
}

/// The micro pool's scheduler.
pub struct MicroPool {
    slice: Nanos,
    slots: Vec<Slot>,
}

impl MicroPool {
    pub fn new(slice: Nanos, npcpus: usize) -> Self {
        MicroPool { slice, slots: vec![Slot::default(); npcpus] }
    }

    /// Whether pCPU `p` has a vCPU assigned (it takes no other: one per run queue).
    pub fn occupied(&self, p: PcpuId) -> bool {
        self.slots[p.idx()].vcpu.is_some()
    }

    /// The pCPU `v` is assigned to: its `last_pcpu`, set by the host when it placed it there
    /// (`insert_vcpu`), which is all a return needs to read; any other pCPU is searched.
    fn slot_of(&self, v: VcpuId, last: PcpuId) -> Option<usize> {
        if self.slots.get(last.idx()).is_some_and(|s| s.vcpu == Some(v)) {
            return Some(last.idx());
        }
        self.slots.iter().position(|s| s.vcpu == Some(v))
    }
}

impl Policy for MicroPool {
    fn name(&self) -> &'static str {
        "microsliced"
    }

    /// The host placed `v` on an idle micro pCPU (its `last_pcpu`): it runs there at once.
    fn insert_vcpu(&mut self, ctx: &mut PolicyCtx, v: VcpuId) {
        let p = ctx.host.vcpu(v).last_pcpu;
        debug_assert!(self.slots[p.idx()].vcpu.is_none(), "micro pCPU {p} holds two vCPUs");
        self.slots[p.idx()] = Slot { vcpu: Some(v), started: false };
        ctx.reschedule(p);
    }

    /// A lent vCPU never halts and wakes here: it leaves when it halts.
    fn wake(&mut self, ctx: &mut PolicyCtx, v: VcpuId, _waker: Option<PcpuId>) {
        self.insert_vcpu(ctx, v);
    }

    fn sleep(&mut self, _ctx: &mut PolicyCtx, _v: VcpuId) {}

    /// A yield ends the micro slice (the vCPU is back in the normal pool next).
    fn yield_vcpu(&mut self, _ctx: &mut PolicyCtx, _v: VcpuId, _reason: YieldReason) {}

    fn do_schedule(&mut self, ctx: &mut PolicyCtx, pcpu: PcpuId) -> Decision {
        let slot = &mut self.slots[pcpu.idx()];
        match slot.vcpu {
            Some(v) if !slot.started && ctx.host.vcpu(v).state == VcpuState::Runnable => {
                slot.started = true;
                Decision::run(v, Some(self.slice))
            }
            // The slice ended, or the vCPU halted or yielded: it leaves (the host moves it back).
            _ => Decision::idle(),
        }
    }

    fn adjust(&mut self, _ctx: &mut PolicyCtx, _vm: VmId, _sched: &VmSched) {}

    /// The host chose the pCPU already.
    fn pick_pcpu(&mut self, ctx: &mut PolicyCtx, v: VcpuId) -> Option<PcpuId> {
        Some(ctx.host.vcpu(v).last_pcpu)
    }

    fn remove_vcpu(&mut self, ctx: &mut PolicyCtx, v: VcpuId) {
        if let Some(i) = self.slot_of(v, ctx.host.vcpu(v).last_pcpu) {
            self.slots[i] = Slot::default();
        }
    }

    fn add_pcpu(&mut self, _ctx: &mut PolicyCtx, p: PcpuId) {
        self.slots[p.idx()] = Slot::default();
    }

    /// The host only shrinks the pool by pCPUs that hold no vCPU.
    fn remove_pcpu(&mut self, _ctx: &mut PolicyCtx, p: PcpuId) {
        self.slots[p.idx()] = Slot::default();
    }

    fn check(&self, host: &crate::hypervisor::policy::HostView) -> Result<(), String> {
        for (p, s) in self.slots.iter().enumerate() {
            if let Some(v) = s.vcpu {
                if !host.owns_pcpu(PcpuId(p as u32)) {
                    return Err(format!("microsliced: vCPU {v} assigned to pCPU {p}, which is not a micro pCPU"));
                }
                if host.vcpu(v).state == VcpuState::Running && host.vcpu(v).pcpu != Some(PcpuId(p as u32)) {
                    return Err(format!("microsliced: vCPU {v} assigned to pCPU {p} runs elsewhere"));
                }
            }
        }
        Ok(())
    }
}
