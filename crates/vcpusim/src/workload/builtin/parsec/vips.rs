//! `parsec.vips`: the VIPS image-processing library's benchmark (an affine transform, sharpen
//! and colour conversion of one large image).
//!
//! **The application** (PARSEC): data-parallel; a pool of worker threads computes tiles of the
//! output image on demand, each tile's pixel buffers allocated and freed as it goes; working set
//! medium. Synchronization: the pool's work queue (glib mutex + condition variable). Seed 002
//! section 3.1: vips "intensively invoke\[s\] mmap and munmap system calls to manage the shared
//! address space among threads" — glibc malloc maps every buffer of at least its mmap threshold
//! and unmaps it on free, and each munmap is a TLB shootdown to every other vCPU.
//!
//! **Seed 000 numbers**: 1350 TLB-shootdown IPIs/s/vCPU solo (section 3.1.1); Table 1 (corun
//! with streamcluster): TLB shootdown 41.35% of CPU (87.74% of kernel time), lock spinning 4.32%
//! (9.17%); section 3.1.1: the spinning is on the mm semaphore's wait-queue lock, which the guest
//! kernel models (guest/mm_sem.rs: munmap holds mmap_sem across its shootdown).
//!
//! **Model**: the `tlb` workload's calibration (workload/builtin/tlb.rs): one 128 KiB buffer per
//! tile, P = 7 / 1350 s = 5185 us per tile with 8 threads, of which ~108 us are shootdown wait,
//! handling the others' shootdowns and mmap/munmap work, so ~5077 us of user work: 2540 us
//! around the buffer (two exponential halves) and 2540 us on it. The work-queue mutex is not
//! modelled separately (no number for it; Table 1's spinning is attributed to the mm semaphore).
//!
//! **Progress**: tiles computed, all threads.

use super::{BarrierImpl, Event, Profile, Shape, Spread};
use crate::time::US;

/// Seed 000 section 3.1.1.
pub const SOLO_TLB_IPIS_PER_VCPU: f64 = 1350.0;
/// Seed 000 Table 1: % of total CPU in TLB shootdown, corun with streamcluster.
pub const TABLE1_TLB_SHARE: f64 = 41.35;

pub static PROFILE: Profile = Profile {
    name: "parsec.vips",
    describe: "PARSEC vips: data-parallel tiles, each with an mmap'd 128 KiB buffer whose munmap \
               shoots down all other vCPUs under mmap_sem; 1350 TLB IPIs/s/vCPU solo (seed 000 \
               section 3.1.1)",
    progress_unit: "tiles computed (all threads)",
    shape: Shape::Workers {
        work: 2_540 * US,
        spread: Spread::Exp,
        events: &[(Event::Buffer { pages: 32, touch: 2_540 * US }, 1)],
        rare: None,
        barrier: None,
    },
    mutexes: 0,
    single_threaded: false,
    barrier_impl: BarrierImpl::Pthread,
};

#[cfg(test)]
mod tests {
    use super::super::model_tests::*;
    use super::super::VIPS;
    use super::*;
    use crate::workload::program::Op;

    #[test]
    fn one_buffer_per_tile_gives_1350_tlb_ipis_per_vcpu() {
        let program = build_default(&VIPS);
        assert_eq!(program.threads.len(), 8);
        assert_eq!(count(&program.threads[3], |op| matches!(op, Op::Munmap { pages: 32 })), 1);
        // Seed 002 Table 4(b): vips' solo shootdown latency, 55 us.
        let rate = workers_tlb_rate(&PROFILE, 8.0, 55_000.0);
        assert!((rate - SOLO_TLB_IPIS_PER_VCPU).abs() / SOLO_TLB_IPIS_PER_VCPU < 0.01, "{rate}");
    }
}
