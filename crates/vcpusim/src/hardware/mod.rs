//! The physical host: topology, the costs of virtualization events, and the speed at which a
//! pCPU advances a vCPU's work.

pub mod contention;
pub mod costs;
pub mod cpumask;
pub mod nic;
pub mod speed;
pub mod topology;
