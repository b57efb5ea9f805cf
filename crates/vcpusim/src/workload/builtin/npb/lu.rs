//! `npb.lu`: NPB LU, class A — SSOR solver of the Navier-Stokes equations on a 64^3 grid.
//!
//! **Structure** (NPB3.3-OMP `LU/ssor.f`, `LU/blts.f`, `LU/rhs.f`): 250 SSOR iterations
//! (`itmax`, class A; NAS-95-020). Each is one parallel region followed by `call rhs`, another:
//! - scale `rsd` by dt (`!$omp do nowait`), reset the `isync` flags, `!$omp barrier`;
//! - the lower-triangular sweep `do k = 2, nz-1` (62 planes): `jacld(k)` then `blts`, which
//!   starts with `sync_left` (busy-wait `do while (isync(iam-1) .eq. 0) ... !$omp flush` until
//!   the left neighbour finished plane k, then reset its flag) and ends with `sync_right` (wait
//!   until the own flag was consumed, set it): a pipelined wavefront with point-to-point flag
//!   synchronization between neighbouring threads, 62 hand-overs per sweep; `!$omp barrier`;
//! - the upper sweep `do k = nz-1, 2, -1` (`jacu`, `buts`), mirrored: thread t waits for
//!   t + 1 (the mirror is assumed from the reversed j loop; `buts.f` was not read); barrier;
//! - the update of `u` (`!$omp do nowait`) and the join of `!$omp end parallel`;
//! - `rhs`: one parallel region, `!$omp do` (barrier), x fluxes `nowait`, y fluxes (barrier),
//!   z fluxes and the join: 3 barriers.
//!
//! So 7 barriers of all threads and 2 x 62 flag hand-overs per neighbour pair per iteration;
//! `l2norm` runs only every `inorm` = 250 steps (class A), i.e. once. What the master runs
//! alone per iteration: loop control, the `mod(istep, 20)` progress print and the residual
//! check against `tolrsd` — microseconds; `serial` = 0.2% is an assumed upper estimate.
//!
//! **Work shares** (assumed, typical of LU's own `timer.flag` profile: the two sweeps dominate):
//! rsd scaling 1%, lower sweep 36%, upper sweep 36%, add 2%, rhs 25%.
//!
//! **Serial runtime** (assumed): LU class A is 119.3 Gop (the Mop formula in `lu.f`: 250 x
//! (1984.77 n^3 - 10923.3 n^2 + 27770.9 n - 144010), n = 64); at an assumed 1,000 Mop/s on one
//! 2.33 GHz Harpertown core that is 119 s, so a 4-thread run takes about 30 s solo.
//! Initialization (`read_input`, `domain`, `setcoeff`, `setbv`, `setiv`, `erhs`) is modelled
//! as 0.3 s of master work and error/pintgr/verify as 0.1 s (both assumed: how much of it the
//! 3.3-OMP version parallelizes was not checked).
//!
//! **Progress**: SSOR iterations.

use super::{secs, Profile, Region};
use crate::time::MS;

/// k = 2 .. nz - 1 for nz = 64.
pub const PLANES: u32 = 62;

pub static PROFILE: Profile = Profile {
    name: "npb.lu",
    describe: "NPB3.3-OMP LU class A: 250 SSOR iterations, each a pipelined lower and upper \
               wavefront sweep over 62 planes with point-to-point spin flags between neighbour \
               threads (blts/buts sync_left/sync_right) and 7 barriers; ~119 s serial",
    progress_unit: "SSOR iterations",
    steps: 250,
    serial_runtime: secs(119),
    step: &[
        Region::Parallel { share: 0.01, barriers: 1 },
        Region::Wavefront { share: 0.36, planes: PLANES, reverse: false },
        Region::Wavefront { share: 0.36, planes: PLANES, reverse: true },
        Region::Parallel { share: 0.02, barriers: 1 },
        Region::Parallel { share: 0.25, barriers: 3 },
    ],
    serial: 0.002,
    init: 300 * MS,
    warmup: true,
    verify: 100 * MS,
    imbalance: 0.05,
};
