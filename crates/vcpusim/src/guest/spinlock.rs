//! Guest-kernel spinlocks: ticket (FIFO), test-and-set (unfair) and Linux 4.2+'s queued
//! spinlock (qspinlock: FIFO through its MCS queue; with Xen's PV slow path in a 4.4 guest,
//! guest/pv_spinlock.rs).
//!
//! A waiter spins on its vCPU; it makes progress only while that vCPU runs. With a ticket lock
//! the lock is handed to the next ticket at release even if that waiter's vCPU is preempted, so
//! everyone behind it waits for the hypervisor to run it (lock-waiter preemption). A
//! test-and-set lock goes to whichever waiter is running when it is released (or, if none is,
//! to the first one to run afterwards).

use crate::ids::ThreadId;
use crate::workload::program::SpinlockKind;
use std::collections::VecDeque;

#[derive(Clone, Debug)]
pub struct Spinlock {
    pub kind: SpinlockKind,
    /// Lock class name for LHP reports ("futex-queue", or a kernel lock name).
    pub class: String,
    pub holder: Option<ThreadId>,
    /// Threads spinning on it, in arrival order (ticket order for a ticket lock).
    pub waiters: VecDeque<ThreadId>,
}

/// Result of trying to take a lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Acquire {
    Got,
    /// Must spin; the thread is (now) queued as a waiter.
    Spin,
}

impl Spinlock {
    pub fn new(kind: SpinlockKind, class: impl Into<String>) -> Self {
        Spinlock { kind, class: class.into(), holder: None, waiters: VecDeque::new() }
    }

    /// `t` tries to take the lock (first attempt or after resuming on its vCPU). `queued`: `t`
    /// is among the waiters (`Thread::queued_on` names this lock: the thread's marker, kept
    /// exact, stands for a search of the queue, O(waiters) per retry on a wide VM's convoy).
    pub fn try_acquire(&mut self, t: ThreadId, queued: bool) -> Acquire {
        debug_assert_eq!(queued, self.waiters.contains(&t), "thread {t}'s queue marker is out of step");
        if self.holder == Some(t) {
            // A ticket lock was handed to t while it spun.
            return Acquire::Got;
        }
        // A ticket lock goes only to the next ticket; test-and-set to whoever tries first.
        let my_turn = match self.kind {
            // qspinlock: the fast path's cmpxchg (0 -> locked) fails while anyone is queued (the
            // tail is set), and a PV guest skips the pending bit (`queued_spin_lock_slowpath`:
            // `if (pv_enabled()) goto queue;`), so the MCS queue is FIFO as a ticket lock is
            // (4.4 has no lock stealing; `pv_queued_spin_steal_lock` came in 4.5).
            SpinlockKind::Ticket | SpinlockKind::PvQueued => self.waiters.front().is_none_or(|w| *w == t),
            SpinlockKind::TestAndSet | SpinlockKind::Debug => true,
        };
        if self.holder.is_none() && my_turn {
            // t is in the queue at most once, if at all; a ticket lock's taker is at its head
            // (my_turn), a test-and-set lock's anywhere.
            if queued {
                if self.waiters.front() == Some(&t) {
                    self.waiters.pop_front();
                } else if let Some(pos) = self.waiters.iter().position(|w| *w == t) {
                    self.waiters.remove(pos);
                }
            }
            self.holder = Some(t);
            Acquire::Got
        } else {
            if !queued {
                self.waiters.push_back(t);
            }
            Acquire::Spin
        }
    }

    /// The holder releases. `is_running(t)` says whether waiter t's vCPU is executing it now.
    /// Returns the waiter that now holds the lock, if any, so the caller can let it proceed.
    pub fn release(&mut self, t: ThreadId, is_running: impl Fn(ThreadId) -> bool) -> Option<ThreadId> {
        debug_assert_eq!(self.holder, Some(t), "only the holder releases");
        self.holder = None;
        let next = match self.kind {
            // Next ticket, running or not; qspinlock: the queue head takes it as soon as it
            // runs, and nobody else can meanwhile (the tail is set).
            SpinlockKind::Ticket | SpinlockKind::PvQueued => self.waiters.pop_front(),
            // The first running spinner wins the cmpxchg race; a preempted one cannot try.
            SpinlockKind::TestAndSet | SpinlockKind::Debug => {
                let pos = self.waiters.iter().position(|w| is_running(*w))?;
                self.waiters.remove(pos)
            }
        };
        self.holder = next;
        next
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticket_lock_is_fifo_even_for_preempted_waiters() {
        let mut l = Spinlock::new(SpinlockKind::Ticket, "x");
        assert_eq!(l.try_acquire(ThreadId(0), false), Acquire::Got);
        assert_eq!(l.try_acquire(ThreadId(1), false), Acquire::Spin);
        assert_eq!(l.try_acquire(ThreadId(2), false), Acquire::Spin);
        assert_eq!(l.try_acquire(ThreadId(1), true), Acquire::Spin, "retrying keeps the ticket");
        // Thread 1 is preempted; the lock still goes to it (and leaves the queue: the caller
        // clears its marker).
        assert_eq!(l.release(ThreadId(0), |t| t == ThreadId(2)), Some(ThreadId(1)));
        assert_eq!(l.try_acquire(ThreadId(2), true), Acquire::Spin);
        assert_eq!(l.try_acquire(ThreadId(1), false), Acquire::Got);
        assert_eq!(l.release(ThreadId(1), |_| true), Some(ThreadId(2)));
    }

    #[test]
    fn tas_lock_goes_to_a_running_waiter() {
        let mut l = Spinlock::new(SpinlockKind::TestAndSet, "x");
        l.try_acquire(ThreadId(0), false);
        l.try_acquire(ThreadId(1), false);
        l.try_acquire(ThreadId(2), false);
        assert_eq!(l.release(ThreadId(0), |t| t == ThreadId(2)), Some(ThreadId(2)));
        // No waiter running: the lock stays free for whoever runs first.
        assert_eq!(l.release(ThreadId(2), |_| false), None);
        assert_eq!(l.try_acquire(ThreadId(1), true), Acquire::Got);
        assert!(l.waiters.is_empty(), "the taker left the queue");
    }

    #[test]
    fn a_retry_known_queued_keeps_one_place() {
        // The caller's marker (`queued`) stands for a search: a retry adds no second place.
        for kind in [SpinlockKind::Ticket, SpinlockKind::TestAndSet] {
            let mut l = Spinlock::new(kind, "x");
            assert_eq!(l.try_acquire(ThreadId(0), false), Acquire::Got);
            assert_eq!(l.try_acquire(ThreadId(1), false), Acquire::Spin);
            assert_eq!(l.try_acquire(ThreadId(2), false), Acquire::Spin);
            for _ in 0..3 {
                assert_eq!(l.try_acquire(ThreadId(2), true), Acquire::Spin);
                assert_eq!(l.try_acquire(ThreadId(1), true), Acquire::Spin);
            }
            assert_eq!(l.waiters, [ThreadId(1), ThreadId(2)], "{kind:?}");
            // Freed with nobody running: a test-and-set lock goes to whoever tries first, and
            // that waiter leaves the queue from where it stood.
            l.release(ThreadId(0), |_| false);
            if kind == SpinlockKind::TestAndSet {
                assert_eq!(l.try_acquire(ThreadId(2), true), Acquire::Got);
                assert_eq!(l.waiters, [ThreadId(1)]);
            }
        }
    }
}
