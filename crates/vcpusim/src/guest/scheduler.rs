//! The guest kernel's thread scheduler: per-vCPU run queues, wake placement, blocking, idle
//! balancing and tick-driven time slicing (a simplified Linux CFS as the guest sees it: it
//! does not know whether a vCPU is preempted).
//!
//! The scheduler's decisions are `GuestKernel` methods over the VM's own state and its thread
//! records (the host-wide `Sim::threads` table, passed in); the `impl Sim` wrappers below add
//! only what crosses into the host: the tick event, the VM's counters, stopping the run on a
//! deadlock, and the exits (a reschedule IPI, a re-dispatch).

use super::kernel::GuestKernel;
use super::thread::{FutexKey, Thread, ThreadState};
use crate::ids::{ThreadId, VcpuId};
use crate::sim::state::{Activity, Event, Sim};
use crate::time::Nanos;
use crate::vmexit::{Exit, IpiKind, KernelFn};
use crate::SimError;

impl GuestKernel {
    /// The index in this VM of its vCPU `v` (a VM's vCPU ids are consecutive).
    #[inline]
    pub fn index_of(&self, v: VcpuId) -> usize {
        let i = (v.0 - self.vcpus[0].id.0) as usize;
        debug_assert_eq!(self.vcpus[i].id, v, "vCPU {v} is not in VM {}", self.vm);
        i
    }

    /// Pick the next thread for idle vCPU `i`: its own queue first, else pull one queued thread
    /// from the sibling with the longest queue (newidle balancing). The thread becomes current.
    pub fn pick_next(&mut self, threads: &mut [Thread], i: usize) -> Option<ThreadId> {
        let t = match self.vcpus[i].runqueue.pop_front() {
            Some(t) => t,
            None => {
                let vcpus = &self.vcpus;
                let busiest = (0..vcpus.len())
                    .filter(|&u| u != i && !vcpus[u].runqueue.is_empty())
                    .max_by_key(|&u| (vcpus[u].runqueue.len(), std::cmp::Reverse(vcpus[u].id.0)))?;
                self.vcpus[busiest].runqueue.pop_back()?
            }
        };
        let gv = &mut self.vcpus[i];
        gv.current = Some(t);
        gv.mm_loaded = true;
        threads[t.idx()].vcpu = gv.id;
        Some(t)
    }

    /// Where a woken thread goes (an index): its previous vCPU if idle, else the next idle
    /// sibling, else its previous vCPU (select_task_rq_fair's wake-affine /
    /// select_idle_sibling, simplified).
    fn wake_target(&mut self, prev: VcpuId) -> usize {
        let prev = self.index_of(prev);
        if self.vcpus[prev].idle() {
            return prev;
        }
        let n = self.vcpus.len();
        let start = self.wake_cursor;
        for k in 0..n {
            let u = (start + k) % n;
            if self.vcpus[u].idle() {
                self.wake_cursor = (start + k + 1) % n;
                return u;
            }
        }
        prev
    }

    /// Make blocked thread `t` runnable, woken by code running on vCPU `waker`. Returns the vCPU
    /// that needs a reschedule IPI (a remote one; ttwu_queue in Linux 3.2 always sends it).
    pub fn wake_thread(&mut self, threads: &mut [Thread], waker: VcpuId, t: ThreadId) -> Option<VcpuId> {
        let th = &mut threads[t.idx()];
        if !matches!(th.state, ThreadState::Blocked(_)) {
            // Woken between queuing on the futex and sleeping: it just doesn't sleep.
            return None;
        }
        th.state = ThreadState::Ready;
        self.blocked_threads -= 1;
        let target = self.wake_target(th.vcpu);
        let target_id = self.vcpus[target].id;
        th.vcpu = target_id;
        self.vcpus[target].runqueue.push_back(t);
        (target_id != waker).then_some(target_id)
    }

    /// The running thread of vCPU `i` sleeps on `key` (it leaves the vCPU); returns it.
    pub fn block_current(&mut self, threads: &mut [Thread], i: usize, key: FutexKey) -> ThreadId {
        let t = self.vcpus[i].current.take().expect("a blocking vCPU runs a thread");
        threads[t.idx()].state = ThreadState::Blocked(key);
        self.blocked_threads += 1;
        t
    }

    /// The running thread of vCPU `i` ended; returns it.
    pub fn exit_current(&mut self, threads: &mut [Thread], i: usize) -> ThreadId {
        let t = self.vcpus[i].current.take().expect("an exiting vCPU runs a thread");
        threads[t.idx()].state = ThreadState::Exited;
        self.live_threads -= 1;
        t
    }

    /// Every live thread sleeps (and only the VM's own threads could wake them).
    #[inline]
    pub fn all_blocked(&self) -> bool {
        self.live_threads > 0 && self.blocked_threads == self.live_threads
    }

    /// What every sleeping thread of this VM waits on, as a deadlock error at `now`.
    pub fn deadlock_report(&self, threads: &[Thread], now: Nanos) -> SimError {
        let waits = self
            .threads
            .iter()
            .filter_map(|t| match threads[t.idx()].state {
                ThreadState::Blocked(key) => Some(format!(
                    "VM {:?} thread {} sleeps in futex_wait on {}",
                    self.name,
                    threads[t.idx()].index,
                    match key {
                        FutexKey::Mutex(m) => format!("mutex {m}"),
                        FutexKey::Barrier(b) => format!(
                            "barrier {b} ({} of {} arrived)",
                            self.objects.barriers[b].arrived, self.objects.barriers[b].parties
                        ),
                        FutexKey::Cond(c) => format!("condition variable {c}"),
                        FutexKey::MmSem => "the mm's mmap_sem (down_write)".to_string(),
                    }
                )),
                _ => None,
            })
            .collect();
        SimError::Deadlock { time_ns: now, waits }
    }

    /// Arm the tick of vCPU `i` when it has threads waiting behind the current one; returns the
    /// delay to the tick when it was armed now (the host times it).
    #[inline]
    pub fn arm_tick(&mut self, i: usize) -> Option<Nanos> {
        let gv = &mut self.vcpus[i];
        if !gv.tick_armed && !gv.runqueue.is_empty() {
            gv.tick_armed = true;
            Some(self.config.tick)
        } else {
            None
        }
    }

    /// Periodic balancing at vCPU `i`'s tick: hand one queued thread to an idle sibling;
    /// returns that sibling (it needs a reschedule IPI).
    pub fn tick_balance(&mut self, threads: &mut [Thread], i: usize) -> Option<VcpuId> {
        let u = self.vcpus.iter().enumerate().position(|(k, g)| k != i && g.idle())?;
        let t = self.vcpus[i].runqueue.pop_back()?;
        let to = self.vcpus[u].id;
        self.vcpus[u].runqueue.push_back(t);
        threads[t.idx()].vcpu = to;
        Some(to)
    }

    /// Round-robin at vCPU `i`'s tick: whether its current thread is at a preemptible point
    /// (user mode, no spinlock held) with another thread queued behind it. `in_thread` says the
    /// vCPU is executing thread code (not a handler).
    pub fn tick_preemptible(&self, threads: &[Thread], i: usize, in_thread: bool) -> bool {
        let gv = &self.vcpus[i];
        gv.current.is_some_and(|cur| {
            threads[cur.idx()].held.is_empty() && in_thread && gv.func == KernelFn::User && !gv.runqueue.is_empty()
        })
    }

    /// Put vCPU `i`'s current thread at the back of its run queue.
    pub fn requeue_current(&mut self, i: usize) {
        let gv = &mut self.vcpus[i];
        let cur = gv.current.take().expect("a preempted thread was current");
        gv.runqueue.push_back(cur);
    }
}

impl Sim {
    /// Pick the next thread for idle vCPU `v` (`GuestKernel::pick_next`).
    pub fn guest_pick_next(&mut self, v: VcpuId) -> Option<ThreadId> {
        let (vm, i) = self.gslot(v);
        self.guests[vm].pick_next(&mut self.threads, i)
    }

    /// Make blocked thread `t` runnable (`GuestKernel::wake_thread`).
    pub fn guest_wake_thread(&mut self, waker: VcpuId, t: ThreadId) -> Option<VcpuId> {
        let vm = self.threads[t.idx()].vm.idx();
        self.guests[vm].wake_thread(&mut self.threads, waker, t)
    }

    /// The running thread of `v` sleeps on a futex.
    pub fn guest_block_current(&mut self, v: VcpuId, key: FutexKey) {
        let (vm, i) = self.gslot(v);
        self.guests[vm].block_current(&mut self.threads, i, key);
        self.vms[vm].stats.futex_waits += 1;
        self.check_deadlock(vm);
    }

    /// The thread's program ended (or its VM finished).
    pub fn guest_exit_current(&mut self, v: VcpuId) {
        let (vm, i) = self.gslot(v);
        self.guests[vm].exit_current(&mut self.threads, i);
        self.check_deadlock(vm);
    }

    /// Stop the run when every live thread of unfinished VM `vm` sleeps.
    fn check_deadlock(&mut self, vm: usize) {
        if self.guests[vm].all_blocked() && self.vms[vm].finished_at.is_none() {
            self.stop = Some(self.guests[vm].deadlock_report(&self.threads, self.now));
        }
    }

    /// Arm the guest tick on `v` when it has threads waiting behind the current one.
    #[inline]
    pub fn arm_guest_tick(&mut self, v: VcpuId) {
        let (vm, i) = self.gslot(v);
        if let Some(tick) = self.guests[vm].arm_tick(i) {
            self.queue.push(self.now + tick, Event::GuestTick(v));
        }
    }

    /// Guest timer tick (`Upcall::TimerTick`, running vCPUs only): push a queued thread to an
    /// idle sibling and round-robin between the threads of a vCPU (only at a preemptible point:
    /// user mode, no spinlock held).
    pub fn on_guest_tick(&mut self, v: VcpuId) {
        let (vm, i) = self.gslot(v);
        self.guests[vm].vcpus[i].tick_armed = false;
        if self.guests[vm].vcpus[i].runqueue.is_empty() {
            return;
        }
        if let Some(u) = self.guests[vm].tick_balance(&mut self.threads, i) {
            self.send_ipi_from_interrupt(v, u);
        }
        let in_thread = self.vcpus[v.idx()].activity == Activity::Thread;
        if self.guests[vm].tick_preemptible(&self.threads, i, in_thread) {
            self.settle(v);
            self.guests[vm].requeue_current(i);
            self.dispatch(v);
        }
        self.arm_guest_tick(v);
    }

    /// A reschedule IPI sent from interrupt context (tick balancing): delivered like any IPI but
    /// without an IPI-send step on a thread.
    fn send_ipi_from_interrupt(&mut self, from: VcpuId, to: VcpuId) {
        self.on_exit(from, Exit::IpiSend { kind: IpiKind::Resched, targets: vec![to], shootdown: 0, pages: 0 });
    }
}
