//! Credit accounting: `burn_credits`, the active lists, `csched_acct`, the tick (`csched_tick`,
//! `csched_unit_acct`) and caps (`sdom->cap`: parking and unparking in `csched_acct`).

use super::*;

impl Credit {
    /// `burn_credits`: charge 10 credits per ms run since `start_time`, keeping the sub-credit
    /// remainder in `residual`. Only for the vCPU running on its pCPU. Xen 3.3 has no
    /// `burn_credits` (its tick takes 100 credits from whoever runs: `unit_acct`), so nothing.
    pub(super) fn burn_credits(&mut self, v: VcpuId, now: Nanos) {
        if self.cfg.xen.tick_sampled_debit() {
            return;
        }
        let svc = &mut self.vcpus[v.idx()];
        let delta = now as i64 - svc.start_time;
        if delta <= 0 {
            return;
        }
        let val = delta as u64 * CREDITS_PER_MSEC + svc.residual;
        svc.residual = val % MS;
        let credits = val / MS;
        svc.credit -= credits as i64;
        svc.start_time += (credits * MS / CREDITS_PER_MSEC) as i64;
    }

    /// `__csched_unit_acct_start`: put the vCPU (and its domain) on the active lists. Its
    /// domain's weight joins `prv->weight` with every active vCPU ("Make weight per-vcpu", Xen
    /// 4.1), or (3.3) once, with the domain's first active vCPU.
    pub(super) fn acct_start(&mut self, v: VcpuId) {
        let vm = self.vcpus[v.idx()].vm;
        if self.vcpus[v.idx()].active {
            return;
        }
        self.vcpus[v.idx()].active = true;
        self.doms[vm.idx()].active_units.insert(0, v);
        let per_vcpu = self.cfg.xen.weight_per_vcpu();
        if per_vcpu {
            self.weight += self.doms[vm.idx()].weight as u64;
        }
        if !self.active_sdom.contains(&vm) {
            self.active_sdom.insert(0, vm);
            if !per_vcpu {
                self.weight += self.doms[vm.idx()].weight as u64;
            }
        }
    }

    /// `__csched_unit_acct_stop_locked`: take the vCPU off the active lists (and its weight out
    /// of `prv->weight`, per vCPU or, in 3.3, with the domain's last active vCPU).
    pub(super) fn acct_stop(&mut self, v: VcpuId) {
        let vm = self.vcpus[v.idx()].vm;
        self.vcpus[v.idx()].active = false;
        self.doms[vm.idx()].active_units.retain(|u| *u != v);
        let per_vcpu = self.cfg.xen.weight_per_vcpu();
        if per_vcpu {
            self.weight -= self.doms[vm.idx()].weight as u64;
        }
        if self.doms[vm.idx()].active_units.is_empty() {
            self.active_sdom.retain(|d| *d != vm);
            if !per_vcpu {
                self.weight -= self.doms[vm.idx()].weight as u64;
            }
        }
    }

    /// `csched_acct`, every tslice on the master pCPU: share out `credit` over the active domains
    /// by weight x active vCPUs (Xen 4.1 on; by weight alone in 3.3), at most one full period of
    /// run time per active vCPU, unused shares going to the domains after it; then set priorities
    /// from the sign of the credit, floor it at -credits_per_tslice and retire vCPUs above
    /// +credits_per_tslice, halving their credit (4.x) or zeroing it (3.3). Every share is rounded
    /// up as credit.c does (`(x + d - 1) / d`, here `div_ceil`).
    pub(super) fn acct(&mut self, ctx: &mut PolicyCtx) {
        let weight_total = self.weight;
        let mut credit_total = self.credit;
        // "Converge balance towards 0 when it drops negative".
        if self.credit_balance < 0 {
            credit_total += (-self.credit_balance) as u64;
        }
        if weight_total == 0 {
            self.credit_balance = 0;
            return;
        }
        let cpt = self.cfg.credits_per_tslice;
        let mut weight_left = weight_total;
        let mut credit_balance: i64 = 0;
        let mut credit_xtra = false;
        let xen = self.cfg.xen;

        // list_for_each_safe: later moves to the head and removals do not change what is visited
        // (the lists are walked as they were, copied into kept buffers: no allocation per period).
        let mut sdoms = std::mem::take(&mut self.acct_sdoms);
        sdoms.clone_from(&self.active_sdom);
        let mut units = std::mem::take(&mut self.acct_units);
        for &vm in &sdoms {
            units.clone_from(&self.doms[vm.idx()].active_units);
            let n = units.len() as u64;
            let w = self.doms[vm.idx()].weight as u64;
            // The domain's part of `prv->weight`: weight x active vCPUs, or (3.3) its weight.
            let share = if xen.weight_per_vcpu() { w * n } else { w };
            weight_left -= share;

            // A domain may earn at most one full period per active vCPU, more only while the
            // system-wide balance is negative.
            let mut credit_peak = n * cpt as u64;
            if self.credit_balance < 0 {
                credit_peak += ((-self.credit_balance) as u64 * share).div_ceil(weight_total);
            }
            // Caps: `cap` percent of one pCPU's period for the domain, per active vCPU below.
            let cap = self.cap_percent(vm);
            let mut credit_cap = 0;
            if cap != 0 {
                credit_cap = (cap * cpt as u64).div_ceil(100);
                credit_peak = credit_peak.min(credit_cap);
                credit_cap = credit_cap.div_ceil(n);
            }
            let mut credit_fair = (credit_total * share).div_ceil(weight_total);
            if credit_fair < credit_peak {
                credit_xtra = true;
            } else {
                if weight_left != 0 {
                    // "Give other domains a chance at unused credits".
                    credit_total += ((credit_fair - credit_peak) * weight_total).div_ceil(weight_left);
                }
                if credit_xtra {
                    // "Lazily keep domains with extra credits at the head of the queue".
                    self.active_sdom.retain(|d| *d != vm);
                    self.active_sdom.insert(0, vm);
                }
                credit_fair = credit_peak;
            }
            let per_unit = credit_fair.div_ceil(n) as i64;

            for &v in &units {
                self.vcpus[v.idx()].credit += per_unit;
                if self.vcpus[v.idx()].credit < 0 {
                    self.set_pri(v, PRI_OVER);
                    let svc = &self.vcpus[v.idx()];
                    // "Park running UNITs of capped-out domains".
                    if cap != 0 && svc.credit < -(credit_cap as i64) && !svc.parked {
                        self.park(ctx, v);
                    }
                    // "Lower bound on credits".
                    let svc = &mut self.vcpus[v.idx()];
                    svc.credit = svc.credit.max(-cpt);
                } else {
                    self.set_pri(v, PRI_UNDER);
                    // "Unpark any capped domains whose credits go positive".
                    if self.vcpus[v.idx()].parked {
                        self.unpark(ctx, v);
                    }
                    let svc = &mut self.vcpus[v.idx()];
                    // "Upper bound on credits means UNIT stops earning": "Divide credits in half,
                    // so that when it starts accounting again, it starts a little bit 'ahead'"
                    // (4.x); 3.3 sets them to 0.
                    if svc.credit > cpt {
                        svc.credit = if xen.halves_credit_over_peak() { svc.credit / 2 } else { 0 };
                        self.acct_stop(v);
                    }
                }
                credit_balance += self.vcpus[v.idx()].credit;
            }
        }
        self.acct_sdoms = sdoms;
        self.acct_units = units;
        self.credit_balance = credit_balance;
        // "Inform each CPU that its runq needs to be sorted".
        self.runq_sort = self.runq_sort.wrapping_add(1);
    }

    /// `csched_unit_acct`, from the tick, for the vCPU running on `p`.
    pub(super) fn unit_acct(&mut self, ctx: &mut PolicyCtx, v: VcpuId, p: usize) {
        // "If the UNIT is found here, then it's consuming a non-negligeable amount of CPU
        // resources and should no longer be boosted."
        if self.vcpus[v.idx()].pri == PRI_BOOST {
            self.set_pri(v, PRI_UNDER);
        }
        if self.cfg.xen.tick_sampled_debit() {
            // Xen 3.3: "atomic_sub(CSCHED_CREDITS_PER_TICK, &svc->credit)", whatever part of the
            // tick the vCPU ran.
            self.vcpus[v.idx()].credit -= CREDITS_PER_TICK_3_3;
        } else {
            self.burn_credits(v, ctx.now());
        }
        if !self.vcpus[v.idx()].active {
            self.acct_start(v);
        } else {
            // "If it's been active a while, check if we'd be better off migrating it".
            let new_cpu = self.cpu_pick(&ctx.host, v, false);
            if new_cpu != p {
                self.vcpus[v.idx()].migrate_pending = true;
                ctx.reschedule(PcpuId(p as u32));
            }
        }
    }

    /// `csched_tick`, every tick period on a busy pCPU.
    pub(super) fn tick(&mut self, ctx: &mut PolicyCtx, p: usize) {
        if let Some(v) = self.pcpus[p].curr {
            self.unit_acct(ctx, v, p);
        }
        self.runq_sort(p);
        let ticker = self.pcpus[p].ticker.expect("a tick fires only after start_tick made it");
        ctx.set_timer(&ticker, ctx.now() + self.cfg.tick_period);
    }

    /// Start the tick when a pCPU goes from idle to busy, aligned to the tick period.
    pub(super) fn start_tick(&mut self, ctx: &mut PolicyCtx, p: usize) {
        let now = ctx.now();
        let period = self.cfg.tick_period;
        let ticker = *self.pcpus[p].ticker.get_or_insert_with(|| ctx.init_timer((TIMER_TICK << KIND_SHIFT) | p as u64));
        self.pcpus[p].ticking = true;
        ctx.set_timer(&ticker, now + period - now % period);
    }

    /// `stop_timer(&spc->ticker)` when the pCPU goes idle.
    pub(super) fn stop_tick(&mut self, ctx: &mut PolicyCtx, p: usize) {
        if let Some(ticker) = self.pcpus[p].ticker {
            self.pcpus[p].ticking = false;
            ctx.stop_timer(&ticker);
        }
    }

    /// The domain's cap in percent of one pCPU (`sdom->cap`); 0 is uncapped. The VM's own
    /// `[[vm]] cap` (`xl sched-credit -c`, stored by `csched_dom_cntl`) wins; without one,
    /// `work_conserving = false` caps the domain at its weight's share of the pool.
    pub(super) fn cap_percent(&self, vm: VmId) -> u64 {
        let own = self.doms[vm.idx()].cap;
        if own != 0 {
            return own as u64;
        }
        if self.cfg.work_conserving {
            return 0;
        }
        // The doms cover the host's VMs (fit_to); only the pool's VMs were adjusted here (any
        // other has weight 0), and `prv->credit` is one tslice of credits per pool pCPU.
        let total: u64 = self.doms.iter().map(|d| d.weight as u64).sum();
        let npcpus = self.credit / self.cfg.credits_per_tslice as u64;
        (100 * npcpus * self.doms[vm.idx()].weight as u64).div_ceil(total.max(1))
    }

    /// `sched_unit_pause_nosync` of a capped-out vCPU: off its run queue, or off its pCPU at the
    /// reschedule this asks for.
    pub(super) fn park(&mut self, ctx: &mut PolicyCtx, v: VcpuId) {
        self.vcpus[v.idx()].parked = true;
        if self.vcpus[v.idx()].queued_on.is_some() {
            self.runq_remove(v);
        }
        let p = self.vcpus[v.idx()].processor.idx();
        if self.pcpus[p].curr == Some(v) {
            ctx.reschedule(PcpuId(p as u32));
        }
    }

    /// `sched_unit_unpause`: an awake vCPU is queued again, without a BOOST (credit.c clears the
    /// PARKED flag only after the wake, so `csched_unit_wake` does not boost it), except in Xen
    /// 4.4 and 4.7 (`Xen::unpark_boosts`).
    pub(super) fn unpark(&mut self, ctx: &mut PolicyCtx, v: VcpuId) {
        let svc = &self.vcpus[v.idx()];
        let running = self.pcpus[svc.processor.idx()].curr == Some(v);
        if svc.awake && !running && svc.queued_on.is_none() {
            self.rehome_if_disallowed(&ctx.host, v);
            if self.cfg.xen.unpark_boosts() {
                // 4.4 and 4.7 clear PARKED before vcpu_unpause, so csched_vcpu_wake boosts it
                // (the comment there asks for the opposite; fixed in 4.13, commit 5c8c0ae7c4).
                self.vcpus[v.idx()].parked = false;
                self.queue_woken(ctx, v);
                return;
            }
            self.runq_insert(v);
            self.runq_tickle(ctx, v);
            let p = self.vcpus[v.idx()].processor.idx();
            self.queued_urgent(ctx, v, p);
        }
        self.vcpus[v.idx()].parked = false;
    }
}
