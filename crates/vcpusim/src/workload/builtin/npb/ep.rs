//! `npb.ep`: NPB EP, class A — embarrassingly parallel Gaussian deviates (2^28 pairs).
//!
//! **Structure**: one parallel region in which every thread generates its share of the
//! batches and tallies them, and one reduction at the end (NAS-95-020: no communication but
//! the final sums): a single "step" of one barrier. It is the benchmark Figure 6 of seed 004
//! expects to suffer least from asynchronous vCPU scheduling.
//!
//! **Serial runtime** (assumed): 2^29 random numbers at ~25 M/s on a 2.33 GHz core: 21 s.
//!
//! **Progress**: 1 when done.

use super::{secs, Profile, Region};
use crate::time::MS;

pub static PROFILE: Profile = Profile {
    name: "npb.ep",
    describe: "NPB3.3-OMP EP class A: one embarrassingly parallel region and a final reduction; \
               ~21 s serial (assumed)",
    progress_unit: "runs",
    steps: 1,
    serial_runtime: secs(21),
    step: &[Region::Parallel { share: 1.0, barriers: 1 }],
    serial: 0.0,
    init: 10 * MS,
    warmup: false,
    verify: 10 * MS,
    imbalance: 0.02,
};
