//! `parsec.swaptions`: prices a portfolio of swaptions with the Heath-Jarrow-Morton framework
//! (Monte Carlo).
//!
//! **The application** (PARSEC): data-parallel; each thread prices its own swaptions, with no
//! synchronization between threads in the loop; working set medium. Each swaption allocates and
//! frees its simulation arrays.
//!
//! **Seed 000 numbers**: section 3.1.1 counts it among the communication-intensive applications
//! (amplified kernel time); Table 1 (corun): TLB 0.81% of CPU (13.11% of kernel time), lock
//! spinning 5.24% (84.79%).
//!
//! **Model**: computation in 5 ms blocks (assumed) and, from Table 1's TLB share, 26
//! IPIs/s/vCPU (`tlb_rate_from_table1`), i.e. 26 / 7 = 3.8 munmaps per second per thread: one
//! 128 KiB buffer every 53 blocks (265 ms). Table 1's lock spinning has no modelled source beyond
//! the mm semaphore's wait lock, which these rare munmaps seldom contend: a known gap.
//!
//! **Progress**: 5 ms simulation blocks, all threads.

use super::{BarrierImpl, Event, Profile, Shape, Spread};
use crate::time::MS;

/// Seed 000 Table 1: % of total CPU in TLB shootdown, corun.
pub const TABLE1_TLB_SHARE: f64 = 0.81;

pub static PROFILE: Profile = Profile {
    name: "parsec.swaptions",
    describe: "PARSEC swaptions: independent Monte Carlo pricing per thread, a buffer munmap every \
               265 ms (seed 000 Table 1's TLB share)",
    progress_unit: "5 ms simulation blocks (all threads)",
    shape: Shape::Workers {
        work: 5 * MS,
        spread: Spread::Exp,
        events: &[],
        rare: Some((Event::Buffer { pages: 32, touch: 0 }, 53)),
        barrier: None,
    },
    mutexes: 0,
    single_threaded: false,
    barrier_impl: BarrierImpl::Pthread,
};

#[cfg(test)]
mod tests {
    use super::super::model_tests::*;
    use super::super::{tlb_rate_from_table1, SWAPTIONS};
    use super::*;

    #[test]
    fn tlb_rate_matches_the_table_1_estimate() {
        build_default(&SWAPTIONS);
        let estimate = tlb_rate_from_table1(TABLE1_TLB_SHARE);
        let rate = workers_tlb_rate(&PROFILE, 8.0, 20_000.0);
        assert!((rate - estimate).abs() / estimate < 0.05, "{rate} vs {estimate}");
    }
}
