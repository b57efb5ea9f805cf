//! Running a thread's program: fetch the next user op and expand it into kernel steps.

use super::kernel::{GuestEnv, GuestKernel};
use super::kernel_fn::KernelFn;
use crate::hardware::costs::Costs;
use super::mm_sem::MmSemOp;
use super::thread::{Action, Code, Step};
use crate::ids::ThreadId;
use crate::time::Nanos;
use crate::workload::program::Op;

/// Kernel work per page mapped or unmapped (page-table updates), assumed.
const MM_WORK_PER_PAGE: Nanos = 250;

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
                    let op = op.clone();
                    th.pc += 1;
                    let steps = self.expand(env.costs, op);
                    env.threads[t.idx()].steps.extend(steps);
                    return true;
                }
            }
        }
    }

    fn expand(&self, costs: &Costs, op: Op) -> Vec<Step> {
        match op {
            Op::Compute(dist) => vec![Step::RunDist { dist, func: KernelFn::User }],
            Op::Syscall { work, lock } => {
                let mut s = vec![Step::Run { ns: costs.syscall, func: KernelFn::Syscall }];
                match lock.map(|l| self.objects.kernel_locks[l]) {
                    Some(lock) => {
                        s.push(Step::Lock { lock, func: KernelFn::Syscall });
                        s.push(Step::RunDist { dist: work, func: KernelFn::Syscall });
                        s.push(Step::Unlock { lock });
                    }
                    None => s.push(Step::RunDist { dist: work, func: KernelFn::Syscall }),
                }
                s
            }
            Op::MutexLock(m) => vec![Step::Do(Action::MutexLock(m))],
            Op::MutexUnlock(m) => vec![Step::Do(Action::MutexUnlock(m))],
            Op::Barrier { barrier, wait } => vec![Step::Do(Action::BarrierArrive { barrier, wait })],
            Op::ParsecBarrier { barrier, wait } => vec![Step::Do(Action::ParsecBarrier { barrier, wait })],
            Op::CondWait { cond, mutex } => vec![Step::Do(Action::CondWait { cond, mutex })],
            Op::CondSignal { cond, all } => vec![Step::Do(Action::CondSignal { cond, all })],
            Op::QueuePut(q) => vec![Step::Do(Action::MutexLock(self.queue_mutex(q))), Step::Do(Action::QueuePut(q))],
            Op::QueueGet(q) => vec![Step::Do(Action::MutexLock(self.queue_mutex(q))), Step::Do(Action::QueueGet(q))],
            // Both hold mmap_sem for write across their work (guest/mm_sem.rs); munmap's TLB
            // shootdown runs under it too (unmap_region -> tlb_finish_mmu, Linux 3.2).
            Op::Mmap { pages } => vec![
                Step::Run { ns: costs.syscall, func: KernelFn::Syscall },
                Step::Do(Action::MmSem(MmSemOp::DownWrite)),
                Step::Run { ns: pages as Nanos * MM_WORK_PER_PAGE, func: KernelFn::Syscall },
                Step::Do(Action::MmSem(MmSemOp::UpWrite)),
            ],
            Op::Munmap { pages } => vec![
                Step::Run { ns: costs.syscall, func: KernelFn::Syscall },
                Step::Do(Action::MmSem(MmSemOp::DownWrite)),
                Step::Run { ns: pages as Nanos * MM_WORK_PER_PAGE, func: KernelFn::FlushTlbOthers },
                Step::Do(Action::TlbShootdown { pages }),
                Step::Do(Action::MmSem(MmSemOp::UpWrite)),
            ],
            Op::Progress => vec![Step::Do(Action::Progress)],
            Op::SockRecv { len } => vec![Step::Do(Action::SockRecv { len })],
            Op::Loop { .. } => unreachable!("loops are compiled away"),
            Op::WorkSteal => unreachable!("fetch_op runs the worker"),
        }
    }

}
