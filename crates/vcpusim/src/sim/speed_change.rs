//! Speed changes of running vCPUs: the hook a contention model plugs into (`SpeedModel`) and the
//! engine side of `hardware/speed.rs` (whose `Speed` is the arithmetic). The model lives here,
//! with the host, because it reads the host's view (who runs where, and which VM each vCPU is).
//!
//! A running vCPU's timed work advances at `Vcpu::speed`. When something that can change that
//! speed happens, the work done so far is settled at the old speed and the activity's
//! `ActivityDone` event is re-timed at the new one (SimGrid's `CpuImpl::execution_start` /
//! `on_speed_change`): `settle` bumps the epoch, which makes the old end event stale, and a
//! new one is pushed. The default model is constant, so none of this ever runs for it
//! (`Sim::speed_constant`).

use super::state::{Activity, Event, Sim, TimeKind};
use crate::hardware::contention::Factors;
use crate::hardware::speed::Speed;
use crate::hardware::topology::Topology;
use crate::hypervisor::policy::HostView;
use crate::ids::{PcpuId, VcpuId};

/// The hook a contention model plugs into (seed 001: AMD CMT module sharing, NUMA distance).
///
/// The engine asks it for the speed of vCPU `v` running on pCPU `p`, given what the host looks
/// like (`HostView`: topology, which pCPU runs which vCPU, each vCPU's VM). It asks when `v` is
/// switched in and whenever `Sim::speed_changed(p)` is called; after a switch on pCPU `p` it
/// calls `speed_changed` for every pCPU in `coupled(p)`. A model must be a pure function of the
/// view (no wall clock, no hidden randomness) so runs stay deterministic.
pub trait SpeedModel {
    /// The name a scenario would use.
    fn name(&self) -> &'static str;

    /// The speed of `v` running on `p`. The view already shows `v` on `p`.
    fn speed(&self, host: &HostView, v: VcpuId, p: PcpuId) -> Speed;

    /// The speed and its split into contention factors (`hardware/contention.rs`), which the
    /// engine keeps per vCPU to count the work each source cost (vms.csv `slowdown_<source>`).
    /// Default: `speed` with no split (every factor 1.0).
    fn speed_parts(&self, host: &HostView, v: VcpuId, p: PcpuId) -> (Speed, Factors) {
        (self.speed(host, v, p), Factors::NOMINAL)
    }

    /// True if every answer is `Speed::ONE` forever: the engine then never asks, so the default
    /// model costs nothing.
    fn is_constant(&self) -> bool {
        false
    }

    /// The pCPUs (other than `p`) whose running vCPU's speed may change when `p` starts or stops
    /// running a vCPU: its SMT siblings or CMT module partners, say. A slice, so asking costs no
    /// allocation (a model precomputes its lists). Default: none.
    fn coupled(&self, _topology: &Topology, _p: PcpuId) -> &[PcpuId] {
        &[]
    }
}

/// The default model: every pCPU runs every vCPU at nominal speed, whatever else runs.
#[derive(Clone, Copy, Debug, Default)]
pub struct ConstantSpeed;

impl SpeedModel for ConstantSpeed {
    fn name(&self) -> &'static str {
        "constant"
    }

    fn speed(&self, _host: &HostView, _v: VcpuId, _p: PcpuId) -> Speed {
        Speed::ONE
    }

    fn is_constant(&self) -> bool {
        true
    }
}

impl Sim {
    /// Replace the speed model (tests, and later a scenario's contention model) and re-evaluate
    /// every running vCPU under it.
    pub fn set_speed_model(&mut self, model: Box<dyn SpeedModel>) {
        self.speed_constant = model.is_constant() && self.vm_speed.iter().all(|s| *s == Speed::ONE);
        self.speed_model = model;
        self.speed_factors.resize(self.vcpus.len(), Factors::NOMINAL);
        for p in 0..self.pinfo.len() as u32 {
            self.speed_changed(PcpuId(p));
        }
        if self.speed_constant {
            // A constant model answers 1.0 and, with no VM slowed, is never asked again: reset
            // what an earlier one set.
            for v in 0..self.vcpus.len() as u32 {
                self.set_vcpu_speed_parts(VcpuId(v), Speed::ONE, Factors::NOMINAL);
            }
        }
    }

    /// Something that may change the speed of the vCPU running on `p` happened: ask the model
    /// again and, if the speed moved, re-time the vCPU's current work.
    pub fn speed_changed(&mut self, p: PcpuId) {
        let Some(v) = self.pinfo[p.idx()].current else { return };
        let (speed, factors) = self.vcpu_speed(v, p);
        self.set_vcpu_speed_parts(v, speed, factors);
    }

    /// The speed of `v` on `p`: the model's answer times its VM's fixed virtualization factor
    /// (`vm_speed`, from `[host.costs] virt_overhead`; seed 001 III-B).
    pub(crate) fn vcpu_speed(&self, v: VcpuId, p: PcpuId) -> (Speed, Factors) {
        let (model, factors) = self.speed_model.speed_parts(&self.host_view(self.placement.pcpu_pool(p)), v, p);
        (model.times(self.vm_speed[self.vinfo[v.idx()].vm.idx()]), factors)
    }

    /// A switch on `p` happened: the pCPUs the model couples to it re-evaluate their speeds.
    pub(crate) fn notify_coupled(&mut self, p: PcpuId) {
        // By index: the list is the model's, and re-evaluating needs the whole Sim.
        let n = self.speed_model.coupled(&self.topology, p).len();
        for i in 0..n {
            let q = self.speed_model.coupled(&self.topology, p)[i];
            if q != p {
                self.speed_changed(q);
            }
        }
    }

    /// Work done in a settled segment of `elapsed` ns at `speed`: count what each contention
    /// factor cost the VM (`VmStats::contention`). Called by `settle` for timed work only, and
    /// only when the model is not constant.
    pub(super) fn count_contention(&mut self, v: VcpuId, vm: usize, kind: TimeKind, elapsed: u64, speed: Speed) {
        if !matches!(kind, TimeKind::User | TimeKind::Kernel | TimeKind::Overhead | TimeKind::Irq) {
            return; // spins are time, not work
        }
        let work = speed.work_in(elapsed);
        let lost = self.speed_factors[v.idx()].lost(work);
        let tally = &mut self.vms[vm].stats.contention;
        tally.work_ns += work;
        for (sum, l) in tally.lost_ns.iter_mut().zip(lost) {
            *sum += l;
        }
    }

    /// Set running or idle `v`'s speed. Timed work in progress is settled at the old speed
    /// (`settle`: remaining -= floor(elapsed × old)) and its end re-timed at
    /// `now + ceil(remaining / new)`. Spins are time, not work: only the speed is stored.
    pub fn set_vcpu_speed(&mut self, v: VcpuId, speed: Speed) {
        self.set_vcpu_speed_parts(v, speed, Factors::NOMINAL);
    }

    /// [`Sim::set_vcpu_speed`] with the speed's split into contention factors. A new split at the
    /// same speed settles too, so each segment's lost work is counted with the factors it ran at.
    pub fn set_vcpu_speed_parts(&mut self, v: VcpuId, speed: Speed, factors: Factors) {
        if self.vcpus[v.idx()].speed == speed && self.speed_factors.get(v.idx()).is_none_or(|f| *f == factors) {
            return;
        }
        if !self.doing_work(v) {
            self.vcpus[v.idx()].speed = speed;
            if let Some(f) = self.speed_factors.get_mut(v.idx()) {
                *f = factors;
            }
            return;
        }
        self.settle(v);
        if let Some(f) = self.speed_factors.get_mut(v.idx()) {
            *f = factors;
        }
        let vc = &mut self.vcpus[v.idx()];
        vc.speed = speed;
        let left = match vc.activity {
            Activity::Overhead { .. } | Activity::Irq => vc.remaining,
            // The guest's step holds what is left of its work.
            _ => self.guests[vc.slot.vm as usize].work_left(self.guests.threads(), vc.slot.index as usize).unwrap_or(0),
        };
        let e = self.vcpus[v.idx()].epoch;
        self.queue.push(self.now + speed.time_for(left), Event::ActivityDone(v, e));
    }

    /// Whether `v` is in the middle of timed work (which has an `ActivityDone` event to re-time):
    /// hypervisor overhead, an IRQ handler, or a thread's `Run` / `SendIpis` step.
    fn doing_work(&self, v: VcpuId) -> bool {
        let vc = &self.vcpus[v.idx()];
        match vc.activity {
            Activity::Overhead { .. } | Activity::Irq => true,
            // The time kind alone is not enough: between steps (inside `dispatch`) it still names
            // the last one; a timed step in progress has its remaining work recorded.
            Activity::Thread => {
                matches!(vc.time_kind, TimeKind::User | TimeKind::Kernel | TimeKind::Overhead)
                    && self.guests[vc.slot.vm as usize].work_left(self.guests.threads(), vc.slot.index as usize).is_some()
            }
            Activity::Off | Activity::Starting | Activity::HaltPoll => false,
        }
    }
}
