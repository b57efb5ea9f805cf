//! The state of one simulation run: every entity, indexed by id.

use super::speed_change::SpeedModel;
use crate::engine::event_queue::{EventId, EventQueue};
use crate::guest::kernel::{GuestEnv, GuestKernel};
use crate::hardware::costs::{Costs, Ple};
use crate::hardware::speed::Speed;
use crate::hardware::topology::Topology;
use crate::hypervisor::policy::{PcpuInfo, TimerId, VcpuInfo, VmInfo, VmSched};
use crate::ids::{PcpuId, PoolId, VcpuId};
use crate::metrics::trace::TraceSink;
use crate::metrics::vm_stats::VmStats;
use crate::time::Nanos;
use crate::vmexit::PvArea;

pub use crate::vmexit::{Ipi, TimeKind};

/// What a running vCPU is doing right now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Activity {
    /// Not on a pCPU.
    Off,
    /// Hypervisor work charged to this vCPU (context switch in, HLT exit).
    Overhead { halting: bool },
    /// Running an IPI handler.
    Irq,
    /// Running its current thread's front step.
    Thread,
    /// Waiting for a dispatch event (just scheduled in).
    Starting,
    /// KVM halt polling after a HLT (`[host.halt_poll]`, sim/mechanisms/halt_poll/): host time, spent
    /// waiting for a wake-up on its pCPU.
    HaltPoll,
}

/// Where a vCPU's guest state lives: `Sim::guests[vm].vcpus[index]` (its VM and its index in
/// it, as in `VcpuInfo`), kept beside the host's state so the hot path finds it with no extra
/// load.
#[derive(Clone, Copy, Debug)]
pub struct GuestSlot {
    pub vm: u32,
    pub index: u32,
}

/// The host's state of a vCPU, what a hypervisor has: activity, epochs and time accounting,
/// speed, PLE counters, yielding. The hypervisor's view handed to policies lives in
/// `Sim::vinfo`; the guest kernel's per-vCPU state in `Sim::guests[vm].vcpus[index]` (`slot`).
pub struct Vcpu {
    /// Where its guest state is.
    pub slot: GuestSlot,
    pub activity: Activity,
    /// What the current activity's time is charged to.
    pub time_kind: TimeKind,
    /// When the current accounting segment began.
    pub seg_start: Nanos,
    /// Remaining work (work-ns, `hardware/speed.rs`) of a timed overhead or IRQ handler; a
    /// thread step's is its `step_remaining`.
    pub remaining: Nanos,
    /// The speed its pCPU advances its work at (set at switch-in, changed by `speed_changed`).
    pub speed: Speed,
    /// Bumped whenever its current activity changes: stale events carry an older epoch.
    pub epoch: u64,
    /// Its pause-loop-exit window in cycles (KVM VMX `vmx->ple_window`: grown at each exit,
    /// shrunk when it is scheduled in again; `hardware/costs.rs` `Ple`).
    pub ple_cycles: u64,
    /// `ple_cycles` in nanoseconds (recomputed when it changes, so arming a spin is a load).
    pub ple_ns: Nanos,
    /// When its armed pause-loop exit is due: a spin's start plus its window, moved later when a
    /// store from far enough away starts its PAUSE loop again (`PLE_Gap`, `Sim::line_store`); the
    /// armed event, on finding it later, re-arms itself there.
    pub ple_due: Nanos,
    /// Leaving its pCPU by a pause-loop yield (voluntary: not a preemption).
    pub yielding: bool,
    /// Since when it has been runnable but not running (for the PV area's steal time and the
    /// runnable-wait metrics).
    pub runnable_since: Nanos,
    /// Its current runnable wait began with a wake-up (so it is a scheduling latency), not at
    /// creation, a preemption or a yield.
    pub woken: bool,
    /// The event of its spinlock-kicker event channel is pending (Xen `evtchn_set_pending` by
    /// a `Hypercall::Kick`; cleared when its guest polls again, `xen_clear_irq_pending`).
    pub kick_pending: bool,
    /// In a `Hypercall::Poll`: paying its exit (`Activity::Overhead { halting: true }`) or
    /// blocked in it (Halted). Cleared when it is woken or the poll returns at once.
    pub polling: bool,
    /// KVM `vcpu->halt_poll_ns`: how long its next halt polls (`[host.halt_poll]`).
    pub halt_poll_ns: Nanos,
    /// When its current halt began (`kvm_vcpu_halt`'s `start`), until it runs guest code again;
    /// only with halt polling on.
    pub halt_start: Option<Nanos>,
}

pub struct Pcpu {
    /// Started scheduling (policies' reschedule requests before that are ignored).
    pub online: bool,
    /// The last vCPU that ran here (a context switch costs only when it changes).
    pub last: Option<VcpuId>,
    /// The pending slice-end event.
    pub slice_event: Option<EventId>,
    /// When the current vCPU started here (for the trace).
    pub run_start: Nanos,
}

pub struct Vm {
    /// The scheduling settings the policy was last given (`Policy::adjust`).
    pub sched: VmSched,
    /// `[[vm.sched_pe]]`: the `VmSched::params` the VM takes at each change, in time order.
    pub sched_changes: Vec<crate::params::Params>,
    pub progress_unit: &'static str,
    pub workload: String,
    /// The program's closed-loop clients (`Program::clients`: ab's concurrency), if any.
    pub clients: Option<u32>,
    pub stats: VmStats,
    /// `bare_metal`: runs on its own pCPUs with no hypervisor (no PLE, native costs).
    pub bare_metal: bool,
    /// `native`: a host process (no PLE, native costs, non-preemptible kernel sections).
    pub native: bool,
    /// Whether its guest kernel's spinlock waits execute PAUSE, which pause-loop exiting counts
    /// (every kind but `SpinlockKind::Debug`, whose trylock loop has none).
    pub spin_pauses: bool,
}

impl Vm {
    /// Whether the VM runs under a hypervisor (neither bare metal nor a host process): only
    /// then do pause loops exit.
    #[inline]
    pub fn virtualized(&self) -> bool {
        !(self.bare_metal || self.native)
    }
}

#[derive(Clone, Copy, Debug)]
pub enum Event {
    /// A vCPU scheduled in starts executing.
    Dispatch(VcpuId, u64),
    /// The current timed activity of a vCPU ends.
    ActivityDone(VcpuId, u64),
    /// Pause-loop exit of a spinning vCPU.
    PauseLoopExit(VcpuId, u64),
    /// A virtual IPI reaches a running vCPU.
    IpiArrive(VcpuId, Ipi),
    /// The slice the policy gave a pCPU ends.
    SliceEnd(PcpuId),
    /// A policy-owned timer expires (only armed timers have a live event: see `Sim::calls`).
    PolicyTimer(TimerId),
    /// `[[host.pool_change]]`: pCPU moves to the pool (index into the scenario's pools).
    PoolChange(PcpuId, PoolId),
    /// The guest timer tick of a vCPU with several runnable threads.
    GuestTick(VcpuId),
    /// A pCPU makes its first scheduling decision.
    PcpuOnline(PcpuId),
    /// An event a host mechanism owns (sim/mechanisms/).
    Mechanism(super::mechanisms::MechanismEvent),
    /// `[[vm.sched_pe]]`: the VM's `VmSched::params` become its `sched_changes[i]`.
    VmReconfigure(crate::ids::VmId, u32),
}

pub struct Sim {
    pub(in crate::sim) now: Nanos,
    pub(in crate::sim) queue: EventQueue<Event>,
    pub(in crate::sim) events: u64,
    /// Of `events`, those that found their vCPU's epoch moved on and did nothing (a `Dispatch`,
    /// `ActivityDone` or `PauseLoopExit` made stale by a switch or a re-timed activity). For
    /// `vcpusim bench` only (it reports live events); no output includes it.
    pub(in crate::sim) stale_events: u64,
    pub(in crate::sim) topology: Topology,
    pub(in crate::sim) costs: Costs,
    pub(in crate::sim) ple: Ple,
    /// `ple.ns(ple.window_cycles)`: the base PLE window, precomputed.
    pub(in crate::sim) ple_base_ns: Nanos,
    /// The cpupools with their policies, each pCPU's and vCPU's pool, affinities and the facts
    /// kept from them (sim/placement.rs).
    pub(in crate::sim) placement: super::placement::Placement,
    /// The policies' requests not carried out yet and their timers (sim/policy_calls.rs).
    pub(in crate::sim) calls: super::policy_calls::PolicyCalls,
    pub(in crate::sim) vinfo: Vec<VcpuInfo>,
    pub(in crate::sim) pinfo: Vec<PcpuInfo>,
    pub(in crate::sim) vminfo: Vec<VmInfo>,
    pub(in crate::sim) vcpus: Vec<Vcpu>,
    /// Each vCPU's paravirtual area (`vmexit::PvArea`): host-written preempted flag, steal time
    /// and runstate, guest-written lock mark and TLB-flush request. (The kernel function is not
    /// in it: a policy's channel reads it in the guest, `GuestSymbols`.)
    pub(in crate::sim) pv: Vec<PvArea>,
    pub(in crate::sim) pcpus: Vec<Pcpu>,
    pub(in crate::sim) vms: Vec<Vm>,
    /// The guests (sim/guests.rs, an owned part): one kernel per VM (`guest/kernel.rs`: its
    /// per-vCPU state, sync objects, futexes, shootdowns) and every thread and spinlock.
    pub(in crate::sim) guests: super::guests::Guests,
    /// IPIs sent and not yet arrived (for deadlock detection).
    pub(in crate::sim) ipis_in_flight: u64,
    pub(in crate::sim) trace: Option<TraceSink>,
    pub(in crate::sim) check: bool,
    pub(in crate::sim) stop: Option<crate::error::SimError>,
    /// VMs with an iteration target that have not reached it.
    pub(in crate::sim) unfinished_targets: usize,
    /// When each pCPU comes online (see HostSpec::start_skew).
    pub(in crate::sim) online_at: Vec<Nanos>,
    /// How fast each pCPU advances the work of the vCPU it runs (`hardware/speed.rs`).
    pub(in crate::sim) speed_model: Box<dyn SpeedModel>,
    /// `speed_model.is_constant()` and no VM slowed by `vm_speed`, cached: the default model
    /// must cost nothing.
    pub(in crate::sim) speed_constant: bool,
    /// Each vCPU's current speed split into contention factors (`SpeedModel::speed_parts`), for
    /// the per-VM slowdown counts; sized by `set_speed_model` (empty under the constant model).
    pub(in crate::sim) speed_factors: Vec<crate::hardware::contention::Factors>,
    /// Busy time of every pCPU by VM and the seed-001 competing-modules average (`pcpu_usage.rs`).
    pub(in crate::sim) usage: crate::metrics::pcpu_usage::PcpuUsage,
    /// Each VM's costs: the host's `[host.costs]`, or `Costs::native` for a bare-metal VM.
    pub(in crate::sim) vm_costs: Vec<crate::hardware::costs::Costs>,
    /// Each VM's fixed speed factor (`[host.costs] virt_overhead`; 1.0 on bare metal), by VM.
    pub(in crate::sim) vm_speed: Vec<Speed>,
    /// The host mechanisms the scenario turns on (sim/mechanisms/).
    pub(in crate::sim) mechanisms: super::mechanisms::Mechanisms,
}

impl Sim {
    /// Where `v`'s guest state is: (VM, index in the VM).
    #[inline]
    pub fn gslot(&self, v: VcpuId) -> (usize, usize) {
        let s = self.vcpus[v.idx()].slot;
        (s.vm as usize, s.index as usize)
    }

    /// VM `vm`'s guest kernel and what its operations need from the host's tables.
    #[inline]
    pub fn guest_env(&mut self, vm: usize) -> (&mut GuestKernel, GuestEnv<'_>) {
        self.guests.env(vm, &self.vm_costs[vm], &mut self.pv, self.now)
    }
}

/// What a run's state shows outside the engine core (the result tables, the tests, the benches):
/// read only; the core alone changes it, each owned part through its methods.
impl Sim {
    /// The simulated time now.
    pub fn now(&self) -> Nanos {
        self.now
    }
    /// Events handled so far.
    pub fn events(&self) -> u64 {
        self.events
    }
    /// Events popped and found cancelled or superseded.
    pub fn stale_events(&self) -> u64 {
        self.stale_events
    }
    /// The pending events.
    pub fn queue(&self) -> &EventQueue<Event> {
        &self.queue
    }
    /// When the earliest pending event is due (None: none is).
    pub fn next_event_at(&mut self) -> Option<Nanos> {
        self.queue.peek_time()
    }
    /// The host's topology.
    pub fn topology(&self) -> &Topology {
        &self.topology
    }
    /// The host's costs (before per-VM overrides: `vm_costs`).
    pub fn costs(&self) -> &Costs {
        &self.costs
    }
    /// Each VM's costs.
    pub fn vm_costs(&self) -> &[Costs] {
        &self.vm_costs
    }
    /// The pause-loop exit window's settings.
    pub fn ple(&self) -> &Ple {
        &self.ple
    }
    /// Whether every vCPU runs at constant speed (no contention model).
    pub fn speed_constant(&self) -> bool {
        self.speed_constant
    }
    /// The pools, their policies, affinities and channels.
    pub fn placement(&self) -> &super::placement::Placement {
        &self.placement
    }
    /// What the hypervisor knows of each vCPU, pCPU and VM (what a policy sees).
    pub fn vinfo(&self) -> &[VcpuInfo] {
        &self.vinfo
    }
    pub fn pinfo(&self) -> &[PcpuInfo] {
        &self.pinfo
    }
    pub fn vminfo(&self) -> &[VmInfo] {
        &self.vminfo
    }
    /// The host's own records of each vCPU, pCPU and VM.
    pub fn vcpus(&self) -> &[Vcpu] {
        &self.vcpus
    }
    pub fn pcpus(&self) -> &[Pcpu] {
        &self.pcpus
    }
    pub fn vms(&self) -> &[Vm] {
        &self.vms
    }
    /// Each vCPU's paravirtual area.
    pub fn pv(&self) -> &[PvArea] {
        &self.pv
    }
    /// The guests: kernels, threads and locks.
    pub fn guests(&self) -> &super::guests::Guests {
        &self.guests
    }
    /// For tests that drive one guest kernel's operations by hand on a built run (the guest
    /// scheduler's wake placement, IRS's migrator): VM `vm`'s kernel, the thread table and the
    /// PV areas. The engine's own code never calls it.
    #[doc(hidden)]
    pub fn drive_guest(&mut self, vm: usize) -> (&mut GuestKernel, &mut [crate::guest::thread::Thread], &mut [PvArea]) {
        let (g, threads) = self.guests.kernel_and_threads(vm);
        (g, threads, &mut self.pv)
    }
    /// For tests: the placement, to change before the start (`Placement::set_affinity`) or to
    /// corrupt on purpose (the doc-hidden `corrupt_*` hooks, to see check mode catch it).
    #[doc(hidden)]
    pub fn placement_mut(&mut self) -> &mut super::placement::Placement {
        &mut self.placement
    }
    /// For tests: the mechanisms' state, to corrupt on purpose (check mode must catch it).
    #[doc(hidden)]
    pub fn mechanisms_mut(&mut self) -> &mut super::mechanisms::Mechanisms {
        &mut self.mechanisms
    }
    /// For tests: VM `vm`'s counters, to corrupt on purpose (check mode must catch it).
    #[doc(hidden)]
    pub fn corrupt_vm_stats(&mut self, vm: usize) -> &mut VmStats {
        &mut self.vms[vm].stats
    }
    /// Whether the run checks its invariants after every event.
    pub fn check_mode(&self) -> bool {
        self.check
    }
    /// The trace being recorded, if the run records one.
    pub fn trace(&self) -> Option<&TraceSink> {
        self.trace.as_ref()
    }
    /// Limit the trace, if the run records one, to events in `window` and to `max` events.
    pub fn limit_trace(&mut self, window: Option<(Nanos, Nanos)>, max: Option<usize>) {
        if let Some(tr) = self.trace.as_mut() {
            if let Some((from, to)) = window {
                tr.set_window(from, to);
            }
            if let Some(max) = max {
                tr.set_max(max);
            }
        }
    }
    /// Each VM's use of each pCPU, and the competing-modules averages.
    pub fn usage(&self) -> &crate::metrics::pcpu_usage::PcpuUsage {
        &self.usage
    }
    /// The host mechanisms a scenario turned on.
    pub fn mechanisms(&self) -> &super::mechanisms::Mechanisms {
        &self.mechanisms
    }
}
