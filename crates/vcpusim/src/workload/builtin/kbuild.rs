//! `kbuild`: a parallel Linux kernel build, `make -j N` with N = vCPUs, as the KVM paravirtual
//! feature work runs it in each guest.
//!
//! **Not a new model**: a kernel build is what `mosbench.gmake` already models (mosbench/gmake.rs:
//! make's job slots each running a chain of short processes, sh, gcc, cc1 and as, with their
//! fork/exec/exit, page faults and frees under `zone->lock` and `lru_lock`, file creation under
//! a directory's `d_lock` and wake-ups under `rq->lock`; 400 ms of CPU per compile job, 15.4% of
//! it in the kernel from a `perf stat` of `make -j24 bzImage`). `kbuild` runs the same program
//! ([`build_make`]) with the same parameters; only the default job count differs: `-j` = vCPUs
//! (`make -j$(nproc)`, the usual invocation; assumed for the PV papers, which do not always
//! say), where MOSBENCH's driver uses `-j 2 x cores`.
//!
//! Each process of a job is a separate address space, so its exit (`exit_mmap`) flushes only the
//! CPU it runs on and the model has no TLB shootdown for it (mosbench/mod.rs explains why no
//! model there uses `Munmap`).
//!
//! **Progress**: compile jobs finished (all make job slots), as `mosbench.gmake`.

use super::mosbench::gmake::{build_make, Gmake, PROGRESS_UNIT};
use crate::params::{ParamSpec, Params};
use crate::workload::program::Program;
use crate::workload::Workload;

pub struct Kbuild;

impl Workload for Kbuild {
    fn name(&self) -> &'static str {
        "kbuild"
    }
    fn describe(&self) -> &'static str {
        "parallel kernel build, make -j vCPUs: mosbench.gmake's model (fork/exec/exit of sh, gcc, cc1 \
         and as, page faults and frees under zone->lock and lru_lock, d_lock, rq->lock; 400 ms per \
         job, 15.4% kernel) with one job slot per vCPU"
    }
    fn progress_unit(&self) -> &'static str {
        PROGRESS_UNIT
    }
    fn params(&self) -> Vec<ParamSpec> {
        Gmake.params()
    }
    fn default_threads(&self, vcpus: u32) -> u32 {
        vcpus
    }
    fn build(&self, threads: u32, params: &Params) -> Result<Program, String> {
        build_make(self.name(), threads, 1, params)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::builtin::mosbench::model_tests::{mean_time, sections};
    use crate::workload::builtin::test_support::*;

    #[test]
    fn kbuild_is_gmakes_program_with_one_slot_and_one_rq_lock_per_vcpu() {
        assert_defaults_parse(&Kbuild);
        let params = Params::defaults(&Kbuild.params());
        let program = build_valid(&Kbuild, 8, &params);
        let gmake = Gmake.build(8, &params).expect("gmake builds");
        // Same jobs as gmake's: the same CPU, kernel time and lock sections per job.
        let (ours, theirs) = (loop_body(&program.threads[5]), loop_body(&gmake.threads[5]));
        assert_eq!(mean_time(ours), mean_time(theirs));
        for lock in 0..3 {
            assert_eq!(sections(ours, lock), sections(theirs, lock));
        }
        // Same job bodies as gmake's, but 8 rq locks (one per vCPU) instead of 4.
        assert_eq!(program.kernel_locks.len(), 3 + 8);
        assert_eq!(gmake.kernel_locks.len(), 3 + 4);
        assert_eq!(Kbuild.default_threads(8), 8);
        let err = Kbuild.build(0, &params).unwrap_err();
        assert!(err.starts_with("kbuild needs at least 1"), "{err}");
    }
}
