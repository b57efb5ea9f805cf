//! The steal index: the queued high-throughput vCPUs that balancing may take (Algorithm 4 line
//! 11, `Hybrid::steal_candidate`), kept in the order that function wants them, so that a steal
//! costs O(log V) instead of a walk over every run queue (that walk is O(V) per halt, pause-loop
//! exit and empty pCPU at a slot boundary: 47% of hybrid's instructions per event at 1024
//! pCPUs).
//!
//! ```text
//!   key = (PE descending, home pCPU ascending, queue ticket ascending, vCPU)
//!   run queue of pCPU 2:  v7 (PE 300, ticket 11)  v3 (PE 300, ticket 14)  v9 (PE 40, ticket 12)
//!   index order:          ... (300, 2, 11, v7) (300, 2, 14, v3) ... (40, 2, 12, v9) ...
//! ```
//!
//! The scan it replaces visited the pool's pCPUs in increasing order and each run queue from its
//! head, keeping the first vCPU of strictly largest PE. A run queue is always sorted by
//! decreasing PE (`Hybrid::enqueue` inserts behind every vCPU of at least its PE, and PE changes
//! only at slot boundaries, where `Hybrid::sort_runqs` re-sorts), so among equal PE the scan's
//! winner is the lowest pCPU, then the one nearest its queue's head. A ticket records that
//! position: `enqueue` gives the next one (behind all of equal PE), and after every re-sort the
//! queues are re-ticketed in order. A member is a vCPU in a run queue (awake), of a
//! high-throughput VM (`hit`, refreshed at slot boundaries and by `adjust`) and picked by no pCPU
//! (`picked_by == 0`); `Hybrid::check` compares the index with the scan's view.
//!
//! The members are held in a sorted list while the host has at most [`SMALL_INDEX`] vCPUs (a
//! binary search and a move of at most that many keys per change, where a tree's search and
//! bookkeeping cost more for so few), in an `OrderedSet` beyond (`policies/ordered_set.rs`:
//! log-time changes on a big host, and no allocation once it has held its most members); the
//! same order either way.

use crate::hypervisor::policies::ordered_set::OrderedSet;
use crate::ids::{PcpuId, VcpuId};
use std::cmp::Reverse;

/// One member's place in the index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct StealKey {
    pub pe: Reverse<i64>,
    pub home: PcpuId,
    pub ticket: u64,
    pub v: VcpuId,
}

/// Hosts of at most this many vCPUs keep the members in a sorted list, bigger ones in an `OrderedSet`.
pub(super) const SMALL_INDEX: usize = 64;

/// The members, and each vCPU's key while it is one.
#[derive(Clone, Debug, Default)]
pub(super) struct StealIndex {
    /// The members in order, while `keys` covers at most `SMALL_INDEX` vCPUs.
    small: Vec<StealKey>,
    /// The members in order, once `keys` covers more.
    large: OrderedSet<StealKey>,
    keys: Vec<Option<StealKey>>,
    next_ticket: u64,
}

impl StealIndex {
    /// A fresh queue position, behind every one given so far.
    pub fn ticket(&mut self) -> u64 {
        self.next_ticket += 1;
        self.next_ticket
    }

    /// Make `v`'s membership `key` (None: not a member), replacing what it was.
    pub fn place(&mut self, v: VcpuId, key: Option<StealKey>) {
        if self.keys.len() <= v.idx() {
            self.keys.resize(v.idx() + 1, None);
            if self.is_big() && !self.small.is_empty() {
                self.large.extend(self.small.drain(..));
            }
        }
        let old = self.keys[v.idx()];
        if old == key {
            return;
        }
        let big = self.is_big();
        if let Some(k) = old {
            if big {
                self.large.remove(&k);
            } else if let Ok(i) = self.small.binary_search(&k) {
                self.small.remove(i);
            }
        }
        if let Some(k) = key {
            if big {
                self.large.insert(k);
            } else if let Err(i) = self.small.binary_search(&k) {
                self.small.insert(i, k);
            }
        }
        self.keys[v.idx()] = key;
    }

    /// Whether the index holds more vCPUs than a sorted list serves well (`SMALL_INDEX`): its
    /// members are then in the ordered set.
    fn is_big(&self) -> bool {
        self.keys.len() > SMALL_INDEX
    }

    /// Make the memberships of vCPUs `0..n` what `key_of` says (None: not a member), as `place`
    /// for each would, at once: on a small host the members are sorted once (a slot boundary
    /// re-keys every vCPU: one sort instead of a binary-search insert per member).
    pub fn rebuild(&mut self, n: usize, key_of: impl Fn(VcpuId) -> Option<StealKey>) {
        if self.keys.len() < n {
            self.keys.resize(n, None);
        }
        self.small.clear();
        self.large.clear();
        let big = self.is_big();
        for (v, slot) in self.keys.iter_mut().enumerate() {
            *slot = if v < n { key_of(VcpuId(v as u32)) } else { None };
            if let Some(k) = *slot {
                if big {
                    self.large.insert(k);
                } else {
                    self.small.push(k);
                }
            }
        }
        // Keys are distinct (each names its vCPU).
        self.small.sort_unstable();
    }

    /// The members, best first.
    pub fn iter(&self) -> impl Iterator<Item = &StealKey> + '_ {
        self.small.iter().chain(self.large.iter())
    }

    /// The members as a sorted list (for `Hybrid::check`).
    pub fn members(&self) -> Vec<StealKey> {
        self.iter().copied().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(pe: i64, home: u32, ticket: u64, v: u32) -> StealKey {
        StealKey { pe: Reverse(pe), home: PcpuId(home), ticket, v: VcpuId(v) }
    }

    #[test]
    fn orders_by_pe_then_pcpu_then_ticket() {
        let mut ix = StealIndex::default();
        ix.place(VcpuId(0), Some(key(100, 3, 1, 0)));
        ix.place(VcpuId(1), Some(key(300, 2, 9, 1)));
        ix.place(VcpuId(2), Some(key(300, 2, 4, 2)));
        ix.place(VcpuId(3), Some(key(300, 1, 20, 3)));
        let order: Vec<u32> = ix.iter().map(|k| k.v.0).collect();
        assert_eq!(order, [3, 2, 1, 0]);
    }

    #[test]
    fn small_and_large_hosts_keep_the_same_order() {
        // The same random places on a host of SMALL_INDEX vCPUs (a sorted list) and on one that
        // grows past it midway (moved into the ordered set): each iterates as the sorted keys placed.
        let mut rng = crate::engine::rng::stream(1, "steal index order test");
        let mut rnd = |n: u64| rand::Rng::random_range(&mut rng, 0..n);
        for grow in [false, true] {
            let mut ix = StealIndex::default();
            let mut want: Vec<Option<StealKey>> = vec![None; SMALL_INDEX + 10];
            for step in 0..20_000u64 {
                let n = if grow && step >= 10_000 { SMALL_INDEX + 10 } else { SMALL_INDEX };
                let v = rnd(n as u64) as usize;
                let key = (rnd(3) > 0).then(|| key(rnd(4) as i64, rnd(3) as u32, step, v as u32));
                ix.place(VcpuId(v as u32), key);
                want[v] = key;
                if step % 97 == 0 {
                    let mut sorted: Vec<StealKey> = want.iter().flatten().copied().collect();
                    sorted.sort();
                    assert_eq!(ix.members(), sorted, "step {step}, grow {grow}");
                }
            }
            assert_eq!(ix.large.is_empty(), !grow, "a host past SMALL_INDEX vCPUs uses the ordered set");
        }
    }

    #[test]
    fn a_rebuild_leaves_what_placing_each_vcpu_leaves() {
        // Random memberships rebuilt at once and placed one by one, on a small host (sorted list)
        // and on a big one (the ordered set), after earlier members: the same members, in the same order,
        // and the same later changes (each vCPU's recorded key).
        let mut rng = crate::engine::rng::stream(1, "steal index rebuild test");
        let mut rnd = |n: u64| rand::Rng::random_range(&mut rng, 0..n);
        for n in [SMALL_INDEX / 2, SMALL_INDEX, SMALL_INDEX + 20] {
            for round in 0..50u64 {
                let (mut bulk, mut each) = (StealIndex::default(), StealIndex::default());
                for v in 0..n {
                    let k = (rnd(2) == 0).then(|| key(rnd(5) as i64, rnd(4) as u32, rnd(1000), v as u32));
                    bulk.place(VcpuId(v as u32), k);
                    each.place(VcpuId(v as u32), k);
                }
                let new: Vec<Option<StealKey>> =
                    (0..n).map(|v| (rnd(3) > 0).then(|| key(rnd(5) as i64, rnd(4) as u32, 1000 + rnd(1000), v as u32))).collect();
                bulk.rebuild(n, |v| new[v.idx()]);
                for (v, k) in new.iter().enumerate() {
                    each.place(VcpuId(v as u32), *k);
                }
                assert_eq!(bulk.members(), each.members(), "n {n}, round {round}");
                assert_eq!(bulk.keys, each.keys);
                let v = rnd(n as u64) as u32;
                bulk.place(VcpuId(v), None);
                each.place(VcpuId(v), None);
                assert_eq!(bulk.members(), each.members());
            }
        }
    }

    #[test]
    fn place_replaces_and_removes() {
        let mut ix = StealIndex::default();
        ix.place(VcpuId(5), Some(key(10, 0, 1, 5)));
        ix.place(VcpuId(5), Some(key(20, 1, 2, 5)));
        assert_eq!(ix.members(), [key(20, 1, 2, 5)]);
        ix.place(VcpuId(5), None);
        assert!(ix.members().is_empty());
        ix.place(VcpuId(5), Some(key(1, 0, 3, 5)));
        ix.rebuild(6, |_| None);
        assert!(ix.members().is_empty());
        assert_eq!(ix.ticket() + 1, ix.ticket(), "tickets increase");
    }
}
