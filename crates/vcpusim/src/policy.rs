//! The public policy interface: everything a scheduling policy written outside this crate needs,
//! in one place. A policy is a [`Policy`] (what it answers: Xen's `struct scheduler` with
//! sched_ext's notifications), built by a [`PolicyKind`] (its name, parameters and
//! constructor) that [`register`] adds to the registry, after which a scenario names it like a
//! built-in one (`policy = "round-robin"`) and [`crate::api::run`] runs it on the same engine.
//!
//! ```text
//!   engine ──insert_vcpu / wake / sleep / yield_vcpu / do_schedule / on_timer / notifications──▶ policy
//!     ▲                                                                                        │
//!     └──────────── PolicyCtx: Request (reschedule a pCPU, arm a timer, fail) ◀───── reads HostView
//! ```
//!
//! What the engine guarantees a policy:
//! - every vCPU of the pool is `insert_vcpu`'d (Runnable) after `adjust` has been called for every
//!   VM, and before the first `do_schedule`;
//! - `sleep(v)` and `yield_vcpu(v)` come only for the vCPU running on a pCPU of the pool, and are
//!   followed by `do_schedule` on that pCPU; `wake(v)` only for a Halted vCPU;
//! - requests ([`PolicyCtx::reschedule`], [`PolicyCtx::set_timer`], ...) are carried out after
//!   the call returns, in order; a timer fires at most once per arming, and only while armed;
//! - the host view is the host now: every vCPU's state, pCPU, run time, the pool's pCPUs and
//!   every vCPU's affinity. It holds no guest state: a policy sees the guests only through the
//!   paravirtual channels its kind declares ([`PolicyKind::channels`]).
//!
//! What the engine checks, at every decision, in every run (not only in check mode): the vCPU a
//! `do_schedule(p)` returns is the one running on `p` (and still Running) or a Runnable one, of
//! the pool of `p`, with `p` in its hard affinity, and a slice is not zero. A decision that breaks
//! this stops the run with [`SimError::Policy`](crate::SimError::Policy), naming the policy, the
//! call and the decision. In check mode (`--check`) the engine also asks [`Policy::check`] after
//! every event. A policy that cannot go on calls [`PolicyCtx::fail`] and says why in
//! [`Policy::failure`].
//!
//! The built-in policies (hypervisor/policies/) use this interface and nothing else; the
//! extensions a few of them offer ([`MicroSliced`], [`HoldPreemption`], [`KvmHost`]) serve seed
//! mechanisms and are optional.

pub use crate::hypervisor::policies::{
    find, find_any, register, register_resolver, registry, registry_names, Extension, HostFeature, HostShape, PolicyKind, Resolver,
};
pub use crate::hypervisor::policy::{
    default_pick_pcpu, Decision, HoldPreemption, HostView, IpiKind, KvmHost, MicroSliced, PcpuInfo, Policy, PolicyCtx, Request, Timer,
    VcpuInfo, VcpuState, VmInfo, VmSched, YieldReason,
};
pub use crate::ids::{PcpuId, PoolId, VcpuId, VmId};
pub use crate::params::{ParamKind, ParamSpec, ParamValue, Params};
pub use crate::time::Nanos;
