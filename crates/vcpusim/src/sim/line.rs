//! The host's side of the VM-exit line (`vmexit.rs`): every exit a guest vCPU takes is carried
//! out by `on_exit`, and every way the host enters a guest goes through `upcall`.

use super::state::{Activity, Sim, TimeKind};
use crate::hypervisor::policy::VcpuState;
use crate::ids::VcpuId;
use crate::vmexit::{Exit, KernelFn, Upcall};

impl Sim {
    /// Guest vCPU `v` traps to the host with `exit`.
    pub fn on_exit(&mut self, v: VcpuId, exit: Exit) {
        match exit {
            Exit::Hlt => {
                // The exit's cost first; `on_activity_done` then blocks the vCPU (`halt`) unless an
                // interrupt or work arrived meanwhile.
                let cost = self.costs.hlt_exit;
                self.vcpus[v.idx()].remaining = cost;
                self.start_timed(v, Activity::Overhead { halting: true }, TimeKind::Overhead, KernelFn::Idle, cost);
            }
            Exit::IpiSendStarted => self.with_vcpu_policy(v, |pol, ctx| pol.ipi_send_started(ctx, v)),
            Exit::IpiSend { kind, targets, shootdown, pages } => self.deliver_ipis(v, kind, &targets, shootdown, pages),
            Exit::PauseLoop => self.pause_loop_exit(v),
            Exit::Eoi { kind } => self.with_vcpu_policy(v, |pol, ctx| pol.ipi_handled(ctx, v, kind)),
            // No guest mechanism makes hypercalls yet (the paravirtual seeds add them): reaching
            // this is a model error, reported as one rather than a panic.
            Exit::Hypercall(h) => self.model_gap(format!("hypercall {h:?} from vCPU {v}: no host handler yet")),
        }
    }

    /// The host enters guest vCPU `v` with `upcall`.
    pub fn upcall(&mut self, v: VcpuId, upcall: Upcall) {
        match upcall {
            Upcall::Resume => self.dispatch(v),
            Upcall::Interrupt(ipi) => {
                self.gvcpu_mut(v).pending_ipis.push_back(ipi);
                let vc = &self.vcpus[v.idx()];
                if self.vinfo[v.idx()].state == VcpuState::Running && vc.activity == Activity::Thread {
                    // Interrupt the thread: pause its step and run the handler first.
                    self.settle(v);
                    self.dispatch(v);
                }
            }
            Upcall::TimerTick => self.on_guest_tick(v),
            Upcall::PreemptNotice => self.model_gap(format!("preemption notice to vCPU {v}: no guest handler yet (seed 003)")),
        }
    }

    /// Stop the run with an invariant error: the model reached a path it does not have yet.
    fn model_gap(&mut self, message: String) {
        if self.stop.is_none() {
            self.stop = Some(crate::SimError::Invariant { time_ns: self.now, message });
        }
    }
}
