//! Wake-side: `__runq_tickle`, the tail of `csched_unit_wake` (BOOST, queue, tickle) and
//! schedule.c `vcpu_migrate` as credit sees it.

use super::version::KickCur;
use super::*;

impl Credit {
    /// `__runq_tickle`: a vCPU was queued on its processor; decide which pCPU must reschedule.
    /// Only pCPUs the new vCPU may run on are tickled: its processor ("cur" is considered only if
    /// the vCPU may run there, which `wake` and `migrate` keep true as Xen does), or an idler of
    /// its soft step (4.4: node-affinity step) first, then of its hard step. Xen 3.3 tickles differently
    /// (`runq_tickle_3_3`); 4.4 and 4.7 differ in the "kick cur away" test and leave the tickled
    /// pCPUs in the idlers (`version.rs`).
    pub(super) fn runq_tickle(&mut self, ctx: &mut PolicyCtx, v: VcpuId) {
        let xen = self.cfg.xen;
        if xen.tickles_every_idler() {
            return self.runq_tickle_3_3(ctx, v);
        }
        let host = ctx.host;
        self.fit_topology(&host);
        let cpu = self.vcpus[v.idx()].processor.idx();
        let new_pri = self.vcpus[v.idx()].pri;
        let cur_pri = self.pri_of_curr(cpu);
        let here = host.may_run(v, PcpuId(cpu as u32));
        // idle_mask = prv->idlers ∩ the pool (our idlers hold only the pool's pCPUs).
        let idlers_empty = self.idlers.is_empty();
        let mut target = None;
        let [mut suitable, mut cur_mask, spare] = std::mem::take(&mut self.pick_masks);
        if xen.pinned_shortcut()
            && here
            && self.idlers.contains(PcpuId(cpu as u32))
            && host.scope.is_some_and(|s| s.affinity[v.idx()].hard.count() == 1)
        {
            // Exclusive pinning (`CSCHED_FLAG_UNIT_PINNED`, set by `csched_aff_cntl` when the hard
            // mask has one pCPU; Xen 4.11 on) "and cpu is in idle_mask": tickle it. An idler runs
            // nothing here, so the next branch would choose the same pCPU; kept for the shape of
            // credit.c.
            target = Some(cpu);
        } else if here && (cur_pri == PRI_IDLE || (idlers_empty && new_pri > cur_pri)) {
            // "If the pcpu is idle, or there are no idlers and the new unit is a higher priority
            // than the old unit, run it here."
            target = Some(cpu);
        } else if !idlers_empty {
            // "Soft and hard affinity balancing loop. For units without a useful soft affinity,
            // consider hard affinity only."
            let soft = self.soft(&host, v);
            for step in BALANCE_STEPS {
                if step == Step::Soft && !soft {
                    continue;
                }
                // "Are there idlers suitable for new (for this balance step)?"
                self.balance_mask(&host, v, step, &mut suitable);
                suitable.and_with(&self.idlers);
                let new_idlers_empty = suitable.is_empty();
                // "Let's not be too harsh! If there aren't idlers suitable for new in its soft
                // affinity mask, make sure we check its hard affinity as well".
                if new_idlers_empty && step == Step::Soft {
                    continue;
                }
                if new_idlers_empty && new_pri > cur_pri {
                    // The "kick cur away" test (`Xen::kick_cur`): 4.4 sets _VPF_migrating on cur
                    // unconditionally; 4.5-4.12 only if an idler is in cur's hard affinity; since
                    // 4.13 (commit 8a04eaa8ea, "move some per-vcpu items to struct sched_unit")
                    // it tests new's hard affinity against idle_mask, which in the hard step is
                    // empty by the test just made, so cur is never kicked away. A kicked cur
                    // leaves at the reschedule (`migrate_pending`, as the tick's flag).
                    if let Some(c) = self.pcpus[cpu].curr {
                        let kick = match xen.kick_cur() {
                            KickCur::Never => false,
                            KickCur::Always => true,
                            KickCur::IfAnIdlerSuitsCur => {
                                self.balance_mask(&host, c, Step::Hard, &mut cur_mask);
                                cur_mask.intersects(&self.idlers)
                            }
                        };
                        if kick {
                            self.vcpus[c.idx()].migrate_pending = true;
                        }
                    }
                    // "Tickle cpu anyway, to let new preempt cur."
                    if here {
                        target = Some(cpu);
                    }
                } else if !new_idlers_empty {
                    // "Which of the idlers suitable for new shall we wake up?" (one, rotating:
                    // opt_tickle_one_idle). 4.5-4.7 rotate over every idler of the pool instead
                    // (`cpumask_cycle(last_tickle_cpu, &idle_mask)`; 4.8 cycles the suitable ones).
                    let rotor = if xen.tickle_rotor_over_all_idlers() { &self.idlers } else { &suitable };
                    self.last_tickle_cpu = cycle_mask(self.last_tickle_cpu, rotor).expect("an idler exists");
                    target = Some(self.last_tickle_cpu);
                }
                // "Did we find anyone?"
                if target.is_some() {
                    break;
                }
            }
        }
        self.pick_masks = [suitable, cur_mask, spare];
        if let Some(t) = target {
            // "Mark the designated CPUs as busy and send them all the scheduler interrupt."
            // (Xen 4.8 on; before, a tickled pCPU stays an idler until it schedules.)
            if xen.tickle_clears_idlers() {
                self.idlers.remove(PcpuId(t as u32));
            }
            ctx.reschedule(PcpuId(t as u32));
        }
    }

    /// Xen 3.3's `__runq_tickle`: "If strictly higher priority than current VCPU, signal the
    /// CPU"; and "If this CPU has at least two runnable VCPUs, we tickle any idlers to let them
    /// know there is runnable work in the system" (every idler in the vCPU's affinity, whenever
    /// its pCPU runs a vCPU). The tickled idlers stay in `csched_priv.idlers`; each steals in its
    /// `csched_schedule`. The engine carries the reschedules out in ascending pCPU order (the
    /// order `cpumask_raise_softirq` walks the mask).
    fn runq_tickle_3_3(&mut self, ctx: &mut PolicyCtx, v: VcpuId) {
        let host = ctx.host;
        let cpu = self.vcpus[v.idx()].processor.idx();
        let new_pri = self.vcpus[v.idx()].pri;
        let cur_pri = self.pri_of_curr(cpu);
        // The mask {cpu if preempting} ∪ (idlers ∩ affinity), raised in ascending order without
        // building it: the idlers walked in order, `cpu` raised in its place.
        let mut own = (new_pri > cur_pri && host.may_run(v, PcpuId(cpu as u32))).then_some(cpu);
        if cur_pri > PRI_IDLE {
            for p in self.idlers.iter() {
                if let Some(c) = own.filter(|&c| c <= p.idx()) {
                    own = None;
                    // (c == p: raised just below, as `own` implies that v may run there.)
                    if c < p.idx() {
                        ctx.reschedule(PcpuId(c as u32));
                    }
                }
                if host.may_run(v, p) {
                    ctx.reschedule(p);
                }
            }
        }
        if let Some(c) = own {
            ctx.reschedule(PcpuId(c as u32));
        }
    }

    /// `csched_unit_wake` after the checks: BOOST an UNDER vCPU that blocked (from Xen 4.7 on,
    /// not one that only migrated: `CSCHED_FLAG_VCPU_MIGRATING`), queue it on its processor and
    /// tickle.
    pub(super) fn queue_woken(&mut self, ctx: &mut PolicyCtx, v: VcpuId) {
        let migrating_flag = self.cfg.xen.migrating_flag();
        let svc = &mut self.vcpus[v.idx()];
        let migrating = std::mem::take(&mut svc.migrating) && migrating_flag;
        if !migrating && svc.pri == PRI_UNDER {
            self.set_pri(v, PRI_BOOST);
        }
        self.runq_insert(v);
        self.runq_tickle(ctx, v);
        let p = self.vcpus[v.idx()].processor.idx();
        self.queued_urgent(ctx, v, p);
    }

    /// schedule.c `vcpu_migrate` for a vCPU just taken off its pCPU with `_VPF_migrating`:
    /// `csched_res_pick` chooses a pCPU, then the vCPU is woken there (without a BOOST from Xen
    /// 4.7 on).
    pub(super) fn migrate(&mut self, ctx: &mut PolicyCtx, v: VcpuId) {
        let new_cpu = self.cpu_pick(&ctx.host, v, true);
        let svc = &mut self.vcpus[v.idx()];
        svc.processor = PcpuId(new_cpu as u32);
        svc.migrating = true;
        if svc.runnable() {
            self.queue_woken(ctx, v);
        }
    }

    /// A vCPU whose processor is no longer in its hard affinity ∩ pool (its affinity changed
    /// after it was placed) gets a new one, as schedule.c's `sched_set_affinity` ->
    /// `vcpu_migrate` would have given it at the change: `csched_res_pick` (CSCHED_FLAG_UNIT_MIGRATING,
    /// so the next wake is not a BOOST). The engine changes affinity without telling the policy,
    /// so this runs where the vCPU next meets the policy (wake, unpark).
    pub(super) fn rehome_if_disallowed(&mut self, host: &HostView, v: VcpuId) {
        if host.may_run(v, self.vcpus[v.idx()].processor) {
            return;
        }
        let new_cpu = self.cpu_pick(host, v, true);
        let svc = &mut self.vcpus[v.idx()];
        svc.processor = PcpuId(new_cpu as u32);
        svc.migrating = true;
    }
}
