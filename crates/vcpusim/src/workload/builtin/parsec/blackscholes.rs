//! `parsec.blackscholes`: prices a portfolio of European options with the Black-Scholes PDE.
//!
//! **The application** (PARSEC): data-parallel; each thread prices a static slice of the
//! options, repeatedly (NUM_RUNS), with no communication between threads beyond creation and
//! join; working set small (the option array). Synchronization: none in the loop.
//!
//! **Seed 000 numbers**: one of the three applications that "barely communicate" (section
//! 3.1.1: every application but blackscholes, freqmine and raytrace shows amplified kernel time;
//! Figure 1: near-zero IPI rates). Not in Table 1.
//!
//! **Model**: pure computation per thread, in 1 ms chunks (the chunk length only sets what
//! progress counts; assumed). No system calls, so solo it sends no IPIs at all.
//!
//! **Progress**: 1 ms chunks of option pricing, all threads.

use super::{BarrierImpl, Profile, Shape, Spread};
use crate::time::MS;

pub static PROFILE: Profile = Profile {
    name: "parsec.blackscholes",
    describe: "PARSEC blackscholes: data-parallel option pricing with no communication (seed 000 \
               section 3.1.1: barely communicates)",
    progress_unit: "1 ms chunks of option pricing (all threads)",
    shape: Shape::Workers { work: MS, spread: Spread::Uniform(0.0), events: &[], rare: None, barrier: None },
    mutexes: 0,
    single_threaded: false,
    barrier_impl: BarrierImpl::Pthread,
};

#[cfg(test)]
mod tests {
    use super::super::model_tests::*;
    use super::super::BLACKSCHOLES;
    use crate::time::MS;
    use crate::workload::builtin::test_support::loop_body;
    use crate::workload::program::{Dist, Op};

    #[test]
    fn every_thread_only_computes() {
        let program = build_default(&BLACKSCHOLES);
        for ops in &program.threads {
            assert_eq!(loop_body(ops), [Op::Compute(Dist::Const(MS)), Op::Progress]);
        }
        assert_eq!((program.mutexes, program.barriers.len(), program.queues.len()), (0, 0, 0));
    }
}
