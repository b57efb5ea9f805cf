//! `npb.dc`: NPB DC, class A — data cube operator over 1,000,000 tuples of 10 attributes.
//!
//! **Structure**: DC computes all 2^10 - 1 = 1023 group-by views of the cube and writes each
//! to a file; the OpenMP version hands views to threads, which work independently and join at
//! the end: one region, one barrier. **Simplified**: the model has no blocking I/O, so each
//! view's output is one write(2) of 50 us kernel CPU (page-cache copy, assumed) and disk waits,
//! page-cache pressure and the file system are not modelled: DC's I/O-bound character is
//! missing, and its slowdowns should be read as those of an independent-tasks code.
//!
//! **Serial runtime** (assumed): 30 s of computation.
//!
//! **Progress**: 1 when done.

use super::{secs, Profile, Region};
use crate::time::{MS, US};

pub static PROFILE: Profile = Profile {
    name: "npb.dc",
    describe: "NPB3.3-OMP DC class A: 1023 views computed independently by the threads, one \
               write per view, one join (disk I/O not modelled); ~30 s serial (assumed)",
    progress_unit: "runs",
    steps: 1,
    serial_runtime: secs(30),
    step: &[Region::Io { share: 1.0, writes: 1023, write_work: 50 * US }],
    serial: 0.0,
    init: 300 * MS,
    warmup: false,
    verify: 10 * MS,
    imbalance: 0.05,
};
