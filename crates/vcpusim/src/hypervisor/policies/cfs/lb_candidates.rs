//! Which groups of each domain could be `find_busiest_group`'s busiest, kept as run queues
//! change, so that a balance with no candidate answers "balanced" without reading the span.
//!
//! ```text
//!   domain instance (one per group list, shared by the pCPUs of a span that see it)
//!     groups, canonical order   g0   g1   g2 ...   per group: busy pCPUs (1+ task),
//!                                                  overloaded pCPUs (2+ tasks), capacity floor
//!     candidates: groups with an overloaded pCPU or more busy pCPUs than their capacity floor
//!   per pCPU: (instance, group) in every instance whose span holds it, its own at each
//!   level, and whether it last counted as busy / overloaded
//! ```
//!
//! `update_sd_lb_stats` (kernel/sched_fair.c v3.2) takes a non-local group as the busiest only
//! if `sum_nr_running > group_capacity` or `group_imb` (`update_sd_pick_busiest`'s condition).
//! `group_imb` needs `max_nr_running > 1`, a pCPU of the group with two tasks; without one, the
//! group's `sum_nr_running` is its busy pCPUs, and its `group_capacity` is at least its floor
//! (`DIV_ROUND_CLOSEST(power)`, at most 1 under the child's `SD_PREFER_SIBLING`). A group that
//! is no candidate can therefore never be the busiest, whatever the pCPUs `load_balance` has
//! dropped from `cpus`; when no group but the local one is a candidate, `find_busiest_group`
//! returns "balanced", as its pass over every pCPU would. Linux makes the pass each time; the
//! counts change no decision. (On an idle 16,384-pCPU host every idle pCPU balanced the
//! 16,384 groups of its top domain at each of its ticks: O(P^2) a jiffy.)

use super::domains::{group_capacity, Domain};
use std::collections::HashMap;
use std::sync::Arc;

/// The counts of one group.
#[derive(Clone, Copy, Debug)]
struct GroupCounts {
    busy: u32,
    overloaded: u32,
    /// The least `group_capacity` the balancer can give the group.
    floor: u32,
}

impl GroupCounts {
    fn candidate(&self) -> bool {
        self.overloaded > 0 || self.busy > self.floor
    }
}

/// One group list: its groups' counts and how many are candidates.
#[derive(Clone, Debug)]
struct Instance {
    groups: Vec<GroupCounts>,
    candidates: u32,
}

/// The counts of one pool's domain instances (see the module doc).
#[derive(Clone, Debug)]
pub(super) struct LbCandidates {
    instances: Vec<Instance>,
    /// Per pCPU, per level (bottom up): its instance and its own group's canonical index there.
    own: Vec<Vec<(u32, u32)>>,
    /// Per pCPU, every (instance, group) whose span holds it.
    member: Vec<Vec<(u32, u32)>>,
    /// Per pCPU: (busy, overloaded) when last noted.
    counted: Vec<(bool, bool)>,
}

impl LbCandidates {
    /// The counts of the domains `per` (per pCPU, bottom up), with `nr_running(p)` tasks on
    /// each pCPU `p`.
    pub(super) fn build(per: &[Vec<Arc<Domain>>], nr_running: impl Fn(usize) -> u64) -> Self {
        // Each distinct group list is shared (`Arc`) by the pCPUs that see it, so its address
        // names the instance (a span's pCPUs may see different lists: one whose sibling level
        // was dropped sees single-pCPU groups).
        let mut ids: HashMap<*const super::domains::SchedGroup, u32> = HashMap::new();
        let mut instances: Vec<Instance> = Vec::new();
        let mut own = vec![Vec::new(); per.len()];
        let mut member = vec![Vec::new(); per.len()];
        for (p, doms) in per.iter().enumerate() {
            for d in doms {
                let groups = d.groups.in_order();
                let id = *ids.entry(groups.as_ptr()).or_insert_with(|| {
                    let id = instances.len() as u32;
                    let counts = groups
                        .iter()
                        .enumerate()
                        .map(|(g, group)| {
                            for &c in group.cpus.iter() {
                                member[c].push((id, g as u32));
                            }
                            let cap = group_capacity(&d.sd, group.power);
                            let floor = if d.child_prefers_sibling { cap.min(1) } else { cap };
                            GroupCounts { busy: 0, overloaded: 0, floor: floor.min(u32::MAX as u64) as u32 }
                        })
                        .collect();
                    instances.push(Instance { groups: counts, candidates: 0 });
                    id
                });
                own[p].push((id, d.groups.position(0) as u32));
            }
        }
        let mut c = LbCandidates { instances, own, member, counted: vec![(false, false); per.len()] };
        for p in 0..per.len() {
            c.note(p, nr_running(p));
        }
        c
    }

    /// The counts of `npcpus` empty run queues before the domains are built.
    pub(super) fn without_domains(npcpus: usize) -> Self {
        LbCandidates::build(&vec![Vec::new(); npcpus], |_| 0)
    }

    /// `p` now holds `nr_running` tasks.
    #[inline]
    pub(super) fn note(&mut self, p: usize, nr_running: u64) {
        let new = (nr_running >= 1, nr_running >= 2);
        let old = std::mem::replace(&mut self.counted[p], new);
        if old == new {
            return;
        }
        let step = |was: bool, now: bool, n: &mut u32| match (was, now) {
            (false, true) => *n += 1,
            (true, false) => *n -= 1,
            _ => {}
        };
        for &(i, g) in &self.member[p] {
            let inst = &mut self.instances[i as usize];
            let counts = &mut inst.groups[g as usize];
            let before = counts.candidate();
            step(old.0, new.0, &mut counts.busy);
            step(old.1, new.1, &mut counts.overloaded);
            step(before, counts.candidate(), &mut inst.candidates);
        }
    }

    /// Whether a group of `p`'s domain at `level` other than its own could be the busiest.
    #[inline]
    pub(super) fn others(&self, p: usize, level: usize) -> bool {
        let (i, g) = self.own[p][level];
        let inst = &self.instances[i as usize];
        inst.candidates > u32::from(inst.groups[g as usize].candidate())
    }

    /// Compare the counts with a recount from the run queues (the policy's self-check).
    pub(super) fn check(&self, per: &[Vec<Arc<Domain>>], nr_running: impl Fn(usize) -> u64) -> Result<(), String> {
        let fresh = LbCandidates::build(per, &nr_running);
        for (p, doms) in per.iter().enumerate() {
            if self.counted[p] != fresh.counted[p] {
                return Err(format!("cfs: pCPU {p} with {} tasks counted as (busy, overloaded) {:?}", nr_running(p), self.counted[p]));
            }
            for level in 0..doms.len() {
                if self.others(p, level) != fresh.others(p, level) {
                    return Err(format!("cfs: the busiest-group candidates of pCPU {p}'s level {level} are stale"));
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

    fn doms(topo: &Topology, n: usize) -> Vec<Vec<Arc<Domain>>> {
        let pool: Vec<usize> = (0..n).collect();
        domains::build(topo, &pool, n).into_iter().map(|d| d.into_iter().map(Arc::new).collect()).collect()
    }

    fn set(c: &mut LbCandidates, nr: &mut [u64], p: usize, n: u64) {
        nr[p] = n;
        c.note(p, n);
    }

    #[test]
    fn a_single_pcpu_group_is_a_candidate_with_two_tasks_and_not_for_itself() {
        let per = doms(&Topology::flat(8), 8);
        let mut nr = [0u64; 8];
        let mut c = LbCandidates::build(&per, |p| nr[p]);
        assert!(!c.others(0, 0));
        set(&mut c, &mut nr, 3, 1);
        assert!(!c.others(0, 0), "one task fills a one-pCPU group's capacity");
        set(&mut c, &mut nr, 3, 2);
        assert!(c.others(0, 0));
        assert!(!c.others(3, 0), "its own group is never the busiest");
        set(&mut c, &mut nr, 5, 3);
        assert!(c.others(3, 0));
        set(&mut c, &mut nr, 3, 1);
        set(&mut c, &mut nr, 5, 0);
        assert!(!c.others(0, 0));
        c.check(&per, |p| nr[p]).unwrap();
    }

    #[test]
    fn a_socket_group_is_a_candidate_past_its_capacity_floor_or_with_an_overloaded_pcpu() {
        // Two sockets of four on two nodes: MC per socket (single pCPUs), then the host, whose
        // groups are the sockets; MC prefers siblings (SD_PREFER_SIBLING), so a socket group's
        // capacity may be taken as 1.
        let topo = Topology::new(8, 2, 2, 1).unwrap();
        let per = doms(&topo, 8);
        assert_eq!(per[0].len(), 2);
        let mut nr = [0u64; 8];
        let mut c = LbCandidates::build(&per, |p| nr[p]);
        set(&mut c, &mut nr, 4, 1);
        assert!(!c.others(0, 1), "one busy pCPU fills the floor of 1");
        assert!(!c.others(0, 0) && !c.others(5, 0));
        set(&mut c, &mut nr, 7, 1);
        assert!(c.others(0, 1), "two busy pCPUs pass it");
        assert!(!c.others(4, 1), "the other socket is pCPU 4's own group");
        assert!(!c.others(5, 0), "no single pCPU holds two tasks");
        set(&mut c, &mut nr, 7, 0);
        set(&mut c, &mut nr, 6, 2);
        assert!(c.others(0, 1));
        assert!(c.others(4, 0));
        assert!(!c.others(6, 0));
        c.check(&per, |p| nr[p]).unwrap();
    }

    #[test]
    fn smt_core_groups_are_candidates_with_both_threads_busy() {
        // Two cores of two threads: the MC level's groups are the cores, power 1178 each,
        // capacity 1, and the sibling level prefers siblings.
        let topo = Topology::new(4, 1, 1, 2).unwrap();
        let per = doms(&topo, 4);
        let mc = per[0].len() - 1;
        let mut nr = [0u64; 4];
        let mut c = LbCandidates::build(&per, |p| nr[p]);
        let other_core: Vec<usize> = (0..4).filter(|&q| !per[0][0].spans(q)).collect();
        set(&mut c, &mut nr, other_core[0], 1);
        assert!(!c.others(0, mc));
        set(&mut c, &mut nr, other_core[1], 1);
        assert!(c.others(0, mc), "two tasks on a core of capacity 1");
    }

    #[test]
    fn a_missed_note_is_caught_by_the_check() {
        let per = doms(&Topology::flat(4), 4);
        let mut nr = [0u64; 4];
        let c = LbCandidates::build(&per, |p| nr[p]);
        nr[2] = 2;
        assert!(c.check(&per, |p| nr[p]).is_err());
    }
}
