//! `npb.ft`: NPB FT, class A — 3-D FFT PDE solver on a 256 x 256 x 128 grid.
//!
//! **Structure**: 6 iterations (`niter_default`, class A; NAS-95-020; also the `Iterations : 6`
//! line of an NPB3.3-OMP FT run), each `evolve`, the inverse 3-D FFT as three 1-D FFT passes
//! (`cffts1/2/3`, one parallel loop each) and a checksum reduction: 5 barriers per iteration
//! (assumed from the algorithm; `FT/ft.f` not read). Initial conditions and the FFT twiddle
//! setup precede it, with one untimed FFT.
//!
//! **Work shares** (assumed): evolve 15%, the three FFT passes 28/28/27%, checksum 2%.
//!
//! **Serial runtime** (assumed): ~7.2 Gop at ~800 Mop/s: 9 s. Init 0.5 s, assumed.
//!
//! **Progress**: iterations.

use super::{secs, Profile, Region};
use crate::time::MS;

pub static PROFILE: Profile = Profile {
    name: "npb.ft",
    describe: "NPB3.3-OMP FT class A: 6 iterations of evolve + three 1-D FFT passes + checksum, \
               5 barriers each; ~9 s serial (assumed)",
    progress_unit: "iterations",
    steps: 6,
    serial_runtime: secs(9),
    step: &[
        Region::Parallel { share: 0.15, barriers: 1 },
        Region::Parallel { share: 0.28, barriers: 1 },
        Region::Parallel { share: 0.28, barriers: 1 },
        Region::Parallel { share: 0.27, barriers: 1 },
        Region::Parallel { share: 0.02, barriers: 1 },
    ],
    serial: 0.002,
    init: 500 * MS,
    warmup: true,
    verify: 10 * MS,
    imbalance: 0.05,
};
