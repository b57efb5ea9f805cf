//! Guest-kernel options: which Linux behaviour the guest kernel follows.

use super::haltpoll::Haltpoll;
use crate::time::{Nanos, MS};
use crate::vmexit::Hypervisor;
use crate::workload::program::SpinlockKind;

/// When `futex_wake` wakes its waiters (`try_to_wake_up`) and sends their reschedule IPI,
/// relative to releasing the hash-bucket lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FutexWakeIpi {
    /// Inside the bucket-lock critical section, as the seed's Linux 3.2 guests do
    /// (seed 000 section 3.1.1, Figure 4). Default.
    UnderLock,
    /// After releasing the lock (wake_q, Linux 4.2+, commit 1d0dcb3ad9d3).
    AfterUnlock,
}

/// Which vCPUs a TLB shootdown interrupts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlbTargets {
    /// Every other vCPU in the mm's cpumask, including idle ones in lazy-TLB mode (Linux 3.2).
    /// Default.
    AllInMask,
    /// Skip vCPUs in lazy-TLB mode (on_each_cpu_cond_mask(tlb_is_not_lazy), Linux 5.x+).
    SkipLazy,
}

/// `SPIN_THRESHOLD` (arch/x86/include/asm/spinlock.h, Linux 4.4: `1 << 15`): the loop count a
/// PV qspinlock waiter spins in `pv_wait_node` / `pv_wait_head` before `pv_wait`.
pub const SPIN_THRESHOLD: u64 = 1 << 15;

/// Cycles of one spin iteration (`READ_ONCE` + `cpu_relax`, i.e. PAUSE): about 10 on the
/// seed's Westmere Xeon E5645 (Intel's optimization manual gives "about 10 cycles" for PAUSE
/// before Skylake). Assumed: the loop's load hits the cache.
pub const PAUSE_LOOP_CYCLES: u64 = 10;

/// The E5645's clock, 2.40 GHz (seed 002 section 3.1), in cycles per microsecond.
pub const E5645_CYCLES_PER_US: u64 = 2400;

/// Default `pv_spin`: SPIN_THRESHOLD iterations of PAUSE_LOOP_CYCLES at 2.4 GHz = 136.5 us.
pub const PV_SPIN_DEFAULT: Nanos = SPIN_THRESHOLD * PAUSE_LOOP_CYCLES * 1000 / E5645_CYCLES_PER_US;

/// The Linux guest's paravirtual features (the `[guest]` / `[vm.guest]` booleans of the same
/// names; all on in the `linux-6.x` preset, Linux 6.6, all off in the older presets). Each is
/// what a 6.6 guest sets up when its hypervisor advertises the feature (arch/x86/kernel/kvm.c
/// `kvm_guest_init`, `kvm_spinlock_init`, `kvm_apic_init`; on Xen arch/x86/xen/spinlock.c);
/// guest/pv_guest.rs carries them out, docs/model.md § Linux 6.x guest (KVM PV) says what each
/// changes and where the model leaves it out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PvFeatures {
    /// PV qspinlock (`__pv_queued_spin_lock_slowpath`): on KVM `kvm_wait` (HLT) and
    /// `kvm_kick_cpu` (`KVM_HC_KICK_CPU`), Linux 3.12 for ticket locks, 4.2 for qspinlocks
    /// (commit bf0c7c34adc2); on Xen `xen_qlock_wait` / `xen_qlock_kick`.
    pub pv_spinlock: bool,
    /// `vcpu_is_preempted` (KVM: `__kvm_vcpu_is_preempted` reads the steal-time area's
    /// `preempted` byte, Linux 4.9, commit 1885aa7037c0; Xen: `xen_vcpu_stolen`).
    pub vcpu_is_preempted: bool,
    /// `kvm_flush_tlb_multi` (Linux 4.16, commit 858a43aae236): a preempted target gets
    /// `KVM_VCPU_FLUSH_TLB` in its steal-time area instead of an IPI. KVM only.
    pub pv_tlb_flush: bool,
    /// `kvm_smp_send_call_func_ipi` (Linux 5.3, commit f85f6e7bd8e9): after call-function IPIs,
    /// `KVM_HC_SCHED_YIELD` to a target that is preempted and not idle. KVM only.
    pub pv_sched_yield: bool,
    /// `kvm_send_ipi_mask` (Linux 4.19, commit aaffcfd1e82d): one `KVM_HC_SEND_IPI` per 128
    /// consecutive APIC ids instead of one ICR write per target. KVM only.
    pub pv_ipi: bool,
    /// The steal clock (`kvm_steal_clock`, `MSR_KVM_STEAL_TIME`, Linux 3.1): the area
    /// `vcpu_is_preempted`, `pv_tlb_flush` and `pv_sched_yield` need.
    pub steal_time: bool,
}

impl PvFeatures {
    /// Key names, in the order of the fields.
    pub const NAMES: [&'static str; 6] = ["pv_spinlock", "vcpu_is_preempted", "pv_tlb_flush", "pv_sched_yield", "pv_ipi", "steal_time"];
    /// The features only a KVM host offers (a Xen host has its own spinlock kick and runstate,
    /// none of these).
    pub const KVM_ONLY: [&'static str; 3] = ["pv_tlb_flush", "pv_sched_yield", "pv_ipi"];
    pub const ALL: PvFeatures =
        PvFeatures { pv_spinlock: true, vcpu_is_preempted: true, pv_tlb_flush: true, pv_sched_yield: true, pv_ipi: true, steal_time: true };

    /// The feature named `name` (one of `NAMES`).
    pub fn get_mut(&mut self, name: &str) -> Option<&mut bool> {
        Some(match name {
            "pv_spinlock" => &mut self.pv_spinlock,
            "vcpu_is_preempted" => &mut self.vcpu_is_preempted,
            "pv_tlb_flush" => &mut self.pv_tlb_flush,
            "pv_sched_yield" => &mut self.pv_sched_yield,
            "pv_ipi" => &mut self.pv_ipi,
            "steal_time" => &mut self.steal_time,
            _ => return None,
        })
    }

    pub fn get(&self, name: &str) -> bool {
        let mut c = *self;
        c.get_mut(name).is_some_and(|b| *b)
    }

    /// Whether any feature is on.
    pub fn any(&self) -> bool {
        *self != PvFeatures::default()
    }

    /// Fit the features to the VM's host (`hypervisor`), as the 6.6 guest does at boot: on Xen
    /// the KVM-only ones are off (an error if the scenario wrote one `true`: `given` has the
    /// keys it wrote); then the dependencies the kernel checks. Errors are (key, message).
    pub fn resolve(&mut self, given: &PvFeatures, hypervisor: Hypervisor) -> Result<(), (&'static str, String)> {
        if hypervisor == Hypervisor::Xen {
            for name in PvFeatures::KVM_ONLY {
                if given.get(name) && self.get(name) {
                    return Err((
                        name,
                        format!(
                            "{name} is a KVM paravirtual interface, but this VM's host policy schedules for Xen; \
                             set {name} = false or put the VM in a pool of a KVM policy (cfs)"
                        ),
                    ));
                }
                *self.get_mut(name).expect("a feature name") = false;
            }
        }
        // kvm.c: vcpu_is_preempted is installed, and pv_tlb_flush_supported /
        // pv_sched_yield_supported hold, only with KVM_FEATURE_STEAL_TIME; the yield reads
        // vcpu_is_preempted.
        let needs = [
            ("vcpu_is_preempted", self.vcpu_is_preempted, "steal_time", self.steal_time),
            ("pv_tlb_flush", self.pv_tlb_flush, "steal_time", self.steal_time),
            ("pv_sched_yield", self.pv_sched_yield, "steal_time", self.steal_time),
            ("pv_sched_yield", self.pv_sched_yield, "vcpu_is_preempted", self.vcpu_is_preempted),
        ];
        for (name, on, needed, has) in needs {
            if on && !has {
                return Err((
                    name,
                    format!("{name} = true needs {needed} = true (Linux 6.6 arch/x86/kernel/kvm.c sets it up only then); set {needed} = true or {name} = false"),
                ));
            }
        }
        Ok(())
    }
}

/// The guest kernel versions a `[guest] kernel` preset names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelPreset {
    /// The seeds' Linux 3.2 guest: ticket spinlocks, futex wake IPI under the bucket lock, no
    /// yield after call-function IPIs, every mm_cpumask vCPU interrupted. The default.
    Linux32,
    /// Linux 2.6.18 (seed 004's Fedora Core 6 guests on Xen 3.3): unfair spinlocks (x86_64's
    /// `__raw_spin_lock` is a `lock; decl` test-and-test-and-set loop with `rep;nop`, "We make no
    /// fairness assumptions", include/asm-x86_64/spinlock.h; ticket locks came in 2.6.25), the
    /// futex wake IPI under the bucket lock, no yield after call-function IPIs (not in 2.6.18
    /// or its Xen tree), every mm_cpumask vCPU interrupted by a shootdown (the HVM and native
    /// `flush_tlb_others`; a PV guest's `MMUEXT_TLB_FLUSH_MULTI` hypercall is not modelled).
    Linux2618,
    /// Linux 3.13 (seed 001's guests as Xen 4.4 HVM guests, and its PMs): ticket spinlocks with
    /// Xen's PV slow path (`xen_lock_spinning`: `SPIN_THRESHOLD` spins, then SCHEDOP_poll until
    /// the unlocker's `xen_unlock_kick`; 3.13 sets it up for HVM guests with the vector
    /// callback, arch/x86/xen/smp.c `xen_hvm_smp_init`), modelled by the PV qspinlock path (the
    /// same FIFO order, threshold, poll and kick); the futex wake IPI under the bucket lock (no
    /// wake_q before 4.2); SCHEDOP_yield after call-function IPIs to a stolen vCPU
    /// (`xen_smp_send_call_function_ipi`, since 2.6.24); every mm_cpumask vCPU interrupted;
    /// rwsem write-lock stealing (3.10) but no optimistic rwsem spinning (3.16). On bare metal
    /// the spinlocks are native tickets.
    Linux313,
    /// Linux 4.4 as a Xen HVM guest with PV extensions (seed 002's guest): PV qspinlocks,
    /// wake_q futex wake-ups, SCHEDOP_yield after call-function IPIs to a stolen vCPU, rwsem
    /// write-lock stealing without optimistic spinning (E7 was calibrated without it); TLB
    /// shootdowns still interrupt lazy-TLB vCPUs (4.4's native_flush_tlb_others sends to the
    /// whole mm_cpumask; docs/model.md § seed 002: the Linux 4.4 guest).
    Linux44,
    /// Linux 6.6 with its paravirtual features (`PvFeatures::ALL`, fitted to the host at load:
    /// `PvFeatures::resolve`): PV qspinlocks, wake_q futex wake-ups (since 4.2), rwsem spinning
    /// and write-lock stealing, TLB shootdowns that skip lazy-TLB CPUs (6.6 arch/x86/mm/tlb.c
    /// `native_flush_tlb_multi`:
    /// `on_each_cpu_cond_mask(tlb_is_not_lazy, ...)` unless page tables were freed), and no Xen
    /// SCHEDOP_yield after call-function IPIs (a KVM guest's is `pv_sched_yield`).
    Linux6,
}

impl KernelPreset {
    pub const NAMES: &'static [&'static str] = &["linux-2.6.18", "linux-3.2", "linux-3.13", "linux-4.4", "linux-6.x"];

    pub fn name(self) -> &'static str {
        match self {
            KernelPreset::Linux2618 => "linux-2.6.18",
            KernelPreset::Linux32 => "linux-3.2",
            KernelPreset::Linux313 => "linux-3.13",
            KernelPreset::Linux44 => "linux-4.4",
            KernelPreset::Linux6 => "linux-6.x",
        }
    }

    pub fn from_name(name: &str) -> Option<KernelPreset> {
        match name {
            "linux-2.6.18" => Some(KernelPreset::Linux2618),
            "linux-3.2" => Some(KernelPreset::Linux32),
            "linux-3.13" => Some(KernelPreset::Linux313),
            "linux-4.4" => Some(KernelPreset::Linux44),
            "linux-6.x" => Some(KernelPreset::Linux6),
            _ => None,
        }
    }

    /// The keys the preset sets, each kernel written as what it changes from the one before it
    /// (docs/model.md 8 tabulates them with their sources).
    fn keys(self) -> PresetKeys {
        match self {
            KernelPreset::Linux32 => {
                let d = GuestConfig::default();
                PresetKeys {
                    futex_wake_ipi: d.futex_wake_ipi,
                    tlb_targets: d.tlb_targets,
                    spinlock: d.spinlock,
                    call_function_yield: d.call_function_yield,
                    rwsem_spin: d.rwsem_spin,
                    rwsem_steal: d.rwsem_steal,
                    pv: d.pv,
                }
            }
            // 3.2's paths with the unfair lock.
            KernelPreset::Linux2618 => PresetKeys { spinlock: SpinlockKind::TestAndSet, ..KernelPreset::Linux32.keys() },
            // 3.2's paths with Xen's PV ticket-lock slow path, the call-function yield and
            // rwsem write-lock stealing (3.10).
            KernelPreset::Linux313 => PresetKeys {
                spinlock: SpinlockKind::PvQueued,
                call_function_yield: true,
                rwsem_steal: true,
                ..KernelPreset::Linux32.keys()
            },
            // 3.13's, with wake_q. 4.4 spins optimistically on rwsems too; left off here so seed
            // 002's calibrated runs (E7) keep their mmap_sem (docs/model.md § Linux 6.x guest:
            // rwsem spinning).
            KernelPreset::Linux44 => PresetKeys { futex_wake_ipi: FutexWakeIpi::AfterUnlock, ..KernelPreset::Linux313.keys() },
            KernelPreset::Linux6 => PresetKeys {
                futex_wake_ipi: FutexWakeIpi::AfterUnlock,
                tlb_targets: TlbTargets::SkipLazy,
                spinlock: SpinlockKind::PvQueued,
                call_function_yield: false,
                rwsem_spin: true,
                rwsem_steal: true,
                pv: PvFeatures::ALL,
            },
        }
    }

    /// The preset's behaviour keys on top of `base` (which keeps its tick and bucket count).
    pub fn apply(self, base: &GuestConfig) -> GuestConfig {
        let k = self.keys();
        GuestConfig {
            futex_wake_ipi: k.futex_wake_ipi,
            tlb_targets: k.tlb_targets,
            spinlock: k.spinlock,
            call_function_yield: k.call_function_yield,
            rwsem_spin: k.rwsem_spin,
            rwsem_steal: k.rwsem_steal,
            pv: k.pv,
            // A preset's features are the preset's, not keys the scenario wrote.
            pv_given: PvFeatures::default(),
            ..base.clone()
        }
    }
}

/// What a kernel preset sets (`KernelPreset::keys`).
struct PresetKeys {
    futex_wake_ipi: FutexWakeIpi,
    tlb_targets: TlbTargets,
    spinlock: SpinlockKind,
    call_function_yield: bool,
    rwsem_spin: bool,
    rwsem_steal: bool,
    pv: PvFeatures,
}

/// `GuestConfig::irs_handler`'s default (see there).
pub const IRS_HANDLER_DEFAULT: Nanos = 20 * crate::time::US;

#[derive(Clone, Debug, PartialEq)]
pub struct GuestConfig {
    pub futex_wake_ipi: FutexWakeIpi,
    pub tlb_targets: TlbTargets,
    /// Kind of the guest's kernel spinlocks (futex buckets, kernel locks).
    pub spinlock: SpinlockKind,
    /// Guest scheduler tick (CONFIG_HZ=250 -> 4 ms): time-slicing between threads on one vCPU and
    /// periodic load balancing.
    pub tick: Nanos,
    /// Number of futex hash buckets (Linux: 256 per CPU, rounded to a power of two; here what
    /// matters is which futexes share a bucket lock).
    pub futex_buckets: usize,
    /// PV qspinlock: how long a waiter spins (time on its vCPU) before it blocks in
    /// SCHEDOP_poll (`SPIN_THRESHOLD` iterations; `PV_SPIN_DEFAULT`).
    pub pv_spin: Nanos,
    /// After sending call-function IPIs (a TLB shootdown's `smp_call_function_many`), yield
    /// the pCPU (SCHEDOP_yield) if a target vCPU's runstate is runnable (Linux 4.4
    /// `xen_smp_send_call_function_ipi`, arch/x86/xen/smp.c).
    pub call_function_yield: bool,
    /// mmap_sem's optimistic spinning (kernel/locking/rwsem.c `rwsem_optimistic_spin`, Linux
    /// 3.16+): a writer that finds the semaphore held by a writer running on a CPU spins
    /// (`rwsem_spin_on_owner`) instead of sleeping, until the owner releases it or stops
    /// running (`owner_on_cpu`: `on_cpu && !vcpu_is_preempted`). Guest/mm_sem.rs.
    pub rwsem_spin: bool,
    /// mmap_sem's write-lock stealing (Linux 3.10+, `__rwsem_do_wake`): a release wakes the
    /// first queued writer without granting it the semaphore, and whichever writer finds it
    /// free takes it; off, the release grants it to the first waiter (3.2). Guest/mm_sem.rs.
    pub rwsem_steal: bool,
    /// Seed 003 (IRS): the guest registered the SA vIRQ and handles preemption notices
    /// (`Upcall::PreemptNotice`, guest/irs.rs: "Linux kernel: 130 LOC", slide 9).
    pub irs: bool,
    /// The IRS notice handler's work (deschedule the current thread, pick the least-waiting
    /// sibling, move the thread, acknowledge): 20 us, the low end of the slides' measured
    /// "20-26 us" for SA send + migration + completion (seed 003 slide 7). The model delivers
    /// the notice at once and completes the switch at the ack, so the handler carries the whole
    /// delay; its split among the three steps is not given.
    pub irs_handler: Nanos,
    /// The paravirtual features (`PvFeatures`): none by default.
    pub pv: PvFeatures,
    /// Which of `pv` the scenario wrote itself (the loader's: a KVM-only key written `true`
    /// for a Xen host is an error, one a preset turned on is just turned off).
    pub pv_given: PvFeatures,
    /// The hypervisor whose interfaces the features use: the VM's pool policy's
    /// (`PolicyKind::hypervisor`), set by the loader; Xen by default.
    pub hypervisor: Hypervisor,
    /// Idle polling before HLT (`cpuidle-haltpoll` with the haltpoll governor,
    /// guest/haltpoll.rs): off by default and in every preset (Linux 6.6 loads it only with
    /// KVM_HINTS_REALTIME or `force`).
    pub haltpoll: Option<Haltpoll>,
}

impl GuestConfig {
    /// The KVM PV qspinlock (`kvm_wait` / `kvm_kick_cpu`) rather than Xen's.
    #[inline]
    pub fn kvm_pv_spinlock(&self) -> bool {
        self.pv.pv_spinlock && self.hypervisor == Hypervisor::Kvm
    }
}

impl Default for GuestConfig {
    fn default() -> Self {
        GuestConfig {
            futex_wake_ipi: FutexWakeIpi::UnderLock,
            tlb_targets: TlbTargets::AllInMask,
            spinlock: SpinlockKind::Ticket,
            tick: 4 * MS,
            futex_buckets: 256,
            pv_spin: PV_SPIN_DEFAULT,
            call_function_yield: false,
            rwsem_spin: false,
            rwsem_steal: false,
            irs: false,
            irs_handler: IRS_HANDLER_DEFAULT,
            pv: PvFeatures::default(),
            pv_given: PvFeatures::default(),
            hypervisor: Hypervisor::Xen,
            haltpoll: None,
        }
    }
}
