//! `spec2006.mcf`: 429.mcf, single-depot vehicle scheduling (network simplex).
//!
//! **Runtime**: SPEC CPU2006 reference time 9120 s; at the assumed ratio of 20 (spec2006/mod.rs)
//! one copy runs 456 s on one E5645 core. Memory-bound (pointer chasing); its memory stalls are left to the contention model.

use super::Profile;

pub static PROFILE: Profile = Profile {
    name: "spec2006.mcf",
    describe: "SPEC CPU2006 429.mcf single-thread copies: CPU only, no synchronization, reference time 9120 s \
               at an assumed ratio of 20",
    reference_s: 9120,
};
