//! The paravirtual slow path of Linux 4.4's queued spinlock in a Xen guest
//! (`SpinlockKind::PvQueued`): kernel/locking/qspinlock_paravirt.h (`pv_wait_node`,
//! `pv_kick_node`, `pv_wait_head`, `__pv_queued_spin_unlock`) over arch/x86/xen/spinlock.c
//! (`xen_qlock_wait`, `xen_qlock_kick`); and the same state machine in the Linux 6.x guest
//! on KVM (`pv_spinlock` on a KVM host: `GuestConfig::kvm_pv_spinlock`), where only the two
//! hypervisor calls differ (arch/x86/kernel/kvm.c, Linux 6.6):
//! - `pv_wait` is `kvm_wait`: if the byte still holds the value, `safe_halt()`, a HLT
//!   (`Exit::Hlt`) that returns on an interrupt or on the kick's `pv_unhalted`
//!   (`kvm_arch_vcpu_runnable`); no event to clear first, the host's flag does that job.
//! - `pv_kick` is `kvm_kick_cpu`: `KVM_HC_KICK_CPU` (`Hypercall::KickCpu`), one hypercall exit.
//!
//! What 6.6 adds over 4.4 and the model leaves out: the one lock-stealing attempt at slow-path
//! entry (`pv_queued_spin_steal_lock`, 4.5), the queue node's early wait when its predecessor
//! is not running (`pv_wait_early`, 4.6) and the pending bit of the head's spin
//! (`set_pending`): the lock is handed over at release here (the ticket model), so there is
//! no window in which a stealer could take it (docs/model.md § Linux 6.x guest (KVM PV)).
//!
//! The lock itself is FIFO (guest/spinlock.rs: the MCS queue, no pending bit under PV, no
//! stealing in 4.4). What PV adds:
//! - **Spin, then block.** A waiter spins `SPIN_THRESHOLD` loops (`GuestConfig::pv_spin` of
//!   time on its vCPU; pause-loop exits may yield it meanwhile), then calls `pv_wait` ->
//!   `xen_qlock_wait`: clear the kicker event, re-check, `SCHEDOP_poll` (`Hypercall::Poll`).
//!   Before that, the queue head hashes the lock and sets `_Q_SLOW_VAL` (`pv_wait_head`: state
//!   `Hashed`), a queued node only marks itself `vcpu_halted` (`pv_wait_node`: `Halted`). After
//!   any wake-up it spins a fresh `SPIN_THRESHOLD` (both loops are `for (;;)`), a node going
//!   back to `vcpu_running`, a head keeping its hash.
//! - **The unlocker kicks.** `__pv_queued_spin_unlock` kicks (`pv_kick(node->cpu)`, an
//!   EVTCHNOP_send: `Step::Kick` then `Hypercall::Kick`) exactly when the lock byte is
//!   `_Q_SLOW_VAL`: when the head it hands the lock to is `Hashed`, whether it still sleeps or
//!   not ("kicking an active vCPU is harmless").
//! - **Only the head is kicked.** When a waiter takes the lock, the next node becomes head
//!   (`arch_mcs_spin_unlock_contended`), and `pv_kick_node` does not wake it if it sleeps: it
//!   advances it to `Hashed` and sets `_Q_SLOW_VAL`, so the new owner's unlock kicks it. Here
//!   the lock passes to the head at release (the ticket model), so that step happens at the
//!   release too: the new head is advanced if it sleeps, or starts `pv_wait_head`'s fresh spin
//!   if it spins (docs/model.md § seed 002: the Linux 4.4 guest).
//!
//! No wake-up can be lost: the host keeps the kicker event pending until the next poll clears
//! it, a poll that finds it pending (or an interrupt waiting) does not block (sim/line.rs,
//! `Sim::hypercall`), and check mode asserts that a vCPU blocked in a poll whose thread has
//! been handed its lock has a kick on its way (`check_pv_wakeups`).

use super::kernel::{GuestEnv, GuestKernel};
use super::spinlock::Spinlock;
use super::thread::{PvState, Step, Thread};
use crate::ids::{LockId, ThreadId, VcpuId};
use crate::vmexit::{Exit, Hypercall, Next, TimeKind};

impl GuestKernel {
    /// Thread `t` on vCPU `i` must wait for PV qspinlock `lock`: spin what is left of its
    /// `SPIN_THRESHOLD`, or, when that is spent, `pv_wait` (SCHEDOP_poll).
    // Out of the interpreter's hot loop (PV spinlocks only): docs/speed.md.
    #[inline(never)]
    pub(super) fn pv_wait(&mut self, env: &mut GuestEnv, i: usize, t: ThreadId, lock: LockId) -> Next {
        let head = env.locks[lock.idx()].waiters.front() == Some(&t);
        let th = &mut env.threads[t.idx()];
        if th.pv_state == PvState::Halted {
            // Running again without a kick (an interrupt woke it): pv_wait_node's
            // `cmpxchg(&pn->state, vcpu_halted, vcpu_running)`.
            th.pv_state = PvState::Running;
        }
        let left = *th.pv_spin_left.get_or_insert(self.config.pv_spin);
        if left > 0 {
            return Next::Spin { kind: TimeKind::Spin, budget: Some(left) };
        }
        // SPIN_THRESHOLD spent. The head hashes the lock and sets _Q_SLOW_VAL once
        // (pv_wait_head); a node sets vcpu_halted (pv_wait_node). Then pv_wait; after it
        // returns, a fresh SPIN_THRESHOLD.
        if head {
            th.pv_state = PvState::Hashed;
        } else if th.pv_state == PvState::Running {
            th.pv_state = PvState::Halted;
        }
        th.pv_spin_left = None;
        self.stats.pv_polls += 1;
        self.vcpus[i].pv_polled = true;
        if self.config.kvm_pv_spinlock() {
            // kvm_wait: safe_halt(); the host treats a HLT of a polling vCPU as this wait.
            Next::Exit(Exit::Hlt)
        } else {
            Next::Exit(Exit::Hypercall(Hypercall::Poll))
        }
    }

    /// The hypercall a `Step::Kick` of `vcpu` makes once its cost is paid: KVM's
    /// `KVM_HC_KICK_CPU` or Xen's `EVTCHNOP_send` on the kicker port.
    pub(super) fn kick_hypercall(&self, vcpu: VcpuId) -> Hypercall {
        if self.config.kvm_pv_spinlock() {
            Hypercall::KickCpu(vcpu)
        } else {
            Hypercall::Kick(vcpu)
        }
    }

    /// Thread `t` released PV qspinlock `lock` to `next` (the queue head; `None`: nobody
    /// waited). `__pv_queued_spin_unlock`: a hashed head is kicked after the release
    /// (`Step::Kick` queued in front of `t`'s next step); then the new head's `pv_kick_node`.
    // Out of the interpreter's hot loop (PV spinlocks only): docs/speed.md.
    #[inline(never)]
    pub(super) fn pv_unlock(&mut self, env: &mut GuestEnv, t: ThreadId, lock: LockId, next: Option<ThreadId>) {
        let Some(n) = next else { return };
        if env.threads[n.idx()].pv_state == PvState::Hashed {
            let vcpu = env.threads[n.idx()].vcpu;
            env.threads[t.idx()].steps.push_front(Step::Kick { vcpu });
            self.stats.pv_kicks += 1;
        }
        let Some(&w) = env.locks[lock.idx()].waiters.front() else { return };
        let th = &mut env.threads[w.idx()];
        match th.pv_state {
            // pv_kick_node: `cmpxchg(&pn->state, vcpu_halted, vcpu_hashed)`, `_Q_SLOW_VAL`, hash.
            PvState::Halted => th.pv_state = PvState::Hashed,
            // Still spinning: it leaves pv_wait_node and spins pv_wait_head's SPIN_THRESHOLD.
            PvState::Running => {
                th.pv_spin_left = None;
                self.poke(env.threads, w);
            }
            PvState::Hashed => {}
        }
    }

    /// Check mode: no lost wake-up. A vCPU of this guest blocked in a PV spinlock's poll
    /// (`blocked`) whose thread already holds the lock it waits for (handed over at release)
    /// must have a kick on its way: a `Step::Kick` for it in one of the VM's threads.
    pub fn check_pv_wakeups(&self, threads: &[Thread], locks: &[Spinlock], blocked: impl Fn(VcpuId) -> bool) -> Result<(), String> {
        for gv in &self.vcpus {
            if !gv.pv_polled || !blocked(gv.id) {
                continue;
            }
            let Some(t) = gv.current else { continue };
            let Some(&Step::Lock { lock, .. }) = threads[t.idx()].steps.front() else { continue };
            if locks[lock.idx()].holder != Some(t) {
                continue;
            }
            let kick_coming = self.threads.iter().any(|u| threads[u.idx()].steps.iter().any(|s| *s == Step::Kick { vcpu: gv.id }));
            if !kick_coming {
                return Err(format!(
                    "lost wake-up: vCPU {} sleeps in SCHEDOP_poll although its thread {t} holds PV spinlock {} and no kick is on its way",
                    gv.id,
                    lock.idx()
                ));
            }
        }
        Ok(())
    }
}
