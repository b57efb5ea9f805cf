//! The hypervisor scheduling-policy interface.
//!
//! Modelled on Xen's `struct scheduler` (xen/common/sched/private.h: `insert_unit`, `wake`,
//! `sleep`, `yield`, `do_schedule -> (next, slice)`) with sched_ext's split between decisions
//! and notifications (kernel/sched/ext_internal.h). A policy never touches engine state: it reads
//! a [`HostView`] and asks for things through [`PolicyCtx`] (reschedule a pCPU, arm a timer),
//! which the engine carries out after the call returns. That keeps the engine's invariants in one
//! place and lets every policy be tested with the same suite.

use crate::engine::event_queue::EventId;
/// The host as a policy reads it (hypervisor/host_view.rs), named with the interface.
pub use crate::hypervisor::host_view::{HostView, PcpuInfo, VcpuInfo, VcpuState, VmInfo};
pub use crate::hypervisor::vm_sched::VmSched;
use crate::ids::{PcpuId, VcpuId, VmId};
use crate::time::Nanos;
/// The guest's interrupt kinds belong to the VM-exit line (`vmexit.rs`); re-exported here for
/// the policies that name them.
pub use crate::vmexit::IpiKind;
use crate::vmexit::{Channels, KernelFn, KernelFnSource, NoSymbols};

/// Why a running vCPU gives up its pCPU voluntarily.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum YieldReason {
    /// Pause-loop exit: it spun in the guest kernel longer than the PLE window.
    PauseLoop,
    /// The guest asked (Xen `SCHEDOP_yield`, `Hypercall::Yield`): Linux 4.4's
    /// `xen_smp_send_call_function_ipi` after sending call-function IPIs to a vCPU whose
    /// runstate is runnable (seed 002 section 5's "IPI" yields).
    Hypercall,
    /// The guest asked for a directed yield to a preempted sibling (`KVM_HC_SCHED_YIELD`, Linux
    /// 5.3+: arch/x86/kvm/x86.c `kvm_sched_yield`), from the Linux 6.x guest's
    /// `kvm_smp_send_call_func_ipi` (`pv_sched_yield`). A KVM host scheduler answers with its
    /// `yield_to`; any other policy treats it as its plain yield.
    DirectedTo(VcpuId),
}

/// Index of a policy-owned timer in the engine's [`TimerTable`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TimerId(pub u32);

/// A timer a policy owns (Xen's `struct timer`, made by `init_timer`): a handle the policy keeps
/// in its private data (credit.c's `spc->ticker`, `prv->master_ticker`) and passes to
/// [`PolicyCtx::set_timer`] / [`PolicyCtx::stop_timer`]. When it fires, the policy's `on_timer`
/// gets the key it was made with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timer {
    id: TimerId,
}

impl Timer {
    pub fn id(&self) -> TimerId {
        self.id
    }
}

/// One row of the engine's timer table.
#[derive(Clone, Debug)]
pub struct TimerEntry {
    /// The policy instance that owns the timer: its cpupool's index (`PoolId`; 0 on a host with
    /// one pool), whose policy `on_timer` is called on.
    pub owner: u32,
    /// What `on_timer` is called with.
    pub key: u64,
    /// The pending expiry's event, while armed.
    pub pending: Option<EventId>,
}

/// Every policy-owned timer of a host: its owner, key and pending expiry. The engine (and the
/// policy test hosts) arm and cancel the events; policies only hold [`Timer`] handles.
#[derive(Clone, Debug, Default)]
pub struct TimerTable {
    entries: Vec<TimerEntry>,
}

impl TimerTable {
    /// `init_timer`: a new, unarmed timer.
    pub fn init(&mut self, owner: u32, key: u64) -> Timer {
        let id = TimerId(self.entries.len() as u32);
        self.entries.push(TimerEntry { owner, key, pending: None });
        Timer { id }
    }
    pub fn entry(&self, id: TimerId) -> &TimerEntry {
        &self.entries[id.0 as usize]
    }
    /// Record `event` as the pending expiry of `id`; returns the one it replaces (to cancel).
    pub fn arm(&mut self, id: TimerId, event: EventId) -> Option<EventId> {
        self.entries[id.0 as usize].pending.replace(event)
    }
    /// Disarm `id`; returns its pending expiry (to cancel), if any.
    pub fn disarm(&mut self, id: TimerId) -> Option<EventId> {
        self.entries[id.0 as usize].pending.take()
    }
    /// The expiry of `id` popped (hosts cancel superseded expiries, so it is the pending one):
    /// disarm it and return (owner, key) for `on_timer`; None if it was not armed.
    pub fn fire(&mut self, id: TimerId) -> Option<(u32, u64)> {
        let e = &mut self.entries[id.0 as usize];
        e.pending.take().map(|_| (e.owner, e.key))
    }
    pub fn len(&self) -> usize {
        self.entries.len()
    }
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// A request a policy makes; the engine carries it out after the policy call returns.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Request {
    /// Run `do_schedule` on this pCPU now (Xen: raise SCHEDULE_SOFTIRQ; Linux: resched_curr).
    Reschedule(PcpuId),
    /// Arm the timer to expire at this time, cancelling its pending expiry first (Xen
    /// `set_timer`).
    SetTimer { timer: TimerId, at: Nanos },
    /// Disarm the timer (Xen `stop_timer`); harmless if it is not armed.
    StopTimer(TimerId),
    /// For the metrics: this vCPU entered urgent state (UVF, `urgent_count`).
    UrgentEntered(VcpuId),
    /// Move this vCPU into another cpupool now (the host's `Sim::move_vcpu`; seed 002's
    /// micro-sliced cores move a vCPU into a short-slice pool and back).
    MoveToPool(VcpuId, crate::ids::PoolId),
    /// Seed 002: move this preempted vCPU into the micro-sliced pool for one micro slice, for
    /// this reason, found in this kernel function (`sim/mechanisms/microsliced/` `Sim::accelerate`; refused
    /// when no micro pCPU is free).
    Accelerate(VcpuId, crate::hypervisor::critical_events::AccelReason, crate::vmexit::KernelFn),
    /// Seed 002: count one urgent event for Algorithm 1 (`sim/mechanisms/microsliced/algorithm.rs`).
    CountUrgent(crate::hypervisor::critical_events::UrgentEvent),
    /// Seed 002: the yield of this vCPU does not happen (the released code's `do_yield = 0`);
    /// with `true`, only if an `Accelerate` of the same call succeeded.
    SkipYield(VcpuId, bool),
    /// The policy of this pool (its index) cannot go on: the run stops after the current event
    /// with the reason its [`Policy::failure`] gives ([`PolicyCtx::fail`]).
    Fail(u32),
}

/// The context of one policy call: the host view plus a request list.
pub struct PolicyCtx<'a> {
    pub host: HostView<'a>,
    requests: &'a mut Vec<Request>,
    timers: &'a mut TimerTable,
    /// The policy instance being called (the owner recorded for its timers).
    owner: u32,
    /// Where the guests' kernel functions are read, and the channels this policy declared.
    symbols: &'a dyn KernelFnSource,
    channels: Channels,
}

impl<'a> PolicyCtx<'a> {
    pub fn new(host: HostView<'a>, requests: &'a mut Vec<Request>, timers: &'a mut TimerTable) -> Self {
        PolicyCtx { host, requests, timers, owner: 0, symbols: &NoSymbols, channels: Channels::NONE }
    }
    /// The context of a policy that declared `channels`, reading kernel functions from `symbols`.
    pub fn with_symbols(self, symbols: &'a dyn KernelFnSource, channels: Channels) -> Self {
        PolicyCtx { symbols, channels, ..self }
    }
    /// The kernel function `v` executes now, if this policy declared the `kernel_fn` channel
    /// (`PolicyKind::channels`); `None` otherwise.
    pub fn kernel_fn(&self, v: VcpuId) -> Option<KernelFn> {
        if !self.channels.kernel_fn {
            return None;
        }
        self.symbols.kernel_fn(v)
    }
    /// The context of the policy instance `owner` (its cpupool's index): its timers are its own,
    /// and it reads the guests' kernel functions from `symbols` if it declared that channel.
    #[inline]
    pub fn for_owner(
        host: HostView<'a>,
        requests: &'a mut Vec<Request>,
        timers: &'a mut TimerTable,
        owner: u32,
        symbols: &'a dyn KernelFnSource,
        channels: Channels,
    ) -> Self {
        PolicyCtx { host, requests, timers, owner, symbols, channels }
    }
    pub fn now(&self) -> Nanos {
        self.host.now
    }
    /// Ask for `do_schedule` on `pcpu` (a preemption check there).
    pub fn reschedule(&mut self, pcpu: PcpuId) {
        self.requests.push(Request::Reschedule(pcpu));
    }
    /// Count one entry of `v` into urgent state (UVF) in its VM's `urgent_count`.
    pub fn note_urgent(&mut self, v: VcpuId) {
        self.requests.push(Request::UrgentEntered(v));
    }
    /// Ask the host to move `v` into pool `pool` (Xen: `sched_move_domain` for one unit). Carried
    /// out after the call: the vCPU leaves this policy through `remove_vcpu`.
    pub fn move_to_pool(&mut self, v: VcpuId, pool: crate::ids::PoolId) {
        self.requests.push(Request::MoveToPool(v, pool));
    }
    /// Seed 002: ask the host to accelerate preempted `v` on a micro-sliced core (`reason`, found
    /// in `func`).
    pub fn accelerate(&mut self, v: VcpuId, reason: crate::hypervisor::critical_events::AccelReason, func: KernelFn) {
        self.requests.push(Request::Accelerate(v, reason, func));
    }
    /// Seed 002: count an urgent event for Algorithm 1.
    pub fn count_urgent(&mut self, event: crate::hypervisor::critical_events::UrgentEvent) {
        self.requests.push(Request::CountUrgent(event));
    }
    /// Seed 002: the yield being handled does not happen (`if_accelerated`: only if this call's
    /// acceleration succeeded).
    pub fn skip_yield(&mut self, v: VcpuId, if_accelerated: bool) {
        self.requests.push(Request::SkipYield(v, if_accelerated));
    }
    /// Stop the run: this policy cannot go on (a policy written in Python raised an exception).
    /// The engine finishes the current event, asks [`Policy::failure`] why, and returns that
    /// as [`SimError::Policy`](crate::SimError::Policy); the policy should answer every later
    /// call of that event as simply as it can (an idle pCPU, no requests).
    pub fn fail(&mut self) {
        self.requests.push(Request::Fail(self.owner));
    }
    /// Xen `init_timer`: a new timer of this policy, unarmed; `on_timer(key)` when it fires.
    pub fn init_timer(&mut self, key: u64) -> Timer {
        self.timers.init(self.owner, key)
    }
    /// Xen `set_timer`: arm `timer` to fire at `at` (clamped to now). A pending expiry is
    /// cancelled first, so a timer fires at most once per arming.
    pub fn set_timer(&mut self, timer: &Timer, at: Nanos) {
        let at = at.max(self.host.now);
        self.requests.push(Request::SetTimer { timer: timer.id, at });
    }
    /// Xen `stop_timer`: disarm `timer`; its pending expiry never fires.
    pub fn stop_timer(&mut self, timer: &Timer) {
        self.requests.push(Request::StopTimer(timer.id));
    }
}

/// The answer of `do_schedule`: what runs next on the pCPU and for how long at most.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    /// The vCPU to run; `None` leaves the pCPU idle.
    pub next: Option<VcpuId>,
    /// Call `do_schedule` again after this long, unless something else does first.
    pub slice: Option<Nanos>,
}

impl Decision {
    pub fn idle() -> Self {
        Decision { next: None, slice: None }
    }
    pub fn run(v: VcpuId, slice: Option<Nanos>) -> Self {
        Decision { next: Some(v), slice }
    }
}

/// A hypervisor scheduling policy.
///
/// Life cycle of a vCPU as the policy sees it:
/// `insert_vcpu` (Runnable) -> picked by `do_schedule` (Running) -> either preempted by a later
/// `do_schedule` on its pCPU that returns someone else (Runnable again; the policy must have
/// re-queued it), or `sleep` (Halted, the policy drops it) followed by `do_schedule` on its pCPU,
/// and later `wake` (Runnable). `yield_vcpu` precedes a `do_schedule` on the yielder's pCPU.
///
/// Contract checked by the engine: `do_schedule(p)` returns either the vCPU currently running on
/// `p` or a Runnable vCPU; never a Halted one, never one running on another pCPU. When
/// `keeps_current(p)` says true the engine takes that answer for `do_schedule(p)`'s without
/// calling it, so it must be exact (check mode verifies it).
pub trait Policy {
    /// The name scenarios use (`policy = "credit"`).
    fn name(&self) -> &'static str;

    /// A vCPU enters the system, Runnable. Called for every vCPU before the first `do_schedule`.
    fn insert_vcpu(&mut self, ctx: &mut PolicyCtx, v: VcpuId);

    /// A Halted vCPU became Runnable (an interrupt arrived). Choose where it waits and tickle a
    /// pCPU if it should run soon (Xen `wake` + `__runq_tickle`; Linux `try_to_wake_up`).
    /// `waker` is the pCPU whose exit caused the wakeup (the IPI sender's: Linux's
    /// `smp_processor_id()` in try_to_wake_up), or None when no running vCPU caused it.
    fn wake(&mut self, ctx: &mut PolicyCtx, v: VcpuId, waker: Option<PcpuId>);

    /// The running vCPU `v` halted. The engine calls `do_schedule` on its pCPU next.
    fn sleep(&mut self, ctx: &mut PolicyCtx, v: VcpuId);

    /// The running vCPU `v` yields. The engine calls `do_schedule` on its pCPU next.
    fn yield_vcpu(&mut self, ctx: &mut PolicyCtx, v: VcpuId, reason: YieldReason);

    /// Choose what runs next on `pcpu`. The vCPU running there now (if any, and if still
    /// Running) is the previous one; if another is chosen it becomes Runnable, so it must be
    /// kept queued by the policy.
    fn do_schedule(&mut self, ctx: &mut PolicyCtx, pcpu: PcpuId) -> Decision;

    /// Whether `do_schedule(pcpu)`, called now, would keep the vCPU running on `pcpu` with no
    /// slice (`Decision::run(current, None)`), change no state of the policy and make no
    /// request: then the engine skips the call (a pause-loop exit's second reschedule, once its
    /// directed yield has already switched the pCPU). Asked only while the vCPU current on
    /// `pcpu` is Running. A policy must answer true only when that holds (check mode calls
    /// `do_schedule` all the same and stops the run if it does not); false, the default, is
    /// always correct.
    fn keeps_current(&self, _pcpu: PcpuId) -> bool {
        false
    }

    /// A timer of this policy (`ctx.init_timer(key)`) fired; called only for a timer still armed
    /// at its expiry (Xen: the timer's handler function).
    fn on_timer(&mut self, _ctx: &mut PolicyCtx, _key: u64) {}

    /// Notification: the guest on `from` sent an IPI to `to`. The hypervisor sees this because
    /// sending an IPI exits to it (seed 000 section 3.1).
    fn ipi_sent(&mut self, _ctx: &mut PolicyCtx, _from: VcpuId, _to: VcpuId, _kind: IpiKind) {}

    /// Notification: the running vCPU `v` starts preparing an IPI send (its first APIC access,
    /// which exits without APICv; the IPI's kind is not known yet: seed 000 section 4.1.1).
    fn ipi_send_started(&mut self, _ctx: &mut PolicyCtx, _v: VcpuId) {}

    /// Notification: `v` finished handling an IPI of this kind (its EOI exit).
    fn ipi_handled(&mut self, _ctx: &mut PolicyCtx, _v: VcpuId, _kind: IpiKind) {}

    /// The scheduling settings of `vm` (Xen `.adjust`: `sched_adjust` -> `csched_dom_cntl`
    /// with `XEN_DOMCTL_SCHEDOP_putinfo`). Called for every VM before any vCPU is inserted, and
    /// again between events whenever a setting changes at run time (a scenario's
    /// `[[vm.sched_pe]]`, seed 004's `xm sched-pe`), with the VM's vCPUs wherever they are. The
    /// policy keeps what it needs in its own per-VM data (credit.c's `csched_dom`).
    fn adjust(&mut self, ctx: &mut PolicyCtx, vm: VmId, sched: &VmSched);

    /// Where `v` should run in this pool (Xen `pick_resource`, placement apart from `wake`); the
    /// host asks when it moves `v` into this pool (`Sim::move_vcpu`, as `sched_move_domain` does
    /// with `sched_pick_resource`) and checks the answer is a pCPU `v` may run on. The default:
    /// `v`'s last pCPU if allowed, else the first allowed pCPU of the pool after it.
    fn pick_pcpu(&mut self, ctx: &mut PolicyCtx, v: VcpuId) -> Option<PcpuId> {
        default_pick_pcpu(&ctx.host, v)
    }

    /// `v`'s hard or soft affinity just changed (the host view has the new masks; Xen
    /// `adjust_affinity`, then `sched_set_affinity` -> `vcpu_migrate`): a vCPU queued or running
    /// where it may no longer run must move now. Only called for policies whose kind says
    /// `supports_pool_changes`.
    fn adjust_affinity(&mut self, _ctx: &mut PolicyCtx, _v: VcpuId) {}

    /// vCPU `v` leaves this policy's pool (Xen `remove_unit`, in `sched_move_domain`): drop it
    /// from every queue and private list. The engine has switched it out already if it was
    /// running (it is Runnable or Halted). Only called for policies whose kind says
    /// `supports_pool_changes`; the vCPU is `insert_vcpu`'d into its new pool next (when it is
    /// Runnable; a Halted one is inserted when it wakes).
    fn remove_vcpu(&mut self, _ctx: &mut PolicyCtx, _v: VcpuId) {}

    /// pCPU `p` leaves this policy's pool (Xen `cpupool_unassign_cpu`: `cpu_disable_scheduler`
    /// moves every unit off it, then `deinit_pdata` / `free_pdata`). The host view no longer
    /// lists `p`; the vCPU that ran there has already been switched out (Runnable, or Halted) and
    /// the policy must place it, and every vCPU it queued on `p`, on its remaining pCPUs (with
    /// their affinity), stop `p`'s timers and drop `p` from its idle sets. Only called for
    /// policies whose kind says `supports_pool_changes`.
    fn remove_pcpu(&mut self, _ctx: &mut PolicyCtx, _p: PcpuId) {}

    /// pCPU `p` joins this policy's pool, idle (Xen `cpupool_assign_cpu_locked` →
    /// `schedule_cpu_add`: `init_pdata` and `switch_sched`). The engine calls `do_schedule(p)`
    /// next. Only called for policies whose kind says `supports_pool_changes`.
    fn add_pcpu(&mut self, _ctx: &mut PolicyCtx, _p: PcpuId) {}

    /// Seed 002's micro-sliced cores, if this policy carries them (credit): the host lends
    /// it vCPUs and relays it virtual IRQs through [`MicroSliced`]. None by default.
    fn microsliced(&mut self) -> Option<&mut dyn MicroSliced> {
        None
    }

    /// A preemption overlay's seam, if this policy can hold an involuntary preemption back
    /// (credit; `[host] overlay`, sim/mechanisms/preemption_overlay/rule.rs): [`HoldPreemption`]. None by default.
    fn hold_preemption(&mut self) -> Option<&mut dyn HoldPreemption> {
        None
    }

    /// The KVM host scheduler's part, if this policy is one (cfs, eevdf): [`KvmHost`]. None by
    /// default: a host without `single_task_running` answers it true (a halting vCPU polls its
    /// whole `halt_poll_ns`) and has no `KVM_HC_KICK_CPU` yield.
    fn kvm_host(&mut self) -> Option<&mut dyn KvmHost> {
        None
    }

    /// Why this policy asked to stop the run ([`PolicyCtx::fail`]); asked once, after the call
    /// that failed.
    fn failure(&mut self) -> Option<String> {
        None
    }

    /// Check the policy's own invariants (used in check mode after every event).
    fn check(&self, _host: &HostView) -> Result<(), String> {
        Ok(())
    }
}

/// `Policy::pick_pcpu`'s default: `v`'s last pCPU if it may run there, else the first pCPU of
/// the pool after it that it may run on, else the first such pCPU.
pub fn default_pick_pcpu(host: &HostView, v: VcpuId) -> Option<PcpuId> {
    let last = host.vcpu(v).last_pcpu;
    if host.may_run(v, last) {
        return Some(last);
    }
    host.pcpu_ids().find(|p| *p > last && host.may_run(v, *p)).or_else(|| host.pcpu_ids().find(|p| host.may_run(v, *p)))
}

/// Seed 002's micro-sliced cores (`[host.microsliced]`) as the policy of their parent pool
/// carries them (`Policy::microsliced`). The policy detects critical services with the
/// `Detect` it was built with (`HostShape::microsliced`) at its yield entry, `ipi_sent` and
/// `virq_sent`, and keeps the books of the vCPUs it lends to the micro pool.
pub trait MicroSliced {
    /// Notification: the host relays a virtual IRQ of a device to `v` (Xen 4.7 `send_guest_pirq`
    /// -> `evtchn_port_set_pending` on the port's notify vCPU); seed 002's detection hooks here
    /// (section 4.2). The host calls it through `Sim::virq_relayed` (sim/mechanisms/microsliced/).
    fn virq_sent(&mut self, ctx: &mut PolicyCtx, v: VcpuId);

    /// The Runnable, not running, vCPU `v` leaves this pool for the micro pool for one micro
    /// slice (Xen: the hidden cpupool shares its parent's scheduler, so `v` stays in this
    /// policy's books: on its domain's active list, with its credit). Take it off the run queues.
    fn lend_vcpu(&mut self, ctx: &mut PolicyCtx, v: VcpuId);

    /// `v` is back from the micro pool after running `ran` there: charge that as run time here
    /// and, unless it is Halted, queue it as the released code's
    /// `vcpu_migrate_to_cpu(prev, prev_processor)` -> `vcpu_wake` does.
    fn return_vcpu(&mut self, ctx: &mut PolicyCtx, v: VcpuId, ran: Nanos);
}

/// The seam of a preemption overlay (sim/mechanisms/preemption_overlay/rule.rs) in a policy that can hold an
/// involuntary preemption back (`Policy::hold_preemption`).
pub trait HoldPreemption {
    /// The last `do_schedule(p)` chose `next` over `prev`, which runs on `p` and is willing to
    /// run, and the host's overlay holds that preemption back. Undo the pick: `prev` stays the
    /// current vCPU of `p` and `next` waits as it did before (`do_schedule` is asked again when
    /// the hold ends). Returns false if the policy cannot (the preemption then goes ahead).
    fn keep_running(&mut self, ctx: &mut PolicyCtx, p: PcpuId, prev: VcpuId, next: VcpuId) -> bool;
}

/// What a KVM host scheduler answers KVM (`Policy::kvm_host`; hypervisor/kvm.rs).
pub trait KvmHost {
    /// Linux `single_task_running()` on pCPU `p`: its run queue holds only the vCPU running
    /// there (halt polling polls only then, `kvm_vcpu_can_poll`; `kvm_sched_yield` yields only
    /// otherwise).
    fn single_task_running(&self, p: PcpuId) -> bool;

    /// KVM's `kvm_sched_yield` after `KVM_HC_KICK_CPU` from running `v` to the vCPU `target` it
    /// kicked ([`kvm_sched_yield`](crate::hypervisor::kvm::kvm_sched_yield)).
    fn kvm_sched_yield(&mut self, ctx: &mut PolicyCtx, v: VcpuId, target: VcpuId);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hardware::topology::Topology;
    use crate::vmexit::{Channels, KernelFn};

    #[test]
    fn the_kernel_fn_channel_is_read_only_by_a_policy_that_declares_it() {
        let topology = Topology::flat(1);
        let host = HostView::new(0, &[], &[], &[], &topology);
        let symbols = vec![KernelFn::FutexWake];
        let (mut requests, mut timers) = (Vec::new(), TimerTable::default());
        let ctx = PolicyCtx::new(host, &mut requests, &mut timers).with_symbols(&symbols, Channels::NONE);
        assert_eq!(ctx.kernel_fn(VcpuId(0)), None);
        let ctx = ctx.with_symbols(&symbols, Channels { kernel_fn: true });
        assert_eq!(ctx.kernel_fn(VcpuId(0)), Some(KernelFn::FutexWake));
        assert_eq!(ctx.kernel_fn(VcpuId(1)), None, "a vCPU the source does not know");
    }
}
