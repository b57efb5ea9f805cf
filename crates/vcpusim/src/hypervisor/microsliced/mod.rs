//! Flexible micro-sliced cores, seed 002 (EuroSys'18, Ahn et al.), sections 4-5: a child cpupool
//! of pCPUs scheduled with a 0.1 ms slice, into which the hypervisor moves a preempted vCPU that
//! was executing a critical guest OS service, for one micro slice.
//!
//! - `detect.rs`: the whitelist of Table 3's functions and what each urgent signal (a yield, a
//!   virtual IRQ, a relayed IPI) accelerates; the policy carrying micro cores calls it.
//! - `pool.rs`: the micro pool's scheduler: at most one vCPU per pCPU, one slice, no BOOST, no
//!   balancing, no accounting of its own.
//! - `algorithm.rs`: Algorithm 1, the dynamic number of micro cores, as a pure state machine.
//!
//! The host's side (moving vCPUs in and back, resizing the pool, the Algorithm 1 timer, the
//! check-mode invariants) is `sim/mechanisms/microsliced.rs`. The real code these follow is the authors'
//! Xen 4.7 (github.com/Jeongseob/xen, branches static-usliced-cores and dyn-usliced-cores);
//! docs/model.md § seed 002: micro-sliced cores lists every departure.

pub mod algorithm;
pub mod detect;
pub mod pool;

use crate::time::{Nanos, MS, US};

/// `HCPU_TSLICE_US` (released sched_credit.c) and the seed's 0.1 ms micro slice (section 4).
pub const DEFAULT_SLICE: Nanos = 100 * US;
/// Algorithm 1's `ProfileInterval` (10 ms; `HCPU_MANAGER_PROFILE_TICK_MS`).
pub const DEFAULT_PROFILE_INTERVAL: Nanos = 10 * MS;
/// Algorithm 1's `EpochInterval` (1000 ms; `HCPU_MANAGER_TICK_MS`).
pub const DEFAULT_EPOCH: Nanos = 1000 * MS;
/// `NUM_LIMIT_HIDDEN_CPUS` of the released code (dynamic mode's default limit).
pub const DEFAULT_LIMIT: u32 = 3;

/// Static: a fixed pool; dynamic: Algorithm 1 sizes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Static,
    Dynamic,
}

impl Mode {
    pub const NAMES: &'static [&'static str] = &["static", "dynamic"];
    pub fn name(self) -> &'static str {
        match self {
            Mode::Static => "static",
            Mode::Dynamic => "dynamic",
        }
    }
}

/// Which urgent signals trigger acceleration (`detect = ["ple", "ipi", "irq"]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Detect {
    /// Yields while spinning for a lock (pause-loop exits in `_raw_spin_lock`).
    pub ple: bool,
    /// Yields while waiting for IPI acknowledgements, and relayed reschedule IPIs.
    pub ipi: bool,
    /// Virtual IRQs relayed from devices.
    pub irq: bool,
}

impl Detect {
    pub const NAMES: &'static [&'static str] = &["ple", "ipi", "irq"];
    pub const ALL: Detect = Detect { ple: true, ipi: true, irq: true };
}

/// `[host.microsliced]`.
#[derive(Clone, Debug, PartialEq)]
pub struct MicroConfig {
    pub mode: Mode,
    /// Static: the pool's size; dynamic: `NUM_LIMIT_uCORES`.
    pub cores: u32,
    /// The micro slice.
    pub slice: Nanos,
    pub profile_interval: Nanos,
    pub epoch: Nanos,
    pub detect: Detect,
    /// The guest's symbol table reaches the hypervisor: the parent pool's policy declares the
    /// `kernel_fn` channel (`symbols = false` turns the channel off: nothing is detected).
    pub symbols: bool,
}

impl MicroConfig {
    /// The micro pool is carved out of the default pool (`pool`, of `pcpus` pCPUs), which must
    /// keep at least one pCPU for normal scheduling. Checked by the loader (so `vcpusim
    /// validate` says it) and again where the pool is built, for a scenario made in Rust.
    pub fn check_cores(&self, pool: &str, pcpus: usize) -> Result<(), String> {
        if self.cores as usize >= pcpus {
            return Err(format!("cores = {} leaves pool {pool:?} ({pcpus} pCPUs) no pCPU for normal scheduling", self.cores));
        }
        Ok(())
    }
}

impl Default for MicroConfig {
    fn default() -> Self {
        MicroConfig {
            mode: Mode::Static,
            cores: 1,
            slice: DEFAULT_SLICE,
            profile_interval: DEFAULT_PROFILE_INTERVAL,
            epoch: DEFAULT_EPOCH,
            detect: Detect::ALL,
            symbols: true,
        }
    }
}

/// Why a vCPU was accelerated (vms.csv `accelerated_<reason>`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum AccelReason {
    /// A preempted sibling of a vCPU yielding in TLB synchronization / `smp_call_function_many`.
    TlbSync,
    /// A preempted sibling in a critical section of a vCPU yielding while spinning for a lock.
    LockHolder,
    /// The recipient of a virtual IRQ.
    Virq,
    /// The recipient of a relayed reschedule IPI.
    IpiRelay,
}

impl AccelReason {
    pub const ALL: [AccelReason; 4] = [AccelReason::TlbSync, AccelReason::LockHolder, AccelReason::Virq, AccelReason::IpiRelay];
    pub fn name(self) -> &'static str {
        match self {
            AccelReason::TlbSync => "tlb",
            AccelReason::LockHolder => "lock",
            AccelReason::Virq => "irq",
            AccelReason::IpiRelay => "ipi",
        }
    }
    pub fn idx(self) -> usize {
        self as usize
    }
}

/// The urgent events Algorithm 1 counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UrgentEvent {
    Ipi,
    Ple,
    Irq,
}
