//! `spec2006.sjeng`: 458.sjeng, chess game-tree search.
//!
//! **Runtime**: SPEC CPU2006 reference time 12100 s; at the assumed ratio of 20 (spec2006/mod.rs)
//! one copy runs 605 s on one E5645 core. Compute-bound, branchy.

use super::Profile;

pub static PROFILE: Profile = Profile {
    name: "spec2006.sjeng",
    describe: "SPEC CPU2006 458.sjeng single-thread copies: CPU only, no synchronization, reference time 12100 s \
               at an assumed ratio of 20",
    reference_s: 12100,
};
