//! The schedule trace as Perfetto reads it (metrics/trace.rs, sim/tracing.rs): parsed back from
//! a traced run of an overcommitted host, checked for what Perfetto's JSON importer needs (slices
//! nest on each track, flows pair up) and for what the tracks say (each vCPU's time is accounted
//! for, holders and IPIs name the right vCPUs, counters match the states).

use std::collections::{BTreeMap, HashMap};
use vcpusim::api::{load_scenario, run, RunOptions};

/// Two pCPUs for five vCPUs: a barrier VM (futex wakeups send reschedule IPIs to halted vCPUs,
/// lock holders get preempted) beside two CPU-bound VMs.
const SCENARIO: &str = r#"
[host]
pcpus = 2
policy = "credit"

[[vm]]
name = "par"
vcpus = 3
workload = "barrier"
threads = 3

[[vm]]
name = "seq"
count = 2
vcpus = 1
workload = "cpu-bound"

[run]
duration = "200ms"
"#;

type Ev = serde_json::Value;

fn traced(window: Option<(u64, u64)>) -> (Vec<Ev>, String, String) {
    let sc = load_scenario(SCENARIO, "t.toml").unwrap();
    let out = run(&sc, &RunOptions { trace: true, trace_window: window, ..Default::default() }).unwrap();
    let json = out.trace_json.clone().unwrap();
    let v: Ev = serde_json::from_str(&json).unwrap();
    (v["traceEvents"].as_array().unwrap().clone(), json, out.vms_csv)
}

fn ns(e: &Ev, key: &str) -> u64 {
    (e[key].as_f64().unwrap_or(0.0) * 1000.0).round() as u64
}

fn track(e: &Ev) -> (u64, u64) {
    (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap_or(0))
}

#[test]
fn slices_nest_on_every_track_as_perfetto_requires() {
    let (evs, _, _) = traced(None);
    let mut by_track: BTreeMap<(u64, u64), Vec<(u64, u64)>> = BTreeMap::new();
    for e in evs.iter().filter(|e| e["ph"] == "X") {
        by_track.entry(track(e)).or_default().push((ns(e, "ts"), ns(e, "ts") + ns(e, "dur")));
    }
    for (t, mut spans) in by_track {
        // Longer first at equal start, as a parent comes before its children.
        spans.sort_by_key(|&(s, e)| (s, std::cmp::Reverse(e)));
        let mut open: Vec<u64> = Vec::new();
        for (s, e) in spans {
            while open.last().is_some_and(|&end| end <= s && !(end == s && e == s)) {
                open.pop();
            }
            if let Some(&end) = open.last() {
                assert!(e <= end, "track {t:?}: [{s}, {e}) overlaps a slice ending at {end} without nesting in it");
            }
            open.push(e);
        }
    }
}

#[test]
fn each_vcpu_is_on_a_pcpu_or_in_one_off_state_at_every_instant() {
    let (evs, _, _) = traced(None);
    let end = 200_000_000;
    let names: HashMap<(u64, u64), String> = evs
        .iter()
        .filter(|e| e["name"] == "thread_name")
        .map(|e| (track(e), e["args"]["name"].as_str().unwrap().to_string()))
        .collect();
    let vms: HashMap<u64, String> =
        evs.iter().filter(|e| e["name"] == "process_name").map(|e| (e["pid"].as_u64().unwrap(), e["args"]["name"].as_str().unwrap().to_string())).collect();
    let mut total: BTreeMap<String, u64> = BTreeMap::new();
    let mut off_states = BTreeMap::new();
    for e in evs.iter().filter(|e| e["ph"] == "X" && ns(e, "dur") > 0) {
        let name = e["name"].as_str().unwrap();
        if e["pid"] == 0 {
            *total.entry(name.to_string()).or_default() += ns(e, "dur");
            assert_eq!(format!("{}/v{}", e["args"]["vm"].as_str().unwrap(), e["args"]["vcpu"]), name);
            assert!(["preempted", "yield", "halt", "end"].contains(&e["args"]["left"].as_str().unwrap()), "{e}");
        } else if name.starts_with("runnable: ") || name == "halted" {
            let vm = vms[&e["pid"].as_u64().unwrap()].trim_start_matches("VM ").to_string();
            let vcpu = names[&track(e)].trim_start_matches("vCPU ").to_string();
            *total.entry(format!("{vm}/v{vcpu}")).or_default() += ns(e, "dur");
            *off_states.entry(name.to_string()).or_insert(0u64) += 1;
        }
    }
    assert_eq!(total.len(), 5, "{total:?}");
    for (vcpu, t) in &total {
        assert_eq!(*t, end, "{vcpu}: on a pCPU or off it for the whole run");
    }
    for state in ["runnable: preempted", "runnable: woken", "runnable: starting", "halted"] {
        assert!(off_states.contains_key(state), "no {state:?} slice in {off_states:?}");
    }
}

#[test]
fn a_preempted_vcpu_names_the_vcpu_that_took_its_pcpu() {
    let (evs, _, _) = traced(None);
    let mut pcpu_slices: BTreeMap<u64, Vec<(u64, String)>> = BTreeMap::new();
    for e in evs.iter().filter(|e| e["ph"] == "X" && e["pid"] == 0) {
        pcpu_slices.entry(e["tid"].as_u64().unwrap()).or_default().push((ns(e, "ts"), e["name"].as_str().unwrap().to_string()));
    }
    for slices in pcpu_slices.values_mut() {
        slices.sort();
    }
    let mut checked = 0;
    for e in evs.iter().filter(|e| e["name"] == "runnable: preempted") {
        let (Some(p), Some(holder)) = (e["args"]["pcpu"].as_u64(), e["args"]["held_by"].as_str()) else { continue };
        let next = pcpu_slices[&p].iter().find(|(s, _)| *s >= ns(e, "ts")).expect("someone ran there next");
        assert_eq!(next.1, holder, "{e}");
        checked += 1;
    }
    assert!(checked > 10, "only {checked} preemptions with a holder");
}

#[test]
fn ipi_flows_pair_sender_and_recipient_and_slices_carry_args() {
    let (evs, _, _) = traced(None);
    let mut outs: HashMap<u64, &Ev> = HashMap::new();
    let mut ins = Vec::new();
    for e in &evs {
        if e["flow_out"] == true {
            assert!(outs.insert(e["bind_id"].as_u64().unwrap(), e).is_none(), "flow ids are unique");
        }
        if e["flow_in"] == true {
            ins.push(e);
        }
    }
    assert!(ins.len() > 10, "IPIs were received: {}", ins.len());
    let thread = |e: &Ev| format!("{}/v{}", if e["pid"] == 1 { "par" } else { "?" }, e["tid"]);
    for e in &ins {
        let out = outs[&e["bind_id"].as_u64().unwrap()];
        assert!(ns(out, "ts") <= ns(e, "ts"));
        assert_eq!(e["name"].as_str().unwrap(), format!("{} received", out["name"].as_str().unwrap()));
        assert_eq!(out["args"]["to"].as_str().unwrap(), thread(e));
        assert_eq!(e["args"]["from"].as_str().unwrap(), thread(out));
    }
    let kernel: Vec<&Ev> = evs.iter().filter(|e| e["name"] == "kernel" || e["name"] == "spin").collect();
    assert!(!kernel.is_empty() && kernel.iter().all(|e| e["args"]["function"].is_string()));
    assert!(kernel.iter().any(|e| e["args"]["function"] == "futex_wake"));
    let lhp: Vec<&Ev> = evs.iter().filter(|e| e["name"] == "lock-holder preempted").collect();
    assert!(lhp.iter().all(|e| e["args"]["lock_class"].is_string()));
}

#[test]
fn counters_follow_the_vcpu_states() {
    let (evs, _, _) = traced(None);
    let counters: Vec<&Ev> = evs.iter().filter(|e| e["ph"] == "C").collect();
    let waiting: Vec<f64> = counters.iter().filter(|e| e["name"] == "runnable vCPUs").map(|e| e["args"]["value"].as_f64().unwrap()).collect();
    assert_eq!(waiting[0], 5.0, "every vCPU starts runnable");
    assert!(waiting.iter().all(|&n| (0.0..=5.0).contains(&n)) && waiting.iter().any(|&n| n < 5.0));
    // Each VM's share is its running vCPUs over the 2 pCPUs, at every change.
    let mut running: HashMap<u64, f64> = HashMap::new();
    for e in counters.iter().filter(|e| e["pid"] != 0) {
        let value = e["args"]["value"].as_f64().unwrap();
        match e["name"].as_str().unwrap() {
            "running vCPUs" => {
                assert!(value <= 2.0, "at most one vCPU per pCPU");
                running.insert(e["pid"].as_u64().unwrap(), value);
            }
            "share of the host" => assert_eq!(value, running[&e["pid"].as_u64().unwrap()] / 2.0),
            other => panic!("unexpected counter {other}"),
        }
    }
}

#[test]
fn tracing_and_its_window_change_no_result() {
    let (_, whole, vms) = traced(None);
    let (windowed, _, vms_windowed) = traced(Some((50_000_000, 60_000_000)));
    let sc = load_scenario(SCENARIO, "t.toml").unwrap();
    assert_eq!(run(&sc, &RunOptions::default()).unwrap().vms_csv, vms);
    assert_eq!(vms_windowed, vms);
    for e in windowed.iter().filter(|e| e["ph"] != "M") {
        let (s, d) = (ns(e, "ts"), ns(e, "dur"));
        assert!((50_000_000..60_000_000).contains(&s) && s + d <= 60_000_000, "{e}");
    }
    assert!(windowed.iter().any(|e| e["name"] == "runnable: preempted"));
    assert_eq!(traced(None).1, whole, "the same run gives the same trace");
}
