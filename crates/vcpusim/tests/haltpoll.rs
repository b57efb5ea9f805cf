//! The guest's idle polling before HLT (`[guest] haltpoll`, guest/haltpoll.rs: Linux 6.6's
//! cpuidle-haltpoll driver and haltpoll governor): a wake-up within the poll costs no IPI and
//! no HLT exit; the poll is CPU time a co-runner does not get; the knobs are refused without
//! the driver. The governor's grow/shrink sequence is tested in the module.

mod common;

use vcpusim::api::load_scenario;

/// Two threads of a 2-vCPU Linux 6.6 VM on a KVM host of `pcpus` pCPUs meet at a blocking
/// barrier every `work` of computing, the second arriving 30 us after the first (so one waits
/// ~30 us each round); `hog` adds a CPU-bound VM of a vCPU per pCPU. `haltpoll` is the `[guest]` key, `ple` `[host.ple] enabled`.
fn ping_pong(pcpus: u32, hog: bool, haltpoll: bool, ple: bool) -> String {
    let hog = if hog { format!("[[vm]]\nname = \"hog\"\nvcpus = {pcpus}\nworkload = \"cpu-bound\"\n") } else { String::new() };
    format!(
        "[host]\npcpus = {pcpus}\npolicy = \"cfs\"\n[host.ple]\nenabled = {ple}\n[guest]\nkernel = \"linux-6.x\"\nhaltpoll = {haltpoll}\n\
         [[vm]]\nname = \"pp\"\nvcpus = 2\nworkload = \"program\"\n\
         [vm.program]\nbarriers = [2]\n\
         threads = [[{{loop = \"forever\", body = [{{compute = \"100us\"}}, {{barrier = 0, wait = \"block\"}}, {{progress = true}}]}}], \
                    [{{loop = \"forever\", body = [{{compute = \"130us\"}}, {{barrier = 0, wait = \"block\"}}]}}]]\n\
         {hog}[run]\nduration = \"200ms\"\nseed = 3\n"
    )
}

#[test]
fn a_wake_up_within_the_poll_needs_neither_an_ipi_nor_a_halt() {
    let off = common::vm_table(&common::run_toml(&ping_pong(2, false, false, false), true));
    let on = common::vm_table(&common::run_toml(&ping_pong(2, false, true, false), true));
    let col = |t: &std::collections::BTreeMap<_, _>, c: &str| common::num(t, "pp", c);
    // Without haltpoll every wait halts and every release sends a wake-up IPI.
    assert!(col(&off, "halts") > 500.0 && col(&off, "ipi_resched_count") > 500.0, "{} halts", col(&off, "halts"));
    assert!(!off["pp"].contains_key("idle_poll_ms"), "the haltpoll columns appear only when a guest polls");
    // With it the ~30 us waits fall inside the grown poll (50 us after the first halt): almost no
    // halts or IPIs, and every caught wake-up is a poll that a wake-up ended.
    assert!(col(&on, "halts") < col(&off, "halts") / 10.0, "{} halts vs {}", col(&on, "halts"), col(&off, "halts"));
    assert!(col(&on, "ipi_resched_count") < col(&off, "ipi_resched_count") / 10.0);
    assert!(
        col(&on, "idle_poll_wakeups") > 0.9 * col(&on, "idle_polls"),
        "{} of {}",
        col(&on, "idle_poll_wakeups"),
        col(&on, "idle_polls")
    );
    // The poll is CPU time: ~30 us a round spent polling.
    let rounds = col(&on, "progress");
    assert!(
        col(&on, "idle_poll_ms") > rounds * 0.02 && col(&on, "idle_poll_ms") < rounds * 0.05,
        "{} ms over {rounds} rounds",
        col(&on, "idle_poll_ms")
    );
    assert!(rounds > col(&off, "progress"), "no halt round trip: faster ({rounds} vs {})", col(&off, "progress"));
    assert_eq!(col(&on, "ple_exit_count"), 0.0);
    // With pause-loop exiting on, poll_idle's PAUSE loop exits once per PLE window (a yield in
    // the idle function, not a lock or an IPI wait), and each exit's cost cuts into the poll.
    let ple = common::vm_table(&common::run_toml(&ping_pong(2, false, true, true), true));
    assert!(
        col(&ple, "ple_exit_count") > col(&ple, "idle_polls"),
        "{} exits, {} polls",
        col(&ple, "ple_exit_count"),
        col(&ple, "idle_polls")
    );
    assert_eq!(col(&ple, "yields_in_other"), col(&ple, "yields"));
    assert!(col(&ple, "idle_poll_ms") < col(&on, "idle_poll_ms"));
}

#[test]
fn polling_takes_cpu_time_from_a_co_runner() {
    // On four pCPUs the ping-pong VM's fair half is more than it needs; the hog takes the rest,
    // less what the ping-pong VM polls away.
    let off = common::vm_table(&common::run_toml(&ping_pong(4, true, false, false), true));
    let on = common::vm_table(&common::run_toml(&ping_pong(4, true, true, false), true));
    let hog = |t: &std::collections::BTreeMap<_, _>| common::num(t, "hog", "cpu_time_ms");
    let polled = common::num(&on, "pp", "idle_poll_ms");
    assert!(polled > 10.0, "{polled} ms polled");
    assert!(hog(&off) - hog(&on) > polled / 2.0, "hog {} ms with a polling neighbour vs {} ms ({polled} ms polled)", hog(&on), hog(&off));
}

#[test]
fn the_governor_knobs_need_the_driver() {
    let text = ping_pong(2, false, false, false).replace("haltpoll = false", "haltpoll = false\nguest_halt_poll_ns = \"100us\"");
    let err = load_scenario(&text, "x.toml").unwrap_err().to_string();
    assert!(err.contains("x.toml") && err.contains("guest_halt_poll_ns") && err.contains("haltpoll = true"), "{err}");
    let text = ping_pong(2, false, true, false).replace("haltpoll = true", "haltpoll = true\nguest_halt_poll_ns = \"100us\"");
    assert!(load_scenario(&text, "x.toml").is_ok());
}

#[test]
fn the_guest_driver_turns_host_halt_polling_off() {
    // KVM's host halt polling on: it polls for the guest without the driver, never with it
    // (MSR_KVM_POLL_CONTROL = 0, `kvm_arch_no_poll`).
    let with_host_poll = |haltpoll: bool| ping_pong(2, false, haltpoll, false).replace("[guest]", "[host.halt_poll]\n[guest]");
    let host_only = common::run_sim_checked(&with_host_poll(false), 200);
    assert!(host_only.vms()[0].stats.halt_polls > 100, "{} host polls", host_only.vms()[0].stats.halt_polls);
    let both = common::run_sim_checked(&with_host_poll(true), 200);
    assert_eq!(both.vms()[0].stats.halt_polls, 0);
    assert!(both.guests()[0].stats.idle_polls > 100);
}
