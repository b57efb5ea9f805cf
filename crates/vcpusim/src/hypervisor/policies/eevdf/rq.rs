//! One EEVDF run queue (`struct cfs_rq` of Linux 6.6, kernel/sched/fair.c and sched.h) and
//! the per-entity arithmetic of the 6.6 EEVDF: `avg_vruntime` (with the `avg_vruntime` /
//! `avg_load` sums 6.6 keeps: Σ (v_i − min_vruntime)·w_i and Σ w_i over the queued
//! entities, `curr` added on the fly), `entity_eligible`, `update_min_vruntime`,
//! `update_entity_lag`, `place_entity` (PLACE_LAG, PLACE_DEADLINE_INITIAL), `update_deadline`,
//! `pick_eevdf` (RUN_TO_PARITY) and `reweight_entity`.
//!
//! The same code serves both levels of the hierarchy (a pCPU's root run queue of VM group
//! entities, a VM's group run queue of vCPU tasks), as in the kernel. Entities live in one
//! table (`Se`, indexed by a global id) and a run queue names them by id.
//!
//! `pick_eevdf` here scans the queued entities of one run queue (O(n) in the entities of that
//! run queue: a pCPU's VMs, or one VM's vCPUs on one pCPU) instead of walking 6.6's rb-tree
//! augmented with `min_deadline`; both return the eligible entity with the earliest deadline.
//! Ties (equal deadlines) go to `curr`, then to the entity with the smaller vruntime, then the
//! smaller id: the kernel's strict `deadline_gt` keeps the first found, which depends on the
//! tree's shape.

use crate::time::Nanos;
use std::collections::BTreeSet;

/// NICE_0_LOAD (`scale_load_down`): the weight of a nice-0 task, every vCPU thread.
pub(super) const NICE_0_LOAD: u64 = 1024;

/// A `struct sched_entity`: a vCPU task or a VM's group entity on one pCPU. Virtual times are
/// signed nanoseconds (the kernel's u64 with wrapping `(s64)(a - b)` comparisons; here no
/// value comes near wrapping, and `min_vruntime` starts at 0 rather than −(1 << 20)).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Se {
    pub(super) vruntime: i64,
    pub(super) deadline: i64,
    /// `vlag`: V − v saved at dequeue (`update_entity_lag`), read by `place_entity`; while the
    /// entity runs it holds the deadline it was picked with, for RUN_TO_PARITY: 6.6's
    /// `set_next_entity` does exactly this ("HACK, stash a copy of deadline at the point of pick
    /// in vlag, which isn't used until dequeue"), and the model keeps the kernel's layout.
    pub(super) vlag: i64,
    /// `slice`: the request size r_i (`sysctl_sched_base_slice`).
    pub(super) slice: Nanos,
    /// `load.weight` (`scale_load_down`ed): NICE_0_LOAD for a task, the group shares for a
    /// group entity.
    pub(super) weight: u64,
    pub(super) on_rq: bool,
    pub(super) sum_exec: Nanos,
}

/// `calc_delta_fair(delta, se)`: `delta` of real time in `se`'s virtual time (exact division;
/// the kernel multiplies by a 32-bit inverse weight).
pub(super) fn calc_delta_fair(delta: Nanos, weight: u64) -> i64 {
    if weight == NICE_0_LOAD {
        return delta as i64;
    }
    crate::time::mul_div(delta, NICE_0_LOAD, weight.max(1)) as i64
}

/// A `struct cfs_rq`.
#[derive(Clone, Debug, Default)]
pub(super) struct CfsRq {
    /// The queued entities by (vruntime, id) (`tasks_timeline`); `curr` is not in it.
    pub(super) tree: BTreeSet<(i64, u32)>,
    pub(super) curr: Option<u32>,
    pub(super) min_vruntime: i64,
    /// Σ (v_i − min_vruntime)·w_i over the tree (`cfs_rq->avg_vruntime`), exact.
    pub(super) avg_vruntime: i128,
    /// Σ w_i over the tree (`cfs_rq->avg_load`).
    pub(super) avg_load: u64,
    /// `load.weight`: queued and running entities.
    pub(super) load: u64,
    /// `nr_running`: queued and running entities.
    pub(super) nr_running: u64,
}

/// The placement flags of `enqueue_entity` that `place_entity` reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Place {
    /// Plain (`ENQUEUE_WAKEUP`, a migration, a fork's enqueue in 6.6).
    Normal,
    /// `ENQUEUE_INITIAL`: PLACE_DEADLINE_INITIAL's half slice.
    Initial,
}

/// The EEVDF features of kernel/sched/features.h (all true in 6.6).
#[derive(Clone, Copy, Debug)]
pub(super) struct Features {
    pub(super) place_lag: bool,
    pub(super) place_deadline_initial: bool,
    pub(super) run_to_parity: bool,
}

impl CfsRq {
    /// `entity_key`: v − min_vruntime.
    fn key(&self, se: &Se) -> i128 {
        (se.vruntime - self.min_vruntime) as i128
    }

    /// The running entity if it is still on the run queue (`curr && curr->on_rq`).
    fn curr_on_rq<'a>(&self, ses: &'a [Se]) -> Option<&'a Se> {
        self.curr.map(|c| &ses[c as usize]).filter(|se| se.on_rq)
    }

    /// `avg_vruntime_add`.
    fn avg_add(&mut self, se: &Se) {
        self.avg_vruntime += self.key(se) * se.weight as i128;
        self.avg_load += se.weight;
    }

    /// `avg_vruntime_sub`.
    fn avg_sub(&mut self, se: &Se) {
        self.avg_vruntime -= self.key(se) * se.weight as i128;
        self.avg_load -= se.weight;
    }

    /// `__enqueue_entity`: into the tree and the sums.
    fn insert(&mut self, ses: &[Se], id: u32) {
        let se = ses[id as usize];
        self.avg_add(&se);
        self.tree.insert((se.vruntime, id));
    }

    /// `__dequeue_entity`.
    fn remove(&mut self, ses: &[Se], id: u32) {
        let se = ses[id as usize];
        self.tree.remove(&(se.vruntime, id));
        self.avg_sub(&se);
    }

    /// The weighted sum and load with `curr` added, as `avg_vruntime` and `entity_eligible`
    /// take them.
    fn sums(&self, ses: &[Se]) -> (i128, i128) {
        let (mut avg, mut load) = (self.avg_vruntime, self.avg_load as i128);
        if let Some(c) = self.curr_on_rq(ses) {
            avg += self.key(c) * c.weight as i128;
            load += c.weight as i128;
        }
        (avg, load)
    }

    /// `avg_vruntime(cfs_rq)`: V, the load-weighted average vruntime of the queued entities
    /// and `curr`, floored ("sign flips effective floor / ceil").
    pub(super) fn avg_vruntime(&self, ses: &[Se]) -> i64 {
        let (mut avg, load) = self.sums(ses);
        if load > 0 {
            if avg < 0 {
                avg -= load - 1;
            }
            avg /= load;
        }
        self.min_vruntime + avg as i64
    }

    /// `entity_eligible(cfs_rq, se)`: V ≥ v_i, compared without dividing
    /// (`avg >= entity_key(cfs_rq, se) * load`).
    pub(super) fn eligible(&self, ses: &[Se], id: u32) -> bool {
        let (avg, load) = self.sums(ses);
        avg >= self.key(&ses[id as usize]) * load
    }

    /// `update_min_vruntime`: follows the smaller of `curr`'s and the leftmost's vruntime, never
    /// backwards; the sum Σ (v_i − min_vruntime)·w_i moves with it (`avg_vruntime_update`).
    pub(super) fn update_min_vruntime(&mut self, ses: &[Se]) {
        let curr = self.curr_on_rq(ses).map(|c| c.vruntime);
        let left = self.tree.first().map(|(v, _)| *v);
        let vruntime = match (curr, left) {
            (Some(c), Some(l)) => c.min(l),
            (Some(c), None) => c,
            (None, Some(l)) => l,
            (None, None) => self.min_vruntime,
        };
        let delta = vruntime - self.min_vruntime;
        if delta > 0 {
            self.avg_vruntime -= self.avg_load as i128 * delta as i128;
            self.min_vruntime = vruntime;
        }
    }

    /// `update_entity_lag`: vlag = V − v, clamped to ± `calc_delta_fair(max(2·slice, TICK_NSEC))`.
    pub(super) fn update_entity_lag(&self, ses: &mut [Se], id: u32, tick: Nanos) {
        let lag = self.avg_vruntime(ses) - ses[id as usize].vruntime;
        let se = &mut ses[id as usize];
        let limit = calc_delta_fair((2 * se.slice).max(tick), se.weight);
        se.vlag = lag.clamp(-limit, limit);
    }

    /// `place_entity(cfs_rq, se, flags)`: v = V − vlag·(W + w)/W (PLACE_LAG, when the run queue
    /// holds entities; W is `avg_load` plus an on-rq `curr`), deadline = v + vslice (half of it
    /// for `ENQUEUE_INITIAL` with PLACE_DEADLINE_INITIAL). The slice becomes the base slice.
    pub(super) fn place_entity(&self, ses: &mut [Se], id: u32, how: Place, base_slice: Nanos, f: Features) {
        let vruntime = self.avg_vruntime(ses);
        let curr_w = self.curr_on_rq(ses).map_or(0, |c| c.weight);
        let se = &mut ses[id as usize];
        se.slice = base_slice;
        let mut vslice = calc_delta_fair(se.slice, se.weight);
        let mut lag: i64 = 0;
        if f.place_lag && self.nr_running > 0 {
            // "WARN_ON_ONCE(!load)": load = 1.
            let load = (self.avg_load + curr_w).max(1);
            lag = (se.vlag as i128 * (load + se.weight) as i128 / load as i128) as i64;
        }
        se.vruntime = vruntime - lag;
        if f.place_deadline_initial && how == Place::Initial {
            vslice /= 2;
        }
        se.deadline = se.vruntime + vslice;
    }

    /// `enqueue_entity` once placed (`account_entity_enqueue`, `__enqueue_entity` unless it is
    /// `curr`, `on_rq`).
    pub(super) fn account_enqueue(&mut self, ses: &mut [Se], id: u32) {
        self.load += ses[id as usize].weight;
        self.nr_running += 1;
        ses[id as usize].on_rq = true;
        if self.curr != Some(id) {
            self.insert(ses, id);
        }
    }

    /// `dequeue_entity` after `update_curr`: save the lag, leave the tree (a running entity
    /// stops being `curr`: the caller reschedules its pCPU), `account_entity_dequeue`,
    /// `update_min_vruntime`.
    pub(super) fn dequeue(&mut self, ses: &mut [Se], id: u32, tick: Nanos) {
        self.update_entity_lag(ses, id, tick);
        if self.curr != Some(id) {
            self.remove(ses, id);
        }
        ses[id as usize].on_rq = false;
        self.load -= ses[id as usize].weight;
        self.nr_running -= 1;
        self.update_min_vruntime(ses);
        if self.curr == Some(id) {
            self.curr = None;
        }
    }

    /// `put_prev_entity`: a still-queued `curr` goes back into the tree.
    pub(super) fn put_prev(&mut self, ses: &[Se]) {
        if let Some(c) = self.curr.take() {
            if ses[c as usize].on_rq {
                self.insert(ses, c);
            }
        }
    }

    /// `set_next_entity`: `id` leaves the tree and becomes `curr`; its deadline at the pick is
    /// stashed in `vlag` for RUN_TO_PARITY, as the kernel does (see `Se::vlag`).
    pub(super) fn set_next(&mut self, ses: &mut [Se], id: u32) {
        if ses[id as usize].on_rq && self.curr != Some(id) {
            self.remove(ses, id);
            ses[id as usize].vlag = ses[id as usize].deadline;
        }
        self.curr = Some(id);
    }

    /// `update_curr` of `curr` for `delta` ns of run time, with `update_deadline`: returns true
    /// when `curr` used up its request and another entity is on the run queue (resched).
    pub(super) fn update_curr(&mut self, ses: &mut [Se], delta: Nanos, base_slice: Nanos) -> bool {
        let Some(c) = self.curr else { return false };
        let se = &mut ses[c as usize];
        se.sum_exec += delta;
        se.vruntime += calc_delta_fair(delta, se.weight);
        let resched = self.update_deadline(se, base_slice);
        self.update_min_vruntime(ses);
        resched
    }

    /// `update_deadline`: once v reaches the deadline, a new request of the base slice
    /// (vd = v + r/w) and, if another entity waits, a reschedule.
    fn update_deadline(&self, se: &mut Se, base_slice: Nanos) -> bool {
        if se.vruntime < se.deadline {
            return false;
        }
        se.slice = base_slice;
        se.deadline = se.vruntime + calc_delta_fair(se.slice, se.weight);
        self.nr_running > 1
    }

    /// `pick_eevdf`: the eligible entity with the earliest deadline among the queued ones and
    /// an on-rq eligible `curr`; with RUN_TO_PARITY an eligible `curr` that has not finished
    /// the request it was picked with (`curr->vlag == curr->deadline`) keeps running. When
    /// nothing is eligible, the leftmost ("EEVDF scheduling fail, picking leftmost").
    pub(super) fn pick_eevdf(&self, ses: &[Se], f: Features) -> Option<u32> {
        let curr = self.curr.filter(|&c| ses[c as usize].on_rq && self.eligible(ses, c));
        if let Some(c) = curr {
            if f.run_to_parity && ses[c as usize].vlag == ses[c as usize].deadline {
                return Some(c);
            }
        }
        let mut best = curr;
        // The tree is in vruntime order: once an entity is not eligible, none after it is.
        for &(_, id) in &self.tree {
            if !self.eligible(ses, id) {
                break;
            }
            if best.is_none_or(|b| ses[id as usize].deadline < ses[b as usize].deadline) {
                best = Some(id);
            }
        }
        best.or_else(|| self.tree.first().map(|(_, id)| *id))
    }

    /// `reweight_entity` (6.6): an on-rq entity's relative deadline scales by old/new weight
    /// (`curr` is charged first by the caller); an off-rq one's vlag does ("we keep se->vlag =
    /// V - v_i, while: lag_i = w_i*(V - v_i)").
    pub(super) fn reweight(&mut self, ses: &mut [Se], id: u32, weight: u64) {
        let old = ses[id as usize].weight;
        if old == weight {
            return;
        }
        let is_curr = self.curr == Some(id);
        let on_rq = ses[id as usize].on_rq;
        if on_rq {
            if !is_curr {
                self.remove(ses, id);
            }
            self.load -= old;
        }
        let se = &mut ses[id as usize];
        if on_rq {
            let rel = (se.deadline - se.vruntime) as i128 * old as i128 / weight.max(1) as i128;
            se.deadline = se.vruntime + rel as i64;
        } else {
            se.vlag = (se.vlag as i128 * old as i128 / weight.max(1) as i128) as i64;
        }
        se.weight = weight;
        if on_rq {
            self.load += weight;
            if !is_curr {
                self.insert(ses, id);
            }
        }
    }

    /// Check the sums against the tree (check mode).
    pub(super) fn check(&self, ses: &[Se]) -> Result<(), String> {
        let (mut avg, mut load) = (0i128, 0u64);
        for &(v, id) in &self.tree {
            let se = &ses[id as usize];
            if se.vruntime != v || !se.on_rq {
                return Err(format!("entity {id} in the tree at {v} but vruntime {} on_rq {}", se.vruntime, se.on_rq));
            }
            avg += self.key(se) * se.weight as i128;
            load += se.weight;
        }
        if avg != self.avg_vruntime || load != self.avg_load {
            return Err(format!("avg_vruntime {} / avg_load {} but the tree sums to {avg} / {load}", self.avg_vruntime, self.avg_load));
        }
        Ok(())
    }
}
