//! `parsec.streamcluster`: online clustering of a stream of points (k-median).
//!
//! **The application** (PARSEC): data-parallel; every thread evaluates its share of the points
//! for each candidate centre, then all meet at a barrier, many times per second; working set
//! medium. The barrier is PARSEC's own (`parsec_barrier_wait`: streamcluster.cpp includes
//! parsec_barrier.hpp, which replaces pthread_barrier_* by macro): a mutex, a condition variable
//! and an arrival-phase flag, polled for at most SPIN_COUNTER_MAX iterations ("no more than
//! 0.1 ms") before the thread blocks on the condition variable (`Op::ParsecBarrier`, docs/model.md
//! section 8.4).
//!
//! **Seed 000 numbers**: section 3.1.2 / Figure 5: "two to four barrier synchronizations occur
//! at a time within 1ms"; section 4.2.3: the barrier spins "for a short period (approximately
//! 0.1ms)" and then blocks; Table 1 (corun): lock spinning 10.35% of CPU (91.11% of kernel
//! time), TLB 0.02% — its kernel time is the futex traffic of its barrier (Figure 3: the
//! futex-queue lock).
//!
//! **Model**: phases of 333 us of work (1 ms / 3, the middle of "two to four", as the `barrier`
//! workload), PARSEC's barrier with a 100 us spin (its arrival and departure phases both
//! modelled), no other system call. Work is uniform in 333 us +-30%
//! (assumed): Figure 5 sees reschedule IPIs at the barriers, so some threads must arrive more
//! than the 0.1 ms spin before the last one, which +-10% (the `barrier` workload's default,
//! spread at most 67 us) would never produce solo. A phase then lasts the slowest thread's
//! work, 233 + 200 x 8/9 = 411 us on average: 2.4 barriers per ms.
//!
//! **Progress**: barrier phases (counted by thread 0).

use super::{BarrierImpl, Profile, Shape, Spread};
use crate::time::US;
use crate::workload::program::BarrierWait;

pub static PROFILE: Profile = Profile {
    name: "parsec.streamcluster",
    describe: "PARSEC streamcluster: bulk-synchronous phases, about 3 barriers per ms (seed 000 \
               Figure 5), spin-then-block barrier with a 0.1 ms spin (section 4.2.3)",
    progress_unit: "barrier phases",
    shape: Shape::Workers {
        work: 333 * US,
        spread: Spread::Uniform(0.3),
        events: &[],
        rare: None,
        barrier: Some(BarrierWait::SpinThenBlock(100 * US)),
    },
    mutexes: 0,
    single_threaded: false,
    barrier_impl: BarrierImpl::Parsec,
};

#[cfg(test)]
mod tests {
    use super::super::model_tests::*;
    use super::super::STREAMCLUSTER;
    use crate::workload::builtin::test_support::*;
    use crate::workload::program::{BarrierWait, Op};
    use crate::workload::Workload;

    #[test]
    fn three_phases_per_ms_ending_in_a_spin_then_block_barrier() {
        let program = build_default(&STREAMCLUSTER);
        assert_eq!(program.barriers, vec![8]);
        let body = loop_body(&program.threads[0]);
        let Op::Compute(phase) = &body[0] else { panic!("{body:?}") };
        assert!((2.0..=4.0).contains(&(1e6 / phase.mean())), "{}", phase.mean());
        assert_eq!(body[1], Op::ParsecBarrier { barrier: 0, wait: BarrierWait::SpinThenBlock(100_000) });
        assert_eq!(count(&program.threads[0], |op| *op == Op::Progress), 1);
        assert_eq!(count(&program.threads[1], |op| *op == Op::Progress), 0);
    }

    #[test]
    fn the_block_only_barrier_of_figure_10_is_a_parameter() {
        let params = params_with(&STREAMCLUSTER, &[("wait", "block".into())]);
        let program = build_valid(&STREAMCLUSTER, 8, &params);
        assert_eq!(loop_body(&program.threads[2])[1], Op::ParsecBarrier { barrier: 0, wait: BarrierWait::Block });
        let spec = STREAMCLUSTER.params().into_iter().find(|s| s.name == "wait").unwrap();
        assert!(spec.parse(&"sleep".into()).is_err());
    }
}
