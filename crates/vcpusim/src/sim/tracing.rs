//! What the engine tells the schedule trace (`metrics/trace.rs`) at each switch, wake and IPI:
//! one method per moment, called only when the run is traced, so the hot paths carry a single
//! `if self.trace.is_some()` each. Nothing here changes the simulation. The methods the event
//! loop and the guest's entry reach are `#[cold]`: LLVM keeps them out of line and lays the
//! untraced path out straight (inlined, `trace_handoffs` alone would be 12 KB of
//! `Sim::dispatch`, the interpreter; docs/speed.md).
//!
//! Track numbering (the trace's pid/tid): process 0 is the host with one thread per pCPU;
//! process 1 + VM index is a VM with one thread per vCPU (its index in the VM).

use super::state::Sim;
use crate::guest::handoff::{HandOff, HandOffEvent};
use crate::hypervisor::policy::VcpuState;
use crate::ids::{PcpuId, ThreadId, VcpuId};
use crate::metrics::trace::OffReason;
use crate::vmexit::IpiKind;

/// The host's process in the trace.
const HOST_PID: u32 = 0;

impl Sim {
    /// The trace track (pid, tid) of vCPU `v`.
    fn vcpu_track(&self, v: VcpuId) -> (u32, u32) {
        (1 + self.vinfo[v.idx()].vm.0, self.vinfo[v.idx()].index)
    }

    /// `vm/vN`, as the pCPU tracks name the vCPU they run.
    pub(super) fn vcpu_label(&self, v: VcpuId) -> String {
        format!("{}/v{}", self.vminfo[self.vinfo[v.idx()].vm.idx()].name, self.vinfo[v.idx()].index)
    }

    /// Every vCPU starts runnable, waiting for its first pCPU.
    pub(super) fn trace_start(&mut self) {
        for v in 0..self.vinfo.len() {
            let (pid, tid) = self.vcpu_track(VcpuId(v as u32));
            if let Some(tr) = self.trace.as_mut() {
                tr.vcpu_off(v, pid, tid, self.now, None, OffReason::Starting);
            }
        }
        self.trace_counters(None);
    }

    /// `v` left pCPU `p` (`switch_out`): close its slice on the pCPU track and open its state
    /// off the pCPU (preempted, yielded or halted).
    #[cold]
    pub(super) fn trace_switch_out(&mut self, v: VcpuId, p: PcpuId) {
        let halted = self.vinfo[v.idx()].state == VcpuState::Halted;
        let reason = if halted {
            OffReason::Halted
        } else if self.vcpus[v.idx()].yielding {
            OffReason::Yielded
        } else {
            OffReason::Preempted
        };
        let left = match reason {
            OffReason::Halted => "halt",
            OffReason::Yielded => "yield",
            _ => "preempted",
        };
        let label = self.vcpu_label(v);
        let (pid, tid) = self.vcpu_track(v);
        let vm = self.vminfo[self.vinfo[v.idx()].vm.idx()].name.clone();
        let start = self.pcpus[p.idx()].run_start;
        if let Some(tr) = self.trace.as_mut() {
            let args = [("vm", vm.into()), ("vcpu", tid.into()), ("left", left.into())];
            tr.span_with(HOST_PID, p.0, &label, start, self.now, &args);
            tr.vcpu_off(v.idx(), pid, tid, self.now, Some(p.0), reason);
        }
        self.trace_counters(Some(v));
    }

    /// `v` runs on `p` from now (`switch_in`).
    #[cold]
    pub(super) fn trace_switch_in(&mut self, v: VcpuId, p: PcpuId) {
        let label = self.vcpu_label(v);
        if let Some(tr) = self.trace.as_mut() {
            tr.vcpu_on(v.idx(), self.now, p.0, &label);
        }
        self.trace_counters(Some(v));
    }

    /// Halted `v` was woken: it waits for a pCPU.
    #[cold]
    pub(super) fn trace_wake(&mut self, v: VcpuId) {
        if let Some(tr) = self.trace.as_mut() {
            tr.vcpu_woken(v.idx(), self.now);
        }
        self.trace_counters(Some(v));
    }

    /// The run ends: close the slices still open (the pCPU slices are closed by `finish`).
    pub(super) fn trace_end(&mut self) {
        if let Some(tr) = self.trace.as_mut() {
            tr.close_all(self.now);
        }
    }

    /// `from` sends an IPI of `kind` to `to`: the start of a flow arrow on the sender's track.
    #[cold]
    pub(super) fn trace_ipi_sent(&mut self, from: VcpuId, to: VcpuId, kind: IpiKind) {
        let (pid, tid) = self.vcpu_track(from);
        let target = self.vcpu_label(to);
        if let Some(tr) = self.trace.as_mut() {
            tr.ipi_sent(pid, tid, kind.name(), self.now, to.idx(), &[("to", target.into())]);
        }
    }

    /// The oldest IPI pending for `to` reaches its guest: the end of its flow arrow.
    #[cold]
    pub(super) fn trace_ipi_received(&mut self, to: VcpuId, from: VcpuId, kind: IpiKind) {
        let (pid, tid) = self.vcpu_track(to);
        let sender = self.vcpu_label(from);
        if let Some(tr) = self.trace.as_mut() {
            tr.ipi_received(to.idx(), pid, tid, &format!("{} received", kind.name()), self.now, &[("from", sender.into())]);
        }
    }

    /// `vm/tN`: thread `t` by its index in its VM.
    fn thread_label(&self, t: ThreadId) -> String {
        let th = &self.guests.threads()[t.idx()];
        format!("{}/t{}", self.vminfo[th.vm.idx()].name, th.index)
    }

    /// The lock hand-offs VM `vm`'s guest recorded during its last `run` (guest/handoff.rs): a
    /// flow arrow from the release on the releasing vCPU's track to where the waiter resumes on
    /// its own vCPU's track.
    #[cold]
    pub(super) fn trace_handoffs(&mut self, vm: usize) {
        let Some(log) = self.guests.kernel_mut(vm).handoffs.as_mut() else { return };
        if log.is_empty() {
            return;
        }
        let records: Vec<HandOff> = log.drain().collect();
        for HandOff { at, event } in records {
            match event {
                HandOffEvent::Release { kind, lock, from, from_vcpu, to } => {
                    let (pid, tid) = self.vcpu_track(from_vcpu);
                    let from_label = format!("{} on {}", self.thread_label(from), self.vcpu_label(from_vcpu));
                    let to_label = self.thread_label(to);
                    if let Some(tr) = self.trace.as_mut() {
                        tr.handoff_released(pid, tid, at, kind.name(), &lock, &from_label, to.idx(), &to_label);
                    }
                }
                HandOffEvent::Resume { thread, vcpu } => {
                    let (pid, tid) = self.vcpu_track(vcpu);
                    let label = format!("{} on {}", self.thread_label(thread), self.vcpu_label(vcpu));
                    if let Some(tr) = self.trace.as_mut() {
                        tr.handoff_resumed(thread.idx(), &label, pid, tid, at);
                    }
                }
            }
        }
    }

    /// Counter tracks: the vCPUs waiting for a pCPU (host-wide, or per pool when there are
    /// several) and, for `v`'s VM (every VM when `None`), its running vCPUs and its share of the
    /// host's pCPUs. Recomputed by a scan of the vCPUs: traced runs only.
    #[cold]
    fn trace_counters(&mut self, v: Option<VcpuId>) {
        let npools = self.placement.pools().len();
        let mut waiting = vec![0u32; npools];
        let mut running = vec![0u32; self.vminfo.len()];
        for (i, info) in self.vinfo.iter().enumerate() {
            match info.state {
                VcpuState::Runnable => waiting[self.placement.vcpu_pools()[i].idx()] += 1,
                VcpuState::Running => running[info.vm.idx()] += 1,
                VcpuState::Halted => {}
            }
        }
        let pcpus = self.pcpus.len() as f64;
        let vms: Vec<usize> = match v {
            Some(v) => vec![self.vinfo[v.idx()].vm.idx()],
            None => (0..self.vminfo.len()).collect(),
        };
        let pool_names: Vec<String> = self.placement.pools().iter().map(|p| p.view.name.clone()).collect();
        let Some(tr) = self.trace.as_mut() else { return };
        for (pool, n) in waiting.iter().enumerate() {
            let name = if npools > 1 { format!("runnable vCPUs ({})", pool_names[pool]) } else { "runnable vCPUs".to_string() };
            tr.counter(HOST_PID, &name, self.now, *n as f64);
        }
        for vm in vms {
            tr.counter(1 + vm as u32, "running vCPUs", self.now, running[vm] as f64);
            tr.counter(1 + vm as u32, "share of the host", self.now, running[vm] as f64 / pcpus);
        }
    }
}
