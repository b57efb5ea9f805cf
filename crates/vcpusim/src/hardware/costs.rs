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
    /// The host's wake-up path for a vCPU that blocked in HLT (the kick of its pCPU, the idle
    /// exit, `schedule()` and `vcpu_load` before VM entry), charged as overhead when it is
    /// switched in after the wake-up; halt polling (`[host.halt_poll]`) avoids it. Default 0
    /// (not charged unless the scenario sets it).
    pub halt_wake: Nanos,
    /// Fixed virtualization overhead: a VM's work takes `1 + virt_overhead` times as long as on
    /// bare metal (memory virtualization by EPT/NPT two-dimensional page walks and the vCPU
    /// scheduler's own work), applied as a speed factor to every vCPU of every VM that is not
    /// `bare_metal` (sim/speed_change.rs). Default 0. Seed 001 section III-B measures 24% for
    /// tascell-fib at one thread (Xen 4.4, Linux 3.13 HVM guest, Opteron 6376): 0.24.
    pub virt_overhead: f64,
    /// The spread of the host's switch and exit charges (context switch in, HLT and poll exits,
    /// the exit round trip after a yield): each is its value times a factor drawn uniformly from
    /// `[1 - variation, 1 + variation]` (sim/mechanisms/cost_variation.rs). Default 0.025: the
    /// body of a measured CDF of VMCALL exit round trips (KVM on an i7-3960X, vCPUs pinned: 95% of
    /// the samples between 1,610 and 1,690 cycles around a 1,650 median; docs/model.md section 4).
    /// 0: exact charges.
    pub variation: f64,
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
            halt_wake: 0,
            virt_overhead: 0.0,
            variation: 0.025,
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
            halt_wake: 0,
            virt_overhead: 0.0,
            variation: self.variation,
        }
    }
}

/// Pause-loop exiting (Intel PLE / AMD pause filter). A vCPU that spins in the guest kernel
/// longer than the window exits to the hypervisor, which treats it as a yield. The window is
/// per vCPU (KVM VMX `vmx->ple_window`, the dynamic window of Linux 3.18 on): it grows at each
/// exit (`grow_ple_window` in `handle_pause`) and shrinks when the vCPU is loaded again after
/// being scheduled out (`shrink_ple_window` in `vmx_vcpu_load`, v6.6 arch/x86/kvm/vmx/vmx.c).
#[derive(Clone, Debug, PartialEq)]
pub struct Ple {
    pub enabled: bool,
    /// KVM VMX `ple_window` default: 4096 cycles (arch/x86/kvm/vmx/vmx.c).
    pub window_cycles: u64,
    /// Host clock in GHz, to turn cycles into time. 2.67 GHz: seed 000 section 4's Xeon X5550.
    pub cpu_ghz: f64,
    /// KVM `ple_window_grow` (default 2; Xen keeps its window fixed: 1): at each exit the window
    /// is multiplied by it, or, if it is at least `window_cycles`, increased by it; 0 resets the
    /// window to `window_cycles` (`__grow_ple_window`).
    pub grow: u64,
    /// Upper bound on the grown window, in cycles (KVM `ple_window_max`, default
    /// `KVM_VMX_DEFAULT_PLE_WINDOW_MAX` = `UINT_MAX`).
    pub window_max_cycles: u64,
    /// KVM `ple_window_shrink` (default 0): when the vCPU is loaded after being scheduled out,
    /// 0 resets the window to `window_cycles`; otherwise it is divided by it, or, if it is at
    /// least `window_cycles`, decreased by it, never below `window_cycles` (`__shrink_ple_window`).
    pub shrink: u64,
    /// The exit counts PAUSE loops at any privilege level, user mode included (AMD's pause
    /// filter: AMD64 APM vol. 2 15.14.4, "Pause Intercept Filtering", tests no CPL; Xen 4.4
    /// enables it in xen/arch/x86/hvm/svm/vmcb.c `construct_vmcb`), not only at CPL 0 (Intel's
    /// PAUSE-loop exiting, SDM vol. 3C 25.1.3: "a series of executions of PAUSE at CPL 0").
    pub any_cpl: bool,
    /// VMX `PLE_Gap` in cycles (KVM `ple_gap` = `KVM_VMX_DEFAULT_PLE_GAP` = 128; Xen 4.x
    /// xen/arch/x86/hvm/vmx/vmcs.c `ple_gap = 128`): a PAUSE more than this long after the
    /// previous one starts a new loop, whose window starts again (SDM vol. 3C 25.1.3). Intel's
    /// only: AMD's filter, as Xen 4.4 and 4.7 program it, counts PAUSEs with no threshold.
    pub gap_cycles: u64,
    /// Cycles between two PAUSEs of a spinner whose polled line another CPU of its socket just
    /// wrote: the reload's coherence miss. Xeon X5550: a single off-core cache miss, 86.6 cycles
    /// (P. McKenney, "Is Parallel Programming Hard, And, If So, What Can You Do About It?",
    /// cpu/overheads.tex, the X5550 table's "Blind CAS" row, "Single cache miss" until 2020).
    pub line_socket_cycles: u64,
    /// The same when the writer is on another socket: 256.7 cycles on the X5550 (the same table's
    /// off-socket row).
    pub line_remote_cycles: u64,
}

impl Default for Ple {
    fn default() -> Self {
        Ple {
            enabled: true,
            window_cycles: 4096,
            cpu_ghz: 2.67,
            grow: 2,
            window_max_cycles: u32::MAX as u64,
            shrink: 0,
            any_cpl: false,
            gap_cycles: 128,
            line_socket_cycles: 87,
            line_remote_cycles: 257,
        }
    }
}

impl Ple {
    /// `__grow_ple_window(window, ple_window, ple_window_grow, ple_window_max)`.
    pub fn grown(&self, window: u64) -> u64 {
        let base = self.window_cycles;
        if self.grow < 1 {
            return base;
        }
        let val = if self.grow < base { window.saturating_mul(self.grow) } else { window.saturating_add(self.grow) };
        val.min(self.window_max_cycles.max(base))
    }

    /// `__shrink_ple_window(window, ple_window, ple_window_shrink, ple_window)`.
    pub fn shrunk(&self, window: u64) -> u64 {
        let base = self.window_cycles;
        if self.shrink < 1 {
            return base;
        }
        let val = if self.shrink < base { window / self.shrink } else { window.saturating_sub(self.shrink) };
        val.max(base)
    }

    /// Whether a store to the line a kernel spinner polls, made from its own socket
    /// (`same_socket`) or another, starts the spinner's PAUSE loop again: the reload's miss
    /// leaves a gap between two PAUSEs longer than `PLE_Gap`.
    pub fn store_restarts_loop(&self, same_socket: bool) -> bool {
        let gap = if same_socket { self.line_socket_cycles } else { self.line_remote_cycles };
        self.enabled && !self.any_cpl && gap > self.gap_cycles
    }

    /// A window of `cycles` in nanoseconds (at least 1, at most `MAX_DURATION`: the loader
    /// refuses a clock that would make a longer one, and a Rust caller's is cut there).
    pub fn ns(&self, cycles: u64) -> Nanos {
        ((cycles as f64 / self.cpu_ghz).ceil() as Nanos).clamp(1, crate::time::MAX_DURATION)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ple_window_grows_and_caps() {
        let ple = Ple { window_max_cycles: 4096 * 4, ..Ple::default() };
        assert_eq!(ple.ns(4096), (4096.0f64 / 2.67).ceil() as u64);
        let mut w = ple.window_cycles;
        let mut seen = vec![];
        for _ in 0..4 {
            w = ple.grown(w);
            seen.push(w);
        }
        assert_eq!(seen, [8192, 16384, 16384, 16384]);
        let fixed = Ple { grow: 1, ..Ple::default() };
        assert_eq!(fixed.grown(4096), 4096);
        // A modifier of at least the base adds (`__grow_ple_window`); 0 resets.
        assert_eq!(Ple { grow: 5000, ..Ple::default() }.grown(4096), 9096);
        assert_eq!(Ple { grow: 0, ..Ple::default() }.grown(8192), 4096);
    }

    #[test]
    fn ple_window_shrinks_to_its_base_or_by_its_divisor() {
        // ple_window_shrink = 0 (the default): reset to ple_window.
        assert_eq!(Ple::default().shrunk(4096 * 64), 4096);
        let halve = Ple { shrink: 2, ..Ple::default() };
        assert_eq!(halve.shrunk(4096 * 64), 4096 * 32);
        assert_eq!(halve.shrunk(6000), 4096, "never below ple_window");
        let subtract = Ple { shrink: 10_000, ..Ple::default() };
        assert_eq!(subtract.shrunk(30_000), 20_000);
        assert_eq!(subtract.shrunk(12_000), 4096);
    }
}
