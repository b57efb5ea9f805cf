//! `mutex`: threads contending for pthread mutexes, like PARSEC `facesim` and `bodytrack`.
//!
//! Seed 000 section 3.1.1 (Figure 3, Figure 4): in these "communication-intensive" applications
//! the kernel time that grows under contention is spinning on the futex-queue spinlock, taken by
//! futex_wake, which sends a reschedule IPI while holding it. The workload produces exactly that
//! traffic: a contended `MutexLock` sleeps in futex_wait, the `MutexUnlock` that finds a waiter
//! calls futex_wake (glibc's three-state mutex), and uncontended lock/unlock never enter the
//! kernel.
//!
//! The seed reports these applications' reschedule-IPI rates only in Figure 1's plot, not in its
//! text, so the work and critical-section lengths below are assumed, not calibrated.

use crate::params::{ParamSpec, Params};
use crate::time::{Nanos, US};
use crate::workload::program::{Dist, Op, Program};
use crate::workload::Workload;

pub struct MutexWorkload;

const PROGRESS_UNIT: &str = "critical sections completed (all threads)";

/// Assumed mean computation outside the lock.
const OUTSIDE_WORK: Nanos = 100 * US;
/// Assumed critical-section length.
const CRITICAL: Nanos = 5 * US;

impl Workload for MutexWorkload {
    fn name(&self) -> &'static str {
        "mutex"
    }
    fn describe(&self) -> &'static str {
        "facesim/bodytrack-like futex contention: compute, then a short critical section under a \
         shared pthread mutex; contended waits go through futex_wait/futex_wake (seed 000 \
         section 3.1.1, Figures 3-4); lengths assumed"
    }
    fn progress_unit(&self) -> &'static str {
        PROGRESS_UNIT
    }
    fn params(&self) -> Vec<ParamSpec> {
        vec![
            ParamSpec::duration(
                "work",
                OUTSIDE_WORK,
                "mean computation between critical sections, exponentially distributed so lock \
                 requests arrive at random. Assumed 100us: the seed gives these applications' \
                 IPI rates only as a plot (seed 000 Figure 1).",
            ),
            ParamSpec::duration(
                "critical",
                CRITICAL,
                "computation while holding the mutex. Assumed 5us; with 8 threads and the default \
                 work the lock is busy about 8*5/105 = 38% of the time, so many acquisitions \
                 contend and go through the futex path.",
            ),
            ParamSpec::int(
                "mutexes",
                1,
                "number of mutexes; thread t uses mutex t % mutexes. Default 1: every thread \
                 contends on one lock and so on one futex queue, the case of seed 000 section \
                 3.1.1. At most 1048576, as [vm.program] mutexes: each is allocated before the run.",
            )
            .range(1.0, crate::scenario::program_ops::MAX_OBJECTS as f64),
        ]
    }
    fn build(&self, threads: u32, params: &Params) -> Result<Program, String> {
        let work = params.duration("work");
        let critical = params.duration("critical");
        let mutexes = params.int("mutexes");
        if work == 0 && critical == 0 {
            return Err("work and critical are both 0, so an iteration would take no time; give \
                        at least one of them a positive duration"
                .into());
        }
        if mutexes == 0 {
            return Err("mutexes must be at least 1, got 0".into());
        }
        let mutexes = usize::try_from(mutexes).map_err(|_| format!("mutexes {mutexes} is too large"))?;

        let mut program = Program::new(PROGRESS_UNIT);
        program.mutexes = mutexes;
        program.threads = (0..threads as usize)
            .map(|t| {
                let m = t % mutexes;
                let body = vec![
                    Op::Compute(Dist::Exp { mean: work }),
                    Op::MutexLock(m),
                    Op::Compute(Dist::Const(critical)),
                    Op::MutexUnlock(m),
                    Op::Progress,
                ];
                vec![Op::Loop { count: None, body }]
            })
            .collect();
        Ok(program)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::builtin::test_support::*;

    #[test]
    fn every_thread_locks_and_unlocks_the_shared_mutex_by_default() {
        let program = build_valid(&MutexWorkload, 8, &Params::defaults(&MutexWorkload.params()));
        assert_eq!(program.mutexes, 1);
        for ops in &program.threads {
            assert_eq!(
                loop_body(ops),
                [
                    Op::Compute(Dist::Exp { mean: 100 * US }),
                    Op::MutexLock(0),
                    Op::Compute(Dist::Const(5 * US)),
                    Op::MutexUnlock(0),
                    Op::Progress,
                ]
            );
        }
        assert_defaults_parse(&MutexWorkload);
    }

    #[test]
    fn threads_spread_over_mutexes_round_robin() {
        let params = params_with(&MutexWorkload, &[("mutexes", 3.into())]);
        let program = build_valid(&MutexWorkload, 8, &params);
        assert_eq!(program.mutexes, 3);
        let used: Vec<_> = program.threads.iter().map(|ops| loop_body(ops)[1].clone()).collect();
        let expected: Vec<_> = [0, 1, 2, 0, 1, 2, 0, 1].into_iter().map(Op::MutexLock).collect();
        assert_eq!(used, expected);
    }

    #[test]
    fn work_and_critical_set_the_computations() {
        let params = params_with(&MutexWorkload, &[("work", "1ms".into()), ("critical", "50us".into())]);
        let program = build_valid(&MutexWorkload, 2, &params);
        let body = loop_body(&program.threads[1]);
        assert_eq!(body[0], Op::Compute(Dist::Exp { mean: 1_000 * US }));
        assert_eq!(body[2], Op::Compute(Dist::Const(50 * US)));
    }

    #[test]
    fn rejects_iterations_that_take_no_time_and_zero_mutexes() {
        let params = params_with(&MutexWorkload, &[("work", "0ns".into()), ("critical", "0ns".into())]);
        assert!(MutexWorkload.build(4, &params).unwrap_err().contains("both 0"));
        let spec = MutexWorkload.params().into_iter().find(|s| s.name == "mutexes").unwrap();
        assert!(spec.parse(&0.into()).unwrap_err().contains("between 1 and 1048576"));
    }
}
