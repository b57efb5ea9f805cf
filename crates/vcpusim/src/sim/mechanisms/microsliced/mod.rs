//! Flexible micro-sliced cores, seed 002 (EuroSys'18, Ahn et al.), sections 4-5: a child cpupool
//! of pCPUs scheduled with a 0.1 ms slice, into which the hypervisor moves a preempted vCPU that
//! was executing a critical guest OS service, for one micro slice (`[host.microsliced]`,
//! scenario/microsliced_sections.rs).
//!
//! - hypervisor/critical_detect.rs: the whitelist of Table 3's functions and what each urgent
//!   signal (a yield, a virtual IRQ, a relayed IPI) accelerates; the policy carrying micro cores
//!   calls it and asks the host through `Request::Accelerate` / `Request::CountUrgent`.
//! - hypervisor/policies/micro_pool.rs: the micro pool's scheduler: at most one vCPU per pCPU,
//!   one slice, no BOOST, no balancing, no accounting of its own.
//! - `algorithm.rs` here: Algorithm 1, the dynamic number of micro cores, as a pure state machine.
//!
//! This module is the host's side: the micro pool beside its parent pool, moving an accelerated vCPU
//! in for one slice and back, resizing the pool (static at build; dynamic by Algorithm 1 on its
//! own timer), the counts Algorithm 1 reads, and the check-mode invariants.
//!
//! The real code is the authors' Xen 4.7 (github.com/Jeongseob/xen): `sched_try_offload_siblings`
//! and `find_hidden_cpu` (accelerate: an idle hidden pCPU), `vcpu_migrate_to_cpu` (the move),
//! `context_saved` (the return to `prev_processor` when descheduled from a hidden pCPU),
//! `csched_event_acct` (the resizing, which takes odd-numbered pCPUs: the second hardware thread
//! of each core on their E5645, and leaves a hidden pCPU running an accelerated vCPU in place,
//! `hidden_locked_cpus`). Departures are in docs/model.md § seed 002: micro-sliced cores.

pub mod algorithm;

use super::super::state::{Event, Sim};
use super::MechanismEvent;
use crate::hypervisor::critical_events::{AccelReason, UrgentEvent};
use crate::hypervisor::host_view::PoolView;
use crate::hypervisor::policies::micro_pool::MicroPool;
use crate::hypervisor::policy::{VcpuState, YieldReason};
use crate::ids::{PcpuId, PoolId, VcpuId};
use crate::scenario::microsliced_sections::{MicroConfig, Mode};
use crate::time::Nanos;
use crate::vmexit::KernelFn;
use algorithm::{Algorithm1, UrgentCounts};
use std::fmt::Write;

/// A vCPU on loan to the micro pool.
#[derive(Clone, Copy, Debug)]
pub struct Loan {
    pub pcpu: PcpuId,
    /// Its `run_time` when it was lent (the return charges the difference to the parent).
    pub run_time_at_lend: Nanos,
    /// When it was lent (the invariant: back within one slice plus a context switch).
    pub since: Nanos,
    /// Its last pCPU in the parent pool.
    pub home: PcpuId,
}

/// The micro pool's host-side state (`Sim::micro`).
pub struct MicroState {
    pub cfg: MicroConfig,
    pub pool: PoolId,
    pub parent: PoolId,
    /// Dynamic mode: Algorithm 1.
    pub algorithm: Option<Algorithm1>,
    /// Urgent events since Algorithm 1 last ran.
    pub counts: UrgentCounts,
    /// Per vCPU: its loan, while it is in the micro pool.
    pub loans: Vec<Option<Loan>>,
    /// Per pCPU: the vCPU on loan there (the same loans by pCPU: at most one per micro pCPU),
    /// so that neither an acceleration nor a decision on a micro pCPU reads every vCPU's loan.
    pub lent_on: Vec<Option<VcpuId>>,
    /// The pool size Algorithm 1 asked for (static: `cores`).
    pub target: u32,
    /// A `SkipYield` of the policy call in progress, and whether an acceleration succeeded since
    /// the yield began.
    skip_yield: Option<(VcpuId, bool)>,
    accelerated_since_yield: bool,
    /// Acceleration requests refused for want of a free micro pCPU.
    pub refused: u64,
    /// (time, pool size) at every change: the pool's size over time.
    pub sizes: Vec<(Nanos, u32)>,
}

/// The pCPUs the pool takes first: odd-numbered ones in increasing order (the released
/// `csched_event_acct`'s `if ( cpu % 2 == 0 ) continue;`), then the even ones from the top.
pub fn micro_candidates(pool: &[PcpuId]) -> Vec<PcpuId> {
    let mut odd: Vec<PcpuId> = pool.iter().copied().filter(|p| p.0 % 2 == 1).collect();
    let mut even: Vec<PcpuId> = pool.iter().copied().filter(|p| p.0 % 2 == 0).collect();
    even.reverse();
    odd.extend(even);
    odd
}

impl Sim {
    /// Build the micro pool (`[host.microsliced]`) beside pool 0, its parent: static mode moves
    /// `cores` pCPUs into it now (before any pCPU schedules), dynamic mode starts it empty and
    /// arms Algorithm 1 at time 0. The parent's policy must carry micro cores
    /// (`Policy::microsliced`; it was built with `cfg.detect`, `HostShape::microsliced`); its
    /// `kernel_fn` channel is declared if `symbols`.
    pub(in crate::sim) fn build_microsliced(&mut self, cfg: &MicroConfig) -> Result<(), String> {
        let parent = PoolId(0);
        if self.placement.policy_mut(parent).microsliced().is_none() {
            return Err(format!(
                "micro-sliced cores need a policy that carries them (credit); pool {:?} runs {}",
                self.placement.view(parent).name,
                self.placement.pool(parent).policy.name()
            ));
        }
        if cfg.symbols {
            self.placement.open_kernel_fn_channel(parent);
        }
        let parent_pcpus = self.placement.view(parent).pcpus.clone();
        cfg.check_cores(&self.placement.view(parent).name, parent_pcpus.len())?;
        let initial: Vec<PcpuId> = match cfg.mode {
            Mode::Static => micro_candidates(&parent_pcpus).into_iter().take(cfg.cores as usize).collect(),
            Mode::Dynamic => Vec::new(),
        };
        let npcpus = self.pinfo.len();
        let view = PoolView::new(PoolId(self.placement.pools().len() as u32), "micro".into(), crate::hardware::cpumask::CpuMask::empty());
        let id = self.placement.add_pool(view, Box::new(MicroPool::new(cfg.slice, npcpus)), crate::vmexit::Channels::NONE);
        for p in &initial {
            self.placement.remove_pcpu(*p);
            self.placement.add_pcpu(*p, id);
        }
        self.placement.set_micro_pool(id);
        // vCPUs homed on a pCPU the micro pool took get a home in the parent.
        for v in 0..self.vinfo.len() {
            if self.placement.pcpu_pool(self.vinfo[v].last_pcpu) == id {
                self.vinfo[v].last_pcpu = self.home_in_pool(VcpuId(v as u32), parent);
            }
        }
        let algorithm = (cfg.mode == Mode::Dynamic).then(|| Algorithm1::new(cfg.cores, cfg.profile_interval, cfg.epoch));
        if algorithm.is_some() {
            self.queue.push(0, Event::Mechanism(MechanismEvent::MicroAdjust));
        }
        self.mechanisms.microsliced = Some(Box::new(MicroState {
            cfg: cfg.clone(),
            pool: id,
            parent,
            algorithm,
            counts: UrgentCounts::default(),
            loans: vec![None; self.vinfo.len()],
            lent_on: vec![None; npcpus],
            target: initial.len() as u32,
            skip_yield: None,
            accelerated_since_yield: false,
            refused: 0,
            sizes: vec![(0, initial.len() as u32)],
        }));
        Ok(())
    }

    /// `Request::CountUrgent`.
    pub(in crate::sim) fn micro_count(&mut self, event: UrgentEvent) {
        if let Some(m) = self.mechanisms.microsliced.as_mut() {
            match event {
                UrgentEvent::Ipi => m.counts.ipis += 1,
                UrgentEvent::Ple => m.counts.ples += 1,
                UrgentEvent::Irq => m.counts.irqs += 1,
            }
        }
    }

    /// `Request::SkipYield`.
    pub(in crate::sim) fn micro_skip_yield(&mut self, v: VcpuId, if_accelerated: bool) {
        if let Some(m) = self.mechanisms.microsliced.as_mut() {
            m.skip_yield = Some((v, if_accelerated));
        }
    }

    /// The yield entry (Xen `vcpu_yield`) of running vCPU `v`: the policy's `yield_vcpu`, then
    /// whether the yield happens (the host reschedules `v`'s pCPU) or the policy's detection
    /// cancelled it (seed 002's IPI case, or a lock case that accelerated a sibling). Every
    /// yield of a running vCPU goes through here (pause-loop exits; `SCHEDOP_yield`).
    pub fn yield_entry(&mut self, v: VcpuId, reason: YieldReason) -> bool {
        if let Some(m) = self.mechanisms.microsliced.as_mut() {
            m.skip_yield = None;
            m.accelerated_since_yield = false;
        }
        self.with_vcpu_policy(v, |pol, ctx| pol.yield_vcpu(ctx, v, reason));
        match self.mechanisms.microsliced.as_mut().and_then(|m| m.skip_yield.take().map(|s| (s, m.accelerated_since_yield))) {
            Some(((u, if_accelerated), accelerated)) if u == v => if_accelerated && !accelerated,
            _ => true,
        }
    }

    /// The host relays a virtual IRQ of a device to `v`: the hook of seed 002's vIRQ detection
    /// (`MicroSliced::virq_sent`), called by the device path (`Sim::device_irq`) before the vCPU is kicked.
    pub fn virq_relayed(&mut self, v: VcpuId) {
        if self.mechanisms.microsliced.is_some() {
            // A vCPU on loan in the micro pool is in no parent's books this instant: the micro
            // pool's own policy carries no detection.
            self.with_vcpu_policy(v, |pol, ctx| {
                if let Some(m) = pol.microsliced() {
                    m.virq_sent(ctx, v);
                }
            });
        }
    }

    /// `Request::Accelerate`: move preempted `v` onto a free micro pCPU for one slice (released
    /// `find_hidden_cpu`: the first idle hidden pCPU; `vcpu_migrate_to_cpu`). A vCPU not in the
    /// parent pool, not Runnable, or already lent is left alone; with no free micro pCPU the
    /// request is refused (counted).
    pub(in crate::sim) fn accelerate(&mut self, v: VcpuId, reason: AccelReason, func: KernelFn) {
        let Some(m) = self.mechanisms.microsliced.as_ref() else { return };
        let (pool, parent) = (m.pool, m.parent);
        if self.placement.vcpu_pool(v) != parent || self.vinfo[v.idx()].state != VcpuState::Runnable || m.loans[v.idx()].is_some() {
            return;
        }
        let free = self.placement.pools()[pool.idx()]
            .view
            .pcpus
            .iter()
            .copied()
            .find(|p| self.pcpus[p.idx()].online && self.pinfo[p.idx()].current.is_none() && m.lent_on[p.idx()].is_none());
        let Some(p) = free else {
            self.mechanisms.microsliced.as_mut().expect("checked").refused += 1;
            return;
        };
        self.with_policy(parent, |pol, ctx| pol.microsliced().expect("checked at build").lend_vcpu(ctx, v));
        let home = self.vinfo[v.idx()].last_pcpu;
        let loan = Loan { pcpu: p, run_time_at_lend: self.vinfo[v.idx()].run_time, since: self.now, home };
        let m = self.mechanisms.microsliced.as_mut().expect("checked");
        m.loans[v.idx()] = Some(loan);
        m.lent_on[p.idx()] = Some(v);
        m.accelerated_since_yield = true;
        self.set_vcpu_pool(v, pool);
        self.vinfo[v.idx()].last_pcpu = p;
        let vm = self.vinfo[v.idx()].vm.idx();
        self.vms[vm].stats.accelerated[reason.idx()] += 1;
        if let Some(tr) = self.trace.as_mut() {
            let name = format!("accelerate vCPU {v} ({}, in {})", reason.name(), func.name());
            tr.instant(0, p.0, &name, self.now);
        }
        self.with_policy(pool, |pol, ctx| pol.insert_vcpu(ctx, v));
    }

    /// After a decision on micro pCPU `p`: a lent vCPU no longer running there (its slice ended,
    /// it halted or yielded) goes back to the parent pool (released `context_saved`).
    pub(in crate::sim) fn micro_after_schedule(&mut self, p: PcpuId) {
        let Some(m) = self.mechanisms.microsliced.as_ref() else { return };
        let Some(v) = m.lent_on[p.idx()] else { return };
        let i = v.idx();
        if self.vinfo[i].state == VcpuState::Running && self.vinfo[i].pcpu == Some(p) {
            return;
        }
        self.micro_return(v);
    }

    fn micro_return(&mut self, v: VcpuId) {
        let m = self.mechanisms.microsliced.as_mut().expect("a loan implies micro");
        let loan = m.loans[v.idx()].take().expect("lent");
        m.lent_on[loan.pcpu.idx()] = None;
        let (pool, parent, target) = (m.pool, m.parent, m.target);
        self.with_policy(pool, |pol, ctx| pol.remove_vcpu(ctx, v));
        self.set_vcpu_pool(v, parent);
        let parent_mask = &self.placement.view(parent).mask;
        self.vinfo[v.idx()].last_pcpu =
            if parent_mask.contains(loan.home) { loan.home } else { parent_mask.first().expect("the parent pool keeps a pCPU") };
        let ran = self.vinfo[v.idx()].run_time - loan.run_time_at_lend;
        self.with_policy(parent, |pol, ctx| pol.microsliced().expect("checked at build").return_vcpu(ctx, v, ran));
        // A pool Algorithm 1 shrank while this pCPU was busy gives it back now.
        if self.placement.view(pool).pcpus.len() as u32 > target && self.pinfo[loan.pcpu.idx()].current.is_none() {
            self.move_pcpu(loan.pcpu, parent);
            self.note_micro_size();
        }
    }

    fn note_micro_size(&mut self) {
        let Some(m) = self.mechanisms.microsliced.as_mut() else { return };
        let n = self.placement.view(m.pool).pcpus.len() as u32;
        if m.sizes.last().map(|s| s.1) != Some(n) {
            m.sizes.push((self.now, n));
        }
        if let Some(tr) = self.trace.as_mut() {
            tr.counter(0, "micro-sliced cores", self.now, n as f64);
        }
    }

    /// `Event::MicroAdjust`: run Algorithm 1 on the counts of the interval that ended, resize the
    /// pool, arm the next call.
    pub(in crate::sim) fn micro_adjust(&mut self) {
        let Some(m) = self.mechanisms.microsliced.as_mut() else { return };
        let counts = std::mem::take(&mut m.counts);
        let Some(alg) = m.algorithm.as_mut() else { return };
        let step = alg.step(counts);
        m.target = step.num_cores;
        let (pool, parent) = (m.pool, m.parent);
        let mut have: Vec<PcpuId> = self.placement.view(pool).pcpus.clone();
        while (have.len() as u32) < step.num_cores {
            let Some(p) = micro_candidates(&self.placement.view(parent).pcpus).into_iter().next() else { break };
            if self.placement.view(parent).pcpus.len() <= 1 {
                break;
            }
            self.move_pcpu(p, pool);
            have.push(p);
        }
        if (have.len() as u32) > step.num_cores {
            // Give back idle micro pCPUs, the last taken first; a busy one follows when its vCPU
            // returns (released: `hidden_locked_cpus` stay).
            let mut idle: Vec<PcpuId> = have.iter().copied().filter(|p| self.pinfo[p.idx()].current.is_none()).collect();
            idle.sort_by_key(|p| std::cmp::Reverse(micro_candidates(&have).iter().position(|q| q == p)));
            let excess = have.len() - step.num_cores as usize;
            for p in idle.into_iter().take(excess) {
                self.move_pcpu(p, parent);
            }
        }
        self.note_micro_size();
        if let Some(tr) = self.trace.as_mut() {
            let name = format!("Algorithm 1: {} -> {} micro cores", step.branch.name(), step.num_cores);
            tr.instant(0, 0, &name, self.now);
        }
        self.queue.push(self.now + step.interval, Event::Mechanism(MechanismEvent::MicroAdjust));
    }

    /// Check mode: no vCPU waits on a micro pCPU behind another (every loan has its own pCPU and
    /// a lent vCPU is running or about to leave), and every lent vCPU is back within one micro
    /// slice plus a context switch of being lent.
    pub(in crate::sim) fn check_microsliced(&self) -> Result<(), String> {
        let Some(m) = self.mechanisms.microsliced.as_ref() else { return Ok(()) };
        let bound = m.cfg.slice + self.costs.context_switch;
        let mut seen = std::collections::BTreeMap::new();
        for (i, l) in m.loans.iter().enumerate() {
            let Some(l) = l else { continue };
            if let Some(other) = seen.insert(l.pcpu, i) {
                return Err(format!("micro pCPU {} holds vCPU {other} and vCPU {i}", l.pcpu));
            }
            let pool = self.placement.vcpu_pools()[i];
            if pool != m.pool {
                return Err(format!("vCPU {i} is lent to the micro pool but belongs to pool {pool}"));
            }
            if self.vinfo[i].state != VcpuState::Running {
                return Err(format!("vCPU {i} waits in micro pCPU {}'s run queue ({:?})", l.pcpu, self.vinfo[i].state));
            }
            if self.now > l.since + bound {
                return Err(format!(
                    "vCPU {i} accelerated at {} ns is still on micro pCPU {} at {} ns (bound: one {} ns slice plus a {} ns context switch)",
                    l.since, l.pcpu, self.now, m.cfg.slice, self.costs.context_switch
                ));
            }
        }
        // The loans by pCPU are the loans by vCPU, both ways.
        for (p, lent) in m.lent_on.iter().enumerate() {
            let by_vcpu = seen.get(&PcpuId(p as u32)).map(|&i| VcpuId(i as u32));
            if *lent != by_vcpu {
                return Err(format!("micro pCPU {p}: lent_on says {lent:?}, the loans say {by_vcpu:?}"));
            }
        }
        for (i, pool) in self.placement.vcpu_pools().iter().enumerate() {
            if *pool == m.pool && m.loans[i].is_none() {
                return Err(format!("vCPU {i} is in the micro pool without a loan"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn micro_cores_are_the_odd_pcpus_first() {
        let pool: Vec<PcpuId> = (0..6).map(PcpuId).collect();
        assert_eq!(micro_candidates(&pool), vec![PcpuId(1), PcpuId(3), PcpuId(5), PcpuId(4), PcpuId(2), PcpuId(0)]);
    }
}

/// Columns vms.csv gains after `VM_COLUMNS` with `[host.microsliced]` (seed 002): vCPUs moved
/// into the micro-sliced pool, in all and by reason (`hypervisor::critical_events::AccelReason`).
/// Only then, so that runs without micro-sliced cores keep their bytes.
pub const MICROSLICED_COLUMNS: &[&str] =
    &["accelerated_count", "accelerated_tlb_count", "accelerated_lock_count", "accelerated_irq_count", "accelerated_ipi_count"];

impl Sim {
    /// VM `i`'s [`MICROSLICED_COLUMNS`] cells (each after a comma).
    pub(in crate::sim) fn micro_vm_cells(&self, i: usize, out: &mut String) {
        let a = &self.vms[i].stats.accelerated;
        write!(out, ",{}", a.iter().sum::<u64>()).expect("writing to a String cannot fail");
        for reason in AccelReason::ALL {
            write!(out, ",{}", a[reason.idx()]).expect("writing to a String cannot fail");
        }
    }

    /// summary.json's `microsliced`: the micro pool's size over time (each change), the mode
    /// and sizes configured, and refused accelerations (no free micro pCPU).
    pub(in crate::sim) fn micro_summary(&self, summary: &mut serde_json::Value) {
        if let Some(m) = &self.mechanisms.microsliced {
            summary["microsliced"] = serde_json::json!({
                "mode": m.cfg.mode.name(),
                "cores": m.cfg.cores,
                "slice_ns": m.cfg.slice,
                "symbols": m.cfg.symbols,
                "sizes": m.sizes.iter().map(|(at, n)| serde_json::json!({"at_ns": at, "cores": n})).collect::<Vec<_>>(),
                "refused": m.refused,
            });
        }
    }
}
