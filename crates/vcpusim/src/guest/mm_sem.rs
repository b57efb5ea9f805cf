//! The mm semaphore: `mmap_sem`, taken for write by mmap and munmap (Linux 3.2
//! `SYSCALL_DEFINE2(munmap)` / `do_mmap_pgoff` callers: `down_write(&mm->mmap_sem)`).
//!
//! Seed 000 section 3.1.1: dedup and vips "suffer from excessive spinning on the wait-queue lock
//! (sem-wait lock) of mm's semaphore". The model follows x86's rwsem-xadd of Linux 3.2
//! (lib/rwsem.c, arch/x86/include/asm/rwsem.h), write side only:
//!
//! - **down_write fast path**: one atomic xadd when the semaphore is free and nobody waits; no
//!   spinlock, no kernel time beyond the syscall (`DownWrite`).
//! - **slow path** (`rwsem_down_write_failed` -> `rwsem_down_failed_common`): take
//!   `sem->wait_lock`, join the wait list (or take the semaphore if it was released meanwhile
//!   with nobody queued), drop the lock, sleep until an up_write hands the semaphore over
//!   (`Queue`, `Sleep`).
//! - **up_write**: release; with waiters, `rwsem_wake` takes `wait_lock` and `__rwsem_do_wake`
//!   grants the semaphore to the first waiting writer and wakes it *while holding wait_lock*
//!   (`UpWrite`, `HandOff`). The wake-up is `wake_up_process` -> `try_to_wake_up`, whose
//!   reschedule IPI to a remote vCPU is sent inside that critical section, exactly as
//!   futex_wake does under the futex-queue lock (seed 000 Figure 4). This is how a
//!   reschedule-IPI sender comes to hold an `mm-sem-wait` lock. Unlike futex_wake, no Linux
//!   version of the seed's era defers this IPI, so `GuestConfig::futex_wake_ipi` does not apply.
//!
//! **Optimistic spinning** (`[guest] rwsem_spin`, Linux 3.16+, on in the linux-6.x preset;
//! 6.6 kernel/locking/rwsem.c `rwsem_down_write_slowpath` -> `rwsem_can_spin_on_owner`,
//! `rwsem_optimistic_spin`, `rwsem_spin_on_owner`): a writer that finds the semaphore held by a
//! writer that is on a CPU (`owner_on_cpu`: its task runs, and `!vcpu_is_preempted` of its CPU
//! when the guest has that feature) spins in the kernel instead of queueing (`SpinOwner`, a
//! kernel spin: pause-loop exits catch it) until the owner releases (then it takes the
//! semaphore: `rwsem_try_write_lock_unqueued`) or stops being on a CPU (then the slow path
//! above). Without `vcpu_is_preempted` a preempted owner still looks on its CPU, and the
//! spinner spins until the owner's vCPU runs again and releases: the waste the flag removes.
//! Shortcuts: every spinner spins on the owner (no `osq` queue of spinners, whose own
//! `vcpu_is_preempted` checks are left out) and a spinner does not stop at `need_resched`.
//!
//! **Write-lock stealing** (`[guest] rwsem_steal`, Linux 3.10+, on in the linux-3.13, 4.4 and
//! 6.x presets; 4.x kernel/locking/rwsem-xadd.c `__rwsem_do_wake`: "Wake writer at the front of
//! the queue, but do not grant it the lock yet as we want other writers to be able to steal
//! it"): a release with writers queued wakes the first without giving it the semaphore. Any
//! writer that finds it free takes it: an optimistic spinner (`rwsem_try_write_lock_unqueued`),
//! a newcomer in the slow path's first `rwsem_try_write_lock` under `wait_lock`, or a woken
//! waiter, which retries under `wait_lock` and sleeps again while the semaphore is held
//! (`rwsem_down_write_failed`'s loop). Without it (3.2, lib/rwsem.c) the release grants the
//! semaphore to the first waiter. Left out: 6.x's hand-off bit (`RWSEM_FLAG_HANDOFF`, set by a
//! first waiter that waited `RWSEM_WAIT_TIMEOUT`, about 4 ms, after which nobody steals), so a
//! waiter here can be overtaken for as long as writers keep arriving; and the mmap_sem arrows of
//! the hand-off trace, drawn only for granted hand-offs.
//!
//! munmap holds the semaphore across the page-table work *and* the TLB shootdown
//! (`unmap_region` -> `tlb_finish_mmu` -> `flush_tlb_mm` runs under it), so a writer whose
//! shootdown waits for a preempted vCPU keeps every other mmap/munmap of the VM sleeping.
//! Readers (page faults take `down_read`) are not modelled: the workloads fault in user time.

use super::handoff::HandOffKind;
use super::kernel::{GuestEnv, GuestKernel};
use super::kernel_fn::KernelFn;
use super::thread::{Action, FutexKey, SpinCond, Step, Thread, ThreadState};
use crate::ids::{ThreadId, VcpuId};
use crate::time::Nanos;
use crate::vmexit::{IpiKind, PvArea};

/// Lock class of `sem->wait_lock` in the LHP report (seed 000 section 3.1.1: "sem-wait lock").
pub const WAIT_LOCK_CLASS: &str = "mm-sem-wait";

/// The semaphore's name on the trace's hand-off arrows (`mm->mmap_sem`).
pub const MM_SEM_NAME: &str = "mmap_sem";

/// Kernel time under wait_lock to queue a waiter (list_add_tail + the count update), assumed
/// like futex_wait's queueing: a few cache misses.
const QUEUE_NS: Nanos = 100;
/// Kernel time under wait_lock to grant the semaphore and mark the waiter runnable
/// (`__rwsem_do_wake` + `try_to_wake_up`), assumed like futex_wake's per-waiter cost.
const HAND_OFF_NS: Nanos = 200;

/// One step of the write side of mmap_sem, run as `Action::MmSem`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MmSemOp {
    /// down_write: the fast path, or the slow path's steps.
    DownWrite,
    /// Under wait_lock: take the semaphore if it is free with nobody queued (with stealing:
    /// if it is free), else queue.
    Queue,
    /// After dropping wait_lock: sleep unless the semaphore was handed over meanwhile (with
    /// stealing: unless it is free).
    Sleep,
    /// With stealing, after `Sleep`: own it -> done; held -> sleep again; free -> take it under
    /// wait_lock (`rwsem_down_write_failed`'s loop).
    Retry,
    /// With stealing, under wait_lock: a queued writer takes the semaphore if it is free
    /// (`rwsem_try_write_lock`).
    TakeQueued,
    /// up_write: release; with waiters, rwsem_wake's steps.
    UpWrite,
    /// After an optimistic spin (`SpinCond::MmSemOwner`) ended: take the semaphore if it is
    /// free, spin again on a new running owner, else the slow path.
    AfterSpin,
    /// Under wait_lock: grant the semaphore to the first waiter and wake it (with stealing:
    /// wake it only).
    HandOff,
}

impl GuestKernel {
    /// A writer past the fast path may take mmap_sem now: it is free, and nobody is queued or
    /// (with stealing) queued writers do not hold it back (`rwsem_try_write_lock_unqueued`,
    /// `rwsem_try_write_lock`).
    fn mm_sem_takeable(&self) -> bool {
        let sem = &self.objects.mm_sem;
        sem.owner.is_none() && (sem.waiters.is_empty() || self.config.rwsem_steal)
    }

    fn mm_sem_down_write(&mut self, env: &mut GuestEnv, t: ThreadId) {
        let sem = &mut self.objects.mm_sem;
        // The fast path's cmpxchg needs the count without waiters; with stealing, a free
        // semaphore with writers queued is taken at once by the optimistic spin's first
        // `rwsem_try_write_lock_unqueued` (owner NULL, nothing active: `rwsem_can_spin_on_owner`).
        if sem.owner.is_none() && (sem.waiters.is_empty() || (self.config.rwsem_steal && self.config.rwsem_spin)) {
            sem.owner = Some(t);
            return;
        }
        if self.config.rwsem_spin && self.mm_sem_owner_on_cpu(env.threads, env.pv) {
            env.push_front_steps(t, Self::mm_sem_spin_steps());
            return;
        }
        self.mm_sem_slow_path(env, t);
    }

    /// `rwsem_optimistic_spin`'s loop: spin while the owner is on a CPU, then decide.
    fn mm_sem_spin_steps() -> [Step; 2] {
        [Step::UserSpin { cond: SpinCond::MmSemOwner, budget: None }, Step::Do(Action::MmSem(MmSemOp::AfterSpin))]
    }

    /// `owner_on_cpu(owner)`: mmap_sem's writer runs on its vCPU (`owner->on_cpu`) and, with
    /// `vcpu_is_preempted`, that vCPU is not preempted. False when nobody holds it.
    pub(super) fn mm_sem_owner_on_cpu(&self, threads: &[Thread], pv: &[PvArea]) -> bool {
        let Some(owner) = self.objects.mm_sem.owner else { return false };
        let u = threads[owner.idx()].vcpu;
        let on_cpu = self.vcpus[self.index_of(u)].current == Some(owner);
        on_cpu && !(self.config.pv.vcpu_is_preempted && pv[u.idx()].preempted)
    }

    /// After the spin: free -> take it (`rwsem_try_write_lock_unqueued`); held by a writer
    /// still on a CPU (another spinner won) -> spin again; else queue and sleep.
    fn mm_sem_after_spin(&mut self, env: &mut GuestEnv, t: ThreadId) {
        self.objects.mm_sem.spinners.retain(|s| *s != t);
        if self.mm_sem_takeable() {
            self.objects.mm_sem.owner = Some(t);
            return;
        }
        if self.mm_sem_owner_on_cpu(env.threads, env.pv) {
            env.push_front_steps(t, Self::mm_sem_spin_steps());
            return;
        }
        self.mm_sem_slow_path(env, t);
    }

    /// The host set `v`'s PV-area preempted flag: the vCPUs whose threads spin on mmap_sem's
    /// owner running on `v` read it in `owner_on_cpu` (`vcpu_is_preempted`, with `rwsem_spin`)
    /// and stop spinning, so they must look again. Empty unless the guest has both features.
    pub fn preempted_flag_readers(&self, threads: &[Thread], v: VcpuId) -> Vec<VcpuId> {
        if !(self.config.rwsem_spin && self.config.pv.vcpu_is_preempted) {
            return Vec::new();
        }
        let sem = &self.objects.mm_sem;
        match sem.owner {
            Some(owner) if !sem.spinners.is_empty() && threads[owner.idx()].vcpu == v => {
                sem.spinners.iter().map(|t| threads[t.idx()].vcpu).collect()
            }
            _ => Vec::new(),
        }
    }

    /// `rwsem_down_write_slowpath` past the spin: queue under `wait_lock` and sleep.
    fn mm_sem_slow_path(&mut self, env: &mut GuestEnv, t: ThreadId) {
        let lock = self.mm_sem_wait_lock(env.locks, WAIT_LOCK_CLASS);
        let func = KernelFn::Syscall;
        let retry = self.config.rwsem_steal.then_some(Step::Do(Action::MmSem(MmSemOp::Retry)));
        let steps = [
            Step::Lock { lock, func },
            Step::Run { ns: QUEUE_NS, func },
            Step::Do(Action::MmSem(MmSemOp::Queue)),
            Step::Unlock { lock },
            Step::Do(Action::MmSem(MmSemOp::Sleep)),
        ];
        env.push_front_steps(t, steps.into_iter().chain(retry));
    }

    fn mm_sem_queue(&mut self, t: ThreadId) {
        // Released before we got wait_lock: 3.2's `rwsem_down_failed_common` "no active locks"
        // check (nobody ahead) or 3.10+'s first `rwsem_try_write_lock` (anyone ahead) gives it
        // to us without sleeping.
        let takeable = self.mm_sem_takeable();
        let sem = &mut self.objects.mm_sem;
        if takeable {
            sem.owner = Some(t);
        } else {
            sem.waiters.push_back(t);
        }
    }

    /// `t`, running on vCPU `i`, sleeps unless the semaphore was handed over meanwhile.
    fn mm_sem_sleep(&mut self, env: &mut GuestEnv, i: usize, t: ThreadId) {
        if !self.objects.mm_sem.waiters.contains(&t) {
            return; // handed over (or taken) already
        }
        if self.config.rwsem_steal && self.objects.mm_sem.owner.is_none() {
            return; // released meanwhile: the retry takes it
        }
        // As block_current, minus the futex_wait count and deadlock check of its caller: a
        // sleeper here always has a running owner ahead of it (owners never sleep while holding
        // the semaphore in this model), so its VM cannot be deadlocked by it.
        let current = self.vcpus[i].current.take();
        self.note_vcpu(i);
        debug_assert_eq!(current, Some(t), "the sleeper runs on its vCPU");
        env.threads[t.idx()].state = ThreadState::Blocked(FutexKey::MmSem);
        self.blocked_threads += 1;
    }

    fn mm_sem_up_write(&mut self, env: &mut GuestEnv, t: ThreadId) {
        let sem = &mut self.objects.mm_sem;
        debug_assert_eq!(sem.owner, Some(t), "only the owner releases mmap_sem");
        sem.owner = None;
        // Optimistic spinners see the owner gone (rwsem_spin_on_owner: OWNER_NULL).
        self.poke_spinners(env.threads, |o| &mut o.mm_sem.spinners);
        let sem = &mut self.objects.mm_sem;
        if sem.waiters.is_empty() {
            return;
        }
        let lock = self.mm_sem_wait_lock(env.locks, WAIT_LOCK_CLASS);
        // `up_write` -> `rwsem_wake` (kernel/locking/rwsem-xadd.c): `wait_lock`, `__rwsem_do_wake`.
        let steps = [Step::Lock { lock, func: KernelFn::RwsemWake }, Step::Do(Action::MmSem(MmSemOp::HandOff)), Step::Unlock { lock }];
        env.push_front_steps(t, steps);
    }

    /// With stealing, after `Sleep`: see `MmSemOp::Retry`.
    fn mm_sem_retry(&mut self, env: &mut GuestEnv, t: ThreadId) {
        let sem = &self.objects.mm_sem;
        if !sem.waiters.contains(&t) {
            return; // took it in the queueing step
        }
        let retry = Step::Do(Action::MmSem(MmSemOp::Retry));
        if sem.owner.is_some() {
            env.push_front_steps(t, [Step::Do(Action::MmSem(MmSemOp::Sleep)), retry]);
            return;
        }
        let lock = self.mm_sem_wait_lock(env.locks, WAIT_LOCK_CLASS);
        let take = Step::Do(Action::MmSem(MmSemOp::TakeQueued));
        env.push_front_steps(t, [Step::Lock { lock, func: KernelFn::Syscall }, take, Step::Unlock { lock }, retry]);
    }

    /// With stealing, under wait_lock: `rwsem_try_write_lock` of a queued writer.
    fn mm_sem_take_queued(&mut self, t: ThreadId) {
        let sem = &mut self.objects.mm_sem;
        if sem.owner.is_none() {
            sem.owner = Some(t);
            sem.waiters.retain(|w| *w != t);
        }
    }

    /// Under wait_lock: the next Step is the Unlock, so the wake-up's work and IPI go before it.
    fn mm_sem_hand_off(&mut self, env: &mut GuestEnv, v: VcpuId, t: ThreadId) {
        if self.config.rwsem_steal {
            // `__rwsem_do_wake(RWSEM_WAKE_ANY)`: wake the first writer, grant nothing (a writer
            // that stole the semaphore meanwhile does not stop the wake-up).
            let Some(&first) = self.objects.mm_sem.waiters.front() else { return };
            self.mm_sem_wake(env, v, t, first);
            return;
        }
        let sem = &mut self.objects.mm_sem;
        if sem.owner.is_some() {
            // An optimistic spinner took the semaphore while this release waited for
            // wait_lock: the waiters stay queued for its release (6.6 would wake the first,
            // which finds the semaphore taken and sleeps again).
            return;
        }
        let Some(next) = sem.waiters.pop_front() else { return };
        sem.owner = Some(next);
        if let Some(log) = self.handoffs.as_mut() {
            log.release(env.now, HandOffKind::MmSem, MM_SEM_NAME.to_string(), t, v, next);
        }
        self.mm_sem_wake(env, v, t, next);
    }

    /// `t` on vCPU `v` wakes the waiter `next`: `__rwsem_do_wake` -> `wake_up_process` under
    /// `wait_lock`, its IPI sent from `resched_curr`.
    fn mm_sem_wake(&mut self, env: &mut GuestEnv, v: VcpuId, t: ThreadId, next: ThreadId) {
        let ipi = self.wake_thread(env.threads, env.pv, env.now, v, next).map(|target| {
            let mut targets = self.scratch.ipi_targets();
            targets.push(target);
            Step::SendIpis { kind: IpiKind::Resched, targets, shootdown: 0, pages: 0, func: KernelFn::ReschedCurr }
        });
        env.push_front_steps(t, [Some(Step::Run { ns: HAND_OFF_NS, func: KernelFn::RwsemWake }), ipi].into_iter().flatten());
    }
}

impl GuestKernel {
    /// `Action::MmSem(op)` of thread `t` on vCPU `i`.
    pub fn mm_sem_action(&mut self, env: &mut GuestEnv, i: usize, t: ThreadId, op: MmSemOp) {
        let v = self.vcpus[i].id;
        match op {
            MmSemOp::DownWrite => self.mm_sem_down_write(env, t),
            MmSemOp::Queue => self.mm_sem_queue(t),
            MmSemOp::Sleep => self.mm_sem_sleep(env, i, t),
            MmSemOp::UpWrite => self.mm_sem_up_write(env, t),
            MmSemOp::HandOff => self.mm_sem_hand_off(env, v, t),
            MmSemOp::AfterSpin => self.mm_sem_after_spin(env, t),
            MmSemOp::Retry => self.mm_sem_retry(env, t),
            MmSemOp::TakeQueued => self.mm_sem_take_queued(t),
        }
    }
}
