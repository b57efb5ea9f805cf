//! Linux CFS as a KVM host runs vCPU threads (kernel/sched/fair.c, pre-EEVDF, ~v3.2-5.x).
//!
//! Each vCPU is a host task; each VM is a task group whose shares are split over its vCPUs. The
//! seed's setup (seed 000 section 4) gives every VM 1024 x (number of pCPUs) shares; here a VM's
//! shares are that times `weight / 256`, so equal weights reproduce the seed and weights 1:2 give
//! shares 1:2.
//!
//! Simplifications, with their reasons:
//! - Group scheduling is flattened: a vCPU's weight is its VM's shares divided by the VM's vCPU
//!   count. The real per-CPU group entity weight is shares x (load on this CPU / group load),
//!   which equals this when the VM's vCPUs are equally loaded; PELT load tracking is not modelled.
//! - Load balancing compares instantaneous run-queue weights (no PELT averages) and moves one
//!   queued vCPU at a time when that shrinks the imbalance (load_balance / detach_tasks).
//! - The scheduler tick runs on every pCPU, busy or idle; on idle pCPUs it stands in for
//!   nohz idle balancing.
//!
//! A VM's `cap` is CFS bandwidth control on its cgroup (`cpu.cfs_quota_us` = cap/100 x
//! `cpu.cfs_period_us`): the VM's vCPUs draw run time from one pool per period, and when it runs
//! dry they are throttled until the period timer refills it (see [`Bandwidth`]; docs/model.md
//! section 7.2 lists what is modelled and what is not).

use super::placement::{self, LoadView, Placement};
use super::{HostShape, PolicyKind};
use crate::hypervisor::policy::{Decision, IpiKind, Policy, PolicyCtx, Timer, VcpuState, VmSched, YieldReason};
use crate::hypervisor::uvf::overlay::UrgentBase;
use crate::hypervisor::uvf::{Uvf, UvfVm};
use crate::ids::{PcpuId, VcpuId, VmId};
use crate::params::{ParamSpec, Params};
use crate::time::{Nanos, MS, SEC, US};
use std::collections::BTreeSet;

/// NICE_0_LOAD: the weight of a nice-0 task (kernel/sched/sched.h).
const NICE_0_LOAD: u64 = 1024;
/// sched_nr_latency: above this many tasks the period stretches (fair.c).
const SCHED_NR_LATENCY: u64 = 8;
/// Timer keys at or above this are the UVF overlay's (pCPU in the low bits); below, scheduler ticks.
const UVF_TIMER: u64 = 1 << 32;
/// Timer keys at or above this are CFS bandwidth period timers (VM index in the low bits).
const BW_TIMER: u64 = 1 << 33;
/// Candidates kvm_vcpu_on_spin tries before giving up on `-ESRCH` results (kvm_main.c).
const DIRECTED_YIELD_TRIES: u32 = 3;

mod urgent;

pub struct CfsKind;

impl PolicyKind for CfsKind {
    fn name(&self) -> &'static str {
        "cfs"
    }
    fn describe(&self) -> &'static str {
        "Linux CFS scheduling vCPU threads on a KVM host: per-VM group shares, vruntime, \
         sched_latency/min_granularity/wakeup_granularity scaled by log2(pCPUs), sleeper \
         placement, wakeup preemption, load balancing, and kvm_vcpu_on_spin directed yield on \
         pause-loop exits (kernel/sched/fair.c, virt/kvm/kvm_main.c)"
    }
    fn params(&self) -> Vec<ParamSpec> {
        vec![
            ParamSpec::duration("latency", 6 * MS, "sysctl_sched_latency before scaling: 6 ms (fair.c); scaled by 1 + ilog2(min(pCPUs, 8))")
                .range(100_000.0, 1e9),
            ParamSpec::duration("min_granularity", 750 * US, "sysctl_sched_min_granularity before scaling: 0.75 ms (fair.c)")
                .range(10_000.0, 1e9),
            ParamSpec::duration("wakeup_granularity", MS, "sysctl_sched_wakeup_granularity before scaling: 1 ms (fair.c)")
                .range(0.0, 1e9),
            ParamSpec::boolean("scale_by_cpus", true, "SCHED_TUNABLESCALING_LOG: multiply the three tunables by 1 + ilog2(min(pCPUs, 8))"),
            ParamSpec::duration("tick", 4 * MS, "scheduler tick: CONFIG_HZ=250 -> 4 ms").range(100_000.0, 1e8),
            ParamSpec::int("busy_factor", 32, "sched domain busy_factor: a busy pCPU balances this many times less often (32 before v5.10, 16 after)")
                .range(1.0, 1024.0),
            ParamSpec::int("imbalance_pct", 125, "sched domain imbalance_pct: periodic balancing moves load only above this percentage of imbalance, wake_affine allows half of it. 125 in Linux 3.2 (SD_*_INIT), the seed's host kernel; 117 since v5.x")
                .range(100.0, 400.0),
            ParamSpec::duration("migration_cost", 500 * US, "sysctl_sched_migration_cost: a vCPU that ran this recently is cache-hot and not pulled by periodic balancing")
                .range(0.0, 1e9),
            ParamSpec::boolean("directed_yield", true, "on a pause-loop exit, yield to a preempted sibling vCPU (kvm_vcpu_on_spin); false: plain yield"),
            ParamSpec::duration("cfs_period", 100 * MS, "CFS bandwidth period for capped VMs ([[vm]] cap): cpu.cfs_period_us, default 100 ms (kernel/sched/core.c default_cfs_period); a VM may run cap/100 x this per period")
                .range(MS as f64, SEC as f64),
            ParamSpec::choice("placement", Placement::NAMES, "default", "vCPU-to-pCPU placement, usually set as [host] placement: default (the Linux 3.2 wake path and load balancer), balance (siblings never share a run queue; Sukwong and Kim, EuroSys'11) or lc-balance (load-conscious balance, seed 000 section 3.2)"),
        ]
    }
    fn carries_uvf(&self) -> bool {
        true
    }
    fn honours_cap(&self) -> bool {
        true
    }
    fn supports_pool_changes(&self) -> bool {
        true
    }
    fn build(&self, params: &Params, host: HostShape) -> Box<dyn Policy> {
        Box::new(Cfs::new(params, host))
    }
}

/// Per-vCPU scheduling entity.
#[derive(Clone, Debug, Default)]
struct Entity {
    vruntime: u64,
    /// The run queue it is on (queued or running); None while halted.
    rq: Option<usize>,
    /// Queued in the tree (not running).
    queued: bool,
    /// Execution start of the current run, and run time at pick (for check_preempt_tick).
    exec_start: Nanos,
    slice_start_runtime: Nanos,
    sum_exec: Nanos,
    /// Last time it stopped running (cache hotness).
    last_ran: Nanos,
    /// Runnable but throttled: its VM ran out of bandwidth (`cfs_rq->throttled`); in no run
    /// queue until the period timer unthrottles it on `throttled_on`.
    throttled: bool,
    throttled_on: usize,
}

/// Per-pCPU run queue.
#[derive(Clone, Debug, Default)]
struct RunQueue {
    tree: BTreeSet<(u64, VcpuId)>,
    curr: Option<VcpuId>,
    min_vruntime: u64,
    /// Total weight of queued + running entities.
    load: u64,
    nr_running: u64,
    need_resched: bool,
    /// The scheduler tick of this pCPU (`scheduler_tick`), periodic once started.
    tick_timer: Option<Timer>,
    next_buddy: Option<VcpuId>,
    skip_buddy: Option<VcpuId>,
    last_balance: Nanos,
}

/// Per-VM private data: the settings `adjust` gave (the VM's cgroup `cpu.shares` on a KVM host).
#[derive(Clone, Copy, Debug, Default)]
struct CfsVm {
    weight: u32,
    /// The VM's `[vm.uvf]` knobs (the UVF overlay, `cfs/urgent.rs`).
    uvf: UvfVm,
}

/// CFS bandwidth control of one VM's cgroup (`struct cfs_bandwidth`, kernel/sched/fair.c),
/// at the level this simulator needs:
/// - `quota` per `period` for the whole VM (`cpu.cfs_quota_us` / `cpu.cfs_period_us`);
/// - `runtime` is the pool left this period (`cfs_b->runtime`). Each `update_curr` of a vCPU of
///   the VM charges its run time to it directly (`__account_cfs_rq_runtime`), as if the per-cfs_rq
///   slices of `sched_cfs_bandwidth_slice` (5 ms, `assign_cfs_rq_runtime`) were infinitesimal;
/// - when it runs dry the pCPUs running the VM's vCPUs reschedule (`resched_curr`), and the VM is
///   throttled as a whole (`throttle_cfs_rq` on every pCPU at once): queued vCPUs leave their run
///   queues, running ones leave at their pCPU's `do_schedule` (`check_cfs_rq_runtime` in
///   `put_prev_entity`), waking ones are not enqueued;
/// - the period timer (`sched_cfs_period_timer` -> `do_sched_cfs_period_timer`) refills it to
///   `quota` less the overrun of the period before (the negative `runtime_remaining` that
///   `distribute_cfs_runtime` pays back first) and, if that leaves run time, unthrottles every
///   vCPU on its run queue (`unthrottle_cfs_rq`), rescheduling the pCPUs that were idle.
#[derive(Clone, Debug, Default)]
struct Bandwidth {
    /// Run time per period; 0 = `RUNTIME_INF` (no cap).
    quota: Nanos,
    /// Run time left this period (negative: overrun to pay back at the refill).
    runtime: i64,
    /// The VM's vCPUs are throttled (set by `throttle`, cleared by the refill).
    throttled: bool,
    /// Exhaustion seen by `update_curr`, throttle not yet done (`pending_throttle`).
    pending: bool,
    /// `cfs_b->period_timer`, armed while the VM has a quota.
    period_timer: Option<Timer>,
}

pub struct Cfs {
    latency: Nanos,
    min_gran: Nanos,
    wakeup_gran: Nanos,
    tick: Nanos,
    balance_interval: Nanos,
    busy_factor: u64,
    imbalance_pct: u64,
    migration_cost: Nanos,
    directed_yield: bool,
    /// Which run queues a waking or migrating vCPU may join (placement.rs).
    placement: Placement,
    se: Vec<Entity>,
    weight: Vec<u64>,
    rqs: Vec<RunQueue>,
    vms: Vec<CfsVm>,
    /// kvm->last_boosted_vcpu per VM (index within the VM).
    last_boosted: Vec<usize>,
    ticks_started: bool,
    /// `cpu.cfs_period_us` of capped VMs.
    cfs_period: Nanos,
    /// Per-VM bandwidth control (quota 0 for uncapped VMs).
    bw: Vec<Bandwidth>,
    /// How many VMs have a quota: with none, the per-call bandwidth checks are skipped.
    capped: usize,
    /// VMs whose pool ran dry in an `update_curr`, to throttle once the caller can ask for
    /// reschedules (`flush_throttles`).
    pending_throttle: Vec<VmId>,
    /// The urgent-vCPU-first overlay (seed 000 section 3.1.3), when `[host.uvf]` is present.
    uvf: Option<Uvf>,
}

impl Cfs {
    fn new(params: &Params, host: HostShape) -> Self {
        // get_update_sysctl_factor(): 1 + ilog2(min(ncpus, 8)).
        let factor = if params.boolean("scale_by_cpus") { 1 + (host.npcpus.clamp(1, 8)).ilog2() as u64 } else { 1 };
        Cfs {
            latency: params.duration("latency") * factor,
            min_gran: params.duration("min_granularity") * factor,
            wakeup_gran: params.duration("wakeup_granularity") * factor,
            tick: params.duration("tick"),
            // sd_init: balance_interval = sd_weight ms.
            balance_interval: host.npcpus as u64 * MS,
            busy_factor: params.int("busy_factor"),
            imbalance_pct: params.int("imbalance_pct"),
            migration_cost: params.duration("migration_cost"),
            directed_yield: params.boolean("directed_yield"),
            placement: Placement::from_name(params.choice("placement")).expect("the loader checks the name against Placement::NAMES"),
            se: vec![Entity::default(); host.nvcpus as usize],
            weight: vec![NICE_0_LOAD; host.nvcpus as usize],
            rqs: vec![RunQueue::default(); host.npcpus as usize],
            vms: vec![CfsVm::default(); host.nvms as usize],
            last_boosted: vec![0; host.nvms as usize],
            ticks_started: false,
            cfs_period: params.duration("cfs_period"),
            bw: vec![Bandwidth::default(); host.nvms as usize],
            capped: 0,
            pending_throttle: Vec::new(),
            uvf: host.uvf.map(|cfg| Uvf::new(cfg, host.nvcpus as usize, host.npcpus as usize)),
        }
    }

    /// Group shares 1024 x pCPUs x weight/256, split over the VM's vCPUs.
    fn vcpu_weight(&self, ctx: &PolicyCtx, vm: VmId) -> u64 {
        let shares = NICE_0_LOAD * ctx.host.npcpus() as u64 * self.vms[vm.idx()].weight as u64 / 256;
        (shares / ctx.host.vm(vm).vcpus.len() as u64).max(2)
    }

    /// calc_delta_fair: virtual time for `delta` of real time at weight `w`.
    fn vdelta(delta: Nanos, w: u64) -> u64 {
        ((delta as u128 * NICE_0_LOAD as u128) / w.max(1) as u128) as u64
    }

    /// Charge the running entity of `p` up to now (update_curr).
    fn update_curr(&mut self, ctx: &PolicyCtx, p: usize) {
        let Some(c) = self.rqs[p].curr else { return };
        let now = ctx.now();
        let e = &mut self.se[c.idx()];
        let delta = now.saturating_sub(e.exec_start);
        e.exec_start = now;
        e.sum_exec += delta;
        e.vruntime += Self::vdelta(delta, self.weight[c.idx()]);
        self.update_min_vruntime(p);
        if self.capped > 0 {
            self.account_runtime(ctx.host.vcpu(c).vm, delta);
        }
    }

    /// `__account_cfs_rq_runtime`: charge `delta` of run time to the VM's bandwidth pool; when it
    /// runs dry, note the VM for `flush_throttles` (Linux: `resched_curr`, then the throttle at
    /// `put_prev_entity`).
    fn account_runtime(&mut self, vm: VmId, delta: Nanos) {
        let Some(b) = self.bw.get_mut(vm.idx()) else { return };
        if b.quota == 0 {
            return;
        }
        b.runtime -= delta as i64;
        if b.runtime <= 0 && !b.throttled && !b.pending {
            b.pending = true;
            self.pending_throttle.push(vm);
        }
    }

    /// The VM has a quota and no run time left this period.
    fn exhausted(&self, vm: VmId) -> bool {
        self.bw.get(vm.idx()).is_some_and(|b| b.quota > 0 && b.runtime <= 0)
    }

    /// `v`'s VM is `exhausted` (answered at once when no VM has a quota).
    #[inline]
    fn vcpu_exhausted(&self, ctx: &PolicyCtx, v: VcpuId) -> bool {
        self.capped > 0 && self.exhausted(ctx.host.vcpu(v).vm)
    }

    /// Throttle the VMs `update_curr` found out of run time; `except` is the pCPU whose
    /// `do_schedule` is running (it needs no reschedule request).
    #[inline]
    fn flush_throttles(&mut self, ctx: &mut PolicyCtx, except: Option<usize>) {
        // Called after every call that may run update_curr: nearly always nothing to do.
        if !self.pending_throttle.is_empty() {
            self.throttle_pending(ctx, except);
        }
    }

    fn throttle_pending(&mut self, ctx: &mut PolicyCtx, except: Option<usize>) {
        while let Some(vm) = self.pending_throttle.pop() {
            self.bw[vm.idx()].pending = false;
            if self.exhausted(vm) {
                self.throttle(ctx, vm, except);
            }
        }
    }

    /// `throttle_cfs_rq` on every pCPU of the VM: queued vCPUs leave their run queues; pCPUs
    /// running one reschedule (not held back by UVF: the cgroup has no run time), and
    /// `do_schedule` throttles it there.
    fn throttle(&mut self, ctx: &mut PolicyCtx, vm: VmId, except: Option<usize>) {
        self.bw[vm.idx()].throttled = true;
        for &v in &ctx.host.vm(vm).vcpus {
            let e = &self.se[v.idx()];
            let Some(p) = e.rq else { continue };
            if e.queued {
                self.throttle_one(v, p);
            } else if self.rqs[p].curr == Some(v) && except != Some(p) && !self.rqs[p].need_resched {
                self.rqs[p].need_resched = true;
                ctx.reschedule(PcpuId(p as u32));
            }
        }
    }

    /// Take `v` off its run queue as throttled; it returns to run queue `on` when unthrottled.
    fn throttle_one(&mut self, v: VcpuId, on: usize) {
        self.dequeue(v);
        self.uvf_sleep(v);
        let e = &mut self.se[v.idx()];
        e.throttled = true;
        e.throttled_on = on;
    }

    /// The period timer of `vm` (`sched_cfs_period_timer`): refill, and unthrottle if the refill
    /// leaves run time (`distribute_cfs_runtime` -> `unthrottle_cfs_rq`).
    fn period_timer(&mut self, ctx: &mut PolicyCtx, vm: VmId) {
        let b = &mut self.bw[vm.idx()];
        let Some(timer) = b.period_timer else { return };
        if b.quota == 0 {
            return;
        }
        ctx.set_timer(&timer, ctx.now() + self.cfs_period);
        // __refill_cfs_bandwidth_runtime sets runtime = quota; the throttled cfs_rqs' overrun
        // (runtime_remaining < 0) is paid from it first.
        b.runtime = b.quota as i64 + b.runtime.min(0);
        if b.runtime > 0 {
            self.unthrottle(ctx, vm);
        }
    }

    /// `unthrottle_cfs_rq` for every throttled vCPU of `vm`: back on the run queue it was
    /// throttled on (or a fallback if that pCPU left the pool or its affinity), placed as a
    /// waking entity; an idle pCPU that gets work reschedules ("determine whether we need to wake
    /// up potentially idle cpu"); busy ones find it at their next tick.
    fn unthrottle(&mut self, ctx: &mut PolicyCtx, vm: VmId) {
        self.bw[vm.idx()].throttled = false;
        for &v in &ctx.host.vm(vm).vcpus {
            if !self.se[v.idx()].throttled {
                continue;
            }
            self.se[v.idx()].throttled = false;
            let on = self.se[v.idx()].throttled_on;
            let p = if ctx.host.may_run(v, PcpuId(on as u32)) { on } else { self.fallback_pcpu(ctx, v, on) };
            self.place_waking(v, p);
            self.enqueue(v, p);
            if self.rqs[p].curr.is_none() {
                self.resched(ctx, p);
            }
        }
    }

    /// The VM's cap as a quota (`tg_set_cfs_bandwidth`): runtime starts full and the period timer
    /// runs while there is a quota; removing the cap unthrottles.
    fn set_bandwidth(&mut self, ctx: &mut PolicyCtx, vm: VmId, cap: u32) {
        if self.bw.len() <= vm.idx() {
            self.bw.resize(vm.idx() + 1, Bandwidth::default());
        }
        let quota = (cap as u128 * self.cfs_period as u128 / 100) as Nanos;
        let b = &mut self.bw[vm.idx()];
        if b.quota == quota {
            return;
        }
        match (b.quota, quota) {
            (0, _) => self.capped += 1,
            (_, 0) => self.capped -= 1,
            _ => {}
        }
        let b = &mut self.bw[vm.idx()];
        b.quota = quota;
        b.runtime = quota as i64;
        if quota == 0 {
            if let Some(t) = b.period_timer {
                ctx.stop_timer(&t);
            }
            self.unthrottle(ctx, vm);
            return;
        }
        let timer = *b.period_timer.get_or_insert_with(|| ctx.init_timer(BW_TIMER + vm.idx() as u64));
        ctx.set_timer(&timer, ctx.now() + self.cfs_period);
        if b.throttled {
            self.unthrottle(ctx, vm);
        }
    }

    fn update_min_vruntime(&mut self, p: usize) {
        let rq = &self.rqs[p];
        let curr_v = rq.curr.map(|c| self.se[c.idx()].vruntime);
        let left_v = rq.tree.first().map(|(v, _)| *v);
        let candidate = match (curr_v, left_v) {
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) => a,
            (None, Some(b)) => b,
            (None, None) => return,
        };
        let rq = &mut self.rqs[p];
        rq.min_vruntime = rq.min_vruntime.max(candidate);
    }

    fn enqueue(&mut self, v: VcpuId, p: usize) {
        let e = &mut self.se[v.idx()];
        e.rq = Some(p);
        e.queued = true;
        self.rqs[p].tree.insert((e.vruntime, v));
        self.rqs[p].load += self.weight[v.idx()];
        self.rqs[p].nr_running += 1;
    }

    /// Remove from the tree (it stays accounted on the rq when it becomes curr).
    fn take_from_tree(&mut self, v: VcpuId) {
        let e = &mut self.se[v.idx()];
        if e.queued {
            let p = e.rq.expect("a queued entity has a run queue");
            self.rqs[p].tree.remove(&(e.vruntime, v));
            e.queued = false;
        }
    }

    /// Remove from its run queue entirely (dequeue_entity).
    fn dequeue(&mut self, v: VcpuId) {
        self.take_from_tree(v);
        if let Some(p) = self.se[v.idx()].rq.take() {
            self.rqs[p].load -= self.weight[v.idx()];
            self.rqs[p].nr_running -= 1;
            let rq = &mut self.rqs[p];
            if rq.curr == Some(v) {
                rq.curr = None;
            }
            if rq.next_buddy == Some(v) {
                rq.next_buddy = None;
            }
            if rq.skip_buddy == Some(v) {
                rq.skip_buddy = None;
            }
        }
    }

    /// Move a queued entity to another run queue, keeping its lag (vruntime relative to
    /// min_vruntime), as migrate_task_rq_fair does.
    fn migrate(&mut self, v: VcpuId, to: usize) {
        let from = self.se[v.idx()].rq.expect("a migrating entity is queued");
        self.dequeue(v);
        let e = &mut self.se[v.idx()];
        e.vruntime = e.vruntime.saturating_sub(self.rqs[from].min_vruntime) + self.rqs[to].min_vruntime;
        self.enqueue(v, to);
        self.uvf_moved(v, to);
    }

    /// Ideal slice of `v` on run queue `p` (sched_slice), counting `v` as if queued there
    /// when it is not yet (as sched_slice does for `!se->on_rq`).
    fn slice(&self, v: VcpuId, p: usize) -> Nanos {
        let rq = &self.rqs[p];
        let w = self.weight[v.idx()];
        let (nr, load) = if self.se[v.idx()].rq == Some(p) { (rq.nr_running, rq.load) } else { (rq.nr_running + 1, rq.load + w) };
        let period = if nr > SCHED_NR_LATENCY { nr * self.min_gran } else { self.latency };
        ((period as u128 * w as u128) / load.max(1) as u128) as Nanos
    }

    /// wakeup_gran in the virtual time of `se`.
    fn wakeup_gran_of(&self, v: VcpuId) -> u64 {
        Self::vdelta(self.wakeup_gran, self.weight[v.idx()])
    }

    /// wakeup_preempt_entity(curr, se): -1 if curr is not ahead of se, 1 if ahead by more than
    /// se's wakeup granularity, else 0.
    fn wakeup_preempt_entity(&self, curr: VcpuId, se: VcpuId) -> i32 {
        let vdiff = self.se[curr.idx()].vruntime as i128 - self.se[se.idx()].vruntime as i128;
        if vdiff <= 0 {
            -1
        } else if vdiff > self.wakeup_gran_of(se) as i128 {
            1
        } else {
            0
        }
    }

    fn resched(&mut self, ctx: &mut PolicyCtx, p: usize) {
        // UVF: an urgent vCPU in its protected tslice is not preempted; the preemption waits.
        if let Some(c) = self.rqs[p].curr {
            if self.hold_back_preemption(ctx.now(), p, c) {
                return;
            }
        }
        if !self.rqs[p].need_resched {
            self.rqs[p].need_resched = true;
            ctx.reschedule(PcpuId(p as u32));
        }
    }

    /// pick_next_entity with skip / next buddies.
    fn pick_next(&self, p: usize) -> Option<VcpuId> {
        let rq = &self.rqs[p];
        let mut it = rq.tree.iter();
        let left = it.next()?.1;
        let mut se = left;
        if rq.skip_buddy == Some(left) {
            if let Some((_, second)) = it.next() {
                if self.wakeup_preempt_entity(*second, left) < 1 {
                    se = *second;
                }
            }
        }
        if let Some(next) = rq.next_buddy {
            if self.se[next.idx()].queued && self.wakeup_preempt_entity(next, left) < 1 {
                se = next;
            }
        }
        Some(se)
    }

    /// place_entity for a waking vCPU: no more than half a latency of credit for sleeping
    /// (GENTLE_FAIR_SLEEPERS).
    fn place_waking(&mut self, v: VcpuId, p: usize) {
        let min = self.rqs[p].min_vruntime;
        let e = &mut self.se[v.idx()];
        e.vruntime = e.vruntime.max(min.saturating_sub(self.latency / 2));
    }

    /// select_task_rq_fair for a waking vCPU thread (Linux 3.2, the seed's host kernel): with
    /// `cpu` the pCPU whose exit does the wakeup, the wakee moves there when wake_affine finds
    /// the two loads close enough, else stays with its previous pCPU; select_idle_sibling then
    /// prefers an idle pCPU in that target's last-level cache (a socket here).
    ///
    /// The task's cpumask (hard affinity ∩ pool) bounds every step as in 3.2: the waker's pCPU is
    /// a candidate only if allowed (`want_affine = cpumask_test_cpu(cpu, tsk_cpus_allowed(p))`),
    /// select_idle_sibling scans `sched_domain_span ∩ tsk_cpus_allowed`, and a result the task may
    /// not use goes to `select_fallback_rq` (core.c `select_task_rq`).
    fn select_pcpu(&self, ctx: &PolicyCtx, v: VcpuId, waker: Option<PcpuId>) -> usize {
        if let Some(p) = self.place(ctx, v) {
            return p;
        }
        let host = &ctx.host;
        let info = host.vcpu(v);
        let prev = info.last_pcpu.idx();
        if let Some(p) = self.soft_idle(ctx, v, prev) {
            return p;
        }
        let cpu = waker.filter(|w| host.may_run(v, *w)).map_or(prev, |p| p.idx());
        let target = if cpu == prev || self.wake_affine(v, cpu, prev) { cpu } else { prev };
        let chosen = self.select_idle_sibling(ctx, v, target, cpu, prev);
        if host.may_run(v, PcpuId(chosen as u32)) {
            chosen
        } else {
            self.fallback_pcpu(ctx, v, prev)
        }
    }

    /// `select_fallback_rq` (3.2 core.c): an allowed pCPU on the previous pCPU's node, else any
    /// allowed pCPU (the engine guarantees one: hard ∩ pool is never empty).
    fn fallback_pcpu(&self, ctx: &PolicyCtx, v: VcpuId, prev: usize) -> usize {
        let host = &ctx.host;
        let node = host.topology.place(PcpuId(prev as u32)).node;
        let allowed = || host.pcpu_ids().filter(|p| host.may_run(v, *p));
        allowed()
            .find(|p| host.topology.place(*p).node == node)
            .or_else(|| allowed().next())
            .map_or(prev, |p| p.idx())
    }

    /// Soft affinity (`[[vm]] cpus_soft`): Linux has none; ours, so that one scenario means the
    /// same under cfs and credit, is "an idle preferred pCPU first": the previous pCPU if it is
    /// preferred and idle, else the first idle preferred pCPU; None leaves the 3.2 path to decide.
    fn soft_idle(&self, ctx: &PolicyCtx, v: VcpuId, prev: usize) -> Option<usize> {
        let host = &ctx.host;
        if !host.has_soft(v) {
            return None;
        }
        let idle = |p: PcpuId| self.rqs[p.idx()].nr_running == 0;
        let prev_id = PcpuId(prev as u32);
        if host.prefers(v, prev_id) && idle(prev_id) {
            return Some(prev);
        }
        host.pcpu_ids().find(|p| host.prefers(v, *p) && idle(*p)).map(|p| p.idx())
    }

    /// The placement's view of the host for `v`: run-queue loads, and which pCPUs hold one of
    /// its siblings (queued or running).
    fn placement_view(&self, ctx: &PolicyCtx, v: VcpuId) -> (Vec<u64>, Vec<bool>) {
        let loads = self.rqs.iter().map(|rq| rq.load).collect();
        let mut holds_sibling = vec![false; self.rqs.len()];
        for &s in ctx.host.vm_of(v).vcpus.iter().filter(|&&s| s != v) {
            if let Some(p) = self.se[s.idx()].rq {
                holds_sibling[p] = true;
            }
        }
        (loads, holds_sibling)
    }

    /// The pCPU a (re)entering vCPU joins under `balance` / `lc-balance`; None under `default`,
    /// whose choice is select_task_rq_fair's.
    fn place(&self, ctx: &PolicyCtx, v: VcpuId) -> Option<usize> {
        if self.placement == Placement::Default {
            return None;
        }
        let (loads, holds_sibling) = self.placement_view(ctx, v);
        let (pool, usable) = self.pool_masks(ctx, Some(v));
        let view = LoadView { loads: &loads, holds_sibling: &holds_sibling, pool: &pool, usable: &usable };
        placement::select_waking(self.placement, &view, ctx.host.vcpu(v).last_pcpu.idx())
    }

    /// Which pCPUs are the pool's, and which of them `v` may run on (all of the pool's for None).
    fn pool_masks(&self, ctx: &PolicyCtx, v: Option<VcpuId>) -> (Vec<bool>, Vec<bool>) {
        let host = &ctx.host;
        let pool: Vec<bool> = (0..self.rqs.len()).map(|p| host.owns_pcpu(PcpuId(p as u32))).collect();
        let usable = match v {
            None => pool.clone(),
            Some(v) => (0..self.rqs.len()).map(|p| host.may_run(v, PcpuId(p as u32))).collect(),
        };
        (pool, usable)
    }

    /// May the load balancer move queued `v` to `dest` under the placement? `loads` are the
    /// run-queue loads (only read by `lc-balance`).
    fn may_move(&self, ctx: &PolicyCtx, v: VcpuId, dest: usize, loads: &[u64], pool: &[bool]) -> bool {
        // can_migrate_task: "!cpumask_test_cpu(this_cpu, tsk_cpus_allowed(p))" -> pinned.
        if !ctx.host.may_run(v, PcpuId(dest as u32)) {
            return false;
        }
        if self.placement == Placement::Default {
            return true;
        }
        let dest_holds_sibling =
            ctx.host.vm_of(v).vcpus.iter().any(|&s| s != v && self.se[s.idx()].rq == Some(dest));
        placement::may_move_to(self.placement, loads, pool, dest, dest_holds_sibling)
    }

    /// wake_affine (3.2, non-sync wakeup: KVM's kvm_vcpu_kick uses wake_up_interruptible):
    /// pull the wakee to the waker's pCPU if that leaves it no more loaded than the previous
    /// pCPU plus half the domain's imbalance margin, or if both pCPUs are nearly empty.
    fn wake_affine(&self, v: VcpuId, this: usize, prev: usize) -> bool {
        let this_load = self.rqs[this].load;
        let prev_load = self.rqs[prev].load;
        let w = self.weight[v.idx()];
        let balanced = this_load == 0 || 100 * (this_load + w) <= (100 + (self.imbalance_pct - 100) / 2) * prev_load;
        // cpu_avg_load_per_task(this_cpu)
        let per_task = this_load / self.rqs[this].nr_running.max(1);
        balanced || (this_load <= prev_load && this_load + prev_load <= per_task)
    }

    /// select_idle_sibling (3.2): the target itself when it is the waker's or the previous pCPU
    /// and idle, else the first idle pCPU sharing its last-level cache, else the target.
    fn select_idle_sibling(&self, ctx: &PolicyCtx, v: VcpuId, target: usize, cpu: usize, prev: usize) -> usize {
        let idle = |p: usize| self.rqs[p].nr_running == 0;
        if (target == cpu || target == prev) && idle(target) {
            return target;
        }
        let host = &ctx.host;
        let topo = host.topology;
        let socket = topo.place(PcpuId(target as u32)).socket;
        (0..self.rqs.len())
            .find(|&p| idle(p) && topo.place(PcpuId(p as u32)).socket == socket && host.may_run(v, PcpuId(p as u32)))
            .unwrap_or(target)
    }

    /// check_preempt_wakeup: preempt curr if the wakee is ahead by more than the granularity.
    fn check_preempt_wakeup(&mut self, ctx: &mut PolicyCtx, v: VcpuId, p: usize) {
        match self.rqs[p].curr {
            None => self.resched(ctx, p),
            Some(c) => {
                self.update_curr(ctx, p);
                if self.wakeup_preempt_entity(c, v) == 1 {
                    self.resched(ctx, p);
                }
            }
        }
    }

    /// check_preempt_tick.
    fn check_preempt_tick(&mut self, ctx: &mut PolicyCtx, p: usize) {
        let Some(c) = self.rqs[p].curr else { return };
        if self.rqs[p].tree.is_empty() {
            return;
        }
        let ideal = self.slice(c, p);
        let e = &self.se[c.idx()];
        let ran = e.sum_exec - e.slice_start_runtime;
        if ran > ideal {
            self.resched(ctx, p);
            return;
        }
        if ran < self.min_gran {
            return;
        }
        let left = self.rqs[p].tree.first().expect("non-empty").0;
        if e.vruntime > left && e.vruntime - left > ideal {
            self.resched(ctx, p);
        }
    }

    /// Pull one queued vCPU to `this` from the busiest run queue if that shrinks the imbalance
    /// (load_balance / detach_tasks). Cache-hot vCPUs stay unless `this` is idle. When the
    /// placement bars every queued vCPU of the busiest queue from `this`, the next busiest is
    /// tried, as load_balance retries without the busiest CPU when all its tasks are pinned
    /// (`all_pinned` -> `goto redo`, fair.c 3.2); under `default` nothing is barred.
    fn balance(&mut self, ctx: &mut PolicyCtx, this: usize) -> bool {
        let now = ctx.now();
        let this_load = self.rqs[this].load;
        let idle = self.rqs[this].nr_running == 0;
        let view_ctx: &PolicyCtx = ctx;
        // Only a non-default placement can bar every candidate and need the loads; the default
        // path allocates nothing (newidle balancing runs at every halt).
        let loads: Vec<u64> =
            if self.placement == Placement::Default { Vec::new() } else { self.rqs.iter().map(|rq| rq.load).collect() };
        let pool: Vec<bool> = if self.placement == Placement::Default { Vec::new() } else { self.pool_masks(view_ctx, None).0 };
        let mut barred_queues: Vec<usize> = Vec::new();
        loop {
            let busiest = (0..self.rqs.len())
                .filter(|&q| q != this && !self.rqs[q].tree.is_empty() && !barred_queues.contains(&q) && view_ctx.host.owns_pcpu(PcpuId(q as u32)))
                .max_by_key(|&q| (self.rqs[q].load, std::cmp::Reverse(q)));
            let Some(b) = busiest else { return false };
            let b_load = self.rqs[b].load;
            if b_load * 100 <= this_load * self.imbalance_pct || b_load <= this_load {
                return false;
            }
            let gap = b_load - this_load;
            let mut all_barred = true;
            let candidate = self.rqs[b]
                .tree
                .iter()
                .map(|(_, v)| *v)
                .filter(|&v| {
                    // Soft affinity (ours, as credit's steal does): a vCPU is not pulled off a
                    // preferred run queue whose pCPU will pick it up itself (nothing runs there).
                    let host = &view_ctx.host;
                    let leaves_soft = host.has_soft(v) && !host.prefers(v, PcpuId(this as u32)) && host.prefers(v, PcpuId(b as u32));
                    let allowed = self.may_move(view_ctx, v, this, &loads, &pool) && !(leaves_soft && self.rqs[b].curr.is_none());
                    all_barred &= !allowed;
                    allowed
                })
                .filter(|v| {
                    let w = self.weight[v.idx()];
                    let shrinks = (gap as i128 - 2 * w as i128).unsigned_abs() < gap as u128;
                    let hot = now.saturating_sub(self.se[v.idx()].last_ran) < self.migration_cost;
                    (shrinks || idle) && (idle || !hot)
                })
                .min_by_key(|v| ((gap as i128 - 2 * self.weight[v.idx()] as i128).unsigned_abs(), v.0));
            if let Some(v) = candidate {
                self.migrate(v, this);
                return true;
            }
            if !all_barred {
                return false;
            }
            barred_queues.push(b);
        }
    }

    /// Under `balance`, siblings never share a run queue while the VM has no more vCPUs than
    /// the host has pCPUs (beyond that, stacking is unavoidable).
    fn check_no_stacked_siblings(&self, host: &crate::hypervisor::policy::HostView) -> Result<(), String> {
        for vm in host.pool_vms().filter(|vm| vm.vcpus.len() <= host.npcpus()) {
            let mut holder: Vec<Option<VcpuId>> = vec![None; self.rqs.len()];
            for &s in &vm.vcpus {
                let Some(p) = self.se[s.idx()].rq else { continue };
                if let Some(other) = holder[p].replace(s) {
                    return Err(format!(
                        "cfs: placement = \"balance\" stacked vCPUs {other} and {s} of VM {:?} on pCPU {p}",
                        vm.name
                    ));
                }
            }
        }
        Ok(())
    }

    /// Start every pCPU's tick, once.
    fn start_ticks(&mut self, ctx: &mut PolicyCtx) {
        if !self.ticks_started {
            self.ticks_started = true;
            for p in ctx.host.pcpu_ids().map(|p| p.idx()).collect::<Vec<_>>() {
                // The tick timer's key is its pCPU (below UVF_TIMER).
                let timer = ctx.init_timer(p as u64);
                self.rqs[p].tick_timer = Some(timer);
                // Stagger ticks so pCPUs don't all balance at the same instant.
                let offset = self.tick * (p as u64 + 1) / (self.rqs.len() as u64 + 1);
                ctx.set_timer(&timer, ctx.now() + offset);
            }
        }
    }

    /// kvm_vcpu_on_spin: try to yield to a preempted sibling, round robin from the last boosted.
    fn directed_yield(&mut self, ctx: &mut PolicyCtx, v: VcpuId) -> bool {
        let vm = ctx.host.vcpu(v).vm;
        let siblings = &ctx.host.vm(vm).vcpus;
        if siblings.len() < 2 {
            return false;
        }
        let me = ctx.host.vcpu(v).pcpu.expect("a yielding vCPU is running").idx();
        let start = self.last_boosted[vm.idx()];
        let mut failures = 0;
        for i in 1..=siblings.len() {
            let idx = (start + i) % siblings.len();
            let target = siblings[idx];
            let info = ctx.host.vcpu(target);
            if target == v || info.state != VcpuState::Runnable || !info.preempted {
                continue;
            }
            let Some(tp) = self.se[target.idx()].rq else { continue };
            // yield_to: -ESRCH when both run queues hold a single task.
            if self.rqs[me].nr_running == 1 && self.rqs[tp].nr_running == 1 {
                failures += 1;
                if failures >= DIRECTED_YIELD_TRIES {
                    return false;
                }
                continue;
            }
            // yield_to_task_fair: target becomes the next buddy on its rq, the yielder the
            // skip buddy on its own; both run queues reschedule.
            self.rqs[tp].next_buddy = Some(target);
            self.rqs[me].skip_buddy = Some(v);
            self.last_boosted[vm.idx()] = idx;
            self.resched(ctx, tp);
            self.resched(ctx, me);
            return true;
        }
        false
    }
}

impl Policy for Cfs {
    fn name(&self) -> &'static str {
        "cfs"
    }

    /// The VM's cgroup `cpu.shares` (`sched_group_set_shares`): a new weight reweights its
    /// inserted vCPUs, moving their run queues' load with them (`reweight_entity`).
    fn adjust(&mut self, ctx: &mut PolicyCtx, vm: VmId, sched: &VmSched) {
        if self.vms.len() <= vm.idx() {
            self.vms.resize(vm.idx() + 1, CfsVm::default());
        }
        let old = self.vms[vm.idx()].weight;
        self.vms[vm.idx()] = CfsVm { weight: sched.weight, uvf: sched.uvf };
        self.set_bandwidth(ctx, vm, sched.cap);
        if old != sched.weight && old != 0 {
            let w = self.vcpu_weight(ctx, vm);
            for &v in &ctx.host.vm(vm).vcpus {
                if let Some(p) = self.se[v.idx()].rq {
                    self.rqs[p].load = self.rqs[p].load - self.weight[v.idx()] + w;
                }
                self.weight[v.idx()] = w;
            }
        }
    }

    fn insert_vcpu(&mut self, ctx: &mut PolicyCtx, v: VcpuId) {
        self.start_ticks(ctx);
        let vm = ctx.host.vcpu(v).vm;
        self.weight[v.idx()] = self.vcpu_weight(ctx, vm);
        // A vCPU thread's first wakeup goes through the placement too.
        let p = self.place(ctx, v).unwrap_or(ctx.host.vcpu(v).last_pcpu.idx());
        // A new task starts one slice late (START_DEBIT).
        let debit = Self::vdelta(self.slice(v, p).max(self.min_gran), self.weight[v.idx()]);
        self.se[v.idx()].vruntime = self.rqs[p].min_vruntime + debit;
        self.enqueue(v, p);
        if self.exhausted(vm) {
            // check_enqueue_throttle: its cgroup has no run time.
            self.throttle_one(v, p);
            return;
        }
        self.resched(ctx, p);
    }

    fn wake(&mut self, ctx: &mut PolicyCtx, v: VcpuId, waker: Option<PcpuId>) {
        let p = self.select_pcpu(ctx, v, waker);
        let last = ctx.host.vcpu(v).last_pcpu.idx();
        // Keep the sleeper's lag relative to the queue it left, then place on the new one.
        if p != last {
            let e = &mut self.se[v.idx()];
            e.vruntime = e.vruntime.saturating_sub(self.rqs[last].min_vruntime) + self.rqs[p].min_vruntime;
        }
        self.place_waking(v, p);
        self.enqueue(v, p);
        if self.vcpu_exhausted(ctx, v) {
            // enqueue_task_fair onto a throttled cfs_rq: runnable, but not until the refill.
            self.throttle_one(v, p);
            self.flush_throttles(ctx, None);
            return;
        }
        if !self.queued_urgent(ctx, v, p) {
            self.check_preempt_wakeup(ctx, v, p);
        }
        self.flush_throttles(ctx, None);
    }

    fn sleep(&mut self, ctx: &mut PolicyCtx, v: VcpuId) {
        if let Some(p) = self.se[v.idx()].rq {
            if self.rqs[p].curr == Some(v) {
                self.update_curr(ctx, p);
            }
            self.se[v.idx()].last_ran = ctx.now();
            self.dequeue(v);
            self.rqs[p].need_resched = true;
            self.uvf_sleep(v);
            self.flush_throttles(ctx, Some(p));
            return;
        }
        self.uvf_sleep(v);
    }

    /// `select_task_rq` for a task entering this pool (no waker): the 3.2 wake path from its
    /// previous pCPU, within its cpumask.
    fn pick_pcpu(&mut self, ctx: &mut PolicyCtx, v: VcpuId) -> Option<PcpuId> {
        Some(PcpuId(self.select_pcpu(ctx, v, None) as u32))
    }

    /// `set_cpus_allowed_ptr` (3.2 core.c): a queued vCPU on a run queue it may no longer use
    /// moves now (`__migrate_task`); a running one is preempted and moves when it is put back
    /// (`migration_cpu_stop`); a halted one goes through `select_fallback_rq` when it wakes.
    fn adjust_affinity(&mut self, ctx: &mut PolicyCtx, v: VcpuId) {
        let Some(p) = self.se[v.idx()].rq else { return };
        if ctx.host.may_run(v, PcpuId(p as u32)) {
            return;
        }
        if self.rqs[p].curr == Some(v) {
            self.rqs[p].need_resched = true;
            ctx.reschedule(PcpuId(p as u32));
        } else if self.se[v.idx()].queued {
            let to = self.fallback_pcpu(ctx, v, p);
            self.migrate(v, to);
            self.check_preempt_wakeup(ctx, v, to);
        }
    }

    /// The vCPU thread leaves this pool (its cpuset changes: `sched_move_task` dequeues it from
    /// its old run queue, as a sleep does). The engine has taken it off its pCPU already.
    fn remove_vcpu(&mut self, ctx: &mut PolicyCtx, v: VcpuId) {
        self.sleep(ctx, v);
    }

    fn yield_vcpu(&mut self, ctx: &mut PolicyCtx, v: VcpuId, reason: YieldReason) {
        match reason {
            YieldReason::PauseLoop => {
                self.uvf_cancel(ctx, v);
                if self.directed_yield {
                    self.directed_yield(ctx, v);
                } else if let Some(p) = self.se[v.idx()].rq {
                    // yield_task_fair: become the skip buddy.
                    self.rqs[p].skip_buddy = Some(v);
                    self.resched(ctx, p);
                }
            }
        }
        self.flush_throttles(ctx, None);
    }

    fn do_schedule(&mut self, ctx: &mut PolicyCtx, pcpu: PcpuId) -> Decision {
        let p = pcpu.idx();
        let host_curr = ctx.host.pcpu(pcpu).current;
        let still_running = host_curr.is_some_and(|c| ctx.host.vcpu(c).state == VcpuState::Running);
        if still_running && !self.rqs[p].need_resched {
            return Decision::run(host_curr.expect("checked"), None);
        }
        self.rqs[p].need_resched = false;
        self.update_curr(ctx, p);
        self.flush_throttles(ctx, Some(p));
        let mut prev = host_curr.filter(|_| still_running);
        // put_prev_entity: a still-runnable curr goes back into the tree, unless its cgroup ran
        // out of run time (check_cfs_rq_runtime -> throttle_cfs_rq).
        if let Some(c) = self.rqs[p].curr.take() {
            if still_running && host_curr == Some(c) {
                self.se[c.idx()].last_ran = ctx.now();
                let e = &mut self.se[c.idx()];
                e.queued = true;
                self.rqs[p].tree.insert((e.vruntime, c));
                if self.vcpu_exhausted(ctx, c) {
                    self.throttle_one(c, p);
                    prev = None;
                } else if !ctx.host.may_run(c, pcpu) {
                    // Its affinity no longer allows this pCPU (adjust_affinity): it moves now.
                    let to = self.fallback_pcpu(ctx, c, p);
                    self.migrate(c, to);
                    self.check_preempt_wakeup(ctx, c, to);
                    prev = None;
                }
            }
        }
        if self.rqs[p].tree.is_empty() {
            // newidle balance
            self.balance(ctx, p);
        }
        let next = self.pick_urgent(ctx, p, prev).or_else(|| self.pick_next(p));
        self.start_urgent_tslice(ctx, p, next);
        let rq = &mut self.rqs[p];
        rq.skip_buddy = None;
        if rq.next_buddy == next {
            rq.next_buddy = None;
        }
        match next {
            Some(n) => {
                self.take_from_tree(n);
                let now = ctx.now();
                let e = &mut self.se[n.idx()];
                e.exec_start = now;
                e.slice_start_runtime = e.sum_exec;
                self.rqs[p].curr = Some(n);
                self.update_min_vruntime(p);
                Decision::run(n, None)
            }
            None => Decision::idle(),
        }
    }

    fn on_timer(&mut self, ctx: &mut PolicyCtx, key: u64) {
        if key >= BW_TIMER {
            self.period_timer(ctx, VmId((key - BW_TIMER) as u32));
            return;
        }
        if key >= UVF_TIMER {
            self.uvf_timer(ctx, (key - UVF_TIMER) as usize);
            self.flush_throttles(ctx, None);
            return;
        }
        let p = key as usize;
        let timer = self.rqs[p].tick_timer.expect("a tick fires only after start_ticks made it");
        ctx.set_timer(&timer, ctx.now() + self.tick);
        self.update_curr(ctx, p);
        self.check_preempt_tick(ctx, p);
        let idle = self.rqs[p].nr_running == 0;
        let interval = if idle { self.balance_interval } else { self.balance_interval * self.busy_factor };
        if ctx.now().saturating_sub(self.rqs[p].last_balance) >= interval {
            self.rqs[p].last_balance = ctx.now();
            if self.balance(ctx, p) && (idle || self.rqs[p].curr.is_none()) {
                self.resched(ctx, p);
            }
        }
        self.flush_throttles(ctx, None);
    }

    /// The pCPU leaves the pool (cpuset shrunk / CPU offlined: `migrate_tasks` in 3.2's
    /// `CPU_DYING`): its running vCPU (already switched out by the engine) and every vCPU queued
    /// on it move, keeping their lag, to the pCPU `select_fallback_rq` gives; its tick stops.
    fn remove_pcpu(&mut self, ctx: &mut PolicyCtx, pcpu: PcpuId) {
        let p = pcpu.idx();
        self.update_curr(ctx, p);
        if let Some(c) = self.rqs[p].curr {
            self.se[c.idx()].last_ran = ctx.now();
        }
        let mut moving: Vec<VcpuId> = self.rqs[p].curr.into_iter().collect();
        moving.extend(self.rqs[p].tree.iter().map(|(_, v)| *v));
        for v in moving {
            let to = self.fallback_pcpu(ctx, v, ctx.host.vcpu(v).last_pcpu.idx());
            if self.rqs[p].curr == Some(v) {
                // Put it back in the tree first, as put_prev_entity would.
                let e = &mut self.se[v.idx()];
                e.queued = true;
                self.rqs[p].tree.insert((e.vruntime, v));
                self.rqs[p].curr = None;
            }
            if self.vcpu_exhausted(ctx, v) {
                // Its cgroup has no run time: it waits, throttled, for the refill on `to`.
                self.throttle_one(v, to);
                continue;
            }
            self.migrate(v, to);
            self.check_preempt_wakeup(ctx, v, to);
        }
        let rq = &mut self.rqs[p];
        rq.need_resched = false;
        rq.next_buddy = None;
        rq.skip_buddy = None;
        // scheduler_tick stops with the CPU.
        if let Some(timer) = rq.tick_timer {
            ctx.stop_timer(&timer);
        }
        self.flush_throttles(ctx, Some(p));
    }

    /// The pCPU joins the pool, idle; its tick starts.
    fn add_pcpu(&mut self, ctx: &mut PolicyCtx, pcpu: PcpuId) {
        let p = pcpu.idx();
        let min_vruntime = self.rqs[p].min_vruntime;
        let tick_timer = self.rqs[p].tick_timer;
        self.rqs[p] = RunQueue { min_vruntime, last_balance: ctx.now(), tick_timer, ..RunQueue::default() };
        if self.ticks_started {
            let timer = *self.rqs[p].tick_timer.get_or_insert_with(|| ctx.init_timer(p as u64));
            ctx.set_timer(&timer, ctx.now() + self.tick);
        }
    }

    fn ipi_sent(&mut self, ctx: &mut PolicyCtx, from: VcpuId, to: VcpuId, kind: IpiKind) {
        self.uvf_ipi_sent(ctx, from, to, kind);
        self.flush_throttles(ctx, None);
    }

    fn ipi_send_started(&mut self, ctx: &mut PolicyCtx, v: VcpuId) {
        self.uvf_ipi_send_started(ctx, v);
        self.flush_throttles(ctx, None);
    }

    fn ipi_handled(&mut self, ctx: &mut PolicyCtx, v: VcpuId, kind: IpiKind) {
        self.uvf_ipi_handled(ctx, v, kind);
        self.flush_throttles(ctx, None);
    }

    fn check(&self, host: &crate::hypervisor::policy::HostView) -> Result<(), String> {
        for (p, rq) in self.rqs.iter().enumerate() {
            let mut load = 0;
            let mut nr = 0;
            for (i, e) in self.se.iter().enumerate() {
                if e.rq == Some(p) {
                    load += self.weight[i];
                    nr += 1;
                    let in_tree = rq.tree.contains(&(e.vruntime, VcpuId(i as u32)));
                    if in_tree != e.queued {
                        return Err(format!("cfs: vCPU {i} queued={} but in tree={in_tree}", e.queued));
                    }
                    if e.queued && host.vcpus[i].state != VcpuState::Runnable {
                        return Err(format!("cfs: vCPU {i} is queued on pCPU {p} but {:?}", host.vcpus[i].state));
                    }
                }
            }
            if load != rq.load || nr != rq.nr_running {
                return Err(format!("cfs: pCPU {p} load {} / nr {} but entities sum to {load} / {nr}", rq.load, rq.nr_running));
            }
        }
        if self.placement == Placement::Balance {
            self.check_no_stacked_siblings(host)?;
        }
        for (i, info) in host.vcpus.iter().enumerate().filter(|(_, info)| host.owns_vcpu(info.id)) {
            let e = &self.se[i];
            if info.state == VcpuState::Runnable && !e.queued && !e.throttled {
                return Err(format!("cfs: runnable vCPU {i} is in no run queue"));
            }
            if e.throttled && (e.queued || e.rq.is_some() || info.state != VcpuState::Runnable) {
                return Err(format!("cfs: throttled vCPU {i} is on a run queue or {:?}", info.state));
            }
            if e.queued && self.exhausted(info.vm) && self.pending_throttle.is_empty() {
                return Err(format!("cfs: vCPU {i} is queued but its VM has no run time left"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfs(npcpus: u32) -> Cfs {
        let params = Params::defaults(&CfsKind.params());
        Cfs::new(&params, HostShape { npcpus, nvcpus: 4, nvms: 1, uvf: None })
    }

    fn load(c: &mut Cfs, p: usize, tasks: u64) {
        c.rqs[p].load = tasks * NICE_0_LOAD;
        c.rqs[p].nr_running = tasks;
    }

    #[test]
    fn wake_affine_pulls_the_wakee_only_when_the_wakers_pcpu_is_not_busier_than_prev_allows() {
        let mut c = cfs(4);
        let v = VcpuId(0);
        // Waker alone on pCPU 0; wakee's previous pCPU 1 runs two tasks: 2048 <= 1.12 x 2048.
        load(&mut c, 0, 1);
        load(&mut c, 1, 2);
        assert!(c.wake_affine(v, 0, 1));
        // Equal loads of one task each: 2048 > 1.12 x 1024, the wakee stays.
        load(&mut c, 1, 1);
        assert!(!c.wake_affine(v, 0, 1));
        // An empty waker pCPU always attracts (this_load == 0).
        load(&mut c, 0, 0);
        assert!(c.wake_affine(v, 0, 1));
        // A larger imbalance_pct widens the margin: at 500, 2048 <= 3 x 1024.
        load(&mut c, 0, 1);
        c.imbalance_pct = 500;
        assert!(c.wake_affine(v, 0, 1));
    }
}
