//! Linux 3.13's load balancer on a bare-metal VM's CPUs (kernel/sched/fair.c): the periodic
//! balancer each busy CPU runs from its tick, the nohz idle balancer it kicks for the idle CPUs,
//! active balancing of a running task, the newly idle balance of a CPU that found nothing to run,
//! and `wake_affine` at wake-up. Fork placement and `select_idle_sibling` are in
//! guest/bare_metal_placement.rs.
//!
//! ```text
//!   busy CPU's tick (guest/scheduler.rs native_tick)
//!     trigger_load_balance ── jiffies >= rq->next_balance ──> rebalance_domains(cpu, NOT_IDLE)
//!     nohz_kick_needed ── yes ──> nohz_idle_balance: the first idle CPU (the ilb), then every
//!                                 other idle CPU: rebalance_domains(idle cpu, IDLE)
//!   rebalance_domains: each domain bottom up, when due ──> load_balance(cpu, sd, idle)
//!   load_balance: should_we_balance ─> find_busiest_group ─> find_busiest_queue ─> move_tasks
//!                 (queued tasks); nothing moved cache_nice_tries + 3 times in a row ─> active
//!                 balance: the busiest CPU's stopper pushes its running task to this CPU
//!                 (`active_stop`, at the busiest CPU's next interrupt return)
//!   a CPU with nothing to run (guest/scheduler.rs pick_next) ──> idle_balance: each domain
//!                 bottom up, newly idle, while avg_idle pays for it, until a thread is pulled
//! ```
//!
//! **Domains** (kernel/sched/core.c `default_topology`, `sched_init_numa`; the x86 masks of
//! arch/x86/kernel/smpboot.c, where an AMD compute unit's cores are SMT siblings): SMT (a module
//! or core), MC (an LLC), CPU (a NUMA node), then NUMA levels, here the socket and the machine.
//! A level whose spans equal its child's is dropped, handing SD_PREFER_SIBLING down
//! (`cpu_attach_domain`, `sd_parent_degenerate`). Each level takes its `SD_*_INIT` values
//! (include/linux/topology.h) or `sd_numa_init`'s. A group's power is the sum of its CPUs', each
//! 1024 or `smt_gain / span_weight` (1178 / 2 = 589) under an SMT level (`update_cpu_power`).
//!
//! **Loads**: every thread weighs 1024 (nice 0, no task groups: `effective_load` of the root
//! group is the weight itself), and a CPU's load is 1024 times its runnable threads. Linux reads
//! `runnable_load_avg` (per-entity load tracking) and, through `source_load` / `target_load`,
//! the decayed `cpu_load[idx]` history for `busy_idx` / `idle_idx` > 0: the model reads the
//! instantaneous load at every index (docs/model.md, Bare metal).

use super::bare_metal_placement::GuestTopology;
use super::kernel::GuestVcpu;
use super::thread::Thread;
use crate::ids::{ThreadId, VcpuId};
use crate::time::Nanos;

/// `SCHED_POWER_SCALE` / `SCHED_LOAD_SCALE` and a nice-0 task's weight.
const SCALE: u64 = 1024;
/// `SD_SIBLING_INIT.smt_gain`.
const SMT_GAIN: u64 = 1178;
/// `sysctl_sched_nr_migrate`.
const NR_MIGRATE: usize = 32;
/// `MAX_PINNED_INTERVAL` (ms).
const MAX_PINNED_INTERVAL: u64 = 512;
/// `sysctl_sched_migration_cost` (0.5 ms).
const MIGRATION_COST: Nanos = 500_000;
/// The cost of one newly-idle `load_balance` per CPU of the domain's span. Linux times each
/// call (`sched_clock_cpu`) and keeps the maximum per domain (`sd->max_newidle_lb_cost`,
/// decaying 1% a second); the model has no wall clock of its own, so the cost is assumed, as
/// for the host's eevdf (hypervisor/policies/eevdf/balance.rs): 250 ns per run queue read.
const NEWIDLE_COST_PER_CPU: Nanos = 250;

/// The idle state a balance runs for (`enum cpu_idle_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Idle {
    Idle,
    NotIdle,
    NewlyIdle,
}

/// One domain level as `SD_*_INIT` / `sd_numa_init` set it, with its domains and groups.
#[derive(Clone, Debug)]
struct Level {
    /// 0 SMT, 1 MC, 2 CPU, 3 and 4 NUMA.
    kind: usize,
    imbalance_pct: u64,
    busy_factor: u64,
    /// ms.
    min_interval: u64,
    max_interval: u64,
    cache_nice_tries: u32,
    /// SD_SHARE_CPUPOWER (the SMT level).
    share_cpupower: bool,
    /// SD_PREFER_SIBLING on this level (its parent reads it as `child->flags`).
    prefer_sibling: bool,
    /// Per CPU: its domain at this level.
    domain_of: Vec<u32>,
    /// Per domain: its groups (indexes into `group_cpus`), in ring order (by lowest CPU).
    domain_groups: Vec<Vec<u32>>,
    /// Per CPU: its own group at this level (`sd->groups`).
    group_of: Vec<u32>,
    group_cpus: Vec<Vec<u32>>,
    /// Per group: `sgp->power` (= `power_orig`: no RT time or frequency scaling is modelled).
    group_power: Vec<u64>,
}

/// A CPU's own copy of one domain's balancing state (Linux's per-CPU `struct sched_domain`).
#[derive(Clone, Copy, Debug)]
struct DomainState {
    /// ms.
    balance_interval: u64,
    /// jiffies.
    last_balance: u64,
    nr_balance_failed: u32,
}

/// A thread's `wakee_flips` record (`record_wakee`).
#[derive(Clone, Copy, Debug, Default)]
struct Flips {
    last_wakee: Option<ThreadId>,
    flips: u64,
    decay_ts: u64,
}

/// What balancing did, for the VM's counters and tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BalanceStats {
    /// Queued threads `move_tasks` moved.
    pub moved: u64,
    /// Running threads an active balance pushed.
    pub pushed: u64,
    /// Wake-ups `wake_affine` took to the waker's CPU.
    pub affine_wakeups: u64,
}

/// The balancer of one bare-metal VM.
#[derive(Clone, Debug)]
pub struct Balancer {
    levels: Vec<Level>,
    /// `[cpu][level]`.
    state: Vec<Vec<DomainState>>,
    /// `power_of(cpu)`, the same for every CPU (no RT time or frequency scaling is modelled).
    power: u64,
    /// Per CPU: `rq->next_balance` (jiffies).
    next_balance: Vec<u64>,
    /// `nohz.next_balance` (jiffies).
    nohz_next_balance: u64,
    /// Per CPU: `rq->active_balance` with its `push_cpu`.
    active: Vec<Option<u32>>,
    /// The jiffy (the guest tick).
    tick: Nanos,
    /// `max_load_balance_interval` (jiffies): HZ * CPUs / 10.
    max_lb_interval: u64,
    /// Per CPU: the size of its LLC (`sd_llc_size`).
    llc_size: Vec<u32>,
    /// The level of `sd_busy` (the LLC's parent domain), whose local group is the LLC.
    busy_level: Option<usize>,
    /// Per thread (by its index in the VM).
    flips: Vec<Flips>,
    /// Per CPU: `rq->avg_idle` and `rq->idle_stamp` (when it went idle without pulling).
    avg_idle: Vec<Nanos>,
    idle_stamp: Vec<Option<Nanos>>,
    /// Queued threads `move_tasks` moved since the caller last took them: (thread, from, to).
    pub moves: Vec<(ThreadId, u32, u32)>,
    pub stats: BalanceStats,
}

impl Balancer {
    /// The domains of `topo`'s CPUs; `tick` is the jiffy, `threads` the VM's thread count.
    pub fn new(topo: &GuestTopology, tick: Nanos, threads: usize) -> Self {
        let keys = topo.keys();
        let n = keys.len();
        // Bottom up: module (SMT), LLC (MC), node (CPU), socket and machine (NUMA).
        let depth = [Some(3usize), Some(2), Some(1), Some(0), None];
        let span_key = |cpu: usize, d: Option<usize>| -> Vec<u32> { d.map_or(Vec::new(), |d| keys[cpu][..=d].to_vec()) };
        let mut levels: Vec<Level> = Vec::new();
        // The spans of the last kept level, per CPU (singletons below the first).
        let mut child_domain_of: Vec<u32> = (0..n as u32).collect();
        let mut child_groups: Vec<Vec<u32>> = (0..n as u32).map(|c| vec![c]).collect();
        let mut smt_weight = 1u64;
        for (k, d) in depth.iter().enumerate() {
            let (domain_of, spans) = super::bare_metal_placement::group_by(0..n as u32, |c| span_key(c as usize, *d));
            // Degenerate: every domain is one of its child's (one group), or a single CPU.
            let same = spans.len() == child_groups.len();
            if same || spans.iter().all(|s| s.len() <= 1) {
                // SD_PREFER_SIBLING moves down to the kept child (the CPU level's, onto MC).
                if k == 2 && same {
                    if let Some(last) = levels.last_mut() {
                        last.prefer_sibling = true;
                    }
                }
                continue;
            }
            // Groups of a domain: the child domains inside it, by lowest CPU.
            let mut domain_groups: Vec<Vec<u32>> = vec![Vec::new(); spans.len()];
            for (g, cpus) in child_groups.iter().enumerate() {
                domain_groups[domain_of[cpus[0] as usize] as usize].push(g as u32);
            }
            let sd_weight = spans[domain_of[0] as usize].len() as u64;
            let level = match k {
                0 => {
                    smt_weight = sd_weight;
                    // SD_SIBLING_INIT
                    Level::with(k, 110, 64, 1, 2, 0, true, false)
                }
                // SD_MC_INIT
                1 => Level::with(k, 125, 64, 1, 4, 1, false, false),
                // SD_CPU_INIT
                2 => Level::with(k, 125, 64, 1, 4, 1, false, true),
                // sd_numa_init: intervals sd_weight and 2 * sd_weight ms, busy_factor 32.
                _ => Level::with(k, 125, 32, sd_weight, 2 * sd_weight, 2, false, false),
            };
            levels.push(Level { domain_of, domain_groups, group_of: child_domain_of.clone(), group_cpus: child_groups.clone(), ..level });
            child_domain_of = levels.last().expect("pushed").domain_of.clone();
            child_groups = spans;
        }
        let power = if smt_weight > 1 { SMT_GAIN / smt_weight } else { SCALE };
        for l in &mut levels {
            l.group_power = l.group_cpus.iter().map(|g| g.len() as u64 * power).collect();
        }
        let state = (0..n)
            .map(|_| {
                levels.iter().map(|l| DomainState { balance_interval: l.min_interval, last_balance: 0, nr_balance_failed: 0 }).collect()
            })
            .collect();
        // sd_llc: the highest level sharing the package (SMT or MC); sd_busy: its parent.
        let llc = levels.iter().rposition(|l| l.kind <= 1);
        let llc_size = (0..n).map(|c| llc.map_or(1, |l| levels[l].span_weight(c) as u32)).collect();
        let busy_level = llc.map(|l| l + 1).filter(|&l| l < levels.len());
        let hz = (1_000_000_000 / tick.max(1)).max(1);
        Balancer {
            state,
            power,
            next_balance: vec![0; n],
            nohz_next_balance: 0,
            active: vec![None; n],
            tick: tick.max(1),
            max_lb_interval: (hz * n as u64 / 10).max(1),
            llc_size,
            busy_level,
            levels,
            flips: vec![Flips::default(); threads],
            avg_idle: vec![2 * MIGRATION_COST; n],
            idle_stamp: vec![None; n],
            moves: Vec::new(),
            stats: BalanceStats::default(),
        }
    }

    fn jiffies(&self, now: Nanos) -> u64 {
        now / self.tick
    }

    /// `msecs_to_jiffies` (rounding up).
    fn ms_to_jiffies(&self, ms: u64) -> u64 {
        (ms * 1_000_000).div_ceil(self.tick)
    }

    /// The tick of busy CPU `cpu` at `now` (`trigger_load_balance`): its own periodic balance
    /// when due, then the nohz idle balance if it kicks one. Threads moved to a CPU are pushed
    /// on `resched` (each such CPU once): they need a reschedule IPI; so does a CPU asked to
    /// push its running thread (`active_stop`).
    pub fn tick(
        &mut self,
        rqs: &mut [GuestVcpu],
        allowed: &dyn Fn(ThreadId, usize) -> bool,
        cpu: usize,
        now: Nanos,
        resched: &mut Vec<usize>,
    ) {
        let j = self.jiffies(now);
        if j >= self.next_balance[cpu] {
            self.rebalance_domains(rqs, allowed, cpu, Idle::NotIdle, j, resched);
        }
        if self.nohz_kick_needed(rqs, cpu, j) {
            self.nohz_idle_balance(rqs, allowed, j, resched);
        }
    }

    /// `idle_balance(cpu)` (3.13): `cpu` found nothing to run. It notes when it went idle and
    /// gives up when its average idle period is below `sysctl_sched_migration_cost`; otherwise
    /// it balances each domain bottom up as newly idle while the idle period still pays for the
    /// next one (`avg_idle < curr_cost + sd->max_newidle_lb_cost` stops it), until it pulled a
    /// thread. Returns whether it did (the thread is queued on `cpu`).
    pub fn idle_balance(&mut self, rqs: &mut [GuestVcpu], allowed: &dyn Fn(ThreadId, usize) -> bool, cpu: usize, now: Nanos) -> bool {
        self.idle_stamp[cpu] = Some(now);
        let avg_idle = self.avg_idle[cpu];
        if avg_idle < MIGRATION_COST {
            return false;
        }
        let mut curr_cost = 0;
        let mut ignored = Vec::new();
        for l in 0..self.levels.len() {
            let cost = self.newidle_cost(cpu, l);
            if avg_idle < curr_cost + cost {
                break;
            }
            let mut go_on = true;
            let pulled = self.load_balance(rqs, allowed, cpu, l, Idle::NewlyIdle, &mut go_on, &mut ignored);
            curr_cost += cost;
            if pulled {
                self.idle_stamp[cpu] = None;
                return true;
            }
        }
        false
    }

    /// `sd->max_newidle_lb_cost` of `cpu`'s domain at level `l`, priced
    /// (`NEWIDLE_COST_PER_CPU` per CPU of its span).
    fn newidle_cost(&self, cpu: usize, l: usize) -> Nanos {
        self.levels[l].span_weight(cpu) as Nanos * NEWIDLE_COST_PER_CPU
    }

    /// `ttwu_do_wakeup`'s idle accounting: a thread woken onto `cpu`, idle since it last found
    /// nothing to run, averages that idle period into `avg_idle` (`update_avg`: the average
    /// moves by an eighth of the difference), capped at twice `max_idle_balance_cost`
    /// (`sysctl_sched_migration_cost` while the priced domain costs stay below it).
    pub fn note_wakeup(&mut self, cpu: usize, now: Nanos) {
        let Some(stamp) = self.idle_stamp[cpu].take() else { return };
        let costs: Nanos = (0..self.levels.len()).map(|l| self.newidle_cost(cpu, l)).sum();
        let max = 2 * MIGRATION_COST.max(costs);
        let diff = now.saturating_sub(stamp) as i64 - self.avg_idle[cpu] as i64;
        self.avg_idle[cpu] = ((self.avg_idle[cpu] as i64 + diff / 8).max(0) as Nanos).min(max);
    }

    /// `nohz_kick_needed`: `cpu` is busy, some CPU is idle, `nohz.next_balance` is due, and
    /// `cpu` has a task waiting or another CPU of its LLC is busy (`sd_busy`'s `nr_busy_cpus`).
    fn nohz_kick_needed(&self, rqs: &[GuestVcpu], cpu: usize, j: u64) -> bool {
        if j < self.nohz_next_balance || rqs[cpu].idle() || !rqs.iter().any(GuestVcpu::idle) {
            return false;
        }
        if nr_running(&rqs[cpu]) >= 2 {
            return true;
        }
        let Some(l) = self.busy_level else { return false };
        let level = &self.levels[l];
        level.group_cpus[level.group_of[cpu] as usize].iter().filter(|&&c| !rqs[c as usize].idle()).count() > 1
    }

    /// `nohz_idle_balance` run by the first idle CPU (`find_new_ilb`): its own
    /// `rebalance_domains`, then each other idle CPU's, stopping once the balancer itself got
    /// work (`need_resched`). The kick's IPI and the balancer's own wake-up are not timed: the
    /// pass runs at the kicking tick.
    fn nohz_idle_balance(&mut self, rqs: &mut [GuestVcpu], allowed: &dyn Fn(ThreadId, usize) -> bool, j: u64, resched: &mut Vec<usize>) {
        let Some(ilb) = rqs.iter().position(GuestVcpu::idle) else { return };
        self.rebalance_domains(rqs, allowed, ilb, Idle::Idle, j, resched);
        let mut next = self.next_balance[ilb];
        for c in ilb + 1..rqs.len() {
            if !rqs[ilb].idle() {
                break;
            }
            if !rqs[c].idle() {
                continue;
            }
            self.rebalance_domains(rqs, allowed, c, Idle::Idle, j, resched);
            next = next.min(self.next_balance[c]);
        }
        self.nohz_next_balance = next;
    }

    /// `rebalance_domains(cpu, idle)`: each domain bottom up, balanced when its interval has
    /// passed; stops above a level where another CPU of the group balances.
    fn rebalance_domains(
        &mut self,
        rqs: &mut [GuestVcpu],
        allowed: &dyn Fn(ThreadId, usize) -> bool,
        cpu: usize,
        mut idle: Idle,
        j: u64,
        resched: &mut Vec<usize>,
    ) {
        let mut next = j + 60 * self.ms_to_jiffies(1000);
        for l in 0..self.levels.len() {
            let st = self.state[cpu][l];
            let mut interval = st.balance_interval;
            if idle != Idle::Idle {
                interval *= self.levels[l].busy_factor;
            }
            let interval = self.ms_to_jiffies(interval).clamp(1, self.max_lb_interval);
            let mut go_on = true;
            if j >= st.last_balance + interval {
                if self.load_balance(rqs, allowed, cpu, l, idle, &mut go_on, resched) {
                    idle = if rqs[cpu].idle() { Idle::Idle } else { Idle::NotIdle };
                }
                self.state[cpu][l].last_balance = j;
            }
            next = next.min(self.state[cpu][l].last_balance + interval);
            if !go_on {
                break;
            }
        }
        self.next_balance[cpu] = next;
    }

    /// `should_we_balance`: the first idle CPU of `cpu`'s group, else its first CPU, balances
    /// this level and those above.
    fn should_we_balance(&self, rqs: &[GuestVcpu], cpu: usize, l: usize) -> bool {
        let level = &self.levels[l];
        let g = &level.group_cpus[level.group_of[cpu] as usize];
        let first = g.iter().find(|&&c| rqs[c as usize].idle()).unwrap_or(&g[0]);
        *first as usize == cpu
    }

    /// `load_balance(cpu, sd, idle)`: returns whether a thread moved to `cpu`; clears `go_on`
    /// when another CPU balances this level for the group.
    #[allow(clippy::too_many_arguments)]
    fn load_balance(
        &mut self,
        rqs: &mut [GuestVcpu],
        allowed: &dyn Fn(ThreadId, usize) -> bool,
        cpu: usize,
        l: usize,
        idle: Idle,
        go_on: &mut bool,
        resched: &mut Vec<usize>,
    ) -> bool {
        let (cache_nice_tries, min_interval, max_interval) = {
            let level = &self.levels[l];
            (level.cache_nice_tries, level.min_interval, level.max_interval)
        };
        if idle != Idle::NewlyIdle && !self.should_we_balance(rqs, cpu, l) {
            *go_on = false;
            return self.balanced(cpu, l, true, false, max_interval);
        }
        // CPUs left out after all their tasks proved pinned (LBF_ALL_PINNED's redo).
        let mut excluded: Vec<usize> = Vec::new();
        loop {
            let Some((group, imbalance)) = self.find_busiest_group(rqs, cpu, l, idle, &excluded) else {
                return self.balanced(cpu, l, true, !excluded.is_empty(), max_interval);
            };
            let Some(busiest) = self.find_busiest_queue(rqs, l, group, imbalance, &excluded) else {
                return self.balanced(cpu, l, true, !excluded.is_empty(), max_interval);
            };
            let mut moved = 0;
            if nr_running(&rqs[busiest]) > 1 {
                let (m, all_pinned) = self.move_tasks(rqs, allowed, busiest, cpu, imbalance);
                moved = m;
                if all_pinned {
                    excluded.push(busiest);
                    continue;
                }
            }
            let st = &mut self.state[cpu][l];
            let mut active = false;
            if moved == 0 {
                // Only periodic balances count failures (newidle ones would be too frequent).
                if idle != Idle::NewlyIdle {
                    st.nr_balance_failed += 1;
                }
                // A newly idle CPU starts no active balance here (module doc).
                if idle != Idle::NewlyIdle && st.nr_balance_failed > cache_nice_tries + 2 {
                    // need_active_balance: the busiest CPU's running task must be allowed here.
                    // (An idle busiest CPU runs its idle task, allowed only there.)
                    if rqs[busiest].current.is_none_or(|cur| !allowed(cur, cpu)) {
                        return self.balanced(cpu, l, false, true, max_interval);
                    }
                    if self.active[busiest].is_none() {
                        self.active[busiest] = Some(cpu as u32);
                        active = true;
                        if !resched.contains(&busiest) {
                            resched.push(busiest);
                        }
                    }
                    self.state[cpu][l].nr_balance_failed = cache_nice_tries + 1;
                }
            } else {
                st.nr_balance_failed = 0;
                if !resched.contains(&cpu) {
                    resched.push(cpu);
                }
            }
            let st = &mut self.state[cpu][l];
            if !active {
                st.balance_interval = min_interval;
            } else if st.balance_interval < max_interval {
                st.balance_interval *= 2;
            }
            return moved > 0;
        }
    }

    /// `out_balanced` (`reset`: the failure count goes back to 0) or `out_one_pinned`, then the
    /// back-off: the interval doubles up to `max_interval`, or up to `MAX_PINNED_INTERVAL` when
    /// every task proved pinned.
    fn balanced(&mut self, cpu: usize, l: usize, reset: bool, all_pinned: bool, max_interval: u64) -> bool {
        let st = &mut self.state[cpu][l];
        if reset {
            st.nr_balance_failed = 0;
        }
        if (all_pinned && st.balance_interval < MAX_PINNED_INTERVAL) || st.balance_interval < max_interval {
            st.balance_interval *= 2;
        }
        false
    }

    /// `update_sg_lb_stats` for `group` of level `l`.
    fn group_stats(&self, rqs: &[GuestVcpu], l: usize, group: usize, excluded: &[usize]) -> GroupStats {
        let level = &self.levels[l];
        let mut s = GroupStats::default();
        for &c in &level.group_cpus[group] {
            let c = c as usize;
            if excluded.contains(&c) {
                continue;
            }
            let nr = nr_running(&rqs[c]);
            s.load += nr * SCALE;
            s.nr_running += nr;
            s.idle_cpus += u64::from(nr == 0);
        }
        s.power = level.group_power[group];
        s.avg_load = s.load * SCALE / s.power;
        s.load_per_task = s.load.checked_div(s.nr_running).unwrap_or(0);
        // sg_capacity: cores = cpus / ceil(cpus * 1024 / power_orig), at most power rounded.
        let cpus = level.group_cpus[group].len() as u64;
        let smt = (SCALE * cpus).div_ceil(s.power);
        let mut capacity = (cpus / smt).min((s.power + SCALE / 2) / SCALE);
        if capacity == 0 {
            // fix_small_capacity: ~90% of power_orig is still there (no RT time modelled).
            capacity = u64::from(level.share_cpupower);
        }
        s.capacity = capacity;
        s.has_capacity = capacity > s.nr_running;
        s
    }

    /// `find_busiest_group` (with `update_sd_lb_stats`, `calculate_imbalance`,
    /// `fix_small_imbalance`): the busiest group of `cpu`'s domain at level `l` and the load to
    /// move, or `None` when balanced.
    fn find_busiest_group(&self, rqs: &[GuestVcpu], cpu: usize, l: usize, idle: Idle, excluded: &[usize]) -> Option<(usize, u64)> {
        let level = &self.levels[l];
        let groups = &level.domain_groups[level.domain_of[cpu] as usize];
        let own = level.group_of[cpu];
        let start = groups.iter().position(|&g| g == own).expect("a CPU's group is in its domain");
        let prefer_sibling = l > 0 && self.levels[l - 1].prefer_sibling;
        let local = self.group_stats(rqs, l, own as usize, excluded);
        let (mut total_load, mut total_power) = (local.load, local.power);
        let mut busiest: Option<(usize, GroupStats)> = None;
        // The ring from the local group (`sd->groups`) on.
        for &g in groups[start + 1..].iter().chain(&groups[..start]) {
            let mut s = self.group_stats(rqs, l, g as usize, excluded);
            total_load += s.load;
            total_power += s.power;
            if prefer_sibling && local.has_capacity {
                s.capacity = s.capacity.min(1);
            }
            // update_sd_pick_busiest
            let busier = s.avg_load > busiest.as_ref().map_or(0, |(_, b)| b.avg_load);
            if busier && s.nr_running > s.capacity {
                busiest = Some((g as usize, s));
            }
        }
        let (group, b) = busiest?;
        if b.nr_running == 0 {
            return None;
        }
        let avg = SCALE * total_load / total_power;
        // SD_BALANCE_NEWIDLE trumps SMP nice when underutilized.
        if idle == Idle::NewlyIdle && local.has_capacity && !b.has_capacity {
            return Some((group, calculate_imbalance(&local, &b, avg, rqs, cpu)));
        }
        if local.avg_load >= b.avg_load || local.avg_load >= avg {
            return None;
        }
        if idle == Idle::Idle {
            if local.idle_cpus < b.idle_cpus && b.nr_running <= level.group_cpus[group].len() as u64 {
                return None;
            }
        } else if 100 * b.avg_load <= level.imbalance_pct * local.avg_load {
            return None;
        }
        Some((group, calculate_imbalance(&local, &b, avg, rqs, cpu)))
    }

    /// `find_busiest_queue`: the CPU of `group` with the most load per power, skipping a CPU
    /// whose one task weighs more than the imbalance.
    fn find_busiest_queue(&self, rqs: &[GuestVcpu], l: usize, group: usize, imbalance: u64, excluded: &[usize]) -> Option<usize> {
        let level = &self.levels[l];
        let (mut best, mut best_load, mut best_power) = (None, 0u64, 1u64);
        for &c in &level.group_cpus[group] {
            let c = c as usize;
            if excluded.contains(&c) {
                continue;
            }
            let power = self.power;
            let capacity = match (power + SCALE / 2) / SCALE {
                0 => u64::from(level.share_cpupower),
                k => k,
            };
            let nr = nr_running(&rqs[c]);
            let wl = nr * SCALE;
            if capacity > 0 && nr == 1 && wl > imbalance {
                continue;
            }
            if wl * best_power > best_load * power {
                (best, best_load, best_power) = (Some(c), wl, power);
            }
        }
        best
    }

    /// `move_tasks`: queued threads of `src` (most recently queued first, as `cfs_tasks`) go to
    /// `dst` while the imbalance lasts. Returns how many moved and whether every one was pinned
    /// away from `dst` (LBF_ALL_PINNED; the running one counts as allowed when it is).
    /// A queued thread is not cache hot here (`task_hot` is not modelled).
    fn move_tasks(
        &mut self,
        rqs: &mut [GuestVcpu],
        allowed: &dyn Fn(ThreadId, usize) -> bool,
        src: usize,
        dst: usize,
        imbalance: u64,
    ) -> (u64, bool) {
        if imbalance == 0 {
            // Returns before looking: LBF_ALL_PINNED stays set.
            return (0, true);
        }
        let mut imbalance = imbalance as i64;
        let mut all_pinned = rqs[src].current.is_none_or(|t| !allowed(t, dst));
        let mut moved = 0;
        let mut at = rqs[src].runqueue.len();
        let mut seen = 0;
        while at > 0 && imbalance > 0 && seen < NR_MIGRATE.min(nr_running(&rqs[src]) as usize) {
            at -= 1;
            seen += 1;
            let t = rqs[src].runqueue[at];
            if !allowed(t, dst) {
                continue;
            }
            all_pinned = false;
            // (load / 2) > imbalance: skipped.
            if (SCALE / 2) as i64 > imbalance {
                continue;
            }
            rqs[src].runqueue.remove(at);
            rqs[dst].runqueue.push_back(t);
            self.moves.push((t, src as u32, dst as u32));
            moved += 1;
            imbalance -= SCALE as i64;
        }
        self.stats.moved += moved;
        (moved, all_pinned && moved == 0)
    }

    /// Whether an active balance waits for `cpu`'s stopper.
    #[inline]
    pub fn active_pending(&self, cpu: usize) -> bool {
        self.active[cpu].is_some()
    }

    /// `active_load_balance_cpu_stop` on `cpu`, its current thread preempted by the stopper at a
    /// preemption point (`preemptible`): the first thread allowed on the push CPU, the queued
    /// ones most recent first and then the preempted one (`move_one_task` over `cfs_tasks`),
    /// moves there. Returns the thread and the CPU it went to. Not preemptible (a kernel
    /// section): the stopper's work is dropped (docs/model.md, Bare metal).
    pub fn active_stop(
        &mut self,
        rqs: &mut [GuestVcpu],
        allowed: &dyn Fn(ThreadId, usize) -> bool,
        cpu: usize,
        preemptible: bool,
    ) -> Option<(ThreadId, usize)> {
        let to = self.active[cpu].take()? as usize;
        if !preemptible || nr_running(&rqs[cpu]) == 0 || to == cpu {
            return None;
        }
        let rq = &mut rqs[cpu];
        let t = if let Some(at) = rq.runqueue.iter().rposition(|&t| allowed(t, to)) {
            rq.runqueue.remove(at).expect("found")
        } else if rq.current.is_some_and(|t| allowed(t, to)) {
            rq.current.take().expect("checked")
        } else {
            return None;
        };
        rqs[to].runqueue.push_back(t);
        self.stats.pushed += 1;
        Some((t, to))
    }

    /// `select_task_rq_fair`'s wake-affine choice for thread `wakee` (its index in the VM, last
    /// on CPU `prev`) woken by `waker` (the thread running on CPU `this`, if any; its index):
    /// `record_wakee`, then `wake_affine` in the lowest domain of `this` spanning `prev`.
    /// Returns the CPU `select_idle_sibling` starts from. A futex wake-up is not a sync one.
    pub fn wake_target(
        &mut self,
        rqs: &[GuestVcpu],
        now: Nanos,
        waker: Option<(usize, ThreadId)>,
        wakee: (usize, ThreadId),
        this: usize,
        prev: usize,
    ) -> usize {
        let j = self.jiffies(now);
        let hz = self.ms_to_jiffies(1000);
        if let Some((w, _)) = waker {
            let f = &mut self.flips[w];
            if j > f.decay_ts + hz {
                f.flips = 0;
                f.decay_ts = j;
            }
            if f.last_wakee != Some(wakee.1) {
                f.last_wakee = Some(wakee.1);
                f.flips += 1;
            }
        }
        if this == prev {
            return prev;
        }
        // The lowest domain spanning both: every level here has SD_WAKE_AFFINE (NUMA levels at
        // a distance within RECLAIM_DISTANCE, as both of ours).
        let Some(l) = (0..self.levels.len()).find(|&l| self.levels[l].domain_of[this] == self.levels[l].domain_of[prev]) else {
            return prev;
        };
        // wake_wide
        let factor = u64::from(self.llc_size[this]);
        let wakee_flips = self.flips[wakee.0].flips;
        if let Some((w, _)) = waker {
            if wakee_flips > factor && self.flips[w].flips > factor * wakee_flips {
                return prev;
            }
        }
        let load = nr_running(&rqs[prev]) * SCALE;
        let this_load = nr_running(&rqs[this]) * SCALE;
        let balanced = this_load == 0 || {
            let this_eff = 100 * self.power * (this_load + SCALE);
            let prev_eff = (100 + (self.levels[l].imbalance_pct - 100) / 2) * self.power * load;
            this_eff <= prev_eff
        };
        let tl_per_task = this_load.checked_div(nr_running(&rqs[this])).unwrap_or(0);
        if balanced || (this_load <= load && this_load + load <= tl_per_task) {
            self.stats.affine_wakeups += 1;
            this
        } else {
            prev
        }
    }
}

impl Level {
    /// How many CPUs `cpu`'s domain at this level spans (`sd->span_weight`).
    fn span_weight(&self, cpu: usize) -> usize {
        self.domain_groups[self.domain_of[cpu] as usize].iter().map(|&g| self.group_cpus[g as usize].len()).sum()
    }

    #[allow(clippy::too_many_arguments)]
    fn with(
        kind: usize,
        imbalance_pct: u64,
        busy_factor: u64,
        min_interval: u64,
        max_interval: u64,
        cache_nice_tries: u32,
        smt: bool,
        prefer_sibling: bool,
    ) -> Self {
        Level {
            kind,
            imbalance_pct,
            busy_factor,
            min_interval,
            max_interval,
            cache_nice_tries,
            share_cpupower: smt,
            prefer_sibling,
            domain_of: Vec::new(),
            domain_groups: Vec::new(),
            group_of: Vec::new(),
            group_cpus: Vec::new(),
            group_power: Vec::new(),
        }
    }
}

/// `struct sg_lb_stats`, what the model keeps of it.
#[derive(Clone, Copy, Debug, Default)]
struct GroupStats {
    load: u64,
    nr_running: u64,
    idle_cpus: u64,
    power: u64,
    avg_load: u64,
    load_per_task: u64,
    capacity: u64,
    has_capacity: bool,
}

/// Threads runnable on a CPU: its current one and its queue (`rq->nr_running`).
#[inline]
fn nr_running(rq: &GuestVcpu) -> u64 {
    u64::from(rq.current.is_some()) + rq.runqueue.len() as u64
}

/// `calculate_imbalance` and `fix_small_imbalance` (no group imbalance: `group_imb` needs the
/// affinity-failure flag, not modelled).
fn calculate_imbalance(local: &GroupStats, busiest: &GroupStats, avg: u64, rqs: &[GuestVcpu], dst: usize) -> u64 {
    let small = |local: &GroupStats| fix_small_imbalance(local, busiest, rqs, dst);
    if busiest.avg_load <= avg || local.avg_load >= avg {
        return small(local);
    }
    let load_above_capacity = busiest.nr_running.saturating_sub(busiest.capacity) * SCALE * SCALE / busiest.power;
    let max_pull = (busiest.avg_load - avg).min(load_above_capacity);
    let imbalance = (max_pull * busiest.power).min((avg - local.avg_load) * local.power) / SCALE;
    if imbalance < busiest.load_per_task {
        return small(local);
    }
    imbalance
}

/// `fix_small_imbalance`: one task's load when moving it evens the groups out or gains
/// throughput, else 0.
fn fix_small_imbalance(local: &GroupStats, busiest: &GroupStats, rqs: &[GuestVcpu], dst: usize) -> u64 {
    let mut local = *local;
    let mut imbn = 2;
    if local.nr_running == 0 {
        // cpu_avg_load_per_task(dst)
        let nr = nr_running(&rqs[dst]);
        local.load_per_task = if nr > 0 { SCALE } else { 0 };
    } else if busiest.load_per_task > local.load_per_task {
        imbn = 1;
    }
    let scaled = busiest.load_per_task * SCALE / busiest.power;
    if busiest.avg_load + scaled >= local.avg_load + scaled * imbn {
        return busiest.load_per_task;
    }
    let mut pwr_now = busiest.power * busiest.load_per_task.min(busiest.avg_load);
    pwr_now += local.power * local.load_per_task.min(local.avg_load);
    pwr_now /= SCALE;
    let mut pwr_move = 0;
    if busiest.avg_load > scaled {
        pwr_move += busiest.power * busiest.load_per_task.min(busiest.avg_load - scaled);
    }
    let tmp = if busiest.avg_load * busiest.power < busiest.load_per_task * SCALE {
        busiest.avg_load * busiest.power / local.power
    } else {
        busiest.load_per_task * SCALE / local.power
    };
    pwr_move += local.power * local.load_per_task.min(local.avg_load + tmp);
    pwr_move /= SCALE;
    if pwr_move > pwr_now {
        busiest.load_per_task
    } else {
        0
    }
}

/// The balancer as the guest kernel of a bare-metal VM runs it.
impl super::kernel::GuestKernel {
    /// The tick of busy CPU `i` at `now` (`trigger_load_balance`, module doc): the CPUs that
    /// need a reschedule IPI (threads moved to them, or their stopper asked to push the running
    /// thread), `i` itself left out; whether `i`'s own stopper was asked (`native_active_stop`
    /// at the tick's return); and whether the current thread is at a preemptible point with
    /// another queued (the round-robin).
    pub fn native_tick(&mut self, threads: &mut [Thread], i: usize, now: Nanos) -> NativeTick {
        self.vcpus[i].tick_armed = false;
        let mut targets = self.scratch.ipi_targets();
        let mut cpus = std::mem::take(&mut self.scratch.cpus);
        cpus.clear();
        if let Some(bal) = self.balance.as_mut() {
            let allowed = |t: ThreadId, c: usize| threads[t.idx()].may_run_on(c);
            bal.tick(&mut self.vcpus, &allowed, i, now, &mut cpus);
        }
        self.apply_moves(threads);
        for &c in &cpus {
            if c != i {
                targets.push(self.vcpus[c].id);
            }
        }
        self.scratch.cpus = cpus;
        let stop_here = self.balance.as_ref().is_some_and(|b| b.active_pending(i));
        let round_robin = self.tick_preemptible(threads, i, true);
        NativeTick { resched: targets, stop_here, round_robin }
    }

    /// Threads the balancer moved between queues: their `vcpu` and both CPUs' run masks follow.
    pub(super) fn apply_moves(&mut self, threads: &mut [Thread]) {
        let Some(bal) = self.balance.as_mut() else { return };
        if bal.moves.is_empty() {
            return;
        }
        let moves = std::mem::take(&mut bal.moves);
        for &(t, from, to) in &moves {
            threads[t.idx()].vcpu = self.vcpus[to as usize].id;
            self.note_vcpu(from as usize);
            self.note_vcpu(to as usize);
        }
        if let Some(bal) = self.balance.as_mut() {
            bal.moves = moves;
            bal.moves.clear();
        }
    }

    /// The stopper of CPU `i` after an interrupt (`active_load_balance_cpu_stop`): if an active
    /// balance waits for it, its running thread, at a preemptible point (user mode, no spinlock
    /// held), or a queued one moves to the balancing CPU, which is returned (it needs a
    /// reschedule IPI).
    pub fn native_active_stop(&mut self, threads: &mut [Thread], i: usize) -> Option<VcpuId> {
        let bal = self.balance.as_mut()?;
        if !bal.active_pending(i) {
            return None;
        }
        let preemptible = self.vcpus[i].current.is_some_and(|t| {
            let th = &threads[t.idx()];
            th.held.is_empty() && super::irs::user_mode(th.steps.front())
        });
        let allowed = |t: ThreadId, c: usize| threads[t.idx()].may_run_on(c);
        let (t, to) = bal.active_stop(&mut self.vcpus, &allowed, i, preemptible)?;
        let to_id = self.vcpus[to].id;
        threads[t.idx()].vcpu = to_id;
        self.note_vcpu(i);
        self.note_vcpu(to);
        Some(to_id)
    }

    /// Where a woken thread's `select_idle_sibling` starts on bare metal: `wake_affine`'s
    /// choice between the waker's CPU and the thread's previous one (`Balancer::wake_target`).
    pub(super) fn native_wake_start(
        &mut self,
        threads: &[Thread],
        now: Nanos,
        waker: VcpuId,
        t: ThreadId,
        prev: usize,
        allowed: impl Fn(usize) -> bool,
    ) -> usize {
        let first = self.vcpus[0].id.0;
        let Some(this) = waker.0.checked_sub(first).map(|k| k as usize).filter(|&k| k < self.vcpus.len()) else { return prev };
        if !allowed(this) {
            return prev;
        }
        let waker_thread = self.vcpus[this].current.map(|w| (threads[w.idx()].index as usize, w));
        let wakee = (threads[t.idx()].index as usize, t);
        match self.balance.as_mut() {
            Some(bal) => bal.wake_target(&self.vcpus, now, waker_thread, wakee, this, prev),
            None => prev,
        }
    }
}

/// What a bare-metal CPU's tick asks of the host (`GuestKernel::native_tick`).
pub struct NativeTick {
    /// CPUs to send a reschedule IPI (a list of the guest's scratch, possibly empty).
    pub resched: Vec<VcpuId>,
    /// This CPU's stopper is to push its running thread at the tick's return.
    pub stop_here: bool,
    /// The current thread is at a preemptible point with another queued behind it.
    pub round_robin: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hardware::topology::{LlcScope, Topology};
    use crate::ids::PcpuId;

    /// Seed 001's Opteron 6376 host: 2 sockets, 4 nodes of 4 two-core modules, LLC per node;
    /// the machine's first `cpus` CPUs.
    fn opteron(cpus: u32) -> GuestTopology {
        let t = Topology::new(32, 2, 4, 1).unwrap().with_modules(2, LlcScope::Node).unwrap();
        GuestTopology::new(&t, &(0..cpus).map(PcpuId).collect::<Vec<_>>())
    }

    /// CPUs with one running thread on each of `busy` (thread k on the k-th).
    fn rqs(n: usize, busy: &[usize]) -> Vec<GuestVcpu> {
        let mut rqs: Vec<GuestVcpu> = (0..n as u32).map(|i| GuestVcpu::new(VcpuId(i))).collect();
        for (k, &c) in busy.iter().enumerate() {
            rqs[c].current = Some(ThreadId(k as u32));
        }
        rqs
    }

    const TICK: Nanos = 4_000_000;

    #[test]
    fn domains_powers_and_capacities_are_3_13s() {
        let b = Balancer::new(&opteron(32), TICK, 16);
        // SMT (module), MC (node; the CPU level's SD_PREFER_SIBLING handed down), NUMA socket,
        // NUMA machine.
        let kinds: Vec<usize> = b.levels.iter().map(|l| l.kind).collect();
        assert_eq!(kinds, [0, 1, 3, 4]);
        assert!(b.levels[1].prefer_sibling && !b.levels[0].prefer_sibling && !b.levels[2].prefer_sibling);
        assert_eq!(b.power, 589, "smt_gain 1178 over two siblings");
        let rq = rqs(32, &[]);
        let cap = |l: usize, g: usize| b.group_stats(&rq, l, g, &[]).capacity;
        // A CPU (fix_small_capacity), a module, a node (4 cores, not round(4712 / 1024) = 5), a socket.
        assert_eq!((cap(0, 0), cap(1, 0), cap(2, 0), cap(3, 0)), (1, 1, 4, 8));
        // NUMA intervals: the span's weight in ms.
        assert_eq!((b.levels[2].min_interval, b.levels[3].min_interval), (16, 32));
        assert_eq!(b.max_lb_interval, 250 * 32 / 10);
        assert_eq!((b.llc_size[0], b.busy_level), (8, Some(2)));
    }

    /// Drive the ticks of every busy CPU, in CPU order, from jiffy `*clock` for `jiffies`
    /// jiffies, each stopper running at once.
    fn run_ticks(b: &mut Balancer, rqs: &mut [GuestVcpu], clock: &mut u64, jiffies: u64) {
        let any = |_: ThreadId, _: usize| true;
        for _ in 0..jiffies {
            *clock += 1;
            for cpu in 0..rqs.len() {
                if rqs[cpu].idle() {
                    continue;
                }
                let mut resched = Vec::new();
                b.tick(rqs, &any, cpu, *clock * TICK, &mut resched);
                for c in resched {
                    if b.active_pending(c) {
                        b.active_stop(rqs, &any, c, true);
                    }
                }
                // A CPU sent a thread runs it (the reschedule IPI).
                for rq in rqs.iter_mut().filter(|rq| rq.current.is_none()) {
                    rq.current = rq.runqueue.pop_front();
                }
            }
        }
    }

    fn modules_used(rqs: &[GuestVcpu]) -> Vec<usize> {
        let mut m: Vec<usize> = (0..rqs.len()).filter(|&c| !rqs[c].idle()).map(|c| c / 2).collect();
        m.dedup();
        m
    }

    #[test]
    fn an_idle_module_pulls_from_a_doubled_one_by_active_balance() {
        // Node 0: module 0 doubled (CPUs 0, 1), modules 1 and 2 single, module 3 idle; node 1 one
        // per module. Only CPU 6 (module 3's first idle CPU) may pull: CPU 3 or 5 would double
        // its own module (local avg_load >= the domain's). Each CPU runs one thread, so
        // move_tasks finds nothing queued and the MC level fails cache_nice_tries + 3 = 4 times
        // before the stopper of CPU 0 pushes its thread to CPU 6.
        let mut rq = rqs(16, &[0, 1, 2, 4, 8, 10, 12, 14]);
        let mut b = Balancer::new(&opteron(16), TICK, 8);
        let mut clock = 0;
        run_ticks(&mut b, &mut rq, &mut clock, 3);
        assert_eq!(b.stats.pushed, 0, "not before the fourth failure");
        run_ticks(&mut b, &mut rq, &mut clock, 20);
        assert_eq!(b.stats, BalanceStats { moved: 0, pushed: 1, affine_wakeups: 0 });
        assert!(rq[6].current.is_some(), "pushed to the idle module's first CPU");
        assert!(rq[0].current.is_none() && rq[1].current.is_some());
        assert_eq!(modules_used(&rq), (0..8).collect::<Vec<_>>());
    }

    #[test]
    fn one_llc_machine_never_kicks_the_idle_balancer() {
        // One node (no domain above the LLC: no sd_busy), one thread per CPU: a busy CPU kicks
        // the nohz balancer only with a thread waiting, so the doubled module stays (3.13's
        // nohz_kick_needed).
        let mut rq = rqs(8, &[0, 1, 2, 4]);
        let mut b = Balancer::new(&opteron(8), TICK, 4);
        assert_eq!(b.busy_level, None);
        let mut clock = 0;
        run_ticks(&mut b, &mut rq, &mut clock, 50);
        assert_eq!(b.stats.pushed + b.stats.moved, 0);
        // A second thread queued on CPU 0 kicks it, and the first idle CPU, 3, balances first
        // (the ilb, `find_new_ilb`): its module has room below the LLC's average, so it takes
        // the thread, doubling module 1 while module 3 stays idle.
        rq[0].runqueue.push_back(ThreadId(9));
        run_ticks(&mut b, &mut rq, &mut clock, 5);
        assert_eq!(b.stats.moved, 1);
        assert_eq!(rq[3].current, Some(ThreadId(9)));
        assert!(rq[6].idle() && rq[7].idle());
    }

    #[test]
    fn a_fifth_thread_in_a_node_is_balanced_across_to_a_free_module() {
        // Node 0 holds 5 threads (module 0 doubled), node 1 three: node 0 is above its
        // capacity of 4, so the socket level pushes one thread to node 1.
        let mut rq = rqs(16, &[0, 1, 2, 4, 6, 8, 10, 12]);
        let mut b = Balancer::new(&opteron(16), TICK, 8);
        let mut clock = 0;
        run_ticks(&mut b, &mut rq, &mut clock, 400);
        let node1 = (8..16).filter(|&c| !rq[c].idle()).count();
        assert_eq!(node1, 4, "one thread crossed: {:?}", (0..16).map(|c| !rq[c].idle()).collect::<Vec<_>>());
        assert_eq!(modules_used(&rq), (0..8).collect::<Vec<_>>());
    }

    #[test]
    fn a_newly_idle_cpu_pulls_a_queued_thread_unless_its_idle_periods_are_short() {
        let any = |_: ThreadId, _: usize| true;
        // CPU 0 runs a thread with two queued behind it; CPU 6 (another module of the node)
        // finds nothing to run.
        let setup = || {
            let mut rq = rqs(16, &[0, 2, 4]);
            rq[0].runqueue.extend([ThreadId(7), ThreadId(8)]);
            rq
        };
        let mut rq = setup();
        let mut b = Balancer::new(&opteron(16), TICK, 9);
        // avg_idle starts at 1 ms, above the 0.5 ms migration cost: the MC level pulls the most
        // recently queued thread (`cfs_tasks` order).
        assert!(b.idle_balance(&mut rq, &any, 6, 0));
        assert_eq!(rq[6].runqueue, [ThreadId(8)]);
        assert_eq!(b.moves, [(ThreadId(8), 0, 6)]);
        // Idle periods of 0.1 ms, averaged in at each wake-up (`update_avg`), bring avg_idle
        // below 0.5 ms: then the CPU does not even look.
        let mut rq = setup();
        let mut b = Balancer::new(&opteron(16), TICK, 9);
        let mut now = 0;
        for _ in 0..20 {
            assert_eq!(b.idle_stamp[6], None);
            b.idle_stamp[6] = Some(now);
            now += 100_000;
            b.note_wakeup(6, now);
        }
        assert!(b.avg_idle[6] < MIGRATION_COST, "{}", b.avg_idle[6]);
        assert!(!b.idle_balance(&mut rq, &any, 6, now));
        assert_eq!(rq[0].runqueue.len(), 2);
        // A long idle period is capped at twice max_idle_balance_cost (1 ms).
        b.note_wakeup(6, now + 1_000_000_000);
        assert!(b.avg_idle[6] <= 2 * MIGRATION_COST);
    }

    #[test]
    fn wake_affine_pulls_only_from_a_loaded_previous_cpu() {
        let mut b = Balancer::new(&opteron(16), TICK, 4);
        // The waker (thread 0) runs on CPU 0; the wakee (thread 1) last ran on CPU 8.
        let mut rq = rqs(16, &[0]);
        let waker = Some((0, ThreadId(0)));
        // Previous CPU idle: 100 * 589 * 2048 > 112 * 589 * 0, and this_load > load: stays.
        assert_eq!(b.wake_target(&rq, 0, waker, (1, ThreadId(1)), 0, 8), 8);
        // Previous CPU with two threads: 100 * 2048 <= 112 * 2048: affine.
        rq[8].current = Some(ThreadId(2));
        rq[8].runqueue.push_back(ThreadId(3));
        assert_eq!(b.wake_target(&rq, 0, waker, (1, ThreadId(1)), 0, 8), 0);
        // Woken from an idle CPU (interrupt context, this_load 0): affine.
        let rq = rqs(16, &[8]);
        assert_eq!(b.wake_target(&rq, 0, None, (1, ThreadId(1)), 0, 8), 0);
        assert_eq!(b.stats.affine_wakeups, 2);
    }
}
