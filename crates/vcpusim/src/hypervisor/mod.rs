//! The hypervisor: vCPU states, the policy interface and the policies.

pub mod critical_detect;
pub mod critical_events;
pub mod host_view;
pub mod kvm;
pub mod node_affinity;
pub mod policies;
pub mod policy;
pub mod uvf;
pub mod vm_sched;
pub mod xl_numa;
