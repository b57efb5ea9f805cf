//! Where the guest kernel of a bare-metal VM puts threads, seeing the host's real topology
//! (Linux 3.13 CFS, kernel/sched/fair.c; the guest of a VM sees flat vCPUs and keeps the
//! simplified placement of `guest/scheduler.rs`).
//!
//! The scheduling domains of a bare-metal VM's CPUs, bottom up (kernel/sched/core.c
//! `sched_init_domains` with the x86 topology of `set_cpu_sibling_map`): SMT (a CMT module's cores
//! or a core's threads: AMD compute units are thread siblings, hardware/topology.rs), MC (the CPUs
//! sharing a last-level cache, `sd_llc`), the NUMA node and the socket. Two mechanisms change
//! placement on a module host, and both are here:
//! - **wake-up**: `select_idle_sibling(p, target)`: the target CPU if idle; else, in target's LLC
//!   domain and then its SMT domain (`for_each_lower_domain(sd_llc)`), the first group, starting
//!   with target's, all of whose CPUs are idle and none is target, taken at its first CPU: a fully
//!   idle module first, then an idle sibling of target, else target. `select_task_rq_fair`'s
//!   `wake_affine` choice between the waker's CPU and the previous one is simplified to the
//!   previous one (target = `task_cpu(p)`), so the "previous CPU is cache affine and idle" test
//!   is the first test.
//! - **fork**: `select_task_rq_fair(SD_BALANCE_FORK)` → `find_idlest_group` / `find_idlest_cpu`
//!   from the top domain down: at each level the group of least average load is taken when
//!   `100 * this_load >= imbalance * min_load` with `imbalance = 100 + (imbalance_pct - 100) / 2`
//!   (`imbalance_pct` 125 above SMT, 110 at SMT: `sd_init` / `SD_*_INIT`), else the local group;
//!   then its least loaded CPU. The model's threads all exist at the start and are placed in
//!   thread order as if thread 0 forked the others from its CPU (the VM's first), each new thread
//!   adding one unit of load.
//!
//! Not modelled: the periodic and idle load balancer's moves between sibling groups
//! (`load_balance` with `SD_SHARE_CPUPOWER` group capacity, active balancing of a running
//! task); idle balancing pulls a queued thread as the guest's scheduler always does.

use crate::hardware::topology::Topology;
use crate::ids::PcpuId;

/// `sd_init`'s `imbalance_pct` above the SMT level (MC, NUMA) and at SMT (Linux 3.13
/// `SD_SIBLING_INIT` 110, `SD_MC_INIT` / `SD_CPU_INIT` 125).
const IMBALANCE_PCT: u64 = 125;
const IMBALANCE_PCT_SMT: u64 = 110;

/// The real topology of a bare-metal VM's CPUs (vCPU i is pCPU `pcpu[i]`): for each CPU its
/// socket, node, LLC and sibling group, outermost first, and the wake-up's view of each LLC
/// (`LlcGroups`), made once.
#[derive(Clone, Debug, PartialEq)]
pub struct GuestTopology {
    /// `keys[i]` = [socket, node, llc, module] of CPU i.
    keys: Vec<[u32; 4]>,
    /// Per CPU: its LLC (an index into `llcs`) and its position among that LLC's CPUs.
    llc_of: Vec<(u32, u32)>,
    llcs: Vec<LlcGroups>,
}

/// One LLC's CPUs as `select_idle_sibling` walks them (`sd_llc` and its child, the sibling
/// groups), kept so that a wake-up reads only its own LLC and allocates nothing (issue 15 parts 2
/// and 3: it used to list the span by testing every CPU of the VM and build both levels' groups
/// as fresh `Vec`s at every wake-up).
#[derive(Clone, Debug, PartialEq)]
struct LlcGroups {
    /// The LLC's CPUs in index order (a domain's span, walked from the target and wrapping).
    cpus: Vec<u32>,
    /// Per position in `cpus`: its sibling group (an index into `group_start`).
    group: Vec<u32>,
    /// Per position in `cpus`: the position of the previous CPU of the same group in index
    /// order, cyclically (itself in a group of one). A walk from position `tp` meets a group
    /// first at the position whose predecessor lies no nearer behind it (module doc of
    /// `select_idle_sibling`).
    prev_in_group: Vec<u32>,
    /// Group `g`'s CPUs, in index order, are `group_cpus[group_start[g]..group_start[g + 1]]`.
    group_start: Vec<u32>,
    group_cpus: Vec<u32>,
}

impl GuestTopology {
    pub fn new(topology: &Topology, pcpus: &[PcpuId]) -> Self {
        let keys: Vec<[u32; 4]> = pcpus
            .iter()
            .map(|&p| {
                let pl = topology.place(p);
                [pl.socket, pl.node, pl.llc, pl.module]
            })
            .collect();
        let (llc_of, llcs) = llc_groups(&keys);
        GuestTopology { keys, llc_of, llcs }
    }

    fn cpus(&self) -> usize {
        self.keys.len()
    }

    /// The CPUs sharing levels `0..=level` with `cpu` (the span of its domain at `level`),
    /// starting at `cpu` and wrapping (a domain's group list starts with the CPU's own group).
    fn span(&self, cpu: usize, level: usize) -> Vec<usize> {
        let n = self.cpus();
        (0..n).map(|d| (cpu + d) % n).filter(|&j| self.keys[j][..=level] == self.keys[cpu][..=level]).collect()
    }

    /// `select_idle_sibling(p, target)` (module doc); `idle(i)`: CPU i runs nothing.
    ///
    /// Linux 3.13 walks `sd_llc`'s groups (the sibling groups), then its child's (single CPUs),
    /// each list starting at the target's group and wrapping, and takes the first group all of
    /// whose CPUs are idle and none is the target. Here both walks read the target's LLC only
    /// (`LlcGroups`): O(CPUs of one LLC) per wake-up, as in Linux, and no allocation. The LLC's
    /// groups are met in the order of their first CPU at or after the target, wrapping: CPU `k`
    /// (at distance `d` from the target along the walk) is its group's first exactly when the
    /// group's previous CPU lies at distance `d` or more, i.e. not between the target and `k`.
    pub fn select_idle_sibling(&self, target: usize, idle: impl Fn(usize) -> bool) -> usize {
        if idle(target) {
            return target;
        }
        let (l, tp) = self.llc_of[target];
        let llc = &self.llcs[l as usize];
        let (m, tp) = (llc.cpus.len(), tp as usize);
        let distance = |k: usize| if k >= tp { k - tp } else { k + m - tp };
        for k in (tp..m).chain(0..tp) {
            if distance(llc.prev_in_group[k] as usize) < distance(k) {
                // Not the group's first CPU along the walk: the group was tested there.
                continue;
            }
            let g = llc.group[k] as usize;
            let members = &llc.group_cpus[llc.group_start[g] as usize..llc.group_start[g + 1] as usize];
            if members.iter().all(|&i| i as usize != target && idle(i as usize)) {
                // cpumask_first_and: the group's lowest-numbered CPU.
                return members[0] as usize;
            }
        }
        // The child domain: target's sibling group, its CPUs from the target on, wrapping.
        let g = llc.group[tp] as usize;
        let members = &llc.group_cpus[llc.group_start[g] as usize..llc.group_start[g + 1] as usize];
        let split = members.partition_point(|&i| (i as usize) <= target);
        members[split..].iter().chain(&members[..split]).map(|&i| i as usize).find(|&i| i != target && idle(i)).unwrap_or(target)
    }

    /// `find_idlest_group` / `find_idlest_cpu` from the top domain down, for a task forked on
    /// `cpu`, with `load[i]` tasks on CPU i (module doc).
    pub fn find_idlest_cpu(&self, cpu: usize, load: &[u64]) -> usize {
        let mut cpu = cpu;
        // Domains: the whole machine (split by socket), a socket (by node), a node (by LLC),
        // an LLC (by module), a module (by CPU).
        let mut level: isize = -1;
        while level < 4 {
            let span: Vec<usize> = if level < 0 { self.span_all(cpu) } else { self.span(cpu, level as usize) };
            if span.len() <= 1 {
                level += 1;
                continue;
            }
            let groups = if level < 3 { self.groups_below(&span, (level + 1) as usize) } else { span.iter().map(|&j| vec![j]).collect() };
            if groups.len() <= 1 {
                level += 1;
                continue;
            }
            let avg = |g: &Vec<usize>| g.iter().map(|&i| load[i]).sum::<u64>() * 1024 / g.len() as u64;
            let this = groups.iter().find(|g| g.contains(&cpu)).map(avg).unwrap_or(0);
            let idlest = groups.iter().filter(|g| !g.contains(&cpu)).min_by_key(|g| avg(g));
            let pct = if level >= 2 { IMBALANCE_PCT_SMT } else { IMBALANCE_PCT };
            let imbalance = 100 + (pct - 100) / 2;
            if let Some(g) = idlest {
                let min = avg(g);
                if 100 * this >= imbalance * min {
                    // find_idlest_cpu: its least loaded CPU (the first on ties).
                    cpu = *g.iter().min_by_key(|&&i| (load[i], i)).expect("a group has CPUs");
                }
            }
            level += 1;
        }
        cpu
    }

    fn span_all(&self, cpu: usize) -> Vec<usize> {
        let n = self.cpus();
        (0..n).map(|d| (cpu + d) % n).collect()
    }

    /// Groups of `span` by the key at `level` (0 socket, 1 node, 2 LLC, 3 module).
    fn groups_below(&self, span: &[usize], level: usize) -> Vec<Vec<usize>> {
        let mut groups: Vec<Vec<usize>> = Vec::new();
        for &j in span {
            match groups.iter_mut().find(|g| self.keys[g[0]][..=level] == self.keys[j][..=level]) {
                Some(g) => g.push(j),
                None => groups.push(vec![j]),
            }
        }
        groups
    }
}

/// Each CPU's LLC and position in it, and each LLC's walk (`LlcGroups`), from the CPUs' keys.
fn llc_groups(keys: &[[u32; 4]]) -> (Vec<(u32, u32)>, Vec<LlcGroups>) {
    use std::collections::BTreeMap;
    // The LLCs and, within each, the sibling groups, numbered in order of their lowest CPU.
    let mut llc_index: BTreeMap<[u32; 3], u32> = BTreeMap::new();
    let mut members: Vec<Vec<u32>> = Vec::new();
    let mut llc_of = Vec::with_capacity(keys.len());
    for (i, k) in keys.iter().enumerate() {
        let next = members.len() as u32;
        let l = *llc_index.entry([k[0], k[1], k[2]]).or_insert(next);
        if l == next {
            members.push(Vec::new());
        }
        llc_of.push((l, members[l as usize].len() as u32));
        members[l as usize].push(i as u32);
    }
    let llcs = members
        .into_iter()
        .map(|cpus| {
            let mut group_index: BTreeMap<u32, u32> = BTreeMap::new();
            let mut groups: Vec<Vec<u32>> = Vec::new();
            let mut group = Vec::with_capacity(cpus.len());
            for (pos, &c) in cpus.iter().enumerate() {
                let next = groups.len() as u32;
                let g = *group_index.entry(keys[c as usize][3]).or_insert(next);
                if g == next {
                    groups.push(Vec::new());
                }
                group.push(g);
                groups[g as usize].push(pos as u32);
            }
            let mut prev_in_group = vec![0u32; cpus.len()];
            let (mut group_start, mut group_cpus) = (vec![0u32], Vec::with_capacity(cpus.len()));
            for positions in &groups {
                for (j, &pos) in positions.iter().enumerate() {
                    prev_in_group[pos as usize] = positions[(j + positions.len() - 1) % positions.len()];
                    group_cpus.push(cpus[pos as usize]);
                }
                group_start.push(group_cpus.len() as u32);
            }
            LlcGroups { cpus, group, prev_in_group, group_start, group_cpus }
        })
        .collect();
    (llc_of, llcs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hardware::topology::LlcScope;

    /// Seed 001's host, as a bare-metal VM on pCPUs 0-15 (socket 0: nodes 0 and 1, 4 modules
    /// each, LLC per node).
    fn opteron_half() -> GuestTopology {
        let t = Topology::new(32, 2, 4, 1).unwrap().with_modules(2, LlcScope::Node).unwrap();
        GuestTopology::new(&t, &(0..16).map(PcpuId).collect::<Vec<_>>())
    }

    #[test]
    fn forked_threads_take_one_core_per_module_across_nodes_first() {
        let g = opteron_half();
        let mut load = vec![0u64; 16];
        load[0] = 1;
        let mut placed = vec![0];
        for _ in 1..8 {
            let c = g.find_idlest_cpu(0, &load);
            load[c] += 1;
            placed.push(c);
        }
        // One CPU per module, alternating nodes: no two threads share a module.
        let mut modules: Vec<usize> = placed.iter().map(|c| c / 2).collect();
        modules.sort_unstable();
        modules.dedup();
        assert_eq!(modules.len(), 8, "{placed:?}");
        assert_eq!(placed.iter().filter(|&&c| c < 8).count(), 4, "{placed:?}");
        // The next eight fill the modules' second cores.
        for _ in 8..16 {
            let c = g.find_idlest_cpu(0, &load);
            load[c] += 1;
        }
        assert!(load.iter().all(|&l| l == 1), "{load:?}");
    }

    /// `select_idle_sibling` as it was written before the wake-up read a kept walk of its LLC
    /// (issue 15): both domains' spans and groups built afresh from every CPU of the VM.
    fn select_idle_sibling_by_spans(g: &GuestTopology, target: usize, idle: impl Fn(usize) -> bool) -> usize {
        if idle(target) {
            return target;
        }
        let llc = g.span(target, 2);
        let smt = g.span(target, 3);
        let llc_groups = g.groups_below(&llc, 3);
        let smt_groups: Vec<Vec<usize>> = smt.iter().map(|&j| vec![j]).collect();
        for groups in [llc_groups, smt_groups] {
            for group in groups {
                if group.iter().all(|&i| i != target && idle(i)) {
                    return *group.iter().min().unwrap();
                }
            }
        }
        target
    }

    #[test]
    fn the_kept_llc_walk_picks_what_the_spans_pick() {
        // Hosts: SMT threads, CMT modules with the LLC per module, node or socket; VMs on all of
        // a host's pCPUs or a scattered subset in shuffled order (so that an LLC's CPUs are not
        // contiguous vCPU numbers and its groups interleave); every target under random idle sets.
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let hosts = [
            Topology::new(16, 1, 1, 2).unwrap(),
            Topology::new(32, 2, 4, 1).unwrap().with_modules(2, LlcScope::Node).unwrap(),
            Topology::new(32, 2, 2, 1).unwrap().with_modules(4, LlcScope::Socket).unwrap(),
            Topology::new(24, 2, 2, 1).unwrap().with_modules(3, LlcScope::Module).unwrap(),
            Topology::new(48, 4, 4, 2).unwrap(),
            Topology::new(8, 1, 1, 1).unwrap(),
        ];
        let mut checked = 0;
        for host in &hosts {
            let n = host.npcpus();
            for subset in 0..4 {
                let mut pcpus: Vec<PcpuId> = (0..n as u32).map(PcpuId).collect();
                if subset > 0 {
                    for i in (1..n).rev() {
                        pcpus.swap(i, next() as usize % (i + 1));
                    }
                    pcpus.truncate(1 + next() as usize % n);
                }
                let g = GuestTopology::new(host, &pcpus);
                for _ in 0..40 {
                    let busy_per_64 = next() % 65;
                    let idle: Vec<bool> = (0..pcpus.len()).map(|_| next() % 64 >= busy_per_64).collect();
                    for target in 0..pcpus.len() {
                        let want = select_idle_sibling_by_spans(&g, target, |i| idle[i]);
                        assert_eq!(g.select_idle_sibling(target, |i| idle[i]), want, "pcpus {pcpus:?}, idle {idle:?}, target {target}");
                        checked += usize::from(want != target);
                    }
                }
            }
        }
        // The walk found an idle group or sibling elsewhere in many of the cases, not only the target.
        assert!(checked > 1_000, "{checked}");
    }

    #[test]
    fn a_wakeup_prefers_an_idle_module_to_an_idle_sibling() {
        let g = opteron_half();
        // CPU 2 busy, its sibling 3 idle; module of CPUs 4-5 idle.
        let busy = [0usize, 1, 2, 6, 7];
        let idle = |i: usize| !busy.contains(&i);
        assert_eq!(g.select_idle_sibling(2, idle), 4);
        // No idle module left in the LLC (node 0: CPUs 0-7): the idle sibling.
        let busy = [0usize, 1, 2, 4, 6];
        let idle = |i: usize| !busy.contains(&i);
        assert_eq!(g.select_idle_sibling(2, idle), 3);
        // Idle target: itself.
        assert_eq!(g.select_idle_sibling(5, |_| true), 5);
    }
}
