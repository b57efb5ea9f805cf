//! `parsec.raytrace`: real-time ray tracing of an animated scene (Intel RTView).
//!
//! **The application**: added in PARSEC 2.0, after the PACT'08 characterization. Data-parallel:
//! per frame, threads take screen tiles from a shared atomic counter (no lock) and meet when the
//! frame is done; working set unbounded (the scene's BVH).
//!
//! **Seed 000 numbers**: section 3.1.1 / Figure 1: barely communicates. Not in Table 1.
//!
//! **Model**: one frame = 40 ms of computation per thread (assumed), balanced to +-10% by the
//! dynamic tile distribution (assumed), then a blocking barrier. About 7 wake-ups per 40 ms frame.
//!
//! **Progress**: frames rendered (barrier phases).

use super::{BarrierImpl, Profile, Shape, Spread};
use crate::time::MS;
use crate::workload::program::BarrierWait;

pub static PROFILE: Profile = Profile {
    name: "parsec.raytrace",
    describe: "PARSEC raytrace: data-parallel frames of 40 ms per thread ending at a barrier, no \
               other communication (seed 000 section 3.1.1: barely communicates)",
    progress_unit: "frames rendered (barrier phases)",
    shape: Shape::Workers { work: 40 * MS, spread: Spread::Uniform(0.1), events: &[], rare: None, barrier: Some(BarrierWait::Block) },
    mutexes: 0,
    single_threaded: false,
    barrier_impl: BarrierImpl::Pthread,
};

#[cfg(test)]
mod tests {
    use super::super::model_tests::*;
    use super::super::RAYTRACE;
    use crate::workload::program::Op;

    #[test]
    fn frames_end_at_a_barrier_and_nothing_else_synchronizes() {
        let program = build_default(&RAYTRACE);
        let ops = flat(&program.threads[1]);
        assert_eq!(ops.len(), 2, "{ops:?}");
        assert!(matches!(ops[1], Op::Barrier { barrier: 0, .. }));
    }
}
