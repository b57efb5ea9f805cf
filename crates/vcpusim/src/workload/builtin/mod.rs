//! The built-in workloads, one file each.
use super::Workload;
pub static ALL: &[&dyn Workload] = &[];
