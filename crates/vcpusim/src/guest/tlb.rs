//! TLB shootdown (arch/x86/mm/tlb.c, flush_tlb_others): after unmapping, the initiator sends a
//! TLB IPI to every other vCPU that may cache the address space and spins until each has
//! flushed and acknowledged (seed 000 section 3.1.1). A preempted recipient acknowledges only
//! when the hypervisor runs it again, unless the Linux 6.x guest's `pv_tlb_flush` left it out
//! (guest/pv_guest.rs).

use super::config::TlbTargets;
use super::kernel::{GuestEnv, GuestKernel};
use super::kernel_fn::KernelFn;
use super::thread::{Action, Step};
use crate::ids::{ThreadId, VcpuId};
use crate::vmexit::IpiKind;

impl GuestKernel {
    /// Thread `t` on vCPU `v` starts a shootdown of `pages` pages now: queue its IPI send and its
    /// wait for the acknowledgements. Returns whether there was anyone to send to.
    pub fn tlb_shootdown(&mut self, env: &mut GuestEnv, v: VcpuId, t: ThreadId, pages: u32) -> bool {
        let mode = self.config.tlb_targets;
        let mut targets = self.scratch.ipi_targets();
        targets.extend(
            self.vcpus
                .iter()
                .filter(|u| u.id != v)
                .filter(|u| match mode {
                    TlbTargets::AllInMask => u.mm_loaded,
                    TlbTargets::SkipLazy => u.mm_loaded && u.current.is_some(),
                })
                .map(|u| u.id),
        );
        if targets.is_empty() {
            self.scratch.recycle_ipi_targets(targets);
            return false;
        }
        let native = self.topology.is_some();
        if self.config.pv.pv_tlb_flush && !native && self.pv_flush_tlb_multi(env.pv, &mut targets, pages) > 0 && targets.is_empty() {
            // Every target was preempted: all flush at their next VM entry, nobody to wait for.
            self.scratch.recycle_ipi_targets(targets);
            return true;
        }
        let id = self.start_shootdown(t, targets.len() as u32, pages, env.now);
        let yield_check = self.config.call_function_yield && !native;
        let pv_yield = self.config.pv.pv_sched_yield && !native;
        if yield_check || pv_yield {
            // The yield step reads the targets from the record, which lives until `WaitAcks`.
            self.shootdowns[id as usize].targets.extend_from_slice(&targets);
        }
        let th = &mut env.threads[t.idx()];
        th.steps.push_front(Step::WaitAcks { shootdown: id });
        if pv_yield {
            // Linux 6.x on KVM: smp_call_function_many_cond -> arch_send_call_function_ipi_mask ->
            // kvm_smp_send_call_func_ipi, which yields to a preempted target after the sends.
            th.steps.push_front(Step::Do(Action::PvSchedYield { shootdown: id }));
        }
        if yield_check {
            // Linux 4.4 on Xen: smp_call_function_many -> arch_send_call_function_ipi_mask ->
            // xen_smp_send_call_function_ipi, which yields after the sends if a target is stolen.
            th.steps.push_front(Step::Do(Action::YieldIfStolen { shootdown: id }));
        }
        th.steps.push_front(Step::SendIpis { kind: IpiKind::TlbShootdown, targets, shootdown: id, pages, func: KernelFn::FlushTlbOthers });
        true
    }
}
