//! A VM's scheduling settings as a policy receives them ([`VmSched`], through
//! `Policy::adjust`): Xen's `xen_domctl_scheduler_op`, whose common part (weight, cap) every
//! proportional-share scheduler reads and whose scheduler-specific part only the scheduler it
//! belongs to: here seed 004's VM class ([`VmType`], the `hybrid` policy) and seed 000's
//! urgent-vCPU-first knobs ([`UvfVm`], the policies that carry the overlay).

use crate::time::Nanos;

/// A VM's scheduling settings, handed to [`Policy::adjust`](crate::hypervisor::policy::Policy::adjust) (Xen: the `xen_domctl_scheduler_op`
/// parameters `csched_dom_cntl` reads, plus the seeds' per-VM knobs). Every policy reads
/// `weight`; the rest only the policies that implement them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VmSched {
    /// Proportional-share weight (Xen domain weight; CFS group shares are derived from it).
    pub weight: u32,
    /// Cap in percent of one pCPU (Xen `sdom->cap`); 0 = no cap (`[[vm]] cap`).
    pub cap: u32,
    /// Seed 004 section 4.1 VM type (`[[vm]] type`); only the `hybrid` policy reads it.
    pub vm_type: VmType,
    /// Seed 004 section 3.3 u-factor of the master vCPU (`[[vm]] u_factor`, in [0, 1]; PCPS when
    /// > 0); only the `hybrid` policy reads it, and only for concurrent VMs.
    pub u_factor: f64,
    /// The VM's urgent-vCPU-first features (`[vm.uvf]`; all off by default); read by policies
    /// that carry the overlay.
    pub uvf: UvfVm,
}

impl VmSched {
    /// The defaults of a `[[vm]]` that sets nothing but its weight.
    pub fn with_weight(weight: u32) -> Self {
        VmSched { weight, cap: 0, vm_type: VmType::default(), u_factor: 0.0, uvf: Default::default() }
    }
}

/// The VM classes of seed 004 (004_2f4d1756ca892fd2.txt section 4.1): a high-throughput VM's
/// vCPUs are scheduled asynchronously (PS), a concurrent VM's are co-scheduled (CPS / PCPS).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum VmType {
    /// `hit`: high-throughput (the seed's default type).
    #[default]
    HighThroughput,
    /// `con`: concurrent.
    Concurrent,
}

impl VmType {
    /// The names scenarios use, in the order error messages list them.
    pub const NAMES: &'static [&'static str] = &["hit", "con"];

    pub fn name(self) -> &'static str {
        match self {
            VmType::HighThroughput => "hit",
            VmType::Concurrent => "con",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "hit" => Some(VmType::HighThroughput),
            "con" => Some(VmType::Concurrent),
            _ => None,
        }
    }
}

/// Per-VM UVF features (`[vm.uvf]`), the seed's per-VM knobs (section 3.1.2).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct UvfVm {
    /// Resched-DP: a reschedule-IPI sender stays urgent (not preempted) this long.
    pub resched_dp: Option<Nanos>,
    /// Early delayed preemption: start the Resched-DP delay at the first APIC access of any IPI
    /// send, before the send's exits (section 4.1.1, Figure 7a).
    pub early_dp: bool,
    /// TLB-Co: a TLB-shootdown IPI recipient is urgent until it acknowledges.
    pub tlb_co: bool,
    /// Resched-Co: a reschedule-IPI recipient is urgent this long.
    pub resched_co: Option<Nanos>,
}

impl UvfVm {
    pub fn any(&self) -> bool {
        self.resched_dp.is_some() || self.tlb_co || self.resched_co.is_some()
    }
}
