//! `spec2000.bzip2`: 256.bzip2, compressing and decompressing three reference inputs
//! (`input.source`, `input.graphic`, `input.program`) in memory.
//!
//! **Runtime**: SPEC's reference time for 256.bzip2 is 1500 s; a 2.33 GHz Harpertown core scores
//! a ratio of roughly 2,000 (assumed, as for gcc), so one copy runs ~75 s. bzip2 works on
//! in-memory buffers allocated once, so CPU work is all there is to model.

use super::Profile;
use crate::time::SEC;

pub static PROFILE: Profile = Profile {
    name: "spec2000.bzip2",
    describe: "SPEC CPU2000 256.bzip2 rate copies: independent, no synchronization, ~75 s of CPU \
               each (reference time 1500 s / assumed ratio 2000)",
    runtime: 75 * SEC,
};
