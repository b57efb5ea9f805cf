//! `policy = "eevdf"` (Linux 6.6 EEVDF, hypervisor/policies/eevdf) at engine level, in check
//! mode (the policy's run-queue sums and counts are verified after every event): weighted
//! fairness between always-busy VMs, the quickstart consolidation mix with every vCPU of the
//! overcommitted VM progressing, and the example scenario.

mod common;
use common::{num, run_toml, vm_table};

/// Two always-busy 4-vCPU VMs of weights 1:2 on 4 pCPUs: cgroup shares 1024 and 2048, split
/// per pCPU by `calc_group_shares`; with one vCPU of each on every pCPU the group entities weigh
/// 256 and 512, so CPU time goes 1:2, and the host stays busy.
#[test]
fn always_busy_vms_with_weights_1_to_2_get_cpu_1_to_2() {
    let text = "[host]\npcpus = 4\npolicy = \"eevdf\"\n\
                [[vm]]\nname = \"light\"\nvcpus = 4\nweight = 256\nworkload = \"cpu-bound\"\n\
                [[vm]]\nname = \"heavy\"\nvcpus = 4\nweight = 512\nworkload = \"cpu-bound\"\n\
                [run]\nduration = \"3s\"\nseed = 1\n";
    let t = vm_table(&run_toml(text, true));
    let (light, heavy) = (num(&t, "light", "cpu_time_ms"), num(&t, "heavy", "cpu_time_ms"));
    let ratio = heavy / light;
    assert!((ratio - 2.0).abs() / 2.0 < 0.03, "heavy/light CPU = {ratio:.3}, expected 2 +- 3%");
    assert!(light + heavy > 0.97 * 12_000.0, "only {} ms of 12000 used", light + heavy);
}

/// The quickstart mix (an 8-vCPU barrier VM beside four 1-vCPU CPU-bound VMs on 8 pCPUs)
/// under EEVDF: the barrier VM finishes its iterations (every one of its vCPUs progressed:
/// a barrier waits for all), and the four single-vCPU VMs get equal CPU (equal weights, the
/// same placement chances) within 5%.
#[test]
fn the_quickstart_mix_runs_and_its_overcommitted_vm_completes() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios/quickstart.toml"))
        .unwrap()
        .replace("policy = \"cfs\"", "policy = \"eevdf\"")
        .replace("iterations = 2000", "iterations = 1000");
    let t = vm_table(&run_toml(&text, true));
    let done = num(&t, "parallel", "completion_time_ms");
    assert!(done > 0.0, "the barrier VM did not finish");
    let seq: Vec<f64> = (0..4).map(|i| num(&t, &format!("seq-{i}"), "cpu_time_ms")).collect();
    let (lo, hi) = seq.iter().fold((f64::MAX, 0.0f64), |(lo, hi), &x| (lo.min(x), hi.max(x)));
    assert!(lo > 0.0 && (hi - lo) / hi < 0.05, "seq VMs' CPU {seq:?}");
}

/// The example scenario loads and runs in check mode.
#[test]
fn the_example_scenario_runs() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios/examples/eevdf.toml")).unwrap();
    let text = text.replace("duration = \"20s\"", "duration = \"2s\"");
    let t = vm_table(&run_toml(&text, true));
    assert!(t.values().all(|row| row["cpu_time_ms"].parse::<f64>().unwrap() > 0.0), "{t:?}");
}

/// EEVDF as the default pool beside a credit pool, on a two-socket SMT host (so SMT, MC and
/// DIE-level domains): the barrier VM completes and the 2-vCPU VMs of equal weight get CPU
/// within 10% of each other.
#[test]
fn an_eevdf_pool_beside_a_credit_pool_on_an_smt_host() {
    let text = "[host]\npcpus = 8\nsockets = 2\nthreads_per_core = 2\npolicy = \"eevdf\"\n\
                [[host.pool]]\nname = \"side\"\npcpus = \"6-7\"\npolicy = \"credit\"\n\
                [[vm]]\nname = \"par\"\nvcpus = 6\nworkload = \"barrier\"\nthreads = 6\niterations = 300\n\
                [[vm]]\nname = \"seq\"\ncount = 3\nvcpus = 2\nweight = 512\nworkload = \"cpu-bound\"\n\
                [[vm]]\nname = \"other\"\nvcpus = 2\npool = \"side\"\nworkload = \"cpu-bound\"\n\
                [run]\nduration = \"2s\"\nseed = 3\n";
    let t = vm_table(&run_toml(text, true));
    assert!(num(&t, "par", "completion_time_ms") > 0.0, "the barrier VM did not finish");
    let seq: Vec<f64> = (0..3).map(|i| num(&t, &format!("seq-{i}"), "cpu_time_ms")).collect();
    let (lo, hi) = seq.iter().fold((f64::MAX, 0.0f64), |(lo, hi), &x| (lo.min(x), hi.max(x)));
    assert!((hi - lo) / hi < 0.1, "seq VMs' CPU {seq:?}");
}

/// EEVDF has no CFS bandwidth control: a capped VM in its pool is refused with the key named.
#[test]
fn a_cap_under_eevdf_is_refused() {
    let text = "[host]\npcpus = 2\npolicy = \"eevdf\"\n[[vm]]\nname = \"a\"\nvcpus = 1\ncap = 50\nworkload = \"cpu-bound\"\n[run]\nduration = \"10ms\"\n";
    let err = vcpusim::api::load_scenario(text, "<test>").expect_err("a cap under eevdf is an error").to_string();
    assert!(err.contains("cap") && err.contains("eevdf"), "{err}");
}
