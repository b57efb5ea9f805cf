//! The guest's side of executing a vCPU: what it does next, and what happens when the work the
//! host ran for it ends.
//!
//! The host enters a vCPU (`Upcall::Resume`: `Sim::dispatch`) and asks `GuestKernel::run` what
//! it does next. The guest answers with a `vmexit::Next`: timed work of a kind (a thread step, an
//! interrupt handler), a spin, an exit (HLT, the first APIC access of an IPI send), or a request
//! (poke a spinner, arm its timer, the iteration target reached, stop). Instantaneous steps
//! (actions, lock and unlock, the interpreter) run inside `run` without the host. The host runs
//! timed work and spins, and reports back: `executed` when it pauses them (the work done so
//! far), `step_done` / `handler_done` when they end. Interrupt delivery (`interrupt`) and the
//! guest tick (`guest/scheduler.rs`) are the other upcalls.
//!
//! Order inside `run`, as Linux returns to a vCPU: finish an interrupted handler, take the next
//! pending interrupt, run the current thread's front step, pick a thread, else HLT (the idle
//! loop). The host enters `run` again after every request it carried out, so a pass resumes
//! from the top, as one loop over these steps would.

use super::haltpoll::IdleState;
use super::handoff::HandOffKind;
use super::kernel::{GuestEnv, GuestKernel};
use super::kernel_fn::KernelFn;
use super::objects::SyncObjects;
use super::spinlock::{Acquire, Spinlock};
use super::thread::{Action, SpinCond, Step, Thread};
use crate::ids::{LockId, ThreadId, VcpuId};
use crate::time::Nanos;
use crate::vmexit::{Entry, Exit, Hypercall, Ipi, IpiKind, Next, PvArea, TimeKind};
use crate::workload::program::{Dist, SpinlockKind};
use crate::SimError;

/// Instantaneous steps a guest may run in a row, with none of its vCPUs starting timed work or
/// a spin, before the run is declared runaway (a program that loops without a timed op).
const MAX_ZERO_TIME_STEPS: u64 = 1_000_000;

impl GuestKernel {
    /// The host enters vCPU `i` (`entry`): what does it do next?
    pub fn run(&mut self, env: &mut GuestEnv, i: usize, entry: Entry) -> Next {
        // Entered again: back from any SCHEDOP_poll.
        self.vcpus[i].pv_polled = false;
        if let Some(since) = self.vcpus[i].haltpoll.halted_since {
            // Back from a haltpoll HLT: the governor reflects on its residency.
            let params = self.config.haltpoll.expect("only a haltpoll guest records halts");
            self.vcpus[i].haltpoll.halt_ended(&params, env.now - since);
        }
        if let Some(next) = self.queued_notice() {
            return next;
        }
        let gv = &mut self.vcpus[i];
        if gv.irq.is_some() {
            // A handler interrupted by a deschedule resumes where it stopped.
            gv.func = KernelFn::IpiHandler;
            return Next::ResumeHandler;
        }
        if let Some(phase) = gv.dev_irq {
            // A device handler (or its softirq) a deschedule interrupted resumes where it stopped.
            gv.func = phase.func();
            return Next::ResumeHandler;
        }
        if self.irs.is_some() {
            if self.in_notice_handler(i) {
                // IRS's notice handler a deschedule interrupted resumes where it stopped.
                self.vcpus[i].func = KernelFn::HandlePercpuIrq;
                return Next::ResumeHandler;
            }
            if let Some(work) = self.take_notice(i) {
                return Next::Handler { work };
            }
        }
        let gv = &mut self.vcpus[i];
        if let Some(ipi) = gv.pending_ipis.pop_front() {
            // Saturating: the loader bounds the product (`scenario/bounds.rs`), a Rust caller may not.
            let work = env.costs.ipi_handler.saturating_add(u64::from(ipi.pages).saturating_mul(env.costs.tlb_flush_per_page));
            gv.irq = Some(ipi);
            gv.func = KernelFn::IpiHandler;
            return Next::Handler { work };
        }
        if let Some(next) = self.take_device_irq(i) {
            return next;
        }
        let mut entry = entry;
        loop {
            // The current thread and the tick's check read the guest vCPU once (the common case:
            // a thread is current).
            let gv = &mut self.vcpus[i];
            let t = if let Some(t) = gv.current {
                if let Some(tick) = super::scheduler::arm_tick_of(gv, self.config.tick, self.balance.is_some()) {
                    return Next::SetTimer(tick);
                }
                t
            } else {
                let Some(t) = self.pick_next(env.threads, i, env.now) else {
                    // The idle loop: HLT exits to the hypervisor, which blocks the vCPU; with
                    // haltpoll the governor may poll first.
                    self.vcpus[i].func = KernelFn::Idle;
                    self.vcpus[i].idle_loop = true;
                    if self.config.haltpoll.is_some() {
                        return self.haltpoll_idle(i, env.now);
                    }
                    return Next::Exit(Exit::Hlt);
                };
                if self.vcpus[i].haltpoll.polling_since.is_some() {
                    // A wake-up ended the poll in time: no HLT.
                    self.vcpus[i].haltpoll.poll_ended(false);
                    self.stats.idle_poll_wakeups += 1;
                }
                if let Some(tick) = self.arm_tick(i) {
                    return Next::SetTimer(tick);
                }
                t
            };
            if let Some(log) = self.handoffs.as_mut() {
                // A waiter handed a lock (or woken by an unlock) resumes here.
                log.running(env.now, t, self.vcpus[i].id);
            }
            match self.run_front_step(env, i, t, entry) {
                // Busy: timed work, a spin, or the send's exit.
                Some(next @ (Next::Run { .. } | Next::Spin { .. } | Next::Complete | Next::Exit(_))) => {
                    self.zero_time_steps = 0;
                    return next;
                }
                // The step finished at once but the host must act (target reached, stop).
                Some(next) => {
                    self.zero_time_steps += 1;
                    return next;
                }
                None => {}
            }
            entry = Entry::Resume;
            self.zero_time_steps += 1;
            if self.zero_time_steps > MAX_ZERO_TIME_STEPS {
                return self.runaway(env.threads[t.idx()].index);
            }
            if let Some(next) = self.queued_notice() {
                return next;
            }
        }
    }

    /// `getATaskFromHead` of task queue `queue` by thread `t`, holding its mutex: a task is
    /// taken, run (`work`, exponential) and the queue looked at again; an empty queue is
    /// unlocked and `doOwnTasks` ends.
    fn taskq_pop(&mut self, env: &mut GuestEnv, t: ThreadId, queue: usize, work: Nanos) {
        let q = &mut self.objects.task_queues[queue];
        let m = q.mutex;
        if q.count == 0 {
            env.push_front(t, Step::Do(Action::MutexUnlock(m)));
            return;
        }
        q.count -= 1;
        env.push_front_steps(
            t,
            [
                Step::Do(Action::MutexUnlock(m)),
                Step::RunDist { dist: Dist::Exp { mean: work }, func: KernelFn::User },
                Step::Do(Action::MutexLock(m)),
                Step::Do(Action::TaskqPop { queue, work }),
            ],
        );
    }

    /// `stealTasks`' walk over the other queues of thread `t`'s queue `queue`, from `from`: the
    /// first queue with tasks by `stealTasksSpecialized`'s unlocked count check is locked with
    /// `queue`, the lower-numbered first (its total order by address).
    fn taskq_scan(&mut self, env: &mut GuestEnv, t: ThreadId, queue: usize, from: usize, work: Nanos, repeat: bool) {
        let queues = &self.objects.task_queues;
        let n = queues.len();
        let mut i = from % n;
        while i != queue {
            if queues[i].count > 0 {
                let (lo, hi) = (queue.min(i), queue.max(i));
                let (m_lo, m_hi) = (queues[lo].mutex, queues[hi].mutex);
                env.push_front_steps(
                    t,
                    [
                        Step::Do(Action::MutexLock(m_lo)),
                        Step::Do(Action::MutexLock(m_hi)),
                        Step::Do(Action::TaskqTake { queue, src: i, work, repeat }),
                    ],
                );
                return;
            }
            i = (i + 1) % n;
        }
    }

    /// Under both queues' mutexes: move `calculateNumSteal(found)` tasks (half, at least 1, at
    /// most `MAX_STEAL` = 8) from `src` to `queue`, unlock `queue`'s then `src`'s mutex. Then a
    /// worker runs them (`doOwnTasks`) and steals again from `queue + 1`; the main thread stops;
    /// a queue emptied meanwhile sends the walk on from `src + 1`.
    fn taskq_take(&mut self, env: &mut GuestEnv, t: ThreadId, queue: usize, src: usize, work: Nanos, repeat: bool) {
        const MAX_STEAL: u64 = 8;
        let found = self.objects.task_queues[src].count;
        let stolen = if found == 1 { 1 } else { (found / 2).min(MAX_STEAL) };
        self.objects.task_queues[src].count -= stolen;
        self.objects.task_queues[queue].count += stolen;
        self.stats.taskq_stolen += stolen;
        let (m_own, m_src) = (self.objects.task_queues[queue].mutex, self.objects.task_queues[src].mutex);
        let n = self.objects.task_queues.len();
        // Pushed in front, so in reverse: what follows the unlocks first.
        if stolen > 0 && repeat {
            env.push_front_steps(
                t,
                [
                    Step::Do(Action::MutexLock(m_own)),
                    Step::Do(Action::TaskqPop { queue, work }),
                    Step::Do(Action::TaskqScan { queue, from: (queue + 1) % n, work, repeat }),
                ],
            );
        } else if stolen == 0 {
            env.push_front(t, Step::Do(Action::TaskqScan { queue, from: (src + 1) % n, work, repeat }));
        }
        env.push_front_steps(t, [Step::Do(Action::MutexUnlock(m_own)), Step::Do(Action::MutexUnlock(m_src))]);
    }

    /// Idle vCPU `i` of a haltpoll guest at `now` (guest/haltpoll.rs): go on with the poll in
    /// progress (re-entered after a deschedule, a PLE exit or a handler: `poll_idle` measures its
    /// limit on the clock, so time descheduled counts), or ask the governor, which polls or halts.
    #[cold]
    #[inline(never)]
    fn haltpoll_idle(&mut self, i: usize, now: Nanos) -> Next {
        let dev = &mut self.vcpus[i].haltpoll;
        if let Some(since) = dev.polling_since {
            let left = dev.poll_limit_ns.saturating_sub(now - since);
            if left > 0 {
                return Next::Spin { kind: TimeKind::IdlePoll, budget: Some(left) };
            }
            dev.poll_ended(true);
        }
        match dev.select() {
            IdleState::Poll(limit) => {
                dev.polling_since = Some(now);
                self.stats.idle_polls += 1;
                Next::Spin { kind: TimeKind::IdlePoll, budget: Some(limit) }
            }
            IdleState::Halt => {
                dev.halted_since = Some(now);
                Next::Exit(Exit::Hlt)
            }
        }
    }

    /// The run stops: thread number `index` ran `MAX_ZERO_TIME_STEPS` instantaneous steps in a
    /// row. Cold and out of line, as `program_error`: the interpreter's hot loop stays compact
    /// (docs/speed.md).
    #[cold]
    #[inline(never)]
    fn runaway(&self, index: u32) -> Next {
        Next::Stop(Box::new(SimError::Limit {
            message: format!(
                "VM {:?} thread {index} ran {MAX_ZERO_TIME_STEPS} steps without simulated time passing; \
                 its program loops without a timed op (compute, syscall, mmap...)",
                self.name
            ),
        }))
    }

    /// Run thread `t`'s front step on vCPU `i`: `None` when it finished at once (run the next
    /// one), else what the vCPU does now.
    fn run_front_step(&mut self, env: &mut GuestEnv, i: usize, t: ThreadId, entry: Entry) -> Option<Next> {
        let now = env.now;
        if env.threads[t.idx()].steps.is_empty() {
            return self.next_op(env, i, t);
        }
        let Thread { steps, step_remaining, rng, held, wait_started, queued_on, pv_spin_left, pv_state, index, .. } =
            &mut env.threads[t.idx()];
        match steps.front_mut().expect("checked above") {
            &mut Step::Run { ns, func } => {
                if self.ws.is_some() && func == KernelFn::User {
                    // A Tascell worker polls for task requests at every recursive call.
                    if let Some(instead) = self.ws_poll(*index as usize, step_remaining.unwrap_or(ns)) {
                        steps.pop_front();
                        *step_remaining = None;
                        for s in instead.into_iter().rev() {
                            steps.push_front(s);
                        }
                        return None;
                    }
                }
                let left = *step_remaining.get_or_insert(ns);
                if left == 0 {
                    steps.pop_front();
                    *step_remaining = None;
                    return None;
                }
                let kind = if func == KernelFn::User { TimeKind::User } else { TimeKind::Kernel };
                self.vcpus[i].func = func;
                Some(Next::Run { kind, work: left })
            }
            front @ Step::RunDist { .. } => {
                let Step::RunDist { dist, func } = &*front else { unreachable!() };
                let (ns, func) = (dist.sample(rng), *func);
                *front = Step::Run { ns, func };
                if self.zero_time_steps >= MAX_ZERO_TIME_STEPS {
                    // This pass is the one that stops the run: let `run` count it.
                    return None;
                }
                // Run the drawn step in this pass, counted as the instantaneous pass that drawing
                // was: between the two, `run` would find nothing new to check (drawing pokes
                // no one, wakes no one, keeps the thread), so this is its next pass made at once
                // (one interpreter pass fewer per drawn duration).
                self.zero_time_steps += 1;
                self.run_front_step(env, i, t, entry)
            }
            &mut Step::Lock { lock, .. } => {
                let queued = *queued_on == Some(lock);
                // Taking the lock or a ticket stores to its word; a lock handed over at release
                // (a ticket's turn) was the releaser's store, and a queued waiter only reloads.
                let handed = env.locks[lock.idx()].holder == Some(t);
                match env.locks[lock.idx()].try_acquire(t, queued) {
                    Acquire::Got => {
                        *queued_on = None;
                        steps.pop_front();
                        held.push(lock);
                        // Only contended acquisitions: uncontended ones would bury the tail in zeros.
                        if let Some(started) = wait_started.take() {
                            self.stats.spin_wait.record(now - started);
                            self.stats.record_spin_wait(lock, now - started);
                        }
                        *pv_spin_left = None;
                        *pv_state = super::thread::PvState::Running;
                        if !handed {
                            self.note_lock_store(env, t, lock);
                        }
                        None
                    }
                    Acquire::Spin => {
                        wait_started.get_or_insert(now);
                        *queued_on = Some(lock);
                        if !queued && self.note_lock_store(env, t, lock) {
                            // Hand the ticket's stores to the host first; the next pass spins.
                            return None;
                        }
                        // Spinning is in the lock's slow path (`_raw_spin_lock` ->
                        // `queued_spin_lock_slowpath` / the ticket loop; a PV qspinlock's
                        // `__pv_queued_spin_lock_slowpath`), whatever function took it: what a symbol
                        // lookup of the spinner's instruction pointer finds (seed 002).
                        let pv = env.locks[lock.idx()].kind == SpinlockKind::PvQueued && self.topology.is_none();
                        self.vcpus[i].func = if pv { KernelFn::PvQueuedSpinLockSlowpath } else { KernelFn::RawSpinLock };
                        if pv {
                            // Xen's PV slow path (bare metal has none: it spins as natively).
                            return Some(self.pv_wait(env, i, t, lock));
                        }
                        Some(Next::Spin { kind: TimeKind::Spin, budget: None })
                    }
                }
            }
            &mut Step::UserLock { lock } => match env.locks[lock.idx()].try_acquire(t, *queued_on == Some(lock)) {
                Acquire::Got => {
                    *queued_on = None;
                    steps.pop_front();
                    if let Some(started) = wait_started.take() {
                        // By lock only (its class `user-spinlock-k`): the kernel's `spin_wait`
                        // histogram is of kernel locks.
                        self.stats.record_spin_wait(lock, now - started);
                    }
                    None
                }
                Acquire::Spin => {
                    // The PAUSE loop on the lock word, in user mode: user-spin time, which an
                    // Intel host's PLE never sees (`[host.ple] cpl`).
                    wait_started.get_or_insert(now);
                    *queued_on = Some(lock);
                    self.vcpus[i].func = KernelFn::User;
                    Some(Next::Spin { kind: TimeKind::UserSpin, budget: None })
                }
            },
            &mut Step::UserUnlock { lock } => {
                if env.locks[lock.idx()].holder != Some(t) {
                    let index = *index;
                    return Some(program_error(now, format!("thread {index} unlocks user spinlock {lock}, which it does not hold")));
                }
                steps.pop_front();
                self.release(env, t, lock);
                None
            }
            &mut Step::Unlock { lock } => {
                steps.pop_front();
                held.retain(|l| *l != lock);
                if held.is_empty() && env.pv[self.vcpus[i].id.idx()].preempt_pending {
                    // Left the last critical section with a deferred preemption pending: give
                    // the pCPU back once the release (and the pokes it makes) is done.
                    steps.push_front(Step::Do(Action::DelayedPreemptYield));
                }
                self.release(env, t, lock);
                self.note_lock_store(env, t, lock);
                None
            }
            Step::SendIpis { targets, func, kind, .. } => {
                let func = *func;
                let native = self.topology.is_some();
                if step_remaining.is_none() && entry != Entry::AfterExit && !native {
                    // The first APIC access of the send exits: the hypervisor sees it coming
                    // (on bare metal there is nothing to exit to).
                    return Some(Next::Exit(Exit::IpiSendStarted));
                }
                // One APIC ICR write (a VMEXIT) per target without APICv (seed 000 section 4.2);
                // with the 6.x guest's PV IPIs one KVM_HC_SEND_IPI per cluster (guest/pv_guest.rs).
                // Saturating, as the handler's work above.
                let exits = if self.config.pv.pv_ipi { self.pv_ipi_exits(*kind, targets) } else { targets.len() };
                let cost = env.costs.ipi_send.saturating_mul(exits.max(1) as u64);
                let left = *step_remaining.get_or_insert(cost);
                if left == 0 {
                    // Only reachable if the exit time was already spent: deliver now.
                    return Some(Next::Complete);
                }
                self.vcpus[i].func = func;
                // In a VM the ICR writes are exits (overhead); on bare metal plain kernel stores.
                let kind = if native { TimeKind::Kernel } else { TimeKind::Overhead };
                Some(Next::Run { kind, work: left })
            }
            &mut Step::Kick { .. } => {
                // EVTCHNOP_send: one hypercall exit (`ipi_send`); its end carries the kick out.
                let left = *step_remaining.get_or_insert(env.costs.ipi_send);
                if left == 0 {
                    return Some(Next::Complete);
                }
                // The unlock's slow path (`__pv_queued_spin_unlock` -> `pv_kick`), which a symbol
                // lookup reads as `__raw_spin_unlock` (seed 002 Table 3).
                self.vcpus[i].func = KernelFn::RawSpinUnlock;
                Some(Next::Run { kind: TimeKind::Overhead, work: left })
            }
            &mut Step::WaitAcks { shootdown } => {
                if let Some(latency) = self.finish_shootdown(shootdown, now) {
                    self.stats.tlb_shootdown.record(latency);
                    steps.pop_front();
                    None
                } else {
                    // Waiting for acknowledgements is `csd_lock_wait` inside
                    // `smp_call_function_many` (kernel/smp.c), where seed 002 section 3.1 finds
                    // dedup's yields.
                    self.vcpus[i].func = KernelFn::SmpCallFunctionMany;
                    Some(Next::Spin { kind: TimeKind::TlbWait, budget: None })
                }
            }
            &mut Step::UserSpin { cond, budget } => {
                // An optimistic mmap_sem spinner's owner is another thread: read it before
                // borrowing this one's state again.
                let mm_owner_gone = cond == SpinCond::MmSemOwner && !self.mm_sem_owner_on_cpu(env.threads, env.pv);
                let Thread { steps, spin_budget_left, .. } = &mut env.threads[t.idx()];
                if self.spin_done(cond, mm_owner_gone) {
                    steps.pop_front();
                    *spin_budget_left = None;
                    return None;
                }
                let left = spin_budget_left.or(budget);
                if left == Some(0) {
                    steps.pop_front();
                    *spin_budget_left = None;
                    if !matches!(cond, SpinCond::BarrierGeneration { .. }) {
                        // (A barrier's blocker leaves its list in barrier_block_unless_open.)
                        if let Some(spinners) = self.spinners(cond) {
                            spinners.retain(|s| *s != t);
                        }
                    }
                    return None;
                }
                *spin_budget_left = left;
                if let Some(spinners) = self.spinners(cond) {
                    if !spinners.contains(&t) {
                        spinners.push(t);
                    }
                }
                if cond == SpinCond::MmSemOwner {
                    self.vcpus[i].func = KernelFn::RwsemSpinOnOwner;
                    return Some(Next::Spin { kind: TimeKind::Spin, budget: left });
                }
                self.vcpus[i].func = KernelFn::User;
                Some(Next::Spin { kind: TimeKind::UserSpin, budget: left })
            }
            Step::Do(_) => {
                // Taken off before it runs (its action may queue steps in front), then read in
                // place: the popped step is the only copy.
                let step = steps.pop_front();
                let Some(Step::Do(action)) = &step else { unreachable!() };
                self.do_action(env, i, t, action)
            }
        }
    }

    /// Whether what a user-space spin polls has come true.
    /// (`mm_owner_gone`: for `MmSemOwner`, read by the caller: the owner released mmap_sem or
    /// is no longer on a CPU.)
    fn spin_done(&self, cond: SpinCond, mm_owner_gone: bool) -> bool {
        match cond {
            SpinCond::MmSemOwner => mm_owner_gone,
            SpinCond::BarrierGeneration { barrier, generation } => self.objects.barriers[barrier].generation != generation,
            SpinCond::ParsecPhase { barrier, arrival } => self.objects.parsec[barrier].arrival == arrival,
            SpinCond::MutexFree(m) => self.objects.mutexes[m] == super::objects::MutexWord::Free,
            SpinCond::WsBackoff { worker } => self.ws_backoff_over(worker),
        }
    }

    /// The threads spinning on what `cond` polls (poked when it changes); none for a work-stealing
    /// back-off, whose runtime pokes its workers itself (guest/worksteal.rs).
    fn spinners(&mut self, cond: SpinCond) -> Option<&mut Vec<ThreadId>> {
        match cond {
            SpinCond::BarrierGeneration { barrier, .. } => Some(&mut self.objects.barriers[barrier].spinners),
            SpinCond::ParsecPhase { barrier, .. } => Some(&mut self.objects.parsec[barrier].spinners),
            SpinCond::MutexFree(m) => {
                let lists = &mut self.objects.mutex_spinners;
                if lists.len() <= m {
                    lists.resize_with(m + 1, Vec::new);
                }
                Some(&mut lists[m])
            }
            SpinCond::WsBackoff { .. } => None,
            SpinCond::MmSemOwner => Some(&mut self.objects.mm_sem.spinners),
        }
    }

    /// Release spinlock `lock` held by `t`: a ticket lock passes to the next ticket, a
    /// test-and-set lock to a spinner whose vCPU runs it (a vCPU running a thread is executing
    /// exactly when its PV area does not say preempted: `vcpu_is_preempted`). The new holder,
    /// if spinning, is poked.
    fn release(&mut self, env: &mut GuestEnv, t: ThreadId, lock: LockId) {
        let (threads, pv) = (&*env.threads, &*env.pv);
        let first = self.vcpus[0].id.0;
        let vcpus = &self.vcpus;
        let next = env.locks[lock.idx()].release(t, |w| {
            let wv = threads[w.idx()].vcpu;
            !pv[wv.idx()].preempted && vcpus[(wv.0 - first) as usize].current == Some(w)
        });
        if let Some(n) = next {
            // Handed over: out of the queue.
            env.threads[n.idx()].queued_on = None;
            if let Some(log) = self.handoffs.as_mut() {
                let lock = env.locks[lock.idx()].class.clone();
                log.release(env.now, HandOffKind::Spinlock, lock, t, env.threads[t.idx()].vcpu, n);
            }
            self.poke(env.threads, n);
        }
        if env.locks[lock.idx()].kind == SpinlockKind::PvQueued && self.topology.is_none() {
            self.pv_unlock(env, t, lock, next);
        }
    }

    /// The next thing the guest queued for the host to hear (in this order: a poke, a store to a
    /// polled lock word, a poll flag set), each handed over as its own `Next`.
    fn queued_notice(&mut self) -> Option<Next> {
        if let Some(u) = self.pokes.pop_front() {
            return Some(Next::Poke(u));
        }
        if let Some(u) = self.stores.pop_front() {
            return Some(Next::Store(u));
        }
        self.polls.pop_front().map(Next::Poll)
    }

    /// Thread `t` stored to kernel spinlock `lock`'s word (a ticket taken or the lock: xadd,
    /// `lock decb`; a release): each spinner still waiting on it, running on its vCPU, reloads a
    /// line that `t`'s CPU now owns, which the host may see break its PAUSE loop (`Next::Store`,
    /// `PLE_Gap`). Only while the host asks (`watch_stores`), and only for the locks whose
    /// waiters all poll the word (ticket and test-and-set; a queued lock's waiters poll their own
    /// MCS nodes).
    /// True if a store was queued.
    fn note_lock_store(&mut self, env: &GuestEnv, t: ThreadId, lock: LockId) -> bool {
        if !self.watch_stores {
            return false;
        }
        let l = &env.locks[lock.idx()];
        if !matches!(l.kind, SpinlockKind::Ticket | SpinlockKind::TestAndSet) {
            return false;
        }
        let before = self.stores.len();
        for &w in l.waiters.iter().filter(|&&w| w != t) {
            if let Some(u) = self.poke_target(env.threads, w) {
                self.stores.push_back(u);
            }
        }
        self.stores.len() > before
    }

    /// The vCPU to poke so that thread `t` re-checks what it spins on: its vCPU, if `t` is the
    /// thread that vCPU runs (a queued or sleeping thread re-checks when it runs anyway).
    fn poke_target(&self, threads: &[Thread], t: ThreadId) -> Option<VcpuId> {
        let u = threads[t.idx()].vcpu;
        (self.vcpus[self.index_of(u)].current == Some(t)).then_some(u)
    }

    /// Thread `t` may stop spinning (what it polls changed): queue its vCPU for the host
    /// (`Next::Poke`, handed out by `run` in order).
    pub(super) fn poke(&mut self, threads: &[Thread], t: ThreadId) {
        if let Some(u) = self.poke_target(threads, t) {
            self.pokes.push_back(u);
        }
    }

    /// What the spinners in the list `list` picks out of the sync objects poll changed (a
    /// barrier opened, a lock released): poke each, and leave the list empty with its buffer
    /// kept for the next spinners (no list grown again at every release).
    pub(super) fn poke_spinners(&mut self, threads: &[Thread], list: impl Fn(&mut SyncObjects) -> &mut Vec<ThreadId>) {
        let mut spinners = std::mem::take(list(&mut self.objects));
        for &s in &spinners {
            self.poke(threads, s);
        }
        spinners.clear();
        *list(&mut self.objects) = spinners;
    }

    /// Thread `t` on vCPU `i` has no step left: fetch its next user op and queue that op's steps
    /// (`fetch_op`); `Some` when the host must act (the thread exited and left its VM deadlocked).
    fn next_op(&mut self, env: &mut GuestEnv, i: usize, t: ThreadId) -> Option<Next> {
        let finished = self.finished_at.is_some();
        if !self.fetch_op(env, t, finished) {
            self.exit_current(env.threads, i);
            return self.deadlock(env.threads, env.now);
        }
        None
    }

    /// Run thread `t`'s instantaneous action on vCPU `i`; `Some` when the host must act.
    fn do_action(&mut self, env: &mut GuestEnv, i: usize, t: ThreadId, action: &Action) -> Option<Next> {
        let v = self.vcpus[i].id;
        match *action {
            Action::MutexLock(m) => self.mutex_lock(env, t, m),
            Action::MutexRetry(m) => self.mutex_retry(env, t, m),
            Action::MutexUnlock(m) => {
                if let Err(message) = self.mutex_unlock(env, t, m) {
                    return Some(program_error(env.now, message));
                }
            }
            Action::BarrierArrive { barrier, wait } => self.barrier_arrive(env, t, barrier, wait),
            Action::BarrierBlockUnlessOpen { barrier, generation } => self.barrier_block_unless_open(env, t, barrier, generation),
            Action::CondWait { cond, mutex } => {
                if let Err(message) = self.cond_wait(env, t, cond, mutex) {
                    return Some(program_error(env.now, message));
                }
            }
            Action::CondSignal { cond, all } => self.cond_signal(env, t, cond, all),
            Action::MutexCondLock(m) => self.mutex_cond_lock(env, t, m),
            Action::MutexTrylock(m) => self.mutex_trylock_spin(env, t, m),
            Action::ParsecBarrier { barrier, wait } => self.parsec_barrier(env, t, barrier, wait),
            Action::ParsecArrive { barrier, wait } => self.parsec_arrive(env, t, barrier, wait),
            Action::ParsecRegister { barrier, wait } => self.parsec_register(env, t, barrier, wait),
            Action::ParsecWaitPhase { barrier, arrival } => self.parsec_wait_phase(env, t, barrier, arrival),
            Action::ParsecDepart(barrier) => self.parsec_depart(env, t, barrier),
            Action::QueuePut(q) => self.queue_put(env, t, q),
            Action::QueueGet(q) => self.queue_get(env, t, q),
            Action::TakeTicket { dispenser, exit } => {
                let d = &mut self.objects.dispensers[dispenser];
                if d.next < d.total {
                    d.next += 1;
                } else {
                    env.threads[t.idx()].pc = exit as usize;
                }
            }
            Action::ResetTickets { dispenser, count } => {
                let d = &mut self.objects.dispensers[dispenser];
                d.next = 0;
                d.total = count;
            }
            Action::TaskqArrive(k) => {
                let s = &mut self.objects.task_syncs[k];
                s.count += 1;
                if s.count == s.parties {
                    let done = s.tasks_done;
                    self.cond_signal(env, t, done, true);
                }
            }
            Action::TaskqReset(k) => self.objects.task_syncs[k].count = 0,
            Action::TaskqPut(k) => self.objects.task_queues[k].count += 1,
            Action::TaskqPop { queue, work } => self.taskq_pop(env, t, queue, work),
            Action::TaskqScan { queue, from, work, repeat } => self.taskq_scan(env, t, queue, from, work, repeat),
            Action::TaskqTake { queue, src, work, repeat } => self.taskq_take(env, t, queue, src, work, repeat),
            Action::TaskqEndCheck(k) => {
                let s = &mut self.objects.task_syncs[k];
                s.count += 1;
                if s.count != s.parties {
                    let (cond, mutex) = (s.tasks_done, s.mutex);
                    env.push_front(t, Step::Do(Action::CondWait { cond, mutex }));
                }
            }
            Action::FutexQueue { key, expect } => self.futex_queue(env, t, key, expect),
            Action::FutexSleep => {
                if let Some(key) = self.futex_sleep_key(env, t) {
                    self.block_current(env.threads, i, key);
                    self.stats.futex_waits += 1;
                    return self.deadlock(env.threads, env.now);
                }
            }
            Action::FutexWake { key, n } => {
                self.stats.futex_wakes += 1;
                self.futex_wake(env, v, t, key, n);
            }
            Action::FutexRequeue { from, to, expect, unlocks } => {
                self.stats.futex_wakes += 1;
                self.futex_requeue(env, v, t, from, to, expect, unlocks);
            }
            Action::DelayedPreemptYield => {
                if env.pv[v.idx()].preempt_pending {
                    return Some(Next::Exit(Exit::Hypercall(Hypercall::PreemptAck { moved: 0 })));
                }
            }
            Action::YieldIfStolen { shootdown } => {
                // xen_smp_send_call_function_ipi: `if (xen_vcpu_stolen(cpu)) { SCHEDOP_yield; break; }`.
                if self.shootdowns[shootdown as usize].targets.iter().any(|u| env.pv[u.idx()].runnable) {
                    return Some(Next::Exit(Exit::Hypercall(Hypercall::Yield)));
                }
            }
            Action::PvSchedYield { shootdown } => return self.pv_sched_yield(env, shootdown),
            Action::TlbShootdown { pages } => {
                if self.tlb_shootdown(env, v, t, pages) {
                    self.stats.tlb_shootdowns += 1;
                }
            }
            Action::MmSem(op) => self.mm_sem_action(env, i, t, op),
            Action::Ws(action) => self.ws_action(env, t, action),
            Action::SockRecv { len } => return self.sock_recv(env, i, t, len),
            Action::SetAffinity(k) => return self.set_affinity_action(env, i, t, k),
            Action::Progress => {
                self.stats.progress += 1;
                if self.finished_at.is_none() && self.iterations.is_some_and(|n| self.stats.progress >= n) {
                    self.finished_at = Some(env.now);
                    return Some(Next::TargetReached);
                }
            }
        }
        None
    }

    /// `Action::SetAffinity(k)` of thread `t` on vCPU `i`. Moved off this vCPU, the thread's
    /// destination gets its reschedule IPI from here (the stopper's `__migrate_task` ->
    /// `check_preempt_curr` on the destination's rq), sent as the tick's balancing IPI is,
    /// without an IPI-send step of its own. Out of `do_action`'s body: rare, and kept from the
    /// interpreter's hot loop (docs/speed.md).
    #[cold]
    #[inline(never)]
    fn set_affinity_action(&mut self, env: &mut GuestEnv, i: usize, t: ThreadId, k: usize) -> Option<Next> {
        let mask = self.objects.cpu_masks[k].clone();
        let to = self.set_affinity(env.threads, i, t, mask)?;
        let mut targets = self.scratch.ipi_targets();
        targets.push(to);
        Some(Next::Exit(Exit::IpiSend { kind: IpiKind::Resched, targets, shootdown: 0, pages: 0 }))
    }

    /// After a thread slept or exited: every live thread of an unfinished VM sleeping is a
    /// deadlock (only the VM's own threads could wake them), reported as `Next::Stop`.
    fn deadlock(&self, threads: &[Thread], now: Nanos) -> Option<Next> {
        // A thread asleep on the socket is woken by the device, not by another thread.
        (self.all_blocked() && self.finished_at.is_none() && !self.net_can_wake())
            .then(|| Next::Stop(Box::new(self.deadlock_report(threads, now))))
    }

    /// The host paused vCPU `i`'s thread activity after `elapsed` ns in which `work` work-ns got
    /// done (`Sim::settle`): the current step keeps what is left of it. A kernel spin has nothing
    /// to keep; a user spin's budget is time.
    #[inline]
    pub fn executed(&self, threads: &mut [Thread], i: usize, kind: TimeKind, elapsed: Nanos, work: impl FnOnce() -> Nanos) {
        let Some(t) = self.vcpus[i].current else { return };
        let th = &mut threads[t.idx()];
        match kind {
            TimeKind::UserSpin => {
                if let Some(left) = th.spin_budget_left.as_mut() {
                    *left = left.saturating_sub(elapsed);
                }
            }
            TimeKind::Spin => {
                // A PV qspinlock waiter's SPIN_THRESHOLD counts loops, i.e. time spinning.
                if let Some(left) = th.pv_spin_left.as_mut() {
                    *left = left.saturating_sub(elapsed);
                }
            }
            TimeKind::TlbWait => {}
            _ => {
                if let Some(r) = th.step_remaining.as_mut() {
                    *r = r.saturating_sub(work());
                }
            }
        }
    }

    /// The work left of vCPU `i`'s current thread step, if one is in progress (the host re-times
    /// it when the vCPU's speed changes: `sim/speed_change.rs`).
    #[inline]
    pub fn work_left(&self, threads: &[Thread], i: usize) -> Option<Nanos> {
        self.vcpus[i].current.and_then(|t| threads[t.idx()].step_remaining)
    }

    /// The timed step the host ran for vCPU `i` ended (its work is done): an IPI send's APIC
    /// writes complete with the `IpiSend` exit that delivers them; any other step is over.
    ///
    /// A finished `Run` step is taken off here, where `run_front_step` would take it off first
    /// thing when the host enters the vCPU again (which it does at once: `Sim::on_activity_done`),
    /// and counted as the instantaneous step that visit was, so the runaway count stays what it
    /// would be (one interpreter pass fewer per timed step). Not when that visit does more
    /// than take it off: a Tascell worker polls for task requests at every `Run` step
    /// (`ws_poll`), and the visit that would exceed `MAX_ZERO_TIME_STEPS` stops the run.
    pub fn step_done(&mut self, threads: &mut [Thread], i: usize) -> Option<Exit> {
        let Some(t) = self.vcpus[i].current else {
            // An idle poll's limit ran out (haltpoll): the next entry halts.
            debug_assert!(self.vcpus[i].haltpoll.polling_since.is_some(), "a thread activity without a thread is an idle poll");
            return None;
        };
        let th = &mut threads[t.idx()];
        if let Some(Step::Run { .. }) = th.steps.front() {
            if th.step_remaining == Some(0) && self.ws.is_none() && self.zero_time_steps < MAX_ZERO_TIME_STEPS {
                th.steps.pop_front();
                th.step_remaining = None;
                self.zero_time_steps += 1;
            }
            return None;
        }
        if let Some(&Step::Kick { vcpu }) = th.steps.front() {
            th.steps.pop_front();
            th.step_remaining = None;
            return Some(Exit::Hypercall(self.kick_hypercall(vcpu)));
        }
        if !matches!(th.steps.front(), Some(Step::SendIpis { .. })) {
            return None;
        }
        let Some(Step::SendIpis { kind, targets, shootdown, pages, .. }) = th.steps.pop_front() else { unreachable!() };
        th.step_remaining = None;
        Some(Exit::IpiSend { kind, targets, shootdown, pages })
    }

    /// `Upcall::Interrupt`: the virtual interrupt becomes pending on vCPU `i` (the local APIC's
    /// IRR); `run` takes it before thread code.
    #[inline]
    pub fn interrupt(&mut self, i: usize, ipi: Ipi) {
        self.vcpus[i].pending_ipis.push_back(ipi);
    }

    /// The handler the host ran for vCPU `i` ended: it EOIs (the host carries out `Exit::Eoi`,
    /// then `interrupt_return`).
    pub fn handler_done(&mut self, i: usize) -> Ipi {
        self.vcpus[i].irq.take().expect("an IRQ activity has its IPI")
    }

    /// After the EOI of `ipi`'s handler on vCPU `i`. A reschedule IPI (`scheduler_ipi`) needs
    /// nothing more: `run` picks up the queued thread. A TLB IPI (`flush_tlb_func`, Linux 3.2):
    /// an idle vCPU in lazy-TLB mode leaves the mm (`leave_mm`), and the acknowledgement goes to
    /// the initiator; the last one lets it stop waiting (returns its vCPU to poke).
    pub fn interrupt_return(&mut self, threads: &[Thread], i: usize, ipi: Ipi) -> Option<VcpuId> {
        match ipi.kind {
            IpiKind::Resched => None,
            IpiKind::TlbShootdown => {
                let gv = &mut self.vcpus[i];
                if gv.current.is_none() {
                    gv.mm_loaded = false;
                }
                let initiator = self.ack_shootdown(ipi.shootdown)?;
                self.poke_target(threads, initiator)
            }
        }
    }

    /// Publish vCPU `i`'s delayed-preemption lock mark (Uhlig et al. VM'04; seed 003 slide 4:
    /// "Guest OS notifies the hypervisor before acquiring a spin-lock"): its current thread
    /// holds a kernel spinlock or is acquiring one (spinning for it: the mark is set before the
    /// acquisition). The host asks just before it consults the `delay-preempt` overlay, which is
    /// when the real flag is read (sim/mechanisms/preemption_overlay/delay_preempt.rs).
    pub fn publish_lock_mark(&self, threads: &[Thread], i: usize, pv: &mut [PvArea]) {
        let gv = &self.vcpus[i];
        pv[gv.id.idx()].lock_mark = gv.current.is_some_and(|t| {
            let th = &threads[t.idx()];
            !th.held.is_empty() || matches!(th.steps.front(), Some(Step::Lock { .. }))
        });
    }

    /// The spinlocks vCPU `i`'s current thread holds, and whether it waits in a ticket lock's
    /// queue (its front step takes that lock and it is a waiter: only a ticket lock stalls the
    /// waiters behind a descheduled one), for the host's lock-holder and lock-waiter preemption
    /// counts; `None` when it runs no thread.
    pub fn lock_state<'a>(&self, threads: &'a [Thread], locks: &[Spinlock], i: usize) -> Option<(&'a [LockId], bool)> {
        let t = self.vcpus[i].current?;
        let th = &threads[t.idx()];
        let ticket_waiter = match th.steps.front() {
            Some(Step::Lock { lock, .. }) => {
                let l = &locks[lock.idx()];
                matches!(l.kind, SpinlockKind::Ticket | SpinlockKind::PvQueued) && th.queued_on == Some(*lock)
            }
            _ => false,
        };
        Some((&th.held, ticket_waiter))
    }

    /// Check-mode invariants of this guest: every thread on a vCPU (current or queued) records
    /// that vCPU (`seen` counts, per host-wide thread id, the vCPUs each is on);
    /// a vCPU running a thread is preempted in its PV area exactly when the host does not run it
    /// (`running`), which is what `release` relies on; the run masks (`RunMasks`) match the
    /// vCPUs' run queues and current threads.
    pub fn check(&self, threads: &[Thread], pv: &[PvArea], running: impl Fn(VcpuId) -> bool, seen: &mut [u8]) -> Result<(), String> {
        if let Some(i) = self.run_masks.mismatch(&self.vcpus) {
            let gv = &self.vcpus[i];
            return Err(format!(
                "vCPU {} has {} thread(s) queued and {} but the guest's run masks say queued = {}, idle = {}",
                gv.id,
                gv.runqueue.len(),
                if gv.current.is_some() { "a current thread" } else { "none current" },
                self.run_masks.queued.contains(i),
                self.run_masks.idle.contains(i)
            ));
        }
        for gv in &self.vcpus {
            let v = gv.id;
            for t in gv.current.iter().chain(gv.runqueue.iter()) {
                seen[t.idx()] += 1;
                if threads[t.idx()].vcpu != v {
                    return Err(format!("thread {t} sits on vCPU {v} but records vCPU {}", threads[t.idx()].vcpu));
                }
                if !threads[t.idx()].may_run_on(self.index_of(v)) {
                    return Err(format!("thread {t} sits on vCPU {v}, outside its CPU affinity {:?}", threads[t.idx()].cpus));
                }
            }
            // A vCPU blocked in a PV spinlock's SCHEDOP_poll is neither running nor preempted.
            let poll_blocked = gv.pv_polled && !running(v) && !pv[v.idx()].preempted;
            if gv.current.is_some() && pv[v.idx()].preempted == running(v) && !poll_blocked {
                return Err(format!(
                    "vCPU {v} runs a thread and is {} but its PV area says preempted = {}",
                    if running(v) { "running" } else { "not running" },
                    pv[v.idx()].preempted
                ));
            }
        }
        Ok(())
    }
}

/// The run stops on a program error (an unlock of a mutex the thread does not hold...).
#[cold]
#[inline(never)]
fn program_error(now: Nanos, message: String) -> Next {
    Next::Stop(Box::new(SimError::Program { time_ns: now, message }))
}
