//! `spec2006.hmmer`: 456.hmmer, protein sequence search with profile hidden Markov models.
//!
//! **Runtime**: SPEC CPU2006 reference time 9330 s; at the assumed ratio of 20 (spec2006/mod.rs)
//! one copy runs 466 s on one E5645 core. Compute-bound, small working set.

use super::Profile;

pub static PROFILE: Profile = Profile {
    name: "spec2006.hmmer",
    describe: "SPEC CPU2006 456.hmmer single-thread copies: CPU only, no synchronization, reference time 9330 s \
               at an assumed ratio of 20",
    reference_s: 9330,
};
