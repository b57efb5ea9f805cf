//! Linux 6.6's EEVDF (the first EEVDF release) as a KVM host runs vCPU threads
//! (kernel/sched/fair.c, kernel/sched/sched.h, kernel/sched/features.h, kernel/sched/core.c,
//! kernel/sched/topology.c at v6.6).
//!
//! Each vCPU is a host task (nice 0, weight 1024); each VM is a task group (a cgroup, as libvirt
//! puts a VM's threads under `machine.slice`) with one group run queue and one group entity per
//! pCPU, one level below each pCPU's root run queue. A VM's `tg->shares` is 1024 × weight / 256
//! (the cgroup default, 1024, at the default weight); each group entity's weight is 6.x's
//! `calc_group_shares` (`update_cfs_group`), computed from run-queue weights instead of PELT
//! averages (docs/model.md, "EEVDF host (Linux 6.6)").
//!
//! At both levels an entity has a vruntime, a virtual deadline (v + base_slice / w) and, while
//! off the run queue, a lag; the run queue keeps V (`avg_vruntime`) and picks the eligible
//! entity with the earliest deadline (`pick_eevdf`). The run queue and entity arithmetic is in
//! `rq.rs`; this file holds the hierarchy (`enqueue_task_fair`, `dequeue_task_fair`,
//! `pick_next_task_fair`, `check_preempt_wakeup`, `yield_task_fair`, `task_tick_fair`) and the
//! `Policy` glue; `balance.rs` the wake path (`select_task_rq_fair`, `select_idle_sibling`), fork
//! placement and the load balancer; `kvm.rs` 6.6's `yield_to` for KVM's `kvm_vcpu_on_spin`.
//!
//! Not modelled (6.6 has them; docs/model.md lists each with its reason): buddies (6.6 sets
//! `cfs_rq->next` in `yield_to_task_fair` and on a sleep, but `pick_next_entity` reads it only
//! with NEXT_BUDDY, false by default), PELT, CFS bandwidth (a `[[vm]] cap` is refused), HRTICK
//! (off by default: preemption waits for the tick), cpupool changes.

use super::{HostShape, PolicyKind};
use crate::hardware::cpumask::CpuMask;
use crate::hypervisor::kvm::{KvmSpin, KvmVersion};
use crate::hypervisor::policy::{Decision, HostView, KvmHost, Policy, PolicyCtx, Timer, VcpuState, VmSched, YieldReason};
use crate::ids::{PcpuId, VcpuId, VmId};
use crate::params::{ParamSpec, Params};
use crate::time::{Nanos, SEC, US};
use rq::{calc_delta_fair, CfsRq, Features, Place, Se, NICE_0_LOAD};

mod balance;
mod lb_index;
mod rq;
#[cfg(test)]
mod tests;
mod yield_to;

/// `MIN_SHARES` and `MAX_SHARES` (kernel/sched/sched.h, unscaled): the clamp of a group's shares.
const MIN_SHARES: u64 = 2;
const MAX_SHARES: u64 = 1 << 18;
/// The VM weight at which a VM's cgroup has the default shares (`ROOT_TASK_GROUP_LOAD`, 1024).
const DEFAULT_VM_WEIGHT: u64 = 256;

pub struct EevdfKind;

impl PolicyKind for EevdfKind {
    fn name(&self) -> &'static str {
        "eevdf"
    }
    fn describe(&self) -> &'static str {
        "Linux 6.6 EEVDF scheduling vCPU threads on a KVM host: one cgroup per VM with \
         calc_group_shares group entities, virtual deadlines from base_slice, eligibility by lag, \
         place_entity with lag preservation, RUN_TO_PARITY, wakeup preemption by deadline, the \
         tick at CONFIG_HZ, select_idle_sibling wakeups, the 6.x load balancer's idle and \
         periodic pulls, and kvm_vcpu_on_spin with 6.6's yield_to (kernel/sched/fair.c, \
         kernel/sched/core.c, virt/kvm/kvm_main.c)"
    }
    fn params(&self) -> Vec<ParamSpec> {
        vec![
            ParamSpec::duration("base_slice", 750 * US, "sysctl_sched_base_slice before scaling: 0.75 ms (fair.c, 6.6); scaled by 1 + ilog2(min(pCPUs, 8))")
                .range(10_000.0, 1e9),
            ParamSpec::boolean("scale_by_cpus", true, "SCHED_TUNABLESCALING_LOG: multiply base_slice by 1 + ilog2(min(pCPUs, 8))"),
            ParamSpec::int("hz", 250, "CONFIG_HZ: the scheduler tick runs HZ times a second (250 by default; 100, 300 and 1000 are the other Kconfig choices)")
                .range(10.0, 10_000.0),
            ParamSpec::boolean("run_to_parity", true, "RUN_TO_PARITY (features.h): an eligible running task keeps the pCPU until its request is used up"),
            ParamSpec::boolean("place_lag", true, "PLACE_LAG (features.h): a waking or migrating task keeps its lag, scaled by (W + w) / W"),
            ParamSpec::int("imbalance_pct", 117, "sd_init imbalance_pct of the MC, DIE and NUMA levels (6.6: 117; SMT levels keep 110)")
                .range(100.0, 400.0),
            ParamSpec::int("busy_factor", 16, "sd_init busy_factor: a busy pCPU balances this many times less often (6.6: 16)")
                .range(1.0, 1024.0),
            ParamSpec::duration("migration_cost", 500 * US, "sysctl_sched_migration_cost: a vCPU that ran this recently is cache-hot and not pulled by the balancer")
                .range(0.0, 1e9),
            ParamSpec::boolean("directed_yield", true, "on a pause-loop exit, yield to a sibling vCPU (kvm_vcpu_on_spin); false: plain yield"),
            ParamSpec::choice("kvm", KvmVersion::NAMES, "6.6", "which kvm_vcpu_on_spin candidate rules KVM follows (hypervisor/kvm.rs; default 6.6, the KVM of the EEVDF kernel; 3.2-3.16 for comparison); the scheduler's yield_to is always 6.6's"),
        ]
    }
    /// A KVM host: the Linux 6.x guest's KVM paravirtual features apply (`[guest] kernel =
    /// "linux-6.x"`).
    fn hypervisor(&self) -> super::Hypervisor {
        super::Hypervisor::Kvm
    }
    /// `groups` and the group entities in `ses`, one per VM and pCPU.
    fn groups_per_vm_and_pcpu(&self) -> bool {
        true
    }
    fn build(&self, params: &Params, host: HostShape) -> Box<dyn Policy> {
        Box::new(Eevdf::new(params, host))
    }
}

/// Per-pCPU state (`struct rq`).
#[derive(Clone, Debug, Default)]
struct Rq {
    root: CfsRq,
    /// `rq->nr_running`: vCPU tasks queued or running here.
    nr_running: u64,
    /// When the running entities were last charged (`exec_start` of both levels).
    exec_start: Nanos,
    need_resched: bool,
    tick_timer: Option<Timer>,
    /// Per domain level: `last_balance` (jiffies), `balance_interval` (ms), `nr_balance_failed`.
    sd: Vec<crate::hypervisor::policies::cfs::domains::SdState>,
    /// `rq->idle_stamp`: when `newidle_balance` found this pCPU going idle (None: not idle
    /// since, or a pull ended it).
    idle_stamp: Option<Nanos>,
    /// `rq->avg_idle`: the average idle period, updated at each wakeup onto the pCPU
    /// (`ttwu_do_activate`); `newidle_balance` skips the levels it cannot afford.
    avg_idle: Nanos,
}

/// A task group (`struct task_group`) as this model keeps it.
#[derive(Clone, Copy, Debug, Default)]
struct Tg {
    /// `tg->shares`.
    shares: u64,
    /// The weight of the group's run queues over all pCPUs (stands for `tg->load_avg`).
    load: u64,
}

pub struct Eevdf {
    base_slice: Nanos,
    tick: Nanos,
    features: Features,
    migration_cost: Nanos,
    imbalance_pct: u64,
    busy_factor: u64,
    directed_yield: bool,
    kvm: KvmSpin,
    npcpus: usize,
    nvcpus: usize,
    /// Entities: vCPU tasks by vCPU id, then group entities at `nvcpus + vm * npcpus + p`.
    ses: Vec<Se>,
    /// The pCPU whose group run queue holds each vCPU (queued or running).
    task_rq: Vec<Option<usize>>,
    vcpu_vm: Vec<usize>,
    /// When each vCPU last stopped running (`task_hot`).
    last_ran: Vec<Nanos>,
    /// `p->recent_used_cpu`.
    recent_used: Vec<usize>,
    /// Group run queues, `vm * npcpus + p`.
    groups: Vec<CfsRq>,
    rqs: Vec<Rq>,
    tgs: Vec<Tg>,
    /// pCPUs with no vCPU queued or running (`idle_cpu`).
    idle: CpuMask,
    domains: balance::Domains,
    ticks_started: bool,
    /// `rq->rd->overload`: some run queue held two tasks since the last top-level balance
    /// (set by `add_nr_running`, recomputed by `update_sd_lb_stats` at the top level).
    overload: bool,
    /// `detach_tasks`'s list of the busiest run queue's queued vCPUs, which its pulls change:
    /// taken, refilled and put back, so a balance allocates nothing.
    walk_queued: Vec<VcpuId>,
}

impl Eevdf {
    fn new(params: &Params, host: HostShape) -> Self {
        // get_update_sysctl_factor(): 1 + ilog2(min(ncpus, 8)) (sched_update_scaling).
        let factor = if params.boolean("scale_by_cpus") { 1 + host.npcpus.clamp(1, 8).ilog2() as u64 } else { 1 };
        let (npcpus, nvcpus, nvms) = (host.npcpus as usize, host.nvcpus as usize, host.nvms as usize);
        Eevdf {
            base_slice: params.duration("base_slice") * factor,
            // TICK_NSEC at CONFIG_HZ.
            tick: SEC / params.int("hz").max(1),
            features: Features {
                place_lag: params.boolean("place_lag"),
                place_deadline_initial: true,
                run_to_parity: params.boolean("run_to_parity"),
            },
            migration_cost: params.duration("migration_cost"),
            imbalance_pct: params.int("imbalance_pct"),
            busy_factor: params.int("busy_factor"),
            directed_yield: params.boolean("directed_yield"),
            kvm: KvmSpin::new(
                KvmVersion::from_name(params.choice("kvm")).expect("the loader checks the name against KvmVersion::NAMES"),
                nvms,
            ),
            npcpus,
            nvcpus,
            ses: vec![Se { weight: NICE_0_LOAD, ..Se::default() }; nvcpus + nvms * npcpus],
            task_rq: vec![None; nvcpus],
            vcpu_vm: vec![0; nvcpus],
            last_ran: vec![0; nvcpus],
            recent_used: vec![0; nvcpus],
            groups: vec![CfsRq::default(); nvms * npcpus],
            // sched_init: avg_idle = 2 * sysctl_sched_migration_cost.
            rqs: vec![Rq { avg_idle: 2 * params.duration("migration_cost"), ..Rq::default() }; npcpus],
            tgs: vec![Tg::default(); nvms],
            idle: CpuMask::full(npcpus),
            domains: balance::Domains::default(),
            ticks_started: false,
            overload: false,
            walk_queued: Vec::new(),
        }
    }

    /// Index of VM `vm`'s group run queue on pCPU `p`.
    #[inline]
    fn gi(&self, vm: usize, p: usize) -> usize {
        vm * self.npcpus + p
    }

    /// The entity id of VM `vm`'s group entity on pCPU `p`.
    #[inline]
    fn gse(&self, vm: usize, p: usize) -> u32 {
        (self.nvcpus + vm * self.npcpus + p) as u32
    }

    /// The VM of group entity `id`.
    fn gse_vm(&self, id: u32) -> usize {
        (id as usize - self.nvcpus) / self.npcpus
    }

    /// Make room for VM `vm` (a VM the policy was not sized for).
    fn grow_vms(&mut self, vm: usize) {
        if self.tgs.len() <= vm {
            let n = vm + 1;
            self.tgs.resize(n, Tg::default());
            self.groups.resize(n * self.npcpus, CfsRq::default());
            self.ses.resize(self.nvcpus + n * self.npcpus, Se { weight: NICE_0_LOAD, ..Se::default() });
            self.kvm.grow_vms(n);
        }
    }

    /// The VM's `tg->shares` (`sched_group_set_shares` clamps to [MIN_SHARES, MAX_SHARES]).
    fn vm_shares(weight: u32) -> u64 {
        (NICE_0_LOAD * weight as u64 / DEFAULT_VM_WEIGHT).clamp(MIN_SHARES, MAX_SHARES)
    }

    /// The running (VM, vCPU) of `p` in the policy's books.
    fn running_task(&self, p: usize) -> Option<(usize, VcpuId)> {
        let g = self.rqs[p].root.curr?;
        let vm = self.gse_vm(g);
        let v = self.groups[self.gi(vm, p)].curr?;
        Some((vm, VcpuId(v)))
    }

    /// `update_curr` of both levels of `p` up to `now`: true if a level's `curr` used up its
    /// request while another entity waits there (`update_deadline`'s `resched_curr`).
    fn update_curr_at(&mut self, now: Nanos, p: usize) -> bool {
        let delta = now.saturating_sub(self.rqs[p].exec_start);
        self.rqs[p].exec_start = now;
        if delta == 0 {
            return false;
        }
        let Some((vm, _)) = self.running_task(p) else { return false };
        let gi = self.gi(vm, p);
        let a = self.groups[gi].update_curr(&mut self.ses, delta, self.base_slice);
        let b = self.rqs[p].root.update_curr(&mut self.ses, delta, self.base_slice);
        a || b
    }

    /// `update_curr`, rescheduling `p` if a request ran out.
    fn update_curr(&mut self, ctx: &mut PolicyCtx, p: usize) {
        if self.update_curr_at(ctx.now(), p) {
            self.resched(ctx, p);
        }
    }

    /// Whether `schedule()` on `p`, with its current vCPU still running, has nothing to do (no
    /// TIF_NEED_RESCHED): `do_schedule` then keeps the vCPU without touching the run queues
    /// (`keeps_current`).
    #[inline]
    fn nothing_to_do(&self, p: usize) -> bool {
        !self.rqs[p].need_resched
    }

    /// `resched_curr`.
    fn resched(&mut self, ctx: &mut PolicyCtx, p: usize) {
        if !self.rqs[p].need_resched {
            self.rqs[p].need_resched = true;
            ctx.reschedule(PcpuId(p as u32));
        }
    }

    /// `update_cfs_group(gse)`: VM `vm`'s group entity on `p` takes `calc_group_shares` of its
    /// group run queue: shares × load / tg_weight, clamped to [MIN_SHARES, shares]. Left alone
    /// while its group run queue is empty (PELT's `load_avg` would keep it near its last
    /// value). The caller has charged `p`'s running entities.
    fn update_cfs_group(&mut self, vm: usize, p: usize) {
        let load = self.groups[self.gi(vm, p)].load;
        if load == 0 {
            return;
        }
        let tg = self.tgs[vm];
        let shares = (tg.shares as u128 * load as u128 / tg.load.max(load) as u128) as u64;
        let shares = shares.clamp(MIN_SHARES, tg.shares.max(MIN_SHARES));
        let id = self.gse(vm, p);
        self.rqs[p].root.reweight(&mut self.ses, id, shares);
        self.note_rq(p);
    }

    /// Account `delta` tasks on `p` (`rq->nr_running`) and keep the idle mask; a second task
    /// on a run queue sets the root domain's `overload` (`add_nr_running`).
    fn add_nr_running(&mut self, p: usize, delta: i64) {
        let rq = &mut self.rqs[p];
        rq.nr_running = (rq.nr_running as i64 + delta) as u64;
        if rq.nr_running >= 2 {
            self.overload = true;
        }
        self.idle.set(PcpuId(p as u32), rq.nr_running == 0);
    }

    /// `enqueue_task_fair` of vCPU `v` of VM `vm` on `p`: `enqueue_entity` in its group run
    /// queue, then its group entity's (`ENQUEUE_WAKEUP`) in the root run queue if it was not
    /// there, else `update_cfs_group`. True if charging the running entities asks a resched.
    fn enqueue_task(&mut self, now: Nanos, v: VcpuId, vm: usize, p: usize, how: Place) -> bool {
        let resched = self.update_curr_at(now, p);
        let gi = self.gi(vm, p);
        self.groups[gi].place_entity(&mut self.ses, v.0, how, self.base_slice, self.features);
        self.groups[gi].account_enqueue(&mut self.ses, v.0);
        self.tgs[vm].load += NICE_0_LOAD;
        self.task_rq[v.idx()] = Some(p);
        self.add_nr_running(p, 1);
        let g = self.gse(vm, p);
        let on_rq = self.ses[g as usize].on_rq;
        self.update_cfs_group(vm, p);
        if !on_rq {
            self.rqs[p].root.place_entity(&mut self.ses, g, Place::Normal, self.base_slice, self.features);
            self.rqs[p].root.account_enqueue(&mut self.ses, g);
        }
        self.note_rq(p);
        resched
    }

    /// `dequeue_task_fair` of vCPU `v` (a sleep or a migration: 6.6 treats them alike, the lag
    /// is saved either way): `dequeue_entity` in its group run queue, then its group entity's
    /// when the group run queue empties, else `update_cfs_group`. A running `v` stops being
    /// `curr` (the engine reschedules its pCPU).
    fn dequeue_task(&mut self, now: Nanos, v: VcpuId) {
        let Some(p) = self.task_rq[v.idx()].take() else { return };
        let vm = self.vcpu_vm[v.idx()];
        self.update_curr_at(now, p);
        let gi = self.gi(vm, p);
        self.groups[gi].dequeue(&mut self.ses, v.0, self.tick);
        self.tgs[vm].load -= NICE_0_LOAD;
        self.add_nr_running(p, -1);
        let g = self.gse(vm, p);
        if self.groups[gi].nr_running == 0 {
            self.rqs[p].root.dequeue(&mut self.ses, g, self.tick);
        } else {
            self.update_cfs_group(vm, p);
        }
        self.note_rq(p);
    }

    /// Move queued `v` to `to` keeping its lag (`detach_task` + `attach_task`, or a wakeup on
    /// another pCPU); the caller checks preemption there.
    fn migrate(&mut self, now: Nanos, v: VcpuId, to: usize) -> bool {
        self.dequeue_task(now, v);
        self.enqueue_task(now, v, self.vcpu_vm[v.idx()], to, Place::Normal)
    }

    /// `check_preempt_wakeup` (6.6) for `v` just queued on `p`: an idle pCPU reschedules;
    /// otherwise, at the level where the two meet (`find_matching_se`), the running one is
    /// charged and the wakee preempts iff `pick_eevdf` returns it. `resched` carries a request
    /// that ran out while charging.
    fn check_preempt_wakeup(&mut self, ctx: &mut PolicyCtx, v: VcpuId, p: usize, resched: bool) {
        let Some((cvm, c)) = self.running_task(p) else {
            self.resched(ctx, p);
            return;
        };
        if c == v || self.rqs[p].need_resched {
            return;
        }
        let resched = self.update_curr_at(ctx.now(), p) || resched;
        let vm = self.vcpu_vm[v.idx()];
        let wins = if vm == cvm {
            self.groups[self.gi(vm, p)].pick_eevdf(&self.ses, self.features) == Some(v.0)
        } else {
            let g = self.gse(vm, p);
            self.rqs[p].root.pick_eevdf(&self.ses, self.features) == Some(g)
        };
        if wins || resched {
            self.resched(ctx, p);
        }
    }

    /// `yield_task_fair` (6.6) of the vCPU running on `p`: unless it is alone on the pCPU, it
    /// is charged and its deadline moves one request later (`se->deadline +=
    /// calc_delta_fair(se->slice, se)`), at the task level only.
    fn yield_task(&mut self, now: Nanos, p: usize) {
        if self.rqs[p].nr_running == 1 {
            return;
        }
        let Some((_, c)) = self.running_task(p) else { return };
        self.update_curr_at(now, p);
        let se = &mut self.ses[c.idx()];
        se.deadline += calc_delta_fair(se.slice, se.weight);
    }

    /// Start every pCPU's tick, once, staggered over one tick, and build the domains.
    fn start_ticks(&mut self, ctx: &mut PolicyCtx) {
        if self.ticks_started {
            return;
        }
        self.ticks_started = true;
        self.rebuild_domains(ctx);
        for p in ctx.host.pcpu_ids().map(|p| p.idx()).collect::<Vec<_>>() {
            let timer = ctx.init_timer(p as u64);
            self.rqs[p].tick_timer = Some(timer);
            let offset = self.tick * (p as u64 + 1) / (self.rqs.len() as u64 + 1);
            ctx.set_timer(&timer, ctx.now() + offset);
        }
    }

    /// The jiffy counter.
    fn jiffies(&self, now: Nanos) -> u64 {
        now / self.tick
    }
}

impl Policy for Eevdf {
    fn name(&self) -> &'static str {
        "eevdf"
    }

    /// The VM's cgroup shares (`sched_group_set_shares`): every group entity of the VM is
    /// reweighted (`update_cfs_group` on each pCPU, after charging it).
    fn adjust(&mut self, ctx: &mut PolicyCtx, vm: VmId, sched: &VmSched) {
        self.grow_vms(vm.idx());
        let shares = Self::vm_shares(sched.weight);
        if self.tgs[vm.idx()].shares != shares {
            self.tgs[vm.idx()].shares = shares;
            for p in ctx.host.pcpu_ids().map(|p| p.idx()).collect::<Vec<_>>() {
                self.update_curr(ctx, p);
                self.update_cfs_group(vm.idx(), p);
                // A group entity that never ran takes the full shares until its first enqueue.
                let g = self.gse(vm.idx(), p) as usize;
                if !self.ses[g].on_rq && self.groups[self.gi(vm.idx(), p)].load == 0 {
                    self.ses[g].weight = shares;
                }
            }
        }
    }

    /// A vCPU thread's creation (`wake_up_new_task`: `select_task_rq(SD_BALANCE_FORK)`,
    /// `activate_task`, `check_preempt_curr`). 6.6's `task_fork_fair` places the child with
    /// `ENQUEUE_INITIAL`, but `wake_up_new_task` enqueues it with `ENQUEUE_NOCLOCK` only, so
    /// `enqueue_entity`'s `place_entity` places it again, with its zero lag and a full slice
    /// (`ENQUEUE_INITIAL` reached `activate_task` only in a later release).
    fn insert_vcpu(&mut self, ctx: &mut PolicyCtx, v: VcpuId) {
        self.start_ticks(ctx);
        let vm = ctx.host.vcpu(v).vm.idx();
        self.grow_vms(vm);
        self.vcpu_vm[v.idx()] = vm;
        // __sched_fork: vlag = 0, slice = base slice.
        self.ses[v.idx()] = Se { weight: NICE_0_LOAD, slice: self.base_slice, ..Se::default() };
        let p = self.select_fork(ctx, v);
        self.recent_used[v.idx()] = p;
        let resched = self.enqueue_task(ctx.now(), v, vm, p, Place::Normal);
        self.check_preempt_wakeup(ctx, v, p, resched);
    }

    fn wake(&mut self, ctx: &mut PolicyCtx, v: VcpuId, waker: Option<PcpuId>) {
        let p = self.select_task_rq(ctx, v, waker);
        self.note_wakeup(ctx.now(), p);
        let resched = self.enqueue_task(ctx.now(), v, self.vcpu_vm[v.idx()], p, Place::Normal);
        self.check_preempt_wakeup(ctx, v, p, resched);
    }

    fn sleep(&mut self, ctx: &mut PolicyCtx, v: VcpuId) {
        if let Some(p) = self.task_rq[v.idx()] {
            self.last_ran[v.idx()] = ctx.now();
            self.dequeue_task(ctx.now(), v);
            self.rqs[p].need_resched = true;
        }
    }

    fn yield_vcpu(&mut self, ctx: &mut PolicyCtx, v: VcpuId, reason: YieldReason) {
        if reason == YieldReason::PauseLoop && self.directed_yield {
            crate::hypervisor::kvm::kvm_vcpu_on_spin(self, ctx, v);
            return;
        }
        // KVM_HC_SCHED_YIELD (the Linux 6.x guest's pv_sched_yield): KVM's `kvm_sched_yield` ->
        // `kvm_vcpu_yield_to` -> this scheduler's `yield_to` (eevdf/yield_to.rs).
        if let YieldReason::DirectedTo(target) = reason {
            crate::hypervisor::kvm::kvm_sched_yield(self, ctx, v, target);
            return;
        }
        // sys_sched_yield (a plain yield, or the guest's yield hypercall, which KVM does not
        // have as such): yield_task_fair, then schedule().
        if let Some(p) = self.task_rq[v.idx()] {
            self.yield_task(ctx.now(), p);
            self.resched(ctx, p);
        }
    }

    /// `pick_next_task_fair` (6.6): charge, pick at each level with `curr` still in place
    /// (so RUN_TO_PARITY can keep it), then `put_prev_entity` / `set_next_entity` where the
    /// pick changed. An empty pCPU first tries `newidle_balance`.
    fn do_schedule(&mut self, ctx: &mut PolicyCtx, pcpu: PcpuId) -> Decision {
        let p = pcpu.idx();
        let now = ctx.now();
        let host_curr = ctx.host.pcpu(pcpu).current;
        let still_running = host_curr.is_some_and(|c| ctx.host.vcpu(c).state == VcpuState::Running);
        if still_running && self.nothing_to_do(p) {
            return Decision::run(host_curr.expect("checked"), None);
        }
        self.update_curr_at(now, p);
        self.rqs[p].need_resched = false;
        if self.rqs[p].nr_running == 0 {
            self.newidle_balance(ctx, p);
        }
        let prev = self.running_task(p);
        let Some(g) = self.rqs[p].root.pick_eevdf(&self.ses, self.features) else {
            if let Some((pvm, _)) = prev {
                let gi = self.gi(pvm, p);
                self.groups[gi].put_prev(&self.ses);
            }
            self.rqs[p].root.put_prev(&self.ses);
            return Decision::idle();
        };
        let vm = self.gse_vm(g);
        let gi = self.gi(vm, p);
        let v = self.groups[gi].pick_eevdf(&self.ses, self.features).expect("a queued group entity has a queued task");
        if prev != Some((vm, VcpuId(v))) {
            if let Some((pvm, pv)) = prev {
                let pgi = self.gi(pvm, p);
                self.groups[pgi].put_prev(&self.ses);
                self.last_ran[pv.idx()] = now;
            } else if let Some(cg) = self.rqs[p].root.curr {
                // The running vCPU slept; its group entity may still be `curr`.
                let cgi = self.gi(self.gse_vm(cg), p);
                self.groups[cgi].put_prev(&self.ses);
            }
            if self.rqs[p].root.curr != Some(g) {
                self.rqs[p].root.put_prev(&self.ses);
                self.rqs[p].root.set_next(&mut self.ses, g);
            }
            self.groups[gi].set_next(&mut self.ses, v);
        }
        self.rqs[p].exec_start = now;
        Decision::run(VcpuId(v), None)
    }

    /// `do_schedule`'s first test: the running vCPU stays, untouched.
    fn keeps_current(&self, pcpu: PcpuId) -> bool {
        self.nothing_to_do(pcpu.idx())
    }

    /// `scheduler_tick` -> `task_tick_fair` (6.6): `entity_tick` at both levels (`update_curr`,
    /// which reschedules once a request is used up, and `update_cfs_group`), then
    /// `trigger_load_balance`. 6.6 has no `check_preempt_tick`.
    fn on_timer(&mut self, ctx: &mut PolicyCtx, key: u64) {
        let p = key as usize;
        let timer = self.rqs[p].tick_timer.expect("a tick fires only after start_ticks made it");
        ctx.set_timer(&timer, ctx.now() + self.tick);
        self.update_curr(ctx, p);
        if let Some((vm, _)) = self.running_task(p) {
            self.update_cfs_group(vm, p);
        }
        self.trigger_load_balance(ctx, p);
    }

    fn check(&self, host: &HostView) -> Result<(), String> {
        for p in 0..self.rqs.len() {
            let rq = &self.rqs[p];
            rq.root.check(&self.ses).map_err(|e| format!("eevdf: pCPU {p} root: {e}"))?;
            let (mut load, mut nr, mut tasks) = (0, 0, 0);
            for vm in 0..self.tgs.len() {
                let g = &self.groups[self.gi(vm, p)];
                g.check(&self.ses).map_err(|e| format!("eevdf: VM {vm} on pCPU {p}: {e}"))?;
                let gse = &self.ses[self.gse(vm, p) as usize];
                if gse.on_rq != (g.nr_running > 0) {
                    return Err(format!("eevdf: VM {vm}'s group entity on pCPU {p} on_rq={} with {} tasks", gse.on_rq, g.nr_running));
                }
                if gse.on_rq {
                    load += gse.weight;
                    nr += 1;
                }
                tasks += g.nr_running;
            }
            if load != rq.root.load || nr != rq.root.nr_running || tasks != rq.nr_running {
                return Err(format!(
                    "eevdf: pCPU {p} root load {} / nr {} / tasks {} but entities sum to {load} / {nr} / {tasks}",
                    rq.root.load, rq.root.nr_running, rq.nr_running
                ));
            }
            if host.owns_pcpu(PcpuId(p as u32)) && self.idle.contains(PcpuId(p as u32)) != (rq.nr_running == 0) {
                return Err(format!("eevdf: pCPU {p} idle mask disagrees with {} tasks", rq.nr_running));
            }
            let runs = host.pcpus[p].current.filter(|c| host.vcpus[c.idx()].state == VcpuState::Running);
            if host.owns_pcpu(PcpuId(p as u32)) && runs.is_some() && self.running_task(p).map(|(_, v)| v) != runs {
                return Err(format!("eevdf: pCPU {p} runs {runs:?} but the policy's current vCPU is {:?}", self.running_task(p)));
            }
        }
        self.check_balance_sums()?;
        for (i, info) in host.vcpus.iter().enumerate().filter(|(_, info)| host.owns_vcpu(info.id)) {
            let on = self.task_rq[i];
            if (info.state == VcpuState::Halted) == on.is_some() {
                return Err(format!("eevdf: vCPU {i} is {:?} but on run queue {on:?}", info.state));
            }
            if let Some(p) = on {
                let g = &self.groups[self.gi(self.vcpu_vm[i], p)];
                let queued = g.tree.contains(&(self.ses[i].vruntime, i as u32));
                if queued == (g.curr == Some(i as u32)) {
                    return Err(format!("eevdf: vCPU {i} on pCPU {p}: queued={queued}, curr={:?}", g.curr));
                }
            }
        }
        Ok(())
    }

    fn kvm_host(&mut self) -> Option<&mut dyn KvmHost> {
        Some(self)
    }
}

/// What this KVM host scheduler answers KVM (hypervisor/kvm.rs).
impl KvmHost for Eevdf {
    /// KVM's `single_task_running()` on `p` (halt polling's `kvm_vcpu_can_poll`, and
    /// `kvm_sched_yield`): its run queue holds at most one task.
    fn single_task_running(&self, p: PcpuId) -> bool {
        self.rqs.get(p.idx()).is_none_or(|rq| rq.nr_running <= 1)
    }

    /// The queue-head boost after `KVM_HC_KICK_CPU` (hypervisor/kvm.rs `kvm_sched_yield`).
    fn kvm_sched_yield(&mut self, ctx: &mut PolicyCtx, v: VcpuId, target: VcpuId) {
        crate::hypervisor::kvm::kvm_sched_yield(self, ctx, v, target);
    }
}
