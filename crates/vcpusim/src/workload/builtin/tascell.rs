//! `tascell.fib` and `tascell.nqueen`: the two Tascell programs of seed 001
//! (`001_3ec87dad18c47651.txt`, sections III-A and V-A): `tascell-fib` computes fib(48) and
//! `tascell-nq` all solutions of the 16-queens problem, each parallelized by Tascell's
//! backtracking-based load balancing (Hiraishi et al., PPoPP 2009). One thread per worker; every
//! thread runs `Op::WorkSteal`, Tascell's worker loop (guest/worksteal.rs, which cites the
//! runtime's source); worker 0 starts with the root task, the others start by requesting.
//! The run's one unit of progress is the computation's end, so `iterations = 1` ends the run
//! then and `completion_time_ms` is the execution time the seed plots ("only parallel
//! computation", section III-B).
//!
//! **Programs** (github.com/tascell/sc-tascell, `src/sample/tcell/`):
//! - `fib.tcell`: `fib(n)` is `do-two (fib(n-1)) (fib(n-2))`, `fib(n <= 2) = 1`: fib(n) makes
//!   `2 F(n) - 1` calls (9,615,053,951 for n = 48) of equal cost, `unit`.
//! - `nq.tcell`: `nqueens(n, k, ix, iy, tsk)` is `do-many for i from ix to iy` over the `n - k`
//!   candidate columns of row `k`, recursing into the valid ones; the tree is modelled as its
//!   average (`workload/worksteal.rs`, `Tree::NQueens`) from the exact number of valid
//!   placements per row (`PLACEMENTS`), with `unit` per candidate checked.
//!
//! **Work** (the per-call / per-check `unit`) is set by `serial`, the 1-thread execution time:
//! `unit = serial / (calls or checks)`. Seed 001 gives its 1-thread times only in plots
//! (Figure 1 for tascell-fib, Figure 15a for tascell-nq) and the text of the seed carries no
//! plot data, so the defaults are assumed: 30 s for fib(48) (~3.1 ns per call: a C recursive
//! call plus Tascell's poll of `thr->req` at each `do-two`, on the 2.3 GHz Opteron 6376) and
//! 10 s for 16-queens (~2.3 ns per check). Set `serial` to the 1-thread time read off the
//! figure to calibrate (the model is linear in it).
//!
//! **Affinity** (`affinity = true`, Tascell's `-a`): worker n calls `sched_setaffinity` on CPU
//! n before its loop (`worker.sc`, `worker-setaffinity` under `USE-AFFINITY=SCHED`, the Linux
//! build of the Makefile), so the guest never moves it; more workers than vCPUs is the real
//! program's error (the call fails and the worker exits), and the loader's.
//!
//! **Runtime costs** (assumed; the Tascell paper's message costs were not available to us):
//! a request 1 µs of the requester's CPU (`recv-treq` scans the workers and takes each
//! candidate's `thr->mut` in `try-treq`), an answer 2 µs of the victim's (backtracking through
//! the nested `bk` functions, the `:put` body, `make-and-send-task`), a result 1 µs (the
//! thief's `send-rslt`); nqueens tasks copy the 3 board arrays (`task-sender nqueens`, ~100
//! ints), in the same answer cost. Waits after `none`: 1 µs doubling to 100 ms
//! (`worker.sc` `send-treq-to-initialize-task`, `worker.sh` `DELAY-MAX`).

use crate::params::{ParamSpec, Params};
use crate::time::{Nanos, MS, SEC, US};
use crate::workload::program::{Op, Program};
use crate::workload::worksteal::{Tree, WorkStealSpec};
use crate::workload::Workload;

/// Valid placements of k queens on the first k rows of an n x n board, k = 0..=n (the last is
/// the number of solutions), for n = 4..=16. Counted by exhaustive backtracking (a bitmask
/// search, as `nq.tcell` but without its task machinery), checked against the known
/// solution counts (92 for n = 8, 14,772,512 for n = 16).
pub const PLACEMENTS: &[&[u64]] = &[
    &[1, 4, 6, 4, 2],
    &[1, 5, 12, 14, 12, 10],
    &[1, 6, 20, 36, 46, 40, 4],
    &[1, 7, 30, 76, 140, 164, 94, 40],
    &[1, 8, 42, 140, 344, 568, 550, 312, 92],
    &[1, 9, 56, 234, 732, 1614, 2292, 2038, 1066, 352],
    &[1, 10, 72, 364, 1400, 3916, 7552, 9632, 7828, 4040, 724],
    &[1, 11, 90, 536, 2468, 8492, 21362, 37248, 44148, 34774, 15116, 2680],
    &[1, 12, 110, 756, 4080, 16852, 52856, 120104, 195270, 222720, 160964, 68264, 14200],
    &[1, 13, 132, 1030, 6404, 31100, 117694, 335010, 707698, 1086568, 1151778, 813448, 350302, 73712],
    &[1, 14, 156, 1364, 9632, 54068, 241484, 835056, 2211868, 4391988, 6323032, 6471872, 4511922, 1940500, 365596],
    &[1, 15, 182, 1764, 13980, 89428, 463038, 1897702, 6120136, 15211800, 28415444, 39290462, 39157800, 26831728, 11356408, 2279184],
    &[
        1, 16, 210, 2236, 19688, 141812, 838816, 3998456, 15324708, 46358876, 108478966, 193892860, 260303408, 253897632, 171158018,
        72002088, 14772512,
    ],
];

/// `send-treq-to-initialize-task`: the first wait after `none` (`delay` = 1000 ns).
pub const DELAY: Nanos = US;
/// `worker.sh`: `DELAY-MAX` = 100 * 1000 * 1000 ns.
pub const DELAY_MAX: Nanos = 100 * MS;
/// Assumed CPU costs of the runtime's messages (module doc).
pub const REQUEST: Nanos = US;
pub const RESPOND: Nanos = 2 * US;
pub const RESULT: Nanos = US;

/// Which Tascell program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Fib,
    NQueen,
}

pub struct Tascell(Kind);

pub static FIB: Tascell = Tascell(Kind::Fib);
pub static NQUEEN: Tascell = Tascell(Kind::NQueen);

impl Tascell {
    /// The task tree for `n` with the work that makes its serial run take `serial`.
    pub fn tree(&self, n: u32, serial: Nanos) -> Result<Tree, String> {
        match self.0 {
            Kind::Fib => {
                let calls = match Tree::fib(n, 1.0) {
                    Tree::Fib { calls, .. } => calls[n as usize],
                    _ => unreachable!(),
                };
                Ok(Tree::fib(n, serial as f64 / calls))
            }
            Kind::NQueen => {
                let placements =
                    PLACEMENTS.get((n as usize).wrapping_sub(4)).ok_or_else(|| format!("n must be between 4 and 16, got {n}"))?;
                let checks = Tree::nqueens(n, 1.0, placements);
                let total = checks.work(checks.root());
                Ok(Tree::nqueens(n, serial as f64 / total, placements))
            }
        }
    }
}

impl Workload for Tascell {
    fn name(&self) -> &'static str {
        match self.0 {
            Kind::Fib => "tascell.fib",
            Kind::NQueen => "tascell.nqueen",
        }
    }
    fn describe(&self) -> &'static str {
        match self.0 {
            Kind::Fib => {
                "seed 001's tascell-fib: fib(48) by Tascell's backtracking-based work stealing (idle workers \
                 request, a busy worker backtracks to its oldest do-two and hands over the second call); \
                 ~30 s serial (assumed)"
            }
            Kind::NQueen => {
                "seed 001's tascell-nq: all 16-queens solutions by Tascell's work stealing (a busy worker \
                 hands over the upper half of its oldest do-many's remaining columns); ~10 s serial (assumed)"
            }
        }
    }
    fn progress_unit(&self) -> &'static str {
        "runs"
    }
    fn params(&self) -> Vec<ParamSpec> {
        let (n, serial, what) = match self.0 {
            Kind::Fib => (48, 30 * SEC, "fib(n); seed 001 section III-A: 48"),
            Kind::NQueen => (16, 10 * SEC, "board size (4..16); seed 001 section V-A: 16"),
        };
        vec![
            ParamSpec::int("n", n, what).range(4.0, if self.0 == Kind::Fib { 90.0 } else { 16.0 }),
            ParamSpec::duration(
                "serial",
                serial,
                "1-thread execution time on the seed's host (sets the work per call or check); assumed: \
                 seed 001 gives it only in a plot (Figure 1 / 15a)",
            ),
            ParamSpec::duration("request", REQUEST, "requester CPU per task request (recv-treq, try-treq); assumed"),
            ParamSpec::duration("respond", RESPOND, "victim CPU per task handed over (backtracking, make-and-send-task); assumed"),
            ParamSpec::duration("result", RESULT, "thief CPU to send a task's result; assumed"),
            ParamSpec::duration("delay", DELAY, "first wait after a none answer, doubled after each further none (worker.sc: 1000 ns)"),
            ParamSpec::duration("delay_max", DELAY_MAX, "longest wait after none (worker.sh DELAY-MAX: 100 ms)"),
            ParamSpec::boolean(
                "affinity",
                false,
                "worker n binds itself to CPU n as it starts (the -a option: worker.sc worker-setaffinity, \
                 sched_setaffinity); seed 001's \"thread scheduler disabled\"",
            ),
        ]
    }
    fn build(&self, threads: u32, params: &Params) -> Result<Program, String> {
        if threads == 0 {
            return Err(format!("{} needs at least 1 thread, got 0", self.name()));
        }
        let n = params.int("n") as u32;
        let serial = params.duration("serial");
        if serial == 0 {
            return Err(format!("{}: serial must be positive, got 0", self.name()));
        }
        let (delay, delay_max) = (params.duration("delay"), params.duration("delay_max"));
        if delay == 0 || delay_max < delay {
            return Err(format!("{}: need 0 < delay <= delay_max, got delay = {delay} ns, delay_max = {delay_max} ns", self.name()));
        }
        let tree = self.tree(n, serial)?;
        let mut program = Program::new(self.progress_unit());
        program.threads = vec![vec![Op::WorkSteal]; threads as usize];
        if params.boolean("affinity") {
            program.thread_cpus = (0..threads).map(|n| Some(vec![n])).collect();
        }
        program.mutexes = threads as usize;
        program.conds = threads as usize;
        program.work_stealing = Some(WorkStealSpec {
            tree,
            request: params.duration("request"),
            respond: params.duration("respond"),
            result: params.duration("result"),
            delay,
            delay_max,
        });
        Ok(program)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::builtin::test_support::*;

    #[test]
    fn placements_end_in_the_known_solution_counts() {
        for (i, p) in PLACEMENTS.iter().enumerate() {
            assert_eq!(p.len(), i + 5, "n = {}", i + 4);
            assert_eq!(p[0], 1);
        }
        assert_eq!(*PLACEMENTS[4].last().unwrap(), 92);
        assert_eq!(*PLACEMENTS[12].last().unwrap(), 14_772_512);
    }

    #[test]
    fn serial_time_is_the_trees_total_work() {
        for w in [&FIB, &NQUEEN] {
            assert_defaults_parse(w);
            let params = params_with(w, &[("serial", "12s".into())]);
            let program = build_valid(w, 16, &params);
            let tree = &program.work_stealing.as_ref().unwrap().tree;
            let total = tree.work(tree.root());
            assert!((total - 12e9).abs() < 1.0, "{}: {total}", w.name());
            assert!(program.threads.iter().all(|t| t == &vec![Op::WorkSteal]));
        }
        let fib = FIB.tree(48, 30 * SEC).unwrap();
        // 2 F(48) - 1 calls.
        assert_eq!(
            fib.work(fib.root())
                / match &fib {
                    Tree::Fib { unit, .. } => *unit,
                    _ => unreachable!(),
                },
            9_615_053_951.0
        );
    }

    #[test]
    fn bad_parameters_are_errors() {
        assert!(NQUEEN.tree(17, SEC).unwrap_err().contains("between 4 and 16"));
        let params = params_with(&FIB, &[("delay", "1ms".into()), ("delay_max", "10us".into())]);
        assert!(FIB.build(4, &params).unwrap_err().contains("delay <= delay_max"));
        assert!(FIB.build(0, &Params::defaults(&FIB.params())).is_err());
    }
}
