//! User-level synchronization built on futexes, as glibc builds it: mutexes
//! (nptl lowlevellock), barriers, condition variables, and bounded queues made of a mutex and
//! two condition variables. Uncontended paths stay in user space; only contention enters the
//! kernel.

use super::objects::MutexWord;
use super::thread::{Action, FutexKey, SpinCond, Step};
use crate::ids::{ThreadId, VcpuId};
use crate::sim::state::Sim;
use crate::workload::program::{BarrierWait, ObjIndex};

impl Sim {
    fn push_front_steps(&mut self, t: ThreadId, steps: Vec<Step>) {
        let q = &mut self.threads[t.idx()].steps;
        for s in steps.into_iter().rev() {
            q.push_front(s);
        }
    }

    fn vm_of_thread(&self, t: ThreadId) -> usize {
        self.threads[t.idx()].vm.idx()
    }

    /// pthread_mutex_lock: CAS 0->1, else mark contended (2) and futex_wait.
    pub fn mutex_lock(&mut self, t: ThreadId, m: ObjIndex) {
        let vm = self.vm_of_thread(t);
        let word = &mut self.guests[vm].objects.mutexes[m];
        if *word == MutexWord::Free {
            *word = MutexWord::Locked;
            return;
        }
        *word = MutexWord::Contended;
        self.mutex_wait(t, m);
    }

    fn mutex_wait(&mut self, t: ThreadId, m: ObjIndex) {
        let mut steps = self.futex_wait_steps(t, FutexKey::Mutex(m), MutexWord::Contended as u64);
        steps.push(Step::Do(Action::MutexRetry(m)));
        self.push_front_steps(t, steps);
    }

    /// After futex_wait returns: xchg(word, 2); got it if it was free.
    pub fn mutex_retry(&mut self, t: ThreadId, m: ObjIndex) {
        let vm = self.vm_of_thread(t);
        let word = &mut self.guests[vm].objects.mutexes[m];
        let old = std::mem::replace(word, MutexWord::Contended);
        if old != MutexWord::Free {
            self.mutex_wait(t, m);
        }
    }

    /// pthread_mutex_unlock: set 0; if it was contended, futex_wake one waiter.
    pub fn mutex_unlock(&mut self, t: ThreadId, m: ObjIndex) {
        let vm = self.vm_of_thread(t);
        let old = std::mem::replace(&mut self.guests[vm].objects.mutexes[m], MutexWord::Free);
        if old == MutexWord::Contended {
            let steps = self.futex_wake_steps(t, FutexKey::Mutex(m), 1);
            self.push_front_steps(t, steps);
        }
    }

    /// Arrive at a barrier. The last arriver opens it: spinners see the new generation, sleepers
    /// get one futex_wake for all of them.
    pub fn barrier_arrive(&mut self, t: ThreadId, b: ObjIndex, wait: BarrierWait) {
        let vm = self.vm_of_thread(t);
        let bar = &mut self.guests[vm].objects.barriers[b];
        bar.arrived += 1;
        if bar.arrived == bar.parties {
            bar.arrived = 0;
            bar.generation += 1;
            let spinners = std::mem::take(&mut bar.spinners);
            for s in spinners {
                self.poke_thread(s);
            }
            let sleepers = self.guests[vm].objects.futex_waiters.get(&FutexKey::Barrier(b)).is_some_and(|q| !q.is_empty());
            if sleepers {
                let steps = self.futex_wake_steps(t, FutexKey::Barrier(b), usize::MAX);
                self.push_front_steps(t, steps);
            }
            return;
        }
        let generation = bar.generation;
        let cond = SpinCond::BarrierGeneration { barrier: b, generation };
        let steps = match wait {
            BarrierWait::Spin => vec![Step::UserSpin { cond, budget: None }],
            BarrierWait::Block => self.futex_wait_steps(t, FutexKey::Barrier(b), generation),
            BarrierWait::SpinThenBlock(spin) => vec![
                Step::UserSpin { cond, budget: Some(spin) },
                Step::Do(Action::BarrierBlockUnlessOpen { barrier: b, generation }),
            ],
        };
        self.push_front_steps(t, steps);
    }

    pub fn barrier_block_unless_open(&mut self, t: ThreadId, b: ObjIndex, generation: u64) {
        let vm = self.vm_of_thread(t);
        self.guests[vm].objects.barriers[b].spinners.retain(|s| *s != t);
        if self.guests[vm].objects.barriers[b].generation == generation {
            let steps = self.futex_wait_steps(t, FutexKey::Barrier(b), generation);
            self.push_front_steps(t, steps);
        }
    }

    /// pthread_cond_wait (old glibc condvar: a sequence-number futex): drop the mutex, sleep
    /// unless signalled meanwhile, take the mutex back.
    pub fn cond_wait(&mut self, t: ThreadId, c: ObjIndex, m: ObjIndex) {
        let vm = self.vm_of_thread(t);
        let seq = self.guests[vm].objects.conds[c];
        let mut steps = vec![Step::Do(Action::MutexUnlock(m))];
        steps.extend(self.futex_wait_steps(t, FutexKey::Cond(c), seq));
        steps.push(Step::Do(Action::MutexLock(m)));
        self.push_front_steps(t, steps);
    }

    pub fn cond_signal(&mut self, t: ThreadId, c: ObjIndex, all: bool) {
        let vm = self.vm_of_thread(t);
        self.guests[vm].objects.conds[c] += 1;
        let waiters = self.guests[vm].objects.futex_waiters.get(&FutexKey::Cond(c)).is_some_and(|q| !q.is_empty());
        if waiters {
            let steps = self.futex_wake_steps(t, FutexKey::Cond(c), if all { usize::MAX } else { 1 });
            self.push_front_steps(t, steps);
        }
    }

    /// With the queue's mutex held: put an item, or wait on `not_full` and retry.
    pub fn queue_put(&mut self, t: ThreadId, q: ObjIndex) {
        let vm = self.vm_of_thread(t);
        let queue = &mut self.guests[vm].objects.queues[q];
        let (m, not_empty, not_full) = (queue.mutex, queue.not_empty, queue.not_full);
        let steps = if queue.items == queue.capacity {
            vec![Step::Do(Action::CondWait { cond: not_full, mutex: m }), Step::Do(Action::QueuePut(q))]
        } else {
            queue.items += 1;
            vec![Step::Do(Action::CondSignal { cond: not_empty, all: false }), Step::Do(Action::MutexUnlock(m))]
        };
        self.push_front_steps(t, steps);
    }

    /// With the queue's mutex held: take an item, or wait on `not_empty` and retry.
    pub fn queue_get(&mut self, t: ThreadId, q: ObjIndex) {
        let vm = self.vm_of_thread(t);
        let queue = &mut self.guests[vm].objects.queues[q];
        let (m, not_empty, not_full) = (queue.mutex, queue.not_empty, queue.not_full);
        let steps = if queue.items == 0 {
            vec![Step::Do(Action::CondWait { cond: not_empty, mutex: m }), Step::Do(Action::QueueGet(q))]
        } else {
            queue.items -= 1;
            vec![Step::Do(Action::CondSignal { cond: not_full, all: false }), Step::Do(Action::MutexUnlock(m))]
        };
        self.push_front_steps(t, steps);
    }

    pub fn queue_mutex(&self, t: ThreadId, q: ObjIndex) -> ObjIndex {
        self.guests[self.vm_of_thread(t)].objects.queues[q].mutex
    }

    /// Run an instantaneous action of thread `t` on vCPU `v`.
    pub fn do_action(&mut self, v: VcpuId, t: ThreadId, action: Action) {
        match action {
            Action::FetchOp => self.fetch_op(v, t),
            Action::MutexLock(m) => self.mutex_lock(t, m),
            Action::MutexRetry(m) => self.mutex_retry(t, m),
            Action::MutexUnlock(m) => self.mutex_unlock(t, m),
            Action::BarrierArrive { barrier, wait } => self.barrier_arrive(t, barrier, wait),
            Action::BarrierBlockUnlessOpen { barrier, generation } => self.barrier_block_unless_open(t, barrier, generation),
            Action::CondWait { cond, mutex } => self.cond_wait(t, cond, mutex),
            Action::CondSignal { cond, all } => self.cond_signal(t, cond, all),
            Action::QueuePut(q) => self.queue_put(t, q),
            Action::QueueGet(q) => self.queue_get(t, q),
            Action::FutexQueue { key, expect } => self.futex_queue(t, key, expect),
            Action::FutexSleep => self.futex_sleep(v, t),
            Action::FutexWake { key, n } => self.futex_wake(v, t, key, n),
            Action::TlbShootdown { pages } => self.tlb_shootdown(v, t, pages),
            Action::MmSem(op) => self.mm_sem_action(v, t, op),
            Action::Progress => self.count_progress(t),
        }
    }
}
