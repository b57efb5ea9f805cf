//! Xen's Credit1 scheduler, read from xen/common/sched/credit.c (Xen 4.18+ HEAD, with the 1 ms
//! load-balance ratelimit and yielded-vCPUs-are-not-stolen patches) and summarised in
//! reference/scheduler-facts.md section 1. Function names in comments are the C functions each
//! piece models.
//!
//! In one paragraph: every pCPU has its own run queue ordered by priority, FIFO within a priority
//! (BOOST > UNDER > OVER > idle). Every 30 ms the master pCPU (`csched_acct`) hands out
//! `300 x npcpus` credits to the *active* vCPUs in proportion to their domain's weight and sets
//! each one's priority from the sign of its credit. Every 10 ms, each busy pCPU (`csched_tick`)
//! burns the running vCPU's credit (10 per ms run), drops its BOOST, makes it active if it was not,
//! and re-sorts its run queue after a new accounting period. A vCPU waking from a block is BOOSTed
//! if it was UNDER and may preempt (`__runq_tickle`). `csched_schedule` runs the head of the local
//! queue for a 30 ms slice (or keeps the current vCPU if it has run less than the 1 ms ratelimit)
//! and, if the best local candidate is OVER or idle, steals the first strictly better queued vCPU
//! from a peer (`csched_load_balance`).
//!
//! Caps (`sdom->cap`, percent of one pCPU) come from the VM's own `[[vm]] cap` (`xl sched-credit
//! -c`, stored by `csched_dom_cntl`) or, for a VM without one, from `work_conserving = false`,
//! which caps every domain at its weight's share of the host, as seed 004 section 6.2 configures it
//! ("the CPU time obtained by the VM is strictly in proportion to its weight"). Either way
//! `csched_acct` limits a capped domain's credit to `cap` percent of a pCPU's period and *parks*
//! (pauses) a vCPU whose credit falls below minus its share of that, until its credit is positive
//! again. The code is the same in Xen 4.7 (`xen/common/sched_credit.c`, RELEASE-4.7.0) and today
//! (`xen/common/sched/credit.c`), except that 4.7 cleared `CSCHED_FLAG_VCPU_PARKED` *before*
//! `vcpu_unpause` (its comment asks for after), so an unparked vCPU could be boosted by the wake;
//! we follow today's order: an unparked vCPU is never boosted.
//!
//! Simplifications (each a deliberate departure from credit.c, with its reason):
//! - Hard and soft affinity follow credit.c's two balance steps (private.h
//!   `for_each_affinity_balance_step`: `BALANCE_SOFT_AFFINITY` first, only for a vCPU that
//!   `has_soft_affinity`, then `BALANCE_HARD_AFFINITY`) in `_csched_cpu_pick`, `__runq_tickle` and
//!   `csched_load_balance` / `csched_runq_steal`; the masks are read through the host view
//!   (`may_run`, `prefers`, `has_soft`), so with full masks every loop reduces to its hard step and
//!   behaves exactly as before affinity existed. Xen moves a vCPU whose affinity changed at once
//!   (schedule.c `sched_set_affinity` -> `vcpu_migrate`); here affinity is changed between policy
//!   calls without a hook, so the move happens at the vCPU's next contact with the policy (its
//!   pCPU's `do_schedule`, its wake, its tick).
//! - No tasklets, so the idle unit never runs with BOOST.
//! - `last_tickle_cpu` is one rotor for the host instead of one per pCPU that executes the wake:
//!   the engine does not say on which pCPU a wake-up is processed.
//! - Run-queue trylocks never fail (the engine is sequential).
//! - The tick timer runs only while a pCPU runs a vCPU (credit.c also arms it at boot on idle pCPUs,
//!   where it does nothing useful until the pCPU first runs a vCPU).
//! - The pCPUs booted long before the VMs start: the load-balance ratelimit does not hold back the
//!   first balance (credit.c sets `last_load_balance` at boot).
//! - `insert_vcpu` is vCPU creation plus the domain unpause that wakes it: `csched_res_pick` places
//!   it (and sets `CSCHED_FLAG_UNIT_MIGRATING`, so this first wake is not boosted), then
//!   `csched_unit_wake` queues it and tickles.
//! - A running vCPU flagged `_VPF_migrating` (by the tick's `_csched_cpu_pick`) is moved inside the
//!   `do_schedule` that takes it off its pCPU (schedule.c's `vcpu_migrate` runs right after the
//!   context switch), instead of a separate migration step.
//!
//! The urgent-vCPU-first overlay of seed 000 (`[host.uvf]`) rides on top when configured:
//! `credit/urgent.rs`.

mod urgent;

use super::{HostShape, PolicyKind};
use crate::hypervisor::policy::{Decision, HostView, IpiKind, Policy, PolicyCtx, Timer, VcpuState, VmSched, YieldReason};
use crate::hypervisor::uvf::overlay::UrgentBase;
use crate::hypervisor::uvf::{Uvf, UvfVm};
use crate::ids::{PcpuId, VcpuId, VmId};
use crate::params::{ParamSpec, Params};
use crate::time::{Nanos, MS, SEC, US};

// ---- Constants of xen/common/sched/credit.c and xen/common/sched/private.h ----

/// `CSCHED_DEFAULT_TSLICE_MS`: 30 ms timeslice; `XEN_SYSCTL_CSCHED_TSLICE_MIN/MAX` bound it to 1..1000 ms.
const DEFAULT_TSLICE: Nanos = 30 * MS;
const MIN_TSLICE: Nanos = MS;
const MAX_TSLICE: Nanos = 1000 * MS;
/// `CSCHED_TICKS_PER_TSLICE`: the accounting tick runs 3 times per timeslice (every 10 ms).
const TICKS_PER_TSLICE: u64 = 3;
/// `CSCHED_CREDITS_PER_MSEC`: a running vCPU burns 10 credits per ms.
const CREDITS_PER_MSEC: u64 = 10;
/// `SCHED_DEFAULT_RATELIMIT_US` (private.h): 1000 us; `XEN_SYSCTL_SCHED_RATELIMIT_MAX` 500 ms.
const DEFAULT_RATELIMIT: Nanos = 1000 * US;
const MAX_RATELIMIT: Nanos = 500 * MS;
/// `CSCHED_MIN_TIMER` = `XEN_SYSCTL_SCHED_RATELIMIT_MIN`: never set a slice timer shorter than 100 us.
const MIN_TIMER: Nanos = 100 * US;
/// `CSCHED_DEFAULT_LOAD_BALANCE_RATELIMIT_US` (1 ms) and `CSCHED_MAX_LOAD_BALANCE_RATELIMIT_US` (1 s).
const DEFAULT_LOAD_BALANCE_RATELIMIT: Nanos = 1000 * US;
const MAX_LOAD_BALANCE_RATELIMIT: Nanos = SEC;
/// `vcpu_migration_delay` defaults to 0 (no vCPU is ever cache-hot);
/// `XEN_SYSCTL_CSCHED_MGR_DLY_MAX_US` is 100 ms.
const MAX_MIGRATION_DELAY: Nanos = 100 * MS;

/// Priorities (`CSCHED_PRI_*`): higher runs first.
type Pri = i32;
/// Time-share vCPU waking up from a block.
const PRI_BOOST: Pri = 0;
/// Time-share vCPU with credit left.
const PRI_UNDER: Pri = -1;
/// Time-share vCPU that has overspent.
const PRI_OVER: Pri = -2;
/// The idle unit; in this model, an empty run queue.
const PRI_IDLE: Pri = -64;

/// Timer kinds, in the top 4 bits of a timer key; per-pCPU timers carry their pCPU below.
/// `csched_acct` on the master pCPU (`prv->master_ticker`).
const TIMER_ACCT: u64 = 1;
/// `csched_tick` of one pCPU (`spc->ticker`).
const TIMER_TICK: u64 = 2;
/// The UVF overlay's per-pCPU timers (`credit/urgent.rs`).
const TIMER_UVF: u64 = 3;
const KIND_SHIFT: u32 = 60;
const PCPU_MASK: u64 = (1 << KIND_SHIFT) - 1;

/// The registry entry.
pub struct CreditKind;

impl PolicyKind for CreditKind {
    fn name(&self) -> &'static str {
        "credit"
    }
    fn describe(&self) -> &'static str {
        "Xen Credit1 (xen/common/sched/credit.c): per-pCPU run queues ordered BOOST > UNDER > OVER, \
         FIFO within a priority; 300 credits per pCPU every 30 ms split by domain weight over active \
         vCPUs, 10 credits burned per ms run at each 10 ms tick; BOOST for vCPUs waking from a block; \
         30 ms slices with a 1 ms ratelimit; pCPUs with only OVER or no work steal from peers."
    }
    fn params(&self) -> Vec<ParamSpec> {
        vec![
            ParamSpec::duration(
                "tslice",
                DEFAULT_TSLICE,
                "timeslice and accounting period (sched_credit_tslice_ms, CSCHED_DEFAULT_TSLICE_MS = 30 ms \
                 in xen/common/sched/credit.c); the tick is a third of it",
            )
            .range(MIN_TSLICE as f64, MAX_TSLICE as f64),
            ParamSpec::duration(
                "ratelimit",
                DEFAULT_RATELIMIT,
                "a vCPU that has run less than this is not preempted, except when it yields \
                 (sched_ratelimit_us, SCHED_DEFAULT_RATELIMIT_US = 1000 us in xen/common/sched/private.h); \
                 0 disables it as in Xen before 4.2; capped at tslice",
            )
            .range(0.0, MAX_RATELIMIT as f64),
            ParamSpec::duration(
                "load_balance_ratelimit",
                DEFAULT_LOAD_BALANCE_RATELIMIT,
                "minimum time between two work-stealing attempts of one pCPU (load-balance-ratelimit, \
                 CSCHED_DEFAULT_LOAD_BALANCE_RATELIMIT_US = 1000 us, Xen 4.18); 0 steals at every chance \
                 as older Xen did",
            )
            .range(0.0, MAX_LOAD_BALANCE_RATELIMIT as f64),
            ParamSpec::duration(
                "migration_delay",
                0,
                "a vCPU that ran less than this long ago is cache-hot and is not stolen \
                 (vcpu_migration_delay, default 0 in xen/common/sched/credit.c)",
            )
            .range(0.0, MAX_MIGRATION_DELAY as f64),
            ParamSpec::boolean(
                "work_conserving",
                true,
                "false caps every domain at its weight's share of the host (Xen's non-work-conserving \
                 mode, sdom->cap = 100 x pCPUs x weight / total weight of all VMs, as seed 004 section 6.2 \
                 configures it); capped-out vCPUs are parked by csched_acct until their credit is positive",
            ),
        ]
    }
    fn supports_pool_changes(&self) -> bool {
        true
    }
    fn carries_uvf(&self) -> bool {
        true
    }
    fn honours_cap(&self) -> bool {
        true
    }
    fn build(&self, params: &Params, host: HostShape) -> Box<dyn Policy> {
        Box::new(Credit::new(CreditConfig::from_params(params), host))
    }
    /// Xen's PLE window is fixed: VMX `ple_window` 4096 without grow/shrink (arch/x86/hvm/vmx/vmx.c).
    fn ple_grow(&self) -> u64 {
        1
    }
}

/// Tunables and the values `__csched_set_tslice` derives from them.
#[derive(Clone, Debug, PartialEq)]
struct CreditConfig {
    tslice: Nanos,
    ratelimit: Nanos,
    load_balance_ratelimit: Nanos,
    migration_delay: Nanos,
    /// False: every domain is capped at its weight's share of the host (`sdom->cap`).
    work_conserving: bool,
    /// Tick period: tslice / `ticks_per_tslice` (3, or 1 for slices under 3 ms).
    tick_period: Nanos,
    /// `credits_per_tslice` = `CREDITS_PER_MSEC` x tslice in ms: the credit of one pCPU per period,
    /// and the bound of a vCPU's credit (floor -300, halving above +300 by default).
    credits_per_tslice: i64,
}

impl CreditConfig {
    fn from_params(params: &Params) -> Self {
        let mut cfg = Self::new(
            params.duration("tslice"),
            params.duration("ratelimit"),
            params.duration("load_balance_ratelimit"),
            params.duration("migration_delay"),
        );
        cfg.work_conserving = params.boolean("work_conserving");
        cfg
    }

    fn new(tslice: Nanos, ratelimit: Nanos, load_balance_ratelimit: Nanos, migration_delay: Nanos) -> Self {
        let ticks = if tslice < TICKS_PER_TSLICE * MS { 1 } else { TICKS_PER_TSLICE };
        CreditConfig {
            tslice,
            // csched_init: "sched_ratelimit_us > sched_credit_tslice_ms is undefined; Setting ratelimit to tslice".
            ratelimit: ratelimit.min(tslice),
            load_balance_ratelimit,
            migration_delay,
            work_conserving: true,
            tick_period: tslice / ticks,
            credits_per_tslice: (CREDITS_PER_MSEC * tslice / MS) as i64,
        }
    }
}

/// Per-vCPU private data (`struct csched_unit`).
#[derive(Clone, Debug)]
struct CreditVcpu {
    vm: VmId,
    /// The pCPU whose run queue the vCPU belongs to (`sched_unit_master`).
    processor: PcpuId,
    pri: Pri,
    credit: i64,
    /// Sub-credit remainder of `burn_credits`, in credit x ns units.
    residual: u64,
    /// `start_time`: absolute while running; while descheduled it holds minus the run time not yet
    /// turned into credits (`csched_schedule` subtracts `now` at schedule-out, adds it back at
    /// schedule-in).
    start_time: i64,
    /// When it last left a pCPU (`last_sched_time`), for the cache-hot test.
    last_sched_time: Nanos,
    /// When it last started running (`state_entry_time`), for the ratelimit.
    running_since: Nanos,
    /// On its domain's active list: it earns credit at `csched_acct`.
    active: bool,
    /// `CSCHED_FLAG_UNIT_YIELD`: set by yield, cleared when taken off a run queue.
    yielding: bool,
    /// `CSCHED_FLAG_UNIT_MIGRATING`: placed by `csched_res_pick`; the next wake is not a BOOST.
    migrating: bool,
    /// `_VPF_migrating` on a running vCPU: move it when it is next descheduled.
    migrate_pending: bool,
    /// Not halted, as this policy has been told (insert/wake set it, sleep clears it).
    awake: bool,
    /// `CSCHED_FLAG_UNIT_PARKED`: paused by `csched_acct` for exceeding its domain's cap; it
    /// neither runs nor waits in a run queue until unparked.
    parked: bool,
    /// The run queue it waits in, if any.
    queued_on: Option<PcpuId>,
}

impl CreditVcpu {
    /// A vCPU of `vm` on `processor` before it is inserted: UNDER, no credit, halted.
    fn new(vm: VmId, processor: PcpuId) -> Self {
        CreditVcpu {
            vm,
            processor,
            pri: PRI_UNDER,
            credit: 0,
            residual: 0,
            start_time: 0,
            last_sched_time: 0,
            running_since: 0,
            active: false,
            yielding: false,
            migrating: false,
            migrate_pending: false,
            awake: false,
            parked: false,
            queued_on: None,
        }
    }

    /// Wants a pCPU: awake and not parked by a cap (`vcpu_runnable` with the pause count).
    fn runnable(&self) -> bool {
        self.awake && !self.parked
    }
}

/// Per-pCPU private data (`struct csched_pcpu`).
#[derive(Clone, Debug)]
struct CreditPcpu {
    /// Waiting vCPUs, best first. The idle unit is implicit at the tail.
    runq: Vec<VcpuId>,
    /// The vCPU this pCPU runs (the last `do_schedule` answer); `None` is the idle unit.
    curr: Option<VcpuId>,
    /// Accounting epoch of the last run-queue sort (`runq_sort_last`).
    runq_sort_last: u32,
    /// Where `_csched_cpu_pick` starts among this pCPU's idle siblings (`idle_bias`).
    idle_bias: usize,
    /// Last work-stealing attempt (`last_load_balance`); `None` before the first.
    last_load_balance: Option<Nanos>,
    /// `spc->ticker`: `csched_tick`, armed while the pCPU runs a vCPU (made at its first start).
    ticker: Option<Timer>,
}

/// Per-domain private data (`struct csched_dom`).
#[derive(Clone, Debug, Default)]
struct CreditDom {
    /// Active vCPUs, most recently activated first (`list_add` at the head).
    active_units: Vec<VcpuId>,
    /// `sdom->weight`, set by `adjust` (`csched_dom_cntl`).
    weight: u32,
    /// `sdom->cap` as `[[vm]] cap` gives it (percent of one pCPU, 0 = none); `cap_percent`
    /// applies it in `csched_acct`.
    cap: u32,
    /// The VM's `[vm.uvf]` knobs (the UVF overlay, `credit/urgent.rs`).
    uvf: UvfVm,
}

/// The Credit1 policy (`struct csched_private` plus the per-entity data).
pub struct Credit {
    cfg: CreditConfig,
    vcpus: Vec<CreditVcpu>,
    pcpus: Vec<CreditPcpu>,
    doms: Vec<CreditDom>,
    /// Domains with active vCPUs, in `active_sdom` list order.
    active_sdom: Vec<VmId>,
    /// `prv->idlers`: pCPUs idle and not yet tickled.
    idlers: Vec<bool>,
    /// Per NUMA node: the peer last stolen from, where the next steal round starts (`balance_bias`).
    balance_bias: Vec<usize>,
    /// Accounting epoch (`runq_sort`), bumped by every `csched_acct`.
    runq_sort: u32,
    /// Sum of the domain weights of all active vCPUs (`prv->weight`).
    weight: u64,
    /// `prv->credit`: credits of all pCPUs per period.
    credit: u64,
    /// `prv->credit_balance`: sum of the active vCPUs' credits after the last accounting.
    credit_balance: i64,
    /// `prv->master_ticker`: `csched_acct` every tslice, made and armed at the first insert.
    master_ticker: Option<Timer>,
    /// Rotor over idlers for `__runq_tickle` (`last_tickle_cpu`).
    last_tickle_cpu: usize,
    /// The urgent-vCPU-first overlay (seed 000 section 3.1.3), when `[host.uvf]` is present.
    uvf: Option<Uvf>,
    /// The pool's pCPUs have been read from the first host view (`fit_to`).
    pool_known: bool,
}

// ---- cpumask helpers ----

/// `cpumask_cycle(n, mask)`: the first pCPU after `n` in `mask`, wrapping; `n` itself if it is the
/// only one; `None` for an empty mask.
fn cycle(n: usize, mask: &[bool]) -> Option<usize> {
    let len = mask.len();
    (1..=len).map(|k| (n + k) % len).find(|&i| mask[i])
}

fn weight_of(mask: &[bool]) -> usize {
    mask.iter().filter(|&&b| b).count()
}

/// The steps of `for_each_affinity_balance_step` (private.h): `BALANCE_SOFT_AFFINITY` first, then
/// `BALANCE_HARD_AFFINITY`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Soft,
    Hard,
}

const BALANCE_STEPS: [Step; 2] = [Step::Soft, Step::Hard];

/// Whether pCPU `p` is in `affinity_balance_cpumask(v, step)` ∩ the pool: soft ∩ hard for the soft
/// step (only used when `has_soft_affinity`, so never empty and no fallback to hard is needed),
/// hard for the hard step.
fn in_balance_mask(host: &HostView, v: VcpuId, p: usize, step: Step) -> bool {
    let p = PcpuId(p as u32);
    match step {
        Step::Soft => host.prefers(v, p),
        Step::Hard => host.may_run(v, p),
    }
}

/// Whether some vCPU might have a useful soft affinity in this pool: one whose soft mask does not
/// cover the pool (a necessary condition of `has_soft_affinity`). Without one, a soft balance step
/// of `csched_load_balance` skips every vCPU and can be left out.
fn any_soft(host: &HostView) -> bool {
    host.scope.is_some_and(|s| s.affinity.iter().any(|a| !s.pool.mask.is_subset(&a.soft)))
}

impl Credit {
    fn new(cfg: CreditConfig, host: HostShape) -> Self {
        let npcpus = host.npcpus as usize;
        let pcpu = CreditPcpu {
            runq: Vec::new(),
            curr: None,
            runq_sort_last: 0,
            idle_bias: npcpus.saturating_sub(1),
            last_load_balance: None,
            ticker: None,
        };
        Credit {
            credit: (cfg.credits_per_tslice as u64) * npcpus as u64,
            cfg,
            vcpus: Vec::with_capacity(host.nvcpus as usize),
            pcpus: vec![pcpu; npcpus],
            doms: vec![CreditDom::default(); host.nvms as usize],
            active_sdom: Vec::new(),
            idlers: vec![true; npcpus],
            balance_bias: Vec::new(),
            runq_sort: 0,
            weight: 0,
            credit_balance: 0,
            master_ticker: None,
            last_tickle_cpu: npcpus.saturating_sub(1),
            uvf: host.uvf.map(|cfg| Uvf::new(cfg, host.nvcpus as usize, npcpus)),
            pool_known: false,
        }
    }

    /// Grow the per-entity tables to the host (the engine may hand us more than `HostShape` said).
    fn fit_to(&mut self, host: &HostView) {
        if self.doms.len() < host.vms.len() {
            self.doms.resize(host.vms.len(), CreditDom::default());
        }
        if !self.pool_known {
            // A pool's instance owns only its pCPUs (csched_alloc_pdata / init_pdata run for
            // those): the others are never idle here, and `prv->credit` counts the pool's pCPUs.
            self.pool_known = true;
            for p in 0..self.pcpus.len() {
                self.idlers[p] = host.owns_pcpu(PcpuId(p as u32));
            }
            self.credit = self.cfg.credits_per_tslice as u64 * host.npcpus() as u64;
        }
        if self.balance_bias.is_empty() {
            // init_pdata: the first pCPU of each node starts its node's balance bias.
            let nodes = host.topology.numa_nodes as usize;
            self.balance_bias = (0..nodes)
                .map(|n| host.pcpu_ids().find(|p| host.topology.place(*p).node as usize == n).map_or(0, |p| p.idx()))
                .collect();
        }
    }

    fn pri_of_curr(&self, p: usize) -> Pri {
        self.pcpus[p].curr.map_or(PRI_IDLE, |c| self.vcpus[c.idx()].pri)
    }

    /// Runnable vCPUs of a pCPU, the running one included (`nr_runnable`).
    fn nr_runnable(&self, p: usize) -> usize {
        self.pcpus[p].runq.len() + usize::from(self.pcpus[p].curr.is_some())
    }

    // ---- run queues ----

    /// `__runq_insert`: behind every vCPU of the same or higher priority; a yielding vCPU goes one
    /// further, behind the first lower-priority vCPU if there is one ("The next runq_sort will bring
    /// it forward within 30ms").
    fn runq_insert(&mut self, v: VcpuId) {
        let svc = &self.vcpus[v.idx()];
        assert!(svc.queued_on.is_none(), "credit: vCPU {v} is queued twice");
        let (p, pri, yielding) = (svc.processor, svc.pri, svc.yielding);
        let runq = &self.pcpus[p.idx()].runq;
        let mut at = runq.iter().position(|u| pri > self.vcpus[u.idx()].pri).unwrap_or(runq.len());
        if yielding && at < runq.len() {
            at += 1;
        }
        self.pcpus[p.idx()].runq.insert(at, v);
        self.vcpus[v.idx()].queued_on = Some(p);
    }

    /// `__runq_remove`: also clears the YIELD flag ("Clear YIELD flag when scheduling back in").
    fn runq_remove(&mut self, v: VcpuId) {
        let p = self.vcpus[v.idx()].queued_on.take().expect("credit: removing a vCPU that is not queued");
        self.pcpus[p.idx()].runq.retain(|u| *u != v);
        self.vcpus[v.idx()].yielding = false;
    }

    /// `csched_runq_sort`: after a new accounting period, move UNDER (and BOOST) vCPUs ahead of
    /// OVER ones, keeping the order within each group.
    fn runq_sort(&mut self, p: usize) {
        if self.pcpus[p].runq_sort_last == self.runq_sort {
            return;
        }
        self.pcpus[p].runq_sort_last = self.runq_sort;
        let runq = std::mem::take(&mut self.pcpus[p].runq);
        let (mut under, over): (Vec<_>, Vec<_>) = runq.into_iter().partition(|v| self.vcpus[v.idx()].pri >= PRI_UNDER);
        under.extend(over);
        self.pcpus[p].runq = under;
    }

    // ---- credit accounting ----

    /// `burn_credits`: charge 10 credits per ms run since `start_time`, keeping the sub-credit
    /// remainder in `residual`. Only for the vCPU running on its pCPU.
    fn burn_credits(&mut self, v: VcpuId, now: Nanos) {
        let svc = &mut self.vcpus[v.idx()];
        let delta = now as i64 - svc.start_time;
        if delta <= 0 {
            return;
        }
        let val = delta as u64 * CREDITS_PER_MSEC + svc.residual;
        svc.residual = val % MS;
        let credits = val / MS;
        svc.credit -= credits as i64;
        svc.start_time += (credits * MS / CREDITS_PER_MSEC) as i64;
    }

    /// `__csched_unit_acct_start`: put the vCPU (and its domain) on the active lists.
    fn acct_start(&mut self, v: VcpuId) {
        let vm = self.vcpus[v.idx()].vm;
        if self.vcpus[v.idx()].active {
            return;
        }
        self.vcpus[v.idx()].active = true;
        self.doms[vm.idx()].active_units.insert(0, v);
        self.weight += self.doms[vm.idx()].weight as u64;
        if !self.active_sdom.contains(&vm) {
            self.active_sdom.insert(0, vm);
        }
    }

    /// `__csched_unit_acct_stop_locked`: take the vCPU off the active lists.
    fn acct_stop(&mut self, v: VcpuId) {
        let vm = self.vcpus[v.idx()].vm;
        self.vcpus[v.idx()].active = false;
        self.doms[vm.idx()].active_units.retain(|u| *u != v);
        self.weight -= self.doms[vm.idx()].weight as u64;
        if self.doms[vm.idx()].active_units.is_empty() {
            self.active_sdom.retain(|d| *d != vm);
        }
    }

    /// `csched_acct`, every tslice on the master pCPU: share out `credit` over the active domains
    /// by weight x active vCPUs, at most one full period of run time per active vCPU, unused
    /// shares going to the domains after it; then set priorities from the sign of the credit,
    /// floor it at -credits_per_tslice and retire (halving the credit of) vCPUs above +credits_per_tslice.
    /// Every share is rounded up as credit.c does (`(x + d - 1) / d`, here `div_ceil`).
    fn acct(&mut self, ctx: &mut PolicyCtx) {
        let weight_total = self.weight;
        let mut credit_total = self.credit;
        // "Converge balance towards 0 when it drops negative".
        if self.credit_balance < 0 {
            credit_total += (-self.credit_balance) as u64;
        }
        if weight_total == 0 {
            self.credit_balance = 0;
            return;
        }
        let cpt = self.cfg.credits_per_tslice;
        let mut weight_left = weight_total;
        let mut credit_balance: i64 = 0;
        let mut credit_xtra = false;

        // list_for_each_safe: later moves to the head and removals do not change what is visited.
        for vm in self.active_sdom.clone() {
            let units = self.doms[vm.idx()].active_units.clone();
            let n = units.len() as u64;
            let w = self.doms[vm.idx()].weight as u64;
            weight_left -= w * n;

            // A domain may earn at most one full period per active vCPU, more only while the
            // system-wide balance is negative.
            let mut credit_peak = n * cpt as u64;
            if self.credit_balance < 0 {
                credit_peak += ((-self.credit_balance) as u64 * w * n).div_ceil(weight_total);
            }
            // Caps: `cap` percent of one pCPU's period for the domain, per active vCPU below.
            let cap = self.cap_percent(vm);
            let mut credit_cap = 0;
            if cap != 0 {
                credit_cap = (cap * cpt as u64).div_ceil(100);
                credit_peak = credit_peak.min(credit_cap);
                credit_cap = credit_cap.div_ceil(n);
            }
            let mut credit_fair = (credit_total * w * n).div_ceil(weight_total);
            if credit_fair < credit_peak {
                credit_xtra = true;
            } else {
                if weight_left != 0 {
                    // "Give other domains a chance at unused credits".
                    credit_total += ((credit_fair - credit_peak) * weight_total).div_ceil(weight_left);
                }
                if credit_xtra {
                    // "Lazily keep domains with extra credits at the head of the queue".
                    self.active_sdom.retain(|d| *d != vm);
                    self.active_sdom.insert(0, vm);
                }
                credit_fair = credit_peak;
            }
            let per_unit = credit_fair.div_ceil(n) as i64;

            for v in units {
                let svc = &mut self.vcpus[v.idx()];
                svc.credit += per_unit;
                if svc.credit < 0 {
                    svc.pri = PRI_OVER;
                    // "Park running UNITs of capped-out domains".
                    if cap != 0 && svc.credit < -(credit_cap as i64) && !svc.parked {
                        self.park(ctx, v);
                    }
                    // "Lower bound on credits".
                    let svc = &mut self.vcpus[v.idx()];
                    svc.credit = svc.credit.max(-cpt);
                } else {
                    svc.pri = PRI_UNDER;
                    // "Unpark any capped domains whose credits go positive".
                    if svc.parked {
                        self.unpark(ctx, v);
                    }
                    let svc = &mut self.vcpus[v.idx()];
                    // "Upper bound on credits means UNIT stops earning".
                    if svc.credit > cpt {
                        svc.credit /= 2;
                        self.acct_stop(v);
                    }
                }
                credit_balance += self.vcpus[v.idx()].credit;
            }
        }
        self.credit_balance = credit_balance;
        // "Inform each CPU that its runq needs to be sorted".
        self.runq_sort = self.runq_sort.wrapping_add(1);
    }

    /// `csched_unit_acct`, from the tick, for the vCPU running on `p`.
    fn unit_acct(&mut self, ctx: &mut PolicyCtx, v: VcpuId, p: usize) {
        // "If the UNIT is found here, then it's consuming a non-negligeable amount of CPU
        // resources and should no longer be boosted."
        if self.vcpus[v.idx()].pri == PRI_BOOST {
            self.vcpus[v.idx()].pri = PRI_UNDER;
        }
        self.burn_credits(v, ctx.now());
        if !self.vcpus[v.idx()].active {
            self.acct_start(v);
        } else {
            // "If it's been active a while, check if we'd be better off migrating it".
            let new_cpu = self.cpu_pick(&ctx.host, v, false);
            if new_cpu != p {
                self.vcpus[v.idx()].migrate_pending = true;
                ctx.reschedule(PcpuId(p as u32));
            }
        }
    }

    /// `csched_tick`, every tick period on a busy pCPU.
    fn tick(&mut self, ctx: &mut PolicyCtx, p: usize) {
        if let Some(v) = self.pcpus[p].curr {
            self.unit_acct(ctx, v, p);
        }
        self.runq_sort(p);
        let ticker = self.pcpus[p].ticker.expect("a tick fires only after start_tick made it");
        ctx.set_timer(&ticker, ctx.now() + self.cfg.tick_period);
    }

    /// Start the tick when a pCPU goes from idle to busy, aligned to the tick period.
    fn start_tick(&mut self, ctx: &mut PolicyCtx, p: usize) {
        let now = ctx.now();
        let period = self.cfg.tick_period;
        let ticker = *self.pcpus[p].ticker.get_or_insert_with(|| ctx.init_timer((TIMER_TICK << KIND_SHIFT) | p as u64));
        ctx.set_timer(&ticker, now + period - now % period);
    }

    /// `stop_timer(&spc->ticker)` when the pCPU goes idle.
    fn stop_tick(&mut self, ctx: &mut PolicyCtx, p: usize) {
        if let Some(ticker) = self.pcpus[p].ticker {
            ctx.stop_timer(&ticker);
        }
    }

    // ---- placement ----

    /// `_csched_cpu_pick`: for each affinity balance step (soft, only when the vCPU
    /// `has_soft_affinity`, then hard), the candidate set is the step's mask
    /// (`affinity_balance_cpumask`) ∩ the pool; in it, the vCPU's own pCPU if it is idle, otherwise
    /// an idle pCPU, preferring the one whose core (same socket) or socket (across sockets, needing
    /// twice as many idlers) has the most idle siblings. A step that ends on an idle pCPU ends the
    /// search; otherwise the hard step's answer stands (the own pCPU if allowed, else the next
    /// allowed one), so the result is always in hard ∩ pool. With `commit`, remember the choice in
    /// the winning pCPU's idle bias.
    fn cpu_pick(&mut self, host: &HostView, v: VcpuId, commit: bool) -> usize {
        let topo = host.topology;
        let n = self.pcpus.len();
        let master = self.vcpus[v.idx()].processor.idx();
        let mut cpu = master;
        let mut spc = None;
        let siblings = |p: usize| -> Vec<bool> {
            let core = topo.place(PcpuId(p as u32)).core;
            (0..n).map(|q| topo.place(PcpuId(q as u32)).core == core).collect()
        };
        let socket_mates = |p: usize| -> Vec<bool> {
            let socket = topo.place(PcpuId(p as u32)).socket;
            (0..n).map(|q| topo.place(PcpuId(q as u32)).socket == socket).collect()
        };
        let and = |a: &[bool], b: &[bool]| -> Vec<bool> { a.iter().zip(b).map(|(x, y)| *x && *y).collect() };
        let soft = host.has_soft(v);
        for step in BALANCE_STEPS {
            // "if that is the case, we just skip the soft affinity balancing step all together"
            // (has_soft_affinity implies soft ∩ hard ∩ pool is not empty).
            if step == Step::Soft && !soft {
                continue;
            }
            // affinity_balance_cpumask(unit, balance_step, cpus); cpumask_and(cpus, online, cpus).
            let mut cpus: Vec<bool> = (0..n).map(|p| in_balance_mask(host, v, p, step)).collect();
            // "If present, prefer vc's current processor".
            cpu = if cpus[master] { master } else { cycle(master, &cpus).unwrap_or(master) };
            // "iff unit is the currently running and the only runnable unit on cpu, we add cpu to
            // the idlers".
            let mut idlers = self.idlers.clone();
            if master == cpu && self.pcpus[master].runq.is_empty() {
                idlers[master] = true;
            }
            for (c, i) in cpus.iter_mut().zip(&idlers) {
                *c &= *i;
            }
            if !cpus[cpu] {
                if let Some(c) = cycle(cpu, &cpus) {
                    cpu = c;
                }
            }
            cpus[cpu] = false;
            while let Some(nxt) = cycle(cpu, &cpus) {
                let same_socket = topo.place(PcpuId(cpu as u32)).socket == topo.place(PcpuId(nxt as u32)).socket;
                let (factor, cpu_group, nxt_group) = if same_socket {
                    // Same socket: compare idle hardware threads of the two cores.
                    (1, siblings(cpu), siblings(nxt))
                } else {
                    // Different sockets: compare idle pCPUs of the two sockets; migrate only if twice as idle.
                    (2, socket_mates(cpu), socket_mates(nxt))
                };
                let cpu_idlers = and(&idlers, &cpu_group);
                let nxt_idlers = and(&idlers, &nxt_group);
                if weight_of(&cpu_idlers) * factor < weight_of(&nxt_idlers) {
                    let candidates = and(&nxt_idlers, &cpus);
                    spc = Some(nxt);
                    cpu = cycle(self.pcpus[nxt].idle_bias, &candidates).unwrap_or(nxt);
                    for (c, s) in cpus.iter_mut().zip(siblings(cpu)) {
                        *c &= !s;
                    }
                } else {
                    for (c, s) in cpus.iter_mut().zip(&nxt_idlers) {
                        *c &= !*s;
                    }
                }
            }
            // "Stop if cpu is idle".
            if idlers[cpu] {
                break;
            }
        }
        if commit {
            if let Some(spc) = spc {
                self.pcpus[spc].idle_bias = cpu;
            }
        }
        cpu
    }

    /// `__runq_tickle`: a vCPU was queued on its processor; decide which pCPU must reschedule.
    /// Only pCPUs the new vCPU may run on are tickled: its processor ("cur" is considered only if
    /// the vCPU may run there, which `wake` and `migrate` keep true as Xen does), or an idler of
    /// its soft step first, then of its hard step.
    fn runq_tickle(&mut self, ctx: &mut PolicyCtx, v: VcpuId) {
        let host = ctx.host;
        let n = self.pcpus.len();
        let cpu = self.vcpus[v.idx()].processor.idx();
        let new_pri = self.vcpus[v.idx()].pri;
        let cur_pri = self.pri_of_curr(cpu);
        let here = host.may_run(v, PcpuId(cpu as u32));
        // idle_mask = prv->idlers ∩ the pool (our idlers hold only the pool's pCPUs).
        let idlers_empty = !self.idlers.iter().any(|&i| i);
        let mut target = None;
        if here && self.idlers[cpu] && host.scope.is_some_and(|s| s.affinity[v.idx()].hard.count() == 1) {
            // Exclusive pinning (`CSCHED_FLAG_UNIT_PINNED`, set by `csched_aff_cntl` when the hard
            // mask has one pCPU) "and cpu is in idle_mask": tickle it. An idler runs nothing here,
            // so the next branch would choose the same pCPU; kept for the shape of credit.c.
            target = Some(cpu);
        } else if here && (cur_pri == PRI_IDLE || (idlers_empty && new_pri > cur_pri)) {
            // "If the pcpu is idle, or there are no idlers and the new unit is a higher priority
            // than the old unit, run it here."
            target = Some(cpu);
        } else if !idlers_empty {
            // "Soft and hard affinity balancing loop. For units without a useful soft affinity,
            // consider hard affinity only."
            let soft = host.has_soft(v);
            for step in BALANCE_STEPS {
                if step == Step::Soft && !soft {
                    continue;
                }
                // "Are there idlers suitable for new (for this balance step)?"
                let suitable: Vec<bool> = (0..n).map(|p| self.idlers[p] && in_balance_mask(&host, v, p, step)).collect();
                let new_idlers_empty = !suitable.iter().any(|&b| b);
                // "Let's not be too harsh! If there aren't idlers suitable for new in its soft
                // affinity mask, make sure we check its hard affinity as well".
                if new_idlers_empty && step == Step::Soft {
                    continue;
                }
                if new_idlers_empty && new_pri > cur_pri {
                    // The "kick cur away" test: Xen 4.5-4.12 asked whether an idler suits cur's
                    // affinity and then set _VPF_migrating on cur; since 4.13 (commit 8a04eaa8ea,
                    // "move some per-vcpu items to struct sched_unit") it tests new's hard
                    // affinity against idle_mask, which in the hard step is empty by the test
                    // just made, so cur is never kicked away (as here). "Tickle cpu anyway, to
                    // let new preempt cur."
                    if here {
                        target = Some(cpu);
                    }
                } else if !new_idlers_empty {
                    // "Which of the idlers suitable for new shall we wake up?" (one, rotating:
                    // opt_tickle_one_idle).
                    self.last_tickle_cpu = cycle(self.last_tickle_cpu, &suitable).expect("suitable is not empty");
                    target = Some(self.last_tickle_cpu);
                }
                // "Did we find anyone?"
                if target.is_some() {
                    break;
                }
            }
        }
        if let Some(t) = target {
            // "Mark the designated CPUs as busy and send them all the scheduler interrupt."
            self.idlers[t] = false;
            ctx.reschedule(PcpuId(t as u32));
        }
    }

    /// `csched_unit_wake` after the checks: BOOST an UNDER vCPU that blocked (not one that only
    /// migrated), queue it on its processor and tickle.
    fn queue_woken(&mut self, ctx: &mut PolicyCtx, v: VcpuId) {
        let svc = &mut self.vcpus[v.idx()];
        let migrating = std::mem::take(&mut svc.migrating);
        if !migrating && svc.pri == PRI_UNDER {
            svc.pri = PRI_BOOST;
        }
        self.runq_insert(v);
        self.runq_tickle(ctx, v);
        let p = self.vcpus[v.idx()].processor.idx();
        self.queued_urgent(ctx, v, p);
    }

    /// schedule.c `vcpu_migrate` for a vCPU just taken off its pCPU with `_VPF_migrating`:
    /// `csched_res_pick` chooses a pCPU, then the vCPU is woken there without a BOOST.
    fn migrate(&mut self, ctx: &mut PolicyCtx, v: VcpuId) {
        let new_cpu = self.cpu_pick(&ctx.host, v, true);
        let svc = &mut self.vcpus[v.idx()];
        svc.processor = PcpuId(new_cpu as u32);
        svc.migrating = true;
        if svc.runnable() {
            self.queue_woken(ctx, v);
        }
    }

    /// A vCPU whose processor is no longer in its hard affinity ∩ pool (its affinity changed
    /// after it was placed) gets a new one, as schedule.c's `sched_set_affinity` ->
    /// `vcpu_migrate` would have given it at the change: `csched_res_pick` (CSCHED_FLAG_UNIT_MIGRATING,
    /// so the next wake is not a BOOST). The engine changes affinity without telling the policy,
    /// so this runs where the vCPU next meets the policy (wake, unpark).
    fn rehome_if_disallowed(&mut self, host: &HostView, v: VcpuId) {
        if host.may_run(v, self.vcpus[v.idx()].processor) {
            return;
        }
        let new_cpu = self.cpu_pick(host, v, true);
        let svc = &mut self.vcpus[v.idx()];
        svc.processor = PcpuId(new_cpu as u32);
        svc.migrating = true;
    }

    // ---- work stealing ----

    fn cache_hot(&self, v: VcpuId, now: Nanos) -> bool {
        let delay = self.cfg.migration_delay;
        delay > 0 && now.saturating_sub(self.vcpus[v.idx()].last_sched_time) < delay
    }

    /// `csched_runq_steal`: the first vCPU queued on `peer` with priority strictly above `pri`
    /// that has not yielded, is not cache-hot and may run on `cpu` in this balance step
    /// (`__csched_unit_is_migrateable` with `affinity_balance_cpumask`); in the soft step a vCPU
    /// without a useful soft affinity is skipped ("check if we have any soft-affine work to steal,
    /// before starting to look at hard-affine work").
    fn runq_steal(&mut self, host: &HostView, peer: usize, cpu: usize, pri: Pri, step: Step) -> Option<VcpuId> {
        // "Don't steal from an idle CPU's runq because it's about to pick up work from it itself."
        self.pcpus[peer].curr?;
        let mut found = None;
        for &v in &self.pcpus[peer].runq {
            let svc = &self.vcpus[v.idx()];
            // "If next available UNIT here is not of strictly higher priority than ours, this
            // PCPU is useless to us."
            if svc.pri <= pri {
                break;
            }
            // "Don't steal a UNIT which has yielded; it's waiting for a reason".
            if svc.yielding {
                continue;
            }
            if step == Step::Soft && !host.has_soft(v) {
                continue;
            }
            if self.cache_hot(v, host.now) || !in_balance_mask(host, v, cpu, step) {
                continue;
            }
            found = Some(v);
            break;
        }
        let v = found?;
        self.runq_remove(v);
        self.vcpus[v.idx()].processor = PcpuId(cpu as u32);
        Some(v)
    }

    /// `csched_load_balance`: for each affinity balance step (soft-affine work first, then
    /// hard-affine work), visit the busy peers node by node, round-robin from each node's balance
    /// bias, skipping those with at most one runnable vCPU; the first steal ends it.
    fn load_balance(&mut self, host: &HostView, cpu: usize, pri: Pri) -> Option<VcpuId> {
        let topo = host.topology;
        let nodes = self.balance_bias.len().max(1);
        let node = topo.place(PcpuId(cpu as u32)).node as usize;
        let soft = any_soft(host);
        for step in BALANCE_STEPS {
            // A soft step with no soft-affine vCPU in the pool steals nothing and changes nothing.
            if step == Step::Soft && !soft {
                continue;
            }
            for k in 0..nodes {
                let peer_node = (node + k) % nodes;
                let workers: Vec<bool> = (0..self.pcpus.len())
                    .map(|p| {
                        p != cpu
                            && !self.idlers[p]
                            && host.owns_pcpu(PcpuId(p as u32))
                            && topo.place(PcpuId(p as u32)).node as usize == peer_node
                    })
                    .collect();
                let Some(first) = cycle(self.balance_bias[peer_node], &workers) else { continue };
                let mut peer = first;
                loop {
                    if self.nr_runnable(peer) > 1 {
                        if let Some(v) = self.runq_steal(host, peer, cpu, pri, step) {
                            // "start from the next pCPU ... so we don't risk stealing always from the same ones".
                            self.balance_bias[peer_node] = peer;
                            return Some(v);
                        }
                    }
                    peer = cycle(peer, &workers).unwrap_or(first);
                    if peer == first {
                        break;
                    }
                }
            }
        }
        None
    }

    /// The domain's cap in percent of one pCPU (`sdom->cap`); 0 is uncapped. The VM's own
    /// `[[vm]] cap` (`xl sched-credit -c`, stored by `csched_dom_cntl`) wins; without one,
    /// `work_conserving = false` caps the domain at its weight's share of the pool.
    fn cap_percent(&self, vm: VmId) -> u64 {
        let own = self.doms[vm.idx()].cap;
        if own != 0 {
            return own as u64;
        }
        if self.cfg.work_conserving {
            return 0;
        }
        // The doms cover the host's VMs (fit_to); only the pool's VMs were adjusted here (any
        // other has weight 0), and `prv->credit` is one tslice of credits per pool pCPU.
        let total: u64 = self.doms.iter().map(|d| d.weight as u64).sum();
        let npcpus = self.credit / self.cfg.credits_per_tslice as u64;
        (100 * npcpus * self.doms[vm.idx()].weight as u64).div_ceil(total.max(1))
    }

    /// `sched_unit_pause_nosync` of a capped-out vCPU: off its run queue, or off its pCPU at the
    /// reschedule this asks for.
    fn park(&mut self, ctx: &mut PolicyCtx, v: VcpuId) {
        self.vcpus[v.idx()].parked = true;
        if self.vcpus[v.idx()].queued_on.is_some() {
            self.runq_remove(v);
        }
        let p = self.vcpus[v.idx()].processor.idx();
        if self.pcpus[p].curr == Some(v) {
            ctx.reschedule(PcpuId(p as u32));
        }
    }

    /// `sched_unit_unpause`: an awake vCPU is queued again, without a BOOST (credit.c clears the
    /// PARKED flag only after the wake, so `csched_unit_wake` does not boost it).
    fn unpark(&mut self, ctx: &mut PolicyCtx, v: VcpuId) {
        let svc = &self.vcpus[v.idx()];
        let running = self.pcpus[svc.processor.idx()].curr == Some(v);
        if svc.awake && !running && svc.queued_on.is_none() {
            self.rehome_if_disallowed(&ctx.host, v);
            self.runq_insert(v);
            self.runq_tickle(ctx, v);
            let p = self.vcpus[v.idx()].processor.idx();
            self.queued_urgent(ctx, v, p);
        }
        self.vcpus[v.idx()].parked = false;
    }

    fn load_balance_allowed(&self, p: usize, now: Nanos) -> bool {
        match self.pcpus[p].last_load_balance {
            None => true,
            Some(last) => now - last > self.cfg.load_balance_ratelimit,
        }
    }
}

impl Policy for Credit {
    fn name(&self) -> &'static str {
        "credit"
    }

    /// `csched_unit_insert` + the unpause wake (see the file header).
    fn insert_vcpu(&mut self, ctx: &mut PolicyCtx, v: VcpuId) {
        self.fit_to(&ctx.host);
        let info = ctx.host.vcpu(v);
        if self.vcpus.len() <= v.idx() {
            self.vcpus.resize(v.idx() + 1, CreditVcpu::new(VmId(0), PcpuId(0)));
        }
        let svc = &mut self.vcpus[v.idx()];
        svc.vm = info.vm;
        svc.processor = PcpuId(info.last_pcpu.0.min(self.pcpus.len() as u32 - 1));
        svc.pri = PRI_UNDER;
        svc.awake = true;
        if self.master_ticker.is_none() {
            // init_pdata: the master pCPU's accounting timer, first at one tslice.
            let ticker = ctx.init_timer(TIMER_ACCT << KIND_SHIFT);
            self.master_ticker = Some(ticker);
            ctx.set_timer(&ticker, ctx.now() + self.cfg.tslice);
        }
        let p = self.cpu_pick(&ctx.host, v, true);
        let svc = &mut self.vcpus[v.idx()];
        svc.processor = PcpuId(p as u32);
        svc.migrating = true;
        self.queue_woken(ctx, v);
    }

    /// `csched_dom_cntl` (`XEN_DOMCTL_SCHEDOP_putinfo`): a new weight moves the domain's active
    /// vCPUs' share of `prv->weight` with it.
    fn adjust(&mut self, ctx: &mut PolicyCtx, vm: VmId, sched: &VmSched) {
        self.fit_to(&ctx.host);
        let dom = &mut self.doms[vm.idx()];
        let active = dom.active_units.len() as u64;
        self.weight = self.weight - dom.weight as u64 * active + sched.weight as u64 * active;
        dom.weight = sched.weight;
        dom.cap = sched.cap;
        dom.uvf = sched.uvf;
    }

    /// `csched_unit_wake`.
    fn wake(&mut self, ctx: &mut PolicyCtx, v: VcpuId, _waker: Option<PcpuId>) {
        let svc = &mut self.vcpus[v.idx()];
        svc.awake = true;
        let running_here = self.pcpus[svc.processor.idx()].curr == Some(v);
        // A parked vCPU stays paused; `unpark` queues it.
        if running_here || svc.queued_on.is_some() || svc.parked {
            return;
        }
        self.rehome_if_disallowed(&ctx.host, v);
        self.queue_woken(ctx, v);
    }

    /// `csched_unit_sleep`: a running vCPU is descheduled by the `do_schedule` the engine calls
    /// next; a queued one leaves its run queue.
    fn sleep(&mut self, _ctx: &mut PolicyCtx, v: VcpuId) {
        self.vcpus[v.idx()].awake = false;
        if self.vcpus[v.idx()].queued_on.is_some() {
            self.runq_remove(v);
        }
        self.uvf_sleep(v);
    }

    /// `csched_res_pick`: `_csched_cpu_pick` with commit, from the unit's last pCPU.
    fn pick_pcpu(&mut self, ctx: &mut PolicyCtx, v: VcpuId) -> Option<PcpuId> {
        self.fit_to(&ctx.host);
        if self.vcpus.len() <= v.idx() {
            self.vcpus.resize(v.idx() + 1, CreditVcpu::new(VmId(0), PcpuId(0)));
        }
        self.vcpus[v.idx()].processor = ctx.host.vcpu(v).last_pcpu;
        Some(PcpuId(self.cpu_pick(&ctx.host, v, true) as u32))
    }

    /// `csched_aff_cntl` + `sched_set_affinity` -> `vcpu_migrate`: a vCPU queued or running on a
    /// pCPU it may no longer use leaves it now. Its pCPU reschedules, and `do_schedule` there
    /// moves strays and a disallowed runner (`rehome_if_disallowed`); a halted one is re-homed
    /// when it wakes.
    fn adjust_affinity(&mut self, ctx: &mut PolicyCtx, v: VcpuId) {
        let p = self.vcpus[v.idx()].processor;
        let here = self.vcpus[v.idx()].queued_on.is_some() || self.pcpus[p.idx()].curr == Some(v);
        if here && !ctx.host.may_run(v, p) {
            ctx.reschedule(p);
        }
    }

    /// `csched_unit_remove` (Xen `sched_move_domain` / `sched_remove_unit`): the vCPU leaves
    /// this pool. The engine has taken it off its pCPU already; it leaves the run queue and the
    /// active lists (its domain's weight leaves `prv->weight` with it), and the pCPU it ran on
    /// forgets it (`do_schedule` there is next).
    fn remove_vcpu(&mut self, ctx: &mut PolicyCtx, v: VcpuId) {
        if self.vcpus[v.idx()].queued_on.is_some() {
            self.runq_remove(v);
        }
        if self.vcpus[v.idx()].active {
            self.acct_stop(v);
        }
        let p = self.vcpus[v.idx()].processor.idx();
        if self.pcpus[p].curr == Some(v) {
            self.burn_credits(v, ctx.now());
            self.pcpus[p].curr = None;
            self.idlers[p] = true;
            self.stop_tick(ctx, p);
        }
        let svc = &mut self.vcpus[v.idx()];
        svc.awake = false;
        svc.parked = false;
        svc.migrate_pending = false;
        self.uvf_sleep(v);
    }

    /// `csched_unit_yield`: only a flag; `do_schedule` skips the ratelimit and queues the vCPU
    /// behind one lower-priority vCPU. PLE exits arrive here (Xen's `vmx.c` PAUSE exit calls
    /// `vcpu_yield`).
    fn yield_vcpu(&mut self, ctx: &mut PolicyCtx, v: VcpuId, reason: YieldReason) {
        self.vcpus[v.idx()].yielding = true;
        match reason {
            // Seed 000 section 4.3: a pause-loop exit cancels urgency.
            YieldReason::PauseLoop => self.uvf_cancel(ctx, v),
        }
    }

    /// `csched_schedule`.
    fn do_schedule(&mut self, ctx: &mut PolicyCtx, pcpu: PcpuId) -> Decision {
        self.fit_to(&ctx.host);
        let p = pcpu.idx();
        let now = ctx.now();
        let prev = self.pcpus[p].curr;
        let host = ctx.host;

        // Affinity changed under vCPUs of this pCPU (schedule.c `sched_set_affinity` ->
        // `vcpu_migrate`, see `rehome_if_disallowed`): the running one leaves as a tick-flagged
        // one does (`_VPF_migrating`), the queued ones are taken off and placed anew.
        if let Some(c) = prev.filter(|c| !host.may_run(*c, pcpu)) {
            self.vcpus[c.idx()].migrate_pending = true;
        }
        if self.pcpus[p].runq.iter().any(|v| !host.may_run(*v, pcpu)) {
            let strays: Vec<VcpuId> = self.pcpus[p].runq.iter().copied().filter(|v| !host.may_run(*v, pcpu)).collect();
            for v in strays {
                self.runq_remove(v);
                self.migrate(ctx, v);
            }
        }

        let mut runtime = 0;
        if let Some(c) = prev {
            runtime = now.saturating_sub(self.vcpus[c.idx()].running_since);
            self.burn_credits(c, now);
            let svc = &mut self.vcpus[c.idx()];
            svc.start_time -= now as i64;
            svc.last_sched_time = now;
        }
        // UVF: an urgent vCPU in its protected tslice keeps its pCPU; the preemption waits for
        // the UVF timer (a vCPU flagged for migration by the tick moves after it).
        if let Some(c) = prev.filter(|c| self.vcpus[c.idx()].runnable() && host.may_run(*c, pcpu)) {
            if self.hold_back_preemption(now, p, c) {
                self.vcpus[c.idx()].start_time += now as i64;
                return Decision::run(c, None);
            }
        }
        let prev_runnable = prev.is_some_and(|c| self.vcpus[c.idx()].runnable() && !self.vcpus[c.idx()].migrate_pending);
        if let Some(c) = prev.filter(|_| prev_runnable) {
            self.runq_insert(c);
        }
        // UVF: the first eligible vCPU of the urgent queue preempts, ratelimit or not (the seed's
        // 500 us urgent tslice is shorter than the 1 ms ratelimit, which would otherwise hide it).
        let urgent = self.pick_urgent(ctx, p, prev.filter(|_| prev_runnable));

        // Ratelimit: keep a vCPU that has run less than `ratelimit`, unless it yields.
        if let Some(c) = prev.filter(|_| urgent.is_none()) {
            let yielding = self.vcpus[c.idx()].yielding;
            if !yielding && self.cfg.ratelimit > 0 && prev_runnable && runtime < self.cfg.ratelimit {
                // Not yielding, so taking it back off the queue loses no YIELD flag.
                self.runq_remove(c);
                self.vcpus[c.idx()].start_time += now as i64;
                // Literally credit.c: a vCPU that has run under CSCHED_MIN_TIMER gets exactly that.
                let slice = if runtime < MIN_TIMER { MIN_TIMER } else { self.cfg.ratelimit - runtime };
                return Decision::run(c, Some(slice));
            }
        }

        // The head of the local queue, unless it is OVER or idle and a peer has better work.
        let head_pri = self.pcpus[p].runq.first().map_or(PRI_IDLE, |v| self.vcpus[v.idx()].pri);
        let mut snext = None;
        if let Some(u) = urgent {
            self.runq_remove(u);
            snext = Some(u);
        } else if head_pri <= PRI_OVER && self.load_balance_allowed(p, now) {
            self.pcpus[p].last_load_balance = Some(now);
            snext = self.load_balance(&ctx.host, p, head_pri);
        }
        if snext.is_none() {
            if let Some(&head) = self.pcpus[p].runq.first() {
                self.runq_remove(head);
                snext = Some(head);
            }
        }

        self.start_urgent_tslice(ctx, p, snext);
        // "When we're idling, other CPUs will tickle us when they get extra work."
        self.idlers[p] = snext.is_none();
        if let Some(n) = snext {
            let svc = &mut self.vcpus[n.idx()];
            svc.start_time += now as i64;
            if Some(n) != prev {
                svc.running_since = now;
            }
        }
        self.pcpus[p].curr = snext;

        // A vCPU flagged by the tick moves now that it is off this pCPU (schedule.c vcpu_migrate);
        // a halted one still gets its new processor, and keeps the MIGRATING flag until it wakes.
        if let Some(c) = prev {
            if std::mem::take(&mut self.vcpus[c.idx()].migrate_pending) {
                self.migrate(ctx, c);
            }
        }

        // "Stop credit tick when going to idle, restart it when coming from idle."
        match (prev.is_some(), snext.is_some()) {
            (true, false) => self.stop_tick(ctx, p),
            (false, true) => self.start_tick(ctx, p),
            _ => {}
        }

        match snext {
            Some(n) => Decision::run(n, Some(self.cfg.tslice)),
            None => Decision::idle(),
        }
    }

    fn on_timer(&mut self, ctx: &mut PolicyCtx, key: u64) {
        match key >> KIND_SHIFT {
            TIMER_ACCT => {
                self.acct(ctx);
                let ticker = self.master_ticker.expect("made before it was armed");
                ctx.set_timer(&ticker, ctx.now() + self.cfg.tslice);
            }
            // Only an armed ticker fires: stop_tick's stop_timer cancelled any pending tick.
            TIMER_TICK => self.tick(ctx, (key & PCPU_MASK) as usize),
            TIMER_UVF => self.uvf_timer(ctx, (key & PCPU_MASK) as usize),
            _ => {}
        }
    }

    /// `cpupool_unassign_cpu` as credit sees it: the running vCPU (already switched out by the
    /// engine) is descheduled as `csched_schedule` would (credits burnt), then it and every vCPU
    /// queued on or homed at `p` is moved by `vcpu_migrate` (`csched_res_pick` among the pool's
    /// remaining pCPUs, woken there without a BOOST); then `csched_deinit_pdata`: `p` leaves the
    /// idlers, its tick stops and `prv->credit` shrinks by one pCPU's credits.
    fn remove_pcpu(&mut self, ctx: &mut PolicyCtx, pcpu: PcpuId) {
        let p = pcpu.idx();
        let now = ctx.now();
        self.idlers[p] = false;
        self.stop_tick(ctx, p);
        self.credit = self.credit.saturating_sub(self.cfg.credits_per_tslice as u64);
        let mut moving = Vec::new();
        if let Some(c) = self.pcpus[p].curr.take() {
            self.burn_credits(c, now);
            let svc = &mut self.vcpus[c.idx()];
            svc.start_time -= now as i64;
            svc.last_sched_time = now;
            moving.push(c);
        }
        for v in std::mem::take(&mut self.pcpus[p].runq) {
            let svc = &mut self.vcpus[v.idx()];
            svc.queued_on = None;
            svc.yielding = false;
            moving.push(v);
        }
        for (i, svc) in self.vcpus.iter().enumerate() {
            let v = VcpuId(i as u32);
            if svc.processor == pcpu && ctx.host.owns_vcpu(v) && !moving.contains(&v) {
                moving.push(v);
            }
        }
        for v in moving {
            // csched_res_pick starts from the unit's processor: never the leaving pCPU (the
            // engine re-homed the vCPUs whose last pCPU it was).
            if self.vcpus[v.idx()].processor == pcpu {
                let home = ctx.host.vcpu(v).last_pcpu;
                self.vcpus[v.idx()].processor = home;
            }
            self.vcpus[v.idx()].migrate_pending = false;
            self.migrate(ctx, v);
        }
    }

    /// `csched_init_pdata` + `csched_switch_sched`: `p` joins idle, with a fresh per-pCPU
    /// struct, and adds one pCPU's credits to `prv->credit`.
    fn add_pcpu(&mut self, _ctx: &mut PolicyCtx, pcpu: PcpuId) {
        let p = pcpu.idx();
        let fresh = CreditPcpu {
            runq: Vec::new(),
            curr: None,
            runq_sort_last: self.runq_sort,
            idle_bias: self.pcpus.len().saturating_sub(1),
            last_load_balance: None,
            // The same ticker, stopped when the pCPU left.
            ticker: self.pcpus[p].ticker,
        };
        self.pcpus[p] = fresh;
        self.idlers[p] = true;
        self.credit += self.cfg.credits_per_tslice as u64;
    }

    fn ipi_sent(&mut self, ctx: &mut PolicyCtx, from: VcpuId, to: VcpuId, kind: IpiKind) {
        self.uvf_ipi_sent(ctx, from, to, kind);
    }

    fn ipi_send_started(&mut self, ctx: &mut PolicyCtx, v: VcpuId) {
        self.uvf_ipi_send_started(ctx, v);
    }

    fn ipi_handled(&mut self, ctx: &mut PolicyCtx, v: VcpuId, kind: IpiKind) {
        self.uvf_ipi_handled(ctx, v, kind);
    }

    fn check(&self, host: &HostView) -> Result<(), String> {
        let mut queued = vec![0u32; host.vcpus.len()];
        for (p, pc) in self.pcpus.iter().enumerate().filter(|(p, _)| host.owns_pcpu(PcpuId(*p as u32))) {
            for &v in &pc.runq {
                queued[v.idx()] += 1;
                let svc = &self.vcpus[v.idx()];
                if svc.queued_on != Some(PcpuId(p as u32)) || svc.processor.idx() != p {
                    return Err(format!("credit: vCPU {v} sits in pCPU {p}'s run queue but belongs to {:?}", svc.processor));
                }
            }
            if let Some(c) = pc.curr {
                if self.vcpus[c.idx()].queued_on.is_some() {
                    return Err(format!("credit: vCPU {c} runs on pCPU {p} and is queued"));
                }
                if host.vcpu(c).state == VcpuState::Runnable {
                    return Err(format!("credit: pCPU {p} thinks it runs vCPU {c}, which the engine has Runnable"));
                }
                if self.idlers[p] {
                    return Err(format!("credit: pCPU {p} runs vCPU {c} but is marked idle"));
                }
            }
            if let Some(hc) = host.pcpu(PcpuId(p as u32)).current {
                if host.vcpu(hc).state == VcpuState::Running && pc.curr != Some(hc) {
                    return Err(format!("credit: the engine runs vCPU {hc} on pCPU {p}, the policy thinks {:?}", pc.curr));
                }
            }
        }
        for info in host.vcpus.iter().filter(|i| host.owns_vcpu(i.id)) {
            let n = queued.get(info.id.idx()).copied().unwrap_or(0);
            let parked = self.vcpus.get(info.id.idx()).is_some_and(|s| s.parked);
            let want = u32::from(info.state == VcpuState::Runnable && !parked);
            if n != want {
                return Err(format!(
                    "credit: vCPU {} is {:?} and queued {n} time(s); expected {want}",
                    info.id, info.state
                ));
            }
        }
        let active_weight: u64 = self
            .vcpus
            .iter()
            .filter(|s| s.active)
            .map(|s| self.doms[s.vm.idx()].weight as u64)
            .sum();
        if active_weight != self.weight {
            return Err(format!("credit: active weight is {} but the active vCPUs add up to {active_weight}", self.weight));
        }
        for (vm, dom) in self.doms.iter().enumerate() {
            let listed = self.active_sdom.contains(&VmId(vm as u32));
            if listed == dom.active_units.is_empty() {
                return Err(format!("credit: VM {vm} has {} active vCPUs but active list membership {listed}", dom.active_units.len()));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hardware::cpumask::CpuMask;
    use crate::hardware::topology::Topology;
    use crate::engine::event_queue::{EventId, EventQueue};
    use crate::hypervisor::cpupool::{Affinity, PoolView, Scope};
    use crate::hypervisor::policy::{PcpuInfo, Request, TimerId, TimerTable, VcpuInfo, VmInfo, VmSched};
    use crate::ids::PoolId;
    use crate::hypervisor::uvf::UvfHost;

    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub(super) enum Ev {
        Slice(usize),
        Resched(usize),
        Timer(TimerId),
        Halt(usize),
        Wake(usize),
        Yield(usize),
    }

    /// Plays the engine: applies decisions, fires slices, timers and reschedules in time order.
    pub(super) struct FakeHost {
        pub(super) policy: Credit,
        pub(super) vcpus: Vec<VcpuInfo>,
        pub(super) pcpus: Vec<PcpuInfo>,
        pub(super) vms: Vec<VmInfo>,
        pub(super) topo: Topology,
        pub(super) now: Nanos,
        /// Pending events, in time order then by push order (the engine's queue).
        pub(super) events: EventQueue<Ev>,
        /// The policy's timers (the engine's table).
        pub(super) timers: TimerTable,
        /// Each pCPU's pending slice end, cancelled by the next decision.
        pub(super) slice_event: Vec<Option<EventId>>,
        /// Run time per vCPU, charged when it leaves its pCPU (and by `run_times`).
        pub(super) run: Vec<Nanos>,
        /// Each VM's settings, handed to `adjust` by `start`.
        pub(super) sched: Vec<VmSched>,
        /// Pool and affinity tables handed to the policy as its `Scope` (`with_affinity`);
        /// `None` is the scope-less host of the other tests.
        pub(super) tables: Option<(PoolView, Vec<PoolId>, Vec<Affinity>)>,
    }

    pub(super) fn cfg() -> CreditConfig {
        CreditConfig::new(DEFAULT_TSLICE, DEFAULT_RATELIMIT, DEFAULT_LOAD_BALANCE_RATELIMIT, 0)
    }

    impl FakeHost {
        /// `vms`: (number of vCPUs, weight) per VM.
        pub(super) fn new(topo: Topology, vms: &[(u32, u32)], cfg: CreditConfig) -> Self {
            Self::with_uvf(topo, vms, cfg, None)
        }

        /// Like `new`, with the urgent-vCPU-first overlay configured as `[host.uvf]` would.
        pub(super) fn with_uvf(topo: Topology, vms: &[(u32, u32)], cfg: CreditConfig, uvf: Option<UvfHost>) -> Self {
            let npcpus = topo.npcpus() as u32;
            let mut vcpus = Vec::new();
            let (mut vm_infos, mut sched) = (Vec::new(), Vec::new());
            for (i, &(n, weight)) in vms.iter().enumerate() {
                let mut ids = Vec::new();
                for k in 0..n {
                    let id = VcpuId(vcpus.len() as u32);
                    ids.push(id);
                    vcpus.push(VcpuInfo {
                        id,
                        vm: VmId(i as u32),
                        index: k,
                        state: VcpuState::Runnable,
                        pcpu: None,
                        last_pcpu: PcpuId(0),
                        run_start: 0,
                        preempted: false,
                        run_time: 0,
                    });
                }
                vm_infos.push(VmInfo { id: VmId(i as u32), name: format!("vm{i}"), vcpus: ids });
                sched.push(VmSched::with_weight(weight));
            }
            let shape = HostShape { npcpus, nvcpus: vcpus.len() as u32, nvms: vm_infos.len() as u32, uvf };
            let n = vcpus.len();
            FakeHost {
                policy: Credit::new(cfg, shape),
                vcpus,
                pcpus: (0..npcpus).map(|p| PcpuInfo { id: PcpuId(p), current: None }).collect(),
                vms: vm_infos,
                topo,
                now: 0,
                events: EventQueue::new(),
                timers: TimerTable::default(),
                slice_event: vec![None; npcpus as usize],
                run: vec![0; n],
                sched,
                tables: None,
            }
        }

        /// One pool of every pCPU, and these hard and soft masks per vCPU.
        pub(super) fn with_affinity(mut self, masks: &[(&[u32], &[u32])]) -> Self {
            let n = self.pcpus.len();
            let m = |ps: &[u32]| if ps.is_empty() { CpuMask::full(n) } else { CpuMask::from_pcpus(ps.iter().map(|&p| PcpuId(p))) };
            let affinity = masks.iter().map(|(hard, soft)| Affinity { hard: m(hard), soft: m(soft) }).collect();
            let pool = PoolView::new(PoolId(0), "pool0".into(), CpuMask::full(n));
            self.tables = Some((pool, vec![PoolId(0); self.vcpus.len()], affinity));
            self
        }

        /// Hand VM `vm`'s settings (`self.sched`) to the policy, as the engine does before the
        /// inserts and at a run-time change.
        pub(super) fn adjust(&mut self, vm: usize) {
            let sched = self.sched[vm];
            self.call(|pol, ctx| pol.adjust(ctx, VmId(vm as u32), &sched));
        }

        pub(super) fn set_affinity(&mut self, v: usize, hard: &[u32], soft: &[u32]) {
            let n = self.pcpus.len();
            let m = |ps: &[u32]| if ps.is_empty() { CpuMask::full(n) } else { CpuMask::from_pcpus(ps.iter().map(|&p| PcpuId(p))) };
            self.tables.as_mut().expect("with_affinity first").2[v] = Affinity { hard: m(hard), soft: m(soft) };
        }

        pub(super) fn push(&mut self, at: Nanos, ev: Ev) {
            self.events.push(at, ev);
        }

        pub(super) fn call<R>(&mut self, f: impl FnOnce(&mut Credit, &mut PolicyCtx) -> R) -> R {
            let mut requests = Vec::new();
            let scope = self.tables.as_ref().map(|(pool, vcpu_pool, affinity)| Scope { pool, vcpu_pool, affinity, trivial: false });
            let host = HostView { now: self.now, vcpus: &self.vcpus, pcpus: &self.pcpus, vms: &self.vms, topology: &self.topo, scope };
            let r = {
                let mut ctx = PolicyCtx::new(host, &mut requests, &mut self.timers);
                f(&mut self.policy, &mut ctx)
            };
            for req in requests {
                match req {
                    Request::Reschedule(p) => self.push(self.now, Ev::Resched(p.idx())),
                    Request::SetTimer { timer, at } => {
                        let ev = self.events.push(at, Ev::Timer(timer));
                        if let Some(old) = self.timers.arm(timer, ev) {
                            self.events.cancel(old);
                        }
                    }
                    Request::StopTimer(timer) => {
                        if let Some(old) = self.timers.disarm(timer) {
                            self.events.cancel(old);
                        }
                    }
                    Request::UrgentEntered(_) => {}
                    Request::MoveToPool(..) => panic!("the credit test host has one pool"),
                }
            }
            r
        }

        pub(super) fn check(&self) {
            let scope = self.tables.as_ref().map(|(pool, vcpu_pool, affinity)| Scope { pool, vcpu_pool, affinity, trivial: false });
            let host = HostView { now: self.now, vcpus: &self.vcpus, pcpus: &self.pcpus, vms: &self.vms, topology: &self.topo, scope };
            if let Err(e) = self.policy.check(&host) {
                panic!("at t={}: {e}", self.now);
            }
        }

        pub(super) fn start(&mut self) {
            for vm in 0..self.vms.len() {
                self.adjust(vm);
            }
            for v in 0..self.vcpus.len() {
                self.call(|pol, ctx| pol.insert_vcpu(ctx, VcpuId(v as u32)));
            }
            for p in 0..self.pcpus.len() {
                self.schedule(p);
            }
        }

        pub(super) fn schedule(&mut self, p: usize) {
            let d = self.call(|pol, ctx| pol.do_schedule(ctx, PcpuId(p as u32)));
            let prev = self.pcpus[p].current;
            if let (Some(n), Some((_, _, affinity))) = (d.next, &self.tables) {
                // The engine's validate_decision.
                assert!(affinity[n.idx()].hard.contains(PcpuId(p as u32)), "do_schedule({p}) returned vCPU {n} outside its hard affinity");
            }
            if let Some(n) = d.next {
                let info = &self.vcpus[n.idx()];
                assert!(
                    Some(n) == prev && info.state == VcpuState::Running || info.state == VcpuState::Runnable,
                    "do_schedule({p}) returned vCPU {n} in state {:?}",
                    info.state
                );
            }
            if prev != d.next {
                if let Some(c) = prev {
                    let info = &mut self.vcpus[c.idx()];
                    self.run[c.idx()] += self.now - info.run_start;
                    info.pcpu = None;
                    if info.state == VcpuState::Running {
                        info.state = VcpuState::Runnable;
                    }
                }
                if let Some(n) = d.next {
                    let info = &mut self.vcpus[n.idx()];
                    info.state = VcpuState::Running;
                    info.pcpu = Some(PcpuId(p as u32));
                    info.last_pcpu = PcpuId(p as u32);
                    info.run_start = self.now;
                }
                self.pcpus[p].current = d.next;
            }
            if let Some(old) = self.slice_event[p].take() {
                self.events.cancel(old);
            }
            if let Some(s) = d.slice {
                self.slice_event[p] = Some(self.events.push(self.now + s, Ev::Slice(p)));
            }
            self.check();
        }

        pub(super) fn run_until(&mut self, until: Nanos) {
            while self.events.peek_time().is_some_and(|at| at <= until) {
                let (at, ev) = self.events.pop().expect("peeked");
                self.now = at;
                match ev {
                    Ev::Slice(p) => {
                        self.slice_event[p] = None;
                        self.schedule(p);
                    }
                    Ev::Resched(p) => self.schedule(p),
                    Ev::Timer(timer) => {
                        if let Some((_owner, key)) = self.timers.fire(timer) {
                            self.call(|pol, ctx| pol.on_timer(ctx, key));
                            self.check();
                        }
                    }
                    Ev::Halt(v) => {
                        if let Some(p) = self.vcpus[v].pcpu {
                            self.vcpus[v].state = VcpuState::Halted;
                            self.call(|pol, ctx| pol.sleep(ctx, VcpuId(v as u32)));
                            self.schedule(p.idx());
                        }
                    }
                    Ev::Wake(v) => {
                        if self.vcpus[v].state == VcpuState::Halted {
                            self.vcpus[v].state = VcpuState::Runnable;
                            self.call(|pol, ctx| pol.wake(ctx, VcpuId(v as u32), None));
                            self.check();
                        }
                    }
                    Ev::Yield(v) => {
                        if let Some(p) = self.vcpus[v].pcpu {
                            self.call(|pol, ctx| pol.yield_vcpu(ctx, VcpuId(v as u32), YieldReason::PauseLoop));
                            self.schedule(p.idx());
                        }
                    }
                }
            }
            self.now = until;
        }

        pub(super) fn run_times(&self) -> Vec<Nanos> {
            let mut run = self.run.clone();
            for info in &self.vcpus {
                if info.state == VcpuState::Running {
                    run[info.id.idx()] += self.now - info.run_start;
                }
            }
            run
        }

        pub(super) fn vm_run_time(&self, vm: usize) -> Nanos {
            let run = self.run_times();
            self.vms[vm].vcpus.iter().map(|v| run[v.idx()]).sum()
        }

        pub(super) fn running_on(&self, p: usize) -> Option<usize> {
            self.pcpus[p].current.map(|v| v.idx())
        }

        pub(super) fn svc(&self, v: usize) -> &CreditVcpu {
            &self.policy.vcpus[v]
        }
    }

    #[test]
    fn params_have_the_real_defaults() {
        let kind = CreditKind;
        assert_eq!(kind.name(), "credit");
        assert_eq!(kind.ple_grow(), 1);
        let specs = kind.params();
        let params = Params::defaults(&specs);
        let cfg = CreditConfig::from_params(&params);
        assert_eq!(cfg.tslice, 30 * MS);
        assert_eq!(cfg.tick_period, 10 * MS);
        assert_eq!(cfg.credits_per_tslice, 300);
        assert_eq!(cfg.ratelimit, MS);
        assert_eq!(cfg.load_balance_ratelimit, MS);
        let tslice = specs.iter().find(|s| s.name == "tslice").unwrap();
        assert!(tslice.parse(&toml::Value::String("0.5ms".into())).is_err());
        assert!(tslice.parse(&toml::Value::String("1s".into())).is_ok());
        // A 2 ms slice has one tick per slice (__csched_set_tslice); ratelimit is capped at tslice.
        let short = CreditConfig::new(2 * MS, 5 * MS, 0, 0);
        assert_eq!((short.tick_period, short.credits_per_tslice, short.ratelimit), (2 * MS, 20, 2 * MS));
        let policy = kind.build(&params, HostShape { npcpus: 2, nvcpus: 2, nvms: 1, uvf: None });
        assert_eq!(policy.name(), "credit");
    }

    #[test]
    fn cycle_wraps_and_finds_itself() {
        let mask = [false, true, false, true];
        assert_eq!(cycle(1, &mask), Some(3));
        assert_eq!(cycle(3, &mask), Some(1));
        assert_eq!(cycle(0, &[true, false]), Some(0));
        assert_eq!(cycle(0, &[false, false]), None);
    }

    #[test]
    fn weights_one_to_two_get_cpu_one_to_two() {
        let mut h = FakeHost::new(Topology::flat(4), &[(4, 256), (4, 512)], cfg());
        h.start();
        h.run_until(10 * SEC);
        let (a, b) = (h.vm_run_time(0) as f64, h.vm_run_time(1) as f64);
        assert!((a + b) >= 0.999 * 40.0 * SEC as f64, "pCPUs idled: {a} + {b}");
        let ratio = b / a;
        assert!((ratio - 2.0).abs() < 0.06, "VM run times {a} and {b}: ratio {ratio}, expected 2 within 3%");
    }

    #[test]
    fn equal_weights_share_equally_when_overcommitted() {
        // Three 2-vCPU VMs on 2 pCPUs: each VM should get a third of the host.
        let mut h = FakeHost::new(Topology::flat(2), &[(2, 256), (2, 256), (2, 256)], cfg());
        h.start();
        h.run_until(10 * SEC);
        let total = 20.0 * SEC as f64;
        for vm in 0..3 {
            let share = h.vm_run_time(vm) as f64 / total;
            assert!((share - 1.0 / 3.0).abs() < 0.02, "VM {vm} got {share} of the host");
        }
    }

    /// Seed 004 section 6.2's setup scaled to 4 pCPUs: an idle manager VM (weight 256, its vCPUs
    /// halt) beside a busy 4-vCPU VM of `weight`, non-work-conserving or not; the busy VM's share
    /// of the host over 10 s.
    fn busy_vm_share(weight: u32, work_conserving: bool) -> f64 {
        let mut config = cfg();
        config.work_conserving = work_conserving;
        let mut h = FakeHost::new(Topology::flat(4), &[(4, 256), (4, weight)], config);
        h.start();
        for v in 0..4 {
            h.push(0, Ev::Halt(v));
        }
        h.run_until(10 * SEC);
        assert!((0..4).all(|v| h.vcpus[v].state == VcpuState::Halted), "the manager VM idles");
        h.vm_run_time(1) as f64 / (40.0 * SEC as f64)
    }

    #[test]
    fn caps_hold_a_domain_to_its_weight_share_and_work_conserving_does_not() {
        // Weight 128 beside 256: 128 / 384 = 1/3 of the host, though three quarters of it idle.
        let capped = busy_vm_share(128, false);
        assert!((capped - 1.0 / 3.0).abs() < 0.03, "capped share {capped}, expected 1/3");
        // Weight 512: 2/3.
        let capped = busy_vm_share(512, false);
        assert!((capped - 2.0 / 3.0).abs() < 0.03, "capped share {capped}, expected 2/3");
        // Work-conserving: the idle VM's share goes to the busy one.
        let free = busy_vm_share(128, true);
        assert!(free > 0.97, "work-conserving share {free}");
    }

    #[test]
    fn a_parked_vcpu_is_neither_queued_nor_run_until_unparked() {
        let mut config = cfg();
        config.work_conserving = false;
        // One pCPU, a busy 1-vCPU VM of weight 64 beside an idle one of 192: capped at 25%.
        let mut h = FakeHost::new(Topology::flat(1), &[(1, 192), (1, 64)], config);
        h.start();
        h.push(0, Ev::Halt(0));
        let mut parked_seen = false;
        for step in 1..=300 {
            h.run_until(step * 10 * MS);
            if h.svc(1).parked {
                parked_seen = true;
                assert_eq!(h.running_on(0), None, "a parked vCPU does not run");
                assert!(h.svc(1).queued_on.is_none(), "nor wait in a run queue");
                // A wake of a parked vCPU does not queue it either.
                h.call(|pol, ctx| pol.wake(ctx, VcpuId(1), None));
                assert!(h.svc(1).queued_on.is_none());
            }
        }
        assert!(parked_seen, "the capped vCPU was parked");
        let share = h.vm_run_time(1) as f64 / (3.0 * SEC as f64);
        assert!((share - 0.25).abs() < 0.03, "capped share {share}");
    }

    #[test]
    fn insert_spreads_vcpus_over_idle_pcpus() {
        let mut h = FakeHost::new(Topology::flat(4), &[(4, 256)], cfg());
        h.start();
        let running: Vec<_> = (0..4).map(|p| h.running_on(p)).collect();
        assert!(running.iter().all(|r| r.is_some()), "every pCPU should run a vCPU: {running:?}");
        let mut vs: Vec<_> = running.into_iter().flatten().collect();
        vs.sort();
        assert_eq!(vs, vec![0, 1, 2, 3]);
    }

    #[test]
    fn runq_is_fifo_within_priority_and_yield_goes_behind_one_lower() {
        let mut h = FakeHost::new(Topology::flat(1), &[(4, 256)], cfg());
        // Queue by hand on pCPU 0: a, b UNDER, c OVER.
        for v in 0..3 {
            let mut svc = CreditVcpu::new(VmId(0), PcpuId(0));
            svc.pri = if v == 2 { PRI_OVER } else { PRI_UNDER };
            svc.awake = true;
            h.policy.vcpus.push(svc);
        }
        let mut d = h.policy.vcpus[0].clone();
        d.pri = PRI_UNDER;
        h.policy.vcpus.push(d.clone());
        h.policy.runq_insert(VcpuId(2)); // OVER
        h.policy.runq_insert(VcpuId(0)); // UNDER goes ahead of OVER
        h.policy.runq_insert(VcpuId(1)); // UNDER behind the first UNDER (FIFO)
        assert_eq!(h.policy.pcpus[0].runq, vec![VcpuId(0), VcpuId(1), VcpuId(2)]);
        // A yielding UNDER vCPU goes behind one lower-priority (OVER) vCPU.
        h.policy.vcpus[3].yielding = true;
        h.policy.runq_insert(VcpuId(3));
        assert_eq!(h.policy.pcpus[0].runq, vec![VcpuId(0), VcpuId(1), VcpuId(2), VcpuId(3)]);
        // Taking it off the queue clears the flag; a BOOSTed vCPU goes to the front.
        h.policy.runq_remove(VcpuId(3));
        assert!(!h.policy.vcpus[3].yielding);
        h.policy.vcpus[3].pri = PRI_BOOST;
        h.policy.runq_insert(VcpuId(3));
        assert_eq!(h.policy.pcpus[0].runq[0], VcpuId(3));
        // Sorting after an accounting period moves UNDERs ahead of OVERs, stably.
        h.policy.vcpus[0].pri = PRI_OVER;
        h.policy.runq_sort += 1;
        h.policy.runq_sort(0);
        assert_eq!(h.policy.pcpus[0].runq, vec![VcpuId(3), VcpuId(1), VcpuId(0), VcpuId(2)]);
    }

    #[test]
    fn burn_credits_charges_ten_per_ms_and_keeps_remainders() {
        let mut h = FakeHost::new(Topology::flat(1), &[(1, 256)], cfg());
        h.start();
        assert_eq!(h.running_on(0), Some(0));
        // Run 30 ms in bursts of 50 us: every 100 us of run time costs one credit in the end.
        let mut credit_before = h.svc(0).credit;
        let mut t = 0;
        for _ in 0..600 {
            t += 50 * US;
            h.policy.burn_credits(VcpuId(0), t);
        }
        assert_eq!(credit_before - h.svc(0).credit, 300);
        credit_before = h.svc(0).credit;
        h.policy.burn_credits(VcpuId(0), t + 10 * MS);
        assert_eq!(credit_before - h.svc(0).credit, 100);
    }

    #[test]
    fn accounting_splits_by_weight_floors_and_retires() {
        // 2 pCPUs: 600 credits per period; one active vCPU per VM, weights 256 and 512.
        let mut h = FakeHost::new(Topology::flat(2), &[(1, 256), (1, 512)], cfg());
        h.start();
        let host_acct = |h: &mut FakeHost| h.call(|pol, ctx| pol.acct(ctx));
        let host_start = |h: &mut FakeHost, v: u32| {
            h.policy.acct_start(VcpuId(v));
        };
        host_start(&mut h, 0);
        host_start(&mut h, 1);
        assert_eq!(h.policy.weight, 768);
        h.policy.vcpus[0].credit = -150;
        h.policy.vcpus[1].credit = -250;
        host_acct(&mut h);
        // active_sdom order is VM1 then VM0 (list_add at the head). VM1's fair share
        // ceil(600*512/768) = 400 exceeds its peak of 300, so it gets 300 and the 100 left over
        // raise the total to 600 + ceil(100*768/256) = 900 for VM0: ceil(900*256/768) = 300,
        // capped at its peak of 300.
        assert_eq!(h.svc(1).credit, 50);
        assert_eq!(h.svc(0).credit, 150);
        assert_eq!((h.svc(0).pri, h.svc(1).pri), (PRI_UNDER, PRI_UNDER));
        // Next period: VM1 earns 300 again and passes +300, so it stops earning and its credit is
        // halved; VM0's deep debt is floored at -300 and makes it OVER.
        h.policy.vcpus[0].credit = -2000;
        host_acct(&mut h);
        assert!(!h.svc(1).active);
        assert_eq!(h.svc(1).credit, (50 + 300) / 2);
        assert_eq!((h.svc(0).credit, h.svc(0).pri), (-300, PRI_OVER));
        assert_eq!(h.policy.weight, 256);
        assert_eq!(h.policy.credit_balance, 175 - 300);
        // The negative balance (-125) is handed out on top of the 600: VM0 alone may now earn
        // 300 + 125, and the retired vCPU earns nothing.
        host_acct(&mut h);
        assert_eq!((h.svc(0).credit, h.svc(0).pri), (-300 + 425, PRI_UNDER));
        assert_eq!(h.svc(1).credit, 175);
        h.check();
    }

    /// One pCPU, two vCPUs: start, run `warmup`, then halt the running vCPU so the other takes
    /// over. Returns (halted, running).
    fn halt_the_runner(h: &mut FakeHost, warmup: Nanos) -> (usize, usize) {
        h.start();
        h.run_until(warmup);
        let r = h.running_on(0).unwrap();
        h.push(h.now, Ev::Halt(r));
        h.run_until(h.now);
        (r, 1 - r)
    }

    #[test]
    fn waking_vcpu_is_boosted_and_preempts_after_the_ratelimit() {
        // One pCPU: vCPU 0 always busy, vCPU 1 halts and wakes.
        let mut h = FakeHost::new(Topology::flat(1), &[(2, 256)], cfg());
        // Let both run through some accounting so they are active and their priorities settle.
        let (r, other) = halt_the_runner(&mut h, 200 * MS);
        assert_eq!(h.running_on(0), Some(other));
        let started = h.now;
        // It wakes 200 us later: BOOST (if UNDER), but the runner is protected by the 1 ms ratelimit.
        h.policy.vcpus[r].pri = PRI_UNDER;
        h.policy.vcpus[other].pri = PRI_UNDER;
        h.push(started + 200 * US, Ev::Wake(r));
        h.run_until(started + 200 * US);
        assert_eq!(h.svc(r).pri, PRI_BOOST);
        assert_eq!(h.running_on(0), Some(other), "ratelimit keeps the runner");
        h.run_until(started + MS - 1);
        assert_eq!(h.running_on(0), Some(other));
        h.run_until(started + MS);
        assert_eq!(h.running_on(0), Some(r), "the boosted vCPU preempts once the ratelimit expires");
        // The next tick finds it running and drops the BOOST.
        h.run_until(started + 11 * MS);
        assert_ne!(h.svc(r).pri, PRI_BOOST);
    }

    #[test]
    fn without_ratelimit_a_boosted_wake_preempts_at_once() {
        let cfg = CreditConfig::new(DEFAULT_TSLICE, 0, DEFAULT_LOAD_BALANCE_RATELIMIT, 0);
        let mut h = FakeHost::new(Topology::flat(1), &[(2, 256)], cfg);
        let (r, other) = halt_the_runner(&mut h, 100 * MS);
        h.policy.vcpus[r].pri = PRI_UNDER;
        h.policy.vcpus[other].pri = PRI_UNDER;
        h.push(h.now + 10 * US, Ev::Wake(r));
        h.run_until(h.now + 10 * US);
        assert_eq!(h.running_on(0), Some(r));
    }

    #[test]
    fn wake_of_an_over_vcpu_is_not_boosted_and_does_not_preempt() {
        let mut h = FakeHost::new(Topology::flat(1), &[(2, 256)], cfg());
        let (r, other) = halt_the_runner(&mut h, 100 * MS);
        h.policy.vcpus[r].pri = PRI_OVER;
        h.policy.vcpus[other].pri = PRI_UNDER;
        let t = h.now + 5 * MS;
        h.push(t, Ev::Wake(r));
        h.run_until(t + 5 * MS);
        assert_eq!(h.svc(r).pri, PRI_OVER);
        assert_eq!(h.running_on(0), Some(other));
    }

    #[test]
    fn wake_tickles_an_idle_pcpu_which_steals_the_vcpu() {
        // Two pCPUs, vCPU 0 busy on one, vCPU 1 halted; when 1 wakes on 0's pCPU, the idle pCPU
        // is tickled and steals it instead of preempting 0.
        let mut h = FakeHost::new(Topology::flat(2), &[(2, 256)], cfg());
        h.start();
        h.run_until(50 * MS);
        let p1 = h.vcpus[1].pcpu.unwrap().idx();
        h.push(h.now, Ev::Halt(1));
        h.run_until(h.now);
        assert_eq!(h.running_on(p1), None);
        // Pretend it last ran next to vCPU 0, so it is queued behind it.
        let p0 = h.vcpus[0].pcpu.unwrap();
        h.policy.vcpus[1].processor = p0;
        h.push(h.now + 3 * MS, Ev::Wake(1));
        h.run_until(h.now + 3 * MS);
        assert_eq!(h.running_on(p0.idx()), Some(0), "the busy vCPU is not preempted");
        assert_eq!(h.running_on(p1), Some(1), "the idle pCPU stole the woken vCPU");
    }

    #[test]
    fn steal_takes_only_strictly_better_non_yielding_vcpus() {
        let mut h = FakeHost::new(Topology::flat(2), &[(4, 256)], cfg());
        h.start();
        // pCPU 0 and 1 run two vCPUs; two more wait. Move the waiters onto pCPU 0's queue.
        let waiting: Vec<usize> = (0..4).filter(|&v| h.vcpus[v].state == VcpuState::Runnable).collect();
        assert_eq!(waiting.len(), 2);
        for &v in &waiting {
            h.policy.runq_remove(VcpuId(v as u32));
        }
        for &v in &waiting {
            h.policy.vcpus[v].processor = PcpuId(0);
            h.policy.runq_insert(VcpuId(v as u32));
        }
        let (w0, w1) = (waiting[0], waiting[1]);
        // Same priority as the thief's best (UNDER vs UNDER): nothing to steal.
        let host = HostView { now: h.now, vcpus: &h.vcpus, pcpus: &h.pcpus, vms: &h.vms, topology: &h.topo, scope: None };
        assert_eq!(h.policy.load_balance(&host, 1, PRI_UNDER), None);
        // The thief's best is OVER: the first UNDER waiter is taken, unless it yielded.
        h.policy.vcpus[w0].yielding = true;
        assert_eq!(h.policy.load_balance(&host, 1, PRI_OVER), Some(VcpuId(w1 as u32)));
        assert_eq!(h.svc(w1).processor, PcpuId(1));
        assert_eq!(h.policy.pcpus[0].runq, vec![VcpuId(w0 as u32)]);
    }

    #[test]
    fn cpu_pick_prefers_own_idle_pcpu_then_idle_core() {
        // 2 cores x 2 threads. vCPU 0 last ran on pCPU 1.
        let topo = Topology::new(4, 1, 1, 2).unwrap();
        let mut h = FakeHost::new(topo, &[(1, 256)], cfg());
        h.policy.fit_to(&HostView { now: 0, vcpus: &h.vcpus, pcpus: &h.pcpus, vms: &h.vms, topology: &h.topo, scope: None });
        let mut svc = CreditVcpu::new(VmId(0), PcpuId(1));
        svc.awake = true;
        h.policy.vcpus.push(svc);
        let host = HostView { now: 0, vcpus: &h.vcpus, pcpus: &h.pcpus, vms: &h.vms, topology: &h.topo, scope: None };
        // All idle: stays where it was.
        assert_eq!(h.policy.cpu_pick(&host, VcpuId(0), false), 1);
        // pCPU 1 busy with a queue, pCPU 0 (its SMT sibling) idle, core 1 (pCPUs 2, 3) fully idle:
        // the fully idle core wins over the half-busy one.
        h.policy.idlers[1] = false;
        h.policy.pcpus[1].runq.push(VcpuId(0));
        let pick = h.policy.cpu_pick(&host, VcpuId(0), true);
        assert!(pick == 2 || pick == 3, "picked {pick}");
        // Only pCPU 0 idle: that is the choice.
        h.policy.idlers = vec![true, false, false, false];
        assert_eq!(h.policy.cpu_pick(&host, VcpuId(0), false), 0);
        // Nothing idle: stay.
        h.policy.idlers = vec![false; 4];
        assert_eq!(h.policy.cpu_pick(&host, VcpuId(0), false), 1);
    }

    // ---- affinity (the balance steps of _csched_cpu_pick, __runq_tickle, csched_load_balance) ----

    /// A host of `n` flat pCPUs with `nv` hand-made awake vCPUs of one VM (all on `processor`),
    /// with the given masks; the policy has read its pool.
    fn affine_host(n: u32, masks: &[(&[u32], &[u32])], processor: u32) -> FakeHost {
        let mut h = FakeHost::new(Topology::flat(n), &[(masks.len() as u32, 256)], cfg()).with_affinity(masks);
        h.call(|pol, ctx| pol.fit_to(&ctx.host));
        for _ in masks {
            let mut svc = CreditVcpu::new(VmId(0), PcpuId(processor));
            svc.awake = true;
            h.policy.vcpus.push(svc);
        }
        h
    }

    #[test]
    fn cpu_pick_tries_soft_then_hard_and_never_leaves_hard() {
        // vCPU 0: hard {1, 2}, soft {2}, last on pCPU 0 (outside its hard affinity).
        let mut h = affine_host(4, &[(&[1, 2], &[2])], 0);
        let pick = |h: &mut FakeHost| h.call(|pol, ctx| pol.cpu_pick(&ctx.host, VcpuId(0), false));
        assert_eq!(pick(&mut h), 2, "all idle: the soft step finds pCPU 2");
        h.policy.idlers[2] = false;
        assert_eq!(pick(&mut h), 1, "soft pCPU busy: the hard step finds idle pCPU 1");
        h.policy.idlers = vec![true, false, false, true];
        assert_eq!(pick(&mut h), 1, "no idler inside hard: the next allowed pCPU after the processor, not idle 0 or 3");
        // Without a useful soft mask (soft covers hard), only the hard step runs.
        h.set_affinity(0, &[1, 2], &[1, 2, 3]);
        h.policy.idlers = vec![true; 4];
        assert_eq!(pick(&mut h), 1);
        // Its own processor is kept when allowed and idle.
        h.policy.vcpus[0].processor = PcpuId(2);
        assert_eq!(pick(&mut h), 2);
    }

    #[test]
    fn tickle_wakes_only_suitable_idlers_soft_first() {
        // vCPU 0 runs on pCPU 0; vCPU 1 (hard {0, 2, 3}, soft {3}) is queued on pCPU 0 behind it.
        let mut h = affine_host(4, &[(&[], &[]), (&[0, 2, 3], &[3])], 0);
        h.policy.pcpus[0].curr = Some(VcpuId(0));
        h.policy.idlers = vec![false, true, true, true];
        let tickle = |h: &mut FakeHost| h.call(|pol, ctx| pol.runq_tickle(ctx, VcpuId(1)));
        // The rotor would pick pCPU 1 (the first idler after 3); the soft step picks 3.
        tickle(&mut h);
        assert_eq!(h.policy.idlers, vec![false, true, true, false], "soft step: pCPU 3");
        // Soft pCPU taken: the hard step wakes 2, never 1 (outside hard).
        tickle(&mut h);
        assert_eq!(h.policy.idlers, vec![false, true, false, false], "hard step: pCPU 2");
        // Only pCPU 1 idle, which it may not use: nobody is woken for an equal priority...
        tickle(&mut h);
        assert_eq!(h.policy.idlers, vec![false, true, false, false]);
        let drain = |h: &mut FakeHost| std::iter::from_fn(|| h.events.pop()).map(|(_, e)| e).collect::<Vec<Ev>>();
        assert!(drain(&mut h).iter().all(|e| !matches!(e, Ev::Resched(1))));
        // ...and a higher priority preempts cur on pCPU 0 rather than waking pCPU 1.
        h.policy.vcpus[1].pri = PRI_BOOST;
        tickle(&mut h);
        assert_eq!(h.policy.idlers, vec![false, true, false, false]);
        assert_eq!(drain(&mut h), vec![Ev::Resched(0)]);
    }

    #[test]
    fn steal_takes_soft_affine_work_first_and_only_what_may_run_on_the_thief() {
        // pCPU 0 runs vCPU 0 and queues vCPUs 1 (no soft affinity) and 2 (soft {1}); pCPU 1 idles.
        let mut h = affine_host(3, &[(&[], &[]), (&[], &[]), (&[], &[1])], 0);
        h.policy.pcpus[0].curr = Some(VcpuId(0));
        h.policy.idlers = vec![false, true, true];
        h.policy.runq_insert(VcpuId(1));
        h.policy.runq_insert(VcpuId(2));
        let steal = |h: &mut FakeHost, thief: usize| h.call(|pol, ctx| pol.load_balance(&ctx.host, thief, PRI_IDLE));
        // Without the soft step the head (vCPU 1) would go; the soft step takes vCPU 2.
        assert_eq!(steal(&mut h, 1), Some(VcpuId(2)));
        assert_eq!(h.svc(2).processor, PcpuId(1));
        // vCPU 1 pinned to pCPU 0: pCPU 2 may not steal it.
        h.set_affinity(1, &[0], &[]);
        assert_eq!(steal(&mut h, 2), None);
        assert_eq!(h.policy.pcpus[0].runq, vec![VcpuId(1)]);
        // Allowed on 0 and 2: stolen in the hard step.
        h.set_affinity(1, &[0, 2], &[]);
        assert_eq!(steal(&mut h, 2), Some(VcpuId(1)));
    }

    #[test]
    fn a_vcpu_whose_affinity_excludes_its_pcpu_is_moved() {
        // Two busy vCPUs on 3 pCPUs with full masks; then each one's hard affinity is changed to
        // exclude where it is: the running one leaves at its pCPU's next do_schedule, the halted
        // one wakes elsewhere without a BOOST.
        let mut h = FakeHost::new(Topology::flat(3), &[(2, 256)], cfg()).with_affinity(&[(&[], &[]), (&[], &[])]);
        h.start();
        h.run_until(50 * MS);
        let p0 = h.vcpus[0].pcpu.unwrap().idx() as u32;
        let others: Vec<u32> = (0..3).filter(|&p| p != p0).collect();
        h.set_affinity(0, &others, &[]);
        h.push(h.now, Ev::Resched(p0 as usize));
        h.run_until(h.now);
        let now_on = h.vcpus[0].pcpu.expect("still running").idx() as u32;
        assert!(others.contains(&now_on), "vCPU 0 moved from {p0} to {now_on}");
        // vCPU 1 halts, is re-pinned away from its processor, and wakes.
        h.push(h.now, Ev::Halt(1));
        h.run_until(h.now);
        let home = h.svc(1).processor.0;
        let allowed: Vec<u32> = (0..3).filter(|&p| p != home).collect();
        h.set_affinity(1, &allowed, &[]);
        h.policy.vcpus[1].pri = PRI_UNDER;
        h.push(h.now + MS, Ev::Wake(1));
        h.run_until(h.now + MS);
        assert!(allowed.contains(&h.svc(1).processor.0), "woken on {:?}", h.svc(1).processor);
        assert_ne!(h.svc(1).pri, PRI_BOOST, "a migration wake is not boosted");
        h.run_until(h.now + 100 * MS);
        assert!(h.vcpus[1].pcpu.is_some_and(|p| allowed.contains(&p.0)));
    }

    #[test]
    fn yield_bypasses_ratelimit_and_lets_the_waiter_run() {
        let mut h = FakeHost::new(Topology::flat(1), &[(2, 256)], cfg());
        h.start();
        h.run_until(100 * MS);
        let r = h.running_on(0).unwrap();
        let other = 1 - r;
        h.policy.vcpus[r].pri = PRI_UNDER;
        h.policy.vcpus[other].pri = PRI_UNDER;
        // Yield right after being scheduled: the ratelimit would otherwise keep it.
        h.push(h.now + 10 * US, Ev::Yield(r));
        h.run_until(h.now + 10 * US);
        assert_eq!(h.running_on(0), Some(other));
        assert!(h.svc(r).yielding && h.svc(r).queued_on == Some(PcpuId(0)), "the yielder waits, flagged");
        // A lone vCPU that yields keeps running.
        let mut h = FakeHost::new(Topology::flat(1), &[(1, 256)], cfg());
        h.start();
        h.push(5 * MS, Ev::Yield(0));
        h.run_until(5 * MS);
        assert_eq!(h.running_on(0), Some(0));
        assert!(!h.svc(0).yielding);
    }

    #[test]
    fn the_ticker_is_stopped_when_a_pcpu_idles_and_rearmed_when_it_gets_work() {
        // One vCPU on one pCPU: it halts (csched_schedule stops spc->ticker), then wakes.
        let mut h = FakeHost::new(Topology::flat(1), &[(1, 256)], cfg());
        h.start();
        let ticker = h.policy.pcpus[0].ticker.expect("a busy pCPU made its ticker");
        assert!(h.timers.entry(ticker.id()).pending.is_some());
        h.run_until(15 * MS);
        h.push(h.now, Ev::Halt(0));
        h.run_until(h.now);
        assert_eq!(h.running_on(0), None);
        assert!(h.timers.entry(ticker.id()).pending.is_none(), "an idle pCPU's tick is stopped");
        h.push(h.now + 7 * MS, Ev::Wake(0));
        h.run_until(h.now + 7 * MS);
        assert_eq!(h.running_on(0), Some(0));
        assert!(h.timers.entry(ticker.id()).pending.is_some(), "and restarted when it runs again");
        assert_eq!(h.policy.pcpus[0].ticker, Some(ticker), "the same timer, re-armed");
        h.run_until(100 * MS);
        h.check();
    }

    #[test]
    fn tick_moves_a_running_vcpu_to_an_idle_pcpu_when_others_wait() {
        // Two vCPUs stacked on one pCPU while the other idles and missed its chance to steal
        // (load-balance ratelimit): the tick sees the idler and moves the running vCPU there.
        let mut h = FakeHost::new(Topology::flat(2), &[(2, 256)], cfg());
        h.start();
        h.run_until(25 * MS);
        let p_a = h.vcpus[0].pcpu.unwrap().idx();
        let p_b = h.vcpus[1].pcpu.unwrap().idx();
        assert_ne!(p_a, p_b);
        // vCPU 1 halts; its pCPU idles.
        h.push(h.now, Ev::Halt(1));
        h.run_until(h.now);
        assert_eq!(h.running_on(p_b), None);
        // It wakes queued on vCPU 0's pCPU; the tickled idler balanced under 1 ms ago, so it
        // cannot steal yet and goes back to idle.
        h.policy.vcpus[1].processor = PcpuId(p_a as u32);
        h.policy.pcpus[p_b].last_load_balance = Some(h.now);
        h.push(h.now + 100 * US, Ev::Wake(1));
        h.run_until(h.now + 100 * US);
        assert_eq!(h.running_on(p_b), None);
        assert_eq!(h.policy.pcpus[p_a].runq, vec![VcpuId(1)]);
        // The 30 ms tick on the busy pCPU finds the idler and moves its running vCPU.
        h.run_until(31 * MS);
        assert!(h.running_on(0).is_some() && h.running_on(1).is_some(), "{:?} {:?}", h.running_on(0), h.running_on(1));
    }

    #[test]
    fn check_catches_a_vcpu_queued_while_running() {
        let mut h = FakeHost::new(Topology::flat(1), &[(2, 256)], cfg());
        h.start();
        let r = h.running_on(0).unwrap();
        h.policy.pcpus[0].runq.push(VcpuId(r as u32));
        let host = HostView { now: h.now, vcpus: &h.vcpus, pcpus: &h.pcpus, vms: &h.vms, topology: &h.topo, scope: None };
        assert!(h.policy.check(&host).is_err());
    }

    #[test]
    fn invariants_hold_under_halts_wakes_and_yields() {
        // Every event is followed by `check` inside the fake host; this drives many paths at once.
        let mut h = FakeHost::new(Topology::new(4, 2, 2, 1).unwrap(), &[(3, 256), (4, 512), (2, 128)], cfg());
        h.start();
        for k in 0..400u64 {
            let v = ((k * 5) % 9) as usize;
            let t = k * 1_700 * US;
            match k % 3 {
                0 => h.push(t, Ev::Halt(v)),
                1 => h.push(t, Ev::Yield(v)),
                _ => {}
            }
            h.push(t + 900 * US, Ev::Wake(v));
        }
        h.run_until(SEC);
        let total: Nanos = h.run_times().iter().sum();
        assert!(total > 3 * SEC, "the host mostly ran vCPUs: {total}");
    }

    #[test]
    fn runs_are_deterministic() {
        let run = || {
            let mut h = FakeHost::new(Topology::flat(3), &[(2, 256), (3, 384), (2, 128)], cfg());
            h.start();
            for k in 0..20u64 {
                h.push(k * 37 * MS, Ev::Halt((k % 7) as usize));
                h.push(k * 37 * MS + 3 * MS, Ev::Wake((k % 7) as usize));
            }
            h.run_until(2 * SEC);
            h.run_times()
        };
        assert_eq!(run(), run());
    }
}
