//! Xen's Credit1 scheduler, read from xen/common/sched/credit.c (Xen 4.18, with the 1 ms
//! load-balance ratelimit and yielded-vCPUs-are-not-stolen patches; the older releases from the
//! release tags of xen-project/xen). Function names in comments are the C functions each
//! piece models. `[host.params] xen` selects the credit1 of Xen 3.3, 4.4, 4.7 or 4.18 (the
//! default): `version.rs` names every rule that differs (yield, ratelimit, stealing, 3.3's
//! tick-sampled debits and tickling, BOOSTs on moves and unparks, placement), and the code below
//! asks it where the versions part.
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
//!   behaves exactly as it would without affinity. Xen moves a vCPU whose affinity changed at once
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
//! - A pCPU joins `prv->idlers` when the engine brings it online (its first `do_schedule`), as
//!   `init_pdata` adds it when the pCPU comes up.
//! - Across versions (docs/model.md section 7.2.1): the tick stops on an idle pCPU in every version
//!   (4.8 on; before, it only sorted an empty queue there); 3.3's accounting runs on its own 30 ms
//!   timer instead of the master's every third tick (same instants); 3.3's tickle reschedules its
//!   mask in ascending pCPU order. 4.4's first balance step prefers the domain's NUMA node
//!   affinity (`CSCHED_BALANCE_NODE_AFFINITY`) where 4.5 on prefer soft affinity: the same loops,
//!   `Xen::prefer_step` (docs/model.md section 7.2.2).
//!
//! The urgent-vCPU-first overlay of seed 000 (`[host.uvf]`) rides on top when configured:
//! `credit/urgent.rs`.
//!
//! Files, one concern each: this one holds the constants, the private data, the run queues and
//! the `Policy` entry points (`csched_schedule` is `do_schedule`); `account.rs` the credit
//! accounting (`burn_credits`, `csched_acct`, `csched_tick`, caps); `pick.rs` placement
//! (`_csched_cpu_pick`); `tickle.rs` the wake side (`__runq_tickle`, `csched_unit_wake`'s tail,
//! `vcpu_migrate`); `balance.rs` work stealing (`csched_load_balance`, `csched_runq_steal`);
//! `tests.rs` the unit tests and their fake host.

mod account;
mod balance;
mod microsliced;
mod pick;
mod tickle;
mod urgent;
pub mod version;

use super::{HostFeature, HostShape, PolicyKind};
use crate::hardware::cpumask::CpuMask;
use crate::hypervisor::policy::{
    Decision, HoldPreemption, HostView, IpiKind, MicroSliced, Policy, PolicyCtx, Timer, VcpuState, VmSched, YieldReason,
};
use crate::hypervisor::uvf::carrier::UrgentBase;
use crate::hypervisor::uvf::Uvf;
use crate::ids::{PcpuId, VcpuId, VmId};
use crate::params::{ParamSpec, Params};
use crate::time::{format_duration, Nanos, MS, SEC, US};
use version::{PreferStep, Xen};

// ---- Constants of xen/common/sched/credit.c and xen/common/sched/private.h ----

/// `CSCHED_DEFAULT_TSLICE_MS`: 30 ms timeslice; `XEN_SYSCTL_CSCHED_TSLICE_MIN/MAX` bound it to 1..1000 ms.
const DEFAULT_TSLICE: Nanos = 30 * MS;
const MIN_TSLICE: Nanos = MS;
const MAX_TSLICE: Nanos = 1000 * MS;
/// `CSCHED_TICKS_PER_TSLICE`: the accounting tick runs 3 times per timeslice (every 10 ms).
const TICKS_PER_TSLICE: u64 = 3;
/// `CSCHED_CREDITS_PER_MSEC`: a running vCPU burns 10 credits per ms.
const CREDITS_PER_MSEC: u64 = 10;
/// Xen 3.3's `CSCHED_CREDITS_PER_TICK`: the running vCPU pays 100 credits at each 10 ms tick
/// (`csched_vcpu_acct`), however long it ran; 3.3 has no `burn_credits`.
const CREDITS_PER_TICK_3_3: i64 = 100;
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

/// A run queue's vCPUs counted by priority (BOOST, UNDER, OVER, IDLE), kept by `runq_insert`,
/// `runq_remove` and `set_pri`. Xen walks its list at each `__runq_insert`; the walk ends at the
/// first lower-priority vCPU, so when the counts say there is none it would reach the tail: the
/// same place, found without the walk (O(queue) per insert made a host of 262,144 waiting vCPUs
/// quadratic to set up).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct PriCounts([u32; 4]);

impl PriCounts {
    const LEVELS: [Pri; 4] = [PRI_BOOST, PRI_UNDER, PRI_OVER, PRI_IDLE];

    fn slot(pri: Pri) -> usize {
        Self::LEVELS.iter().position(|&l| l == pri).expect("credit: a priority outside BOOST, UNDER, OVER, IDLE")
    }

    fn add(&mut self, pri: Pri) {
        self.0[Self::slot(pri)] += 1;
    }

    fn sub(&mut self, pri: Pri) {
        self.0[Self::slot(pri)] -= 1;
    }

    /// Whether a counted vCPU has a priority below `pri`.
    fn any_below(&self, pri: Pri) -> bool {
        self.0[Self::slot(pri) + 1..].iter().any(|&n| n > 0)
    }

    /// The counts of the vCPUs of `runq`.
    fn of(runq: &[VcpuId], vcpus: &[CreditVcpu]) -> Self {
        let mut c = PriCounts::default();
        for v in runq {
            c.add(vcpus[v.idx()].pri);
        }
        c
    }
}

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
         30 ms slices with a 1 ms ratelimit; pCPUs with only OVER or no work steal from peers. As Xen 4.18 \
         by default; `xen` selects the credit1 of Xen 3.3, 4.4 or 4.7."
    }
    fn params(&self) -> Vec<ParamSpec> {
        vec![
            ParamSpec::choice(
                "xen",
                Xen::NAMES,
                Xen::DEFAULT,
                "the Xen release whose credit1 to follow: 3.3 (seed 004; tick-sampled debits, no ratelimit, \
                 no yield, no PLE), 4.4 (seed 001), 4.7 (seed 002), 4.18 (today's code); the rules that differ \
                 are in docs/model.md section 7.2",
            ),
            ParamSpec::duration(
                "tslice",
                DEFAULT_TSLICE,
                "timeslice and accounting period (sched_credit_tslice_ms, CSCHED_DEFAULT_TSLICE_MS = 30 ms \
                 in xen/common/sched/credit.c); the tick is a third of it; fixed at 30 ms in Xen 3.3",
            )
            .range(MIN_TSLICE as f64, MAX_TSLICE as f64),
            ParamSpec::duration(
                "ratelimit",
                DEFAULT_RATELIMIT,
                "a vCPU that has run less than this is not preempted, except (Xen 4.8 on) when it yields \
                 (sched_ratelimit_us, SCHED_DEFAULT_RATELIMIT_US = 1000 us in xen/common/sched/private.h); \
                 0 disables it; capped at tslice; absent in Xen 3.3 (introduced in 4.2), where it is 0",
            )
            .range(0.0, MAX_RATELIMIT as f64),
            ParamSpec::duration(
                "load_balance_ratelimit",
                DEFAULT_LOAD_BALANCE_RATELIMIT,
                "minimum time between two work-stealing attempts of one pCPU (load-balance-ratelimit, \
                 CSCHED_DEFAULT_LOAD_BALANCE_RATELIMIT_US = 1000 us, Xen 4.18); absent before 4.18, where \
                 it is 0 (steal at every chance)",
            )
            .range(0.0, MAX_LOAD_BALANCE_RATELIMIT as f64),
            ParamSpec::duration(
                "migration_delay",
                0,
                "a vCPU that ran less than this long ago is cache-hot and is not stolen \
                 (vcpu_migration_delay, default 0 in xen/common/sched/credit.c); absent in Xen 3.3",
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
    /// The tunables the chosen Xen lacks take the value that version behaves as (0: none; 30 ms
    /// for 3.3's slice); writing another value for them is an error naming the version.
    fn resolve_params(&self, params: &mut Params, given: &dyn Fn(&str) -> bool) -> Result<(), (&'static str, String)> {
        let xen = xen_of(params);
        let absent: [(&'static str, bool, Nanos, &str); 4] = [
            ("tslice", xen.has_tslice_param(), DEFAULT_TSLICE, "sched_credit_tslice_ms arrived in Xen 4.2"),
            ("ratelimit", xen.has_ratelimit(), 0, "sched_ratelimit_us arrived in Xen 4.2"),
            ("load_balance_ratelimit", xen.has_load_balance_ratelimit(), 0, "load-balance-ratelimit arrived in Xen 4.18"),
            ("migration_delay", xen.has_migration_delay(), 0, "vcpu_migration_delay is not in Xen 3.3"),
        ];
        for (name, exists, value, why) in absent {
            if exists {
                continue;
            }
            let written = params.duration(name);
            if given(name) && written != value {
                return Err((
                    name,
                    format!(
                        "xen = \"{xen}\" has no {name} ({why}): it behaves as {}; leave {name} out, write {}, \
                         or choose a later xen ({})",
                        format_duration(value),
                        format_duration(value),
                        Xen::NAMES.join(", ")
                    ),
                ));
            }
            params.set(name, crate::params::ParamValue::Duration(value));
        }
        Ok(())
    }
    fn lacks(&self, params: &Params, feature: HostFeature) -> Option<String> {
        let xen = xen_of(params);
        let (has, what, since) = match feature {
            HostFeature::PauseLoopExiting => (
                xen.has_ple(),
                "pause-loop exiting",
                "Xen 4.0 (xen/arch/x86/hvm/vmx/vmcs.c ple_window, vmx.c EXIT_REASON_PAUSE_INSTRUCTION)",
            ),
            HostFeature::SoftAffinity => {
                (xen.has_soft_affinity(), "soft affinity", "Xen 4.5 (cpu_soft_affinity, CSCHED_BALANCE_SOFT_AFFINITY)")
            }
            HostFeature::Cpupools => (xen.has_cpupools(), "cpupools", "Xen 4.1 (xen/common/cpupool.c)"),
            HostFeature::HaltPolling => return super::default_lacks(self.name(), feature),
            HostFeature::NodeAffinity if xen.prefer_step() == version::PreferStep::Soft => {
                return Some(format!(
                    "xen = \"{xen}\" (policy \"credit\") no longer schedules by a domain's NUMA node affinity: \
                     Xen 4.5 replaced it with per-vCPU soft affinity (commit db6b221591), which xl's placement \
                     then sets; write cpus_soft for that"
                ))
            }
            HostFeature::NodeAffinity => (
                xen.has_node_affinity_step(),
                "per-domain NUMA node affinity",
                "Xen 4.3 (CSCHED_BALANCE_NODE_AFFINITY) and left the scheduler in 4.5",
            ),
        };
        (!has).then(|| format!("xen = \"{xen}\" (policy \"credit\") has no {what}: it arrived in {since}"))
    }
    /// Xen's PLE window is fixed: VMX `ple_window` 4096 without grow/shrink (arch/x86/hvm/vmx/vmx.c).
    fn ple_grow(&self) -> u64 {
        1
    }
}

/// The `xen` parameter (loaded scenarios hold one of `Xen::NAMES`).
fn xen_of(params: &Params) -> Xen {
    Xen::parse(params.choice("xen")).expect("the xen parameter is one of Xen::NAMES")
}

/// Tunables and the values `__csched_set_tslice` derives from them.
#[derive(Clone, Debug, PartialEq)]
struct CreditConfig {
    /// Which Xen's credit1 to follow (`version.rs`).
    xen: Xen,
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
        cfg.with_xen(xen_of(params))
    }

    /// The same tunables under `xen`: what that version lacks takes the value it behaves as
    /// (`CreditKind::resolve_params` already refused any other), so the rules never read a
    /// tunable their version does not have.
    fn with_xen(self, xen: Xen) -> Self {
        let tslice = if xen.has_tslice_param() { self.tslice } else { DEFAULT_TSLICE };
        let keep = |has: bool, value: Nanos| if has { value } else { 0 };
        let mut cfg = Self::new(
            tslice,
            keep(xen.has_ratelimit(), self.ratelimit),
            keep(xen.has_load_balance_ratelimit(), self.load_balance_ratelimit),
            keep(xen.has_migration_delay(), self.migration_delay),
        );
        cfg.work_conserving = self.work_conserving;
        cfg.xen = xen;
        cfg
    }

    fn new(tslice: Nanos, ratelimit: Nanos, load_balance_ratelimit: Nanos, migration_delay: Nanos) -> Self {
        let ticks = if tslice < TICKS_PER_TSLICE * MS { 1 } else { TICKS_PER_TSLICE };
        CreditConfig {
            xen: Xen::V4_18,
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
    /// How many of `runq` hold each priority (`PriCounts`): an insertion behind every vCPU of
    /// its priority or higher goes to the tail without a walk when none is lower.
    runq_pri: PriCounts,
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
    /// The ticker is armed (between `start_tick` and `stop_tick`).
    ticking: bool,
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
    idlers: CpuMask,
    /// pCPUs with more than one runnable vCPU (`nr_runnable > 1`, the peers
    /// `csched_load_balance` tries), kept by `note_load`.
    overloaded: CpuMask,
    /// Per-pCPU topology masks for `_csched_cpu_pick` (pick.rs), built at the first pick.
    topo_masks: pick::TopoMasks,
    /// Scratch masks of `_csched_cpu_pick` and `__runq_tickle`, reused across calls.
    pick_masks: [CpuMask; 3],
    /// `runq_sort`'s scratch list (the OVER vCPUs of the queue being sorted), reused.
    sort_over: Vec<VcpuId>,
    /// `acct`'s copies of the active domain list and of one domain's active vCPUs (the lists it
    /// walks while it changes them), reused.
    acct_sdoms: Vec<VmId>,
    acct_units: Vec<VcpuId>,
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
    /// Seed 002's micro-sliced cores (`[host.microsliced]`): the urgent signals detected
    /// (`microsliced.rs`); None = off.
    micro: Option<crate::hypervisor::critical_detect::Detect>,
}

// ---- cpumask helpers ----

/// `cpumask_cycle(n, mask)`: the first pCPU after `n` in `mask`, wrapping; `n` itself if it is the
/// only one; `None` for an empty mask. Over a `Vec<bool>`: the tests' reference picks use it
/// (the policy uses `CpuMask::cycle`).
#[cfg(test)]
fn cycle(n: usize, mask: &[bool]) -> Option<usize> {
    let len = mask.len();
    (1..=len).map(|k| (n + k) % len).find(|&i| mask[i])
}

/// `cpumask_cycle` over a mask, as a pCPU index.
fn cycle_mask(n: usize, mask: &CpuMask) -> Option<usize> {
    mask.cycle(n).map(|p| p.idx())
}

/// The steps of `for_each_affinity_balance_step` (private.h): `BALANCE_SOFT_AFFINITY` first, then
/// `BALANCE_HARD_AFFINITY`. In Xen 4.3 and 4.4 the first step is `CSCHED_BALANCE_NODE_AFFINITY`
/// and the second `CSCHED_BALANCE_CPU_AFFINITY` (`for_each_csched_balance_step`): the same loops
/// with the domain's node affinity where 4.5 put the vCPU's soft affinity (`Xen::prefer_step`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Soft,
    Hard,
}

const BALANCE_STEPS: [Step; 2] = [Step::Soft, Step::Hard];

impl Credit {
    fn new(cfg: CreditConfig, host: HostShape) -> Self {
        let npcpus = host.npcpus as usize;
        let pcpu = CreditPcpu {
            runq: Vec::new(),
            runq_pri: PriCounts::default(),
            curr: None,
            runq_sort_last: 0,
            idle_bias: npcpus.saturating_sub(1),
            last_load_balance: None,
            ticker: None,
            ticking: false,
        };
        Credit {
            credit: (cfg.credits_per_tslice as u64) * npcpus as u64,
            cfg,
            vcpus: Vec::with_capacity(host.nvcpus as usize),
            pcpus: vec![pcpu; npcpus],
            doms: vec![CreditDom::default(); host.nvms as usize],
            active_sdom: Vec::new(),
            idlers: CpuMask::full(npcpus),
            overloaded: CpuMask::with_len(npcpus),
            topo_masks: pick::TopoMasks::default(),
            pick_masks: Default::default(),
            sort_over: Vec::new(),
            acct_sdoms: Vec::new(),
            acct_units: Vec::new(),
            balance_bias: Vec::new(),
            runq_sort: 0,
            weight: 0,
            credit_balance: 0,
            master_ticker: None,
            last_tickle_cpu: npcpus.saturating_sub(1),
            uvf: host.uvf.clone().map(|cfg| Uvf::new(cfg, host.nvcpus as usize, npcpus)),
            pool_known: false,
            micro: host.microsliced,
        }
    }

    /// Grow the per-entity tables to the host (the engine may hand us more than `HostShape` said).
    fn fit_to(&mut self, host: &HostView) {
        if self.doms.len() < host.vms.len() {
            self.doms.resize(host.vms.len(), CreditDom::default());
        }
        if !self.pool_known {
            // A pool's instance owns only its pCPUs (csched_alloc_pdata / init_pdata run for
            // those), and `prv->credit` counts the pool's pCPUs. No pCPU is an idler yet: init_pdata
            // adds a pCPU to `prv->idlers` when it is brought up, and the engine brings each pCPU
            // online at its first `do_schedule` (a seeded time in [0, start_skew)), which sets its
            // bit. Until then a tickle or a placement cannot count on it.
            self.pool_known = true;
            self.idlers.clear();
            self.credit = self.cfg.credits_per_tslice as u64 * host.npcpus() as u64;
        }
        if self.balance_bias.is_empty() {
            // init_pdata: the first pCPU of each node starts its node's balance bias.
            let nodes = host.topology.numa_nodes as usize;
            self.balance_bias =
                (0..nodes).map(|n| host.pcpu_ids().find(|p| host.topology.place(*p).node as usize == n).map_or(0, |p| p.idx())).collect();
        }
    }

    /// Whether `v` takes the first balance step: `has_soft_affinity` from Xen 4.5 on,
    /// `__vcpu_has_node_affinity` in 4.4 (its domain's node affinity is explicit, short of every
    /// pCPU and meets hard ∩ pool), never in 3.3. Older versions ignore soft masks (the loader
    /// refuses `cpus_soft` for them).
    fn soft(&self, host: &HostView, v: VcpuId) -> bool {
        match self.cfg.xen.prefer_step() {
            PreferStep::Soft => host.has_soft(v),
            PreferStep::Node => host.has_node_affinity(v),
            PreferStep::None => false,
        }
    }

    /// Whether pCPU `p` is in `affinity_balance_cpumask(v, step)` ∩ the pool: for the first step
    /// soft ∩ hard (4.5 on) or the domain's `node_affinity_cpumask` ∩ hard (4.4,
    /// `csched_balance_cpumask`); only used when `soft` holds, so never empty and the fallback to
    /// hard is never needed. Hard for the hard step.
    fn in_balance_mask(&self, host: &HostView, v: VcpuId, p: usize, step: Step) -> bool {
        let p = PcpuId(p as u32);
        match step {
            Step::Soft if self.cfg.xen.prefer_step() == PreferStep::Node => host.node_affine(v, p),
            Step::Soft => host.prefers(v, p),
            Step::Hard => host.may_run(v, p),
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
        let pc = &self.pcpus[p.idx()];
        let runq = &pc.runq;
        let mut at = if pc.runq_pri.any_below(pri) {
            runq.iter().position(|u| pri > self.vcpus[u.idx()].pri).unwrap_or(runq.len())
        } else {
            runq.len()
        };
        if yielding && at < runq.len() {
            at += 1;
        }
        let pc = &mut self.pcpus[p.idx()];
        pc.runq.insert(at, v);
        pc.runq_pri.add(pri);
        self.vcpus[v.idx()].queued_on = Some(p);
        self.note_load(p.idx());
    }

    /// `__runq_remove`: also clears the YIELD flag ("Clear YIELD flag when scheduling back in").
    fn runq_remove(&mut self, v: VcpuId) {
        let p = self.vcpus[v.idx()].queued_on.take().expect("credit: removing a vCPU that is not queued");
        let pc = &mut self.pcpus[p.idx()];
        pc.runq.retain(|u| *u != v);
        pc.runq_pri.sub(self.vcpus[v.idx()].pri);
        self.vcpus[v.idx()].yielding = false;
        self.note_load(p.idx());
    }

    /// Set `v`'s priority (`svc->pri = ...`), keeping its run queue's counts if it waits in one.
    fn set_pri(&mut self, v: VcpuId, pri: Pri) {
        let svc = &mut self.vcpus[v.idx()];
        if let Some(p) = svc.queued_on {
            let counts = &mut self.pcpus[p.idx()].runq_pri;
            counts.sub(svc.pri);
            counts.add(pri);
        }
        svc.pri = pri;
    }

    /// Keep `overloaded` in step with pCPU `p`'s run queue and current vCPU (called after every
    /// change of either).
    fn note_load(&mut self, p: usize) {
        let more_than_one = self.nr_runnable(p) > 1;
        self.overloaded.set(PcpuId(p as u32), more_than_one);
    }

    /// `csched_runq_sort`: after a new accounting period, move UNDER (and BOOST) vCPUs ahead of
    /// OVER ones, keeping the order within each group.
    fn runq_sort(&mut self, p: usize) {
        if self.pcpus[p].runq_sort_last == self.runq_sort {
            return;
        }
        self.pcpus[p].runq_sort_last = self.runq_sort;
        // A stable partition in place: OVER vCPUs step aside into a kept buffer and come back
        // behind the rest (two new lists per sort were most of a credit tick's allocations).
        let (vcpus, over) = (&self.vcpus, &mut self.sort_over);
        over.clear();
        let runq = &mut self.pcpus[p].runq;
        runq.retain(|v| {
            let under = vcpus[v.idx()].pri >= PRI_UNDER;
            if !under {
                over.push(*v);
            }
            under
        });
        runq.extend_from_slice(over);
    }
}

impl Policy for Credit {
    fn name(&self) -> &'static str {
        "credit"
    }

    /// `csched_unit_insert` + the unpause wake (see the file header; `Xen::insert_picks_pcpu`).
    fn insert_vcpu(&mut self, ctx: &mut PolicyCtx, v: VcpuId) {
        self.fit_to(&ctx.host);
        let info = ctx.host.vcpu(v);
        if self.vcpus.len() <= v.idx() {
            self.vcpus.resize(v.idx() + 1, CreditVcpu::new(VmId(0), PcpuId(0)));
        }
        let svc = &mut self.vcpus[v.idx()];
        svc.vm = info.vm;
        svc.processor = PcpuId(info.last_pcpu.0.min(self.pcpus.len() as u32 - 1));
        svc.awake = true;
        self.set_pri(v, PRI_UNDER);
        if self.master_ticker.is_none() {
            // init_pdata: the master pCPU's accounting timer, first at one tslice.
            let ticker = ctx.init_timer(TIMER_ACCT << KIND_SHIFT);
            self.master_ticker = Some(ticker);
            ctx.set_timer(&ticker, ctx.now() + self.cfg.tslice);
        }
        if self.cfg.xen.insert_picks_pcpu() {
            // Xen 4.8 on: csched_unit_insert -> csched_res_pick (MIGRATING: the unpause wake is
            // not a BOOST).
            let p = self.cpu_pick(&ctx.host, v, true);
            let svc = &mut self.vcpus[v.idx()];
            svc.processor = PcpuId(p as u32);
            svc.migrating = true;
        }
        // Before 4.8 csched_vcpu_insert leaves the paused vCPU where domain creation put it
        // (its first pCPU here), and the unpause is an ordinary wake: a BOOST.
        self.queue_woken(ctx, v);
    }

    /// `csched_dom_cntl` (`XEN_DOMCTL_SCHEDOP_putinfo`): a new weight moves the domain's active
    /// vCPUs' share of `prv->weight` with it.
    fn adjust(&mut self, ctx: &mut PolicyCtx, vm: VmId, sched: &VmSched) {
        self.fit_to(&ctx.host);
        let dom = &mut self.doms[vm.idx()];
        // `prv->weight` holds the domain's weight once per active vCPU (Xen 4.1 on), or once if
        // it has any (3.3's csched_dom_cntl: "if ( !list_empty(&sdom->active_sdom_elem) )").
        let active = if self.cfg.xen.weight_per_vcpu() { dom.active_units.len() as u64 } else { u64::from(!dom.active_units.is_empty()) };
        self.weight = self.weight - dom.weight as u64 * active + sched.weight as u64 * active;
        dom.weight = sched.weight;
        dom.cap = sched.cap;
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
            self.note_load(p);
            self.idlers.insert(PcpuId(p as u32));
            self.stop_tick(ctx, p);
        }
        let svc = &mut self.vcpus[v.idx()];
        svc.awake = false;
        svc.parked = false;
        svc.migrate_pending = false;
        self.uvf_sleep(v);
    }

    /// `csched_unit_yield`: only a flag; `do_schedule` queues the vCPU behind one lower-priority
    /// vCPU and (4.8 on) skips the ratelimit. PLE exits arrive here (Xen's `vmx.c` PAUSE exit calls
    /// `vcpu_yield`). Xen 3.3 has no yield operation: schedule.c's `do_yield` only raises
    /// `SCHEDULE_SOFTIRQ`, so the vCPU is re-queued like a preempted one.
    fn yield_vcpu(&mut self, ctx: &mut PolicyCtx, v: VcpuId, reason: YieldReason) {
        if !self.micro_yield(ctx, v, reason) {
            return;
        }
        if self.cfg.xen.has_yield_flag() {
            self.vcpus[v.idx()].yielding = true;
        }
        match reason {
            // Seed 000 section 4.3: a pause-loop exit cancels urgency.
            YieldReason::PauseLoop => self.uvf_cancel(ctx, v),
            // `do_sched_op(SCHEDOP_yield)` -> `vcpu_yield` -> `csched_unit_yield`: the flag only
            // (seed 000's urgency is cancelled by pause-loop exits, not by a guest's yield).
            YieldReason::Hypercall | YieldReason::DirectedTo(_) => {}
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

        // Ratelimit (Xen 4.2 on; `ratelimit` is 0 for 3.3): keep a vCPU that has run less than
        // `ratelimit`, unless (4.8 on) it yielded.
        let xen = self.cfg.xen;
        if let Some(c) = prev.filter(|_| urgent.is_none()) {
            let yielding = self.vcpus[c.idx()].yielding;
            let spared = yielding && xen.ratelimit_spares_yielder();
            if !spared && self.cfg.ratelimit > 0 && prev_runnable && runtime < self.cfg.ratelimit {
                // Taken back off the queue with its YIELD flag, if any: 4.4 and 4.7 return before
                // "Clear YIELD flag before scheduling out", so a yielder kept here stays flagged.
                self.runq_remove(c);
                self.vcpus[c.idx()].yielding = yielding;
                self.vcpus[c.idx()].start_time += now as i64;
                let slice = if !xen.ratelimit_slice_is_remainder() {
                    // 4.4 and 4.7: `tslice = MICROSECS(prv->ratelimit_us)`, a whole ratelimit.
                    self.cfg.ratelimit
                } else if runtime < MIN_TIMER {
                    // Literally credit.c: a vCPU that has run under CSCHED_MIN_TIMER gets exactly that.
                    MIN_TIMER
                } else {
                    self.cfg.ratelimit - runtime
                };
                return Decision::run(c, Some(slice));
            }
        }
        if let Some(c) = prev.filter(|_| !xen.yield_flag_kept_while_queued()) {
            // 4.4 and 4.7: "Clear YIELD flag before scheduling out", after the re-queue placed
            // it: the flag moves a yielder behind one lower-priority vCPU once, and a waiting
            // yielder is not flagged (so it can be stolen).
            self.vcpus[c.idx()].yielding = false;
        }

        // The head of the local queue, unless it is OVER or idle and a peer has better work.
        let head_pri = self.pcpus[p].runq.first().map_or(PRI_IDLE, |v| self.vcpus[v.idx()].pri);
        let mut snext = None;
        if let Some(u) = urgent {
            self.runq_remove(u);
            snext = Some(u);
        } else if head_pri <= PRI_OVER && (!xen.has_load_balance_ratelimit() || self.load_balance_allowed(p, now)) {
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
        self.idlers.set(PcpuId(p as u32), snext.is_none());
        if let Some(n) = snext {
            let svc = &mut self.vcpus[n.idx()];
            svc.start_time += now as i64;
            if Some(n) != prev {
                svc.running_since = now;
            }
        }
        self.pcpus[p].curr = snext;
        self.note_load(p);

        // A vCPU flagged by the tick moves now that it is off this pCPU (schedule.c vcpu_migrate);
        // a halted one still gets its new processor, and keeps the MIGRATING flag until it wakes.
        if let Some(c) = prev {
            if std::mem::take(&mut self.vcpus[c.idx()].migrate_pending) {
                self.migrate(ctx, c);
            }
        }

        // "Stop credit tick when going to idle, restart it when coming from idle." (4.13; 4.x's
        // tick_suspend alike); 3.3's ticker runs from the pCPU's first schedule on, idle or not.
        if self.cfg.xen.ticker_stops_when_idle() {
            match (prev.is_some(), snext.is_some()) {
                (true, false) => self.stop_tick(ctx, p),
                (false, true) => self.start_tick(ctx, p),
                _ => {}
            }
        } else if !self.pcpus[p].ticking {
            self.start_tick(ctx, p);
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
        self.idlers.remove(PcpuId(p as u32));
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
        self.pcpus[p].runq_pri = PriCounts::default();
        for v in std::mem::take(&mut self.pcpus[p].runq) {
            let svc = &mut self.vcpus[v.idx()];
            svc.queued_on = None;
            svc.yielding = false;
            moving.push(v);
        }
        self.note_load(p);
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
            runq_pri: PriCounts::default(),
            curr: None,
            runq_sort_last: self.runq_sort,
            idle_bias: self.pcpus.len().saturating_sub(1),
            last_load_balance: None,
            // The same ticker, stopped when the pCPU left.
            ticker: self.pcpus[p].ticker,
            ticking: false,
        };
        self.pcpus[p] = fresh;
        self.note_load(p);
        self.idlers.insert(PcpuId(p as u32));
        self.credit += self.cfg.credits_per_tslice as u64;
    }

    fn ipi_sent(&mut self, ctx: &mut PolicyCtx, from: VcpuId, to: VcpuId, kind: IpiKind) {
        self.micro_ipi_sent(ctx, from, to, kind);
        self.uvf_ipi_sent(ctx, from, to, kind);
    }

    fn microsliced(&mut self) -> Option<&mut dyn MicroSliced> {
        Some(self)
    }

    fn hold_preemption(&mut self) -> Option<&mut dyn HoldPreemption> {
        Some(self)
    }

    fn ipi_send_started(&mut self, ctx: &mut PolicyCtx, v: VcpuId) {
        self.uvf_ipi_send_started(ctx, v);
    }

    fn ipi_handled(&mut self, ctx: &mut PolicyCtx, v: VcpuId, kind: IpiKind) {
        self.uvf_ipi_handled(ctx, v, kind);
    }

    fn check(&self, host: &HostView) -> Result<(), String> {
        if let Some(u) = &self.uvf {
            u.check_entries()?;
        }
        let mut queued = vec![0u32; host.vcpus.len()];
        for (p, pc) in self.pcpus.iter().enumerate().filter(|(p, _)| host.owns_pcpu(PcpuId(*p as u32))) {
            if pc.runq_pri != PriCounts::of(&pc.runq, &self.vcpus) {
                return Err(format!("credit: pCPU {p}'s priority counts {:?} do not match its run queue", pc.runq_pri));
            }
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
                if self.idlers.contains(PcpuId(p as u32)) {
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
                return Err(format!("credit: vCPU {} is {:?} and queued {n} time(s); expected {want}", info.id, info.state));
            }
        }
        let active_weight: u64 = if self.cfg.xen.weight_per_vcpu() {
            self.vcpus.iter().filter(|s| s.active).map(|s| self.doms[s.vm.idx()].weight as u64).sum()
        } else {
            self.active_sdom.iter().map(|vm| self.doms[vm.idx()].weight as u64).sum()
        };
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

/// Seed 002's micro-sliced cores (hypervisor/policies/credit/microsliced.rs): the parent pool's
/// policy lends vCPUs to the micro pool and keeps their books.
impl MicroSliced for Credit {
    fn virq_sent(&mut self, ctx: &mut PolicyCtx, v: VcpuId) {
        self.micro_virq_sent(ctx, v);
    }

    fn lend_vcpu(&mut self, ctx: &mut PolicyCtx, v: VcpuId) {
        self.micro_lend(ctx, v);
    }

    fn return_vcpu(&mut self, ctx: &mut PolicyCtx, v: VcpuId, ran: Nanos) {
        self.micro_return(ctx, v, ran);
    }
}

/// The preemption overlays' seam (sim/mechanisms/preemption_overlay/rule.rs).
impl HoldPreemption for Credit {
    /// The overlay seam (sim/mechanisms/preemption_overlay/rule.rs): undo the tail of the `do_schedule` that picked
    /// `next` over `prev` on `pcpu`, as csched_schedule's own keep-the-current paths leave it
    /// (the UVF hold and the ratelimit above): `prev` off the run queue and current again, its
    /// `start_time` absolute again (its credits were burnt up to now, as Xen burns at every
    /// schedule); `next` back on the run queue of its processor (a vCPU stolen by
    /// `load_balance` stays homed here: a departure, see docs/model.md § seed 003). IRS's Xen
    /// patch ("Xen: 30 LOC", seed 003 slide 9) is not public; this is our reading of it.
    fn keep_running(&mut self, ctx: &mut PolicyCtx, pcpu: PcpuId, prev: VcpuId, next: VcpuId) -> bool {
        let p = pcpu.idx();
        let now = ctx.now();
        if self.pcpus[p].curr != Some(next) || self.vcpus[prev.idx()].queued_on != Some(pcpu) || self.vcpus[next.idx()].queued_on.is_some()
        {
            return false;
        }
        self.runq_remove(prev);
        self.vcpus[prev.idx()].start_time += now as i64;
        let svc = &mut self.vcpus[next.idx()];
        svc.start_time -= now as i64;
        self.runq_insert(next);
        self.pcpus[p].curr = Some(prev);
        self.idlers.remove(pcpu);
        self.note_load(p);
        true
    }
}

#[cfg(test)]
mod tests;
