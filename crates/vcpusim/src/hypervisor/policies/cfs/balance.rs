//! The Linux 3.2 load balancer (kernel/sched_fair.c v3.2, kernel/sched.c v3.2) over the
//! scheduling domains of domains.rs:
//! - `scheduler_tick` -> `update_cpu_load` (the decaying `cpu_load[]` averages of the root
//!   load) and `trigger_load_balance` -> `rebalance_domains`: each domain level is balanced
//!   when its interval has passed (`balance_interval` ms, times `busy_factor` unless the pCPU
//!   is idle, at most `HZ x pCPUs / 10` jiffies);
//! - `load_balance`: `find_busiest_group` against the domain average with `imbalance_pct`,
//!   `calculate_imbalance` / `fix_small_imbalance`, `find_busiest_queue`, then `move_tasks`
//!   (`load_balance_fair` / `balance_tasks`: several vCPUs per pass, from each group run queue
//!   of the busiest pCPU in leaf-list order, up to the imbalance converted into that group's
//!   load through its hierarchical load), `can_migrate_task` (cpumask, running, cache-hot unless
//!   `nr_balance_failed > cache_nice_tries`), retrying without a busiest pCPU whose tasks are
//!   all pinned; after repeated failures (`nr_balance_failed > cache_nice_tries + 2`) an active
//!   balance, where the busiest pCPU's stopper preempts its vCPU and pushes one vCPU over
//!   (`active_load_balance_cpu_stop` / `move_one_task`); the balance interval adapts between
//!   `min_interval` and `max_interval`;
//! - `idle_balance`: a pCPU going idle balances every level as newly idle, unless its average
//!   idle time (`avg_idle`, updated at each wakeup onto it) is below
//!   `sysctl_sched_migration_cost`.
//!
//! The seed-000 placements (`balance`, `lc-balance`) bar moves as policies/balance_placement.rs says;
//! a barred vCPU counts as pinned.

use super::domains::{group_capacity, Domain, POWER_SCALE};
use super::{Cfs, NICE_0_LOAD};
use crate::hardware::cpumask::CpuMask;
use crate::hypervisor::policies::balance_placement::{self, Placement};
use crate::hypervisor::policy::PolicyCtx;
use crate::ids::{PcpuId, VcpuId};
use crate::time::{Nanos, SEC};

/// `sysctl_sched_nr_migrate`: at most this many tasks are examined per `balance_tasks` (32).
const SCHED_NR_MIGRATE: usize = 32;
/// `MAX_PINNED_INTERVAL`: the balance interval backs off up to this when tasks are pinned (ms).
const MAX_PINNED_INTERVAL: u64 = 512;
/// `decay_load_missed` (kernel/sched.c v3.2): after this many missed ticks `cpu_load[idx]` is 0
/// (`degrade_zero_ticks`), and the factors (out of 128) for 1, 2, 4, ... missed ticks.
const DEGRADE_ZERO_TICKS: [u64; 5] = [0, 8, 32, 64, 128];
const DEGRADE_FACTOR: [[u64; 8]; 5] = [
    [0, 0, 0, 0, 0, 0, 0, 0],
    [64, 32, 8, 0, 0, 0, 0, 0],
    [96, 72, 40, 12, 1, 0, 0, 0],
    [112, 98, 75, 43, 15, 1, 0, 0],
    [120, 112, 98, 76, 45, 16, 2, 0],
];

/// `enum cpu_idle_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum CpuIdle {
    Idle,
    NotIdle,
    NewlyIdle,
}

/// `struct sg_lb_stats`.
#[derive(Clone, Copy, Debug, Default)]
struct SgStats {
    avg_load: u64,
    group_load: u64,
    sum_nr_running: u64,
    sum_weighted_load: u64,
    group_capacity: u64,
    idle_cpus: u64,
    group_weight: u64,
    group_imb: bool,
    has_capacity: bool,
}

/// `struct sd_lb_stats` (without the power-savings part: power savings are off by default).
#[derive(Clone, Copy, Debug, Default)]
struct SdStats {
    busiest: Option<usize>,
    total_load: u64,
    total_pwr: u64,
    avg_load: u64,
    this_load: u64,
    this_load_per_task: u64,
    this_nr_running: u64,
    this_has_capacity: bool,
    this_idle_cpus: u64,
    this_power: u64,
    busiest_idle_cpus: u64,
    max_load: u64,
    busiest_load_per_task: u64,
    busiest_nr_running: u64,
    busiest_group_capacity: u64,
    busiest_has_capacity: bool,
    busiest_group_weight: u64,
    busiest_power: u64,
    group_imb: bool,
}

impl Cfs {
    /// `update_cpu_load` at a tick: `cpu_load[i] = (old x (2^i - 1) + load) / 2^i`, rounding up
    /// when the load grows, with missed ticks decayed (`decay_load_missed`).
    pub(super) fn update_cpu_load(&mut self, now: Nanos, p: usize) {
        let jiffies = self.jiffies(now);
        let this_load = self.weighted_cpuload(p);
        let rq = &mut self.rqs[p];
        if jiffies == rq.last_load_update_tick {
            return;
        }
        let pending = jiffies - rq.last_load_update_tick;
        rq.last_load_update_tick = jiffies;
        rq.cpu_load[0] = this_load;
        for i in 1..rq.cpu_load.len() {
            let scale = 1u64 << i;
            let old = decay_load_missed(rq.cpu_load[i], pending - 1, i);
            let new = if this_load > old { this_load + scale - 1 } else { this_load };
            rq.cpu_load[i] = (old * (scale - 1) + new) >> i;
        }
    }

    /// `source_load`: a low guess at a source pCPU's load (`LB_BIAS`).
    fn source_load(&self, p: usize, idx: usize) -> u64 {
        let total = self.weighted_cpuload(p);
        if idx == 0 {
            total
        } else {
            self.rqs[p].cpu_load[idx - 1].min(total)
        }
    }

    /// `target_load`: a high guess at a target pCPU's load.
    fn target_load(&self, p: usize, idx: usize) -> u64 {
        let total = self.weighted_cpuload(p);
        if idx == 0 {
            total
        } else {
            self.rqs[p].cpu_load[idx - 1].max(total)
        }
    }

    /// `cpu_avg_load_per_task`.
    fn cpu_avg_load_per_task(&self, p: usize) -> u64 {
        self.weighted_cpuload(p).checked_div(self.rqs[p].nr_running).unwrap_or(0)
    }

    /// `max_load_balance_interval` = HZ x pCPUs / 10, in jiffies.
    fn max_load_balance_interval(&self) -> u64 {
        (SEC / self.tick * self.npcpus as u64 / 10).max(1)
    }

    /// `trigger_load_balance` at a tick of `p`: `rebalance_domains` once `next_balance` is due,
    /// as idle if nothing runs or waits on `p` (`rq->idle_balance`).
    pub(super) fn trigger_load_balance(&mut self, ctx: &mut PolicyCtx, p: usize) {
        if self.jiffies(ctx.now()) >= self.rqs[p].next_balance {
            let idle = if self.idle_cpu(p) { CpuIdle::Idle } else { CpuIdle::NotIdle };
            self.rebalance_domains(ctx, p, idle);
        }
    }

    /// `rebalance_domains(cpu, idle)`.
    fn rebalance_domains(&mut self, ctx: &mut PolicyCtx, p: usize, mut idle: CpuIdle) {
        let jiffies = self.jiffies(ctx.now());
        let hz = SEC / self.tick;
        let mut next_balance = jiffies + 60 * hz;
        let mut update_next = false;
        self.update_shares(ctx.now(), p);
        for level in 0..self.domains[p].len() {
            let sd = self.domains[p][level].sd;
            let mut interval = self.rqs[p].sd[level].balance_interval;
            if idle != CpuIdle::Idle {
                interval *= sd.busy_factor;
            }
            let interval = self.ms_to_jiffies(interval).clamp(1, self.max_load_balance_interval());
            let mut balance = true;
            if jiffies >= self.rqs[p].sd[level].last_balance + interval {
                let (moved, bal) = self.load_balance(ctx, p, level, idle);
                balance = bal;
                if moved {
                    idle = CpuIdle::NotIdle;
                }
                self.rqs[p].sd[level].last_balance = jiffies;
            }
            let due = self.rqs[p].sd[level].last_balance + interval;
            if next_balance > due {
                next_balance = due;
                update_next = true;
            }
            if !balance {
                break;
            }
        }
        if update_next {
            self.rqs[p].next_balance = next_balance;
        }
    }

    /// `idle_balance(this_cpu, this_rq)`: `p` is about to go idle.
    pub(super) fn idle_balance(&mut self, ctx: &mut PolicyCtx, p: usize) {
        let now = ctx.now();
        self.rqs[p].idle_stamp = Some(now);
        if self.rqs[p].avg_idle < self.migration_cost {
            return;
        }
        self.update_shares(now, p);
        let jiffies = self.jiffies(now);
        let mut next_balance = jiffies + SEC / self.tick;
        let mut pulled = false;
        for level in 0..self.domains[p].len() {
            pulled = self.load_balance(ctx, p, level, CpuIdle::NewlyIdle).0;
            let st = self.rqs[p].sd[level];
            let due = st.last_balance + self.ms_to_jiffies(st.balance_interval);
            if next_balance > due {
                next_balance = due;
            }
            if pulled {
                self.rqs[p].idle_stamp = None;
                break;
            }
        }
        if pulled || jiffies > self.rqs[p].next_balance {
            self.rqs[p].next_balance = next_balance;
        }
        // The pick that follows takes whatever was pulled.
        self.rqs[p].need_resched = false;
    }

    /// `ttwu_do_wakeup`'s `avg_idle` update: a wakeup onto a pCPU that went idle at
    /// `idle_stamp` averages in how long it was idle (at most twice the migration cost).
    pub(super) fn note_wakeup(&mut self, now: Nanos, p: usize) {
        let max = 2 * self.migration_cost;
        let rq = &mut self.rqs[p];
        if let Some(stamp) = rq.idle_stamp.take() {
            let delta = now - stamp;
            if delta > max {
                rq.avg_idle = max;
            } else {
                // update_avg: avg += (sample - avg) >> 3 (an arithmetic shift).
                let diff = delta as i64 - rq.avg_idle as i64;
                rq.avg_idle = (rq.avg_idle as i64 + (diff >> 3)) as Nanos;
            }
        }
    }

    /// `load_balance(this_cpu, this_rq, sd, idle, &balance)` at domain level `level` of `this`.
    /// Returns (tasks were moved, `balance`: this pCPU is the one to balance at this level).
    fn load_balance(&mut self, ctx: &mut PolicyCtx, this: usize, level: usize, idle: CpuIdle) -> (bool, bool) {
        let sd = self.domains[this][level].clone();
        // `cpus = __get_cpu_var(load_balance_tmpmask)`, refilled from the domain's span: a
        // scratch mask reused across calls (no allocation per balance).
        let mut cpus = std::mem::take(&mut self.lb_cpus);
        cpus.clone_from(&sd.span_mask);
        let mut all_pinned = false;
        let mut active = false;
        let mut ld_moved = false;
        let (min_interval, max_interval, nice) = (sd.sd.min_interval, sd.sd.max_interval, sd.sd.cache_nice_tries);
        let outcome = loop {
            let (found, balance) = self.find_busiest_group(this, level, &sd, idle, &cpus);
            if !balance {
                break Outcome::Balanced(false);
            }
            let Some((group, imbalance)) = found else { break Outcome::Balanced(true) };
            let Some(busiest) = self.find_busiest_queue(&sd, group, imbalance, &cpus) else { break Outcome::Balanced(true) };
            ld_moved = false;
            if self.rqs[busiest].nr_running > 1 {
                all_pinned = true;
                ld_moved = self.move_tasks(ctx, this, busiest, imbalance, level, &mut all_pinned);
                if all_pinned {
                    cpus.remove(PcpuId(busiest as u32));
                    if !cpus.is_empty() {
                        continue;
                    }
                    break Outcome::Balanced(true);
                }
            }
            if !ld_moved {
                if idle != CpuIdle::NewlyIdle {
                    self.rqs[this].sd[level].nr_balance_failed += 1;
                }
                // need_active_balance: never when newly idle (power savings off).
                if idle != CpuIdle::NewlyIdle && self.rqs[this].sd[level].nr_balance_failed > nice + 2 {
                    // Not if the vCPU running on the busiest pCPU may not run here.
                    let movable = self.curr_task(busiest).is_some_and(|c| ctx.host.may_run(c, PcpuId(this as u32)));
                    if !movable {
                        all_pinned = true;
                        break Outcome::OnePinned;
                    }
                    if self.rqs[busiest].active_balance.is_none() {
                        self.rqs[busiest].active_balance = Some(this);
                        active = true;
                        // stop_one_cpu_nowait: the stopper preempts whatever runs there.
                        self.resched_now(ctx, busiest);
                    }
                    self.rqs[this].sd[level].nr_balance_failed = nice + 1;
                }
            } else {
                self.rqs[this].sd[level].nr_balance_failed = 0;
            }
            let st = &mut self.rqs[this].sd[level];
            if !active {
                st.balance_interval = min_interval;
            } else if st.balance_interval < max_interval {
                st.balance_interval *= 2;
            }
            break Outcome::Done;
        };
        self.lb_cpus = cpus;
        let balance = !matches!(outcome, Outcome::Balanced(false));
        match outcome {
            Outcome::Done => return (ld_moved, balance),
            Outcome::Balanced(_) => self.rqs[this].sd[level].nr_balance_failed = 0,
            Outcome::OnePinned => {}
        }
        let st = &mut self.rqs[this].sd[level];
        if (all_pinned && st.balance_interval < MAX_PINNED_INTERVAL) || st.balance_interval < max_interval {
            st.balance_interval *= 2;
        }
        (false, balance)
    }

    /// `find_busiest_group`: (the busiest group's index in `sd.groups` and the weighted load to
    /// move, if there is an imbalance worth fixing; whether `this` balances at this level).
    /// When no group but the local one could be the busiest, the answer is known without the
    /// pass over the span (lb_candidates.rs).
    fn find_busiest_group(&self, this: usize, level: usize, sd: &Domain, idle: CpuIdle, cpus: &CpuMask) -> (Option<(usize, u64)>, bool) {
        if !self.lb_candidates.others(this, level) {
            return (None, idle == CpuIdle::NewlyIdle || self.balance_cpu(sd, cpus) == this);
        }
        self.find_busiest_group_scan(this, sd, idle, cpus)
    }

    /// `find_busiest_group` as Linux computes it, from every pCPU of the span.
    fn find_busiest_group_scan(&self, this: usize, sd: &Domain, idle: CpuIdle, cpus: &CpuMask) -> (Option<(usize, u64)>, bool) {
        let Some(mut sds) = self.update_sd_lb_stats(this, sd, idle, cpus) else { return (None, false) };
        let Some(busiest) = sds.busiest.filter(|_| sds.busiest_nr_running > 0) else { return (None, true) };
        sds.avg_load = POWER_SCALE * sds.total_load / sds.total_pwr;
        let force = sds.group_imb || (idle == CpuIdle::NewlyIdle && sds.this_has_capacity && !sds.busiest_has_capacity);
        if !force {
            if sds.this_load >= sds.max_load || sds.this_load >= sds.avg_load {
                return (None, true);
            }
            if idle == CpuIdle::Idle {
                if sds.this_idle_cpus <= sds.busiest_idle_cpus + 1 && sds.busiest_nr_running <= sds.busiest_group_weight {
                    return (None, true);
                }
            } else if 100 * sds.max_load <= sd.sd.imbalance_pct * sds.this_load {
                return (None, true);
            }
        }
        let imbalance = self.calculate_imbalance(&mut sds, this);
        (Some((busiest, imbalance)), true)
    }

    /// `update_sd_lb_stats`; None when `this` is not the pCPU to balance at this level.
    fn update_sd_lb_stats(&self, this: usize, sd: &Domain, idle: CpuIdle, cpus: &CpuMask) -> Option<SdStats> {
        let prefer_sibling = sd.child_prefers_sibling;
        let load_idx = match idle {
            CpuIdle::NotIdle => sd.sd.busy_idx,
            CpuIdle::NewlyIdle => sd.sd.newidle_idx,
            CpuIdle::Idle => sd.sd.idle_idx,
        };
        let mut sds = SdStats::default();
        for (gi, g) in sd.groups.iter().enumerate() {
            let local = gi == 0;
            let mut sgs = self.update_sg_lb_stats(this, sd, gi, idle, load_idx, local, cpus)?;
            sds.total_load += sgs.group_load;
            sds.total_pwr += g.power;
            if prefer_sibling && !local && sds.this_has_capacity {
                sgs.group_capacity = sgs.group_capacity.min(1);
            }
            if local {
                sds.this_load = sgs.avg_load;
                sds.this_nr_running = sgs.sum_nr_running;
                sds.this_load_per_task = sgs.sum_weighted_load;
                sds.this_has_capacity = sgs.has_capacity;
                sds.this_idle_cpus = sgs.idle_cpus;
                sds.this_power = g.power;
            } else if sgs.avg_load > sds.max_load && (sgs.sum_nr_running > sgs.group_capacity || sgs.group_imb) {
                // update_sd_pick_busiest
                sds.max_load = sgs.avg_load;
                sds.busiest = Some(gi);
                sds.busiest_nr_running = sgs.sum_nr_running;
                sds.busiest_idle_cpus = sgs.idle_cpus;
                sds.busiest_group_capacity = sgs.group_capacity;
                sds.busiest_load_per_task = sgs.sum_weighted_load;
                sds.busiest_has_capacity = sgs.has_capacity;
                sds.busiest_group_weight = sgs.group_weight;
                sds.busiest_power = g.power;
                sds.group_imb = sgs.group_imb;
            }
        }
        Some(sds)
    }

    /// The local group's balancing pCPU (`update_sg_lb_stats`' `balance_cpu`): its first idle
    /// pCPU of `cpus`, or its first.
    fn balance_cpu(&self, sd: &Domain, cpus: &CpuMask) -> usize {
        let g = &sd.groups[0];
        g.cpus.iter().copied().find(|&i| cpus.contains(PcpuId(i as u32)) && self.idle_cpu(i)).unwrap_or(g.cpus[0])
    }

    /// `update_sg_lb_stats`; None when the local group's balancing pCPU (its first idle one, or
    /// its first) is not `this` (periodic balancing only).
    #[allow(clippy::too_many_arguments)]
    fn update_sg_lb_stats(
        &self,
        this: usize,
        sd: &Domain,
        gi: usize,
        idle: CpuIdle,
        idx: usize,
        local: bool,
        cpus: &CpuMask,
    ) -> Option<SgStats> {
        let g = &sd.groups[gi];
        if idle != CpuIdle::NewlyIdle && local && self.balance_cpu(sd, cpus) != this {
            return None;
        }
        let mut s = SgStats::default();
        let (mut max_cpu_load, mut min_cpu_load, mut max_nr_running) = (0u64, u64::MAX, 0u64);
        // for_each_cpu_and(i, sched_group_cpus(group), cpus)
        for &i in g.cpus.iter().filter(|&&i| cpus.contains(PcpuId(i as u32))) {
            let load = if local {
                self.target_load(i, idx)
            } else {
                let load = self.source_load(i, idx);
                if load > max_cpu_load {
                    max_cpu_load = load;
                    max_nr_running = self.rqs[i].nr_running;
                }
                min_cpu_load = min_cpu_load.min(load);
                load
            };
            s.group_load += load;
            s.sum_nr_running += self.rqs[i].nr_running;
            s.sum_weighted_load += self.weighted_cpuload(i);
            if self.idle_cpu(i) {
                s.idle_cpus += 1;
            }
        }
        s.avg_load = s.group_load * POWER_SCALE / g.power;
        let avg_load_per_task = s.sum_weighted_load.checked_div(s.sum_nr_running).unwrap_or(0);
        // Unsigned as in C (only non-local groups track the extremes).
        s.group_imb = max_cpu_load.wrapping_sub(min_cpu_load) >= avg_load_per_task && max_nr_running > 1;
        s.group_capacity = group_capacity(&sd.sd, g.power);
        s.group_weight = g.cpus.len() as u64;
        s.has_capacity = s.group_capacity > s.sum_nr_running;
        Some(s)
    }

    /// `calculate_imbalance`: move enough to bring the busiest group down to the domain average
    /// without pushing this one above it or the busiest below its capacity.
    fn calculate_imbalance(&self, sds: &mut SdStats, this: usize) -> u64 {
        sds.busiest_load_per_task /= sds.busiest_nr_running;
        if sds.group_imb {
            sds.busiest_load_per_task = sds.busiest_load_per_task.min(sds.avg_load);
        }
        if sds.max_load < sds.avg_load {
            return self.fix_small_imbalance(sds, this, 0);
        }
        let mut load_above_capacity = u64::MAX;
        if !sds.group_imb {
            // Unsigned as in C: a group below its capacity leaves no bound.
            load_above_capacity =
                sds.busiest_nr_running.wrapping_sub(sds.busiest_group_capacity).wrapping_mul(NICE_0_LOAD * POWER_SCALE) / sds.busiest_power;
        }
        let max_pull = (sds.max_load - sds.avg_load).min(load_above_capacity);
        let imbalance = (max_pull.saturating_mul(sds.busiest_power))
            .min(sds.avg_load.wrapping_sub(sds.this_load).wrapping_mul(sds.this_power))
            / POWER_SCALE;
        if imbalance < sds.busiest_load_per_task {
            return self.fix_small_imbalance(sds, this, imbalance);
        }
        imbalance
    }

    /// `fix_small_imbalance`: move one task's load if that helps, else keep `imbalance`.
    #[allow(clippy::manual_checked_ops)] // fair.c's `if (sds->this_nr_running) ... /=`, as written there
    fn fix_small_imbalance(&self, sds: &mut SdStats, this: usize, imbalance: u64) -> u64 {
        let mut imbn = 2;
        if sds.this_nr_running > 0 {
            sds.this_load_per_task /= sds.this_nr_running;
            if sds.busiest_load_per_task > sds.this_load_per_task {
                imbn = 1;
            }
        } else {
            sds.this_load_per_task = self.cpu_avg_load_per_task(this);
        }
        let (bpwr, tpwr) = (sds.busiest_power, sds.this_power);
        let scaled_busy = sds.busiest_load_per_task * POWER_SCALE / bpwr;
        if sds.max_load.wrapping_sub(sds.this_load).wrapping_add(scaled_busy) >= scaled_busy * imbn {
            return sds.busiest_load_per_task;
        }
        // Not enough imbalance to move a task; move one if that uses more CPU power.
        let mut pwr_now = bpwr * sds.busiest_load_per_task.min(sds.max_load);
        pwr_now += tpwr * sds.this_load_per_task.min(sds.this_load);
        pwr_now /= POWER_SCALE;
        let mut pwr_move = 0;
        let tmp = sds.busiest_load_per_task * POWER_SCALE / bpwr;
        if sds.max_load > tmp {
            pwr_move += bpwr * sds.busiest_load_per_task.min(sds.max_load - tmp);
        }
        let tmp = if sds.max_load * bpwr < sds.busiest_load_per_task * POWER_SCALE {
            sds.max_load * bpwr / tpwr
        } else {
            sds.busiest_load_per_task * POWER_SCALE / tpwr
        };
        pwr_move += tpwr * sds.this_load_per_task.min(sds.this_load + tmp);
        pwr_move /= POWER_SCALE;
        if pwr_move > pwr_now {
            sds.busiest_load_per_task
        } else {
            imbalance
        }
    }

    /// `find_busiest_queue`: the pCPU of the group with the most load per power, skipping one
    /// running a single task heavier than the imbalance.
    fn find_busiest_queue(&self, sd: &Domain, group: usize, imbalance: u64, cpus: &CpuMask) -> Option<usize> {
        let mut busiest = None;
        let mut max_load = 0;
        for &i in sd.groups[group].cpus.iter() {
            let power = self.power_of(i);
            let cap = group_capacity(&sd.sd, power);
            if !cpus.contains(PcpuId(i as u32)) {
                continue;
            }
            let wl = self.weighted_cpuload(i);
            if cap > 0 && self.rqs[i].nr_running == 1 && wl > imbalance {
                continue;
            }
            let wl = wl * POWER_SCALE / power;
            if wl > max_load {
                max_load = wl;
                busiest = Some(i);
            }
        }
        busiest
    }

    /// `move_tasks`: `load_balance_fair` until nothing more moves or `max_load_move` is met.
    #[allow(clippy::too_many_arguments)]
    fn move_tasks(
        &mut self,
        ctx: &mut PolicyCtx,
        this: usize,
        busiest: usize,
        max_load_move: u64,
        level: usize,
        all_pinned: &mut bool,
    ) -> bool {
        let mut total = 0;
        loop {
            let moved = self.load_balance_fair(ctx, this, busiest, max_load_move - total, level, all_pinned);
            total += moved;
            if moved == 0 || max_load_move <= total {
                break;
            }
        }
        total > 0
    }

    /// `load_balance_fair`: for each group run queue of `busiest` (leaf-list order) with
    /// vCPUs, `balance_tasks` up to the remaining imbalance converted to the group's own load
    /// (`rem x load / (h_load + 1)`), counting what moved back in root-level load.
    #[allow(clippy::too_many_arguments)]
    fn load_balance_fair(
        &mut self,
        ctx: &mut PolicyCtx,
        this: usize,
        busiest: usize,
        max_load_move: u64,
        level: usize,
        all_pinned: &mut bool,
    ) -> u64 {
        let mut rem = max_load_move as i64;
        // update_h_load(cpu_of(busiest)).
        let mut leaf = std::mem::take(&mut self.walk_h_load);
        leaf.clear();
        leaf.extend(self.rqs[busiest].leaf.iter().map(|&vm| (vm as usize, self.h_load(vm as usize, busiest))));
        for &(vm, h_load) in &leaf {
            let weight = self.groups[self.gi(vm, busiest)].rq.load;
            if weight == 0 || self.throttled_vm(vm) {
                continue;
            }
            let rem_load = (rem.max(0) as u64 as u128 * weight as u128 / (h_load + 1) as u128) as u64;
            let moved = self.balance_tasks(ctx, this, busiest, rem_load, level, all_pinned, vm);
            if moved == 0 {
                continue;
            }
            let moved_load = (moved as u128 * h_load as u128 / (weight + 1) as u128) as i64;
            rem -= moved_load;
            if rem < 0 {
                break;
            }
        }
        self.walk_h_load = leaf;
        (max_load_move as i64 - rem) as u64
    }

    /// `balance_tasks` over VM `vm`'s vCPUs on `busiest` (`cfs_rq->tasks` order): pull each
    /// one `can_migrate_task` allows while at least half a task's weight remains to move.
    #[allow(clippy::too_many_arguments)]
    fn balance_tasks(
        &mut self,
        ctx: &mut PolicyCtx,
        this: usize,
        busiest: usize,
        max_load_move: u64,
        level: usize,
        all_pinned: &mut bool,
        vm: usize,
    ) -> u64 {
        if max_load_move == 0 {
            return 0;
        }
        let mut rem = max_load_move as i64;
        let mut tasks = std::mem::take(&mut self.walk_tasks);
        tasks.clone_from(&self.groups[self.gi(vm, busiest)].tasks);
        for (loops, &v) in tasks.iter().enumerate() {
            if loops > SCHED_NR_MIGRATE {
                break;
            }
            if (NICE_0_LOAD >> 1) as i64 > rem || !self.can_migrate_task(ctx, v, busiest, this, level, all_pinned) {
                continue;
            }
            self.pull_task(ctx, v, vm, this);
            rem -= NICE_0_LOAD as i64;
            if rem <= 0 {
                break;
            }
        }
        self.walk_tasks = tasks;
        (max_load_move as i64 - rem) as u64
    }

    /// `can_migrate_task`: not if `this` is outside its cpumask or the placement bars it (then
    /// it counts as pinned), not while it runs, and not while cache-hot unless balancing at this
    /// level failed more than `cache_nice_tries` times.
    fn can_migrate_task(&self, ctx: &PolicyCtx, v: VcpuId, busiest: usize, this: usize, level: usize, all_pinned: &mut bool) -> bool {
        let host = &ctx.host;
        if !self.may_move(ctx, v, this) {
            return false;
        }
        // Soft affinity (ours, as credit's steal does): a vCPU is not pulled off a preferred run
        // queue whose pCPU will pick it up itself (nothing runs there).
        let leaves_soft = host.has_soft(v) && !host.prefers(v, PcpuId(this as u32)) && host.prefers(v, PcpuId(busiest as u32));
        if leaves_soft && self.rqs[busiest].root.curr.is_none() {
            return false;
        }
        *all_pinned = false;
        if self.curr_task(busiest) == Some(v) {
            return false;
        }
        !self.task_hot(ctx, v, this) || self.rqs[this].sd[level].nr_balance_failed > self.domains[this][level].sd.cache_nice_tries
    }

    /// `task_hot`: a next or last buddy is hot while the balancing pCPU has work
    /// (`CACHE_HOT_BUDDY`); otherwise a vCPU that ran within `sysctl_sched_migration_cost`.
    fn task_hot(&self, ctx: &PolicyCtx, v: VcpuId, this_rq: usize) -> bool {
        let e = &self.se[v.idx()];
        let Some(p) = e.rq else { return false };
        let g = &self.groups[self.gi(self.vm_index(v), p)];
        if self.rqs[this_rq].nr_running > 0 && (g.rq.next == Some(v.0) || g.rq.last == Some(v.0)) {
            return true;
        }
        if self.migration_cost == 0 {
            return false;
        }
        ctx.now().saturating_sub(e.last_ran) < self.migration_cost
    }

    /// `pull_task`: move `v` to `this` and let it preempt there if it should
    /// (`check_preempt_curr`).
    fn pull_task(&mut self, ctx: &mut PolicyCtx, v: VcpuId, vm: usize, this: usize) {
        self.migrate(ctx.now(), v, vm, this);
        self.check_preempt_wakeup(ctx, v, this);
    }

    /// `active_load_balance_cpu_stop` on `busiest` (its vCPU already put back by the stopper):
    /// `move_one_task` to `target` within the lowest domain of `target` spanning both, cache-hot
    /// vCPUs allowed (the failure count was just raised past `cache_nice_tries`).
    pub(super) fn active_load_balance(&mut self, ctx: &mut PolicyCtx, busiest: usize, target: usize) {
        if self.rqs[busiest].nr_running <= 1 || !ctx.host.owns_pcpu(PcpuId(target as u32)) {
            return;
        }
        let Some(level) = self.domains[target].iter().position(|d| d.spans(busiest)) else { return };
        let mut pinned = false;
        let mut leaf = std::mem::take(&mut self.walk_leaf);
        leaf.clone_from(&self.rqs[busiest].leaf);
        let mut tasks = std::mem::take(&mut self.walk_tasks);
        'leaf: for &vm in &leaf {
            let vm = vm as usize;
            if self.throttled_vm(vm) {
                continue;
            }
            tasks.clone_from(&self.groups[self.gi(vm, busiest)].tasks);
            for &v in &tasks {
                if self.can_migrate_task(ctx, v, busiest, target, level, &mut pinned) {
                    self.pull_task(ctx, v, vm, target);
                    break 'leaf;
                }
            }
        }
        (self.walk_leaf, self.walk_tasks) = (leaf, tasks);
    }

    /// May the balancer move `v` to `dest`? Its cpumask (`tsk_cpus_allowed`), and under
    /// `balance` / `lc-balance` the placement's rule (policies/balance_placement.rs).
    fn may_move(&self, ctx: &PolicyCtx, v: VcpuId, dest: usize) -> bool {
        if !ctx.host.may_run(v, PcpuId(dest as u32)) {
            return false;
        }
        if self.placement == Placement::Default {
            return true;
        }
        let view = super::select::PlaceView::new(self, ctx, v);
        balance_placement::may_move_to(self.placement, &view, dest)
    }

    /// Under `balance`, siblings never share a run queue while the VM has no more vCPUs than
    /// the host has pCPUs (beyond that, stacking is unavoidable).
    pub(super) fn check_no_stacked_siblings(&self, host: &crate::hypervisor::policy::HostView) -> Result<(), String> {
        for vm in host.pool_vms().filter(|vm| vm.vcpus.len() <= host.npcpus()) {
            let mut holder: Vec<Option<VcpuId>> = vec![None; self.rqs.len()];
            for &s in &vm.vcpus {
                let Some(p) = self.se[s.idx()].rq else { continue };
                if let Some(other) = holder[p].replace(s) {
                    return Err(format!("cfs: placement = \"balance\" stacked vCPUs {other} and {s} of VM {:?} on pCPU {p}", vm.name));
                }
            }
        }
        Ok(())
    }
}

/// How `load_balance` ended (its labels): `Done` (`out`), `Balanced(balance)` (`out_balanced`),
/// `OnePinned` (`out_one_pinned`).
enum Outcome {
    Done,
    Balanced(bool),
    OnePinned,
}

/// `decay_load_missed(load, missed, idx)`.
fn decay_load_missed(load: u64, missed: u64, idx: usize) -> u64 {
    if missed == 0 {
        return load;
    }
    if missed >= DEGRADE_ZERO_TICKS[idx] {
        return 0;
    }
    if idx == 1 {
        return load >> missed;
    }
    let (mut load, mut missed, mut j) = (load, missed, 0);
    while missed > 0 {
        if missed % 2 == 1 {
            load = (load * DEGRADE_FACTOR[idx][j]) >> 7;
        }
        missed >>= 1;
        j += 1;
    }
    load
}

#[cfg(test)]
mod tests {
    use super::super::{Cfs, CfsKind, Enqueue};
    use super::*;
    use crate::hardware::topology::Topology;
    use crate::hypervisor::policies::{HostShape, PolicyKind};
    use crate::hypervisor::policy::{HostView, PcpuInfo, Policy, TimerTable, VcpuInfo, VmInfo, VmSched};
    use crate::ids::VmId;
    use crate::params::Params;
    use crate::time::MS;
    use rand::Rng;

    /// One VM of `n` vCPUs on `npcpus` flat pCPUs: the host tables a policy call needs.
    struct Host {
        vcpus: Vec<VcpuInfo>,
        pcpus: Vec<PcpuInfo>,
        vms: Vec<VmInfo>,
        topology: Topology,
        timers: TimerTable,
    }

    impl Host {
        fn new(npcpus: u32, n: u32) -> Self {
            Self::with_vms(npcpus, &[(n, 256)])
        }

        /// One VM of `n` vCPUs on the pCPUs of `topology`.
        fn on(topology: Topology, n: u32) -> Self {
            let mut host = Self::new(topology.npcpus() as u32, n);
            host.topology = topology;
            host
        }

        /// VMs of (vCPUs, weight) on `npcpus` flat pCPUs.
        fn with_vms(npcpus: u32, vms: &[(u32, u32)]) -> Self {
            let (vcpus, vms, _) = crate::hypervisor::policies::test_host::vms_of(vms);
            let pcpus = (0..npcpus).map(|p| PcpuInfo { id: PcpuId(p), current: None }).collect();
            Host { vcpus, pcpus, vms, topology: Topology::flat(npcpus), timers: TimerTable::default() }
        }

        /// Run `f` with a policy context at `now`.
        fn call<R>(&mut self, now: u64, f: impl FnOnce(&mut PolicyCtx) -> R) -> R {
            let view = HostView::new(now, &self.vcpus, &self.pcpus, &self.vms, &self.topology);
            let mut requests = Vec::new();
            let mut ctx = PolicyCtx::new(view, &mut requests, &mut self.timers);
            f(&mut ctx)
        }
    }

    #[test]
    fn the_placement_view_marks_sibling_run_queues_beyond_128_pcpus_and_leaves_its_mask_empty() {
        // 160 pCPUs (beyond what a 128-bit set could mark): VM 0's v1 and v2 queued on
        // pCPUs 130 and 150, VM 1's v3 on 140. Under `balance` the balancer may not move v0 onto
        // a sibling's run queue, but may onto one holding another VM's vCPU; the view of a VM 1
        // vCPU built next sees only VM 1's run queue, so the first view left no bit behind.
        const NPCPUS: u32 = 160;
        let mut host = Host::with_vms(NPCPUS, &[(3, 256), (2, 256)]);
        let mut params = Params::defaults(&CfsKind.params());
        params.set("placement", crate::params::ParamValue::Choice("balance".into()));
        let mut c = Cfs::new(&params, HostShape::new(NPCPUS, 5, 2));
        host.call(0, |ctx| {
            for vm in 0..2 {
                c.adjust(ctx, VmId(vm), &VmSched::with_weight(256));
            }
            for (v, vm, p) in [(1, 0, 130), (2, 0, 150), (3, 1, 140)] {
                c.vcpu_vm[v] = vm;
                c.enqueue_task(0, VcpuId(v as u32), vm, p, Enqueue::Relative);
            }
            c.vcpu_vm[4] = 1;
        });
        let marked = |c: &Cfs, ctx: &PolicyCtx, v: u32| -> Vec<usize> {
            let view = super::super::select::PlaceView::new(c, ctx, VcpuId(v));
            (0..NPCPUS as usize).filter(|&p| balance_placement::PlacementView::holds_sibling(&view, p)).collect()
        };
        host.call(MS, |ctx| {
            assert_eq!(marked(&c, ctx, 0), [130, 150]);
            assert!(!c.may_move(ctx, VcpuId(0), 130) && !c.may_move(ctx, VcpuId(0), 150));
            assert!(c.may_move(ctx, VcpuId(0), 140) && c.may_move(ctx, VcpuId(0), 159));
            assert_eq!(marked(&c, ctx, 4), [140]);
            // v1's own run queue is not a sibling's.
            assert_eq!(marked(&c, ctx, 1), [150]);
        });
        assert!(c.sibling_rqs.take().is_empty(), "a view left bits in the kept mask");
    }

    #[test]
    fn a_newly_idle_pcpu_pulls_several_vcpus_in_one_pass_up_to_the_imbalance() {
        // Six queued vCPUs of one VM on pCPU 0 of 2, none running, none run yet (cache-cold):
        // the VM's group entity there has all its shares (2048), pCPU 1 none. The domain average
        // is 1024, so the imbalance is 1024 of root load; converted into the group's own units
        // (x 6144 / 2048) that is three vCPUs, and balance_tasks pulls all three in one pass.
        let mut host = Host::new(2, 6);
        let params = Params::defaults(&CfsKind.params());
        let mut c = Cfs::new(&params, HostShape::new(2, 6, 1));
        host.call(0, |ctx| {
            c.adjust(ctx, VmId(0), &VmSched::with_weight(256));
            c.start_ticks(ctx);
            for v in 0..6 {
                c.vcpu_vm[v] = 0;
                c.enqueue_task(0, VcpuId(v as u32), 0, 0, Enqueue::Relative);
            }
        });
        assert_eq!((c.rqs[0].nr_running, c.weighted_cpuload(0)), (6, 2048));
        host.call(10 * MS, |ctx| c.idle_balance(ctx, 1));
        assert_eq!((c.rqs[0].nr_running, c.rqs[1].nr_running), (3, 3), "pulled {} vCPUs", c.rqs[1].nr_running);
        assert_eq!(c.rqs[1].sd[0].nr_balance_failed, 0);
        host.call(10 * MS, |ctx| c.check(&ctx.host)).unwrap();
    }

    #[test]
    fn cache_hot_vcpus_stay_until_balancing_failed_more_than_cache_nice_tries() {
        // Two queued vCPUs on pCPU 0 that ran 0.1 ms ago (hot: migration_cost is 0.5 ms), pCPU 1
        // idle: periodic (idle) balancing fails and counts each failure; once the count is above
        // SD_MC_INIT's cache_nice_tries (1), a hot vCPU may move.
        let mut host = Host::new(2, 2);
        let params = Params::defaults(&CfsKind.params());
        let mut c = Cfs::new(&params, HostShape::new(2, 2, 1));
        host.call(0, |ctx| {
            c.adjust(ctx, VmId(0), &VmSched::with_weight(256));
            c.start_ticks(ctx);
            for v in 0..2 {
                c.vcpu_vm[v] = 0;
                c.enqueue_task(0, VcpuId(v as u32), 0, 0, Enqueue::Relative);
            }
        });
        let now = 10 * MS;
        for v in 0..2 {
            c.se[v].last_ran = now - MS / 10;
        }
        for failures in 1..=2 {
            let (moved, _) = host.call(now, |ctx| c.load_balance(ctx, 1, 0, CpuIdle::Idle));
            assert!(!moved, "a hot vCPU moved after {} failures", failures - 1);
            assert_eq!(c.rqs[1].sd[0].nr_balance_failed, failures);
        }
        let (moved, _) = host.call(now, |ctx| c.load_balance(ctx, 1, 0, CpuIdle::Idle));
        assert!(moved, "a hot vCPU should move after 2 failures (nr_balance_failed > cache_nice_tries)");
        assert_eq!((c.rqs[0].nr_running, c.rqs[1].nr_running), (1, 1));
        assert_eq!(c.rqs[1].sd[0].nr_balance_failed, 0);
    }

    #[test]
    fn a_balance_without_candidates_answers_as_the_scan_over_the_span() {
        // vCPUs queued, moved and dequeued at random on hosts with SMT, socket and node levels:
        // after each change, wherever the candidate counts skip the pass, the pass finds no
        // busiest group and gives the same `balance`, for every idle type, on the whole span
        // and on the span less a random pCPU (a retry's `cpus`).
        let mut skipped = 0;
        for (topo, _) in super::super::domains::test_hosts_and_pools().into_iter().filter(|(t, _)| t.npcpus() <= 32) {
            let n = topo.npcpus();
            let nv = 2 * n;
            let mut host = Host::on(topo, nv as u32);
            let params = Params::defaults(&CfsKind.params());
            let mut c = Cfs::new(&params, HostShape::new(n as u32, nv as u32, 1));
            host.call(0, |ctx| {
                c.adjust(ctx, VmId(0), &VmSched::with_weight(256));
                c.start_ticks(ctx);
            });
            let mut rng = crate::engine::rng::stream(11, "lb_candidates");
            for step in 0..400 {
                let v = rng.random_range(0..nv);
                if c.se[v].rq.is_some() {
                    c.dequeue_task(0, VcpuId(v as u32), 0, true);
                }
                if rng.random_range(0..3) > 0 {
                    c.vcpu_vm[v] = 0;
                    c.enqueue_task(0, VcpuId(v as u32), 0, rng.random_range(0..n), Enqueue::Relative);
                }
                c.lb_candidates.check(&c.domains, |p| c.rqs[p].nr_running).unwrap_or_else(|e| panic!("step {step}: {e}"));
                let drop = rng.random_range(0..n);
                for this in 0..n {
                    for level in 0..c.domains[this].len() {
                        let sd = c.domains[this][level].clone();
                        let mut less = (*sd.span_mask).clone();
                        if drop != this {
                            less.remove(PcpuId(drop as u32));
                        }
                        for cpus in [(*sd.span_mask).clone(), less] {
                            for idle in [CpuIdle::Idle, CpuIdle::NotIdle, CpuIdle::NewlyIdle] {
                                let fast = c.find_busiest_group(this, level, &sd, idle, &cpus);
                                let scan = c.find_busiest_group_scan(this, &sd, idle, &cpus);
                                assert_eq!(fast, scan, "step {step}, pCPU {this}, level {level}, {idle:?}");
                                skipped += !c.lb_candidates.others(this, level) as u32;
                            }
                        }
                    }
                }
            }
        }
        assert!(skipped > 10_000, "too few skipped passes compared: {skipped}");
    }
}
