//! Where EEVDF's vCPU threads run, as Linux 6.6 decides it (kernel/sched/fair.c,
//! kernel/sched/topology.c): the wake path (`select_task_rq_fair` -> `wake_affine` ->
//! `select_idle_sibling`), fork placement, and the load balancer's pulls of runnable vCPUs
//! (`newidle_balance`, `rebalance_domains` -> `load_balance` with `find_busiest_group`'s group
//! types and migration types, `detach_tasks`).
//!
//! The domains are `cfs/domains.rs`'s (6.6's x86 SMT / MC / DIE / NUMA levels have the spans
//! and groups of 3.2's SIBLING / MC / CPU / NODE) with 6.6's `sd_init` parameters:
//! `balance_interval` and `min_interval` = the span's weight (ms), `max_interval` twice that,
//! `busy_factor` 16, `imbalance_pct` 117 (110 on SMT levels), `cache_nice_tries` 0 on SMT,
//! 2 on NUMA, 1 elsewhere.
//!
//! Simplified (docs/model.md, "EEVDF host (Linux 6.6)"): loads are run-queue weights, not
//! PELT averages; a group's type comes from its task count (has spare: fewer tasks than pCPUs;
//! fully busy: as many; overloaded: more); `migrate_util` moves tasks up to the local group's
//! idle pCPUs; no active balancing (a running vCPU is never pushed), no `wake_wide`, no
//! `SIS_UTIL` scan limit and no idle-core search on SMT hosts; `newidle_balance`'s cut-offs
//! (`rd->overload`, `avg_idle` against `sd->max_newidle_lb_cost`) price a domain's balance at
//! an assumed [`NEWIDLE_COST_PER_PCPU`] per pCPU instead of timing it; a sleeping vCPU's `task_h_load` in
//! `wake_affine_weight` is 0 (its PELT load would have decayed).

use super::lb_index::{GroupType, LbIndex, CAPACITY_SCALE};
use super::Eevdf;
use crate::hardware::cpumask::CpuMask;
use crate::hypervisor::policies::cfs::domains::{self, Domain, SdState};
use crate::hypervisor::policy::PolicyCtx;
use crate::ids::{PcpuId, VcpuId};
use crate::time::{Nanos, MS, SEC};
use std::sync::Arc;

/// `sd_init` (6.6): `imbalance_pct` of SMT levels.
const SMT_IMBALANCE_PCT: u64 = 110;
/// Cost of one newly-idle `load_balance` per pCPU of the domain's span. Linux measures the real
/// cost with `sched_clock_cpu` around each call and keeps the maximum per domain
/// (`update_newidle_cost`: `sd->max_newidle_lb_cost`, decaying 1% a second); the model has no
/// wall clock of its own, so the cost is assumed: 250 ns per run queue read (a few cache
/// misses), i.e. 2 us for an 8-pCPU domain and 256 us for 1,024 pCPUs.
const NEWIDLE_COST_PER_PCPU: Nanos = 250;

/// The pool's domains per pCPU (bottom up) and each pCPU's last-level-cache id (`sd_llc_id`:
/// the first pCPU of its `sd_llc` span, the highest level sharing package resources).
#[derive(Clone, Debug, Default)]
pub(super) struct Domains {
    per: Vec<Vec<Arc<Domain>>>,
    llc: Vec<usize>,
    /// Each pCPU's `sd_llc` span as a mask, shared with its domain (None: no level shares the
    /// package's resources, so the pCPU's last-level cache holds it alone).
    llc_span: Vec<Option<Arc<CpuMask>>>,
    /// The load balancer's sums over the domains' groups, kept current by `note_rq`.
    index: LbIndex,
}

impl Domains {
    /// `p`'s domains from the lowest level up (`for_each_domain`). None before they are built
    /// (`Eevdf::start_ticks`, at the pool's first vCPU): a pool no vCPU was ever put in idles
    /// its pCPUs with nothing to balance, as a CPU without a domain (`rq->sd` NULL) does.
    fn of(&self, p: usize) -> &[Arc<Domain>] {
        self.per.get(p).map_or(&[], Vec::as_slice)
    }
}

/// Each pCPU's last-level-cache id (`sd_llc_id`: the first pCPU of the highest level sharing
/// package resources, or the pCPU itself) and that level's span (`sd_llc`), as Linux's
/// `update_top_cache_domain` keeps both: the id answers `cpus_share_cache` in one compare.
fn llc_of(built: &[Vec<Domain>], npcpus: usize) -> (Vec<usize>, Vec<Option<Arc<CpuMask>>>) {
    let mut llc: Vec<usize> = (0..npcpus).collect();
    let mut span = vec![None; npcpus];
    for (p, doms) in built.iter().enumerate() {
        if let Some(d) = doms.iter().rev().find(|d| d.sd.share_pkg_resources) {
            llc[p] = d.span[0];
            span[p] = Some(d.span_mask.clone());
        }
    }
    (llc, span)
}

/// `select_idle_cpu`'s search (6.6: `for_each_cpu_wrap(cpu, cpus, target + 1)` over
/// `sched_domain_span(sd_llc) & p->cpus_ptr`): the first pCPU after `target`, wrapping, that is
/// idle, in `target`'s last-level-cache span `llc` and in both `allowed` masks (the pool and the
/// vCPU's hard affinity, `HostView::run_masks`; None where every pCPU may run it). No span:
/// `target` shares its cache with no other pCPU. O(P/64) words, where a walk of the idle pCPUs
/// checking each one's LLC reads every idle pCPU of the other LLCs first (a 1,024-pCPU two-socket
/// host with its VMs pinned to one socket: 523 instructions an event; docs/speed.md).
fn idle_in_llc(idle: &CpuMask, llc: Option<&CpuMask>, allowed: Option<[&CpuMask; 2]>, target: usize) -> Option<usize> {
    let llc = llc?;
    let found = match allowed {
        None => idle.first_common_from(&[llc], target + 1),
        Some([pool, hard]) => idle.first_common_from(&[llc, pool, hard], target + 1),
    };
    found.map(|c| c.idx())
}

/// `enum cpu_idle_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum CpuIdle {
    Idle,
    NotIdle,
    NewlyIdle,
}

/// `enum migration_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Migration {
    Load,
    Util,
    Task,
}

impl Eevdf {
    /// (Re)build the pool's domains with 6.6's `sd_init` values; each pCPU's per-level state
    /// starts afresh; the idle mask covers the pool.
    pub(super) fn rebuild_domains(&mut self, ctx: &PolicyCtx) {
        let pool: Vec<usize> = ctx.host.pcpu_ids().map(|p| p.idx()).collect();
        let mut built = domains::build(ctx.host.topology, &pool, self.npcpus);
        let (llc, llc_span) = llc_of(&built, self.npcpus);
        for doms in built.iter_mut() {
            for d in doms.iter_mut() {
                let weight = d.span.len() as u64;
                d.sd.min_interval = weight;
                d.sd.max_interval = 2 * weight;
                d.sd.busy_factor = self.busy_factor;
                d.sd.imbalance_pct = if d.sd.share_cpupower { SMT_IMBALANCE_PCT } else { self.imbalance_pct };
                d.sd.cache_nice_tries = match (d.sd.share_cpupower, d.sd.share_pkg_resources, d.sd.name) {
                    (true, _, _) => 0,
                    (_, _, "NODE") => 2,
                    _ => 1,
                };
            }
        }
        let jiffies = self.jiffies(ctx.now());
        for &p in &pool {
            self.rqs[p].sd = built[p]
                .iter()
                .map(|d| SdState { last_balance: jiffies, balance_interval: d.sd.min_interval, nr_balance_failed: 0 })
                .collect();
            self.idle.set(PcpuId(p as u32), self.rqs[p].nr_running == 0);
        }
        for p in (0..self.npcpus).filter(|p| !pool.contains(p)) {
            self.idle.set(PcpuId(p as u32), false);
        }
        let per: Vec<Vec<Arc<Domain>>> = built.into_iter().map(|d| d.into_iter().map(Arc::new).collect()).collect();
        let index = LbIndex::build(&per);
        self.domains = Domains { per, llc, llc_span, index };
        for p in 0..self.npcpus {
            self.note_rq(p);
        }
    }

    /// Run queue `p`'s task count or root load may have changed: keep the balancer's sums.
    #[inline]
    pub(super) fn note_rq(&mut self, p: usize) {
        let rq = &self.rqs[p];
        self.domains.index.note_rq(p, rq.nr_running, rq.root.load);
    }

    /// The balancer's sums against a pass over the run queues (`Policy::check`).
    pub(super) fn check_balance_sums(&self) -> Result<(), String> {
        self.domains.index.check(&self.domains.per, |c| self.rqs[c].nr_running, |c| self.rqs[c].root.load)
    }

    /// `available_idle_cpu` (a host is no guest: `vcpu_is_preempted` is false).
    fn idle_cpu(&self, p: usize) -> bool {
        self.idle.contains(PcpuId(p as u32))
    }

    /// `cpus_share_cache`.
    fn share_cache(&self, a: usize, b: usize) -> bool {
        self.domains.llc[a] == self.domains.llc[b]
    }

    /// `select_task_rq_fair` for a wakeup (`WF_TTWU`) of `v`, woken from `waker`'s pCPU (its
    /// previous pCPU when no running vCPU woke it): `wake_affine` in the lowest domain of the
    /// waker spanning the previous pCPU, then `select_idle_sibling`.
    pub(super) fn select_task_rq(&mut self, ctx: &PolicyCtx, v: VcpuId, waker: Option<PcpuId>) -> usize {
        let host = &ctx.host;
        let last = host.vcpu(v).last_pcpu;
        let prev = if host.may_run(v, last) { last.idx() } else { self.select_fork(ctx, v) };
        let cpu = waker.map_or(prev, |w| w.idx());
        let mut target = prev;
        if cpu != prev && host.may_run(v, PcpuId(cpu as u32)) {
            if let Some(d) = self.domains.per[cpu].iter().find(|d| d.spans(prev)).cloned() {
                target = self.wake_affine(&d, cpu, prev);
            }
        }
        self.select_idle_sibling(ctx, v, prev, target)
    }

    /// `wake_affine` (WA_IDLE, WA_WEIGHT, WA_BIAS; not sync): the waker's pCPU `this` or `prev`.
    fn wake_affine(&self, sd: &Domain, this: usize, prev: usize) -> usize {
        // wake_affine_idle.
        if self.idle_cpu(this) && self.share_cache(this, prev) {
            return if self.idle_cpu(prev) { prev } else { this };
        }
        if self.idle_cpu(prev) {
            return prev;
        }
        // wake_affine_weight, with task_h_load 0 and equal capacities.
        let this_eff = self.rqs[this].root.load * 100;
        let prev_eff = self.rqs[prev].root.load * (100 + (sd.sd.imbalance_pct - 100) / 2);
        if this_eff < prev_eff {
            this
        } else {
            prev
        }
    }

    /// `select_idle_sibling(p, prev, target)` (6.6): an idle target, an idle cache-sharing
    /// `prev`, an idle cache-sharing `recent_used_cpu`, else the first idle pCPU of target's LLC
    /// after target (`select_idle_cpu`, wrapping), else target.
    fn select_idle_sibling(&mut self, ctx: &PolicyCtx, v: VcpuId, prev: usize, target: usize) -> usize {
        if self.idle_cpu(target) {
            return target;
        }
        if prev != target && self.share_cache(prev, target) && self.idle_cpu(prev) {
            return prev;
        }
        let recent = std::mem::replace(&mut self.recent_used[v.idx()], prev);
        if recent != prev
            && recent != target
            && self.share_cache(recent, target)
            && self.idle_cpu(recent)
            && ctx.host.may_run(v, PcpuId(recent as u32))
        {
            return recent;
        }
        idle_in_llc(&self.idle, self.domains.llc_span[target].as_deref(), ctx.host.run_masks(v), target).unwrap_or(target)
    }

    /// `select_task_rq(SD_BALANCE_FORK)` for a new vCPU thread, reduced to its outcome on these
    /// hosts (`find_idlest_cpu`): the allowed pCPU with the fewest tasks, then the least
    /// load, then the first from the vCPU's last pCPU on.
    pub(super) fn select_fork(&self, ctx: &PolicyCtx, v: VcpuId) -> usize {
        let n = self.npcpus;
        let start = ctx.host.vcpu(v).last_pcpu.idx();
        ctx.host
            .pcpu_ids()
            .map(|p| p.idx())
            .filter(|&p| ctx.host.may_run(v, PcpuId(p as u32)))
            .min_by_key(|&p| (self.rqs[p].nr_running, self.rqs[p].root.load, (p + n - start) % n))
            .unwrap_or(start)
    }

    /// `sd->max_newidle_lb_cost` of `sd` as the model prices it ([`NEWIDLE_COST_PER_PCPU`] per
    /// pCPU of the span), capped as `update_newidle_cost` caps it (`sysctl_sched_migration_cost
    /// + 200`).
    fn newidle_cost(&self, sd: &Domain) -> Nanos {
        (sd.span.len() as Nanos * NEWIDLE_COST_PER_PCPU).min(self.migration_cost + 200)
    }

    /// `newidle_balance` (6.6): `p` found nothing to run. It notes when it went idle, and
    /// gives up at once when no run queue is overloaded (`rd->overload`) or its average idle
    /// period is shorter than the lowest domain's balance cost; otherwise it pulls level by
    /// level from the bottom while the idle period still pays for the next level
    /// (`avg_idle < curr_cost + sd->max_newidle_lb_cost` stops it), until a task arrives.
    pub(super) fn newidle_balance(&mut self, ctx: &mut PolicyCtx, p: usize) {
        if self.rqs[p].idle_stamp.is_none() {
            self.rqs[p].idle_stamp = Some(ctx.now());
        }
        let levels = self.domains.of(p).len();
        let avg_idle = self.rqs[p].avg_idle;
        if !self.overload || (levels > 0 && avg_idle < self.newidle_cost(&self.domains.of(p)[0])) {
            return;
        }
        let mut curr_cost: Nanos = 0;
        for level in 0..levels {
            let cost = self.newidle_cost(&self.domains.of(p)[level]);
            if avg_idle < curr_cost + cost {
                break;
            }
            let pulled = self.load_balance(ctx, p, level, CpuIdle::NewlyIdle);
            curr_cost += cost;
            if pulled {
                self.rqs[p].idle_stamp = None;
            }
            if pulled || self.rqs[p].nr_running > 0 {
                break;
            }
        }
    }

    /// `ttwu_do_activate`'s idle accounting: a wakeup onto `p`, idle since `idle_stamp`,
    /// averages the idle period into `avg_idle` (`update_avg`: `avg += (sample - avg) / 8`),
    /// capped at twice `max_idle_balance_cost` (the larger of `sysctl_sched_migration_cost` and
    /// the sum of `p`'s domain costs).
    pub(super) fn note_wakeup(&mut self, now: Nanos, p: usize) {
        let Some(stamp) = self.rqs[p].idle_stamp.take() else { return };
        let domain_costs: Nanos = self.domains.of(p).iter().map(|sd| self.newidle_cost(sd)).sum();
        let max = 2 * self.migration_cost.max(domain_costs);
        let rq = &mut self.rqs[p];
        let diff = now.saturating_sub(stamp) as i64 - rq.avg_idle as i64;
        rq.avg_idle = ((rq.avg_idle as i64 + diff / 8) as Nanos).min(max);
    }

    /// `trigger_load_balance` -> `rebalance_domains` at a tick: each level whose interval
    /// (times `busy_factor` on a busy pCPU) has passed balances. An idle pCPU's tick stands in
    /// for nohz idle balancing on its behalf.
    pub(super) fn trigger_load_balance(&mut self, ctx: &mut PolicyCtx, p: usize) {
        let jiffies = self.jiffies(ctx.now());
        // max_load_balance_interval: HZ * num_online_cpus() / 10.
        let max_interval = ((SEC * self.npcpus as u64) / 10 / self.tick).max(1);
        let mut idle = if self.rqs[p].nr_running == 0 { CpuIdle::Idle } else { CpuIdle::NotIdle };
        for level in 0..self.domains.per[p].len() {
            let sd = self.rqs[p].sd[level];
            let mut interval = sd.balance_interval;
            if idle == CpuIdle::NotIdle {
                interval *= self.domains.per[p][level].sd.busy_factor;
            }
            // msecs_to_jiffies, clamped to [1, max_load_balance_interval].
            let interval = (interval * MS).div_ceil(self.tick).clamp(1, max_interval);
            if jiffies >= sd.last_balance + interval {
                if self.load_balance(ctx, p, level, idle) {
                    idle = if self.rqs[p].nr_running == 0 { CpuIdle::Idle } else { CpuIdle::NotIdle };
                }
                self.rqs[p].sd[level].last_balance = jiffies;
            }
        }
    }

    /// `should_we_balance`: a newly idle pCPU always; otherwise only the first idle pCPU of the
    /// local group, or its first pCPU when none is idle.
    fn should_we_balance(&self, sd: &Domain, this: usize, idle: CpuIdle) -> bool {
        if idle == CpuIdle::NewlyIdle {
            return true;
        }
        let local = &sd.groups[0].cpus;
        local.iter().copied().find(|&c| self.idle_cpu(c)).unwrap_or(local[0]) == this
    }

    /// `load_balance(this, sd, idle)` at domain level `level`: find the busiest group and the
    /// imbalance (`find_busiest_group`, `calculate_imbalance`), the busiest run queue in it
    /// (`find_busiest_queue`), and pull queued vCPUs from it (`detach_tasks`, `attach_tasks`).
    /// Returns whether a vCPU moved.
    fn load_balance(&mut self, ctx: &mut PolicyCtx, this: usize, level: usize, idle: CpuIdle) -> bool {
        let sd = Arc::clone(&self.domains.per[this][level]);
        if !self.should_we_balance(&sd, this, idle) {
            return false;
        }
        if level + 1 == self.domains.per[this].len() {
            // update_sd_lb_stats at the top level (`!env->sd->parent`): rd->overload becomes
            // whether some run queue of the span holds more than one task (SG_OVERLOAD).
            // (The sums are kept current: lb_index.rs.)
            self.overload = self.domains.index.span(this, level).2;
        }
        let plan = self.find_busiest_group(&sd, this, level, idle);
        match plan.and_then(|(g, kind, imb)| self.find_busiest_queue(&sd, g, kind, imb).map(|q| (q, kind, imb))) {
            Some((busiest, kind, imbalance)) => {
                let moved = self.detach_tasks(ctx, this, busiest, &sd, level, kind, imbalance, idle);
                if moved == 0 && idle != CpuIdle::NewlyIdle {
                    self.rqs[this].sd[level].nr_balance_failed += 1;
                }
                // "We were unbalanced, so reset the balancing interval".
                self.rqs[this].sd[level].balance_interval = sd.sd.min_interval;
                if moved > 0 {
                    self.rqs[this].sd[level].nr_balance_failed = 0;
                }
                moved > 0
            }
            None => {
                // out_balanced: nr_balance_failed = 0; the interval backs off.
                let st = &mut self.rqs[this].sd[level];
                st.nr_balance_failed = 0;
                if st.balance_interval < sd.sd.max_interval {
                    st.balance_interval *= 2;
                }
                false
            }
        }
    }

    /// `find_busiest_group` + `calculate_imbalance` (6.6, reduced as the module says): the
    /// busiest group, the migration type and the imbalance (tasks, or load for `Load`).
    fn find_busiest_group(&self, sd: &Domain, this: usize, level: usize, idle: CpuIdle) -> Option<(usize, Migration, u64)> {
        // update_sd_lb_stats: the groups' statistics and the busiest other group, from the sums
        // kept current (lb_index.rs) instead of a pass over the span.
        let index = &self.domains.index;
        let local = index.local(this, level);
        let busiest = index.busiest(this, level)?;
        let (total_load, total_cap, _) = index.span(this, level);
        let sd_avg = total_load * CAPACITY_SCALE / total_cap.max(1);
        // SD_PREFER_SIBLING of the child level (sd_init sets it below NUMA; not under SMT here).
        let prefer_sibling = level > 0 && !self.domains_child_is_smt(sd, level);
        if local.kind > busiest.kind {
            return None;
        }
        if local.kind == GroupType::Overloaded
            && (local.avg_load >= busiest.avg_load
                || local.avg_load >= sd_avg
                || 100 * busiest.avg_load <= sd.sd.imbalance_pct * local.avg_load)
        {
            return None;
        }
        let force = prefer_sibling && local.kind == GroupType::HasSpare && busiest.nr > local.nr + 1;
        if !force && busiest.kind != GroupType::Overloaded {
            if idle == CpuIdle::NotIdle {
                return None;
            }
            if busiest.weight > 1 && local.idle_cpus <= busiest.idle_cpus + 1 {
                return None;
            }
            if busiest.nr <= 1 {
                return None;
            }
        }
        // calculate_imbalance.
        let plan = if local.kind == GroupType::HasSpare {
            if busiest.kind == GroupType::Overloaded && !sd.sd.share_pkg_resources {
                // migrate_util: fill the local group's spare capacity.
                (Migration::Util, (local.weight - local.nr).max(1))
            } else if busiest.weight == 1 || prefer_sibling {
                (Migration::Task, (busiest.nr.saturating_sub(local.nr) / 2).max(1))
            } else {
                (Migration::Task, (local.idle_cpus.saturating_sub(busiest.idle_cpus) / 2).max(1))
            }
        } else {
            if local.avg_load >= sd_avg || busiest.avg_load <= sd_avg {
                return None;
            }
            let imb = ((busiest.avg_load - sd_avg) * busiest.capacity).min((sd_avg - local.avg_load) * local.capacity) / CAPACITY_SCALE;
            (Migration::Load, imb)
        };
        (plan.1 > 0).then_some((busiest.group, plan.0, plan.1))
    }

    /// Whether the level below `level` is an SMT level (`SD_SHARE_CPUCAPACITY`).
    fn domains_child_is_smt(&self, sd: &Domain, level: usize) -> bool {
        let p = sd.groups[0].cpus[0];
        self.domains.per[p].get(level - 1).is_some_and(|c| c.sd.share_cpupower)
    }

    /// `find_busiest_queue`: the pCPU of the busiest group with the most tasks (`Task`,
    /// `Util`) or the most load (`Load`, skipping a lone task heavier than the imbalance), among
    /// those with a queued task to give.
    fn find_busiest_queue(&self, sd: &Domain, group: usize, kind: Migration, imbalance: u64) -> Option<usize> {
        sd.groups[group]
            .cpus
            .iter()
            .copied()
            .filter(|&c| self.rqs[c].nr_running > 1)
            .filter(|&c| kind != Migration::Load || !(self.rqs[c].nr_running == 1 && self.rqs[c].root.load > imbalance))
            .max_by_key(|&c| {
                let key = if kind == Migration::Load { self.rqs[c].root.load } else { self.rqs[c].nr_running };
                (key, std::cmp::Reverse(c))
            })
    }

    /// `task_h_load` of queued `v` on `p`: its share of its group entity's weight.
    fn task_h_load(&self, v: VcpuId, p: usize) -> u64 {
        let vm = self.vcpu_vm[v.idx()];
        let g = &self.groups[self.gi(vm, p)];
        self.ses[self.gse(vm, p) as usize].weight * super::NICE_0_LOAD / g.load.max(1)
    }

    /// `detach_tasks` + `attach_tasks`: pull queued vCPUs of `busiest`, least recently run
    /// first, that may run here and are not cache hot (`can_migrate_task`, `task_hot`), until
    /// the imbalance is met or `busiest` keeps one task. Returns how many moved.
    #[allow(clippy::too_many_arguments)]
    fn detach_tasks(
        &mut self,
        ctx: &mut PolicyCtx,
        this: usize,
        busiest: usize,
        sd: &Domain,
        level: usize,
        kind: Migration,
        imbalance: u64,
        idle: CpuIdle,
    ) -> u32 {
        let now = ctx.now();
        let failed = self.rqs[this].sd[level].nr_balance_failed;
        // `src_rq->cfs_tasks`: the queued vCPUs of the VMs whose group entity is on the busiest
        // root run queue (queued, or its current one), not a pass over every VM.
        let root = &self.rqs[busiest].root;
        let mut queued = std::mem::take(&mut self.walk_queued);
        queued.clear();
        queued.extend(
            root.tree
                .iter()
                .map(|&(_, g)| g)
                .chain(root.curr)
                .flat_map(|g| self.groups[self.gi(self.gse_vm(g), busiest)].tree.iter().map(|&(_, v)| VcpuId(v))),
        );
        queued.sort_by_key(|v| (self.last_ran[v.idx()], v.0));
        let mut left = imbalance as i64;
        let mut moved = 0;
        for &v in &queued {
            if left <= 0 || (idle != CpuIdle::NotIdle && self.rqs[busiest].nr_running <= 1) {
                break;
            }
            if !ctx.host.may_run(v, PcpuId(this as u32)) {
                continue;
            }
            let hot = !sd.sd.share_cpupower && now.saturating_sub(self.last_ran[v.idx()]) < self.migration_cost;
            if hot && failed <= sd.sd.cache_nice_tries {
                continue;
            }
            let cost = match kind {
                Migration::Load => {
                    let load = self.task_h_load(v, busiest);
                    if (load >> failed.min(63)) as i64 > left {
                        continue;
                    }
                    load as i64
                }
                Migration::Util | Migration::Task => 1,
            };
            let resched = self.migrate(now, v, this);
            self.check_preempt_wakeup(ctx, v, this, resched);
            left -= cost;
            moved += 1;
        }
        self.walk_queued = queued;
        moved
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// The plain walk `idle_in_llc` is held to: every idle pCPU from `target + 1` on, wrapping, until
    /// one with `target`'s LLC id that `allowed` admits.
    fn walk(idle: &CpuMask, llc: &[usize], allowed: &CpuMask, target: usize) -> Option<usize> {
        (target + 1..llc.len())
            .chain(0..=target)
            .find(|&c| idle.contains(PcpuId(c as u32)) && llc[c] == llc[target] && allowed.contains(PcpuId(c as u32)))
    }

    #[test]
    fn the_llc_mask_finds_what_the_walk_of_idle_pcpus_found() {
        let mut rng = rand_pcg::Pcg64::seed_from_u64(23);
        let mut compared = 0;
        for (topo, pools) in domains::test_hosts_and_pools() {
            let n = topo.npcpus();
            for pool in &pools {
                let (llc, span) = llc_of(&domains::build(&topo, pool, n), n);
                let mut pool_mask = CpuMask::empty();
                for &p in pool.iter() {
                    pool_mask.insert(PcpuId(p as u32));
                }
                for _ in 0..50 {
                    let (mut idle, mut hard) = (CpuMask::empty(), CpuMask::empty());
                    let share: f64 = rng.random();
                    for &p in pool.iter() {
                        idle.set(PcpuId(p as u32), rng.random_bool(share));
                        hard.set(PcpuId(p as u32), rng.random_bool(0.7));
                    }
                    for &t in pool.iter().filter(|&&t| !idle.contains(PcpuId(t as u32))) {
                        let anywhere = idle_in_llc(&idle, span[t].as_deref(), None, t);
                        assert_eq!(anywhere, walk(&idle, &llc, &pool_mask, t), "{n} pCPUs, target {t}");
                        let masked = idle_in_llc(&idle, span[t].as_deref(), Some([&pool_mask, &hard]), t);
                        let mut allowed = pool_mask.clone();
                        allowed.and_with(&hard);
                        assert_eq!(masked, walk(&idle, &llc, &allowed, t), "{n} pCPUs, target {t}, masked");
                        compared += 1;
                    }
                }
            }
        }
        assert!(compared > 10_000, "{compared}");
    }
}
