//! `npb.is`: NPB IS, class A — bucket sort of 2^23 integer keys.
//!
//! **Structure**: 10 ranking iterations (`MAX_ITERATIONS`; NAS-95-020), each: count keys per
//! bucket in each thread, a prefix sum over the threads' counts, and the scatter/ranking: about
//! 3 barriers (assumed from the algorithm; `IS/is.c` not read). Key generation (`create_seq`)
//! and the final full verification (`full_verify`) are modelled as master work, 0.3 s and
//! 0.1 s (assumed; the 3.3 OpenMP version may parallelize the generation).
//!
//! **Serial runtime** (assumed): 83.9 M keys ranked at ~50 M keys/s: 1.7 s.
//!
//! **Progress**: ranking iterations.

use super::{Profile, Region};
use crate::time::MS;

pub static PROFILE: Profile = Profile {
    name: "npb.is",
    describe: "NPB3.3-OMP IS class A: 10 bucket-sort rankings, ~3 barriers each; ~1.7 s serial \
               (assumed), key generation and full verification by the master",
    progress_unit: "ranking iterations",
    steps: 10,
    serial_runtime: 1_700 * MS,
    step: &[Region::Parallel { share: 1.0, barriers: 3 }],
    serial: 0.002,
    init: 300 * MS,
    warmup: true,
    verify: 100 * MS,
    imbalance: 0.05,
};
