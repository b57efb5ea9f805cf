//! The hybrid PE-based scheduler of seed 004 (004_2f4d1756ca892fd2.txt, Weng et al., "Hybrid CPU
//! Management for Adapting to the Diversity of Virtual Machines", IEEE TC 2013), sections 3-5.
//!
//! VMs are high-throughput (`hit`, scheduled asynchronously: proportional share, PS) or concurrent
//! (`con`, co-scheduled: CPS, or PCPS when the master vCPU has a u-factor > 0). Time is cut into
//! slots; a vCPU that is given a pCPU keeps it for the slot (section 5.1). The four components of
//! Figure 4, one per place in this module:
//! - VCPU initial mapping, Algorithm 1: `insert_vcpu` / `Hybrid::initial_home`;
//! - CPU time allocation, Algorithm 2: `allocation.rs`, at every `L`-th slot boundary;
//! - PE dissipation, Algorithm 3: `allocation.rs::dissipate` at every slot boundary, then each run
//!   queue is re-sorted by decreasing PE;
//! - scheduling and balancing, Algorithm 4: `plan.rs`, at every slot boundary.
//!
//! The seed modifies Xen 3.3's Credit scheduler; where it is silent we take Credit's mechanics
//! (credit.rs, xen/common/sched/credit.c): one accounting timer on the master pCPU (the seed's
//! BSP), PE bounded like credits, per-pCPU run queues holding the running vCPU at their head.
//! Every departure is listed in docs/model.md section 7.5.

mod allocation;
pub mod class;
mod plan;
mod steal;
#[cfg(test)]
mod tests;

use super::matching::Matching;
use super::{HostShape, PolicyKind};
use crate::hardware::cpumask::CpuMask;
use crate::hypervisor::policy::{Decision, HostView, Policy, PolicyCtx, Timer, VcpuState, VmSched, YieldReason};
use crate::ids::{PcpuId, VcpuId, VmId};
use crate::params::{ParamSpec, Params};
use crate::time::{Nanos, MS, SEC};
use allocation::AllocVm;
use class::{VmClass, VmType};
use steal::{StealIndex, StealKey};

/// Default slot: 30 ms, Xen credit's timeslice (`CSCHED_DEFAULT_TSLICE_MS`,
/// xen/common/sched/credit.c). The seed counts in abstract slots and gives no length; its prototype
/// modified Xen 3.3's credit scheduler, whose timeslice (and accounting period) is 30 ms.
const DEFAULT_SLOT: Nanos = 30 * MS;
const MIN_SLOT: Nanos = MS;
const MAX_SLOT: Nanos = SEC;
/// Default PE_unit, the PE a vCPU dissipates per slot run: 300, the credits a Xen 3.3 vCPU burns
/// in one 30 ms timeslice (`CSCHED_CREDITS_PER_TSLICE` = 10 credits/ms x 30 ms in credit.c). The
/// seed names PE_unit without a value; only ratios matter, and 300 keeps integer splits fine.
const DEFAULT_PE_UNIT: u64 = 300;
/// Default L, the allocation interval in slots: 1. Xen 3.3's `csched_acct` runs once per 30 ms
/// timeslice (`CSCHED_TICKS_PER_ACCT` = `CSCHED_TICKS_PER_TSLICE` = 3 ticks of 10 ms). The seed
/// names L without a value.
const DEFAULT_ALLOCATION_SLOTS: u64 = 1;

/// |PE| bound in allocation intervals of a whole pCPU (see `HybridConfig::pe_bound`). Assumed:
/// the seed gives no bound.
const PE_BOUND_INTERVALS: u64 = 4;

/// The key of the one timer: the slot boundary, kept on the BSP (pCPU 0) like credit's master
/// pCPU.
const TIMER_SLOT: u64 = 1;

/// The registry entry.
pub struct HybridKind;

impl PolicyKind for HybridKind {
    fn name(&self) -> &'static str {
        "hybrid"
    }
    fn describe(&self) -> &'static str {
        "Seed 004's hybrid scheduler (Weng et al., IEEE TC 2013): high-throughput VMs (type = \"hit\") \
         scheduled asynchronously by proportional share, concurrent VMs (type = \"con\") co-scheduled \
         when their master vCPU is picked (CPS; PCPS gives the master an extra slot every ceil(1/u_factor) \
         co-scheduled slots); CPU time handed out as potential energy (PE) by weight every L slots, \
         dissipated per slot run; run queues sorted by PE; idle pCPUs steal; a concurrent VM never has \
         two vCPUs in one run queue. Work-conserving or capped."
    }
    fn params(&self) -> Vec<ParamSpec> {
        vec![
            ParamSpec::duration(
                "slot",
                DEFAULT_SLOT,
                "the scheduling slot (seed 004 section 3.2/5.1: a vCPU given a pCPU runs for one slot); \
                 default 30 ms, Xen credit's timeslice CSCHED_DEFAULT_TSLICE_MS (xen/common/sched/credit.c), \
                 the scheduler the seed's prototype modified",
            )
            .range(MIN_SLOT as f64, MAX_SLOT as f64),
            ParamSpec::boolean(
                "work_conserving",
                true,
                "true: a pCPU with no vCPU of positive PE runs one with PE <= 0 (shares are guarantees, \
                 seed 004 section 6.4); false: caps, vCPUs with PE <= 0 never run (section 6.2's \
                 non-work-conserving mode)",
            ),
            ParamSpec::int(
                "pe_unit",
                DEFAULT_PE_UNIT,
                "PE_unit, the PE a vCPU dissipates per slot run (seed 004 Algorithm 3); default 300, \
                 Xen 3.3 credit's CSCHED_CREDITS_PER_TSLICE (the seed gives no value)",
            )
            .range(1.0, 1_000_000.0),
            ParamSpec::int(
                "allocation_slots",
                DEFAULT_ALLOCATION_SLOTS,
                "L, the slots between allocation events (seed 004 Algorithm 2); default 1, as Xen 3.3 \
                 credit accounts once per timeslice (the seed gives no value)",
            )
            .range(1.0, 1000.0),
        ]
    }
    fn build(&self, params: &Params, host: HostShape) -> Box<dyn Policy> {
        let cfg = HybridConfig {
            slot: params.duration("slot"),
            work_conserving: params.boolean("work_conserving"),
            pe_unit: params.int("pe_unit"),
            allocation_slots: params.int("allocation_slots"),
        };
        Box::new(Hybrid::new(cfg, host))
    }
    /// Built on Xen: the PLE window stays fixed (arch/x86/hvm/vmx/vmx.c), as under credit.
    fn ple_grow(&self) -> u64 {
        1
    }
}

#[derive(Clone, Copy, Debug)]
pub struct HybridConfig {
    pub slot: Nanos,
    pub work_conserving: bool,
    pub pe_unit: u64,
    pub allocation_slots: u64,
}

impl HybridConfig {
    /// PE_total of Algorithm 2 line 2.
    fn pe_total(&self, npcpus: usize) -> u64 {
        npcpus as u64 * self.pe_unit * self.allocation_slots
    }
    /// Bound on |PE|: [`PE_BOUND_INTERVALS`] allocation intervals of a whole pCPU. Models the
    /// bounds of credit.c's `csched_acct` (a vCPU stops earning above a limit and cannot owe more
    /// than one), so an idle VM cannot bank PE and a vCPU that soaked up spare time in
    /// work-conserving mode is not starved afterwards. Credit's bound is one period; here it is
    /// wider because a vCPU queued behind others (or waiting for its co-scheduled slot) must be
    /// able to save the PE of several slots, or it would lose share to the clipping.
    fn pe_bound(&self) -> i64 {
        (PE_BOUND_INTERVALS * self.pe_unit * self.allocation_slots) as i64
    }
}

/// Per-vCPU private data (the counterpart of credit's `csched_unit`).
#[derive(Clone, Debug, Default)]
struct HybridVcpu {
    /// Potential energy.
    pe: i64,
    /// The pCPU whose run queue holds it (also while it runs, and while halted, so that Algorithm
    /// 1's and 4's "no two vCPUs of a concurrent VM in one run queue" covers vCPUs that wake).
    home: PcpuId,
    /// Not halted, as far as the policy has been told.
    awake: bool,
    /// Run time already dissipated (the host's cumulative `run_time` at the last charge).
    charged_run: Nanos,
    /// Sub-unit dissipation remainder (see `allocation::dissipate`).
    carry: u128,
    /// How many pCPUs picked it for this slot (their `assigned`): 0 or 1 in practice, kept as a
    /// count so `is_assigned` is exact in O(1) without scanning the pCPUs.
    picked_by: u32,
    /// The slot it last ran in: among equal PE, the vCPU that waited longer goes first (round
    /// robin, as credit.c queues a descheduled vCPU behind its priority peers).
    last_ran_slot: u64,
    /// Its VM is scheduled as high-throughput (`!is_concurrent`), as of the last slot boundary
    /// or `adjust` (what the steal index reads).
    hit: bool,
    /// Its position in its run queue among vCPUs of equal PE (`steal.rs`).
    ticket: u64,
}

/// Per-pCPU private data.
#[derive(Clone, Debug, Default)]
struct HybridPcpu {
    /// Awake vCPUs homed here, in decreasing PE (stable: ties keep arrival order).
    runq: Vec<VcpuId>,
    /// What Algorithm 4 chose to run here for the current slot.
    assigned: Option<VcpuId>,
    /// Taken by a co-scheduled VM (or a PCPS master's extra slot) for the current slot.
    gang: Option<VmId>,
}

/// Per-VM private data.
#[derive(Clone, Debug, Default)]
struct HybridVm {
    /// The settings `adjust` gave: weight, seed 004 type and u-factor.
    weight: u32,
    vm_type: VmType,
    u_factor: f64,
    /// `adjust` has run once (later calls are `xm sched-pe` changes).
    adjusted: bool,
    /// Slots its vCPUs ran co-scheduled, for the PCPS extra slot of Algorithm 4 line 6.
    gang_slots: u64,
    /// The master runs alone on its pCPU in the next slot (PCPS).
    extra_slot_next: bool,
    /// Ran or had an awake vCPU since the last allocation (counted in work-conserving mode).
    active: bool,
}

/// The hybrid policy.
pub struct Hybrid {
    cfg: HybridConfig,
    vcpus: Vec<HybridVcpu>,
    pcpus: Vec<HybridPcpu>,
    vms: Vec<HybridVm>,
    /// Slots started so far (the current slot's index + 1).
    slots: u64,
    started: bool,
    /// The periodic slot-boundary timer, made at the first slot.
    slot_timer: Option<Timer>,
    /// PE handed out at the last allocation event, and what it had to hand out: PE_total, or
    /// nothing in a pool no VM is in (conservation, `check`).
    last_handed_out: u64,
    last_pe_total: u64,
    /// Per VM: it is in this pool and its vCPUs can be given distinct pool pCPUs inside their
    /// hard affinity (computed from the first host view; masks and pools do not change at run
    /// time under this policy).
    coschedulable: std::cell::OnceCell<Vec<bool>>,
    /// The vCPUs balancing may steal, best first (`steal.rs`); built at the first slot boundary.
    steal: StealIndex,
    /// The pCPUs nothing is assigned to this slot (kept by `assign`), for `place_woken`.
    unassigned: CpuMask,
    /// Algorithm 2's working lists, kept between allocation events.
    alloc_scratch: allocation::Scratch,
    /// Per pCPU, kept between slots: its head is a concurrent vCPU that could not start its VM
    /// (`plan_slot` pass 1, read by pass 2b).
    con_head: Vec<bool>,
    /// A run queue's copy for `plan_slot` pass 3, kept between slots.
    queue_copy: Vec<VcpuId>,
    /// Algorithm 1's loads of the vCPUs with an index below `.0` (what [`Self::loads`] gives for
    /// them), kept while the vCPUs are inserted in index order, so that placing each costs the
    /// vCPUs since the last one rather than all before it (setup linear in vCPUs, not
    /// quadratic); dropped when a home or a weight changes (`forget_loads`).
    insert_loads: Option<(usize, Vec<u128>)>,
}

impl Hybrid {
    pub fn new(cfg: HybridConfig, host: HostShape) -> Self {
        Hybrid {
            cfg,
            vcpus: vec![HybridVcpu::default(); host.nvcpus as usize],
            pcpus: vec![HybridPcpu::default(); host.npcpus as usize],
            vms: vec![HybridVm::default(); host.nvms as usize],
            slots: 0,
            started: false,
            slot_timer: None,
            last_handed_out: 0,
            last_pe_total: 0,
            coschedulable: std::cell::OnceCell::new(),
            steal: StealIndex::default(),
            unassigned: CpuMask::full(host.npcpus as usize),
            alloc_scratch: allocation::Scratch::default(),
            con_head: Vec::new(),
            queue_copy: Vec::new(),
            insert_loads: None,
        }
    }

    /// The type the policy acts on: a concurrent VM with more vCPUs than the pool has pCPUs
    /// cannot have them in distinct run queues (the seed assumes |C(V_i)| <= |P|, section 3.1),
    /// nor can one whose vCPUs' hard affinities admit no distinct pCPUs, so it is scheduled as
    /// high-throughput.
    fn is_concurrent(&self, host: &HostView, vm: VmId) -> bool {
        self.vms[vm.idx()].vm_type == VmType::Concurrent && self.coschedulable(host).get(vm.idx()).copied().unwrap_or(false)
    }

    fn coschedulable(&self, host: &HostView) -> &Vec<bool> {
        self.coschedulable.get_or_init(|| {
            let pool: Vec<PcpuId> = host.pcpu_ids().collect();
            host.vms
                .iter()
                .map(|vm| {
                    let v = &vm.vcpus;
                    v.len() <= host.npcpus()
                        && v.iter().all(|w| host.owns_vcpu(*w))
                        && (!v.iter().any(|w| host.is_pinned(*w)) || Matching::exists(v.len(), &pool, &|i, p| host.may_run(v[i], p)))
                })
                .collect()
        })
    }

    /// Distinct homes among `pcpus` for `members`, each inside its hard affinity: members keep
    /// their `start` pCPU where it is allowed and not taken by an earlier member; the others are
    /// placed by augmenting paths (Kuhn's algorithm, [`Matching`]), which may move a member to
    /// another allowed pCPU. `None` for a member that cannot be placed.
    fn distinct_homes(host: &HostView, members: &[VcpuId], start: &[Option<PcpuId>], pcpus: &[PcpuId]) -> Vec<Option<PcpuId>> {
        let mut m = Matching::new(members.len(), host.pcpus.len());
        for (i, p) in start.iter().enumerate() {
            if let Some(p) = *p {
                if pcpus.contains(&p) && host.may_run(members[i], p) && !m.is_taken(p) {
                    m.set(i, p);
                }
            }
        }
        let allowed = |i: usize, p: PcpuId| host.may_run(members[i], p);
        for i in 0..members.len() {
            if m.of[i].is_none() {
                m.augment(i, pcpus, &allowed, &|_| true);
            }
        }
        m.of
    }

    /// Give `v` the home `p`: a queued (awake) vCPU moves queues, a halted one just changes home.
    fn rehome(&mut self, v: VcpuId, p: PcpuId) {
        if self.vcpus[v.idx()].home == p {
            return;
        }
        self.forget_loads();
        if self.vcpus[v.idx()].awake {
            self.migrate(v, p);
        } else {
            self.vcpus[v.idx()].home = p;
        }
    }

    /// The vCPU whose selection co-schedules a concurrent VM: the master (vCPU0, Algorithm 4
    /// line 3) while it is awake. A halted vCPU is in no run queue, so while the master halts the
    /// lowest-indexed awake vCPU leads instead; otherwise a master blocked on its siblings (say at
    /// a barrier) could never be woken by them. This departure is documented in docs/model.md.
    fn leader(&self, host: &HostView, vm: VmId) -> Option<VcpuId> {
        host.vm(vm).vcpus.iter().copied().find(|v| self.vcpus[v.idx()].awake)
    }

    /// Set what pCPU `p` runs this slot, keeping each vCPU's `picked_by` count and the steal
    /// index. Every write of `assigned` goes through here but `unassign_all`'s.
    fn assign(&mut self, p: usize, pick: Option<VcpuId>) {
        let old = std::mem::replace(&mut self.pcpus[p].assigned, pick);
        if let Some(v) = old {
            self.vcpus[v.idx()].picked_by -= 1;
            self.sync_steal(v);
        }
        if let Some(v) = pick {
            self.vcpus[v.idx()].picked_by += 1;
            self.sync_steal(v);
        }
        self.unassigned.set(PcpuId(p as u32), pick.is_none());
    }

    /// Every pCPU's assignment and gang dropped for a new slot, as `assign(p, None)` for each
    /// but without keeping the steal index: the caller rebuilds it next (`slot_boundary`; keeping
    /// it would re-add each vCPU a pCPU had picked, only for most to be picked again).
    fn unassign_all(&mut self) {
        for p in 0..self.pcpus.len() {
            if let Some(v) = self.pcpus[p].assigned.take() {
                self.vcpus[v.idx()].picked_by -= 1;
            }
            self.pcpus[p].gang = None;
            self.unassigned.set(PcpuId(p as u32), true);
        }
    }

    /// `v`'s key in the steal index: queued (awake), high-throughput and picked by no pCPU.
    fn steal_key(&self, v: VcpuId) -> Option<StealKey> {
        let d = &self.vcpus[v.idx()];
        (self.started && d.awake && d.hit && d.picked_by == 0).then_some(StealKey {
            pe: std::cmp::Reverse(d.pe),
            home: d.home,
            ticket: d.ticket,
            v,
        })
    }

    fn sync_steal(&mut self, v: VcpuId) {
        let key = self.steal_key(v);
        self.steal.place(v, key);
    }

    /// Rebuild the steal index after PE, queue order or VM types changed (slot boundaries,
    /// `adjust`): each vCPU's type, its queue's order as tickets, then the members. O(V log V),
    /// once per slot. Not before the first slot (the VM types are read from the host then).
    fn rebuild_steal_index(&mut self, host: &HostView) {
        if !self.started {
            return;
        }
        for info in host.vcpus.iter().filter(|i| host.owns_vcpu(i.id)) {
            self.vcpus[info.id.idx()].hit = self.is_hit_vcpu(host, info.id);
        }
        for p in 0..self.pcpus.len() {
            for i in 0..self.pcpus[p].runq.len() {
                let v = self.pcpus[p].runq[i];
                self.vcpus[v.idx()].ticket = self.steal.ticket();
            }
        }
        // Every member at once: on a small host one sort instead of a binary-search insert each.
        let mut steal = std::mem::take(&mut self.steal);
        steal.rebuild(self.vcpus.len(), |v| self.steal_key(v));
        self.steal = steal;
    }

    /// Algorithm 1: the pCPU "with the minimal workload" (line 6) among AP(v): the pool's pCPUs
    /// inside `v`'s hard affinity for a high-throughput VM, those of them homing no sibling for a
    /// concurrent one (None when affinity leaves none: see `insert_vcpu`). A pCPU's workload is the
    /// weight its homed vCPUs stand for (each vCPU its VM's weight / vCPU count, [`Self::loads`]),
    /// ties to the lowest index. The seed does not define "workload"; counting vCPUs would let two
    /// concurrent VMs of unequal weight land on the same pCPUs, where their shares cannot both be
    /// met (docs/model.md 7.5).
    ///
    /// The pCPUs homing a sibling placed earlier are marked in one pass over the VM's vCPUs, not
    /// looked up in the VM for each pCPU (that is O(P x V) a vCPU: inserting a concurrent VM as
    /// wide as its 1,024-pCPU host that way takes 0.7 s, 8x per doubling).
    fn initial_home(&mut self, host: &HostView, v: VcpuId) -> Option<PcpuId> {
        let vm = host.vcpu(v).vm;
        let concurrent = self.is_concurrent(host, vm);
        let placed = |w: &VcpuId| w.idx() < v.idx();
        let loads = self.loads_below(host, v.idx());
        debug_assert_eq!(loads, self.loads(host, placed), "the kept insertion loads are loads() of the vCPUs before {v}");
        let mut homed = vec![false; if concurrent { loads.len() } else { 0 }];
        if concurrent {
            for s in host.vm(vm).vcpus.iter().filter(|s| **s != v && placed(s)) {
                homed[self.vcpus[s.idx()].home.idx()] = true;
            }
        }
        host.pcpu_ids().filter(|p| host.may_run(v, *p) && (!concurrent || !homed[p.idx()])).min_by_key(|p| (loads[p.idx()], p.0))
    }

    /// Algorithm 1's workload of every pCPU (indexed by pCPU): the sum, over the vCPUs homed
    /// there that `counted` admits, of their VM's weight / vCPU count, in units of 2^-32 weight
    /// (floored per vCPU, so the sum is exact integer arithmetic and the same on every machine).
    /// One pass over the vCPUs for all pCPUs.
    fn loads(&self, host: &HostView, counted: impl Fn(&VcpuId) -> bool) -> Vec<u128> {
        let mut loads = vec![0u128; self.pcpus.len().max(host.pcpus.len())];
        for info in host.vcpus.iter().filter(|info| host.owns_vcpu(info.id) && counted(&info.id)) {
            let weight = self.vms[info.vm.idx()].weight;
            loads[self.vcpus[info.id.idx()].home.idx()] += ((weight as u128) << 32) / host.vm(info.vm).vcpus.len() as u128;
        }
        loads
    }

    /// [`Self::loads`] of the vCPUs with an index below `upto`, from `insert_loads` advanced over
    /// the vCPUs since its last use (rebuilt from nothing when `upto` went back).
    fn loads_below(&mut self, host: &HostView, upto: usize) -> Vec<u128> {
        let n = self.pcpus.len().max(host.pcpus.len());
        let (from, mut loads) = match self.insert_loads.take() {
            Some((from, loads)) if from <= upto && loads.len() == n => (from, loads),
            _ => (0, vec![0u128; n]),
        };
        for info in host.vcpus[from.min(host.vcpus.len())..upto.min(host.vcpus.len())].iter().filter(|info| host.owns_vcpu(info.id)) {
            let weight = self.vms[info.vm.idx()].weight;
            loads[self.vcpus[info.id.idx()].home.idx()] += ((weight as u128) << 32) / host.vm(info.vm).vcpus.len() as u128;
        }
        self.insert_loads = Some((upto, loads.clone()));
        loads
    }

    /// A home or a weight changed: the kept insertion loads are stale.
    fn forget_loads(&mut self) {
        self.insert_loads = None;
    }

    /// Insert `v` into its home run queue after every vCPU of at least its PE. The queue is
    /// sorted by decreasing PE (PE changes only at slot boundaries, which re-sort; `check` holds
    /// it), so the first vCPU of lower PE is found by bisection rather than a walk from the head
    /// (O(queue) per insert made a host of 262,144 waiting vCPUs quadratic to set up).
    fn enqueue(&mut self, v: VcpuId) {
        let p = self.vcpus[v.idx()].home.idx();
        let pe = self.vcpus[v.idx()].pe;
        let at = self.pcpus[p].runq.partition_point(|w| self.vcpus[w.idx()].pe >= pe);
        self.pcpus[p].runq.insert(at, v);
        // Behind every vCPU of equal PE in this queue, so its ticket is the newest.
        self.vcpus[v.idx()].ticket = self.steal.ticket();
        self.sync_steal(v);
    }

    fn dequeue(&mut self, v: VcpuId) {
        let p = self.vcpus[v.idx()].home.idx();
        self.pcpus[p].runq.retain(|w| *w != v);
        self.steal.place(v, None);
    }

    /// Move a (not running) vCPU to `p`'s run queue (Algorithm 4 line 12).
    fn migrate(&mut self, v: VcpuId, p: PcpuId) {
        self.forget_loads();
        self.dequeue(v);
        self.vcpus[v.idx()].home = p;
        self.enqueue(v);
    }

    /// Algorithm 3 line 2 for every vCPU that ran since the last charge.
    fn dissipate_all(&mut self, host: &HostView) {
        for info in host.vcpus.iter().filter(|i| host.owns_vcpu(i.id)) {
            let ran_total = info.run_time + if info.state == VcpuState::Running { host.now.saturating_sub(info.run_start) } else { 0 };
            let d = &mut self.vcpus[info.id.idx()];
            let ran = ran_total.saturating_sub(d.charged_run);
            d.charged_run = ran_total;
            if ran > 0 {
                d.last_ran_slot = self.slots;
                d.pe -= allocation::dissipate(self.cfg.pe_unit, self.cfg.slot, ran, &mut d.carry);
                self.vms[info.vm.idx()].active = true;
            }
        }
    }

    /// Algorithm 2. In work-conserving mode only active VMs share PE_total (as credit.c's
    /// `csched_acct` shares credits among active domains), so spare time left by idle VMs is
    /// shared by weight among the busy ones, and no VM gets more than its vCPUs can dissipate
    /// (the rest is water-filled over the others, `allocation::per_vm_increments_into`); in capped
    /// mode every VM counts, idle or not (section 6.2: V1's share is its weight over V0's and
    /// V1's although V0 is idle), and a VM's weight share is its cap even above its vCPU count.
    fn allocate(&mut self, host: &HostView) {
        // Only the pool's VMs share the pool's PE_total.
        for vm in host.pool_vms() {
            if vm.vcpus.iter().any(|v| self.vcpus[v.idx()].awake) {
                self.vms[vm.id.idx()].active = true;
            }
        }
        // With no active VM at all (everyone halted) every VM counts, so PE_total is still handed out.
        let any_active = host.pool_vms().any(|vm| self.vms[vm.id.idx()].active && self.vms[vm.id.idx()].weight > 0);
        let counted = |i: usize| !self.cfg.work_conserving || !any_active || self.vms[i].active;
        let mut scratch = std::mem::take(&mut self.alloc_scratch);
        scratch.vms.clear();
        scratch.vms.extend(host.pool_vms().map(|vm| AllocVm {
            weight: if counted(vm.id.idx()) { self.vms[vm.id.idx()].weight as u64 } else { 0 },
            nvcpus: vm.vcpus.len(),
            concurrent: self.is_concurrent(host, vm.id),
            u: allocation::u_millionths(self.vms[vm.id.idx()].u_factor),
            limit: if self.cfg.work_conserving { vm.vcpus.len() as u64 * self.cfg.pe_unit * self.cfg.allocation_slots } else { u64::MAX },
        }));
        let total = self.cfg.pe_total(host.npcpus());
        // Algorithm 2 hands out all of PE_total when some VM has weight and vCPUs; a pool no VM
        // is in hands out nothing, and the conservation check expects that.
        let expected = if scratch.vms.iter().any(|vm| vm.weight > 0 && vm.nvcpus > 0) { total } else { 0 };
        let incs = allocation::allocate_into(total, &mut scratch);
        let bound = self.cfg.pe_bound();
        let mut handed = 0;
        for (v, &inc) in host.pool_vms().flat_map(|vm| vm.vcpus.iter()).zip(incs) {
            handed += inc;
            let d = &mut self.vcpus[v.idx()];
            d.pe = (d.pe + inc as i64).clamp(-bound, bound);
        }
        self.alloc_scratch = scratch;
        self.last_handed_out = handed;
        self.last_pe_total = expected;
        for d in &mut self.vms {
            d.active = false;
        }
    }

    /// Re-sort every run queue by decreasing PE (Algorithm 3 line 6; also after Algorithm 2).
    fn sort_runqs(&mut self) {
        let vcpus = &self.vcpus;
        for p in &mut self.pcpus {
            p.runq.sort_by_key(|v| (std::cmp::Reverse(vcpus[v.idx()].pe), vcpus[v.idx()].last_ran_slot));
        }
    }

    /// A slot boundary: dissipation, allocation every L slots, sorting, then Algorithm 4.
    fn slot_boundary(&mut self, ctx: &mut PolicyCtx) {
        let host = ctx.host;
        self.dissipate_all(&host);
        if self.slots.is_multiple_of(self.cfg.allocation_slots) {
            self.allocate(&host);
        }
        self.sort_runqs();
        self.unassign_all();
        self.rebuild_steal_index(&host);
        self.slots += 1;
        self.plan_slot(ctx);
        let timer = *self.slot_timer.get_or_insert_with(|| ctx.init_timer(TIMER_SLOT));
        ctx.set_timer(&timer, ctx.now() + self.cfg.slot);
    }
}

impl Policy for Hybrid {
    fn name(&self) -> &'static str {
        "hybrid"
    }

    fn insert_vcpu(&mut self, ctx: &mut PolicyCtx, v: VcpuId) {
        let host = ctx.host;
        let home = match self.initial_home(&host, v) {
            Some(p) => p,
            None => {
                // A concurrent vCPU whose allowed pCPUs all home a sibling placed earlier (hard
                // affinity made Algorithm 1's greedy choice wrong): an augmenting path moves
                // siblings to other allowed pCPUs to free one (the VM is coschedulable, so one
                // exists).
                let vm = host.vcpu(v).vm;
                let members: Vec<VcpuId> = host.vm(vm).vcpus.iter().copied().filter(|w| w.idx() <= v.idx()).collect();
                let start: Vec<Option<PcpuId>> = members.iter().map(|w| (*w != v).then(|| self.vcpus[w.idx()].home)).collect();
                let pool: Vec<PcpuId> = host.pcpu_ids().collect();
                let homes = Self::distinct_homes(&host, &members, &start, &pool);
                for (w, p) in members.iter().zip(&homes) {
                    if *w != v {
                        self.rehome(*w, p.expect("a coschedulable VM has a matching"));
                    }
                }
                homes[members.len() - 1].expect("a coschedulable VM has a matching")
            }
        };
        let d = &mut self.vcpus[v.idx()];
        d.home = home;
        d.awake = true;
        self.enqueue(v);
    }

    fn wake(&mut self, ctx: &mut PolicyCtx, v: VcpuId, _waker: Option<PcpuId>) {
        if self.vcpus[v.idx()].awake {
            return;
        }
        self.vcpus[v.idx()].awake = true;
        self.enqueue(v);
        if self.started {
            self.place_woken(ctx, v);
        }
    }

    fn sleep(&mut self, _ctx: &mut PolicyCtx, v: VcpuId) {
        if !self.vcpus[v.idx()].awake {
            return;
        }
        self.vcpus[v.idx()].awake = false;
        self.dequeue(v);
        // Its pCPU picks again for the rest of the slot (the engine calls do_schedule next).
        let home = self.vcpus[v.idx()].home.idx();
        if self.pcpus[home].assigned == Some(v) {
            self.assign(home, None);
        }
    }

    /// A pause-loop exit (the only yield the engine has). The seed defines no yield, and its Xen
    /// 3.3 took no PAUSE exits at all (VMX pause-loop exiting came with Xen 4.0, vmx.c
    /// `EXIT_REASON_PAUSE_INSTRUCTION` -> `do_sched_op(SCHEDOP_yield)`); on a host that takes
    /// them, the yielder is treated as credit treats it (`csched_vcpu_yield` and `__runq_insert`,
    /// xen/common/sched_credit.c, Xen 4.1+: queued behind one lower-priority vCPU): its pCPU
    /// picks for the rest of the slot as after a halt, without it (`Hybrid::yield_slot`).
    /// docs/model.md 7.5.
    fn yield_vcpu(&mut self, ctx: &mut PolicyCtx, v: VcpuId, reason: YieldReason) {
        match reason {
            // A guest's SCHEDOP_yield (Linux 4.4 on Xen) is taken as credit takes it too
            // (`csched_vcpu_yield`: the same flag): the same as a pause-loop exit here.
            YieldReason::PauseLoop | YieldReason::Hypercall | YieldReason::DirectedTo(_) => self.yield_slot(&ctx.host, v),
        }
    }

    fn do_schedule(&mut self, ctx: &mut PolicyCtx, pcpu: PcpuId) -> Decision {
        if !self.started {
            self.started = true;
            self.slot_boundary(ctx);
        }
        let host = ctx.host;
        let p = pcpu.idx();
        if self.pcpus[p].assigned.is_none() {
            self.pick_mid_slot(&host, pcpu);
        }
        match self.pcpus[p].assigned {
            Some(v) if self.runnable_on(&host, v, pcpu) => Decision::run(v, None),
            _ => Decision::idle(),
        }
    }

    fn on_timer(&mut self, ctx: &mut PolicyCtx, key: u64) {
        if key == TIMER_SLOT {
            self.slot_boundary(ctx);
        }
    }

    /// The VM's weight, type and u-factor. At run time this is `xm sched-pe` (seed 004 sections
    /// 4.2 and 6.5): the VM's type or u-factor changed. A VM that is now concurrent first gets
    /// Algorithm 1's distinct run queues, and its vCPUs still running asynchronously leave their
    /// pCPUs at once (which pick again for the rest of the slot), so that from the next slot
    /// boundary it only runs co-scheduled. A VM made high-throughput keeps its queues and any
    /// co-scheduled slot in progress. The PCPS interval restarts under the new u-factor.
    fn adjust(&mut self, ctx: &mut PolicyCtx, vm: VmId, sched: &VmSched) {
        self.adjust_vm(ctx, vm, sched);
        // The VM's type may have changed: high-throughput vCPUs are the ones stealable.
        self.rebuild_steal_index(&ctx.host);
    }

    fn check(&self, host: &HostView) -> Result<(), String> {
        self.check_invariants(host)
    }
}

impl Hybrid {
    /// `adjust`'s work (see there); the steal index is rebuilt after it.
    fn adjust_vm(&mut self, ctx: &mut PolicyCtx, vm: VmId, sched: &VmSched) {
        let host = ctx.host;
        if self.vms.len() <= vm.idx() {
            self.vms.resize(vm.idx() + 1, HybridVm::default());
        }
        let d = &mut self.vms[vm.idx()];
        let class = VmClass::from_params(&sched.params);
        (d.weight, d.vm_type, d.u_factor) = (sched.weight, class.vm_type, class.u_factor);
        // `forget_loads`, as a field write: `d` still borrows the VM table.
        self.insert_loads = None;
        if !std::mem::replace(&mut d.adjusted, true) {
            return;
        }
        d.gang_slots = 0;
        d.extra_slot_next = false;
        if !self.is_concurrent(&host, vm) {
            return;
        }
        for p in host.pcpu_ids() {
            let here = &self.pcpus[p.idx()];
            let runs_async = here.gang != Some(vm) && here.assigned.is_some_and(|v| host.vcpu(v).vm == vm);
            if runs_async {
                self.assign(p.idx(), None);
                ctx.reschedule(p);
            }
        }
        self.spread_concurrent_vm(&host, vm);
    }

    /// Algorithm 1 for a VM that became concurrent: in index order, a vCPU whose run queue already
    /// holds a sibling moves to the least loaded pCPU (by [`Self::loads`]) holding none (ties to the lowest index),
    /// avoiding the queues of siblings not yet visited so that they can stay where they are; only
    /// pCPUs inside the vCPU's hard affinity count. If affinity leaves a vCPU no such pCPU, the
    /// VM's homes are completed by augmenting paths instead ([`Self::distinct_homes`]).
    ///
    /// The pCPUs taken and the homes of the siblings not yet visited are kept as a mark and a
    /// count per pCPU (a visit moves only the vCPU visited, so the later ones' homes stand until
    /// theirs), not searched as lists at each pCPU (O(P x V) a vCPU).
    fn spread_concurrent_vm(&mut self, host: &HostView, vm: VmId) {
        let vcpus = host.vm(vm).vcpus.clone();
        let n = self.pcpus.len().max(host.pcpus.len());
        let mut taken = vec![false; n];
        let mut later = vec![0u32; n];
        for w in &vcpus {
            later[self.vcpus[w.idx()].home.idx()] += 1;
        }
        for v in &vcpus {
            let home = self.vcpus[v.idx()].home;
            // `later` now counts the homes of the vCPUs after this one.
            later[home.idx()] -= 1;
            if !taken[home.idx()] {
                taken[home.idx()] = true;
                continue;
            }
            let loads = self.loads(host, |_| true);
            let load = |p: PcpuId| (loads[p.idx()], p.0);
            let free = || host.pcpu_ids().filter(|p| !taken[p.idx()] && host.may_run(*v, *p));
            let target = free().filter(|p| later[p.idx()] == 0).min_by_key(|p| load(*p)).or_else(|| free().min_by_key(|p| load(*p)));
            let Some(target) = target else {
                let start: Vec<Option<PcpuId>> = vcpus.iter().map(|w| Some(self.vcpus[w.idx()].home)).collect();
                let pool: Vec<PcpuId> = host.pcpu_ids().collect();
                let homes = Self::distinct_homes(host, &vcpus, &start, &pool);
                for (w, p) in vcpus.iter().zip(homes) {
                    self.rehome(*w, p.expect("a coschedulable VM has a matching"));
                }
                return;
            };
            self.rehome(*v, target);
            taken[target.idx()] = true;
        }
    }
}

impl Hybrid {
    /// `v` may be returned by `do_schedule(p)`: awake, homed at `p`, and not running elsewhere.
    fn runnable_on(&self, host: &HostView, v: VcpuId, p: PcpuId) -> bool {
        let info = host.vcpu(v);
        self.vcpus[v.idx()].awake
            && self.vcpus[v.idx()].home == p
            && match info.state {
                VcpuState::Halted => false,
                VcpuState::Runnable => true,
                VcpuState::Running => info.pcpu == Some(p),
            }
    }

    fn check_invariants(&self, host: &HostView) -> Result<(), String> {
        if self.vcpus.len() < host.vcpus.len() || self.pcpus.len() < host.pcpus.len() || self.vms.len() < host.vms.len() {
            return Err("hybrid: private data smaller than the host".into());
        }
        // No two vCPUs of a concurrent VM in one run queue (Algorithms 1 and 4), halted ones
        // included since they return to their home queue when they wake.
        for vm in host.pool_vms() {
            if !self.is_concurrent(host, vm.id) {
                continue;
            }
            let mut homes: Vec<PcpuId> = vm.vcpus.iter().map(|v| self.vcpus[v.idx()].home).collect();
            homes.sort();
            if let Some(w) = homes.windows(2).find(|w| w[0] == w[1]) {
                return Err(format!("hybrid: concurrent VM {} ({}) has two vCPUs in the run queue of pCPU {}", vm.id, vm.name, w[0]));
            }
        }
        // Each vCPU's pick count is the number of pCPUs whose pick it is.
        let mut picks = vec![0u32; self.vcpus.len()];
        for v in self.pcpus.iter().filter_map(|d| d.assigned) {
            picks[v.idx()] += 1;
        }
        if let Some(v) = (0..self.vcpus.len()).find(|&v| picks[v] != self.vcpus[v].picked_by) {
            return Err(format!("hybrid: vCPU {v} is the pick of {} pCPUs but counted {}", picks[v], self.vcpus[v].picked_by));
        }
        // Every awake vCPU is in exactly its home queue; halted ones in none; queues sorted.
        let mut seen = vec![0u32; host.vcpus.len()];
        for (p, d) in self.pcpus.iter().enumerate().take(host.pcpus.len()) {
            if !host.owns_pcpu(PcpuId(p as u32)) && (!d.runq.is_empty() || d.assigned.is_some() || d.gang.is_some()) {
                return Err(format!("hybrid: pCPU {p} is not in this pool but has a queue or a pick"));
            }
            if let Some(w) = d.runq.windows(2).find(|w| self.vcpus[w[0].idx()].pe < self.vcpus[w[1].idx()].pe) {
                return Err(format!(
                    "hybrid: pCPU {p}'s run queue has vCPU {} (PE {}) ahead of {} (PE {})",
                    w[0],
                    self.vcpus[w[0].idx()].pe,
                    w[1],
                    self.vcpus[w[1].idx()].pe
                ));
            }
            for v in &d.runq {
                seen[v.idx()] += 1;
                if self.vcpus[v.idx()].home.idx() != p {
                    return Err(format!("hybrid: vCPU {v} queued on pCPU {p} but homed on {}", self.vcpus[v.idx()].home));
                }
            }
        }
        for (v, d) in self.vcpus.iter().enumerate().take(host.vcpus.len()) {
            if !host.owns_vcpu(VcpuId(v as u32)) {
                if seen[v] != 0 || d.awake {
                    return Err(format!("hybrid: vCPU {v} of another pool is queued here"));
                }
                continue;
            }
            if !host.may_run(VcpuId(v as u32), d.home) {
                return Err(format!("hybrid: vCPU {v} is homed on pCPU {}, outside its pool or hard affinity", d.home));
            }
            let want = u32::from(d.awake);
            if seen[v] != want {
                return Err(format!("hybrid: vCPU {v} (awake: {}) is in {} run queues", d.awake, seen[v]));
            }
            let info = &host.vcpus[v];
            if info.state == VcpuState::Running && info.pcpu != Some(d.home) {
                return Err(format!("hybrid: vCPU {v} runs on {:?} but is homed on {}", info.pcpu, d.home));
            }
            if d.pe.abs() > 2 * self.cfg.pe_bound() {
                return Err(format!("hybrid: vCPU {v} has PE {} beyond its bound", d.pe));
            }
        }
        // The steal index holds exactly the queued, unpicked high-throughput vCPUs, with tickets
        // in queue order among equal PE (steal.rs).
        if self.started {
            let mut want: Vec<StealKey> = Vec::new();
            for (p, d) in self.pcpus.iter().enumerate() {
                let mut before: Option<(i64, u64)> = None;
                for v in &d.runq {
                    let s = &self.vcpus[v.idx()];
                    if s.hit != self.is_hit_vcpu(host, *v) {
                        return Err(format!("hybrid: vCPU {v}'s high-throughput flag is stale"));
                    }
                    if before.is_some_and(|(pe, ticket)| pe < s.pe || (pe == s.pe && ticket >= s.ticket)) {
                        return Err(format!("hybrid: vCPU {v} is out of PE or ticket order in the queue of pCPU {p}"));
                    }
                    before = Some((s.pe, s.ticket));
                    if s.hit && s.picked_by == 0 {
                        want.push(StealKey { pe: std::cmp::Reverse(s.pe), home: PcpuId(p as u32), ticket: s.ticket, v: *v });
                    }
                }
            }
            want.sort();
            if want != self.steal.members() {
                return Err("hybrid: the steal index differs from the run queues".into());
            }
            if let Some(p) = (0..self.pcpus.len()).find(|&p| self.unassigned.contains(PcpuId(p as u32)) != self.pcpus[p].assigned.is_none())
            {
                return Err(format!("hybrid: pCPU {p}'s bit in the unassigned mask is out of step"));
            }
        }
        // PE conservation: the last allocation event handed out exactly |P| x PE_unit x L.
        if self.started && self.last_handed_out != self.last_pe_total {
            return Err(format!(
                "hybrid: allocation handed out {} PE, expected |P| x PE_unit x L = {}",
                self.last_handed_out, self.last_pe_total
            ));
        }
        Ok(())
    }
}
