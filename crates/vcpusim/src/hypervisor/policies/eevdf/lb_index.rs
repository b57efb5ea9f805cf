//! The load balancer's sums, kept as run queues change, so that `find_busiest_group` costs
//! O(log groups) instead of a pass over every pCPU of the domain (nothing O(P) per event: with
//! that pass an idle pCPU of a flat 1,024-pCPU host balances over 1,024 one-pCPU groups at each
//! newly-idle balance, 126 k instructions a call).
//!
//! ```text
//!   domain instance (one per distinct span of a level, shared by every pCPU of the span)
//!     groups, canonical order (by first pCPU)   g0   g1   g2 ...   sums: nr, load, idle pCPUs
//!     busiest index  OrderedSet<(busyness, g)>  only groups with a task, ordered as `busier`
//!     sums of the span: load, run queues with more than one task (rd->overload at the top)
//!   per pCPU: (instance, group) at each of its levels and in every instance whose span holds
//!   it, and what it last added to the sums
//! ```
//!
//! Linux computes the same numbers each time (`update_sd_lb_stats` -> `update_sg_lb_stats`
//! over every pCPU of every group); the model keeps them current instead (`note_rq` after every
//! change of a run queue's task count or root load), which gives the same integers, so the same
//! balancing decisions: the order `busiest` answers in is `find_busiest_group`'s scan (the
//! groups after the local one, wrapping, the first of equally busy ones winning).

use crate::hypervisor::policies::cfs::domains::Domain;
use crate::hypervisor::policies::ordered_set::OrderedSet;
use std::sync::Arc;

/// `SCHED_CAPACITY_SCALE`: one pCPU's capacity.
pub(super) const CAPACITY_SCALE: u64 = 1024;

/// `enum group_type`, as far as vCPU threads reach it (ordered: a higher one is busier).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum GroupType {
    HasSpare,
    FullyBusy,
    Overloaded,
}

/// `struct sg_lb_stats` of one group (`group`: its index in the asking pCPU's `sd.groups`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct SgStats {
    pub(super) group: usize,
    pub(super) nr: u64,
    pub(super) load: u64,
    pub(super) capacity: u64,
    pub(super) weight: u64,
    pub(super) idle_cpus: u64,
    pub(super) kind: GroupType,
    pub(super) avg_load: u64,
}

impl SgStats {
    /// `update_sg_lb_stats` from a group's sums: its type from its task count (has spare: fewer
    /// tasks than pCPUs; fully busy: as many; overloaded: more) and its average load.
    pub(super) fn new(group: usize, nr: u64, load: u64, weight: u64, idle_cpus: u64) -> Self {
        let capacity = weight * CAPACITY_SCALE;
        let kind = match nr.cmp(&weight) {
            std::cmp::Ordering::Less => GroupType::HasSpare,
            std::cmp::Ordering::Equal => GroupType::FullyBusy,
            std::cmp::Ordering::Greater => GroupType::Overloaded,
        };
        SgStats { group, nr, load, capacity, weight, idle_cpus, kind, avg_load: load * CAPACITY_SCALE / capacity.max(1) }
    }

    /// `update_sd_pick_busiest` as a key: of two groups with tasks, the one with the larger key
    /// is busier (a higher type; then, when overloaded or fully busy, the higher average load;
    /// when with spare capacity, fewer idle pCPUs, then more tasks). `None`: no task, never
    /// the busiest.
    fn busyness(&self) -> Option<(GroupType, u64, u64)> {
        (self.nr > 0).then(|| match self.kind {
            GroupType::Overloaded | GroupType::FullyBusy => (self.kind, self.avg_load, 0),
            GroupType::HasSpare => (self.kind, u64::MAX - self.idle_cpus, self.nr),
        })
    }

    /// Whether `self` is busier than the busiest so far (`busiest`): `update_sd_pick_busiest`
    /// as the scan over every group applies it (the tests' reference for `LbIndex::busiest`).
    #[cfg(test)]
    pub(super) fn busier(&self, busiest: Option<&SgStats>) -> bool {
        match (self.busyness(), busiest.and_then(SgStats::busyness)) {
            (None, _) => false,
            (Some(_), None) => true,
            (Some(a), Some(b)) => a > b,
        }
    }
}

type Busyness = (GroupType, u64, u64);

/// The sums of one group.
#[derive(Clone, Copy, Debug, Default)]
struct GroupSums {
    nr: u64,
    load: u64,
    idle: u64,
    weight: u64,
}

/// One domain instance: its groups in canonical order, their busiest index and the span's sums.
#[derive(Clone, Debug, Default)]
struct Instance {
    groups: Vec<GroupSums>,
    busiest: OrderedSet<(Busyness, u32)>,
    load: u64,
    capacity: u64,
    overloaded: u64,
}

impl Instance {
    fn stats(&self, g: usize, group: usize) -> SgStats {
        let s = self.groups[g];
        SgStats::new(group, s.nr, s.load, s.weight, s.idle)
    }
}

/// What one run queue last added to the sums.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Contribution {
    nr: u64,
    load: u64,
}

/// The sums of every domain instance of a pool, kept current (see the module doc).
#[derive(Clone, Debug, Default)]
pub(super) struct LbIndex {
    instances: Vec<Instance>,
    /// Per pCPU, per level (bottom up): its instance and its own group's canonical index there.
    own: Vec<Vec<(u32, u32)>>,
    /// Per pCPU, every instance whose span holds it (its own, and those of other pCPUs of the
    /// same spans that see other groups), with the canonical index of its group there.
    member: Vec<Vec<(u32, u32)>>,
    /// What each run queue last added to the sums.
    contrib: Vec<Contribution>,
}

impl LbIndex {
    /// The index of the domains `per` (per pCPU, bottom up) with every run queue empty.
    pub(super) fn build(per: &[Vec<Arc<Domain>>]) -> Self {
        let mut instances: Vec<Instance> = Vec::new();
        // An instance is a level's span with its groups; the groups are the spans of the level
        // kept below it (single pCPUs at the bottom), which may differ between the pCPUs of one
        // span (a pCPU whose sibling level was dropped sees single-pCPU groups): the key holds it.
        let mut by_span: std::collections::HashMap<(&'static str, usize, Option<&'static str>), u32> = std::collections::HashMap::new();
        let mut own = vec![Vec::new(); per.len()];
        let mut member = vec![Vec::new(); per.len()];
        for (p, doms) in per.iter().enumerate() {
            for (level, d) in doms.iter().enumerate() {
                let child = level.checked_sub(1).map(|c| doms[c].sd.name);
                let id = *by_span.entry((d.sd.name, d.span[0], child)).or_insert_with(|| {
                    let id = instances.len() as u32;
                    let groups = d.groups.in_order();
                    for (g, group) in groups.iter().enumerate() {
                        for &c in group.cpus.iter() {
                            member[c].push((id, g as u32));
                        }
                    }
                    let groups = groups
                        .iter()
                        .map(|g| GroupSums { idle: g.cpus.len() as u64, weight: g.cpus.len() as u64, ..GroupSums::default() })
                        .collect();
                    instances.push(Instance { groups, capacity: d.span.len() as u64 * CAPACITY_SCALE, ..Instance::default() });
                    id
                });
                own[p].push((id, d.groups.position(0) as u32));
            }
        }
        LbIndex { instances, own, member, contrib: vec![Contribution::default(); per.len()] }
    }

    /// Run queue `p` now has `nr` tasks and root load `load`: move its share of the sums.
    #[inline]
    pub(super) fn note_rq(&mut self, p: usize, nr: u64, load: u64) {
        let new = Contribution { nr, load };
        let old = std::mem::replace(&mut self.contrib[p], new);
        if old == new {
            return;
        }
        let idle = |c: Contribution| (c.nr == 0) as u64;
        let over = |c: Contribution| (c.nr > 1) as u64;
        for &(i, g) in &self.member[p] {
            let inst = &mut self.instances[i as usize];
            let before = inst.stats(g as usize, 0).busyness();
            let s = &mut inst.groups[g as usize];
            s.nr = s.nr - old.nr + new.nr;
            s.load = s.load - old.load + new.load;
            s.idle = s.idle - idle(old) + idle(new);
            inst.load = inst.load - old.load + new.load;
            inst.overloaded = inst.overloaded - over(old) + over(new);
            let after = inst.stats(g as usize, 0).busyness();
            if before != after {
                if let Some(k) = before {
                    inst.busiest.remove(&(k, g));
                }
                if let Some(k) = after {
                    inst.busiest.insert((k, g));
                }
            }
        }
    }

    /// The local group's statistics at `p`'s level `level` (domain `sd`).
    pub(super) fn local(&self, p: usize, level: usize) -> SgStats {
        let (i, g) = self.own[p][level];
        self.instances[i as usize].stats(g as usize, 0)
    }

    /// The busiest group other than the local one, as `find_busiest_group`'s scan of `sd.groups`
    /// finds it (the first of the busiest in the order after the local group), with its index in
    /// `sd.groups`; `None` if no other group has a task.
    pub(super) fn busiest(&self, p: usize, level: usize) -> Option<SgStats> {
        let (i, own) = self.own[p][level];
        let inst = &self.instances[i as usize];
        let n = inst.groups.len() as u32;
        let (key, _) = *inst.busiest.iter().rev().find(|(_, g)| *g != own)?;
        let after = inst.busiest.range((key, own + 1)..=(key, u32::MAX)).next();
        let (_, g) =
            *after.or_else(|| inst.busiest.range((key, 0)..(key, own)).next()).expect("a group other than the local one has this busyness");
        Some(inst.stats(g as usize, ((g + n - own) % n) as usize))
    }

    /// The sums of `p`'s domain at `level`: total load and capacity, and whether a run queue
    /// of its span has more than one task.
    pub(super) fn span(&self, p: usize, level: usize) -> (u64, u64, bool) {
        let inst = &self.instances[self.own[p][level].0 as usize];
        (inst.load, inst.capacity, inst.overloaded > 0)
    }

    /// Compare every sum with a pass over the run queues (`nr`, `load` of each pCPU): the
    /// policy's invariant check.
    pub(super) fn check(&self, per: &[Vec<Arc<Domain>>], nr: impl Fn(usize) -> u64, load: impl Fn(usize) -> u64) -> Result<(), String> {
        for (p, doms) in per.iter().enumerate() {
            for (level, d) in doms.iter().enumerate() {
                for (gi, g) in d.groups.iter().enumerate() {
                    let (n, l) = (g.cpus.iter().map(|&c| nr(c)).sum(), g.cpus.iter().map(|&c| load(c)).sum());
                    let idle = g.cpus.iter().filter(|&&c| nr(c) == 0).count() as u64;
                    let want = SgStats::new(gi, n, l, g.cpus.len() as u64, idle);
                    let (i, _) = self.own[p][level];
                    let got = self.instances[i as usize].stats(d.groups.position(gi), gi);
                    if got != want {
                        return Err(format!("eevdf: balance sums of pCPU {p} level {level} group {gi}: kept {got:?}, counted {want:?}"));
                    }
                }
                let (load_sum, _, over) = self.span(p, level);
                if load_sum != d.span.iter().map(|&c| load(c)).sum::<u64>() || over != d.span.iter().any(|&c| nr(c) > 1) {
                    return Err(format!("eevdf: balance sums of pCPU {p}'s level {level} span disagree with its run queues"));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hardware::topology::Topology;
    use crate::hypervisor::policies::cfs::domains;
    use rand::Rng;

    /// `find_busiest_group`'s scan without the sums: every group's statistics counted
    /// from the run queues, the busiest picked in `sd.groups` order after the local group.
    fn scan(d: &Domain, nr: &[u64], load: &[u64]) -> (SgStats, Option<SgStats>, u64, bool) {
        let stats: Vec<SgStats> = d
            .groups
            .iter()
            .enumerate()
            .map(|(gi, g)| {
                let idle = g.cpus.iter().filter(|&&c| nr[c] == 0).count() as u64;
                SgStats::new(gi, g.cpus.iter().map(|&c| nr[c]).sum(), g.cpus.iter().map(|&c| load[c]).sum(), g.cpus.len() as u64, idle)
            })
            .collect();
        let mut busiest: Option<&SgStats> = None;
        for sg in &stats[1..] {
            if sg.busier(busiest) {
                busiest = Some(sg);
            }
        }
        let total = d.span.iter().map(|&c| load[c]).sum();
        (stats[0], busiest.copied(), total, d.span.iter().any(|&c| nr[c] > 1))
    }

    /// Random task counts and loads, changed one run queue at a time: after each change the kept
    /// sums answer as the scan does, at every level of every pCPU, ties included (loads are
    /// multiples of 1,024 so that equally busy groups are common).
    fn agrees_with_the_scan(topo: Topology, pool: Vec<usize>, n: usize) {
        let per: Vec<Vec<Arc<Domain>>> =
            domains::build(&topo, &pool, n).into_iter().map(|d| d.into_iter().map(Arc::new).collect()).collect();
        let mut index = LbIndex::build(&per);
        let (mut nr, mut load) = (vec![0u64; n], vec![0u64; n]);
        let mut rng = crate::engine::rng::stream(7, "lb_index");
        let mut compared = 0;
        for step in 0..600 {
            let p = pool[rng.random_range(0..pool.len())];
            nr[p] = rng.random_range(0..4);
            load[p] = nr[p] * 1024 * rng.random_range(1..3);
            index.note_rq(p, nr[p], load[p]);
            index.check(&per, |c| nr[c], |c| load[c]).unwrap_or_else(|e| panic!("step {step}: {e}"));
            for &q in &pool {
                for (level, d) in per[q].iter().enumerate() {
                    let (local, busiest, total, over) = scan(d, &nr, &load);
                    assert_eq!(index.local(q, level), local, "step {step}, pCPU {q}, level {level}");
                    assert_eq!(index.busiest(q, level), busiest, "step {step}, pCPU {q}, level {level}");
                    assert_eq!(index.span(q, level), (total, d.span.len() as u64 * CAPACITY_SCALE, over));
                    compared += busiest.is_some() as u32;
                }
            }
        }
        assert!(compared > 1000, "too few busiest groups compared: {compared}");
    }

    #[test]
    fn kept_sums_pick_the_busiest_group_as_the_scan_does_on_a_flat_host() {
        // One MC level of twelve one-pCPU groups: ties between equally loaded pCPUs everywhere.
        agrees_with_the_scan(Topology::new(12, 1, 1, 1).unwrap(), (0..12).collect(), 12);
    }

    #[test]
    fn kept_sums_pick_the_busiest_group_as_the_scan_does_on_smt_sockets_and_nodes() {
        // SMT, MC and NODE levels (two sockets, two nodes, two threads per core), on a pool
        // that leaves a pCPU out.
        agrees_with_the_scan(Topology::new(16, 2, 2, 2).unwrap(), (0..16).filter(|&p| p != 5).collect(), 16);
    }

    #[test]
    fn a_stale_sum_is_caught_by_the_check() {
        let topo = Topology::new(4, 1, 1, 1).unwrap();
        let per: Vec<Vec<Arc<Domain>>> =
            domains::build(&topo, &[0, 1, 2, 3], 4).into_iter().map(|d| d.into_iter().map(Arc::new).collect()).collect();
        let mut index = LbIndex::build(&per);
        index.note_rq(2, 2, 2048);
        assert!(index.check(&per, |c| if c == 2 { 2 } else { 0 }, |c| if c == 2 { 2048 } else { 0 }).is_ok());
        // Run queue 2 lost a task the sums were not told of.
        let err = index.check(&per, |c| if c == 2 { 1 } else { 0 }, |c| if c == 2 { 1024 } else { 0 }).unwrap_err();
        assert!(err.contains("pCPU 0 level 0"), "{err}");
    }
}
