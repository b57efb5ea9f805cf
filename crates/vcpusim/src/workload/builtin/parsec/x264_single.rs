//! `parsec.x264-single`: the single-threaded x264 that runs in each UP VM of seed 000
//! section 4.1.2 (Figure 8).
//!
//! **The application**: x264 encoding with one thread: no synchronization, no IPIs. Seed 000
//! section 4.1.2: each UP VM "is entitled to monopolize a single pCPU", and any slowdown on a
//! dedicated pCPU would come from shared caches and memory bandwidth, which are not modelled.
//!
//! **Model**: one thread (`default_threads` is 1 whatever the VM's vCPU count) encoding
//! macroblock rows of the same mean length as parsec.x264's, exponentially distributed. More
//! threads, if a scenario asks for them, are independent encoders.
//!
//! **Progress**: macroblock rows encoded.

use super::{BarrierImpl, Profile, Shape, Spread};

pub static PROFILE: Profile = Profile {
    name: "parsec.x264-single",
    describe: "PARSEC x264, single-threaded: the sequential workload of seed 000's UP VMs \
               (section 4.1.2); pure computation, rows as long as parsec.x264's",
    progress_unit: "macroblock rows encoded",
    shape: Shape::Workers { work: super::x264::ROW_WORK, spread: Spread::Exp, events: &[], rare: None, barrier: None },
    mutexes: 0,
    single_threaded: true,
    barrier_impl: BarrierImpl::Pthread,
};

#[cfg(test)]
mod tests {
    use super::super::model_tests::*;
    use super::super::X264_SINGLE;
    use crate::workload::builtin::test_support::loop_body;
    use crate::workload::program::{Dist, Op};
    use crate::workload::Workload;

    #[test]
    fn one_thread_that_only_computes() {
        assert_eq!(X264_SINGLE.default_threads(1), 1);
        assert_eq!(X264_SINGLE.default_threads(8), 1);
        let program = build_default(&X264_SINGLE);
        assert_eq!(loop_body(&program.threads[0]), [Op::Compute(Dist::Exp { mean: 500_000 }), Op::Progress]);
    }
}
