//! `dbench`: file-system clients replaying dbench's NetBench loadfile.
//!
//! **The program** (dbench, github.com/sahlberg/dbench: dbench.c, child.c, fileio.c): `dbench N`
//! forks N clients; each replays the loadfile line by line (`child_run`), one file-system
//! operation per line, in its own directory `\clients\clientK`, and the result is the bytes
//! moved per second. With the default `fileio` backend the operations are system calls on the
//! local file system: NTCreateX -> open/creat, Close -> close, ReadX -> pread, WriteX -> pwrite,
//! QUERY_FILE_INFORMATION -> fstat, QUERY_PATH_INFORMATION -> stat, QUERY_FS_INFORMATION ->
//! statvfs, FIND_FIRST -> opendir/readdir, Unlink -> unlink, Rename -> rename, Flush -> fsync.
//!
//! **Op mix**: the loadfile's own counts. The stored dbench history holds the NetBench trace as
//! `client_plain.txt` (dbench 2.0, commit 52233ee, 2002; the later `client.txt` /
//! `loadfiles/client.load` blob is missing from the copy we have): 122,877 lines, counted in
//! [`LOADFILE`]. The model replays one *cycle* of it: each op's count over the Flush count
//! (598), rounded, 205 ops, interleaved evenly (smooth weighted round robin), so the mix of any
//! stretch of the run is the loadfile's. Mean ReadX is 3,108 bytes and mean WriteX 9,686 bytes
//! in that file.
//!
//! **Kernel paths** (assumed costs on ext4 in the page cache, [`LOADFILE`] column 3): each op is a
//! `Syscall`; the ones that change metadata (create, write, unlink, rename, fsync) also dirty
//! journal buffers under the journal's list lock (`journal->j_list_lock`, fs/jbd2/transaction.c
//! `jbd2_journal_dirty_metadata`; class [`JOURNAL_LOCK`], one per VM: one file system, shared by
//! all clients), [`JOURNAL_HOLD`] each. Clients work in directories of their own, so directory
//! locks (`i_rwsem`, `d_lock`) are not shared and not modelled. Each line also costs the client
//! [`PARSE`] of user time (parsing and dispatch, assumed).
//!
//! Shortcuts: no block I/O: writes stay in the page cache and fsync does its journal work
//! without waiting for a commit to reach a disk (the model has no disk); the 0.02% of Rmdir and
//! Deltree lines are left out (they round to 0 per cycle). No source we have gives dbench's
//! per-op CPU cost on a stated machine, so the solo characteristics the calibration test checks
//! (op mix, about 72% kernel time, about 2.6 us of CPU per op) are these assumed costs'.
//!
//! **Progress**: loadfile operations (all clients).

use crate::params::{ParamSpec, Params};
use crate::time::Nanos;
use crate::vmexit::KernelFn;
use crate::workload::program::{Dist, Op, Program};
use crate::workload::Workload;

pub struct Dbench;

const PROGRESS_UNIT: &str = "loadfile operations (all clients)";
/// Lock class of the journal's `j_list_lock`.
pub const JOURNAL_LOCK: &str = "jbd2-list";
/// Hold of `j_list_lock` per metadata-changing op (assumed).
pub const JOURNAL_HOLD: Nanos = 300;
/// User time per loadfile line (assumed).
pub const PARSE: Nanos = 1_000;
/// The loadfile's count of the op that sets the cycle length (Flush).
pub const CYCLE_DIVISOR: u64 = 598;

/// One op kind of the loadfile: name, count in client_plain.txt, kernel work after the entry cost
/// (assumed), and whether it dirties journal metadata.
#[derive(Clone, Copy, Debug)]
pub struct LoadOp {
    pub name: &'static str,
    pub count: u64,
    pub work: Nanos,
    pub journal: bool,
}

const fn op(name: &'static str, count: u64, work: Nanos, journal: bool) -> LoadOp {
    LoadOp { name, count, work, journal }
}

/// client_plain.txt's op counts (dbench commit 52233ee) and the model's cost of each.
pub const LOADFILE: [LoadOp; 11] = [
    op("ReadX", 65_933, 1_500, false),
    op("WriteX", 14_074, 4_000, true),
    op("NTCreateX", 12_257, 4_000, true),
    op("Close", 10_067, 1_000, false),
    op("QUERY_FILE_INFORMATION", 7_183, 500, false),
    op("QUERY_PATH_INFORMATION", 6_269, 1_500, false),
    op("FIND_FIRST", 2_981, 6_000, false),
    op("Unlink", 1_740, 5_000, true),
    op("QUERY_FS_INFORMATION", 1_405, 1_000, false),
    op("Flush", 598, 10_000, true),
    op("Rename", 358, 6_000, true),
];

/// Times each op appears in one cycle: its count over [`CYCLE_DIVISOR`], rounded (at least 1).
pub fn cycle_counts() -> Vec<u64> {
    LOADFILE.iter().map(|o| ((o.count as f64 / CYCLE_DIVISOR as f64).round() as u64).max(1)).collect()
}

/// The order of one cycle: indices into [`LOADFILE`], interleaved by smooth weighted round robin
/// (each step every op gains its count, the richest is emitted and pays the total).
pub fn cycle_order() -> Vec<usize> {
    let counts = cycle_counts();
    let total: i64 = counts.iter().sum::<u64>() as i64;
    let mut credit = vec![0i64; counts.len()];
    (0..total)
        .map(|_| {
            for (c, n) in credit.iter_mut().zip(&counts) {
                *c += *n as i64;
            }
            let best = (0..counts.len()).max_by_key(|&i| (credit[i], std::cmp::Reverse(i))).expect("ops exist");
            credit[best] -= total;
            best
        })
        .collect()
}

impl Workload for Dbench {
    fn name(&self) -> &'static str {
        "dbench"
    }
    fn describe(&self) -> &'static str {
        "dbench: one client per vCPU replays the NetBench loadfile's op mix (reads, writes, creates, \
         stats, unlinks, fsyncs) as system calls on ext4 in the page cache, metadata changes under \
         the journal's j_list_lock; per-op costs assumed"
    }
    fn progress_unit(&self) -> &'static str {
        PROGRESS_UNIT
    }
    fn params(&self) -> Vec<ParamSpec> {
        vec![ParamSpec::float(
            "cost_scale",
            1.0,
            "factor on every op's kernel work (the per-op costs are assumed; 1: as documented in \
             workload/builtin/dbench.rs).",
        )
        .range(0.05, 20.0)]
    }
    fn build(&self, threads: u32, params: &Params) -> Result<Program, String> {
        if threads == 0 {
            return Err("dbench needs at least 1 client (threads), got 0".into());
        }
        let scale = params.float("cost_scale");
        let mut program = Program::new(PROGRESS_UNIT);
        program.kernel_locks.push(JOURNAL_LOCK.to_string());
        let mut body = Vec::new();
        for i in cycle_order() {
            let o = LOADFILE[i];
            body.push(Op::Compute(Dist::Const(PARSE)));
            body.push(Op::kernel(Dist::Const((o.work as f64 * scale).round() as Nanos)));
            if o.journal {
                body.push(Op::kernel_section(0, Dist::Const(JOURNAL_HOLD), KernelFn::Jbd2JournalDirtyMetadata));
            }
            body.push(Op::Progress);
        }
        program.threads = (0..threads).map(|_| vec![Op::Loop { count: None, body: body.clone() }]).collect();
        Ok(program)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::builtin::test_support::*;

    #[test]
    fn a_cycle_has_the_loadfiles_mix_spread_evenly() {
        assert_defaults_parse(&Dbench);
        let counts = cycle_counts();
        assert_eq!(counts, [110, 24, 20, 17, 12, 10, 5, 3, 2, 1, 1]);
        let total: u64 = counts.iter().sum();
        assert_eq!(total, 205);
        let order = cycle_order();
        for (i, n) in counts.iter().enumerate() {
            assert_eq!(order.iter().filter(|&&j| j == i).count() as u64, *n, "{}", LOADFILE[i].name);
        }
        // Evenly: every quarter of the cycle holds about a quarter of the reads.
        for quarter in order.chunks(order.len().div_ceil(4)) {
            let reads = quarter.iter().filter(|&&j| j == 0).count();
            assert!((25..=30).contains(&reads), "{reads} reads in a quarter");
        }
        let program = build_valid(&Dbench, 4, &Params::defaults(&Dbench.params()));
        let body = loop_body(&program.threads[2]);
        assert_eq!(body.iter().filter(|op| **op == Op::Progress).count(), 205);
        let journaled = body.iter().filter(|op| matches!(op, Op::Syscall { lock: Some(0), .. })).count();
        assert_eq!(journaled, 24 + 20 + 3 + 1 + 1);
        assert!(Dbench.build(0, &Params::defaults(&Dbench.params())).unwrap_err().contains("at least 1"));
    }
}
