//! Xen's credit2 scheduler, the default since Xen 4.12, read from xen/common/sched/credit2.c at
//! RELEASE-4.18.0 (byte-identical through 4.18.6); `L...` are that file's lines. Written against
//! the public policy interface only (`crate::policy`), as a policy outside the crate would be.
//!
//! In one paragraph: pCPUs share run queues (one per socket by default, `runqueue=`; at most 16
//! pCPUs each). Every unit (vCPU) has a credit in ns, starting at 10 ms; running burns it at
//! `max_weight / weight` per ns (`burn_credits`, `t2c_update`), so heavier domains burn slower. A
//! queue is sorted by credit; `csched2_schedule` runs the best eligible unit (`runq_candidate`:
//! hard affinity, the pCPU tickled for it, a 500 us resistance to pulling a unit last run
//! elsewhere, budget) for as long as it takes its credit down to the next waiter's, between 500 us
//! (or what is left of the 1 ms ratelimit) and 10 ms (`csched2_runtime`). When the best credit in
//! the queue reaches 0, every unit of the queue gets 10 ms more, at most 10.5 ms (`reset_credit`),
//! and the pCPU compares its queue's load with the others' and pushes, pulls or swaps units to even
//! them (`balance_load`). A waking unit is queued where it last ran and tickles an idle pCPU
//! (a fully idle core first), else preempts the running unit with the least credit if it has more
//! (`runq_tickle`). A cap is a domain budget refilled every 10 ms, units grab quotas of it and are
//! parked when it runs out.
//!
//! ```text
//!   wake ─▶ runq_insert (by credit) ─▶ runq_tickle ─▶ idle pCPU / lowest-credit victim
//!   do_schedule(p): burn prev ─▶ runq_candidate ─▶ [reset_credit + balance_load if top ≤ 0]
//!                  ─▶ csched2_runtime (slice) ─▶ prev re-queued and tickled (context_saved)
//! ```
//!
//! Shortcuts (each also in docs/model.md section 7.7):
//! - Units are vCPUs (`sched-gran=cpu`, the default); no tasklets.
//! - Run-queue trylocks never fail (the engine is sequential), so `csched2_res_pick` never takes
//!   `get_fallback_cpu` for a lock and `balance_load` never skips a queue.
//! - The context switch is instant: what `csched2_context_saved` does for the previous unit
//!   (re-queue and tickle it, return its budget, or drop its load) happens at the end of the
//!   `do_schedule` that switched it out, with the pCPU's new unit as its current one; a unit
//!   credit2 asks to migrate while it runs is moved there too (core.c
//!   `sched_unit_migrate_finish` -> `csched2_res_pick` -> `csched2_unit_migrate` -> wake).
//! - `sleep` does not tickle the halting unit's pCPU: the engine reschedules it next anyway.
//! - A `cap` above `100 x vCPUs`, which `csched2_dom_cntl` refuses (-EINVAL), leaves the domain
//!   uncapped; weights and caps given at run time apply at once, as `csched2_dom_cntl` does.
//! - pCPUs and vCPUs do not move between pools under credit2 (no `remove_pcpu` / `add_pcpu`).

mod runqueue;
#[cfg(test)]
mod tests;

use crate::policy::{
    Decision, HostShape, HostView, Nanos, ParamSpec, Params, PcpuId, Policy, PolicyCtx, PolicyKind, Timer, VcpuId, VcpuState, VmId,
    VmSched, YieldReason,
};
use runqueue::{decay, Grouping, Runqueue, LOADAVG_GRANULARITY_SHIFT};

const US: i64 = 1_000;
const MS: i64 = 1_000_000;
/// `CSCHED2_MIN_TIMER` (L227).
const MIN_TIMER: i64 = 500 * US;
/// `CSCHED2_CREDIT_INIT` (L233): the credit a unit starts with and a reset adds.
const CREDIT_INIT: i64 = 10 * MS;
/// `CSCHED2_CREDIT_MIN` (L243): credit never falls below this (`t2c_update`).
const CREDIT_MIN: i64 = -CREDIT_INIT;
/// `CSCHED2_IDLE_CREDIT` (L249): the idle unit's, below any real unit's.
const IDLE_CREDIT: i64 = CREDIT_MIN - 1;
/// `CSCHED2_CARRYOVER_MAX` (L254): credit above `CREDIT_INIT` kept across a reset.
const CARRYOVER_MAX: i64 = MIN_TIMER;
/// `CSCHED2_MIGRATE_COMPENSATION` (L261): credit given to a unit pulled to another pCPU.
const MIGRATE_COMPENSATION: i64 = 50 * US;
/// `CSCHED2_RATELIMIT_TICKLE_TOLERANCE` (L263).
const RATELIMIT_TICKLE_TOLERANCE: i64 = 50 * US;
/// `CSCHED2_MAX_TIMER` (L267).
const MAX_TIMER: i64 = CREDIT_INIT;
/// `opt_underload_balance_tolerance` / `opt_overload_balance_tolerance` (L401-404), exponents of
/// the load difference `balance_load` needs below and above full capacity.
const UNDERLOAD_TOLERANCE: i32 = 0;
const OVERLOAD_TOLERANCE: i32 = -3;
/// `has_cap` is `budget != STIME_MAX` (L631-634).
const NO_CAP: i64 = i64::MAX;

/// The registry's entry for credit2.
pub struct Credit2Kind;

impl PolicyKind for Credit2Kind {
    fn name(&self) -> &'static str {
        "credit2"
    }
    fn describe(&self) -> &'static str {
        "Xen credit2 (Xen 4.18, the default since 4.12): credit-sorted run queues per socket, weight-scaled burn, \
         credit reset, load balancing between queues, caps by budget"
    }
    fn params(&self) -> Vec<ParamSpec> {
        vec![
            ParamSpec::choice(
                "runqueue",
                Grouping::NAMES,
                "socket",
                "which pCPUs share a run queue (credit2_runqueue, default socket; credit2.c L445-474)",
            ),
            ParamSpec::int(
                "max_cpus_runqueue",
                16,
                "pCPUs per run queue at most; a larger group is split (sched_credit2_max_cpus_runqueue, MAX_CPUS_RUNQ = 16)",
            )
            .range(1.0, 1024.0),
            ParamSpec::duration(
                "ratelimit",
                1_000_000,
                "a unit that has run less than this is not preempted unless it yields (sched_ratelimit_us, \
                 SCHED_DEFAULT_RATELIMIT_US = 1000 us); 0 disables it, else 100 us to 500 ms",
            )
            .range(0.0, 500_000_000.0),
            ParamSpec::duration(
                "migrate_resist",
                500_000,
                "credit a unit last run on another pCPU must exceed the current one's by to be pulled or to preempt \
                 (sched_credit2_migrate_resist, 500 us)",
            )
            .range(0.0, 10_000_000.0),
            ParamSpec::duration("cap_period", 10_000_000, "budget replenishment period of a capped domain (credit2_cap_period_ms, 10 ms)")
                .range(1_000_000.0, 1_000_000_000.0),
            ParamSpec::int("load_precision_shift", 18, "fractional bits of the load averages (credit2_load_precision_shift, 18)")
                .range(4.0, 30.0),
            ParamSpec::int("load_window_shift", 30, "the load averages' window is 2^this ns (credit2_load_window_shift, 30: about 1.07 s)")
                .range(11.0, 40.0),
            ParamSpec::boolean(
                "smt_power_savings",
                false,
                "tickle an idle thread of a busy core before a fully idle core (sched_smt_power_savings, off)",
            ),
        ]
    }
    fn resolve_params(&self, params: &mut Params, _given: &dyn Fn(&str) -> bool) -> Result<(), (&'static str, String)> {
        let r = params.duration("ratelimit");
        if r != 0 && r < 100_000 {
            return Err(("ratelimit", format!("got {} ns: 0 (off) or 100us to 500ms, as xl sched-credit2 -r takes it", r)));
        }
        Ok(())
    }
    fn build(&self, params: &Params, host: HostShape) -> Box<dyn Policy> {
        Box::new(Credit2::new(params, host))
    }
    fn ple_grow(&self) -> u64 {
        1
    }
    fn honours_cap(&self) -> bool {
        true
    }
}

/// `struct csched2_unit` (L549-573): one vCPU's scheduling data.
#[derive(Clone, Debug)]
struct Unit {
    vm: usize,
    credit: i64,
    weight: u32,
    residual: u64,
    /// Budget left if capped, `NO_CAP` otherwise.
    budget: i64,
    budget_quota: i64,
    /// Credit was last charged up to here.
    start_time: i64,
    load_last_update: i64,
    avgload: i64,
    /// Its run queue, once assigned.
    rqd: Option<usize>,
    /// `sched_unit_master`: the pCPU it is assigned to (last ran on, or placed on).
    master: PcpuId,
    tickled_cpu: Option<PcpuId>,
    /// `__CSFLAG_unit_yield`.
    yielded: bool,
    /// `__CSFLAG_runq_migrate_request`: `balance_load` asked to move it, running, to this queue.
    migrate_to: Option<usize>,
    /// `__CSFLAG_scheduled`: running on a pCPU.
    scheduled: bool,
    /// `_VPF_parked`: out of budget, on its domain's parked list.
    parked: bool,
    on_runq: bool,
}

/// `struct csched2_dom` (L578-593).
#[derive(Clone, Debug, Default)]
struct Dom {
    weight: u32,
    cap: u32,
    units: Vec<VcpuId>,
    tot_budget: i64,
    budget: i64,
    next_repl: i64,
    parked: Vec<VcpuId>,
    repl_timer: Option<Timer>,
}

/// Per-pCPU state: its run queue, its SMT siblings there (`csched2_pcpu`), and its bits of the
/// queue's `idle`, `tickled` and `smt_idle` masks.
#[derive(Clone, Debug)]
struct Pcpu {
    rq: usize,
    siblings: Vec<PcpuId>,
    idle: bool,
    tickled: bool,
    smt_idle: bool,
}

/// The credit2 instance of one cpupool (`struct csched2_private`).
pub struct Credit2 {
    grouping: Grouping,
    max_cpus_runqueue: usize,
    ratelimit: i64,
    migrate_resist: i64,
    cap_period: i64,
    /// `prv->load_precision_shift` (P) and `prv->load_window_shift` (W = shift - 10).
    precision: u32,
    window: u32,
    smt_power_savings: bool,
    units: Vec<Option<Unit>>,
    doms: Vec<Dom>,
    rqs: Vec<Runqueue>,
    pcpus: Vec<Option<Pcpu>>,
    /// The pCPU being switched and the unit it switches to, during `do_schedule`'s
    /// context-saved step (`curr_on_cpu` answers it for that pCPU).
    switching: Option<(PcpuId, Option<VcpuId>)>,
}

impl Credit2 {
    fn new(params: &Params, host: HostShape) -> Self {
        Credit2 {
            grouping: Grouping::from_name(params.choice("runqueue")),
            max_cpus_runqueue: params.int("max_cpus_runqueue") as usize,
            ratelimit: params.duration("ratelimit") as i64,
            migrate_resist: params.duration("migrate_resist") as i64,
            cap_period: params.duration("cap_period") as i64,
            precision: params.int("load_precision_shift") as u32,
            window: params.int("load_window_shift") as u32 - LOADAVG_GRANULARITY_SHIFT,
            smt_power_savings: params.boolean("smt_power_savings"),
            units: vec![None; host.nvcpus as usize],
            doms: vec![Dom::default(); host.nvms as usize],
            rqs: Vec::new(),
            pcpus: vec![None; host.npcpus as usize],
            switching: None,
        }
    }

    /// The run queues, built at the first call (`csched2_alloc_pdata` per pCPU of the pool).
    fn ensure_runqueues(&mut self, host: &HostView) {
        if !self.rqs.is_empty() {
            return;
        }
        let cpus: Vec<PcpuId> = host.pcpu_ids().collect();
        let (rqs, rq_of) = runqueue::build(host, &cpus, self.grouping, self.max_cpus_runqueue);
        for &p in &cpus {
            let rq = rq_of[p.idx()].expect("every pCPU of the pool has a queue");
            let siblings = host.topology.siblings(p).filter(|s| rq_of[s.idx()] == Some(rq)).collect();
            // `init_cpu_runqueue` (L3974-3977): a new pCPU is idle and in `smt_idle`.
            self.pcpus[p.idx()] = Some(Pcpu { rq, siblings, idle: true, tickled: false, smt_idle: true });
        }
        self.rqs = rqs;
    }

    fn unit(&self, v: VcpuId) -> &Unit {
        self.units[v.idx()].as_ref().expect("an inserted vCPU")
    }
    fn unit_mut(&mut self, v: VcpuId) -> &mut Unit {
        self.units[v.idx()].as_mut().expect("an inserted vCPU")
    }
    fn pcpu(&self, p: PcpuId) -> &Pcpu {
        self.pcpus[p.idx()].as_ref().expect("a pCPU of this pool")
    }
    fn pcpu_mut(&mut self, p: PcpuId) -> &mut Pcpu {
        self.pcpus[p.idx()].as_mut().expect("a pCPU of this pool")
    }
    fn rq_of(&self, p: PcpuId) -> usize {
        self.pcpu(p).rq
    }

    /// `curr_on_cpu(p)`: the unit running on `p` (while `do_schedule` switches `p`, the one it
    /// switches to).
    fn curr_on(&self, host: &HostView, p: PcpuId) -> Option<VcpuId> {
        match self.switching {
            Some((q, next)) if q == p => next,
            _ => host.pcpu(p).current.filter(|&c| host.vcpu(c).state == VcpuState::Running),
        }
    }

    fn has_cap(&self, v: VcpuId) -> bool {
        self.unit(v).budget != NO_CAP
    }

    /// Whether `v` can run (`unit_runnable`): the engine's Runnable or Running, not parked and
    /// not being migrated.
    fn runnable(&self, host: &HostView, v: VcpuId) -> bool {
        let u = self.unit(v);
        host.vcpu(v).state != VcpuState::Halted && !u.parked && u.migrate_to.is_none()
    }

    // ---- credit --------------------------------------------------------------------------

    /// `t2c_update` (L809-821): charge `time` ns of running as `time * max_weight / weight`
    /// credit, carrying the division's remainder; never below `CREDIT_MIN`.
    fn t2c_update(&mut self, rq: usize, time: i64, v: VcpuId) {
        let max_weight = self.rqs[rq].max_weight as u64;
        let u = self.unit_mut(v);
        let val = time as u64 * max_weight + u.residual;
        u.residual = val % u.weight as u64;
        let charge = (val / u.weight as u64) as i64;
        u.credit = (u.credit - charge).max(CREDIT_MIN);
    }

    /// `c2t` (L823-827): how long `credit` lasts `v`.
    fn c2t(&self, rq: usize, credit: i64, v: VcpuId) -> i64 {
        credit * self.unit(v).weight as i64 / self.rqs[rq].max_weight as i64
    }

    /// `burn_credits` (L1862-1911): charge `v`'s run since `start_time`, and its budget.
    fn burn_credits(&mut self, v: VcpuId, now: i64) {
        let u = self.unit(v);
        let delta = now - u.start_time;
        if delta <= 0 {
            return;
        }
        let rq = u.rqd.expect("a running unit is assigned");
        self.t2c_update(rq, delta, v);
        let u = self.unit_mut(v);
        if u.budget != NO_CAP {
            u.budget -= delta;
        }
        u.start_time = now;
    }

    /// `update_max_weight` (L1054-1096).
    fn update_max_weight(&mut self, rq: usize, new_weight: u32, old_weight: u32) {
        if new_weight > self.rqs[rq].max_weight {
            self.rqs[rq].max_weight = new_weight;
        } else if old_weight == self.rqs[rq].max_weight {
            let max = self.rqs[rq].svc.iter().map(|&v| self.unit(v).weight).max().unwrap_or(1);
            self.rqs[rq].max_weight = max.max(1);
        }
    }

    /// `reset_credit` (L1780-1860): every unit of `p`'s queue gets `CREDIT_INIT` more (twice that
    /// if `snext` reached the floor), at most `CREDIT_INIT + CARRYOVER_MAX`.
    fn reset_credit(&mut self, ctx: &mut PolicyCtx, p: PcpuId, snext: VcpuId) {
        let now = ctx.now() as i64;
        let rq = self.rq_of(p);
        let reset = if self.unit(snext).credit == CREDIT_MIN { 2 * CREDIT_INIT } else { CREDIT_INIT };
        for v in self.rqs[rq].svc.clone() {
            let master = self.unit(v).master;
            if self.curr_on(&ctx.host, master) == Some(v) {
                self.burn_credits(v, now);
                if self.unit(v).budget <= 0 {
                    self.tickle_cpu(ctx, master);
                }
            }
            let u = self.unit_mut(v);
            u.credit = (u.credit + reset).min(CREDIT_INIT + CARRYOVER_MAX);
            u.start_time = now;
        }
    }

    // ---- queues and load -----------------------------------------------------------------

    /// `update_load` (L1422-1432): the queue's load averages, then (with `v`) the unit's.
    fn update_load(&mut self, host: &HostView, rq: usize, v: Option<VcpuId>, change: i64) {
        let now = host.now as i64 >> LOADAVG_GRANULARITY_SHIFT;
        let (p, w) = (self.precision, self.window);
        let r = &mut self.rqs[rq];
        r.avgload = decay(r.avgload, r.load, r.load_last_update, now, p, w);
        r.b_avgload = decay(r.b_avgload, r.load, r.load_last_update, now, p, w);
        r.load += change;
        r.load_last_update = now;
        if let Some(v) = v {
            self.update_svc_load(host, v, change);
        }
    }

    /// `update_svc_load` (L1363-1420).
    fn update_svc_load(&mut self, host: &HostView, v: VcpuId, change: i64) {
        let now = host.now as i64 >> LOADAVG_GRANULARITY_SHIFT;
        let load = match change {
            -1 => 1,
            1 => 0,
            _ => i64::from(self.runnable(host, v)),
        };
        let (p, w) = (self.precision, self.window);
        let u = self.unit_mut(v);
        u.avgload = decay(u.avgload, load, u.load_last_update, now, p, w);
        u.load_last_update = now;
    }

    /// `_runq_assign` (L1098-1112).
    fn runq_assign(&mut self, v: VcpuId, rq: usize) {
        let (avgload, weight) = (self.unit(v).avgload, self.unit(v).weight);
        self.unit_mut(v).rqd = Some(rq);
        self.rqs[rq].svc.push(v);
        self.update_max_weight(rq, weight, 0);
        self.rqs[rq].b_avgload += avgload;
    }

    /// `_runq_deassign` (L1140-1153).
    fn runq_deassign(&mut self, v: VcpuId) {
        let rq = self.unit(v).rqd.expect("assigned");
        self.rqs[rq].svc.retain(|&w| w != v);
        let (avgload, weight) = (self.unit(v).avgload, self.unit(v).weight);
        self.update_max_weight(rq, 0, weight);
        self.rqs[rq].b_avgload = (self.rqs[rq].b_avgload - avgload).max(0);
        self.unit_mut(v).rqd = None;
    }

    /// `runq_insert` (L1434-1475): before the first unit of strictly lower credit.
    fn runq_insert(&mut self, v: VcpuId) {
        let rq = self.rq_of(self.unit(v).master);
        let credit = self.unit(v).credit;
        let at = self.rqs[rq].runq.iter().position(|&w| credit > self.unit(w).credit).unwrap_or(self.rqs[rq].runq.len());
        self.rqs[rq].runq.insert(at, v);
        self.unit_mut(v).on_runq = true;
    }

    fn runq_remove(&mut self, v: VcpuId) {
        let rq = self.rq_of(self.unit(v).master);
        self.rqs[rq].runq.retain(|&w| w != v);
        self.unit_mut(v).on_runq = false;
    }

    // ---- tickling ------------------------------------------------------------------------

    /// `smt_idle_mask_set` (L690-698): `p`'s core joins `smt_idle` if all of it is idle and
    /// untickled.
    fn smt_idle_set(&mut self, p: PcpuId) {
        if self.pcpu(p).siblings.iter().all(|&s| self.pcpu(s).idle && !self.pcpu(s).tickled) {
            self.set_smt_idle(p, true);
        }
    }

    /// Put every sibling of `p` (itself included) in or out of `smt_idle`.
    fn set_smt_idle(&mut self, p: PcpuId, on: bool) {
        for i in 0..self.pcpu(p).siblings.len() {
            let s = self.pcpu(p).siblings[i];
            self.pcpu_mut(s).smt_idle = on;
        }
    }

    /// `smt_idle_mask_clear` (L703-710).
    fn smt_idle_clear(&mut self, p: PcpuId) {
        if self.pcpu(p).siblings.iter().all(|&s| self.pcpu(s).smt_idle) {
            self.set_smt_idle(p, false);
        }
    }

    /// `tickle_cpu` (L1487-1492).
    fn tickle_cpu(&mut self, ctx: &mut PolicyCtx, p: PcpuId) {
        self.pcpu_mut(p).tickled = true;
        self.smt_idle_clear(p);
        ctx.reschedule(p);
    }

    /// `tickle_score` (L1525-1579): how much `new` gains by preempting what runs on `p`; -1 when
    /// that may not be preempted yet (ratelimit).
    fn tickle_score(&mut self, host: &HostView, new: VcpuId, p: PcpuId) -> i64 {
        let Some(cur) = self.curr_on(host, p) else { return -1 };
        let now = host.now as i64;
        let preemptable = self.ratelimit <= RATELIMIT_TICKLE_TOLERANCE
            || now - host.vcpu(cur).run_start as i64 > self.ratelimit - RATELIMIT_TICKLE_TOLERANCE;
        if !preemptable {
            return -1;
        }
        self.burn_credits(cur, now);
        let mut score = self.unit(new).credit - self.unit(cur).credit;
        if self.unit(new).master != p {
            score -= self.migrate_resist;
        }
        if score > 0 {
            if host.prefers(new, p) {
                score += CREDIT_INIT;
            }
            if !host.prefers(cur, p) {
                score += CREDIT_INIT;
            }
        }
        score
    }

    /// `runq_tickle` (L1597-1775): an idle pCPU of `new`'s queue (a fully idle core first, its
    /// soft affinity first), else the busy pCPU whose unit `new` beats by most.
    fn runq_tickle(&mut self, ctx: &mut PolicyCtx, new: VcpuId) {
        let host = ctx.host;
        let cpu = self.unit(new).master;
        let rq = self.rq_of(cpu);
        let pinned = self.rqs[rq].cpus.iter().filter(|&&p| host.may_run(new, p)).count() == 1;
        if pinned && self.pcpu(cpu).idle && !self.pcpu(cpu).tickled {
            return self.tickle_at(ctx, new, cpu);
        }
        for soft in [true, false] {
            if soft && !host.has_soft(new) {
                continue;
            }
            // `affinity_balance_cpumask`: soft ∩ hard (hard if that is empty), or hard.
            let soft_any = soft && self.rqs[rq].cpus.iter().any(|&p| host.prefers(new, p));
            let allowed = |p: PcpuId| if soft_any { host.prefers(new, p) } else { host.may_run(new, p) };
            let first = if self.smt_power_savings {
                self.rqs[rq].test_or_cycle(cpu, |p| allowed(p) && self.pcpu(p).idle && !self.pcpu(p).smt_idle)
            } else {
                self.rqs[rq].test_or_cycle(cpu, |p| allowed(p) && self.pcpu(p).smt_idle)
            };
            let found = first.or_else(|| self.rqs[rq].test_or_cycle(cpu, |p| allowed(p) && self.pcpu(p).idle && !self.pcpu(p).tickled));
            if let Some(p) = found {
                return self.tickle_at(ctx, new, p);
            }
        }
        let busy: Vec<PcpuId> =
            self.rqs[rq].cpus.iter().copied().filter(|&p| host.may_run(new, p) && !self.pcpu(p).idle && !self.pcpu(p).tickled).collect();
        let mut max = 0;
        let mut ipid = None;
        if busy.contains(&cpu) {
            let score = self.tickle_score(&host, new, cpu);
            if score > max {
                max = score;
                ipid = Some(cpu);
                if host.prefers(new, cpu) {
                    return self.tickle_at(ctx, new, cpu);
                }
            }
        }
        for p in busy.into_iter().filter(|&p| p != cpu) {
            let score = self.tickle_score(&host, new, p);
            if score > max {
                max = score;
                ipid = Some(p);
            }
        }
        if let Some(p) = ipid {
            self.tickle_at(ctx, new, p);
        }
    }

    fn tickle_at(&mut self, ctx: &mut PolicyCtx, new: VcpuId, p: PcpuId) {
        self.tickle_cpu(ctx, p);
        self.unit_mut(new).tickled_cpu = Some(p);
    }

    // ---- placement -----------------------------------------------------------------------

    /// `csched2_res_pick` (L2350-2568): the queue of least `b_avgload` (soft affinity's first),
    /// round robin inside it from its `pick_bias`; a migration request's queue when there is one.
    fn res_pick(&mut self, host: &HostView, v: VcpuId) -> PcpuId {
        if let Some(target) = self.unit_mut(v).migrate_to.take() {
            if let Some(p) = self.rqs[target].cycle(self.rqs[target].pick_bias, |p| host.may_run(v, p)) {
                self.rqs[target].pick_bias = p;
                return p;
            }
        }
        let has_soft = host.has_soft(v);
        let own = self.units[v.idx()].as_ref().and_then(|u| u.rqd);
        let own_load = self.units[v.idx()].as_ref().map_or(0, |u| u.avgload);
        let (mut min, mut min_rq) = (i64::MAX, None);
        let (mut min_s, mut min_s_rq) = (i64::MAX, None);
        for (i, rq) in self.rqs.iter().enumerate() {
            if !rq.cpus.iter().any(|&p| host.may_run(v, p)) {
                continue;
            }
            let load = if own == Some(i) { (rq.b_avgload - own_load).max(0) } else { rq.b_avgload };
            if has_soft && load < min_s && rq.cpus.iter().any(|&p| host.prefers(v, p)) {
                min_s = load;
                min_s_rq = Some(i);
            }
            if load < min {
                min = load;
                min_rq = Some(i);
            }
        }
        let Some(min_rq) = min_rq else {
            // `get_fallback_cpu`: an allowed pCPU of the pool.
            return host.pcpu_ids().find(|&p| host.may_run(v, p)).unwrap_or(host.vcpu(v).last_pcpu);
        };
        // The cycle starts at `min_rqd->pick_bias` even in the soft-affinity case (L2543).
        let bias = self.rqs[min_rq].pick_bias;
        let picked = match min_s_rq.filter(|_| has_soft) {
            Some(s) => self.rqs[s].cycle(bias, |p| host.prefers(v, p)),
            None => self.rqs[min_rq].cycle(bias, |p| host.may_run(v, p)),
        }
        .expect("the chosen queue has an allowed pCPU");
        self.rqs[min_rq].pick_bias = picked;
        picked
    }

    // ---- budget (caps) -------------------------------------------------------------------

    /// `unit_grab_budget` (L1946-1990): take a quota from the domain, or park `v`.
    fn unit_grab_budget(&mut self, host: &HostView, v: VcpuId) -> bool {
        let u = self.unit(v);
        if u.budget > 0 {
            return true;
        }
        let (vm, quota, own) = (u.vm, u.budget_quota, u.budget);
        let dom = &mut self.doms[vm];
        dom.budget += own;
        if dom.budget > 0 {
            let b = dom.budget.min(quota);
            dom.budget -= b;
            self.unit_mut(v).budget = b;
        } else {
            self.unit_mut(v).budget = 0;
            self.park_unit(host, v);
        }
        self.unit(v).budget > 0
    }

    /// `park_unit` (L1917-1944).
    fn park_unit(&mut self, host: &HostView, v: VcpuId) {
        self.unit_mut(v).parked = true;
        if self.unit(v).on_runq {
            let rq = self.unit(v).rqd.expect("assigned");
            self.runq_remove(v);
            self.update_load(host, rq, Some(v), -1);
        }
        let vm = self.unit(v).vm;
        self.doms[vm].parked.push(v);
    }

    /// `unit_return_budget` (L1992-2031): give back what is left; the domain's parked units if
    /// the domain has budget again.
    fn unit_return_budget(&mut self, v: VcpuId) -> Vec<VcpuId> {
        let (vm, left) = (self.unit(v).vm, self.unit(v).budget);
        self.unit_mut(v).budget = 0;
        let dom = &mut self.doms[vm];
        dom.budget += left;
        if dom.budget > 0 {
            std::mem::take(&mut dom.parked)
        } else {
            Vec::new()
        }
    }

    /// `unpark_parked_units` (L2033-2079).
    fn unpark(&mut self, ctx: &mut PolicyCtx, units: Vec<VcpuId>) {
        for v in units {
            self.unit_mut(v).parked = false;
            if !self.unit(v).scheduled && self.runnable(&ctx.host, v) && ctx.host.vcpu(v).state == VcpuState::Runnable {
                let rq = self.unit(v).rqd.expect("assigned");
                self.update_load(&ctx.host, rq, Some(v), 1);
                self.runq_insert(v);
                self.runq_tickle(ctx, v);
            }
        }
    }

    /// `replenish_domain_budget` (L2081-2152), the domain's timer.
    fn replenish(&mut self, ctx: &mut PolicyCtx, vm: usize) {
        let now = ctx.now() as i64;
        let period = self.cap_period;
        let dom = &mut self.doms[vm];
        dom.next_repl += period;
        dom.budget += dom.tot_budget;
        while dom.next_repl <= now {
            dom.next_repl += period;
            dom.budget += dom.tot_budget;
        }
        let mut parked = Vec::new();
        if dom.budget > 0 {
            dom.budget = dom.budget.min(dom.tot_budget);
            parked = std::mem::take(&mut dom.parked);
        }
        let (timer, at) = (dom.repl_timer.expect("a capped domain has its timer"), dom.next_repl);
        self.unpark(ctx, parked);
        ctx.set_timer(&timer, at as Nanos);
    }

    /// The cap part of `csched2_dom_cntl` (L2967-3105).
    fn set_cap(&mut self, ctx: &mut PolicyCtx, vm: usize, cap: u32) {
        let nr = self.doms[vm].units.len().max(1) as i64;
        let cap = if cap as i64 > 100 * nr { 0 } else { cap };
        let now = ctx.now() as i64;
        if cap != 0 {
            let tot = self.cap_period * cap as i64 / 100;
            let quota = (tot / nr).max(MIN_TIMER);
            self.doms[vm].tot_budget = tot;
            let enabling = self.doms[vm].cap == 0;
            if enabling {
                self.doms[vm].budget = tot;
                self.doms[vm].next_repl = now + self.cap_period;
                let timer = *self.doms[vm].repl_timer.get_or_insert_with(|| ctx.init_timer(vm as u64));
                ctx.set_timer(&timer, (now + self.cap_period) as Nanos);
            }
            for v in self.doms[vm].units.clone() {
                if self.units[v.idx()].is_none() {
                    continue;
                }
                self.unit_mut(v).budget_quota = quota;
                if enabling {
                    if let Some(p) = ctx.host.vcpu(v).pcpu.filter(|_| ctx.host.vcpu(v).state == VcpuState::Running) {
                        self.burn_credits(v, now);
                        self.tickle_cpu(ctx, p);
                    }
                    self.unit_mut(v).budget = 0;
                }
            }
        } else if self.doms[vm].cap != 0 {
            if let Some(timer) = self.doms[vm].repl_timer {
                ctx.stop_timer(&timer);
            }
            for v in self.doms[vm].units.clone() {
                if let Some(u) = self.units[v.idx()].as_mut() {
                    u.budget = NO_CAP;
                    u.budget_quota = 0;
                }
            }
            let parked = std::mem::take(&mut self.doms[vm].parked);
            self.doms[vm].cap = 0;
            self.unpark(ctx, parked);
        }
        self.doms[vm].cap = cap;
    }

    // ---- scheduling ----------------------------------------------------------------------

    /// `csched2_unit_wake` (L2245-2298) for a unit not running and not queued.
    fn queue_woken(&mut self, ctx: &mut PolicyCtx, v: VcpuId) {
        if self.unit(v).parked {
            return;
        }
        if self.unit(v).rqd.is_none() {
            let rq = self.rq_of(self.unit(v).master);
            self.runq_assign(v, rq);
        }
        let rq = self.unit(v).rqd.expect("assigned above");
        self.update_load(&ctx.host, rq, Some(v), 1);
        self.runq_insert(v);
        self.runq_tickle(ctx, v);
    }

    /// `runq_candidate` (L3376-3569): the unit `p` runs next, `None` for idle.
    fn runq_candidate(&mut self, ctx: &mut PolicyCtx, scurr: Option<VcpuId>, p: PcpuId) -> Option<VcpuId> {
        let host = ctx.host;
        let now = host.now as i64;
        let rq = self.rq_of(p);
        let mut yielded = false;
        let mut snext = None;
        if let Some(s) = scurr {
            yielded = std::mem::take(&mut self.unit_mut(s).yielded);
            let runnable = self.runnable(&host, s);
            if !yielded && self.ratelimit > 0 && runnable && now - (host.vcpu(s).run_start as i64) < self.ratelimit {
                return Some(s);
            }
            let mut soft_aff_preempt = false;
            if host.has_soft(s) && !host.prefers(s, p) {
                soft_aff_preempt = self.rqs[rq].cpus.iter().any(|&q| host.prefers(s, q) && self.pcpu(q).idle && !self.pcpu(q).tickled);
            }
            if runnable && !soft_aff_preempt {
                snext = Some(s);
            }
        }
        let snext_credit = |me: &Self, s: Option<VcpuId>| s.map_or(IDLE_CREDIT, |s| me.unit(s).credit);
        for v in self.rqs[rq].runq.clone() {
            let credit = self.unit(v).credit;
            if !yielded && credit <= snext_credit(self, snext) {
                break;
            }
            if !self.runnable(&host, v) || !host.may_run(v, p) {
                continue;
            }
            let tickled = self.unit(v).tickled_cpu;
            if tickled.is_some_and(|t| t != p && self.pcpu(t).tickled) {
                continue;
            }
            if self.unit(v).master != p && snext_credit(self, snext) + self.migrate_resist > credit {
                continue;
            }
            if self.has_cap(v) && !self.unit_grab_budget(&host, v) {
                continue;
            }
            snext = Some(v);
            break;
        }
        snext
    }

    /// `csched2_runtime` (L3278-3371): how long `snext` runs on `p` before `do_schedule` again.
    fn runtime(&self, host: &HostView, p: PcpuId, snext: VcpuId, continuing: bool) -> i64 {
        let rq = self.rq_of(p);
        let now = host.now as i64;
        let mut min_time = MIN_TIMER;
        if self.ratelimit > 0 {
            let ratelimit_min = if continuing { host.vcpu(snext).run_start as i64 + self.ratelimit - now } else { self.ratelimit };
            min_time = min_time.max(ratelimit_min);
        }
        let u = self.unit(snext);
        let mut rt_credit = u.credit;
        if let Some(&w) = self.rqs[rq].runq.first() {
            let wc = self.unit(w).credit;
            if wc > 0 {
                rt_credit = u.credit - wc;
            }
        }
        let mut time = if rt_credit > 0 { self.c2t(rq, rt_credit, snext) } else { 0 };
        if u.budget != NO_CAP {
            time = time.min(u.budget);
        }
        if time < min_time {
            min_time
        } else {
            time.min(MAX_TIMER)
        }
    }

    /// `balance_load` (L2699-2883), after a credit reset on `p`: even the load of `p`'s queue
    /// with the queue whose load differs most, by pushing, pulling or swapping one unit each.
    fn balance_load(&mut self, ctx: &mut PolicyCtx, p: PcpuId) {
        if self.rqs.len() < 2 {
            return;
        }
        let host = ctx.host;
        let lrq = self.rq_of(p);
        self.update_load(&host, lrq, None, 0);
        let (mut load_delta, mut max_delta_rq) = (0i64, None);
        for i in 0..self.rqs.len() {
            if i == lrq {
                continue;
            }
            self.update_load(&host, i, None, 0);
            let delta = (self.rqs[lrq].b_avgload - self.rqs[i].b_avgload).abs();
            if delta > load_delta {
                load_delta = delta;
                max_delta_rq = Some(i);
            }
        }
        let Some(orq) = max_delta_rq else { return };
        // The capacity test reads the last queue of the loop, as the code does (L2762-2766).
        let last = self.rqs.len() - 1;
        let load_max = self.rqs[lrq].b_avgload.max(self.rqs[last].b_avgload);
        let cpus_max = self.rqs[lrq].cpus.len().max(self.rqs[last].cpus.len()) as i64;
        let tolerance = if load_max < (cpus_max << self.precision) { UNDERLOAD_TOLERANCE } else { OVERLOAD_TOLERANCE };
        if load_delta < 1i64 << (self.precision as i32 + tolerance) {
            return;
        }
        let migrateable =
            |me: &Self, v: VcpuId, to: usize| me.unit(v).migrate_to.is_none() && me.rqs[to].cpus.iter().any(|&q| host.may_run(v, q));
        let consider =
            |me: &Self, push: Option<VcpuId>, pull: Option<VcpuId>, delta: &mut i64, best: &mut (Option<VcpuId>, Option<VcpuId>)| {
                let (mut l, mut o) = (me.rqs[lrq].b_avgload, me.rqs[orq].b_avgload);
                if let Some(v) = push {
                    l -= me.unit(v).avgload;
                    o += me.unit(v).avgload;
                }
                if let Some(v) = pull {
                    l += me.unit(v).avgload;
                    o -= me.unit(v).avgload;
                }
                let d = (l - o).abs();
                if d < *delta {
                    *delta = d;
                    *best = (push, pull);
                }
            };
        let pulls = self.rqs[orq].svc.clone();
        for &v in &pulls {
            self.update_svc_load(&host, v, 0);
        }
        let mut best = (None, None);
        for push in self.rqs[lrq].svc.clone() {
            self.update_svc_load(&host, push, 0);
            if !migrateable(self, push, orq) {
                continue;
            }
            for &pull in &pulls {
                if migrateable(self, pull, lrq) {
                    consider(self, Some(push), Some(pull), &mut load_delta, &mut best);
                }
            }
            consider(self, Some(push), None, &mut load_delta, &mut best);
        }
        for &pull in &pulls {
            if migrateable(self, pull, lrq) {
                consider(self, None, Some(pull), &mut load_delta, &mut best);
            }
        }
        let (best_push, best_pull) = best;
        if let Some(v) = best_push {
            self.migrate(ctx, v, orq);
        }
        if let Some(v) = best_pull {
            self.migrate(ctx, v, lrq);
        }
    }

    /// `migrate` (L2614-2679): move `v` to queue `to`; a running unit is asked to move when it
    /// is next descheduled, and its pCPU is tickled.
    fn migrate(&mut self, ctx: &mut PolicyCtx, v: VcpuId, to: usize) {
        if self.unit(v).scheduled {
            self.unit_mut(v).migrate_to = Some(to);
            let p = self.unit(v).master;
            self.tickle_cpu(ctx, p);
            return;
        }
        self.move_to(ctx, v, to);
    }

    /// The not-running half of `migrate`: off the old queue, onto `to` at a pCPU it may use.
    fn move_to(&mut self, ctx: &mut PolicyCtx, v: VcpuId, to: usize) {
        let host = ctx.host;
        let on_runq = self.unit(v).on_runq;
        if on_runq {
            let from = self.unit(v).rqd.expect("assigned");
            self.runq_remove(v);
            self.update_load(&host, from, None, -1);
        }
        self.runq_deassign(v);
        let bias = self.rqs[to].pick_bias;
        let p = self.rqs[to].cycle(bias, |q| host.may_run(v, q)).expect("migrateable to this queue");
        self.rqs[to].pick_bias = p;
        self.unit_mut(v).master = p;
        self.runq_assign(v, to);
        if on_runq {
            self.update_load(&host, to, None, 1);
            self.runq_insert(v);
            self.runq_tickle(ctx, v);
        }
    }

    /// What `csched2_context_saved` (L2308-2347) does for `prev` once `p` switched away from it,
    /// and core.c's migration of a unit credit2 asked to move.
    fn context_saved(&mut self, ctx: &mut PolicyCtx, prev: VcpuId, requeue: bool) {
        self.unit_mut(prev).scheduled = false;
        let mut unpark = Vec::new();
        if self.has_cap(prev) && self.unit(prev).budget > 0 {
            unpark = self.unit_return_budget(prev);
        }
        let rq = self.unit(prev).rqd.expect("assigned");
        if requeue {
            self.runq_insert(prev);
            self.runq_tickle(ctx, prev);
        } else {
            self.update_load(&ctx.host, rq, Some(prev), -1);
            if let Some(to) = self.unit(prev).migrate_to {
                // core.c `sched_unit_migrate_finish`: `csched2_res_pick` honours the request,
                // `csched2_unit_migrate` moves it, and it wakes there if it can run.
                let host = ctx.host;
                let cpu = self.res_pick(&host, prev);
                if self.rq_of(cpu) != rq {
                    self.move_to(ctx, prev, to);
                } else {
                    self.unit_mut(prev).master = cpu;
                }
                if self.runnable(&ctx.host, prev) {
                    self.queue_woken(ctx, prev);
                }
            }
        }
        self.unpark(ctx, unpark);
    }
}

impl Policy for Credit2 {
    fn name(&self) -> &'static str {
        "credit2"
    }

    /// `csched2_dom_cntl` putinfo (L2911-3115): the weight (no credit rescaled) and the cap.
    fn adjust(&mut self, ctx: &mut PolicyCtx, vm: VmId, sched: &VmSched) {
        self.ensure_runqueues(&ctx.host);
        let i = vm.idx();
        if self.doms[i].units.is_empty() {
            self.doms[i].units = ctx.host.vm(vm).vcpus.iter().copied().filter(|&v| ctx.host.owns_vcpu(v)).collect();
        }
        let weight = sched.weight.clamp(1, 65_535);
        let old = std::mem::replace(&mut self.doms[i].weight, weight);
        for v in self.doms[i].units.clone() {
            if let Some(u) = self.units[v.idx()].as_mut() {
                u.weight = weight;
                if let Some(rq) = u.rqd {
                    self.update_max_weight(rq, weight, old);
                }
            }
        }
        self.set_cap(ctx, i, sched.cap);
    }

    /// `csched2_unit_insert` (L3217-3246) with `csched2_alloc_udata` (L2180-2221), then the
    /// wake that the domain's unpause makes.
    fn insert_vcpu(&mut self, ctx: &mut PolicyCtx, v: VcpuId) {
        self.ensure_runqueues(&ctx.host);
        let now = ctx.now() as i64;
        let vm = ctx.host.vcpu(v).vm.idx();
        let dom = &self.doms[vm];
        let capped = dom.cap != 0;
        let quota = if capped { (dom.tot_budget / dom.units.len().max(1) as i64).max(MIN_TIMER) } else { 0 };
        self.units[v.idx()] = Some(Unit {
            vm,
            credit: CREDIT_INIT,
            weight: dom.weight.max(1),
            residual: 0,
            budget: if capped { 0 } else { NO_CAP },
            budget_quota: quota,
            start_time: now,
            load_last_update: now >> LOADAVG_GRANULARITY_SHIFT,
            avgload: 1 << (self.precision - 1),
            rqd: None,
            master: ctx.host.vcpu(v).last_pcpu,
            tickled_cpu: None,
            yielded: false,
            migrate_to: None,
            scheduled: false,
            parked: false,
            on_runq: false,
        });
        let host = ctx.host;
        let p = self.res_pick(&host, v);
        self.unit_mut(v).master = p;
        let rq = self.rq_of(p);
        self.runq_assign(v, rq);
        if !self.doms[vm].units.contains(&v) {
            self.doms[vm].units.push(v);
        }
        self.queue_woken(ctx, v);
    }

    fn wake(&mut self, ctx: &mut PolicyCtx, v: VcpuId, _waker: Option<PcpuId>) {
        if self.unit(v).on_runq || self.unit(v).scheduled {
            return;
        }
        self.queue_woken(ctx, v);
    }

    /// `csched2_unit_sleep` (L2223-2243) of the running unit: its load drops when it is switched
    /// out (the `do_schedule` that follows).
    fn sleep(&mut self, _ctx: &mut PolicyCtx, _v: VcpuId) {}

    /// `csched2_unit_yield` (L2300-2306): only the flag; `runq_candidate` reads it.
    fn yield_vcpu(&mut self, _ctx: &mut PolicyCtx, v: VcpuId, _reason: YieldReason) {
        self.unit_mut(v).yielded = true;
    }

    /// `csched2_schedule` (L3575-3763).
    fn do_schedule(&mut self, ctx: &mut PolicyCtx, p: PcpuId) -> Decision {
        self.ensure_runqueues(&ctx.host);
        let host = ctx.host;
        let now = host.now as i64;
        let rq = self.rq_of(p);
        if self.pcpu(p).tickled {
            self.pcpu_mut(p).tickled = false;
            self.smt_idle_set(p);
        }
        let scurr = host.pcpu(p).current.filter(|&c| self.units[c.idx()].as_ref().is_some_and(|u| u.scheduled));
        if let Some(s) = scurr {
            self.burn_credits(s, now);
            if self.unit(s).budget <= 0 {
                self.unit_grab_budget(&host, s);
            }
        }
        let snext = self.runq_candidate(ctx, scurr, p);
        let requeue = scurr.is_some_and(|s| snext != Some(s) && self.runnable(&host, s));
        match snext {
            Some(n) => {
                if snext != scurr {
                    self.runq_remove(n);
                    self.unit_mut(n).scheduled = true;
                } else {
                    self.update_load(&host, rq, Some(n), 0);
                }
                if self.pcpu(p).idle {
                    self.pcpu_mut(p).idle = false;
                    self.smt_idle_clear(p);
                }
                let head = self.rqs[rq].runq.first().map(|&w| self.unit(w).credit);
                let top = head.map_or(self.unit(n).credit, |h| h.max(self.unit(n).credit));
                if top <= 0 {
                    self.reset_credit(ctx, p, n);
                    self.balance_load(ctx, p);
                }
                let u = self.unit_mut(n);
                u.start_time = now;
                u.tickled_cpu = None;
                if u.master != p {
                    u.credit += MIGRATE_COMPENSATION;
                    u.master = p;
                }
            }
            None => {
                if !self.pcpu(p).idle {
                    self.pcpu_mut(p).idle = true;
                    self.smt_idle_set(p);
                }
                self.update_load(&host, rq, None, 0);
            }
        }
        let slice = snext.map(|n| self.runtime(&host, p, n, snext == scurr) as Nanos);
        if let Some(prev) = scurr.filter(|&s| snext != Some(s)) {
            self.switching = Some((p, snext));
            self.context_saved(ctx, prev, requeue);
            self.switching = None;
        }
        Decision { next: snext, slice }
    }

    fn on_timer(&mut self, ctx: &mut PolicyCtx, key: u64) {
        self.replenish(ctx, key as usize);
    }

    fn pick_pcpu(&mut self, ctx: &mut PolicyCtx, v: VcpuId) -> Option<PcpuId> {
        let host = ctx.host;
        Some(self.res_pick(&host, v))
    }

    /// Check mode: every queue sorted by credit, every queued unit Runnable and not parked, each
    /// queue's `load` the runnable units assigned there, no credit below the floor.
    fn check(&self, host: &HostView) -> Result<(), String> {
        for (i, rq) in self.rqs.iter().enumerate() {
            for pair in rq.runq.windows(2) {
                if self.unit(pair[0]).credit < self.unit(pair[1]).credit {
                    return Err(format!("credit2 queue {i} out of order at vCPU {} before vCPU {}", pair[0], pair[1]));
                }
            }
            let mut load = 0;
            for &v in &rq.svc {
                let u = self.unit(v);
                if u.on_runq != rq.runq.contains(&v) {
                    return Err(format!("credit2 vCPU {v}: on_runq {} but queue {i} says otherwise", u.on_runq));
                }
                if u.on_runq && (host.vcpu(v).state != VcpuState::Runnable || u.parked) {
                    return Err(format!("credit2 vCPU {v} queued while {:?} (parked {})", host.vcpu(v).state, u.parked));
                }
                // `t2c_update` floors a credit at CREDIT_MIN; nothing takes it lower. (It has no
                // ceiling: a reset caps it at 10.5 ms, but each pull adds 50 us.)
                if u.credit < CREDIT_MIN {
                    return Err(format!("credit2 vCPU {v} has credit {} ns, below CSCHED2_CREDIT_MIN", u.credit));
                }
                if u.on_runq || u.scheduled && host.vcpu(v).state == VcpuState::Running {
                    load += 1;
                }
            }
            if load != rq.load {
                return Err(format!("credit2 queue {i} has load {} but {load} runnable units", rq.load));
            }
        }
        Ok(())
    }
}
