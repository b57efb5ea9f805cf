//! Native host processes' kernel sections are not preemptible (`[[vm]] native = true`,
//! scenario/native_sections.rs).
//!
//! A task of the host kernel holding a spinlock runs with preemption disabled: `spin_lock`
//! begins with `preempt_disable()` (Linux 3.2 include/linux/spinlock_api_smp.h
//! `__raw_spin_lock`; the same in 4.4 and 6.6), so a tick or a wake-up that finds the task
//! should yield only sets `TIF_NEED_RESCHED` (`resched_task`), and the switch happens when the
//! outermost `spin_unlock` ends with `preempt_enable()` -> `preempt_check_resched()` ->
//! `preempt_schedule()` (include/linux/preempt.h, `CONFIG_PREEMPT`; a `!CONFIG_PREEMPT` host
//! switches at the next return to user space, later still). A native task is thus never
//! preempted holding, or spinning for, a kernel spinlock: no lock-holder preemption.
//!
//! ```text
//!   tick / wake-up on p ── reschedule(p) ── current is a native task in a spinlock section?
//!        yes: pv.preempt_pending = true (need_resched), no switch       (`native_defers`)
//!        outermost unlock ── Hypercall::PreemptAck ── reschedule(p)      (`native_resched`)
//! ```
//!
//! The guest side is delayed preemption's (guest/run.rs: the lock mark, and the give-back
//! after the outermost unlock when `preempt_pending` is set), with no bound: a native kernel
//! has none. The give-back costs nothing (no exit: `preempt_schedule` is a call).
//! Shortcut: only spinlock sections count (held, or spun for); interrupt handlers and the
//! scheduler's own paths are charged as overheads and never preempted halfway in the model.

use super::super::state::Sim;
use crate::hypervisor::policy::VcpuState;
use crate::ids::{PcpuId, VcpuId};
use crate::metrics::table::MetricRows;

/// What the rule did (which VMs are native is `Vm::native`).
pub struct NativeTasks {
    /// Preemptions deferred, by VM index.
    deferred: Vec<u64>,
}

impl NativeTasks {
    /// For `vms` VMs, `None` when none is native (the rule costs one test per reschedule then).
    pub fn new(vms: usize, any_native: bool) -> Option<Box<NativeTasks>> {
        any_native.then(|| Box::new(NativeTasks { deferred: vec![0; vms] }))
    }
}

impl Sim {
    /// Whether the reschedule of `p` waits: its current vCPU is a native task, willing to run,
    /// in a spinlock section. Marks the preemption pending for the guest's outermost unlock.
    pub(in crate::sim) fn native_defers(&mut self, p: PcpuId) -> bool {
        let Some(c) = self.pinfo[p.idx()].current else { return false };
        let vm = self.vinfo[c.idx()].vm.idx();
        if !self.vms[vm].native || self.vinfo[c.idx()].state != VcpuState::Running || self.vcpus[c.idx()].yielding {
            return false;
        }
        let (g, i) = self.gslot(c);
        self.guests[g].publish_lock_mark(self.guests.threads(), i, &mut self.pv);
        if !self.pv[c.idx()].lock_mark {
            return false;
        }
        if !self.pv[c.idx()].preempt_pending {
            self.pv[c.idx()].preempt_pending = true;
            if let Some(nt) = self.mechanisms.native_tasks.as_mut() {
                nt.deferred[vm] += 1;
            }
        }
        true
    }

    /// The native task on `v` left its last spinlock with a preemption pending
    /// (`preempt_enable` -> `preempt_schedule`): reschedule its pCPU now. Whether `v` is one.
    pub(in crate::sim) fn native_resched(&mut self, v: VcpuId) -> bool {
        if self.mechanisms.native_tasks.is_none() || !self.vms[self.vinfo[v.idx()].vm.idx()].native {
            return false;
        }
        if std::mem::take(&mut self.pv[v.idx()].preempt_pending) {
            if let Some(p) = self.vinfo[v.idx()].pcpu {
                self.reschedule(p);
            }
        }
        true
    }

    /// A native task leaves its pCPU (it blocked, or a decision moved it): nothing is pending.
    pub(in crate::sim) fn native_switched_out(&mut self, v: VcpuId) {
        if self.vms[self.vinfo[v.idx()].vm.idx()].native {
            self.pv[v.idx()].preempt_pending = false;
        }
    }

    /// VM `i`'s metrics.csv row, when it is a native process: the preemptions deferred to its
    /// outermost unlock.
    pub(in crate::sim) fn native_metrics(&self, i: usize, rows: &mut MetricRows) {
        let Some(nt) = self.mechanisms.native_tasks.as_ref() else { return };
        if self.vms[i].native {
            rows.put("native_deferred_preemptions", nt.deferred[i]);
        }
    }
}
