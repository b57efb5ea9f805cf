//! Placement: `_csched_cpu_pick` (`csched_res_pick` with commit).

use super::*;
use crate::hardware::cpumask::{CpuMask, WindowMask};
use crate::hardware::topology::Topology;

/// The masks `_csched_cpu_pick` compares: `per_cpu(cpu_sibling_mask)` (a core's threads, or a
/// CMT module's cores: topology.rs) and `per_cpu(cpu_core_mask)` (its socket), one per module
/// and per socket (read through the pCPU's place: `siblings_of`, `socket_of`), each over the
/// words its pCPUs span; and every pCPU of the host. Xen keeps a full mask per pCPU; one here
/// was O(P^2) bits, 1 GiB at 65,536 pCPUs.
#[derive(Default)]
pub(super) struct TopoMasks {
    /// Per module id (`PcpuPlace::module`).
    siblings: Vec<WindowMask<PcpuId>>,
    /// Per socket id (`PcpuPlace::socket`).
    sockets: Vec<WindowMask<PcpuId>>,
    /// Per NUMA node: its pCPUs (`node_to_cpumask`).
    nodes: Vec<CpuMask>,
    pub(super) all: CpuMask,
    /// The most pCPUs any module holds, and any socket (`unbeatable`).
    max_module: usize,
    max_socket: usize,
    /// How many pCPUs they were built for (0: not yet; `fit_topology`).
    len: usize,
}

impl TopoMasks {
    /// The masks of the first `n` pCPUs of `topo`.
    fn build(topo: &Topology, n: usize) -> Self {
        let place = |p: usize| topo.place(PcpuId(p as u32));
        // Each group's pCPUs gathered in one pass, then one mask per group made from its list.
        // Asking every pair (is q in p's group?) took O(P^2) topology look-ups: 7.4 G
        // instructions at 16,384 pCPUs, most of a short run's time.
        let members = |group_of: &dyn Fn(usize) -> usize, groups: usize| {
            let mut lists: Vec<Vec<PcpuId>> = vec![Vec::new(); groups];
            for p in 0..n {
                let g = group_of(p);
                if lists.len() <= g {
                    lists.resize(g + 1, Vec::new());
                }
                lists[g].push(PcpuId(p as u32));
            }
            lists
        };
        let mask = |list: &[PcpuId]| {
            let mut m = CpuMask::with_len(n);
            list.iter().for_each(|&q| m.insert(q));
            m
        };
        let window = |list: &Vec<PcpuId>| WindowMask::of(list.iter().copied());
        let nodes = members(&|p| place(p).node as usize, topo.numa_nodes as usize);
        let modules = members(&|p| place(p).module as usize, 0);
        let sockets = members(&|p| place(p).socket as usize, 0);
        let largest = |lists: &[Vec<PcpuId>]| lists.iter().map(Vec::len).max().unwrap_or(0);
        TopoMasks {
            max_module: largest(&modules),
            max_socket: largest(&sockets),
            siblings: modules.iter().map(window).collect(),
            sockets: sockets.iter().map(window).collect(),
            nodes: nodes.iter().map(|l| mask(l)).collect(),
            all: CpuMask::full(n),
            len: n,
        }
    }

    /// Whether no pCPU can take `cpu`'s place in `_csched_cpu_pick`'s loop, whatever is left
    /// to compare: the loop moves to `nxt` only when `weight_cpu * factor < weight_nxt`, and
    /// `cpu`'s module has as many idle pCPUs as any module holds (no module of its socket has
    /// more), and its socket is the host's only one or has at least half as many idle pCPUs
    /// as any socket holds (no other socket is twice as idle). The loop would then only empty
    /// `cpus`, one idle pCPU at a time, and end on `cpu`: O(idle pCPUs x P/64) on a flat host
    /// of 1,024 pCPUs with a few hundred idle (docs/speed.md).
    #[inline]
    fn unbeatable(&self, topo: &Topology, cpu: usize, idlers: &CpuMask) -> bool {
        self.siblings_of(topo, cpu).count_in(idlers) >= self.max_module
            && (self.sockets.len() <= 1 || 2 * self.socket_of(topo, cpu).count_in(idlers) >= self.max_socket)
    }

    /// `per_cpu(cpu_sibling_mask, p)`.
    #[inline]
    fn siblings_of(&self, topo: &Topology, p: usize) -> &WindowMask<PcpuId> {
        &self.siblings[topo.place(PcpuId(p as u32)).module as usize]
    }

    /// `per_cpu(cpu_core_mask, p)`.
    #[inline]
    fn socket_of(&self, topo: &Topology, p: usize) -> &WindowMask<PcpuId> {
        &self.sockets[topo.place(PcpuId(p as u32)).socket as usize]
    }
}

impl Credit {
    /// `_csched_cpu_pick`: for each affinity balance step (soft, only when the vCPU
    /// `has_soft_affinity`, then hard; in 4.4 the domain's node affinity in place of soft, only
    /// when `__vcpu_has_node_affinity`: `Credit::soft`), the candidate set is the step's mask
    /// (`affinity_balance_cpumask`) ∩ the pool; in it, the vCPU's own pCPU if it is idle, otherwise
    /// an idle pCPU, preferring the one whose core (same socket) or socket (across sockets, needing
    /// twice as many idlers) has the most idle siblings. A step that ends on an idle pCPU ends the
    /// search; otherwise the hard step's answer stands (the own pCPU if allowed, else the next
    /// allowed one), so the result is always in hard ∩ pool. With `commit`, remember the choice in
    /// the winning pCPU's idle bias. Xen 3.3 picks differently: `cpu_pick_3_3`.
    ///
    /// With no pCPU idle and the vCPU allowed on its processor (pool and hard affinity), every
    /// version answers the processor without building a mask (a busy host asks this at
    /// every 10 ms tick of every pCPU, `csched_vcpu_acct`). 3.3: the start is the processor and
    /// the only candidate, dropped before the loop. 4.x: each step's candidates are `idlers` (at
    /// most the processor, added when it runs the only runnable vCPU there) ∩ the step's mask, so
    /// the loop has nothing to compare and no `spc` to commit; a step stops only when its `cpu`
    /// is idle, i.e. is the processor; else the hard step's `cpu` stands, the processor.
    pub(super) fn cpu_pick(&mut self, host: &HostView, v: VcpuId, commit: bool) -> usize {
        let master = self.vcpus[v.idx()].processor.idx();
        if self.idlers.is_empty() && master < self.pcpus.len() && host.may_run(v, PcpuId(master as u32)) {
            return master;
        }
        if self.cfg.xen.cpu_pick_3_3() {
            return self.cpu_pick_3_3(host, v);
        }
        self.fit_topology(host);
        let topo = host.topology;
        let mut cpu = master;
        let mut spc = None;
        // Scratch masks (credit.c's `cpumask_t cpus`, `idlers`, and the temporaries of
        // `cpumask_and(&cpus_temp, ...)`), reused across calls.
        let [mut cpus, mut idlers, mut tmp] = std::mem::take(&mut self.pick_masks);
        let groups = &self.topo_masks;
        let soft = self.soft(host, v);
        for step in BALANCE_STEPS {
            // "if that is the case, we just skip the soft affinity balancing step all together"
            // (has_soft_affinity implies soft ∩ hard ∩ pool is not empty).
            if step == Step::Soft && !soft {
                continue;
            }
            // affinity_balance_cpumask(unit, balance_step, cpus); cpumask_and(cpus, online, cpus).
            self.balance_mask(host, v, step, &mut cpus);
            // "If present, prefer vc's current processor".
            cpu = if cpus.contains(PcpuId(master as u32)) { master } else { cpus.cycle(master).map_or(master, |p| p.idx()) };
            // "iff unit is the currently running and the only runnable unit on cpu, we add cpu to
            // the idlers".
            idlers.clone_from(&self.idlers);
            if master == cpu && self.pcpus[master].runq.is_empty() {
                idlers.insert(PcpuId(master as u32));
            }
            cpus.and_with(&idlers);
            if !cpus.contains(PcpuId(cpu as u32)) {
                if let Some(c) = cpus.cycle(cpu) {
                    cpu = c.idx();
                }
            }
            cpus.remove(PcpuId(cpu as u32));
            let mut settled = groups.unbeatable(topo, cpu, &idlers);
            while !settled {
                let Some(nxt) = cpus.cycle(cpu).map(|p| p.idx()) else { break };
                let same_socket = topo.place(PcpuId(cpu as u32)).socket == topo.place(PcpuId(nxt as u32)).socket;
                let (factor, cpu_group, nxt_group) = if same_socket {
                    // Same socket: compare idle hardware threads of the two cores
                    // (per_cpu(cpu_sibling_mask): a core's threads, or a CMT module's cores).
                    (1, groups.siblings_of(topo, cpu), groups.siblings_of(topo, nxt))
                } else {
                    // Different sockets: compare idle pCPUs of the two sockets
                    // (per_cpu(cpu_core_mask)); migrate only if twice as idle.
                    (2, groups.socket_of(topo, cpu), groups.socket_of(topo, nxt))
                };
                // weight_cpu = cpumask_weight(cpu_idlers), weight_nxt = cpumask_weight(nxt_idlers).
                if cpu_group.count_in(&idlers) * factor < nxt_group.count_in(&idlers) {
                    // cpumask_and(&cpus_temp, &nxt_idlers, &cpus); cpumask_cycle(spc->idle_bias, &cpus_temp).
                    tmp.clone_from(&idlers);
                    nxt_group.keep_in(&mut tmp);
                    tmp.and_with(&cpus);
                    spc = Some(nxt);
                    cpu = tmp.cycle(self.pcpus[nxt].idle_bias).map_or(nxt, |p| p.idx());
                    groups.siblings_of(topo, cpu).remove_from(&mut cpus);
                    settled = groups.unbeatable(topo, cpu, &idlers);
                } else {
                    // cpumask_andnot(&cpus, &cpus, &nxt_idlers), over the group's words only.
                    nxt_group.remove_common_from(&mut cpus, &idlers);
                }
            }
            // "Stop if cpu is idle".
            if idlers.contains(PcpuId(cpu as u32)) {
                break;
            }
        }
        self.pick_masks = [cpus, idlers, tmp];
        if commit {
            if let Some(spc) = spc {
                self.pcpus[spc].idle_bias = cpu;
            }
        }
        cpu
    }

    /// `affinity_balance_cpumask(v, step)` ∩ the pool into `out`: the mask form of
    /// `in_balance_mask` (the same pCPUs), built with word operations.
    pub(super) fn balance_mask(&self, host: &HostView, v: VcpuId, step: Step, out: &mut CpuMask) {
        let scope = host.scope.filter(|s| !s.trivial);
        match scope {
            None => out.clone_from(&self.topo_masks.all),
            Some(s) => {
                out.clone_from(&s.pool.mask);
                out.and_with(&s.affinity[v.idx()].hard);
            }
        }
        match step {
            Step::Soft if self.cfg.xen.prefer_step() == PreferStep::Node => out.and_with(&host.vm_of(v).node_affinity.cpus),
            Step::Soft => {
                if let Some(s) = scope {
                    out.and_with(&s.affinity[v.idx()].soft);
                }
            }
            Step::Hard => {}
        }
    }

    /// Build the per-pCPU topology masks once (the host's topology does not change).
    pub(super) fn fit_topology(&mut self, host: &HostView) {
        let n = self.pcpus.len();
        // Compared with the length they were built for, not `all.count()`: a popcount of P/64
        // words at every pick, tickle and balance (15 instructions an event at 1,024 pCPUs).
        if self.topo_masks.len == n {
            return;
        }
        self.topo_masks = TopoMasks::build(host.topology, n);
    }

    /// The pCPUs of NUMA node `node` into `out` (none for a node the topology lacks).
    pub(super) fn node_mask(&self, node: usize, out: &mut CpuMask) {
        match self.topo_masks.nodes.get(node) {
            Some(m) => out.clone_from(m),
            None => out.clear(),
        }
    }

    /// Xen 3.3's `csched_cpu_pick`: among the pCPUs of the vCPU's affinity (∩ the pool), start
    /// from its processor if allowed, else the next allowed one; that pCPU always counts as idle
    /// ("cpu_set(cpu, idlers)"). Then for each other idle candidate `nxt` in turn: on the same
    /// socket compare the idle threads of the two cores, across sockets the idle pCPUs of the two
    /// sockets, and move to `nxt` if it has strictly more (no factor of two, no idle bias);
    /// otherwise drop `nxt`'s idle group from the candidates.
    fn cpu_pick_3_3(&mut self, host: &HostView, v: VcpuId) -> usize {
        let master = self.vcpus[v.idx()].processor.idx();
        self.fit_topology(host);
        let topo = host.topology;
        // The scratch masks of `cpu_pick`, reused: no allocation per call.
        let [mut cpus, mut idlers, mut tmp] = std::mem::take(&mut self.pick_masks);
        // "Pick from online CPUs in VCPU's affinity mask, giving a preference to its current
        // processor if it's in there."
        self.balance_mask(host, v, Step::Hard, &mut cpus);
        let mut cpu = if cpus.contains(PcpuId(master as u32)) { master } else { cycle_mask(master, &cpus).unwrap_or(master) };
        idlers.clone_from(&self.idlers);
        idlers.insert(PcpuId(cpu as u32));
        cpus.and_with(&idlers);
        cpus.remove(PcpuId(cpu as u32));
        let groups = &self.topo_masks;
        while let Some(nxt) = cycle_mask(cpu, &cpus) {
            // cpu_sibling_map (threads of a core, or a CMT module's cores) on one socket,
            // cpu_core_map (the socket) across.
            let same_socket = topo.place(PcpuId(cpu as u32)).socket == topo.place(PcpuId(nxt as u32)).socket;
            let (cpu_group, nxt_group) = if same_socket {
                (groups.siblings_of(topo, cpu), groups.siblings_of(topo, nxt))
            } else {
                (groups.socket_of(topo, cpu), groups.socket_of(topo, nxt))
            };
            if cpu_group.count_in(&idlers) < nxt_group.count_in(&idlers) {
                cpu = nxt;
                cpus.remove(PcpuId(cpu as u32));
            } else {
                tmp.clone_from(&idlers);
                nxt_group.keep_in(&mut tmp);
                cpus.remove_all(&tmp);
            }
        }
        self.pick_masks = [cpus, idlers, tmp];
        cpu
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hardware::topology::LlcScope;

    /// The masks as defined, pair by pair (the plain construction `build` is held to).
    #[test]
    fn topology_masks_are_each_pcpus_groups() {
        let hosts = [
            Topology::new(8, 1, 1, 1).unwrap(),
            Topology::new(32, 2, 4, 2).unwrap(),
            Topology::new(48, 4, 4, 1).unwrap().with_modules(2, LlcScope::Module).unwrap(),
            Topology::new(130, 2, 2, 1).unwrap(),
        ];
        for topo in &hosts {
            let n = topo.npcpus();
            let place = |p: usize| topo.place(PcpuId(p as u32));
            let m = TopoMasks::build(topo, n);
            for p in 0..n {
                assert_eq!(
                    m.siblings_of(topo, p).to_mask(),
                    CpuMask::from_fn(n, |q| place(q.idx()).module == place(p).module),
                    "siblings of {p}"
                );
                assert_eq!(
                    m.socket_of(topo, p).to_mask(),
                    CpuMask::from_fn(n, |q| place(q.idx()).socket == place(p).socket),
                    "socket of {p}"
                );
            }
            assert_eq!(m.nodes.len(), topo.numa_nodes as usize);
            for (node, mask) in m.nodes.iter().enumerate() {
                assert_eq!(*mask, CpuMask::from_fn(n, |q| place(q.idx()).node as usize == node), "node {node}");
            }
            assert_eq!(m.all, CpuMask::full(n));
        }
    }
}
