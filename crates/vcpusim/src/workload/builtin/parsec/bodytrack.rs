//! `parsec.bodytrack`: tracks a human body through multi-camera video with an annealed particle
//! filter.
//!
//! **The application** (PARSEC): data-parallel with a persistent thread pool: for every frame
//! the main thread issues several parallel steps (edge maps, particle weights, resampling); the
//! workers take particles in blocks from a mutex-protected ticket dispenser and meet at a
//! barrier after each step; working set medium.
//!
//! **Seed 000 numbers**: Table 1 (corun): lock spinning 4.56% of CPU (57.58% of kernel time),
//! TLB 1.96% (24.75%); Figure 3: futex-queue lock; section 4.1.1 uses it for the preemption
//! delay sweep (Figure 7a) as a futex-intensive application. Its TLB rate is not in the text.
//!
//! **Model**: parallel steps of 2 ms per thread (assumed) with eight 1 us ticket-dispenser
//! critical sections on one mutex (assumed), then a blocking barrier. TLB: Table 1's 1.96%
//! estimates 64 IPIs/s/vCPU (`tlb_rate_from_table1`). Solo, a step lasts about 3.1 ms (the
//! barrier waits for the slowest of 8 exponential works) and the vCPUs idle meanwhile leave the
//! address space (lazy TLB), so fewer than 7 vCPUs are interrupted per munmap; one 128 KiB
//! buffer every 21 steps was measured to give 66 IPIs/s/vCPU solo (2 s, seed 1), and
//! tests/parsec_calibration.rs holds it within 25% of the estimate.
//!
//! **Progress**: parallel steps (barrier phases).

use super::{BarrierImpl, Event, Profile, Shape, Spread};
use crate::time::{MS, US};
use crate::workload::program::BarrierWait;

/// Seed 000 Table 1: % of total CPU in TLB shootdown, corun.
pub const TABLE1_TLB_SHARE: f64 = 1.96;

pub static PROFILE: Profile = Profile {
    name: "parsec.bodytrack",
    describe: "PARSEC bodytrack: 2 ms parallel steps taking particles from a mutex-protected \
               ticket dispenser, blocking barrier per step, a buffer munmap every 21 steps \
               (~64 TLB IPIs/s/vCPU, from seed 000 Table 1)",
    progress_unit: "parallel steps (barrier phases)",
    shape: Shape::Workers {
        work: 2 * MS,
        spread: Spread::Exp,
        events: &[(Event::Critical { hold: US }, 8)],
        rare: Some((Event::Buffer { pages: 32, touch: 0 }, 21)),
        barrier: Some(BarrierWait::Block),
    },
    mutexes: 1,
    single_threaded: false,
    barrier_impl: BarrierImpl::Pthread,
};

#[cfg(test)]
mod tests {
    use super::super::model_tests::*;
    use super::super::BODYTRACK;
    use crate::workload::program::Op;

    #[test]
    fn eight_dispenser_sections_per_step_and_a_buffer_every_21_steps() {
        let program = build_default(&BODYTRACK);
        let Op::Loop { body, .. } = &program.threads[4][0] else { panic!() };
        let Op::Loop { count: Some(21), body: step } = &body[0] else { panic!("{body:?}") };
        assert_eq!(count(step, |op| matches!(op, Op::MutexLock(0))), 8);
        assert_eq!(count(step, |op| matches!(op, Op::Barrier { .. })), 1);
        assert_eq!(body[1..], [Op::Mmap { pages: 32 }, Op::Compute(crate::workload::program::Dist::Const(0)), Op::Munmap { pages: 32 }]);
    }
}
