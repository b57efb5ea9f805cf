//! `lookbusy`: a CPU hog (seed 002 Figure 9: "Lookbusy is used to represent a compute bound
//! application, constantly utilizing the CPU"). lookbusy 1.4 with `-c 100` keeps each of its
//! processes busy all the time (its `utilization` loop never sleeps at 100%); it makes no
//! system calls in its busy loop. One thread per vCPU by default.

use crate::params::{ParamSpec, Params};
use crate::time::MS;
use crate::workload::program::Program;
use crate::workload::Workload;

pub struct Lookbusy;

const PROGRESS_UNIT: &str = "1 ms chunks of CPU work";

impl Workload for Lookbusy {
    fn name(&self) -> &'static str {
        "lookbusy"
    }
    fn describe(&self) -> &'static str {
        "lookbusy -c 100: a CPU hog that never sleeps nor enters the kernel (seed 002 Figure 9's co-runner)"
    }
    fn progress_unit(&self) -> &'static str {
        PROGRESS_UNIT
    }
    fn params(&self) -> Vec<ParamSpec> {
        Vec::new()
    }
    fn build(&self, threads: u32, _params: &Params) -> Result<Program, String> {
        Ok(super::cpu_bound::compute_forever(threads, MS, PROGRESS_UNIT))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::builtin::test_support::*;
    use crate::workload::program::{Dist, Op};

    #[test]
    fn every_thread_computes_forever() {
        let program = build_valid(&Lookbusy, 3, &Params::defaults(&Lookbusy.params()));
        for ops in &program.threads {
            assert_eq!(loop_body(ops), [Op::Compute(Dist::Const(MS)), Op::Progress]);
        }
    }
}
