//! Guest threads: the compiled program each runs, its pending kernel steps and its state.

use super::kernel_fn::KernelFn;
use crate::engine::rng::Stream;
use crate::ids::{LockId, ThreadId, VcpuId, VmId};
use crate::time::Nanos;
use crate::vmexit::IpiKind;
use crate::workload::program::{BarrierWait, Dist, ObjIndex, Op};
use std::sync::Arc;

/// A thread's op tree flattened into straight-line code with loop jumps, so that the
/// interpreter needs only a program counter and a loop-counter stack.
#[derive(Clone, Debug, PartialEq)]
pub enum Code {
    Op(Op),
    /// Start of a loop whose body ends at `end` (index of the matching LoopEnd).
    LoopStart {
        count: Option<u64>,
        end: usize,
    },
    LoopEnd {
        start: usize,
    },
    /// Take a ticket of `dispenser` (its mutex, the counter, the unlock); when none is left,
    /// go on at `end + 1` past the body.
    TicketStart {
        dispenser: ObjIndex,
        end: usize,
    },
    /// Back to the `TicketStart` at `start` for the next ticket.
    TicketEnd {
        start: usize,
    },
}

pub fn compile(ops: &[Op]) -> Vec<Code> {
    /// A loop's code: its opening (given the index of its closing), its body, its closing
    /// (given the index of its opening).
    fn block(body: &[Op], out: &mut Vec<Code>, open: impl Fn(usize) -> Code, close: impl Fn(usize) -> Code) {
        let start = out.len();
        out.push(open(0));
        emit(body, out);
        let end = out.len();
        out.push(close(start));
        out[start] = open(end);
    }
    fn emit(ops: &[Op], out: &mut Vec<Code>) {
        for op in ops {
            match op {
                &Op::Loop { count, ref body } => block(body, out, |end| Code::LoopStart { count, end }, |start| Code::LoopEnd { start }),
                &Op::Tickets { dispenser, ref body } => {
                    block(body, out, |end| Code::TicketStart { dispenser, end }, |start| Code::TicketEnd { start })
                }
                other => out.push(Code::Op(other.clone())),
            }
        }
    }
    let mut out = Vec::new();
    emit(ops, &mut out);
    out
}

/// Compiled programs shared between threads whose ops are equal (the 1,024-pCPU scaling mix
/// has 1,536 threads of three programs; with a copy each, the first read of an op misses the
/// first-level cache about once an event, and the second-level one about every other event:
/// docs/speed.md). Compares with the programs of the last [`CodeCache::KEPT`] distinct op lists: threads
/// of one VM and the copies of a VM are built one after another, and a scenario's VMs are
/// few distinct workloads, so a short list catches them without hashing `Op` (its distributions
/// hold floats). Equal ops compile to equal code, so sharing changes nothing a run computes.
#[derive(Default)]
pub struct CodeCache {
    kept: Vec<(Vec<Op>, Arc<[Code]>)>,
}

impl CodeCache {
    /// Distinct op lists remembered; older ones are compiled again if they recur.
    pub const KEPT: usize = 8;

    /// The compiled `ops`, shared with an earlier equal list when one is kept.
    pub fn get(&mut self, ops: &[Op]) -> Arc<[Code]> {
        if let Some(at) = self.kept.iter().position(|(k, _)| k.as_slice() == ops) {
            let hit = self.kept.remove(at);
            let code = hit.1.clone();
            self.kept.push(hit);
            return code;
        }
        let code: Arc<[Code]> = compile(ops).into();
        if self.kept.len() == Self::KEPT {
            self.kept.remove(0);
        }
        self.kept.push((ops.to_vec(), code.clone()));
        code
    }
}

/// Which synchronization object a futex word belongs to. The futex value the kernel compares
/// in futex_wait is that object's state word.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FutexKey {
    Mutex(ObjIndex),
    Barrier(ObjIndex),
    Cond(ObjIndex),
    /// Not a futex: the wait list of the mm's mmap_sem (guest/mm_sem.rs). It shares the
    /// sleep / wake machinery, so a thread sleeping on it is `Blocked(MmSem)`.
    MmSem,
    /// Not a futex: the wait queue of the network socket (`sk_wait_data`, guest/netrx.rs),
    /// woken by the receive softirq.
    Socket,
}

/// What a user-level spin waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpinCond {
    /// The barrier's generation moved past this one.
    BarrierGeneration { barrier: ObjIndex, generation: u64 },
    /// A Tascell worker's back-off after a `none` answer (guest/worksteal.rs) may end early:
    /// the result it waits for came, or the computation is over.
    WsBackoff { worker: u32 },
    /// PARSEC barrier `barrier`'s `is_arrival_phase` equals `arrival` (parsec_barrier_wait's
    /// bounded polling loops).
    ParsecPhase { barrier: ObjIndex, arrival: bool },
    /// The mutex is free (`while (pthread_mutex_trylock(m) == EBUSY);`, parsec_barrier_wait).
    MutexFree(ObjIndex),
    /// In the kernel: mmap_sem's writer is gone or no longer running (`rwsem_spin_on_owner`,
    /// guest/mm_sem.rs). Spun as kernel time (`TimeKind::Spin`), so pause-loop exits catch it.
    MmSemOwner,
}

/// An instantaneous piece of guest logic, run when the thread reaches it.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    MutexLock(ObjIndex),
    /// After waking from futex_wait on a mutex: try again (glibc `__lll_lock_wait`).
    MutexRetry(ObjIndex),
    MutexUnlock(ObjIndex),
    BarrierArrive {
        barrier: ObjIndex,
        wait: BarrierWait,
    },
    /// After a spin-then-block spin expired: block unless the barrier opened meanwhile.
    BarrierBlockUnlessOpen {
        barrier: ObjIndex,
        generation: u64,
    },
    CondWait {
        cond: ObjIndex,
        mutex: ObjIndex,
    },
    /// pthread_cond_wait's return: take the mutex back with `__pthread_mutex_cond_lock`
    /// (lll_cond_lock: the word becomes 2, contended, even when it was free).
    MutexCondLock(ObjIndex),
    /// pthread_mutex_trylock after a user-space spin saw the mutex free: take it (0 -> 1), or
    /// spin again if another thread got there first.
    MutexTrylock(ObjIndex),
    /// parsec_barrier_wait entered: lock the barrier's mutex, then `ParsecArrive`.
    ParsecBarrier {
        barrier: ObjIndex,
        wait: BarrierWait,
    },
    /// With the barrier's mutex held: wait for the arrival phase if the last use is still
    /// departing, then `ParsecRegister`.
    ParsecArrive {
        barrier: ObjIndex,
        wait: BarrierWait,
    },
    /// With the mutex held, in an arrival phase: count in; the last arriver ends the phase and
    /// broadcasts, the others wait for that.
    ParsecRegister {
        barrier: ObjIndex,
        wait: BarrierWait,
    },
    /// With the mutex held: pthread_cond_wait until `is_arrival_phase == arrival`.
    ParsecWaitPhase {
        barrier: ObjIndex,
        arrival: bool,
    },
    /// With the mutex held: count out; the last to leave starts the next arrival phase and
    /// broadcasts; unlock.
    ParsecDepart(ObjIndex),
    CondSignal {
        cond: ObjIndex,
        all: bool,
    },
    QueuePut(ObjIndex),
    QueueGet(ObjIndex),
    /// Holding dispenser `dispenser`'s mutex: take its next ticket, or, when none is left, move
    /// the thread's program counter to `exit` (past its ticket loop).
    TakeTicket {
        dispenser: ObjIndex,
        exit: u32,
    },
    /// Holding dispenser `dispenser`'s mutex: back to ticket 0 of `count`.
    ResetTickets {
        dispenser: ObjIndex,
        count: u64,
    },
    /// Holding TaskQ sync `k`'s mutex: one more thread arrived; the last broadcasts `tasksDone`
    /// (`waitForTasks`).
    TaskqArrive(ObjIndex),
    /// Holding TaskQ sync `k`'s mutex: the count back to 0 (`signalTasks`).
    TaskqReset(ObjIndex),
    /// Holding TaskQ sync `k`'s mutex: main arrived; it waits on `tasksDone` unless every thread
    /// has (`waitForEnd`).
    TaskqEndCheck(ObjIndex),
    /// Holding task queue `k`'s mutex: one more task in it (`Add_Task`).
    TaskqPut(ObjIndex),
    /// Holding task queue `queue`'s mutex (`getATaskFromHead`): take a task and run it (`work`,
    /// exponential), then look again; or, finding none, unlock and go on.
    TaskqPop {
        queue: ObjIndex,
        work: Nanos,
    },
    /// `stealTasks` of queue `queue`, looking at queue `from` next (wrapping; back at `queue`,
    /// nothing was found): the first queue holding tasks by the unlocked look is locked with
    /// `queue`, in queue order, for a `TaskqTake`.
    TaskqScan {
        queue: ObjIndex,
        from: ObjIndex,
        work: Nanos,
        repeat: bool,
    },
    /// Holding the mutexes of task queues `queue` and `src`: move `calculateNumSteal` of `src`'s
    /// tasks to `queue`, unlock both; then run them and scan again (`repeat`), or stop (the
    /// main thread's single steal); on nothing found, scan on from `src + 1`.
    TaskqTake {
        queue: ObjIndex,
        src: ObjIndex,
        work: Nanos,
        repeat: bool,
    },
    /// `sched_setaffinity(0, mask)` after its system call entry (`GuestKernel::set_affinity`):
    /// the new mask is `SyncObjects::cpu_masks[k]`.
    SetAffinity(ObjIndex),
    /// Under the bucket lock: queue the thread if the futex word still equals `expect`.
    FutexQueue {
        key: FutexKey,
        expect: u64,
    },
    /// After dropping the bucket lock: sleep if FutexQueue queued the thread.
    FutexSleep,
    /// Under the bucket lock: wake up to `n` waiters; IPIs go out before or after the unlock
    /// following this action depending on GuestConfig::futex_wake_ipi.
    FutexWake {
        key: FutexKey,
        n: usize,
    },
    /// Under both bucket locks: FUTEX_CMP_REQUEUE (futex_requeue, kernel/futex.c): if `from`
    /// still holds `expect`, wake one of its waiters and move the rest onto `to`'s queue;
    /// `unlocks` bucket Unlock steps follow (1 when both words share a bucket, else 2).
    FutexRequeue {
        from: FutexKey,
        to: FutexKey,
        expect: u64,
        unlocks: usize,
    },
    /// A step of down_write / up_write on the mm's mmap_sem (guest/mm_sem.rs).
    MmSem(super::mm_sem::MmSemOp),
    /// Start a TLB shootdown for `pages` pages.
    TlbShootdown {
        pages: u32,
    },
    /// Right after a shootdown's call-function IPIs went out (Linux 4.4
    /// `xen_smp_send_call_function_ipi`): yield the pCPU if one of its targets (kept in the
    /// shootdown's record, `Shootdown::targets`) has a runnable Xen runstate (`xen_vcpu_stolen`,
    /// read from its PV area).
    YieldIfStolen {
        shootdown: u32,
    },
    /// Right after a shootdown's call-function IPIs went out (the Linux 6.x guest on KVM,
    /// `kvm_smp_send_call_func_ipi`): `KVM_HC_SCHED_YIELD` to the first of its targets
    /// (`Shootdown::targets`) that is not idle and is preempted (guest/pv_guest.rs).
    PvSchedYield {
        shootdown: u32,
    },
    /// Delayed preemption (Uhlig et al. VM'04, sim/mechanisms/preemption_overlay/delay_preempt.rs): after the thread's
    /// outermost spinlock release, give the pCPU back (`Hypercall::PreemptAck`) if the host
    /// marked a preemption pending in the PV area.
    DelayedPreemptYield,
    Progress,
    /// recv() on the network socket (`Op::SockRecv`, guest/netrx.rs).
    SockRecv {
        len: u32,
    },
    /// A step of the Tascell worker runtime (guest/worksteal.rs).
    Ws(super::worksteal::WsAction),
}

/// One kernel-level step of a thread.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// CPU work in user (`func == User`) or kernel mode.
    Run {
        ns: Nanos,
        func: KernelFn,
    },
    /// Draw a duration from `dist` when the step starts, then run it.
    RunDist {
        dist: Dist,
        func: KernelFn,
    },
    /// Take a spinlock, spinning while it is held.
    Lock {
        lock: LockId,
        func: KernelFn,
    },
    Unlock {
        lock: LockId,
    },
    /// Take a user-space spinlock (`Op::SpinLock`), spinning in user mode while it is held.
    UserLock {
        lock: LockId,
    },
    /// Release a user-space spinlock.
    UserUnlock {
        lock: LockId,
    },
    /// Send IPIs: one VMEXIT on the sender, then delivery to each target.
    /// For a TLB shootdown, `shootdown` names it and `pages` is what each target flushes.
    SendIpis {
        kind: IpiKind,
        targets: Vec<VcpuId>,
        shootdown: u32,
        pages: u32,
        func: KernelFn,
    },
    /// Spin until the shootdown's acknowledgements are all in.
    WaitAcks {
        shootdown: u32,
    },
    /// Kick the vCPU of a PV qspinlock waiter (`pv_kick` -> `xen_qlock_kick`: an EVTCHNOP_send
    /// hypercall, one exit of `ipi_send`), after the unlock that handed it the lock.
    Kick {
        vcpu: VcpuId,
    },
    /// Spin in user space until `cond` holds, for at most `budget` of CPU time.
    UserSpin {
        cond: SpinCond,
        budget: Option<Nanos>,
    },
    Do(Action),
}

/// A thread's pending steps, front first. Steps are taken from the front and almost always
/// queued there (a kernel path puts its steps before what the thread was doing); only an op's
/// expansion goes to the back, and then the queue is empty. So it is kept as a stack, the front
/// step last in a `Vec`: taking or queueing a front step is a plain push or pop (a
/// ring buffer's index arithmetic is a noticeable part of every interpreter pass).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepQueue {
    /// The steps, back first (the front step is the last element).
    rev: Vec<Step>,
}

impl StepQueue {
    pub fn new() -> Self {
        StepQueue { rev: Vec::new() }
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.rev.is_empty()
    }

    #[inline]
    pub fn front(&self) -> Option<&Step> {
        self.rev.last()
    }

    #[inline]
    pub fn front_mut(&mut self) -> Option<&mut Step> {
        self.rev.last_mut()
    }

    #[inline]
    pub fn pop_front(&mut self) -> Option<Step> {
        self.rev.pop()
    }

    #[inline]
    pub fn push_front(&mut self, s: Step) {
        self.rev.push(s);
    }

    /// Queue `steps` in front of the pending ones, in order.
    #[inline]
    pub fn push_front_all<I>(&mut self, steps: I)
    where
        I: IntoIterator<Item = Step>,
        I::IntoIter: DoubleEndedIterator,
    {
        self.rev.extend(steps.into_iter().rev());
    }

    /// Queue `s` behind every pending step.
    #[inline]
    pub fn push_back(&mut self, s: Step) {
        self.rev.insert(0, s);
    }

    /// Queue `steps` behind every pending step, in order.
    pub fn extend<I>(&mut self, steps: I)
    where
        I: IntoIterator<Item = Step>,
        I::IntoIter: DoubleEndedIterator,
    {
        self.rev.splice(0..0, steps.into_iter().rev());
    }

    /// Put `s` at position `index` counted from the front (`index` steps stay before it).
    pub fn insert(&mut self, index: usize, s: Step) {
        let at = self.rev.len() - index;
        self.rev.insert(at, s);
    }

    /// The steps, front first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &Step> {
        self.rev.iter().rev()
    }
}

/// A PV qspinlock waiter's `pv_node::state` (Linux 4.4 kernel/locking/qspinlock_paravirt.h).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PvState {
    /// `vcpu_running`: spinning (or not waiting).
    Running,
    /// `vcpu_halted`: a queued node that spent its spin and blocked (`pv_wait_node`).
    Halted,
    /// `vcpu_hashed`: the queue head hashed the lock and set `_Q_SLOW_VAL` (`pv_wait_head`, or
    /// `pv_kick_node` on a halted node's behalf): the unlocker must kick it.
    Hashed,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThreadState {
    /// On a vCPU run queue or running on it.
    Ready,
    /// Sleeping in futex_wait on this key.
    Blocked(FutexKey),
    Exited,
}

pub struct Thread {
    pub id: ThreadId,
    pub vm: VmId,
    /// Index within its VM.
    pub index: u32,
    pub state: ThreadState,
    /// The vCPU it runs on or is queued on (or last ran on, when blocked).
    pub vcpu: VcpuId,
    /// Its compiled program, shared with every thread built from the same ops (the copies of a
    /// VM, a VM's identical workers: [`CodeCache`]), so that a host of many VMs reads one copy.
    pub code: Arc<[Code]>,
    pub pc: usize,
    /// Remaining iterations of each open loop (innermost last); `u64::MAX` = forever.
    pub loops: Vec<u64>,
    /// Steps still to run, front first. Empty means: fetch the next op.
    pub steps: StepQueue,
    /// Remaining work (work-ns, `hardware/speed.rs`) of the front step when it is timed.
    pub step_remaining: Option<Nanos>,
    /// User-spin budget left (spin-then-block): wall time, not scaled by speed.
    pub spin_budget_left: Option<Nanos>,
    /// PV qspinlock: spin left before `pv_wait` (time on its vCPU), while it waits.
    pub pv_spin_left: Option<Nanos>,
    /// PV qspinlock: its wait node's state.
    pub pv_state: PvState,
    /// Spinlocks held now.
    pub held: Vec<LockId>,
    /// Set by FutexQueue, consumed by FutexSleep.
    pub futex_queued: Option<FutexKey>,
    /// When the current lock / ack wait began (for latency histograms).
    pub wait_started: Option<Nanos>,
    /// The spinlock whose waiter queue holds this thread: set when it starts spinning on a lock
    /// (the one place a waiter joins a queue), cleared when it takes the lock or the lock is
    /// handed to it (the places it leaves). `Some(l)` exactly when it is in `l`'s queue (check
    /// mode holds both ways), so nothing searches a queue for a thread
    /// (`Spinlock::try_acquire`'s `queued`; `lock_state`).
    pub queued_on: Option<LockId>,
    pub rng: Stream,
    /// The vCPUs (indices in its VM) it may run on, as `sched_setaffinity` set them
    /// (`task_struct::cpus_allowed`); None: every vCPU. The guest scheduler's wake placement,
    /// pulls, tick balancing and IRS's migrator honour it, as Linux's `select_task_rq`,
    /// `can_migrate_task` and `select_fallback_rq` do.
    pub cpus: Option<crate::hardware::cpumask::IndexMask>,
}

impl Thread {
    /// Whether it may run on its VM's vCPU index `i` (`cpumask_test_cpu(i, tsk_cpus_allowed(p))`).
    #[inline(always)]
    pub fn may_run_on(&self, i: usize) -> bool {
        self.cpus.as_ref().is_none_or(|m| m.contains(i))
    }

    pub fn is_live(&self) -> bool {
        self.state != ThreadState::Exited
    }
}

#[cfg(test)]
mod code_cache_tests {
    use super::*;
    use crate::workload::program::Dist;

    fn prog(ms: u64) -> Vec<Op> {
        vec![Op::Loop { count: None, body: vec![Op::Compute(Dist::Const(ms * 1_000_000)), Op::Progress] }]
    }

    #[test]
    fn equal_ops_share_their_code_and_the_oldest_list_is_forgotten_past_the_bound() {
        let mut cache = CodeCache::default();
        let a = cache.get(&prog(1));
        assert_eq!(&a[..], &compile(&prog(1))[..], "the shared code is the compiled ops");
        assert!(Arc::ptr_eq(&a, &cache.get(&prog(1))), "equal ops: the same copy");
        let b = cache.get(&prog(2));
        assert!(!Arc::ptr_eq(&a, &b), "other ops: another copy");
        // Fill the cache past its bound with other programs, using `a` just before so that it
        // is the most recent; the second program, now the oldest, is compiled again.
        for ms in 3..(1 + CodeCache::KEPT as u64) {
            cache.get(&prog(ms));
        }
        assert!(Arc::ptr_eq(&a, &cache.get(&prog(1))));
        cache.get(&prog(100));
        assert!(Arc::ptr_eq(&a, &cache.get(&prog(1))), "kept: used recently");
        assert!(!Arc::ptr_eq(&b, &cache.get(&prog(2))), "forgotten: the least recently used");
    }
}
