//! VMX `PLE_Gap` (SDM vol. 3C 25.1.3; KVM and Xen `ple_gap` = 128 cycles): a PAUSE more than
//! the gap after the previous one starts a new loop, and the window counts from it. A kernel
//! spinner's reload of its lock word after another CPU stored to it misses; from another socket
//! the miss (256.7 cycles on the X5550) outlasts the gap, from its own (86.6) it does not. So a
//! ticket taken from the other socket delays the spinner's pause-loop exit by the store's
//! offset into its window, and one taken from its own socket does not.
//!
//! The host: four pCPUs on two sockets (0-1, 2-3), credit (Xen 4.4: PLE with a fixed window of
//! 4096 cycles, 1,535 ns at 2.67 GHz), one VM of three vCPUs, each pinned to its pCPU and
//! running one thread. The holder (vCPU 2, pCPU 3) takes kernel lock 0 for 100 us; the waiter
//! (vCPU 0, pCPU 0) asks for it at 5 us; the writer (vCPU 1) takes a ticket 1 us later, from
//! pCPU 1 (the waiter's socket) or pCPU 2 (the other), or never.

use vcpusim::api::load_scenario;
use vcpusim::sim::state::Sim;
use vcpusim::time::{Nanos, US};

fn scenario(writer_pcpu: u32, writer_locks: bool, line_remote_cycles: u64) -> String {
    let writer =
        if writer_locks { r#"[{compute = "6us"}, {syscall = "1us", lock = 0}, {compute = "1ms"}]"# } else { r#"[{compute = "1ms"}]"# };
    format!(
        r#"[host]
pcpus = 4
sockets = 2
start_skew = "0ns"
policy = "credit"
[host.costs]
variation = 0.0
[host.ple]
line_remote_cycles = {line_remote_cycles}
[[vm]]
name = "a"
vcpus = 3
cpus = ["0", "{writer_pcpu}", "3"]
workload = "program"
threads = 3
[vm.program]
kernel_locks = ["l"]
cpus = ["0", "1", "2"]
threads = [[{{compute = "5us"}}, {{syscall = "1us", lock = 0}}, {{compute = "1ms"}}],
           {writer},
           [{{syscall = "100us", lock = 0}}, {{compute = "1ms"}}]]
[run]
duration = "1ms"
"#
    )
}

/// When the VM's first pause-loop exit happens (sampled every 5 ns up to 20 us).
fn first_exit(text: &str) -> Nanos {
    let sc = load_scenario(text, "<test>").unwrap_or_else(|e| panic!("scenario does not load: {e}\n{text}"));
    let mut sim = Sim::build(&sc, 1, false, true).unwrap();
    sim.start();
    let mut t = 0;
    while t < 20 * US {
        t += 5;
        sim.run_until(t, None).unwrap();
        if sim.vms()[0].stats.ple_exits > 0 {
            return t;
        }
    }
    panic!("no pause-loop exit in 20 us");
}

#[test]
fn a_ticket_taken_from_the_other_socket_restarts_the_spinners_window_and_one_from_its_own_does_not() {
    let alone = first_exit(&scenario(1, false, 257));
    let same_socket = first_exit(&scenario(1, true, 257));
    let other_socket = first_exit(&scenario(2, true, 257));
    assert_eq!(same_socket, alone, "a store from the spinner's own socket leaves its loop whole");
    // The store 1 us into the waiter's spin starts its loop again: its exit moves by that 1 us,
    // to one window after the store (where the writer's own first exit also falls).
    assert!(other_socket == alone + 1_000, "first exit at {other_socket} ns with the ticket taken from the other socket, {alone} ns alone");
}

#[test]
fn a_miss_within_the_gap_breaks_no_loop() {
    // The same remote store with a remote miss of 100 cycles (under PLE_Gap's 128).
    let alone = first_exit(&scenario(1, false, 100));
    assert_eq!(first_exit(&scenario(2, true, 100)), alone);
}
