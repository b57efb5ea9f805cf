//! The guest kernel's thread scheduler: per-vCPU run queues, wake placement, blocking, idle
//! balancing and tick-driven time slicing (a simplified Linux CFS as the guest sees it: it
//! does not know whether a vCPU is preempted).
//!
//! The scheduler's decisions are `GuestKernel` methods over the VM's own state and its thread
//! records (the host-wide `Sim::threads` table, passed in). What crosses into the host goes by
//! the line: `guest/run.rs` asks for the tick timer (`Next::SetTimer`) and reports a deadlock
//! (`Next::Stop`); the tick arrives as `Upcall::TimerTick` (`timer_tick`, below), whose
//! balancing IPI the host sends as an `Exit::IpiSend`.

use super::kernel::{GuestKernel, GuestVcpu};
use super::thread::{FutexKey, Thread, ThreadState};
use crate::hardware::cpumask::IndexMask;
use crate::ids::{ThreadId, VcpuId};
use crate::time::Nanos;
use crate::vmexit::{KernelFn, PvArea};
use crate::SimError;

/// What the guest tick (`GuestKernel::timer_tick`) asks of the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tick {
    /// A sibling that was handed a queued thread: it needs a reschedule IPI (sent from
    /// interrupt context, with no IPI-send step on a thread).
    pub resched_ipi: Option<VcpuId>,
    /// The current thread is at a preemptible point with another queued behind it: if the tick
    /// interrupted thread code, the guest round-robins (`round_robin`) on return from it.
    pub round_robin: bool,
}

/// Which of a VM's vCPUs (by index in the VM) have threads queued, and which are idle (no
/// thread running or queued: `GuestVcpu::idle`). Every change of a vCPU's run queue or
/// `current` is followed by `GuestKernel::note_vcpu`, so the newidle pull (`pick_next`), wake
/// placement (`wake_target`) and tick balancing (`tick_balance`) visit the vCPUs that qualify
/// instead of every sibling: a wide VM's guest scheduler costs no O(vCPUs) scan per event.
/// Check mode holds both masks to the vCPUs' state (`GuestKernel::check`).
pub struct RunMasks {
    /// vCPUs with a non-empty run queue.
    pub queued: IndexMask,
    /// vCPUs with no thread running or queued.
    pub idle: IndexMask,
}

impl RunMasks {
    /// The masks of `vcpus` as they stand.
    pub fn of(vcpus: &[GuestVcpu]) -> Self {
        RunMasks {
            queued: IndexMask::from_fn(vcpus.len(), |i| !vcpus[i].runqueue.is_empty()),
            idle: IndexMask::from_fn(vcpus.len(), |i| vcpus[i].idle()),
        }
    }

    /// Where the masks disagree with `vcpus` (check mode): the first vCPU index that does.
    pub fn mismatch(&self, vcpus: &[GuestVcpu]) -> Option<usize> {
        (0..vcpus.len()).find(|&i| self.queued.contains(i) == vcpus[i].runqueue.is_empty() || self.idle.contains(i) != vcpus[i].idle())
    }
}

impl GuestKernel {
    /// vCPU `i`'s run queue or current thread changed: set its bits in `run_masks`.
    #[inline(always)]
    pub(super) fn note_vcpu(&mut self, i: usize) {
        let gv = &self.vcpus[i];
        let (queued, idle) = (!gv.runqueue.is_empty(), gv.idle());
        self.run_masks.queued.put(i, queued);
        self.run_masks.idle.put(i, idle);
    }

    /// The index in this VM of its vCPU `v` (a VM's vCPU ids are consecutive).
    #[inline]
    pub fn index_of(&self, v: VcpuId) -> usize {
        let i = (v.0 - self.vcpus[0].id.0) as usize;
        debug_assert_eq!(self.vcpus[i].id, v, "vCPU {v} is not in VM {}", self.vm);
        i
    }

    /// Pick the next thread for idle vCPU `i` at `now`: its own queue first, else pull one
    /// queued thread from the sibling with the longest queue (newidle balancing; on bare metal
    /// Linux 3.13's `idle_balance`, guest/bare_metal_balance.rs). The thread becomes current.
    pub fn pick_next(&mut self, threads: &mut [Thread], i: usize, now: Nanos) -> Option<ThreadId> {
        let t = match self.vcpus[i].runqueue.pop_front() {
            Some(t) => t,
            None if self.balance.is_some() => {
                let bal = self.balance.as_mut().expect("checked");
                let allowed = |t: ThreadId, c: usize| threads[t.idx()].may_run_on(c);
                if !bal.idle_balance(&mut self.vcpus, &allowed, i, now) {
                    return None;
                }
                self.apply_moves(threads);
                self.vcpus[i].runqueue.pop_front().expect("idle_balance queued a thread here")
            }
            None => {
                let vcpus = &self.vcpus;
                // With threads pinned in the VM, only a queue holding a thread allowed on `i`
                // can give one (load_balance retries without a CPU whose tasks are all pinned,
                // LBF_ALL_PINNED; can_migrate_task tests tsk_cpus_allowed).
                let pinned = self.pinned;
                let movable = |u: usize| !pinned || last_allowed(&vcpus[u].runqueue, threads, i).is_some();
                let busiest = self
                    .run_masks
                    .queued
                    .iter()
                    .filter(|&u| u != i && movable(u))
                    .max_by_key(|&u| (vcpus[u].runqueue.len(), std::cmp::Reverse(vcpus[u].id.0)))?;
                let t = if pinned {
                    let at = last_allowed(&self.vcpus[busiest].runqueue, threads, i)?;
                    self.vcpus[busiest].runqueue.remove(at)?
                } else {
                    self.vcpus[busiest].runqueue.pop_back()?
                };
                // Idle now if that was its only thread and none runs there (a vCPU not yet
                // entered since it was handed the thread).
                self.note_vcpu(busiest);
                t
            }
        };
        let gv = &mut self.vcpus[i];
        gv.current = Some(t);
        gv.mm_loaded = true;
        gv.idle_loop = false;
        threads[t.idx()].vcpu = gv.id;
        self.note_vcpu(i);
        Some(t)
    }

    /// Where a woken thread goes (an index): its previous vCPU if idle, else the next idle
    /// sibling, else its previous vCPU (select_task_rq_fair's wake-affine /
    /// select_idle_sibling, simplified).
    /// On bare metal the guest sees the real topology: Linux 3.13's `select_idle_sibling`
    /// (guest/bare_metal_placement.rs).
    /// With IRS's migrator (guest/irs.rs) an idle vCPU must also keep most of its capacity
    /// after steal (`wake_capacity_ok`).
    /// A thread with a CPU affinity (`cpus`) goes only where it may run, as Linux's
    /// `select_task_rq`: a thread allowed on one vCPU goes there (where `select_fallback_rq`
    /// leaves it whatever the search chose); else the search skips the vCPUs it may not run on,
    /// and a result outside the mask falls back to the first vCPU it may run on.
    fn wake_target(&mut self, pv: &[PvArea], now: Nanos, prev: VcpuId, cpus: Option<&IndexMask>) -> usize {
        let prev = self.index_of(prev);
        if let Some(mask) = cpus {
            if mask.count() == 1 {
                return mask.first().expect("a thread's affinity names a vCPU");
            }
        }
        let allowed = |i: usize| cpus.is_none_or(|m| m.contains(i));
        let fallback = |i: usize| if allowed(i) { i } else { cpus.and_then(|m| m.first()).expect("a thread's affinity names a vCPU") };
        if let Some(topo) = &self.topology {
            let vcpus = &self.vcpus;
            return fallback(topo.select_idle_sibling(prev, |i| allowed(i) && vcpus[i].idle()));
        }
        if allowed(prev) && self.available_idle(pv, prev) && (self.irs.is_none() || self.wake_capacity_ok(pv, prev, now)) {
            return prev;
        }
        // The idle vCPUs from the cursor on, wrapping round once: the order of a walk over every
        // sibling from the cursor, visiting only those that can qualify. A loop, not an iterator
        // over the mask: `wake_capacity_ok` takes the guest mutably (IRS's steal averages).
        let n = self.vcpus.len();
        let start = self.wake_cursor;
        let (mut from, mut wrapped) = (start, false);
        loop {
            let u = match self.run_masks.idle.next_from(from) {
                Some(u) if !wrapped || u < start => u,
                None if !wrapped => {
                    (from, wrapped) = (0, true);
                    continue;
                }
                _ => return fallback(prev),
            };
            if allowed(u) && self.available_idle(pv, u) && (self.irs.is_none() || self.wake_capacity_ok(pv, u, now)) {
                self.wake_cursor = (u + 1) % n;
                return u;
            }
            from = u + 1;
        }
    }

    /// Make blocked thread `t` runnable, woken by code running on vCPU `waker`. Returns the vCPU
    /// that needs a reschedule IPI (a remote one; ttwu_queue in Linux 3.2 always sends it).
    /// With IRS's migrator, a thread whose previous vCPU runs an IRS-migrated thread goes back
    /// there and preempts it (guest/irs.rs `irs_wake_preempt`).
    pub fn wake_thread(&mut self, threads: &mut [Thread], pv: &[PvArea], now: Nanos, waker: VcpuId, t: ThreadId) -> Option<VcpuId> {
        let th = &mut threads[t.idx()];
        if !matches!(th.state, ThreadState::Blocked(_)) {
            // Woken between queuing on the futex and sleeping: it just doesn't sleep.
            return None;
        }
        th.state = ThreadState::Ready;
        self.blocked_threads -= 1;
        if self.irs.is_some() {
            let prev = self.index_of(th.vcpu);
            if self.irs_wake_preempt(t, prev) {
                let id = self.vcpus[prev].id;
                return (id != waker).then_some(id);
            }
        }
        // On bare metal, `wake_affine` may start the search from the waker's CPU.
        let start = if self.balance.is_some() {
            let prev = self.index_of(threads[t.idx()].vcpu);
            let cpus = threads[t.idx()].cpus.as_ref();
            let start = self.native_wake_start(threads, now, waker, t, prev, |i| cpus.is_none_or(|m| m.contains(i)));
            self.vcpus[start].id
        } else {
            threads[t.idx()].vcpu
        };
        let target = self.wake_target(pv, now, start, threads[t.idx()].cpus.as_ref());
        if let Some(bal) = self.balance.as_mut() {
            bal.note_wakeup(target, now);
        }
        let target_id = self.vcpus[target].id;
        threads[t.idx()].vcpu = target_id;
        self.vcpus[target].runqueue.push_back(t);
        self.note_vcpu(target);
        if self.vcpus[target].haltpoll.polling_since.is_some() && target_id != waker {
            // Polling in the idle loop with TIF_POLLING_NRFLAG set: `set_nr_and_not_polling`
            // sets need_resched without an IPI (kernel/sched/core.c `resched_curr`), and the
            // poll loop sees it when it next runs.
            self.pokes.push_back(target_id);
            return None;
        }
        (target_id != waker).then_some(target_id)
    }

    /// The running thread of vCPU `i` sleeps on `key` (it leaves the vCPU); returns it.
    pub fn block_current(&mut self, threads: &mut [Thread], i: usize, key: FutexKey) -> ThreadId {
        let t = self.vcpus[i].current.take().expect("a blocking vCPU runs a thread");
        self.note_vcpu(i);
        self.irs_forget(t);
        threads[t.idx()].state = ThreadState::Blocked(key);
        self.blocked_threads += 1;
        t
    }

    /// The running thread of vCPU `i` ended; returns it.
    pub fn exit_current(&mut self, threads: &mut [Thread], i: usize) -> ThreadId {
        let t = self.vcpus[i].current.take().expect("an exiting vCPU runs a thread");
        self.note_vcpu(i);
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
                ThreadState::Blocked(key) => {
                    Some(format!("VM {:?} thread {} sleeps in futex_wait on {}", self.name, threads[t.idx()].index, self.object_name(key)))
                }
                _ => None,
            })
            .collect();
        SimError::Deadlock { time_ns: now, waits }
    }

    /// A futex's object as the program names it. A queue's mutex and condition variables come
    /// after the program's own (`sim/build.rs`), so they are named by their queue, not by an
    /// index the program never declared.
    pub fn object_name(&self, key: FutexKey) -> String {
        let queues = &self.objects.queues;
        let syncs = &self.objects.task_syncs;
        match key {
            FutexKey::Mutex(m) => match (queues.iter().position(|q| q.mutex == m), syncs.iter().position(|s| s.mutex == m)) {
                (Some(q), _) => format!("the mutex of queue {q}"),
                (None, Some(k)) => format!("the mutex of TaskQ sync {k}"),
                (None, None) => format!("mutex {m}"),
            },
            FutexKey::Barrier(b) => {
                format!("barrier {b} ({} of {} arrived)", self.objects.barriers[b].arrived, self.objects.barriers[b].parties)
            }
            FutexKey::Cond(c) => match queues.iter().enumerate().find(|(_, q)| q.not_empty == c || q.not_full == c) {
                Some((i, q)) if q.not_empty == c => format!("queue {i} (empty: waiting for an item, {} of {})", q.items, q.capacity),
                Some((i, q)) => format!("queue {i} (full: waiting for room, {} of {})", q.items, q.capacity),
                None => match syncs.iter().enumerate().find(|(_, s)| s.task_avail == c || s.tasks_done == c) {
                    Some((k, s)) if s.task_avail == c => {
                        format!("TaskQ sync {k}'s taskAvail (the next batch, {} of {} arrived)", s.count, s.parties)
                    }
                    Some((k, s)) => format!("TaskQ sync {k}'s tasksDone ({} of {} arrived)", s.count, s.parties),
                    None => format!("condition variable {c}"),
                },
            },
            FutexKey::MmSem => "the mm's mmap_sem (down_write)".to_string(),
            FutexKey::Socket => "the network socket (sk_wait_data)".to_string(),
        }
    }

    /// Thread `t`, running on vCPU `i`, sets its CPU affinity to `mask` (`None`: every vCPU):
    /// Linux's `sched_setaffinity` -> `set_cpus_allowed_ptr` (kernel/sched.c, 3.2; the same in
    /// kernel/sched/core.c, 4.4). The mask is stored (`do_set_cpus_allowed`); if `i` is in it the
    /// thread stays; else it moves at once to the first vCPU of the mask (`dest_cpu =
    /// cpumask_any_and(cpu_active_mask, new_mask)`, moved by `stop_one_cpu(migration_cpu_stop)`),
    /// queued behind what that vCPU runs, and that vCPU is returned: it needs a reschedule IPI.
    /// Linux 5.x+ picks the destination by `cpumask_any_and_distribute` (round robin over the
    /// mask): the model takes the first for every kernel (docs/model.md 8.1).
    pub fn set_affinity(&mut self, threads: &mut [Thread], i: usize, t: ThreadId, mask: Option<IndexMask>) -> Option<VcpuId> {
        debug_assert_eq!(self.vcpus[i].current, Some(t), "only the running thread sets its own affinity");
        if mask.is_some() {
            // From now on the pulls and tick balancing test each candidate's mask.
            self.pinned = true;
        }
        let th = &mut threads[t.idx()];
        th.cpus = mask;
        if th.may_run_on(i) {
            return None;
        }
        let to = th.cpus.as_ref().and_then(|m| m.first()).expect("a mask without vCPU i names another");
        let to_id = self.vcpus[to].id;
        th.vcpu = to_id;
        self.vcpus[i].current = None;
        self.vcpus[to].runqueue.push_back(t);
        // No longer a thread IRS moved away from its vCPU.
        self.irs_forget(t);
        self.note_vcpu(i);
        self.note_vcpu(to);
        Some(to_id)
    }

    /// Arm the tick of vCPU `i` when it has threads waiting behind the current one; returns the
    /// delay to the tick when it was armed now (the host times it).
    #[inline]
    pub fn arm_tick(&mut self, i: usize) -> Option<Nanos> {
        arm_tick_of(&mut self.vcpus[i], self.config.tick, self.balance.is_some())
    }

    /// Periodic balancing at vCPU `i`'s tick: hand one queued thread to an idle sibling in the
    /// idle loop; returns that sibling (it needs a reschedule IPI). This stands for Linux's nohz
    /// idle balancing (3.2 kernel/sched_fair.c `nohz_balancer_kick` -> `nohz_idle_balance` ->
    /// `rebalance_domains(balance_cpu, CPU_IDLE)`: the busy CPU's tick kicks the idle load
    /// balancer, which pulls for each CPU in `nohz.idle_cpus_mask` and reschedules it), so only a
    /// vCPU that went idle in its idle loop is a target (`GuestVcpu::idle_loop`): one whose
    /// thread was moved away while it was descheduled has not stopped its tick there.
    pub fn tick_balance(&mut self, threads: &mut [Thread], i: usize) -> Option<VcpuId> {
        // The first idle vCPU is never `i` when `i` has a thread to hand over (it is not idle).
        // With threads pinned in the VM: the first idle vCPU one of `i`'s queued threads may
        // run on, and the last such thread (can_migrate_task).
        let (u, at) = {
            let vcpus = &self.vcpus;
            let mut targets = self.run_masks.idle.iter().filter(|&u| vcpus[u].idle_loop);
            if self.pinned {
                let queue = &vcpus[i].runqueue;
                targets.find_map(|u| last_allowed(queue, threads, u).map(|at| (u, at)))?
            } else {
                (targets.next()?, vcpus[i].runqueue.len().checked_sub(1)?)
            }
        };
        let t = self.vcpus[i].runqueue.remove(at)?;
        let to = self.vcpus[u].id;
        self.vcpus[u].runqueue.push_back(t);
        threads[t.idx()].vcpu = to;
        self.note_vcpu(i);
        self.note_vcpu(u);
        Some(to)
    }

    /// Round-robin at vCPU `i`'s tick: whether its current thread is at a preemptible point
    /// (user mode, no spinlock held) with another thread queued behind it. `in_thread` says the
    /// vCPU is executing thread code (not a handler).
    pub fn tick_preemptible(&self, threads: &[Thread], i: usize, in_thread: bool) -> bool {
        let gv = &self.vcpus[i];
        gv.current
            .is_some_and(|cur| threads[cur.idx()].held.is_empty() && in_thread && gv.func == KernelFn::User && !gv.runqueue.is_empty())
    }

    /// Round-robin on return from vCPU `i`'s tick: its current thread goes to the back of its
    /// run queue (`run` then picks the next one).
    pub fn round_robin(&mut self, i: usize) {
        let gv = &mut self.vcpus[i];
        let cur = gv.current.take().expect("a preempted thread was current");
        gv.runqueue.push_back(cur);
        self.note_vcpu(i);
    }

    /// `Upcall::TimerTick` on running vCPU `i`: the tick is spent. With threads queued behind
    /// the current one, push one to an idle sibling and say whether the current one may be
    /// rotated (at a preemptible point: user mode, no spinlock held); `None` when nothing is
    /// queued (the tick stays disarmed).
    pub fn timer_tick(&mut self, threads: &mut [Thread], i: usize) -> Option<Tick> {
        self.vcpus[i].tick_armed = false;
        if self.vcpus[i].runqueue.is_empty() {
            return None;
        }
        let resched_ipi = self.tick_balance(threads, i);
        // The host acts on this only if the tick interrupted thread code and the balancing IPI
        // left the vCPU running; neither changes what is tested here.
        let round_robin = self.tick_preemptible(threads, i, true);
        Some(Tick { resched_ipi, round_robin })
    }

    /// The tick of vCPU `i` fired while the host had it descheduled: a preempted vCPU takes no
    /// ticks, and the guest re-arms when it runs again.
    #[inline]
    pub fn tick_missed(&mut self, i: usize) {
        self.vcpus[i].tick_armed = false;
    }
}

/// Where in `queue` the last thread that may run on vCPU index `to` is (what a pull or a tick's
/// hand-over takes from a queue when threads are pinned: `can_migrate_task`).
fn last_allowed(queue: &std::collections::VecDeque<ThreadId>, threads: &[Thread], to: usize) -> Option<usize> {
    queue.iter().rposition(|t| threads[t.idx()].may_run_on(to))
}

/// `GuestKernel::arm_tick` on a guest vCPU already at hand (`tick`: the guest's tick period).
/// A VM's vCPU ticks while threads wait behind its current one (time slicing and the tick's
/// hand-over); a bare-metal CPU (`busy_ticks`) while it runs a thread at all, for its periodic
/// load balancer (guest/bare_metal_balance.rs).
#[inline(always)]
pub(super) fn arm_tick_of(gv: &mut super::kernel::GuestVcpu, tick: Nanos, busy_ticks: bool) -> Option<Nanos> {
    if !gv.tick_armed && (!gv.runqueue.is_empty() || (busy_ticks && gv.current.is_some())) {
        gv.tick_armed = true;
        Some(tick)
    } else {
        None
    }
}
