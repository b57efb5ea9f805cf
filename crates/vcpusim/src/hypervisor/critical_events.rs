//! What seed 002's detection of preempted critical OS services asks of the host, in the policy
//! interface's requests (`Request::Accelerate`, `Request::CountUrgent`): why a vCPU is
//! accelerated into the micro-sliced pool, and which urgent events Algorithm 1 counts. The
//! detection itself is critical_detect.rs; the host's side is sim/mechanisms/microsliced/.

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
