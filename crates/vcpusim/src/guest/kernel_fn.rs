//! The guest-kernel function a vCPU is executing: what a hypervisor could read from the
//! instruction pointer with the guest's symbol table (seed 002 section 3; seed 000 section 4.2
//! used it to locate LHPs). Kept per vCPU; policies see it only through an explicit paravirtual
//! channel.

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
        }
    }
}
