//! `pipeline`: stages of threads joined by bounded queues, like PARSEC `dedup` and `ferret`.
//!
//! dedup runs Fragment -> FragmentRefine -> Deduplicate -> Compress -> Reorder, ferret
//! load -> segment -> extract -> vectorize -> rank -> output, each stage a pool of threads that
//! take items from the previous stage's queue and put results in the next. A consumer that finds
//! its queue empty (or a producer that finds it full) sleeps on a condition variable, and the
//! thread that changes the queue wakes it: futex_wake, with its reschedule IPI under the
//! futex-queue lock. Seed 000 section 4.1.1: dedup "induces significant thread wake-ups by
//! fine-grained communication"; Figure 8 / section 4.1.2 show ferret and dedup gaining from
//! Resched-DP, the wait-queue-lock fix.
//!
//! Thread t works in stage t % stages, so stages get threads round-robin. Stage 0 produces items
//! from nothing (dedup reads its input file), the last stage retires them (Progress).

use crate::params::{ParamSpec, Params};
use crate::time::{Nanos, US};
use crate::workload::program::{Dist, Op, Program};
use crate::workload::Workload;

pub struct Pipeline;

const PROGRESS_UNIT: &str = "items that left the last stage";

/// Assumed mean work per item per stage.
const STAGE_WORK: Nanos = 100 * US;
/// Queue depth of ferret's native run (`ferret corel lsh queries 50 20 N out`: depth 20, given
/// to every queue_init in ferret-pthreads.c).
const QUEUE_CAPACITY: u64 = 20;

impl Workload for Pipeline {
    fn name(&self) -> &'static str {
        "pipeline"
    }
    fn describe(&self) -> &'static str {
        "dedup/ferret-like pipeline: stages of threads joined by bounded queues (mutex + two \
         condition variables), every hand-off a possible futex wake-up (seed 000 sections \
         3.1.1, 4.1.1)"
    }
    fn progress_unit(&self) -> &'static str {
        PROGRESS_UNIT
    }
    fn params(&self) -> Vec<ParamSpec> {
        vec![
            ParamSpec::int(
                "stages",
                3,
                "number of pipeline stages; needs at least as many threads. Assumed 3; PARSEC \
                 dedup has 5 stages and ferret 6.",
            )
            .range(2.0, 1024.0),
            ParamSpec::duration(
                "work",
                STAGE_WORK,
                "mean computation per item in every stage, exponentially distributed. Assumed \
                 100us: the seed reports these applications' wake-up (reschedule IPI) rates only \
                 in Figure 1's plot. At least 1us.",
            )
            .at_least(US as f64),
            ParamSpec::int(
                "queue_capacity",
                QUEUE_CAPACITY,
                "items each queue holds before producers block. 20: the queue depth of PARSEC \
                 ferret's native run ('ferret corel lsh queries 50 20 N').",
            )
            .range(1.0, u32::MAX as f64),
        ]
    }
    fn build(&self, threads: u32, params: &Params) -> Result<Program, String> {
        let stages = params.int("stages");
        if stages < 2 {
            return Err(format!("stages must be at least 2, got {stages}"));
        }
        if u64::from(threads) < stages {
            return Err(format!(
                "a pipeline of {stages} stages needs at least {stages} threads (one per stage), \
                 but the VM runs {threads}; raise threads or lower stages"
            ));
        }
        let work = params.duration("work");
        if work == 0 {
            return Err("work must be at least 1us, got 0ns".into());
        }
        let capacity = params.int("queue_capacity");
        if capacity == 0 {
            return Err("queue_capacity must be at least 1, got 0".into());
        }
        let stages = stages as usize;
        let capacity = usize::try_from(capacity).map_err(|_| format!("queue_capacity {capacity} is too large"))?;
        let compute = Op::Compute(Dist::Exp { mean: work });

        let mut program = Program::new(PROGRESS_UNIT);
        // Queue i joins stage i to stage i + 1.
        program.queues = vec![capacity; stages - 1];
        program.threads = (0..threads as usize)
            .map(|t| {
                let stage = t % stages;
                let mut body = Vec::with_capacity(3);
                if stage > 0 {
                    body.push(Op::QueueGet(stage - 1));
                }
                body.push(compute.clone());
                if stage + 1 < stages {
                    body.push(Op::QueuePut(stage));
                } else {
                    body.push(Op::Progress);
                }
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

    fn defaults() -> Params {
        Params::defaults(&Pipeline.params())
    }

    #[test]
    fn threads_form_stages_round_robin_joined_by_queues() {
        let program = build_valid(&Pipeline, 8, &defaults());
        assert_eq!(program.queues, vec![20, 20]);
        let work = Op::Compute(Dist::Exp { mean: 100 * US });
        let producer = vec![work.clone(), Op::QueuePut(0)];
        let middle = vec![Op::QueueGet(0), work.clone(), Op::QueuePut(1)];
        let last = vec![Op::QueueGet(1), work.clone(), Op::Progress];
        for (t, ops) in program.threads.iter().enumerate() {
            let expected = [&producer, &middle, &last][t % 3];
            assert_eq!(loop_body(ops), expected.as_slice(), "thread {t}");
        }
        assert_defaults_parse(&Pipeline);
    }

    #[test]
    fn only_the_last_stage_counts_progress() {
        let params = params_with(&Pipeline, &[("stages", 5.into())]);
        let program = build_valid(&Pipeline, 7, &params);
        assert_eq!(program.queues.len(), 4);
        let counting: Vec<_> = (0..7).filter(|t| loop_body(&program.threads[*t]).contains(&Op::Progress)).collect();
        assert_eq!(counting, [4]);
    }

    #[test]
    fn rejects_fewer_threads_than_stages() {
        let err = Pipeline.build(2, &defaults()).unwrap_err();
        assert!(err.contains("3 stages needs at least 3 threads") && err.contains("runs 2"), "{err}");
        build_valid(&Pipeline, 3, &defaults());
    }

    #[test]
    fn params_change_the_program() {
        let params = params_with(&Pipeline, &[("stages", 2.into()), ("work", "40us".into()), ("queue_capacity", 1.into())]);
        let program = build_valid(&Pipeline, 4, &params);
        assert_eq!(program.queues, vec![1]);
        assert_eq!(loop_body(&program.threads[0]), [Op::Compute(Dist::Exp { mean: 40 * US }), Op::QueuePut(0)]);
        assert_eq!(loop_body(&program.threads[3]), [Op::QueueGet(0), Op::Compute(Dist::Exp { mean: 40 * US }), Op::Progress]);
        let spec = |name: &str| Pipeline.params().into_iter().find(|s| s.name == name).unwrap();
        assert!(spec("stages").parse(&1.into()).unwrap_err().contains("between 2 and 1024"));
        assert!(spec("queue_capacity").parse(&0.into()).is_err());
    }
}
