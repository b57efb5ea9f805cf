//! Where vCPUs may run: the cpupools with their policy instances, which pool each pCPU and vCPU
//! is in, each vCPU's hard and soft affinity, and the facts kept from them. Xen keeps the same
//! things in `struct cpupool` (its `sched`, `cpu_valid`), `struct sched_unit` (`cpu_hard_affinity`,
//! `cpu_soft_affinity`) and `struct domain` (`cpupool`), xen/common/sched/private.h.
//!
//! ```text
//!   pools[i] ── PoolView (pCPUs, mask, facts) + Box<dyn Policy>   channels[i]
//!   pcpu_pool[p] ──> i        vcpu_pool[v] ──> i        affinity[v] = hard, soft
//!   kept from them: trivial (one pool, no mask short of the host), node_explicit[i]
//! ```
//!
//! The fields are private: the engine core reads them through the accessors and changes them
//! only through the methods below, each of which keeps the facts that depend on what it changes
//! (a vCPU's pool keeps the pools' node counts, O(1)) or says which refresh the caller owes
//! (`refresh_facts` and `update_trivial` after pools or masks changed, before the next policy
//! call). The operations that also involve the policies and the vCPUs' state (`xl
//! cpupool-cpu-remove`, `sched_move_domain`, `xl vcpu-pin`) are the core's, sim/pools.rs.

use crate::hardware::cpumask::CpuMask;
use crate::hypervisor::host_view::{Affinity, PoolFacts, PoolView, Scope};
use crate::hypervisor::policy::{Policy, VmInfo};
use crate::ids::{PcpuId, PoolId, VcpuId};
use crate::vmexit::Channels;
use std::sync::Arc;

/// One pool: its view and its scheduler instance (Xen `struct scheduler` inside `struct cpupool`).
pub struct Cpupool {
    pub view: PoolView,
    pub policy: Box<dyn Policy>,
}

pub struct Placement {
    /// `pools[0]` is the default pool.
    pools: Vec<Cpupool>,
    /// The paravirtual channels each pool's policy declared (`PolicyKind::channels`).
    channels: Vec<Channels>,
    /// The pool each pCPU is in now.
    pcpu_pool: Vec<PoolId>,
    /// The pool each vCPU belongs to now.
    vcpu_pool: Vec<PoolId>,
    /// Each vCPU's hard and soft affinity.
    affinity: Vec<Affinity>,
    /// vCPUs moved to another pool while halted: inserted into it when they wake.
    insert_on_wake: Vec<bool>,
    /// One pool and no affinity short of the host (`Scope::trivial`).
    trivial: bool,
    /// Per pool: its vCPUs whose VM has an explicit node affinity (its view's
    /// `facts.node_explicit` is this above zero).
    node_explicit: Vec<u32>,
    /// The micro pool's id, or `PoolId(u32::MAX)` without one (a plain field for the hot path's
    /// affinity test: a lent vCPU runs on a micro pCPU outside its hard affinity, as the released
    /// `vcpu_migrate_to_cpu` ignores affinity).
    micro_pool: PoolId,
}

impl Placement {
    /// The pools as built, each pCPU in the pool given; vCPUs come with `add_vcpu`.
    pub fn new(pools: Vec<Cpupool>, channels: Vec<Channels>, pcpu_pool: Vec<PoolId>) -> Self {
        Placement {
            pools,
            channels,
            pcpu_pool,
            vcpu_pool: Vec::new(),
            affinity: Vec::new(),
            insert_on_wake: Vec::new(),
            trivial: false,
            node_explicit: Vec::new(),
            micro_pool: PoolId(u32::MAX),
        }
    }

    /// The next vCPU, in `pool` with `affinity` (building).
    pub fn add_vcpu(&mut self, pool: PoolId, affinity: Affinity) {
        self.vcpu_pool.push(pool);
        self.affinity.push(affinity);
        self.insert_on_wake.push(false);
    }

    pub fn pools(&self) -> &[Cpupool] {
        &self.pools
    }

    #[inline(always)]
    pub fn pool(&self, pool: PoolId) -> &Cpupool {
        &self.pools[pool.idx()]
    }

    #[inline(always)]
    pub fn view(&self, pool: PoolId) -> &PoolView {
        &self.pools[pool.idx()].view
    }

    /// The policy instance of `pool`, for a call that needs no context (a name, an extension's
    /// answer, `keeps_current`).
    #[inline(always)]
    pub fn policy_mut(&mut self, pool: PoolId) -> &mut dyn Policy {
        self.pools[pool.idx()].policy.as_mut()
    }

    /// What a call of `pool`'s policy needs from here: the policy, its scope and its channels.
    #[inline(always)]
    pub fn call_parts(&mut self, pool: PoolId) -> (&mut dyn Policy, Scope<'_>, Channels) {
        let Cpupool { view, policy } = &mut self.pools[pool.idx()];
        let scope = Scope { pool: view, vcpu_pool: &self.vcpu_pool, affinity: &self.affinity, trivial: self.trivial };
        (policy.as_mut(), scope, self.channels[pool.idx()])
    }

    /// The scope of `pool`'s policy.
    pub fn scope(&self, pool: PoolId) -> Scope<'_> {
        Scope { pool: &self.pools[pool.idx()].view, vcpu_pool: &self.vcpu_pool, affinity: &self.affinity, trivial: self.trivial }
    }

    #[inline(always)]
    pub fn pcpu_pool(&self, p: PcpuId) -> PoolId {
        self.pcpu_pool[p.idx()]
    }

    #[inline(always)]
    pub fn vcpu_pool(&self, v: VcpuId) -> PoolId {
        self.vcpu_pool[v.idx()]
    }

    /// Every vCPU's pool, by vCPU.
    pub fn vcpu_pools(&self) -> &[PoolId] {
        &self.vcpu_pool
    }

    #[inline(always)]
    pub fn affinity(&self, v: VcpuId) -> &Affinity {
        &self.affinity[v.idx()]
    }

    /// One pool and no affinity short of the host: every placement question has the trivial
    /// answer.
    #[inline(always)]
    pub fn trivial(&self) -> bool {
        self.trivial
    }

    #[inline(always)]
    pub fn micro_pool(&self) -> PoolId {
        self.micro_pool
    }

    /// How many vCPUs of `pool` belong to VMs with an explicit node affinity.
    pub fn node_explicit(&self, pool: PoolId) -> u32 {
        self.node_explicit[pool.idx()]
    }

    /// Whether `v` may run on `p`: the same pool and its hard affinity (or `p` is a micro pCPU,
    /// where a lent vCPU runs outside it).
    #[inline(always)]
    pub fn may_run(&self, v: VcpuId, p: PcpuId) -> bool {
        self.trivial
            || (self.vcpu_pool[v.idx()] == self.pcpu_pool[p.idx()]
                && (self.affinity[v.idx()].hard.contains(p) || self.pcpu_pool[p.idx()] == self.micro_pool))
    }

    /// The first pCPU `v` may run on in `pool` (hard affinity ∩ pool, soft affinity there if it
    /// meets it), starting after `from` so that re-homed vCPUs spread.
    pub fn home_in_pool(&self, v: VcpuId, pool: PoolId, from: PcpuId) -> PcpuId {
        let mask = self.affinity[v.idx()].homes(&self.pools[pool.idx()].view.mask);
        mask.cycle(from.idx()).expect("affinity was broken if it had no pCPU in the pool")
    }

    /// `v`'s affinity is now `affinity` (the caller refreshes `update_trivial`).
    pub fn set_affinity(&mut self, v: VcpuId, affinity: Affinity) {
        self.affinity[v.idx()] = affinity;
    }

    /// `cpu_disable_scheduler`'s "Breaking affinity": when `v`'s hard affinity has no pCPU left
    /// in `pool`, it becomes `full()` (every pCPU). Whether it broke.
    pub fn break_affinity_outside(&mut self, v: VcpuId, pool: PoolId, full: impl FnOnce() -> Arc<CpuMask>) -> bool {
        if self.affinity[v.idx()].hard.intersects(&self.pools[pool.idx()].view.mask) {
            return false;
        }
        self.affinity[v.idx()].hard = full();
        true
    }

    /// pCPU `p` leaves its pool's view (its pool is still recorded until `add_pcpu`).
    pub fn remove_pcpu(&mut self, p: PcpuId) {
        let from = self.pcpu_pool[p.idx()];
        self.pools[from.idx()].view.remove(p);
    }

    /// pCPU `p` joins `to`.
    pub fn add_pcpu(&mut self, p: PcpuId, to: PoolId) {
        self.pcpu_pool[p.idx()] = to;
        self.pools[to.idx()].view.add(p);
    }

    /// A new pool (the micro pool, carved out of the default one), its id; the caller refreshes
    /// the facts.
    pub fn add_pool(&mut self, view: PoolView, policy: Box<dyn Policy>, channels: Channels) -> PoolId {
        let id = PoolId(self.pools.len() as u32);
        self.pools.push(Cpupool { view, policy });
        self.channels.push(channels);
        id
    }

    /// `pool` is the micro pool.
    pub fn set_micro_pool(&mut self, pool: PoolId) {
        self.micro_pool = pool;
    }

    /// `pool`'s policy reads the guest's kernel function (`Channels::kernel_fn`).
    pub fn open_kernel_fn_channel(&mut self, pool: PoolId) {
        self.channels[pool.idx()].kernel_fn = true;
    }

    /// Put vCPU `v` in `pool`, keeping the pools' node counts and facts (O(1): the micro-sliced
    /// pool lends vCPUs at every acceleration). `explicit`: `v`'s VM has an explicit node
    /// affinity.
    pub fn set_vcpu_pool(&mut self, v: VcpuId, pool: PoolId, explicit: bool) {
        let from = self.vcpu_pool[v.idx()];
        self.vcpu_pool[v.idx()] = pool;
        if explicit {
            self.node_explicit[from.idx()] -= 1;
            self.node_explicit[pool.idx()] += 1;
            for p in [from, pool] {
                self.pools[p.idx()].view.facts.node_explicit = self.node_explicit[p.idx()] > 0;
            }
        }
    }

    /// `v`, halted, is inserted into its new pool when it wakes.
    pub fn insert_when_woken(&mut self, v: VcpuId) {
        self.insert_on_wake[v.idx()] = true;
    }

    /// Whether `v` waits to be inserted at its wake-up; the mark is taken.
    #[inline(always)]
    pub fn take_insert_on_wake(&mut self, v: VcpuId) -> bool {
        std::mem::take(&mut self.insert_on_wake[v.idx()])
    }

    /// Recompute `trivial` (a host of `npcpus`) and every pool's facts.
    pub fn update_trivial(&mut self, npcpus: usize, vms: &[VmInfo]) {
        let n = npcpus;
        self.trivial = self.pools.len() == 1 && self.affinity.iter().all(|a| a.hard.count() == n && a.soft.count() == n);
        self.refresh_facts(vms);
    }

    /// Recompute every pool's `PoolFacts` from the masks and pools (O(pools x V x P/64)): after
    /// a pool's pCPUs, a soft mask or a vCPU's pool changed, before any policy call.
    pub fn refresh_facts(&mut self, vms: &[VmInfo]) {
        self.node_explicit = vec![0; self.pools.len()];
        for vm in vms.iter().filter(|vm| !vm.node_affinity.auto) {
            for v in &vm.vcpus {
                self.node_explicit[self.vcpu_pool[v.idx()].idx()] += 1;
            }
        }
        for (i, pool) in self.pools.iter_mut().enumerate() {
            pool.view.facts =
                PoolFacts { soft_short: PoolFacts::soft_short_of(&pool.view, &self.affinity), node_explicit: self.node_explicit[i] > 0 };
        }
    }

    /// Check mode: pCPUs in their pools' masks, and the kept facts equal to the facts read
    /// afresh.
    pub fn check(&self, vms: &[VmInfo]) -> Result<(), String> {
        for (p, pool) in self.pcpu_pool.iter().enumerate() {
            if !self.pools[pool.idx()].view.mask.contains(PcpuId(p as u32)) {
                return Err(format!("pCPU {p} is recorded in pool {:?} but not in its mask", self.pools[pool.idx()].view.name));
            }
        }
        for pool in &self.pools {
            let read = PoolFacts::of(&pool.view, &self.vcpu_pool, &self.affinity, vms);
            if pool.view.facts != read {
                return Err(format!("pool {:?}: kept facts {:?}, but the masks and pools say {read:?}", pool.view.name, pool.view.facts));
            }
        }
        Ok(())
    }

    /// Breaks the kept facts of `pool` on purpose, for the test that check mode catches it.
    #[doc(hidden)]
    pub fn corrupt_facts(&mut self, pool: PoolId, facts: PoolFacts) {
        self.pools[pool.idx()].view.facts = facts;
    }

    /// Records `v` in `pool` without keeping anything that depends on it, for the tests that
    /// check mode catches an inconsistent loan.
    #[doc(hidden)]
    pub fn corrupt_vcpu_pool(&mut self, v: VcpuId, pool: PoolId) {
        self.vcpu_pool[v.idx()] = pool;
    }
}
