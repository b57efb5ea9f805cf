//! The hypervisor: vCPU states, the policy interface and the policies.

pub mod delay_preempt;
pub mod halt_poll;
pub mod host_view;
pub mod kvm;
pub mod microsliced;
pub mod node_affinity;
pub mod overlay;
pub mod policies;
pub mod policy;
pub mod relaxed_co;
pub mod uvf;
pub mod vm_sched;
pub mod xl_numa;
