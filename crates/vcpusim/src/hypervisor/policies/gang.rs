//! Strict co-scheduling (gang scheduling): all vCPUs of a VM run together, each on its own pCPU.
//!
//! This is the coscheduling baseline of seed 004 (004_2f4d1756ca892fd2.txt, section 2.2 and
//! Figure 1b: "synchronously assigns each VCPU to a PCPU ... while guaranteeing CPU fairness
//! according to the weights"; section 3.2, the CPS strategy: "all VCPUs in the VM are coscheduled
//! to PCPUs") and the scheme of VMware ESX 2.x (VMware, "The CPU Scheduler in VMware vSphere 5.1",
//! technical white paper, 2013, "Strict Co-Scheduling in ESX 2.x": a VM is co-started only when
//! there are enough pCPUs for all its vCPUs).
//!
//! How it works:
//! - Time is cut into gang slices. At every slice boundary (one policy timer, like Xen's
//!   `csched_acct` on the master pCPU) the policy picks the *gang*, the set of VMs that run during
//!   the next slice: VMs in order of least virtual time (ties by VM id), each taken only if all its
//!   vCPUs fit in the pCPUs still free; the packing goes on down the list so that smaller VMs fill
//!   leftover pCPUs. A leftover smaller than every waiting VM stays idle: that is the CPU
//!   fragmentation strict co-scheduling is known for.
//! - Proportional share: a VM's virtual time grows by the pCPU time *reserved* for it (elapsed gang
//!   time x its number of vCPUs) divided by its weight, so always-busy VMs get reserved pCPU time
//!   in proportion to their weights.
//! - A gang member's vCPUs are pinned to their pCPUs for the slice. A Halted member keeps its pCPU
//!   reserved (idle); strict co-scheduling does not lend it out. Only when *every* vCPU of a VM has
//!   halted is the VM released and its pCPUs re-packed at once.
//! - Cpupools and hard affinity: only the pool's pCPUs and VMs count; a VM is co-started only if
//!   its vCPUs can be given distinct free pCPUs each inside its hard affinity (greedy placement,
//!   then a bipartite matching, `matching.rs`; docs/model.md "Affinity under co-scheduling").
//! - Limitation (documented, not an error): a VM with more vCPUs than the pool has pCPUs, or whose
//!   masks admit no distinct pCPUs, can never be co-started, so it never runs. The scenario
//!   loader, not this policy, may choose to reject it.

use super::matching::Matching;
use super::{HostShape, PolicyKind};
use crate::hypervisor::policy::{Decision, HostView, Policy, PolicyCtx, Timer, VcpuState, VmSched, YieldReason};
use crate::ids::{PcpuId, VcpuId, VmId};
use crate::params::{ParamSpec, Params};
use crate::time::{Nanos, MS, SEC};

/// Default gang slice: 30 ms, the same as Xen credit's timeslice (`CSCHED_DEFAULT_TSLICE_MS` in
/// xen/common/sched/credit.c). Seed 004 counts in abstract "slots" and gives no length; its
/// prototype was built on Xen 3.3, whose credit scheduler uses this timeslice, so we take it.
const DEFAULT_SLICE: Nanos = 30 * MS;
/// Allowed slice range, as Xen credit allows for its timeslice (1 ms to 1000 ms).
const MIN_SLICE: Nanos = MS;
const MAX_SLICE: Nanos = SEC;

/// Virtual time is reserved pCPU ns scaled by `WEIGHT_UNIT / weight`, so a VM of the default
/// weight (256, `CSCHED_DEFAULT_WEIGHT` in xen/common/sched/credit.c) advances at wall-clock rate
/// per reserved pCPU.
const WEIGHT_UNIT: u128 = 256;

/// The key of the one timer: the gang boundary, global (kept on pCPU 0 like credit's master
/// pCPU).
const TIMER_GANG_BOUNDARY: u64 = 1;

/// The registry entry.
pub struct GangKind;

impl PolicyKind for GangKind {
    fn name(&self) -> &'static str {
        "gang"
    }
    fn describe(&self) -> &'static str {
        "Strict co-scheduling (gang scheduling) as in VMware ESX 2.x and the CPS baseline of seed 004: \
         all vCPUs of a VM run together, each on its own pCPU; every slice the VMs with the least \
         weighted reserved time are packed onto the pCPUs; leftover pCPUs too few for any waiting VM \
         stay idle (CPU fragmentation). A VM with more vCPUs than pCPUs never runs."
    }
    fn params(&self) -> Vec<ParamSpec> {
        vec![ParamSpec::duration(
            "slice",
            DEFAULT_SLICE,
            "gang slice: how long a chosen set of VMs runs before the next co-scheduling decision \
             (default 30 ms like Xen credit's timeslice, CSCHED_DEFAULT_TSLICE_MS in xen/common/sched/credit.c)",
        )
        .range(MIN_SLICE as f64, MAX_SLICE as f64)]
    }
    fn build(&self, params: &Params, host: HostShape) -> Box<dyn Policy> {
        Box::new(Gang::new(params.duration("slice"), host))
    }
}

/// Per-VM private data (the counterpart of Xen's `csched_dom`).
#[derive(Clone, Debug, Default)]
struct GangVm {
    /// The VM's weight, as `adjust` gave it.
    weight: u32,
    /// Weighted reserved pCPU time, charged up to `charged_until` (see [`WEIGHT_UNIT`]).
    vtime: u128,
    /// In the current gang: all its vCPUs hold a pCPU slot.
    in_gang: bool,
    /// Reserved time has been charged up to this instant (meaningful while `in_gang`).
    charged_until: Nanos,
    /// What the VM's pool and masks allow, taken when the first gang is packed (`start`); `None`
    /// before, and then computed where asked.
    placement: Option<VmPlacement>,
}

/// What a VM's pool and hard masks say about co-starting it. Fixed for the run: a gang pool
/// neither gains nor loses pCPUs (`supports_pool_changes` is false, so the scenario loader
/// refuses a pool change), `Sim::set_affinity` refuses to change a mask in it, and no vCPU of
/// it is lent to another pool. Kept so that a halt or wake, which asks whether the VM is a
/// candidate, does not compare every vCPU's mask with the pool (P/64 words each) or run a
/// matching for a pinned VM; `check` holds it to the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct VmPlacement {
    /// All its vCPUs are in this pool and could be co-started on it (see [`Gang::coschedulable`]).
    eligible: bool,
    /// Some vCPU's hard affinity leaves out a pCPU of the pool (see [`Gang::has_pinned`]).
    pinned: bool,
}

impl VmPlacement {
    fn of(host: &HostView, vm: VmId) -> Self {
        let owned = host.vm(vm).vcpus.iter().all(|v| host.owns_vcpu(*v));
        let pinned = Gang::has_pinned(host, vm);
        VmPlacement { eligible: owned && Gang::coschedulable(host, vm, pinned), pinned }
    }
}

/// Per-vCPU private data.
#[derive(Clone, Debug, Default)]
struct GangVcpu {
    /// The pCPU reserved for this vCPU while its VM is in the gang.
    slot: Option<PcpuId>,
    /// Not halted, as far as the policy has been told (insert / wake make it true, sleep false).
    /// Kept here because the engine may call `sleep` / `wake` before or after it updates
    /// `VcpuInfo.state`.
    awake: bool,
}

/// Per-pCPU private data.
#[derive(Clone, Debug, Default)]
struct GangPcpu {
    /// The vCPU this pCPU is reserved for in the current gang.
    slot: Option<VcpuId>,
}

/// The strict co-scheduling policy.
pub struct Gang {
    slice: Nanos,
    vms: Vec<GangVm>,
    vcpus: Vec<GangVcpu>,
    pcpus: Vec<GangPcpu>,
    /// The first gang has been packed and the boundary timer armed.
    started: bool,
    /// The periodic gang-boundary timer, made by `start`.
    boundary_timer: Option<Timer>,
    /// Lists a gang decision fills, kept between decisions so that a boundary, wake or sleep
    /// allocates nothing (`pack`, `place`; with hard affinity the matching still allocates).
    scratch: GangScratch,
}

/// Which VMs a `pack` keeps before it packs the waiting ones.
#[derive(Clone, Copy)]
enum Keep {
    /// None: a slice boundary chooses from scratch.
    Nothing,
    /// The current gang, in VM order (a wake that fits in the idle pCPUs).
    Gang,
    /// The current gang but this VM, whose vCPUs all halted (a sleep).
    GangBut(VmId),
}

impl Keep {
    /// Whether `vm`, now in the gang, stays in it.
    fn keeps(self, vm: VmId) -> bool {
        match self {
            Keep::Nothing => false,
            Keep::Gang => true,
            Keep::GangBut(leaving) => vm != leaving,
        }
    }
}

/// The working lists of one gang decision.
#[derive(Default)]
struct GangScratch {
    /// The gang being chosen: the kept VMs first, then the packed ones (`pack`).
    chosen: Vec<VmId>,
    /// Waiting candidates with their virtual times (`pack`).
    waiting: Vec<(u128, VmId)>,
    /// Whether each VM, by VM id, is in the gang being made current (`place`).
    joins: Vec<bool>,
    /// The gang's vCPUs, VM by VM (`place`).
    members: Vec<VcpuId>,
    /// Each pCPU's new occupant, by host-wide pCPU id (`place`).
    new_slots: Vec<Option<VcpuId>>,
    /// Each member's pCPU (`place`).
    placed: Vec<Option<PcpuId>>,
    /// Whether each member kept the pCPU it held (`place`).
    continuing: Vec<bool>,
}

impl Gang {
    fn new(slice: Nanos, host: HostShape) -> Self {
        Gang {
            slice,
            vms: vec![GangVm::default(); host.nvms as usize],
            vcpus: vec![GangVcpu::default(); host.nvcpus as usize],
            pcpus: vec![GangPcpu::default(); host.npcpus as usize],
            started: false,
            boundary_timer: None,
            scratch: GangScratch::default(),
        }
    }

    /// Grow the private arrays to the host's size (tests and engines may build with a small shape).
    fn fit_to(&mut self, host: &HostView) {
        if self.vms.len() < host.vms.len() {
            self.vms.resize(host.vms.len(), GangVm::default());
        }
        if self.vcpus.len() < host.vcpus.len() {
            self.vcpus.resize(host.vcpus.len(), GangVcpu::default());
        }
        if self.pcpus.len() < host.pcpus.len() {
            self.pcpus.resize(host.pcpus.len(), GangPcpu::default());
        }
    }

    fn weight(&self, vm: VmId) -> u128 {
        // A zero weight is refused by the scenario loader; treat it as 1 rather than divide by 0.
        self.vms[vm.idx()].weight.max(1) as u128
    }

    /// Virtual time including the reservation still running, without charging it.
    fn vtime_now(&self, host: &HostView, vm: VmId) -> u128 {
        let d = &self.vms[vm.idx()];
        if !d.in_gang {
            return d.vtime;
        }
        let elapsed = host.now.saturating_sub(d.charged_until) as u128;
        let reserved = elapsed * host.vm(vm).vcpus.len() as u128;
        d.vtime + reserved * WEIGHT_UNIT / self.weight(vm)
    }

    /// Charge a gang member for the pCPU time reserved for it since the last charge.
    fn charge(&mut self, host: &HostView, vm: VmId) {
        let now_vtime = self.vtime_now(host, vm);
        let d = &mut self.vms[vm.idx()];
        d.vtime = now_vtime;
        d.charged_until = host.now;
    }

    /// A VM may be co-started: it is in this pool, at least one vCPU wants to run and all its
    /// vCPUs fit on the pool (see [`Self::coschedulable`]).
    fn is_candidate(&self, host: &HostView, vm: VmId) -> bool {
        host.vm(vm).vcpus.iter().any(|v| self.vcpus[v.idx()].awake) && self.placement(host, vm).eligible
    }

    /// The VM's [`VmPlacement`]: the one kept since `start`, or computed now.
    fn placement(&self, host: &HostView, vm: VmId) -> VmPlacement {
        self.vms[vm.idx()].placement.unwrap_or_else(|| VmPlacement::of(host, vm))
    }

    /// Whether `vm` could be co-started on an otherwise empty pool: it has no more vCPUs than the
    /// pool has pCPUs and, if any vCPU is pinned, every vCPU can be given a distinct pool pCPU
    /// inside its hard affinity (a bipartite matching exists). `pinned` is [`Self::has_pinned`].
    fn coschedulable(host: &HostView, vm: VmId, pinned: bool) -> bool {
        let vcpus = &host.vm(vm).vcpus;
        if vcpus.len() > host.npcpus() {
            return false;
        }
        if !pinned {
            return true;
        }
        let pool: Vec<PcpuId> = host.pcpu_ids().collect();
        Matching::exists(vcpus.len(), &pool, &|i, p| host.may_run(vcpus[i], p))
    }

    /// Whether any vCPU of `vm` is pinned (its hard affinity is not the whole pool).
    fn has_pinned(host: &HostView, vm: VmId) -> bool {
        host.vm(vm).vcpus.iter().any(|v| host.is_pinned(*v))
    }

    /// Whether the VMs of `gang` plus `vm` can all be co-scheduled at once: distinct pool pCPUs
    /// for all their vCPUs inside their hard affinity, the vCPUs of the VMs in `fixed` staying on
    /// the slots they hold. The caller has checked the pCPU count; with no vCPU pinned that is
    /// enough, so the matching runs only when affinity restricts someone. `any_pinned` says
    /// whether a vCPU of `gang` or of `vm` is pinned ([`Self::has_pinned`]): `pack` keeps it as it
    /// takes VMs, so that a host without affinity pays O(1) here, not a walk of the gang.
    fn fits(&self, host: &HostView, gang: &[VmId], vm: VmId, fixed: &[VmId], any_pinned: bool) -> bool {
        if !any_pinned {
            return true;
        }
        let vms = || gang.iter().chain(std::iter::once(&vm));
        let members: Vec<(VcpuId, Option<PcpuId>)> = vms()
            .flat_map(|w| {
                let pinned_to = fixed.contains(w);
                host.vm(*w).vcpus.iter().map(move |v| (*v, pinned_to))
            })
            .map(|(v, pinned_to)| (v, if pinned_to { self.vcpus[v.idx()].slot } else { None }))
            .collect();
        let pool: Vec<PcpuId> = host.pcpu_ids().collect();
        Matching::exists(members.len(), &pool, &|i, p| {
            let (v, slot) = members[i];
            host.may_run(v, p) && slot.is_none_or(|s| s == p)
        })
    }

    /// Choose a gang: keep the VMs of the current gang that `keep` keeps, then pack waiting
    /// candidates in order of least virtual time (ties by VM id), each only if all its vCPUs fit
    /// in the pCPUs still free, continuing down the list so smaller VMs fill what larger ones
    /// leave (seed 004 section 3.2; ESX 2.x co-start).
    /// Under hard affinity "fit" means a matching of its vCPUs to distinct allowed free pCPUs
    /// exists beside the VMs already taken, the kept VMs staying where they are.
    fn pack(&mut self, ctx: &mut PolicyCtx, keep: Keep) {
        let host = ctx.host;
        let mut gang = std::mem::take(&mut self.scratch.chosen);
        gang.clear();
        gang.extend((0..self.vms.len() as u32).map(VmId).filter(|vm| self.vms[vm.idx()].in_gang && keep.keeps(*vm)));
        let kept = gang.len();
        let mut free = host.npcpus().saturating_sub(gang.iter().map(|vm| host.vm(*vm).vcpus.len()).sum());
        let mut any_pinned = gang.iter().any(|vm| self.placement(&host, *vm).pinned);
        let mut waiting = std::mem::take(&mut self.scratch.waiting);
        waiting.clear();
        // A VM is in `gang` now exactly when it is in the gang and `keep` keeps it.
        waiting.extend(
            host.pool_vms()
                .map(|vm| vm.id)
                .filter(|vm| !(self.vms[vm.idx()].in_gang && keep.keeps(*vm)) && self.is_candidate(&host, *vm))
                .map(|vm| (self.vtime_now(&host, vm), vm)),
        );
        waiting.sort();
        for &(_, vm) in &waiting {
            let need = host.vm(vm).vcpus.len();
            if need <= free {
                let pinned = self.placement(&host, vm).pinned;
                if self.fits(&host, &gang, vm, &gang[..kept], any_pinned || pinned) {
                    free -= need;
                    gang.push(vm);
                    any_pinned |= pinned;
                }
            }
        }
        self.scratch.waiting = waiting;
        self.place(ctx, &gang);
        self.scratch.chosen = gang;
    }

    /// Make `gang` the current gang: charge and release leaving VMs, give every vCPU of the gang a
    /// pCPU, and tickle every pCPU whose occupant must change.
    ///
    /// Placement is stable to avoid needless migrations: a vCPU that already holds a slot keeps it;
    /// otherwise it takes the pCPU it last ran on if free; otherwise the lowest free pCPU; each
    /// only inside its hard affinity. If these passes leave a vCPU unplaced (affinity made the
    /// greedy choice wrong), augmenting paths (Kuhn's algorithm, [`Matching`]) place it, moving
    /// newcomers first and continuing vCPUs only if that is not enough.
    fn place(&mut self, ctx: &mut PolicyCtx, gang: &[VmId]) {
        let host = ctx.host;
        let mut joins_gang = std::mem::take(&mut self.scratch.joins);
        joins_gang.clear();
        joins_gang.resize(self.vms.len(), false);
        for vm in gang {
            joins_gang[vm.idx()] = true;
        }
        for vm in 0..self.vms.len() as u32 {
            let vm = VmId(vm);
            let joins = joins_gang[vm.idx()];
            let was_in = self.vms[vm.idx()].in_gang;
            if was_in && !joins {
                self.charge(&host, vm);
                self.vms[vm.idx()].in_gang = false;
            } else if joins && !was_in {
                let d = &mut self.vms[vm.idx()];
                d.in_gang = true;
                d.charged_until = host.now;
            }
        }

        let mut members = std::mem::take(&mut self.scratch.members);
        members.clear();
        members.extend(gang.iter().flat_map(|vm| host.vm(*vm).vcpus.iter().copied()));
        // Indexed by host-wide pCPU id; only the pool's pCPUs are ever filled.
        let mut new_slots = std::mem::take(&mut self.scratch.new_slots);
        new_slots.clear();
        new_slots.resize(host.pcpus.len(), None);
        let mut placed = std::mem::take(&mut self.scratch.placed);
        placed.clear();
        placed.resize(members.len(), None);
        // Pass 1: continuing vCPUs keep their pCPU.
        for (i, v) in members.iter().enumerate() {
            if let Some(p) = self.vcpus[v.idx()].slot {
                if host.may_run(*v, p) && new_slots[p.idx()].is_none() {
                    new_slots[p.idx()] = Some(*v);
                    placed[i] = Some(p);
                }
            }
        }
        let mut continuing = std::mem::take(&mut self.scratch.continuing);
        continuing.clear();
        continuing.extend(placed.iter().map(|p| p.is_some()));
        // Pass 2: newcomers go back to the pCPU they last ran on (cache warmth, no migration).
        for (i, v) in members.iter().enumerate() {
            let last = host.vcpu(*v).last_pcpu;
            if placed[i].is_none() && last.idx() < new_slots.len() && host.may_run(*v, last) && new_slots[last.idx()].is_none() {
                new_slots[last.idx()] = Some(*v);
                placed[i] = Some(last);
            }
        }
        // Pass 3: the rest take the lowest free pCPU they may run on. This pass only fills pCPUs,
        // so the lowest free pool pCPU only moves up: `lowest_free` walks the pool once for all
        // the vCPUs that may run anywhere in it, and only a pinned one searches from the start.
        let mut lowest_free = host.pcpu_ids();
        for (i, v) in members.iter().enumerate() {
            if placed[i].is_none() {
                let free = if host.is_pinned(*v) {
                    host.pcpu_ids().find(|p| new_slots[p.idx()].is_none() && host.may_run(*v, *p))
                } else {
                    lowest_free.find(|p| new_slots[p.idx()].is_none())
                };
                if let Some(p) = free {
                    new_slots[p.idx()] = Some(*v);
                    placed[i] = Some(p);
                }
            }
        }
        // Pass 4, only when affinity left someone out: augmenting paths. `pack` checked that a
        // matching exists, so everyone is placed (else `check` reports the split VM).
        if placed.iter().any(|p| p.is_none()) {
            let pool: Vec<PcpuId> = host.pcpu_ids().collect();
            let mut m = Matching::new(members.len(), host.pcpus.len());
            for (i, p) in placed.iter().enumerate() {
                if let Some(p) = p {
                    m.set(i, *p);
                }
            }
            let allowed = |i: usize, p: PcpuId| host.may_run(members[i], p);
            for i in 0..members.len() {
                if m.of[i].is_none() && !m.augment(i, &pool, &allowed, &|j| !continuing[j]) {
                    m.augment(i, &pool, &allowed, &|_| true);
                }
            }
            placed = m.of;
            new_slots.iter_mut().for_each(|s| *s = None);
            for (i, p) in placed.iter().enumerate() {
                if let Some(p) = p {
                    new_slots[p.idx()] = Some(members[i]);
                }
            }
        }

        for v in self.vcpus.iter_mut() {
            v.slot = None;
        }
        for (i, v) in members.iter().enumerate() {
            self.vcpus[v.idx()].slot = placed[i];
        }
        for p in host.pcpu_ids() {
            let old = self.pcpus[p.idx()].slot;
            let new = new_slots[p.idx()];
            self.pcpus[p.idx()].slot = new;
            let wanted = new.filter(|v| self.vcpus[v.idx()].awake);
            if old != new || host.pcpu(p).current != wanted {
                ctx.reschedule(p);
            }
        }
        self.scratch.joins = joins_gang;
        self.scratch.members = members;
        self.scratch.new_slots = new_slots;
        self.scratch.placed = placed;
        self.scratch.continuing = continuing;
    }

    /// Free pool pCPUs (reserved for nobody) in the current gang.
    fn free_pcpus(&self, host: &HostView) -> usize {
        host.pcpu_ids().filter(|p| self.pcpus[p.idx()].slot.is_none()).count()
    }

    /// The first gang, and the periodic boundary timer.
    fn start(&mut self, ctx: &mut PolicyCtx) {
        self.started = true;
        let host = ctx.host;
        for vm in 0..self.vms.len() {
            self.vms[vm].placement = Some(VmPlacement::of(&host, VmId(vm as u32)));
        }
        self.pack(ctx, Keep::Nothing);
        let timer = ctx.init_timer(TIMER_GANG_BOUNDARY);
        self.boundary_timer = Some(timer);
        ctx.set_timer(&timer, ctx.now() + self.slice);
    }

    /// Slice boundary: charge the outgoing gang and choose the next one from scratch.
    fn boundary(&mut self, ctx: &mut PolicyCtx) {
        let host = ctx.host;
        for vm in (0..self.vms.len() as u32).map(VmId) {
            if self.vms[vm.idx()].in_gang {
                self.charge(&host, vm);
            }
        }
        self.pack(ctx, Keep::Nothing);
        let timer = self.boundary_timer.expect("the boundary timer fires only after start made it");
        ctx.set_timer(&timer, ctx.now() + self.slice);
    }
}

impl Policy for Gang {
    fn name(&self) -> &'static str {
        "gang"
    }

    /// A new weight counts from the next charge on (reserved time already charged keeps its
    /// old rate).
    fn adjust(&mut self, ctx: &mut PolicyCtx, vm: VmId, sched: &VmSched) {
        self.fit_to(&ctx.host);
        if self.vms[vm.idx()].in_gang {
            self.charge(&ctx.host, vm);
        }
        self.vms[vm.idx()].weight = sched.weight;
    }

    fn insert_vcpu(&mut self, ctx: &mut PolicyCtx, v: VcpuId) {
        self.fit_to(&ctx.host);
        self.vcpus[v.idx()].awake = true;
    }

    fn wake(&mut self, ctx: &mut PolicyCtx, v: VcpuId, _waker: Option<PcpuId>) {
        self.fit_to(&ctx.host);
        let host = ctx.host;
        let vm = host.vcpu(v).vm;
        let was_fully_halted = !self.is_candidate(&host, vm);
        self.vcpus[v.idx()].awake = true;
        if let Some(p) = self.vcpus[v.idx()].slot {
            // Its VM holds the gang: its reserved pCPU has been idle, run it there now.
            ctx.reschedule(p);
            return;
        }
        if !self.started {
            return;
        }
        if was_fully_halted {
            // A VM that slept does not bank the time it did not use: lift its virtual time to the
            // least of the VMs competing now, as start-time fair queueing and CFS's
            // `place_entity` (kernel/sched/fair.c) do for a waking entity.
            let floor =
                host.pool_vms().map(|w| w.id).filter(|w| *w != vm && self.is_candidate(&host, *w)).map(|w| self.vtime_now(&host, w)).min();
            if let Some(floor) = floor {
                let d = &mut self.vms[vm.idx()];
                d.vtime = d.vtime.max(floor);
            }
        }
        // Work-conserving within strictness: if the whole VM fits in the pCPUs the gang leaves
        // idle, co-start it now rather than at the next boundary.
        if host.vm(vm).vcpus.len() <= self.free_pcpus(&host) {
            self.pack(ctx, Keep::Gang);
        }
    }

    fn sleep(&mut self, ctx: &mut PolicyCtx, v: VcpuId) {
        self.fit_to(&ctx.host);
        let host = ctx.host;
        self.vcpus[v.idx()].awake = false;
        let vm = host.vcpu(v).vm;
        // A halted member keeps its pCPU reserved (strict co-scheduling). A VM with every vCPU
        // halted has nothing to run: release it and re-pack its pCPUs at once instead of wasting
        // the rest of the slice.
        if self.vms[vm.idx()].in_gang && !self.is_candidate(&host, vm) {
            self.pack(ctx, Keep::GangBut(vm));
        }
    }

    fn yield_vcpu(&mut self, _ctx: &mut PolicyCtx, _v: VcpuId, _reason: YieldReason) {
        // Strict co-scheduling ignores yields: the vCPU keeps its reserved pCPU, and since no other
        // vCPU may use that slot during the gang slice there is nobody to yield to.
    }

    fn do_schedule(&mut self, ctx: &mut PolicyCtx, pcpu: PcpuId) -> Decision {
        self.fit_to(&ctx.host);
        if !self.started {
            self.start(ctx);
        }
        let host = ctx.host;
        // If the vCPU leaving this pCPU is reserved elsewhere, that pCPU can take it once it is
        // off here. Stable placement never moves a running vCPU, so this is only a safety net.
        if let Some(cur) = host.pcpu(pcpu).current {
            if let Some(q) = self.vcpus[cur.idx()].slot {
                if q != pcpu {
                    ctx.reschedule(q);
                }
            }
        }
        let Some(v) = self.pcpus[pcpu.idx()].slot else {
            return Decision::idle();
        };
        let info = host.vcpu(v);
        let runnable_here = match info.state {
            VcpuState::Halted => false,
            VcpuState::Runnable => true,
            VcpuState::Running => info.pcpu == Some(pcpu),
        };
        if self.vcpus[v.idx()].awake && runnable_here {
            // No slice: the gang boundary timer drives every change.
            Decision::run(v, None)
        } else {
            // A halted member's slot stays reserved: the pCPU idles.
            Decision::idle()
        }
    }

    fn on_timer(&mut self, ctx: &mut PolicyCtx, key: u64) {
        self.fit_to(&ctx.host);
        if key == TIMER_GANG_BOUNDARY {
            self.boundary(ctx);
        }
    }

    fn check(&self, host: &HostView) -> Result<(), String> {
        if self.vms.len() < host.vms.len() || self.vcpus.len() < host.vcpus.len() || self.pcpus.len() < host.pcpus.len() {
            return Err(format!(
                "gang: private data sized for {} VMs / {} vCPUs / {} pCPUs, host has {} / {} / {}",
                self.vms.len(),
                self.vcpus.len(),
                self.pcpus.len(),
                host.vms.len(),
                host.vcpus.len(),
                host.pcpus.len()
            ));
        }
        for p in host.pcpu_ids() {
            if let Some(v) = self.pcpus[p.idx()].slot {
                if self.vcpus[v.idx()].slot != Some(p) {
                    return Err(format!("gang: pCPU {p} is reserved for vCPU {v}, which holds slot {:?}", self.vcpus[v.idx()].slot));
                }
            }
        }
        for (v, d) in self.vcpus.iter().enumerate().take(host.vcpus.len()) {
            let id = VcpuId(v as u32);
            if let Some(p) = d.slot {
                if !host.owns_vcpu(id) || !host.owns_pcpu(p) || self.pcpus[p.idx()].slot != Some(id) {
                    return Err(format!("gang: vCPU {v} holds pCPU {p}, which is not reserved for it in this pool"));
                }
                if !host.may_run(id, p) {
                    return Err(format!("gang: vCPU {v} holds pCPU {p}, outside its hard affinity"));
                }
            }
        }
        for vm in host.pool_vms() {
            let d = &self.vms[vm.id.idx()];
            let with_slot = vm.vcpus.iter().filter(|v| self.vcpus[v.idx()].slot.is_some()).count();
            let expected = if d.in_gang { vm.vcpus.len() } else { 0 };
            if with_slot != expected {
                return Err(format!(
                    "gang: VM {} ({}) has {with_slot} of {} vCPUs on pCPUs while {} the gang; siblings must be co-scheduled",
                    vm.id,
                    vm.name,
                    vm.vcpus.len(),
                    if d.in_gang { "in" } else { "out of" }
                ));
            }
            if let Some(kept) = d.placement {
                let now = VmPlacement::of(host, vm.id);
                if kept != now {
                    return Err(format!("gang: VM {} ({}) kept placement {kept:?}, its pool and masks now say {now:?}", vm.id, vm.name));
                }
            }
            if d.in_gang && !vm.vcpus.iter().any(|v| self.vcpus[v.idx()].awake) {
                return Err(format!("gang: VM {} ({}) holds pCPUs with every vCPU halted", vm.id, vm.name));
            }
        }
        // A Running vCPU must sit on its reserved pCPU unless a reschedule there is pending (the
        // engine may check between a gang change and the do_schedule that carries it out), so
        // only the reservation maps are checked above.
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::US;

    use super::super::test_host::FakeHost;

    /// A gang host; its extra check is co-scheduling as the host sees it: at every instant
    /// either all non-halted vCPUs of a VM are Running or none is.
    fn gang_host(npcpus: u32, vms: &[(u32, u32)], slice: Nanos) -> FakeHost {
        let mut params = Params::defaults(&GangKind.params());
        params.set("slice", crate::params::ParamValue::Duration(slice));
        let mut h = FakeHost::new(npcpus, vms, None, |shape| GangKind.build(&params, shape));
        h.extra_check = Some(coscheduled);
        h.check();
        h
    }

    fn coscheduled(h: &FakeHost) {
        assert_eq!(h.last_slice, None, "gang changes are driven by its boundary timer");
        for vm in &h.vms {
            let awake = vm.vcpus.iter().filter(|v| h.vcpus[v.idx()].state != VcpuState::Halted).count();
            let running = vm.vcpus.iter().filter(|v| h.vcpus[v.idx()].state == VcpuState::Running).count();
            assert!(running == 0 || running == awake, "t={} VM {}: {running} of {awake} awake vCPUs running", h.now, vm.id);
        }
    }

    #[test]
    fn weights_one_to_two_get_cpu_one_to_two() {
        // Two 4-vCPU VMs on 4 pCPUs: only one fits at a time, so shares follow weights.
        let mut h = gang_host(4, &[(4, 256), (4, 512)], DEFAULT_SLICE);
        h.advance_to(10 * SEC);
        let a = h.vm_run_time(0) as f64;
        let b = h.vm_run_time(1) as f64;
        assert!((a + b - 4.0 * 10.0 * SEC as f64).abs() < 1.0, "work-conserving: the host never idles");
        let ratio = b / a;
        assert!((ratio - 2.0).abs() / 2.0 < 0.03, "ratio {ratio}, a={a} b={b}");
    }

    #[test]
    fn weights_hold_with_vms_of_different_sizes() {
        // 2-vCPU VMs of weights 1:1:2:2 on 4 pCPUs; two run per slice. Entitlement is
        // 4 pCPUs x weight / 6, all below the 2-pCPU cap of each VM.
        let mut h = gang_host(4, &[(2, 256), (2, 256), (2, 512), (2, 512)], DEFAULT_SLICE);
        h.advance_to(10 * SEC);
        let total = 4.0 * 10.0 * SEC as f64;
        for (vm, weight) in [(0, 1.0), (1, 1.0), (2, 2.0), (3, 2.0)] {
            let share = h.vm_run_time(vm) as f64 / total;
            let entitled = weight / 6.0;
            assert!((share - entitled).abs() / entitled < 0.03, "VM {vm}: share {share}, entitled {entitled}");
        }
    }

    #[test]
    fn fragmentation_three_and_two_vcpu_vms_never_run_together() {
        let mut h = gang_host(4, &[(3, 256), (2, 256)], DEFAULT_SLICE);
        let mut idle_while_big_runs = 0;
        for ms in 1..=3000 {
            h.advance_to(ms * MS);
            let (big, small) = (h.running(0), h.running(1));
            assert!(big == 0 || small == 0, "t={ms}ms: both VMs run");
            assert!(big == 3 || small == 2, "t={ms}ms: someone always runs");
            if big == 3 {
                assert_eq!(h.idle_pcpus(), 1, "the fourth pCPU idles: too small for the 2-vCPU VM");
                idle_while_big_runs += 1;
            } else {
                assert_eq!(h.idle_pcpus(), 2);
            }
        }
        assert!(idle_while_big_runs > 0);
        // Equal weights: equal reserved pCPU time, so the 2-vCPU VM runs 3/2 as many slices.
        let ratio = h.vm_run_time(1) as f64 / h.vm_run_time(0) as f64;
        assert!((ratio - 1.0).abs() < 0.03, "ratio {ratio}");
    }

    #[test]
    fn leftover_pcpus_are_filled_by_smaller_vms() {
        // 3-, 2- and 1-vCPU VMs on 4 pCPUs: the 1-vCPU VM always fits beside whichever larger VM
        // runs, so it runs all the time although it has the same weight.
        let mut h = gang_host(4, &[(3, 256), (2, 256), (1, 256)], DEFAULT_SLICE);
        h.advance_to(3 * SEC);
        assert_eq!(h.vm_run_time(2), 3 * SEC);
        assert!(h.vm_run_time(0) > 0 && h.vm_run_time(1) > 0);
    }

    #[test]
    fn slot_changes_only_at_slice_boundaries() {
        let slice = 10 * MS;
        let mut h = gang_host(4, &[(4, 256), (4, 256)], slice);
        let mut last_runner = h.running(0) > 0;
        for ms in 1..=200 {
            h.advance_to(ms * MS);
            let runner = h.running(0) > 0;
            if runner != last_runner {
                assert_eq!(h.now % slice, 0, "switch at {} ns, not on a slice boundary", h.now);
            }
            last_runner = runner;
        }
        // Equal weights, equal sizes: they alternate every slice.
        assert_eq!(h.vm_run_time(0), h.vm_run_time(1));
    }

    #[test]
    fn continuing_vms_keep_their_pcpus() {
        // Two 2-vCPU VMs always fit together: no switch or migration after the first placement.
        let mut h = gang_host(4, &[(2, 256), (2, 256)], DEFAULT_SLICE);
        let switches = h.context_switches;
        h.advance_to(SEC);
        assert_eq!(h.context_switches, switches);
        assert_eq!(h.migrations, 0);
        assert_eq!(h.vm_run_time(0), 2 * SEC);
    }

    #[test]
    fn halted_member_keeps_its_slot_and_fully_halted_vm_releases_pcpus() {
        let mut h = gang_host(4, &[(4, 256), (4, 256)], DEFAULT_SLICE);
        assert_eq!(h.running(0), 4, "ties go to the lower VM id");
        h.advance_to(5 * MS);
        // One halted vCPU: its pCPU stays reserved and idle; the other VM does not run.
        h.halt(VcpuId(0));
        assert_eq!(h.running(0), 3);
        assert_eq!(h.running(1), 0);
        assert_eq!(h.idle_pcpus(), 1);
        // It wakes inside the slice: back on its reserved pCPU at once.
        h.advance_to(6 * MS);
        h.wake(VcpuId(0));
        assert_eq!(h.running(0), 4);
        // All four halt at 8 ms: the VM is released and the other VM co-starts at once.
        h.advance_to(8 * MS);
        for v in 0..4 {
            h.halt(VcpuId(v));
        }
        assert_eq!(h.running(1), 4, "the released pCPUs are re-packed without waiting for the boundary");
        assert_eq!(h.idle_pcpus(), 0);
        // The released VM was charged only for the 4 x 8 ms it held; VM 1 holds 4 x 22 ms by the
        // boundary, so VM 0 wins it, with only its awake vCPU running and three slots reserved.
        h.wake(VcpuId(1));
        assert_eq!(h.running(0), 0, "no free pCPUs: it waits for the boundary");
        h.advance_to(30 * MS - 1);
        assert_eq!(h.running(1), 4);
        h.advance_to(30 * MS);
        assert_eq!(h.running(0), 1);
        assert_eq!(h.running(1), 0);
        assert_eq!(h.idle_pcpus(), 3, "strict: the halted siblings' pCPUs stay reserved");
    }

    #[test]
    fn waking_vm_that_fits_in_leftover_pcpus_starts_early() {
        let mut h = gang_host(4, &[(2, 256), (2, 256)], DEFAULT_SLICE);
        h.advance_to(MS);
        h.halt(VcpuId(2));
        h.halt(VcpuId(3));
        assert_eq!(h.running(1), 0);
        assert_eq!(h.idle_pcpus(), 2);
        h.advance_to(2 * MS);
        let last = h.vcpus[3].last_pcpu;
        h.wake(VcpuId(3));
        assert_eq!(h.running(1), 1, "co-started before the boundary");
        assert_eq!(h.idle_pcpus(), 1, "its halted sibling's pCPU is reserved and idle");
        assert_eq!(h.vcpus[3].pcpu, Some(last), "back on the pCPU it last ran on");
        assert_eq!(h.migrations, 0);
    }

    #[test]
    fn waking_vm_that_does_not_fit_waits_for_the_boundary() {
        let mut h = gang_host(4, &[(3, 256), (4, 256)], DEFAULT_SLICE);
        assert_eq!(h.running(0), 3);
        // VM 1 cannot fit beside VM 0 (only 1 pCPU free) until the boundary.
        h.advance_to(29 * MS);
        assert_eq!(h.running(1), 0);
        h.advance_to(30 * MS);
        assert_eq!(h.running(1), 4);
        assert_eq!(h.running(0), 0);
    }

    #[test]
    fn siblings_co_run_under_random_halts_and_wakes() {
        // VMs of 1..4 vCPUs halt and wake in a fixed pseudo-random pattern; FakeHost::check
        // asserts after every event that a VM's awake vCPUs are either all running or none is.
        let mut h = gang_host(6, &[(4, 256), (3, 512), (2, 256), (1, 128), (2, 384)], 10 * MS);
        h.random_halts_and_wakes(20_000, 100 * US);
        for vm in 0..h.vms.len() {
            assert!(h.vm_run_time(vm) > 0, "VM {vm} never ran");
        }
    }

    #[test]
    fn yields_are_ignored() {
        let mut h = gang_host(2, &[(2, 256), (2, 256)], DEFAULT_SLICE);
        h.advance_to(MS);
        let v = VcpuId(0);
        let p = h.vcpus[v.idx()].pcpu.unwrap();
        h.call(|pol, ctx| pol.yield_vcpu(ctx, v, YieldReason::PauseLoop));
        h.schedule(p);
        assert_eq!(h.pcpus[p.idx()].current, Some(v));
        assert_eq!(h.running(1), 0);
    }

    #[test]
    fn a_vm_larger_than_the_host_never_runs() {
        let mut h = gang_host(4, &[(5, 256), (2, 256)], DEFAULT_SLICE);
        h.advance_to(SEC);
        assert_eq!(h.vm_run_time(0), 0);
        assert_eq!(h.vm_run_time(1), 2 * SEC);
    }

    #[test]
    fn sleeping_vm_does_not_bank_time() {
        // VM 1 sleeps for 1 s while VM 0 runs alone; on waking it gets its share from then on
        // instead of monopolising the host to catch up.
        let mut h = gang_host(4, &[(4, 256), (4, 256)], DEFAULT_SLICE);
        h.advance_to(30 * MS);
        assert_eq!(h.running(1), 4);
        h.advance_to(31 * MS);
        for v in 4..8 {
            h.halt(VcpuId(v));
        }
        assert_eq!(h.running(0), 4);
        h.advance_to(SEC + 31 * MS);
        for v in 4..8 {
            h.wake(VcpuId(v));
        }
        let (a0, b0) = (h.vm_run_time(0), h.vm_run_time(1));
        h.advance_to(SEC + 31 * MS + 600 * MS);
        let (a, b) = (h.vm_run_time(0) - a0, h.vm_run_time(1) - b0);
        let ratio = b as f64 / a as f64;
        assert!((ratio - 1.0).abs() < 0.15, "after waking: a={a} b={b}");
    }

    #[test]
    fn the_kept_placement_is_held_to_the_host() {
        // What `is_candidate` and `pack` read of a VM's pool and masks is taken once, when the
        // first gang is packed; `check` compares it with what the host says now.
        let mut h = gang_host(4, &[(2, 256), (3, 256)], DEFAULT_SLICE);
        let mut g = Gang::new(DEFAULT_SLICE, HostShape::new(4, 5, 2));
        assert!(g.vms.iter().all(|d| d.placement.is_none()), "nothing is kept before the first gang");
        let kept = h.call(|_, ctx| {
            for v in 0..5 {
                g.insert_vcpu(ctx, VcpuId(v));
            }
            g.start(ctx);
            g.check(&ctx.host).map(|()| g.vms.iter().map(|d| d.placement).collect::<Vec<_>>())
        });
        assert_eq!(kept, Ok(vec![Some(VmPlacement { eligible: true, pinned: false }); 2]));
        g.vms[1].placement = Some(VmPlacement { eligible: false, pinned: false });
        let err = h.call(|_, ctx| g.check(&ctx.host)).unwrap_err();
        assert!(err.contains("kept placement") && err.contains("eligible: false"), "{err}");
    }

    #[test]
    fn params_have_the_real_default() {
        let specs = GangKind.params();
        assert_eq!(specs.len(), 1);
        assert_eq!(specs[0].default, crate::params::ParamValue::Duration(30 * MS));
        assert!(specs[0].parse(&toml::Value::String("0ms".into())).is_err());
        assert!(specs[0].parse(&toml::Value::String("2s".into())).is_err());
        assert!(crate::hypervisor::policies::find("gang").is_ok());
    }
}
