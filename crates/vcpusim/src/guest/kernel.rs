//! One guest kernel per VM: the state the VM's kernel owns (`Sim::guests[vm]`).
//!
//! Ids stay host-wide (`ThreadId`, `LockId`, `VcpuId` index the host-wide `Sim::threads`,
//! `Sim::locks` and `Sim::vcpus` tables), so a guest kernel holds the ids of its own threads; the
//! thread records and spinlocks themselves are still in those tables, lent to its methods as a
//! `GuestEnv` (see docs/architecture.md, "Who owns which state"). The guest's per-vCPU
//! state is its own: `GuestKernel::vcpus`, indexed by the vCPU's index in its VM
//! (`VcpuInfo::index`; the host keeps the (VM, index) of each vCPU in `Vcpu::slot`).

use super::config::GuestConfig;
use super::haltpoll::HaltpollDevice;
use super::objects::{Shootdown, SyncObjects};
use super::spinlock::Spinlock;
use super::stats::GuestStats;
use super::thread::{FutexKey, Step, Thread};
use crate::hardware::costs::Costs;
use crate::ids::{LockId, ThreadId, VcpuId, VmId};
use crate::time::Nanos;
use crate::vmexit::{Ipi, KernelFn, PvArea};
use std::collections::VecDeque;

/// What a guest-kernel operation needs beyond its VM's own state: the host-wide thread and
/// spinlock tables (ids are host-wide; a VM's operations touch only its own entries), the costs
/// its kernel paths take (the syscall entry, an IPI handler), the PV areas it may read (indexed
/// by host-wide vCPU id; the guest writes only what the interface lets it, as the Linux 6.x
/// guest's `KVM_VCPU_FLUSH_TLB`) and the time. `Sim::guest_env` lends them.
pub struct GuestEnv<'a> {
    pub threads: &'a mut [Thread],
    pub locks: &'a mut Vec<Spinlock>,
    pub costs: &'a Costs,
    pub pv: &'a mut [PvArea],
    pub now: Nanos,
}

impl GuestEnv<'_> {
    /// Queue `steps` in front of thread `t`'s pending steps, in order. Any sequence that can be
    /// walked backwards: the futex and synchronization paths hand arrays and iterators over
    /// them, so a call allocates nothing.
    pub fn push_front_steps<I>(&mut self, t: ThreadId, steps: I)
    where
        I: IntoIterator<Item = Step>,
        I::IntoIter: DoubleEndedIterator,
    {
        self.threads[t.idx()].steps.push_front_all(steps);
    }

    /// Queue `step` in front of thread `t`'s pending steps.
    #[inline]
    pub fn push_front(&mut self, t: ThreadId, step: Step) {
        self.threads[t.idx()].steps.push_front(step);
    }
}

/// The guest kernel's state of one of its vCPUs (Linux: the per-CPU run queue and `current`,
/// the interrupts the local APIC holds for it, the CPU's bit in `mm_cpumask`, its tick).
pub struct GuestVcpu {
    /// The host-wide id of this vCPU.
    pub id: VcpuId,
    /// The thread it runs (None: idle).
    pub current: Option<ThreadId>,
    /// Threads queued on it.
    pub runqueue: VecDeque<ThreadId>,
    /// Interrupts delivered but not yet handled.
    pub pending_ipis: VecDeque<Ipi>,
    /// The handler being run.
    pub irq: Option<Ipi>,
    /// The kernel function it is in (instruction pointer). Not copied to the PV area: a policy
    /// that declared the `kernel_fn` channel reads it here when it asks (`vmexit::KernelFnSource`,
    /// `GuestSymbols` in sim/hypervisor_ops.rs).
    pub func: KernelFn,
    /// Whether this vCPU has the VM's address space loaded (in mm_cpumask), including lazily
    /// while idle.
    pub mm_loaded: bool,
    /// A guest tick is armed.
    pub tick_armed: bool,
    /// The event channel of the VM's network device is pending on this vCPU (its bit in
    /// shared_info's `evtchn_pending`, set by the hypervisor: guest/netrx.rs).
    pub virq_pending: bool,
    /// The device interrupt handler being run (hard IRQ, then its softirq), if any.
    pub dev_irq: Option<super::netrx::DevIrq>,
    /// Its thread made a PV qspinlock's SCHEDOP_poll and the guest has not been entered since:
    /// while the host keeps it blocked, the vCPU runs a thread without executing it and without
    /// being preempted (`check`).
    pub pv_polled: bool,
    /// It is in the idle loop: it went idle there (HLT) and has not picked a thread since, or
    /// never ran one. Linux enters a CPU in `nohz.idle_cpus_mask` when it stops its tick in the
    /// idle loop (3.2 kernel/time/tick-sched.c `tick_nohz_stop_sched_tick` ->
    /// `select_nohz_load_balancer(1)`), and the idle balancer pulls only for those CPUs. A vCPU
    /// whose thread was taken away while it was descheduled (IRS's notice) is idle in the
    /// scheduler's view but not here until it runs again.
    pub idle_loop: bool,
    /// Its haltpoll governor's state and the idle poll or halt in progress (`[guest] haltpoll`).
    pub haltpoll: HaltpollDevice,
}

impl GuestVcpu {
    pub fn new(id: VcpuId) -> Self {
        GuestVcpu {
            id,
            current: None,
            runqueue: VecDeque::new(),
            pending_ipis: VecDeque::new(),
            irq: None,
            func: KernelFn::Idle,
            mm_loaded: false,
            tick_armed: false,
            virq_pending: false,
            dev_irq: None,
            pv_polled: false,
            idle_loop: true,
            haltpoll: HaltpollDevice::default(),
        }
    }

    /// Guest view of an idle vCPU: no thread running or queued on it.
    #[inline]
    pub fn idle(&self) -> bool {
        self.current.is_none() && self.runqueue.is_empty()
    }
}

pub struct GuestKernel {
    pub vm: VmId,
    /// The VM's name (for error reports).
    pub name: String,
    pub config: GuestConfig,
    /// Its vCPUs' guest state, by index within the VM (each with its host-wide id).
    pub vcpus: Vec<GuestVcpu>,
    /// Its threads (host-wide ids).
    pub threads: Vec<ThreadId>,
    pub objects: SyncObjects,
    /// TLB shootdowns, by id (an id travels in the IPI payload); ids in `free_shootdowns` are
    /// finished and reused.
    pub shootdowns: Vec<Shootdown>,
    pub free_shootdowns: Vec<u32>,
    pub live_threads: usize,
    pub blocked_threads: usize,
    /// Round-robin cursor for the idle-vCPU search of wake placement.
    pub wake_cursor: usize,
    /// Which vCPUs have threads queued and which are idle (guest/scheduler.rs `RunMasks`).
    pub run_masks: super::scheduler::RunMasks,
    /// What the kernel counts about itself (progress, futex and shootdown counts, latencies).
    pub stats: GuestStats,
    /// The workload's iteration target (`[[vm]] iterations`), and when it was reached: from then
    /// on its threads exit at their next op fetch.
    pub iterations: Option<u64>,
    pub finished_at: Option<Nanos>,
    /// vCPUs whose spinning thread must re-check what it polls, in the order the stores
    /// happened; `run` hands them to the host one at a time (`Next::Poke`).
    pub pokes: VecDeque<VcpuId>,
    /// vCPUs whose kernel spinner's polled lock word another vCPU just stored to, in order;
    /// `run` hands them to the host one at a time (`Next::Store`). Filled only with
    /// `watch_stores`.
    pub stores: VecDeque<VcpuId>,
    /// The host asked to hear of stores to a polled lock word (its pause-loop exiting has a
    /// `PLE_Gap` that a reload's miss can exceed: `Ple::store_restarts_loop`).
    pub watch_stores: bool,
    /// Instantaneous steps run in a row without any of its vCPUs starting timed work or a spin
    /// (the runaway-program guard, `guest/run.rs`).
    pub zero_time_steps: u64,
    /// Some thread of this VM has a CPU affinity (`Thread::cpus`): the scheduler's pulls and
    /// tick balancing test each candidate thread's mask (none do otherwise, at no cost).
    pub pinned: bool,
    /// vCPUs whose running worker thread polls a flag just set (a Tascell task request), in
    /// order; `run` hands them to the host one at a time (`Next::Poll`).
    pub polls: VecDeque<VcpuId>,
    /// A bare-metal VM's view of the host topology (guest/bare_metal_placement.rs): wake-up placement by
    /// Linux 3.13's `select_idle_sibling`. `Some` exactly on bare metal, where an IPI send does
    /// not exit and Linux 3.13's balancer runs (`balance`); `None` in a VM (flat vCPUs).
    pub topology: Option<super::bare_metal_placement::GuestTopology>,
    /// A bare-metal VM's load balancer (guest/bare_metal_balance.rs): `Some` exactly with
    /// `topology`.
    pub balance: Option<Box<super::bare_metal_balance::Balancer>>,
    /// The Tascell runtime of a program with `Op::WorkSteal` (guest/worksteal.rs).
    pub ws: Option<Box<super::worksteal::WorkStealing>>,
    /// Lock hand-offs for the trace's flow arrows (guest/handoff.rs): `Some` only in a traced
    /// run, so an untraced one records nothing.
    pub handoffs: Option<Box<super::handoff::HandOffLog>>,
    /// The network stack of a VM with a network device (guest/netrx.rs).
    pub net: Option<Box<super::netrx::NetStack>>,
    /// Seed 003's IRS guest side (guest/irs.rs): `Some` for a guest with `irs = true` on a host
    /// with `overlay = "irs"`.
    pub irs: Option<Box<super::irs::IrsGuest>>,
    /// Lists kept for reuse by the futex paths (no allocation per call).
    pub scratch: Scratch,
}

/// Spent IPI target lists kept for reuse: enough for the sends a guest has queued between
/// deliveries in the experiment workloads; a list beyond it is dropped (only an allocation).
const KEPT_IPI_TARGET_LISTS: usize = 8;

/// Buffers the futex paths reuse instead of allocating per call: the waiters a wake
/// dequeues, the waiters a requeue moves, and spent IPI target lists (a `SendIpis` step's
/// `targets`, handed back by the host once it delivered them: `Sim::on_exit`).
#[derive(Default)]
pub struct Scratch {
    pub woken: Vec<ThreadId>,
    pub moved: Vec<ThreadId>,
    /// CPUs a bare-metal balance pass touched (guest/bare_metal_balance.rs).
    pub cpus: Vec<usize>,
    ipi_targets: Vec<Vec<VcpuId>>,
}

impl Scratch {
    /// An empty IPI target list (a spent one if there is one).
    pub fn ipi_targets(&mut self) -> Vec<VcpuId> {
        self.ipi_targets.pop().unwrap_or_default()
    }

    /// Keep a spent IPI target list for reuse (at most `KEPT_IPI_TARGET_LISTS`).
    pub fn recycle_ipi_targets(&mut self, mut targets: Vec<VcpuId>) {
        if self.ipi_targets.len() < KEPT_IPI_TARGET_LISTS && targets.capacity() > 0 {
            targets.clear();
            self.ipi_targets.push(targets);
        }
    }
}

impl GuestKernel {
    /// Whether vCPU `index` has an interrupt pending or work queued: what the host asks when
    /// its HLT exit completes, the modelled equivalent of KVM's `kvm_vcpu_has_events` /
    /// `kvm_arch_vcpu_runnable` (a real hypervisor reads the virtual APIC's IRR; the queued
    /// work stands for the reschedule IPI that would have come with it).
    #[inline]
    pub fn has_events(&self, index: usize) -> bool {
        let gv = &self.vcpus[index];
        !gv.pending_ipis.is_empty() || !gv.runqueue.is_empty() || gv.virq_pending
    }

    /// Whether vCPU `index` has an interrupt pending: what Xen's `do_poll` checks
    /// (`local_events_need_delivery`) before blocking a SCHEDOP_poll.
    #[inline]
    pub fn has_interrupts(&self, index: usize) -> bool {
        !self.vcpus[index].pending_ipis.is_empty()
    }

    /// A new spinlock of the guest's kind in the host-wide lock table.
    fn new_lock(&self, locks: &mut Vec<Spinlock>, class: &str) -> LockId {
        let id = LockId(locks.len() as u32);
        locks.push(Spinlock::new(self.config.spinlock, class));
        id
    }

    /// The bucket spinlock of a futex, created on first use; futexes hashing to the same bucket
    /// share it.
    pub fn futex_bucket_lock(&mut self, key: FutexKey, locks: &mut Vec<Spinlock>, class: &str) -> LockId {
        if let Some(l) = self.objects.bucket_lock.get(&key) {
            return *l;
        }
        let buckets = self.config.futex_buckets;
        let bucket = self.objects.futex_bucket(key, buckets);
        let objects = &self.objects;
        let shared = objects.bucket_lock.iter().find(|(k, _)| objects.futex_bucket(**k, buckets) == bucket).map(|(_, l)| *l);
        let lock = shared.unwrap_or_else(|| self.new_lock(locks, class));
        self.objects.bucket_lock.insert(key, lock);
        lock
    }

    /// `sem->wait_lock` of the VM's mm, created on first contention.
    pub fn mm_sem_wait_lock(&mut self, locks: &mut Vec<Spinlock>, class: &str) -> LockId {
        if let Some(lock) = self.objects.mm_sem.wait_lock {
            return lock;
        }
        let lock = self.new_lock(locks, class);
        self.objects.mm_sem.wait_lock = Some(lock);
        lock
    }

    /// Record a new TLB shootdown of `initiator` waiting for `acks` acknowledgements.
    pub fn start_shootdown(&mut self, initiator: ThreadId, acks: u32, pages: u32, now: Nanos) -> u32 {
        match self.free_shootdowns.pop() {
            Some(id) => {
                let sd = &mut self.shootdowns[id as usize];
                (sd.initiator, sd.pending_acks, sd.pages, sd.started) = (initiator, acks, pages, now);
                sd.targets.clear();
                id
            }
            None => {
                self.shootdowns.push(Shootdown { initiator, pending_acks: acks, pages, started: now, targets: Vec::new() });
                (self.shootdowns.len() - 1) as u32
            }
        }
    }

    /// A recipient acknowledged shootdown `id`; returns its initiator when it was the last one.
    pub fn ack_shootdown(&mut self, id: u32) -> Option<ThreadId> {
        let sd = &mut self.shootdowns[id as usize];
        sd.pending_acks -= 1;
        (sd.pending_acks == 0).then_some(sd.initiator)
    }

    /// The initiator checks shootdown `id`: when every acknowledgement is in, it is finished
    /// (its id freed) and its latency returned.
    pub fn finish_shootdown(&mut self, id: u32, now: Nanos) -> Option<Nanos> {
        let sd = &self.shootdowns[id as usize];
        if sd.pending_acks != 0 {
            return None;
        }
        let latency = now - sd.started;
        self.free_shootdowns.push(id);
        Some(latency)
    }
}
