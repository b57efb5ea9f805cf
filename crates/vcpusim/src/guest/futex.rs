//! futex_wait / futex_wake as kernel step sequences (kernel/futex.c).
//!
//! Both take the futex's hash-bucket spinlock. futex_wake marks waiters runnable under the lock;
//! the reschedule IPI to a remote waiter goes out either inside the critical section (Linux
//! before 4.2, the seed's 3.2 guests: seed 000 section 3.1.1, Figure 4) or after the unlock
//! (wake_q, Linux 4.2+), per GuestConfig::futex_wake_ipi.

use super::config::FutexWakeIpi;
use super::kernel::{GuestEnv, GuestKernel};
use super::kernel_fn::KernelFn;
use super::thread::{Action, FutexKey, Step};
use crate::vmexit::IpiKind;
use crate::ids::{ThreadId, VcpuId};
use crate::time::Nanos;

/// Lock class of the futex hash-bucket spinlocks (seed 000 Figure 3's "futex-queue" lock).
pub const FUTEX_LOCK_CLASS: &str = "futex-queue";

/// Kernel time to dequeue and mark one waiter runnable (wake_futex + try_to_wake_up), assumed.
const WAKE_ONE_NS: Nanos = 200;
/// Kernel time under the bucket lock in futex_wait: read the futex word and queue the waiter
/// (get_futex_value_locked + queue_me's plist_add), assumed; a few cache misses.
const QUEUE_NS: Nanos = 100;

impl GuestKernel {
    /// A futex system call: enter the kernel, run `action` under the bucket lock (after
    /// `locked_ns` of work there).
    fn futex_call(&mut self, env: &mut GuestEnv, key: FutexKey, func: KernelFn, locked_ns: Nanos, action: Action) -> Vec<Step> {
        let lock = self.futex_bucket_lock(key, env.locks, FUTEX_LOCK_CLASS);
        let mut steps = vec![Step::Run { ns: env.costs.syscall, func }, Step::Lock { lock, func }];
        if locked_ns > 0 {
            steps.push(Step::Run { ns: locked_ns, func });
        }
        steps.extend([Step::Do(action), Step::Unlock { lock }]);
        steps
    }

    /// Steps of futex_wait(key, expect): sleep unless the word changed.
    pub fn futex_wait_steps(&mut self, env: &mut GuestEnv, key: FutexKey, expect: u64) -> Vec<Step> {
        let mut steps = self.futex_call(env, key, KernelFn::FutexWait, QUEUE_NS, Action::FutexQueue { key, expect });
        steps.push(Step::Do(Action::FutexSleep));
        steps
    }

    /// Steps of futex_wake(key, n).
    pub fn futex_wake_steps(&mut self, env: &mut GuestEnv, key: FutexKey, n: usize) -> Vec<Step> {
        self.futex_call(env, key, KernelFn::FutexWake, 0, Action::FutexWake { key, n })
    }

    /// Under the bucket lock: queue `t` if the futex word still holds `expect`.
    pub fn futex_queue(&mut self, env: &mut GuestEnv, t: ThreadId, key: FutexKey, expect: u64) {
        if self.objects.futex_value(key) == expect {
            self.objects.futex_waiters.entry(key).or_default().push_back(t);
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

    /// Under the bucket lock: dequeue up to `n` waiters and make them runnable; the reschedule
    /// IPIs to remote vCPUs become a SendIpis step placed before or after the unlock.
    pub fn futex_wake(&mut self, env: &mut GuestEnv, v: VcpuId, t: ThreadId, key: FutexKey, n: usize) {
        let mut woken = Vec::new();
        if let Some(q) = self.objects.futex_waiters.get_mut(&key) {
            while woken.len() < n {
                match q.pop_front() {
                    Some(w) => woken.push(w),
                    None => break,
                }
            }
        }
        let mut targets: Vec<VcpuId> = Vec::new();
        for w in &woken {
            if let Some(target) = self.wake_thread(env.threads, v, *w) {
                if !targets.contains(&target) {
                    targets.push(target);
                }
            }
        }
        let th = &mut env.threads[t.idx()];
        let ipis = (!targets.is_empty())
            .then(|| Step::SendIpis { kind: IpiKind::Resched, targets, shootdown: 0, pages: 0, func: KernelFn::FutexWake });
        // The front step now is the bucket Unlock.
        match (ipis, self.config.futex_wake_ipi) {
            (Some(s), FutexWakeIpi::UnderLock) => th.steps.push_front(s),
            (Some(s), FutexWakeIpi::AfterUnlock) => th.steps.insert(1, s),
            (None, _) => {}
        }
        if !woken.is_empty() {
            th.steps.push_front(Step::Run { ns: WAKE_ONE_NS * woken.len() as u64, func: KernelFn::FutexWake });
        }
    }
}
