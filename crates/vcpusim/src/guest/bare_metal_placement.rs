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
//!   domain and then its SMT domain (`for_each_lower_domain(sd_llc)`), the first group, going
//!   round each domain's ring of groups (in order of lowest CPU, `build_sched_groups`) from
//!   target's, all of whose CPUs are idle and none is target, taken at its first CPU: a fully
//!   idle module first, then an idle sibling of target, else target. Target is the thread's
//!   previous CPU, or the waker's when `select_task_rq_fair`'s `wake_affine` takes it
//!   (guest/bare_metal_balance.rs).
//! - **fork**: `select_task_rq_fair(SD_BALANCE_FORK)` → `find_idlest_group` / `find_idlest_cpu`
//!   from the top domain down: at each level the group of least average load is taken when
//!   `100 * this_load >= imbalance * min_load` with `imbalance = 100 + (imbalance_pct - 100) / 2`
//!   (`imbalance_pct` 125 above SMT, 110 at SMT: `SD_*_INIT`), else the local group;
//!   then its least loaded CPU. The model's threads all exist at the start and are placed in
//!   thread order as if thread 0 forked the others from its CPU (the VM's first), each new thread
//!   adding one unit of load.
//!
//! The load balancer (periodic, nohz idle, newly idle, active) and `wake_affine` are in
//! guest/bare_metal_balance.rs.

use crate::hardware::topology::Topology;
use crate::ids::PcpuId;

/// `imbalance_pct` above the SMT level (MC, CPU, NUMA) and at SMT (Linux 3.13
/// include/linux/topology.h `SD_SIBLING_INIT` 110, `SD_MC_INIT` / `SD_CPU_INIT` 125, copied by
/// kernel/sched/core.c `sd_init_##type`; `sd_numa_init` 125).
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

/// One LLC's sibling groups as `select_idle_sibling` walks them (`sd_llc`'s groups), kept so
/// that a wake-up reads only its own LLC and allocates nothing (rather than list the span
/// by testing every CPU of the VM and build both levels' groups as fresh `Vec`s at every
/// wake-up). The groups are numbered by their lowest CPU, the order of the ring
/// `build_sched_groups` links (`for_each_cpu(i, span)`), which each CPU's domain enters at its
/// own group (`sd->groups`).
#[derive(Clone, Debug, PartialEq)]
struct LlcGroups {
    /// Per CPU of the LLC, by its position among them (index order): its group.
    group: Vec<u32>,
    /// Group `g`'s CPUs, in index order, are `group_cpus[group_start[g]..group_start[g + 1]]`.
    group_start: Vec<u32>,
    group_cpus: Vec<u32>,
}

impl LlcGroups {
    fn groups(&self) -> usize {
        self.group_start.len() - 1
    }

    fn cpus_of(&self, g: usize) -> &[u32] {
        &self.group_cpus[self.group_start[g] as usize..self.group_start[g + 1] as usize]
    }
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

    /// Per CPU: [socket, node, LLC, module].
    pub(super) fn keys(&self) -> &[[u32; 4]] {
        &self.keys
    }

    /// The CPUs sharing levels `0..=level` with `cpu` (the span of its domain at `level`; the
    /// whole machine at level -1), in index order.
    fn span(&self, cpu: usize, level: isize) -> Vec<usize> {
        let shares = |j: usize| level < 0 || self.keys[j][..=level as usize] == self.keys[cpu][..=level as usize];
        (0..self.cpus()).filter(|&j| shares(j)).collect()
    }

    /// `select_idle_sibling(p, target)` (module doc); `idle(i)`: CPU i runs nothing.
    ///
    /// Linux 3.13 (kernel/sched/fair.c) walks `sd_llc`'s groups, then its child's
    /// (`for_each_lower_domain`), each domain's ring from the target's own group
    /// (`sd->groups`) on, and takes the first group all of whose CPUs are idle and none is the
    /// target (`if (i == target || !idle_cpu(i)) goto next`), at its first CPU
    /// (`cpumask_first_and`). The ring is in order of each group's lowest CPU
    /// (`build_sched_groups`), so the walk is the LLC's groups from the target's, wrapping, then
    /// the target's siblings (the child's groups are single CPUs) from the target on, wrapping:
    /// O(CPUs of one LLC) per wake-up, as in Linux, read from `LlcGroups`, nothing allocated.
    pub fn select_idle_sibling(&self, target: usize, idle: impl Fn(usize) -> bool) -> usize {
        if idle(target) {
            return target;
        }
        let (l, tp) = self.llc_of[target];
        let llc = &self.llcs[l as usize];
        let own = llc.group[tp as usize] as usize;
        for g in (own..llc.groups()).chain(0..own) {
            let cpus = llc.cpus_of(g);
            if cpus.iter().all(|&i| i as usize != target && idle(i as usize)) {
                return cpus[0] as usize;
            }
        }
        let siblings = llc.cpus_of(own);
        let split = siblings.partition_point(|&i| (i as usize) <= target);
        siblings[split..].iter().chain(&siblings[..split]).map(|&i| i as usize).find(|&i| i != target && idle(i)).unwrap_or(target)
    }

    /// `find_idlest_group` / `find_idlest_cpu` from the top domain down, for a task forked on
    /// `cpu`, with `load[i]` tasks on CPU i (module doc).
    pub fn find_idlest_cpu(&self, cpu: usize, load: &[u64]) -> usize {
        let mut cpu = cpu;
        // Domains: the whole machine (split by socket), a socket (by node), a node (by LLC),
        // an LLC (by module), a module (by CPU).
        let mut level: isize = -1;
        while level < 4 {
            let span = self.span(cpu, level);
            if span.len() <= 1 {
                level += 1;
                continue;
            }
            // In order of their lowest CPU: the ring `build_sched_groups` links.
            let groups = if level < 3 { self.groups_below(&span, (level + 1) as usize) } else { span.iter().map(|&j| vec![j]).collect() };
            if groups.len() <= 1 {
                level += 1;
                continue;
            }
            let avg = |g: &Vec<usize>| g.iter().map(|&i| load[i]).sum::<u64>() * 1024 / g.len() as u64;
            // The ring from the local group on (`sd->groups`); the first strictly least loaded
            // other group is the idlest (`avg_load < min_load`).
            let local = groups.iter().position(|g| g.contains(&cpu)).expect("a CPU is in its own span");
            let this = avg(&groups[local]);
            let idlest = groups[local + 1..].iter().chain(&groups[..local]).min_by_key(|g| avg(g));
            // Level 3 splits a module (or core) into its CPUs: the SMT domain. Level 2 splits an
            // LLC into modules: MC, whose `SD_MC_INIT` is 125 like the levels above.
            let pct = if level >= 3 { IMBALANCE_PCT_SMT } else { IMBALANCE_PCT };
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

    /// Groups of `span` by the key at `level` (0 socket, 1 node, 2 LLC, 3 module), in order of
    /// their lowest CPU when `span` is in index order.
    fn groups_below(&self, span: &[usize], level: usize) -> Vec<Vec<usize>> {
        group_by(span.iter().copied(), |j| &self.keys[j][..=level]).1
    }
}

/// Each CPU's LLC and position in it, and each LLC's walk (`LlcGroups`), from the CPUs' keys.
fn llc_groups(keys: &[[u32; 4]]) -> (Vec<(u32, u32)>, Vec<LlcGroups>) {
    let (llc, members) = group_by(0..keys.len() as u32, |c| &keys[c as usize][..3]);
    // Members are in index order, so a CPU's position is where it sorts among them.
    let llc_of = llc.iter().zip(0u32..).map(|(&l, c)| (l, members[l as usize].partition_point(|&m| m < c) as u32)).collect();
    let llcs = members
        .into_iter()
        .map(|cpus| {
            // Numbered as first met in index order: by lowest CPU, the ring's order.
            let (group, groups) = group_by(cpus.iter().copied(), |c| keys[c as usize][3]);
            let ends = groups.iter().scan(0u32, |n, g| {
                *n += g.len() as u32;
                Some(*n)
            });
            let group_start = std::iter::once(0).chain(ends).collect();
            LlcGroups { group, group_start, group_cpus: groups.concat() }
        })
        .collect();
    (llc_of, llcs)
}

/// `items` grouped by `key`, the groups numbered in the order they are first met (for items in
/// index order: by lowest member): each item's group, and each group's items in their order.
pub(super) fn group_by<T: Copy, K: Ord>(items: impl Iterator<Item = T>, key: impl Fn(T) -> K) -> (Vec<u32>, Vec<Vec<T>>) {
    let mut numbers = std::collections::BTreeMap::new();
    let mut groups: Vec<Vec<T>> = Vec::new();
    let ids = items
        .map(|t| {
            let next = groups.len() as u32;
            let g = *numbers.entry(key(t)).or_insert(next);
            if g == next {
                groups.push(Vec::new());
            }
            groups[g as usize].push(t);
            g
        })
        .collect();
    (ids, groups)
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

    /// Linux 3.13's `select_idle_sibling` (kernel/sched/fair.c) transcribed over domains built
    /// afresh from the keys: `sd_llc`, whose groups are the sibling groups of the target's LLC,
    /// and its child, whose groups are the target's siblings one by one; each domain's groups a
    /// ring in order of lowest CPU (`build_sched_groups`), entered at the target's (`sd->groups`).
    fn select_idle_sibling_3_13(g: &GuestTopology, target: usize, idle: impl Fn(usize) -> bool) -> usize {
        if idle(target) {
            return target;
        }
        let same = |a: usize, b: usize, level: usize| g.keys[a][..=level] == g.keys[b][..=level];
        let mut llc_groups: Vec<Vec<usize>> = Vec::new();
        for j in (0..g.cpus()).filter(|&j| same(j, target, 2)) {
            match llc_groups.iter_mut().find(|grp| same(grp[0], j, 3)) {
                Some(grp) => grp.push(j),
                None => llc_groups.push(vec![j]),
            }
        }
        let smt_groups: Vec<Vec<usize>> = (0..g.cpus()).filter(|&j| same(j, target, 3)).map(|j| vec![j]).collect();
        for ring in [llc_groups, smt_groups] {
            let first = ring.iter().position(|grp| grp.contains(&target)).unwrap();
            let mut sg = first;
            loop {
                // for_each_cpu(i, sched_group_cpus(sg)) if (i == target || !idle_cpu(i)) goto next;
                if !ring[sg].iter().any(|&i| i == target || !idle(i)) {
                    return ring[sg][0];
                }
                sg = (sg + 1) % ring.len();
                if sg == first {
                    break;
                }
            }
        }
        target
    }

    #[test]
    fn the_kept_llc_walk_picks_what_linux_3_13_picks() {
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
                        let want = select_idle_sibling_3_13(&g, target, |i| idle[i]);
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

    #[test]
    fn interleaved_groups_are_walked_by_lowest_cpu_from_the_targets() {
        // Modules {p0, p1}, {p2, p3}, {p4, p5} in one LLC, as a VM numbers them 0 = p0, 1 = p2,
        // 2 = p3, 3 = p1, 4 = p4, 5 = p5: groups A = {0, 3}, B = {1, 2}, C = {4, 5}.
        let t = Topology::new(6, 1, 1, 1).unwrap().with_modules(2, LlcScope::Socket).unwrap();
        let g = GuestTopology::new(&t, &[0, 2, 3, 1, 4, 5].map(PcpuId));
        // Target 3 busy, B and C idle: the ring from A is A, B, C (lowest CPUs 0, 1, 4), so B's
        // first CPU, though C's CPUs come sooner after the target in number.
        let idle = |i: usize| ![0, 3].contains(&i);
        assert_eq!(g.select_idle_sibling(3, idle), 1);
        // From B (target 2 busy): B, C, A; C is idle, A is not.
        let idle = |i: usize| ![2, 0].contains(&i);
        assert_eq!(g.select_idle_sibling(2, idle), 4);
    }

    #[test]
    fn forking_between_modules_takes_the_mc_imbalance_pct() {
        // One LLC of two 2-core modules, loads 5 + 5 against 5 + 4: the idlest module is 0.9 of
        // the local one. At MC (`SD_MC_INIT`, imbalance_pct 125, so 112) the fork stays local; an
        // SMT-level 110 (105) would move it. Within the local module both CPUs are alike: CPU 0.
        let t = Topology::new(4, 1, 1, 1).unwrap().with_modules(2, LlcScope::Socket).unwrap();
        let g = GuestTopology::new(&t, &(0..4).map(PcpuId).collect::<Vec<_>>());
        assert_eq!(g.find_idlest_cpu(0, &[5, 5, 5, 4]), 0);
        // 5 + 5 against 4 + 4 (0.8): taken, at its first least loaded CPU.
        assert_eq!(g.find_idlest_cpu(0, &[5, 5, 4, 4]), 2);
        // Within a module (SMT): 5 against 4 moves, 5 against 5 stays.
        let g = GuestTopology::new(&Topology::new(2, 1, 1, 1).unwrap().with_modules(2, LlcScope::Socket).unwrap(), &[PcpuId(0), PcpuId(1)]);
        assert_eq!(g.find_idlest_cpu(0, &[5, 4]), 1);
        assert_eq!(g.find_idlest_cpu(0, &[5, 5]), 0);
    }
}
