//! `overlay = "delay-preempt"`: Uhlig, LeVasseur, Skoglund, Dannowski, "Towards Scalable
//! Multiprocessor Virtual Machines", VM'04 (seed 003 slide 4: "Guest OS notifies the hypervisor
//! before acquiring a spin-lock and hypervisor delays preemption to avoid LHP and LW").
//!
//! **The mechanism** (the paper's paravirtualized lock-holder preemption avoidance, built on
//! L4's delayed preemption): the guest keeps a flag in memory it shares with the hypervisor set
//! while it holds a kernel spinlock; when the hypervisor's scheduler wants to preempt the vCPU
//! and finds the flag set, it lets the vCPU run on for at most a bounded delay and marks a
//! preemption pending; the guest, leaving its last critical section, sees the pending mark and
//! gives the processor back at once. A guest that does not release within the bound is
//! preempted anyway, so a guest cannot monopolize a processor.
//!
//! **In the model**: the flag is `PvArea::lock_mark`, published by the guest (guest/run.rs
//! `publish_lock_mark`: its current thread holds a spinlock; published lazily just before the
//! host asks the overlay, as the kernel-function channel is), the pending mark is
//! `PvArea::preempt_pending` (written by the host when it defers), and the give-back is the
//! guest's `Hypercall::PreemptAck` after its outermost unlock (`Action::DelayedPreemptYield`),
//! which ends the hold (sim/mechanisms/preemption_overlay/). This file is the hypervisor's decision.
//!
//! **The bound** (`[host.delay_preempt] max_delay`): VM'04 takes it from L4's delayed
//! preemption, where it is a per-thread parameter (the "maximum delay" of the L4 X.2
//! `Schedule` system call's preemption control); the text available to us gives no value, so
//! the default is assumed: 1 ms, a tenth of Xen credit's 10 ms tick and far longer than the
//! model's kernel critical sections (microseconds), so that only a guest stuck in a critical
//! section (itself waiting for a preempted vCPU) reaches it.

use super::rule::{Overlay, Verdict};
use crate::hypervisor::host_view::HostView;
use crate::ids::{PcpuId, VcpuId};
use crate::scenario::overlay_sections::DelayPreemptConfig;
#[cfg(test)]
use crate::time::MS;
use crate::vmexit::PvArea;

/// The hypervisor's side: defer while the guest's lock mark is set, up to the bound.
pub struct DelayPreempt {
    pub cfg: DelayPreemptConfig,
}

impl Overlay for DelayPreempt {
    fn name(&self) -> &'static str {
        "delay-preempt"
    }

    fn preempt(&mut self, host: &HostView, _p: PcpuId, _prev: VcpuId, _next: Option<VcpuId>, _registered: bool, pv: &PvArea) -> Verdict {
        if pv.lock_mark {
            Verdict::Defer { until: host.now + self.cfg.max_delay }
        } else {
            Verdict::Go
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hardware::topology::Topology;

    #[test]
    fn defers_only_a_marked_vcpu_and_never_beyond_the_bound() {
        let topology = Topology::flat(2);
        let host = HostView::new(5 * MS, &[], &[], &[], &topology);
        let mut o = DelayPreempt { cfg: DelayPreemptConfig { max_delay: 300_000 } };
        let marked = PvArea { lock_mark: true, ..PvArea::default() };
        let (p, v) = (PcpuId(0), VcpuId(0));
        assert_eq!(o.preempt(&host, p, v, None, false, &marked), Verdict::Defer { until: 5 * MS + 300_000 });
        assert_eq!(o.preempt(&host, p, v, None, false, &PvArea::default()), Verdict::Go);
    }
}
