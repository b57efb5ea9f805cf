//! futex_wait / futex_wake as kernel step sequences (kernel/futex.c).
//!
//! Both take the futex's hash-bucket spinlock. futex_wake marks waiters runnable under the lock;
//! the reschedule IPI to a remote waiter goes out either inside the critical section (Linux
//! before 4.2, the seed's 3.2 guests: seed 000 section 3.1.1, Figure 4) or after the unlock
//! (wake_q, Linux 4.2+), per GuestConfig::futex_wake_ipi. FUTEX_CMP_REQUEUE (futex_requeue)
//! takes both words' bucket locks, wakes one waiter and moves the rest to the second word's
//! queue: glibc's pthread_cond_broadcast uses it to move a condition variable's sleepers onto
//! the mutex, so that they wake one at a time as the mutex is released.

use super::config::FutexWakeIpi;
use super::handoff::HandOffKind;
use super::kernel::{GuestEnv, GuestKernel};
use super::kernel_fn::KernelFn;
use super::thread::{Action, FutexKey, Step, ThreadState};
use crate::ids::{ThreadId, VcpuId};
use crate::time::Nanos;
use crate::vmexit::IpiKind;

/// Lock class of the futex hash-bucket spinlocks (seed 000 Figure 3's "futex-queue" lock).
pub const FUTEX_LOCK_CLASS: &str = "futex-queue";

/// Kernel time to dequeue and mark one waiter runnable (wake_futex + try_to_wake_up), assumed.
const WAKE_ONE_NS: Nanos = 200;
/// Kernel time under the bucket lock in futex_wait: read the futex word and queue the waiter
/// (get_futex_value_locked + queue_me's plist_add), assumed; a few cache misses.
const QUEUE_NS: Nanos = 100;

impl GuestKernel {
    /// Queue a futex system call in front of thread `t`'s steps: enter the kernel, run `action`
    /// under the bucket lock (after `locked_ns` of work there). The steps are queued one at a
    /// time, the last first: futex calls are per-operation work of the PARSEC-style mutex and
    /// condition-variable workloads, where a `Vec` per call and its growth take about a tenth of
    /// the instructions, and iterator chains over step arrays a few per cent more.
    fn push_futex_call(&mut self, env: &mut GuestEnv, t: ThreadId, key: FutexKey, func: KernelFn, locked_ns: Nanos, action: Action) {
        let lock = self.futex_bucket_lock(key, env.locks, FUTEX_LOCK_CLASS);
        let syscall = env.costs.syscall;
        let q = &mut env.threads[t.idx()].steps;
        q.push_front(Step::Unlock { lock });
        q.push_front(Step::Do(action));
        if locked_ns > 0 {
            q.push_front(Step::Run { ns: locked_ns, func });
        }
        q.push_front(Step::Lock { lock, func });
        q.push_front(Step::Run { ns: syscall, func });
    }

    /// Queue futex_wait(key, expect) in front of thread `t`'s steps: sleep unless the word changed.
    pub fn push_futex_wait(&mut self, env: &mut GuestEnv, t: ThreadId, key: FutexKey, expect: u64) {
        env.push_front(t, Step::Do(Action::FutexSleep));
        self.push_futex_call(env, t, key, KernelFn::FutexWait, QUEUE_NS, Action::FutexQueue { key, expect });
    }

    /// Queue futex_wake(key, n) in front of thread `t`'s steps.
    pub fn push_futex_wake(&mut self, env: &mut GuestEnv, t: ThreadId, key: FutexKey, n: usize) {
        self.push_futex_call(env, t, key, KernelFn::FutexWake, 0, Action::FutexWake { key, n });
    }

    /// Under the bucket lock: queue `t` if the futex word still holds `expect`.
    pub fn futex_queue(&mut self, env: &mut GuestEnv, t: ThreadId, key: FutexKey, expect: u64) {
        if self.objects.futex_value(key) == expect {
            self.objects.futex_waiters.entry_or_default(key).push_back(t);
            env.threads[t.idx()].futex_queued = Some(key);
        } else {
            env.threads[t.idx()].futex_queued = None;
        }
    }

    /// After the unlock: the futex `t` must sleep on, if it is still queued (a waker may have
    /// dequeued it meanwhile).
    pub fn futex_sleep_key(&mut self, env: &mut GuestEnv, t: ThreadId) -> Option<FutexKey> {
        let key = env.threads[t.idx()].futex_queued.take()?;
        self.objects.futex_waiters.get(&key).is_some_and(|q| q.contains(&t)).then_some(key)
    }

    /// Queue in front of thread `t`'s steps futex(FUTEX_CMP_REQUEUE, from, 1, INT_MAX, to,
    /// expect), as glibc's pthread_cond_broadcast issues it: the syscall, then both hash-bucket
    /// locks in bucket order (double_lock_hb, Linux 3.2: the lower bucket first, one lock when
    /// both words share a bucket), the requeue under them, and the unlocks (double_unlock_hb).
    pub fn push_futex_requeue(&mut self, env: &mut GuestEnv, t: ThreadId, from: FutexKey, to: FutexKey, expect: u64) {
        let func = KernelFn::FutexWake;
        let l1 = self.futex_bucket_lock(from, env.locks, FUTEX_LOCK_CLASS);
        let l2 = self.futex_bucket_lock(to, env.locks, FUTEX_LOCK_CLASS);
        let buckets = self.config.futex_buckets;
        let (b1, b2) = (self.objects.futex_bucket(from, buckets), self.objects.futex_bucket(to, buckets));
        let unlocks = if l1 == l2 { 1 } else { 2 };
        let (first, second) = if l1 == l2 {
            (l1, None)
        } else if b1 <= b2 {
            (l1, Some(l2))
        } else {
            (l2, Some(l1))
        };
        let syscall = env.costs.syscall;
        let q = &mut env.threads[t.idx()].steps;
        if l1 != l2 {
            q.push_front(Step::Unlock { lock: l2 });
        }
        q.push_front(Step::Unlock { lock: l1 });
        q.push_front(Step::Do(Action::FutexRequeue { from, to, expect, unlocks }));
        if let Some(lock) = second {
            q.push_front(Step::Lock { lock, func });
        }
        q.push_front(Step::Lock { lock: first, func });
        q.push_front(Step::Run { ns: syscall, func });
    }

    /// Under both bucket locks (futex_requeue, Linux 3.2): when `from` no longer holds `expect`
    /// the call fails with EAGAIN and glibc falls back to futex_wake(from, INT_MAX) after it
    /// (pthread_cond_broadcast's `wake_all`). Otherwise the first waiter of `from` is woken
    /// (wake_futex) and the others move, in order, to the back of `to`'s queue
    /// (requeue_futex): they stay asleep until a futex_wake on `to` (the mutex's unlock).
    #[allow(clippy::too_many_arguments)]
    pub fn futex_requeue(&mut self, env: &mut GuestEnv, v: VcpuId, t: ThreadId, from: FutexKey, to: FutexKey, expect: u64, unlocks: usize) {
        if self.objects.futex_value(from) != expect {
            // The wake goes right after the bucket Unlocks in front (one or two).
            debug_assert!((1..=2).contains(&unlocks));
            let steps = &mut env.threads[t.idx()].steps;
            let front = [steps.pop_front(), if unlocks == 2 { steps.pop_front() } else { None }];
            self.push_futex_wake(env, t, from, usize::MAX);
            env.threads[t.idx()].steps.push_front_all(front.into_iter().flatten());
            return;
        }
        let mut woken = std::mem::take(&mut self.scratch.woken);
        let mut moved = std::mem::take(&mut self.scratch.moved);
        if let Some(q) = self.objects.futex_waiters.get_mut(&from) {
            woken.extend(q.pop_front());
            moved.extend(q.drain(..));
        }
        for w in &moved {
            let th = &mut env.threads[w.idx()];
            if th.futex_queued == Some(from) {
                // Queued but not yet asleep: it will sleep on its new futex.
                th.futex_queued = Some(to);
            }
            if th.state == ThreadState::Blocked(from) {
                th.state = ThreadState::Blocked(to);
            }
        }
        if !moved.is_empty() {
            self.objects.futex_waiters.entry_or_default(to).extend(moved.drain(..));
        }
        self.scratch.moved = moved;
        self.wake_dequeued(env, v, t, from, &woken, unlocks);
        woken.clear();
        self.scratch.woken = woken;
    }

    /// Under the bucket lock: dequeue up to `n` waiters and make them runnable; the reschedule
    /// IPIs to remote vCPUs become a SendIpis step placed before or after the unlock.
    pub fn futex_wake(&mut self, env: &mut GuestEnv, v: VcpuId, t: ThreadId, key: FutexKey, n: usize) {
        // The dequeued waiters go in a list kept for reuse (no allocation per call).
        let mut woken = std::mem::take(&mut self.scratch.woken);
        if let Some(q) = self.objects.futex_waiters.get_mut(&key) {
            while woken.len() < n {
                match q.pop_front() {
                    Some(w) => woken.push(w),
                    None => break,
                }
            }
        }
        self.wake_dequeued(env, v, t, key, &woken, 1);
        woken.clear();
        self.scratch.woken = woken;
    }

    /// Make the dequeued `woken` (taken from futex `key`) runnable (waker `t` on vCPU `v`, which
    /// holds the bucket lock(s) and has `unlocks` Unlock steps in front): their reschedule IPIs go
    /// out before the first unlock or after the last, per `futex_wake_ipi`, and the waker spends
    /// WAKE_ONE_NS on each. A mutex's waiters woken by its unlock are hand-offs for the trace
    /// (guest/handoff.rs).
    #[allow(clippy::too_many_arguments)]
    fn wake_dequeued(&mut self, env: &mut GuestEnv, v: VcpuId, t: ThreadId, key: FutexKey, woken: &[ThreadId], unlocks: usize) {
        if let (Some(_), FutexKey::Mutex(_)) = (&self.handoffs, key) {
            let lock = self.object_name(key);
            if let Some(log) = self.handoffs.as_mut() {
                for w in woken {
                    log.release(env.now, HandOffKind::Mutex, lock.clone(), t, v, *w);
                }
            }
        }
        let mut targets = self.scratch.ipi_targets();
        for w in woken {
            if let Some(target) = self.wake_thread(env.threads, env.pv, env.now, v, *w) {
                if !targets.contains(&target) {
                    targets.push(target);
                }
            }
        }
        let th = &mut env.threads[t.idx()];
        let ipis = if targets.is_empty() {
            self.scratch.recycle_ipi_targets(targets);
            None
        } else {
            // `try_to_wake_up` -> `ttwu_do_activate` -> `check_preempt_curr` -> `resched_curr` ->
            // `smp_send_reschedule` (kernel/sched/core.c).
            Some(Step::SendIpis { kind: IpiKind::Resched, targets, shootdown: 0, pages: 0, func: KernelFn::ReschedCurr })
        };
        // Each woken thread's `try_to_wake_up` (enqueue in `ttwu_do_activate`), then its IPI.
        let wake = (!woken.is_empty()).then(|| Step::Run { ns: WAKE_ONE_NS * woken.len() as u64, func: KernelFn::TtwuDoActivate });
        // The front steps now are the bucket Unlocks: 3.2 wakes under the bucket lock
        // (`wake_futex` -> `wake_up_state`), 4.2+ after it (`mark_wake_futex` queues on a wake_q
        // under the lock, `wake_up_q` runs after `spin_unlock(&hb->lock)`).
        let at = match self.config.futex_wake_ipi {
            FutexWakeIpi::UnderLock => 0,
            FutexWakeIpi::AfterUnlock => unlocks,
        };
        for s in [ipis, wake].into_iter().flatten() {
            th.steps.insert(at, s);
        }
    }
}
