//! Every policy with every workload, in check mode: the engine invariants (one vCPU per pCPU,
//! one pCPU per vCPU, one vCPU per thread, spinlock exclusion, time conservation, the policy's
//! own invariants) are checked after every event.

mod common;
use common::*;

const POLICIES: &[&str] = &["cfs", "credit", "gang", "eevdf"];

fn mix(policy: &str, workload: &str, extra: &str) -> String {
    format!(
        r#"
[host]
pcpus = 4
policy = "{policy}"
[[vm]]
name = "par"
vcpus = 4
workload = "{workload}"
{extra}
[[vm]]
name = "hog"
vcpus = 2
workload = "cpu-bound"
[[vm]]
name = "idle"
vcpus = 1
workload = "idle"
[run]
duration = "300ms"
seed = 3
"#
    )
}

#[test]
fn invariants_hold_for_every_policy_and_workload() {
    for policy in POLICIES {
        for (workload, extra) in [("barrier", ""), ("mutex", ""), ("tlb", ""), ("pipeline", "threads = 6"), ("cpu-bound", "")] {
            let out = run_toml(&mix(policy, workload, extra), true);
            let t = vm_table(&out);
            assert!(num(&t, "par", "progress") > 0.0, "{policy}/{workload} made no progress:\n{}", out.vms_csv);
            assert!(num(&t, "hog", "cpu_time_ms") > 0.0, "{policy}/{workload}: the hog never ran");
            assert!(num(&t, "idle", "cpu_time_ms") < 1.0, "{policy}: the idle VM ran");
        }
    }
}

#[test]
fn ticket_and_tas_spinlocks_and_both_futex_ipi_orders_hold_invariants() {
    for policy in POLICIES {
        for guest in [
            "[guest]\nspinlock = \"tas\"\nfutex_wake_ipi = \"after-unlock\"\ntlb_targets = \"skip-lazy\"",
            "[guest]\nspinlock = \"ticket\"\nfutex_wake_ipi = \"under-lock\"",
        ] {
            let text = format!("{guest}\n{}", mix(policy, "mutex", ""));
            let out = run_toml(&text, true);
            assert!(num(&vm_table(&out), "par", "progress") > 0.0);
        }
    }
}

#[test]
fn custom_program_with_every_sync_object_completes_under_every_policy() {
    let base = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios/examples/custom-program.toml")).unwrap();
    for policy in POLICIES {
        let text = base.replace("policy = \"credit\"", &format!("policy = \"{policy}\""));
        let out = run_toml(&text, true);
        let t = vm_table(&out);
        assert!(!t["workers"]["completion_time_ms"].is_empty(), "{policy}: workers never finished:\n{}", out.vms_csv);
        assert!(num(&t, "workers", "tlb_shootdowns") > 0.0);
    }
}

/// Credit under each Xen version it models (`[host.params] xen`; 3.3 without PLE, with its tick
/// debit, tickling and placement), in check mode.
#[test]
fn credit_holds_invariants_under_every_xen_version() {
    for xen in ["3.3", "4.4", "4.7", "4.18"] {
        for (workload, extra) in [("barrier", ""), ("mutex", ""), ("tlb", ""), ("pipeline", "threads = 6")] {
            let text = mix("credit", workload, extra)
                .replace("policy = \"credit\"\n", &format!("policy = \"credit\"\n[host.params]\nxen = \"{xen}\"\n"));
            let out = run_toml(&text, true);
            let t = vm_table(&out);
            assert!(num(&t, "par", "progress") > 0.0, "xen {xen}/{workload} made no progress:\n{}", out.vms_csv);
            assert!(num(&t, "hog", "cpu_time_ms") > 0.0, "xen {xen}/{workload}: the hog never ran");
            if xen == "3.3" {
                assert_eq!(num(&t, "par", "ple_exit_count"), 0.0, "Xen 3.3 has no pause-loop exiting");
            }
        }
    }
}

/// The engine skips `do_schedule` when the policy says it would keep the running vCPU
/// (`Policy::keeps_current`; a pause-loop exit's own reschedule). Check mode asks the policy all
/// the same and stops the run if the promise fails; the plain run takes the shortcut. The two
/// must agree byte for byte, on the quickstart's pause-loop storm under each policy that keeps.
#[test]
fn skipping_do_schedule_when_the_policy_keeps_its_vcpu_changes_no_output() {
    let base = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios/quickstart.toml")).unwrap();
    let base = base.replace("duration = \"60s\"", "duration = \"300ms\"");
    for (policy, params) in [("cfs", ""), ("cfs", "[host.params]\nkvm = \"6.6\"\n"), ("eevdf", "")] {
        let text = base.replace("policy = \"cfs\"", &format!("policy = \"{policy}\"\n{params}"));
        let plain = run_toml(&text, false);
        let checked = run_toml(&text, true);
        assert!(num(&vm_table(&plain), "parallel", "ple_exit_count") > 1000.0, "{policy}: no pause-loop storm");
        assert_eq!(plain.vms_csv, checked.vms_csv, "{policy} {params}");
        assert_eq!(plain.metrics_csv, checked.metrics_csv, "{policy} {params}");
        assert_eq!(plain.summary_json, checked.summary_json, "{policy} {params}");
    }
}
