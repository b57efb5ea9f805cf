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
//! A policy instance sees its pool through [`HostView`](super::policy::HostView): `pcpu_ids()`
//! lists the pool's pCPUs, `may_run(v, p)` and `prefers(v, p)` answer affinity questions. The
//! engine (sim/pools.rs) keeps the tables here and moves pCPUs and vCPUs between pools.

use super::policy::{Policy, VmInfo};
use crate::hardware::cpumask::CpuMask;
use crate::ids::{PcpuId, PoolId};
use std::sync::Arc;

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

/// One pool: its view and its scheduler instance (Xen `struct scheduler` inside `struct cpupool`).
pub struct Cpupool {
    pub view: PoolView,
    pub policy: Box<dyn Policy>,
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
/// soft mask change, `Sim::refresh_pool_facts`; the node count moved where a vCPU changes pool,
/// `Sim::set_vcpu_pool`), and check mode holds them to `PoolFacts::of`. In the view, a policy
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
