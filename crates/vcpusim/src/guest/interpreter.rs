//! Running a thread's program: fetch the next user op and expand it into kernel steps.

use super::kernel::{GuestEnv, GuestKernel};
use super::kernel_fn::KernelFn;
use super::mm_sem::MmSemOp;
use super::thread::{Action, Code, Step, StepQueue};
use crate::hardware::costs::Costs;
use crate::ids::ThreadId;
use crate::time::Nanos;
use crate::workload::program::Op;

/// Kernel work per page mapped or unmapped (page-table updates), assumed.
const MM_WORK_PER_PAGE: Nanos = 250;

/// Pages past which x86 flushes the whole TLB instead of page by page
/// (`tlb_single_page_flush_ceiling`, arch/x86/mm/tlb.c, Linux 3.7+; Linux 3.2's `flush_tlb_mm`
/// always flushes all): a `MadviseDontneed` shootdown's handlers pay at most this many pages.
const FULL_FLUSH_PAGES: u32 = 33;

impl GuestKernel {
    /// Move thread `t`'s program counter to the next op and queue its steps. Returns false when
    /// the thread is done instead: its program ended, or its VM `finished` (its iteration
    /// target reached); the caller exits it.
    #[must_use = "a finished thread must exit"]
    pub fn fetch_op(&mut self, env: &mut GuestEnv, t: ThreadId, finished: bool) -> bool {
        loop {
            let th = &mut env.threads[t.idx()];
            if finished || th.pc >= th.code.len() {
                return false;
            }
            match &th.code[th.pc] {
                Code::LoopStart { count, end } => {
                    let n = count.unwrap_or(u64::MAX);
                    if n == 0 {
                        th.pc = end + 1;
                    } else {
                        th.loops.push(n);
                        th.pc += 1;
                    }
                }
                Code::LoopEnd { start } => {
                    let start = *start;
                    let top = th.loops.last_mut().expect("a loop end has an open loop");
                    if *top != u64::MAX {
                        *top -= 1;
                    }
                    if *top == 0 {
                        th.loops.pop();
                        th.pc += 1;
                    } else {
                        th.pc = start + 1;
                    }
                }
                &Code::TicketStart { dispenser, end } => {
                    // getTicket(): l->Lock(); rv = value; value += inc; l->Unlock(). The take
                    // jumps past the loop (to end + 1) when none is left; the unlock still runs.
                    th.pc += 1;
                    let exit = u32::try_from(end + 1).expect("a thread's code is shorter than 2^32 ops");
                    th.steps.extend(self.under_dispenser(dispenser, Action::TakeTicket { dispenser, exit }));
                    return true;
                }
                &Code::TicketEnd { start } => th.pc = start,
                Code::Op(Op::WorkSteal) => {
                    // The worker stays on this op until the computation is over.
                    match self.ws_next(env, t) {
                        Some(steps) => {
                            env.threads[t.idx()].steps.extend(steps);
                            return true;
                        }
                        None => env.threads[t.idx()].pc += 1,
                    }
                }
                Code::Op(op) => {
                    th.pc += 1;
                    // Straight into the thread's step queue: no list per op, and
                    // read in place, not cloned.
                    self.expand(env.costs, op, &mut th.steps);
                    return true;
                }
            }
        }
    }

    /// `action` under ticket dispenser `d`'s mutex (`TicketDispenser`'s `l->Lock()` ... `l->Unlock()`).
    fn under_dispenser(&self, d: usize, action: Action) -> [Step; 3] {
        let m = self.objects.dispensers[d].mutex;
        [Step::Do(Action::MutexLock(m)), Step::Do(action), Step::Do(Action::MutexUnlock(m))]
    }

    /// Append the steps of `op` to `steps`.
    fn expand(&self, costs: &Costs, op: &Op, steps: &mut StepQueue) {
        match *op {
            Op::Compute(ref dist) => steps.push_back(Step::RunDist { dist: dist.clone(), func: KernelFn::User }),
            // The entry path, then the work in the function the op names (its lock taken there).
            Op::Syscall { ref work, lock, func } => {
                steps.push_back(Step::Run { ns: costs.syscall, func: KernelFn::Syscall });
                match lock.map(|l| self.objects.kernel_locks[l]) {
                    Some(lock) => {
                        steps.push_back(Step::Lock { lock, func });
                        steps.push_back(Step::RunDist { dist: work.clone(), func });
                        steps.push_back(Step::Unlock { lock });
                    }
                    None => steps.push_back(Step::RunDist { dist: work.clone(), func }),
                }
            }
            Op::MutexLock(m) => steps.push_back(Step::Do(Action::MutexLock(m))),
            Op::SpinLock(k) => steps.push_back(Step::UserLock { lock: self.objects.user_spinlocks[k] }),
            Op::SpinUnlock(k) => steps.push_back(Step::UserUnlock { lock: self.objects.user_spinlocks[k] }),
            Op::MutexUnlock(m) => steps.push_back(Step::Do(Action::MutexUnlock(m))),
            Op::Barrier { barrier, wait } => steps.push_back(Step::Do(Action::BarrierArrive { barrier, wait })),
            Op::ParsecBarrier { barrier, wait } => steps.push_back(Step::Do(Action::ParsecBarrier { barrier, wait })),
            Op::CondWait { cond, mutex } => steps.push_back(Step::Do(Action::CondWait { cond, mutex })),
            Op::CondSignal { cond, all } => steps.push_back(Step::Do(Action::CondSignal { cond, all })),
            Op::QueuePut(q) => steps.extend([Step::Do(Action::MutexLock(self.queue_mutex(q))), Step::Do(Action::QueuePut(q))]),
            Op::QueueGet(q) => steps.extend([Step::Do(Action::MutexLock(self.queue_mutex(q))), Step::Do(Action::QueueGet(q))]),
            // Both hold mmap_sem for write across their work (guest/mm_sem.rs); munmap's TLB
            // shootdown runs under it too (unmap_region -> tlb_finish_mmu, Linux 3.2).
            Op::Mmap { pages } => steps.extend([
                Step::Run { ns: costs.syscall, func: KernelFn::Syscall },
                Step::Do(Action::MmSem(MmSemOp::DownWrite)),
                Step::Run { ns: pages as Nanos * MM_WORK_PER_PAGE, func: KernelFn::Syscall },
                Step::Do(Action::MmSem(MmSemOp::UpWrite)),
            ]),
            Op::Munmap { pages } => steps.extend([
                Step::Run { ns: costs.syscall, func: KernelFn::Syscall },
                Step::Do(Action::MmSem(MmSemOp::DownWrite)),
                Step::Run { ns: pages as Nanos * MM_WORK_PER_PAGE, func: KernelFn::FlushTlbOthers },
                Step::Do(Action::TlbShootdown { pages }),
                Step::Do(Action::MmSem(MmSemOp::UpWrite)),
            ]),
            // mmap_sem for read only (workload/program.rs): the zap and the shootdown, no sem.
            Op::MadviseDontneed { pages } => steps.extend([
                Step::Run { ns: costs.syscall, func: KernelFn::Syscall },
                Step::Run { ns: pages as Nanos * MM_WORK_PER_PAGE, func: KernelFn::FlushTlbOthers },
                Step::Do(Action::TlbShootdown { pages: pages.min(FULL_FLUSH_PAGES) }),
            ]),
            Op::Progress => steps.push_back(Step::Do(Action::Progress)),
            Op::SockRecv { len } => steps.push_back(Step::Do(Action::SockRecv { len })),
            // The system call's entry, then the affinity change.
            Op::SetAffinity(k) => {
                steps.extend([Step::Run { ns: costs.syscall, func: KernelFn::Syscall }, Step::Do(Action::SetAffinity(k))])
            }
            Op::ResetTickets { dispenser, count } => {
                steps.extend(self.under_dispenser(dispenser, Action::ResetTickets { dispenser, count }))
            }
            // TaskQ/lib/taskQDistCommon.c `waitForTasks`, `signalTasks`, `waitForEnd`.
            Op::TaskqWaitForTasks(k) => {
                let s = &self.objects.task_syncs[k];
                steps.extend([
                    Step::Do(Action::MutexLock(s.mutex)),
                    Step::Do(Action::TaskqArrive(k)),
                    Step::Do(Action::CondWait { cond: s.task_avail, mutex: s.mutex }),
                    Step::Do(Action::MutexUnlock(s.mutex)),
                ])
            }
            Op::TaskqSignal(k) => {
                let s = &self.objects.task_syncs[k];
                steps.extend([
                    Step::Do(Action::MutexLock(s.mutex)),
                    Step::Do(Action::TaskqReset(k)),
                    Step::Do(Action::CondSignal { cond: s.task_avail, all: true }),
                    Step::Do(Action::CondSignal { cond: s.tasks_done, all: true }),
                    Step::Do(Action::MutexUnlock(s.mutex)),
                ])
            }
            Op::TaskqWaitForEnd(k) => {
                let m = self.objects.task_syncs[k].mutex;
                steps.extend([Step::Do(Action::MutexLock(m)), Step::Do(Action::TaskqEndCheck(k)), Step::Do(Action::MutexUnlock(m))])
            }
            // taskQDistFixed.c / taskQDistCommon.c: `Add_Task`'s `putEntryHead`, `doOwnTasks`,
            // `stealTasks`.
            Op::TaskqPut(k) => {
                let m = self.objects.task_queues[k].mutex;
                steps.extend([Step::Do(Action::MutexLock(m)), Step::Do(Action::TaskqPut(k)), Step::Do(Action::MutexUnlock(m))])
            }
            Op::TaskqOwn { queue, work } => {
                let m = self.objects.task_queues[queue].mutex;
                steps.extend([Step::Do(Action::MutexLock(m)), Step::Do(Action::TaskqPop { queue, work })])
            }
            Op::TaskqSteal { queue, work, repeat } => {
                let from = (queue + 1) % self.objects.task_queues.len();
                steps.push_back(Step::Do(Action::TaskqScan { queue, from, work, repeat }))
            }
            Op::Loop { .. } | Op::Tickets { .. } => unreachable!("loops are compiled away"),
            Op::WorkSteal => unreachable!("fetch_op runs the worker"),
        }
    }
}
