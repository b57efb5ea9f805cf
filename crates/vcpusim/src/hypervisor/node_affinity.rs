//! A domain's NUMA node affinity, as Xen 4.3 and 4.4 keep it (xen/common/domain.c at
//! RELEASE-4.4.0): `d->node_affinity` (a node mask), `d->auto_node_affinity` (the mask is computed
//! from the vCPUs' affinity rather than set by the toolstack), and the scheduler's copy as pCPUs
//! (sched_credit.c `csched_set_node_affinity`: `sdom->node_affinity_cpumask`, the union of
//! `node_to_cpumask` over the nodes).
//!
//! ```text
//!   domain_set_node_affinity(d, nodes)   nodes = every node -> auto ("reset node affinity")
//!                                        otherwise          -> explicit, auto off
//!   domain_update_node_affinity(d)       auto: nodes = those meeting ∪ vCPU affinity ∩ pool
//!                                        explicit: left alone
//! ```
//!
//! Credit 4.4 reads it in its node-affinity balance step (`credit/mod.rs`,
//! `__vcpu_has_node_affinity`): an automatic affinity, or one spanning every pCPU, makes the step
//! be skipped. Who sets it: xl's automatic NUMA placement (`hypervisor/xl_numa.rs`), an explicit
//! node list, or nobody (automatic). Xen 4.5 replaced the scheduler's use of it by per-vCPU soft
//! affinity; the domain mask stayed for memory allocation.

use crate::hardware::cpumask::CpuMask;
use crate::hardware::topology::Topology;
use std::borrow::Borrow;

/// One domain's node affinity.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeAffinity {
    /// `d->auto_node_affinity`: derived from the vCPUs' affinity (the scheduler ignores it).
    pub auto: bool,
    /// `d->node_affinity`, in increasing order.
    pub nodes: Vec<u32>,
    /// `sdom->node_affinity_cpumask`: every pCPU of `nodes`.
    pub cpus: CpuMask,
}

impl Default for NodeAffinity {
    /// Automatic and not computed yet (policy test hosts): the scheduler's node step is skipped.
    fn default() -> Self {
        NodeAffinity { auto: true, nodes: Vec::new(), cpus: CpuMask::empty() }
    }
}

impl NodeAffinity {
    /// `domain_update_node_affinity` for an automatic affinity: the nodes holding a pCPU of some
    /// vCPU's hard affinity ∩ the domain's pool (`cpupool_online_cpumask`).
    pub fn automatic<'a, M: Borrow<CpuMask> + 'a>(topology: &Topology, hard: impl IntoIterator<Item = &'a M>, pool: &CpuMask) -> Self {
        // (∪ hard) ∩ pool, word by word; once the union covers the pool no later mask can add
        // to the answer (a wide VM of full masks stops at its first vCPU: before, each vCPU's
        // mask was walked pCPU by pCPU, O(V x P) at build).
        let mut union = CpuMask::empty();
        for mask in hard {
            union.or_with(mask.borrow());
            if pool.is_subset(&union) {
                break;
            }
        }
        union.and_with(pool);
        let nodes = (0..topology.numa_nodes).filter(|&n| topology.node_mask(n).intersects(&union)).collect();
        Self::of_nodes(topology, true, nodes)
    }

    /// `domain_set_node_affinity(d, nodes)` then `domain_update_node_affinity`: explicit, unless
    /// `nodes` is every node ("Being/becoming explicitly affine to all nodes is not particularly
    /// useful. Let's take it as the `reset node affinity` command."), which makes it automatic.
    /// `nodes` must be non-empty (Xen returns -EINVAL; the loader refuses it).
    pub fn set<'a, M: Borrow<CpuMask> + 'a>(
        topology: &Topology,
        nodes: &[u32],
        hard: impl IntoIterator<Item = &'a M>,
        pool: &CpuMask,
    ) -> Self {
        let mut nodes: Vec<u32> = nodes.to_vec();
        nodes.sort_unstable();
        nodes.dedup();
        if nodes.len() as u32 >= topology.numa_nodes {
            return Self::automatic(topology, hard, pool);
        }
        Self::of_nodes(topology, false, nodes)
    }

    fn of_nodes(topology: &Topology, auto: bool, nodes: Vec<u32>) -> Self {
        let mut cpus = CpuMask::empty();
        for &n in &nodes {
            for p in topology.node_mask(n).iter() {
                cpus.insert(p);
            }
        }
        NodeAffinity { auto, nodes, cpus }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hardware::cpumask::parse_cpulist;
    use crate::hardware::topology::LlcScope;

    fn seed_host() -> Topology {
        Topology::new(32, 2, 4, 1).unwrap().with_modules(2, LlcScope::Node).unwrap()
    }

    #[test]
    fn automatic_follows_the_vcpu_affinity_within_the_pool() {
        let t = seed_host();
        let all = CpuMask::full(32);
        let pinned = parse_cpulist("16-31", 32).unwrap();
        let a = NodeAffinity::automatic(&t, [&pinned, &pinned], &all);
        assert_eq!((a.auto, a.nodes.clone(), a.cpus.to_cpulist()), (true, vec![2, 3], "16-31".to_string()));
        let pool = parse_cpulist("0-19", 32).unwrap();
        assert_eq!(NodeAffinity::automatic(&t, [&all], &pool).nodes, vec![0, 1, 2]);
        // The union of every vCPU's mask: nodes 0 and 3 from two vCPUs pinned apart; a full
        // mask first covers the pool, and a later pinned one changes nothing.
        let (low, high) = (parse_cpulist("0-3", 32).unwrap(), parse_cpulist("24-27", 32).unwrap());
        assert_eq!(NodeAffinity::automatic(&t, [&low, &high], &all).nodes, vec![0, 3]);
        assert_eq!(NodeAffinity::automatic(&t, [&low, &high, &low], &pool).nodes, vec![0]);
        assert_eq!(NodeAffinity::automatic(&t, [&all, &pinned], &pool).cpus.to_cpulist(), "0-23");
    }

    #[test]
    fn set_is_explicit_unless_every_node_which_resets_it() {
        let t = seed_host();
        let all = CpuMask::full(32);
        let pinned = parse_cpulist("16-31", 32).unwrap();
        let a = NodeAffinity::set(&t, &[2, 0], [&pinned], &all);
        assert_eq!((a.auto, a.nodes.clone(), a.cpus.to_cpulist()), (false, vec![0, 2], "0-7,16-23".to_string()));
        // The seed's tool (section IV-A): all nodes -> automatic, then derived from the pinning.
        let reset = NodeAffinity::set(&t, &[0, 1, 2, 3], [&pinned], &all);
        assert_eq!((reset.auto, reset.nodes), (true, vec![2, 3]));
    }
}
