//! User-level synchronization built on futexes, as glibc builds it: mutexes
//! (nptl lowlevellock), barriers, condition variables, and bounded queues made of a mutex and
//! two condition variables. Uncontended paths stay in user space; only contention enters the
//! kernel. Each operation is a `GuestKernel` method that queues thread `t`'s next steps;
//! `guest/run.rs` dispatches a thread's actions to them.

use super::kernel::{GuestEnv, GuestKernel};
use super::objects::MutexWord;
use super::stats::{ARRIVAL, DEPARTURE};
use super::thread::{Action, FutexKey, SpinCond, Step};
use crate::ids::ThreadId;
use crate::workload::program::{BarrierWait, ObjIndex};

impl GuestKernel {
    /// pthread_mutex_lock: CAS 0->1, else mark contended (2) and futex_wait.
    pub fn mutex_lock(&mut self, env: &mut GuestEnv, t: ThreadId, m: ObjIndex) {
        let word = &mut self.objects.mutexes[m];
        if *word == MutexWord::Free {
            *word = MutexWord::Locked;
            self.objects.mutex_owner[m] = Some(t);
            return;
        }
        *word = MutexWord::Contended;
        self.mutex_wait(env, t, m);
    }

    fn mutex_wait(&mut self, env: &mut GuestEnv, t: ThreadId, m: ObjIndex) {
        env.push_front(t, Step::Do(Action::MutexRetry(m)));
        self.push_futex_wait(env, t, FutexKey::Mutex(m), MutexWord::Contended as u64);
    }

    /// After futex_wait returns: xchg(word, 2); got it if it was free.
    pub fn mutex_retry(&mut self, env: &mut GuestEnv, t: ThreadId, m: ObjIndex) {
        let old = std::mem::replace(&mut self.objects.mutexes[m], MutexWord::Contended);
        if old == MutexWord::Free {
            self.objects.mutex_owner[m] = Some(t);
        } else {
            self.mutex_wait(env, t, m);
        }
    }

    /// pthread_mutex_unlock: set 0; if it was contended, futex_wake one waiter. Threads
    /// spinning on pthread_mutex_trylock see the word free. Unlocking a
    /// mutex `t` does not hold is refused as an error-checking mutex refuses it (EPERM from
    /// `pthread_mutex_unlock`, glibc nptl/pthread_mutex_unlock.c): the run stops with the message
    /// returned here, naming the thread, the op and the mutex (a default mutex would carry on with
    /// undefined behaviour, which no result should rest on).
    pub fn mutex_unlock(&mut self, env: &mut GuestEnv, t: ThreadId, m: ObjIndex) -> Result<(), String> {
        self.check_owner(env, t, m, || format!("unlock of {}", self.object_name(FutexKey::Mutex(m))))?;
        self.objects.mutex_owner[m] = None;
        let old = std::mem::replace(&mut self.objects.mutexes[m], MutexWord::Free);
        if self.objects.mutex_spinners.get(m).is_some_and(|l| !l.is_empty()) {
            self.poke_spinners(env.threads, |o| &mut o.mutex_spinners[m]);
        }
        if old == MutexWord::Contended {
            self.push_futex_wake(env, t, FutexKey::Mutex(m), 1);
        }
        Ok(())
    }

    /// `Err` naming the VM, thread `t`, the op (`op()`) and mutex `m` unless `t` holds `m`.
    fn check_owner(&self, env: &GuestEnv, t: ThreadId, m: ObjIndex, op: impl FnOnce() -> String) -> Result<(), String> {
        let owner = self.objects.mutex_owner[m];
        if owner == Some(t) {
            return Ok(());
        }
        let holder = match owner {
            Some(o) => format!("thread {} holds it", env.threads[o.idx()].index),
            None => "nobody holds it".to_string(),
        };
        Err(format!(
            "VM {:?} thread {}: {}, but the thread does not hold {} ({holder})",
            self.name,
            env.threads[t.idx()].index,
            op(),
            self.object_name(FutexKey::Mutex(m))
        ))
    }

    /// `__pthread_mutex_cond_lock` (glibc 2.15 nptl/pthread_mutex_cond_lock.c: pthread_mutex_lock
    /// built with lll_cond_lock), how pthread_cond_wait takes the mutex back: CAS 0->2, else the
    /// same futex_wait loop as a contended lock. The word is left at 2 even when it was free,
    /// because threads requeued from the condition variable may sleep on the mutex unseen: its
    /// unlock must futex_wake the next one.
    pub fn mutex_cond_lock(&mut self, env: &mut GuestEnv, t: ThreadId, m: ObjIndex) {
        let word = std::mem::replace(&mut self.objects.mutexes[m], MutexWord::Contended);
        if word == MutexWord::Free {
            self.objects.mutex_owner[m] = Some(t);
        } else {
            self.mutex_wait(env, t, m);
        }
    }

    /// pthread_mutex_trylock (lll_trylock: CAS 0->1) after a user-space spin saw the word free;
    /// lost to another thread, spin again (parsec_barrier_wait's `while (trylock == EBUSY);`).
    pub fn mutex_trylock_spin(&mut self, env: &mut GuestEnv, t: ThreadId, m: ObjIndex) {
        let word = &mut self.objects.mutexes[m];
        if *word == MutexWord::Free {
            *word = MutexWord::Locked;
            self.objects.mutex_owner[m] = Some(t);
        } else {
            env.push_front_steps(t, trylock_spin(m));
        }
    }

    /// Arrive at a barrier. The last arriver opens it: spinners see the new generation (each is
    /// poked to re-check at once), sleepers get one futex_wake for all of them.
    pub fn barrier_arrive(&mut self, env: &mut GuestEnv, t: ThreadId, b: ObjIndex, wait: BarrierWait) {
        let bar = &mut self.objects.barriers[b];
        bar.arrived += 1;
        if bar.arrived == bar.parties {
            bar.arrived = 0;
            bar.generation += 1;
            let sleepers = self.objects.futex_waiters.get(&FutexKey::Barrier(b)).is_some_and(|q| !q.is_empty());
            if sleepers {
                self.push_futex_wake(env, t, FutexKey::Barrier(b), usize::MAX);
            }
            self.poke_spinners(env.threads, |o| &mut o.barriers[b].spinners);
            return;
        }
        let generation = bar.generation;
        let cond = SpinCond::BarrierGeneration { barrier: b, generation };
        match wait {
            BarrierWait::Spin => env.push_front_steps(t, [Step::UserSpin { cond, budget: None }]),
            BarrierWait::Block => self.push_futex_wait(env, t, FutexKey::Barrier(b), generation),
            BarrierWait::SpinThenBlock(spin) => env.push_front_steps(
                t,
                [Step::UserSpin { cond, budget: Some(spin) }, Step::Do(Action::BarrierBlockUnlessOpen { barrier: b, generation })],
            ),
        }
    }

    pub fn barrier_block_unless_open(&mut self, env: &mut GuestEnv, t: ThreadId, b: ObjIndex, generation: u64) {
        self.objects.barriers[b].spinners.retain(|s| *s != t);
        if self.objects.barriers[b].generation == generation {
            self.push_futex_wait(env, t, FutexKey::Barrier(b), generation);
        }
    }

    /// pthread_cond_wait (old glibc condvar: a sequence-number futex): drop the mutex, sleep
    /// unless signalled meanwhile, take the mutex back. POSIX requires the caller to hold the
    /// mutex; a wait without it is refused (an error naming thread, condition variable and mutex).
    /// glibc 2.15 (nptl/pthread_cond_wait.c) records the mutex in `cond->__data.__mutex` and
    /// takes it back on return with `__pthread_mutex_cond_lock`.
    pub fn cond_wait(&mut self, env: &mut GuestEnv, t: ThreadId, c: ObjIndex, m: ObjIndex) -> Result<(), String> {
        self.check_owner(env, t, m, || {
            format!("cond_wait on {} with {}", self.object_name(FutexKey::Cond(c)), self.object_name(FutexKey::Mutex(m)))
        })?;
        let seq = self.objects.conds[c];
        let recorded = &mut self.objects.cond_mutex;
        if recorded.len() <= c {
            recorded.resize(c + 1, None);
        }
        recorded[c] = Some(m);
        // Queued back to front: take the mutex back, after the futex_wait, after the unlock.
        env.push_front(t, Step::Do(Action::MutexCondLock(m)));
        self.push_futex_wait(env, t, FutexKey::Cond(c), seq);
        env.push_front(t, Step::Do(Action::MutexUnlock(m)));
        Ok(())
    }

    /// pthread_cond_signal wakes one sleeper (FUTEX_WAKE_OP: one). pthread_cond_broadcast
    /// (glibc 2.15 nptl/pthread_cond_broadcast.c) issues FUTEX_CMP_REQUEUE against the new
    /// sequence number: one sleeper wakes, the others move onto the mutex's futex and wake one
    /// by one as it is released (`guest/futex.rs` `futex_requeue`). Without a recorded mutex it
    /// wakes all.
    pub fn cond_signal(&mut self, env: &mut GuestEnv, t: ThreadId, c: ObjIndex, all: bool) {
        self.objects.conds[c] += 1;
        let waiters = self.objects.futex_waiters.get(&FutexKey::Cond(c)).is_some_and(|q| !q.is_empty());
        if waiters {
            match (all, self.objects.cond_mutex.get(c).copied().flatten()) {
                (true, Some(m)) => {
                    let seq = self.objects.conds[c];
                    self.push_futex_requeue(env, t, FutexKey::Cond(c), FutexKey::Mutex(m), seq);
                }
                _ => {
                    self.push_futex_wake(env, t, FutexKey::Cond(c), if all { usize::MAX } else { 1 });
                }
            }
        }
    }

    /// parsec_barrier_wait (PARSEC 2.1 parsec_barrier.cpp) entered: `pthread_mutex_lock`.
    pub fn parsec_barrier(&mut self, env: &mut GuestEnv, t: ThreadId, b: ObjIndex, wait: BarrierWait) {
        let m = self.objects.parsec[b].mutex;
        env.push_front_steps(t, [Step::Do(Action::MutexLock(m)), Step::Do(Action::ParsecArrive { barrier: b, wait })]);
    }

    /// Queue in front of thread `t`'s steps the wait, with the barrier's mutex held, until
    /// `is_arrival_phase == arrival`, after which it holds the mutex again: with
    /// ENABLE_SPIN_BARRIER, unlock, poll the flag for at most SPIN_COUNTER_MAX iterations, spin on
    /// trylock, then pthread_cond_wait while it still differs; without, pthread_cond_wait only.
    /// (Queued back to front, one step at a time: no list per call.)
    fn push_parsec_wait(&self, env: &mut GuestEnv, t: ThreadId, b: ObjIndex, arrival: bool, wait: BarrierWait) {
        let m = self.objects.parsec[b].mutex;
        env.push_front(t, Step::Do(Action::ParsecWaitPhase { barrier: b, arrival }));
        let budget = match wait {
            BarrierWait::Block => return,
            BarrierWait::Spin => None,
            BarrierWait::SpinThenBlock(spin) => Some(spin),
        };
        env.push_front_steps(t, trylock_spin(m));
        env.push_front(t, Step::UserSpin { cond: SpinCond::ParsecPhase { barrier: b, arrival }, budget });
        env.push_front(t, Step::Do(Action::MutexUnlock(m)));
    }

    /// With the mutex held: "First we must wait to be sure that all threads from a previous
    /// barrier use had the chance to leave", then register.
    pub fn parsec_arrive(&mut self, env: &mut GuestEnv, t: ThreadId, b: ObjIndex, wait: BarrierWait) {
        // Queued back to front: the registration, then the wait before it.
        env.push_front(t, Step::Do(Action::ParsecRegister { barrier: b, wait }));
        if !self.objects.parsec[b].arrival {
            self.push_parsec_wait(env, t, b, true, wait);
        }
    }

    /// With the mutex held in an arrival phase: `barrier->n++`; the last arriver clears
    /// `is_arrival_phase` and broadcasts, the others wait for that; then depart.
    pub fn parsec_register(&mut self, env: &mut GuestEnv, t: ThreadId, b: ObjIndex, wait: BarrierWait) {
        let pb = &mut self.objects.parsec[b];
        pb.n += 1;
        // Queued back to front: the departure, then what comes before it.
        env.push_front(t, Step::Do(Action::ParsecDepart(b)));
        if pb.n >= pb.max {
            pb.arrival = false;
            let cond = pb.cond;
            self.poke_spinners(env.threads, |o| &mut o.parsec[b].spinners);
            env.push_front(t, Step::Do(Action::CondSignal { cond, all: true }));
        } else {
            self.push_parsec_wait(env, t, b, false, wait);
        }
    }

    /// With the mutex held: `while (flag != arrival) pthread_cond_wait(&cond, &mutex);`. Waiting
    /// for the arrival phase is waiting for the previous use's departure (`barrier_waits`).
    pub fn parsec_wait_phase(&mut self, env: &mut GuestEnv, t: ThreadId, b: ObjIndex, arrival: bool) {
        let pb = &self.objects.parsec[b];
        if pb.arrival != arrival {
            let (cond, mutex) = (pb.cond, pb.mutex);
            self.stats.barrier_waits[if arrival { DEPARTURE } else { ARRIVAL }] += 1;
            env.push_front_steps(
                t,
                [Step::Do(Action::CondWait { cond, mutex }), Step::Do(Action::ParsecWaitPhase { barrier: b, arrival })],
            );
        }
    }

    /// With the mutex held: `barrier->n--`; the last to leave sets `is_arrival_phase` and
    /// broadcasts; unlock.
    pub fn parsec_depart(&mut self, env: &mut GuestEnv, t: ThreadId, b: ObjIndex) {
        let pb = &mut self.objects.parsec[b];
        pb.n -= 1;
        // Queued back to front: the unlock, then the broadcast before it.
        env.push_front(t, Step::Do(Action::MutexUnlock(pb.mutex)));
        if pb.n == 0 {
            pb.arrival = true;
            env.push_front(t, Step::Do(Action::CondSignal { cond: pb.cond, all: true }));
            self.poke_spinners(env.threads, |o| &mut o.parsec[b].spinners);
        }
    }

    /// With the queue's mutex held: put an item, or wait on `not_full` and retry.
    pub fn queue_put(&mut self, env: &mut GuestEnv, t: ThreadId, q: ObjIndex) {
        let queue = &mut self.objects.queues[q];
        let (m, not_empty, not_full) = (queue.mutex, queue.not_empty, queue.not_full);
        let steps = if queue.items == queue.capacity {
            [Step::Do(Action::CondWait { cond: not_full, mutex: m }), Step::Do(Action::QueuePut(q))]
        } else {
            queue.items += 1;
            [Step::Do(Action::CondSignal { cond: not_empty, all: false }), Step::Do(Action::MutexUnlock(m))]
        };
        env.push_front_steps(t, steps);
    }

    /// With the queue's mutex held: take an item, or wait on `not_empty` and retry.
    pub fn queue_get(&mut self, env: &mut GuestEnv, t: ThreadId, q: ObjIndex) {
        let queue = &mut self.objects.queues[q];
        let (m, not_empty, not_full) = (queue.mutex, queue.not_empty, queue.not_full);
        let steps = if queue.items == 0 {
            [Step::Do(Action::CondWait { cond: not_empty, mutex: m }), Step::Do(Action::QueueGet(q))]
        } else {
            queue.items -= 1;
            [Step::Do(Action::CondSignal { cond: not_full, all: false }), Step::Do(Action::MutexUnlock(m))]
        };
        env.push_front_steps(t, steps);
    }

    pub fn queue_mutex(&self, q: ObjIndex) -> ObjIndex {
        self.objects.queues[q].mutex
    }
}

/// `while (pthread_mutex_trylock(m) == EBUSY);`: a user-space spin until the word is free, then
/// the trylock.
fn trylock_spin(m: ObjIndex) -> [Step; 2] {
    [Step::UserSpin { cond: SpinCond::MutexFree(m), budget: None }, Step::Do(Action::MutexTrylock(m))]
}
