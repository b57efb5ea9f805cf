//! Group shares as Linux 3.2 computes them (kernel/sched_fair.c v3.2, `CONFIG_FAIR_GROUP_SCHED`
//! on SMP): each VM is a task group (its cgroup, `tg->shares` = the VM's `cpu.shares`) with one
//! group `cfs_rq` and one group entity per pCPU. The vCPU threads queue in their VM's group
//! `cfs_rq`; the group entity competes in the pCPU's root `cfs_rq` with the weight
//! `calc_cfs_shares` gives it:
//!
//! ```text
//!   tg_weight = tg->load_weight - cfs_rq->load_contribution + cfs_rq->load.weight
//!   shares    = clamp(tg->shares * cfs_rq->load.weight / tg_weight, MIN_SHARES, tg->shares)
//! ```
//!
//! `tg->load_weight` is the sum over pCPUs of each group `cfs_rq`'s `load_contribution`, its
//! load averaged over the shares window (`update_cfs_load`: `load_avg` accumulates
//! `delta x load`, `load_period` the time, both halved whenever the period passes
//! `sysctl_sched_shares_window`; the contribution is folded into `tg->load_weight` when it moved
//! by more than an eighth, at every fold, and on every `update_shares` of the load balancer).
//! So a VM with two runnable vCPUs on two pCPUs gives each of their group entities about half
//! its shares, a VM whose other vCPUs sleep gives the runnable ones more, and the averaging
//! makes the split follow a change within about one window.
//!
//! Functions, each named after its 3.2 original: `update_cfs_load`,
//! `update_cfs_rq_load_contribution`, `calc_tg_weight`, `calc_cfs_shares`, `update_cfs_shares`
//! (with `reweight_entity`), `update_entity_shares_tick`, `update_shares` (per pCPU, walking the
//! leaf `cfs_rq` list), `effective_load` (for `wake_affine`) and the hierarchical load
//! `tg_load_down` (`h_load`, for `load_balance_fair`).

use super::{Cfs, NICE_0_LOAD};
use crate::time::{Nanos, MS};

/// `sysctl_sched_shares_window`: the window load is averaged over for shares, 10 ms
/// (kernel/sched_fair.c v3.2).
pub(super) const SHARES_WINDOW: Nanos = 10 * MS;
/// `MIN_SHARES` = 2 and `MAX_SHARES` = 2^18 (kernel/sched.c v3.2, `SCHED_LOAD_RESOLUTION` 0):
/// the bounds of a group entity's weight and of `cpu.shares`.
pub(super) const MIN_SHARES: u64 = 2;
pub(super) const MAX_SHARES: u64 = 1 << 18;

/// A VM's task group (`struct task_group`): its shares and the sum of its group run queues'
/// load contributions.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct TaskGroup {
    /// `tg->shares`.
    pub(super) shares: u64,
    /// `tg->load_weight`: the sum of the per-pCPU `load_contribution`s.
    pub(super) load_weight: i64,
}

/// The load-average fields of one group `cfs_rq` (3.2 `struct cfs_rq`, SMP part).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct LoadAvg {
    /// `load_avg`: sum of `delta x load.weight` over `load_period`.
    pub(super) load_avg: u64,
    pub(super) load_period: u64,
    /// `load_stamp`: last `update_cfs_load`; `load_last`: last one that saw load.
    pub(super) load_stamp: Nanos,
    pub(super) load_last: Nanos,
    /// `load_contribution`: what this run queue last added to `tg->load_weight`.
    pub(super) load_contribution: i64,
    /// `load_unacc_exec_time`: run time since the last `update_cfs_load`.
    pub(super) load_unacc_exec: Nanos,
}

impl Cfs {
    /// `update_cfs_load(cfs_rq, global_update)` for VM `vm`'s group run queue on `p`.
    pub(super) fn update_cfs_load(&mut self, now: Nanos, vm: usize, p: usize, global: bool) {
        // "if (cfs_rq->tg == &root_task_group || throttled_hierarchy(cfs_rq)) return;"
        if self.throttled_vm(vm) {
            return;
        }
        let gi = self.gi(vm, p);
        let g = &mut self.groups[gi];
        let period = SHARES_WINDOW;
        let a = &mut g.avg;
        let mut delta = now.saturating_sub(a.load_stamp);
        // Truncate load history at 4 idle periods.
        if a.load_stamp > a.load_last && now - a.load_last > 4 * period {
            a.load_period = 0;
            a.load_avg = 0;
            delta = period - 1;
        }
        a.load_stamp = now;
        a.load_unacc_exec = 0;
        a.load_period += delta;
        let load = g.rq.load;
        if load > 0 {
            a.load_last = now;
            a.load_avg += delta * load;
        }
        // Consider updating the load contribution on each fold or truncate.
        if global || a.load_period > period || a.load_period == 0 {
            // update_cfs_rq_load_contribution
            let avg = (a.load_avg / (a.load_period + 1)) as i64 - a.load_contribution;
            if global || avg.abs() > a.load_contribution / 8 {
                self.tgs[vm].load_weight += avg;
                a.load_contribution += avg;
            }
        }
        while a.load_period > period {
            a.load_period /= 2;
            a.load_avg /= 2;
        }
        if g.rq.curr.is_none() && g.rq.nr_running == 0 && a.load_avg == 0 {
            // list_del_leaf_cfs_rq
            if g.on_list {
                g.on_list = false;
                self.rqs[p].leaf.retain(|&x| x as usize != vm);
            }
        }
    }

    /// `calc_tg_weight`: the group's total weight, with this pCPU's current load in place of its
    /// last contribution.
    fn calc_tg_weight(&self, vm: usize, p: usize) -> i64 {
        let g = &self.groups[self.gi(vm, p)];
        self.tgs[vm].load_weight - g.avg.load_contribution + g.rq.load as i64
    }

    /// `calc_cfs_shares`: the weight of `vm`'s group entity on `p`.
    pub(super) fn calc_cfs_shares(&self, vm: usize, p: usize) -> u64 {
        let tg = self.tgs[vm];
        let tg_weight = self.calc_tg_weight(vm, p);
        let load = self.groups[self.gi(vm, p)].rq.load as i64;
        let mut shares = tg.shares as i64 * load;
        if tg_weight != 0 {
            shares /= tg_weight;
        }
        shares.max(MIN_SHARES as i64).min(tg.shares as i64) as u64
    }

    /// `update_cfs_shares`: reweight `vm`'s group entity on `p` (`reweight_entity`: the running
    /// entity is charged first at its old weight; the root run queue's load follows the new one).
    pub(super) fn update_cfs_shares(&mut self, now: Nanos, vm: usize, p: usize) {
        if self.throttled_vm(vm) {
            return;
        }
        let shares = self.calc_cfs_shares(vm, p);
        self.reweight_group(now, vm, p, shares);
    }

    /// `reweight_entity(cfs_rq_of(se), se, weight)` for a group entity.
    pub(super) fn reweight_group(&mut self, now: Nanos, vm: usize, p: usize, weight: u64) {
        let gi = self.gi(vm, p);
        let old = self.groups[gi].se.weight;
        if old == weight {
            return;
        }
        if self.groups[gi].se.on_rq {
            if self.rqs[p].root.curr == Some(vm as u32) {
                self.update_curr_at(now, p);
            }
            self.set_root_load(p, self.rqs[p].root.load - old + weight);
        }
        self.groups[gi].se.weight = weight;
    }

    /// `update_entity_shares_tick`: a long-running group refreshes its average and shares once
    /// its unaccounted run time passes the window.
    pub(super) fn update_entity_shares_tick(&mut self, now: Nanos, vm: usize, p: usize) {
        if self.groups[self.gi(vm, p)].avg.load_unacc_exec > SHARES_WINDOW {
            self.update_cfs_load(now, vm, p, false);
            self.update_cfs_shares(now, vm, p);
        }
    }

    /// `update_shares(cpu)`: fold every listed group run queue of `p` into its task group
    /// (`update_shares_cpu`: `update_cfs_load(cfs_rq, 1)`, then `update_cfs_shares`).
    pub(super) fn update_shares(&mut self, now: Nanos, p: usize) {
        let mut leaf = std::mem::take(&mut self.walk_leaf);
        leaf.clone_from(&self.rqs[p].leaf);
        for &vm in &leaf {
            let vm = vm as usize;
            if self.throttled_vm(vm) {
                continue;
            }
            self.update_cfs_load(now, vm, p, true);
            self.update_cfs_shares(now, vm, p);
        }
        self.walk_leaf = leaf;
    }

    /// `list_add_leaf_cfs_rq`: a group run queue that gets its first entity joins the pCPU's
    /// leaf list. The root `cfs_rq` is on the list from the first enqueue on (it is never taken
    /// off: `update_cfs_load` returns early for the root group), so every later group goes to
    /// the head (`list_add_rcu`); the very first one goes to the tail of an empty list, which is
    /// the head too.
    pub(super) fn list_add_leaf(&mut self, vm: usize, p: usize) {
        let gi = self.gi(vm, p);
        if !self.groups[gi].on_list {
            self.groups[gi].on_list = true;
            self.rqs[p].leaf.insert(0, vm as u32);
        }
    }

    /// `effective_load(tg, cpu, wl, wg)` (3.2, one level of groups): how much `vm`'s group
    /// entity on `p` would gain if `wl` were added to its run queue and `wg` to the group's total.
    pub(super) fn effective_load(&self, vm: usize, p: usize, wl: i64, wg: i64) -> i64 {
        let g = &self.groups[self.gi(vm, p)];
        let shares = self.tgs[vm].shares as i64;
        let big_w = wg + self.calc_tg_weight(vm, p);
        let w = g.rq.load as i64 + wl;
        let mut wl = if big_w > 0 && w < big_w { w * shares / big_w } else { shares };
        if wl < MIN_SHARES as i64 {
            wl = MIN_SHARES as i64;
        }
        wl - g.se.weight as i64
    }

    /// `tg_load_down` for one level: the hierarchical load of `vm`'s group run queue on `p`
    /// (`h_load`): the root's load times the group entity's share of it.
    pub(super) fn h_load(&self, vm: usize, p: usize) -> u64 {
        let root = self.rqs[p].root.load;
        root * self.groups[self.gi(vm, p)].se.weight / (root + 1)
    }

    /// The VM's `tg->shares`: 1024 x pCPUs x weight / 256 (seed 000 section 4: "the shares were
    /// set to default shares (1024) multiplied by the number of pCPUs", equal weights), clamped
    /// as `sched_group_set_shares` does.
    pub(super) fn vm_shares(npcpus: usize, weight: u32) -> u64 {
        (NICE_0_LOAD * npcpus as u64 * weight as u64 / 256).clamp(MIN_SHARES, MAX_SHARES)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Cfs, CfsKind};
    use super::*;
    use crate::hypervisor::policies::{HostShape, PolicyKind};
    use crate::params::Params;

    /// A cfs instance for one VM on `npcpus` pCPUs, with `tg->shares` = `shares`.
    fn cfs(npcpus: u32, shares: u64) -> Cfs {
        let mut c = Cfs::new(&Params::defaults(&CfsKind.params()), HostShape::new(npcpus, 8, 1));
        c.tgs[0].shares = shares;
        c
    }

    #[test]
    fn calc_cfs_shares_splits_the_shares_by_each_pcpus_load_and_clamps() {
        let mut c = cfs(4, 8192);
        // Loads 1024 and 3072 on pCPUs 0 and 1, contributions already folded in.
        for (p, load) in [(0, 1024), (1, 3072)] {
            let gi = c.gi(0, p);
            c.groups[gi].rq.load = load;
            c.groups[gi].avg.load_contribution = load as i64;
        }
        c.tgs[0].load_weight = 4096;
        assert_eq!(c.calc_cfs_shares(0, 0), 8192 * 1024 / 4096);
        assert_eq!(c.calc_cfs_shares(0, 1), 8192 * 3072 / 4096);
        // This pCPU's current load replaces its (stale) contribution: 1024 more here.
        let gi = c.gi(0, 0);
        c.groups[gi].rq.load = 2048;
        assert_eq!(c.calc_cfs_shares(0, 0), 8192 * 2048 / 5120);
        // No load: MIN_SHARES; the only loaded pCPU: all the shares, never more.
        assert_eq!(c.calc_cfs_shares(0, 2), MIN_SHARES);
        c.tgs[0].load_weight = 0;
        c.groups[gi].avg.load_contribution = 0;
        assert_eq!(c.calc_cfs_shares(0, 0), 8192);
    }

    #[test]
    fn update_cfs_load_averages_over_the_shares_window_and_folds_changes_above_an_eighth() {
        let mut c = cfs(2, 2048);
        let gi = c.gi(0, 0);
        // Load 2048 from t = 0: at 5 ms the period is within the window, nothing folded yet.
        c.groups[gi].rq.load = 2048;
        c.update_cfs_load(0, 0, 0, false);
        c.update_cfs_load(5 * MS, 0, 0, false);
        assert_eq!(c.tgs[0].load_weight, 0);
        // Past the window the average (about 2048) is folded in and the history halved.
        c.update_cfs_load(11 * MS, 0, 0, false);
        let folded = c.tgs[0].load_weight;
        assert!((2040..=2048).contains(&folded), "{folded}");
        assert_eq!(c.groups[gi].avg.load_contribution, folded);
        assert!(c.groups[gi].avg.load_period <= SHARES_WINDOW);
        // The load halves: the average falls by more than an eighth within a window or two and
        // the contribution follows it.
        c.groups[gi].rq.load = 1024;
        let mut t = 11 * MS;
        while c.tgs[0].load_weight > 1600 && t < 100 * MS {
            t += MS;
            c.update_cfs_load(t, 0, 0, false);
        }
        assert!(c.tgs[0].load_weight <= 1600 && t <= 40 * MS, "{} at {t}", c.tgs[0].load_weight);
        // A global update folds any change (update_shares).
        c.update_cfs_load(t + MS, 0, 0, true);
        assert_eq!(c.tgs[0].load_weight, c.groups[gi].avg.load_contribution);
    }

    #[test]
    fn effective_load_is_the_change_in_the_group_entitys_weight() {
        let mut c = cfs(2, 4096);
        // One task on each pCPU: the group entities weigh 2048 each.
        for p in 0..2 {
            let gi = c.gi(0, p);
            c.groups[gi].rq.load = 1024;
            c.groups[gi].avg.load_contribution = 1024;
            c.groups[gi].se.weight = 2048;
        }
        c.tgs[0].load_weight = 2048;
        // A second task on pCPU 0: 4096 x 2048 / 3072 = 2730, a gain of 682.
        assert_eq!(c.effective_load(0, 0, 1024, 1024), 4096 * 2048 / 3072 - 2048);
        // pCPU 1 loses share to it: 4096 x 1024 / 3072 = 1365.
        assert_eq!(c.effective_load(0, 1, 0, 1024), 4096 * 1024 / 3072 - 2048);
    }
}
