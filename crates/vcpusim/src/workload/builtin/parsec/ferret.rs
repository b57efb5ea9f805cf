//! `parsec.ferret`: content-based similarity search of images.
//!
//! **The application** (PARSEC): a six-stage pipeline joined by queues: load (serial: read
//! query images) -> segment (image segmentation) -> extract (feature vectors) -> vectorize
//! (the query's signature) -> rank (LSH index search + EMD ranking, the heaviest) -> out
//! (serial: write the results). `-n N` gives each of the four middle stages N threads, so 8
//! threads means 4 x 8 + 2 = 34. Working set unbounded (the image database).
//!
//! **Seed 000 numbers**: 443 TLB-shootdown IPIs/s/vCPU solo (section 3.1.1); Table 1 (corun):
//! TLB 8.5% of CPU (75.9% of kernel time), lock spinning 1.97%; section 4.1.2: helped by both
//! Resched-DP (wait-queue locks) and TLB-Co.
//!
//! **Model**: the six stages, queues of 20 (ferret's native run: `ferret corel lsh queries 50
//! 20 N out`, depth 20). One 128 KiB buffer per query in segment (the segmentation's pixel
//! buffers; the placement is assumed). TLB calibration as for dedup: 443 x 8 / 7 = 506
//! munmaps/s, one per query, so a query costs 8 / 506 s = 15.8 ms of CPU with the 8 vCPUs busy;
//! ~0.5% of that is kernel and IPI work, leaving ~15.7 ms of stage work split (assumed)
//! 400 / 3000 / 2000 / 1500 / 8500 / 300 us, rank the heaviest as in PARSEC's profile.
//!
//! **Progress**: queries written by the out stage.

use super::{BarrierImpl, Event, Profile, Shape, Stage};
use crate::time::US;

/// Seed 000 section 3.1.1.
pub const SOLO_TLB_IPIS_PER_VCPU: f64 = 443.0;

pub static PROFILE: Profile = Profile {
    name: "parsec.ferret",
    describe: "PARSEC ferret: 6-stage pipeline (load, segment, extract, vectorize, rank, out) \
               joined by queues of 20, one mmap'd buffer per query; 443 TLB IPIs/s/vCPU solo \
               (seed 000 section 3.1.1)",
    progress_unit: "queries written by the out stage",
    shape: Shape::Pipeline {
        stages: &[
            Stage { name: "load", parallel: false, work: 400 * US, events: &[] },
            Stage { name: "segment", parallel: true, work: 1_500 * US, events: &[(Event::Buffer { pages: 32, touch: 1_500 * US }, 1)] },
            Stage { name: "extract", parallel: true, work: 2_000 * US, events: &[] },
            Stage { name: "vectorize", parallel: true, work: 1_500 * US, events: &[] },
            Stage { name: "rank", parallel: true, work: 8_500 * US, events: &[] },
            Stage { name: "out", parallel: false, work: 300 * US, events: &[] },
        ],
        queue_capacity: 20,
    },
    mutexes: 0,
    single_threaded: false,
    barrier_impl: BarrierImpl::Pthread,
};

#[cfg(test)]
mod tests {
    use super::super::model_tests::*;
    use super::super::FERRET;
    use crate::workload::program::Op;

    #[test]
    fn parsec_n_8_is_34_threads_in_six_stages() {
        let program = build_default(&FERRET);
        assert_eq!(program.threads.len(), 34);
        assert_eq!(program.queues, vec![20; 5]);
        let munmappers: Vec<usize> = (0..34).filter(|t| count(&program.threads[*t], |op| matches!(op, Op::Munmap { .. })) > 0).collect();
        assert_eq!(munmappers, (1..=8).collect::<Vec<_>>());
        assert_eq!(count(&program.threads[33], |op| *op == Op::Progress), 1);
    }
}
