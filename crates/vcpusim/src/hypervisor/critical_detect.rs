//! Detecting preempted critical OS services (seed 002 sections 3.1, 4.1 and 4.2, Table 3): the
//! whitelist of guest kernel functions and what each urgent signal does with them. The policy
//! that carries micro-sliced cores (credit, `policies/credit/microsliced.rs`) calls these at its
//! yield entry (`yield_vcpu`: pause-loop exits and `SCHEDOP_yield` both reach Xen's
//! `vcpu_yield`), when a virtual IRQ is relayed (`virq_sent`) and when a reschedule IPI is
//! relayed (`ipi_sent`). Everything here reads the guest only through
//! [`PolicyCtx::kernel_fn`], the guest's current kernel function, read through a declared
//! channel: without the channel nothing is detected (`tests/microsliced.rs` holds it to that).
//!
//! The handling follows the authors' released code (github.com/Jeongseob/xen,
//! xen/common/schedule.c `sched_try_offload_siblings`, `is_urgent_kernel`,
//! `is_lock_spinning`, static-usliced-cores branch) where the seed's text is silent:
//! - a yield while waiting for IPI acknowledgements (`smp_call_function_many`, the TLB
//!   shootdown's wait, or any `SCHEDOP_yield`: its trap is in the hypercall page,
//!   `xen_hypercall_sched_op`) migrates every preempted sibling, and the yielder does not yield
//!   (its `do_yield` stays 0): it goes on waiting for acknowledgements that now come fast;
//! - a yield in `smp_call_function_single` is an ordinary yield;
//! - a yield while spinning for a lock migrates the first preempted sibling (in vCPU order)
//!   executing a whitelisted critical function, and yields only if none was migrated;
//! - any other yield is an ordinary yield here (the released code does not yield at all then,
//!   but in this model a pause-loop exit only comes from a kernel spin, so none is "other").
//!
//! Seed 002 section 4.2 adds the I/O path, which the released code does not contain: a virtual
//! IRQ migrates its (preempted) recipient, and a relayed reschedule IPI migrates its preempted
//! recipient first, when the sender is in a critical function (the softirq's wake-up:
//! `ttwu_do_activate` / `resched_curr`).
//!
//! The engine side (the micro pool, moving vCPUs in and back, Algorithm 1) is
//! sim/mechanisms/microsliced/; the micro pool's own scheduler is policies/micro_pool.rs.

use crate::hypervisor::critical_events::{AccelReason, UrgentEvent};
use crate::hypervisor::policy::{HostView, IpiKind, PolicyCtx, VcpuState, YieldReason};
use crate::ids::VcpuId;
use crate::vmexit::KernelFn;

/// Which urgent signals trigger acceleration (`detect = ["ple", "ipi", "irq"]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Detect {
    /// Yields while spinning for a lock (pause-loop exits in `_raw_spin_lock`).
    pub ple: bool,
    /// Yields while waiting for IPI acknowledgements, and relayed reschedule IPIs.
    pub ipi: bool,
    /// Virtual IRQs relayed from devices.
    pub irq: bool,
}

impl Detect {
    pub const NAMES: &'static [&'static str] = &["ple", "ipi", "irq"];
    pub const ALL: Detect = Detect { ple: true, ipi: true, irq: true };
}

/// What a yielding vCPU's function says about its yield.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum YieldClass {
    /// Waiting for IPI acknowledgements from many (`smp_call_function_many`, the TLB
    /// shootdown's `native_flush_tlb_others`): migrate every preempted sibling.
    IpiMany,
    /// Waiting for one IPI's acknowledgement (`smp_call_function_single`): an ordinary yield.
    IpiSingle,
    /// Spinning for a lock: migrate a preempted sibling in a critical section.
    LockSpin,
    /// Anything else.
    Other,
}

/// The class of a yield whose vCPU was in `f` (`sched_try_offload_siblings`'s tests of the
/// yielder's instruction pointer).
pub fn yield_class(f: KernelFn) -> YieldClass {
    match f {
        KernelFn::SmpCallFunctionMany | KernelFn::FlushTlbOthers => YieldClass::IpiMany,
        KernelFn::SmpCallFunctionSingle => YieldClass::IpiSingle,
        KernelFn::RawSpinLock | KernelFn::PvQueuedSpinLockSlowpath | KernelFn::RwsemSpinOnOwner => YieldClass::LockSpin,
        _ => YieldClass::Other,
    }
}

/// Whether `f` is a critical OS service (Table 3; the released code's `is_urgent_kernel`): a
/// preempted vCPU found there is worth a micro slice. `FlushTlbOthers` is Table 3's
/// `native_flush_tlb_others`; `IpiHandler` is `xen_reschedule_interrupt` / `flush_tlb_func` in
/// the Linux 3.2 guest.
pub fn is_critical(f: KernelFn) -> bool {
    matches!(
        f,
        KernelFn::IrqEnter
            | KernelFn::IrqExit
            | KernelFn::HandlePercpuIrq
            | KernelFn::SmpCallFunctionSingle
            | KernelFn::SmpCallFunctionMany
            | KernelFn::FlushTlbOthers
            | KernelFn::FlushTlbMmRange
            | KernelFn::FlushTlbFunc
            | KernelFn::LeaveMm
            | KernelFn::GetPageFromFreelist
            | KernelFn::FreeOnePage
            | KernelFn::ReleasePages
            | KernelFn::SchedulerIpi
            | KernelFn::ReschedCurr
            | KernelFn::KickProcess
            | KernelFn::TtwuDoActivate
            | KernelFn::RawSpinUnlock
            | KernelFn::RwsemWake
            | KernelFn::IpiHandler
    )
}

/// What the host does with the yielder after the detection at its yield.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum YieldOutcome {
    /// An ordinary yield.
    Yield,
    /// No yield: the vCPU goes on (the IPI case).
    Continue,
    /// No yield if some sibling was migrated, else an ordinary yield (the lock case).
    ContinueIfAccelerated,
}

/// The preempted siblings of `v` (Runnable: descheduled while still runnable), in vCPU order.
/// It reads the view the policy call was given (a copy of its references), not the context, so
/// the caller may make requests while it iterates: requests change nothing the view shows until
/// the call returns, so no list of them is needed.
fn preempted_siblings<'a>(host: HostView<'a>, v: VcpuId) -> impl Iterator<Item = VcpuId> + 'a {
    host.vm_of(v).vcpus.iter().copied().filter(move |s| *s != v && host.vcpu(*s).state == VcpuState::Runnable)
}

/// At the yield entry (`vcpu_yield`): classify the yield by the yielder's kernel function and
/// ask the host to accelerate the siblings it calls for. Counts the urgent event for Algorithm 1.
/// A guest's `SCHEDOP_yield` traps from the hypercall page, whose symbol
/// (`xen_hypercall_sched_op`) the released code tests first as an IPI wait: Linux 4.4 yields
/// there only from `xen_smp_send_call_function_ipi`, the many-target send.
pub fn on_yield(detect: &Detect, ctx: &mut PolicyCtx, v: VcpuId, reason: YieldReason) -> YieldOutcome {
    let Some(f) = ctx.kernel_fn(v) else { return YieldOutcome::Yield };
    let class = match reason {
        YieldReason::Hypercall | YieldReason::DirectedTo(_) => YieldClass::IpiMany,
        YieldReason::PauseLoop => yield_class(f),
    };
    match class {
        YieldClass::IpiMany if detect.ipi => {
            ctx.count_urgent(UrgentEvent::Ipi);
            for s in preempted_siblings(ctx.host, v) {
                let g = ctx.kernel_fn(s).unwrap_or(KernelFn::User);
                ctx.accelerate(s, AccelReason::TlbSync, g);
            }
            YieldOutcome::Continue
        }
        YieldClass::LockSpin if detect.ple => {
            ctx.count_urgent(UrgentEvent::Ple);
            let holder = preempted_siblings(ctx.host, v).find(|s| ctx.kernel_fn(*s).is_some_and(is_critical));
            if let Some(s) = holder {
                let g = ctx.kernel_fn(s).expect("found by its function");
                ctx.accelerate(s, AccelReason::LockHolder, g);
            }
            YieldOutcome::ContinueIfAccelerated
        }
        _ => YieldOutcome::Yield,
    }
}

/// A virtual IRQ of a device is relayed to `v` (seed 002 section 4.2: "the hypervisor migrates
/// the recipient vCPU onto the micro-sliced cores"): a preempted recipient is accelerated. Its
/// function is read for the record (and, as every detection, only through the channel).
pub fn on_virq(detect: &Detect, ctx: &mut PolicyCtx, v: VcpuId) {
    if !detect.irq {
        return;
    }
    let Some(f) = ctx.kernel_fn(v) else { return };
    ctx.count_urgent(UrgentEvent::Irq);
    if ctx.host.vcpu(v).state == VcpuState::Runnable {
        ctx.accelerate(v, AccelReason::Virq, f);
    }
}

/// A reschedule IPI from `from` to `to` is relayed (section 4.2: "before the relay of interrupt,
/// it moves the recipient vCPU onto the micro-sliced pool"): if the sender is in a critical
/// function and the recipient is preempted, the recipient is accelerated.
pub fn on_ipi_relay(detect: &Detect, ctx: &mut PolicyCtx, from: VcpuId, to: VcpuId, kind: IpiKind) {
    if !detect.ipi || kind != IpiKind::Resched {
        return;
    }
    let Some(f) = ctx.kernel_fn(from) else { return };
    if is_critical(f) && ctx.host.vcpu(to).state == VcpuState::Runnable {
        let g = ctx.kernel_fn(to).unwrap_or(KernelFn::User);
        ctx.accelerate(to, AccelReason::IpiRelay, g);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hardware::topology::Topology;
    use crate::hypervisor::policies::test_host::vms_of;
    use crate::hypervisor::policy::{HostView, Request, TimerTable};
    use crate::vmexit::Channels;

    /// One VM of five vCPUs: vCPU 0 runs in `f0`; the others have these states and functions.
    /// Runs `call` with the channel `on` or off; returns the requests it made and its answer.
    fn with_host<R>(
        f0: KernelFn,
        others: [(VcpuState, KernelFn); 4],
        on: bool,
        call: impl FnOnce(&mut PolicyCtx) -> R,
    ) -> (Vec<Request>, R) {
        let (mut vcpus, vms, _) = vms_of(&[(5, 256)]);
        vcpus[0].state = VcpuState::Running;
        let mut symbols = vec![f0];
        for (i, (state, f)) in others.iter().enumerate() {
            vcpus[i + 1].state = *state;
            symbols.push(*f);
        }
        let topology = Topology::flat(4);
        let host = HostView::new(0, &vcpus, &[], &vms, &topology);
        let (mut requests, mut timers) = (Vec::new(), TimerTable::default());
        let mut ctx = PolicyCtx::new(host, &mut requests, &mut timers).with_symbols(&symbols, Channels { kernel_fn: on });
        let r = call(&mut ctx);
        (requests, r)
    }

    const R: VcpuState = VcpuState::Runnable;
    const RUN: VcpuState = VcpuState::Running;
    const H: VcpuState = VcpuState::Halted;

    #[test]
    fn an_ipi_wait_yield_accelerates_every_preempted_sibling_and_does_not_yield() {
        let others = [(R, KernelFn::User), (RUN, KernelFn::User), (H, KernelFn::Idle), (R, KernelFn::Syscall)];
        let (req, out) =
            with_host(KernelFn::SmpCallFunctionMany, others, true, |ctx| on_yield(&Detect::ALL, ctx, VcpuId(0), YieldReason::PauseLoop));
        assert_eq!(out, YieldOutcome::Continue);
        assert_eq!(
            req,
            vec![
                Request::CountUrgent(UrgentEvent::Ipi),
                Request::Accelerate(VcpuId(1), AccelReason::TlbSync, KernelFn::User),
                Request::Accelerate(VcpuId(4), AccelReason::TlbSync, KernelFn::Syscall),
            ]
        );
        // A SCHEDOP_yield is an IPI wait whatever function the guest is in.
        let (req, out) = with_host(KernelFn::FutexWake, others, true, |ctx| on_yield(&Detect::ALL, ctx, VcpuId(0), YieldReason::Hypercall));
        assert_eq!((out, req.len()), (YieldOutcome::Continue, 3));
        // With detect = ["ple"] it is an ordinary yield.
        let ple_only = Detect { ple: true, ipi: false, irq: false };
        let (req, out) =
            with_host(KernelFn::SmpCallFunctionMany, others, true, |ctx| on_yield(&ple_only, ctx, VcpuId(0), YieldReason::PauseLoop));
        assert_eq!((out, req), (YieldOutcome::Yield, vec![]));
    }

    #[test]
    fn a_lock_spin_yield_accelerates_the_first_preempted_sibling_in_a_critical_function() {
        let others = [(R, KernelFn::User), (RUN, KernelFn::RawSpinUnlock), (R, KernelFn::TtwuDoActivate), (R, KernelFn::RawSpinUnlock)];
        let (req, out) =
            with_host(KernelFn::RawSpinLock, others, true, |ctx| on_yield(&Detect::ALL, ctx, VcpuId(0), YieldReason::PauseLoop));
        assert_eq!(out, YieldOutcome::ContinueIfAccelerated);
        assert_eq!(
            req,
            vec![Request::CountUrgent(UrgentEvent::Ple), Request::Accelerate(VcpuId(3), AccelReason::LockHolder, KernelFn::TtwuDoActivate)]
        );
        // None critical: the PLE is counted, nothing accelerated (the host then yields).
        let plain = [(R, KernelFn::User), (R, KernelFn::Syscall), (R, KernelFn::FutexWait), (H, KernelFn::Idle)];
        let (req, _) = with_host(KernelFn::RawSpinLock, plain, true, |ctx| on_yield(&Detect::ALL, ctx, VcpuId(0), YieldReason::PauseLoop));
        assert_eq!(req, vec![Request::CountUrgent(UrgentEvent::Ple)]);
    }

    #[test]
    fn without_the_channel_nothing_is_detected() {
        let others = [(R, KernelFn::RawSpinUnlock), (R, KernelFn::IrqExit), (R, KernelFn::User), (R, KernelFn::User)];
        for (f0, reason) in [
            (KernelFn::SmpCallFunctionMany, YieldReason::PauseLoop),
            (KernelFn::RawSpinLock, YieldReason::PauseLoop),
            (KernelFn::User, YieldReason::Hypercall),
        ] {
            let (req, out) = with_host(f0, others, false, |ctx| on_yield(&Detect::ALL, ctx, VcpuId(0), reason));
            assert_eq!((out, req), (YieldOutcome::Yield, vec![]));
        }
        let (req, _) = with_host(KernelFn::TtwuDoActivate, others, false, |ctx| {
            on_virq(&Detect::ALL, ctx, VcpuId(1));
            on_ipi_relay(&Detect::ALL, ctx, VcpuId(0), VcpuId(2), IpiKind::Resched);
        });
        assert_eq!(req, vec![]);
    }

    #[test]
    fn a_virq_or_a_relayed_ipi_accelerates_a_preempted_recipient() {
        let others = [(R, KernelFn::User), (RUN, KernelFn::User), (R, KernelFn::Syscall), (H, KernelFn::Idle)];
        let (req, _) = with_host(KernelFn::TtwuDoActivate, others, true, |ctx| {
            on_virq(&Detect::ALL, ctx, VcpuId(1)); // preempted: accelerated
            on_virq(&Detect::ALL, ctx, VcpuId(2)); // running: counted only
            on_ipi_relay(&Detect::ALL, ctx, VcpuId(0), VcpuId(3), IpiKind::Resched); // sender critical
            on_ipi_relay(&Detect::ALL, ctx, VcpuId(0), VcpuId(3), IpiKind::TlbShootdown); // not a resched IPI
            on_ipi_relay(&Detect::ALL, ctx, VcpuId(1), VcpuId(3), IpiKind::Resched);
            // sender in user code
        });
        assert_eq!(
            req,
            vec![
                Request::CountUrgent(UrgentEvent::Irq),
                Request::Accelerate(VcpuId(1), AccelReason::Virq, KernelFn::User),
                Request::CountUrgent(UrgentEvent::Irq),
                Request::Accelerate(VcpuId(3), AccelReason::IpiRelay, KernelFn::Syscall),
            ]
        );
    }

    #[test]
    fn the_whitelist_holds_table_3_and_not_user_idle_or_spinning() {
        for f in [KernelFn::FlushTlbOthers, KernelFn::TtwuDoActivate, KernelFn::RawSpinUnlock, KernelFn::IrqExit, KernelFn::RwsemWake] {
            assert!(is_critical(f), "{f:?}");
        }
        for f in [KernelFn::User, KernelFn::Idle, KernelFn::Syscall, KernelFn::RawSpinLock, KernelFn::FutexWait] {
            assert!(!is_critical(f), "{f:?}");
        }
        assert_eq!(yield_class(KernelFn::FlushTlbOthers), YieldClass::IpiMany);
        assert_eq!(yield_class(KernelFn::SmpCallFunctionSingle), YieldClass::IpiSingle);
        assert_eq!(yield_class(KernelFn::RawSpinLock), YieldClass::LockSpin);
        assert_eq!(yield_class(KernelFn::Syscall), YieldClass::Other);
    }
}
