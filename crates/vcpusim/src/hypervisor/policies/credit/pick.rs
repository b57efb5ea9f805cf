//! Placement: `_csched_cpu_pick` (`csched_res_pick` with commit).

use super::*;

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
    pub(super) fn cpu_pick(&mut self, host: &HostView, v: VcpuId, commit: bool) -> usize {
        if self.cfg.xen.cpu_pick_3_3() {
            return self.cpu_pick_3_3(host, v);
        }
        let topo = host.topology;
        let n = self.pcpus.len();
        let master = self.vcpus[v.idx()].processor.idx();
        let mut cpu = master;
        let mut spc = None;
        // per_cpu(cpu_sibling_mask): a core's threads, or a CMT module's cores (topology.rs).
        let siblings = |p: usize| -> Vec<bool> {
            let module = topo.place(PcpuId(p as u32)).module;
            (0..n).map(|q| topo.place(PcpuId(q as u32)).module == module).collect()
        };
        let socket_mates = |p: usize| -> Vec<bool> {
            let socket = topo.place(PcpuId(p as u32)).socket;
            (0..n).map(|q| topo.place(PcpuId(q as u32)).socket == socket).collect()
        };
        let and = |a: &[bool], b: &[bool]| -> Vec<bool> { a.iter().zip(b).map(|(x, y)| *x && *y).collect() };
        let soft = self.soft(host, v);
        for step in BALANCE_STEPS {
            // "if that is the case, we just skip the soft affinity balancing step all together"
            // (has_soft_affinity implies soft ∩ hard ∩ pool is not empty).
            if step == Step::Soft && !soft {
                continue;
            }
            // affinity_balance_cpumask(unit, balance_step, cpus); cpumask_and(cpus, online, cpus).
            let mut cpus: Vec<bool> = (0..n).map(|p| self.in_balance_mask(host, v, p, step)).collect();
            // "If present, prefer vc's current processor".
            cpu = if cpus[master] { master } else { cycle(master, &cpus).unwrap_or(master) };
            // "iff unit is the currently running and the only runnable unit on cpu, we add cpu to
            // the idlers".
            let mut idlers = self.idlers.clone();
            if master == cpu && self.pcpus[master].runq.is_empty() {
                idlers[master] = true;
            }
            for (c, i) in cpus.iter_mut().zip(&idlers) {
                *c &= *i;
            }
            if !cpus[cpu] {
                if let Some(c) = cycle(cpu, &cpus) {
                    cpu = c;
                }
            }
            cpus[cpu] = false;
            while let Some(nxt) = cycle(cpu, &cpus) {
                let same_socket = topo.place(PcpuId(cpu as u32)).socket == topo.place(PcpuId(nxt as u32)).socket;
                let (factor, cpu_group, nxt_group) = if same_socket {
                    // Same socket: compare idle hardware threads of the two cores.
                    (1, siblings(cpu), siblings(nxt))
                } else {
                    // Different sockets: compare idle pCPUs of the two sockets; migrate only if twice as idle.
                    (2, socket_mates(cpu), socket_mates(nxt))
                };
                let cpu_idlers = and(&idlers, &cpu_group);
                let nxt_idlers = and(&idlers, &nxt_group);
                if weight_of(&cpu_idlers) * factor < weight_of(&nxt_idlers) {
                    let candidates = and(&nxt_idlers, &cpus);
                    spc = Some(nxt);
                    cpu = cycle(self.pcpus[nxt].idle_bias, &candidates).unwrap_or(nxt);
                    for (c, s) in cpus.iter_mut().zip(siblings(cpu)) {
                        *c &= !s;
                    }
                } else {
                    for (c, s) in cpus.iter_mut().zip(&nxt_idlers) {
                        *c &= !*s;
                    }
                }
            }
            // "Stop if cpu is idle".
            if idlers[cpu] {
                break;
            }
        }
        if commit {
            if let Some(spc) = spc {
                self.pcpus[spc].idle_bias = cpu;
            }
        }
        cpu
    }

    /// Xen 3.3's `csched_cpu_pick`: among the pCPUs of the vCPU's affinity (∩ the pool), start
    /// from its processor if allowed, else the next allowed one; that pCPU always counts as idle
    /// ("cpu_set(cpu, idlers)"). Then for each other idle candidate `nxt` in turn: on the same
    /// socket compare the idle threads of the two cores, across sockets the idle pCPUs of the two
    /// sockets, and move to `nxt` if it has strictly more (no factor of two, no idle bias);
    /// otherwise drop `nxt`'s idle group from the candidates.
    fn cpu_pick_3_3(&self, host: &HostView, v: VcpuId) -> usize {
        let topo = host.topology;
        let n = self.pcpus.len();
        let place = |p: usize| topo.place(PcpuId(p as u32));
        let master = self.vcpus[v.idx()].processor.idx();
        // "Pick from online CPUs in VCPU's affinity mask, giving a preference to its current
        // processor if it's in there."
        let mut cpus: Vec<bool> = (0..n).map(|p| host.may_run(v, PcpuId(p as u32))).collect();
        let mut cpu = if cpus[master] { master } else { cycle(master, &cpus).unwrap_or(master) };
        let mut idlers = self.idlers.clone();
        idlers[cpu] = true;
        for (c, i) in cpus.iter_mut().zip(&idlers) {
            *c &= *i;
        }
        cpus[cpu] = false;
        while let Some(nxt) = cycle(cpu, &cpus) {
            // cpu_sibling_map (threads of a core, or a CMT module's cores) on one socket,
            // cpu_core_map (the socket) across.
            let same_socket = place(cpu).socket == place(nxt).socket;
            let group = |a: usize, b: usize| {
                if same_socket {
                    place(a).module == place(b).module
                } else {
                    place(a).socket == place(b).socket
                }
            };
            let cpu_idlers = (0..n).filter(|&q| idlers[q] && group(cpu, q)).count();
            let nxt_idlers: Vec<bool> = (0..n).map(|q| idlers[q] && group(nxt, q)).collect();
            if cpu_idlers < weight_of(&nxt_idlers) {
                cpu = nxt;
                cpus[cpu] = false;
            } else {
                for (c, x) in cpus.iter_mut().zip(&nxt_idlers) {
                    *c &= !*x;
                }
            }
        }
        cpu
    }
}
