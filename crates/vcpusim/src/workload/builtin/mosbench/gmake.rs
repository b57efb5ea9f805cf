//! `mosbench.gmake`: MOSBENCH's parallel build of the Linux kernel.
//!
//! **The application** (MOSBENCH gmake/__init__.py): `make -C <linux-2.6.35-rc5> O=<tmpfs>
//! -j <2 x cores> vmlinux` with `make defconfig`'s x86_64 configuration, after `init/main.o` was
//! built so the serial start is out of the way; the whole source tree is prefetched, so there
//! are virtually no disk reads. Each of the `-j` job slots runs one compile after another, and a
//! compile is a chain of short processes: make forks `/bin/sh -c`, which runs the gcc driver,
//! which runs `cc1` and then `as`: four fork/exec/exit lifetimes per object file, each faulting
//! in its memory page by page and freeing it at exit, creating and removing files in shared
//! directories (gcc's `/tmp/cc*.s`, the object and `.cmd` files) and waking its parent when it
//! exits. Seed 002 section 6.1: gmake "is known to intensively exercise the kernel to incur LHP
//! problems"; Table 4a profiles its spinlock waits in four kernel components (page reclaim, page
//! allocator, dentry, runqueue); Figure 7: its yields are mostly pause-loop exits.
//!
//! **Numbers**:
//! - job slots: `2 x vCPUs` threads (`-j cores*2`, MOSBENCH gmake/__init__.py);
//! - 400 ms of CPU per compile job (assumed: a defconfig build of a few thousand objects takes a
//!   single core of the seed's 2.4 GHz Xeon E5645 on the order of 15-20 minutes);
//! - 15.4% of it in the kernel: a published `perf stat` of a parallel kernel build (`make -s
//!   -j24 bzImage` on 24 hardware threads: user 1,513 s, system 275 s; gist.github.com/mcgrof/
//!   94dbf0185f0d69f7879639939e795806). MOSBENCH's own share is not in our sources;
//! - 8,192 pages (32 MiB) faulted in and freed per job, 2,048 per process (assumed: cc1's
//!   footprint on a kernel source file);
//! - 37 `d_lock` sections per process, spread through the second half of its run (assumed: the
//!   files it creates and removes, and lookups in shared directories (include/, the object
//!   tree) that take a dentry's lock);
//! - 10 wake-ups per process under a vCPU's rq lock (assumed: pipe reads and writes between
//!   make, the shell and the compiler's stages, e.g. cc1 to as when gcc runs with `-pipe`;
//!   whether the kernel build passes `-pipe` was not checked);
//! - fork 60 us, exec 100 us, exit 30 us of unlocked kernel work (assumed), plus the rq-lock
//!   sections of `wake_up_new_task` (fork) and `try_to_wake_up` of the parent (exit);
//! - the rest of the kernel share is the faults' own work (zeroing, page-table updates, header
//!   reads through the page cache), spread over the fault batches (`fault_work`, computed).
//!
//! **Progress**: compile jobs finished (all slots). A build is the `iterations` target.

use super::{
    fault_batch, fault_in, fault_kernel, free_kernel, free_pages, kernel, section, KernelLocks, BATCH_PAGES, DENTRY_HOLD, RQ_HOLD,
};
use crate::hardware::costs::Costs;
use crate::params::{ParamSpec, Params};
use crate::time::{format_duration, Nanos, MS, US};
use crate::vmexit::KernelFn;
use crate::workload::program::{Op, Program};
use crate::workload::Workload;

pub struct Gmake;

pub const PROGRESS_UNIT: &str = "compile jobs finished (all make job slots)";
/// CPU time of one compile job (assumed, module doc).
pub const JOB_CPU: Nanos = 400 * MS;
/// Share of a job's CPU in the kernel (perf stat of a parallel kernel build, module doc).
pub const KERNEL_SHARE: f64 = 0.154;
/// Processes per compile job: sh, gcc, cc1, as.
pub const PROCESSES: u64 = 4;
/// Pages each process faults in and frees (assumed).
pub const PAGES_PER_PROCESS: u64 = 2_048;
/// Directory-entry lock sections per process (assumed, module doc): one per fault batch of
/// the second half of its run.
pub const DENTRY_OPS: u64 = (PAGES_PER_PROCESS / BATCH_PAGES) - (PAGES_PER_PROCESS / BATCH_PAGES) / 2;
/// Wake-ups of a pipe's reader or writer per process, each under the target vCPU's rq lock
/// (assumed, module doc).
pub const PIPE_WAKEUPS: u64 = 10;
const FORK_WORK: Nanos = 60 * US;
const EXEC_WORK: Nanos = 100 * US;
const EXIT_WORK: Nanos = 30 * US;
/// Unlocked kernel work per freed batch (`zap_pte_range`, assumed 50 ns a page).
const FREE_WORK: Nanos = BATCH_PAGES * 50;

/// The lengths of one process of a job, derived from the job's CPU and kernel share.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProcessLengths {
    pub batches: u64,
    pub user_per_batch: Nanos,
    pub fault_work: Nanos,
}

/// Split a job of `job` CPU with `kernel_share` in the kernel over its processes.
pub fn lengths(job: Nanos, kernel_share: f64) -> Result<ProcessLengths, String> {
    let syscall = Costs::default().syscall;
    let per_process = job as f64 / PROCESSES as f64;
    let kernel_total = per_process * kernel_share;
    let batches = PAGES_PER_PROCESS / BATCH_PAGES;
    let fixed = (FORK_WORK + EXEC_WORK + EXIT_WORK + 3 * syscall)
        + (2 + PIPE_WAKEUPS) * (syscall + RQ_HOLD)
        + DENTRY_OPS * (syscall + DENTRY_HOLD)
        + fault_kernel(batches, syscall)
        + batches * FREE_WORK
        + free_kernel(batches, syscall);
    let left = kernel_total - fixed as f64;
    if left < 0.0 {
        return Err(format!(
            "a job of {} with kernel_share {kernel_share} leaves {} of kernel time per process, less than its fork, \
             exec, exit and lock sections ({}); raise kernel_share or job",
            format_duration(job),
            format_duration(kernel_total.round() as Nanos),
            format_duration(fixed)
        ));
    }
    Ok(ProcessLengths {
        batches,
        user_per_batch: ((per_process - kernel_total) / batches as f64).round() as Nanos,
        fault_work: (left / batches as f64).round() as Nanos,
    })
}

/// One compile job of slot `t`: four process lifetimes.
fn job_ops(locks: &KernelLocks, t: usize, l: &ProcessLengths) -> Vec<Op> {
    let mut ops = Vec::new();
    for p in 0..PROCESSES as usize {
        // fork + wake_up_new_task, exec.
        ops.push(kernel(FORK_WORK));
        ops.push(section(locks.rq(t, 2 * p), RQ_HOLD, KernelFn::WakeUpNewTask));
        ops.push(kernel(EXEC_WORK));
        // Run: fault in its memory while computing; create and remove its files halfway.
        ops.push(fault_in(locks, l.batches / 2, l.user_per_batch, l.fault_work));
        for w in 0..PIPE_WAKEUPS as usize {
            ops.push(section(locks.rq(t, 2 * PROCESSES as usize + w), RQ_HOLD, KernelFn::TtwuDoActivate));
        }
        // Past the per-CPU list: every batch refills it under zone->lock; one directory-entry
        // operation per batch spreads them through the run.
        // It goes right after the batch's user work, before the fault path: behind the zone and
        // LRU sections it would be paced by them and never meet another thread.
        let mut rest = fault_batch(locks, l.user_per_batch, l.fault_work, true);
        rest.insert(1, section(locks.dentry, DENTRY_HOLD, KernelFn::DAlloc));
        ops.push(Op::Loop { count: Some(DENTRY_OPS), body: rest });
        // exit: free the pages, wake the parent.
        ops.push(free_pages(locks, l.batches, FREE_WORK));
        ops.push(kernel(EXIT_WORK));
        ops.push(section(locks.rq(t, 2 * p + 1), RQ_HOLD, KernelFn::TtwuDoActivate));
    }
    ops.push(Op::Progress);
    ops
}

impl Workload for Gmake {
    fn name(&self) -> &'static str {
        "mosbench.gmake"
    }
    fn describe(&self) -> &'static str {
        "MOSBENCH gmake: make -j (2 x vCPUs) of a Linux kernel; each job forks sh, gcc, cc1 and as, \
         which fault in and free their memory under zone->lock and lru_lock, create files under a \
         directory's d_lock and wake their parent under rq->lock (seed 002 Table 4a's four lock \
         classes); 400 ms per job, 15.4% kernel"
    }
    fn progress_unit(&self) -> &'static str {
        PROGRESS_UNIT
    }
    fn params(&self) -> Vec<ParamSpec> {
        vec![
            ParamSpec::duration(
                "job",
                JOB_CPU,
                "CPU time of one compile job (4 processes). 400ms: assumed (a defconfig kernel \
                 build on one core of the seed's Xeon E5645).",
            )
            .at_least(10.0 * MS as f64),
            ParamSpec::float(
                "kernel_share",
                KERNEL_SHARE,
                "share of a job's CPU time in the kernel. 0.154: perf stat of a parallel kernel \
                 build (user 1513 s, system 275 s).",
            )
            .range(0.01, 0.9),
        ]
    }
    fn default_threads(&self, vcpus: u32) -> u32 {
        2 * vcpus
    }
    fn build(&self, threads: u32, params: &Params) -> Result<Program, String> {
        build_make(self.name(), threads, 2, params)
    }
}

/// The program of `make -j threads` with [`Gmake`]'s parameters, errors prefixed with `name` (the
/// workload that runs it: `mosbench.gmake` or `kbuild`); `slots_per_vcpu` is the `-j` factor the
/// default thread count assumes, which sets the number of run-queue locks (one per vCPU).
pub fn build_make(name: &str, threads: u32, slots_per_vcpu: u32, params: &Params) -> Result<Program, String> {
    if threads == 0 {
        return Err(format!("{name} needs at least 1 job slot (threads), got 0"));
    }
    let l = lengths(params.duration("job"), params.float("kernel_share")).map_err(|e| format!("{name}: {e}"))?;
    let mut program = Program::new(PROGRESS_UNIT);
    // One rq lock per vCPU.
    let locks = KernelLocks::declare(&mut program, (threads as usize).div_ceil(slots_per_vcpu.max(1) as usize));
    program.threads = (0..threads as usize).map(|t| vec![Op::Loop { count: None, body: job_ops(&locks, t, &l) }]).collect();
    Ok(program)
}

#[cfg(test)]
mod tests {
    use super::super::model_tests::*;
    use super::*;
    use crate::workload::builtin::test_support::*;

    #[test]
    fn a_job_is_four_processes_with_the_kernel_share_and_cpu_it_was_built_from() {
        assert_defaults_parse(&Gmake);
        let program = build_valid(&Gmake, 24, &Params::defaults(&Gmake.params()));
        assert_eq!(program.kernel_locks.len(), 3 + 12);
        let body = loop_body(&program.threads[5]);
        let (user, kernel) = mean_time(body);
        let total = user + kernel;
        assert!((total - JOB_CPU as f64).abs() / (JOB_CPU as f64) < 0.01, "{total}");
        assert!((kernel / total - KERNEL_SHARE).abs() < 0.005, "{}", kernel / total);
        // Per job: 4 x (73 - 6) zone refills and as many frees; 4 x 37 dentry sections.
        assert_eq!(sections(body, 0), 2 * 4 * (73 - 6));
        assert_eq!(sections(body, 1), 4 * 4 * 73);
        assert_eq!(sections(body, 2), 4 * DENTRY_OPS);
        assert_eq!(body.iter().filter(|op| **op == Op::Progress).count(), 1);
        assert_eq!(Gmake.default_threads(12), 24);
    }

    #[test]
    fn a_kernel_share_too_small_for_the_fixed_kernel_paths_is_an_error() {
        let err = Gmake.build(4, &params_with(&Gmake, &[("kernel_share", 0.01.into())])).unwrap_err();
        assert!(err.contains("kernel_share 0.01") && err.contains("less than"), "{err}");
        assert!(Gmake.build(0, &Params::defaults(&Gmake.params())).unwrap_err().contains("at least 1"));
    }
}
