//! The guest kernel's thread scheduler: per-vCPU run queues, wake placement, blocking, idle
//! balancing and tick-driven time slicing (a simplified Linux CFS as the guest sees it: it
//! does not know whether a vCPU is preempted).

use super::thread::{FutexKey, ThreadState};
use crate::ids::{ThreadId, VcpuId};
use crate::sim::state::{Activity, Event, Sim};
use crate::vmexit::{Exit, IpiKind};
use crate::SimError;

impl Sim {
    /// Guest view of an idle vCPU: no thread running or queued on it.
    fn guest_idle(&self, v: VcpuId) -> bool {
        self.gvcpu(v).idle()
    }

    /// Pick the next thread for an idle vCPU: its own queue first, else pull one queued thread
    /// from the sibling with the longest queue (newidle balancing).
    pub fn guest_pick_next(&mut self, v: VcpuId) -> Option<ThreadId> {
        let (vm, i) = self.gslot(v);
        let g = &mut self.guests[vm];
        let t = match g.vcpus[i].runqueue.pop_front() {
            Some(t) => t,
            None => {
                let busiest = (0..g.vcpus.len())
                    .filter(|&u| u != i && !g.vcpus[u].runqueue.is_empty())
                    .max_by_key(|&u| (g.vcpus[u].runqueue.len(), std::cmp::Reverse(g.vcpus[u].id.0)))?;
                g.vcpus[busiest].runqueue.pop_back()?
            }
        };
        g.vcpus[i].current = Some(t);
        g.vcpus[i].mm_loaded = true;
        self.threads[t.idx()].vcpu = v;
        Some(t)
    }

    /// Where a woken thread goes: its previous vCPU if idle, else the next idle sibling, else its
    /// previous vCPU (select_task_rq_fair's wake-affine / select_idle_sibling, simplified).
    fn wake_target(&mut self, t: ThreadId) -> VcpuId {
        let prev = self.threads[t.idx()].vcpu;
        if self.guest_idle(prev) {
            return prev;
        }
        let vm = self.threads[t.idx()].vm.idx();
        let n = self.guests[vm].vcpus.len();
        let start = self.guests[vm].wake_cursor;
        for i in 0..n {
            let u = &self.guests[vm].vcpus[(start + i) % n];
            if u.idle() {
                let u = u.id;
                self.guests[vm].wake_cursor = (start + i + 1) % n;
                return u;
            }
        }
        prev
    }

    /// Make blocked thread `t` runnable, woken by code running on vCPU `waker`. Returns the vCPU
    /// that needs a reschedule IPI (a remote one; ttwu_queue in Linux 3.2 always sends it).
    pub fn guest_wake_thread(&mut self, waker: VcpuId, t: ThreadId) -> Option<VcpuId> {
        if !matches!(self.threads[t.idx()].state, ThreadState::Blocked(_)) {
            // Woken between queuing on the futex and sleeping: it just doesn't sleep.
            return None;
        }
        self.threads[t.idx()].state = ThreadState::Ready;
        let vm = self.threads[t.idx()].vm.idx();
        self.guests[vm].blocked_threads -= 1;
        let target = self.wake_target(t);
        self.threads[t.idx()].vcpu = target;
        self.gvcpu_mut(target).runqueue.push_back(t);
        (target != waker).then_some(target)
    }

    /// The running thread of `v` sleeps on a futex.
    pub fn guest_block_current(&mut self, v: VcpuId, key: FutexKey) {
        let t = self.gvcpu_mut(v).current.take().expect("a blocking vCPU runs a thread");
        self.threads[t.idx()].state = ThreadState::Blocked(key);
        let vm = self.threads[t.idx()].vm.idx();
        self.guests[vm].blocked_threads += 1;
        self.vms[vm].stats.futex_waits += 1;
        if self.guests[vm].blocked_threads == self.guests[vm].live_threads && self.vms[vm].finished_at.is_none() {
            self.stop = Some(self.deadlock_report(vm));
        }
    }

    /// Every live thread of VM `vm` sleeps and only its own threads could wake them.
    fn deadlock_report(&self, vm: usize) -> SimError {
        let waits = self.guests[vm]
            .threads
            .iter()
            .filter_map(|t| match self.threads[t.idx()].state {
                ThreadState::Blocked(key) => Some(format!(
                    "VM {:?} thread {} sleeps in futex_wait on {}",
                    self.guests[vm].name,
                    self.threads[t.idx()].index,
                    match key {
                        FutexKey::Mutex(m) => format!("mutex {m}"),
                        FutexKey::Barrier(b) => format!(
                            "barrier {b} ({} of {} arrived)",
                            self.guests[vm].objects.barriers[b].arrived, self.guests[vm].objects.barriers[b].parties
                        ),
                        FutexKey::Cond(c) => format!("condition variable {c}"),
                        FutexKey::MmSem => "the mm's mmap_sem (down_write)".to_string(),
                    }
                )),
                _ => None,
            })
            .collect();
        SimError::Deadlock { time_ns: self.now, waits }
    }

    /// The thread's program ended (or its VM finished).
    pub fn guest_exit_current(&mut self, v: VcpuId) {
        let t = self.gvcpu_mut(v).current.take().expect("an exiting vCPU runs a thread");
        self.threads[t.idx()].state = ThreadState::Exited;
        let vm = self.threads[t.idx()].vm.idx();
        self.guests[vm].live_threads -= 1;
        if self.guests[vm].live_threads > 0 && self.guests[vm].blocked_threads == self.guests[vm].live_threads && self.vms[vm].finished_at.is_none() {
            self.stop = Some(self.deadlock_report(vm));
        }
    }

    /// Arm the guest tick on `v` when it has threads waiting behind the current one.
    pub fn arm_guest_tick(&mut self, v: VcpuId) {
        let (vm, i) = self.gslot(v);
        let g = &mut self.guests[vm];
        let gv = &mut g.vcpus[i];
        if !gv.tick_armed && !gv.runqueue.is_empty() {
            gv.tick_armed = true;
            self.queue.push(self.now + g.config.tick, Event::GuestTick(v));
        }
    }

    /// Guest timer tick (`Upcall::TimerTick`, running vCPUs only): round-robin between the threads of a vCPU (only at a preemptible
    /// point: user mode, no spinlock held) and push a queued thread to an idle sibling.
    pub fn on_guest_tick(&mut self, v: VcpuId) {
        let (vm, i) = self.gslot(v);
        self.guests[vm].vcpus[i].tick_armed = false;
        if self.guests[vm].vcpus[i].runqueue.is_empty() {
            return;
        }
        // Periodic balancing: hand a queued thread to an idle sibling.
        let idle = self.guests[vm].vcpus.iter().position(|u| u.id != v && u.idle());
        if let Some(u) = idle {
            let g = &mut self.guests[vm];
            if let Some(t) = g.vcpus[i].runqueue.pop_back() {
                g.vcpus[u].runqueue.push_back(t);
                let u = g.vcpus[u].id;
                self.threads[t.idx()].vcpu = u;
                self.send_ipi_from_interrupt(v, u);
            }
        }
        if let Some(cur) = self.guests[vm].vcpus[i].current {
            let gv = &self.guests[vm].vcpus[i];
            let preemptible = self.threads[cur.idx()].held.is_empty()
                && self.vcpus[v.idx()].activity == Activity::Thread
                && gv.func == crate::guest::kernel_fn::KernelFn::User
                && !gv.runqueue.is_empty();
            if preemptible {
                self.settle(v);
                let gv = &mut self.guests[vm].vcpus[i];
                gv.current = None;
                gv.runqueue.push_back(cur);
                self.dispatch(v);
            }
        }
        self.arm_guest_tick(v);
    }

    /// A reschedule IPI sent from interrupt context (tick balancing): delivered like any IPI but
    /// without an IPI-send step on a thread.
    fn send_ipi_from_interrupt(&mut self, from: VcpuId, to: VcpuId) {
        self.on_exit(from, Exit::IpiSend { kind: IpiKind::Resched, targets: vec![to], shootdown: 0, pages: 0 });
    }
}
