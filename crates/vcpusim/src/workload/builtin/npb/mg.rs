//! `npb.mg`: NPB MG, class A — V-cycle multigrid on a 256^3 grid.
//!
//! **Structure**: 4 iterations (`nit`, class A; NAS-95-020), each a V-cycle down and up 8
//! levels: `rprj3`, `interp`, `resid`, `psinv`, each a parallel loop followed by `comm3`
//! (boundary exchange), i.e. roughly 3 barriers per level per direction plus the residual
//! norm: ~48 barriers per iteration (assumed from the algorithm; `MG/mg.f` not read). Work
//! shrinks 8x per level, so the fine levels hold nearly all of it: modelled as 12 barriers
//! sharing 90% (fine levels) and 36 sharing 10% (coarse levels, short phases).
//!
//! **Serial runtime** (assumed): ~3.9 Gop at ~900 Mop/s: 4.5 s. `zran3` (the random input,
//! largely serial in the reference code) and setup: 0.5 s of master work, assumed.
//!
//! **Progress**: V-cycle iterations.

use super::{Profile, Region};
use crate::time::MS;

pub static PROFILE: Profile = Profile {
    name: "npb.mg",
    describe: "NPB3.3-OMP MG class A: 4 V-cycles over 8 levels, ~48 barriers per cycle, coarse \
               levels short; ~4.5 s serial (assumed)",
    progress_unit: "V-cycle iterations",
    steps: 4,
    serial_runtime: 4_500 * MS,
    step: &[Region::Parallel { share: 0.90, barriers: 12 }, Region::Parallel { share: 0.10, barriers: 36 }],
    serial: 0.002,
    init: 500 * MS,
    warmup: true,
    verify: 10 * MS,
    imbalance: 0.05,
};
