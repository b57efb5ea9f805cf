//! `spec2006.bzip2`: 401.bzip2, in-memory compression and decompression of six reference inputs.
//!
//! **Runtime**: SPEC CPU2006 reference time 9650 s; at the assumed ratio of 20 (spec2006/mod.rs)
//! one copy runs 482 s on one E5645 core. Its buffers are allocated once: CPU work is all there is.

use super::Profile;

pub static PROFILE: Profile = Profile {
    name: "spec2006.bzip2",
    describe: "SPEC CPU2006 401.bzip2 single-thread copies: CPU only, no synchronization, reference time 9650 s \
               at an assumed ratio of 20",
    reference_s: 9650,
};
