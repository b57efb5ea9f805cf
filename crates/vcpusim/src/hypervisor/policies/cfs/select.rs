//! Where a waking or new vCPU thread goes: `select_task_rq_fair` of Linux 3.2
//! (kernel/sched_fair.c): for a wakeup (`SD_BALANCE_WAKE`), `wake_affine` between the waker's
//! and the previous pCPU, then `select_idle_sibling`; for a new thread (`SD_BALANCE_FORK`,
//! `wake_up_new_task`), `find_idlest_group` / `find_idlest_cpu` down the scheduling domains.
//! Also the cpumask (hard affinity ∩ pool; kernel/sched.c `select_fallback_rq`), our
//! soft-affinity rule, and the seed-000 placements (`balance`, `lc-balance`,
//! policies/balance_placement.rs).

use super::domains::{Domain, POWER_SCALE};
use super::{Cfs, NICE_0_LOAD};
use crate::hardware::cpumask::CpuMask;
use crate::hypervisor::policies::balance_placement::{self, Placement};
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
        // want_affine: the waking pCPU is in the task's cpumask.
        let cpu = waker.filter(|w| host.may_run(v, *w)).map_or(prev, |p| p.idx());
        // affine_sd: the lowest domain of `cpu` spanning `prev` (none: `prev`, unchanged).
        let chosen = match self.domains[cpu].iter().find(|d| d.spans(prev)) {
            Some(sd) => {
                let target = if cpu == prev || self.wake_affine(v, sd, cpu, prev) { cpu } else { prev };
                self.select_idle_sibling(ctx, v, target, cpu, prev)
            }
            None => prev,
        };
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
        allowed().find(|p| host.topology.place(*p).node == node).or_else(|| allowed().next()).map_or(prev, |p| p.idx())
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

    /// The pCPU a (re)entering vCPU joins under `balance` / `lc-balance`; None under `default`,
    /// whose choice is select_task_rq_fair's. Reads the run queues in place ([`PlaceView`]).
    pub(super) fn place(&self, ctx: &PolicyCtx, v: VcpuId) -> Option<usize> {
        if self.placement == Placement::Default {
            return None;
        }
        let view = PlaceView::new(self, ctx, v);
        balance_placement::select_waking(self.placement, &view, ctx.host.vcpu(v).last_pcpu.idx())
    }

    /// `wake_affine` (3.2, a non-sync wakeup: KVM's `kvm_vcpu_kick` wakes the vCPU thread with
    /// `wake_up_interruptible`): pull the wakee to the waking pCPU `this` if, counting the
    /// change its arrival makes to its group entities' weights (`effective_load`) and the two
    /// pCPUs' powers, that leaves `this` no more loaded than `prev` plus half the domain's
    /// imbalance margin, or if both pCPUs are nearly empty. Loads are `wake_idx` 0: the
    /// instantaneous root loads.
    pub(super) fn wake_affine(&self, v: VcpuId, sd: &Domain, this: usize, prev: usize) -> bool {
        let vm = self.vm_index(v);
        let load = self.weighted_cpuload(prev) as i64;
        let this_load = self.weighted_cpuload(this) as i64;
        let weight = NICE_0_LOAD as i64;
        let balanced = if this_load > 0 {
            let this_eff = 100 * self.power_of(prev) as i128 * (this_load + self.effective_load(vm, this, weight, weight)) as i128;
            let prev_eff = (100 + (sd.sd.imbalance_pct as i128 - 100) / 2)
                * self.power_of(this) as i128
                * (load + self.effective_load(vm, prev, 0, weight)) as i128;
            this_eff <= prev_eff
        } else {
            true
        };
        // cpu_avg_load_per_task(this_cpu)
        let tl_per_task = this_load / self.rqs[this].nr_running.max(1) as i64;
        balanced || (this_load <= load && this_load + load <= tl_per_task)
    }

    /// A pCPU's power (`power_of`): 1024, less for a hardware thread sharing its core.
    pub(super) fn power_of(&self, p: usize) -> u64 {
        self.domains[p].first().and_then(|d| d.groups.first()).filter(|g| g.cpus.len() == 1).map_or(POWER_SCALE, |g| g.power)
    }

    /// `select_idle_sibling` (3.2): the target itself when it is the waking or the previous
    /// pCPU and idle; else, in the target's domains that share its last-level cache
    /// (`SD_SHARE_PKG_RESOURCES`, skipping the SMT level), the first group whose pCPUs are all
    /// idle, walking from the target's own group, and its first allowed pCPU; else the same
    /// among the target's hardware threads (`SD_SHARE_CPUPOWER`); else the target.
    pub(super) fn select_idle_sibling(&self, ctx: &PolicyCtx, v: VcpuId, target: usize, cpu: usize, prev: usize) -> usize {
        if target == cpu && self.idle_cpu(cpu) {
            return cpu;
        }
        if target == prev && self.idle_cpu(prev) {
            return prev;
        }
        let host = &ctx.host;
        for smt in [false, true] {
            for sd in &self.domains[target] {
                if !smt && sd.sd.share_cpupower {
                    continue;
                }
                if smt && !sd.sd.share_cpupower {
                    break;
                }
                if !sd.sd.share_pkg_resources {
                    break;
                }
                if sd.groups.in_order().len() == sd.span.len() {
                    // Every group one pCPU (a flat LLC, or the SMT level): the walk below visits
                    // the span's pCPUs in increasing order from `target`'s, wrapping, and takes
                    // the first allowed idle one; the idle mask finds it in O(P/64) where the
                    // walk reads every busy run queue before it (a wake-up on a flat 1,024-pCPU
                    // host: 530 instructions an event; docs/speed.md).
                    let found = match host.run_masks(v) {
                        None => self.idle.first_common_from(&[&sd.span_mask], target),
                        Some([pool, hard]) => self.idle.first_common_from(&[&sd.span_mask, pool, hard], target),
                    };
                    if let Some(q) = found {
                        return q.idx();
                    }
                    continue;
                }
                for g in &sd.groups {
                    let Some(first) = g.cpus.iter().copied().find(|&q| host.may_run(v, PcpuId(q as u32))) else { continue };
                    if g.cpus.iter().all(|&q| self.idle_cpu(q)) {
                        return first;
                    }
                }
            }
        }
        target
    }

    /// `select_task_rq_fair(p, SD_BALANCE_FORK)` for a new vCPU thread created by a thread on
    /// pCPU `cpu` (`wake_up_new_task`): from the highest domain down, `find_idlest_group`, then
    /// `find_idlest_cpu` in it; a pCPU other than `cpu` continues at its own domains below that
    /// level. Loads are `forkexec_idx` 0: the instantaneous root loads.
    fn find_idlest_path(&self, ctx: &PolicyCtx, v: VcpuId, mut cpu: usize) -> usize {
        let host = &ctx.host;
        let mut new_cpu = cpu;
        let mut level = self.domains[cpu].len();
        while level > 0 {
            let sd = &self.domains[cpu][level - 1];
            let Some(group) = self.find_idlest_group(ctx, v, sd) else {
                level -= 1;
                continue;
            };
            // find_idlest_cpu: the least loaded allowed pCPU of the group (ties: `cpu`, else
            // the first).
            let mut idlest = None;
            let mut min_load = u64::MAX;
            for &q in sd.groups[group].cpus.iter() {
                if !host.may_run(v, PcpuId(q as u32)) {
                    continue;
                }
                let load = self.weighted_cpuload(q);
                if load < min_load || (load == min_load && q == cpu) {
                    min_load = load;
                    idlest = Some(q);
                }
            }
            match idlest {
                None => level -= 1,
                Some(q) if q == cpu => level -= 1,
                Some(q) => {
                    new_cpu = q;
                    // Continue at the new pCPU's domains narrower than this one.
                    let weight = sd.span.len();
                    cpu = q;
                    level = self.domains[q].iter().take_while(|d| d.span.len() < weight).count();
                }
            }
        }
        new_cpu
    }

    /// `find_idlest_group`: the group of `sd` with the least average load per power (local
    /// groups counted with `source_load`, others with `target_load`, both the instantaneous
    /// load at `forkexec_idx` 0), or None when the local group is within half the imbalance
    /// margin of it. Groups without an allowed pCPU are skipped.
    fn find_idlest_group(&self, ctx: &PolicyCtx, v: VcpuId, sd: &Domain) -> Option<usize> {
        let host = &ctx.host;
        let imbalance = 100 + (sd.sd.imbalance_pct - 100) / 2;
        let mut idlest = None;
        let mut min_load = u64::MAX;
        let mut this_load = 0;
        for (i, g) in sd.groups.iter().enumerate() {
            if !g.cpus.iter().any(|&q| host.may_run(v, PcpuId(q as u32))) {
                continue;
            }
            let avg_load = g.cpus.iter().map(|&q| self.weighted_cpuload(q)).sum::<u64>() * POWER_SCALE / g.power;
            if i == 0 {
                this_load = avg_load;
            } else if avg_load < min_load {
                min_load = avg_load;
                idlest = Some(i);
            }
        }
        let idlest = idlest?;
        if 100 * this_load < imbalance * min_load {
            return None;
        }
        Some(idlest)
    }

    /// Where a new vCPU thread starts (`wake_up_new_task`): the placement's choice under
    /// `balance` / `lc-balance`; else an idle preferred pCPU for a soft-affine vCPU (ours, as on
    /// wakeup); else the fork path from the creating thread's pCPU, within the
    /// cpumask (`select_fallback_rq` if the result is not allowed). The creating thread (the
    /// VMM's) is not modelled: it is taken to run on the initial home of the VM's first vCPU.
    pub(super) fn select_fork(&self, ctx: &PolicyCtx, v: VcpuId) -> usize {
        if let Some(p) = self.place(ctx, v) {
            return p;
        }
        let host = &ctx.host;
        if let Some(p) = self.soft_idle(ctx, v, host.vcpu(v).last_pcpu.idx()) {
            return p;
        }
        let first = host.vm_of(v).vcpus[0];
        let parent = host.vcpu(first).last_pcpu.idx();
        let parent = if host.owns_pcpu(PcpuId(parent as u32)) { parent } else { host.vcpu(v).last_pcpu.idx() };
        let chosen = self.find_idlest_path(ctx, v, parent);
        if host.may_run(v, PcpuId(chosen as u32)) {
            chosen
        } else {
            self.fallback_pcpu(ctx, v, host.vcpu(v).last_pcpu.idx())
        }
    }
}

/// The placement's view of the host for `v`, read from the run queues as it is asked: a wakeup
/// builds no per-pCPU lists.
pub(super) struct PlaceView<'c, 'a> {
    cfs: &'c Cfs,
    ctx: &'c PolicyCtx<'a>,
    v: VcpuId,
    /// `v`'s VM's vCPUs (`v` among them).
    siblings: &'c [VcpuId],
    /// The pCPUs whose run queue holds a sibling of `v`, from one pass over the VM's vCPUs: the
    /// policy's kept `sibling_rqs` mask, taken for the view's life and given back empty (a second
    /// pass clears the bits the first set). So `holds_sibling` is one bit test on a host of any
    /// size (a 128-bit set would need a walk over the VM's vCPUs per pCPU asked beyond 128
    /// pCPUs), and a wakeup allocates nothing.
    sibling_rqs: CpuMask,
}

impl<'c, 'a> PlaceView<'c, 'a> {
    pub(super) fn new(cfs: &'c Cfs, ctx: &'c PolicyCtx<'a>, v: VcpuId) -> Self {
        let siblings: &'c [VcpuId] = &ctx.host.vm_of(v).vcpus;
        let mut sibling_rqs = cfs.sibling_rqs.take();
        for p in Self::sibling_pcpus(cfs, siblings, v) {
            sibling_rqs.insert(p);
        }
        PlaceView { cfs, ctx, v, siblings, sibling_rqs }
    }

    /// The run queues `v`'s siblings are on (one per queued sibling, repeats included).
    fn sibling_pcpus(cfs: &'c Cfs, siblings: &'c [VcpuId], v: VcpuId) -> impl Iterator<Item = PcpuId> + 'c {
        siblings.iter().filter(move |&&s| s != v).filter_map(|s| cfs.se[s.idx()].rq).map(|p| PcpuId(p as u32))
    }
}

impl Drop for PlaceView<'_, '_> {
    fn drop(&mut self) {
        let mut mask = std::mem::take(&mut self.sibling_rqs);
        for p in Self::sibling_pcpus(self.cfs, self.siblings, self.v) {
            mask.remove(p);
        }
        self.cfs.sibling_rqs.set(mask);
    }
}

impl balance_placement::PlacementView for PlaceView<'_, '_> {
    fn npcpus(&self) -> usize {
        self.cfs.rqs.len()
    }
    fn load(&self, p: usize) -> u64 {
        self.cfs.rqs[p].root.load
    }
    fn holds_sibling(&self, p: usize) -> bool {
        self.sibling_rqs.contains(PcpuId(p as u32))
    }
    fn in_pool(&self, p: usize) -> bool {
        self.ctx.host.owns_pcpu(PcpuId(p as u32))
    }
    fn usable(&self, p: usize) -> bool {
        self.ctx.host.may_run(self.v, PcpuId(p as u32))
    }

    /// From the policy's load index (policies/load_index.rs), unless the vCPU's hard affinity
    /// leaves out some of the pool: then most pCPUs fail `keep` and the index would read nearly
    /// all of them, so the scan does.
    fn least_loaded_where(&self, prev: usize, keep: impl Fn(usize) -> bool) -> Option<usize> {
        match &self.cfs.load_index {
            Some(ix) if !self.ctx.host.is_pinned(self.v) => {
                // The index's order is (load, pCPU); the placement prefers `prev` among equals.
                let (p, load) = ix.least_where(&keep)?;
                Some(if p != prev && keep(prev) && ix.load(prev) == load { prev } else { p })
            }
            _ => balance_placement::scan_least_loaded(self, prev, keep),
        }
    }

    /// The index's sum (a run queue outside the pool is empty) over the pool's pCPU count.
    fn pool_total(&self) -> (u128, u128) {
        match &self.cfs.load_index {
            Some(ix) => (ix.total(), self.ctx.host.npcpus() as u128),
            None => balance_placement::scan_pool_total(self),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Cfs, CfsKind, LOAD_INDEX_MIN_PCPUS};
    use crate::hypervisor::policies::test_host::FakeHost;
    use crate::hypervisor::policies::PolicyKind;
    use crate::params::{ParamValue, Params};
    use crate::time::US;

    /// One VM of 8 vCPUs and four of 1 per 8 pCPUs (the seed's mix), more vCPUs than pCPUs, under
    /// `placement`; `indexed` false takes the load index away, so the placement scans.
    fn host(npcpus: u32, placement: &str, indexed: bool) -> FakeHost {
        let mut params = Params::defaults(&CfsKind.params());
        params.set("placement", ParamValue::Choice(placement.into()));
        let vms: Vec<(u32, u32)> = (0..npcpus / 8).flat_map(|_| [(8, 256), (1, 256), (1, 256), (1, 256), (1, 256)]).collect();
        FakeHost::new(npcpus, &vms, None, |shape| {
            let mut c = Cfs::new(&params, shape);
            assert_eq!(c.load_index.is_some(), npcpus as usize >= LOAD_INDEX_MIN_PCPUS);
            if !indexed {
                c.load_index = None;
            }
            Box::new(c)
        })
    }

    #[test]
    fn the_load_index_places_every_wakeup_where_the_scan_does() {
        // Through random halts and wake-ups (the policy's check, which holds the index to the
        // run queues' loads, after each), both hosts end with the same vCPUs on the same pCPUs,
        // having run as long and moved as often.
        for placement in ["balance", "lc-balance"] {
            let npcpus = LOAD_INDEX_MIN_PCPUS as u32;
            let (mut indexed, mut scanning) = (host(npcpus, placement, true), host(npcpus, placement, false));
            indexed.random_halts_and_wakes(4_000, 50 * US);
            scanning.random_halts_and_wakes(4_000, 50 * US);
            let on = |h: &FakeHost| h.vcpus.iter().map(|v| (v.state, v.pcpu, v.last_pcpu, v.run_time)).collect::<Vec<_>>();
            assert_eq!(on(&indexed), on(&scanning), "{placement}");
            assert_eq!((indexed.migrations, indexed.context_switches), (scanning.migrations, scanning.context_switches), "{placement}");
            assert!(indexed.migrations > 0, "{placement}: no vCPU ever moved, so nothing was placed");
        }
    }
}
