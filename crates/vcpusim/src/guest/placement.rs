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
/// socket, node, LLC and sibling group, outermost first.
#[derive(Clone, Debug, PartialEq)]
pub struct GuestTopology {
    /// `keys[i]` = [socket, node, llc, module] of CPU i.
    keys: Vec<[u32; 4]>,
}

impl GuestTopology {
    pub fn new(topology: &Topology, pcpus: &[PcpuId]) -> Self {
        let keys = pcpus
            .iter()
            .map(|&p| {
                let pl = topology.place(p);
                [pl.socket, pl.node, pl.llc, pl.module]
            })
            .collect();
        GuestTopology { keys }
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
    pub fn select_idle_sibling(&self, target: usize, idle: impl Fn(usize) -> bool) -> usize {
        if idle(target) {
            return target;
        }
        // sd_llc, whose groups are the sibling groups, then its child (SMT), whose groups are
        // single CPUs.
        let llc = self.span(target, 2);
        let smt = self.span(target, 3);
        let llc_groups = self.groups_below(&llc, 3);
        let smt_groups: Vec<Vec<usize>> = smt.iter().map(|&j| vec![j]).collect();
        for groups in [llc_groups, smt_groups] {
            for g in groups {
                if g.iter().all(|&i| i != target && idle(i)) {
                    // cpumask_first_and: the group's lowest-numbered CPU.
                    return *g.iter().min().expect("a group has CPUs");
                }
            }
        }
        target
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
