//! `spec2006.libquantum`: 462.libquantum, simulation of Shor's factoring algorithm.
//!
//! **Runtime**: SPEC CPU2006 reference time 20720 s; at the assumed ratio of 20 (spec2006/mod.rs)
//! one copy runs 1036 s on one E5645 core. Streams through memory; bandwidth contention is left to the contention model.

use super::Profile;

pub static PROFILE: Profile = Profile {
    name: "spec2006.libquantum",
    describe: "SPEC CPU2006 462.libquantum single-thread copies: CPU only, no synchronization, reference time 20720 s \
               at an assumed ratio of 20",
    reference_s: 20720,
};
