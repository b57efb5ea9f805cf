//! Moving pCPUs between cpupools while the run goes on (`[[host.pool_change]]`), the way Xen's
//! `xl cpupool-cpu-remove` + `xl cpupool-cpu-add` do it (xen/common/sched/cpupool.c):
//!
//! ```text
//!   cpupool_unassign_cpu(old, p)            cpupool_assign_cpu_locked(new, p)
//!     cpu_disable_scheduler(p):               schedule_cpu_add(p, new):
//!       the unit running on p is moved          init_pdata, switch_sched
//!       units whose processor is p move       p reschedules under new's policy
//!       affinity with no pCPU left breaks
//!     deinit_pdata / free_pdata
//! ```
//!
//! The placement records themselves (pools, masks, facts) are sim/placement.rs's; these are the
//! operations that also involve the policies and the vCPUs. The engine does the parts every
//! policy shares (taking the running vCPU off `p`, giving halted vCPUs homed on `p` a new home,
//! breaking affinity that lost its last pCPU) and asks the
//! two policies for theirs: `Policy::remove_pcpu` (re-home what it queued on `p`) and
//! `Policy::add_pcpu`.

use super::state::Sim;
use crate::hardware::cpumask::CpuMask;
use crate::ids::{PcpuId, PoolId, VcpuId};
use std::sync::Arc;

impl Sim {
    /// The trace track name of pCPU `p`: with more than one pool, its pool at the start.
    pub fn pcpu_track_name(&self, p: PcpuId) -> String {
        if self.placement.pools().len() > 1 {
            format!("pCPU {p} ({})", self.placement.view(self.placement.pcpu_pool(p)).name)
        } else {
            format!("pCPU {p}")
        }
    }

    /// `[[host.pool_change]]`: pCPU `p` leaves its pool for `to`.
    pub fn move_pcpu(&mut self, p: PcpuId, to: PoolId) {
        let from = self.placement.pcpu_pool(p);
        if from == to || self.stop.is_some() {
            return;
        }
        // No decision on p while it changes hands (reschedule() skips offline pCPUs).
        let online = self.pcpus[p.idx()].online;
        self.pcpus[p.idx()].online = false;
        if let Some(ev) = self.pcpus[p.idx()].slice_event.take() {
            self.queue.cancel(ev);
        }
        self.placement.remove_pcpu(p);
        self.refresh_pool_facts();
        // cpu_disable_scheduler: "Breaking affinity" for a vCPU whose hard affinity has no pCPU
        // left in its pool: its hard affinity becomes every pCPU.
        // (Not for the micro-sliced pool: its lent vCPUs run there outside their affinity.)
        // The broken vCPUs share one full mask.
        let full = Arc::new(CpuMask::full(self.pinfo.len()));
        for v in 0..self.vinfo.len() {
            let id = VcpuId(v as u32);
            if from != self.placement.micro_pool()
                && self.placement.vcpu_pool(id) == from
                && self.placement.break_affinity_outside(id, from, || Arc::clone(&full))
            {
                let vm = self.vinfo[v].vm.idx();
                self.vms[vm].stats.affinity_broken += 1;
            }
        }
        // The vCPU running on p leaves it as if preempted (still Runnable; the old pool's
        // remove_pcpu queues it elsewhere).
        if let Some(v) = self.pinfo[p.idx()].current {
            self.switch_out(v, p);
        }
        // Halted or queued vCPUs whose home is p get a new one in the pool (a policy that
        // queued them re-homes them again in remove_pcpu as it sees fit).
        for v in 0..self.vinfo.len() {
            let id = VcpuId(v as u32);
            if self.placement.vcpu_pool(id) == from && self.vinfo[v].last_pcpu == p {
                self.vinfo[v].last_pcpu = self.home_in_pool(id, from);
            }
        }
        self.update_trivial_placement();
        self.with_policy(from, |pol, ctx| pol.remove_pcpu(ctx, p));
        self.placement.add_pcpu(p, to);
        self.refresh_pool_facts();
        // cpupool_unassign_cpu / cpupool_assign_cpu: domain_update_node_affinity for the domains.
        for vm in 0..self.vminfo.len() {
            self.update_node_affinity(crate::ids::VmId(vm as u32));
        }
        if let Some(tr) = self.trace.as_mut() {
            let name = format!("pool change: {} -> {}", self.placement.view(from).name, self.placement.view(to).name);
            tr.instant(0, p.0, &name, self.now);
        }
        self.with_policy(to, |pol, ctx| pol.add_pcpu(ctx, p));
        self.pcpus[p.idx()].online = online;
        self.reschedule(p);
    }

    /// The first pCPU `v` may run on in `pool` (hard affinity ∩ pool, soft affinity there if it
    /// meets it), starting after its current home so that re-homed vCPUs spread.
    pub(super) fn home_in_pool(&self, v: VcpuId, pool: PoolId) -> PcpuId {
        self.placement.home_in_pool(v, pool, self.vinfo[v.idx()].last_pcpu)
    }

    /// Move vCPU `v` into pool `to` now (Xen `sched_move_domain` for one unit; seed 002's
    /// micro-sliced cores move single vCPUs in and out of a pool this way). A running `v` is
    /// preempted first; the old pool's policy drops it (`remove_vcpu`), the new one is told its
    /// VM's settings (`adjust`) and inserts it, or, if it is halted, inserts it when it wakes.
    /// Both pools' policies must support pool changes (`PolicyKind::supports_pool_changes`).
    pub fn move_vcpu(&mut self, v: VcpuId, to: PoolId) -> Result<(), String> {
        let from = self.placement.vcpu_pool(v);
        if from == to {
            return Ok(());
        }
        for pool in [from, to] {
            let name = self.placement.pool(pool).policy.name();
            let supported = crate::hypervisor::policies::find(name).is_ok_and(|k| k.supports_pool_changes());
            if !supported {
                return Err(format!(
                    "vCPU {v} cannot move from pool {:?} to {:?}: pool {:?} runs {name}, which cannot gain or lose vCPUs during a run",
                    self.placement.view(from).name,
                    self.placement.view(to).name,
                    self.placement.view(pool).name
                ));
            }
        }
        let ran_on = self.vinfo[v.idx()].pcpu;
        if let Some(p) = ran_on {
            self.switch_out(v, p);
        }
        self.with_policy(from, |pol, ctx| pol.remove_vcpu(ctx, v));
        self.set_vcpu_pool(v, to);
        self.update_trivial_placement();
        let n = self.pinfo.len();
        if self.placement.break_affinity_outside(v, to, || Arc::new(CpuMask::full(n))) {
            let vm = self.vinfo[v.idx()].vm.idx();
            self.vms[vm].stats.affinity_broken += 1;
        }
        self.vinfo[v.idx()].last_pcpu = self.home_in_pool(v, to);
        let vm = self.vinfo[v.idx()].vm;
        self.update_node_affinity(vm);
        let sched = self.vms[vm.idx()].sched.clone();
        self.with_policy(to, |pol, ctx| pol.adjust(ctx, vm, &sched));
        // sched_move_domain: the new scheduler picks the unit's resource (`pick_resource`).
        if let Some(p) = self.with_policy(to, |pol, ctx| pol.pick_pcpu(ctx, v)) {
            if self.placement.pcpu_pool(p) == to && self.placement.affinity(v).hard.contains(p) {
                self.vinfo[v.idx()].last_pcpu = p;
            }
        }
        if self.vinfo[v.idx()].state == crate::hypervisor::policy::VcpuState::Halted {
            self.placement.insert_when_woken(v);
        } else {
            self.with_policy(to, |pol, ctx| pol.insert_vcpu(ctx, v));
        }
        if let Some(p) = ran_on {
            self.reschedule(p);
        }
        Ok(())
    }

    /// Change `v`'s hard and soft affinity now (`xl vcpu-pin`; Xen `sched_set_affinity`). The
    /// hard mask must leave `v` a pCPU in its pool; its pool's policy moves it at once if it
    /// sits or runs where it may no longer (`Policy::adjust_affinity`). The pool's policy must
    /// support pool changes (cfs, credit).
    pub fn set_affinity(&mut self, v: VcpuId, hard: CpuMask, soft: CpuMask) -> Result<(), String> {
        let pool = self.placement.vcpu_pool(v);
        let view = self.placement.view(pool);
        if !hard.intersects(&view.mask) {
            return Err(format!(
                "vCPU {v}: hard affinity {:?} has no pCPU in its pool {:?} ({:?})",
                hard.to_cpulist(),
                view.name,
                view.mask.to_cpulist()
            ));
        }
        let name = self.placement.pool(pool).policy.name();
        if !crate::hypervisor::policies::find(name).is_ok_and(|k| k.supports_pool_changes()) {
            return Err(format!("vCPU {v}: pool {:?} runs {name}, which cannot change affinity during a run", view.name));
        }
        self.placement.set_affinity(v, crate::hypervisor::host_view::Affinity::new(hard, soft));
        self.update_trivial_placement();
        self.update_node_affinity(self.vinfo[v.idx()].vm);
        self.with_policy(pool, |pol, ctx| pol.adjust_affinity(ctx, v));
        Ok(())
    }

    /// Xen's `domain_update_node_affinity` (domain.c), called when a vCPU's affinity or the
    /// domain's pool changes: an automatic node affinity is recomputed from the vCPUs' hard
    /// affinity ∩ the pool; an explicit one is left alone. Memory stays where it was allocated.
    pub fn update_node_affinity(&mut self, vm: crate::ids::VmId) {
        if !self.vminfo[vm.idx()].node_affinity.auto {
            return;
        }
        let pool = &self.placement.view(self.vm_pool(vm)).mask;
        let hard = self.vminfo[vm.idx()].vcpus.iter().map(|v| &self.placement.affinity(*v).hard);
        let na = crate::hypervisor::node_affinity::NodeAffinity::automatic(&self.topology, hard, pool);
        self.vminfo[vm.idx()].node_affinity = na;
    }

    /// Recompute whether placement is trivial and the pools' facts after pools or masks changed.
    pub fn update_trivial_placement(&mut self) {
        self.placement.update_trivial(self.pinfo.len(), &self.vminfo);
    }

    /// Recompute every pool's `PoolFacts` (`Placement::refresh_facts`).
    pub(super) fn refresh_pool_facts(&mut self) {
        self.placement.refresh_facts(&self.vminfo);
    }

    /// Put vCPU `v` in `pool`, keeping the pools' node counts and facts.
    pub(super) fn set_vcpu_pool(&mut self, v: VcpuId, pool: PoolId) {
        let explicit = !self.vminfo[self.vinfo[v.idx()].vm.idx()].node_affinity.auto;
        self.placement.set_vcpu_pool(v, pool, explicit);
    }

    /// The pool a VM is in: its vCPUs' (all in one pool unless `move_vcpu` moved some; then
    /// vCPU 0's, which holds its settings' home for `adjust` and the report).
    pub fn vm_pool(&self, vm: crate::ids::VmId) -> PoolId {
        self.placement.vcpu_pool(self.vminfo[vm.idx()].vcpus[0])
    }
}
