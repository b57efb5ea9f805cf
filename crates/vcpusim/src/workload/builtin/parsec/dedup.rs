//! `parsec.dedup`: compression with data deduplication (a backup-storage kernel).
//!
//! **The application** (PARSEC): a five-stage pipeline joined by queues: Fragment (serial: cut
//! the input into coarse chunks at Rabin-fingerprint anchors) -> FragmentRefine (parallel: cut
//! them into fine chunks) -> Deduplicate (parallel: SHA-1 each chunk, look it up in a shared
//! hash table under per-bucket mutexes) -> Compress (parallel: gzip new chunks) -> Reorder
//! (serial: write the output in order). `-n N` gives each parallel stage N threads, so 8 threads
//! means 3 x 8 + 2 = 26 (our `default_threads`; a scenario's `threads` counts all of them).
//! Working set unbounded; chunk buffers are malloc'd and freed per chunk, large ones by mmap.
//!
//! **Seed 000 numbers**: 1761 TLB-shootdown IPIs/s/vCPU solo (section 3.1.1), the highest of the
//! suite; Table 1 (corun): TLB 42.55% of CPU, lock spinning 35.82% — on the futex-queue lock and
//! on the mm semaphore's wait-queue lock (section 3.1.1); section 4.1.1: dedup "induces
//! significant thread wake-ups by fine-grained communication"; section 4.1.3: "varying CPU
//! consumption".
//!
//! **Model**: the five stages, queues of 20 items (assumed, as the `pipeline` workload's), one
//! 128 KiB buffer per item in Compress (the compressed output; its munmap is the shootdown) and
//! one hash-table critical section of 2 us per item in Deduplicate over 16 bucket mutexes (both
//! assumed). TLB calibration: each munmap interrupts the 7 other vCPUs, so 1761 IPIs/s/vCPU on 8
//! vCPUs is 1761 x 8 / 7 = 2013 munmaps/s; with one per item and the 8 vCPUs busy, an item costs
//! 8 / 2013 s = 3.97 ms of CPU, of which ~3% is kernel and IPI work, leaving ~3.85 ms of stage
//! work, split (assumed) 250 / 800 / 700 / 1900 / 200 us. The serial Fragment stage then needs
//! half a vCPU at that rate, so it is not the bottleneck. The solo simulation (tests/
//! parsec_calibration.rs) checks the resulting rate.
//!
//! **Progress**: chunks written by the Reorder stage.

use super::{BarrierImpl, Event, Profile, Shape, Stage};
use crate::time::US;

/// Seed 000 section 3.1.1.
pub const SOLO_TLB_IPIS_PER_VCPU: f64 = 1761.0;

pub static PROFILE: Profile = Profile {
    name: "parsec.dedup",
    describe: "PARSEC dedup: 5-stage pipeline (Fragment, FragmentRefine, Deduplicate, Compress, \
               Reorder) joined by queues, one mmap'd buffer per chunk; 1761 TLB IPIs/s/vCPU solo \
               (seed 000 section 3.1.1)",
    progress_unit: "chunks written by the Reorder stage",
    shape: Shape::Pipeline {
        stages: &[
            Stage { name: "Fragment", parallel: false, work: 250 * US, events: &[] },
            Stage { name: "FragmentRefine", parallel: true, work: 800 * US, events: &[] },
            Stage { name: "Deduplicate", parallel: true, work: 700 * US, events: &[(Event::Critical { hold: 2 * US }, 1)] },
            Stage { name: "Compress", parallel: true, work: 1_000 * US, events: &[(Event::Buffer { pages: 32, touch: 900 * US }, 1)] },
            Stage { name: "Reorder", parallel: false, work: 200 * US, events: &[] },
        ],
        queue_capacity: 20,
    },
    mutexes: 16,
    single_threaded: false,
    barrier_impl: BarrierImpl::Pthread,
};

#[cfg(test)]
mod tests {
    use super::super::model_tests::*;
    use super::super::DEDUP;
    use crate::workload::program::Op;

    #[test]
    fn parsec_n_8_is_26_threads_in_five_stages() {
        let program = build_default(&DEDUP);
        assert_eq!(program.threads.len(), 26);
        assert_eq!(program.queues, vec![20; 4]);
        // Thread 0 is Fragment, 1-8 FragmentRefine, 9-16 Deduplicate, 17-24 Compress, 25 Reorder.
        assert!(!flat(&program.threads[0]).iter().any(|op| matches!(op, Op::QueueGet(_))));
        assert_eq!(count(&program.threads[20], |op| matches!(op, Op::Munmap { .. })), 1);
        assert_eq!(count(&program.threads[12], |op| matches!(op, Op::MutexLock(_))), 1);
        assert_eq!(count(&program.threads[25], |op| *op == Op::Progress), 1);
        let munmappers = program.threads.iter().filter(|t| count(t, |op| matches!(op, Op::Munmap { .. })) > 0).count();
        assert_eq!(munmappers, 8);
    }
}
