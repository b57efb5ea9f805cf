//! `npb.cg`: NPB CG, class A — conjugate gradient on a sparse 14,000-row matrix.
//!
//! **Structure**: 15 outer (inverse power) iterations (`niter`, class A; NAS-95-020), each a
//! `conj_grad` of 25 CG iterations (`cgitmax`) and a residual norm. Per CG iteration the
//! OpenMP version runs the sparse matrix-vector product, the p.q dot product, the z/r update
//! with the rho reduction and the p update as worksharing loops, about 4 barriers (assumed
//! from the algorithm; NPB3.3-OMP `CG/cg.f` was not read), so 100 per outer iteration plus ~4
//! for the norm and the outer update: the finest-grained NPB code. Scalar alpha/beta updates
//! are redundant per thread, not a master part.
//!
//! **Serial runtime** (assumed): ~1.5 Gop at ~300 Mop/s (memory-bound sparse products): 5 s.
//! `makea` (matrix generation) is master-only in the model, 0.5 s assumed; one untimed
//! iteration precedes the timed ones as in the source.
//!
//! **Progress**: outer iterations.

use super::{secs, Profile, Region};
use crate::time::MS;

pub static PROFILE: Profile = Profile {
    name: "npb.cg",
    describe: "NPB3.3-OMP CG class A: 15 outer x 25 inner CG iterations, ~4 barriers per inner \
               iteration (104 per outer); ~5 s serial (assumed)",
    progress_unit: "outer iterations",
    steps: 15,
    serial_runtime: secs(5),
    step: &[Region::Parallel { share: 0.96, barriers: 100 }, Region::Parallel { share: 0.04, barriers: 4 }],
    serial: 0.002,
    init: 500 * MS,
    warmup: true,
    verify: 10 * MS,
    imbalance: 0.05,
};
