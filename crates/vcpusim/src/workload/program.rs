//! The workload program model: what guest threads do, as a tree of user-level operations.
//!
//! A workload is a [`Program`]: one op list per thread plus the synchronization objects they
//! share. The guest kernel (crate::guest) turns each op into kernel steps (system calls, futex
//! operations, spinlocks, IPIs), so the pathologies of seed 000 section 2 emerge from the ops.

use crate::time::Nanos;
use crate::vmexit::KernelFn;
use rand::Rng;
use rand_distr::{Distribution, Exp, Normal};

/// A distribution of durations.
#[derive(Clone, Debug, PartialEq)]
pub enum Dist {
    Const(Nanos),
    Uniform {
        lo: Nanos,
        hi: Nanos,
    },
    /// Exponential with this mean.
    Exp {
        mean: Nanos,
    },
    /// Normal, truncated at zero.
    Normal {
        mean: Nanos,
        sd: Nanos,
    },
}

impl Dist {
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> Nanos {
        match *self {
            Dist::Const(v) => v,
            Dist::Uniform { lo, hi } => {
                if hi <= lo {
                    lo
                } else {
                    rng.random_range(lo..=hi)
                }
            }
            Dist::Exp { mean } => {
                if mean == 0 {
                    0
                } else {
                    let e = Exp::new(1.0 / mean as f64).expect("a positive rate is valid");
                    e.sample(rng).round() as Nanos
                }
            }
            Dist::Normal { mean, sd } => {
                let n = Normal::new(mean as f64, sd as f64).expect("a finite sd is valid");
                n.sample(rng).max(0.0).round() as Nanos
            }
        }
    }

    pub fn mean(&self) -> f64 {
        match *self {
            Dist::Const(v) => v as f64,
            Dist::Uniform { lo, hi } => (lo as f64 + hi.max(lo) as f64) / 2.0,
            Dist::Exp { mean } => mean as f64,
            Dist::Normal { mean, .. } => mean as f64,
        }
    }
}

/// How a thread waits at a barrier that is not yet complete.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BarrierWait {
    /// Sleep in futex_wait at once (pthread_barrier_wait).
    Block,
    /// Spin in user space until released (never enters the kernel).
    Spin,
    /// Spin in user space for at most this much CPU time, then futex_wait
    /// (seed 000 section 4.2.3, Figure 10: streamcluster's spin-then-block barrier).
    SpinThenBlock(Nanos),
}

/// Index of a synchronization object inside its VM's [`Program`].
pub type ObjIndex = usize;

/// One user-level operation of a guest thread.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// User-mode computation.
    Compute(Dist),
    /// A system call doing `work` of kernel computation, under kernel lock `lock` (an index into
    /// `Program::kernel_locks`) when given, in kernel function `func` (what the vCPU's
    /// instruction pointer shows while the work runs: `KernelFn::Syscall` for kernel work not
    /// told apart; the entry path before it is always `Syscall`).
    Syscall {
        work: Dist,
        lock: Option<ObjIndex>,
        func: KernelFn,
    },
    /// pthread_mutex_lock on a futex-based mutex (glibc's three-state mutex).
    MutexLock(ObjIndex),
    MutexUnlock(ObjIndex),
    /// Wait at a barrier of `Program::barriers[barrier]` parties.
    Barrier {
        barrier: ObjIndex,
        wait: BarrierWait,
    },
    /// Wait at barrier `barrier` as PARSEC's own barrier does (`parsec_barrier_wait`,
    /// pkgs/.../parsec_barrier.cpp, PARSEC 2.1: a mutex, a condition variable, a counter and an
    /// arrival-phase flag; programs that include parsec_barrier.hpp get it in place of
    /// pthread_barrier_wait through its ENABLE_AUTOMATIC_DROPIN macros). `wait` says how it was
    /// built: `SpinThenBlock(s)` spins up to `s` on the flag first (ENABLE_SPIN_BARRIER, the
    /// header's default: SPIN_COUNTER_MAX, "no more than 0.1 ms"), `Block` goes straight to
    /// pthread_cond_wait (ENABLE_SPIN_BARRIER undefined), `Spin` spins without a limit.
    ParsecBarrier {
        barrier: ObjIndex,
        wait: BarrierWait,
    },
    /// pthread_cond_wait: releases `mutex`, sleeps on the condition's futex, re-acquires `mutex`.
    CondWait {
        cond: ObjIndex,
        mutex: ObjIndex,
    },
    /// pthread_cond_signal (wake one) / broadcast (wake all).
    CondSignal {
        cond: ObjIndex,
        all: bool,
    },
    /// Put one item in a bounded queue (blocks while full).
    QueuePut(ObjIndex),
    /// Take one item from a queue (blocks while empty).
    QueueGet(ObjIndex),
    /// Map `pages` pages: kernel work only, no shootdown.
    Mmap {
        pages: u32,
    },
    /// Unmap `pages` pages: kernel work plus a TLB shootdown to every other vCPU that may cache
    /// the address space.
    Munmap {
        pages: u32,
    },
    /// `madvise(MADV_DONTNEED)` of `pages` pages (mm/madvise.c `madvise_dontneed` ->
    /// `zap_page_range` -> `tlb_finish_mmu`): the same zap and TLB shootdown as [`Op::Munmap`],
    /// but under `mmap_sem` taken for *read* (`madvise_need_mmap_write` is false for
    /// MADV_DONTNEED), which the model does not represent (readers never exclude each other), so
    /// no semaphore is taken. glibc's `shrink_heap` (malloc/arena.c) trims a thread arena this way.
    MadviseDontneed {
        pages: u32,
    },
    /// Count one unit of the VM's progress (see the workload's `progress_unit`).
    Progress,
    /// Repeat `body` `count` times, or forever when `None`.
    Loop {
        count: Option<u64>,
        body: Vec<Op>,
    },
    /// A ticket loop on dispenser `Program::dispensers[dispenser]`: take a ticket (the
    /// dispenser's pthread mutex, read and advance its counter, unlock), run `body` with it, and
    /// again until the tickets run out (PARSEC bodytrack's `TicketDispenser::getTicket` loops in
    /// each command's `Exec`: threads/TicketDispenser.h). Threads share a dispenser's tickets, so
    /// one that runs slowly (or is descheduled) takes fewer and the others more.
    Tickets {
        dispenser: ObjIndex,
        body: Vec<Op>,
    },
    /// Set dispenser `dispenser`'s counter back to 0 with `count` tickets, under its mutex
    /// (`TicketDispenser::resetDispenser`, which one thread runs before each command).
    ResetTickets {
        dispenser: ObjIndex,
        count: u64,
    },
    /// PARSEC facesim's Alamere TaskQ (TaskQ/lib/taskQDistCommon.c), on its batch-sync object
    /// `Program::task_syncs[k]` (a mutex, condition variables `taskAvail` and `tasksDone`, a
    /// counter): a worker's `waitForTasks`: lock; count one more arrived; the last of the
    /// program's threads broadcasts `tasksDone`; then `pthread_cond_wait(taskAvail)` (once, no
    /// predicate loop) until the next batch's signal; unlock.
    TaskqWaitForTasks(ObjIndex),
    /// The main thread's `signalTasks`: lock; the counter back to 0; broadcast `taskAvail` and
    /// `tasksDone`; unlock (its unlocked early return when no worker has arrived is left out:
    /// `taskQInit` waits for them all first).
    TaskqSignal(ObjIndex),
    /// The main thread's `waitForEnd`: lock; count itself arrived; unless every thread has,
    /// `pthread_cond_wait(tasksDone)`; unlock (`taskQWait`'s loop ends at once: only the last
    /// arrival broadcasts `tasksDone` while main waits).
    TaskqWaitForEnd(ObjIndex),
    /// TaskQ's `Add_Task` into queue `k` (`Program::task_queues[k]`, taskQDistFixed.c): under the
    /// queue's mutex, one more task in it.
    TaskqPut(ObjIndex),
    /// `doOwnTasks` on queue `queue`: under the queue's mutex take a task from its head
    /// (`getATaskFromHead`) and run it (`work`, exponential), until a look finds it empty.
    TaskqOwn {
        queue: ObjIndex,
        work: Nanos,
    },
    /// `stealTasks` from queue `queue`: the other queues in turn from `queue + 1`, each looked at
    /// without a lock (`stealTasksSpecialized`'s quick check); at the first that holds tasks, take
    /// both queues' mutexes in queue order, move `calculateNumSteal` of its tasks (half, at least 1,
    /// at most 8) from its tail to this queue, and unlock. A worker (`repeat`, `taskQIdleLoop`)
    /// then runs them (`doOwnTasks`, `work` each) and steals again from `queue + 1` until a
    /// pass over the other queues finds nothing; the main thread (`taskQWait`) steals once and runs what it took by a
    /// `TaskqOwn` that follows.
    TaskqSteal {
        queue: ObjIndex,
        work: Nanos,
        repeat: bool,
    },
    /// recv() on the socket of the program's network device (`Program::nic`): up to `len`
    /// bytes of a TCP stream, or one UDP datagram; sleeps until data is there (`sk_wait_data`,
    /// guest/netrx.rs).
    SockRecv {
        len: u32,
    },
    /// `sched_setaffinity(0, mask)`: the thread sets its own CPU affinity to
    /// `Program::cpu_masks[k]` (vCPU indices of its VM; `None`: all of them), as Linux's
    /// `set_cpus_allowed_ptr` does (a system call; a thread on a vCPU outside the new mask moves
    /// at once to the first vCPU of it, `cpumask_any_and`, which gets a reschedule IPI:
    /// guest/scheduler.rs `set_affinity`). The mask is a program table entry, not carried by the
    /// op, so that the interpreter's steps stay plain data (no drop glue on the hot path).
    SetAffinity(ObjIndex),
    /// Take user-space spinlock `Program::spinlocks[k]`: a lock word in the program's memory,
    /// taken with an atomic and waited for in a PAUSE loop in user mode (the ticket and
    /// test-and-set locks OpenMP runtimes, spin barriers and servers build), so its waiters spin
    /// as user time and its holder may be preempted, by the guest or the host, anywhere.
    SpinLock(ObjIndex),
    /// Release user-space spinlock `k` (the holder's store; a ticket lock passes to the next
    /// ticket).
    SpinUnlock(ObjIndex),
    /// Be worker `i` (the thread's index) of the program's work-stealing computation
    /// (`Program::work_stealing`) until it is over: Tascell's worker loop (guest/worksteal.rs).
    /// Mutex and condition variable `i` are the worker's `thr->mut` and `thr->cond`.
    WorkSteal,
}

impl Op {
    /// Kernel work `work` after the system-call entry, in no kernel function the model tells
    /// apart (`KernelFn::Syscall`) and under no lock.
    pub fn kernel(work: Dist) -> Op {
        Op::Syscall { work, lock: None, func: KernelFn::Syscall }
    }

    /// A critical section of `hold` under kernel lock `lock`, in kernel function `func` (the
    /// function whose body takes the lock).
    pub fn kernel_section(lock: ObjIndex, hold: Dist, func: KernelFn) -> Op {
        Op::Syscall { work: hold, lock: Some(lock), func }
    }
}

/// Kind of a guest-kernel spinlock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpinlockKind {
    /// FIFO ticket lock (x86 Linux before 4.2; the seed's 3.2 guests).
    Ticket,
    /// Unfair test-and-set lock (virt_spin_lock in paravirtualized guests without PV spinlocks).
    TestAndSet,
    /// Queued spinlock (qspinlock, x86 Linux 4.2+: an MCS queue, FIFO) with the paravirtual
    /// slow path of a Xen guest (Linux 4.4 kernel/locking/qspinlock_paravirt.h, arch/x86/xen/
    /// spinlock.c): a waiter spins `GuestConfig::pv_spin`, then blocks its vCPU in SCHEDOP_poll
    /// until the unlocker kicks it (guest/pv_spinlock.rs).
    PvQueued,
    /// A kernel built with lock statistics (`CONFIG_LOCK_STAT`, which selects
    /// `DEBUG_SPINLOCK`): every spinlock waits in `__spin_lock_debug` (Linux 4.4
    /// kernel/locking/spinlock_debug.c), a loop of `arch_spin_trylock` and `__delay(1)`. Unfair
    /// as test-and-set (no queue, no PV slow path), and without PAUSE (`delay_tsc(1)`,
    /// arch/x86/lib/delay.c, returns before its `rep_nop`), so its waits never reach a
    /// pause-loop exit. The kernel that measured seed 002's Table 4a ("reported by Lockstat").
    Debug,
}

/// A complete workload for one VM.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    /// One op list per thread; a thread exits when its list ends.
    pub threads: Vec<Vec<Op>>,
    /// Number of user mutexes.
    pub mutexes: usize,
    /// Parties of each barrier.
    pub barriers: Vec<usize>,
    /// Number of condition variables.
    pub conds: usize,
    /// Capacity of each queue.
    pub queues: Vec<usize>,
    /// Number of ticket dispensers (`Op::Tickets`), each with a mutex of its own.
    pub dispensers: usize,
    /// Parties of each TaskQ batch-sync object (`Op::TaskqWaitForTasks` and the others): the
    /// threads that take part, main included. Each brings a mutex and two condition variables.
    pub task_syncs: Vec<usize>,
    /// TaskQ task queues (`Op::TaskqPut` and the others): the mutex of each.
    pub task_queues: Vec<ObjIndex>,
    /// Names of extra kernel spinlocks used by `Syscall` (lock class names in the LHP report).
    pub kernel_locks: Vec<String>,
    /// The kind of each user-space spinlock `Op::SpinLock` takes (`Ticket` or `TestAndSet`).
    pub spinlocks: Vec<SpinlockKind>,
    /// The CPU masks `Op::SetAffinity` sets (vCPU indices of the VM; `None`: every vCPU).
    pub cpu_masks: Vec<Option<Vec<u32>>>,
    /// What one unit of progress means, for the reports.
    pub progress_unit: &'static str,
    /// The computation `Op::WorkSteal` threads share.
    pub work_stealing: Option<super::worksteal::WorkStealSpec>,
    /// The VM's network device, which `Op::SockRecv` reads from (seed 002 section 3.2;
    /// `hardware/nic.rs`, `sim/mechanisms/net_device.rs`, `guest/netrx.rs`).
    pub nic: Option<crate::hardware::nic::NicSpec>,
    /// Clients of a closed-loop server workload (`ab -c`, workload/builtin/ab.rs): the
    /// requests kept outstanding, for ab's "Time per request" in the reports.
    pub clients: Option<u32>,
    /// Each thread's CPU affinity, set by the thread itself before its first op
    /// (`sched_setaffinity(0, ...)` at its start): the VM's vCPU indices it may run on; a
    /// thread past the list's end, or with None, may run on any.
    pub thread_cpus: Vec<Option<Vec<u32>>>,
}

impl Program {
    pub fn new(progress_unit: &'static str) -> Self {
        Program {
            threads: Vec::new(),
            mutexes: 0,
            barriers: Vec::new(),
            conds: 0,
            queues: Vec::new(),
            dispensers: 0,
            task_syncs: Vec::new(),
            task_queues: Vec::new(),
            kernel_locks: Vec::new(),
            spinlocks: Vec::new(),
            cpu_masks: Vec::new(),
            progress_unit,
            work_stealing: None,
            nic: None,
            clients: None,
            thread_cpus: Vec::new(),
        }
    }

    /// Check that every object an op names exists and that every barrier can gather its
    /// parties. Returns a message naming the thread and the op.
    pub fn validate(&self) -> Result<(), String> {
        fn walk(ops: &[Op], p: &Program, t: usize, users: &mut [usize]) -> Result<(), String> {
            for op in ops {
                let check = |what: &str, i: usize, n: usize| {
                    if i >= n {
                        Err(format!("thread {t}: {op:?} names {what} {i}, but the program has {n}"))
                    } else {
                        Ok(())
                    }
                };
                match op {
                    Op::Syscall { lock: Some(l), .. } => check("kernel lock", *l, p.kernel_locks.len())?,
                    Op::MutexLock(m) | Op::MutexUnlock(m) => check("mutex", *m, p.mutexes)?,
                    Op::SpinLock(k) | Op::SpinUnlock(k) => check("user spinlock", *k, p.spinlocks.len())?,
                    Op::SetAffinity(k) => check("CPU mask", *k, p.cpu_masks.len())?,
                    Op::Barrier { barrier, .. } | Op::ParsecBarrier { barrier, .. } => {
                        check("barrier", *barrier, p.barriers.len())?;
                        users[*barrier] += 1;
                    }
                    Op::CondWait { cond, mutex } => {
                        check("condition variable", *cond, p.conds)?;
                        check("mutex", *mutex, p.mutexes)?;
                    }
                    Op::CondSignal { cond, .. } => check("condition variable", *cond, p.conds)?,
                    Op::QueuePut(q) | Op::QueueGet(q) => check("queue", *q, p.queues.len())?,
                    Op::Loop { body, .. } => walk(body, p, t, users)?,
                    Op::Tickets { dispenser, body } => {
                        check("ticket dispenser", *dispenser, p.dispensers)?;
                        walk(body, p, t, users)?
                    }
                    Op::ResetTickets { dispenser, .. } => check("ticket dispenser", *dispenser, p.dispensers)?,
                    Op::TaskqWaitForTasks(k) | Op::TaskqSignal(k) | Op::TaskqWaitForEnd(k) => check("TaskQ sync", *k, p.task_syncs.len())?,
                    Op::TaskqPut(k) | Op::TaskqOwn { queue: k, .. } | Op::TaskqSteal { queue: k, .. } => {
                        check("TaskQ task queue", *k, p.task_queues.len())?
                    }
                    Op::SockRecv { len } => {
                        if p.nic.is_none() {
                            return Err(format!("thread {t}: a socket recv op needs the program's network device"));
                        }
                        if *len == 0 {
                            return Err(format!("thread {t}: a socket recv of 0 bytes never receives"));
                        }
                    }
                    Op::WorkSteal => {
                        if p.work_stealing.is_none() {
                            return Err(format!("thread {t}: a work-steal op needs the program's work-stealing computation"));
                        }
                        check("mutex", t, p.mutexes)?;
                        check("condition variable", t, p.conds)?;
                    }
                    _ => {}
                }
            }
            Ok(())
        }
        if let Some(k) = self.spinlocks.iter().position(|s| *s == SpinlockKind::PvQueued) {
            return Err(format!("user spinlock {k} is a PV queued spinlock, which only a kernel has; use a ticket or test-and-set lock"));
        }
        for (b, parties) in self.barriers.iter().enumerate() {
            if *parties == 0 {
                return Err(format!("barrier {b} has 0 parties"));
            }
        }
        for (q, cap) in self.queues.iter().enumerate() {
            if *cap == 0 {
                return Err(format!("queue {q} has capacity 0"));
            }
        }
        if let Some((k, m)) = self.task_queues.iter().enumerate().find(|(_, m)| **m >= self.mutexes) {
            return Err(format!("TaskQ task queue {k} names mutex {m}, but the program has {}", self.mutexes));
        }
        let mut threads_using = vec![0usize; self.barriers.len()];
        for (t, ops) in self.threads.iter().enumerate() {
            let mut users = vec![0usize; self.barriers.len()];
            walk(ops, self, t, &mut users)?;
            for (b, n) in users.iter().enumerate() {
                if *n > 0 {
                    threads_using[b] += 1;
                }
            }
        }
        for (b, parties) in self.barriers.iter().enumerate() {
            if threads_using[b] > 0 && threads_using[b] < *parties {
                return Err(format!(
                    "barrier {b} waits for {parties} threads but only {} thread(s) use it, so it can never open",
                    threads_using[b]
                ));
            }
        }
        Ok(())
    }
}
