//! The Linux 4.4 guest on Xen (seed 002): PV qspinlocks (`guest/pv_spinlock.rs`:
//! spin, SCHEDOP_poll, the unlocker's kick; no lost wake-ups under a random stress run in check
//! mode), and the SCHEDOP_yield of `xen_smp_send_call_function_ipi` (`guest/tlb.rs`) taken by
//! the host as a yield under every policy (sim/line.rs).

mod common;

use vcpusim::api::{load_scenario, run, RunOptions};
use vcpusim::sim::state::Sim;
use vcpusim::time::{MS, US};

fn sim(text: &str, check: bool, until_ms: u64) -> Sim {
    let sc = load_scenario(text, "<test>").unwrap_or_else(|e| panic!("scenario does not load: {e}\n{text}"));
    let mut sim = Sim::build(&sc, 1, false, check).unwrap();
    sim.start();
    sim.run_until(until_ms * MS, None).unwrap_or_else(|e| panic!("run failed: {e}\n{text}"));
    sim
}

/// Two threads on two vCPUs of a VM alone on two pCPUs: thread 0 holds kernel lock 0 for 2 ms
/// at a time, thread 1 wants it briefly between computing.
fn holder_and_waiter(spinlock: &str) -> String {
    common::holder_and_waiter("\"credit\"\nparams = { xen = \"4.7\" }", &format!("spinlock = \"{spinlock}\"\npv_spin = \"50us\""))
}

#[test]
fn a_pv_waiter_blocks_after_its_spin_and_the_unlocker_kicks_it() {
    let pv = sim(&holder_and_waiter("pv-qspinlock"), true, 40);
    let (stats, guest) = (&pv.vms()[0].stats, &pv.guests()[0]);
    // Each of thread 1's waits (~2 ms) outlasts its 50 us spin: it polls, blocks, and the
    // holder's unlock kicks it (the head hashed the lock).
    assert!(guest.stats.pv_polls >= 5, "{} polls", guest.stats.pv_polls);
    assert!(stats.poll_blocks >= 5, "{} poll blocks", stats.poll_blocks);
    assert_eq!(guest.stats.pv_kicks, stats.kicks, "every kick the guest queued was carried out");
    // (The last block may still wait for its kick when the run ends.)
    assert!(stats.kicks + 1 >= stats.poll_blocks, "{} kicks for {} blocks", stats.kicks, stats.poll_blocks);
    // Spinning stops at the budget: a wait spins 50 us, then again 50 us after each return
    // from a poll that did not hand it the lock, where a ticket lock spins through the whole
    // 2 ms hold.
    let (waits, polls) = (guest.stats.spin_wait.count, guest.stats.pv_polls);
    assert!(stats.spin_ns <= (waits + polls + 1) * 50 * US, "{} ns spun over {waits} waits and {polls} polls", stats.spin_ns);
    let ticket = sim(&holder_and_waiter("ticket"), true, 40);
    assert!(ticket.vms()[0].stats.spin_ns > 10 * stats.spin_ns, "ticket {} ns vs pv {} ns", ticket.vms()[0].stats.spin_ns, stats.spin_ns);
    assert_eq!(ticket.vms()[0].stats.poll_blocks + ticket.vms()[0].stats.kicks, 0);
    // Both threads keep making progress (no lost wake-up stalls the waiter).
    assert!(guest.stats.progress > 20, "{}", guest.stats.progress);
}

/// Deterministic pseudo-random numbers for building scenarios (SplitMix64).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A random overcommitted host: two VMs of random vCPU counts on fewer pCPUs, threads taking
/// a few kernel locks for random lengths between random computations (and, sometimes, a
/// munmap's TLB shootdown), a random PV spin budget and a random policy.
fn random_scenario(rng: &mut Rng) -> String {
    let pcpus = 2 + rng.below(3);
    let policy = ["credit\"\nparams = { xen = \"4.7\" }", "cfs\"", "credit\"\nparams = { xen = \"4.4\" }"][rng.below(3) as usize];
    let mut text =
        format!("[host]\npcpus = {pcpus}\npolicy = \"{policy}\n[guest]\nkernel = \"linux-4.4\"\npv_spin = \"{}us\"\n", 1 + rng.below(60));
    for vm in 0..2 {
        let vcpus = 2 + rng.below(3);
        let threads = vcpus + rng.below(2);
        let locks = 1 + rng.below(3);
        let names: Vec<String> = (0..locks).map(|k| format!("\"k{k}\"")).collect();
        let mut bodies = Vec::new();
        for _ in 0..threads {
            let mut ops = Vec::new();
            for _ in 0..(1 + rng.below(3)) {
                ops.push(format!("{{compute = \"{}us\"}}", 1 + rng.below(200)));
                ops.push(format!("{{syscall = \"{}us\", lock = {}}}", 1 + rng.below(80), rng.below(locks)));
            }
            if rng.below(4) == 0 {
                ops.push("{mmap = 1}".into());
                ops.push(format!("{{munmap = {}}}", 1 + rng.below(4)));
            }
            ops.push("{progress = true}".into());
            bodies.push(format!("[{{loop = \"forever\", body = [{}]}}]", ops.join(", ")));
        }
        text.push_str(&format!(
            "[[vm]]\nname = \"v{vm}\"\nvcpus = {vcpus}\nworkload = \"program\"\n\
             [vm.program]\nkernel_locks = [{}]\nthreads = [{}]\n",
            names.join(", "),
            bodies.join(", ")
        ));
    }
    text.push_str("[run]\nduration = \"30ms\"\n");
    text
}

#[test]
fn no_pv_spinlock_wakeup_is_lost_in_random_overcommitted_runs() {
    // Check mode asserts after every event that no vCPU sleeps in SCHEDOP_poll while its thread
    // holds the lock it waits for without a kick on its way (guest/pv_spinlock.rs), besides the
    // engine's invariants; every VM must keep progressing to the end.
    let mut rng = Rng(13);
    let (mut blocks, mut kicks) = (0, 0);
    for case in 0..24 {
        let text = random_scenario(&mut rng);
        let sc = load_scenario(&text, "<stress>").unwrap_or_else(|e| panic!("case {case}: {e}\n{text}"));
        let mut sim = Sim::build(&sc, case, false, true).unwrap();
        sim.start();
        sim.run_until(30 * MS, None).unwrap_or_else(|e| panic!("case {case}: {e}\n{text}"));
        for (vm, g) in sim.guests().iter().enumerate() {
            // Every thread still runs its loop: progress keeps coming in the second half.
            assert!(g.stats.progress > 0, "case {case}: VM {vm} made no progress\n{text}");
            blocks += sim.vms()[vm].stats.poll_blocks;
            kicks += sim.vms()[vm].stats.kicks;
        }
        // A waiter stuck for good would leave its VM's progress flat from then on; a VM may wait
        // a whole 30 ms credit slice for a lock holder's vCPU to run, so the window is longer.
        let before: Vec<u64> = sim.guests().iter().map(|g| g.stats.progress).collect();
        sim.run_until(130 * MS, None).unwrap_or_else(|e| panic!("case {case}: {e}\n{text}"));
        for (vm, g) in sim.guests().iter().enumerate() {
            assert!(g.stats.progress > before[vm], "case {case}: VM {vm} stalled after 30 ms\n{text}");
        }
    }
    assert!(blocks > 100 && kicks > 100, "the stress run must exercise the slow path: {blocks} blocks, {kicks} kicks");
}

/// A VM whose threads munmap (TLB shootdowns) beside a CPU-bound VM on fewer pCPUs, so that
/// shootdown targets are often preempted.
fn shootdowns_overcommitted(extra_guest: &str, policy: &str) -> String {
    common::shootdowns_overcommitted(2, policy, extra_guest)
}

#[test]
fn a_call_function_ipi_to_a_stolen_vcpu_yields_under_every_policy() {
    for policy in ["\"credit\"\nparams = { xen = \"4.7\" }", "\"cfs\"", "\"credit\"\nparams = { xen = \"3.3\" }"] {
        let on = sim(&shootdowns_overcommitted("call_function_yield = true", policy), true, 300);
        let s = &on.vms()[0].stats;
        eprintln!("{policy}: {} shootdowns, {} IPI yields, {} yields", on.guests()[0].stats.tlb_shootdowns, s.yields_ipi, s.yields);
        // Few shootdowns complete: each waits for preempted targets (credit's 30 ms slices).
        assert!(on.guests()[0].stats.tlb_shootdowns > 2, "{policy}: {} shootdowns", on.guests()[0].stats.tlb_shootdowns);
        assert!(s.yields_ipi >= 1, "{policy}: {} IPI yields", s.yields_ipi);
        assert!(s.yields_ipi <= on.guests()[0].stats.tlb_shootdowns, "at most one yield per send");
        assert_eq!(s.yields, s.yields_ipi + s.ple_exits);
        let off = sim(&shootdowns_overcommitted("call_function_yield = false", policy), true, 300);
        assert_eq!(off.vms()[0].stats.yields_ipi, 0, "{policy}: the 3.2 guest never yields after an IPI");
    }
}

#[test]
fn the_linux_4_4_preset_runs_and_reports_yields_by_source() {
    let text = shootdowns_overcommitted("kernel = \"linux-4.4\"", "\"credit\"\nparams = { xen = \"4.7\" }");
    let out = run(&load_scenario(&text, "<t>").unwrap(), &RunOptions { check: true, ..Default::default() }).unwrap();
    let header: Vec<&str> = out.vms_csv.lines().next().unwrap().split(',').collect();
    let row: Vec<&str> = out.vms_csv.lines().nth(1).unwrap().split(',').collect();
    let col = |name: &str| -> u64 {
        let i = header.iter().position(|h| *h == name).unwrap_or_else(|| panic!("no column {name}"));
        row[i].parse().unwrap()
    };
    assert!(col("yields_ipi") > 0);
    assert_eq!(col("yields_ple"), col("ple_exit_count"));
    assert_eq!(col("yields"), col("yields_ple") + col("yields_ipi"));
    assert!(col("yields_halt") >= col("halts"));
}

#[test]
fn the_trace_marks_poll_blocks_and_kicks() {
    let sc = load_scenario(&holder_and_waiter("pv-qspinlock"), "<t>").unwrap();
    let out = run(&sc, &RunOptions { trace: true, ..Default::default() }).unwrap();
    let trace = out.trace_json.expect("a trace");
    assert!(trace.contains("\"pv poll block\""), "no poll block instant");
    assert!(trace.contains("\"pv kick\"") && trace.contains("\"to\":\"a/v1\""), "no kick instant to the waiter's vCPU");
}

#[test]
fn the_linux_4_4_guest_holds_the_invariants_under_every_policy() {
    // Every registered policy, with workloads that use futex bucket locks (PV qspinlocks here),
    // TLB shootdowns (the call-function yield) and barriers, in check mode.
    for policy in ["cfs", "credit", "gang", "hybrid"] {
        for workload in ["mutex", "tlb", "barrier"] {
            let text = common::workload_beside_hog(policy, workload, "kernel = \"linux-4.4\"\npv_spin = \"20us\"");
            let sc = load_scenario(&text, "<t>").unwrap_or_else(|e| panic!("{policy}/{workload}: {e}"));
            let out = run(&sc, &RunOptions { check: true, ..Default::default() }).unwrap_or_else(|e| panic!("{policy}/{workload}: {e}"));
            let row = out.vms_csv.lines().nth(1).unwrap();
            let progress_col = out.vms_csv.lines().next().unwrap().split(',').position(|h| h == "progress").unwrap();
            let progress: u64 = row.split(',').nth(progress_col).unwrap().parse().unwrap();
            assert!(progress > 0, "{policy}/{workload}: no progress\n{}", out.vms_csv);
        }
    }
}

#[test]
fn metrics_give_spin_waits_by_lock_class_and_the_shortest_shootdown() {
    let sc = load_scenario(&holder_and_waiter("pv-qspinlock"), "<t>").unwrap();
    let out = run(&sc, &RunOptions::default()).unwrap();
    let value = |metric: &str| -> f64 {
        let line = out.metrics_csv.lines().find(|l| l.starts_with(&format!("a,{metric},"))).unwrap_or_else(|| panic!("no {metric}"));
        line.rsplit(',').next().unwrap().parse().unwrap()
    };
    // Only lock class "k" is contended; its waits are those of the VM.
    assert_eq!(value("spin_wait_count[k]"), value("spin_wait_count"));
    assert_eq!(value("spin_wait_max_us[k]"), value("spin_wait_max_us"));
    // Thread 1 waits out most of thread 0's 2 ms holds.
    assert!(value("spin_wait_mean_us[k]") > 500.0, "{}", value("spin_wait_mean_us[k]"));
    assert_eq!(value("tlb_shootdown_latency_min_us"), 0.0, "no shootdowns");
    let tlb = shootdowns_overcommitted("", "\"cfs\"");
    let out = run(&load_scenario(&tlb, "<t>").unwrap(), &RunOptions::default()).unwrap();
    let get = |metric: &str| -> f64 {
        let line = out.metrics_csv.lines().find(|l| l.starts_with(&format!("tlb,{metric},"))).unwrap();
        line.rsplit(',').next().unwrap().parse().unwrap()
    };
    let (min, mean, max) = (get("tlb_shootdown_latency_min_us"), get("tlb_shootdown_latency_mean_us"), get("tlb_shootdown_latency_max_us"));
    assert!(min > 0.0 && min <= mean && mean <= max, "{min} {mean} {max}");
}
