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
//! **Model** (`Shape::TaskQueue`): the TaskQ above with one queue per thread, main thread
//! included, and PhysBAM's conjugate-gradient loop (Deformable_Objects/DEFORMABLE_OBJECT.cpp
//! `One_Newton_Step_Toward_Steady_State`): each iteration adds one task per partition and waits
//! three times, for `..._CG_Helper_I` (the force differential over the partition's tetrahedra),
//! `_II` (zeroing enslaved nodes and the partial dot product) and `_III` (the solution and
//! residual updates and their norms). One progress unit is one iteration. The 4 ms of work per
//! thread and iteration is the earlier model's assumption; its split, 3.2 ms for the force
//! differential and 0.4 ms for each vector pass, is assumed (the force differential is the
//! mesh-wide product, the others are per-node vector operations); the tasks of a batch are
//! exponential around their mean. A thread that finds its own queue empty steals from the others
//! (`stealTasks`, taskQDistFixed.c `stealTasksSpecialized`): a task whose thread has not yet
//! taken it, say because that thread's vCPU is preempted, is run by the first idle thread.
//!
//! **Progress**: conjugate-gradient iterations (three TaskQ batches each).

use super::{BarrierImpl, Profile, Shape};
use crate::time::US;

pub static PROFILE: Profile = Profile {
    name: "parsec.facesim",
    describe: "PARSEC facesim: conjugate-gradient iterations of three TaskQ batches (a task per \
               thread's queue, a mutex and two condition variables to start and end each batch; \
               seed 000 Table 1, Figure 3: futex-queue lock)",
    progress_unit: "conjugate-gradient iterations (three TaskQ batches each)",
    shape: Shape::TaskQueue { batches: &[3200 * US, 400 * US, 400 * US] },
    mutexes: 0,
    single_threaded: false,
    barrier_impl: BarrierImpl::Pthread,
};

#[cfg(test)]
mod tests {
    use super::super::model_tests::*;
    use super::super::FACESIM;
    use crate::workload::program::Op;

    #[test]
    fn each_iteration_is_three_taskq_batches() {
        let program = build_default(&FACESIM);
        let n = program.threads.len();
        assert_eq!((program.mutexes, program.task_syncs.clone()), (n, vec![n]), "a queue lock per thread, one batch sync");
        let main = &program.threads[0];
        assert_eq!(count(main, |op| matches!(op, Op::TaskqSignal(0))), 3);
        // taskQInit's wait, then one per batch.
        assert_eq!(count(main, |op| matches!(op, Op::TaskqWaitForEnd(0))), 4);
        // Main enqueues a task in every queue, runs its own, steals once, runs what it took.
        assert_eq!(program.task_queues, (0..n).collect::<Vec<_>>(), "queue q under mutex q");
        assert_eq!(count(main, |op| matches!(op, Op::TaskqPut(q) if *q == n - 1)), 3);
        assert_eq!(count(main, |op| matches!(op, Op::TaskqOwn { queue: 0, .. })), 3 * 2);
        assert_eq!(count(main, |op| matches!(op, Op::TaskqSteal { queue: 0, repeat: false, .. })), 3);
        let worker = &program.threads[n - 1];
        assert_eq!(count(worker, |op| matches!(op, Op::TaskqWaitForTasks(0))), 3);
        assert_eq!(count(worker, |op| matches!(op, Op::TaskqOwn { queue, .. } if *queue == n - 1)), 3);
        assert_eq!(count(worker, |op| matches!(op, Op::TaskqSteal { queue, repeat: true, .. } if *queue == n - 1)), 3);
        let works: Vec<_> = flat(worker)
            .iter()
            .filter_map(|op| match op {
                Op::TaskqOwn { work, .. } => Some(*work),
                _ => None,
            })
            .collect();
        assert_eq!(works, [3200 * crate::time::US, 400 * crate::time::US, 400 * crate::time::US], "the three batches' task means");
    }
}
