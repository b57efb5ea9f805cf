//! CFS bandwidth control of a VM's cgroup (`[[vm]] cap` as `cpu.cfs_quota_us` /
//! `cpu.cfs_period_us`): kernel/sched_fair.c (3.2) `struct cfs_bandwidth`,
//! `__account_cfs_rq_runtime`, `throttle_cfs_rq`, `unthrottle_cfs_rq`,
//! `do_sched_cfs_period_timer`, `distribute_cfs_runtime`. docs/model.md section 7.1, "Caps",
//! lists what is modelled and what is not.

use super::{Cfs, Enqueue, BW_TIMER};
use crate::hypervisor::policy::{PolicyCtx, Timer};
use crate::hypervisor::uvf::carrier::UrgentBase;
use crate::ids::{PcpuId, VcpuId, VmId};
use crate::time::Nanos;

/// CFS bandwidth control of one VM's cgroup (`struct cfs_bandwidth`, kernel/sched/fair.c),
/// at the level this simulator needs:
/// - `quota` per `period` for the whole VM (`cpu.cfs_quota_us` / `cpu.cfs_period_us`);
/// - `runtime` is the pool left this period (`cfs_b->runtime`). Each `update_curr` of a vCPU of
///   the VM charges its run time to it directly (`__account_cfs_rq_runtime`), as if the per-cfs_rq
///   slices of `sched_cfs_bandwidth_slice` (5 ms, `assign_cfs_rq_runtime`) were infinitesimal;
/// - when it runs dry the pCPUs running the VM's vCPUs reschedule (`resched_curr`), and the VM is
///   throttled as a whole (`throttle_cfs_rq` on every pCPU at once): queued vCPUs leave their run
///   queues, running ones leave at their pCPU's `do_schedule` (`check_cfs_rq_runtime` in
///   `put_prev_entity`), waking ones are not enqueued;
/// - the period timer (`sched_cfs_period_timer` -> `do_sched_cfs_period_timer`) refills it to
///   `quota` less the overrun of the period before (the negative `runtime_remaining` that
///   `distribute_cfs_runtime` pays back first) and, if that leaves run time, unthrottles every
///   vCPU on its run queue (`unthrottle_cfs_rq`), rescheduling the pCPUs that were idle.
#[derive(Clone, Debug, Default)]
pub(super) struct Bandwidth {
    /// Run time per period; 0 = `RUNTIME_INF` (no cap).
    quota: Nanos,
    /// Run time left this period (negative: overrun to pay back at the refill).
    runtime: i64,
    /// The VM's vCPUs are throttled (set by `throttle`, cleared by the refill).
    throttled: bool,
    /// Exhaustion seen by `update_curr`, throttle not yet done (`pending_throttle`).
    pending: bool,
    /// `cfs_b->period_timer`, armed while the VM has a quota.
    period_timer: Option<Timer>,
}

impl Cfs {
    /// `__account_cfs_rq_runtime`: charge `delta` of run time to the VM's bandwidth pool; when it
    /// runs dry, note the VM for `flush_throttles` (Linux: `resched_curr`, then the throttle at
    /// `put_prev_entity`).
    pub(super) fn account_runtime(&mut self, vm: VmId, delta: Nanos) {
        let Some(b) = self.bw.get_mut(vm.idx()) else { return };
        if b.quota == 0 {
            return;
        }
        b.runtime -= delta as i64;
        if b.runtime <= 0 && !b.throttled && !b.pending {
            b.pending = true;
            self.pending_throttle.push(vm);
        }
    }

    /// The VM is throttled (`throttled_hierarchy`).
    pub(super) fn throttled_vm(&self, vm: usize) -> bool {
        self.bw.get(vm).is_some_and(|b| b.throttled)
    }

    /// The VM has a quota and no run time left this period.
    pub(super) fn exhausted(&self, vm: VmId) -> bool {
        self.bw.get(vm.idx()).is_some_and(|b| b.quota > 0 && b.runtime <= 0)
    }

    /// Throttle the VMs `update_curr` found out of run time; `except` is the pCPU whose
    /// `do_schedule` is running (it needs no reschedule request).
    #[inline]
    pub(super) fn flush_throttles(&mut self, ctx: &mut PolicyCtx, except: Option<usize>) {
        // Called after every call that may run update_curr: nearly always nothing to do.
        if !self.pending_throttle.is_empty() {
            self.throttle_pending(ctx, except);
        }
    }

    pub(super) fn throttle_pending(&mut self, ctx: &mut PolicyCtx, except: Option<usize>) {
        while let Some(vm) = self.pending_throttle.pop() {
            self.bw[vm.idx()].pending = false;
            if self.exhausted(vm) {
                self.throttle(ctx, vm, except);
            }
        }
    }

    /// `throttle_cfs_rq` on every pCPU of the VM: queued vCPUs leave their run queues; pCPUs
    /// running one reschedule (not held back by UVF: the cgroup has no run time), and
    /// `do_schedule` throttles it there.
    pub(super) fn throttle(&mut self, ctx: &mut PolicyCtx, vm: VmId, except: Option<usize>) {
        self.bw[vm.idx()].throttled = true;
        for &v in &ctx.host.vm(vm).vcpus {
            let e = &self.se[v.idx()];
            let Some(p) = e.rq else { continue };
            if e.queued {
                self.throttle_one(ctx.now(), v, p);
            } else if self.curr_task(p) == Some(v) && except != Some(p) && !self.rqs[p].need_resched {
                self.rqs[p].need_resched = true;
                ctx.reschedule(PcpuId(p as u32));
            }
        }
    }

    /// Take `v` off its run queue as throttled; it returns to run queue `on` when unthrottled.
    pub(super) fn throttle_one(&mut self, now: Nanos, v: VcpuId, on: usize) {
        let vm = self.vm_index(v);
        self.dequeue_task(now, v, vm, true);
        self.uvf_sleep(v);
        let e = &mut self.se[v.idx()];
        e.throttled = true;
        e.throttled_on = on;
    }

    /// The period timer of `vm` (`sched_cfs_period_timer`): refill, and unthrottle if the refill
    /// leaves run time (`distribute_cfs_runtime` -> `unthrottle_cfs_rq`).
    pub(super) fn period_timer(&mut self, ctx: &mut PolicyCtx, vm: VmId) {
        let b = &mut self.bw[vm.idx()];
        let Some(timer) = b.period_timer else { return };
        if b.quota == 0 {
            return;
        }
        ctx.set_timer(&timer, ctx.now() + self.cfs_period);
        // __refill_cfs_bandwidth_runtime sets runtime = quota; the throttled cfs_rqs' overrun
        // (runtime_remaining < 0) is paid from it first.
        b.runtime = b.quota as i64 + b.runtime.min(0);
        if b.runtime > 0 {
            self.unthrottle(ctx, vm);
        }
    }

    /// `unthrottle_cfs_rq` for every throttled vCPU of `vm`: back on the run queue it was
    /// throttled on (or a fallback if that pCPU left the pool or its affinity), placed as a
    /// waking entity; an idle pCPU that gets work reschedules ("determine whether we need to wake
    /// up potentially idle cpu"); busy ones find it at their next tick.
    pub(super) fn unthrottle(&mut self, ctx: &mut PolicyCtx, vm: VmId) {
        self.bw[vm.idx()].throttled = false;
        for &v in &ctx.host.vm(vm).vcpus {
            if !self.se[v.idx()].throttled {
                continue;
            }
            self.se[v.idx()].throttled = false;
            let on = self.se[v.idx()].throttled_on;
            let p = if ctx.host.may_run(v, PcpuId(on as u32)) { on } else { self.fallback_pcpu(ctx, v, on) };
            // Back as a waking entity: its lag relative to the run queue it left.
            let old_min = self.groups[self.gi(vm.idx(), on)].rq.min_vruntime;
            self.se[v.idx()].vruntime = super::relative_vruntime(self.se[v.idx()].vruntime, old_min);
            self.enqueue_task(ctx.now(), v, vm.idx(), p, Enqueue::Wakeup);
            if self.rqs[p].root.curr.is_none() {
                self.resched(ctx, p);
            }
        }
    }

    /// The VM's cap as a quota (`tg_set_cfs_bandwidth`): runtime starts full and the period timer
    /// runs while there is a quota; removing the cap unthrottles.
    pub(super) fn set_bandwidth(&mut self, ctx: &mut PolicyCtx, vm: VmId, cap: u32) {
        if self.bw.len() <= vm.idx() {
            self.bw.resize(vm.idx() + 1, Bandwidth::default());
        }
        let quota = (cap as u128 * self.cfs_period as u128 / 100) as Nanos;
        let b = &mut self.bw[vm.idx()];
        if b.quota == quota {
            return;
        }
        b.quota = quota;
        b.runtime = quota as i64;
        if quota == 0 {
            if let Some(t) = b.period_timer {
                ctx.stop_timer(&t);
            }
            self.unthrottle(ctx, vm);
            return;
        }
        let timer = *b.period_timer.get_or_insert_with(|| ctx.init_timer(BW_TIMER + vm.idx() as u64));
        ctx.set_timer(&timer, ctx.now() + self.cfs_period);
        if b.throttled {
            self.unthrottle(ctx, vm);
        }
    }
}
