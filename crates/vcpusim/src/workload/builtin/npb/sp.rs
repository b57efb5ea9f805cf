//! `npb.sp`: NPB SP, class A — scalar pentadiagonal ADI solver on a 64^3 grid.
//!
//! **Structure** (NPB3.3-OMP `SP/sp.f`, `SP/rhs.f`, `SP/x_solve.f`): 400 ADI iterations
//! (`niter_default`, class A; NAS-95-020), each `adi`: `compute_rhs` (one parallel region:
//! barriers after the forcing copy, the y fluxes, the z fluxes, and the join: 4), then
//! `txinvr`, `x_solve`, `ninvr`, `y_solve`, `pinvr`, `z_solve`, `tzetar`, `add`, each an
//! `!$omp parallel do` over k (or j) planes whose join is a barrier: 12 barriers per
//! iteration. Each directional solve runs the Thomas algorithm on whole lines inside one thread,
//! so there is no finer synchronization. The master alone runs only the loop control and the
//! `mod(step, 20)` print between regions: `serial` = 0.2%, assumed.
//!
//! **Work shares** (assumed): rhs 30%, txinvr 3%, x_solve 18%, ninvr 2%, y_solve 18%, pinvr 2%,
//! z_solve 22% (strided access), tzetar 3%, add 2%.
//!
//! **Serial runtime** (assumed): SP class A is 85.0 Gop (`sp.f`: 400 x (881.174 n^3 -
//! 4683.91 n^2 + 11484.5 n - 19272.4), n = 64); at an assumed 700 Mop/s on one 2.33 GHz
//! Harpertown core, 121 s (about 30 s with 4 threads). Initialization (`set_constants`,
//! `exact_rhs`, `initialize`) 0.3 s and verification 0.1 s of master work, assumed.
//!
//! **Progress**: ADI iterations.

use super::{secs, Profile, Region};
use crate::time::MS;

pub static PROFILE: Profile = Profile {
    name: "npb.sp",
    describe: "NPB3.3-OMP SP class A: 400 ADI iterations, each compute_rhs + x/y/z solves and \
               inversions as parallel loops, 12 barriers per iteration; ~121 s serial",
    progress_unit: "ADI iterations",
    steps: 400,
    serial_runtime: secs(121),
    step: &[
        Region::Parallel { share: 0.30, barriers: 4 },
        Region::Parallel { share: 0.03, barriers: 1 },
        Region::Parallel { share: 0.18, barriers: 1 },
        Region::Parallel { share: 0.02, barriers: 1 },
        Region::Parallel { share: 0.18, barriers: 1 },
        Region::Parallel { share: 0.02, barriers: 1 },
        Region::Parallel { share: 0.22, barriers: 1 },
        Region::Parallel { share: 0.03, barriers: 1 },
        Region::Parallel { share: 0.02, barriers: 1 },
    ],
    serial: 0.002,
    init: 300 * MS,
    warmup: true,
    verify: 100 * MS,
    imbalance: 0.05,
};
