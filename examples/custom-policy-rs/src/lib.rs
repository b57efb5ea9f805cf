//! A round-robin vCPU scheduler written against vcpusim's public policy interface
//! (`vcpusim::policy`): one global FIFO of Runnable vCPUs, a fixed time slice, a woken vCPU
//! placed on an idle pCPU it may run on. Registered as `policy = "round-robin"`.

use std::collections::VecDeque;
use vcpusim::policy::{
    Decision, HostShape, Nanos, ParamSpec, Params, PcpuId, Policy, PolicyCtx, PolicyKind, VcpuId, VcpuState, VmId, VmSched, YieldReason,
};

/// The policy instance of one pool.
pub struct RoundRobin {
    /// Runnable vCPUs not running, oldest first.
    queue: VecDeque<VcpuId>,
    slice: Nanos,
}

impl RoundRobin {
    /// Queue `v` at the back and wake an idle pCPU it may run on, if there is one.
    fn enqueue(&mut self, ctx: &mut PolicyCtx, v: VcpuId) {
        self.queue.push_back(v);
        let host = ctx.host;
        if let Some(p) = host.pcpu_ids().find(|&p| host.pcpu(p).current.is_none() && host.may_run(v, p)) {
            ctx.reschedule(p);
        }
    }
}

impl Policy for RoundRobin {
    fn name(&self) -> &'static str {
        "round-robin"
    }

    fn insert_vcpu(&mut self, ctx: &mut PolicyCtx, v: VcpuId) {
        self.enqueue(ctx, v);
    }

    fn wake(&mut self, ctx: &mut PolicyCtx, v: VcpuId, _waker: Option<PcpuId>) {
        self.enqueue(ctx, v);
    }

    /// A running vCPU is never queued, so a halting one has nothing to leave.
    fn sleep(&mut self, _ctx: &mut PolicyCtx, _v: VcpuId) {}

    /// The yielder goes to the back in the `do_schedule` that follows.
    fn yield_vcpu(&mut self, _ctx: &mut PolicyCtx, _v: VcpuId, _reason: YieldReason) {}

    fn do_schedule(&mut self, ctx: &mut PolicyCtx, p: PcpuId) -> Decision {
        let host = ctx.host;
        let prev = host.pcpu(p).current.filter(|&c| host.vcpu(c).state == VcpuState::Running);
        match self.queue.iter().position(|&v| host.may_run(v, p)) {
            Some(i) => {
                let next = self.queue.remove(i).expect("found above");
                if let Some(prev) = prev {
                    self.queue.push_back(prev);
                }
                Decision::run(next, Some(self.slice))
            }
            None => match prev {
                Some(prev) => Decision::run(prev, Some(self.slice)),
                None => Decision::idle(),
            },
        }
    }

    /// Round robin has no per-VM settings: weights and caps are ignored.
    fn adjust(&mut self, _ctx: &mut PolicyCtx, _vm: VmId, _sched: &VmSched) {}

    /// Check mode: every queued vCPU is Runnable and queued once.
    fn check(&self, host: &vcpusim::policy::HostView) -> Result<(), String> {
        for (i, &v) in self.queue.iter().enumerate() {
            if host.vcpu(v).state != VcpuState::Runnable {
                return Err(format!("queued vCPU {v} is {:?}", host.vcpu(v).state));
            }
            if self.queue.iter().skip(i + 1).any(|&w| w == v) {
                return Err(format!("vCPU {v} is queued twice"));
            }
        }
        Ok(())
    }
}

/// The registry's entry for [`RoundRobin`]: its name, parameters and constructor.
pub struct RoundRobinKind;

impl PolicyKind for RoundRobinKind {
    fn name(&self) -> &'static str {
        "round-robin"
    }
    fn describe(&self) -> &'static str {
        "one FIFO of runnable vCPUs and a fixed slice (examples/custom-policy-rs)"
    }
    fn params(&self) -> Vec<ParamSpec> {
        vec![ParamSpec::duration("slice", 10_000_000, "time slice of every vCPU").at_least(1_000.0)]
    }
    fn build(&self, params: &Params, _host: HostShape) -> Box<dyn Policy> {
        Box::new(RoundRobin { queue: VecDeque::new(), slice: params.duration("slice") })
    }
}

/// Add `round-robin` to this process's policies (harmless if done before).
pub fn register() {
    vcpusim::policy::register(&RoundRobinKind).expect("no other policy is named round-robin");
}
