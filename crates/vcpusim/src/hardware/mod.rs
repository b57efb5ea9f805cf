//! The physical host: topology and the costs of virtualization events.

pub mod costs;
pub mod cpumask;
pub mod topology;
