//! `memclone`: MOSBENCH's page-fault microbenchmark, threaded mode.
//!
//! **The application** (MOSBENCH micro/memclone.c, micro/run-memclone.py): `memclone <cores>
//! <mbytes> <threads>` starts one worker per core (pthreads when `threads` is 1, the mode seed
//! 002 describes: "memclone creates threads and invokes the mmap system call to allocate memory
//! on each thread"); each worker `malloc`s `mbytes` MiB (100 in run-memclone.py; glibc serves it
//! with its own mmap), waits for the start flag, writes one byte to every page (one page fault
//! per page) and reports its cycles per fault; `main` waits for all of them. The workers share
//! one address space, so every fault runs against the same `mm`. Seed 002 section 6.2: memclone
//! "suffers from the lock holder preemption problem"; with one micro-sliced core it runs 91%
//! faster beside swaptions; Figure 7: its yields are mostly pause-loop exits.
//!
//! **Model**: one thread per vCPU; a run is
//! - `mmap` of the buffer: `Mmap { pages: 4 }`, i.e. 1 us of VMA set-up under `mmap_sem` for
//!   write (mmap does not touch the pages; `pages` here sizes the work, not the mapping);
//! - the touch loop: 50 page-table pages (`__pte_alloc`, mm/memory.c, installs each under
//!   `pmd_lock`: with x86_64's split PMD locks (Linux 3.13+) the lock of the PMD page, which maps
//!   1 GiB, so the threads whose 100 MiB buffers lie in the same GiB share it; the model has one
//!   such lock, class [`PAGE_TABLE`], 0.5 us held, assumed), each followed
//!   by 18 fault batches of 28 pages (mosbench/mod.rs: a `zone->lock` refill, since the thread
//!   keeps allocating, and two `lru_lock` drains per batch), so 25,200 pages (98.4 MiB of the
//!   100); each fault costs
//!   `fault` (1.2 us, assumed: an anonymous fault with `clear_page` at 2.4 GHz) of unlocked
//!   kernel work; the byte stores are free;
//! - process exit: the pages go back (`exit_mmap`: `release_pages`, `free_pcppages_bulk`) with
//!   no TLB shootdown (the other threads are gone: a `Syscall` path, not `Munmap`);
//! - all workers meet (main's wait loop, a blocking barrier) and thread 0 counts the run.
//!
//! Not modelled: `mmap_sem` taken for read by every fault (the model has only its write side;
//! readers never wait here except behind the run's mmap), and the per-fault memory-cgroup and
//! rmap work beyond `fault`. MOSBENCH's data (micro/data/memclone.data) is for Solaris on a
//! 48-core Opteron (11,268 cycles per fault on one core, 28,762 on 12, threaded), so it is not a
//! calibration target for a Linux guest; the solo test reports the model's fault rate.
//!
//! **Progress**: runs completed (all threads touched their buffers).

use super::mosbench::{fault_batch, free_pages, section, KernelLocks, BATCH_PAGES};
use crate::params::{ParamSpec, Params};
use crate::time::Nanos;
use crate::vmexit::KernelFn;
use crate::workload::program::{BarrierWait, Op, Program};
use crate::workload::Workload;

pub struct Memclone;

const PROGRESS_UNIT: &str = "runs completed (every thread touched its buffer)";
/// Lock class of the page-table lock `__pte_alloc` takes (`pmd_lock`, module doc).
pub const PAGE_TABLE: &str = "mm-page-table";
/// Unlocked kernel work per page fault (assumed).
pub const FAULT: Nanos = 1_200;
/// Page-table pages per run: 512 PTEs each.
pub const PTE_PAGES: u64 = 50;
/// Fault batches per page-table page: 18 x 28 = 504 of its 512 pages.
pub const BATCHES_PER_PTE_PAGE: u64 = 18;
const PTL_HOLD: Nanos = 500;
/// Unlocked kernel work per freed batch (zap_pte_range, assumed 50 ns a page).
const FREE_WORK: Nanos = BATCH_PAGES * 50;

impl Workload for Memclone {
    fn name(&self) -> &'static str {
        "memclone"
    }
    fn describe(&self) -> &'static str {
        "MOSBENCH memclone (threads): every thread mmaps ~100 MiB and faults in each page (zone->lock \
         refills, lru_lock drains, the shared page-table lock), the pages are freed at exit and the \
         threads join; 1.2 us per fault (assumed)"
    }
    fn progress_unit(&self) -> &'static str {
        PROGRESS_UNIT
    }
    fn params(&self) -> Vec<ParamSpec> {
        vec![ParamSpec::duration("fault", FAULT, "unlocked kernel work per page fault (assumed 1.2us).").at_least(100.0)]
    }
    fn build(&self, threads: u32, params: &Params) -> Result<Program, String> {
        if threads == 0 {
            return Err("memclone needs at least 1 thread, got 0".into());
        }
        let fault = params.duration("fault");
        let mut program = Program::new(PROGRESS_UNIT);
        let locks = KernelLocks::declare(&mut program, 1);
        program.kernel_locks.push(PAGE_TABLE.to_string());
        let ptl = program.kernel_locks.len() - 1;
        program.barriers = vec![threads as usize];
        let touch = Op::Loop {
            count: Some(PTE_PAGES),
            body: vec![
                section(ptl, PTL_HOLD, KernelFn::PteAlloc),
                Op::Loop { count: Some(BATCHES_PER_PTE_PAGE), body: fault_batch(&locks, 0, BATCH_PAGES * fault, true) },
            ],
        };
        program.threads = (0..threads as usize)
            .map(|t| {
                let mut body = vec![
                    Op::Mmap { pages: 4 },
                    touch.clone(),
                    free_pages(&locks, PTE_PAGES * BATCHES_PER_PTE_PAGE, FREE_WORK),
                    Op::Barrier { barrier: 0, wait: BarrierWait::Block },
                ];
                if t == 0 {
                    body.push(Op::Progress);
                }
                vec![Op::Loop { count: None, body }]
            })
            .collect();
        Ok(program)
    }
}

/// Pages each thread touches per run.
pub const PAGES_PER_RUN: u64 = PTE_PAGES * BATCHES_PER_PTE_PAGE * BATCH_PAGES;
const _: () = assert!(PAGES_PER_RUN == 25_200);

#[cfg(test)]
mod tests {
    use super::super::mosbench::model_tests::*;
    use super::*;
    use crate::workload::builtin::test_support::*;

    #[test]
    fn a_run_faults_in_about_100_mib_per_thread_and_joins() {
        assert_defaults_parse(&Memclone);
        let program = build_valid(&Memclone, 12, &Params::defaults(&Memclone.params()));
        assert_eq!(program.barriers, vec![12]);
        let body = loop_body(&program.threads[1]);
        // One zone refill per batch in, one zone free per batch out past the per-CPU list's.
        assert_eq!(sections(body, 0), 2 * PAGES_PER_RUN / BATCH_PAGES - 6);
        assert_eq!(sections(body, program.kernel_locks.len() - 1), PTE_PAGES);
        assert!(!body.contains(&Op::Progress) && loop_body(&program.threads[0]).contains(&Op::Progress));
        let (user, kernel) = mean_time(body);
        assert_eq!(user, 0.0);
        assert!(kernel > (PAGES_PER_RUN * FAULT) as f64);
    }
}
