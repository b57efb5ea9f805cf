//! Where a waking or entering vCPU thread goes: `select_task_rq_fair` of Linux 3.2
//! (kernel/sched_fair.c: `wake_affine`, `select_idle_sibling`; kernel/sched.c
//! `select_fallback_rq`), the cpumask (hard affinity ∩ pool), our soft-affinity rule, and the
//! seed-000 placements (`balance`, `lc-balance`, policies/placement.rs).

use super::Cfs;
use crate::hypervisor::policies::placement::{self, LoadView, Placement};
use crate::hypervisor::policy::PolicyCtx;
use crate::ids::{PcpuId, VcpuId};

impl Cfs {
    /// select_task_rq_fair for a waking vCPU thread (Linux 3.2, the seed's host kernel): with
    /// `cpu` the pCPU whose exit does the wakeup, the wakee moves there when wake_affine finds
    /// the two loads close enough, else stays with its previous pCPU; select_idle_sibling then
    /// prefers an idle pCPU in that target's last-level cache (a socket here).
    ///
    /// The task's cpumask (hard affinity ∩ pool) bounds every step as in 3.2: the waker's pCPU is
    /// a candidate only if allowed (`want_affine = cpumask_test_cpu(cpu, tsk_cpus_allowed(p))`),
    /// select_idle_sibling scans `sched_domain_span ∩ tsk_cpus_allowed`, and a result the task may
    /// not use goes to `select_fallback_rq` (core.c `select_task_rq`).
    pub(super) fn select_pcpu(&self, ctx: &PolicyCtx, v: VcpuId, waker: Option<PcpuId>) -> usize {
        if let Some(p) = self.place(ctx, v) {
            return p;
        }
        let host = &ctx.host;
        let info = host.vcpu(v);
        let prev = info.last_pcpu.idx();
        if let Some(p) = self.soft_idle(ctx, v, prev) {
            return p;
        }
        let cpu = waker.filter(|w| host.may_run(v, *w)).map_or(prev, |p| p.idx());
        let target = if cpu == prev || self.wake_affine(v, cpu, prev) { cpu } else { prev };
        let chosen = self.select_idle_sibling(ctx, v, target, cpu, prev);
        if host.may_run(v, PcpuId(chosen as u32)) {
            chosen
        } else {
            self.fallback_pcpu(ctx, v, prev)
        }
    }

    /// `select_fallback_rq` (3.2 core.c): an allowed pCPU on the previous pCPU's node, else any
    /// allowed pCPU (the engine guarantees one: hard ∩ pool is never empty).
    pub(super) fn fallback_pcpu(&self, ctx: &PolicyCtx, v: VcpuId, prev: usize) -> usize {
        let host = &ctx.host;
        let node = host.topology.place(PcpuId(prev as u32)).node;
        let allowed = || host.pcpu_ids().filter(|p| host.may_run(v, *p));
        allowed()
            .find(|p| host.topology.place(*p).node == node)
            .or_else(|| allowed().next())
            .map_or(prev, |p| p.idx())
    }

    /// Soft affinity (`[[vm]] cpus_soft`): Linux has none; ours, so that one scenario means the
    /// same under cfs and credit, is "an idle preferred pCPU first": the previous pCPU if it is
    /// preferred and idle, else the first idle preferred pCPU; None leaves the 3.2 path to decide.
    pub(super) fn soft_idle(&self, ctx: &PolicyCtx, v: VcpuId, prev: usize) -> Option<usize> {
        let host = &ctx.host;
        if !host.has_soft(v) {
            return None;
        }
        let idle = |p: PcpuId| self.rqs[p.idx()].nr_running == 0;
        let prev_id = PcpuId(prev as u32);
        if host.prefers(v, prev_id) && idle(prev_id) {
            return Some(prev);
        }
        host.pcpu_ids().find(|p| host.prefers(v, *p) && idle(*p)).map(|p| p.idx())
    }

    /// The placement's view of the host for `v`: run-queue loads, and which pCPUs hold one of
    /// its siblings (queued or running).
    pub(super) fn placement_view(&self, ctx: &PolicyCtx, v: VcpuId) -> (Vec<u64>, Vec<bool>) {
        let loads = self.rqs.iter().map(|rq| rq.load).collect();
        let mut holds_sibling = vec![false; self.rqs.len()];
        for &s in ctx.host.vm_of(v).vcpus.iter().filter(|&&s| s != v) {
            if let Some(p) = self.se[s.idx()].rq {
                holds_sibling[p] = true;
            }
        }
        (loads, holds_sibling)
    }

    /// The pCPU a (re)entering vCPU joins under `balance` / `lc-balance`; None under `default`,
    /// whose choice is select_task_rq_fair's.
    pub(super) fn place(&self, ctx: &PolicyCtx, v: VcpuId) -> Option<usize> {
        if self.placement == Placement::Default {
            return None;
        }
        let (loads, holds_sibling) = self.placement_view(ctx, v);
        let (pool, usable) = self.pool_masks(ctx, Some(v));
        let view = LoadView { loads: &loads, holds_sibling: &holds_sibling, pool: &pool, usable: &usable };
        placement::select_waking(self.placement, &view, ctx.host.vcpu(v).last_pcpu.idx())
    }

    /// Which pCPUs are the pool's, and which of them `v` may run on (all of the pool's for None).
    pub(super) fn pool_masks(&self, ctx: &PolicyCtx, v: Option<VcpuId>) -> (Vec<bool>, Vec<bool>) {
        let host = &ctx.host;
        let pool: Vec<bool> = (0..self.rqs.len()).map(|p| host.owns_pcpu(PcpuId(p as u32))).collect();
        let usable = match v {
            None => pool.clone(),
            Some(v) => (0..self.rqs.len()).map(|p| host.may_run(v, PcpuId(p as u32))).collect(),
        };
        (pool, usable)
    }

    /// wake_affine (3.2, non-sync wakeup: KVM's kvm_vcpu_kick uses wake_up_interruptible):
    /// pull the wakee to the waker's pCPU if that leaves it no more loaded than the previous
    /// pCPU plus half the domain's imbalance margin, or if both pCPUs are nearly empty.
    pub(super) fn wake_affine(&self, v: VcpuId, this: usize, prev: usize) -> bool {
        let this_load = self.rqs[this].load;
        let prev_load = self.rqs[prev].load;
        let w = self.weight[v.idx()];
        let balanced = this_load == 0 || 100 * (this_load + w) <= (100 + (self.imbalance_pct - 100) / 2) * prev_load;
        // cpu_avg_load_per_task(this_cpu)
        let per_task = this_load / self.rqs[this].nr_running.max(1);
        balanced || (this_load <= prev_load && this_load + prev_load <= per_task)
    }

    /// select_idle_sibling (3.2): the target itself when it is the waker's or the previous pCPU
    /// and idle, else the first idle pCPU sharing its last-level cache, else the target.
    pub(super) fn select_idle_sibling(&self, ctx: &PolicyCtx, v: VcpuId, target: usize, cpu: usize, prev: usize) -> usize {
        let idle = |p: usize| self.rqs[p].nr_running == 0;
        if (target == cpu || target == prev) && idle(target) {
            return target;
        }
        let host = &ctx.host;
        let topo = host.topology;
        let socket = topo.place(PcpuId(target as u32)).socket;
        (0..self.rqs.len())
            .find(|&p| idle(p) && topo.place(PcpuId(p as u32)).socket == socket && host.may_run(v, PcpuId(p as u32)))
            .unwrap_or(target)
    }
}
