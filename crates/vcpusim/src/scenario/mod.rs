//! Scenarios: the TOML format, its validation and the validated form.

mod affinity_sections;
pub mod bare_metal;
pub mod bounds;
pub mod catalog;
pub mod contention_sections;
pub mod host_sections;
pub mod load;
pub mod microsliced_sections;
mod native_sections;
pub mod numa_sections;
pub mod overlay_sections;
mod pool_sections;
pub mod program_ops;
pub mod section;
pub mod sections;
pub mod spec;
pub mod suggest;
#[cfg(test)]
mod test_support;
pub mod uvf_sections;
mod vm_class_sections;
mod vm_sched_sections;
pub mod vm_sections;
