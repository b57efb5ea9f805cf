//! `parsec.x264`: H.264 video encoding (x264), frame-parallel.
//!
//! **The application** (PARSEC): pipeline parallelism across frames: each thread encodes one
//! frame, and a macroblock row of frame t can be encoded only once the rows of its reference,
//! frame t - 1, that motion vectors may point into are done; the encoder thread of frame t - 1
//! publishes its progress under a mutex and broadcasts a condition variable
//! (x264_frame_cond_broadcast / x264_frame_cond_wait), so a consumer that catches up sleeps
//! in futex_wait and is woken row by row. Working set medium.
//!
//! **Seed 000 numbers**: Table 1 (corun): lock spinning 6.98% of CPU (89.72% of kernel time),
//! TLB 0.08%; section 4.1.2: helped by Resched-DP (wait-queue locks). Its single-threaded
//! version runs in the UP VMs (see x264_single.rs).
//!
//! **Model**: a wavefront of `threads` encoder threads (`Shape::Wavefront`); thread t takes one
//! "row ready" token from thread t - 1 per row it encodes. The frame threads of x264 form a
//! ring whose lags add up to one frame, 1080 / 16 = 68 macroblock rows of the native 1080p
//! input, so each neighbour may be at most 68 / 8 = 9 rows ahead with 8 threads. Rows take
//! 500 us (assumed), exponentially distributed, so consumers catch up with their producers and
//! sleep, and producers that get 9 rows ahead sleep too. TLB activity (~3 IPIs/s/vCPU from
//! Table 1) is ignored.
//!
//! **Progress**: macroblock rows encoded by the newest frame's thread.

use super::{BarrierImpl, Profile, Shape};
use crate::time::US;

/// Macroblock rows of a 1080p frame: 1080 / 16, rounded up.
pub const ROWS_PER_FRAME: usize = 68;
/// Mean encoding time of one macroblock row, assumed.
pub const ROW_WORK: crate::time::Nanos = 500 * US;

pub static PROFILE: Profile = Profile {
    name: "parsec.x264",
    describe: "PARSEC x264: frame-parallel encoding, each thread waiting row by row for its \
               reference frame's thread (mutex + condition variable), 500 us rows",
    progress_unit: "macroblock rows encoded by the newest frame's thread",
    shape: Shape::Wavefront { row_work: ROW_WORK, rows_per_frame: ROWS_PER_FRAME },
    mutexes: 0,
    single_threaded: false,
    barrier_impl: BarrierImpl::Pthread,
};

#[cfg(test)]
mod tests {
    use super::super::model_tests::*;
    use super::super::X264;
    use crate::workload::program::Op;

    #[test]
    fn each_thread_waits_for_the_previous_frames_rows() {
        let program = build_default(&X264);
        assert_eq!(program.threads.len(), 8);
        assert_eq!(program.queues, vec![9; 7]);
        assert!(!flat(&program.threads[0]).iter().any(|op| matches!(op, Op::QueueGet(_))));
        for t in 1..8 {
            let ops = flat(&program.threads[t]);
            assert_eq!(ops[0], Op::QueueGet(t - 1));
        }
        assert_eq!(count(&program.threads[7], |op| *op == Op::Progress), 1);
    }
}
