//! Costs of virtualization events and pause-loop exiting (PLE) settings.

use crate::time::{Nanos, US};

/// Time charged for hardware-level virtualization events. Defaults are typical of the
/// Nehalem/Westmere-era hosts of seed 000 (section 4: Xeon X5550, no APICv, no posted interrupts),
/// where every IPI send exits to the hypervisor.
#[derive(Clone, Debug, PartialEq)]
pub struct Costs {
    /// A VMEXIT/VMENTRY round trip for sending an IPI (APIC ICR write), charged to the sender.
    /// Assumed: 1-2 us is the commonly quoted round trip, not checked against a measurement; seed
    /// 000 section 4.2 notes that
    /// IPI preparation takes several such exits.
    pub ipi_send: Nanos,
    /// Latency from the send until the virtual interrupt is injected into a running target.
    pub ipi_delivery: Nanos,
    /// Guest time to run an IPI handler (entry, handler, EOI exit).
    pub ipi_handler: Nanos,
    /// Host-side vCPU context switch, charged to the pCPU when a different vCPU starts running.
    pub context_switch: Nanos,
    /// HLT exit: time from the guest's HLT until the pCPU is released.
    pub hlt_exit: Nanos,
    /// Per-page cost of a local TLB flush in the shootdown handler (~100 ns per page,
    /// arch/x86/mm/tlb.c comment on tlb_single_page_flush_ceiling).
    pub tlb_flush_per_page: Nanos,
    /// Guest system-call entry plus exit.
    pub syscall: Nanos,
    /// Fixed virtualization overhead: a VM's work takes `1 + virt_overhead` times as long as on
    /// bare metal (memory virtualization by EPT/NPT two-dimensional page walks and the vCPU
    /// scheduler's own work), applied as a speed factor to every vCPU of every VM that is not
    /// `bare_metal` (sim/speed.rs). Default 0. Seed 001 section III-B measures 24% for
    /// tascell-fib at one thread (Xen 4.4, Linux 3.13 HVM guest, Opteron 6376): 0.24.
    pub virt_overhead: f64,
}

impl Default for Costs {
    fn default() -> Self {
        Costs {
            ipi_send: 2 * US,
            ipi_delivery: US,
            ipi_handler: 2 * US,
            context_switch: 3 * US,
            hlt_exit: 2 * US,
            tlb_flush_per_page: 100,
            syscall: 300,
            virt_overhead: 0.0,
        }
    }
}

/// A native IPI send: one write of the local APIC's ICR (x2APIC WRMSR), no VM exit; assumed
/// 100 ns.
pub const NATIVE_IPI_SEND: Nanos = 100;
/// A native IPI's flight from the sender's APIC to the target's; assumed 500 ns (the VM's
/// `ipi_delivery` adds the hypervisor's injection).
pub const NATIVE_IPI_DELIVERY: Nanos = 500;
/// The EOI of a virtual interrupt exits (no APICv): one round trip, ~1 us (scheduler-facts.md
/// section 5), which a native handler does not pay.
pub const EOI_EXIT: Nanos = US;

impl Costs {
    /// The same host as a physical machine (a `bare_metal` VM): no VM exits, so no HLT exit, no
    /// vCPU context switch, a native APIC write per IPI and no EOI exit in the handler; kernel
    /// costs (system calls, TLB flushes) are the same; no virtualization overhead.
    pub fn native(&self) -> Costs {
        Costs {
            ipi_send: NATIVE_IPI_SEND,
            ipi_delivery: NATIVE_IPI_DELIVERY,
            ipi_handler: self.ipi_handler.saturating_sub(EOI_EXIT),
            context_switch: 0,
            hlt_exit: 0,
            tlb_flush_per_page: self.tlb_flush_per_page,
            syscall: self.syscall,
            virt_overhead: 0.0,
        }
    }
}

/// Pause-loop exiting (Intel PLE / AMD pause filter). A vCPU that spins in the guest kernel
/// longer than the window exits to the hypervisor, which treats it as a yield.
#[derive(Clone, Debug, PartialEq)]
pub struct Ple {
    pub enabled: bool,
    /// KVM VMX `ple_window` default: 4096 cycles (arch/x86/kvm/vmx/vmx.c).
    pub window_cycles: u64,
    /// Host clock in GHz, to turn cycles into time. 2.67 GHz: seed 000 section 4's Xeon X5550.
    pub cpu_ghz: f64,
    /// Window growth factor per exit while the vCPU stays scheduled (KVM `ple_window_grow` = 2;
    /// Xen keeps it fixed: 1). The window resets when the vCPU is scheduled out.
    pub grow: u64,
    /// Upper bound on the grown window, in cycles.
    pub window_max_cycles: u64,
}

impl Default for Ple {
    fn default() -> Self {
        Ple { enabled: true, window_cycles: 4096, cpu_ghz: 2.67, grow: 2, window_max_cycles: u32::MAX as u64 }
    }
}

/// Consecutive exits past which the window stops growing (`Ple::window_ns` caps the exponent).
pub const PLE_GROWTH_STEPS: usize = 32;

impl Ple {
    /// The window in nanoseconds after `exits` consecutive exits without being scheduled out.
    pub fn window_ns(&self, exits: u32) -> Nanos {
        let growth = self.grow.max(1).saturating_pow(exits.min(PLE_GROWTH_STEPS as u32));
        let cycles = self.window_cycles.saturating_mul(growth).min(self.window_max_cycles.max(self.window_cycles));
        ((cycles as f64 / self.cpu_ghz).ceil() as Nanos).max(1)
    }

    /// `window_ns` for 0..=`PLE_GROWTH_STEPS` exits (the same for every count above), computed
    /// once per run so that arming a spin costs a table load, not a power and a float division
    /// (issue 15 part 3). `windows[exits.min(PLE_GROWTH_STEPS)] == window_ns(exits)`.
    pub fn windows_ns(&self) -> [Nanos; PLE_GROWTH_STEPS + 1] {
        std::array::from_fn(|k| self.window_ns(k as u32))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ple_window_table_matches_window_ns() {
        for ple in [Ple::default(), Ple { grow: 1, ..Ple::default() }, Ple { window_max_cycles: 4096 * 4, ..Ple::default() }, Ple { grow: 3, cpu_ghz: 1.1, ..Ple::default() }] {
            let table = ple.windows_ns();
            for exits in [0u32, 1, 2, 5, 31, 32, 33, 1000, u32::MAX] {
                assert_eq!(table[(exits as usize).min(PLE_GROWTH_STEPS)], ple.window_ns(exits), "{ple:?} {exits}");
            }
        }
    }

    #[test]
    fn ple_window_grows_and_caps() {
        let ple = Ple { window_max_cycles: 4096 * 4, ..Ple::default() };
        let w0 = ple.window_ns(0);
        assert_eq!(w0, (4096.0f64 / 2.67).ceil() as u64);
        assert_eq!(ple.window_ns(1), (8192.0f64 / 2.67).ceil() as u64);
        assert_eq!(ple.window_ns(10), ple.window_ns(2));
        let fixed = Ple { grow: 1, ..Ple::default() };
        assert_eq!(fixed.window_ns(5), fixed.window_ns(0));
    }
}
