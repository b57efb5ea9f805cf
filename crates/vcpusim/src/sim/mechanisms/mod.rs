//! Host mechanisms: what a host does beside its scheduler, each one module with its state, its
//! hooks into the engine core, its own events, its check-mode invariants and the report columns
//! it adds. The core (sim/hypervisor_ops.rs, execute.rs, line.rs) calls the hooks below at fixed
//! points; each hook runs the mechanisms a scenario turned on, in this list's order, and costs one
//! test per mechanism when they are off.
//!
//! ```text
//!   core event            hook                       mechanisms (in order)
//!   switch out v          before_switch_out          relaxed co-scheduling (account)
//!                         leaving_pcpu               halt polling (a poll ends)
//!                         switched_out               preemption overlay (a hold ends)
//!                         after_switch_out           relaxed co-scheduling (check)
//!   switch in v           before_switch_in           relaxed co-scheduling (account)
//!                         halt_ends                  halt polling (grow or shrink the poll)
//!                         after_switch_in            relaxed co-scheduling (check)
//!   HLT blocks v          on_halt                    relaxed co-scheduling (account, check)
//!   v woken               may_wake / after_wake      relaxed co-scheduling (veto, account) / halt polling
//!   a mechanism's action  before_host_action         relaxed co-scheduling (account, mark the stop)
//!   reschedule p          mechanisms_let_reschedule  halt polling (a poll ends), native tasks (defer)
//!   do_schedule decided   holds_preemption           preemption overlay (hold the switch back)
//!                         after_decision             micro-sliced cores (the micro pool's loans)
//!   yield exit            yield_begins / yield_ends  preemption overlay (not a preemption)
//!   event                 on_event                   MechanismEvent, by owner
//!   check mode            check_mechanisms           micro-sliced cores, overlay, relaxed co-scheduling
//!   the result tables     mechanism_vm_columns/cells net devices, micro-sliced cores (vms.csv)
//!                         mechanism_metrics          net devices, overlay, relaxed co-scheduling, sampling
//!                         mechanism_summary          micro-sliced cores (summary.json)
//! ```
//!
//! The mechanisms. A folder holds the engine side (`mod.rs`) and the pure rule it applies
//! (`rule.rs`, testable alone); the configuration types live with the scenario section, since
//! the loader sits below the engine; what a policy itself sees of a mechanism stays in the
//! hypervisor layer.
//!
//! | module | scenario (configuration) | rule, and what the policy sees |
//! |---|---|---|
//! | `relaxed_co/` | `[host] overlay = "relaxed-co"`, `[host.relaxed_co]` (overlay_sections.rs) | `rule.rs`: skew accounting |
//! | `preemption_overlay/` | `[host] overlay`, `[host.irs]`, `[host.delay_preempt]` (overlay_sections.rs) | `rule.rs`: `Overlay`, IRS; `delay_preempt.rs`; the policy's `HoldPreemption` |
//! | `halt_poll/` | `[host.halt_poll]` (sections.rs `HaltPoll`) | `rule.rs`: kvm_main.c's grow and shrink |
//! | `microsliced/` | `[host.microsliced]` (microsliced_sections.rs) | `algorithm.rs`: Algorithm 1; hypervisor/critical_detect.rs, policies/micro_pool.rs, the policy's `MicroSliced` |
//! | `net_device` | `[vm.net]` | hardware/nic.rs, guest/netrx.rs |
//! | `sampling` | `[run] sample_every` | metrics/pcpu_usage.rs |
//! | `contention_model` | `[host.contention]` | hardware/contention.rs (a `SpeedModel`) |
//! | `native_tasks` | `[[vm]] native = true` (native_sections.rs) | guest/run.rs's give-back after the outermost unlock |
//! | `cost_variation` | `[host.costs] variation` (sections.rs) | `Sim::charged`, at the host's switch and exit charges |

pub mod contention_model;
pub mod cost_variation;
pub mod halt_poll;
pub mod microsliced;
pub mod native_tasks;
pub mod net_device;
pub mod preemption_overlay;
pub mod relaxed_co;
pub mod sampling;

use super::state::Sim;
use crate::hypervisor::policy::{Decision, YieldReason};
use crate::ids::{PcpuId, PoolId, VcpuId};
use crate::metrics::table::MetricRows;

/// The mechanisms a run turned on (None or empty: off).
#[derive(Default)]
pub struct Mechanisms {
    /// Relaxed co-scheduling's skews and co-stops (`overlay = "relaxed-co"`).
    pub relaxed_co: Option<Box<relaxed_co::RelaxedCoState>>,
    /// The preemption overlay (`[host] overlay`: IRS, delayed preemption, relaxed-co's Go).
    pub preemption_overlay: Option<Box<preemption_overlay::OverlayState>>,
    /// KVM's host halt polling (`[host.halt_poll]`).
    pub halt_poll: Option<crate::scenario::sections::HaltPoll>,
    /// The vCPUs halt-polling now (few: one per pCPU at most).
    pub pollers: Vec<VcpuId>,
    /// Seed 002's micro-sliced pool (`[host.microsliced]`).
    pub microsliced: Option<Box<microsliced::MicroState>>,
    /// The network devices of VMs with one (seed 002 section 3.2), by device index.
    pub net_devices: Vec<net_device::NetDevice>,
    /// CPU-usage time series (`[run] sample_every`).
    pub samples: Option<sampling::Samples>,
    /// Native host processes' non-preemptible kernel sections (`[[vm]] native = true`).
    pub native_tasks: Option<Box<native_tasks::NativeTasks>>,
    /// Variable host charges (`[host.costs] variation` above 0).
    pub cost_variation: Option<Box<cost_variation::CostVariation>>,
}

/// What a mechanism asks the core to do to a vCPU, as a policy asks through its requests: the
/// mechanism decides and returns its actions; the core carries them out in order
/// (sim/hypervisor_ops.rs `run_host_actions`), telling the mechanisms first
/// (`Sim::before_host_action`). Only the core switches a vCPU in or out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostAction {
    /// Take running `v` off its pCPU and out of its policy's queues until it is started again,
    /// the guest seeing it preempted (relaxed co-scheduling's co-stop).
    CoStop(VcpuId),
    /// Make stopped `v` runnable again through its policy (the co-start).
    CoStart(VcpuId),
}

/// An event a mechanism owns (`Event::Mechanism`), dispatched to it by `Sim::on_mechanism_event`.
#[derive(Clone, Copy, Debug)]
pub enum MechanismEvent {
    /// Relaxed co-scheduling: check this VM's skews.
    RelaxedCoCheck(u32),
    /// The bound of the preemption overlay's hold on a pCPU passed (the event is owned by the
    /// hold and cancelled when the hold ends another way).
    PreemptDeadline(PcpuId),
    /// Seed 002's Algorithm 1 runs.
    MicroAdjust,
    /// A frame of network device `d` reaches its NIC and is relayed to the VM.
    NicRx(u32),
    /// An ACK of network device `d`'s VM reaches the remote sender.
    NicAck(u32),
    /// The remote UDP sender of network device `d` sends its next datagram.
    NicSend(u32),
}

impl Sim {
    /// An event of a mechanism.
    pub(in crate::sim) fn on_mechanism_event(&mut self, ev: MechanismEvent) {
        match ev {
            MechanismEvent::RelaxedCoCheck(vm) => self.rc_check_event(vm),
            MechanismEvent::PreemptDeadline(p) => self.preempt_deadline(p),
            MechanismEvent::MicroAdjust => self.micro_adjust(),
            MechanismEvent::NicRx(d) => self.on_nic_rx(d),
            MechanismEvent::NicAck(d) => self.on_nic_ack(d),
            MechanismEvent::NicSend(d) => self.on_nic_send(d),
        }
    }

    /// `v` is about to leave its pCPU (before anything of the switch).
    #[inline(always)]
    pub(in crate::sim) fn before_switch_out(&mut self, v: VcpuId) {
        if self.mechanisms.relaxed_co.is_some() {
            self.rc_account(v);
        }
    }

    /// `v` leaves its pCPU, before its last segment is charged: a halt poll ends here.
    #[inline(always)]
    pub(in crate::sim) fn leaving_pcpu(&mut self, v: VcpuId) {
        if self.vcpus[v.idx()].activity == super::state::Activity::HaltPoll {
            self.stop_polling(v);
        }
    }

    /// `v`'s last segment on `p` is charged: a hold of the preemption overlay on `p` ends.
    #[inline(always)]
    pub(in crate::sim) fn switched_out(&mut self, v: VcpuId, p: PcpuId) {
        if self.mechanisms.preemption_overlay.is_some() {
            self.overlay_switch_out(v, p);
        }
        if self.mechanisms.native_tasks.is_some() {
            self.native_switched_out(v);
        }
    }

    /// `v` is off its pCPU.
    #[inline(always)]
    pub(in crate::sim) fn after_switch_out(&mut self, v: VcpuId) {
        if self.mechanisms.relaxed_co.is_some() {
            self.rc_poke(v);
        }
    }

    /// `v` is about to be switched in (before anything of the switch).
    #[inline(always)]
    pub(in crate::sim) fn before_switch_in(&mut self, v: VcpuId) {
        if self.mechanisms.relaxed_co.is_some() {
            self.rc_account(v);
        }
    }

    /// `v`, switched in, leaves the halt it was in (KVM's `kvm_vcpu_halt` ends at its next VM
    /// entry).
    #[inline(always)]
    pub(in crate::sim) fn halt_ends(&mut self, v: VcpuId) {
        if self.mechanisms.halt_poll.is_some() {
            self.halt_ended(v);
        }
    }

    /// `v` is switched in and its first activity is queued.
    #[inline(always)]
    pub(in crate::sim) fn after_switch_in(&mut self, v: VcpuId) {
        if self.mechanisms.relaxed_co.is_some() {
            self.rc_poke(v);
        }
    }

    /// Running `v` blocks in HLT (before its last segment is charged).
    #[inline(always)]
    pub(in crate::sim) fn on_halt(&mut self, v: VcpuId) {
        if self.mechanisms.relaxed_co.is_some() {
            self.rc_account(v);
            self.rc_poke(v);
        }
    }

    /// Whether halted `v` may wake now: a co-stopped vCPU's interrupt waits in the guest until
    /// the co-start.
    #[inline(always)]
    pub(in crate::sim) fn may_wake(&mut self, v: VcpuId) -> bool {
        if self.mechanisms.relaxed_co.is_some() {
            if self.co_stopped(v) {
                return false;
            }
            self.rc_account(v);
            self.rc_poke(v);
        }
        true
    }

    /// The core is about to carry out `action`, asked by a mechanism.
    #[inline(always)]
    pub(in crate::sim) fn before_host_action(&mut self, action: HostAction) {
        if self.mechanisms.relaxed_co.is_some() {
            self.rc_before_action(action);
        }
    }

    /// `v` woke and its policy placed it.
    #[inline(always)]
    pub(in crate::sim) fn after_wake(&mut self) {
        if !self.mechanisms.pollers.is_empty() {
            self.halt_poll_check_pollers();
        }
    }

    /// Whether `p` reschedules at all, as far as the mechanisms go: a vCPU halt-polling there
    /// stops instead, if another waits.
    #[inline(always)]
    pub(in crate::sim) fn mechanisms_let_reschedule(&mut self, p: PcpuId) -> bool {
        !(self.mechanisms.halt_poll.is_some() && self.halt_poll_resched(p))
            && !(self.mechanisms.native_tasks.is_some() && self.native_defers(p))
    }

    /// `decision` of `do_schedule(p)` is valid: whether a mechanism holds the switch back (the
    /// preemption overlay).
    #[inline(always)]
    pub(in crate::sim) fn holds_preemption(&mut self, p: PcpuId, decision: Decision) -> bool {
        self.mechanisms.preemption_overlay.is_some() && self.overlay_holds(p, decision)
    }

    /// `decision` was carried out on `p` of `pool`.
    #[inline(always)]
    pub(in crate::sim) fn after_decision(&mut self, pool: PoolId, p: PcpuId) {
        if pool == self.placement.micro_pool() {
            self.micro_after_schedule(p);
        }
    }

    /// Whether the engine may take a policy's `keeps_current` answer in `pool` without asking
    /// `do_schedule`: not when a mechanism acts on every decision (the overlay, the micro pool).
    #[inline(always)]
    pub(in crate::sim) fn decisions_unwatched(&self, pool: PoolId) -> bool {
        self.mechanisms.preemption_overlay.is_none() && pool != self.placement.micro_pool()
    }

    /// A yield exit of `v` begins (the overlay counts it apart from preemptions).
    #[inline(always)]
    pub(in crate::sim) fn yield_begins(&mut self, reason: YieldReason) {
        if let Some(ov) = self.mechanisms.preemption_overlay.as_mut() {
            ov.yielding = Some(reason);
        }
    }

    /// The yield exit ends.
    #[inline(always)]
    pub(in crate::sim) fn yield_ends(&mut self) {
        if let Some(ov) = self.mechanisms.preemption_overlay.as_mut() {
            ov.yielding = None;
        }
    }

    /// The vms.csv columns the mechanisms on add after `VM_COLUMNS` (run/report.rs), in the
    /// list's order: only theirs, so that runs without them keep their bytes.
    pub fn mechanism_vm_columns(&self) -> Vec<&'static str> {
        let mut columns = Vec::new();
        if !self.mechanisms.net_devices.is_empty() {
            columns.extend(net_device::NET_COLUMNS);
        }
        if self.mechanisms.microsliced.is_some() {
            columns.extend(microsliced::MICROSLICED_COLUMNS);
        }
        columns
    }

    /// VM `i`'s cells of [`Sim::mechanism_vm_columns`], each after a comma.
    pub fn mechanism_vm_cells(&self, i: usize, out: &mut String) {
        if !self.mechanisms.net_devices.is_empty() {
            self.net_vm_cells(i, out);
        }
        if self.mechanisms.microsliced.is_some() {
            self.micro_vm_cells(i, out);
        }
    }

    /// VM `i`'s metrics.csv rows from the mechanisms on, after the engine's.
    pub fn mechanism_metrics(&self, i: usize, rows: &mut MetricRows) {
        self.net_metrics(i, rows);
        self.overlay_metrics(i, rows);
        self.relaxed_co_metrics(i, rows);
        self.sample_metrics(i, rows);
        self.native_metrics(i, rows);
    }

    /// The summary.json sections of the mechanisms on.
    pub fn mechanism_summary(&self, summary: &mut serde_json::Value) {
        self.micro_summary(summary);
    }

    /// Check mode: every mechanism's invariants.
    pub(in crate::sim) fn check_mechanisms(&self) -> Result<(), String> {
        self.check_microsliced()?;
        self.check_overlay()?;
        self.check_relaxed_co()
    }
}
