//! Engine-level behaviour: proportional share, determinism, the consolidation pathologies of
//! seed 000 section 2, seed 004's coscheduling example, deadlock and runaway reports.

mod common;
use common::*;
use vcpusim::api::{load_scenario, run, RunOptions};
use vcpusim::SimError;

fn weighted_pair(policy: &str) -> String {
    format!(
        "[host]\npcpus = 4\npolicy = \"{policy}\"\n\
         [[vm]]\nname = \"light\"\nvcpus = 4\nweight = 256\nworkload = \"cpu-bound\"\n\
         [[vm]]\nname = \"heavy\"\nvcpus = 4\nweight = 512\nworkload = \"cpu-bound\"\n\
         [run]\nduration = \"10s\"\nseed = 1\n"
    )
}

#[test]
fn always_busy_vms_with_weights_1_to_2_get_cpu_within_3_percent_of_1_to_2() {
    for policy in ["cfs", "credit", "gang", "eevdf"] {
        let t = vm_table(&run_toml(&weighted_pair(policy), false));
        let ratio = num(&t, "heavy", "cpu_time_ms") / num(&t, "light", "cpu_time_ms");
        assert!((ratio - 2.0).abs() / 2.0 < 0.03, "{policy}: heavy/light CPU = {ratio:.3}, expected 2 +- 3%");
        // Work-conserving: the host stays busy.
        let busy = num(&t, "heavy", "cpu_time_ms") + num(&t, "light", "cpu_time_ms");
        assert!(busy > 0.97 * 40_000.0, "{policy}: only {busy} ms of 40000 used");
    }
}

#[test]
fn same_seed_gives_identical_bytes_and_different_seeds_differ() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios/quickstart.toml"))
        .unwrap()
        .replace("iterations = 2000", "iterations = 200");
    let sc = load_scenario(&text, "quickstart").unwrap();
    let a = run(&sc, &RunOptions { trace: true, ..Default::default() }).unwrap();
    let b = run(&sc, &RunOptions { trace: true, ..Default::default() }).unwrap();
    assert_eq!(a.vms_csv, b.vms_csv);
    assert_eq!(a.metrics_csv, b.metrics_csv);
    assert_eq!(a.summary_json, b.summary_json);
    assert_eq!(a.trace_json, b.trace_json);
    let c = run(&sc, &RunOptions { seed: Some(2), ..Default::default() }).unwrap();
    assert_ne!(a.vms_csv, c.vms_csv, "seed 2 gave the same results as seed 1");
}

#[test]
fn adding_a_vm_does_not_change_another_vms_random_draws() {
    // Common random numbers: per-thread streams are keyed by seed and VM name, not by creation
    // order, so a thread of VM "a" draws the same numbers whether or not VM "b" exists.
    use rand::Rng;
    use vcpusim::sim::state::Sim;
    let a = "[[vm]]\nname = \"a\"\nvcpus = 2\nworkload = \"mutex\"\n";
    let b = "[[vm]]\nname = \"b\"\nvcpus = 2\nworkload = \"mutex\"\n";
    let one = format!("[host]\npcpus = 8\n{a}");
    let two = format!("[host]\npcpus = 8\n{b}{a}");
    let draws = |text: &str, thread: usize| {
        let sc = load_scenario(text, "<test>").unwrap();
        let mut sim = Sim::build(&sc, 7, false, false).unwrap();
        (0..8).map(|_| sim.drive_guest(0).1[thread].rng.random::<u64>()).collect::<Vec<_>>()
    };
    // VM "a" is created first in one scenario and second (threads 2, 3) in the other.
    assert_eq!(draws(&one, 0), draws(&two, 2));
    assert_eq!(draws(&one, 1), draws(&two, 3));
    assert_ne!(draws(&one, 0), draws(&one, 1));
}

/// Share of CPU time an 8-vCPU VM spends spinning on kernel locks or waiting for TLB acks, and
/// its lock-holder preemptions, solo or beside an 8-vCPU `corunner` VM.
fn sync_share(policy: &str, workload: &str, corunner: Option<&str>) -> (f64, f64) {
    let other = corunner.map(|w| format!("[[vm]]\nname = \"corunner\"\nvcpus = 8\nworkload = \"{w}\"\n")).unwrap_or_default();
    // PLE off: seed 000's Xeon X5550 has no pause-loop exiting (section 4; PLE only in 4.3).
    let text = format!(
        "[host]\npcpus = 8\npolicy = \"{policy}\"\n[host.ple]\nenabled = false\n\
         [[vm]]\nname = \"app\"\nvcpus = 8\nworkload = \"{workload}\"\n{other}[run]\nduration = \"1s\"\nseed = 1\n"
    );
    let t = vm_table(&run_toml(&text, false));
    let share = (num(&t, "app", "spin_time_ms") + num(&t, "app", "tlb_wait_ms")) / num(&t, "app", "cpu_time_ms");
    (share, num(&t, "app", "lhp_count"))
}

/// An always-busy corunner.
const HOG: Option<&str> = Some("cpu-bound");
/// Seed 000 Figure 2's setup: every application corun with streamcluster (our `barrier`).
const STREAMCLUSTER: Option<&str> = Some("barrier");

#[test]
fn tlb_shootdown_waits_are_amplified_in_corun_under_cfs_and_credit_but_not_gang() {
    for policy in ["cfs", "credit"] {
        let (solo, solo_lhp) = sync_share(policy, "tlb", None);
        let (corun, _) = sync_share(policy, "tlb", HOG);
        assert!(corun > 10.0 * solo, "{policy}: TLB wait share solo {solo:.4} corun {corun:.4}");
        assert_eq!(solo_lhp, 0.0);
    }
    let (solo, _) = sync_share("gang", "tlb", None);
    let (corun, _) = sync_share("gang", "tlb", HOG);
    assert!(corun < 2.0 * solo, "gang: TLB wait share solo {solo:.4} corun {corun:.4}");
}

#[test]
fn futex_lock_spinning_is_amplified_under_credit_beside_an_always_busy_vm() {
    let (solo, solo_lhp) = sync_share("credit", "mutex", None);
    let (corun, corun_lhp) = sync_share("credit", "mutex", HOG);
    assert!(corun > 10.0 * solo, "credit: spin share solo {solo:.5} corun {corun:.5}");
    assert_eq!(solo_lhp, 0.0);
    assert!(corun_lhp > 0.0, "no lock-holder preemption in corun");
}

#[test]
fn futex_lock_spinning_is_amplified_under_cfs_beside_streamcluster_and_not_under_gang() {
    for workload in ["barrier", "mutex"] {
        let (solo, solo_lhp) = sync_share("cfs", workload, None);
        let (corun, corun_lhp) = sync_share("cfs", workload, STREAMCLUSTER);
        assert!(corun > 0.05 && corun > 10.0 * solo, "cfs/{workload}: spin share solo {solo:.5} corun {corun:.5}");
        assert_eq!(solo_lhp, 0.0, "cfs/{workload}: LHP in a solo run");
        assert!(corun_lhp > 0.0, "cfs/{workload}: no lock-holder preemption in corun");
        let (gang_solo, _) = sync_share("gang", workload, None);
        let (gang_corun, _) = sync_share("gang", workload, STREAMCLUSTER);
        assert!(gang_corun < 2.0 * gang_solo + 1e-3, "gang/{workload}: spin share solo {gang_solo:.5} corun {gang_corun:.5}");
    }
}

#[test]
fn lock_holders_are_never_preempted_in_solo_runs() {
    for policy in ["cfs", "credit", "gang", "eevdf"] {
        for workload in ["barrier", "mutex", "tlb"] {
            assert_eq!(sync_share(policy, workload, None).1, 0.0, "{policy}/{workload}: LHP in a solo run");
        }
    }
}

#[test]
fn seed_004_figure_1_coscheduling_completes_more_steps_than_uncoordinated() {
    // Seed 004 section 2.2: a 4-vCPU VM holding 3/10 of 4 pCPUs synchronizes after every slot
    // of work, busy-waiting for its siblings (Figure 1a's "slots wasted due to synchronization").
    // A slot is taken as one 30 ms gang slice; the other 7/10 go to a busy VM.
    let text = |policy: &str| {
        format!(
            "[host]\npcpus = 4\npolicy = \"{policy}\"\n\
             [[vm]]\nname = \"concurrent\"\nvcpus = 4\nweight = 300\nworkload = \"barrier\"\n\
             [vm.params]\nwork = \"30ms\"\njitter = 0.0\nwait = \"spin\"\n\
             [[vm]]\nname = \"busy\"\nvcpus = 4\nweight = 700\nworkload = \"cpu-bound\"\n\
             [run]\nduration = \"6s\"\nseed = 1\n"
        )
    };
    let steps = |policy: &str| num(&vm_table(&run_toml(&text(policy), false)), "concurrent", "progress");
    let (gang, credit, cfs) = (steps("gang"), steps("credit"), steps("cfs"));
    assert!(gang > credit && gang > cfs, "steps: gang {gang}, credit {credit}, cfs {cfs}");
}

#[test]
fn a_thread_locking_a_mutex_twice_is_reported_as_a_deadlock_naming_it() {
    let text = "[host]\npcpus = 2\n[[vm]]\nname = \"selfish\"\nvcpus = 2\nworkload = \"program\"\nthreads = 2\n\
                [vm.program]\nmutexes = 1\nthreads = [[{compute = \"1ms\"}, {lock = 0}, {lock = 0}]]\n[run]\nduration = \"1s\"\n";
    let sc = load_scenario(text, "<test>").unwrap();
    match run(&sc, &RunOptions::default()) {
        Err(SimError::Deadlock { waits, .. }) => {
            assert_eq!(waits.len(), 2, "{waits:?}");
            assert!(waits.iter().all(|w| w.contains("VM \"selfish\"") && w.contains("mutex 0")), "{waits:?}");
        }
        other => panic!("expected a deadlock, got {other:?}"),
    }
}

#[test]
fn a_program_looping_without_a_timed_op_is_stopped_as_runaway_naming_vm_and_thread() {
    // Uncontended lock and unlock stay in user space: no op of the loop takes simulated time (a
    // forever loop like this is refused at load; a counted one is caught while it runs).
    let text = "[host]\npcpus = 1\n[[vm]]\nname = \"spinner\"\nvcpus = 1\nworkload = \"program\"\n\
                [vm.program]\nmutexes = 1\nthreads = [[{compute = \"1ms\"}, {loop = 2000000, body = [{lock = 0}, {unlock = 0}]}]]\n\
                [run]\nduration = \"1s\"\n";
    let sc = load_scenario(text, "<test>").unwrap();
    match run(&sc, &RunOptions::default()) {
        Err(SimError::Limit { message }) => {
            assert!(message.contains("VM \"spinner\" thread 0") && message.contains("without simulated time passing"), "{message}")
        }
        other => panic!("expected the runaway guard, got {other:?}"),
    }
}

#[test]
fn event_budget_stops_the_run_with_a_clear_message() {
    let text = "[host]\npcpus = 2\n[[vm]]\nname = \"a\"\nvcpus = 2\nworkload = \"mutex\"\n[run]\nduration = \"10s\"\nmax_events = 1000\n";
    let sc = load_scenario(text, "<test>").unwrap();
    match run(&sc, &RunOptions::default()) {
        Err(SimError::Limit { message }) => assert!(message.contains("max_events = 1000"), "{message}"),
        other => panic!("expected the event limit, got {other:?}"),
    }
}

#[test]
fn trace_has_a_track_per_pcpu_and_per_vcpu() {
    let text = "[host]\npcpus = 2\n[[vm]]\nname = \"a\"\nvcpus = 3\nworkload = \"tlb\"\n[run]\nduration = \"50ms\"\n";
    let sc = load_scenario(text, "<test>").unwrap();
    let out = run(&sc, &RunOptions { trace: true, ..Default::default() }).unwrap();
    let v: serde_json::Value = serde_json::from_str(out.trace_json.as_deref().unwrap()).unwrap();
    let evs = v["traceEvents"].as_array().unwrap();
    let names: Vec<&str> = evs.iter().filter(|e| e["name"] == "thread_name").map(|e| e["args"]["name"].as_str().unwrap()).collect();
    assert_eq!(names.iter().filter(|n| n.starts_with("pCPU")).count(), 2);
    assert_eq!(names.iter().filter(|n| n.starts_with("vCPU")).count(), 3);
    assert!(evs.iter().any(|e| e["ph"] == "X" && e["pid"] == 0), "no pCPU run spans");
    assert!(evs.iter().any(|e| e["name"] == "tlb"), "no TLB IPI instants");
}

#[test]
fn start_skew_is_validated_and_zero_starts_every_pcpu_at_once() {
    let base = "[host]\npcpus = 2\nSKEW\n[[vm]]\nname = \"a\"\nvcpus = 2\nworkload = \"cpu-bound\"\n[run]\nduration = \"100ms\"\n";
    let err = load_scenario(&base.replace("SKEW", "start_skew = \"-1ms\""), "f.toml").unwrap_err().to_string();
    assert!(err.starts_with("f.toml: host.start_skew:"), "{err}");
    let t = vm_table(&run_toml(&base.replace("SKEW", "start_skew = \"0ms\""), true));
    // Both pCPUs busy from t = 0: 200 ms of CPU minus context-switch costs.
    assert!(num(&t, "a", "cpu_time_ms") > 199.9, "{}", t["a"]["cpu_time_ms"]);
    let skewed = vm_table(&run_toml(&base.replace("SKEW", "start_skew = \"50ms\""), true));
    assert!(num(&skewed, "a", "cpu_time_ms") < 199.0, "pCPUs did not start late");
}
