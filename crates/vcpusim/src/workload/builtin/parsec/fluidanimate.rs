//! `parsec.fluidanimate`: smoothed-particle-hydrodynamics fluid simulation for animation.
//!
//! **The application** (PARSEC): data-parallel over a grid of cells partitioned among threads;
//! each frame runs several phases (rebuild grid, densities, forces, collisions, advance)
//! separated by barriers, and particles in cells on a partition border are updated under
//! per-cell mutexes (many locks, rarely contended); working set large.
//!
//! **Seed 000 numbers**: Table 1 (corun): lock spinning 3.11% of CPU (92.56% of kernel time),
//! TLB 0.02%; Figure 3: futex-queue lock. Section 4.1.2: helped by Resched-DP.
//!
//! **Model**: phases of 1 ms per thread (assumed), +-10% (assumed), each with ten 300 ns
//! border-cell critical sections over 64 cell mutexes (assumed), then PARSEC's barrier
//! (pthreads.cpp includes parsec_barrier.hpp, so its pthread_barrier_wait is
//! parsec_barrier_wait: a mutex and a condition variable, polling up to 0.1 ms first:
//! `Op::ParsecBarrier`).
//!
//! **Progress**: frame phases (barrier phases).

use super::{BarrierImpl, Event, Profile, Shape, Spread};
use crate::time::{MS, US};
use crate::workload::program::BarrierWait;

pub static PROFILE: Profile = Profile {
    name: "parsec.fluidanimate",
    describe: "PARSEC fluidanimate: 1 ms phases with border-cell mutexes and PARSEC's \
               spin-then-block barrier (seed 000 Table 1: futex-lock spinning in corun)",
    progress_unit: "frame phases (barrier phases)",
    shape: Shape::Workers {
        work: MS,
        spread: Spread::Uniform(0.1),
        events: &[(Event::Critical { hold: 300 }, 10)],
        rare: None,
        barrier: Some(BarrierWait::SpinThenBlock(100 * US)),
    },
    mutexes: 64,
    single_threaded: false,
    barrier_impl: BarrierImpl::Parsec,
};

#[cfg(test)]
mod tests {
    use super::super::model_tests::*;
    use super::super::FLUIDANIMATE;
    use crate::workload::program::Op;

    #[test]
    fn ten_cell_locks_per_phase_on_different_mutexes() {
        let program = build_default(&FLUIDANIMATE);
        let locks: Vec<Op> = flat(&program.threads[2]).into_iter().filter(|op| matches!(op, Op::MutexLock(_))).collect();
        assert_eq!(locks, (2..12).map(Op::MutexLock).collect::<Vec<_>>());
        assert_eq!(program.mutexes, 64);
    }
}
