//! The Linux 6.x guest's paravirtual features on KVM, guest side (`GuestConfig::pv`,
//! guest/config.rs `PvFeatures`; Linux 6.6 arch/x86/kernel/kvm.c). The PV qspinlock is in
//! guest/pv_spinlock.rs (the 4.4 state machine with KVM's wait and kick); the host's side of
//! each hypercall is sim/line.rs.
//!
//! - **PV TLB flush** (`kvm_flush_tlb_multi`, Linux 4.16): before `native_flush_tlb_multi`,
//!   each target whose steal-time `preempted` byte has `KVM_VCPU_PREEMPTED` gets
//!   `KVM_VCPU_FLUSH_TLB` or'ed in (`try_cmpxchg`) and leaves the mask: no IPI, no
//!   acknowledgement to wait for. The host flushes that vCPU's TLB at its next VM entry
//!   (x86.c `record_steal_time`).
//! - **PV sched yield** (`kvm_smp_send_call_func_ipi`, Linux 5.3): after
//!   `native_send_call_func_ipi(mask)`, the first target with `!idle_cpu(cpu) &&
//!   vcpu_is_preempted(cpu)` gets `KVM_HC_SCHED_YIELD`, then the loop ends.
//! - **PV IPIs** (`kvm_send_ipi_mask` -> `__send_ipi_mask`, Linux 4.19): the mask is sent as
//!   128-bit APIC-id bitmaps, one `KVM_HC_SEND_IPI` per window of `KVM_IPI_CLUSTER_SIZE`
//!   ids starting at the lowest id not yet sent. Only the mask sends (`apic->send_IPI_mask`,
//!   `send_IPI_mask_allbutself`): a call-function IPI; a reschedule IPI is
//!   `apic->send_IPI(cpu, ...)`, which `kvm_setup_pv_ipi` leaves an ICR write.
//! - **vcpu_is_preempted** (`__kvm_vcpu_is_preempted`, Linux 4.9): wake-up placement
//!   (6.6 kernel/sched/fair.c `select_idle_sibling` tests `available_idle_cpu`, which is
//!   `idle_cpu(cpu) && !vcpu_is_preempted(cpu)`, kernel/sched/core.c).

use super::kernel::{GuestEnv, GuestKernel};
use crate::ids::VcpuId;
use crate::vmexit::{Exit, Hypercall, IpiKind, Next, PvArea};

/// `KVM_IPI_CLUSTER_SIZE` (arch/x86/kernel/kvm.c: `2 * BITS_PER_LONG`, x86-64): APIC ids one
/// `KVM_HC_SEND_IPI` covers.
pub const KVM_IPI_CLUSTER_SIZE: u32 = 128;

/// The `KVM_HC_SEND_IPI` hypercalls `__send_ipi_mask` makes for these APIC ids, visited in
/// increasing order (`for_each_cpu`): a new one whenever an id falls outside the window that
/// starts at the current bitmap's lowest id.
pub fn send_ipi_hypercalls(apic_ids: impl Iterator<Item = u32>) -> usize {
    let mut calls = 0;
    let mut min = None;
    for id in apic_ids {
        match min {
            Some(m) if id >= m && id < m + KVM_IPI_CLUSTER_SIZE => {}
            _ => {
                calls += 1;
                min = Some(id);
            }
        }
    }
    calls
}

impl GuestKernel {
    /// Exits of an IPI send of `kind` to `targets` with PV IPIs: a TLB shootdown's
    /// call-function IPI goes through `send_IPI_mask` (one hypercall per cluster; APIC id =
    /// the vCPU's index in the VM), a reschedule IPI stays one ICR write per target. A
    /// shootdown's targets are in increasing APIC id already (`tlb_shootdown` lists them from
    /// the VM's vCPUs in order), as `for_each_cpu` visits them.
    // Out of the interpreter's hot loop (the 6.x guest's PV paths only): docs/speed.md.
    #[inline(never)]
    pub(super) fn pv_ipi_exits(&self, kind: IpiKind, targets: &[VcpuId]) -> usize {
        match kind {
            IpiKind::TlbShootdown => {
                debug_assert!(targets.is_sorted(), "a shootdown lists its targets in vCPU order");
                send_ipi_hypercalls(targets.iter().map(|u| self.index_of(*u) as u32))
            }
            IpiKind::Resched => targets.len(),
        }
    }

    /// `kvm_flush_tlb_multi`: mark each preempted target of a shootdown of `pages` pages
    /// `KVM_VCPU_FLUSH_TLB` and drop it from `targets`. Returns how many were dropped.
    pub(super) fn pv_flush_tlb_multi(&mut self, pv: &mut [PvArea], targets: &mut Vec<VcpuId>, pages: u32) -> usize {
        let before = targets.len();
        targets.retain(|u| {
            let area = &mut pv[u.idx()];
            if !area.preempted {
                return true;
            }
            // One guest flush covers every shootdown deferred meanwhile; the host charges the
            // pages it stands for (docs/model.md § Linux 6.x guest (KVM PV)).
            area.flush_tlb_pages = area.flush_tlb_pages.saturating_add(pages.max(1));
            false
        });
        let deferred = before - targets.len();
        self.stats.pv_tlb_deferred += deferred as u64;
        deferred
    }

    /// `kvm_smp_send_call_func_ipi`'s loop after the sends: yield to the first target that is not
    /// idle (`idle_cpu`: the guest's view, nothing running or queued) and is preempted.
    // Out of the interpreter's hot loop (the 6.x guest's PV paths only): docs/speed.md.
    #[inline(never)]
    pub(super) fn pv_sched_yield(&mut self, env: &GuestEnv, shootdown: u32) -> Option<Next> {
        let targets = &self.shootdowns[shootdown as usize].targets;
        let u = *targets.iter().find(|u| !self.vcpus[self.index_of(**u)].idle() && env.pv[u.idx()].preempted)?;
        self.stats.pv_sched_yields += 1;
        Some(Next::Exit(Exit::Hypercall(Hypercall::SchedYield(u))))
    }

    /// `available_idle_cpu(cpu)`: the vCPU at `index` is idle in the guest's view and, with
    /// `vcpu_is_preempted`, not preempted by the host.
    #[inline]
    pub(super) fn available_idle(&self, pv: &[PvArea], index: usize) -> bool {
        let gv = &self.vcpus[index];
        gv.idle() && !(self.config.pv.vcpu_is_preempted && pv[gv.id.idx()].preempted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_hypercall_per_128_id_window() {
        assert_eq!(send_ipi_hypercalls([].into_iter()), 0);
        assert_eq!(send_ipi_hypercalls([1, 2, 3].into_iter()), 1);
        assert_eq!(send_ipi_hypercalls([0, 127].into_iter()), 1);
        assert_eq!(send_ipi_hypercalls([0, 128].into_iter()), 2);
        assert_eq!(send_ipi_hypercalls([5, 100, 132, 133, 300].into_iter()), 3);
    }
}
