//! `parsec.facesim`: simulates the motion of a human face for animation (PhysBAM).
//!
//! **The application** (PARSEC): data-parallel; working set large. Its pthreads build compiles
//! the Alamere TaskQ (Makefile.common `USE_ALAMERE_TASKQ=yes`: THREAD_POOL_ALAMERE.cpp,
//! TaskQ/lib/taskQDistCommon.c), not THREAD_POOL.cpp's single mutex-and-condition queue: one
//! queue per thread with its own mutex (idle threads steal), and one mutex, two condition
//! variables and a counter that start and end each batch of tasks (`taskAvail`, `tasksDone`);
//! the main thread is one of the N and runs tasks too; each conjugate-gradient iteration is 3
//! batches (short, long, short). No pthread barrier (read in PARSEC 3.0's tree; EXPERIMENTS.md
//! E4 has the details).
//!
//! **Seed 000 numbers**: Table 1 (corun): lock spinning 4.33% of CPU (75.57% of kernel time),
//! TLB 0.02%; Figure 3: futex-queue lock; section 4.1.1: a futex-intensive application (Figure
//! 7a), and a corunner whose "repeated sleep and wake-up of its worker threads" impedes urgent
//! scheduling (Figure 7c); Table 2: 97.7% fewer pause-loop exits under UVF.
//!
//! **Model** (not yet the TaskQ structure above: its batch start needs a predicate wait on a
//! condition variable, which the program ops lack): solver steps of 4 ms per thread (assumed)
//! with sixteen 1 us task-queue critical sections on one mutex (assumed), then a blocking
//! barrier for the batch's end.
//!
//! **Progress**: solver steps (barrier phases).

use super::{BarrierImpl, Event, Profile, Shape, Spread};
use crate::time::{MS, US};
use crate::workload::program::BarrierWait;

pub static PROFILE: Profile = Profile {
    name: "parsec.facesim",
    describe: "PARSEC facesim: 4 ms solver steps taking tasks from a mutex-protected queue, \
               blocking barrier per step (seed 000 Table 1, Figure 3: futex-queue lock)",
    progress_unit: "solver steps (barrier phases)",
    shape: Shape::Workers {
        work: 4 * MS,
        spread: Spread::Exp,
        events: &[(Event::Critical { hold: US }, 16)],
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
    use super::super::FACESIM;
    use crate::workload::program::Op;

    #[test]
    fn sixteen_task_queue_sections_per_step() {
        let program = build_default(&FACESIM);
        assert_eq!(count(&program.threads[7], |op| matches!(op, Op::MutexLock(0))), 16);
        assert_eq!(count(&program.threads[7], |op| matches!(op, Op::Barrier { .. })), 1);
    }
}
