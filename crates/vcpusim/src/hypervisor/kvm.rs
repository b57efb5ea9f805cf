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
//!                       KvmYieldTo::yield_to (the scheduler: cfs/kvm.rs yield_to_task_fair)
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
//!
//! Siblings in another pool (another policy instance) are not candidates here.

use crate::hypervisor::policy::{PolicyCtx, VcpuState};
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
}

impl KvmVersion {
    pub const NAMES: &'static [&'static str] = &["3.2", "3.9", "3.10", "3.16"];

    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "3.2" => Some(KvmVersion::V3_2),
            "3.9" => Some(KvmVersion::V3_9),
            "3.10" => Some(KvmVersion::V3_10),
            "3.16" => Some(KvmVersion::V3_16),
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

/// KVM's per-host directed-yield state: the version followed and each VM's
/// `kvm->last_boosted_vcpu` (index within the VM), by VM index.
#[derive(Clone, Debug)]
pub struct KvmSpin {
    pub version: KvmVersion,
    last_boosted: Vec<usize>,
}

impl KvmSpin {
    pub fn new(version: KvmVersion, nvms: usize) -> Self {
        KvmSpin { version, last_boosted: vec![0; nvms] }
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

/// `kvm_vcpu_on_spin(me)` for the spinning vCPU `v` on host scheduler `s`.
pub fn kvm_vcpu_on_spin<S: KvmYieldTo>(s: &mut S, ctx: &mut PolicyCtx, v: VcpuId) {
    let host = ctx.host;
    let vm = host.vcpu(v).vm.idx();
    let siblings = &host.vm(host.vcpu(v).vm).vcpus;
    let kvm = s.kvm_spin();
    kvm.grow_vms(vm + 1);
    let version = kvm.version;
    let last = kvm.last_boosted[vm];
    let mut tries = DIRECTED_YIELD_TRIES;
    for pass in 0..2 {
        for (i, &target) in siblings.iter().enumerate() {
            // 3.2's `i = last_boosted_vcpu; continue;` lands on last + 1 unless last is 0.
            let skip_first = if version >= KvmVersion::V3_9 { i <= last } else { last > 0 && i <= last };
            if pass == 0 && skip_first {
                continue;
            }
            if pass == 1 && i > last {
                break;
            }
            let info = host.vcpu(target);
            if version >= KvmVersion::V3_10 && !info.preempted {
                continue;
            }
            // The spinner itself; a halted vCPU (waitqueue_active); a running one (PF_VCPU).
            if target == v || info.state != VcpuState::Runnable {
                continue;
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
