//! `spec2006.h264ref`: 464.h264ref, H.264/AVC video encoding of two reference sequences.
//!
//! **Runtime**: SPEC CPU2006 reference time 22130 s; at the assumed ratio of 20 (spec2006/mod.rs)
//! one copy runs 1106 s on one E5645 core. Compute-bound.

use super::Profile;

pub static PROFILE: Profile = Profile {
    name: "spec2006.h264ref",
    describe: "SPEC CPU2006 464.h264ref single-thread copies: CPU only, no synchronization, reference time 22130 s \
               at an assumed ratio of 20",
    reference_s: 22130,
};
