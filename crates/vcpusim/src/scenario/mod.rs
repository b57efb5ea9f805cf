//! Scenarios: the TOML format, its validation and the validated form.

pub mod catalog;
pub mod load;
pub mod spec;
