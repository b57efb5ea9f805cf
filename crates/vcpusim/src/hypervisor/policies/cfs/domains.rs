//! Scheduling domains as Linux 3.2 builds them on x86 (kernel/sched.c `default_topology`,
//! `build_sched_domains`, `build_sched_groups`, `sd_degenerate` / `sd_parent_degenerate`;
//! include/linux/topology.h `SD_SIBLING_INIT`, `SD_MC_INIT`, `SD_CPU_INIT`;
//! arch/x86/include/asm/topology.h `SD_NODE_INIT` for x86_64).
//!
//! Levels, bottom up, each spanning the pool's pCPUs that share:
//! - `SIBLING` (`CONFIG_SCHED_SMT`): a core (`cpu_smt_mask`);
//! - `MC` (`CONFIG_SCHED_MC`): a last-level cache (`cpu_coregroup_mask`), here a socket within a
//!   NUMA node (a node when nodes are smaller than sockets, as on AMD's two-die packages);
//! - `CPU`: a NUMA node (`cpu_cpu_mask` = `cpumask_of_node`);
//! - `NODE` (`CONFIG_NUMA`): every node (`SD_NODES_PER_DOMAIN` = 16 covers any host here).
//!
//! A level whose span is one pCPU or equals the level below is degenerate and dropped, as
//! `cpu_attach_domain` drops it (for these levels the parent's flags are then a subset of the
//! child's). A level's groups are the spans of the level below (single pCPUs at the bottom), in
//! increasing order of first pCPU and walked starting from the group holding the pCPU itself
//! (`sd->groups`, a circular list). A pCPU's power is `SCHED_POWER_SCALE` (1024), or
//! `smt_gain / threads` (1178 / 2 = 589 with two threads) under a `SIBLING` level
//! (`update_cpu_power`; no RT load, so `scale_rt_power` is 1024). With cpupools, each pool is a
//! partition (exclusive cpusets): its domains span only its own pCPUs, rebuilt when a pCPU
//! joins or leaves (`partition_sched_domains`).
//!
//! ```text
//!   pCPU 5, level MC:  Domain { span ──┐  span_mask ──┐  groups: GroupRing { all ──┐, own: 5 } }
//!   pCPU 6, level MC:  Domain { span ──┤  span_mask ──┤  groups: GroupRing { all ──┤, own: 6 } }
//!                            Arc<[usize]>   Arc<CpuMask>     Arc<[SchedGroup]>  (one per span)
//! ```
//!
//! As in Linux (`build_sched_groups` links one set of `sched_group`s per span; each CPU's
//! `sd->groups` points at its own), the span, its mask and the group list are made once per span
//! and shared; a pCPU keeps only where it enters the list. Memory is O(P) per level and a build
//! O(P log P).
//!
//! `policies/eevdf` builds its Linux 6.6 domains here too: 6.6's x86 topology levels (SMT, MC,
//! DIE, NUMA) have the same spans and groups; it sets its own `sd_init` parameters.

use crate::hardware::cpumask::CpuMask;
use crate::hardware::topology::Topology;
use crate::ids::PcpuId;
use std::sync::Arc;

/// `SCHED_POWER_SCALE` / `SCHED_LOAD_SCALE`: the power of one pCPU and the weight of a nice-0
/// task.
pub(crate) const POWER_SCALE: u64 = 1024;
/// `SD_SIBLING_INIT.smt_gain`: two hardware threads are worth 1.15 pCPUs (1178 / 1024).
const SMT_GAIN: u64 = 1178;

/// One level's `struct sched_domain` parameters (3.2 initialisers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SdParams {
    pub(crate) name: &'static str,
    /// `min_interval` / `max_interval`, in ms: the range of `balance_interval`.
    pub(crate) min_interval: u64,
    pub(crate) max_interval: u64,
    /// A busy pCPU balances `busy_factor` times less often.
    pub(crate) busy_factor: u64,
    /// `imbalance_pct`: how far (percent) the busiest group must exceed this one.
    pub(crate) imbalance_pct: u64,
    /// `cache_nice_tries`: failed balances after which cache-hot tasks may move.
    pub(crate) cache_nice_tries: u32,
    /// `cpu_load[]` indexes: busy, idle, newly idle, wake and fork/exec balancing.
    pub(crate) busy_idx: usize,
    pub(crate) idle_idx: usize,
    pub(crate) newidle_idx: usize,
    pub(crate) wake_idx: usize,
    pub(crate) forkexec_idx: usize,
    /// `SD_SHARE_CPUPOWER`, `SD_SHARE_PKG_RESOURCES`, `SD_PREFER_SIBLING` flags (the others are
    /// set on every level here: `SD_LOAD_BALANCE`, `SD_BALANCE_NEWIDLE`, `SD_BALANCE_FORK`,
    /// `SD_BALANCE_EXEC`, `SD_WAKE_AFFINE`; `SD_BALANCE_WAKE` on none).
    pub(crate) share_cpupower: bool,
    pub(crate) share_pkg_resources: bool,
    pub(crate) prefer_sibling: bool,
}

/// `SD_SIBLING_INIT` (include/linux/topology.h, 3.2).
pub(crate) const SD_SIBLING: SdParams = SdParams {
    name: "SIBLING",
    min_interval: 1,
    max_interval: 2,
    busy_factor: 64,
    imbalance_pct: 110,
    cache_nice_tries: 0,
    busy_idx: 0,
    idle_idx: 0,
    newidle_idx: 0,
    wake_idx: 0,
    forkexec_idx: 0,
    share_cpupower: true,
    share_pkg_resources: true,
    prefer_sibling: false,
};
/// `SD_MC_INIT` (include/linux/topology.h, 3.2; `sd_balance_for_mc_power()` gives
/// `SD_PREFER_SIBLING` with power savings off, the default).
pub(crate) const SD_MC: SdParams = SdParams {
    name: "MC",
    min_interval: 1,
    max_interval: 4,
    busy_factor: 64,
    imbalance_pct: 125,
    cache_nice_tries: 1,
    busy_idx: 2,
    idle_idx: 0,
    newidle_idx: 0,
    wake_idx: 0,
    forkexec_idx: 0,
    share_cpupower: false,
    share_pkg_resources: true,
    prefer_sibling: true,
};
/// `SD_CPU_INIT` (include/linux/topology.h, 3.2; `sd_balance_for_package_power()` gives
/// `SD_PREFER_SIBLING`).
pub(crate) const SD_CPU: SdParams = SdParams {
    name: "CPU",
    min_interval: 1,
    max_interval: 4,
    busy_factor: 64,
    imbalance_pct: 125,
    cache_nice_tries: 1,
    busy_idx: 2,
    idle_idx: 1,
    newidle_idx: 0,
    wake_idx: 0,
    forkexec_idx: 0,
    share_cpupower: false,
    share_pkg_resources: false,
    prefer_sibling: true,
};
/// `SD_NODE_INIT` for x86_64 (arch/x86/include/asm/topology.h, 3.2: `SD_CACHE_NICE_TRIES` 2,
/// `SD_IDLE_IDX` 2).
pub(crate) const SD_NODE: SdParams = SdParams {
    name: "NODE",
    min_interval: 8,
    max_interval: 32,
    busy_factor: 32,
    imbalance_pct: 125,
    cache_nice_tries: 2,
    busy_idx: 3,
    idle_idx: 2,
    newidle_idx: 0,
    wake_idx: 0,
    forkexec_idx: 0,
    share_cpupower: false,
    share_pkg_resources: false,
    prefer_sibling: false,
};

/// `DIV_ROUND_CLOSEST(power, SCHED_POWER_SCALE)`, with `fix_small_capacity` for hardware
/// threads (their power is all there: no RT load).
pub(crate) fn group_capacity(sd: &SdParams, power: u64) -> u64 {
    let c = (power + POWER_SCALE / 2) / POWER_SCALE;
    if c == 0 && sd.share_cpupower {
        1
    } else {
        c
    }
}

/// A `struct sched_group`: its pCPUs (increasing) and its power. Its pCPU list is the child
/// level's span, shared with it (`Arc`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SchedGroup {
    pub(crate) cpus: Arc<[usize]>,
    pub(crate) power: u64,
}

/// A level's groups as one pCPU walks them: starting with the group holding the pCPU, then in
/// increasing order, wrapping (`sd->groups`, a circular list whose entry point is the pCPU's own
/// group). The list itself is shared by every pCPU of the span, as Linux shares its
/// `sched_group`s (`build_sched_groups`); each pCPU keeps only where it enters it. (Each pCPU
/// held its own rotated copy before: O(P) per pCPU and level, 4.75 GB for one VM on 8,192 pCPUs.)
#[derive(Clone, Debug)]
pub(crate) struct GroupRing {
    /// In increasing order of first pCPU.
    all: Arc<[SchedGroup]>,
    /// The position in `all` of the pCPU's own group.
    own: usize,
}

/// The groups of a `GroupRing` as a pCPU walks them.
pub(crate) type Walk<'a> = std::iter::Chain<std::slice::Iter<'a, SchedGroup>, std::slice::Iter<'a, SchedGroup>>;

impl GroupRing {
    /// The pCPU's own group.
    pub(crate) fn first(&self) -> Option<&SchedGroup> {
        self.all.get(self.own)
    }

    /// The groups from the pCPU's own, wrapping.
    pub(crate) fn iter(&self) -> Walk<'_> {
        self.all[self.own..].iter().chain(self.all[..self.own].iter())
    }

    /// The shared list itself, in increasing order of first pCPU (the same for every pCPU of
    /// the span).
    pub(crate) fn in_order(&self) -> &[SchedGroup] {
        &self.all
    }

    /// The position in `in_order` of the `i`-th group walked (`self[i]`).
    pub(crate) fn position(&self, i: usize) -> usize {
        let n = self.all.len();
        assert!(i < n, "group {i} of a domain of {n} groups");
        let j = self.own + i;
        if j < n {
            j
        } else {
            j - n
        }
    }
}

impl std::ops::Index<usize> for GroupRing {
    type Output = SchedGroup;

    /// The `i`-th group walked from the pCPU's own (0: its own).
    fn index(&self, i: usize) -> &SchedGroup {
        &self.all[self.position(i)]
    }
}

impl<'a> IntoIterator for &'a GroupRing {
    type Item = &'a SchedGroup;
    type IntoIter = Walk<'a>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// One pCPU's view of one level (`struct sched_domain`). The span, its mask and the group list
/// are shared by the span's pCPUs (`Arc`).
#[derive(Clone, Debug)]
pub(crate) struct Domain {
    pub(crate) sd: SdParams,
    /// `sched_domain_span`, increasing.
    pub(crate) span: Arc<[usize]>,
    /// The same as a mask (`load_balance` starts its `cpus` from it).
    pub(crate) span_mask: Arc<CpuMask>,
    /// The groups, starting with the one holding this pCPU, then in increasing order (wrapping).
    pub(crate) groups: GroupRing,
    /// `sd->child->flags & SD_PREFER_SIBLING` (after degenerate levels are dropped).
    pub(crate) child_prefers_sibling: bool,
}

impl Domain {
    pub(crate) fn spans(&self, p: usize) -> bool {
        self.span.binary_search(&p).is_ok()
    }
}

/// The per-pCPU balancing state of one level (`sd->last_balance`, `balance_interval`,
/// `nr_balance_failed`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct SdState {
    /// In jiffies.
    pub(crate) last_balance: u64,
    /// In ms.
    pub(crate) balance_interval: u64,
    pub(crate) nr_balance_failed: u32,
}

/// The power of a pCPU whose sibling group (a core's threads, or a CMT module's cores: Linux's
/// `set_cpu_sibling_map` links AMD compute-unit peers as thread siblings, topology.rs) has
/// `threads` pCPUs in the pool: 1024, or `smt_gain / threads` when it has several.
fn power_of_threads(threads: u64) -> u64 {
    if threads > 1 {
        (POWER_SCALE * (SMT_GAIN / threads)) >> 10
    } else {
        POWER_SCALE
    }
}

/// The four candidate levels, bottom up, and what pCPUs share to be in one span of each.
const LEVELS: [SdParams; 4] = [SD_SIBLING, SD_MC, SD_CPU, SD_NODE];

/// Which span of `LEVELS[level]` pCPU `q` is in: `cpu_smt_mask` (the sibling group: core threads
/// or a CMT module), `cpu_coregroup_mask` (a socket within a node), `cpumask_of_node`, all.
fn span_key(topo: &Topology, level: usize, q: usize) -> (u32, u32) {
    let place = topo.place(PcpuId(q as u32));
    match level {
        0 => (place.module, 0),
        1 => (place.socket, place.node),
        2 => (place.node, 0),
        _ => (0, 0),
    }
}

/// Build every pool pCPU's domains (bottom up). `pool` is the pool's pCPUs, increasing.
///
/// Each level's spans are found in one pass over the pool (pCPUs grouped by `span_key`), and each
/// span's mask and group list are made once and shared by its pCPUs, so a build is O(P log P)
/// time and O(P) memory per level (each pCPU filtering the pool for each of its spans, and
/// holding its own copies, made it O(P^2) in both: on 16,384 pCPUs it passed a 6 GB limit).
pub(crate) fn build(topo: &Topology, pool: &[usize], npcpus: usize) -> Vec<Vec<Domain>> {
    use std::collections::BTreeMap;
    /// A span (increasing) and its mask.
    type Span = (Arc<[usize]>, Arc<CpuMask>);
    // Each level's spans by key, in pool order (increasing), with their masks.
    let spans: Vec<BTreeMap<(u32, u32), Span>> = (0..LEVELS.len())
        .map(|level| {
            let mut by_key: BTreeMap<(u32, u32), Vec<usize>> = BTreeMap::new();
            for &q in pool {
                by_key.entry(span_key(topo, level, q)).or_default().push(q);
            }
            by_key
                .into_iter()
                .map(|(k, cpus)| {
                    let mask = CpuMask::from_pcpus(cpus.iter().map(|&q| PcpuId(q as u32)));
                    (k, (Arc::from(cpus), Arc::new(mask)))
                })
                .collect()
        })
        .collect();
    let span_of = |level: usize, q: usize| &spans[level][&span_key(topo, level, q)];
    // update_cpu_power: by the size of each pCPU's sibling group in the pool.
    let mut power = vec![0u64; npcpus];
    for &c in pool {
        power[c] = power_of_threads(span_of(0, c).0.len() as u64);
    }
    // The group lists, by (level, span's first pCPU, child level kept below it), each with the
    // position of every pCPU's group in it.
    type Groups = (Arc<[SchedGroup]>, BTreeMap<usize, usize>);
    let mut lists: BTreeMap<(usize, usize, Option<usize>), Groups> = BTreeMap::new();
    let mut out = vec![Vec::new(); npcpus];
    for &p in pool {
        // Keep a level only if it spans more than one pCPU and more than the level kept below.
        let mut kept: Vec<usize> = Vec::new();
        for level in 0..LEVELS.len() {
            let len = span_of(level, p).0.len();
            let below = kept.last().map_or(1, |&l| span_of(l, p).0.len());
            if len > 1 && len > below {
                kept.push(level);
            }
        }
        let mut doms = Vec::with_capacity(kept.len());
        for (i, &level) in kept.iter().enumerate() {
            let (span, span_mask) = span_of(level, p);
            let child = i.checked_sub(1).map(|c| kept[c]);
            let (all, own) = lists.entry((level, span[0], child)).or_insert_with(|| {
                // Groups: the spans of the kept level below, or single pCPUs at the bottom, in
                // increasing order of first pCPU.
                let mut groups: Vec<SchedGroup> = Vec::new();
                let mut own = BTreeMap::new();
                for &q in span.iter() {
                    if own.contains_key(&q) {
                        continue;
                    }
                    let cpus: Arc<[usize]> = match child {
                        None => Arc::from([q].as_slice()),
                        Some(c) => span_of(c, q).0.clone(),
                    };
                    for &c in cpus.iter() {
                        own.insert(c, groups.len());
                    }
                    let power = cpus.iter().map(|&c| power[c]).sum();
                    groups.push(SchedGroup { cpus, power });
                }
                (Arc::from(groups), own)
            });
            let groups = GroupRing { all: all.clone(), own: own[&p] };
            let child_prefers_sibling = child.is_some_and(|c| LEVELS[c].prefer_sibling);
            doms.push(Domain { sd: LEVELS[level], span: span.clone(), span_mask: span_mask.clone(), groups, child_prefers_sibling });
        }
        out[p] = doms;
    }
    out
}

/// The initial per-level state (`.balance_interval = 1`, `.last_balance = jiffies`).
pub(crate) fn initial_state(levels: usize, jiffies: u64) -> Vec<SdState> {
    vec![SdState { last_balance: jiffies, balance_interval: 1, nr_balance_failed: 0 }; levels]
}

/// Hosts the domain tests build on (flat, SMT, several nodes, three threads a core, CMT modules
/// with node LLCs, and one of three mask words), each with three pools: the whole host, one that
/// splits modules and sockets unevenly (the levels kept differ between pCPUs) and its upper two
/// thirds.
#[cfg(test)]
pub(crate) fn test_hosts_and_pools() -> Vec<(Topology, Vec<Vec<usize>>)> {
    use crate::hardware::topology::LlcScope;
    let hosts = [
        Topology::flat(6),
        Topology::new(8, 2, 2, 1).unwrap(),
        Topology::new(8, 2, 1, 1).unwrap(),
        Topology::new(16, 2, 2, 2).unwrap(),
        Topology::new(12, 1, 1, 2).unwrap(),
        Topology::new(24, 4, 2, 3).unwrap(),
        Topology::new(32, 2, 4, 1).unwrap().with_modules(2, LlcScope::Node).unwrap(),
        Topology::new(130, 2, 2, 1).unwrap(),
    ];
    hosts
        .into_iter()
        .map(|topo| {
            let n = topo.npcpus();
            let whole: Vec<usize> = (0..n).collect();
            let odd: Vec<usize> = (0..n).filter(|q| q % 3 != 1).collect();
            let upper: Vec<usize> = (n / 3..n).collect();
            (topo, vec![whole, odd, upper])
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(d: &[Domain]) -> Vec<&'static str> {
        d.iter().map(|d| d.sd.name).collect()
    }

    #[test]
    fn a_flat_host_has_one_mc_level_of_single_pcpu_groups_starting_with_its_own() {
        let topo = Topology::flat(4);
        let pool: Vec<usize> = (0..4).collect();
        let d = build(&topo, &pool, 4);
        assert_eq!(names(&d[2]), ["MC"]);
        let firsts: Vec<usize> = d[2][0].groups.iter().map(|g| g.cpus[0]).collect();
        assert_eq!(firsts, [2, 3, 0, 1]);
        assert!(d[2][0].groups.iter().all(|g| g.power == 1024));
    }

    #[test]
    fn the_seed_host_has_mc_per_socket_under_node_with_node_groups() {
        // Seed 000 section 4: two quad-core X5550 sockets, two NUMA nodes, no hyperthreading.
        let topo = Topology::new(8, 2, 2, 1).unwrap();
        let pool: Vec<usize> = (0..8).collect();
        let d = build(&topo, &pool, 8);
        assert_eq!(names(&d[5]), ["MC", "NODE"]);
        assert_eq!(*d[5][0].span, [4, 5, 6, 7]);
        let node_groups: Vec<Vec<usize>> = d[5][1].groups.iter().map(|g| g.cpus.to_vec()).collect();
        assert_eq!(node_groups, [vec![4, 5, 6, 7], vec![0, 1, 2, 3]]);
        assert_eq!(d[5][1].groups[0].power, 4096);
        assert!(d[5][1].child_prefers_sibling);
        // Two sockets on one node: CPU spans both, with socket groups.
        let one_node = Topology::new(8, 2, 1, 1).unwrap();
        assert_eq!(names(&build(&one_node, &pool, 8)[0]), ["MC", "CPU"]);
    }

    #[test]
    fn smt_threads_share_a_core_power_of_1178() {
        let topo = Topology::new(8, 1, 1, 2).unwrap();
        let pool: Vec<usize> = (0..8).collect();
        let d = build(&topo, &pool, 8);
        assert_eq!(names(&d[3]), ["SIBLING", "MC"]);
        assert_eq!(d[3][0].groups[0].power, 589);
        assert_eq!(*d[3][1].groups[0].cpus, [2, 3]);
        assert_eq!(d[3][1].groups[0].power, 1178);
        // A pool of one pCPU has no domains.
        assert!(build(&topo, &[5], 8)[5].is_empty());
    }

    /// One pCPU's domains as plain data: per level its name, span, groups as walked (pCPUs and
    /// power) and `child_prefers_sibling`.
    type Plain = Vec<(&'static str, Vec<usize>, Vec<(Vec<usize>, u64)>, bool)>;

    fn plain(d: &[Domain]) -> Plain {
        d.iter()
            .map(|d| (d.sd.name, d.span.to_vec(), d.groups.iter().map(|g| (g.cpus.to_vec(), g.power)).collect(), d.child_prefers_sibling))
            .collect()
    }

    /// The plain construction, the reference `build` is held to: every pCPU
    /// filters the pool for each level's span, keeps the levels that grow, and makes its own
    /// groups (the child spans seen from each pCPU of the span, or single pCPUs), rotated to
    /// start with its own.
    fn reference(topo: &Topology, pool: &[usize], npcpus: usize) -> Vec<Plain> {
        let place = |q: usize| topo.place(PcpuId(q as u32));
        let same = |level: &str, a: usize, b: usize| match level {
            "SIBLING" => place(a).module == place(b).module,
            "MC" => place(a).socket == place(b).socket && place(a).node == place(b).node,
            "CPU" => place(a).node == place(b).node,
            _ => true,
        };
        let span_of = |level: &str, p: usize| -> Vec<usize> { pool.iter().copied().filter(|&q| same(level, p, q)).collect() };
        // update_cpu_power: by the size of the pCPU's sibling group in the pool.
        let cpu_power = |p: usize| power_of_threads(span_of("SIBLING", p).len() as u64);
        let mut out = vec![Vec::new(); npcpus];
        for &p in pool {
            let mut kept: Vec<(SdParams, Vec<usize>)> = Vec::new();
            for sd in LEVELS {
                let span = span_of(sd.name, p);
                if span.len() > 1 && span.len() > kept.last().map_or(1, |(_, s)| s.len()) {
                    kept.push((sd, span));
                }
            }
            for (i, (sd, span)) in kept.iter().enumerate() {
                let mut groups: Vec<(Vec<usize>, u64)> = Vec::new();
                for &q in span {
                    if groups.iter().any(|(cpus, _)| cpus.contains(&q)) {
                        continue;
                    }
                    let cpus = if i == 0 { vec![q] } else { span_of(kept[i - 1].0.name, q) };
                    let power = cpus.iter().map(|&c| cpu_power(c)).sum();
                    groups.push((cpus, power));
                }
                let own = groups.iter().position(|(cpus, _)| cpus.contains(&p)).unwrap();
                groups.rotate_left(own);
                out[p].push((sd.name, span.clone(), groups, i > 0 && kept[i - 1].0.prefer_sibling));
            }
        }
        out
    }

    #[test]
    fn shared_spans_and_groups_walk_as_each_pcpu_building_its_own() {
        for (topo, pools) in test_hosts_and_pools() {
            let n = topo.npcpus();
            for pool in &pools {
                let built: Vec<Plain> = build(&topo, pool, n).iter().map(|d| plain(d)).collect();
                assert_eq!(built, reference(&topo, pool, n), "{n} pCPUs, pool {pool:?}");
            }
        }
    }

    #[test]
    fn a_group_ring_indexes_from_the_pcpus_own_group_and_wraps() {
        let d = build(&Topology::flat(4), &[0, 1, 2, 3], 4);
        let ring = &d[1][0].groups;
        let walked: Vec<usize> = (0..4).map(|i| ring[i].cpus[0]).collect();
        assert_eq!(walked, [1, 2, 3, 0]);
        assert_eq!(ring.first().map(|g| g.cpus[0]), Some(1));
        assert_eq!((0..4).map(|i| ring.position(i)).collect::<Vec<_>>(), [1, 2, 3, 0]);
        assert_eq!(ring.in_order().iter().map(|g| g.cpus[0]).collect::<Vec<_>>(), [0, 1, 2, 3]);
        assert_eq!((&d[3][0].groups).into_iter().map(|g| g.cpus[0]).collect::<Vec<_>>(), [3, 0, 1, 2]);
        // Every pCPU of the span shares one group list and one span.
        assert!(Arc::ptr_eq(&d[0][0].groups.all, &d[3][0].groups.all));
        assert!(Arc::ptr_eq(&d[0][0].span, &d[2][0].span));
    }

    #[test]
    #[should_panic(expected = "group 4 of a domain of 4 groups")]
    fn a_group_past_the_last_is_out_of_bounds() {
        let d = build(&Topology::flat(4), &[0, 1, 2, 3], 4);
        let _ = &d[2][0].groups[4];
    }
}
