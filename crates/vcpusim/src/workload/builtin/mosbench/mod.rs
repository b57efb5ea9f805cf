//! MOSBENCH application models (`mosbench.<name>`): seed 002's kernel-intensive workloads.
//!
//! Seed 002 (`002_6e83742be1ba7a4e.txt`) section 6.1 runs three MOSBENCH applications with
//! their default inputs in a 12-vCPU Linux 4.4 VM: `exim` ("frequently creates processes and
//! small files"), `gmake` ("intensively exercises the kernel to incur LHP problems") and
//! `psearchy`, next to a VM running PARSEC swaptions. MOSBENCH is Boyd-Wickizer et al., "An
//! Analysis of Linux Scalability to Many Cores", OSDI'10 (seed 002 reference \[6\]); its driver
//! and inputs are in the MOSBENCH repository (a copy is stored as KunZheng/mosbench: gmake/,
//! exim/, psearchy/, config.py), which the model files cite for each application's structure.
//!
//! **What the guest model lacks, and how it is approximated.** The model's guest runs the
//! threads of one address space; it has no process creation, no page faults, no file system and
//! no sleeping kernel mutexes. These applications are made of those, so each file turns them
//! into the ops the guest has (docs/scenario-format.md, program language):
//! - kernel paths (fork, exec, exit, page faults, read/write, path walks) are `Syscall` work;
//! - the kernel spinlocks they take are `Syscall { lock }` sections on named kernel locks, one
//!   per lock seed 002 Table 4a profiles in gmake: [`PAGE_ALLOC`] (`zone->lock`),
//!   [`PAGE_RECLAIM`] (`zone->lru_lock`), [`DENTRY`] (a shared directory's `dentry->d_lock`),
//!   [`RUNQUEUE`] (`rq->lock`, one per vCPU); each section pays the model's system-call entry
//!   cost (300 ns, hardware/costs.rs), which the budgets below subtract from the unlocked work;
//! - each section runs in the Linux 4.4 function whose body takes its lock (what seed 002's
//!   detector reads, Table 3): a refill in `get_page_from_freelist` (`buffered_rmqueue` is
//!   `static inline` there), a return in `free_pcppages_bulk`, LRU additions in
//!   `pagevec_lru_move_fn`, LRU removals in `release_pages`, a fork's enqueue in
//!   `wake_up_new_task`, a wake-up in `ttwu_do_activate`, directory entries in `d_alloc` /
//!   `d_delete` (mm/page_alloc.c, mm/swap.c, kernel/sched/core.c, fs/dcache.c);
//! - a short-lived process is a stretch of the thread that stands for it (a make job slot, an
//!   Exim connection), not a new thread: process creation and exit are their kernel work and lock
//!   sections. Separate processes have separate address spaces, so no model here uses `Munmap`
//!   (whose shootdown targets the whole VM, workload/builtin/spec2000/mod.rs explains why);
//! - a sleeping kernel mutex (a directory's `i_mutex`) is a futex-based `MutexLock`: both sleep
//!   when contended and wake the next waiter with a wake-up IPI, and the futex bucket lock stands
//!   for the mutex's `wait_lock`;
//! - devices: everything runs on tmpfs (MOSBENCH config.py `fs = "tmpfs-separate"`) and the
//!   load generators' network traffic is not modelled (loopback/remote clients: no I/O waits).
//!
//! Page allocation follows Linux 4.4's per-CPU page lists (mm/page_alloc.c): a fault takes a
//! page from the CPU's `pcp` list without a lock; `rmqueue_bulk` refills it under `zone->lock`
//! `pcp->batch` (31) pages at a time, and `free_pcppages_bulk` returns them the same way. New
//! anonymous and page-cache pages go on the LRU lists through a per-CPU pagevec of
//! `PAGEVEC_SIZE` (14) pages drained under `zone->lru_lock` (mm/swap.c `__pagevec_lru_add`), and
//! `release_pages` takes the same lock when they are freed. The model works in batches of
//! [`BATCH_PAGES`] = 28 pages: two `lru_lock` sections per batch, and one `zone->lock` section
//! per batch beyond what the per-CPU list holds ([`PCP_BATCHES`]).
//!
//! **Calibration** (tests/mosbench_calibration.rs): the lock hold times are set so that the
//! solo mean wait of contended acquisitions (what lockstat's `waittime-avg` reports, and what
//! `spin_wait_mean_us[class]` counts) lands on seed 002 Table 4a's solo column for gmake: page
//! reclaim 1.03 us, page allocator 3.42 us, dentry 2.93 us, runqueue 1.22 us, under the kernel
//! that measured them: lockstat exists only with `CONFIG_LOCK_STAT`, which selects
//! `DEBUG_SPINLOCK`, whose waiters loop on a trylock (`[guest] spinlock = "debug"`, Linux 4.4).
//! For a lock that is rarely contended, a contended waiter waits on average about half a hold,
//! so each hold started at twice its target; the solo simulation then set them (zone->lock
//! 7.35 us, lru_lock 1.47 us, d_lock 5.75 us). The holds are fitted, not measured: they stand
//! for the lock's whole critical section in Linux 4.4, cache misses included, and in the
//! lock-statistics kernel, which also books every acquisition (lockdep, not modelled): for the
//! production kernel they are an upper bound. The same lock costs serve
//! exim, psearchy and memclone (same kernel, same locks). Table 2's solo yield counts are
//! totals over a run: for exim, MOSBENCH's load generator runs 60 s (exim/smtpbm.c), so 157,023
//! yields are ~2,617 per second, which the exim model meets within a factor of 2 (~2,100/s,
//! PLE exits of ticket-lock spinners, where Linux 4.4's would partly be PV-spinlock blocks);
//! gmake's 79,440 has no run length in the text (the model's ~1,800/s would mean a 45 s build).

pub mod exim;
pub mod gmake;
pub mod psearchy;

use crate::time::Nanos;
use crate::vmexit::KernelFn;
use crate::workload::program::{Dist, ObjIndex, Op, Program};

/// `zone->lock`: the buddy allocator's lock (mm/page_alloc.c `rmqueue_bulk`,
/// `free_pcppages_bulk`, `free_one_page`). Seed 002 Table 4a "Page allocator".
pub const PAGE_ALLOC: &str = "page-alloc";
/// `zone->lru_lock`: the LRU lists' lock (mm/swap.c `__pagevec_lru_add`, `release_pages`).
/// Seed 002 Table 4a "Page reclaim".
pub const PAGE_RECLAIM: &str = "page-reclaim";
/// `dentry->d_lock` of a directory every process creates and removes files in (fs/dcache.c
/// `d_alloc`, `d_delete`; gcc's /tmp, Exim's spool and mail directories). Seed 002 Table 4a
/// "Dentry".
pub const DENTRY: &str = "dentry";
/// `rq->lock` of a vCPU's run queue (kernel/sched/core.c `wake_up_new_task`, `try_to_wake_up`,
/// `__schedule`). Seed 002 Table 4a "Runqueue".
pub const RUNQUEUE: &str = "runqueue";

/// Pages per modelled allocation batch: two pagevecs (2 x PAGEVEC_SIZE = 14, mm/swap.c), close
/// to `pcp->batch` = 31 (mm/page_alloc.c `zone_batchsize` for zones over 512 MiB).
pub const BATCH_PAGES: u64 = 28;

/// Hold of `zone->lock` per batch (assumed ~ 240 ns per page moved between the buddy lists and
/// the per-CPU list; calibrated to Table 4a's 3.42 us, see the module doc).
pub const ZONE_HOLD: Nanos = 7_350;
/// Hold of `zone->lru_lock` per pagevec (14 pages; calibrated to Table 4a's 1.03 us).
pub const LRU_HOLD: Nanos = 1_470;
/// Hold of a directory's `d_lock` to add or remove a name (calibrated to Table 4a's 2.93 us).
pub const DENTRY_HOLD: Nanos = 5_750;
/// Hold of `rq->lock` to enqueue a woken or new task: twice Table 4a's 1.22 us, the starting rule
/// above, not fitted in simulation (solo, the model's rq locks are almost never contended).
pub const RQ_HOLD: Nanos = 2_400;

/// Indices of the kernel locks in `Program::kernel_locks`.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelLocks {
    pub page_alloc: ObjIndex,
    pub page_reclaim: ObjIndex,
    pub dentry: ObjIndex,
    /// One run-queue lock per vCPU the program expects (all of class [`RUNQUEUE`]).
    pub runqueues: Vec<ObjIndex>,
}

impl KernelLocks {
    /// Declare the locks in `program` (appended to its `kernel_locks`), with `runqueues` rq locks.
    pub fn declare(program: &mut Program, runqueues: usize) -> Self {
        let mut add = |name: &str| {
            program.kernel_locks.push(name.to_string());
            program.kernel_locks.len() - 1
        };
        let page_alloc = add(PAGE_ALLOC);
        let page_reclaim = add(PAGE_RECLAIM);
        let dentry = add(DENTRY);
        let runqueues = (0..runqueues.max(1)).map(|_| add(RUNQUEUE)).collect();
        KernelLocks { page_alloc, page_reclaim, dentry, runqueues }
    }

    /// The run-queue lock of the `k`-th scheduler operation of thread `t` (spread over the rq
    /// locks: a woken parent or a new child lands on some vCPU).
    pub fn rq(&self, t: usize, k: usize) -> ObjIndex {
        self.runqueues[(t + 7 * k) % self.runqueues.len()]
    }
}

/// A kernel path with no spinlock: `work` of kernel time after the entry cost.
pub fn kernel(work: Nanos) -> Op {
    Op::kernel(Dist::Const(work))
}

/// A critical section of `hold` under kernel lock `lock`, in kernel function `func` (Linux 4.4's
/// function that takes the lock; seed 002's detector reads it, hypervisor/critical_detect.rs).
pub fn section(lock: ObjIndex, hold: Nanos, func: KernelFn) -> Op {
    Op::kernel_section(lock, Dist::Const(hold), func)
}

/// Batches a CPU's per-CPU page list absorbs before `zone->lock` is needed: `pcp->high` = 6 x
/// `pcp->batch` = 186 pages (mm/page_alloc.c `pageset_set_batch`), 6 batches of 28. A process
/// that allocates and frees fewer pages than that cycles through its CPU's list without taking
/// the zone lock.
pub const PCP_BATCHES: u64 = 6;

/// Allocate and map `batches` batches of [`BATCH_PAGES`] pages: each batch is user work
/// `user_per_batch` (exponential, so threads drift apart), the faults' unlocked kernel work
/// `fault_work`, two pagevec drains under `lru_lock`, and, past the first [`PCP_BATCHES`], one
/// `zone->lock` refill (`rmqueue_bulk`).
pub fn fault_in(locks: &KernelLocks, batches: u64, user_per_batch: Nanos, fault_work: Nanos) -> Op {
    let batch = |zone| fault_batch(locks, user_per_batch, fault_work, zone);
    two_phase(batches, batch(false), batch(true))
}

/// One fault batch, with a `zone->lock` refill when `zone` (a thread that keeps allocating
/// without freeing refills its per-CPU list every `pcp->batch` pages).
pub fn fault_batch(locks: &KernelLocks, user_per_batch: Nanos, fault_work: Nanos, zone: bool) -> Vec<Op> {
    let mut body = Vec::new();
    if user_per_batch > 0 {
        body.push(Op::Compute(Dist::Exp { mean: user_per_batch }));
    }
    body.push(kernel(fault_work));
    if zone {
        body.push(section(locks.page_alloc, ZONE_HOLD, KernelFn::GetPageFromFreelist));
    }
    body.push(section(locks.page_reclaim, LRU_HOLD, KernelFn::PagevecLruMoveFn));
    body.push(section(locks.page_reclaim, LRU_HOLD, KernelFn::PagevecLruMoveFn));
    body
}

/// Free `batches` batches of pages (process exit or truncation): `release_pages` drains two
/// pagevecs under `lru_lock`; past the first [`PCP_BATCHES`], `free_pcppages_bulk` returns a
/// batch to the buddy lists under `zone->lock`.
pub fn free_pages(locks: &KernelLocks, batches: u64, work: Nanos) -> Op {
    let batch = |zone: bool| {
        let mut body = vec![
            kernel(work),
            section(locks.page_reclaim, LRU_HOLD, KernelFn::ReleasePages),
            section(locks.page_reclaim, LRU_HOLD, KernelFn::ReleasePages),
        ];
        if zone {
            body.push(section(locks.page_alloc, ZONE_HOLD, KernelFn::FreePcppagesBulk));
        }
        body
    };
    two_phase(batches, batch(false), batch(true))
}

/// `batches` iterations: the first [`PCP_BATCHES`] of `within`, the rest of `beyond`.
fn two_phase(batches: u64, within: Vec<Op>, beyond: Vec<Op>) -> Op {
    let first = batches.min(PCP_BATCHES);
    let mut ops = vec![Op::Loop { count: Some(first), body: within }];
    if batches > first {
        ops.push(Op::Loop { count: Some(batches - first), body: beyond });
    }
    Op::Loop { count: Some(1), body: ops }
}

/// Zone-lock sections of `batches` batches of [`fault_in`] (or of [`free_pages`]).
pub fn zone_sections(batches: u64) -> u64 {
    batches.saturating_sub(PCP_BATCHES)
}

/// Kernel time of `batches` [`fault_in`] batches outside their user work and `fault_work`,
/// including entry costs.
pub fn fault_kernel(batches: u64, syscall: Nanos) -> Nanos {
    batches * (3 * syscall + 2 * LRU_HOLD) + zone_sections(batches) * (syscall + ZONE_HOLD)
}

/// Kernel time of `batches` [`free_pages`] batches outside their `work`, including entry costs.
pub fn free_kernel(batches: u64, syscall: Nanos) -> Nanos {
    fault_kernel(batches, syscall)
}

#[cfg(test)]
pub(crate) mod model_tests {
    //! Shared checks of the MOSBENCH model files: the mean user and kernel time of ops.
    use super::*;
    use crate::hardware::costs::Costs;

    /// (user, kernel) mean ns of `ops`, loops multiplied out; `Syscall`s pay the entry cost.
    pub fn mean_time(ops: &[Op]) -> (f64, f64) {
        let syscall = Costs::default().syscall as f64;
        let (mut user, mut kernel) = (0.0, 0.0);
        for op in ops {
            match op {
                Op::Compute(d) => user += d.mean(),
                Op::Syscall { work, .. } => kernel += syscall + work.mean(),
                Op::Loop { count: Some(n), body } => {
                    let (u, k) = mean_time(body);
                    user += u * *n as f64;
                    kernel += k * *n as f64;
                }
                Op::Loop { count: None, body } => {
                    let (u, k) = mean_time(body);
                    user += u;
                    kernel += k;
                }
                _ => {}
            }
        }
        (user, kernel)
    }

    /// Lock sections of class index `lock` in `ops`, loops multiplied out.
    pub fn sections(ops: &[Op], lock: ObjIndex) -> u64 {
        ops.iter()
            .map(|op| match op {
                Op::Syscall { lock: Some(l), .. } if *l == lock => 1,
                Op::Loop { count, body } => count.unwrap_or(1) * sections(body, lock),
                _ => 0,
            })
            .sum()
    }

    #[test]
    fn batch_kernel_time_counts_entry_costs_and_holds() {
        let mut p = Program::new("x");
        let locks = KernelLocks::declare(&mut p, 3);
        assert_eq!(p.kernel_locks, ["page-alloc", "page-reclaim", "dentry", "runqueue", "runqueue", "runqueue"]);
        let (_, k) = mean_time(&[fault_in(&locks, 10, 0, 1_000)]);
        assert_eq!(k, (10 * 1_000 + fault_kernel(10, 300)) as f64);
        assert_eq!(sections(&[fault_in(&locks, 10, 0, 1_000)], locks.page_alloc), 4);
        let (_, k) = mean_time(&[free_pages(&locks, 2, 500)]);
        assert_eq!(k, (2 * 500 + free_kernel(2, 300)) as f64);
        assert_eq!(sections(&[free_pages(&locks, 2, 500)], locks.page_alloc), 0);
        assert_eq!(locks.rq(0, 1), locks.runqueues[1]);
    }
}
