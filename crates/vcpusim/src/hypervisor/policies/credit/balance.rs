//! Work stealing: `csched_load_balance` and `csched_runq_steal`, with the load-balance ratelimit.

use super::*;

/// Whether some vCPU might have a useful soft affinity in this pool: one whose soft mask does not
/// cover the pool (a necessary condition of `has_soft_affinity`). Without one, a soft balance step
/// of `csched_load_balance` skips every vCPU and can be left out.
fn any_soft(host: &HostView) -> bool {
    host.scope.is_some_and(|s| s.affinity.iter().any(|a| !s.pool.mask.is_subset(&a.soft)))
}

impl Credit {
    pub(super) fn cache_hot(&self, v: VcpuId, now: Nanos) -> bool {
        let delay = self.cfg.migration_delay;
        delay > 0 && now.saturating_sub(self.vcpus[v.idx()].last_sched_time) < delay
    }

    /// `csched_runq_steal`: the first vCPU queued on `peer` with priority strictly above `pri`
    /// that has not yielded, is not cache-hot and may run on `cpu` in this balance step
    /// (`__csched_unit_is_migrateable` with `affinity_balance_cpumask`); in the soft step a vCPU
    /// without a useful soft affinity is skipped ("check if we have any soft-affine work to steal,
    /// before starting to look at hard-affine work").
    pub(super) fn runq_steal(&mut self, host: &HostView, peer: usize, cpu: usize, pri: Pri, step: Step) -> Option<VcpuId> {
        // "Don't steal from an idle CPU's runq because it's about to pick up work from it itself."
        self.pcpus[peer].curr?;
        let mut found = None;
        for &v in &self.pcpus[peer].runq {
            let svc = &self.vcpus[v.idx()];
            // "If next available UNIT here is not of strictly higher priority than ours, this
            // PCPU is useless to us."
            if svc.pri <= pri {
                break;
            }
            // "Don't steal a UNIT which has yielded; it's waiting for a reason".
            if svc.yielding {
                continue;
            }
            if step == Step::Soft && !host.has_soft(v) {
                continue;
            }
            if self.cache_hot(v, host.now) || !in_balance_mask(host, v, cpu, step) {
                continue;
            }
            found = Some(v);
            break;
        }
        let v = found?;
        self.runq_remove(v);
        self.vcpus[v.idx()].processor = PcpuId(cpu as u32);
        Some(v)
    }

    /// `csched_load_balance`: for each affinity balance step (soft-affine work first, then
    /// hard-affine work), visit the busy peers node by node, round-robin from each node's balance
    /// bias, skipping those with at most one runnable vCPU; the first steal ends it.
    pub(super) fn load_balance(&mut self, host: &HostView, cpu: usize, pri: Pri) -> Option<VcpuId> {
        let topo = host.topology;
        let nodes = self.balance_bias.len().max(1);
        let node = topo.place(PcpuId(cpu as u32)).node as usize;
        let soft = any_soft(host);
        for step in BALANCE_STEPS {
            // A soft step with no soft-affine vCPU in the pool steals nothing and changes nothing.
            if step == Step::Soft && !soft {
                continue;
            }
            for k in 0..nodes {
                let peer_node = (node + k) % nodes;
                let workers: Vec<bool> = (0..self.pcpus.len())
                    .map(|p| {
                        p != cpu
                            && !self.idlers[p]
                            && host.owns_pcpu(PcpuId(p as u32))
                            && topo.place(PcpuId(p as u32)).node as usize == peer_node
                    })
                    .collect();
                let Some(first) = cycle(self.balance_bias[peer_node], &workers) else { continue };
                let mut peer = first;
                loop {
                    if self.nr_runnable(peer) > 1 {
                        if let Some(v) = self.runq_steal(host, peer, cpu, pri, step) {
                            // "start from the next pCPU ... so we don't risk stealing always from the same ones".
                            self.balance_bias[peer_node] = peer;
                            return Some(v);
                        }
                    }
                    peer = cycle(peer, &workers).unwrap_or(first);
                    if peer == first {
                        break;
                    }
                }
            }
        }
        None
    }

    pub(super) fn load_balance_allowed(&self, p: usize, now: Nanos) -> bool {
        match self.pcpus[p].last_load_balance {
            None => true,
            Some(last) => now - last > self.cfg.load_balance_ratelimit,
        }
    }
}
