//! Linux CFS as a KVM host runs vCPU threads, as of Linux 3.2 (kernel/sched_fair.c,
//! kernel/sched.c v3.2: the kernel of seed 000's host, "Linux kernel 3.2.0").
//!
//! Each vCPU is a host task (nice 0, weight 1024); each VM is a task group (libvirt puts a VM's
//! threads in one cgroup) with one group run queue and one group entity per pCPU, one level
//! below each pCPU's root run queue (`CONFIG_FAIR_GROUP_SCHED`). The seed's setup (seed 000
//! section 4) gives every VM 1024 x (number of pCPUs) shares; here a VM's `tg->shares` is that
//! times `weight / 256`, so equal weights reproduce the seed and weights 1:2 give shares 1:2.
//! Each group entity's weight is 3.2's `calc_cfs_shares` of the VM's shares (shares.rs).
//!
//! The files:
//! - this one: the run queues and entities at both levels (`enqueue_task_fair`,
//!   `dequeue_task_fair`, `put_prev_task_fair`, `pick_next_task_fair` with the next / last /
//!   skip buddies, `place_entity`, `check_preempt_tick`, `check_preempt_wakeup`,
//!   `yield_task_fair`, `scheduler_tick`) and the `Policy` glue;
//! - `shares.rs`: group shares (`update_cfs_load`, `calc_cfs_shares`, `update_cfs_shares`);
//! - `domains.rs`: the scheduling domains of the host topology;
//! - `lb_candidates.rs`: per domain, the groups that could be the busiest (a balance with
//!   none ends without reading the span);
//! - `balance.rs`: `rebalance_domains`, `load_balance`, `find_busiest_group`, `move_tasks`,
//!   active balancing, `idle_balance`, `cpu_load[]`;
//! - `select.rs`: `select_task_rq_fair` for wakeups (`wake_affine`, `select_idle_sibling`) and
//!   forks (`find_idlest_group`, `find_idlest_cpu`), cpumasks and the seed-000 placements;
//! - `kvm.rs`: `yield_to` / `yield_to_task_fair` for KVM's `kvm_vcpu_on_spin`
//!   (hypervisor/kvm.rs, by KVM version);
//! - `bandwidth.rs`: CFS bandwidth control for capped VMs;
//! - `urgent.rs`: the urgent-vCPU-first overlay.
//!
//! Simplifications, with their reasons (docs/model.md section 7.1 has the full list):
//! - One level of groups: VMs directly under the root group; nothing else runs on the host.
//! - vruntime arithmetic divides exactly (`calc_delta_mine` uses a 32-bit inverse weight).
//! - The scheduler tick runs on every pCPU, busy or idle; on idle pCPUs it stands in for nohz
//!   idle balancing (the idle load balancer balancing on an idle pCPU's behalf).

use super::balance_placement::Placement;
use super::load_index::LoadIndex;
use super::{HostShape, PolicyKind};
use crate::hypervisor::policy::{Decision, IpiKind, KvmHost, Policy, PolicyCtx, Timer, VcpuState, VmSched, YieldReason};
use crate::hypervisor::uvf::carrier::UrgentBase;
use crate::hypervisor::uvf::Uvf;
use crate::ids::{PcpuId, VcpuId, VmId};
use crate::params::{ParamSpec, Params};
use crate::time::{Nanos, MS, SEC, US};
use std::sync::Arc;

/// NICE_0_LOAD: the weight of a nice-0 task, every vCPU thread (kernel/sched.c).
const NICE_0_LOAD: u64 = 1024;
/// sched_nr_latency: above this many tasks the period stretches (sched_fair.c).
const SCHED_NR_LATENCY: u64 = 8;
/// Timer keys at or above this are the UVF overlay's (pCPU in the low bits); below, scheduler ticks.
const UVF_TIMER: u64 = 1 << 32;
/// Timer keys at or above this are CFS bandwidth period timers (VM index in the low bits).
const BW_TIMER: u64 = 1 << 33;

mod balance;
mod bandwidth;
pub(crate) mod domains;
mod lb_candidates;
mod select;
mod shares;
mod timeline;
mod urgent;
#[cfg(test)]
mod wake_tests;
mod yield_to;

use crate::hypervisor::kvm::{KvmSpin, KvmVersion};
use bandwidth::Bandwidth;
use domains::{Domain, SdState};
use lb_candidates::LbCandidates;
use shares::{LoadAvg, TaskGroup};
use timeline::Timeline;

pub struct CfsKind;

impl PolicyKind for CfsKind {
    fn name(&self) -> &'static str {
        "cfs"
    }
    fn describe(&self) -> &'static str {
        "Linux 3.2 CFS scheduling vCPU threads on a KVM host: one task group per VM with \
         calc_cfs_shares group entities, vruntime, sched_latency/min_granularity/\
         wakeup_granularity scaled by log2(pCPUs), sleeper placement, wakeup preemption, fork \
         placement and the sched-domain load balancer of the host topology, and \
         kvm_vcpu_on_spin directed yield on pause-loop exits (kernel/sched_fair.c, \
         kernel/sched.c, virt/kvm/kvm_main.c)"
    }
    fn params(&self) -> Vec<ParamSpec> {
        vec![
            ParamSpec::duration("latency", 6 * MS, "sysctl_sched_latency before scaling: 6 ms (sched_fair.c); scaled by 1 + ilog2(min(pCPUs, 8))")
                .range(100_000.0, 1e9),
            ParamSpec::duration("min_granularity", 750 * US, "sysctl_sched_min_granularity before scaling: 0.75 ms (sched_fair.c)")
                .range(10_000.0, 1e9),
            ParamSpec::duration("wakeup_granularity", MS, "sysctl_sched_wakeup_granularity before scaling: 1 ms (sched_fair.c)")
                .range(0.0, 1e9),
            ParamSpec::boolean("scale_by_cpus", true, "SCHED_TUNABLESCALING_LOG: multiply the three tunables by 1 + ilog2(min(pCPUs, 8))"),
            ParamSpec::duration("tick", 4 * MS, "scheduler tick: CONFIG_HZ=250 -> 4 ms (one jiffy)").range(100_000.0, 1e8),
            ParamSpec::int("imbalance_pct", 125, "sched-domain imbalance_pct of the MC, CPU and NODE levels: how far (percent) the busiest group's load must exceed this pCPU's before periodic balancing moves load; wake_affine and fork placement allow half of it. 125 in Linux 3.2 (SD_MC_INIT, SD_CPU_INIT, SD_NODE_INIT), 117 since Linux 5.x; SMT sibling levels keep 110 (SD_SIBLING_INIT)")
                .range(100.0, 400.0),
            ParamSpec::int("busy_factor", 0, "sched-domain busy_factor of every domain level: a busy pCPU balances this many times less often. 0: each level's Linux 3.2 value (SIBLING / MC / CPU 64, NODE 32 on x86_64); 16 since Linux 5.10")
                .range(0.0, 1024.0),
            ParamSpec::duration("migration_cost", 500 * US, "sysctl_sched_migration_cost: a vCPU that ran this recently is cache-hot and not pulled by the balancer; a pCPU whose average idle time is below it does no newidle balancing")
                .range(0.0, 1e9),
            ParamSpec::boolean("directed_yield", true, "on a pause-loop exit, yield to a sibling vCPU (kvm_vcpu_on_spin); false: plain yield"),
            ParamSpec::choice("kvm", KvmVersion::NAMES, "3.2", "kvm_vcpu_on_spin / yield_to as of this Linux version: 3.2 (any runnable sibling; the seed's host), 3.9 (yield_to answers -ESRCH when both run queues hold one task, which the bool return of 3.9-3.15 turns into a boost without a yield), 3.10 (only siblings preempted while runnable), 3.16 (int return: give up after three -ESRCH), 6.6 (candidates must be ready: preempted, or woken with an interrupt or pv kick pending; a preempted one must have been in kernel mode or have an interrupt pending; dy_eligible alternation for siblings in their own spin loop; with [host.ple] grow = 2 for the dynamic window)"),
            ParamSpec::duration("cfs_period", 100 * MS, "CFS bandwidth period for capped VMs ([[vm]] cap): cpu.cfs_period_us, default 100 ms (sched_fair.c default_cfs_period); a VM may run cap/100 x this per period")
                .range(MS as f64, SEC as f64),
            ParamSpec::choice("placement", Placement::NAMES, "default", "vCPU-to-pCPU placement, usually set as [host] placement: default (the Linux 3.2 wake and fork paths and load balancer), balance (siblings never share a run queue; Sukwong and Kim, EuroSys'11) or lc-balance (load-conscious balance, seed 000 section 3.2)"),
        ]
    }
    /// KVM 3.2's VMX pause-loop window is fixed (`ple_window`, arch/x86/kvm/vmx.c); the
    /// per-vCPU growing window (`ple_window_grow` = 2) came with Linux 3.18 ("KVM: VMX:
    /// dynamise PLE window"; absent from 3.16's vmx.c) and is `[host.ple] grow = 2`.
    fn ple_grow(&self) -> u64 {
        1
    }
    /// CFS schedules KVM's vCPU threads.
    fn hypervisor(&self) -> super::Hypervisor {
        super::Hypervisor::Kvm
    }
    fn carries_uvf(&self) -> bool {
        true
    }
    /// A KVM host scheduler: it has KVM's halt polling.
    fn honours_cap(&self) -> bool {
        true
    }
    fn supports_pool_changes(&self) -> bool {
        true
    }
    /// `groups[vm * npcpus + p]` (mod.rs `gi`).
    fn groups_per_vm_and_pcpu(&self) -> bool {
        true
    }
    fn build(&self, params: &Params, host: HostShape) -> Box<dyn Policy> {
        Box::new(Cfs::new(params, host))
    }
}

/// A vCPU thread's scheduling entity (`struct sched_entity` of a task), in its VM's group run
/// queue on one pCPU.
#[derive(Clone, Debug, Default)]
struct Entity {
    vruntime: u64,
    /// The pCPU whose group run queue it is on (queued or running); None off every run queue.
    rq: Option<usize>,
    /// In the tree (queued, not running).
    queued: bool,
    /// `sum_exec_runtime` and `prev_sum_exec_runtime` (its value when last picked).
    sum_exec: Nanos,
    prev_sum_exec: Nanos,
    /// Its `exec_start` while not running: when it last stopped running (`task_hot`).
    last_ran: Nanos,
    /// Runnable but throttled: its VM ran out of bandwidth (`cfs_rq->throttled`); in no run
    /// queue until the period timer unthrottles it on `throttled_on`.
    throttled: bool,
    throttled_on: usize,
}

/// A `struct cfs_rq`: a pCPU's root run queue (its entities are VMs' group entities, keyed by
/// VM index) or one VM's group run queue on one pCPU (its entities are the VM's vCPU tasks,
/// keyed by vCPU id).
#[derive(Clone, Debug, Default)]
struct CfsRq {
    /// The queued entities by (vruntime, key); the running one (`curr`) is not in it.
    tree: Timeline,
    curr: Option<u32>,
    min_vruntime: u64,
    /// `load.weight`: the weight of the queued and running entities.
    load: u64,
    nr_running: u64,
    /// The buddies: `next` (wanted next), `last` (just preempted), `skip` (yielded).
    next: Option<u32>,
    last: Option<u32>,
    skip: Option<u32>,
}

/// A group entity (`tg->se[cpu]`): a VM's stand-in in one pCPU's root run queue.
#[derive(Clone, Copy, Debug, Default)]
struct GroupSe {
    vruntime: u64,
    /// `load.weight`: the VM's shares on this pCPU (`calc_cfs_shares`).
    weight: u64,
    on_rq: bool,
    sum_exec: Nanos,
    prev_sum_exec: Nanos,
}

/// A VM on one pCPU: its group run queue (`tg->cfs_rq[cpu]`) and group entity.
#[derive(Clone, Debug, Default)]
struct Group {
    rq: CfsRq,
    /// `cfs_rq->tasks`: its vCPUs (queued and running), most recently enqueued first.
    tasks: Vec<VcpuId>,
    se: GroupSe,
    avg: LoadAvg,
    /// On the pCPU's leaf list (`on_list`).
    on_list: bool,
}

/// The number of `cpu_load[]` averages (`CPU_LOAD_IDX_MAX`).
const CPU_LOAD_IDX_MAX: usize = 5;

/// Per-pCPU state (`struct rq`).
#[derive(Clone, Debug, Default)]
struct Rq {
    root: CfsRq,
    /// `rq->nr_running`: vCPU tasks queued or running here.
    nr_running: u64,
    /// When the running entities were last charged (`exec_start` of both levels).
    exec_start: Nanos,
    need_resched: bool,
    /// The scheduler tick of this pCPU (`scheduler_tick`), periodic once started.
    tick_timer: Option<Timer>,
    /// `leaf_cfs_rq_list`: VMs whose group run queue here is listed, head first.
    leaf: Vec<u32>,
    /// `cpu_load[]`, decaying averages of the root load taken at each tick.
    cpu_load: [u64; CPU_LOAD_IDX_MAX],
    last_load_update_tick: u64,
    /// `idle_stamp` (when it went idle; None = 0) and `avg_idle`.
    idle_stamp: Option<Nanos>,
    avg_idle: Nanos,
    /// `next_balance`, in jiffies.
    next_balance: u64,
    /// `active_balance` / `push_cpu`: an active balance pending on this pCPU, pushing to it.
    active_balance: Option<usize>,
    /// Per domain level of this pCPU.
    sd: Vec<SdState>,
}

/// How a task enters a group run queue (`enqueue_entity` flags).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Enqueue {
    /// `ENQUEUE_WAKEUP | ENQUEUE_WAKING`: its vruntime is relative to the run queue it slept on
    /// (`task_waking_fair`); add this one's `min_vruntime`, then `place_entity` as a sleeper.
    Wakeup,
    /// No flags (migration, fork): its vruntime is relative; add this one's `min_vruntime`.
    Relative,
}

/// Which buddy (`cfs_rq->next` / `last` / `skip`).
#[derive(Clone, Copy, Debug)]
enum Buddy {
    Next,
    Last,
    Skip,
}

impl CfsRq {
    fn buddy(&mut self, b: Buddy) -> &mut Option<u32> {
        match b {
            Buddy::Next => &mut self.next,
            Buddy::Last => &mut self.last,
            Buddy::Skip => &mut self.skip,
        }
    }
}

/// The host size from which the placements search an index of the run-queue loads instead of
/// reading every run queue at each wakeup. The index costs a walk up its tree at every change
/// of a root load, the scan a read of every run queue at every wakeup. On the seed's
/// `lc-balance` mix (an 8-vCPU barrier VM and four CPU hogs per 8 pCPUs) the index costs 0.2%
/// more instructions on 16 pCPUs, 1.5% less on 32, 8.6% less on 64 and 17% less on 128
/// (callgrind); in CPU time (alternating runs on a noisy day, docs/speed.md) it
/// read 7% slower on 32 pCPUs, 21% faster on 64 and 15% faster on 128, so it starts at 64, where
/// both measures agree.
const LOAD_INDEX_MIN_PCPUS: usize = 64;

pub struct Cfs {
    latency: Nanos,
    min_gran: Nanos,
    wakeup_gran: Nanos,
    tick: Nanos,
    migration_cost: Nanos,
    /// `imbalance_pct` of the non-SMT levels and `busy_factor` of every level (params; a
    /// `busy_factor` of 0 keeps each level's 3.2 value).
    imbalance_pct: u64,
    busy_factor: u64,
    directed_yield: bool,
    /// KVM's directed-yield state (hypervisor/kvm.rs): version and `last_boosted_vcpu` per VM.
    kvm: KvmSpin,
    /// Which run queues a waking or migrating vCPU may join (placement.rs).
    placement: Placement,
    /// Host pCPUs (`num_online_cpus`); tables are sized for the whole host.
    npcpus: usize,
    se: Vec<Entity>,
    /// Each vCPU's VM (set when it is inserted).
    vcpu_vm: Vec<usize>,
    /// `groups[vm * npcpus + p]`.
    groups: Vec<Group>,
    rqs: Vec<Rq>,
    /// The pCPUs that are `idle_cpu` (no current entity, nothing queued). The running task
    /// counts in `nr_running` until it is dequeued, so only an enqueue, a dequeue or a run
    /// queue's reset changes the answer; each of them calls `note_rq`, and `check` holds the
    /// mask to the run queues. `select_idle_sibling`'s walk of a level of one-pCPU groups reads
    /// it instead of every run queue (select.rs).
    idle: crate::hardware::cpumask::CpuMask,
    tgs: Vec<TaskGroup>,
    /// Each pool pCPU's scheduling domains, bottom up (domains.rs); shared so the balancer can
    /// hold one while it changes the run queues.
    domains: Vec<Vec<Arc<Domain>>>,
    /// Per domain, the groups that could be `find_busiest_group`'s busiest (lb_candidates.rs):
    /// a balance with none ends without reading the span.
    lb_candidates: LbCandidates,
    /// `load_balance_tmpmask`: the scratch `cpus` mask of `load_balance` (balance.rs).
    lb_cpus: crate::hardware::cpumask::CpuMask,
    /// Scratch copies for the walks that change what they walk (a pull takes a vCPU off the
    /// group's task list; `update_cfs_load` may take a group off the leaf list): the leaf list
    /// (`update_shares`, `active_load_balance`), the leaf list with each group's `h_load`
    /// (`load_balance_fair`) and a group's tasks (`balance_tasks`, `active_load_balance`).
    /// Each walk takes its list, refills it and puts it back, so a balance allocates nothing.
    walk_leaf: Vec<u32>,
    walk_h_load: Vec<(usize, u64)>,
    walk_tasks: Vec<VcpuId>,
    /// Scratch of the placement's view (select.rs `PlaceView`): the pCPUs whose run queue holds
    /// a sibling of the vCPU being placed. Empty between uses; a `Cell` because the view reads
    /// the policy through `&Cfs`.
    sibling_rqs: std::cell::Cell<crate::hardware::cpumask::CpuMask>,
    /// Under `balance` / `lc-balance` on a host of at least [`LOAD_INDEX_MIN_PCPUS`], every run
    /// queue's root load in a tournament tree, the pool's pCPUs searched
    /// (policies/load_index.rs): the placement's least loaded candidate without reading every
    /// run queue. Kept by `set_root_load`. None otherwise: the placement reads the run queues.
    load_index: Option<LoadIndex>,
    /// vCPUs whose next `insert_vcpu` follows a `pick_pcpu` (entering from another pool), not a
    /// fork.
    picked: Vec<bool>,
    ticks_started: bool,
    /// `cpu.cfs_period_us` of capped VMs.
    cfs_period: Nanos,
    /// Per-VM bandwidth control (quota 0 for uncapped VMs).
    bw: Vec<Bandwidth>,
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
        let npcpus = host.npcpus as usize;
        let migration_cost = params.duration("migration_cost");
        // sched_init: rq->avg_idle = 2 * sysctl_sched_migration_cost.
        let rq = Rq { avg_idle: 2 * migration_cost, ..Rq::default() };
        let placement = Placement::from_name(params.choice("placement")).expect("the loader checks the name against Placement::NAMES");
        Cfs {
            latency: params.duration("latency") * factor,
            min_gran: params.duration("min_granularity") * factor,
            wakeup_gran: params.duration("wakeup_granularity") * factor,
            tick: params.duration("tick"),
            migration_cost,
            imbalance_pct: params.int("imbalance_pct"),
            busy_factor: params.int("busy_factor"),
            directed_yield: params.boolean("directed_yield"),
            kvm: KvmSpin::new(
                KvmVersion::from_name(params.choice("kvm")).expect("the loader checks the name against KvmVersion::NAMES"),
                host.nvms as usize,
            ),
            placement,
            npcpus,
            se: vec![Entity::default(); host.nvcpus as usize],
            vcpu_vm: vec![0; host.nvcpus as usize],
            groups: vec![Group::default(); host.nvms as usize * npcpus],
            rqs: vec![rq; npcpus],
            idle: crate::hardware::cpumask::CpuMask::full(npcpus),
            tgs: vec![TaskGroup::default(); host.nvms as usize],
            domains: vec![Vec::new(); npcpus],
            lb_candidates: LbCandidates::without_domains(npcpus),
            lb_cpus: crate::hardware::cpumask::CpuMask::empty(),
            walk_leaf: Vec::new(),
            walk_h_load: Vec::new(),
            walk_tasks: Vec::new(),
            sibling_rqs: std::cell::Cell::new(crate::hardware::cpumask::CpuMask::with_len(npcpus)),
            load_index: (placement != Placement::Default && npcpus >= LOAD_INDEX_MIN_PCPUS).then(|| LoadIndex::new(npcpus)),
            picked: vec![false; host.nvcpus as usize],
            ticks_started: false,
            cfs_period: params.duration("cfs_period"),
            bw: vec![Bandwidth::default(); host.nvms as usize],
            pending_throttle: Vec::new(),
            uvf: host.uvf.clone().map(|cfg| Uvf::new(cfg, host.nvcpus as usize, host.npcpus as usize)),
        }
    }

    /// Index of VM `vm`'s group on pCPU `p`.
    #[inline]
    fn gi(&self, vm: usize, p: usize) -> usize {
        vm * self.npcpus + p
    }

    /// Make room for VM `vm` (a VM the policy was not sized for).
    fn grow_vms(&mut self, vm: usize) {
        if self.tgs.len() <= vm {
            let n = vm + 1;
            self.tgs.resize(n, TaskGroup::default());
            self.groups.resize(n * self.npcpus, Group::default());
            self.kvm.grow_vms(n);
        }
    }

    /// The jiffy counter (`jiffies`): ticks since the start.
    fn jiffies(&self, now: Nanos) -> u64 {
        now / self.tick
    }

    /// `msecs_to_jiffies`: whole jiffies covering `ms` milliseconds.
    fn ms_to_jiffies(&self, ms: u64) -> u64 {
        (ms * MS).div_ceil(self.tick)
    }

    /// calc_delta_fair: virtual time for `delta` of real time at weight `w`.
    fn vdelta(delta: Nanos, w: u64) -> u64 {
        if w == NICE_0_LOAD {
            return delta;
        }
        crate::time::mul_div(delta, NICE_0_LOAD, w.max(1)) as u64
    }

    fn vm_of(ctx: &PolicyCtx, v: VcpuId) -> usize {
        ctx.host.vcpu(v).vm.idx()
    }

    /// `v`'s VM as recorded at its insertion.
    fn vm_index(&self, v: VcpuId) -> usize {
        self.vcpu_vm[v.idx()]
    }

    /// The VM of the task running on `p`, if any.
    fn running_task(&self, p: usize) -> Option<(usize, VcpuId)> {
        let vm = self.rqs[p].root.curr? as usize;
        let v = self.groups[self.gi(vm, p)].rq.curr?;
        Some((vm, VcpuId(v)))
    }

    /// The vCPU running on `p` in the policy's books.
    fn curr_task(&self, p: usize) -> Option<VcpuId> {
        self.running_task(p).map(|(_, v)| v)
    }

    /// Charge the running entities of `p` up to now (`update_curr` at both levels).
    fn update_curr(&mut self, ctx: &PolicyCtx, p: usize) {
        self.update_curr_at(ctx.now(), p);
    }

    /// Inlined: most calls come right after another at the same time and have nothing to
    /// charge; the charging itself is `charge_curr`.
    #[inline(always)]
    fn update_curr_at(&mut self, now: Nanos, p: usize) {
        let delta = now.saturating_sub(self.rqs[p].exec_start);
        self.rqs[p].exec_start = now;
        let Some(vm) = self.rqs[p].root.curr.map(|vm| vm as usize) else { return };
        if delta == 0 {
            return;
        }
        self.charge_curr(p, vm, delta);
    }

    /// `update_curr` of `delta` > 0 for the running entities of `p` (group entity of `vm`).
    #[inline(never)]
    fn charge_curr(&mut self, p: usize, vm: usize, delta: Nanos) {
        let gi = self.gi(vm, p);
        // The group entity in the root run queue.
        let g = &mut self.groups[gi];
        g.se.sum_exec += delta;
        g.se.vruntime += Self::vdelta(delta, g.se.weight);
        // The task in the group run queue (weight NICE_0_LOAD: vruntime advances by delta).
        if let Some(v) = g.rq.curr {
            let e = &mut self.se[v as usize];
            e.sum_exec += delta;
            e.vruntime += delta;
            g.avg.load_unacc_exec += delta;
            let curr_vr = Some(e.vruntime);
            let first = g.rq.tree.first().map(|(vr, _)| *vr);
            update_min_vruntime(&mut g.rq, curr_vr, first);
        }
        self.update_root_min_vruntime(p);
        self.account_runtime(VmId(vm as u32), delta);
    }

    fn update_root_min_vruntime(&mut self, p: usize) {
        let curr_vr = self.rqs[p].root.curr.map(|vm| self.groups[self.gi(vm as usize, p)].se.vruntime);
        let first = self.rqs[p].root.tree.first().map(|(vr, _)| *vr);
        update_min_vruntime(&mut self.rqs[p].root, curr_vr, first);
    }

    fn update_group_min_vruntime(&mut self, vm: usize, p: usize) {
        let gi = self.gi(vm, p);
        let curr_vr = self.groups[gi].rq.curr.map(|v| self.se[v as usize].vruntime);
        let first = self.groups[gi].rq.tree.first().map(|(vr, _)| *vr);
        update_min_vruntime(&mut self.groups[gi].rq, curr_vr, first);
    }

    /// `place_entity(cfs_rq, se, 0)`: a waking entity gets at most half a latency of credit for
    /// sleeping (GENTLE_FAIR_SLEEPERS) and never goes back in virtual time.
    fn place_sleeper(&self, vruntime: u64, min_vruntime: u64) -> u64 {
        vruntime.max(min_vruntime.saturating_sub(self.latency / 2))
    }

    /// `enqueue_task_fair` of vCPU `v` of VM `vm` on pCPU `p`: `enqueue_entity` in its group
    /// run queue (updating the group's load average and shares), then the group entity in the
    /// root run queue as a waking entity if it was not there.
    fn enqueue_task(&mut self, now: Nanos, v: VcpuId, vm: usize, p: usize, how: Enqueue) {
        let gi = self.gi(vm, p);
        // "Update the normalized vruntime before updating min_vruntime through update_curr()".
        self.se[v.idx()].vruntime = absolute_vruntime(self.se[v.idx()].vruntime, self.groups[gi].rq.min_vruntime);
        self.update_curr_at(now, p);
        self.update_cfs_load(now, vm, p, false);
        {
            let g = &mut self.groups[gi];
            g.rq.load += NICE_0_LOAD;
            g.rq.nr_running += 1;
            g.tasks.insert(0, v);
        }
        self.update_cfs_shares(now, vm, p);
        if how == Enqueue::Wakeup {
            let min = self.groups[gi].rq.min_vruntime;
            self.se[v.idx()].vruntime = self.place_sleeper(self.se[v.idx()].vruntime, min);
        }
        let g = &mut self.groups[gi];
        let e = &mut self.se[v.idx()];
        e.rq = Some(p);
        if g.rq.curr != Some(v.0) {
            g.rq.tree.insert((e.vruntime, v.0));
            e.queued = true;
        }
        if g.rq.nr_running == 1 {
            self.list_add_leaf(vm, p);
        }
        if !self.groups[gi].se.on_rq {
            // enqueue_entity(root, gse, ENQUEUE_WAKEUP).
            self.update_curr_at(now, p);
            let w = self.groups[gi].se.weight;
            let min = self.rqs[p].root.min_vruntime;
            let vr = self.place_sleeper(self.groups[gi].se.vruntime, min);
            let g = &mut self.groups[gi];
            g.se.vruntime = vr;
            g.se.on_rq = true;
            let root = &mut self.rqs[p].root;
            root.nr_running += 1;
            if root.curr != Some(vm as u32) {
                root.tree.insert((vr, vm as u32));
            }
            self.set_root_load(p, self.rqs[p].root.load + w);
        }
        self.rqs[p].nr_running += 1;
        self.note_rq(p);
    }

    /// `dequeue_task_fair` of vCPU `v` from its run queue. `sleep` (`DEQUEUE_SLEEP`) keeps its
    /// vruntime absolute; otherwise (migration) it is left relative to the run queue's
    /// `min_vruntime`. The group entity leaves the root run queue (as a sleeper) when its group
    /// empties; a sleeping vCPU whose group still has work makes the group the root's next
    /// buddy. A running `v` stops being the run queue's current entity (the engine reschedules
    /// its pCPU at once).
    fn dequeue_task(&mut self, now: Nanos, v: VcpuId, vm: usize, sleep: bool) {
        let Some(p) = self.se[v.idx()].rq else { return };
        let gi = self.gi(vm, p);
        self.update_curr_at(now, p);
        self.clear_buddies_task(vm, p, v);
        {
            let g = &mut self.groups[gi];
            let e = &mut self.se[v.idx()];
            if e.queued {
                g.rq.tree.remove(&(e.vruntime, v.0));
                e.queued = false;
            }
        }
        self.update_cfs_load(now, vm, p, false);
        {
            let g = &mut self.groups[gi];
            g.rq.load -= NICE_0_LOAD;
            g.rq.nr_running -= 1;
            g.tasks.retain(|&t| t != v);
        }
        if !sleep {
            let min = self.groups[gi].rq.min_vruntime;
            let e = &mut self.se[v.idx()];
            e.vruntime = relative_vruntime(e.vruntime, min);
        }
        // update_min_vruntime still sees a sleeping `curr` (put_prev_entity clears it later).
        self.update_group_min_vruntime(vm, p);
        if self.groups[gi].rq.curr == Some(v.0) {
            self.groups[gi].rq.curr = None;
        }
        self.update_cfs_shares(now, vm, p);
        self.se[v.idx()].rq = None;
        if self.groups[gi].rq.load > 0 {
            if sleep {
                // "Bias pick_next to pick a task from this cfs_rq".
                self.rqs[p].root.next = Some(vm as u32);
            }
        } else {
            // dequeue_entity(root, gse, DEQUEUE_SLEEP).
            self.clear_buddies_root(vm, p);
            let g = &mut self.groups[gi];
            let root = &mut self.rqs[p].root;
            root.tree.remove(&(g.se.vruntime, vm as u32));
            g.se.on_rq = false;
            root.nr_running -= 1;
            let w = g.se.weight;
            self.set_root_load(p, self.rqs[p].root.load - w);
            self.update_root_min_vruntime(p);
            if self.rqs[p].root.curr == Some(vm as u32) {
                self.rqs[p].root.curr = None;
            }
        }
        self.rqs[p].nr_running -= 1;
        self.note_rq(p);
    }

    /// Move queued `v` to pCPU `to` keeping its lag (`pull_task`: `deactivate_task`,
    /// `set_task_cpu`, `activate_task`); the caller runs `check_preempt_curr`.
    fn migrate(&mut self, now: Nanos, v: VcpuId, vm: usize, to: usize) {
        self.dequeue_task(now, v, vm, false);
        self.enqueue_task(now, v, vm, to, Enqueue::Relative);
        self.uvf_moved(v, to);
    }

    /// `clear_buddies(cfs_rq, se)` for task `v` in its group run queue: each buddy pointing at
    /// it is cleared, and the root's too when it points at its group (`__clear_buddies_*`).
    #[inline]
    fn clear_buddies_task(&mut self, vm: usize, p: usize, v: VcpuId) {
        let gi = self.gi(vm, p);
        let (group, root) = (&mut self.groups[gi].rq, &mut self.rqs[p].root);
        for b in [Buddy::Last, Buddy::Next, Buddy::Skip] {
            if *group.buddy(b) == Some(v.0) {
                *group.buddy(b) = None;
                let root = root.buddy(b);
                if *root == Some(vm as u32) {
                    *root = None;
                }
            }
        }
    }

    /// `clear_buddies(cfs_rq, se)` for VM `vm`'s group entity in the root run queue of `p`.
    #[inline]
    fn clear_buddies_root(&mut self, vm: usize, p: usize) {
        let root = &mut self.rqs[p].root;
        for b in [Buddy::Last, Buddy::Next, Buddy::Skip] {
            let root = root.buddy(b);
            if *root == Some(vm as u32) {
                *root = None;
            }
        }
    }

    /// `set_next_buddy` / `set_last_buddy` / `set_skip_buddy` of task `v`: it and its group
    /// entity, level by level (`for_each_sched_entity`).
    fn set_buddy(&mut self, b: Buddy, vm: usize, p: usize, v: VcpuId) {
        let gi = self.gi(vm, p);
        *self.groups[gi].rq.buddy(b) = Some(v.0);
        *self.rqs[p].root.buddy(b) = Some(vm as u32);
    }

    /// `sched_slice(cfs_rq, se)` of task `v` on `p`: the period of its group run queue, scaled by
    /// its share of the group's load and the group entity's share of the root's, counting either
    /// as queued if it is not yet.
    fn slice(&self, v: VcpuId, vm: usize, p: usize) -> Nanos {
        let g = &self.groups[self.gi(vm, p)];
        let on_rq = self.se[v.idx()].rq == Some(p);
        let mut slice = self.sched_period(g.rq.nr_running + u64::from(!on_rq));
        let load = g.rq.load + if on_rq { 0 } else { NICE_0_LOAD };
        slice = mul_div(slice, NICE_0_LOAD, load);
        let root_load = self.rqs[p].root.load + if g.se.on_rq { 0 } else { g.se.weight };
        mul_div(slice, g.se.weight, root_load)
    }

    /// `sched_slice(root, gse)` of VM `vm`'s group entity on `p`.
    fn group_slice(&self, vm: usize, p: usize) -> Nanos {
        let g = &self.groups[self.gi(vm, p)];
        let root = &self.rqs[p].root;
        let slice = self.sched_period(root.nr_running + u64::from(!g.se.on_rq));
        mul_div(slice, g.se.weight, root.load + if g.se.on_rq { 0 } else { g.se.weight })
    }

    /// `__sched_period(nr_running)`.
    fn sched_period(&self, nr: u64) -> Nanos {
        if nr > SCHED_NR_LATENCY {
            nr * self.min_gran
        } else {
            self.latency
        }
    }

    /// `wakeup_preempt_entity(curr, se)`: -1 if `curr` is not ahead of `se`, 1 if ahead by more
    /// than `se`'s wakeup granularity (`wakeup_gran`, in `se`'s virtual time), else 0.
    fn wakeup_preempt(&self, curr_vr: u64, se_vr: u64, se_weight: u64) -> i32 {
        let vdiff = curr_vr as i128 - se_vr as i128;
        if vdiff <= 0 {
            -1
        } else if vdiff > Self::vdelta(self.wakeup_gran, se_weight) as i128 {
            1
        } else {
            0
        }
    }

    fn resched(&mut self, ctx: &mut PolicyCtx, p: usize) {
        // UVF: an urgent vCPU in its protected tslice is not preempted; the preemption waits.
        if let Some(c) = self.curr_task(p) {
            if self.hold_back_preemption(ctx.now(), p, c) {
                return;
            }
        }
        self.resched_now(ctx, p);
    }

    /// `resched_task` without the UVF hold-back.
    fn resched_now(&mut self, ctx: &mut PolicyCtx, p: usize) {
        if !self.rqs[p].need_resched {
            self.rqs[p].need_resched = true;
            ctx.reschedule(PcpuId(p as u32));
        }
    }

    /// `pick_next_entity` of the root run queue of `p`: a VM.
    fn pick_root(&mut self, p: usize) -> Option<usize> {
        let vr = |vm: u32| self.groups[self.gi(vm as usize, p)].se.vruntime;
        let w = |vm: u32| self.groups[self.gi(vm as usize, p)].se.weight;
        let pick = self.pick_next_entity(&self.rqs[p].root, vr, w)?;
        self.clear_buddies_root(pick as usize, p);
        Some(pick as usize)
    }

    /// `pick_next_entity` of VM `vm`'s group run queue on `p`: a vCPU.
    fn pick_group(&mut self, vm: usize, p: usize) -> Option<VcpuId> {
        let gi = self.gi(vm, p);
        let vr = |v: u32| self.se[v as usize].vruntime;
        let pick = self.pick_next_entity(&self.groups[gi].rq, vr, |_| NICE_0_LOAD)?;
        self.clear_buddies_task(vm, p, VcpuId(pick));
        Some(VcpuId(pick))
    }

    /// `pick_next_entity` (3.2): the leftmost, unless it is the skip buddy and the second is
    /// not too far behind; the last buddy, then the next buddy, if not unfair to the leftmost.
    /// A lone entity is picked whatever the buddies say (a buddy in the tree is the leftmost
    /// itself, never ahead of it), so the buddy tests are skipped.
    fn pick_next_entity(&self, rq: &CfsRq, vr: impl Fn(u32) -> u64, w: impl Fn(u32) -> u64) -> Option<u32> {
        let mut it = rq.tree.iter();
        let &(left_vr, left) = it.next()?;
        if it.len() == 0 {
            return Some(left);
        }
        let mut se = left;
        if rq.skip == Some(left) {
            if let Some(&(second_vr, second)) = it.next() {
                if self.wakeup_preempt(second_vr, left_vr, w(left)) < 1 {
                    se = second;
                }
            }
        }
        for b in [rq.last, rq.next] {
            if let Some(b) = b.filter(|b| rq.tree.contains(&(vr(*b), *b))) {
                if self.wakeup_preempt(vr(b), left_vr, w(left)) < 1 {
                    se = b;
                }
            }
        }
        Some(se)
    }

    /// `put_prev_task_fair`: the running vCPU and its group entity go back into their trees.
    #[inline(always)]
    fn put_prev(&mut self, now: Nanos, p: usize) {
        self.update_curr_at(now, p);
        if let Some(vm) = self.rqs[p].root.curr.take() {
            let gi = self.gi(vm as usize, p);
            let g = &mut self.groups[gi];
            if let Some(v) = g.rq.curr.take() {
                let e = &mut self.se[v as usize];
                e.last_ran = now;
                e.queued = true;
                g.rq.tree.insert((e.vruntime, v));
            }
            if g.se.on_rq {
                self.rqs[p].root.tree.insert((g.se.vruntime, vm));
            }
        }
    }

    /// The running task of `pcpu` and its VM, when it is the only task there and `schedule()`
    /// is sure to pick it again: still running (`prev`), allowed here and not out of run time,
    /// no active balance waiting and no UVF overlay. Then `put_prev` puts it and its group
    /// entity into trees holding nothing else, and `pick_next_entity` takes them back at each
    /// level whatever the buddies say.
    fn only_task_stays(&self, ctx: &PolicyCtx, pcpu: PcpuId, prev: Option<VcpuId>) -> Option<(usize, VcpuId)> {
        let p = pcpu.idx();
        if self.rqs[p].nr_running != 1 || self.rqs[p].active_balance.is_some() || self.uvf.is_some() {
            return None;
        }
        let (vm, c) = self.running_task(p)?;
        let stays =
            prev == Some(c) && self.groups[self.gi(vm, p)].se.on_rq && !self.exhausted(VmId(vm as u32)) && ctx.host.may_run(c, pcpu);
        stays.then_some((vm, c))
    }

    /// `put_prev_task_fair`, `pick_next_task_fair` and `set_next_entity` for the only task `c`
    /// of `vm` on `p` (`only_task_stays`), by what they leave behind: the trees and `curr` are
    /// as before, the task's `last_ran` and both levels' `prev_sum_exec` are now, and the
    /// picks clear the buddies pointing at it (`clear_buddies`). Its caller charged the running
    /// entities up to `now` already, so `put_prev`'s `update_curr` has nothing to add.
    fn keep_only_task(&mut self, now: Nanos, vm: usize, c: VcpuId, p: usize) {
        self.clear_buddies_root(vm, p);
        self.clear_buddies_task(vm, p, c);
        let gi = self.gi(vm, p);
        let g = &mut self.groups[gi];
        g.se.prev_sum_exec = g.se.sum_exec;
        let e = &mut self.se[c.idx()];
        e.last_ran = now;
        e.prev_sum_exec = e.sum_exec;
        self.rqs[p].exec_start = now;
    }

    /// `set_next_entity` at both levels: `v` of `vm` becomes the running entity of `p`.
    fn set_next(&mut self, now: Nanos, vm: usize, v: VcpuId, p: usize) {
        let gi = self.gi(vm, p);
        let g = &mut self.groups[gi];
        self.rqs[p].root.tree.remove(&(g.se.vruntime, vm as u32));
        self.rqs[p].root.curr = Some(vm as u32);
        g.se.prev_sum_exec = g.se.sum_exec;
        let e = &mut self.se[v.idx()];
        if e.queued {
            g.rq.tree.remove(&(e.vruntime, v.0));
            e.queued = false;
        }
        g.rq.curr = Some(v.0);
        e.prev_sum_exec = e.sum_exec;
        self.rqs[p].exec_start = now;
    }

    /// `check_preempt_curr` for vCPU `v` just queued on `p` (`check_preempt_wakeup`): an idle pCPU
    /// reschedules; otherwise the entities of the two at their common level are compared
    /// (`find_matching_se`), and a wakee ahead by more than the wakeup granularity preempts and
    /// becomes the next buddy; the preempted task becomes the last buddy when its group run
    /// queue holds `sched_nr_latency` tasks or more (`LAST_BUDDY`).
    fn check_preempt_wakeup(&mut self, ctx: &mut PolicyCtx, v: VcpuId, p: usize) {
        let Some((cvm, c)) = self.running_task(p) else {
            self.resched(ctx, p);
            return;
        };
        if c == v || self.rqs[p].need_resched {
            return;
        }
        let vm = Self::vm_of(ctx, v);
        self.update_curr(ctx, p);
        let scale = self.groups[self.gi(cvm, p)].rq.nr_running >= SCHED_NR_LATENCY;
        let preempt = if vm == cvm {
            self.wakeup_preempt(self.se[c.idx()].vruntime, self.se[v.idx()].vruntime, NICE_0_LOAD) == 1
        } else {
            let cg = &self.groups[self.gi(cvm, p)].se;
            let wg = &self.groups[self.gi(vm, p)].se;
            self.wakeup_preempt(cg.vruntime, wg.vruntime, wg.weight) == 1
        };
        if !preempt {
            return;
        }
        if vm == cvm {
            self.set_buddy(Buddy::Next, vm, p, v);
        } else {
            self.rqs[p].root.next = Some(vm as u32);
        }
        self.resched(ctx, p);
        if scale && vm == cvm {
            self.set_buddy(Buddy::Last, cvm, p, c);
        }
    }

    /// `check_preempt_tick(cfs_rq, curr)` at one level: `ran` since picked, `ideal` its slice,
    /// `vdiff` its vruntime minus the leftmost's. True: reschedule (the caller clears buddies
    /// when it ran its whole slice).
    fn preempt_tick(&self, ran: Nanos, ideal: Nanos, vdiff: i128) -> (bool, bool) {
        if ran > ideal {
            return (true, true);
        }
        if ran < self.min_gran {
            return (false, false);
        }
        (vdiff > ideal as i128, false)
    }

    /// `task_tick_fair`: `entity_tick` for the running vCPU in its group run queue, then for the
    /// group entity in the root run queue (`update_curr`, `update_entity_shares_tick`,
    /// `check_preempt_tick` when the run queue holds another entity).
    fn task_tick(&mut self, ctx: &mut PolicyCtx, p: usize) {
        let now = ctx.now();
        self.update_curr_at(now, p);
        let Some((vm, c)) = self.running_task(p) else { return };
        self.update_entity_shares_tick(now, vm, p);
        let gi = self.gi(vm, p);
        if self.groups[gi].rq.nr_running > 1 {
            let e = &self.se[c.idx()];
            let left = self.groups[gi].rq.tree.first().map_or(e.vruntime, |(vr, _)| *vr);
            let (resched, clear) = self.preempt_tick(e.sum_exec - e.prev_sum_exec, self.slice(c, vm, p), e.vruntime as i128 - left as i128);
            if resched {
                self.resched(ctx, p);
            }
            if clear {
                self.clear_buddies_task(vm, p, c);
            }
        }
        if self.rqs[p].root.nr_running > 1 {
            let gse = self.groups[gi].se;
            let left = self.rqs[p].root.tree.first().map_or(gse.vruntime, |(vr, _)| *vr);
            let (resched, clear) =
                self.preempt_tick(gse.sum_exec - gse.prev_sum_exec, self.group_slice(vm, p), gse.vruntime as i128 - left as i128);
            if resched {
                self.resched(ctx, p);
            }
            if clear {
                self.clear_buddies_root(vm, p);
            }
        }
    }

    /// `yield_task_fair` of the vCPU running on `p`: unless it is alone on the pCPU, it becomes
    /// the skip buddy at both levels (its other buddies cleared first).
    #[inline(always)]
    fn yield_task(&mut self, ctx: &PolicyCtx, p: usize) {
        if self.rqs[p].nr_running == 1 {
            return;
        }
        let Some((vm, c)) = self.running_task(p) else { return };
        self.clear_buddies_task(vm, p, c);
        self.update_curr(ctx, p);
        self.set_buddy(Buddy::Skip, vm, p, c);
    }

    /// Whether `schedule()` on `p`, with its current vCPU still running, has nothing to do:
    /// no `need_resched` (TIF_NEED_RESCHED) and no active balance waiting for the cpu stopper.
    /// `do_schedule` then keeps the vCPU without touching the run queues (`keeps_current`).
    #[inline]
    fn nothing_to_do(&self, p: usize) -> bool {
        !self.rqs[p].need_resched && self.rqs[p].active_balance.is_none()
    }

    /// Whether nothing runs on `p` and nothing waits there (`idle_cpu`).
    fn idle_cpu(&self, p: usize) -> bool {
        self.rqs[p].root.curr.is_none() && self.rqs[p].nr_running == 0
    }

    /// Bring `idle`'s bit of `p` and the busiest-group candidates up to date (after its `nr_running`
    /// changed or it was reset).
    #[inline]
    fn note_rq(&mut self, p: usize) {
        let idle = self.idle_cpu(p);
        self.idle.put(PcpuId(p as u32), idle);
        self.lb_candidates.note(p, self.rqs[p].nr_running);
    }

    /// The root run queue's weight (`weighted_cpuload`, `rq->load.weight`).
    fn weighted_cpuload(&self, p: usize) -> u64 {
        self.rqs[p].root.load
    }

    /// Set `p`'s root load (`rq->load.weight`), in the run queue and in the placement's index.
    #[inline]
    fn set_root_load(&mut self, p: usize, load: u64) {
        self.rqs[p].root.load = load;
        if let Some(ix) = self.load_index.as_mut() {
            ix.set(p, load);
        }
    }

    /// Start every pCPU's tick, once, and build the scheduling domains.
    fn start_ticks(&mut self, ctx: &mut PolicyCtx) {
        if !self.ticks_started {
            self.ticks_started = true;
            self.rebuild_domains(ctx);
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

    /// (Re)build the pool's scheduling domains (`partition_sched_domains`); each pCPU's
    /// per-level state starts afresh.
    fn rebuild_domains(&mut self, ctx: &PolicyCtx) {
        let pool: Vec<usize> = ctx.host.pcpu_ids().map(|p| p.idx()).collect();
        let mut built = domains::build(ctx.host.topology, &pool, self.npcpus);
        for d in built.iter_mut().flatten() {
            if !d.sd.share_cpupower {
                d.sd.imbalance_pct = self.imbalance_pct;
            }
            if self.busy_factor > 0 {
                d.sd.busy_factor = self.busy_factor;
            }
        }
        self.domains = built.into_iter().map(|doms| doms.into_iter().map(Arc::new).collect()).collect();
        self.lb_candidates = LbCandidates::build(&self.domains, |p| self.rqs[p].nr_running);
        let jiffies = self.jiffies(ctx.now());
        for p in 0..self.npcpus {
            self.rqs[p].sd = domains::initial_state(self.domains[p].len(), jiffies);
        }
        // The placement searches the pool's run queues only.
        if let Some(ix) = self.load_index.as_mut() {
            for p in 0..self.npcpus {
                ix.set_present(p, ctx.host.owns_pcpu(PcpuId(p as u32)));
            }
        }
    }
}

/// `se->vruntime -= cfs_rq->min_vruntime` (`task_waking_fair`, `dequeue_entity` without
/// `DEQUEUE_SLEEP`) on u64s as Linux does it: an entity behind the run queue's `min_vruntime` (a
/// sleeper, whose run queue moved on while it slept) keeps its lead as a negative relative
/// vruntime in two's complement, which `place_entity` then bounds to half a latency.
pub(super) fn relative_vruntime(vruntime: u64, min_vruntime: u64) -> u64 {
    vruntime.wrapping_sub(min_vruntime)
}

/// `se->vruntime += cfs_rq->min_vruntime` (`enqueue_entity`) of a relative vruntime. Linux's
/// `min_vruntime` starts at -2^20 ns and all its comparisons are signed differences; the model's
/// starts at 0 and orders vruntimes as plain u64s, so a sum that would fall before 0 (a lead
/// longer than the run queue's whole virtual time, in a run's first milliseconds) is 0.
pub(super) fn absolute_vruntime(relative: u64, min_vruntime: u64) -> u64 {
    let v = relative.wrapping_add(min_vruntime);
    if (relative as i64) < 0 && v > min_vruntime {
        0
    } else {
        v
    }
}

/// `update_min_vruntime`: the run queue's `min_vruntime` follows the smaller of the running
/// entity's and the leftmost's vruntime, never going back.
fn update_min_vruntime(rq: &mut CfsRq, curr_vr: Option<u64>, first_vr: Option<u64>) {
    let candidate = match (curr_vr, first_vr) {
        (Some(a), Some(b)) => a.min(b),
        (Some(a), None) => a,
        (None, Some(b)) => b,
        (None, None) => return,
    };
    rq.min_vruntime = rq.min_vruntime.max(candidate);
}

/// `calc_delta_mine(delta, weight, lw)`: `delta x weight / lw`.
fn mul_div(delta: Nanos, weight: u64, load: u64) -> Nanos {
    crate::time::mul_div(delta, weight, load.max(1)) as Nanos
}

impl Policy for Cfs {
    fn name(&self) -> &'static str {
        "cfs"
    }

    /// The VM's cgroup `cpu.shares` (`sched_group_set_shares`): the task group's shares change
    /// and every group entity of the VM is reweighted (`update_cfs_shares` on each pCPU).
    fn adjust(&mut self, ctx: &mut PolicyCtx, vm: VmId, sched: &VmSched) {
        self.grow_vms(vm.idx());
        self.set_bandwidth(ctx, vm, sched.cap);
        let shares = Self::vm_shares(ctx.host.npcpus(), sched.weight);
        if self.tgs[vm.idx()].shares != shares {
            self.tgs[vm.idx()].shares = shares;
            for p in ctx.host.pcpu_ids().map(|p| p.idx()).collect::<Vec<_>>() {
                self.update_cfs_shares(ctx.now(), vm.idx(), p);
            }
        }
    }

    /// A vCPU thread's creation (`wake_up_new_task`: `select_task_rq(SD_BALANCE_FORK)`, then
    /// `activate_task`, `check_preempt_curr`), or its entry from another pool (the pCPU
    /// `pick_pcpu` chose). It starts one slice late (`task_fork_fair`: START_DEBIT).
    fn insert_vcpu(&mut self, ctx: &mut PolicyCtx, v: VcpuId) {
        self.start_ticks(ctx);
        let vm = Self::vm_of(ctx, v);
        self.vcpu_vm[v.idx()] = vm;
        let p = if std::mem::take(&mut self.picked[v.idx()]) { ctx.host.vcpu(v).last_pcpu.idx() } else { self.select_fork(ctx, v) };
        // The child's vruntime relative to its run queue: one vslice (place_entity, initial).
        let debit = Self::vdelta(self.slice(v, vm, p).max(self.min_gran), NICE_0_LOAD);
        self.se[v.idx()].vruntime = debit;
        self.enqueue_task(ctx.now(), v, vm, p, Enqueue::Relative);
        if self.exhausted(VmId(vm as u32)) {
            // check_enqueue_throttle: its cgroup has no run time.
            self.throttle_one(ctx.now(), v, p);
            return;
        }
        self.check_preempt_wakeup(ctx, v, p);
    }

    fn wake(&mut self, ctx: &mut PolicyCtx, v: VcpuId, waker: Option<PcpuId>) {
        let vm = Self::vm_of(ctx, v);
        let last = ctx.host.vcpu(v).last_pcpu.idx();
        // task_waking_fair: the sleeper's vruntime relative to the run queue it slept on.
        let old_min = self.groups[self.gi(vm, last)].rq.min_vruntime;
        self.se[v.idx()].vruntime = relative_vruntime(self.se[v.idx()].vruntime, old_min);
        let p = self.select_pcpu(ctx, v, waker);
        self.enqueue_task(ctx.now(), v, vm, p, Enqueue::Wakeup);
        if self.exhausted(VmId(vm as u32)) {
            // enqueue_task_fair onto a throttled cfs_rq: runnable, but not until the refill.
            self.throttle_one(ctx.now(), v, p);
            self.flush_throttles(ctx, None);
            return;
        }
        if !self.queued_urgent(ctx, v, p) {
            self.check_preempt_wakeup(ctx, v, p);
        }
        self.note_wakeup(ctx.now(), p);
        self.flush_throttles(ctx, None);
    }

    fn sleep(&mut self, ctx: &mut PolicyCtx, v: VcpuId) {
        if let Some(p) = self.se[v.idx()].rq {
            let vm = Self::vm_of(ctx, v);
            self.se[v.idx()].last_ran = ctx.now();
            self.dequeue_task(ctx.now(), v, vm, true);
            self.rqs[p].need_resched = true;
            self.uvf_sleep(v);
            self.flush_throttles(ctx, Some(p));
            return;
        }
        self.uvf_sleep(v);
    }

    /// `select_task_rq` for a task entering this pool (no waker): the 3.2 wake path from its
    /// previous pCPU, within its cpumask. The `insert_vcpu` that follows keeps that pCPU.
    fn pick_pcpu(&mut self, ctx: &mut PolicyCtx, v: VcpuId) -> Option<PcpuId> {
        self.picked[v.idx()] = true;
        Some(PcpuId(self.select_pcpu(ctx, v, None) as u32))
    }

    /// `set_cpus_allowed_ptr` (3.2 sched.c): a queued vCPU on a run queue it may no longer use
    /// moves now (`__migrate_task`); a running one is preempted and moves when it is put back
    /// (`migration_cpu_stop`); a halted one goes through `select_fallback_rq` when it wakes.
    fn adjust_affinity(&mut self, ctx: &mut PolicyCtx, v: VcpuId) {
        let Some(p) = self.se[v.idx()].rq else { return };
        if ctx.host.may_run(v, PcpuId(p as u32)) {
            return;
        }
        if self.curr_task(p) == Some(v) {
            self.resched_now(ctx, p);
        } else if self.se[v.idx()].queued {
            let to = self.fallback_pcpu(ctx, v, p);
            self.migrate(ctx.now(), v, Self::vm_of(ctx, v), to);
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
                    crate::hypervisor::kvm::kvm_vcpu_on_spin(self, ctx, v);
                } else if let Some(p) = self.se[v.idx()].rq {
                    // sys_sched_yield: yield_task_fair, then schedule().
                    self.yield_task(ctx, p);
                    self.resched_now(ctx, p);
                }
            }
            // A guest's yield hypercall (Xen's SCHEDOP_yield; KVM has none before
            // KVM_HC_SCHED_YIELD in 5.3, a directed yield not modelled): the vCPU thread yields
            // as sys_sched_yield does (docs/model.md § seed 002: the Linux 4.4 guest).
            YieldReason::Hypercall => {
                if let Some(p) = self.se[v.idx()].rq {
                    self.yield_task(ctx, p);
                    self.resched_now(ctx, p);
                }
            }
            // KVM_HC_SCHED_YIELD (the Linux 6.x guest's pv_sched_yield): KVM's
            // `kvm_sched_yield` -> `kvm_vcpu_yield_to` -> this scheduler's `yield_to` (cfs/yield_to.rs).
            YieldReason::DirectedTo(target) => {
                crate::hypervisor::kvm::kvm_sched_yield(self, ctx, v, target);
            }
        }
        self.flush_throttles(ctx, None);
    }

    fn do_schedule(&mut self, ctx: &mut PolicyCtx, pcpu: PcpuId) -> Decision {
        let p = pcpu.idx();
        let now = ctx.now();
        let host_curr = ctx.host.pcpu(pcpu).current;
        let still_running = host_curr.is_some_and(|c| ctx.host.vcpu(c).state == VcpuState::Running);
        if still_running && self.nothing_to_do(p) {
            return Decision::run(host_curr.expect("checked"), None);
        }
        self.rqs[p].need_resched = false;
        self.update_curr(ctx, p);
        self.flush_throttles(ctx, Some(p));
        if let Some((vm, c)) = self.only_task_stays(ctx, pcpu, host_curr.filter(|_| still_running)) {
            self.keep_only_task(now, vm, c, p);
            return Decision::run(c, None);
        }
        let mut prev = host_curr.filter(|_| still_running);
        // put_prev_task: a still-runnable curr goes back into its trees, unless its cgroup ran
        // out of run time (check_cfs_rq_runtime -> throttle_cfs_rq).
        let was = self.running_task(p);
        self.put_prev(now, p);
        if let Some((vm, c)) = was.filter(|(_, c)| still_running && host_curr == Some(*c)) {
            if self.exhausted(VmId(vm as u32)) {
                self.throttle_one(now, c, p);
                prev = None;
            } else if !ctx.host.may_run(c, pcpu) {
                // Its affinity no longer allows this pCPU (adjust_affinity): it moves now.
                let to = self.fallback_pcpu(ctx, c, p);
                self.migrate(now, c, vm, to);
                self.check_preempt_wakeup(ctx, c, to);
                prev = None;
            }
        }
        // The cpu stopper of an active balance runs first (active_load_balance_cpu_stop).
        if let Some(to) = self.rqs[p].active_balance.take() {
            self.active_load_balance(ctx, p, to);
        }
        if self.rqs[p].nr_running == 0 {
            self.idle_balance(ctx, p);
        }
        let next = match self.pick_urgent(ctx, p, prev) {
            Some(u) => {
                let vm = Self::vm_of(ctx, u);
                self.clear_buddies_task(vm, p, u);
                Some((vm, u))
            }
            None => self.pick_root(p).and_then(|vm| self.pick_group(vm, p).map(|v| (vm, v))),
        };
        self.start_urgent_tslice(ctx, p, next.map(|(_, v)| v));
        match next {
            Some((vm, n)) => {
                self.set_next(now, vm, n, p);
                Decision::run(n, None)
            }
            None => Decision::idle(),
        }
    }

    /// `do_schedule`'s first test: the running vCPU stays, untouched.
    fn keeps_current(&self, pcpu: PcpuId) -> bool {
        self.nothing_to_do(pcpu.idx())
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
        // scheduler_tick.
        let p = key as usize;
        let timer = self.rqs[p].tick_timer.expect("a tick fires only after start_ticks made it");
        ctx.set_timer(&timer, ctx.now() + self.tick);
        self.update_cpu_load(ctx.now(), p);
        self.task_tick(ctx, p);
        self.trigger_load_balance(ctx, p);
        self.flush_throttles(ctx, None);
    }

    /// The pCPU leaves the pool (cpuset shrunk / CPU offlined: `migrate_tasks` in 3.2's
    /// `CPU_DYING`): its running vCPU (already switched out by the engine) and every vCPU queued
    /// on it move, keeping their lag, to the pCPU `select_fallback_rq` gives; its tick stops and
    /// the pool's domains are rebuilt without it.
    fn remove_pcpu(&mut self, ctx: &mut PolicyCtx, pcpu: PcpuId) {
        let p = pcpu.idx();
        let now = ctx.now();
        self.put_prev(now, p);
        let moving: Vec<(usize, VcpuId)> = self.rqs[p]
            .leaf
            .iter()
            .flat_map(|&vm| self.groups[self.gi(vm as usize, p)].tasks.iter().map(move |&v| (vm as usize, v)))
            .collect();
        for (vm, v) in moving {
            let to = self.fallback_pcpu(ctx, v, ctx.host.vcpu(v).last_pcpu.idx());
            if self.exhausted(VmId(vm as u32)) {
                // Its cgroup has no run time: it waits, throttled, for the refill on `to`.
                self.throttle_one(now, v, to);
                continue;
            }
            self.migrate(now, v, vm, to);
            self.check_preempt_wakeup(ctx, v, to);
        }
        // The group run queues left behind no longer count in their groups' weight (Linux
        // would let their averages decay over four windows).
        for vm in 0..self.tgs.len() {
            let gi = self.gi(vm, p);
            let g = &mut self.groups[gi];
            self.tgs[vm].load_weight -= g.avg.load_contribution;
            g.avg = LoadAvg::default();
            g.on_list = false;
        }
        let timer = self.rqs[p].tick_timer;
        self.rqs[p] =
            Rq { root: CfsRq { min_vruntime: self.rqs[p].root.min_vruntime, ..CfsRq::default() }, tick_timer: timer, ..Rq::default() };
        // The reset emptied the run queue; the placement's index and the idle mask hear it here.
        self.set_root_load(p, 0);
        self.note_rq(p);
        // scheduler_tick stops with the CPU.
        if let Some(timer) = timer {
            ctx.stop_timer(&timer);
        }
        self.rebuild_domains(ctx);
        self.flush_throttles(ctx, Some(p));
    }

    /// The pCPU joins the pool, idle; its tick starts and the pool's domains are rebuilt.
    fn add_pcpu(&mut self, ctx: &mut PolicyCtx, pcpu: PcpuId) {
        let p = pcpu.idx();
        let old = &self.rqs[p];
        self.rqs[p] = Rq {
            root: CfsRq { min_vruntime: old.root.min_vruntime, ..CfsRq::default() },
            tick_timer: old.tick_timer,
            avg_idle: 2 * self.migration_cost,
            exec_start: ctx.now(),
            ..Rq::default()
        };
        // As in `remove_pcpu`: the index and the idle mask hear of the emptied run queue.
        self.set_root_load(p, 0);
        self.note_rq(p);
        self.rebuild_domains(ctx);
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
        if let Some(u) = &self.uvf {
            u.check_entries()?;
        }
        if let Some(p) = (0..self.rqs.len()).find(|&p| self.idle.contains(PcpuId(p as u32)) != self.idle_cpu(p)) {
            return Err(format!(
                "cfs: the idle mask says pCPU {p} idle={} but idle_cpu is {}",
                self.idle.contains(PcpuId(p as u32)),
                self.idle_cpu(p)
            ));
        }
        self.lb_candidates.check(&self.domains, |p| self.rqs[p].nr_running)?;
        for p in 0..self.rqs.len() {
            let rq = &self.rqs[p];
            // Per VM: the load and count of its vCPUs on this pCPU.
            let mut per_vm = vec![(0u64, 0u64); self.tgs.len()];
            for (i, e) in self.se.iter().enumerate().filter(|(_, e)| e.rq == Some(p)) {
                let vm = host.vcpus[i].vm.idx();
                per_vm[vm].0 += NICE_0_LOAD;
                per_vm[vm].1 += 1;
                let g = &self.groups[self.gi(vm, p)];
                let in_tree = g.rq.tree.contains(&(e.vruntime, i as u32));
                if in_tree != e.queued {
                    return Err(format!("cfs: vCPU {i} queued={} but in tree={in_tree}", e.queued));
                }
                if e.queued && host.vcpus[i].state != VcpuState::Runnable {
                    return Err(format!("cfs: vCPU {i} is queued on pCPU {p} but {:?}", host.vcpus[i].state));
                }
                if !e.queued && g.rq.curr != Some(i as u32) {
                    return Err(format!("cfs: vCPU {i} is on pCPU {p}'s run queue but neither queued nor running"));
                }
            }
            let (mut root_load, mut root_nr, mut tasks) = (0, 0, 0);
            for (vm, &(load, nr)) in per_vm.iter().enumerate() {
                let g = &self.groups[self.gi(vm, p)];
                if load != g.rq.load || nr != g.rq.nr_running || g.tasks.len() as u64 != nr {
                    return Err(format!(
                        "cfs: VM {vm} on pCPU {p}: load {} / nr {} but its vCPUs sum to {load} / {nr}",
                        g.rq.load, g.rq.nr_running
                    ));
                }
                if g.se.on_rq != (nr > 0) {
                    return Err(format!("cfs: VM {vm}'s group entity on pCPU {p} on_rq={} with {nr} vCPUs", g.se.on_rq));
                }
                if g.se.on_rq {
                    root_load += g.se.weight;
                    root_nr += 1;
                    let in_tree = rq.root.tree.contains(&(g.se.vruntime, vm as u32));
                    if in_tree == (rq.root.curr == Some(vm as u32)) {
                        return Err(format!("cfs: VM {vm}'s group entity on pCPU {p}: in tree={in_tree}, curr={:?}", rq.root.curr));
                    }
                }
                tasks += nr;
            }
            if root_load != rq.root.load || root_nr != rq.root.nr_running || tasks != rq.nr_running {
                return Err(format!(
                    "cfs: pCPU {p} root load {} / nr {} / tasks {} but entities sum to {root_load} / {root_nr} / {tasks}",
                    rq.root.load, rq.root.nr_running, rq.nr_running
                ));
            }
            let runs = host.pcpus[p].current.filter(|c| host.vcpus[c.idx()].state == VcpuState::Running && host.owns_vcpu(*c));
            if host.owns_pcpu(PcpuId(p as u32)) && runs.is_some() && self.curr_task(p) != runs {
                return Err(format!("cfs: pCPU {p} runs {runs:?} but the policy's current vCPU is {:?}", self.curr_task(p)));
            }
        }
        if self.placement == Placement::Balance {
            self.check_no_stacked_siblings(host)?;
        }
        if let Some(ix) = &self.load_index {
            // The placement's index holds every run queue's load, and the pool's sum is the
            // index's (a run queue outside the pool is empty).
            for (p, rq) in self.rqs.iter().enumerate() {
                if ix.load(p) != rq.root.load {
                    return Err(format!(
                        "cfs: the placement's index holds load {} for pCPU {p}, whose root load is {}",
                        ix.load(p),
                        rq.root.load
                    ));
                }
                if !host.owns_pcpu(PcpuId(p as u32)) && rq.root.load != 0 {
                    return Err(format!("cfs: pCPU {p} is outside the pool but its root load is {}", rq.root.load));
                }
            }
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

    fn kvm_host(&mut self) -> Option<&mut dyn KvmHost> {
        Some(self)
    }
}

/// What this KVM host scheduler answers KVM (hypervisor/kvm.rs).
impl KvmHost for Cfs {
    /// `single_task_running()`: `this_rq()->nr_running == 1`.
    fn single_task_running(&self, p: PcpuId) -> bool {
        self.rqs.get(p.idx()).is_none_or(|rq| rq.nr_running <= 1)
    }

    fn kvm_sched_yield(&mut self, ctx: &mut PolicyCtx, v: VcpuId, target: VcpuId) {
        crate::hypervisor::kvm::kvm_sched_yield(self, ctx, v, target);
        self.flush_throttles(ctx, None);
    }
}
