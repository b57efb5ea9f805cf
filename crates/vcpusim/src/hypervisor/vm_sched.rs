//! A VM's scheduling settings as a policy receives them ([`VmSched`], through
//! `Policy::adjust`): Xen's `xen_domctl_scheduler_op`, whose common part (weight, cap) every
//! proportional-share scheduler reads and whose union `u` holds the part only one scheduler
//! reads (`u.credit`, `u.credit2`, `u.rtds`). Here that part is [`VmSched::params`], named
//! values the policy that owns them parses into its own per-VM data (seed 004's VM class:
//! `hybrid/class.rs`).

use crate::params::Params;

/// A VM's scheduling settings, handed to [`Policy::adjust`](crate::hypervisor::policy::Policy::adjust) (Xen: the `xen_domctl_scheduler_op`
/// parameters `csched_dom_cntl` reads). Every policy reads `weight`; a policy that enforces caps
/// reads `cap`; `params` only the policy they belong to.
#[derive(Clone, Debug, PartialEq)]
pub struct VmSched {
    /// Proportional-share weight (Xen domain weight; CFS group shares are derived from it).
    pub weight: u32,
    /// Cap in percent of one pCPU (Xen `sdom->cap`); 0 = no cap (`[[vm]] cap`).
    pub cap: u32,
    /// The VM's settings for one policy only, by name (Xen: the scheduler's member of the
    /// `u` union): `type` and `u_factor` (`[[vm]]`, read by `hybrid`), and what `[vm.sched]`
    /// gives for the settings its pool's policy declares (`PolicyKind::vm_params`, defaults
    /// filled in). A policy reads the names it owns and ignores the rest, so one scenario runs
    /// unchanged under every policy that declares nothing.
    pub params: Params,
}

impl VmSched {
    /// The defaults of a `[[vm]]` that sets nothing but its weight.
    pub fn with_weight(weight: u32) -> Self {
        VmSched { weight, cap: 0, params: Params::default() }
    }
}
