//! Seed 002's interrupt-driven I/O (section 3.2, Table 4c, Figure 9): iperf over the VM's network
//! device, with the physical IRQ relayed as a virtual IRQ to the VM's vCPU, the guest's hard IRQ
//! and softirq, and Credit's BOOST on a wake from halt (sim/mechanisms/net_device.rs, guest/netrx.rs).

mod common;
use common::*;
use vcpusim::hardware::nic::{NicSpec, Protocol};

/// Figure 9's host: one pCPU, Xen 4.7's credit; VM `io` runs iperf (with `threads` threads:
/// the server, then CPU hogs on the same vCPU), and optionally VM `hog` runs lookbusy; both
/// 1-vCPU VMs pinned to pCPU 0.
fn fig9(protocol: &str, io_threads: u32, corunner: bool, ms: u64) -> String {
    let mut text = format!(
        "[host]\npcpus = 1\npolicy = \"credit\"\nparams = {{ xen = \"4.7\" }}\n\
         [[vm]]\nname = \"io\"\nvcpus = 1\ncpus = \"0\"\nworkload = \"iperf\"\nthreads = {io_threads}\n\
         params = {{ protocol = \"{protocol}\" }}\n"
    );
    if corunner {
        text.push_str("[[vm]]\nname = \"hog\"\nvcpus = 1\ncpus = \"0\"\nworkload = \"lookbusy\"\n");
    }
    text.push_str(&format!("[run]\nduration = \"{ms}ms\"\nseed = 1\n"));
    text
}

/// A run's table and its metrics.csv rows of VM `io` as (metric -> value).
fn run_fig9(protocol: &str, io_threads: u32, corunner: bool, ms: u64) -> (Table, std::collections::BTreeMap<String, f64>) {
    let out = run_toml(&fig9(protocol, io_threads, corunner, ms), true);
    let metrics = out
        .metrics_csv
        .lines()
        .skip(1)
        .filter_map(|l| {
            let c = csv_cells(l);
            (c[0] == "io").then(|| (c[1].clone(), c[2].parse().unwrap_or(f64::NAN)))
        })
        .collect();
    (vm_table(&out), metrics)
}

type Table = std::collections::BTreeMap<String, std::collections::BTreeMap<String, String>>;

#[test]
fn solo_tcp_throughput_is_the_link_limited_goodput() {
    // What the model's parameters imply for a saturating TCP stream on the link: the link rate
    // times the payload share of each frame (MSS / wire bytes of a full frame), computed here
    // from the parameters rather than quoted.
    let nic = NicSpec::iperf(Protocol::Tcp);
    let mss = f64::from(vcpusim::hardware::nic::MTU - vcpusim::hardware::nic::TCP_IP_HEADERS);
    let wire = f64::from(vcpusim::hardware::nic::MTU + vcpusim::hardware::nic::ETH_WIRE_OVERHEAD);
    let link_limited = nic.rate_bps as f64 * mss / wire / 1e6;
    assert!((link_limited - nic.link_goodput_mbps()).abs() < 1e-9);
    let (t, m) = run_fig9("tcp", 1, false, 1000);
    let got = num(&t, "io", "throughput_mbps");
    assert!((got - link_limited).abs() / link_limited < 0.05, "solo iperf: {got} Mbit/s, the link allows {link_limited:.1}");
    // The stream was ACKed and every frame went through the interrupt path.
    assert!(m["net_acks"] > 0.0 && m["net_virqs"] > 0.0 && m["net_frames"] >= m["net_virqs"]);
    assert_eq!(t["io"]["jitter_ms"], "", "iperf reports no jitter for TCP");
}

#[test]
fn the_mixed_vcpu_loses_throughput_and_gains_jitter_under_credit() {
    // Figure 9 / Table 4c: iperf and a CPU hog on one vCPU, beside a lookbusy VM on the same
    // pCPU. The vCPU is always runnable, so no interrupt can BOOST it: frames wait for its turn.
    let (solo, _) = run_fig9("tcp", 1, false, 2000);
    let (mixed, _) = run_fig9("tcp", 2, true, 2000);
    let (s, x) = (num(&solo, "io", "throughput_mbps"), num(&mixed, "io", "throughput_mbps"));
    assert!(x < 0.75 * s, "mixed co-run {x} Mbit/s against solo {s}");
    let (solo, _) = run_fig9("udp", 1, false, 3000);
    let (mixed, _) = run_fig9("udp", 2, true, 3000);
    let (s, x) = (num(&solo, "io", "jitter_ms"), num(&mixed, "io", "jitter_ms"));
    assert!(s < 0.1, "solo jitter {s} ms");
    assert!(x > 2.0, "mixed co-run jitter {x} ms (solo {s})");
}

#[test]
fn an_interrupt_waking_a_halted_vcpu_boosts_it_and_a_runnable_one_is_not_woken() {
    // Halted between datagrams (iperf alone in its VM, beside lookbusy on the same pCPU): every
    // datagram's vIRQ wakes it (`vcpu_unblock` -> `csched_vcpu_wake`), its BOOST preempts the hog
    // as soon as the 1 ms ratelimit allows (an UNDER vCPU would wait out the hog's 30 ms
    // slice), and the transit time hardly varies.
    let (t, m) = run_fig9("udp", 1, true, 3000);
    let datagrams = m["net_virqs"];
    assert!(datagrams > 200.0, "{datagrams} vIRQs");
    assert!(num(&t, "io", "halts") >= datagrams - 1.0, "it halts after each datagram");
    let wakeups = m["wakeups"];
    assert!((wakeups - datagrams).abs() <= 1.0, "{wakeups} wake-ups for {datagrams} vIRQs");
    let p99_us = num(&t, "io", "sched_latency_p99_us");
    assert!(p99_us <= 1100.0, "woken and BOOSTed, it waits at most the ratelimit: p99 {p99_us} us");
    assert!(num(&t, "io", "jitter_ms") < 0.1);
    // The mixed vCPU never halts: each vIRQ finds it runnable (or running), no wake-up reaches the
    // policy, so nothing can BOOST it, and a datagram arriving during the hog VM's slice waits
    // for it.
    let (t, m) = run_fig9("udp", 2, true, 3000);
    // (Datagrams that arrive while its event channel is still pending raise no new vIRQ.)
    assert!(m["net_frames"] > 200.0 && m["net_virqs"] > 0.0);
    assert_eq!(m["wakeups"], 0.0, "a runnable vCPU is not woken by its interrupt");
    assert_eq!(num(&t, "io", "halts"), 0.0);
    assert!(num(&t, "io", "jitter_ms") > 2.0);
}

#[test]
fn runs_are_deterministic_and_runs_without_a_device_keep_their_columns() {
    let text = fig9("tcp", 2, true, 300);
    let a = run_toml(&text, false);
    let b = run_toml(&text, true);
    assert_eq!(a.vms_csv, b.vms_csv);
    assert_eq!(a.metrics_csv, b.metrics_csv);
    assert!(a.vms_csv.lines().next().unwrap().ends_with(",throughput_mbps,jitter_ms"));
    // The lookbusy VM has no device: its I/O cells are empty.
    assert_eq!(vm_table(&a)["hog"]["throughput_mbps"], "");
    let plain =
        run_toml("[host]\npcpus = 1\n[[vm]]\nname = \"a\"\nvcpus = 1\nworkload = \"lookbusy\"\n[run]\nduration = \"50ms\"\n", false);
    assert!(!plain.vms_csv.contains("throughput_mbps"));
}

#[test]
fn an_irq_vcpu_outside_the_vm_is_a_clear_error() {
    let text = "[host]\npcpus = 2\n[[vm]]\nname = \"io\"\nvcpus = 2\nworkload = \"iperf\"\nparams = { irq_vcpu = 2 }\n";
    let Err(err) = vcpusim::api::load_scenario(text, "s.toml") else { panic!("irq_vcpu 2 of 2 vCPUs loaded") };
    let err = err.to_string();
    assert!(err.contains("s.toml") && err.contains("irq_vcpu = 2") && err.contains("vcpus = 2"), "{err}");
}

#[test]
fn a_long_link_makes_the_stream_window_limited() {
    // With 1 ms each way, the ACK clock, not the link, sets the pace: at most the receive
    // buffer's whole segments are unacknowledged per round trip (two latencies plus a frame's
    // serialization; the guest's few microseconds per frame are left out of the estimate).
    let text = "[host]\npcpus = 1\npolicy = \"credit\"\nparams = { xen = \"4.7\" }\n\
                [[vm]]\nname = \"io\"\nvcpus = 1\nworkload = \"iperf\"\nparams = { latency = \"1ms\" }\n\
                [run]\nduration = \"1s\"\nseed = 1\n";
    let t = vm_table(&run_toml(text, true));
    let nic = NicSpec::iperf(Protocol::Tcp);
    let mss = u64::from(nic.payload());
    let window = nic.rcvbuf / mss * mss;
    let rtt_ns = 2 * 1_000_000 + nic.serialize(nic.wire_bytes());
    let expected = window as f64 * 8.0 * 1e3 / rtt_ns as f64;
    let got = num(&t, "io", "throughput_mbps");
    assert!(expected < 0.5 * nic.link_goodput_mbps(), "the estimate {expected} must be window-bound");
    assert!((got - expected).abs() / expected < 0.05, "{got} Mbit/s, a window per round trip gives {expected:.1}");
}

#[test]
fn a_receive_path_slower_than_the_link_sets_the_throughput() {
    // 20 us of softirq per frame is more than the 12.3 us a frame takes on the wire: the vCPU,
    // busy in its interrupt handler, can take at most one frame per 20 us (plus the hard IRQ
    // when a poll finds the ring empty), so the stream slows to what it can acknowledge.
    let text = "[host]\npcpus = 1\npolicy = \"credit\"\nparams = { xen = \"4.7\" }\n\
                [[vm]]\nname = \"io\"\nvcpus = 1\nworkload = \"iperf\"\nparams = { softirq_per_packet = \"20us\" }\n\
                [run]\nduration = \"500ms\"\nseed = 1\n";
    let t = vm_table(&run_toml(text, true));
    let got = num(&t, "io", "throughput_mbps");
    let cpu_bound = 1448.0 * 8.0 * 1e3 / 20_000.0;
    assert!(got < 0.8 * NicSpec::iperf(Protocol::Tcp).link_goodput_mbps(), "{got} Mbit/s");
    assert!(got <= cpu_bound * 1.01, "{got} Mbit/s, the softirq allows at most {cpu_bound:.1}");
    assert!(got > 0.8 * cpu_bound, "{got} Mbit/s against the softirq's {cpu_bound:.1}");
}

#[test]
fn a_multi_vcpu_receiver_runs_under_every_policy_in_check_mode() {
    // The device's IRQ on vCPU 1, the server and two hogs spread over four vCPUs, beside a
    // CPU-bound VM: the softirq wakes the server on another vCPU (a reschedule IPI from interrupt
    // context) or preempts a hog on its own. Check mode asserts the engine's invariants after
    // every event; the stream must flow under each policy.
    for policy in ["credit", "cfs", "gang", "hybrid"] {
        for protocol in ["tcp", "udp"] {
            let text = format!(
                "[host]\npcpus = 4\npolicy = \"{policy}\"\n\
                 [[vm]]\nname = \"io\"\nvcpus = 4\nworkload = \"iperf\"\nthreads = 3\n\
                 params = {{ protocol = \"{protocol}\", irq_vcpu = 1 }}\n\
                 [[vm]]\nname = \"cpu\"\nvcpus = 4\nworkload = \"cpu-bound\"\n\
                 [run]\nduration = \"300ms\"\nseed = 3\n"
            );
            let out = run_toml(&text, true);
            let t = vm_table(&out);
            let mbps = num(&t, "io", "throughput_mbps");
            let floor = if protocol == "tcp" { 10.0 } else { 0.5 };
            assert!(mbps > floor, "{policy} {protocol}: {mbps} Mbit/s");
        }
    }
}

/// Seed 002 section 4.2 with the I/O path: a virtual IRQ relayed to a preempted vCPU moves it
/// to a micro-sliced core (`Sim::device_irq` -> `Sim::virq_relayed` -> `MicroSliced::virq_sent`).
/// Figure 9's mixed vCPU on a 2-pCPU host whose second pCPU is a micro core: with `irq`
/// detection its frames are handled within a micro slice, and without it (`detect = []`) the
/// same host accelerates nothing and the stream is as slow as on plain credit.
#[test]
fn a_vcpu_preempted_when_its_virq_arrives_is_accelerated_by_micro_sliced_cores() {
    let host = |detect: &str| {
        fig9("tcp", 2, true, 1000).replace("pcpus = 1\n", "pcpus = 2\n").replace(
            "params = { xen = \"4.7\" }\n",
            &format!("params = {{ xen = \"4.7\" }}\n[host.microsliced]\nmode = \"static\"\ncores = 1\ndetect = {detect}\n"),
        )
    };
    let on = vm_table(&run_toml(&host("[\"irq\"]"), true));
    let off = vm_table(&run_toml(&host("[]"), true));
    let irq = num(&on, "io", "accelerated_irq_count");
    assert!(irq > 100.0, "{irq} accelerations by vIRQ in 1 s of frames");
    assert_eq!(num(&on, "io", "accelerated_count"), irq, "only the irq signal is on");
    assert_eq!(num(&off, "io", "accelerated_count"), 0.0);
    let (fast, slow) = (num(&on, "io", "throughput_mbps"), num(&off, "io", "throughput_mbps"));
    assert!(fast > 1.5 * slow, "accelerated {fast} Mbit/s against {slow} without detection");
}
