//! The fixed scenario sections `[guest]`, `[host.ple]`, `[host.costs]` and `[run]`: their keys
//! declared once (type, default, bounds, meaning), read by the loader and listed by the catalog.
//! Defaults come from the config structs' `Default` impls, so the two cannot drift apart.

use super::section::Section;
use crate::error::SimError;
use crate::guest::config::{FutexWakeIpi, GuestConfig, KernelPreset, PvFeatures, TlbTargets};
use crate::guest::haltpoll::Haltpoll;
use crate::hardware::costs::{Costs, Ple};
use crate::params::{ParamSpec, ParamValue};
use crate::scenario::spec::RunSpec;
use crate::time::{Nanos, MS, SEC, US};
use crate::workload::program::SpinlockKind;

/// One key of a fixed section.
#[derive(Clone, Debug)]
pub struct SectionKey {
    pub spec: ParamSpec,
    /// Leaving the key out means "not set" (no event limit) rather than the spec's default.
    pub optional: bool,
}

impl SectionKey {
    pub(super) fn defaulted(spec: ParamSpec) -> Self {
        SectionKey { spec, optional: false }
    }
    pub(super) fn optional(spec: ParamSpec) -> Self {
        SectionKey { spec, optional: true }
    }
}

fn names(keys: &[SectionKey]) -> Vec<&str> {
    keys.iter().map(|k| k.spec.name).collect()
}

const FUTEX_WAKE_IPI: &[&str] = &["under-lock", "after-unlock"];
const TLB_TARGETS: &[&str] = &["all-in-mask", "skip-lazy"];
const SPINLOCK: &[&str] = &["ticket", "tas", "pv-qspinlock", "debug"];

fn futex_wake_ipi_name(v: FutexWakeIpi) -> &'static str {
    match v {
        FutexWakeIpi::UnderLock => "under-lock",
        FutexWakeIpi::AfterUnlock => "after-unlock",
    }
}

fn tlb_targets_name(v: TlbTargets) -> &'static str {
    match v {
        TlbTargets::AllInMask => "all-in-mask",
        TlbTargets::SkipLazy => "skip-lazy",
    }
}

fn spinlock_name(v: SpinlockKind) -> &'static str {
    match v {
        SpinlockKind::Ticket => "ticket",
        SpinlockKind::TestAndSet => "tas",
        SpinlockKind::PvQueued => "pv-qspinlock",
        SpinlockKind::Debug => "debug",
    }
}

/// `[guest]` and `[vm.guest]`: which Linux behaviour the guest kernel follows (guest/config.rs).
pub fn guest_keys() -> Vec<SectionKey> {
    let d = GuestConfig::default();
    let hp = Haltpoll::default();
    vec![
        SectionKey::defaulted(ParamSpec::choice(
            "kernel",
            KernelPreset::NAMES,
            KernelPreset::Linux32.name(),
            "Guest kernel preset, applied before the section's other keys (which override it): \
             linux-2.6.18 (seed 004's guest: unfair test-and-set spinlocks, futex wake IPI under the bucket \
             lock), linux-3.2 (the seeds' guest: ticket spinlocks, futex wake IPI under the bucket lock), \
             linux-3.13 on Xen (seed 001's guest: ticket spinlocks with Xen's PV slow path, modelled as \
             spinlock = pv-qspinlock; futex wake IPI under the bucket lock; call_function_yield = true) or \
             linux-4.4 on Xen (seed 002: spinlock = pv-qspinlock, futex_wake_ipi = after-unlock, \
             call_function_yield = true, tlb_targets = all-in-mask as 4.4's flush_tlb_others still \
             interrupts lazy-TLB vCPUs) or linux-6.x (Linux 6.6 on KVM: spinlock = pv-qspinlock, \
             futex_wake_ipi = after-unlock, tlb_targets = skip-lazy, call_function_yield = false and every \
             paravirtual feature on; on a Xen host the KVM-only ones are off)",
        )),
        SectionKey::defaulted(ParamSpec::choice(
            "futex_wake_ipi",
            FUTEX_WAKE_IPI,
            futex_wake_ipi_name(d.futex_wake_ipi),
            "When futex_wake sends the reschedule IPI: inside the hash-bucket spinlock critical section \
             (Linux 3.2, seed 000 section 3.1.1, Figure 4) or after releasing it (wake_q, Linux 4.2+, \
             commit 1d0dcb3ad9d3)",
        )),
        SectionKey::defaulted(ParamSpec::choice(
            "tlb_targets",
            TLB_TARGETS,
            tlb_targets_name(d.tlb_targets),
            "Which vCPUs a TLB shootdown interrupts: every other vCPU in the mm's cpumask, idle lazy-TLB \
             ones included (Linux 3.2), or only those not in lazy-TLB mode (Linux 5.x+)",
        )),
        SectionKey::defaulted(ParamSpec::choice(
            "spinlock",
            SPINLOCK,
            spinlock_name(d.spinlock),
            "Kind of the guest's kernel spinlocks (futex buckets, kernel locks): FIFO ticket lock (x86 Linux \
             before 4.2), unfair test-and-set (virt_spin_lock without PV spinlocks), or pv-qspinlock (Linux \
             4.2+ queued spinlock with Xen's PV slow path: spin pv_spin, then block in SCHEDOP_poll until \
             the unlocker's kick), or debug (a lock-statistics kernel's DEBUG_SPINLOCK trylock loop: unfair, \
             and without PAUSE, so its waits never exit on PLE)",
        )),
        SectionKey::defaulted(
            ParamSpec::duration(
                "pv_spin",
                d.pv_spin,
                "pv-qspinlock: time a waiter spins before blocking its vCPU in SCHEDOP_poll (SPIN_THRESHOLD = \
                 2^15 PAUSE loops, about 10 cycles each at 2.4 GHz: 136.5 us)",
            )
            .at_least(1.0),
        ),
        SectionKey::defaulted(ParamSpec::boolean(
            "call_function_yield",
            d.call_function_yield,
            "After sending a TLB shootdown's call-function IPIs, yield the pCPU (SCHEDOP_yield) if a \
             target vCPU's Xen runstate is runnable (Linux 4.4 xen_smp_send_call_function_ipi)",
        )),
        SectionKey::defaulted(ParamSpec::boolean(
            "rwsem_spin",
            d.rwsem_spin,
            "mmap_sem writers spin optimistically while the owner runs (rwsem_optimistic_spin, Linux \
             3.16+; on in linux-6.x) instead of sleeping; the spin stops when the owner releases or stops \
             running, and with vcpu_is_preempted also when the owner's vCPU is preempted",
        )),
        SectionKey::defaulted(ParamSpec::boolean(
            "rwsem_steal",
            d.rwsem_steal,
            "mmap_sem write-lock stealing (Linux 3.10+; on in linux-3.13, 4.4 and 6.x): a release wakes \
             the first queued writer without granting it the semaphore, and any writer that finds it free \
             takes it; off, the release grants it to the first waiter (3.2)",
        )),
        SectionKey::defaulted(ParamSpec::boolean(
            "pv_spinlock",
            d.pv.pv_spinlock,
            "Paravirtual qspinlock slow path (needs spinlock = pv-qspinlock): on a KVM host kvm_wait halts \
             the waiter after pv_spin and the unlocker's KVM_HC_KICK_CPU wakes it (Linux 4.2+); on Xen \
             SCHEDOP_poll and the event-channel kick. Off: a linux-6.x guest on KVM falls back to \
             virt_spin_lock (spinlock = tas)",
        )),
        SectionKey::defaulted(ParamSpec::boolean(
            "vcpu_is_preempted",
            d.pv.vcpu_is_preempted,
            "The guest reads other vCPUs' preempted flag (KVM steal-time area, Linux 4.9+; Xen runstate): \
             wake-up placement skips an idle vCPU that is preempted (available_idle_cpu). Needs steal_time",
        )),
        SectionKey::defaulted(ParamSpec::boolean(
            "pv_tlb_flush",
            d.pv.pv_tlb_flush,
            "KVM only: a TLB shootdown does not IPI a preempted vCPU but sets KVM_VCPU_FLUSH_TLB in its \
             steal-time area, and the host flushes it at its next VM entry (kvm_flush_tlb_multi, Linux \
             4.16+). Needs steal_time",
        )),
        SectionKey::defaulted(ParamSpec::boolean(
            "pv_sched_yield",
            d.pv.pv_sched_yield,
            "KVM only: after a TLB shootdown's call-function IPIs, KVM_HC_SCHED_YIELD (a directed yield) \
             to the first target that is preempted and not idle (kvm_smp_send_call_func_ipi, Linux 5.3+). \
             Needs steal_time and vcpu_is_preempted",
        )),
        SectionKey::defaulted(ParamSpec::boolean(
            "pv_ipi",
            d.pv.pv_ipi,
            "KVM only: a many-target IPI send is one KVM_HC_SEND_IPI exit per 128 consecutive vCPUs \
             instead of one APIC write exit per target (kvm_send_ipi_mask, Linux 4.19+)",
        )),
        SectionKey::defaulted(ParamSpec::boolean(
            "steal_time",
            d.pv.steal_time,
            "The guest registers the steal-time area (KVM MSR_KVM_STEAL_TIME, Linux 3.1+): needed by \
             vcpu_is_preempted, pv_tlb_flush and pv_sched_yield",
        )),
        SectionKey::defaulted(
            ParamSpec::duration(
                "tick",
                d.tick,
                "Guest scheduler tick (CONFIG_HZ=250 -> 4 ms): time-slicing between threads on one vCPU and \
                 periodic load balancing",
            )
            .at_least(1.0),
        ),
        SectionKey::defaulted(
            ParamSpec::int("futex_buckets", d.futex_buckets as u64, "Number of futex hash buckets: which futexes share a bucket spinlock")
                .at_least(1.0),
        ),
        SectionKey::defaulted(ParamSpec::boolean(
            "irs",
            d.irs,
            "Seed 003 (IRS): the guest handles the hypervisor's preemption notice (the SA vIRQ) by moving \
             its running thread to the sibling vCPU with the least waiting time, then acknowledging; \
             with [host] overlay = \"irs\" (the migrator is [host.irs] migrator)",
        )),
        SectionKey::defaulted(
            ParamSpec::duration(
                "irs_handler",
                d.irs_handler,
                "IRS: the notice handler's work up to its ack, which ends the hypervisor's delay (20 us: \
                 the low end of seed 003's measured 20-26 us for SA send + migration + completion)",
            )
            .at_least(1.0),
        ),
        SectionKey::defaulted(ParamSpec::boolean(
            "haltpoll",
            false,
            "Poll in the idle loop before HLT (Linux 6.6 cpuidle-haltpoll with the haltpoll governor): a wake-up \
             within the poll needs no IPI and no HLT exit; the poll is CPU time (vms.csv idle_poll_ms) and \
             pause-loop exits can cut it. Off in every preset: 6.6 loads the driver only with the host's \
             KVM_HINTS_REALTIME or the module's force=1",
        )),
        SectionKey::defaulted(
            ParamSpec::duration("guest_halt_poll_ns", hp.poll_ns, "haltpoll: the longest idle poll (the governor's guest_halt_poll_ns)")
                .at_least(1.0),
        ),
        SectionKey::defaulted(
            ParamSpec::int("guest_halt_poll_grow", hp.grow, "haltpoll: the factor a poll limit grows by after a short halt").at_least(1.0),
        ),
        SectionKey::defaulted(
            ParamSpec::duration("guest_halt_poll_grow_start", hp.grow_start, "haltpoll: the least a grown poll limit becomes")
                .at_least(1.0),
        ),
        SectionKey::defaulted(ParamSpec::int(
            "guest_halt_poll_shrink",
            hp.shrink,
            "haltpoll: the divisor a poll limit shrinks by after a halt longer than guest_halt_poll_ns (0: to 0)",
        )),
        SectionKey::defaulted(ParamSpec::boolean(
            "guest_halt_poll_allow_shrink",
            hp.allow_shrink,
            "haltpoll: whether halts longer than guest_halt_poll_ns shrink the poll limit",
        )),
    ]
}

/// The `[guest]` keys that tune the haltpoll governor (meaningful only with `haltpoll = true`).
const HALTPOLL_KEYS: &[&str] =
    &["guest_halt_poll_ns", "guest_halt_poll_grow", "guest_halt_poll_grow_start", "guest_halt_poll_shrink", "guest_halt_poll_allow_shrink"];

/// `[host.ple]`: pause-loop exiting (hardware/costs.rs `Ple`). `grow_default` is the policy's
/// `PolicyKind::ple_grow()` (KVM doubles the window, Xen keeps it fixed).
pub fn ple_keys(grow_default: u64) -> Vec<SectionKey> {
    let d = Ple::default();
    vec![
        SectionKey::defaulted(ParamSpec::boolean(
            "enabled",
            d.enabled,
            "Pause-loop exiting: a vCPU spinning in the guest kernel longer than the window exits to the \
             hypervisor, which treats it as a yield",
        )),
        SectionKey::defaulted(
            ParamSpec::int(
                "window_cycles",
                d.window_cycles,
                "Spin time before a pause-loop exit, in cycles (KVM VMX ple_window default 4096, \
                 arch/x86/kvm/vmx/vmx.c)",
            )
            .at_least(1.0),
        ),
        SectionKey::defaulted(ParamSpec::float(
            "cpu_ghz",
            d.cpu_ghz,
            "Host clock in GHz, to turn cycles into time (2.67: seed 000 section 4's Xeon X5550); must be \
             greater than 0",
        )),
        SectionKey::defaulted(
            ParamSpec::int(
                "grow",
                grow_default,
                "Window growth factor per exit while the vCPU stays scheduled (default: the policy's; KVM \
                 ple_window_grow = 2, Xen credit keeps the window fixed: 1); a value of at least \
                 window_cycles is added instead (KVM __grow_ple_window)",
            )
            .at_least(1.0),
        ),
        SectionKey::defaulted(
            ParamSpec::int("window_max_cycles", d.window_max_cycles, "Upper bound on the grown window, in cycles; at least window_cycles")
                .at_least(1.0),
        ),
        SectionKey::defaulted(ParamSpec::int(
            "shrink",
            d.shrink,
            "When a vCPU is scheduled in again: 0 resets its window to window_cycles (KVM VMX \
             ple_window_shrink = 0, vmx_vcpu_load -> shrink_ple_window); N divides it by N, or \
             subtracts N if N >= window_cycles, never below window_cycles",
        )),
        SectionKey::defaulted(ParamSpec::choice(
            "cpl",
            &["0", "any"],
            "0",
            "Which PAUSE loops the exit counts: \"0\" those at CPL 0 only (Intel's PAUSE-loop exiting, SDM \
             vol. 3C 25.1.3), so user-space spins never exit; \"any\" those at any privilege level (AMD's \
             pause filter, APM vol. 2 15.14.4), so user-space spins exit too. The window stays in cycles: \
             for AMD, the filter's PAUSE count times the cycles of one spin-loop iteration",
        )),
        SectionKey::defaulted(
            ParamSpec::int(
                "gap_cycles",
                d.gap_cycles,
                "VMX PLE_Gap: a PAUSE more than this many cycles after the previous one starts a new loop and \
                 its window again (KVM ple_gap and Xen's default 128; SDM vol. 3C 25.1.3). Intel's only: with \
                 cpl = \"any\" (AMD's filter, which counts PAUSEs) no gap applies",
            )
            .at_least(1.0),
        ),
        SectionKey::defaulted(
            ParamSpec::int(
                "line_socket_cycles",
                d.line_socket_cycles,
                "Cycles a kernel spinner's reload of its lock word waits after a CPU of its own socket wrote \
                 it (Xeon X5550, a single off-core cache miss: 86.6, McKenney's perfbook); above gap_cycles, every such store restarts its loop",
            )
            .at_least(1.0),
        ),
        SectionKey::defaulted(
            ParamSpec::int(
                "line_remote_cycles",
                d.line_remote_cycles,
                "The same after a CPU of another socket wrote it (Xeon X5550, off-socket: 256.7): above \
                 gap_cycles, a store from another socket restarts the spinner's PAUSE loop",
            )
            .at_least(1.0),
        ),
    ]
}

/// `[host.costs]`: time charged for virtualization events (hardware/costs.rs `Costs`).
pub fn costs_keys() -> Vec<SectionKey> {
    let d = Costs::default();
    let key = |name, default, doc| SectionKey::defaulted(ParamSpec::duration(name, default, doc));
    vec![
        key(
            "ipi_send",
            d.ipi_send,
            "VMEXIT/VMENTRY round trip for sending an IPI (APIC ICR write), charged to the sender; assumed \
             (1-2 us is the commonly quoted round trip, not checked against a measurement)",
        ),
        key("ipi_delivery", d.ipi_delivery, "Latency from the send until the virtual interrupt is injected into a running target"),
        key("ipi_handler", d.ipi_handler, "Guest time to run an IPI handler (entry, handler, EOI exit)"),
        key("context_switch", d.context_switch, "Host-side vCPU context switch, charged to the pCPU when a different vCPU starts running"),
        key("hlt_exit", d.hlt_exit, "HLT exit: time from the guest's HLT until the pCPU is released"),
        key(
            "tlb_flush_per_page",
            d.tlb_flush_per_page,
            "Per-page cost of a local TLB flush in the shootdown handler (~100 ns per page, arch/x86/mm/tlb.c \
             tlb_single_page_flush_ceiling)",
        ),
        key("syscall", d.syscall, "Guest system-call entry plus exit"),
        key(
            "halt_wake",
            d.halt_wake,
            "The host's wake-up path of a vCPU that blocked in HLT (kick, idle exit, schedule, vcpu_load), \
             charged as overhead when it is switched in after the wake-up; what [host.halt_poll] saves. \
             Assumed 0 (not modelled) by default",
        ),
        SectionKey::defaulted(
            ParamSpec::float(
                "virt_overhead",
                d.virt_overhead,
                "Fixed virtualization overhead: a VM's work takes 1 + this as long as on bare metal (a speed \
                 factor on every non-bare-metal vCPU); seed 001 III-B: 0.24 at one thread (EPT and vCPU \
                 scheduling)",
            )
            .range(0.0, 10.0),
        ),
        SectionKey::defaulted(
            ParamSpec::float(
                "variation",
                d.variation,
                "Spread of the host's switch and exit charges (context switch in, HLT and poll exits, the exit \
                 round trip after a yield): each is its value times a factor drawn uniformly from \
                 [1 - variation, 1 + variation]; 0: exact. 0.025 (the default): the body of a measured spread \
                 of VMCALL round trips (KVM, i7-3960X)",
            )
            .range(0.0, 0.9),
        ),
    ]
}

/// `[run]`: how long and how a run goes.
pub fn run_keys() -> Vec<SectionKey> {
    vec![
        SectionKey::defaulted(
            ParamSpec::duration("duration", 10 * SEC, "Stop at this simulated time even if workloads are unfinished").at_least(1.0),
        ),
        SectionKey::defaulted(ParamSpec::int(
            "seed",
            1,
            "Seed of every random stream (one stream per VM and thread, so policies compared on one seed \
             see the same workload randomness)",
        )),
        SectionKey::optional(
            ParamSpec::int(
                "max_events",
                0,
                "Stop with an error after this many events (a guard against runaway scenarios); unset: no limit",
            )
            .at_least(1.0),
        ),
        SectionKey::defaulted(ParamSpec::boolean("check", false, "Check engine invariants after every event (slow; tests use it)")),
        SectionKey::optional(
            ParamSpec::duration(
                "sample_every",
                SEC,
                "Record each VM's cumulative pCPU time every this often, as metrics.csv rows \
                 pcpu_time_ms[<t>s] (a CPU-usage time series, as XenMon samples it), and with \
                 [host.microsliced] the micro pool's pCPU count, micro_pool_pcpus[<t>s]; unset: none",
            )
            .at_least(MS as f64),
        ),
        SectionKey::defaulted(ParamSpec::boolean(
            "barrier_waits",
            false,
            "Report each VM's PARSEC-barrier block-waits by phase as metrics.csv rows \
             barrier_waits[arrival] and barrier_waits[departure] (seed 000 Figure 10b)",
        )),
    ]
}

/// Read the keys present in `section` (unknown keys are errors); absent keys give `None`.
pub(super) fn read(section: &Section, keys: &[SectionKey]) -> Result<Vec<(&'static str, Option<ParamValue>)>, SimError> {
    section.allow_only(&names(keys))?;
    keys.iter().map(|k| Ok((k.spec.name, section.param(&k.spec)?))).collect()
}

/// `[guest]` / `[vm.guest]` applied on top of `base`.
pub fn guest_config(section: &Section, base: &GuestConfig) -> Result<GuestConfig, SimError> {
    let values = read(section, &guest_keys())?;
    // The preset first, whatever the key order: the section's other keys override it.
    let mut config = match values.iter().find(|(name, _)| *name == "kernel") {
        Some((_, Some(ParamValue::Choice(c)))) => match KernelPreset::from_name(c) {
            Some(preset) => preset.apply(base),
            None => return Err(section.error_at("kernel", format!("expected one of {}, got {c:?}", KernelPreset::NAMES.join(", ")))),
        },
        _ => base.clone(),
    };
    let preset = values.iter().find_map(|(name, v)| match (name, v) {
        (&"kernel", Some(ParamValue::Choice(c))) => KernelPreset::from_name(c),
        _ => None,
    });
    let wrote_spinlock = values.iter().any(|(name, v)| *name == "spinlock" && v.is_some());
    // The governor's knobs the section wrote, applied once `haltpoll` is known.
    let haltpoll_values: Vec<(&str, ParamValue)> =
        values.iter().filter(|(name, _)| HALTPOLL_KEYS.contains(name)).filter_map(|(name, v)| Some((*name, v.clone()?))).collect();
    for (name, value) in values {
        match (name, value) {
            ("futex_wake_ipi", Some(ParamValue::Choice(c))) => {
                config.futex_wake_ipi = if c == "after-unlock" { FutexWakeIpi::AfterUnlock } else { FutexWakeIpi::UnderLock };
            }
            ("tlb_targets", Some(ParamValue::Choice(c))) => {
                config.tlb_targets = if c == "skip-lazy" { TlbTargets::SkipLazy } else { TlbTargets::AllInMask };
            }
            ("spinlock", Some(ParamValue::Choice(c))) => {
                config.spinlock = match c.as_str() {
                    "tas" => SpinlockKind::TestAndSet,
                    "pv-qspinlock" => SpinlockKind::PvQueued,
                    "debug" => SpinlockKind::Debug,
                    _ => SpinlockKind::Ticket,
                };
            }
            ("pv_spin", Some(ParamValue::Duration(ns))) => config.pv_spin = ns,
            ("call_function_yield", Some(ParamValue::Bool(b))) => config.call_function_yield = b,
            ("rwsem_spin", Some(ParamValue::Bool(b))) => config.rwsem_spin = b,
            ("rwsem_steal", Some(ParamValue::Bool(b))) => config.rwsem_steal = b,
            (name, Some(ParamValue::Bool(b))) if PvFeatures::NAMES.contains(&name) => {
                *config.pv.get_mut(name).expect("a feature name") = b;
                *config.pv_given.get_mut(name).expect("a feature name") = true;
            }
            ("irs", Some(ParamValue::Bool(b))) => config.irs = b,
            ("irs_handler", Some(ParamValue::Duration(ns))) => config.irs_handler = ns,
            ("tick", Some(ParamValue::Duration(ns))) => config.tick = ns,
            ("futex_buckets", Some(ParamValue::Int(n))) => {
                config.futex_buckets =
                    usize::try_from(n).map_err(|_| section.error_at(name, format!("{n} buckets is more than this machine can index")))?;
            }
            ("haltpoll", Some(ParamValue::Bool(b))) => config.haltpoll = b.then(|| config.haltpoll.unwrap_or_default()),
            _ => {}
        }
    }
    if let Some(hp) = config.haltpoll.as_mut() {
        for (name, value) in haltpoll_values {
            match (name, value) {
                ("guest_halt_poll_ns", ParamValue::Duration(ns)) => hp.poll_ns = ns,
                ("guest_halt_poll_grow", ParamValue::Int(n)) => hp.grow = n,
                ("guest_halt_poll_grow_start", ParamValue::Duration(ns)) => hp.grow_start = ns,
                ("guest_halt_poll_shrink", ParamValue::Int(n)) => hp.shrink = n,
                ("guest_halt_poll_allow_shrink", ParamValue::Bool(b)) => hp.allow_shrink = b,
                _ => {}
            }
        }
    } else if let Some((first, _)) = haltpoll_values.first() {
        return Err(section.error_at(first, format!("{first} tunes the guest's idle polling, which is off; set haltpoll = true")));
    }
    if preset == Some(KernelPreset::Linux6) && !config.pv.pv_spinlock && !wrote_spinlock {
        // Linux 6.6 kvm_spinlock_init without KVM_FEATURE_PV_UNHALT: virt_spin_lock_key stays
        // on, and virt_spin_lock (arch/x86/include/asm/qspinlock.h) takes the lock test-and-set.
        config.spinlock = SpinlockKind::TestAndSet;
    }
    if config.pv.pv_spinlock && config.spinlock != SpinlockKind::PvQueued {
        return Err(section.error_at(
            "pv_spinlock",
            format!(
                "pv_spinlock = true is the slow path of the queued spinlock, but spinlock = {:?}; set spinlock = \"pv-qspinlock\" or pv_spinlock = false",
                spinlock_name(config.spinlock)
            ),
        ));
    }
    Ok(config)
}

/// `[host.ple]`; absent keys take `Ple::default()` except `grow`, which is the policy's.
pub fn ple(section: Option<&Section>, grow_default: u64) -> Result<Ple, SimError> {
    let mut ple = Ple { grow: grow_default, ..Ple::default() };
    let Some(section) = section else { return Ok(ple) };
    for (name, value) in read(section, &ple_keys(grow_default))? {
        match (name, value) {
            ("enabled", Some(ParamValue::Bool(b))) => ple.enabled = b,
            ("window_cycles", Some(ParamValue::Int(n))) => ple.window_cycles = n,
            ("cpu_ghz", Some(ParamValue::Float(f))) => {
                if !(f.is_finite() && f > 0.0) {
                    return Err(section.error_at(name, format!("expected a number greater than 0, got {f}")));
                }
                ple.cpu_ghz = f;
            }
            ("grow", Some(ParamValue::Int(n))) => ple.grow = n,
            ("window_max_cycles", Some(ParamValue::Int(n))) => ple.window_max_cycles = n,
            ("shrink", Some(ParamValue::Int(n))) => ple.shrink = n,
            ("cpl", Some(ParamValue::Choice(c))) => ple.any_cpl = c == "any",
            ("gap_cycles", Some(ParamValue::Int(n))) => ple.gap_cycles = n,
            ("line_socket_cycles", Some(ParamValue::Int(n))) => ple.line_socket_cycles = n,
            ("line_remote_cycles", Some(ParamValue::Int(n))) => ple.line_remote_cycles = n,
            _ => {}
        }
    }
    if ple.window_max_cycles < ple.window_cycles {
        return Err(section.error_at(
            "window_max_cycles",
            format!("expected at least window_cycles = {}, got {}", ple.window_cycles, ple.window_max_cycles),
        ));
    }
    // The largest window a vCPU can reach, in ns, must be a time vcpusim represents (a tiny clock
    // would otherwise make windows of centuries, saturated into nonsense CPU times).
    let (largest, key) = if ple.grow > 1 { (ple.window_max_cycles, "window_max_cycles") } else { (ple.window_cycles, "window_cycles") };
    let ns = largest as f64 / ple.cpu_ghz;
    if ns > crate::time::MAX_DURATION as f64 {
        return Err(section.error_at(
            "cpu_ghz",
            format!(
                "{} GHz makes the largest pause-loop window ({key} = {largest} cycles) {ns:.3e} ns, longer than the \
                 longest time vcpusim represents ({} ns, about 292 years); expected a clock of at least {:.3e} GHz",
                ple.cpu_ghz,
                crate::time::MAX_DURATION,
                largest as f64 / crate::time::MAX_DURATION as f64,
            ),
        ));
    }
    Ok(ple)
}

// KVM's halt-polling module parameters (v6.6 virt/kvm/kvm_main.c); the rule that uses them is
// sim/mechanisms/halt_poll/rule.rs.

/// x86's `KVM_HALT_POLL_NS_DEFAULT`: 200 us (arch/x86/include/asm/kvm_host.h), the module
/// parameter `halt_poll_ns`, the cap on every vCPU's poll.
pub const HALT_POLL_NS_DEFAULT: Nanos = 200 * US;
/// `halt_poll_ns_grow` default: a growing poll doubles.
pub const HALT_POLL_NS_GROW: u64 = 2;
/// `halt_poll_ns_grow_start` default: 10 us, where a poll starts growing from 0.
pub const HALT_POLL_NS_GROW_START: Nanos = 10 * US;
/// `halt_poll_ns_shrink` default: 0, a shrinking poll resets to 0.
pub const HALT_POLL_NS_SHRINK: u64 = 0;

/// The halt-polling module parameters of kvm_main.c.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HaltPoll {
    /// `halt_poll_ns`: the most any vCPU polls (`kvm_vcpu_max_halt_poll_ns`; no per-VM
    /// override here).
    pub max: Nanos,
    /// `halt_poll_ns_grow`: 0 never grows.
    pub grow: u64,
    /// `halt_poll_ns_grow_start`.
    pub grow_start: Nanos,
    /// `halt_poll_ns_shrink`: 0 resets to 0.
    pub shrink: u64,
}

impl Default for HaltPoll {
    fn default() -> Self {
        HaltPoll { max: HALT_POLL_NS_DEFAULT, grow: HALT_POLL_NS_GROW, grow_start: HALT_POLL_NS_GROW_START, shrink: HALT_POLL_NS_SHRINK }
    }
}

/// `[host.halt_poll]`: KVM's host halt polling (sim/mechanisms/halt_poll/rule.rs `HaltPoll`; the
/// kvm_main.c module parameters).
pub fn halt_poll_keys() -> Vec<SectionKey> {
    let d = HaltPoll::default();
    vec![
        SectionKey::defaulted(ParamSpec::duration(
            "max",
            d.max,
            "halt_poll_ns: the longest a vCPU polls after HLT before it blocks (x86 KVM_HALT_POLL_NS_DEFAULT \
             200 us); 0 turns polling off",
        )),
        SectionKey::defaulted(ParamSpec::int(
            "grow",
            d.grow,
            "halt_poll_ns_grow: a vCPU's poll is multiplied by this after a short halt it did not catch \
             (default 2; 0 never grows)",
        )),
        SectionKey::defaulted(ParamSpec::duration(
            "grow_start",
            d.grow_start,
            "halt_poll_ns_grow_start: where a poll grows from 0 and the least a shrunk poll keeps (default 10 us)",
        )),
        SectionKey::defaulted(ParamSpec::int(
            "shrink",
            d.shrink,
            "halt_poll_ns_shrink: after a halt longer than max the poll is divided by this (default 0: reset to 0)",
        )),
    ]
}

/// `[host.halt_poll]`; absent keys take `HaltPoll::default()`.
pub fn halt_poll(section: &Section) -> Result<HaltPoll, SimError> {
    let mut hp = HaltPoll::default();
    for (name, value) in read(section, &halt_poll_keys())? {
        match (name, value) {
            ("max", Some(ParamValue::Duration(ns))) => hp.max = ns,
            ("grow", Some(ParamValue::Int(n))) => hp.grow = n,
            ("grow_start", Some(ParamValue::Duration(ns))) => hp.grow_start = ns,
            ("shrink", Some(ParamValue::Int(n))) => hp.shrink = n,
            _ => {}
        }
    }
    Ok(hp)
}

/// `[host.costs]`; absent keys take `Costs::default()`.
pub fn costs(section: Option<&Section>) -> Result<Costs, SimError> {
    let mut costs = Costs::default();
    let Some(section) = section else { return Ok(costs) };
    for (name, value) in read(section, &costs_keys())? {
        match (name, value) {
            ("virt_overhead", Some(ParamValue::Float(f))) => costs.virt_overhead = f,
            ("variation", Some(ParamValue::Float(f))) => costs.variation = f,
            (name, Some(ParamValue::Duration(ns))) => {
                let field = match name {
                    "ipi_send" => &mut costs.ipi_send,
                    "ipi_delivery" => &mut costs.ipi_delivery,
                    "ipi_handler" => &mut costs.ipi_handler,
                    "context_switch" => &mut costs.context_switch,
                    "hlt_exit" => &mut costs.hlt_exit,
                    "tlb_flush_per_page" => &mut costs.tlb_flush_per_page,
                    "syscall" => &mut costs.syscall,
                    "halt_wake" => &mut costs.halt_wake,
                    _ => continue,
                };
                *field = ns;
            }
            _ => {}
        }
    }
    Ok(costs)
}

/// `[run]`; absent keys take their defaults.
pub fn run(section: Option<&Section>) -> Result<RunSpec, SimError> {
    let mut run = RunSpec { duration: 10 * SEC, seed: 1, max_events: None, check: false, sample_every: None, barrier_waits: false };
    let Some(section) = section else { return Ok(run) };
    for (name, value) in read(section, &run_keys())? {
        match (name, value) {
            ("duration", Some(ParamValue::Duration(ns))) => run.duration = ns,
            ("seed", Some(ParamValue::Int(n))) => run.seed = n,
            ("max_events", Some(ParamValue::Int(n))) => run.max_events = Some(n),
            ("check", Some(ParamValue::Bool(b))) => run.check = b,
            ("sample_every", Some(ParamValue::Duration(ns))) => run.sample_every = Some(ns),
            ("barrier_waits", Some(ParamValue::Bool(b))) => run.barrier_waits = b,
            _ => {}
        }
    }
    Ok(run)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> toml::Table {
        text.parse().unwrap()
    }

    #[test]
    fn defaults_match_the_config_structs() {
        let t = table("");
        let s = Section::new("f", "guest", &t);
        assert_eq!(guest_config(&s, &GuestConfig::default()).unwrap(), GuestConfig::default());
        assert_eq!(costs(None).unwrap(), Costs::default());
        assert_eq!(ple(None, 2).unwrap(), Ple::default());
        assert_eq!(ple(None, 1).unwrap().grow, 1);
        let r = run(None).unwrap();
        assert_eq!((r.duration, r.seed, r.max_events, r.check), (10 * SEC, 1, None, false));
    }

    /// Linux 2.6.18: unfair spinlocks, otherwise 3.2's paths; Linux 3.13 on Xen: the PV slow
    /// path of its ticket locks (as pv-qspinlock), the call-function yield, the futex wake IPI
    /// still under the bucket lock (wake_q is 4.2's). Both keep the base's tick and buckets.
    #[test]
    fn the_2_6_18_and_3_13_presets_set_what_those_kernels_do() {
        use crate::guest::config::KernelPreset;
        let base = GuestConfig { tick: 7 * MS, futex_buckets: 64, ..GuestConfig::default() };
        let read = |kernel: &str| {
            let t: toml::Table = toml::from_str(&format!("kernel = \"{kernel}\"")).unwrap();
            guest_config(&Section::new("f", "guest", &t), &base).unwrap()
        };
        let old = read("linux-2.6.18");
        assert_eq!(old, KernelPreset::Linux2618.apply(&base));
        assert_eq!(old, GuestConfig { spinlock: SpinlockKind::TestAndSet, ..base.clone() }, "3.2's paths but unfair locks");
        let g = read("linux-3.13");
        assert_eq!(g, KernelPreset::Linux313.apply(&base));
        assert_eq!((g.spinlock, g.futex_wake_ipi, g.tlb_targets), (SpinlockKind::PvQueued, FutexWakeIpi::UnderLock, TlbTargets::AllInMask));
        assert!(g.call_function_yield && g.rwsem_steal && !g.rwsem_spin && !g.pv.any());
        assert!(!old.rwsem_steal, "2.6.18 grants mmap_sem to the first waiter, as 3.2 does");
        assert_eq!((g.tick, g.futex_buckets, g.pv_spin), (7 * MS, 64, crate::guest::config::PV_SPIN_DEFAULT));
    }

    #[test]
    fn the_linux_4_4_preset_sets_its_keys_and_the_others_override_it() {
        use crate::guest::config::KernelPreset;
        let t: toml::Table = toml::from_str("spinlock = \"ticket\"\nkernel = \"linux-4.4\"\ntick = \"10ms\"").unwrap();
        let g = guest_config(&Section::new("f", "guest", &t), &GuestConfig::default()).unwrap();
        // The key written before the preset still wins; the preset sets the rest.
        assert_eq!(g.spinlock, SpinlockKind::Ticket);
        assert_eq!(g.futex_wake_ipi, FutexWakeIpi::AfterUnlock);
        assert!(g.call_function_yield);
        assert_eq!(g.tlb_targets, TlbTargets::AllInMask);
        assert_eq!(g.tick, 10 * MS);
        let t: toml::Table = toml::from_str("kernel = \"linux-4.4\"").unwrap();
        let g = guest_config(&Section::new("f", "guest", &t), &GuestConfig::default()).unwrap();
        assert_eq!(g, KernelPreset::Linux44.apply(&GuestConfig::default()));
        assert_eq!(g.spinlock, SpinlockKind::PvQueued);
        assert_eq!(g.pv_spin, 136_533);
        // linux-3.2 in a VM's table undoes a 4.4 [guest] (keeping its tick).
        let base = KernelPreset::Linux44.apply(&GuestConfig { tick: 7 * MS, ..GuestConfig::default() });
        let t: toml::Table = toml::from_str("kernel = \"linux-3.2\"").unwrap();
        let g = guest_config(&Section::new("f", "vm[0].guest", &t), &base).unwrap();
        assert_eq!(g, GuestConfig { tick: 7 * MS, ..GuestConfig::default() });
        let t: toml::Table = toml::from_str("kernel = \"linux-5.4\"").unwrap();
        let e = guest_config(&Section::new("f", "guest", &t), &GuestConfig::default()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "f: guest.kernel: expected one of linux-2.6.18, linux-3.2, linux-3.13, linux-4.4, linux-6.x, got \"linux-5.4\""
        );
        let t: toml::Table = toml::from_str("call_function_yield = 1").unwrap();
        let e = guest_config(&Section::new("f", "guest", &t), &GuestConfig::default()).unwrap_err();
        assert!(e.to_string().starts_with("f: guest.call_function_yield: expected true or false"), "{e}");
    }

    #[test]
    fn guest_override_keeps_the_base() {
        let base = GuestConfig { tick: 10 * MS, ..GuestConfig::default() };
        let t = table("spinlock = \"tas\"\nfutex_wake_ipi = \"after-unlock\"\ntlb_targets = \"skip-lazy\"");
        let g = guest_config(&Section::new("f", "vm[0].guest", &t), &base).unwrap();
        assert_eq!(g.spinlock, SpinlockKind::TestAndSet);
        assert_eq!(g.futex_wake_ipi, FutexWakeIpi::AfterUnlock);
        assert_eq!(g.tlb_targets, TlbTargets::SkipLazy);
        assert_eq!(g.tick, 10 * MS);
    }

    #[test]
    fn bad_values_name_the_key() {
        let t = table("spinlock = \"mcs\"");
        let e = guest_config(&Section::new("f", "guest", &t), &GuestConfig::default()).unwrap_err();
        assert_eq!(e.to_string(), "f: guest.spinlock: expected one of ticket, tas, pv-qspinlock, debug, got \"mcs\"");
        let t = table("tick = \"0ms\"");
        let e = guest_config(&Section::new("f", "guest", &t), &GuestConfig::default()).unwrap_err();
        assert!(e.to_string().starts_with("f: guest.tick: expected a duration"), "{e}");
        let t = table("futex_buckets = 0");
        let e = guest_config(&Section::new("f", "guest", &t), &GuestConfig::default()).unwrap_err();
        assert!(e.to_string().contains("guest.futex_buckets"), "{e}");
        let t = table("enabled = 1");
        let e = ple(Some(&Section::new("f", "host.ple", &t)), 2).unwrap_err();
        assert_eq!(e.to_string(), "f: host.ple.enabled: expected true or false, got 1");
        let t = table("cpu_ghz = 0.0");
        let e = ple(Some(&Section::new("f", "host.ple", &t)), 2).unwrap_err();
        assert!(e.to_string().contains("host.ple.cpu_ghz: expected a number greater than 0"), "{e}");
        let t = table("window_cycles = 0");
        assert!(ple(Some(&Section::new("f", "host.ple", &t)), 2).is_err());
        let t = table("window_cycles = 8192\nwindow_max_cycles = 4096");
        let e = ple(Some(&Section::new("f", "host.ple", &t)), 2).unwrap_err();
        assert!(e.to_string().contains("host.ple.window_max_cycles"), "{e}");
        let t = table("ipi_send = \"-2us\"");
        let e = costs(Some(&Section::new("f", "host.costs", &t))).unwrap_err();
        assert!(e.to_string().contains("host.costs.ipi_send: expected a non-negative duration"), "{e}");
        let t = table("ipi_sendd = \"2us\"");
        let e = costs(Some(&Section::new("f", "host.costs", &t))).unwrap_err();
        assert_eq!(e.to_string(), "f: host.costs.ipi_sendd: unknown key; did you mean \"ipi_send\"?");
    }

    #[test]
    fn run_keys_are_checked() {
        let t = table("duration = \"2s\"\nseed = 7\nmax_events = 1000\ncheck = true\nsample_every = \"100ms\"\nbarrier_waits = true");
        let r = run(Some(&Section::new("f", "run", &t))).unwrap();
        assert_eq!((r.duration, r.seed, r.max_events, r.check), (2 * SEC, 7, Some(1000), true));
        assert_eq!((r.sample_every, r.barrier_waits), (Some(100 * MS), true));
        assert!(!run(Some(&Section::new("f", "run", &table("")))).unwrap().barrier_waits);
        for (text, key) in [
            ("duration = \"0s\"", "run.duration"),
            ("duration = \"60\"", "run.duration"),
            ("seed = -1", "run.seed"),
            ("max_events = 0", "run.max_events"),
            ("check = \"yes\"", "run.check"),
            ("sample_every = \"500us\"", "run.sample_every"),
            ("barrier_waits = 1", "run.barrier_waits"),
        ] {
            let t = table(text);
            let e = run(Some(&Section::new("f", "run", &t))).unwrap_err();
            assert!(e.to_string().starts_with(&format!("f: {key}: ")), "{text}: {e}");
        }
    }
}
