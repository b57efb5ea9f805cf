//! Seed 001's contention model (hardware/contention.rs, sim/mechanisms/contention_model.rs): the
//! module factor exactly when two always-busy vCPUs share a module and exactly 1.0
//! when they do not; the LLC factor growing with busy cores; remote memory; the new vms.csv
//! columns; an all-off `[host.contention]` changing no byte; bad input refused with its key.

mod common;
use common::*;
use vcpusim::api::load_scenario;
use vcpusim::hardware::speed::Speed;
use vcpusim::sim::state::Sim;

/// Always-busy single-thread `cpu-bound` VMs, one per entry of `cpus` (pinned there), with
/// `sens` as their `[vm.contention]`, on `host` (the `[host]` body) with `contention` on. Every
/// pCPU comes online at 0 (`start_skew = "0ns"`), so the vCPUs are busy together from the start.
fn pinned(host: &str, contention: &str, sens: &str, cpus: &[&str], duration: &str) -> String {
    let mut text = format!("[host]\n{host}\npolicy = \"credit\"\nstart_skew = \"0ns\"\n[host.contention]\n{contention}\n");
    for (i, c) in cpus.iter().enumerate() {
        text += &format!("[[vm]]\nname = \"v{i}\"\nvcpus = 1\nworkload = \"cpu-bound\"\ncpus = \"{c}\"\n{sens}\n");
    }
    text + &format!("[run]\nduration = \"{duration}\"\n")
}

const MODULE_HOST: &str = "pcpus = 4\ncores_per_module = 2";
const MODULE_ON: &str = "module_frontend = true\nmodule_fpu = true";
/// Front end 0.2, FPU 0.1: the module factor is 0.8 x 0.9 = 0.72.
const MODULE_SENS: &str = "[vm.contention]\nmodule_frontend = 0.2\nmodule_fpu = 0.1\nllc = 0.3";

/// Build and run `text` to `until` ns; the speed of every VM's vCPU then.
fn speeds_at(text: &str, until: u64) -> Vec<Speed> {
    let sc = load_scenario(text, "<test>").unwrap_or_else(|e| panic!("{e}\n{text}"));
    let mut sim = Sim::build(&sc, sc.run.seed, false, true).expect("builds");
    sim.start();
    sim.run_until(until, None).expect("runs");
    sim.vcpus().iter().map(|v| v.speed).collect()
}

#[test]
fn two_busy_vcpus_on_one_module_run_at_the_module_factor_and_on_two_modules_at_one() {
    let shared = pinned(MODULE_HOST, MODULE_ON, MODULE_SENS, &["0", "1"], "2s");
    let apart = pinned(MODULE_HOST, MODULE_ON, MODULE_SENS, &["0", "2"], "2s");
    // Both busy from the start: the speed is exact.
    assert_eq!(speeds_at(&shared, 500_000_000), [Speed::from_ppm(720_000); 2]);
    assert_eq!(speeds_at(&apart, 500_000_000), [Speed::ONE; 2]);

    let (s, a) = (vm_table(&run_toml(&shared, false)), vm_table(&run_toml(&apart, false)));
    for vm in ["v0", "v1"] {
        // Work lost per work done: (1 - f) / f = 0.25 for the front end, 0.1111 for the FPU.
        assert_eq!(num(&s, vm, "slowdown_module_frontend"), 0.25, "{vm}");
        assert_eq!(num(&s, vm, "slowdown_module_fpu"), 0.1111, "{vm}");
        for col in ["slowdown_module_frontend", "slowdown_module_fpu", "slowdown_llc", "slowdown_numa_remote"] {
            assert_eq!(num(&a, vm, col), 0.0, "{vm} {col}");
        }
        // Sensitive to the LLC, but the LLC source is off.
        assert_eq!(num(&s, vm, "slowdown_llc"), 0.0);
        // 1 ms chunks: the shared pair does 0.72 of the apart pair's work (up to the chunk in
        // progress at the end).
        let ratio = num(&s, vm, "progress") / num(&a, vm, "progress");
        assert!((ratio - 0.72).abs() < 0.001, "{vm}: progress ratio {ratio}");
        // Each VM uses one core: alone, it competes with nobody of its own.
        assert_eq!(num(&s, vm, "competing_modules"), 0.0);
    }
    // The host sees one module with both cores busy all the time, the other idle.
    let host_competing = |text: &str| -> f64 {
        let out = run_toml(text, false);
        let json: serde_json::Value = serde_json::from_str(&out.summary_json).unwrap();
        json["competing_modules"].as_f64().unwrap()
    };
    assert_eq!(host_competing(&shared), 1.0);
    assert_eq!(host_competing(&apart), 0.0);
}

#[test]
fn a_vm_on_both_cores_of_a_module_competes_on_one_module() {
    let text = "[host]\npcpus = 4\ncores_per_module = 2\npolicy = \"credit\"\n\
                [[vm]]\nname = \"pair\"\nvcpus = 2\nworkload = \"cpu-bound\"\ncpus = [\"0\", \"1\"]\n\
                [[vm]]\nname = \"spread\"\nvcpus = 2\nworkload = \"cpu-bound\"\ncpus = \"2\"\n\
                [run]\nduration = \"3s\"\n";
    let t = vm_table(&run_toml(text, false));
    // Both cores busy except the first milliseconds before the pCPUs came online.
    let pair = num(&t, "pair", "competing_modules");
    assert!(pair > 0.98 && pair <= 1.0, "{pair}");
    assert_eq!(num(&t, "spread", "competing_modules"), 0.0);
    // Without [host.contention] the speed is nominal: no slowdown.
    assert_eq!(num(&t, "pair", "slowdown_module_frontend"), 0.0);
}

#[test]
fn the_llc_factor_grows_with_busy_cores_on_the_llc() {
    // 8 cores without modules, one LLC per socket; LLC sensitivity 0.14: each busy peer of the
    // 7 others costs 0.02.
    let mut seen = Vec::new();
    for k in 1..=8usize {
        let cpus: Vec<String> = (0..k).map(|p| p.to_string()).collect();
        let cpus: Vec<&str> = cpus.iter().map(|s| s.as_str()).collect();
        let text = pinned("pcpus = 8", "llc = true", "[vm.contention]\nllc = 0.14", &cpus, "1s");
        let speeds = speeds_at(&text, 500_000_000);
        assert!(speeds.iter().all(|s| *s == speeds[0]), "{k}: {speeds:?}");
        assert_eq!(speeds[0], Speed::from_ppm(1_000_000 - 20_000 * (k as u32 - 1)), "{k} busy cores");
        seen.push(speeds[0]);
    }
    assert!(seen.windows(2).all(|w| w[1] < w[0]));
}

#[test]
fn remote_memory_slows_by_the_remote_share_and_is_reported() {
    // Two nodes: pCPUs 0-1 on node 0, 2-3 on node 1.
    let host = "pcpus = 4\nnuma_nodes = 2";
    let vm = |name: &str, cpus: &str, nodes: &str| {
        format!(
            "[[vm]]\nname = \"{name}\"\nvcpus = 1\nworkload = \"cpu-bound\"\ncpus = \"{cpus}\"\nmemory_nodes = {nodes}\n\
             [vm.contention]\nnuma_remote = 0.3\n"
        )
    };
    let text = format!(
        "[host]\n{host}\npolicy = \"credit\"\n[host.contention]\nnuma_remote = true\n{}{}{}{}[run]\nduration = \"1s\"\n",
        vm("local", "0", "[0]"),
        vm("remote", "2", "[0]"),
        vm("striped", "3", "[0, 1]"),
        vm("auto", "1", "\"auto\""),
    );
    // "auto" memory follows the node affinity, here derived from `cpus = "1"` (node 0): local.
    assert_eq!(speeds_at(&text, 500_000_000), [Speed::ONE, Speed::from_ppm(700_000), Speed::from_ppm(850_000), Speed::ONE]);
    let t = vm_table(&run_toml(&text, false));
    for (name, share, slowdown) in [("local", 0.0, 0.0), ("remote", 1.0, 0.4286), ("striped", 0.0, 0.1765), ("auto", 0.0, 0.0)] {
        assert_eq!(num(&t, name, "remote_memory_share"), share, "{name}");
        assert_eq!(num(&t, name, "slowdown_numa_remote"), slowdown, "{name}");
    }
}

#[test]
fn contention_all_off_changes_no_byte() {
    let base = "[host]\npcpus = 4\ncores_per_module = 2\nnuma_nodes = 2\npolicy = \"credit\"\n{extra}\
                [[vm]]\nname = \"a\"\nvcpus = 4\nworkload = \"parsec.streamcluster\"\nmemory_nodes = [1]\n\
                [[vm]]\nname = \"b\"\nvcpus = 2\nworkload = \"mutex\"\n[run]\nduration = \"300ms\"\n";
    let without = run_toml(&base.replace("{extra}", ""), true);
    let off = run_toml(&base.replace("{extra}", "[host.contention]\nllc = false\n"), true);
    assert_eq!(without.vms_csv, off.vms_csv);
    assert_eq!(without.metrics_csv, off.metrics_csv);
    assert_eq!(without.summary_json, off.summary_json);
    // And with a source on, something moves (the model is wired in).
    let on = run_toml(&base.replace("{extra}", "[host.contention]\nllc = true\nnuma_remote = true\n"), true);
    assert_ne!(without.vms_csv, on.vms_csv);
}

#[test]
fn per_pcpu_busy_time_is_in_metrics_csv_for_the_pcpus_a_vm_ran_on() {
    let text = "[host]\npcpus = 4\npolicy = \"credit\"\nstart_skew = \"0ns\"\n\
                [[vm]]\nname = \"a\"\nvcpus = 1\nworkload = \"cpu-bound\"\ncpus = \"2\"\n[run]\nduration = \"1s\"\n";
    let out = run_toml(text, false);
    let busy: Vec<(String, f64)> = out
        .metrics_csv
        .lines()
        .filter_map(|l| l.strip_prefix("a,pcpu_busy_ms["))
        .map(|rest| {
            let (p, ms) = rest.split_once("],").expect("a metric row");
            (p.to_string(), ms.parse().unwrap())
        })
        .collect();
    // Pinned to pCPU 2: its row alone (the others, where it never ran, are absent: 0).
    assert_eq!(busy, [("2".to_string(), 1000.0)]);
    // A host 256 times the size adds no rows for a VM that runs on one pCPU.
    let big = run_toml(&text.replace("pcpus = 4", "pcpus = 1024"), false);
    assert_eq!(big.metrics_csv.lines().filter(|l| l.starts_with("a,pcpu_busy_ms[")).count(), 1);
}

#[test]
fn bad_contention_input_is_refused_with_its_key() {
    let host = "[host]\npcpus = 4\nnuma_nodes = 2\n";
    let on = "[host.contention]\nllc = true\n";
    let vm = "[[vm]]\nname = \"a\"\nvcpus = 1\nworkload = \"cpu-bound\"\n";
    let err = |text: String| load_scenario(&text, "f.toml").expect_err(&text).to_string();
    for (value, shown) in [("1.0", "1"), ("-0.1", "-0.1"), ("1.5", "1.5")] {
        let e = err(format!("{host}{on}{vm}[vm.contention]\nllc = {value}\n"));
        assert_eq!(
            e,
            format!(
                "f.toml: vm[0].contention.llc: expected a slowdown in [0, 1) (0 = insensitive; 0.2 = runs at 0.8 of its \
                 speed when the source is fully contended), got {shown}"
            )
        );
    }
    let e = err(format!("{host}{on}{vm}[vm.contention]\nllc = \"high\"\n"));
    assert!(e.starts_with("f.toml: vm[0].contention.llc: expected a number"), "{e}");
    let e = err(format!("{host}{vm}[vm.contention]\nllc = 0.1\n"));
    assert!(e.starts_with("f.toml: vm[0].contention: ") && e.contains("[host.contention]"), "{e}");
    let e = err(format!("{host}{on}{vm}memory_nodes = [2]\n"));
    assert_eq!(
        e,
        "f.toml: vm[0].memory_nodes: got node 2 in [2]; expected \"auto\" or an array of distinct NUMA node numbers \
         from 0 to 1 (the host has numa_nodes = 2), such as [0, 1]"
    );
    for bad in ["[]", "[0, 0]", "\"all\"", "[-1]", "1"] {
        let e = err(format!("{host}{vm}memory_nodes = {bad}\n"));
        assert!(e.starts_with("f.toml: vm[0].memory_nodes: ") && e.contains("from 0 to 1"), "{bad}: {e}");
    }
    let e = err(format!("{host}[host.contention]\nllc = 1\n{vm}"));
    assert_eq!(e, "f.toml: host.contention.llc: expected true or false, got 1");
    let e = err(format!("{host}[host.contention]\nsmt = true\n{vm}"));
    assert!(e.starts_with("f.toml: host.contention.smt: unknown key"), "{e}");
}
