//! xl's automatic NUMA placement as of Xen 4.4 (the toolstack, run once when a domain is
//! created): tools/libxl/libxl_dom.c `numa_place_domain` and `numa_cmpf`, and
//! tools/libxl/libxl_numa.c `libxl__get_numa_candidate`, at RELEASE-4.4.0 (4.3 and 4.5 identical
//! in what is modelled here).
//!
//! When the domain's config sets no `cpus` (xl_cmdimpl.c turns `numa_placement` off as soon as
//! it parses a `cpus=` list; libxl_create.c defaults it to true), `libxl__build_pre` asks for the
//! best candidate: a set of nodes, with
//! 1. at least as much free memory as the domain needs (`libxl_domain_need_memory`), and
//! 2. at least as many pCPUs of the domain's cpupool as it has vCPUs;
//! 3. sets of `min_nodes` nodes first (`ceil(vcpus / pCPUs per node)` when every node has the
//!    same number of pCPUs, else 1), one more node at a time until some set qualifies;
//! 4. among the sets of that size, in lexicographic order, the one with the fewest vCPUs already
//!    able to run there (`nr_vcpus_on_nodes`: each vCPU of each existing domain counts once on
//!    each node both its vCPU affinity and its domain's node affinity reach), then the most free
//!    memory (`numa_cmpf`; the first of equals stays).
//!
//! The candidate's nodes, minus any outside the pool, become the domain's node affinity
//! (`libxl_domain_set_nodeaffinity` -> `domain_set_node_affinity`). No candidate (not enough
//! memory anywhere, or more than 16 nodes) leaves it automatic. `numa_cmpf`'s comparison is by
//! vCPU *count*, not vCPUs per pCPU (that came later); its free-memory values are `uint32_t` KiB in
//! 4.4 (wrapping above 4 TiB, which no modelled host reaches), u64 here.

use crate::hardware::cpumask::CpuMask;
use crate::hardware::topology::Topology;
use std::cmp::Ordering;
use std::sync::Arc;

/// `libxl__get_numa_candidate`: "if the system has up to 16 nodes it 'only' takes 65535 steps";
/// above that it skips placement.
pub const MAX_NODES: u32 = 16;
/// `LIBXL_HVM_EXTRA_MEMORY` (libxl_internal.h): KiB an HVM domain needs beyond its memory.
pub const HVM_EXTRA_MEMORY_KIB: u64 = 2048;
/// `libxl_domain_need_memory` rounds the total up to a multiple of 2 MiB.
const NEED_MEMORY_ALIGN_KIB: u64 = 2048;

/// `libxl_get_required_shadow_memory` (libxl_utils.c), which xl_cmdimpl.c uses when the config
/// gives no `shadow_memory`: "256 pages (1MB) per vcpu, plus 1 page per MiB of RAM for the P2M
/// map, plus 1 page per MiB of RAM to shadow the resident processes", in KiB.
pub fn shadow_memory_kib(max_mem_kib: u64, vcpus: u32) -> u64 {
    4 * (256 * u64::from(vcpus) + 2 * (max_mem_kib / 1024))
}

/// `libxl_domain_need_memory` for an HVM guest without a stub domain: its memory, its shadow
/// memory and `LIBXL_HVM_EXTRA_MEMORY`, rounded up to 2 MiB.
pub fn need_memory_kib(memory_kib: u64, vcpus: u32) -> u64 {
    let need = memory_kib + shadow_memory_kib(memory_kib, vcpus) + HVM_EXTRA_MEMORY_KIB;
    need.div_ceil(NEED_MEMORY_ALIGN_KIB) * NEED_MEMORY_ALIGN_KIB
}

/// An existing domain as `nr_vcpus_on_nodes` sees it: each vCPU's affinity and the domain's node
/// affinity (`libxl_domain_get_nodeaffinity`).
pub struct Existing<'a> {
    pub vcpu_affinity: &'a [Arc<CpuMask>],
    pub node_affinity: &'a [u32],
}

/// `nr_vcpus_on_nodes`: per node, how many vCPUs of existing domains may run there: a vCPU counts
/// once on each node holding a pCPU that is in its affinity and in `suitable` (the new domain's
/// pool) and whose node is in its domain's node affinity.
/// A node counts a vCPU when the node's pCPUs meet its affinity ∩ `suitable` (word operations);
/// vCPUs that share one mask (`VmSpec::cpus`: a cpulist given once) reach the same nodes, so
/// each run of them is looked at once. Before, every vCPU's mask was walked pCPU by pCPU for
/// every domain placed after its own: O(VMs × vCPUs × pCPUs) at build.
pub fn vcpus_on_nodes(topology: &Topology, suitable: &CpuMask, domains: &[Existing]) -> Vec<u32> {
    let node_masks: Vec<CpuMask> = (0..topology.numa_nodes).map(|n| topology.node_mask(n)).collect();
    let mut on_node = vec![0; node_masks.len()];
    let mut reached: Vec<usize> = Vec::new();
    for d in domains {
        let mut last: Option<&Arc<CpuMask>> = None;
        for affinity in d.vcpu_affinity {
            if !last.is_some_and(|m| Arc::ptr_eq(m, affinity)) {
                reached.clear();
                reached.extend(
                    (0..node_masks.len())
                        .filter(|&n| d.node_affinity.contains(&(n as u32)) && node_masks[n].meets_both(affinity, suitable)),
                );
                last = Some(affinity);
            }
            reached.iter().for_each(|&n| on_node[n] += 1);
        }
    }
    on_node
}

/// One placement candidate (`libxl__numa_candidate`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    pub nodes: Vec<u32>,
    /// pCPUs of `suitable` on those nodes.
    pub nr_cpus: u32,
    /// vCPUs of existing domains able to run there.
    pub nr_vcpus: u32,
    pub free_kib: u64,
}

/// `numa_cmpf` (libxl_dom.c): fewer vCPUs first, then more free memory. `Less` means `c1` is
/// better.
pub fn numa_cmpf(c1: &Candidate, c2: &Candidate) -> Ordering {
    c1.nr_vcpus.cmp(&c2.nr_vcpus).then(c2.free_kib.cmp(&c1.free_kib))
}

/// `libxl__get_numa_candidate(gc, min_free_memkb, min_cpus, 0, 0, suitable_cpumap, numa_cmpf,
/// ...)`: the best set of nodes (see the module doc), or `None` when none qualifies. `free_kib`
/// is each node's free memory (`libxl_get_numainfo`), `vcpus_on_node` from [`vcpus_on_nodes`].
pub fn get_numa_candidate(
    topology: &Topology,
    min_free_kib: u64,
    min_cpus: u32,
    suitable: &CpuMask,
    free_kib: &[u64],
    vcpus_on_node: &[u32],
) -> Option<Candidate> {
    let nr_nodes = topology.numa_nodes;
    if nr_nodes > MAX_NODES {
        return None;
    }
    // Suitable pCPUs per node (nodemap_to_nr_cpus's count, once per node).
    let node_cpus: Vec<u32> = (0..nr_nodes).map(|n| topology.node_mask(n).and(suitable).count() as u32).collect();
    // libxl_cpumap_to_nodemap: the nodes holding a suitable pCPU.
    let suitable_nodes: Vec<u32> = (0..nr_nodes).filter(|&n| node_cpus[n as usize] > 0).collect();
    let nr_suit_nodes = suitable_nodes.len();
    // count_cpus_per_node over the whole host: every node of a Topology has as many pCPUs.
    let cpus_per_node = (topology.npcpus() as u32 / nr_nodes).max(1);
    let mut min_nodes = (min_cpus.div_ceil(cpus_per_node) as usize).min(nr_suit_nodes);
    let max_nodes = nr_suit_nodes;
    min_nodes = min_nodes.max(1);
    let mut best: Option<Candidate> = None;
    while min_nodes <= max_nodes && best.is_none() {
        for comb in combinations(nr_suit_nodes, min_nodes) {
            // comb_get_nodemap: the combination's indexes into the suitable nodes.
            let nodes: Vec<u32> = comb.iter().map(|&i| suitable_nodes[i]).collect();
            let free: u64 = nodes.iter().map(|&n| free_kib[n as usize]).sum();
            if min_free_kib > 0 && free < min_free_kib {
                continue;
            }
            let nr_cpus = nodes.iter().map(|&n| node_cpus[n as usize]).sum();
            if min_cpus > 0 && nr_cpus < min_cpus {
                continue;
            }
            let nr_vcpus = nodes.iter().map(|&n| vcpus_on_node[n as usize]).sum();
            let cand = Candidate { nodes, nr_cpus, nr_vcpus, free_kib: free };
            if best.as_ref().is_none_or(|b| numa_cmpf(&cand, b) == Ordering::Less) {
                best = Some(cand);
            }
        }
        min_nodes += 1;
    }
    best
}

/// The k-combinations of `0..n` in lexicographic order (`comb_init` / `comb_next`).
fn combinations(n: usize, k: usize) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    if k > n || k == 0 {
        return out;
    }
    let mut it: Vec<usize> = (0..k).collect();
    loop {
        out.push(it.clone());
        // "find the leftmost element from where we should start incrementing".
        let Some(i) = (0..k).rev().find(|&i| it[i] != n - k + i) else { return out };
        it[i] += 1;
        for j in i + 1..k {
            it[j] = it[j - 1] + 1;
        }
    }
}

/// `numa_place_domain`: the node affinity xl gives a new domain of `vcpus` vCPUs needing
/// `need_kib` in a pool of pCPUs `pool`, or `None` (no candidate: the affinity stays automatic).
/// The candidate's nodes outside the pool are dropped ("Avoid trying to set the affinity to nodes
/// that might be in the candidate's nodemap but out of our cpupool").
pub fn place_domain(
    topology: &Topology,
    need_kib: u64,
    vcpus: u32,
    pool: &CpuMask,
    free_kib: &[u64],
    vcpus_on_node: &[u32],
) -> Option<Vec<u32>> {
    let cand = get_numa_candidate(topology, need_kib, vcpus, pool, free_kib, vcpus_on_node)?;
    Some(cand.nodes.into_iter().filter(|&n| topology.node_mask(n).intersects(pool)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hardware::cpumask::parse_cpulist;
    use crate::hardware::topology::LlcScope;

    const GIB: u64 = 1024 * 1024;

    fn seed_host() -> Topology {
        Topology::new(32, 2, 4, 1).unwrap().with_modules(2, LlcScope::Node).unwrap()
    }

    #[test]
    fn combinations_come_in_lexicographic_order() {
        let c = combinations(5, 3);
        assert_eq!(c.len(), 10);
        assert_eq!(c[0], vec![0, 1, 2]);
        assert_eq!(c[1], vec![0, 1, 3]);
        assert_eq!(c[9], vec![2, 3, 4]);
        assert_eq!(combinations(4, 2), vec![vec![0, 1], vec![0, 2], vec![0, 3], vec![1, 2], vec![1, 3], vec![2, 3]]);
    }

    #[test]
    fn need_memory_of_the_seeds_vm() {
        // 4 GiB, 16 vCPUs: 4 GiB + 4 x (256 x 16 + 2 x 4096) KiB shadow + 2 MiB, a multiple of 2 MiB.
        assert_eq!(need_memory_kib(4 * GIB, 16), 4 * GIB + 49152 + 2048);
        assert_eq!(need_memory_kib(1000, 1) % 2048, 0);
    }

    /// Seed 001's host (4 nodes of 8 pCPUs) and VM (16 vCPUs, 4 GiB): two nodes are needed; with
    /// no other domain the node pair with the most free memory wins, so nodes 0 and 2 when they
    /// have the most free (section III-G), and the first pair, 0 and 1, when all are equal.
    #[test]
    fn xl_picks_the_fewest_nodes_then_fewest_vcpus_then_most_free_memory() {
        let t = seed_host();
        let all = CpuMask::full(32);
        let need = need_memory_kib(4 * GIB, 16);
        let none = [0; 4];
        let pick = |free: &[u64], on: &[u32]| get_numa_candidate(&t, need, 16, &all, free, on).map(|c| c.nodes);
        assert_eq!(pick(&[80 * GIB; 4], &none), Some(vec![0, 1]));
        assert_eq!(pick(&[80 * GIB, 70 * GIB, 79 * GIB, 70 * GIB], &none), Some(vec![0, 2]));
        // Fewer vCPUs beats more memory: a 4-vCPU domain on node 0 pushes the choice to 1 and 2.
        assert_eq!(pick(&[80 * GIB, 70 * GIB, 79 * GIB, 70 * GIB], &[4, 0, 0, 0]), Some(vec![1, 2]));
        // Too little memory on every pair but one.
        assert_eq!(pick(&[GIB, GIB, 3 * GIB, 3 * GIB], &none), Some(vec![2, 3]));
        // Not enough anywhere in pairs: three nodes.
        assert_eq!(pick(&[2 * GIB; 4], &none), Some(vec![0, 1, 2]));
        // Nowhere at all.
        assert_eq!(pick(&[GIB; 4], &none), None);
        // A 4-vCPU domain fits one node: the one with the most free memory.
        let small = get_numa_candidate(&t, need_memory_kib(GIB, 4), 4, &all, &[GIB * 8, GIB * 9, GIB * 9, GIB], &none);
        assert_eq!(small.map(|c| (c.nodes, c.nr_cpus)), Some((vec![1], 8)));
    }

    #[test]
    fn more_than_16_nodes_skips_placement() {
        let t = Topology::new(17, 1, 17, 1).unwrap();
        let all = CpuMask::full(17);
        assert_eq!(get_numa_candidate(&t, GIB, 1, &all, &[80 * GIB; 17], &[0; 17]), None);
        let t = Topology::new(16, 1, 16, 1).unwrap();
        assert_eq!(get_numa_candidate(&t, GIB, 1, &CpuMask::full(16), &[80 * GIB; 16], &[0; 16]).map(|c| c.nodes), Some(vec![0]));
    }

    #[test]
    fn the_pool_limits_nodes_and_cpus() {
        let t = seed_host();
        // A pool of pCPUs 8-27: nodes 1, 2 and 3 are suitable, node 3 with 4 pCPUs only.
        let pool = parse_cpulist("8-27", 32).unwrap();
        let free = [80 * GIB; 4];
        let c = get_numa_candidate(&t, GIB, 12, &pool, &free, &[0; 4]).unwrap();
        assert_eq!((c.nodes.clone(), c.nr_cpus), (vec![1, 2], 16));
        assert_eq!(place_domain(&t, GIB, 12, &pool, &free, &[0; 4]), Some(vec![1, 2]));
    }

    #[test]
    fn existing_vcpus_count_once_per_node_their_affinities_reach() {
        let t = seed_host();
        let all = CpuMask::full(32);
        let pinned = parse_cpulist("16-31", 32).unwrap();
        let (all_shared, pinned_shared) = (Arc::new(all.clone()), Arc::new(pinned.clone()));
        let everywhere = vec![all_shared; 2];
        let masks = vec![pinned_shared; 3];
        let domains = [
            // Two vCPUs anywhere, node affinity {0, 2}: one each on nodes 0 and 2.
            Existing { vcpu_affinity: &everywhere, node_affinity: &[0, 2] },
            // Three vCPUs pinned to 16-31 with node affinity {0, 2}: node 2 only (the conflict).
            Existing { vcpu_affinity: &masks, node_affinity: &[0, 2] },
        ];
        assert_eq!(vcpus_on_nodes(&t, &all, &domains), vec![2, 0, 5, 0]);
        // Masks of their own, equal or not, and a shared one after them: each vCPU counts on
        // the nodes its own mask reaches (0-3 on node 0, 24-27 on node 3), within `suitable`.
        let (low, high) = (Arc::new(parse_cpulist("0-3", 32).unwrap()), Arc::new(parse_cpulist("24-27", 32).unwrap()));
        let own = [Arc::clone(&low), Arc::new((*low).clone()), Arc::clone(&high), Arc::clone(&low), Arc::clone(&low)];
        let mixed = [Existing { vcpu_affinity: &own, node_affinity: &[0, 1, 2, 3] }];
        assert_eq!(vcpus_on_nodes(&t, &all, &mixed), vec![4, 0, 0, 1]);
        assert_eq!(vcpus_on_nodes(&t, &parse_cpulist("0-7", 32).unwrap(), &mixed), vec![4, 0, 0, 0]);
    }
}
