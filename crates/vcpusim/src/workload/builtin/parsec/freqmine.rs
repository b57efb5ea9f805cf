//! `parsec.freqmine`: frequent-itemset mining with FP-growth (OpenMP).
//!
//! **The application** (PARSEC): data-parallel with OpenMP parallel loops over the FP-tree;
//! threads meet at the implicit barrier ending each parallel region and take a few OpenMP
//! critical sections; working set unbounded.
//!
//! **Seed 000 numbers**: section 4.1.3: "CPU-saturated with a little communication between
//! threads"; section 3.1.1 / Figure 1: barely communicates. Not in Table 1.
//!
//! **Model**: parallel regions of 50 ms per thread (assumed) ending in a blocking barrier
//! (libgomp's barrier spins for a while before futex_wait; with balanced 50 ms regions the
//! difference is negligible, so the spin is not modelled), with two 1 us critical sections on one
//! lock per region (assumed). Solo this gives at most 7 wake-ups per 50 ms region: a few tens of
//! reschedule IPIs per second per vCPU, against thousands for the communicating applications.
//!
//! **Progress**: parallel regions (barrier phases).

use super::{BarrierImpl, Event, Profile, Shape, Spread};
use crate::time::{MS, US};
use crate::workload::program::BarrierWait;

pub static PROFILE: Profile = Profile {
    name: "parsec.freqmine",
    describe: "PARSEC freqmine: CPU-saturated OpenMP regions of 50 ms with a barrier and two \
               short critical sections each (seed 000 section 4.1.3: little communication)",
    progress_unit: "parallel regions (barrier phases)",
    shape: Shape::Workers {
        work: 50 * MS,
        spread: Spread::Uniform(0.05),
        events: &[(Event::Critical { hold: US }, 2)],
        rare: None,
        barrier: Some(BarrierWait::Block),
    },
    mutexes: 1,
    single_threaded: false,
    barrier_impl: BarrierImpl::Pthread,
};

#[cfg(test)]
mod tests {
    use super::super::model_tests::*;
    use super::super::FREQMINE;
    use crate::workload::program::Op;

    #[test]
    fn long_regions_with_two_critical_sections_and_a_barrier() {
        let program = build_default(&FREQMINE);
        assert_eq!(program.barriers, vec![8]);
        assert_eq!(count(&program.threads[5], |op| matches!(op, Op::MutexLock(0))), 2);
        assert_eq!(count(&program.threads[5], |op| matches!(op, Op::Barrier { .. })), 1);
    }
}
