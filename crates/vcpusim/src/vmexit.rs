//! The VM-exit line: the vocabulary the guest kernel and the host share.

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

