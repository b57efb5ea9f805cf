//! `spec2000.gcc`: 176.gcc, the GNU C compiler compiling five preprocessed sources
//! (`166.i`, `200.i`, `expr.i`, `integrate.i`, `scilab.i`: the reference input).
//!
//! **Runtime**: SPEC's reference time for 176.gcc is 1100 s (on the Sun Ultra 5_10 reference
//! machine; a SPEC ratio is 100 x reference time / runtime). A 2.33 GHz Harpertown core scores a
//! 176.gcc ratio of roughly 2,500 (assumed from published CINT2000 results of Xeon 5400-series
//! machines, not checked per benchmark here), so one copy runs ~44 s.
//!
//! **Not modelled**: gcc's heavy memory allocation (obstacks, mmap'd arenas) and page faults —
//! see the module docs for why no mmap/munmap is emitted.

use super::Profile;
use crate::time::SEC;

pub static PROFILE: Profile = Profile {
    name: "spec2000.gcc",
    describe: "SPEC CPU2000 176.gcc rate copies: independent, no synchronization, ~44 s of CPU \
               each (reference time 1100 s / assumed ratio 2500)",
    runtime: 44 * SEC,
};
