//! `parsec.canneal`: simulated annealing of a chip netlist's routing cost.
//!
//! **The application** (PARSEC): unstructured parallelism; threads swap random pairs of netlist
//! elements with lock-free atomic pointer swaps, and all threads meet at a barrier after each
//! temperature step; working set unbounded (the netlist), high sharing and exchange.
//!
//! **Seed 000 numbers**: Table 1 (corun): lock spinning 4.02% of CPU (85.17% of kernel time),
//! TLB 0.02%; the spinning is on the futex-queue lock (Figure 3), i.e. its barrier's wake-ups.
//! Section 4.1.2: slower under balance scheduling than under the baseline.
//!
//! **Model**: temperature steps of 10 ms per thread (assumed), +-10% (assumed), then a blocking
//! barrier (pthread_barrier_wait). The atomic swaps never enter the kernel, so nothing else.
//!
//! **Progress**: temperature steps (barrier phases).

use super::{BarrierImpl, Profile, Shape, Spread};
use crate::time::MS;
use crate::workload::program::BarrierWait;

pub static PROFILE: Profile = Profile {
    name: "parsec.canneal",
    describe: "PARSEC canneal: lock-free swaps in temperature steps of 10 ms ending at a blocking \
               barrier (seed 000 Table 1: futex-lock spinning in corun)",
    progress_unit: "temperature steps (barrier phases)",
    shape: Shape::Workers { work: 10 * MS, spread: Spread::Uniform(0.1), events: &[], rare: None, barrier: Some(BarrierWait::Block) },
    mutexes: 0,
    single_threaded: false,
    barrier_impl: BarrierImpl::Pthread,
};

#[cfg(test)]
mod tests {
    use super::super::model_tests::*;
    use super::super::CANNEAL;
    use crate::workload::program::{BarrierWait, Op};

    #[test]
    fn steps_end_at_a_blocking_barrier() {
        let program = build_default(&CANNEAL);
        assert_eq!(count(&program.threads[0], |op| *op == Op::Barrier { barrier: 0, wait: BarrierWait::Block }), 1);
        assert_eq!(count(&program.threads[0], |op| matches!(op, Op::MutexLock(_) | Op::Munmap { .. })), 0);
    }
}
