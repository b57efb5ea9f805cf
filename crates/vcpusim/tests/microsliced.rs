//! Seed 002's micro-sliced cores (`hypervisor/critical_detect.rs`, `sim/mechanisms/microsliced/`): a TLB-heavy
//! VM (PARSEC dedup) beside an always-busy VM on 8 pCPUs under Xen 4.7's credit, in check mode,
//! so the micro pool's invariants (no vCPU waits behind another on a micro pCPU; every
//! accelerated vCPU back within one micro slice plus a context switch) hold after every event.

use vcpusim::api::{load_scenario, run as run_api};
use vcpusim::hypervisor::critical_events::AccelReason;
use vcpusim::hypervisor::host_view::PoolFacts;
use vcpusim::ids::{PoolId, VcpuId};
use vcpusim::output::RunOptions;
use vcpusim::scenario::microsliced_sections::{MicroConfig, Mode};
use vcpusim::sim::mechanisms::microsliced::Loan;
use vcpusim::sim::state::Sim;
use vcpusim::time::{MS, US};
use vcpusim::SimError;

const SCENARIO: &str = "[host]\npcpus = 8\npolicy = \"credit\"\nparams = { xen = \"4.7\" }\n\
     [[vm]]\nname = \"dedup\"\nvcpus = 8\nworkload = \"parsec.dedup\"\nthreads = 8\n\
     [[vm]]\nname = \"hog\"\nvcpus = 8\nworkload = \"cpu-bound\"\n\
     [run]\nduration = \"300ms\"\n";

/// Run the scenario with `micro` for 300 ms in check mode; return the finished sim.
fn run(micro: Option<MicroConfig>) -> Sim {
    let mut sc = load_scenario(SCENARIO, "<microsliced test>").expect("the scenario loads");
    sc.host.microsliced = micro;
    let mut sim = Sim::build(&sc, sc.run.seed, false, true).expect("builds");
    sim.start();
    sim.run_until(300 * MS, None).expect("runs in check mode without an invariant failing");
    sim.finish();
    sim
}

fn accelerated(sim: &Sim, vm: usize) -> u64 {
    sim.vms()[vm].stats.accelerated.iter().sum()
}

#[test]
fn static_micro_cores_accelerate_preempted_tlb_recipients_and_hold_the_invariants() {
    let sim = run(Some(MicroConfig { mode: Mode::Static, cores: 2, ..MicroConfig::default() }));
    let m = sim.mechanisms().microsliced.as_ref().expect("micro pool built");
    assert_eq!(sim.placement().view(m.pool).pcpus.len(), 2, "two micro pCPUs");
    let tlb = sim.vms()[0].stats.accelerated[AccelReason::TlbSync.idx()];
    assert!(tlb > 20, "dedup's preempted siblings were accelerated at its TLB waits ({tlb})");
    assert_eq!(accelerated(&sim, 1), 0, "the hog never yields in a critical function");
}

#[test]
fn with_the_symbol_channel_off_nothing_is_detected_or_accelerated() {
    let sim = run(Some(MicroConfig { mode: Mode::Static, cores: 2, symbols: false, ..MicroConfig::default() }));
    let m = sim.mechanisms().microsliced.as_ref().expect("micro pool built");
    assert_eq!(accelerated(&sim, 0) + accelerated(&sim, 1), 0);
    assert_eq!((m.counts.ipis, m.counts.ples, m.counts.irqs, m.refused), (0, 0, 0, 0), "nothing detected");
    // The same run with the channel on does detect (the test above): it is the channel that matters.
}

#[test]
fn dynamic_mode_resizes_the_pool_by_algorithm_1() {
    let sim = run(Some(MicroConfig { mode: Mode::Dynamic, cores: 3, epoch: 100 * MS, ..MicroConfig::default() }));
    let m = sim.mechanisms().microsliced.as_ref().expect("micro pool built");
    let sizes: Vec<u32> = m.sizes.iter().map(|s| s.1).collect();
    assert_eq!(sizes[0], 0, "starts with no micro core");
    assert!(sizes.contains(&1), "profiling took a core: {sizes:?}");
    assert!(accelerated(&sim, 0) > 0, "vCPUs were accelerated on the dynamic pool");
}

#[test]
fn without_microsliced_no_micro_pool_exists() {
    let sim = run(None);
    assert!(sim.mechanisms().microsliced.is_none());
    assert_eq!(sim.placement().pools().len(), 1);
    assert_eq!(accelerated(&sim, 0), 0);
}

/// `SCENARIO` with a `[host.microsliced]` table of these lines.
fn with_table(lines: &str) -> String {
    SCENARIO.replace("[[vm]]\nname = \"dedup\"", &format!("[host.microsliced]\n{lines}\n[[vm]]\nname = \"dedup\""))
}

fn load_error(text: &str) -> String {
    match load_scenario(text, "<microsliced test>") {
        Err(SimError::Scenario { file, key, message }) => format!("{file}: {key}: {message}"),
        Err(other) => panic!("expected a scenario error, got {other:?}"),
        Ok(_) => panic!("expected {text:?} to be refused"),
    }
}

#[test]
fn the_table_loads_with_its_defaults_and_every_key() {
    let sc = load_scenario(&with_table(""), "<t>").expect("loads");
    assert_eq!(sc.host.microsliced, Some(MicroConfig::default()));
    let sc = load_scenario(
        &with_table("mode = \"dynamic\"\ncores = 3\nslice = \"200us\"\nprofile_interval = \"5ms\"\nepoch = \"500ms\"\ndetect = [\"ipi\"]\nsymbols = false"),
        "<t>",
    )
    .expect("loads");
    let m = sc.host.microsliced.expect("present");
    assert_eq!((m.mode, m.cores, m.slice, m.profile_interval, m.epoch, m.symbols), (Mode::Dynamic, 3, 200 * US, 5 * MS, 500 * MS, false));
    assert!(m.detect.ipi && !m.detect.ple && !m.detect.irq);
}

#[test]
fn bad_tables_are_refused_naming_file_key_and_value() {
    let e = load_error(&with_table("detect = [\"ple\", \"tlb\"]"));
    assert!(e.contains("<microsliced test>: host.microsliced.detect:") && e.contains("\"tlb\"") && e.contains("ple, ipi, irq"), "{e}");
    let e = load_error(&with_table("mode = \"adaptive\""));
    assert!(e.contains("host.microsliced.mode") && e.contains("adaptive"), "{e}");
    let e = load_error(&with_table("cores = 0"));
    assert!(e.contains("host.microsliced.cores"), "{e}");
    let e = load_error(&with_table("slices = \"1ms\""));
    assert!(e.contains("host.microsliced.slices") && e.contains("slice"), "{e}");
    let e = load_error(&with_table("").replace("policy = \"credit\"\nparams = { xen = \"4.7\" }", "policy = \"cfs\""));
    assert!(e.contains("host.microsliced") && e.contains("credit") && e.contains("cfs"), "{e}");
    let e = load_error(&with_table("").replace("[[vm]]\nname = \"dedup\"", "[[host.pool]]\nname = \"p1\"\npcpus = \"7\"\npolicy = \"credit\"\nparams = { xen = \"4.7\" }\n[[host.pool_change]]\nat = \"10ms\"\npcpu = 6\nto = \"p1\"\n[[vm]]\nname = \"dedup\""));
    assert!(e.contains("host.pool_change") && e.contains("[host.microsliced]"), "{e}");
    // Too many cores for the default pool: refused by the loader (so `vcpusim validate` says
    // so), counting only the default pool's pCPUs ...
    let e = load_error(&with_table("cores = 8"));
    assert!(e.contains("<microsliced test>: host.microsliced.cores: cores = 8 leaves pool \"pool0\" (8 pCPUs)"), "{e}");
    let pooled = |cores: u32| {
        with_table(&format!("cores = {cores}")).replace(
            "[[vm]]\nname = \"dedup\"",
            "[[host.pool]]\nname = \"p1\"\npcpus = \"6-7\"\npolicy = \"credit\"\n[[vm]]\nname = \"dedup\"",
        )
    };
    let e = load_error(&pooled(6));
    assert!(e.contains("cores = 6 leaves pool \"pool0\" (6 pCPUs)"), "{e}");
    assert!(load_scenario(&pooled(5), "<t>").is_ok(), "five of the default pool's six pCPUs may go");
    // ... and, for a scenario built in Rust past the loader, when the run is built.
    let mut sc = load_scenario(&with_table("cores = 2"), "<microsliced test>").expect("loads");
    sc.host.microsliced.as_mut().expect("present").cores = 8;
    match run_api(&sc, &RunOptions::default()) {
        Err(SimError::Scenario { key, message, .. }) => {
            assert!(key == "host.microsliced.cores" && message.contains("cores = 8"), "{key}: {message}")
        }
        other => panic!("expected a scenario error, got {other:?}"),
    }
}

#[test]
fn vms_csv_gains_accelerated_columns_only_with_microsliced() {
    let options = RunOptions { check: true, ..RunOptions::default() };
    let on = run_api(&load_scenario(&with_table("cores = 2"), "<t>").expect("loads"), &options).expect("runs");
    let off = run_api(&load_scenario(SCENARIO, "<t>").expect("loads"), &options).expect("runs");
    let header = |csv: &str| csv.lines().next().unwrap().to_string();
    assert!(header(&on.vms_csv)
        .ends_with("accelerated_count,accelerated_tlb_count,accelerated_lock_count,accelerated_irq_count,accelerated_ipi_count"));
    assert!(!header(&off.vms_csv).contains("accelerated"));
    assert!(!off.summary_json.contains("microsliced"));
    assert!(on.summary_json.contains("\"microsliced\""));
    // dedup's row: the total is the sum of the reasons, and it is positive.
    let row: Vec<&str> = on.vms_csv.lines().nth(1).unwrap().split(',').collect();
    let n = row.len();
    let nums: Vec<u64> = row[n - 5..].iter().map(|x| x.parse().unwrap()).collect();
    assert!(nums[0] > 0 && nums[0] == nums[1..].iter().sum::<u64>(), "{nums:?}");
}

/// Run `text` with `micro` for 300 ms in check mode.
fn run_text(text: &str, micro: MicroConfig) -> Sim {
    let mut sc = load_scenario(text, "<microsliced test>").expect("the scenario loads");
    sc.host.microsliced = Some(micro);
    let mut sim = Sim::build(&sc, sc.run.seed, false, true).expect("builds");
    sim.start();
    sim.run_until(300 * MS, None).expect("runs in check mode without an invariant failing");
    sim.finish();
    sim
}

/// The pool facts credit's balancer reads (`host_view::PoolFacts`) are kept by the engine, not
/// read from every vCPU: the node count moves with every loan and return, the soft-mask fact
/// is recomputed where Algorithm 1 moves a pCPU. Check mode compares both with every vCPU's
/// masks and pool after each event, so a loan that skipped the count, or a resize that skipped
/// the recomputation, fails the run.
#[test]
fn the_pools_kept_facts_follow_every_loan_and_resize() {
    // Xen 4.4, dedup's node affinity set to node 0 (as xl's placement would): its vCPUs count.
    let numa = SCENARIO
        .replace("pcpus = 8\n", "pcpus = 8\nnuma_nodes = 2\n")
        .replace("xen = \"4.7\"", "xen = \"4.4\"")
        .replace("threads = 8\n", "threads = 8\nnuma_placement = { nodes = [0] }\n");
    let sim = run_text(&numa, MicroConfig { mode: Mode::Dynamic, cores: 3, epoch: 100 * MS, ..MicroConfig::default() });
    let m = sim.mechanisms().microsliced.as_ref().expect("micro pool built");
    assert!(accelerated(&sim, 0) > 20, "vCPUs were lent ({})", accelerated(&sim, 0));
    assert!(m.sizes.len() > 2, "Algorithm 1 moved pCPUs: {:?}", m.sizes);
    let lent = m.loans.iter().flatten().count() as u32;
    assert!(!sim.vminfo()[0].node_affinity.auto, "dedup's node affinity is explicit");
    let explicit: usize = sim.vminfo().iter().filter(|vm| !vm.node_affinity.auto).map(|vm| vm.vcpus.len()).sum();
    assert_eq!((sim.placement().node_explicit(m.parent) + sim.placement().node_explicit(m.pool)) as usize, explicit, "each counted once");
    assert_eq!(sim.placement().node_explicit(m.pool), lent, "the micro pool counts its loans");
    // Xen 4.7 with a soft mask on the hog: the parent pool keeps pCPUs outside it.
    let soft = SCENARIO.replace("workload = \"cpu-bound\"", "workload = \"cpu-bound\"\ncpus_soft = \"0-3\"");
    let sim = run_text(&soft, MicroConfig { mode: Mode::Dynamic, cores: 3, epoch: 100 * MS, ..MicroConfig::default() });
    assert!(sim.mechanisms().microsliced.as_ref().unwrap().sizes.len() > 2 && accelerated(&sim, 0) > 0);
    assert!(sim.placement().view(PoolId(0)).facts.soft_short, "a soft mask of 0-3 does not cover the parent pool");
    // A stale fact is caught.
    let mut sim = sim;
    let facts = PoolFacts { soft_short: false, ..sim.placement().view(PoolId(0)).facts };
    sim.placement_mut().corrupt_facts(PoolId(0), facts);
    let e = sim.check_invariants().expect_err("a stale fact").to_string();
    assert!(e.contains("kept facts"), "{e}");
}

#[test]
fn the_check_mode_invariant_catches_a_waiting_or_overstaying_vcpu() {
    let mut sim = run(Some(MicroConfig { mode: Mode::Static, cores: 2, ..MicroConfig::default() }));
    assert_eq!(sim.check_invariants(), Ok(()));
    let micro_pcpu = sim.placement().view(sim.mechanisms().microsliced.as_ref().unwrap().pool).pcpus[0];
    // Fake a loan of a vCPU that is not running there: it would wait behind nothing it may run.
    let v = (0..sim.vinfo().len()).find(|&i| sim.vinfo()[i].pcpu.is_none()).expect("a vCPU off its pCPU");
    let pool = sim.mechanisms().microsliced.as_ref().unwrap().pool;
    sim.placement_mut().corrupt_vcpu_pool(VcpuId(v as u32), pool);
    let now = sim.now();
    sim.mechanisms_mut().microsliced.as_mut().unwrap().loans[v] =
        Some(Loan { pcpu: micro_pcpu, run_time_at_lend: 0, since: now, home: micro_pcpu });
    let e = sim.check_invariants().expect_err("a lent vCPU that does not run is waiting").to_string();
    assert!(e.contains("waits in micro pCPU"), "{e}");
    // A running lent vCPU whose loan is older than one slice plus a context switch.
    sim.mechanisms_mut().microsliced.as_mut().unwrap().loans[v] = None;
    let parent = sim.mechanisms().microsliced.as_ref().unwrap().parent;
    sim.placement_mut().corrupt_vcpu_pool(VcpuId(v as u32), parent);
    let u = (0..sim.vinfo().len()).find(|&i| sim.vinfo()[i].pcpu.is_some()).expect("a running vCPU");
    let q = sim.vinfo()[u].pcpu.unwrap();
    sim.placement_mut().corrupt_vcpu_pool(VcpuId(u as u32), pool);
    sim.mechanisms_mut().microsliced.as_mut().unwrap().loans[u] =
        Some(Loan { pcpu: q, run_time_at_lend: 0, since: now - 104 * US, home: q });
    let e = sim.check_invariants().expect_err("overstays").to_string();
    assert!(e.contains("still on micro pCPU") && e.contains("100000 ns slice plus a 3000 ns context switch"), "{e}");
}

#[test]
fn the_counts_feed_algorithm_1_only_in_dynamic_mode() {
    let sim = run(Some(MicroConfig { mode: Mode::Static, cores: 1, ..MicroConfig::default() }));
    let m = sim.mechanisms().microsliced.as_ref().unwrap();
    assert!(m.algorithm.is_none());
    // Static mode still counts (nothing consumes them): dedup's TLB waits are IPI yields.
    assert!(m.counts.ipis > 0, "{:?}", m.counts);
    assert_eq!(m.counts.irqs, 0);
}

#[test]
fn the_trace_shows_each_acceleration_with_its_reason_and_function_and_the_pool_size() {
    let sc = load_scenario(&with_table("mode = \"dynamic\"\ncores = 2\nepoch = \"50ms\""), "<t>").expect("loads");
    let out = run_api(&sc, &RunOptions { trace: true, check: true, ..RunOptions::default() }).expect("runs");
    let trace = out.trace_json.expect("traced");
    assert!(trace.contains("accelerate vCPU") && trace.contains("(tlb, in "), "an acceleration instant names its reason and function");
    assert!(trace.contains("micro-sliced cores"), "the pool size counter");
    assert!(trace.contains("Algorithm 1: "), "each Algorithm 1 decision");
    assert!(trace.contains("pool change: pool0 -> micro"), "pCPUs joining the micro pool");
}
