//! A run queue's timeline (the rb-tree of `struct cfs_rq`): the queued entities ordered by
//! (vruntime, key), as a sorted vector.
//!
//! Not a `BTreeSet<(u64, u32)>`: its inserts and removes take ~12% of the quickstart's
//! instructions (callgrind), for run queues that hold a handful of entities (a
//! pCPU's root run queue at most one group entity per VM, a group run queue the VM's vCPUs queued
//! on that pCPU). A sorted vector answers `first` with one load, and its inserts and removes are
//! a short scan and a few swaps of 16-byte entries (no memmove call, no node allocation; a
//! binary search cost more than the scan over so few entries). The order
//! is the set's (tuples compare by vruntime, then key), and so are the answers: every run picks
//! the same entities.

/// The queued entities of one run queue by (vruntime, key), each at most once.
#[derive(Clone, Debug, Default)]
pub(super) struct Timeline {
    sorted: Vec<(u64, u32)>,
}

impl Timeline {
    /// The leftmost entity (smallest vruntime, then key).
    #[inline]
    pub(super) fn first(&self) -> Option<&(u64, u32)> {
        self.sorted.first()
    }

    /// Queue `x`; false (and nothing changes) if it is queued already, as `BTreeSet::insert`.
    /// One insertion-sort step from the right end: a waking or preempted entity's vruntime is
    /// usually among the largest.
    #[inline(always)]
    pub(super) fn insert(&mut self, x: (u64, u32)) -> bool {
        let s = &mut self.sorted;
        s.push(x);
        let mut j = s.len() - 1;
        while j > 0 && s[j - 1] > x {
            s.swap(j - 1, j);
            j -= 1;
        }
        if j > 0 && s[j - 1] == x {
            // Queued already: take the copy back out.
            Self::remove_at(s, j);
            return false;
        }
        true
    }

    /// Dequeue `x`; false if it was not queued. Searched from the left: the entity picked to run
    /// (`set_next`) is usually the leftmost.
    #[inline]
    pub(super) fn remove(&mut self, x: &(u64, u32)) -> bool {
        match self.sorted.iter().position(|e| e == x) {
            Some(i) => {
                Self::remove_at(&mut self.sorted, i);
                true
            }
            None => false,
        }
    }

    /// Bubble entry `i` to the end and drop it: a few swaps, where `Vec::remove` calls memmove.
    #[inline(always)]
    fn remove_at(s: &mut Vec<(u64, u32)>, i: usize) {
        for j in i..s.len() - 1 {
            s.swap(j, j + 1);
        }
        s.pop();
    }

    #[inline]
    pub(super) fn contains(&self, x: &(u64, u32)) -> bool {
        self.sorted.contains(x)
    }

    /// The queued entities, leftmost first.
    #[inline]
    pub(super) fn iter(&self) -> std::slice::Iter<'_, (u64, u32)> {
        self.sorted.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::Timeline;
    use std::collections::BTreeSet;

    #[test]
    fn answers_as_a_btree_set_under_random_inserts_and_removes() {
        let mut t = Timeline::default();
        let mut set = BTreeSet::new();
        let mut rng = crate::engine::rng::stream(1, "timeline test");
        let mut rnd = |n: u64| rand::Rng::random_range(&mut rng, 0..n);
        for _ in 0..20_000 {
            // Few distinct values, so that duplicates and misses happen often.
            let x = (rnd(20), rnd(4) as u32);
            match rnd(3) {
                0 => assert_eq!(t.insert(x), set.insert(x)),
                1 => assert_eq!(t.remove(&x), set.remove(&x)),
                _ => assert_eq!(t.contains(&x), set.contains(&x)),
            }
            assert_eq!(t.first(), set.first());
            assert!(t.iter().eq(set.iter()));
        }
    }
}
