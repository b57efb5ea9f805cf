//! `barrier`: bulk-synchronous phases like PARSEC `streamcluster`.
//!
//! Seed 000 section 3.1.2 / Figure 5: "each thread locally computes its job until a
//! synchronization point, at which all the threads wait for the next stage ... two to four
//! barrier synchronizations occur at a time within 1ms". Section 4.2.3 / Figure 10: its in-house
//! barrier spins "for a short period (approximately 0.1ms)" and then blocks.
//!
//! No extra kernel work: seed 000 Table 1 profiles streamcluster's kernel time (corun) as 91% lock
//! spinning (the futex-queue lock, Figure 3) and 0.18% TLB shootdown, i.e. its kernel component
//! is the futex traffic of its own barrier, which the guest kernel generates from the `Barrier`
//! op (futex_wait / futex_wake under the bucket lock). The seed gives no other system call, and
//! section 3.1.2 says threads show "no communication during local computation".
//!
//! The in-house barrier's departure phase (section 4.2.3) exists to stop fast threads from
//! overtaking a generation; the engine's barrier counts generations itself, so one `Barrier` op
//! stands for one arrival + departure.

use crate::params::{ParamSpec, Params};
use crate::time::{Nanos, US};
use crate::workload::program::{BarrierWait, Dist, Op, Program};
use crate::workload::Workload;

pub struct BarrierWorkload;

const PROGRESS_UNIT: &str = "barrier phases completed";

/// Phase length: Figure 5 shows two to four barriers within 1 ms; the middle, three per ms,
/// gives 1 ms / 3.
const PHASE_WORK: Nanos = 333 * US;
/// Spin budget of streamcluster's spin-then-block barrier (seed 000 section 4.2.3: "approximately
/// 0.1ms").
const SPIN_BUDGET: Nanos = 100 * US;

const WAITS: &[&str] = &["block", "spin", "spin-then-block"];
const SPREADS: &[&str] = &["uniform", "normal"];

impl Workload for BarrierWorkload {
    fn name(&self) -> &'static str {
        "barrier"
    }
    fn describe(&self) -> &'static str {
        "streamcluster-like bulk-synchronous phases: compute, then wait at a barrier of all \
         threads, about three barriers per ms (seed 000 Figure 5), spin-then-block waits \
         (section 4.2.3)"
    }
    fn progress_unit(&self) -> &'static str {
        PROGRESS_UNIT
    }
    fn params(&self) -> Vec<ParamSpec> {
        vec![
            ParamSpec::duration(
                "work",
                PHASE_WORK,
                "mean computation per thread between barriers. 333us = 1 ms / 3: seed 000 \
                 section 3.1.2 / Figure 5 sees 'two to four barrier synchronizations ... within \
                 1ms' in streamcluster; at least 1us.",
            )
            .at_least(US as f64),
            ParamSpec::float(
                "jitter",
                0.1,
                "spread of each phase's work as a fraction of `work` (half-width for uniform, \
                 standard deviation for normal). Assumed 0.1: the seed says only that loads can \
                 be 'skewed' (section 4.2.3), not by how much.",
            )
            .range(0.0, 1.0),
            ParamSpec::choice(
                "spread",
                SPREADS,
                "uniform",
                "shape of the per-phase variation: uniform in work*(1 +- jitter), or normal with \
                 sd work*jitter truncated at zero. Assumed uniform.",
            ),
            ParamSpec::choice(
                "wait",
                WAITS,
                "spin-then-block",
                "how a thread waits for the others: block (pthread_barrier_wait), spin (user-space \
                 busy wait), or spin-then-block, streamcluster's in-house barrier (seed 000 \
                 section 4.2.3, Figure 10).",
            ),
            ParamSpec::duration(
                "spin",
                SPIN_BUDGET,
                "CPU time spun before blocking when wait = spin-then-block: 'approximately 0.1ms' \
                 (seed 000 section 4.2.3). Ignored by the other waits.",
            ),
        ]
    }
    fn build(&self, threads: u32, params: &Params) -> Result<Program, String> {
        if threads == 0 {
            return Err("the barrier workload needs at least 1 thread, got 0".into());
        }
        let work = params.duration("work");
        if work == 0 {
            return Err("work must be at least 1us, got 0ns".into());
        }
        let phase = phase_work(work, params.float("jitter"), params.choice("spread"))?;
        let wait = match params.choice("wait") {
            "block" => BarrierWait::Block,
            "spin" => BarrierWait::Spin,
            "spin-then-block" => BarrierWait::SpinThenBlock(params.duration("spin")),
            other => return Err(format!("wait must be one of {}, got {other:?}", WAITS.join(", "))),
        };

        let mut program = Program::new(PROGRESS_UNIT);
        program.barriers = vec![threads as usize];
        program.threads = (0..threads)
            .map(|t| {
                let mut body = vec![Op::Compute(phase.clone()), Op::Barrier { barrier: 0, wait }];
                // One thread counts the phase, so progress counts phases, not arrivals.
                if t == 0 {
                    body.push(Op::Progress);
                }
                vec![Op::Loop { count: None, body }]
            })
            .collect();
        Ok(program)
    }
}

/// The distribution of one phase's work.
fn phase_work(work: Nanos, jitter: f64, spread: &str) -> Result<Dist, String> {
    if !(0.0..=1.0).contains(&jitter) {
        return Err(format!("jitter must be a fraction between 0 and 1, got {jitter}"));
    }
    let delta = (work as f64 * jitter).round() as Nanos;
    if delta == 0 {
        return Ok(Dist::Const(work));
    }
    match spread {
        "uniform" => Ok(Dist::Uniform { lo: work - delta, hi: work + delta }),
        "normal" => Ok(Dist::Normal { mean: work, sd: delta }),
        other => Err(format!("spread must be one of {}, got {other:?}", SPREADS.join(", "))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::builtin::test_support::*;

    fn defaults() -> Params {
        Params::defaults(&BarrierWorkload.params())
    }

    #[test]
    fn all_threads_meet_at_one_barrier_and_thread_0_counts_phases() {
        for threads in [1, 2, 8, 13] {
            let program = build_valid(&BarrierWorkload, threads, &defaults());
            assert_eq!(program.barriers, vec![threads as usize]);
            for (t, ops) in program.threads.iter().enumerate() {
                let body = loop_body(ops);
                let progress = body.iter().filter(|op| **op == Op::Progress).count();
                assert_eq!(progress, usize::from(t == 0), "thread {t}");
                assert!(matches!(body[1], Op::Barrier { barrier: 0, .. }));
            }
        }
    }

    #[test]
    fn defaults_are_three_phases_per_ms_with_streamclusters_spin_then_block() {
        let program = build_valid(&BarrierWorkload, 8, &defaults());
        let body = loop_body(&program.threads[0]);
        let Op::Compute(phase) = &body[0] else { panic!("{body:?}") };
        let phases_per_ms = 1e6 / phase.mean();
        assert!((2.0..=4.0).contains(&phases_per_ms), "{phases_per_ms}");
        assert_eq!(*phase, Dist::Uniform { lo: 300 * US - 300, hi: 366 * US + 300 });
        assert_eq!(body[1], Op::Barrier { barrier: 0, wait: BarrierWait::SpinThenBlock(100 * US) });
        assert_defaults_parse(&BarrierWorkload);
    }

    #[test]
    fn params_change_the_program() {
        let wait_of = |overrides: &[(&str, toml::Value)]| {
            let program = build_valid(&BarrierWorkload, 4, &params_with(&BarrierWorkload, overrides));
            loop_body(&program.threads[1]).to_vec()
        };
        assert_eq!(wait_of(&[("wait", "block".into())])[1], Op::Barrier { barrier: 0, wait: BarrierWait::Block });
        assert_eq!(wait_of(&[("wait", "spin".into())])[1], Op::Barrier { barrier: 0, wait: BarrierWait::Spin });
        assert_eq!(wait_of(&[("spin", "20us".into())])[1], Op::Barrier { barrier: 0, wait: BarrierWait::SpinThenBlock(20 * US) });
        let work = "1ms".into();
        assert_eq!(wait_of(&[("work", work), ("jitter", 0.0.into())])[0], Op::Compute(Dist::Const(1_000 * US)));
        assert_eq!(
            wait_of(&[("work", "1ms".into()), ("jitter", 0.25.into()), ("spread", "normal".into())])[0],
            Op::Compute(Dist::Normal { mean: 1_000 * US, sd: 250 * US })
        );
    }

    #[test]
    fn rejects_bad_values() {
        let specs = BarrierWorkload.params();
        let spec = |name: &str| specs.iter().find(|s| s.name == name).unwrap().clone();
        assert!(spec("wait").parse(&"sleep".into()).unwrap_err().contains("block, spin, spin-then-block"));
        assert!(spec("jitter").parse(&1.5.into()).unwrap_err().contains("between 0 and 1"));
        assert!(spec("work").parse(&"0us".into()).is_err());
        assert!(BarrierWorkload.build(0, &defaults()).unwrap_err().contains("at least 1 thread"));
    }
}
