//! Per-VM caps (`[[vm]] cap`, percent of one pCPU) at engine level, check mode on: a capped
//! always-busy VM gets its cap beside uncapped hogs, under credit (`csched_acct` parking) and cfs
//! (CFS bandwidth control), and a cap above the VM's demand changes nothing.

mod common;

use common::{num, run_toml, vm_table};

/// A capped cpu-bound VM of `vcpus` vCPUs beside `hogs` uncapped 1-vCPU cpu-bound VMs on
/// `pcpus` pCPUs for `secs` seconds; returns (capped VM's CPU time, each hog's CPU time) in ms.
fn capped_beside_hogs(policy: &str, pcpus: u32, vcpus: u32, cap: u32, hogs: u32, secs: u32) -> (f64, Vec<f64>) {
    let cap_line = if cap > 0 { format!("cap = {cap}\n") } else { String::new() };
    let text = format!(
        "[host]\npcpus = {pcpus}\npolicy = \"{policy}\"\n\n\
         [[vm]]\nname = \"capped\"\nvcpus = {vcpus}\nweight = 4096\n{cap_line}workload = \"cpu-bound\"\n\n\
         [[vm]]\nname = \"hog\"\ncount = {hogs}\nvcpus = 1\nworkload = \"cpu-bound\"\n\n\
         [run]\nduration = \"{secs}s\"\nseed = 7\n"
    );
    let out = run_toml(&text, true);
    let t = vm_table(&out);
    let hogs = (0..hogs).map(|i| num(&t, &format!("hog-{i}"), "cpu_time_ms")).collect();
    (num(&t, "capped", "cpu_time_ms"), hogs)
}

/// The capped VM's weight is 16x a hog's, so its fair share is well above its cap and only the
/// cap holds it back; (pCPUs, vCPUs, cap, hogs).
const CASES: &[(u32, u32, u32, u32)] = &[(4, 1, 50, 4), (4, 2, 150, 4), (4, 4, 250, 4), (8, 3, 150, 6), (8, 4, 250, 8)];

fn caps_hold(policy: &str) {
    for &(pcpus, vcpus, cap, hogs) in CASES {
        let (capped, _hogs) = capped_beside_hogs(policy, pcpus, vcpus, cap, hogs, 10);
        // Percent of one pCPU over the 10 s run.
        let got = capped / 10_000.0 * 100.0;
        assert!(
            (got - cap as f64).abs() < 2.0,
            "{policy}: {vcpus}-vCPU VM capped at {cap}% on {pcpus} pCPUs beside {hogs} hogs got {got:.2}%"
        );
    }
}

#[test]
fn credit_caps_a_busy_vm_at_its_cap() {
    caps_hold("credit");
}

#[test]
fn cfs_caps_a_busy_vm_at_its_cap() {
    caps_hold("cfs");
}

/// vms.csv without the columns that restate the setting (`cap`, and `entitled_share`, which the
/// cap bounds): what the VMs got.
fn results(out: &vcpusim::api::RunOutput) -> Vec<std::collections::BTreeMap<String, String>> {
    let table = common::vm_table(out);
    table
        .into_values()
        .map(|mut row| {
            row.remove("cap");
            row.remove("entitled_share");
            row
        })
        .collect()
}

/// A cap above what the VM would get anyway changes no per-VM result: a 2-vCPU cpu-bound VM on 4
/// pCPUs beside 2 hogs (no contention: it gets 200%) with cap 250. Under cfs the bandwidth pool
/// never runs dry, so nothing is throttled (the period timer fires, which only adds events);
/// under credit the cap lowers neither the domain's credit peak (2 x 300 < 750) nor parks a vCPU
/// whose credit stays above -375. So vms.csv is byte-identical to the uncapped run but for the
/// columns that restate the cap.
fn cap_above_demand_changes_nothing(policy: &str) {
    let scenario = |cap: &str| {
        format!(
            "[host]\npcpus = 4\npolicy = \"{policy}\"\n\n\
             [[vm]]\nname = \"web\"\nvcpus = 2\n{cap}workload = \"cpu-bound\"\n\n\
             [[vm]]\nname = \"hog\"\ncount = 2\nvcpus = 1\nworkload = \"cpu-bound\"\n\n\
             [run]\nduration = \"2s\"\nseed = 3\n"
        )
    };
    let plain = run_toml(&scenario(""), true);
    let capped = run_toml(&scenario("cap = 250\n"), true);
    assert_eq!(results(&plain), results(&capped), "{policy}: a cap above demand changed the per-VM results");
}

#[test]
fn credit_cap_above_demand_changes_nothing() {
    cap_above_demand_changes_nothing("credit");
}

#[test]
fn cfs_cap_above_demand_changes_nothing() {
    cap_above_demand_changes_nothing("cfs");
}

/// Under cfs a cap above the VM's fair share under contention changes nothing either: one
/// 1-vCPU VM among 8 1-vCPU hogs on 4 pCPUs gets 4/9 of a pCPU (44%), below its cap of 60%, so
/// its bandwidth pool never runs dry. (Not so under credit, see docs/model.md: credit.c parks a
/// capped vCPU whose credit falls below -cap/active vCPUs, which contention alone can cause.)
#[test]
fn cfs_cap_above_the_fair_share_changes_nothing() {
    let scenario = |cap: &str| {
        format!(
            "[host]\npcpus = 4\npolicy = \"cfs\"\n\n\
             [[vm]]\nname = \"web\"\nvcpus = 1\n{cap}workload = \"cpu-bound\"\n\n\
             [[vm]]\nname = \"hog\"\ncount = 8\nvcpus = 1\nworkload = \"cpu-bound\"\n\n\
             [run]\nduration = \"2s\"\nseed = 5\n"
        )
    };
    let plain = run_toml(&scenario(""), true);
    let capped = run_toml(&scenario("cap = 60\n"), true);
    assert_eq!(results(&plain), results(&capped), "cfs: a cap above the fair share changed the per-VM results");
}

/// `cfs_period` is a cfs parameter: a 10 ms period caps as well.
#[test]
fn cfs_period_is_a_parameter() {
    let text = "[host]\npcpus = 2\npolicy = \"cfs\"\nparams = { cfs_period = \"10ms\" }\n\n\
                [[vm]]\nname = \"capped\"\nvcpus = 2\ncap = 120\nweight = 4096\nworkload = \"cpu-bound\"\n\n\
                [[vm]]\nname = \"hog\"\nvcpus = 1\nworkload = \"cpu-bound\"\n\n\
                [run]\nduration = \"2s\"\nseed = 1\n";
    let t = vm_table(&run_toml(text, true));
    let got = num(&t, "capped", "cpu_time_ms") / 2_000.0 * 100.0;
    assert!((got - 120.0).abs() < 2.0, "cfs, 10 ms period: capped at 120% got {got:.2}%");
}

/// `work_conserving = false` under credit caps a VM at its weight's share of the host, in
/// every Xen version, beside an idle VM (seed 004's section 6.2 setup: V0 idle at weight 256).
/// Under Xen 3.3 the debit is tick-sampled, so this also needs 3.3's tickers to run on idle
/// pCPUs as they do there: with them stopped while idle (4.x behaviour) a capped vCPU unparked
/// at `csched_acct` ran on a pCPU whose tick was not armed and evaded debits (weight 32 got
/// 16.4% of the host, not 11.1%).
#[test]
fn credit_weight_caps_hold_beside_an_idle_vm_in_every_xen_version() {
    for xen in ["3.3", "4.4", "4.7", "4.18"] {
        for weight in [32u32, 128] {
            let text = format!(
                "[host]\npcpus = 8\npolicy = \"credit\"\nparams = {{ work_conserving = false, xen = \"{xen}\" }}\n\
                 ple = {{ enabled = false }}\n\n\
                 [[vm]]\nname = \"v0\"\nvcpus = 8\nweight = 256\nworkload = \"idle\"\n\n\
                 [[vm]]\nname = \"v1\"\nvcpus = 4\nweight = {weight}\nworkload = \"cpu-bound\"\n\n\
                 [run]\nduration = \"10s\"\nseed = 3\n"
            );
            let out = run_toml(&text, true);
            let share = num(&vm_table(&out), "v1", "cpu_time_ms") / (8.0 * 10_000.0);
            let want = weight as f64 / (weight + 256) as f64;
            assert!((share - want).abs() < 0.01, "xen {xen}, weight {weight}: host share {share:.4}, want {want:.4}");
        }
    }
}
