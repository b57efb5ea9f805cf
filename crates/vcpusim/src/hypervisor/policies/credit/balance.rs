//! Work stealing: `csched_load_balance` and `csched_runq_steal`, with the load-balance ratelimit.

use super::version::StealWalk;
use super::*;

/// Whether some vCPU might take the first balance step in this pool. 4.5 on: one whose soft mask
/// does not cover the pool (a necessary condition of `has_soft_affinity`); 4.4: a VM of the pool
/// whose node affinity is explicit (necessary for `__vcpu_has_node_affinity`). Without one, that
/// step of `csched_load_balance` skips every vCPU and can be left out.
///
/// O(1): the engine keeps both answers in the pool's view (`host_view::PoolFacts`); on a trivial
/// host (one pool, no mask short of the host) no soft mask can miss the pool, so the answer is
/// no. Without a scope (a policy test host with one pool) the VMs are read.
fn any_soft(host: &HostView, step: PreferStep) -> bool {
    match step {
        PreferStep::Soft => host.scope.is_some_and(|s| !s.trivial && s.pool.facts.soft_short),
        PreferStep::Node => match host.scope {
            Some(s) => s.pool.facts.node_explicit,
            None => host.pool_vms().any(|vm| !vm.node_affinity.auto),
        },
        PreferStep::None => false,
    }
}

impl Credit {
    pub(super) fn cache_hot(&self, v: VcpuId, now: Nanos) -> bool {
        let delay = self.cfg.migration_delay;
        delay > 0 && now.saturating_sub(self.vcpus[v.idx()].last_sched_time) < delay
    }

    /// `csched_runq_steal`: the first vCPU queued on `peer` with priority strictly above `pri`
    /// that has not yielded (Xen 4.18), is not cache-hot and may run on `cpu` in this balance step
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
            // "Don't steal a UNIT which has yielded; it's waiting for a reason" (Xen 4.18; in 4.4
            // and 4.7 a waiting vCPU never carries the flag, cleared when it was queued).
            if svc.yielding && self.cfg.xen.steal_skips_yielder() {
                continue;
            }
            if step == Step::Soft && !self.soft(host, v) {
                continue;
            }
            if self.cache_hot(v, host.now) || !self.in_balance_mask(host, v, cpu, step) {
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

    /// `csched_load_balance`: for each affinity balance step (soft-affine work first, or in 4.4
    /// node-affine work, then hard-affine work), visit the busy peers node by node, round-robin from each node's balance
    /// bias (4.4 and 4.7: from the node's first busy pCPU; 3.3: `load_balance_3_3`), skipping
    /// those with at most one runnable vCPU (Xen 4.9's shortcut; older versions look and find
    /// nothing to steal there: an idle peer is skipped and a busy one has an empty queue); the
    /// first steal ends it.
    pub(super) fn load_balance(&mut self, host: &HostView, cpu: usize, pri: Pri) -> Option<VcpuId> {
        let walk = self.cfg.xen.steal_walk();
        if walk == StealWalk::Ring {
            return self.load_balance_3_3(host, cpu, pri);
        }
        self.fit_topology(host);
        let topo = host.topology;
        let nodes = self.balance_bias.len().max(1);
        let node = topo.place(PcpuId(cpu as u32)).node as usize;
        let soft = any_soft(host, self.cfg.xen.prefer_step());
        let [mut workers, mut tried, b] = std::mem::take(&mut self.pick_masks);
        let mut stolen = None;
        'steps: for step in BALANCE_STEPS {
            // A soft step with no soft-affine vCPU in the pool steals nothing and changes nothing.
            if step == Step::Soft && !soft {
                continue;
            }
            for k in 0..nodes {
                let peer_node = (node + k) % nodes;
                // cpumask_andnot(&workers, online, prv->idlers); cpumask_and(&workers, &workers,
                // &node_to_cpumask(peer_node)); __cpumask_clear_cpu(cpu, &workers).
                self.node_mask(peer_node, &mut workers);
                workers.remove_all(&self.idlers);
                if let Some(s) = host.scope.filter(|s| !s.trivial) {
                    workers.and_with(&s.pool.mask);
                }
                workers.remove(PcpuId(cpu as u32));
                let first = match walk {
                    // "peer_cpu = cpumask_first(&workers)".
                    StealWalk::NodesFromFirst => workers.first().map(|p| p.idx()),
                    _ => cycle_mask(self.balance_bias[peer_node], &workers),
                };
                let Some(first) = first else { continue };
                // The walk visits every worker once, cyclically from `first`, and tries those with
                // more than one runnable vCPU ("if ( CSCHED_PCPU(peer_cpu)->nr_runnable <= 1 )
                // goto next_cpu"); a failed try changes nothing. So only the overloaded workers
                // are visited, in that same order: the same tries, without a step per busy pCPU.
                debug_assert!(
                    (0..self.pcpus.len()).all(|p| self.overloaded.contains(PcpuId(p as u32)) == (self.nr_runnable(p) > 1)),
                    "credit: the overloaded mask is out of step with the run queues"
                );
                tried.clone_from(&workers);
                tried.and_with(&self.overloaded);
                let mut at = first;
                let mut wrapped = false;
                loop {
                    let peer = match tried.next_from(at).map(|p| p.idx()) {
                        Some(q) if !wrapped || q < first => q,
                        _ if !wrapped => {
                            wrapped = true;
                            at = 0;
                            continue;
                        }
                        _ => break,
                    };
                    if let Some(v) = self.runq_steal(host, peer, cpu, pri, step) {
                        // "start from the next pCPU ... so we don't risk stealing always from the same ones".
                        self.balance_bias[peer_node] = peer;
                        stolen = Some(v);
                        break 'steps;
                    }
                    at = peer + 1;
                }
            }
        }
        self.pick_masks = [workers, tried, b];
        stolen
    }

    /// Xen 3.3's `csched_load_balance`: "Peek at non-idling CPUs in the system, starting with our
    /// immediate neighbour", round the whole host (no nodes, no affinity steps); the first steal
    /// ends it.
    fn load_balance_3_3(&mut self, host: &HostView, cpu: usize, pri: Pri) -> Option<VcpuId> {
        // The busy pCPUs of the pool other than this one, in a scratch mask (no allocation).
        self.fit_topology(host);
        let [mut workers, tried, b] = std::mem::take(&mut self.pick_masks);
        workers.clone_from(&self.topo_masks.all);
        workers.remove_all(&self.idlers);
        if let Some(s) = host.scope.filter(|s| !s.trivial) {
            workers.and_with(&s.pool.mask);
        }
        workers.remove(PcpuId(cpu as u32));
        let mut peer = cpu;
        let mut stolen = None;
        while let Some(next) = cycle_mask(peer, &workers) {
            peer = next;
            workers.remove(PcpuId(peer as u32));
            if let Some(v) = self.runq_steal(host, peer, cpu, pri, Step::Hard) {
                stolen = Some(v);
                break;
            }
        }
        self.pick_masks = [workers, tried, b];
        stolen
    }

    pub(super) fn load_balance_allowed(&self, p: usize, now: Nanos) -> bool {
        match self.pcpus[p].last_load_balance {
            None => true,
            Some(last) => now - last > self.cfg.load_balance_ratelimit,
        }
    }
}
