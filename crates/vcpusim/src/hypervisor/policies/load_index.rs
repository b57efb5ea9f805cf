//! The least loaded pCPU that passes a test, without reading every pCPU: a tournament tree of
//! the pool's run-queue loads, for the seed-000 placements (`balance`, `lc-balance`,
//! policies/balance_placement.rs), which look for the least loaded run queue holding no sibling of the
//! waking vCPU at every wakeup (no scan that grows with the host on a per-event path: the scan
//! takes 3.9 µs a wakeup event on 1,024 pCPUs against 0.09 on 8).
//!
//! ```text
//!   node 1                 min(2, 3)              each node: the smallest key below it
//!   node 2, 3         min(4,5)   min(6,7)
//!   leaves 4..8      (l0,0) (l1,1) (l2,2) MAX     leaf size+p: (load << 32) | p, or MAX when
//!                                                 p is not the pool's (absent)
//! ```
//!
//! A key orders by load, then by pCPU number, so the tree's smallest key is the lowest-numbered
//! pCPU of least load: the placement's order before its preference for the previous pCPU, which
//! the caller applies (placement.rs). A search (`least_where`) walks down the smaller child
//! first and skips every subtree whose smallest key is no better than the best leaf found: it
//! reads the leaves the test refuses on the way (a waking vCPU's siblings' run queues, at most
//! one per sibling) and the path to each, O((k + 1) log P) for k refused leaves lighter than the
//! answer. A test that refuses most leaves (a vCPU pinned to a few pCPUs) makes the search read
//! nearly the whole tree; callers scan instead then.
//!
//! The index also keeps the sum of the loads (`lc-balance`'s pool average). Updating a load
//! costs one walk up, log2 P nodes.

/// Key of an absent leaf (a pCPU outside the pool): above every present key, which uses at most
/// 96 bits.
const ABSENT: u128 = u128::MAX;

#[derive(Clone, Debug)]
pub struct LoadIndex {
    /// Leaves: `size` (a power of two, at least the pCPU count), from `nodes[size]`.
    size: usize,
    /// `nodes[1]` is the root, `nodes[i]` the smaller of `nodes[2i]` and `nodes[2i + 1]`.
    nodes: Vec<u128>,
    /// Each pCPU's load, present or not (the sum below counts them all).
    loads: Vec<u64>,
    /// The sum of `loads`.
    total: u128,
}

#[inline(always)]
fn key(load: u64, p: usize) -> u128 {
    ((load as u128) << 32) | p as u128
}

impl LoadIndex {
    /// An index of `npcpus` pCPUs, all present with load 0.
    pub fn new(npcpus: usize) -> Self {
        let size = npcpus.max(1).next_power_of_two();
        let mut ix = LoadIndex { size, nodes: vec![ABSENT; 2 * size], loads: vec![0; npcpus], total: 0 };
        for p in 0..npcpus {
            ix.nodes[size + p] = key(0, p);
        }
        for i in (1..size).rev() {
            ix.nodes[i] = ix.nodes[2 * i].min(ix.nodes[2 * i + 1]);
        }
        ix
    }

    /// pCPU `p`'s load is now `load`.
    #[inline]
    pub fn set(&mut self, p: usize, load: u64) {
        let old = std::mem::replace(&mut self.loads[p], load);
        self.total = self.total - old as u128 + load as u128;
        if self.nodes[self.size + p] != ABSENT {
            self.put(p, key(load, p));
        }
    }

    /// Whether pCPU `p` is searched (the pool's) or not.
    pub fn set_present(&mut self, p: usize, present: bool) {
        self.put(p, if present { key(self.loads[p], p) } else { ABSENT });
    }

    fn put(&mut self, p: usize, k: u128) {
        let mut i = self.size + p;
        self.nodes[i] = k;
        while i > 1 {
            i /= 2;
            let m = self.nodes[2 * i].min(self.nodes[2 * i + 1]);
            if self.nodes[i] == m {
                // Nothing above changes either.
                break;
            }
            self.nodes[i] = m;
        }
    }

    /// The sum of every pCPU's load (absent ones included).
    pub fn total(&self) -> u128 {
        self.total
    }

    /// pCPU `p`'s load as the index holds it.
    pub fn load(&self, p: usize) -> u64 {
        self.loads[p]
    }

    /// The present pCPU of least load passing `keep`, the lowest-numbered among equals: its
    /// number and load.
    pub fn least_where(&self, keep: impl Fn(usize) -> bool) -> Option<(usize, u64)> {
        let mut best = ABSENT;
        // Depth-first, the smaller child on top: at most one pending sibling per level.
        let mut stack = [0usize; usize::BITS as usize + 1];
        let mut top = 1;
        stack[0] = 1;
        while top > 0 {
            top -= 1;
            let i = stack[top];
            if self.nodes[i] >= best {
                continue;
            }
            if i >= self.size {
                if keep(i - self.size) {
                    best = self.nodes[i];
                }
                continue;
            }
            let (l, r) = (2 * i, 2 * i + 1);
            let (first, second) = if self.nodes[l] <= self.nodes[r] { (l, r) } else { (r, l) };
            stack[top] = second;
            stack[top + 1] = first;
            top += 2;
        }
        (best != ABSENT).then_some(((best & 0xFFFF_FFFF) as usize, (best >> 32) as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// The scan the index replaces: the least (load, p) over present pCPUs passing `keep`.
    fn scan(loads: &[u64], present: &[bool], keep: impl Fn(usize) -> bool) -> Option<(usize, u64)> {
        (0..loads.len()).filter(|&p| present[p] && keep(p)).min_by_key(|&p| (loads[p], p)).map(|p| (p, loads[p]))
    }

    #[test]
    fn the_index_answers_as_the_scan_through_random_changes() {
        let mut rng = rand_pcg::Pcg64::seed_from_u64(7);
        for n in [1usize, 2, 3, 7, 8, 9, 64, 100, 257] {
            let mut ix = LoadIndex::new(n);
            let mut loads = vec![0u64; n];
            let mut present = vec![true; n];
            for step in 0..3_000 {
                let p = rng.random_range(0..n);
                match rng.random_range(0..10) {
                    0 => {
                        present[p] = !present[p];
                        ix.set_present(p, present[p]);
                    }
                    // Few distinct loads, so that ties are common.
                    _ => {
                        loads[p] = rng.random_range(0..6) * 1024;
                        ix.set(p, loads[p]);
                    }
                }
                let refused: Vec<bool> = (0..n).map(|_| rng.random_bool(0.3)).collect();
                let keep = |q: usize| !refused[q];
                assert_eq!(ix.least_where(keep), scan(&loads, &present, keep), "n {n}, step {step}");
                assert_eq!(ix.least_where(|_| true), scan(&loads, &present, |_| true), "n {n}, step {step}");
                assert_eq!(ix.total(), loads.iter().map(|&l| l as u128).sum::<u128>());
                assert_eq!(ix.load(p), loads[p]);
            }
        }
    }

    #[test]
    fn nothing_kept_or_nothing_present_is_none() {
        let mut ix = LoadIndex::new(5);
        assert_eq!(ix.least_where(|_| false), None);
        for p in 0..5 {
            ix.set(p, 10 * p as u64);
            ix.set_present(p, false);
        }
        assert_eq!(ix.least_where(|_| true), None);
        // Absent pCPUs still count in the sum, and come back with the load they were given.
        assert_eq!(ix.total(), 100);
        ix.set_present(3, true);
        assert_eq!(ix.least_where(|_| true), Some((3, 30)));
    }

    #[test]
    fn the_largest_loads_and_pcpu_numbers_keep_their_order() {
        let mut ix = LoadIndex::new(3);
        ix.set(0, u64::MAX);
        ix.set(1, u64::MAX - 1);
        ix.set(2, u64::MAX);
        assert_eq!(ix.least_where(|_| true), Some((1, u64::MAX - 1)));
        assert_eq!(ix.least_where(|p| p != 1), Some((0, u64::MAX)));
        assert_eq!(ix.total(), 3 * u64::MAX as u128 - 1);
    }
}
