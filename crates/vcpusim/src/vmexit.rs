//! The VM-exit line: where a guest kernel meets the host, as a real VM meets its hypervisor.
//!
//! ```text
//!            guest kernel (one per VM: guest/)                 per-vCPU PV area
//!   threads, guest scheduler, spinlocks, futex, TLB      ┌──────────────────────────────┐
//!   shootdown, interrupt handlers                        │ host writes: preempted,      │
//!        │                          ▲                    │   steal_time_ns, runnable,   │
//!        │ Exit                     │ Upcall             │   preempt_pending            │
//!        │ (Sim::on_exit)           │ (Sim::upcall)      │ guest writes: lock_mark,     │
//!        ▼                          │                    │   flush_tlb_pages            │
//!   ─────────────────────────── the line ────────────────└──────────────────────────────┘
//!            host (sim/, hardware/, hypervisor/)
//!   pCPUs, vCPU execution and accounting, IPI delivery, VMEXIT costs, PLE,
//!   cpupools and their policies (which see exits, their own state, declared channels)
//! ```
//!
//! The guest reaches the host only by an [`Exit`]; the host reaches the guest only by an
//! [`Upcall`] and through the per-vCPU [`PvArea`]. When the host resumes a vCPU, the guest
//! answers what it does next with a [`Next`] (timed work of a [`TimeKind`], a spin, an exit, or
//! a request such as arming its timer), and the host runs it. This module is the vocabulary
//! both sides share; it imports nothing of either. The host carries exits out and runs the
//! answers in `sim/line.rs` and `sim/execute.rs`; the guest computes them in `guest/run.rs`.
//!
//! The guest's current kernel function is not in the PV area: a policy that declares
//! `Channels::kernel_fn` reads it when it asks ([`KernelFnSource`]; the engine's source,
//! `GuestSymbols` in sim/hypervisor_ops.rs, reads the guest's `GuestVcpu::func`), as a
//! hypervisor reads the instruction pointer and looks it up in the guest's symbol table.

use crate::error::SimError;
use crate::ids::VcpuId;
use crate::time::Nanos;

/// Which hypervisor's paravirtual interfaces a policy's host offers its guests: what a guest's
/// paravirtual features talk to (the Linux 6.x guest's `pv_spinlock`, `vcpu_is_preempted`,
/// `pv_tlb_flush`, `pv_sched_yield`, `pv_ipi`, `steal_time`: guest/config.rs `PvFeatures`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hypervisor {
    /// KVM (arch/x86/kvm): `KVM_HC_KICK_CPU`, the steal-time area's `preempted` byte,
    /// `KVM_VCPU_FLUSH_TLB`, `KVM_HC_SCHED_YIELD`, `KVM_HC_SEND_IPI`.
    Kvm,
    /// Xen: event channels, `SCHEDOP_poll` / `SCHEDOP_yield`, the vCPU runstate area.
    Xen,
}

impl Hypervisor {
    pub fn name(self) -> &'static str {
        match self {
            Hypervisor::Kvm => "KVM",
            Hypervisor::Xen => "Xen",
        }
    }
}

/// Kinds of inter-processor interrupts a guest sends (seed 000 section 2.1, Figure 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum IpiKind {
    /// Reschedule IPI: a thread was woken for a remote vCPU.
    Resched,
    /// TLB-shootdown IPI: the sender waits for every recipient's acknowledgement.
    TlbShootdown,
}

impl IpiKind {
    pub fn name(self) -> &'static str {
        match self {
            IpiKind::Resched => "resched",
            IpiKind::TlbShootdown => "tlb",
        }
    }
}

/// A virtual interrupt on its way to (or pending in) a vCPU: its kind and sender, and for a TLB
/// shootdown the guest's payload (which shootdown, how many pages to flush), which the host
/// carries without reading (as the guest's flush info sits in guest memory).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ipi {
    pub kind: IpiKind,
    pub from: VcpuId,
    /// For TLB shootdowns: which one, and how many pages to flush.
    pub shootdown: u32,
    pub pages: u32,
}

/// What a guest vCPU does that traps to the host (a VMEXIT). The host charges its cost, tells
/// the vCPU's policy what a real hypervisor would see, and carries it out (`Sim::on_exit`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Exit {
    /// The idle loop executed HLT: after the exit's cost the vCPU blocks, unless an interrupt or
    /// work arrived meanwhile (KVM `kvm_vcpu_has_events`).
    Hlt,
    /// The first APIC access of an IPI send: the hypervisor sees the send coming before the ICR
    /// write completes (seed 000 section 4.2: the early detection of an IPI-driven policy;
    /// `Policy::ipi_send_started`).
    IpiSendStarted,
    /// The APIC ICR writes of an IPI send, once their cost is paid (one exit per target without
    /// APICv, seed 000 section 4.2): the host delivers the virtual interrupts (`Policy::ipi_sent`
    /// for each target; a halted target is woken).
    IpiSend { kind: IpiKind, targets: Vec<VcpuId>, shootdown: u32, pages: u32 },
    /// Pause-loop exiting: the vCPU spun in a PAUSE loop at CPL 0 longer than the PLE window;
    /// the host yields it (`Policy::yield_vcpu`, `YieldReason::PauseLoop`).
    PauseLoop,
    /// The end-of-interrupt write of a handler (`Policy::ipi_handled`).
    Eoi { kind: IpiKind },
    /// netfront's transmit notify (`notify_remote_via_irq` -> `EVTCHNOP_send`, a hypercall) of
    /// a TCP acknowledgement the guest's receive path built (seed 002 section 3.2: the ACKs a
    /// delayed handling delays): cumulative bytes `acked` and the receive window advertised
    /// past them. The host hands it to the VM's network device (`sim/mechanisms/net_device.rs`).
    NetTx { device: u32, acked: u64, window: u64 },
    /// A paravirtual hypercall (the Linux 4.4 guest on Xen: `guest/pv_lock.rs`, `guest/tlb.rs`;
    /// carried out by `Sim::hypercall`, sim/line.rs).
    Hypercall(Hypercall),
}

/// Paravirtual hypercalls: a Linux 4.4 guest's on Xen (seed 002), the Linux 6.x guest's on KVM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hypercall {
    /// Give up the pCPU (Xen `SCHEDOP_yield` -> `vcpu_yield`): Linux 4.4's
    /// `xen_smp_send_call_function_ipi` (arch/x86/xen/smp.c) after sending call-function IPIs
    /// when a target's runstate is runnable (`xen_vcpu_stolen`). The policy hears it as
    /// `YieldReason::Hypercall`.
    Yield,
    /// Send the event of the spinlock-kicker event channel of a vCPU (Xen `EVTCHNOP_send`;
    /// Linux 4.4 `xen_qlock_kick` -> `xen_send_IPI_one(cpu, XEN_SPIN_UNLOCK_VECTOR)`): the
    /// event becomes pending and a vCPU blocked polling it is woken (Xen `evtchn_set_pending`
    /// -> `vcpu_unblock`). The event is never delivered as an interrupt (`xen_init_lock_cpu`
    /// disables the irq), so no handler runs.
    Kick(VcpuId),
    /// Block until the kicker event is pending (Xen `SCHEDOP_poll` -> `do_poll`; Linux 4.4
    /// `xen_qlock_wait` -> `xen_poll_irq`): returns at once if the event is pending or an
    /// interrupt awaits delivery (`local_events_need_delivery`); the guest cleared the event
    /// and re-checked the lock just before (`xen_clear_irq_pending`).
    Poll,
    /// Seed 003 (IRS): the guest's SA receiver acknowledges a preemption notice, having moved
    /// `moved` threads off the vCPU (0 or 1). The hypervisor completes the held switch
    /// (`Sim::preempt_ack`). The slides name no hypercall; an event-channel send or a
    /// SCHEDOP would serve, assumed. Also the delayed-preemption guest's give-back after its
    /// last critical section when the host marked a preemption pending (`moved` = 0).
    PreemptAck { moved: u32 },
    /// `KVM_HC_KICK_CPU` (the Linux 6.x guest's `kvm_kick_cpu`, PV qspinlock unlock on KVM): the
    /// host sets the target's `pv_unhalted` and wakes it if halted (arch/x86/kvm/x86.c
    /// `kvm_pv_kick_cpu_op` -> `kvm_vcpu_kick`).
    KickCpu(VcpuId),
    /// `KVM_HC_SCHED_YIELD` to a preempted vCPU (the Linux 6.x guest's
    /// `kvm_smp_send_call_func_ipi`; x86.c `kvm_sched_yield`): `YieldReason::DirectedTo`.
    SchedYield(VcpuId),
}

/// One received frame of a VM's network device (seed 002 section 3.2, `sim/mechanisms/net_device.rs`): the
/// end of its payload in the byte stream (TCP) or its datagram number (UDP), its payload bytes,
/// and when the remote sender sent it (the timestamp iperf's UDP client writes in each
/// datagram, from which the server computes jitter).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packet {
    pub seq_end: u64,
    pub bytes: u32,
    pub sent_at: Nanos,
}

/// A virtual IRQ of a VM's device (`Upcall::DeviceIrq`): which device (its index in the host's
/// device table) and the frame it put in the receive ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Virq {
    pub device: u32,
    pub packet: Packet,
}

/// What the host does to a guest vCPU (`Sim::upcall`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Upcall {
    /// VM entry: the vCPU executes guest code again (after a switch-in, an exit's cost, a poke).
    Resume,
    /// A virtual interrupt is injected: it becomes pending, and a vCPU executing thread code
    /// takes it at once (the thread's step pauses for the handler).
    Interrupt(Ipi),
    /// The guest's timer tick fires (only on a running vCPU: a preempted one takes none).
    TimerTick,
    /// A device's frame was put in the VM's receive ring (the backend's copy into guest
    /// memory) and the device's event channel set pending on its designated vCPU (Xen 4.7
    /// `send_guest_pirq` -> `evtchn_port_set_pending(d, chn->notify_vcpu_id, ..)`). The guest
    /// answers whether the port's pending bit was newly set (`evtchn_2l_set_pending`'s
    /// `test_and_set_bit`): only then does the hypervisor kick the vCPU (`vcpu_mark_events_pending`
    /// -> `hvm_assert_evtchn_irq` -> `vcpu_kick` -> `vcpu_unblock` -> `vcpu_wake`). The payload is
    /// the frame, not an IPI: see [`Virq`].
    DeviceIrq(Virq),
    /// Notice that the vCPU is about to be preempted (seed 003, IRS's "SA sender": a virtual IRQ
    /// through Xen's event channel, slide 9): the guest may move its current thread to a sibling
    /// and acknowledges with `Hypercall::PreemptAck` (guest/irs.rs, sim/mechanisms/preemption_overlay/). Sent only
    /// for an involuntary preemption of a vCPU willing to run, under `[host] overlay = "irs"`.
    PreemptNotice,
}

/// Where a slice of a vCPU's time went (the CPU-time split of vms.csv, docs/model.md §9): the kind of
/// work or spin a guest asks for in a [`Next`], and the host's own overheads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeKind {
    User,
    Kernel,
    /// Spinning on a kernel spinlock.
    Spin,
    /// Spinning for TLB-shootdown acknowledgements.
    TlbWait,
    /// Spinning in user space (spin barriers).
    UserSpin,
    /// Polling in the idle loop before HLT (`poll_idle`, the haltpoll cpuidle driver's state 0).
    IdlePoll,
    Irq,
    /// Hypervisor overheads: context switches, IPI-send exits, HLT exits, PLE exits.
    Overhead,
}

/// How the host enters a guest vCPU to ask what it does next (`GuestKernel::run`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Entry {
    /// VM entry after a switch-in, the end of timed work or an exit's cost, or a poke.
    Resume,
    /// VM entry right after the host carried out an [`Exit`] the guest returned in a
    /// [`Next::Exit`] (the vCPU was not descheduled meanwhile): the guest continues past the
    /// trapping instruction. An `IpiSendStarted` exit after which the host descheduled the vCPU
    /// is taken again when the vCPU next runs (`Entry::Resume`): the send had not started.
    AfterExit,
}

/// What a guest vCPU does next: the guest's answer when the host enters it
/// (`GuestKernel::run`, `Sim::dispatch`). The host runs timed work and spins (charging their
/// time, advancing work at the vCPU's speed, arming PLE for kernel spins), carries out exits and
/// requests, and reports back when work ends (`GuestKernel::step_done`, `handler_done`).
#[derive(Clone, Debug, PartialEq)]
pub enum Next {
    /// Execute `work` work-ns of the current thread's step, charged as `kind` (`User`, `Kernel`,
    /// or `Overhead` for an IPI send's APIC writes: one VMEXIT per target).
    Run { kind: TimeKind, work: Nanos },
    /// Run an interrupt handler of `work` work-ns (`TimeKind::Irq`).
    Handler { work: Nanos },
    /// Resume the handler a deschedule interrupted, with the work the host still holds for it
    /// (`Vcpu::remaining`).
    ResumeHandler,
    /// Spin, charged as `kind`: `Spin` or `TlbWait` (a PAUSE loop at CPL 0, which pause-loop
    /// exiting sees) or `UserSpin` (user space, which it does not), until a poke or, with a
    /// `budget`, until that much time has passed.
    Spin { kind: TimeKind, budget: Option<Nanos> },
    /// The current step's work was all done when it was interrupted: end it at once.
    Complete,
    /// Trap to the host. After `Hlt` the vCPU is in the exit; after any other, the host enters
    /// it again with `Entry::AfterExit` if it still runs it.
    Exit(Exit),
    /// A store that a thread spinning on vCPU `VcpuId` polls (a lock handed to it, the last
    /// acknowledgement it waits for): that vCPU re-checks at once. Not an exit: it is how the
    /// model ends an open-ended spin. The host then enters this vCPU again.
    Poke(VcpuId),
    /// The entered vCPU stored to a line the kernel spinner on vCPU `VcpuId` polls (its lock
    /// word: a ticket taken, a lock released) without ending its wait: the spinner's next load
    /// misses, which may break its PAUSE loop in two (`PLE_Gap`). The host then enters this vCPU
    /// again.
    Store(VcpuId),
    /// A flag that the thread running on vCPU `VcpuId` polls in its own code was set (a
    /// Tascell task request): if that vCPU is executing the thread's user work, the host ends
    /// the work there and enters it again, so it reaches its poll point at once. The host then
    /// enters this vCPU again.
    Poll(VcpuId),
    /// Arm the guest's timer on this vCPU to fire that long from now (`Upcall::TimerTick`).
    /// The host then enters this vCPU again.
    SetTimer(Nanos),
    /// The VM's workload reached its iteration target. The host then enters this vCPU again.
    TargetReached,
    /// The guest cannot go on (every thread sleeps, or a program loops without time passing):
    /// the run stops with this error (boxed: it is rare, and keeps `Next` small on the hot path).
    Stop(Box<SimError>),
}

/// The per-vCPU paravirtual area: memory the guest and the host share (as KVM's
/// `kvm_steal_time`, whose `preempted` byte PV spinlocks read). It lives in the host's per-vCPU
/// state (`Sim::pv`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PvArea {
    /// Written by the host: descheduled while still runnable (KVM `KVM_VCPU_PREEMPTED`).
    pub preempted: bool,
    /// Written by the host: time spent runnable but not running (KVM `steal`).
    pub steal_time_ns: Nanos,
    /// Written by the host: the vCPU's Xen runstate is `RUNSTATE_runnable` (runnable and not
    /// running: preempted, or woken and not yet run), from the runstate area the guest
    /// registers (`VCPUOP_register_runstate_memory_area`); Linux 4.4 reads it in
    /// `xen_vcpu_stolen` (arch/x86/xen/time.c). Unlike `preempted`, a vCPU woken from a halt is
    /// runnable too.
    pub runnable: bool,
    /// Written by the guest under `overlay = "delay-preempt"` (Uhlig et al. VM'04): set while
    /// the vCPU's current thread holds a kernel spinlock. Published lazily: the host copies it
    /// just before asking the overlay (guest/run.rs `publish_lock_mark`).
    pub lock_mark: bool,
    /// Written by the host: it deferred a preemption of this vCPU (sim/mechanisms/preemption_overlay/delay_preempt.rs);
    /// the guest gives the pCPU back (`Hypercall::PreemptAck`) when it leaves its last critical
    /// section. Cleared when the hold ends.
    pub preempt_pending: bool,
    /// Written by the guest: `KVM_VCPU_FLUSH_TLB` in the steal-time area's `preempted` byte (the
    /// Linux 6.x guest's `pv_tlb_flush`, arch/x86/kernel/kvm.c `kvm_flush_tlb_multi`), as the
    /// pages of the shootdowns it stands for (0: not set). The host flushes at the vCPU's next
    /// VM entry and clears it (x86.c `record_steal_time` -> `kvm_vcpu_flush_tlb_guest`:
    /// sim/line.rs `take_pv_tlb_flush`).
    pub flush_tlb_pages: u32,
}

impl Default for PvArea {
    fn default() -> Self {
        PvArea { preempted: false, steal_time_ns: 0, runnable: false, lock_mark: false, preempt_pending: false, flush_tlb_pages: 0 }
    }
}

/// The paravirtual channels a policy reads (`PolicyKind::channels`). A policy sees guest state
/// only through a channel it declares; none is declared by default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Channels {
    /// The guest's kernel function (`KernelFnSource`, `PolicyCtx::kernel_fn`).
    pub kernel_fn: bool,
}

/// Where the `kernel_fn` channel reads a vCPU's current kernel function: seed 002's hypervisor
/// reads the vCPU's instruction pointer, register state the host holds, and looks it up in the
/// guest's symbol table at the moment it asks, so the answer is the guest's function then. The
/// engine reads its guests' `GuestVcpu::func` (`sim::hypervisor_ops::GuestSymbols`); a policy
/// test hands a table (`Vec<KernelFn>`, indexed by vCPU).
///
/// Read on demand, not copied: a copy of every vCPU's function into its PV area before each
/// call of a policy that declared the channel costs O(vCPUs of the host) per call (at 1,024
/// pCPUs a seed-002 host spends 20 times as long per event that way as on 8: docs/speed.md).
pub trait KernelFnSource {
    /// `v`'s kernel function now; `None` for a vCPU the source does not know.
    fn kernel_fn(&self, v: VcpuId) -> Option<KernelFn>;
}

impl KernelFnSource for Vec<KernelFn> {
    fn kernel_fn(&self, v: VcpuId) -> Option<KernelFn> {
        self.get(v.idx()).copied()
    }
}

/// The source of a context made without one (`PolicyCtx::new`): it knows no vCPU.
pub struct NoSymbols;

impl KernelFnSource for NoSymbols {
    fn kernel_fn(&self, _v: VcpuId) -> Option<KernelFn> {
        None
    }
}

impl Channels {
    pub const NONE: Channels = Channels { kernel_fn: false };
}

/// The guest-kernel function a vCPU is executing: what a hypervisor could read from the
/// instruction pointer with the guest's symbol table (seed 002 section 3; seed 000 section 4.2
/// used it to locate LHPs). Policies see it only through an explicit paravirtual channel
/// (`Channels::kernel_fn`), which reads it when asked ([`KernelFnSource`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum KernelFn {
    /// Not in the kernel: user code.
    User,
    /// The idle loop / HLT.
    Idle,
    /// Generic system-call work (Syscall ops, mmap).
    Syscall,
    /// futex_wait (kernel/futex.c).
    FutexWait,
    /// futex_wake (kernel/futex.c).
    FutexWake,
    /// Unmapping and flush_tlb_others / native_flush_tlb_others (arch/x86/mm/tlb.c).
    FlushTlbOthers,
    /// An IPI handler: smp_reschedule_interrupt or flush_tlb_func.
    IpiHandler,
    // ---- Seed 002 Table 3 (Linux 4.4's critical functions) and the functions a vCPU spins or
    // waits in; the detection whitelist is hypervisor/critical_detect.rs. ----
    /// A device's hard IRQ (seed 002 Table 3, kernel/softirq.c `irq_enter` to the handler:
    /// Linux 4.4 `xen_evtchn_do_upcall` -> `handle_irq_event` -> netfront's
    /// `xennet_rx_interrupt` -> `napi_schedule`).
    IrqEnter,
    /// Softirq work on the way out of a hard IRQ (Table 3, kernel/softirq.c `irq_exit` ->
    /// `invoke_softirq` -> `__do_softirq` -> `net_rx_action`: the NAPI poll, TCP/UDP receive,
    /// the ACK and the reader's wake-up).
    IrqExit,
    /// handle_percpu_irq (kernel/irq/chip.c): the handler of a per-CPU (event channel) IRQ.
    HandlePercpuIrq,
    /// smp_call_function_single (kernel/smp.c): one IPI, waiting for its target.
    SmpCallFunctionSingle,
    /// smp_call_function_many (kernel/smp.c): IPIs to many, waiting (csd_lock_wait) for all.
    SmpCallFunctionMany,
    /// flush_tlb_mm_range / flush_tlb_page / flush_tlb_current_task (arch/x86/mm/tlb.c).
    FlushTlbMmRange,
    /// flush_tlb_func (arch/x86/mm/tlb.c): the TLB shootdown IPI's handler.
    FlushTlbFunc,
    /// leave_mm (arch/x86/mm/tlb.c): a lazy-TLB CPU leaving the mm.
    LeaveMm,
    /// get_page_from_freelist (mm/page_alloc.c).
    GetPageFromFreelist,
    /// free_one_page (mm/page_alloc.c).
    FreeOnePage,
    /// release_pages (mm/swap.c).
    ReleasePages,
    /// scheduler_ipi (kernel/sched/core.c): the reschedule IPI's work.
    SchedulerIpi,
    /// resched_curr (kernel/sched/core.c): sends a reschedule IPI.
    ReschedCurr,
    /// kick_process (kernel/sched/core.c).
    KickProcess,
    /// try_to_wake_up -> ttwu_do_activate / ttwu_do_wakeup / sched_ttwu_pending
    /// (kernel/sched/core.c).
    TtwuDoActivate,
    /// __raw_spin_unlock and its _irq / _irqrestore / _bh forms (spinlock_api_smp.h),
    /// __pv_queued_spin_unlock (kernel/locking/qspinlock_paravirt.h).
    RawSpinUnlock,
    /// __rwsem_do_wake / rwsem_wake (kernel/locking/rwsem-*.c).
    RwsemWake,
    /// Spinning for a spinlock: _raw_spin_lock* / queued_spin_lock_slowpath (not in Table 3:
    /// where a pause-loop exit finds a lock waiter; the released code's `is_lock_spinning`).
    RawSpinLock,
    /// __pv_queued_spin_lock_slowpath (kernel/locking/qspinlock_paravirt.h): the PV slow path
    /// (spinning, then blocking in SCHEDOP_poll).
    PvQueuedSpinLockSlowpath,
    /// rwsem_spin_on_owner (kernel/locking/rwsem.c, Linux 3.16+): a writer spinning while the
    /// semaphore's owner runs (`[guest] rwsem_spin`); the released seed-002 code's
    /// `is_lock_spinning` lists it.
    RwsemSpinOnOwner,
    // ---- Kernel paths outside Table 3 that the workload models' lock sections run in (Linux
    // 4.4's functions; a section names the function whose body takes the lock). ----
    /// pagevec_lru_move_fn (mm/swap.c): `__pagevec_lru_add` drains a pagevec onto the LRU lists
    /// under `zone->lru_lock`.
    PagevecLruMoveFn,
    /// free_pcppages_bulk (mm/page_alloc.c): a per-CPU page list returns a batch to the buddy
    /// lists under `zone->lock`.
    FreePcppagesBulk,
    /// d_alloc (fs/dcache.c): a new name under its parent directory's `d_lock`.
    DAlloc,
    /// d_delete (fs/dcache.c): an unlinked name under the dentry's `d_lock`.
    DDelete,
    /// wake_up_new_task (kernel/sched/core.c): a forked child enqueued under its run queue's lock.
    WakeUpNewTask,
    /// __pte_alloc (mm/memory.c): a new page table installed under `pmd_lock`.
    PteAlloc,
    /// __alloc_fd (fs/file.c): a file descriptor allocated under `files->file_lock`.
    AllocFd,
    /// __close_fd (fs/file.c): a file descriptor released under `files->file_lock`.
    CloseFd,
    /// jbd2_journal_dirty_metadata (fs/jbd2/transaction.c): a buffer filed under
    /// `journal->j_list_lock`.
    Jbd2JournalDirtyMetadata,
    /// skb_queue_tail (net/core/skbuff.c): a message queued on the receiving socket under its
    /// `sk_receive_queue.lock`.
    SkbQueueTail,
}

impl KernelFn {
    pub fn name(self) -> &'static str {
        match self {
            KernelFn::User => "user",
            KernelFn::Idle => "idle",
            KernelFn::Syscall => "syscall",
            KernelFn::FutexWait => "futex_wait",
            KernelFn::FutexWake => "futex_wake",
            KernelFn::FlushTlbOthers => "flush_tlb_others",
            KernelFn::IpiHandler => "ipi_handler",
            KernelFn::IrqEnter => "irq_enter",
            KernelFn::IrqExit => "irq_exit",
            KernelFn::HandlePercpuIrq => "handle_percpu_irq",
            KernelFn::SmpCallFunctionSingle => "smp_call_function_single",
            KernelFn::SmpCallFunctionMany => "smp_call_function_many",
            KernelFn::FlushTlbMmRange => "flush_tlb_mm_range",
            KernelFn::FlushTlbFunc => "flush_tlb_func",
            KernelFn::LeaveMm => "leave_mm",
            KernelFn::GetPageFromFreelist => "get_page_from_freelist",
            KernelFn::FreeOnePage => "free_one_page",
            KernelFn::ReleasePages => "release_pages",
            KernelFn::SchedulerIpi => "scheduler_ipi",
            KernelFn::ReschedCurr => "resched_curr",
            KernelFn::KickProcess => "kick_process",
            KernelFn::TtwuDoActivate => "ttwu_do_activate",
            KernelFn::RawSpinUnlock => "__raw_spin_unlock",
            KernelFn::RwsemWake => "rwsem_wake",
            KernelFn::RawSpinLock => "_raw_spin_lock",
            KernelFn::PvQueuedSpinLockSlowpath => "__pv_queued_spin_lock_slowpath",
            KernelFn::RwsemSpinOnOwner => "rwsem_spin_on_owner",
            KernelFn::PagevecLruMoveFn => "pagevec_lru_move_fn",
            KernelFn::FreePcppagesBulk => "free_pcppages_bulk",
            KernelFn::DAlloc => "d_alloc",
            KernelFn::DDelete => "d_delete",
            KernelFn::WakeUpNewTask => "wake_up_new_task",
            KernelFn::PteAlloc => "__pte_alloc",
            KernelFn::AllocFd => "__alloc_fd",
            KernelFn::CloseFd => "__close_fd",
            KernelFn::Jbd2JournalDirtyMetadata => "jbd2_journal_dirty_metadata",
            KernelFn::SkbQueueTail => "skb_queue_tail",
        }
    }

    /// Every function, in declaration order.
    pub const ALL: [KernelFn; 37] = [
        KernelFn::User,
        KernelFn::Idle,
        KernelFn::Syscall,
        KernelFn::FutexWait,
        KernelFn::FutexWake,
        KernelFn::FlushTlbOthers,
        KernelFn::IpiHandler,
        KernelFn::IrqEnter,
        KernelFn::IrqExit,
        KernelFn::HandlePercpuIrq,
        KernelFn::SmpCallFunctionSingle,
        KernelFn::SmpCallFunctionMany,
        KernelFn::FlushTlbMmRange,
        KernelFn::FlushTlbFunc,
        KernelFn::LeaveMm,
        KernelFn::GetPageFromFreelist,
        KernelFn::FreeOnePage,
        KernelFn::ReleasePages,
        KernelFn::SchedulerIpi,
        KernelFn::ReschedCurr,
        KernelFn::KickProcess,
        KernelFn::TtwuDoActivate,
        KernelFn::RawSpinUnlock,
        KernelFn::RwsemWake,
        KernelFn::RawSpinLock,
        KernelFn::PvQueuedSpinLockSlowpath,
        KernelFn::RwsemSpinOnOwner,
        KernelFn::PagevecLruMoveFn,
        KernelFn::FreePcppagesBulk,
        KernelFn::DAlloc,
        KernelFn::DDelete,
        KernelFn::WakeUpNewTask,
        KernelFn::PteAlloc,
        KernelFn::AllocFd,
        KernelFn::CloseFd,
        KernelFn::Jbd2JournalDirtyMetadata,
        KernelFn::SkbQueueTail,
    ];

    /// The function named `name` (its [`KernelFn::name`]).
    pub fn from_name(name: &str) -> Option<KernelFn> {
        KernelFn::ALL.into_iter().find(|f| f.name() == name)
    }

    /// The functions a program's kernel work may name (`{syscall = .., function = ..}`): every
    /// kernel function but the states and wait loops the guest kernel itself enters (user mode,
    /// idle, spinning for a lock, waiting for acknowledgements, the IPI and IRQ handlers).
    pub fn nameable_in_syscall(self) -> bool {
        !matches!(
            self,
            KernelFn::User
                | KernelFn::Idle
                | KernelFn::IpiHandler
                | KernelFn::IrqEnter
                | KernelFn::IrqExit
                | KernelFn::HandlePercpuIrq
                | KernelFn::FlushTlbFunc
                | KernelFn::SchedulerIpi
                | KernelFn::RawSpinLock
                | KernelFn::PvQueuedSpinLockSlowpath
                | KernelFn::RwsemSpinOnOwner
                | KernelFn::SmpCallFunctionMany
                | KernelFn::SmpCallFunctionSingle
        )
    }
}

#[cfg(test)]
mod tests {
    use super::KernelFn;

    #[test]
    fn every_kernel_function_is_listed_once_and_found_by_its_name() {
        for (i, f) in KernelFn::ALL.iter().enumerate() {
            // In declaration order, each once: the i-th entry is the i-th variant.
            assert_eq!(*f as usize, i, "{f:?} out of declaration order");
            assert_eq!(KernelFn::from_name(f.name()), Some(*f));
        }
        assert_eq!(KernelFn::from_name("release_page"), None);
        // Program work may name Table 3's and the models' functions, not the states and waits
        // the kernel enters by itself.
        assert!(KernelFn::GetPageFromFreelist.nameable_in_syscall() && KernelFn::Syscall.nameable_in_syscall());
        assert!(!KernelFn::User.nameable_in_syscall() && !KernelFn::RawSpinLock.nameable_in_syscall());
    }
}
