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
//! `policies/eevdf` builds its Linux 6.6 domains here too: 6.6's x86 topology levels (SMT, MC,
//! DIE, NUMA) have the same spans and groups; it sets its own `sd_init` parameters.

use crate::hardware::cpumask::CpuMask;
use crate::hardware::topology::Topology;
use crate::ids::PcpuId;

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

/// A `struct sched_group`: its pCPUs (increasing) and its power.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SchedGroup {
    pub(crate) cpus: Vec<usize>,
    pub(crate) power: u64,
}

/// One pCPU's view of one level (`struct sched_domain`).
#[derive(Clone, Debug)]
pub(crate) struct Domain {
    pub(crate) sd: SdParams,
    /// `sched_domain_span`, increasing.
    pub(crate) span: Vec<usize>,
    /// The same as a mask (`load_balance` starts its `cpus` from it).
    pub(crate) span_mask: CpuMask,
    /// The groups, starting with the one holding this pCPU, then in increasing order (wrapping).
    pub(crate) groups: Vec<SchedGroup>,
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

/// The power of pCPU `p`: 1024, or `smt_gain / threads` when its sibling group (a core's threads,
/// or a CMT module's cores: Linux's `set_cpu_sibling_map` links AMD compute-unit peers as thread
/// siblings, topology.rs) has several in the pool.
pub(crate) fn cpu_power(topo: &Topology, pool: &[usize], p: usize) -> u64 {
    let module = topo.place(PcpuId(p as u32)).module;
    let threads = pool.iter().filter(|&&q| topo.place(PcpuId(q as u32)).module == module).count() as u64;
    if threads > 1 {
        (POWER_SCALE * (SMT_GAIN / threads)) >> 10
    } else {
        POWER_SCALE
    }
}

/// Build every pool pCPU's domains (bottom up). `pool` is the pool's pCPUs, increasing.
pub(crate) fn build(topo: &Topology, pool: &[usize], npcpus: usize) -> Vec<Vec<Domain>> {
    let mut out = vec![Vec::new(); npcpus];
    let place = |q: usize| topo.place(PcpuId(q as u32));
    // Computed once per pCPU (and per level and pCPU) rather than once per use: every pCPU's
    // domains share them, and recomputing them made a build O(P^3).
    let mut power = vec![0u64; npcpus];
    for &c in pool {
        power[c] = cpu_power(topo, pool, c);
    }
    let mut child_spans: std::collections::HashMap<(&'static str, usize), Vec<usize>> = std::collections::HashMap::new();
    for &p in pool {
        let me = place(p);
        let span_of = |same: &dyn Fn(usize) -> bool| -> Vec<usize> { pool.iter().copied().filter(|&q| same(q)).collect() };
        let levels: [(SdParams, Vec<usize>); 4] = [
            // cpu_smt_mask: the sibling group (core threads, or a CMT module).
            (SD_SIBLING, span_of(&|q| place(q).module == me.module)),
            (SD_MC, span_of(&|q| place(q).socket == me.socket && place(q).node == me.node)),
            (SD_CPU, span_of(&|q| place(q).node == me.node)),
            (SD_NODE, pool.to_vec()),
        ];
        // Keep a level only if it spans more than one pCPU and more than the level kept below.
        let mut kept: Vec<(SdParams, Vec<usize>)> = Vec::new();
        for (sd, span) in levels {
            let below = kept.last().map_or(1, |(_, s)| s.len());
            if span.len() > 1 && span.len() > below {
                kept.push((sd, span));
            }
        }
        let mut doms = Vec::new();
        for (i, (sd, span)) in kept.iter().enumerate() {
            // Groups: the spans of the kept level below, or single pCPUs at the bottom.
            let mut groups: Vec<SchedGroup> = Vec::new();
            let mut covered = CpuMask::with_len(npcpus);
            for &q in span {
                if covered.contains(PcpuId(q as u32)) {
                    continue;
                }
                let cpus: Vec<usize> = match i {
                    0 => vec![q],
                    _ => {
                        let child = &kept[i - 1];
                        // The child level's span as seen from q.
                        child_spans.entry((child.0.name, q)).or_insert_with(|| child_span(topo, pool, child.0, q)).clone()
                    }
                };
                for &c in &cpus {
                    covered.insert(PcpuId(c as u32));
                }
                let power = cpus.iter().map(|&c| power[c]).sum();
                groups.push(SchedGroup { cpus, power });
            }
            let own = groups.iter().position(|g| g.cpus.contains(&p)).expect("a pCPU is in one of its domain's groups");
            groups.rotate_left(own);
            let child_prefers_sibling = i > 0 && kept[i - 1].0.prefer_sibling;
            let span_mask = CpuMask::from_pcpus(span.iter().map(|&q| PcpuId(q as u32)));
            doms.push(Domain { sd: *sd, span: span.clone(), span_mask, groups, child_prefers_sibling });
        }
        out[p] = doms;
    }
    out
}

/// The span of level `sd` around pCPU `q` (as `build` computes it).
fn child_span(topo: &Topology, pool: &[usize], sd: SdParams, q: usize) -> Vec<usize> {
    let place = |x: usize| topo.place(PcpuId(x as u32));
    let me = place(q);
    pool.iter()
        .copied()
        .filter(|&x| match sd.name {
            "SIBLING" => place(x).module == me.module,
            "MC" => place(x).socket == me.socket && place(x).node == me.node,
            "CPU" => place(x).node == me.node,
            _ => true,
        })
        .collect()
}

/// The initial per-level state (`.balance_interval = 1`, `.last_balance = jiffies`).
pub(crate) fn initial_state(levels: usize, jiffies: u64) -> Vec<SdState> {
    vec![SdState { last_balance: jiffies, balance_interval: 1, nr_balance_failed: 0 }; levels]
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
        assert_eq!(d[5][0].span, [4, 5, 6, 7]);
        let node_groups: Vec<Vec<usize>> = d[5][1].groups.iter().map(|g| g.cpus.clone()).collect();
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
        assert_eq!(d[3][1].groups[0].cpus, [2, 3]);
        assert_eq!(d[3][1].groups[0].power, 1178);
        // A pool of one pCPU has no domains.
        assert!(build(&topo, &[5], 8)[5].is_empty());
    }
}
