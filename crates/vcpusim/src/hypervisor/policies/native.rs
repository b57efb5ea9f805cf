//! `native`: the pCPUs of a bare-metal VM (`[[vm]] bare_metal = true`, seed 001's physical
//! machine, "PM"). There is no hypervisor: the guest kernel runs on the pCPUs themselves, one of
//! its CPUs per pCPU. The engine still moves each CPU through Running / Halted, so this policy
//! only dispatches: pCPU `p` runs the one vCPU pinned to it whenever that vCPU is runnable, with
//! no slice, and idles while it is halted (the guest's idle loop, `hlt` on the real CPU). The
//! loader pins vCPU i of the VM to the i-th pCPU of its `cpus` and puts those pCPUs in a pool of
//! their own (scenario/bare_metal.rs `carve_bare_metal`), so no other VM's vCPU ever runs there.
//!
//! Not in the registry: a scenario cannot name it as a host or pool policy; `bare_metal`
//! selects it.

use super::{HostShape, PolicyKind};
use crate::hypervisor::policy::{Decision, HostView, Policy, PolicyCtx, VcpuState, VmSched, YieldReason};
use crate::ids::{PcpuId, VcpuId, VmId};
use crate::params::{ParamSpec, Params};

/// The kind, found by `policies::find_any("native")`.
pub struct NativeKind;

impl PolicyKind for NativeKind {
    fn name(&self) -> &'static str {
        "native"
    }
    fn describe(&self) -> &'static str {
        "no hypervisor: each pCPU runs the one bare-metal vCPU pinned to it whenever it is runnable"
    }
    fn params(&self) -> Vec<ParamSpec> {
        Vec::new()
    }
    fn build(&self, _params: &Params, host: HostShape) -> Box<dyn Policy> {
        Box::new(Native { on: vec![None; host.npcpus as usize] })
    }
}

/// Which vCPU lives on each pCPU (learned at `insert_vcpu` from its home pCPU, which is its only
/// allowed pCPU).
pub struct Native {
    on: Vec<Option<VcpuId>>,
}

impl Policy for Native {
    fn name(&self) -> &'static str {
        "native"
    }
    fn insert_vcpu(&mut self, ctx: &mut PolicyCtx, v: VcpuId) {
        let p = ctx.host.vcpu(v).last_pcpu;
        self.on[p.idx()] = Some(v);
        ctx.reschedule(p);
    }
    fn wake(&mut self, ctx: &mut PolicyCtx, v: VcpuId, _waker: Option<PcpuId>) {
        ctx.reschedule(ctx.host.vcpu(v).last_pcpu);
    }
    fn sleep(&mut self, _ctx: &mut PolicyCtx, _v: VcpuId) {}
    fn yield_vcpu(&mut self, _ctx: &mut PolicyCtx, _v: VcpuId, _reason: YieldReason) {}
    fn do_schedule(&mut self, ctx: &mut PolicyCtx, pcpu: PcpuId) -> Decision {
        match self.on[pcpu.idx()] {
            Some(v) if matches!(ctx.host.vcpu(v).state, VcpuState::Runnable | VcpuState::Running) => {
                Decision { next: Some(v), slice: None }
            }
            _ => Decision::idle(),
        }
    }
    fn adjust(&mut self, _ctx: &mut PolicyCtx, _vm: VmId, _sched: &VmSched) {}
    fn check(&self, host: &HostView) -> Result<(), String> {
        for (p, v) in self.on.iter().enumerate() {
            if let Some(v) = v {
                if host.vcpu(*v).last_pcpu.idx() != p {
                    return Err(format!("bare-metal vCPU {v} left its pCPU {p}"));
                }
            }
        }
        Ok(())
    }
}
