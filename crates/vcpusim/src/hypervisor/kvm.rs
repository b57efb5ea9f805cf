//! KVM's directed yield on a pause-loop exit (arch/x86/kvm/vmx.c `handle_pause` ->
//! virt/kvm/kvm_main.c `kvm_vcpu_on_spin` -> the host scheduler's `yield_to`), by Linux
//! version (`[host.params] kvm`), each read in that version's source. This is KVM's code, not
//! the scheduler's: every KVM host scheduler (policies/cfs, and later host kernels) carries a
//! [`KvmSpin`] and answers [`KvmYieldTo::yield_to`] as its kernel's `yield_to` does.
//!
//! ```text
//!   pause-loop exit ──> kvm_vcpu_on_spin (here: which sibling, in which order, when to stop)
//!                              │ for each candidate
//!                              ▼
//!                       KvmYieldTo::yield_to (the scheduler: cfs/yield_to.rs yield_to_task_fair)
//! ```
//!
//! - **3.2** (the default; seed 000's host): two passes over the VM's vCPUs, the first after
//!   `last_boosted_vcpu` (`if (!pass && i < last_boosted_vcpu) { i = last_boosted_vcpu;
//!   continue; }`, which starts at vCPU 0 itself when that was the last boosted), the second
//!   from 0 up to it. A candidate is skipped only if
//!   it is the spinner, halted (`waitqueue_active(&vcpu->wq)`) or running (`PF_VCPU`);
//!   `yield_to` then fails only for a task that is running or not runnable. So a vCPU woken by
//!   an IPI and still waiting in its run queue is a candidate. The first success boosts the
//!   target, makes the spinner yield, and becomes `last_boosted_vcpu`.
//! - **3.9**: the first pass starts after `last_boosted_vcpu` (`i <= last_boosted_vcpu`, as
//!   since 3.6), and `yield_to` answers `-ESRCH` without yielding when both the spinner's and the
//!   target's run queues hold one task. `yield_to` still returns `bool` there (3.9-3.15), so
//!   `kvm_vcpu_yield_to` turns `-ESRCH` into `true`: the scan stops as if the target had been
//!   boosted (and it becomes `last_boosted_vcpu`), nothing yields. (The `dy_eligible` filter of
//!   3.7-3.8 changes nothing here: a candidate that is not running is never inside
//!   `kvm_vcpu_on_spin`, so it is always eligible.)
//! - **3.10**: also skip a candidate that was not preempted while runnable
//!   (`if (!ACCESS_ONCE(vcpu->preempted)) continue;`: absent in 3.9.6, present in 3.10.99 and
//!   3.11): a vCPU woken and not yet run is no longer a candidate.
//! - **3.16**: `yield_to` returns `int` (still `bool` in 3.15.5, `int` in 3.16.0), so `-ESRCH`
//!   counts as a failure and the scan gives up after three (`try = 3`).
//! - **6.6** (v6.6 virt/kvm/kvm_main.c): the scan order and `try = 3` of 3.16, and a
//!   candidate must pass, in this order (the filters are unchanged in later 6.x: 6.8's
//!   `kvm_arch_vcpu_preempted_in_kernel` split keeps their meaning, and "KVM: Rework core loop
//!   of kvm_vcpu_on_spin() to use a single for-loop" (2024) keeps the order last_boosted + 1 ..
//!   last_boosted, but stored the loop offset as `last_boosted_vcpu` until commit 32bd348be3fa
//!   "KVM: Fix last_boosted_vcpu index assignment bug" (2025, stable 6.18); the model does not
//!   follow those versions' round robin),
//!   1. `vcpu->ready`: preempted while runnable, or woken and not run since (set by
//!      `kvm_sched_out` and `kvm_vcpu_wake_up`, cleared by `kvm_sched_in`; commit d73eb57b80b9
//!      "KVM: Boost vCPUs that are delivering interrupts"): here a `Runnable` vCPU. A halted or
//!      running one, and the spinner itself, are skipped;
//!   2. not blocking unless `vcpu_dy_runnable`: a vCPU woken from HLT that has not run yet is
//!      still on its rcuwait (`kvm_vcpu_is_blocking`), and is a candidate only if
//!      `kvm_arch_dy_runnable` (arch/x86/kvm/x86.c): `pv.pv_unhalted` (commit 266e85a5ec91
//!      "KVM: X86: Boost queue head vCPU to mitigate lock waiter preemption", with
//!      `kvm_sched_yield` on `KVM_HC_KICK_CPU`: [`kvm_sched_yield`]) or a pending event or
//!      interrupt (`KVM_REQ_EVENT`, posted interrupt) — [`VcpuInfo::pv_unhalted`],
//!      [`VcpuInfo::pending_interrupt`];
//!   3. with `yield_to_kernel_mode` (VMX `handle_pause`: `vmx_get_cpl(vcpu) == 0`, always true
//!      for a pause-loop exit) a preempted candidate must have been preempted in kernel mode
//!      (`kvm_arch_vcpu_in_kernel` = `preempted_in_kernel`) or have a pending interrupt
//!      (`kvm_arch_dy_has_pending_interrupt`: posted interrupts, so the model assumes APICv);
//!   4. `kvm_vcpu_eligible_for_directed_yield`: a candidate itself inside `kvm_vcpu_on_spin`
//!      (descheduled by its own directed yield: [`VcpuInfo::in_spin_loop`]) is eligible only
//!      every other time it is considered (`dy_eligible` toggles at each look; the spinner's
//!      is cleared when its own `kvm_vcpu_on_spin` ends, here when it enters the next, which
//!      is the same for every read: only an in-loop vCPU's flag is read or toggled).
//!
//! Siblings in another pool (another policy instance) are not candidates here.

use crate::hypervisor::policy::{KvmHost, PolicyCtx, VcpuInfo, VcpuState};
use crate::ids::VcpuId;

/// The candidates `kvm_vcpu_on_spin` tries before giving up on `-ESRCH` results (`try`,
/// kvm_main.c, counted from 3.16 on).
const DIRECTED_YIELD_TRIES: u32 = 3;

/// The Linux version whose `kvm_vcpu_on_spin` / `yield_to` a KVM host follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum KvmVersion {
    V3_2,
    V3_9,
    V3_10,
    V3_16,
    V6_6,
}

impl KvmVersion {
    pub const NAMES: &'static [&'static str] = &["3.2", "3.9", "3.10", "3.16", "6.6"];

    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "3.2" => Some(KvmVersion::V3_2),
            "3.9" => Some(KvmVersion::V3_9),
            "3.10" => Some(KvmVersion::V3_10),
            "3.16" => Some(KvmVersion::V3_16),
            "6.6" => Some(KvmVersion::V6_6),
            _ => None,
        }
    }
}

/// What the host scheduler's `yield_to` answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum YieldTo {
    Yielded,
    Failed,
    /// `-ESRCH`: both run queues hold one task (3.9 on).
    Esrch,
}

/// KVM's per-host directed-yield state: the version followed, each VM's
/// `kvm->last_boosted_vcpu` (index within the VM), by VM index, and each vCPU's
/// `spin_loop.dy_eligible` (6.6), by vCPU id.
#[derive(Clone, Debug)]
pub struct KvmSpin {
    pub version: KvmVersion,
    last_boosted: Vec<usize>,
    dy_eligible: Vec<bool>,
}

impl KvmSpin {
    pub fn new(version: KvmVersion, nvms: usize) -> Self {
        KvmSpin { version, last_boosted: vec![0; nvms], dy_eligible: Vec::new() }
    }

    /// `kvm_vcpu_set_dy_eligible(v, false)`.
    fn clear_dy_eligible(&mut self, v: VcpuId) {
        if let Some(e) = self.dy_eligible.get_mut(v.idx()) {
            *e = false;
        }
    }

    /// `kvm_vcpu_eligible_for_directed_yield(target)`: eligible unless it is in its own spin
    /// loop with `dy_eligible` clear; an in-loop candidate's flag toggles at each look.
    fn eligible_for_directed_yield(&mut self, target: VcpuId, info: &VcpuInfo) -> bool {
        if !info.in_spin_loop {
            return true;
        }
        if self.dy_eligible.len() <= target.idx() {
            self.dy_eligible.resize(target.idx() + 1, false);
        }
        let flag = &mut self.dy_eligible[target.idx()];
        let eligible = *flag;
        *flag = !*flag;
        eligible
    }

    /// Make room for VM index `vm` (a VM the policy was not sized for).
    pub fn grow_vms(&mut self, nvms: usize) {
        if self.last_boosted.len() < nvms {
            self.last_boosted.resize(nvms, 0);
        }
    }
}

/// A KVM host scheduler: its `yield_to(task, preempt = 1)` and the KVM state it carries.
pub trait KvmYieldTo {
    /// `yield_to(task, preempt = 1)` from the spinning vCPU `v` (running) to `target`.
    fn yield_to(&mut self, ctx: &mut PolicyCtx, v: VcpuId, target: VcpuId) -> YieldTo;
    /// The scheduler's [`KvmSpin`].
    fn kvm_spin(&mut self) -> &mut KvmSpin;
}

/// `kvm_sched_yield(vcpu, dest_id)` (arch/x86/kvm/x86.c, v6.6), called after
/// `kvm_pv_kick_cpu_op` on `KVM_HC_KICK_CPU` (commit 266e85a5ec91 "KVM: X86: Boost queue head
/// vCPU to mitigate lock waiter preemption"): the kicker `v` (running) yields to the vCPU it
/// kicked, the pv-qspinlock queue head, unless `v` is alone on its run queue
/// (`KvmHost::single_task_running`), the target is not `ready` (a Runnable vCPU) or is `v` itself.
/// Returns whether the yield went ahead.
pub fn kvm_sched_yield<S: KvmYieldTo + KvmHost>(s: &mut S, ctx: &mut PolicyCtx, v: VcpuId, target: VcpuId) -> bool {
    let Some(p) = ctx.host.vcpu(v).pcpu else { return false };
    if s.single_task_running(p) || target == v || ctx.host.vcpu(target).state != VcpuState::Runnable {
        return false;
    }
    s.yield_to(ctx, v, target) == YieldTo::Yielded
}

/// `kvm_vcpu_on_spin(me, yield_to_kernel_mode = true)` for the spinning vCPU `v` on host
/// scheduler `s`: a pause-loop exit, which VMX takes at CPL 0 only (`handle_pause`).
pub fn kvm_vcpu_on_spin<S: KvmYieldTo>(s: &mut S, ctx: &mut PolicyCtx, v: VcpuId) {
    kvm_vcpu_on_spin_mode(s, ctx, v, true);
}

/// Whether candidate `info` passes 6.6's filters 1-3 (module docs) for spinner `v`.
#[allow(clippy::nonminimal_bool)] // each test as the kernel writes it, in its order
fn candidate_6_6(v: VcpuId, info: &VcpuInfo, yield_to_kernel_mode: bool) -> bool {
    // 1. vcpu->ready; the spinner itself.
    if info.state != VcpuState::Runnable || info.id == v {
        return false;
    }
    // 2. kvm_vcpu_is_blocking && !vcpu_dy_runnable: woken from a block, not run since.
    let blocking = !info.preempted;
    if blocking && !(info.pv_unhalted || info.pending_interrupt) {
        return false;
    }
    // 3. preempted in user mode, no interrupt pending.
    !(info.preempted && yield_to_kernel_mode && !info.pending_interrupt && !info.preempted_in_kernel)
}

/// `kvm_vcpu_on_spin(me, yield_to_kernel_mode)` (3.2-3.16 have no `yield_to_kernel_mode`; it
/// matters from 6.6 on).
pub fn kvm_vcpu_on_spin_mode<S: KvmYieldTo>(s: &mut S, ctx: &mut PolicyCtx, v: VcpuId, yield_to_kernel_mode: bool) {
    let host = ctx.host;
    let vm = host.vcpu(v).vm.idx();
    let info_vm = host.vm(host.vcpu(v).vm);
    let (siblings, runnable) = (&info_vm.vcpus, &info_vm.runnable);
    debug_assert!(
        siblings.iter().enumerate().all(|(i, t)| runnable.contains(i) == (host.vcpu(*t).state == VcpuState::Runnable)),
        "VM {vm}'s runnable mask disagrees with its vCPUs' states"
    );
    let kvm = s.kvm_spin();
    kvm.grow_vms(vm + 1);
    let version = kvm.version;
    if version >= KvmVersion::V6_6 {
        kvm.clear_dy_eligible(v);
    }
    let last = kvm.last_boosted[vm];
    let mut tries = DIRECTED_YIELD_TRIES;
    // Every version skips a candidate that is not Runnable before anything with an effect (6.6's
    // dy_eligible toggle comes after its filter 1), so the walk visits the Runnable siblings
    // only, in the same order: the VM's `runnable` mask, O(V / 64) a pass where every sibling
    // was read.
    for pass in 0..2 {
        // 3.2's `i = last_boosted_vcpu; continue;` lands on last + 1 unless last is 0; from 3.9
        // the first pass starts after last.
        let mut from = if pass == 0 && (version >= KvmVersion::V3_9 || last > 0) { last + 1 } else { 0 };
        while let Some(i) = runnable.next_from(from) {
            from = i + 1;
            if pass == 1 && i > last {
                break;
            }
            let target = siblings[i];
            let info = host.vcpu(target);
            if version >= KvmVersion::V6_6 {
                // 4. runs last: it toggles the candidate's dy_eligible.
                if !candidate_6_6(v, info, yield_to_kernel_mode) || !s.kvm_spin().eligible_for_directed_yield(target, info) {
                    continue;
                }
            } else {
                if version >= KvmVersion::V3_10 && !info.preempted {
                    continue;
                }
                // The spinner itself; a halted vCPU (waitqueue_active); a running one (PF_VCPU).
                if target == v || info.state != VcpuState::Runnable {
                    continue;
                }
            }
            match s.yield_to(ctx, v, target) {
                YieldTo::Yielded => {
                    s.kvm_spin().last_boosted[vm] = i;
                    return;
                }
                YieldTo::Esrch if version < KvmVersion::V3_16 => {
                    // A bool `true`: the scan ends as after a boost.
                    s.kvm_spin().last_boosted[vm] = i;
                    return;
                }
                YieldTo::Esrch => {
                    tries -= 1;
                    if tries == 0 {
                        return;
                    }
                }
                YieldTo::Failed => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    //! 6.6's candidate rules, each on a hand-built host under cfs (the KVM host scheduler),
    //! where the test plays the engine and sets the host-side facts it keeps (`VcpuInfo`).
    use crate::hypervisor::policies::cfs::CfsKind;
    use crate::hypervisor::policies::test_host::FakeHost;
    use crate::hypervisor::policies::PolicyKind;
    use crate::hypervisor::policy::{IpiKind, YieldReason};
    use crate::ids::{PcpuId, VcpuId};
    use crate::params::{ParamValue, Params};
    use crate::time::MS;

    const SPINNER: VcpuId = VcpuId(0);
    const TARGET: VcpuId = VcpuId(1);
    const P0: PcpuId = PcpuId(0);

    fn host(kvm: &str, npcpus: u32, vcpus: u32) -> FakeHost {
        let mut params = Params::defaults(&CfsKind.params());
        params.set("kvm", ParamValue::Choice(kvm.to_string()));
        params.set("wakeup_granularity", ParamValue::Duration(1000 * MS));
        FakeHost::new(npcpus, &[(vcpus, 256)], None, |shape| CfsKind.build(&params, shape))
    }

    /// One pCPU, SPINNER and TARGET: run until SPINNER runs and TARGET, having run, waits
    /// preempted in the run queue.
    fn target_preempted(kvm: &str) -> FakeHost {
        let mut h = host(kvm, 1, 2);
        let mut target_ran = false;
        for t in 1..400 {
            target_ran |= h.pcpus[0].current == Some(TARGET);
            if target_ran && h.pcpus[0].current == Some(SPINNER) {
                break;
            }
            h.advance_to(t * MS);
        }
        assert_eq!(h.pcpus[0].current, Some(SPINNER));
        assert!(h.vcpus[TARGET.idx()].preempted);
        h
    }

    /// One pCPU: TARGET halted, then woken by SPINNER's IPI, waits in the run queue unrun.
    fn target_woken(kvm: &str) -> FakeHost {
        let mut h = host(kvm, 1, 2);
        for t in 1..200 {
            if h.pcpus[0].current == Some(TARGET) {
                break;
            }
            h.advance_to(t * MS);
        }
        h.halt(TARGET);
        h.call(|pol, ctx| pol.ipi_sent(ctx, SPINNER, TARGET, IpiKind::TlbShootdown));
        h.wake(TARGET);
        assert_eq!(h.pcpus[0].current, Some(SPINNER));
        assert!(!h.vcpus[TARGET.idx()].preempted);
        h
    }

    /// SPINNER takes a pause-loop exit; returns whether TARGET was boosted (runs now).
    fn pause_loop_exit(h: &mut FakeHost) -> bool {
        h.call(|pol, ctx| pol.yield_vcpu(ctx, SPINNER, YieldReason::PauseLoop));
        h.schedule(P0);
        h.check();
        h.pcpus[0].current == Some(TARGET)
    }

    #[test]
    fn kvm_6_6_skips_a_sibling_preempted_in_user_mode_unless_an_interrupt_is_pending() {
        let mut h = target_preempted("6.6");
        h.vcpus[TARGET.idx()].preempted_in_kernel = false;
        assert!(!pause_loop_exit(&mut h), "6.6 boosted a sibling preempted in user mode");
        let mut h = target_preempted("6.6");
        h.vcpus[TARGET.idx()].preempted_in_kernel = true;
        assert!(pause_loop_exit(&mut h), "6.6 did not boost a sibling preempted in kernel mode");
        // "Treat the target vCPU as being in-kernel if it has a pending interrupt".
        let mut h = target_preempted("6.6");
        h.vcpus[TARGET.idx()].pending_interrupt = true;
        assert!(pause_loop_exit(&mut h), "6.6 did not boost a user-mode sibling with an interrupt pending");
        // 3.16 has no kernel-mode rule.
        let mut h = target_preempted("3.16");
        assert!(pause_loop_exit(&mut h));
    }

    #[test]
    fn kvm_6_6_boosts_a_woken_sibling_only_with_an_interrupt_or_pv_kick_pending() {
        // Woken from HLT and not run: still blocking, a candidate only if kvm_arch_dy_runnable.
        let mut h = target_woken("6.6");
        assert!(!pause_loop_exit(&mut h), "6.6 boosted a blocking vCPU with nothing pending");
        let mut h = target_woken("6.6");
        h.vcpus[TARGET.idx()].pending_interrupt = true;
        assert!(pause_loop_exit(&mut h), "6.6 did not boost a woken vCPU with its IPI pending");
        let mut h = target_woken("6.6");
        h.vcpus[TARGET.idx()].pv_unhalted = true;
        assert!(pause_loop_exit(&mut h), "6.6 did not boost the kicked queue head");
    }

    #[test]
    fn kvm_6_6_dy_eligible_alternates_for_a_sibling_in_its_own_spin_loop() {
        let mut h = target_preempted("6.6");
        h.vcpus[TARGET.idx()].preempted_in_kernel = true;
        h.vcpus[TARGET.idx()].in_spin_loop = true;
        // First look: dy_eligible is clear (it was cleared when TARGET entered its loop), so
        // TARGET is skipped and its flag set; the second look boosts it.
        assert!(!pause_loop_exit(&mut h), "an in-loop sibling was eligible at the first look");
        assert!(pause_loop_exit(&mut h), "an in-loop sibling was not eligible at the second look");
        // The same host with TARGET out of its loop: boosted at the first look.
        let mut h = target_preempted("6.6");
        h.vcpus[TARGET.idx()].preempted_in_kernel = true;
        assert!(pause_loop_exit(&mut h));
    }

    #[test]
    fn kvm_sched_yield_yields_to_the_kicked_vcpu_only_when_the_kicker_shares_its_run_queue() {
        // One pCPU: the kicker shares its run queue with the kicked, ready vCPU: it yields.
        let mut h = target_woken("6.6");
        h.call(|pol, ctx| pol.kvm_host().expect("a KVM host").kvm_sched_yield(ctx, SPINNER, TARGET));
        assert_eq!(h.pcpus[0].current, Some(TARGET), "the kicker did not yield to the queue head");
        // Two pCPUs, one vCPU each: single_task_running, no yield.
        let mut h = host("6.6", 2, 2);
        let kicker = h.pcpus[0].current.expect("both run");
        let other = h.pcpus[1].current.expect("both run");
        h.call(|pol, ctx| pol.kvm_host().expect("a KVM host").kvm_sched_yield(ctx, kicker, other));
        assert_eq!(h.pcpus[0].current, Some(kicker));
        assert!(h.call(|pol, _| pol.kvm_host().expect("a KVM host").single_task_running(P0)));
    }
}
