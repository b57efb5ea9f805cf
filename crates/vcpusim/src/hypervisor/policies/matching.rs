//! Distinct pCPUs for co-scheduled vCPUs under hard affinity: bipartite matching of vCPUs to
//! pCPUs by augmenting paths (Kuhn's algorithm).
//!
//! Co-scheduling a VM needs one pCPU per vCPU, all distinct, each inside that vCPU's hard
//! affinity (and the pool). The co-scheduling policies (`gang`, `hybrid`) first place vCPUs by
//! their own stable preferences and only call `augment` for those left unplaced; an augmenting
//! path may move an already placed vCPU to another of its allowed pCPUs to make room. Everything
//! is visited in a fixed order (left vertices by index, pCPUs in the given increasing order), so
//! the result is deterministic.

use crate::ids::PcpuId;

/// A partial assignment of left vertices (vCPUs, by position in the caller's list) to pCPUs.
pub struct Matching {
    /// The pCPU of each left vertex, if any.
    pub of: Vec<Option<PcpuId>>,
    /// The left vertex holding each pCPU (indexed by host-wide pCPU id).
    holder: Vec<Option<usize>>,
}

impl Matching {
    /// An empty assignment of `nleft` vertices over a host of `npcpus` pCPUs (host-wide ids).
    pub fn new(nleft: usize, npcpus: usize) -> Self {
        Matching { of: vec![None; nleft], holder: vec![None; npcpus] }
    }

    /// Whether `p` is held by some left vertex.
    pub fn is_taken(&self, p: PcpuId) -> bool {
        self.holder.get(p.idx()).is_some_and(|h| h.is_some())
    }

    /// Put left vertex `i` on the free pCPU `p`.
    pub fn set(&mut self, i: usize, p: PcpuId) {
        debug_assert!(!self.is_taken(p) && self.of[i].is_none());
        if self.holder.len() <= p.idx() {
            self.holder.resize(p.idx() + 1, None);
        }
        self.holder[p.idx()] = Some(i);
        self.of[i] = Some(p);
    }

    /// Kuhn's augmenting-path step for the unplaced left vertex `i`: it takes a free allowed pCPU,
    /// or one whose holder can (recursively) move to another of its allowed pCPUs. Only holders
    /// for which `movable` is true are moved. `pcpus` lists the candidate pCPUs in the order they
    /// are tried (increasing). Returns whether `i` was placed; on failure nothing changes.
    pub fn augment(
        &mut self,
        i: usize,
        pcpus: &[PcpuId],
        allowed: &dyn Fn(usize, PcpuId) -> bool,
        movable: &dyn Fn(usize) -> bool,
    ) -> bool {
        if let Some(max) = pcpus.iter().map(|p| p.idx() + 1).max() {
            if self.holder.len() < max {
                self.holder.resize(max, None);
            }
        }
        let mut visited = vec![false; self.holder.len()];
        self.dfs(i, pcpus, allowed, movable, &mut visited)
    }

    fn dfs(
        &mut self,
        i: usize,
        pcpus: &[PcpuId],
        allowed: &dyn Fn(usize, PcpuId) -> bool,
        movable: &dyn Fn(usize) -> bool,
        visited: &mut [bool],
    ) -> bool {
        for &p in pcpus {
            if visited[p.idx()] || !allowed(i, p) {
                continue;
            }
            visited[p.idx()] = true;
            let free = match self.holder[p.idx()] {
                None => true,
                Some(j) => movable(j) && self.dfs(j, pcpus, allowed, movable, visited),
            };
            if free {
                self.holder[p.idx()] = Some(i);
                self.of[i] = Some(p);
                return true;
            }
        }
        false
    }

    /// Whether all `n` left vertices can be given distinct pCPUs of `pcpus` within `allowed`.
    pub fn exists(n: usize, pcpus: &[PcpuId], allowed: &dyn Fn(usize, PcpuId) -> bool) -> bool {
        if n > pcpus.len() {
            return false;
        }
        let npcpus = pcpus.iter().map(|p| p.idx() + 1).max().unwrap_or(0);
        let mut m = Matching::new(n, npcpus);
        (0..n).all(|i| m.augment(i, pcpus, allowed, &|_| true))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ps(ids: &[u32]) -> Vec<PcpuId> {
        ids.iter().map(|p| PcpuId(*p)).collect()
    }

    #[test]
    fn an_augmenting_path_moves_a_placed_vertex_to_make_room() {
        // Vertex 0 may use {4, 5}, vertex 1 only {4}. Greedy puts 0 on 4; 1 then moves it to 5.
        let masks = [ps(&[4, 5]), ps(&[4])];
        let allowed = |i: usize, p: PcpuId| masks[i].contains(&p);
        let pool = ps(&[4, 5, 6]);
        let mut m = Matching::new(2, 8);
        m.set(0, PcpuId(4));
        assert!(!m.augment(1, &pool, &allowed, &|_| false), "nobody may move");
        assert_eq!(m.of, vec![Some(PcpuId(4)), None]);
        assert!(m.augment(1, &pool, &allowed, &|_| true));
        assert_eq!(m.of, vec![Some(PcpuId(5)), Some(PcpuId(4))]);
        assert!(Matching::exists(2, &pool, &allowed));
        // Two vertices that may only use pCPU 4 have no matching.
        assert!(!Matching::exists(2, &pool, &|_, p| p == PcpuId(4)));
        assert!(!Matching::exists(4, &pool, &|_, _| true), "more vertices than pCPUs");
    }
}
