//! `cpu-bound`: threads that only compute, never synchronize and never enter the kernel.
//!
//! Stands for the sequential and CPU-saturated corunners of seed 000: the single-threaded `x264`
//! in the UP VMs of section 4.1.2 and `freqmine` ("CPU-saturated with a little communication
//! between threads", section 4.1.3; Figure 1 lists it among the applications with few IPIs).
//! Modelled as pure CPU work: the cache and memory-bandwidth contention that section 4.1.2 notes
//! can slow a UP VM even on a dedicated pCPU is ignored.

use crate::params::{ParamSpec, Params};
use crate::time::{MS, US};
use crate::workload::program::{Dist, Op, Program};
use crate::workload::Workload;

pub struct CpuBound;

const PROGRESS_UNIT: &str = "chunks of CPU work (`chunk` each, 1 ms by default)";

impl Workload for CpuBound {
    fn name(&self) -> &'static str {
        "cpu-bound"
    }
    fn describe(&self) -> &'static str {
        "pure computation with no synchronization: the x264 UP VMs and freqmine of seed 000 \
         sections 4.1.2-4.1.3 (their cache/memory-bandwidth contention is ignored)"
    }
    fn progress_unit(&self) -> &'static str {
        PROGRESS_UNIT
    }
    fn params(&self) -> Vec<ParamSpec> {
        vec![ParamSpec::duration(
            "chunk",
            MS,
            "CPU time per unit of progress. Assumed: 1 ms, so progress reads as milliseconds of \
             CPU work; the seed reports only whole-run times for these applications. Must be at \
             least 1us so that the loop always advances time.",
        )
        .at_least(US as f64)]
    }
    fn build(&self, threads: u32, params: &Params) -> Result<Program, String> {
        let chunk = params.duration("chunk");
        if chunk == 0 {
            return Err("chunk must be at least 1us, got 0ns".into());
        }
        Ok(compute_forever(threads, chunk, PROGRESS_UNIT))
    }
}

/// `threads` threads that each compute `chunk` and count one unit of progress, forever (shared
/// with `lookbusy`).
pub(super) fn compute_forever(threads: u32, chunk: crate::time::Nanos, unit: &'static str) -> Program {
    let body = vec![Op::Compute(Dist::Const(chunk)), Op::Progress];
    let mut program = Program::new(unit);
    program.threads = vec![vec![Op::Loop { count: None, body }]; threads as usize];
    program
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::builtin::test_support::*;

    #[test]
    fn each_thread_computes_one_chunk_per_progress_forever() {
        let program = build_valid(&CpuBound, 4, &Params::defaults(&CpuBound.params()));
        for ops in &program.threads {
            assert_eq!(loop_body(ops), [Op::Compute(Dist::Const(MS)), Op::Progress]);
        }
        assert_eq!((program.mutexes, program.barriers.len(), program.queues.len()), (0, 0, 0));
    }

    #[test]
    fn chunk_sets_the_compute_and_must_be_positive() {
        let params = params_with(&CpuBound, &[("chunk", "250us".into())]);
        let program = build_valid(&CpuBound, 1, &params);
        assert_eq!(loop_body(&program.threads[0])[0], Op::Compute(Dist::Const(250 * US)));
        let spec = &CpuBound.params()[0];
        assert!(spec.parse(&"0ms".into()).unwrap_err().contains("at least 1us"));
        assert_defaults_parse(&CpuBound);
    }
}
