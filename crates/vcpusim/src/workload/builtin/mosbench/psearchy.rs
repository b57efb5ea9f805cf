//! `mosbench.psearchy`: Psearchy's parallel indexer `pedsort`, threaded mode.
//!
//! **The application** (MOSBENCH psearchy/mkdb/pedsort.C, psearchy/__init__.py, config.py):
//! `pedsort -t <db> -c <cores> -m 48 -l 200000 < files` indexes the files of a Linux source tree
//! (2.6.35-rc5). In threaded mode (`mode = "thread"`) each of the `-c` threads takes the next
//! file number with an atomic add (`dofiles`: `atomic_add_return(1, &shared->did)`, no lock),
//! `fopen`s it, reads and parses it into its own 48 MiB word hash table (`pass0`), `fclose`s it,
//! and when the table is full writes it out sorted to a temporary file (`flushwords`); at the
//! end each thread merges its files into a Berkeley DB (`passN`). The threads share one process,
//! so every `open` and `close` takes the process's file-table lock (`files->file_lock`, fs/file.c
//! `__alloc_fd`, `__close_fd`), and the page cache and the output files allocate pages. MOSBENCH
//! reports throughput in jobs per hour; seed 002 Figure 5 reports psearchy's throughput and
//! section 6.2 says the micro-sliced cores improve it 1.4x "by reducing the number of halts and
//! spinlock-induced yields".
//!
//! **Model**: one thread per vCPU (`-c cores`), each looping over files:
//! - `open`: path walk and file allocation (15 us, assumed) with a `files->file_lock` section
//!   (0.5 us held, assumed: fd bitmap update), class [`FILE_TABLE`];
//! - read: 12 KiB (an average Linux source file, assumed) through the page cache, 20 us
//!   (assumed); parse: 800 us of user time per file (assumed), the bulk of the work;
//! - `close`: 3 us with a `file_lock` section;
//! - every 1,000 files (assumed: the 48 MiB table fills), `flushwords` writes the table out:
//!   12,288 pages (48 MiB) allocated for tmpfs page cache, with the zone and LRU lock sections
//!   of mosbench/mod.rs, and 100 ms of sorting and copying it out in the kernel's write path
//!   (assumed); files cost ~5% kernel time, flushes bring the total to ~15%;
//! - the hash table itself is allocated once and reused, so it does not fault after warm-up.
//!
//! Not modelled: the final merge (`passN`, a sequential tail per thread) and the Berkeley DB
//! writes; halts (seed 002's explanation of the gain) come from threads that block, and this
//! model's threads block only on the file-table lock's waiters being preempted (they spin), so
//! it reproduces the spinlock part only.
//!
//! **Progress**: files indexed (all threads); throughput is progress per second.

use super::{fault_in, kernel, section, KernelLocks, BATCH_PAGES};
use crate::params::{ParamSpec, Params};
use crate::time::{Nanos, MS, US};
use crate::vmexit::KernelFn;
use crate::workload::program::{Dist, Op, Program};
use crate::workload::Workload;

pub struct Psearchy;

const PROGRESS_UNIT: &str = "files indexed (all threads)";
/// Lock class of the shared file table's `files->file_lock` (fs/file.c).
pub const FILE_TABLE: &str = "file-table";
/// User time to parse one file into the hash table (assumed).
pub const PARSE: Nanos = 800 * US;
const OPEN_WORK: Nanos = 15 * US;
const READ_WORK: Nanos = 20 * US;
const CLOSE_WORK: Nanos = 3 * US;
const FILE_LOCK_HOLD: Nanos = 500;
/// Files between two flushes of the 48 MiB table (assumed).
pub const FILES_PER_FLUSH: u64 = 1_000;
/// Pages written per flush (48 MiB, `-m 48`).
const FLUSH_PAGES: u64 = 48 * 256;
/// Copying and sorting the table out, in the kernel's write path (assumed).
const FLUSH_WORK: Nanos = 100 * MS;

impl Workload for Psearchy {
    fn name(&self) -> &'static str {
        "mosbench.psearchy"
    }
    fn describe(&self) -> &'static str {
        "MOSBENCH psearchy (pedsort, threaded): each thread opens, reads, parses and closes source \
         files, taking the shared file table's lock at open and close, and writes its 48 MiB \
         table out every 1000 files; 800 us of parsing per file (assumed)"
    }
    fn progress_unit(&self) -> &'static str {
        PROGRESS_UNIT
    }
    fn params(&self) -> Vec<ParamSpec> {
        vec![ParamSpec::duration("parse", PARSE, "user time to parse one file (assumed 800us).").at_least(1.0 * US as f64)]
    }
    fn build(&self, threads: u32, params: &Params) -> Result<Program, String> {
        if threads == 0 {
            return Err("mosbench.psearchy needs at least 1 thread, got 0".into());
        }
        let parse = params.duration("parse");
        let mut program = Program::new(PROGRESS_UNIT);
        let locks = KernelLocks::declare(&mut program, 1);
        program.kernel_locks.push(FILE_TABLE.to_string());
        let file_lock = program.kernel_locks.len() - 1;
        let one_file = vec![
            kernel(OPEN_WORK),
            section(file_lock, FILE_LOCK_HOLD, KernelFn::AllocFd),
            kernel(READ_WORK),
            Op::Compute(Dist::Exp { mean: parse }),
            kernel(CLOSE_WORK),
            section(file_lock, FILE_LOCK_HOLD, KernelFn::CloseFd),
            Op::Progress,
        ];
        let batches = FLUSH_PAGES / BATCH_PAGES;
        let flush = fault_in(&locks, batches, 0, FLUSH_WORK / batches);
        let body = vec![Op::Loop { count: Some(FILES_PER_FLUSH), body: one_file }, flush];
        program.threads = vec![vec![Op::Loop { count: None, body }]; threads as usize];
        Ok(program)
    }
}

#[cfg(test)]
mod tests {
    use super::super::model_tests::*;
    use super::*;
    use crate::workload::builtin::test_support::*;

    #[test]
    fn every_file_takes_the_file_table_lock_twice_and_a_flush_follows_every_thousand() {
        assert_defaults_parse(&Psearchy);
        let program = build_valid(&Psearchy, 12, &Params::defaults(&Psearchy.params()));
        let file_lock = program.kernel_locks.iter().position(|c| c == FILE_TABLE).unwrap();
        let body = loop_body(&program.threads[0]);
        assert_eq!(sections(body, file_lock), 2 * FILES_PER_FLUSH);
        assert_eq!(sections(body, 0), FLUSH_PAGES / BATCH_PAGES - super::super::PCP_BATCHES);
        let (user, kernel) = mean_time(body);
        // Kernel share: ~5% per file, ~15% with the flushes.
        let share = kernel / (user + kernel);
        assert!((0.13..0.17).contains(&share), "{share}");
    }
}
