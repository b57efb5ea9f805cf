//! `npb.bt`: NPB BT, class A — block-tridiagonal ADI solver on a 64^3 grid.
//!
//! **Structure**: 200 iterations (class A; NAS-95-020), each `adi`: `compute_rhs` (one
//! parallel region, 4 barriers as in SP's), `x_solve`, `y_solve`, `z_solve` and `add`, each a
//! parallel loop over planes ending in its join: 8 barriers per iteration (by analogy with
//! NPB3.3-OMP SP, whose source was read; BT's was not). Master-only part per step as SP's.
//!
//! **Work shares** (assumed): rhs 25%, x/y/z solves 24/24/25% (5x5 block solves dominate), add 2%.
//!
//! **Serial runtime** (assumed): 168.3 Gop (BT's Mop formula: 200 x (3478.8 n^3 - 17655.7 n^2
//! + 28023.7 n), n = 64) at an assumed 1,000 Mop/s: 168 s. Init 0.3 s, verify 0.1 s, assumed.
//!
//! **Progress**: ADI iterations.

use super::{secs, Profile, Region};
use crate::time::MS;

pub static PROFILE: Profile = Profile {
    name: "npb.bt",
    describe: "NPB3.3-OMP BT class A: 200 ADI iterations, rhs + x/y/z block-tridiagonal solves as \
               parallel loops, 8 barriers per iteration; ~168 s serial (assumed)",
    progress_unit: "ADI iterations",
    steps: 200,
    serial_runtime: secs(168),
    step: &[
        Region::Parallel { share: 0.25, barriers: 4 },
        Region::Parallel { share: 0.24, barriers: 1 },
        Region::Parallel { share: 0.24, barriers: 1 },
        Region::Parallel { share: 0.25, barriers: 1 },
        Region::Parallel { share: 0.02, barriers: 1 },
    ],
    serial: 0.002,
    init: 300 * MS,
    warmup: true,
    verify: 100 * MS,
    imbalance: 0.05,
};
