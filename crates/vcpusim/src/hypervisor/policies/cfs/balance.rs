//! The load balancer (kernel/sched_fair.c `load_balance`, `move_tasks`, `can_migrate_task`)
//! and the placement's limits on it (policies/placement.rs).

use super::Cfs;
use crate::hypervisor::policies::placement::{self, Placement};
use crate::hypervisor::policy::PolicyCtx;
use crate::ids::{PcpuId, VcpuId};

impl Cfs {
    /// May the load balancer move queued `v` to `dest` under the placement? `loads` are the
    /// run-queue loads (only read by `lc-balance`).
    pub(super) fn may_move(&self, ctx: &PolicyCtx, v: VcpuId, dest: usize, loads: &[u64], pool: &[bool]) -> bool {
        // can_migrate_task: "!cpumask_test_cpu(this_cpu, tsk_cpus_allowed(p))" -> pinned.
        if !ctx.host.may_run(v, PcpuId(dest as u32)) {
            return false;
        }
        if self.placement == Placement::Default {
            return true;
        }
        let dest_holds_sibling =
            ctx.host.vm_of(v).vcpus.iter().any(|&s| s != v && self.se[s.idx()].rq == Some(dest));
        placement::may_move_to(self.placement, loads, pool, dest, dest_holds_sibling)
    }

    /// Pull one queued vCPU to `this` from the busiest run queue if that shrinks the imbalance
    /// (load_balance / detach_tasks). Cache-hot vCPUs stay unless `this` is idle. When the
    /// placement bars every queued vCPU of the busiest queue from `this`, the next busiest is
    /// tried, as load_balance retries without the busiest CPU when all its tasks are pinned
    /// (`all_pinned` -> `goto redo`, fair.c 3.2); under `default` nothing is barred.
    pub(super) fn balance(&mut self, ctx: &mut PolicyCtx, this: usize) -> bool {
        let now = ctx.now();
        let this_load = self.rqs[this].load;
        let idle = self.rqs[this].nr_running == 0;
        let view_ctx: &PolicyCtx = ctx;
        // Only a non-default placement can bar every candidate and need the loads; the default
        // path allocates nothing (newidle balancing runs at every halt).
        let loads: Vec<u64> =
            if self.placement == Placement::Default { Vec::new() } else { self.rqs.iter().map(|rq| rq.load).collect() };
        let pool: Vec<bool> = if self.placement == Placement::Default { Vec::new() } else { self.pool_masks(view_ctx, None).0 };
        let mut barred_queues: Vec<usize> = Vec::new();
        loop {
            let busiest = (0..self.rqs.len())
                .filter(|&q| q != this && !self.rqs[q].tree.is_empty() && !barred_queues.contains(&q) && view_ctx.host.owns_pcpu(PcpuId(q as u32)))
                .max_by_key(|&q| (self.rqs[q].load, std::cmp::Reverse(q)));
            let Some(b) = busiest else { return false };
            let b_load = self.rqs[b].load;
            if b_load * 100 <= this_load * self.imbalance_pct || b_load <= this_load {
                return false;
            }
            let gap = b_load - this_load;
            let mut all_barred = true;
            let candidate = self.rqs[b]
                .tree
                .iter()
                .map(|(_, v)| *v)
                .filter(|&v| {
                    // Soft affinity (ours, as credit's steal does): a vCPU is not pulled off a
                    // preferred run queue whose pCPU will pick it up itself (nothing runs there).
                    let host = &view_ctx.host;
                    let leaves_soft = host.has_soft(v) && !host.prefers(v, PcpuId(this as u32)) && host.prefers(v, PcpuId(b as u32));
                    let allowed = self.may_move(view_ctx, v, this, &loads, &pool) && !(leaves_soft && self.rqs[b].curr.is_none());
                    all_barred &= !allowed;
                    allowed
                })
                .filter(|v| {
                    let w = self.weight[v.idx()];
                    let shrinks = (gap as i128 - 2 * w as i128).unsigned_abs() < gap as u128;
                    let hot = now.saturating_sub(self.se[v.idx()].last_ran) < self.migration_cost;
                    (shrinks || idle) && (idle || !hot)
                })
                .min_by_key(|v| ((gap as i128 - 2 * self.weight[v.idx()] as i128).unsigned_abs(), v.0));
            if let Some(v) = candidate {
                self.migrate(v, this);
                return true;
            }
            if !all_barred {
                return false;
            }
            barred_queues.push(b);
        }
    }

    /// Under `balance`, siblings never share a run queue while the VM has no more vCPUs than
    /// the host has pCPUs (beyond that, stacking is unavoidable).
    pub(super) fn check_no_stacked_siblings(&self, host: &crate::hypervisor::policy::HostView) -> Result<(), String> {
        for vm in host.pool_vms().filter(|vm| vm.vcpus.len() <= host.npcpus()) {
            let mut holder: Vec<Option<VcpuId>> = vec![None; self.rqs.len()];
            for &s in &vm.vcpus {
                let Some(p) = self.se[s.idx()].rq else { continue };
                if let Some(other) = holder[p].replace(s) {
                    return Err(format!(
                        "cfs: placement = \"balance\" stacked vCPUs {other} and {s} of VM {:?} on pCPU {p}",
                        vm.name
                    ));
                }
            }
        }
        Ok(())
    }
}
