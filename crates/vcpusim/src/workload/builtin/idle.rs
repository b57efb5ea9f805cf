//! `idle`: a VM that holds a share of the host but never runs.
//!
//! Seed 004 (Weng et al., section 6.2 and Table 1) keeps a manager VM V0 (Xen's Domain-0) with
//! eight vCPUs and weight 256 "without workload on it" beside the measured VMs. Its threads exit
//! at once, so its vCPUs halt and stay halted: it owns a weight, never consumes CPU, and shows
//! what a policy does with entitlement that nobody uses.

use crate::params::{ParamSpec, Params};
use crate::workload::program::Program;
use crate::workload::Workload;

pub struct Idle;

const PROGRESS_UNIT: &str = "nothing (an idle VM makes no progress)";

impl Workload for Idle {
    fn name(&self) -> &'static str {
        "idle"
    }
    fn describe(&self) -> &'static str {
        "a VM that holds a share but never runs, like the manager VM / Domain-0 of seed 004 section 6.2"
    }
    fn progress_unit(&self) -> &'static str {
        PROGRESS_UNIT
    }
    fn params(&self) -> Vec<ParamSpec> {
        Vec::new()
    }
    /// One thread: the fewest the scenario loader accepts; it exits at once, like any others.
    fn default_threads(&self, _vcpus: u32) -> u32 {
        1
    }
    /// `threads` empty op lists (any count, including 0): every thread exits immediately.
    fn build(&self, threads: u32, _params: &Params) -> Result<Program, String> {
        let mut program = Program::new(PROGRESS_UNIT);
        program.threads = vec![Vec::new(); threads as usize];
        Ok(program)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::builtin::test_support::*;

    #[test]
    fn threads_exit_at_once_and_use_no_objects() {
        let program = build_valid(&Idle, 8, &Params::default());
        assert!(program.threads.iter().all(|ops| ops.is_empty()));
        assert_eq!(program, Program { threads: vec![Vec::new(); 8], ..Program::new(PROGRESS_UNIT) });
    }

    #[test]
    fn accepts_zero_threads_and_has_no_params() {
        assert!(build_valid(&Idle, 0, &Params::default()).threads.is_empty());
        assert!(Idle.params().is_empty());
        assert_eq!(Idle.default_threads(8), 1);
    }
}
