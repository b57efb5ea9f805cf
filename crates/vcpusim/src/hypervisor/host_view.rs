//! The host as a policy sees it: vCPUs, pCPUs and VMs ([`VcpuInfo`], [`PcpuInfo`],
//! [`VmInfo`]), read through [`HostView`], with the caller's cpupool and everyone's affinity
//! ([`Scope`]). Nothing here changes the host: a policy reads this view and asks for changes
//! through its `PolicyCtx` (hypervisor/policy.rs); the engine keeps the tables (sim/).
//!
//! Cpupools and affinity: which pCPUs a policy instance owns and where each vCPU may run.
//!
//! ```text
//!   host pCPUs   0 1 2 3 4 5 6 7 8 9 10 11
//!   pools        [------- pool0 -------][ fast ]      one policy instance each
//!   vCPU v       pool = fast, hard = {10,11}, soft = {11}
//!                may run on hard ∩ pool, prefers soft ∩ hard ∩ pool
//! ```
//!
//! Xen's model (xen/common/sched/cpupool.c, private.h): a `struct cpupool` owns a cpumask
//! (`cpu_valid`) and a `struct scheduler` instance; a domain's units belong to one pool at a time
//! and run only on its pCPUs (`cpupool_domain_master_cpumask`). Each unit carries a hard affinity
//! (`cpu_hard_affinity`: never run elsewhere) and a soft one (`cpu_soft_affinity`: preferred).
//! The effective set a scheduler may use is hard ∩ pool (`sched_unit ... cpumask_and(...,
//! unit->cpu_hard_affinity, cpupool_domain_master_cpumask(d))`), and soft affinity counts only
//! where it narrows that set (`has_soft_affinity` in private.h).
//!
//! A policy instance sees its pool through [`HostView`]: `pcpu_ids()`
//! lists the pool's pCPUs, `may_run(v, p)` and `prefers(v, p)` answer affinity questions. The
//! engine (sim/placement.rs, sim/pools.rs) keeps the tables here and moves pCPUs and vCPUs between pools.

use crate::hardware::cpumask::{CpuMask, IndexMask};
use crate::hardware::topology::Topology;
use crate::hypervisor::node_affinity::NodeAffinity;
use crate::ids::{PcpuId, PoolId, VcpuId, VmId};
use crate::time::Nanos;
use std::sync::Arc;

/// Hypervisor-visible vCPU state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VcpuState {
    /// On a pCPU now.
    Running,
    /// Wants a pCPU, waits in some policy run queue.
    Runnable,
    /// Blocked in HLT (guest idle); becomes Runnable when an interrupt arrives.
    Halted,
}

/// What the hypervisor knows about one vCPU. It never includes guest-internal state: the guest's
/// kernel function is only visible through an explicit paravirtual channel a policy declares
/// (`PolicyCtx::kernel_fn`, declared in `PolicyKind::channels`: seed 002's symbol lookup).
#[derive(Clone, Debug)]
pub struct VcpuInfo {
    pub id: VcpuId,
    pub vm: VmId,
    /// Index of this vCPU inside its VM (vCPU0, vCPU1, ...).
    pub index: u32,
    pub state: VcpuState,
    /// The pCPU it runs on, when Running.
    pub pcpu: Option<PcpuId>,
    /// The pCPU it last ran on (Xen's `processor`, Linux's `task_cpu`).
    pub last_pcpu: PcpuId,
    /// When the current run started (meaningful when Running).
    pub run_start: Nanos,
    /// Descheduled involuntarily and still runnable (KVM's `preempted`, steal_time).
    pub preempted: bool,
    /// Whether it was executing guest kernel code (CPL 0) when it was last descheduled while
    /// runnable: KVM x86 `vcpu->arch.preempted_in_kernel`, read from the VMCS in
    /// `kvm_arch_vcpu_put` (arch/x86/kvm/x86.c) when `vcpu->preempted`. Kept by the engine from
    /// the host's accounting of the slice it was in (sim/hypervisor_ops.rs `switch_out`).
    pub preempted_in_kernel: bool,
    /// A virtual interrupt was delivered to it while it was not running, and it has not run
    /// since: KVM's `KVM_REQ_EVENT` (`__apic_accept_irq`) or, with APICv, the posted-interrupt
    /// descriptor's ON bit (`kvm_arch_dy_has_pending_interrupt`, arch/x86/kvm/x86.c).
    pub pending_interrupt: bool,
    /// KVM `vcpu->spin_loop.in_spin_loop`: it was descheduled inside its own
    /// `kvm_vcpu_on_spin` (its pause-loop exit yielded to a sibling: `yield_to` -> `schedule()`
    /// with `in_spin_loop` set) and has not run since.
    pub in_spin_loop: bool,
    /// KVM x86 `vcpu->arch.pv.pv_unhalted`: a sibling's `KVM_HC_KICK_CPU` hypercall
    /// (`kvm_pv_kick_cpu_op` -> `APIC_DM_REMRD`) kicked it, and it has not run since
    /// (`vcpu_block` clears it). While set, its next HLT returns at once
    /// (`kvm_arch_vcpu_runnable`). Set by the host half of the hypercall (`Sim::kvm_kick_cpu`);
    /// cleared when the halt ends or the vCPU is next switched in after a block. Always false
    /// without the Linux 6.x guest's `pv_spinlock` on a KVM host.
    pub pv_unhalted: bool,
    /// Total time on a pCPU so far.
    pub run_time: Nanos,
}

/// What the hypervisor knows about one pCPU.
#[derive(Clone, Debug)]
pub struct PcpuInfo {
    pub id: PcpuId,
    /// The vCPU running here, if any.
    pub current: Option<VcpuId>,
}

/// A VM as any hypervisor knows a domain: its id, name, vCPUs, NUMA node affinity and the nodes
/// holding its memory. Scheduling settings reach the policy separately, through
/// [`Policy::adjust`](crate::hypervisor::policy::Policy::adjust), and each policy keeps what it needs.
#[derive(Clone, Debug)]
pub struct VmInfo {
    pub id: VmId,
    pub name: String,
    pub vcpus: Vec<VcpuId>,
    /// The domain's node affinity (Xen `d->node_affinity`, `hypervisor/node_affinity.rs`); read
    /// by credit as Xen 4.4.
    pub node_affinity: NodeAffinity,
    /// The NUMA nodes holding the domain's memory, sorted, pages spread evenly over them (Xen
    /// allocates a domain's memory and knows where: `d->node_affinity` guides
    /// `alloc_domheap_pages`). Resolved from `[[vm]] memory_nodes` by
    /// `sim/build.rs` `resolve_memory_nodes`; read by the contention model (sim/mechanisms/contention_model.rs).
    pub memory_nodes: Vec<u32>,
    /// Its vCPUs in state [`VcpuState::Runnable`], by index in the VM (bit `i`: `vcpus[i]`),
    /// kept by the engine at every state change (`Sim::set_vcpu_state`; the policy test host's
    /// `FakeHost` keeps it too) and checked in check mode: KVM's directed yield visits only
    /// these (`hypervisor/kvm.rs`), where it walked every sibling (O(V) per pause-loop exit).
    pub runnable: IndexMask,
}

impl VcpuInfo {
    /// vCPU `index` of VM `vm`, Runnable, never run, last on `home` (where it is placed first).
    pub fn new(id: VcpuId, vm: VmId, index: u32, home: PcpuId) -> Self {
        VcpuInfo {
            id,
            vm,
            index,
            state: VcpuState::Runnable,
            pcpu: None,
            last_pcpu: home,
            run_start: 0,
            preempted: false,
            preempted_in_kernel: false,
            pending_interrupt: false,
            in_spin_loop: false,
            pv_unhalted: false,
            run_time: 0,
        }
    }
}

/// Read-only view of the host handed to every policy call.
#[derive(Clone, Copy)]
pub struct HostView<'a> {
    pub now: Nanos,
    pub vcpus: &'a [VcpuInfo],
    pub pcpus: &'a [PcpuInfo],
    pub vms: &'a [VmInfo],
    pub topology: &'a Topology,
    /// The caller's cpupool and everyone's affinity (`hypervisor/cpupool.rs`); `None` is a host
    /// of one pool holding every pCPU, with no affinity set (policy unit tests use it).
    pub scope: Option<Scope<'a>>,
}

impl<'a> HostView<'a> {
    /// The host at `now`, of one pool holding every pCPU and no affinity set (a policy unit
    /// test's host); [`HostView::scoped`] gives it a pool and affinity.
    pub fn new(now: Nanos, vcpus: &'a [VcpuInfo], pcpus: &'a [PcpuInfo], vms: &'a [VmInfo], topology: &'a Topology) -> Self {
        HostView { now, vcpus, pcpus, vms, topology, scope: None }
    }

    /// The same host as the policy of one pool sees it (`scope`: its pool and everyone's
    /// affinity).
    pub fn scoped(self, scope: Scope<'a>) -> Self {
        HostView { scope: Some(scope), ..self }
    }

    pub fn vcpu(&self, v: VcpuId) -> &'a VcpuInfo {
        &self.vcpus[v.idx()]
    }
    pub fn pcpu(&self, p: PcpuId) -> &'a PcpuInfo {
        &self.pcpus[p.idx()]
    }
    pub fn vm(&self, vm: VmId) -> &'a VmInfo {
        &self.vms[vm.idx()]
    }
    pub fn vm_of(&self, v: VcpuId) -> &'a VmInfo {
        &self.vms[self.vcpus[v.idx()].vm.idx()]
    }
    /// How many pCPUs this policy instance schedules (its pool's).
    pub fn npcpus(&self) -> usize {
        match self.scope {
            None => self.pcpus.len(),
            Some(s) => s.pool.pcpus.len(),
        }
    }
    /// This policy instance's pCPUs (its pool's), in increasing order.
    pub fn pcpu_ids(&self) -> impl Iterator<Item = PcpuId> + 'a {
        let list = self.scope.map(|s| &s.pool.pcpus[..]);
        let n = list.map_or(self.pcpus.len(), |l| l.len());
        (0..n).map(move |i| match list {
            None => PcpuId(i as u32),
            Some(l) => l[i],
        })
    }
    /// Whether pCPU `p` belongs to this policy instance's pool.
    #[inline]
    pub fn owns_pcpu(&self, p: PcpuId) -> bool {
        self.scope.is_none_or(|s| s.trivial || s.pool.mask.contains(p))
    }
    /// Whether vCPU `v` belongs to this policy instance's pool.
    #[inline]
    pub fn owns_vcpu(&self, v: VcpuId) -> bool {
        self.scope.is_none_or(|s| s.trivial || s.vcpu_pool[v.idx()] == s.pool.id)
    }
    /// The VMs with a vCPU in this pool.
    pub fn pool_vms(&self) -> impl Iterator<Item = &'a VmInfo> + 'a {
        let scope = self.scope;
        self.vms.iter().filter(move |vm| scope.is_none_or(|s| vm.vcpus.iter().any(|v| s.vcpu_pool[v.idx()] == s.pool.id)))
    }
    /// Whether `v` may run on `p`: `p` is in the pool and in `v`'s hard affinity.
    #[inline]
    pub fn may_run(&self, v: VcpuId, p: PcpuId) -> bool {
        self.scope.is_none_or(|s| s.trivial || (s.pool.mask.contains(p) && s.affinity[v.idx()].hard.contains(p)))
    }
    /// The masks `may_run` reads, for a search over masks: `[pool, v's hard affinity]`, whose
    /// intersection is where `v` may run; None where it may run on every pCPU (one pool, no
    /// masks).
    #[inline]
    pub fn run_masks(&self, v: VcpuId) -> Option<[&'a CpuMask; 2]> {
        self.scope.filter(|s| !s.trivial).map(|s| [&s.pool.mask, &s.affinity[v.idx()].hard])
    }
    /// Whether `v` has a soft affinity that matters here (Xen `has_soft_affinity`: it narrows
    /// hard ∩ pool without leaving it empty).
    pub fn has_soft(&self, v: VcpuId) -> bool {
        let Some(s) = self.scope.filter(|s| !s.trivial) else { return false };
        let a = &s.affinity[v.idx()];
        a.soft.narrows(&a.hard, &s.pool.mask)
    }
    /// Whether `p` is in `v`'s soft affinity (and `v` may run there).
    #[inline]
    pub fn prefers(&self, v: VcpuId, p: PcpuId) -> bool {
        self.may_run(v, p) && self.scope.is_none_or(|s| s.trivial || s.affinity[v.idx()].soft.contains(p))
    }
    /// Whether `v`'s domain has a node affinity that matters here (Xen 4.4
    /// `__vcpu_has_node_affinity(vc, mask)` with mask = hard ∩ pool): explicit (not
    /// `auto_node_affinity`), not spanning every pCPU, and meeting hard ∩ pool.
    pub fn has_node_affinity(&self, v: VcpuId) -> bool {
        let na = &self.vm_of(v).node_affinity;
        if na.auto || na.cpus.count() >= self.pcpus.len() {
            return false;
        }
        match self.scope.filter(|s| !s.trivial) {
            None => !na.cpus.is_empty(),
            Some(s) => na.cpus.meets_both(&s.affinity[v.idx()].hard, &s.pool.mask),
        }
    }
    /// Whether `p` is in `v`'s domain's node affinity (`sdom->node_affinity_cpumask`) and `v`
    /// may run there.
    #[inline]
    pub fn node_affine(&self, v: VcpuId, p: PcpuId) -> bool {
        self.may_run(v, p) && self.vm_of(v).node_affinity.cpus.contains(p)
    }
    /// Whether `v`'s hard affinity restricts it within the pool (some pool pCPU is excluded).
    pub fn is_pinned(&self, v: VcpuId) -> bool {
        self.scope.is_some_and(|s| !s.trivial && !s.pool.mask.is_subset(&s.affinity[v.idx()].hard))
    }
}

/// What a policy instance knows of its own pool.
#[derive(Clone, Debug)]
pub struct PoolView {
    pub id: PoolId,
    pub name: String,
    /// Its pCPUs in increasing order.
    pub pcpus: Vec<PcpuId>,
    pub mask: CpuMask,
    /// What credit's load balancer asks of the whole pool before a balance step, kept by the
    /// engine as the masks and pools change (`PoolFacts`; all false until it fills them in).
    pub facts: PoolFacts,
}

impl PoolView {
    pub fn new(id: PoolId, name: String, mask: CpuMask) -> Self {
        PoolView { id, name, pcpus: mask.iter().collect(), mask, facts: PoolFacts::default() }
    }

    pub fn add(&mut self, p: PcpuId) {
        self.mask.insert(p);
        self.pcpus = self.mask.iter().collect();
    }

    pub fn remove(&mut self, p: PcpuId) {
        self.mask.remove(p);
        self.pcpus = self.mask.iter().collect();
    }
}

/// A vCPU's affinity masks as the user set them (`[[vm]] cpus`, `cpus_soft`); the pool is
/// applied when they are read. Shared with the scenario and between the vCPUs given the same
/// cpulist (`VmSpec::cpus`): a mask is one bit per pCPU, and the engine replaces a vCPU's masks
/// (`Sim::set_affinity`, a pool change breaking affinity) rather than writing into them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Affinity {
    pub hard: Arc<CpuMask>,
    pub soft: Arc<CpuMask>,
}

impl Affinity {
    /// Masks of one vCPU's own (not shared with others).
    pub fn new(hard: CpuMask, soft: CpuMask) -> Self {
        Affinity { hard: Arc::new(hard), soft: Arc::new(soft) }
    }

    /// Where a vCPU with these masks may be homed in a pool of pCPUs `pool`: soft ∩ hard ∩ pool
    /// when that is not empty, else hard ∩ pool (empty only if the hard mask misses the pool).
    pub fn homes(&self, pool: &CpuMask) -> CpuMask {
        let hard = self.hard.and(pool);
        let soft = self.soft.and(&hard);
        if soft.is_empty() {
            hard
        } else {
            soft
        }
    }
}

/// The pool tables handed to a policy call: its own pool, and every vCPU's pool and affinity.
#[derive(Clone, Copy)]
pub struct Scope<'a> {
    pub pool: &'a PoolView,
    pub vcpu_pool: &'a [PoolId],
    pub affinity: &'a [Affinity],
    /// One pool holding every pCPU and no vCPU with a hard or soft mask short of the host: every
    /// affinity question has the trivial answer (the engine keeps this up to date; the
    /// `HostView` accessors answer at once, which keeps the common case as fast as a host
    /// without pools).
    pub trivial: bool,
}

/// Two facts of a pool that a policy would otherwise find by reading every vCPU: credit's
/// `csched_load_balance` skips its first balance step when no vCPU can take it (credit
/// `balance.rs` `any_soft`), which asks one of them at every balance. The engine keeps them
/// in the pool's view (`PoolView::facts`: the soft masks recomputed where a pool's pCPUs or a
/// soft mask change, `Placement::refresh_facts`; the node count moved where a vCPU changes pool,
/// `Placement::set_vcpu_pool`), and check mode holds them to `PoolFacts::of`. In the view, a policy
/// call reads them at no cost beyond the read (a copy into each call's scope is 1.4% more
/// instructions on the quickstart, which has one pool and never reads them).
/// Read from every vCPU per balance, a host of 1,024 pCPUs with a second pool spent a third
/// of its time here (docs/speed.md).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolFacts {
    /// Some vCPU of the host has a soft mask that does not cover the pool's pCPUs (a necessary
    /// condition of Xen 4.5+'s `has_soft_affinity` for any vCPU of the pool).
    pub soft_short: bool,
    /// Some VM with a vCPU in the pool has an explicit NUMA node affinity (not
    /// `d->auto_node_affinity`: Xen 4.4's `__vcpu_has_node_affinity` may hold).
    pub node_explicit: bool,
}

impl PoolFacts {
    /// The facts read from every vCPU: O(V x P/64). The engine's kept copy must equal this.
    pub fn of(pool: &PoolView, vcpu_pool: &[PoolId], affinity: &[Affinity], vms: &[VmInfo]) -> Self {
        PoolFacts {
            soft_short: Self::soft_short_of(pool, affinity),
            node_explicit: vms.iter().any(|vm| !vm.node_affinity.auto && vm.vcpus.iter().any(|v| vcpu_pool[v.idx()] == pool.id)),
        }
    }

    /// `soft_short` alone (it does not depend on which pool a vCPU is in).
    pub fn soft_short_of(pool: &PoolView, affinity: &[Affinity]) -> bool {
        affinity.iter().any(|a| !pool.mask.is_subset(&a.soft))
    }
}
