//! `npb.ua`: NPB UA, class A — unstructured adaptive mesh (heat equation with a moving ball).
//!
//! **Structure**: 200 time steps (class A; NPB 3.1+ UA spec, Feng et al. NAS-04-006 not read),
//! the mesh adapted every 5th step; each step runs the conjugate-gradient diffusion solve
//! and convection over irregularly indexed elements as many small parallel loops: ~40 barriers
//! per step, assumed (the source was not read), which makes UA one of the finer-grained
//! codes. Mesh adaptation is not modelled separately.
//!
//! **Serial runtime** (assumed): 60 s. Init 0.3 s, verify 0.1 s, assumed.
//!
//! **Progress**: time steps.

use super::{secs, Profile, Region};
use crate::time::MS;

pub static PROFILE: Profile = Profile {
    name: "npb.ua",
    describe: "NPB3.3-OMP UA class A: 200 time steps of ~40 small parallel loops each (assumed); \
               ~60 s serial (assumed)",
    progress_unit: "time steps",
    steps: 200,
    serial_runtime: secs(60),
    step: &[Region::Parallel { share: 1.0, barriers: 40 }],
    serial: 0.002,
    init: 300 * MS,
    warmup: true,
    verify: 100 * MS,
    imbalance: 0.05,
};
