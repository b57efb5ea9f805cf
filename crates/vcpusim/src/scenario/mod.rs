//! Scenarios: the TOML format, its validation and the validated form.

pub mod bounds;
pub mod catalog;
pub mod contention_sections;
pub mod load;
pub mod microsliced_sections;
pub mod numa_sections;
pub mod overlay_sections;
pub mod program_ops;
pub mod section;
pub mod sections;
pub mod spec;
pub mod suggest;
pub mod uvf_sections;
