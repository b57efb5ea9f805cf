//! What a work-stealing computation is, for the Tascell runtime model (`guest/worksteal.rs`):
//! the task tree of the program, the work of each node, and the runtime's costs.
//!
//! A Tascell program (Hiraishi, Yasugi, Umatani, Yuasa, "Backtracking-based load balancing",
//! PPoPP 2009; sources: github.com/tascell/sc-tascell, `src/sample/tcell/`) is a recursive
//! search whose parallel constructs are `do-two` (two recursive calls, `fib.tcell`) and
//! `do-many for i from a to b` (a loop of recursive calls, `nq.tcell`). Both are *loops of
//! iterations* here: node `fib(n)` has two iterations, `fib(n-1)` and `fib(n-2)`; a
//! `nqueens` node at row `k` has `n - k` iterations, one per candidate column. An iteration
//! is some work of its own (`pre`) and then, maybe, a child node. The rule that splits a loop
//! is the same for both (`src/rule/tcell.rule`, `do-two` and `do-many`): a loop whose
//! iteration `cur` is in progress and whose end is `end` can spawn while `end - cur >= 2`,
//! giving away `[(1 + cur + end) / 2, end)`; for `do-two` in its first branch that is exactly
//! the second branch.
//!
//! Sizes are in work-ns (`hardware/speed.rs`), as `f64`: a node's work is the sum of its
//! iterations'.

use crate::time::Nanos;

/// The recursion a Tascell program runs.
#[derive(Clone, Debug, PartialEq)]
pub enum Tree {
    /// `fib.tcell`: `fib(n) = fib(n-1) + fib(n-2)`, `fib(n <= 2) = 1`, as a `do-two`.
    /// Every call costs `unit`; `calls[m]` is the number of calls of `fib(m)`.
    Fib { n: u32, unit: f64, calls: Vec<f64> },
    /// `nq.tcell`: all solutions of the `n`-queens problem, one `do-many` over the candidate
    /// columns of each row. An *average* tree: a row-`k` node has `n - k` equal iterations,
    /// each a candidate check of `unit` and `branch[k] / (n - k)` of a row-`k + 1` node (the
    /// expected number of valid children is `branch[k]`); `work[k]` is the expected work of a
    /// row-`k` node (`NQueens::work`).
    NQueens { n: u32, unit: f64, branch: Vec<f64>, work: Vec<f64> },
}

/// A node of the tree: `depth` is fib's argument or the nqueens row; `scale` shrinks the
/// nqueens average tree's fractional children (1 for fib).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Node {
    pub depth: u32,
    pub scale: f64,
}

impl Tree {
    /// fib(`n`) at `unit` ns per call.
    pub fn fib(n: u32, unit: f64) -> Tree {
        let mut calls = vec![1.0; n.max(2) as usize + 1];
        for m in 3..=n as usize {
            calls[m] = 1.0 + calls[m - 1] + calls[m - 2];
        }
        Tree::Fib { n, unit, calls }
    }

    /// The `n`-queens search at `unit` ns per candidate check, with `placements[k]` the number of
    /// valid placements of `k` queens on the first `k` rows (`placements[0] = 1`; the last entry,
    /// `k = n`, is the number of solutions).
    pub fn nqueens(n: u32, unit: f64, placements: &[u64]) -> Tree {
        let n_us = n as usize;
        assert_eq!(placements.len(), n_us + 1, "one count per row and the solutions");
        // Row k (0..n-1) is a call of nqueens(n, k, ...): it checks n - k candidates and
        // recurses into the valid ones, except at k = n - 1, where a valid candidate is a
        // solution (`(if (== k (- n 1)) (inc s) ...)`).
        let branch: Vec<f64> =
            (0..n_us).map(|k| if k + 1 < n_us { placements[k + 1] as f64 / placements[k] as f64 } else { 0.0 }).collect();
        let mut work = vec![0.0; n_us + 1];
        for k in (0..n_us).rev() {
            work[k] = (n_us - k) as f64 * unit + branch[k] * work[k + 1];
        }
        Tree::NQueens { n, unit, branch, work }
    }

    /// The whole computation: the root node.
    pub fn root(&self) -> Node {
        match self {
            Tree::Fib { n, .. } => Node { depth: *n, scale: 1.0 },
            Tree::NQueens { .. } => Node { depth: 0, scale: 1.0 },
        }
    }

    /// Iterations of `node`'s loop (a leaf is one iteration with no child).
    pub fn iterations(&self, node: Node) -> u32 {
        match self {
            Tree::Fib { .. } => {
                if node.depth <= 2 {
                    1
                } else {
                    2
                }
            }
            Tree::NQueens { n, .. } => n - node.depth,
        }
    }

    /// Work of iteration `j` of `node` before its child (the call's own work).
    pub fn pre(&self, node: Node, j: u32) -> f64 {
        match self {
            // The call's own cost is counted before its first child.
            Tree::Fib { unit, .. } => {
                if j == 0 {
                    *unit
                } else {
                    0.0
                }
            }
            Tree::NQueens { unit, .. } => unit * node.scale,
        }
    }

    /// The child node of iteration `j` of `node`, if it recurses.
    pub fn child(&self, node: Node, j: u32) -> Option<Node> {
        match self {
            Tree::Fib { .. } => (node.depth > 2).then(|| Node { depth: node.depth - 1 - j, scale: 1.0 }),
            Tree::NQueens { n, branch, .. } => {
                let k = node.depth as usize;
                (node.depth + 1 < *n).then(|| Node { depth: node.depth + 1, scale: node.scale * branch[k] / (n - node.depth) as f64 })
            }
        }
    }

    /// Work of a whole node.
    pub fn work(&self, node: Node) -> f64 {
        match self {
            Tree::Fib { unit, calls, .. } => unit * calls[node.depth as usize],
            Tree::NQueens { work, .. } => node.scale * work[node.depth as usize],
        }
    }

    /// Work of iteration `j` of `node`: its own work and its child's.
    pub fn iteration(&self, node: Node, j: u32) -> f64 {
        self.pre(node, j) + self.child(node, j).map_or(0.0, |c| self.work(c))
    }

    /// Work of iterations `lo .. hi` of `node`.
    pub fn range(&self, node: Node, lo: u32, hi: u32) -> f64 {
        match self {
            // nqueens iterations are equal.
            Tree::NQueens { .. } => f64::from(hi.saturating_sub(lo)) * self.iteration(node, lo.min(hi)),
            Tree::Fib { .. } => (lo..hi).map(|j| self.iteration(node, j)).sum(),
        }
    }

    /// Which iteration of `node`, from `lo`, is in progress after `done` work, and how far into
    /// it: `(j, offset)`, with `j < hi` (the last one absorbs rounding).
    pub fn locate(&self, node: Node, lo: u32, hi: u32, done: f64) -> (u32, f64) {
        let mut left = done.max(0.0);
        let mut j = lo;
        while j + 1 < hi {
            let size = self.iteration(node, j);
            if left < size {
                break;
            }
            left -= size;
            j += 1;
        }
        (j, left)
    }
}

/// A work-stealing computation and the runtime's costs (`Program::work_stealing`).
#[derive(Clone, Debug, PartialEq)]
pub struct WorkStealSpec {
    pub tree: Tree,
    /// CPU the requester spends on one task request: `send-treq-to-initialize-task`, the
    /// victim scan of `recv-treq` and the `try-treq` checks under the victim's `thr->mut`.
    pub request: Nanos,
    /// CPU the victim spends answering one request at its poll: backtracking
    /// (`handle-reqs` through the nested `bk` functions), the `:put` body and
    /// `make-and-send-task`.
    pub respond: Nanos,
    /// CPU a thief spends sending a finished task's result (`:get` data, `send-rslt`).
    pub result: Nanos,
    /// First wait after a `none` answer; doubled after each further `none` up to `delay_max`
    /// (`send-treq-to-initialize-task`: `delay` starts at 1000 ns; `DELAY-MAX` in `worker.sh`).
    pub delay: Nanos,
    pub delay_max: Nanos,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fib_work_is_calls_times_unit_and_iterations_add_up() {
        let t = Tree::fib(10, 2.0);
        // fib(10) = 55 takes 2 * 55 - 1 = 109 calls.
        assert_eq!(t.work(t.root()), 218.0);
        let root = t.root();
        assert_eq!(t.range(root, 0, 2), t.work(root));
        assert_eq!(t.child(root, 1), Some(Node { depth: 8, scale: 1.0 }));
        assert_eq!(t.iterations(Node { depth: 2, scale: 1.0 }), 1);
        assert_eq!(t.locate(root, 0, 2, 2.0 + t.work(Node { depth: 9, scale: 1.0 }) + 1.0), (1, 1.0));
    }

    #[test]
    fn nqueens_average_tree_keeps_the_total_checks() {
        // 4-queens: 1, 4, 6, 4, 2 placements of 0..4 queens.
        let t = Tree::nqueens(4, 1.0, &[1, 4, 6, 4, 2]);
        // Checks: 4 at row 0, 3 per row-1 node (4 nodes), 2 per row-2 node (6), 1 per row-3 (4).
        let checks = 4.0 + 4.0 * 3.0 + 6.0 * 2.0 + 4.0;
        assert!((t.work(t.root()) - checks).abs() < 1e-9, "{}", t.work(t.root()));
        let root = t.root();
        assert!((t.range(root, 0, 4) - t.work(root)).abs() < 1e-9);
        assert_eq!(t.child(Node { depth: 3, scale: 1.0 }, 0), None);
    }
}
