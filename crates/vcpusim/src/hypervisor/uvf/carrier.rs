//! How a proportional-share policy carries the urgent-vCPU-first overlay (seed 000 section 3.1.3):
//! the request, queueing, protection and round-robin rules every base policy shares. A policy
//! implements the few required methods (where a vCPU waits, how fairness is measured, how a pCPU
//! is asked to reschedule) and gets the rest: `policies/cfs/urgent.rs` measures fairness in
//! virtual time, `policies/credit/urgent.rs` in credit, as the seed says ("In the case of CFS,
//! the urgent allowance is represented in the form of virtual time; in the Xen Credit scheduler,
//! it can be specified as credit").

use super::{Uvf, UvfVm};
use crate::hypervisor::policy::{IpiKind, PolicyCtx, VcpuState};
use crate::ids::{PcpuId, VcpuId, VmId};
use crate::time::Nanos;

/// The base policy's side of the overlay.
pub trait UrgentBase {
    /// The overlay's state; `None` when `[host.uvf]` is absent.
    fn uvf_slot(&mut self) -> &mut Option<Uvf>;
    fn uvf_ref(&self) -> Option<&Uvf>;
    /// The run queue `v` waits in (queued, not running), if any.
    fn waiting_on(&self, v: VcpuId) -> Option<usize>;
    /// The vCPU the policy runs on `p`.
    fn running_on(&self, p: usize) -> Option<VcpuId>;
    /// Bring the running vCPU of `p`'s fairness account up to now (CFS `update_curr`, Credit
    /// `burn_credits`), so the allowance test compares current values.
    fn charge_running(&mut self, ctx: &PolicyCtx, p: usize);
    /// The base policy's fairness with the urgent allowance: may urgent `v`, queued on `p`, run
    /// ahead of `displaced` (the vCPU it would preempt; `None`: the best other vCPU queued on `p`)
    /// by up to `allowance` of run time?
    fn within_allowance(&self, v: VcpuId, p: usize, displaced: Option<VcpuId>, allowance: Nanos) -> bool;
    /// Ask `p` to reschedule; the policy must hold the preemption back (`Uvf::defer`) while
    /// `p`'s runner is protected.
    fn resched(&mut self, ctx: &mut PolicyCtx, p: usize);
    /// The key of `p`'s UVF timers (the policy routes it to `uvf_timer`).
    fn uvf_timer_key(&self, p: usize) -> u64;

    // ---- provided: the overlay's rules ----

    fn uvf_on(&self) -> bool {
        self.uvf_ref().is_some()
    }

    /// The `[vm.uvf]` knobs of `vm` (none when the overlay is off).
    fn uvf_knobs(&self, vm: VmId) -> UvfVm {
        self.uvf_ref().map(|u| u.vm(vm)).unwrap_or_default()
    }

    /// Arm one of `p`'s UVF timers to expire at `at` (see `Uvf::expiries`: every expiry fires).
    fn arm_uvf_expiry(&mut self, ctx: &mut PolicyCtx, p: usize, at: Nanos) {
        let key = self.uvf_timer_key(p);
        let at = at.max(ctx.now());
        let u = self.uvf_slot().as_mut().expect("only called with UVF on");
        let timer = u.expiry_timer(PcpuId(p as u32), at, || ctx.init_timer(key));
        ctx.set_timer(&timer, at);
    }

    fn allowance(&self) -> Nanos {
        self.uvf_ref().map_or(0, |u| u.cfg.urgent_allowance)
    }

    /// do_schedule's first look: an eligible vCPU from `p`'s urgent queue. `prev` is the vCPU
    /// that was running (back in its run queue already, or about to be).
    fn pick_urgent(&mut self, ctx: &PolicyCtx, p: usize, prev: Option<VcpuId>) -> Option<VcpuId> {
        let allowance = self.allowance();
        // Out of `self` while `pick` runs, so the closures may read the policy's state.
        let mut uvf = self.uvf_slot().take()?;
        let pick = uvf.pick(
            PcpuId(p as u32),
            ctx.now(),
            |v| self.waiting_on(v) == Some(p),
            |v| self.within_allowance(v, p, prev.filter(|c| *c != v), allowance),
        );
        *self.uvf_slot() = Some(uvf);
        pick
    }

    /// After do_schedule chose `next` for `p`: an urgent vCPU gets a protected urgent tslice.
    fn start_urgent_tslice(&mut self, ctx: &mut PolicyCtx, p: usize, next: Option<VcpuId>) {
        let Some(u) = self.uvf_slot().as_mut() else { return };
        let pc = PcpuId(p as u32);
        match next {
            Some(n) if u.is_urgent(n, ctx.now()) => {
                let end = u.protect(pc, ctx.now());
                u.lend(pc);
                self.arm_uvf_expiry(ctx, p, end);
            }
            _ => {
                u.unprotect(pc);
                u.repay(pc);
            }
        }
    }

    /// `v` was just queued on `p` (woken or moved): if urgent, it waits in the urgent queue too
    /// and preempts if allowed. False if it is not urgent (the caller runs its normal preemption
    /// check).
    fn queued_urgent(&mut self, ctx: &mut PolicyCtx, v: VcpuId, p: usize) -> bool {
        let Some(u) = self.uvf_slot().as_mut() else { return false };
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
        match self.running_on(p) {
            None => self.resched(ctx, p),
            Some(c) => {
                self.charge_running(ctx, p);
                if self.within_allowance(v, p, Some(c), self.allowance()) {
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
                let u = self.uvf_slot().as_mut().expect("only called with UVF on");
                let pc = PcpuId(p as u32);
                if !u.protecting(pc, now) {
                    let end = u.protect(pc, now);
                    self.arm_uvf_expiry(ctx, p, end);
                }
                // A time-based request may end before the tslice: release then.
                let u = self.uvf_slot().as_mut().expect("only called with UVF on");
                if let Some(end) = u.time_based_end(v) {
                    self.arm_uvf_expiry(ctx, p, end);
                }
            }
            VcpuState::Runnable => {
                if let Some(p) = self.waiting_on(v) {
                    self.uvf_slot().as_mut().expect("only called with UVF on").enqueue(PcpuId(p as u32), v);
                    self.urgent_preempt_check(ctx, v, p);
                }
            }
            // The IPI wakes it next; the wake path sees it urgent.
            VcpuState::Halted => {}
        }
    }

    fn request_time(&mut self, ctx: &mut PolicyCtx, v: VcpuId, dur: Nanos) {
        let entered = self.uvf_slot().as_mut().expect("only called with UVF on").request_time(v, ctx.now(), dur);
        self.became_urgent(ctx, v, entered);
    }

    /// Policy hook: an IPI was sent. Resched-DP makes the sender urgent, Resched-Co and TLB-Co
    /// the recipient (section 4's three features), per the sender's VM knobs.
    fn uvf_ipi_sent(&mut self, ctx: &mut PolicyCtx, from: VcpuId, to: VcpuId, kind: IpiKind) {
        if !self.uvf_on() {
            return;
        }
        let knobs = self.uvf_knobs(ctx.host.vcpu(from).vm);
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
                    let entered = self.uvf_slot().as_mut().expect("checked").request_event(to, ctx.now());
                    self.became_urgent(ctx, to, entered);
                }
            }
        }
    }

    /// Policy hook: the first APIC access of an IPI send (early delayed preemption).
    fn uvf_ipi_send_started(&mut self, ctx: &mut PolicyCtx, v: VcpuId) {
        if !self.uvf_on() {
            return;
        }
        let knobs = self.uvf_knobs(ctx.host.vcpu(v).vm);
        if let (true, Some(dp)) = (knobs.early_dp, knobs.resched_dp) {
            self.request_time(ctx, v, dp);
        }
    }

    /// Policy hook: an IPI's EOI. A TLB-Co request ends; a preemption held back for it happens.
    fn uvf_ipi_handled(&mut self, ctx: &mut PolicyCtx, v: VcpuId, kind: IpiKind) {
        if kind != IpiKind::TlbShootdown || !self.uvf_knobs(ctx.host.vcpu(v).vm).tlb_co {
            return;
        }
        let Some(u) = self.uvf_slot().as_mut() else { return };
        u.ack_event(v);
        if let Some(p) = ctx.host.vcpu(v).pcpu {
            if !u.is_urgent(v, ctx.now()) && u.take_deferred(p) {
                self.resched(ctx, p.idx());
            }
        }
    }

    /// Policy hook: a pause-loop exit cancels urgency (section 4.3).
    fn uvf_cancel(&mut self, ctx: &PolicyCtx, v: VcpuId) {
        if let Some(u) = self.uvf_slot().as_mut() {
            u.cancel(v, ctx.host.vcpu(v).pcpu);
        }
    }

    /// Policy hook: `v` halted; it waits in no urgent queue.
    fn uvf_sleep(&mut self, v: VcpuId) {
        if let Some(u) = self.uvf_slot().as_mut() {
            u.remove(v);
        }
    }

    /// Policy hook: `v` now waits in run queue `to` (migrated while queued).
    fn uvf_moved(&mut self, v: VcpuId, to: usize) {
        if let Some(u) = self.uvf_slot().as_mut() {
            u.move_queued(v, PcpuId(to as u32));
        }
    }

    /// The UVF timer of `p`: a protected tslice or a time-based request ended. A still-urgent
    /// runner goes to the tail of the urgent queue (round robin); held-back preemptions happen;
    /// and a tslice lent to a vCPU picked while urgent ends with a fresh pick, the urgent queue
    /// first, then the base policy's (seed 000 section 3.1.3: it runs "during an urgent
    /// tslice, which is borrowed from its future CPU time").
    fn uvf_timer(&mut self, ctx: &mut PolicyCtx, p: usize) {
        let now = ctx.now();
        let pc = PcpuId(p as u32);
        let current = self.running_on(p);
        let Some(u) = self.uvf_slot().as_mut() else { return };
        u.expiry_fired(pc, now);
        let Some(c) = current else {
            u.take_deferred(pc);
            u.repay(pc);
            return;
        };
        if u.protects(pc, c, now) {
            return; // a stale timer: the tslice was renewed
        }
        let deferred = u.take_deferred(pc);
        // A time-based request may end before the tslice: the loan runs to the tslice's end.
        let repaid = !u.protecting(pc, now) && u.repay(pc);
        if u.is_urgent(c, now) {
            u.unprotect(pc);
            u.enqueue(pc, c);
            if deferred || repaid || u.others_waiting(pc, c) {
                self.resched(ctx, p);
            }
        } else if deferred || repaid {
            self.resched(ctx, p);
        }
    }

    /// Whether `p`'s runner `c` is protected now; if so the preemption is noted as held back.
    fn hold_back_preemption(&mut self, now: Nanos, p: usize, c: VcpuId) -> bool {
        let pc = PcpuId(p as u32);
        match self.uvf_slot().as_mut() {
            Some(u) if u.protects(pc, c, now) => {
                u.defer(pc);
                true
            }
            _ => false,
        }
    }
}
