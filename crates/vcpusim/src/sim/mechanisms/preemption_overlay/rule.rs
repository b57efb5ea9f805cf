//! Preemption overlays (`[host] overlay`): mechanisms that change *when* a policy's involuntary
//! preemption of a running vCPU takes effect, without the policy choosing differently (seed 003
//! and its baselines).
//!
//! The seam is one question the engine asks (`Sim::overlay_holds`, sim/mechanisms/preemption_overlay/): the policy's
//! `do_schedule` on pCPU `p` returned someone other than the vCPU `prev` running there, `prev` is
//! still willing to run (Running, not halting, not yielding: neither a HLT, a SCHEDOP_yield nor a
//! pause-loop exit) and stays allowed on `p`; the engine asks the overlay [`Overlay::preempt`]
//! before it switches. The answer is a [`Verdict`]:
//! - `Go`: switch now (what happens without an overlay);
//! - `Defer { until }`: keep `prev` running until `until` at the latest (Uhlig VM'04's delayed
//!   preemption; relaxed co-scheduling's co-stop can use `Go`);
//! - `Notify { deadline }`: as `Defer`, and first send the guest a preemption notice
//!   (`vmexit::Upcall::PreemptNotice`, IRS's SA vIRQ); the guest's acknowledgement
//!   (`Hypercall::PreemptAck`) ends the hold early.
//!
//! While a hold lasts the engine asks the policy to keep `prev` (`HoldPreemption::keep_running`,
//! which undoes the pick the way credit's own "keep the current vCPU" paths do) and re-asks the
//! policy when the hold ends (ack or deadline): the policy then decides afresh, and the overlay is
//! not asked again for that decision. Only the policies that offer the `HoldPreemption`
//! extension (`Policy::hold_preemption`) carry overlays (the loader refuses others).
//!
//! The hold's deadline is an owned event handle (`PreemptHold::event`), cancelled when the hold
//! ends another way, as a Xen `struct timer` is stopped.

use crate::hypervisor::host_view::HostView;
use crate::ids::{PcpuId, VcpuId};
use crate::scenario::overlay_sections::{IrsConfig, OverlayConfig};
use crate::time::Nanos;
use crate::vmexit::PvArea;

/// The overlay's answer to a policy's involuntary preemption (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Switch now.
    Go,
    /// Keep the running vCPU until `until` at the latest.
    Defer { until: Nanos },
    /// Send the preemption notice, then keep the running vCPU until the guest acknowledges or
    /// `deadline`, whichever comes first.
    Notify { deadline: Nanos },
}

/// An overlay: asked before the engine completes an involuntary preemption. It sees what the
/// hypervisor sees (the host view) plus what it was configured with.
pub trait Overlay {
    fn name(&self) -> &'static str;
    /// Policy `do_schedule(p)` chose `next` over `prev`, which runs on `p` and is willing to run.
    /// `registered` says whether `prev`'s guest registered the overlay's paravirtual channel
    /// (IRS: the SA vIRQ; a guest without it cannot be notified). `pv` is `prev`'s paravirtual
    /// area as the guest last published it (delayed preemption reads the guest's lock mark).
    fn preempt(&mut self, host: &HostView, p: PcpuId, prev: VcpuId, next: Option<VcpuId>, registered: bool, pv: &PvArea) -> Verdict;
}

/// IRS's hypervisor side (seed 003 slides 7, 9; "Xen: 30 LOC"): notify the guest of an
/// involuntary preemption of a vCPU that is willing to run, and delay the switch until the
/// guest acknowledges or `notify_delay` passes.
pub struct Irs {
    pub cfg: IrsConfig,
}

impl Overlay for Irs {
    fn name(&self) -> &'static str {
        "irs"
    }

    fn preempt(&mut self, host: &HostView, _p: PcpuId, _prev: VcpuId, _next: Option<VcpuId>, registered: bool, _pv: &PvArea) -> Verdict {
        if registered {
            Verdict::Notify { deadline: host.now + self.cfg.notify_delay }
        } else {
            Verdict::Go
        }
    }
}

/// Build the overlay a scenario configured.
pub fn build(cfg: &OverlayConfig) -> Option<Box<dyn Overlay>> {
    match cfg {
        OverlayConfig::Irs(c) => Some(Box::new(Irs { cfg: *c })),
        OverlayConfig::DelayPreempt(c) => Some(Box::new(super::delay_preempt::DelayPreempt { cfg: *c })),
        // Relaxed co-scheduling never holds a preemption back: it acts on its own checks
        // (sim/mechanisms/relaxed_co/), so its overlay answers Go.
        OverlayConfig::RelaxedCo(_) => Some(Box::new(super::super::relaxed_co::rule::RelaxedCo)),
    }
}
