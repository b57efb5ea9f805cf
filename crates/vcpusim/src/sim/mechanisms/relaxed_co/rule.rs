//! `overlay = "relaxed-co"`: VMware ESX 4.x relaxed co-scheduling (seed 003 slide 4: "Relaxed
//! Co-Scheduling [VMware '10]: co-schedule all vCPUs of the same VM"). The engine side (skew
//! accounting, co-stop, co-start) is sim/mechanisms/relaxed_co/; this file holds its configuration and
//! the skew arithmetic, which is pure.
//!
//! Sources (VMware's descriptions; ESX is closed, so these are the only specification):
//! - "Co-scheduling SMP VMs in VMware ESX Server" (VMware communities, ESX 3.x) and the VMware
//!   performance blog "ESX Scheduler Support for SMP VMs" (2008): "skew" is the difference in
//!   execution rates between vCPUs of a VM; the scheduler keeps a cumulative skew per vCPU;
//!   idle vCPUs are descheduled and "considered as making progress in the skew detection
//!   algorithm. As a result, for co-scheduling decisions, idle vCPUs do not accumulate skew";
//!   a VM whose vCPU is skewed beyond a threshold is "co-stopped" until "co-started"; esxtop's
//!   %CSTP is the time vCPUs spent co-stopped.
//! - "The CPU Scheduler in VMware vSphere 4.1" / "... 5.1" (VMware technical white papers,
//!   section "Relaxed Co-Scheduling"): since ESX 4 the skew is tracked per vCPU against its
//!   siblings; only the vCPUs that advanced too much (the leaders) are co-stopped, and the
//!   lagging ones are scheduled to catch up (co-started) before the leaders resume.
//!
//! **The model** (per VM with more than one vCPU):
//! - a vCPU *makes progress* while it runs or is halted (idle); it *lags* while it is runnable
//!   and not co-stopped (ready, waiting for a pCPU);
//! - its skew grows by the time it lags while at least one sibling runs, and shrinks (not below
//!   zero) by the time it makes progress (runs or idles) while at least one sibling is
//!   co-stopped (it catches up with the stopped leaders); a co-stopped vCPU's skew does not
//!   change, and an idle one's never grows;
//! - when a vCPU's skew exceeds `skew_threshold`, every running sibling is co-stopped (taken off
//!   its pCPU and not runnable for the policy), and each lagging vCPU's pCPU is asked to
//!   reschedule (co-start: the laggard is offered its pCPU; its priority is the policy's);
//! - when no vCPU of the VM is above the threshold any more, the co-stopped vCPUs are
//!   co-started (runnable again).
//!
//! Skew is checked at every state change of a vCPU of the VM and at every tick of the policy
//! (Xen credit: 10 ms), so between two checks it can pass the threshold by at most the time to
//! the next check: by no more than one tick's worth (`TICK_SLACK`).
//!
//! **The threshold** (`[host.relaxed_co] skew_threshold`): VMware describes it only as
//! "configurable" and "a few milliseconds"; 3 ms (`DEFAULT_SKEW_THRESHOLD`) is
//! assumed.

use super::super::preemption_overlay::rule::{Overlay, Verdict};
use crate::hypervisor::host_view::HostView;
use crate::ids::{PcpuId, VcpuId};
use crate::time::{Nanos, MS};
use crate::vmexit::PvArea;

/// How far past the threshold a skew may go (check mode): one tick of Xen credit
/// (`CSCHED_DEFAULT_TSLICE_MS` 30 ms / `CSCHED_TICKS_PER_TSLICE` 3), the period a tick-driven
/// check would have.
pub const TICK_SLACK: Nanos = 10 * MS;

/// What a vCPU was doing over an interval, for the skew accounting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Progress {
    /// On a pCPU.
    Running,
    /// Halted (idle): makes progress as far as skew goes.
    Idle,
    /// Runnable and waiting for a pCPU.
    Lagging,
    /// Co-stopped.
    Stopped,
}

/// The skews of one VM's vCPUs after `dt` in the states `states` (same order as `skew`).
pub fn account(skew: &mut [Nanos], states: &[Progress], dt: Nanos) {
    let any_running = states.contains(&Progress::Running);
    let any_stopped = states.contains(&Progress::Stopped);
    for (k, s) in states.iter().enumerate() {
        match s {
            Progress::Lagging if any_running => skew[k] += dt,
            Progress::Running | Progress::Idle if any_stopped => skew[k] = skew[k].saturating_sub(dt),
            _ => {}
        }
    }
}

/// The overlay's answer at the preemption seam: relaxed co-scheduling never holds a
/// preemption back (its co-stops are its own decisions, sim/mechanisms/relaxed_co/).
pub struct RelaxedCo;

impl Overlay for RelaxedCo {
    fn name(&self) -> &'static str {
        "relaxed-co"
    }
    fn preempt(&mut self, _host: &HostView, _p: PcpuId, _prev: VcpuId, _next: Option<VcpuId>, _registered: bool, _pv: &PvArea) -> Verdict {
        Verdict::Go
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Progress::*;

    #[test]
    fn a_lagging_vcpu_accumulates_while_a_sibling_runs_and_an_idle_one_never() {
        let mut skew = vec![0, 0, 0];
        account(&mut skew, &[Running, Lagging, Idle], 2 * MS);
        assert_eq!(skew, vec![0, 2 * MS, 0]);
        // Nobody runs: nobody lags behind anyone.
        account(&mut skew, &[Idle, Lagging, Idle], 5 * MS);
        assert_eq!(skew, vec![0, 2 * MS, 0]);
        // The laggard runs (or idles: progress) while the leader is co-stopped: it catches up,
        // never below zero.
        account(&mut skew, &[Stopped, Running, Idle], MS);
        assert_eq!(skew, vec![0, MS, 0]);
        account(&mut skew, &[Stopped, Idle, Idle], 3 * MS);
        assert_eq!(skew, vec![0, 0, 0]);
    }
}
