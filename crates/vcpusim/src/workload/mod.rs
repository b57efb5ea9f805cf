//! Workloads: the program model and the built-in workloads.

pub mod builtin;
pub mod program;
pub mod sensitivity;
pub mod worksteal;

use crate::params::{ParamSpec, Params};
use program::Program;

/// A built-in workload: named, parameterized, documented, turned into a [`Program`].
pub trait Workload: Sync {
    /// The name scenarios use (`workload = "barrier"`).
    fn name(&self) -> &'static str;
    /// One line on what it models and where its numbers come from.
    fn describe(&self) -> &'static str;
    /// What one unit of `progress` counts.
    fn progress_unit(&self) -> &'static str;
    /// Its parameters (`[vm.params]`).
    fn params(&self) -> Vec<ParamSpec>;
    /// Threads used when the scenario does not say (`threads = ...`): usually one per vCPU.
    fn default_threads(&self, vcpus: u32) -> u32 {
        vcpus
    }
    /// Build the program for `threads` threads. `iterations` is the VM's target, if any, so a
    /// workload can size finite loops; the engine stops the VM once progress reaches it.
    fn build(&self, threads: u32, params: &Params) -> Result<Program, String>;
}

/// All built-in workloads, in the order `vcpusim list` shows them.
pub fn registry() -> &'static [&'static dyn Workload] {
    builtin::ALL
}

/// Look a workload up by name, or list the valid names.
pub fn find(name: &str) -> Result<&'static dyn Workload, String> {
    registry().iter().copied().find(|w| w.name() == name).ok_or_else(|| {
        let names: Vec<_> = registry().iter().map(|w| w.name()).collect();
        format!("unknown workload {name:?}; expected one of: {}", names.join(", "))
    })
}
