//! Lock hand-offs, recorded for the trace's flow arrows from a release to the waiter it lets go
//! on. Recorded only in a traced run: `GuestKernel::handoffs` is `None`
//! otherwise, so an untraced run records nothing and each hook costs one branch on `None`.
//!
//! Three releases hand something to a waiter:
//! - a guest-kernel spinlock (`GuestKernel::release`, guest/run.rs): a ticket lock passes to the
//!   next ticket, a test-and-set lock to a running spinner (Linux 3.2 `__ticket_spin_unlock`:
//!   the next ticket's owner sees `head == tail` and proceeds);
//! - a contended glibc mutex (`mutex_unlock` -> `futex_wake`, guest/futex.rs): `FUTEX_WAKE` on the
//!   mutex word makes one sleeper runnable (kernel/futex.c `futex_wake` -> `wake_futex`). glibc's
//!   lowlevellock does not pass ownership: the woken thread retries the word and may lose it and
//!   sleep again (`__lll_lock_wait`), so this arrow is "woken by this unlock", not "now owns it";
//!   waiters a `pthread_cond_broadcast` requeued onto the mutex (`FUTEX_CMP_REQUEUE`) are woken
//!   this way too, one per unlock;
//! - the VM's `mmap_sem` (`up_write` -> `__rwsem_do_wake`, guest/mm_sem.rs), which grants the
//!   semaphore to the first queued writer before waking it (lib/rwsem.c, Linux 3.2).
//!
//! A hand-off is two records: the `Release` when the releasing thread lets the waiter go (its
//! vCPU, the lock, the waiter), and the `Resume` when that waiter next runs a step on a vCPU
//! (`GuestKernel::run`, just before its front step): a spinner's next pass that finds the lock
//! its own, a woken sleeper's first step after it is picked. The host drains the records after
//! each `run` into the trace (`sim/tracing.rs`), which pairs them by thread.

use crate::ids::{ThreadId, VcpuId};
use crate::time::Nanos;

/// What was handed over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HandOffKind {
    /// A guest-kernel spinlock (futex bucket lock, `mm-sem-wait`, a `kernel_locks` lock).
    Spinlock,
    /// A glibc mutex's futex wake.
    Mutex,
    /// The mm's `mmap_sem`, write side.
    MmSem,
}

impl HandOffKind {
    /// The trace's name for the arrow (the flow event's `name`).
    pub fn name(self) -> &'static str {
        match self {
            HandOffKind::Spinlock => "spinlock hand-off",
            HandOffKind::Mutex => "mutex wake",
            HandOffKind::MmSem => "mmap_sem hand-off",
        }
    }
}

/// One record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HandOffEvent {
    /// Thread `from`, running on vCPU `from_vcpu`, lets waiter `to` go on `lock` (a spinlock's
    /// class, the mutex's name, `mmap_sem`).
    Release { kind: HandOffKind, lock: String, from: ThreadId, from_vcpu: VcpuId, to: ThreadId },
    /// Waiter `thread` runs again, on vCPU `vcpu`.
    Resume { thread: ThreadId, vcpu: VcpuId },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HandOff {
    pub at: Nanos,
    pub event: HandOffEvent,
}

/// The buffer the host drains, and the waiters whose resumption is still to be recorded.
#[derive(Clone, Debug, Default)]
pub struct HandOffLog {
    records: Vec<HandOff>,
    /// Waiters handed something and not yet run since (a few at most: one per waiter).
    awaiting: Vec<ThreadId>,
}

impl HandOffLog {
    /// `from` (on `from_vcpu`) lets `to` go on `lock` at `at`.
    pub fn release(&mut self, at: Nanos, kind: HandOffKind, lock: String, from: ThreadId, from_vcpu: VcpuId, to: ThreadId) {
        self.records.push(HandOff { at, event: HandOffEvent::Release { kind, lock, from, from_vcpu, to } });
        if !self.awaiting.contains(&to) {
            self.awaiting.push(to);
        }
    }

    /// `thread` is about to run a step on `vcpu` at `at`: if it was handed something since it last
    /// ran, that is where it resumes.
    #[inline]
    pub fn running(&mut self, at: Nanos, thread: ThreadId, vcpu: VcpuId) {
        if let Some(pos) = self.awaiting.iter().position(|t| *t == thread) {
            self.awaiting.swap_remove(pos);
            self.records.push(HandOff { at, event: HandOffEvent::Resume { thread, vcpu } });
        }
    }

    /// The records since the last drain, in the order they happened.
    pub fn drain(&mut self) -> std::vec::Drain<'_, HandOff> {
        self.records.drain(..)
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_waiter_resumes_once_after_each_release() {
        let mut log = HandOffLog::default();
        log.running(5, ThreadId(1), VcpuId(0)); // nothing handed to it yet
        log.release(10, HandOffKind::Spinlock, "futex-queue".into(), ThreadId(0), VcpuId(0), ThreadId(1));
        log.running(12, ThreadId(2), VcpuId(2)); // another thread
        log.running(15, ThreadId(1), VcpuId(1));
        log.running(16, ThreadId(1), VcpuId(1)); // already resumed
        let got: Vec<HandOff> = log.drain().collect();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].at, 10);
        assert!(matches!(got[0].event, HandOffEvent::Release { to: ThreadId(1), from_vcpu: VcpuId(0), .. }));
        assert_eq!(got[1], HandOff { at: 15, event: HandOffEvent::Resume { thread: ThreadId(1), vcpu: VcpuId(1) } });
        assert!(log.is_empty());
    }
}
