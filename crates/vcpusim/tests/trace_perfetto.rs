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
    let names: HashMap<(u64, u64), String> =
        evs.iter().filter(|e| e["name"] == "thread_name").map(|e| (track(e), e["args"]["name"].as_str().unwrap().to_string())).collect();
    let vms: HashMap<u64, String> = evs
        .iter()
        .filter(|e| e["name"] == "process_name")
        .map(|e| (e["pid"].as_u64().unwrap(), e["args"]["name"].as_str().unwrap().to_string()))
        .collect();
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
    let waiting: Vec<f64> =
        counters.iter().filter(|e| e["name"] == "runnable vCPUs").map(|e| e["args"]["value"].as_f64().unwrap()).collect();
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

// ---- Lock hand-off flows (guest/handoff.rs): `s` on the releaser's vCPU, `f` (`bp: e`) where
// the waiter resumes.

/// Three VMs on their own pCPUs, all online at t = 0, each with one known hand-off: thread 0 holds something for
/// 100 us, thread 1 (on the other vCPU) wants it 10 us in. `spin`: a guest-kernel spinlock (thread
/// 1 spins, and gets it at the release); `mutex`: a glibc mutex (thread 1 sleeps in futex_wait,
/// its vCPU halts, the unlock's futex_wake sends it a reschedule IPI); `mmsem`: mmap_sem (munmap
/// holds it, mmap sleeps and is granted it by up_write).
const HANDOFFS: &str = r#"
[host]
pcpus = 6
policy = "credit"
start_skew = "0ms"

[[vm]]
name = "spin"
vcpus = 2
workload = "program"
[vm.program]
kernel_locks = ["dcache"]
threads = [[{syscall = "100us", lock = 0}, {compute = "1ms"}],
           [{compute = "10us"}, {syscall = "10us", lock = 0}, {compute = "1ms"}]]

[[vm]]
name = "mutex"
vcpus = 2
workload = "program"
[vm.program]
mutexes = 1
threads = [[{lock = 0}, {compute = "100us"}, {unlock = 0}, {compute = "1ms"}],
           [{compute = "10us"}, {lock = 0}, {compute = "10us"}, {unlock = 0}, {compute = "1ms"}]]

[[vm]]
name = "mmsem"
vcpus = 2
workload = "program"
[vm.program]
threads = [[{munmap = 400}, {compute = "1ms"}],
           [{compute = "10us"}, {mmap = 1}, {compute = "1ms"}]]

[run]
duration = "2ms"
"#;

/// The same VMs with one thread each: every lock, mutex and mmap_sem is taken, never contended.
const UNCONTENDED: &str = r#"
[host]
pcpus = 2
policy = "credit"

[[vm]]
name = "solo"
vcpus = 2
workload = "program"
threads = 1
[vm.program]
mutexes = 1
kernel_locks = ["dcache"]
threads = [[{loop = "forever", body = [{syscall = "10us", lock = 0}, {lock = 0}, {compute = "20us"}, {unlock = 0},
            {mmap = 4}, {munmap = 4}, {progress = true}]}]]

[[vm]]
name = "seq"
vcpus = 1
workload = "cpu-bound"

[run]
duration = "50ms"
"#;

/// Overcommitted and contended: on four vCPUs sharing two pCPUs with a CPU-bound VM, two threads
/// take a mutex, two a kernel lock, and all four mmap (mmap_sem): hand-offs to waiters whose
/// vCPU is preempted as well as to running spinners.
const CONTENDED: &str = r#"
[host]
pcpus = 2
policy = "credit"

[[vm]]
name = "par"
vcpus = 4
workload = "program"
threads = 4
[vm.program]
mutexes = 1
kernel_locks = ["dcache"]
threads = [[{loop = "forever", body = [{compute = {exp = "50us"}}, {lock = 0}, {compute = "10us"}, {unlock = 0}, {mmap = 16}, {progress = true}]}],
           [{loop = "forever", body = [{compute = {exp = "50us"}}, {lock = 0}, {compute = "10us"}, {unlock = 0}, {mmap = 16}, {progress = true}]}],
           [{loop = "forever", body = [{compute = {exp = "30us"}}, {syscall = "20us", lock = 0}, {mmap = 16}, {progress = true}]}],
           [{loop = "forever", body = [{compute = {exp = "30us"}}, {syscall = "20us", lock = 0}, {mmap = 16}, {progress = true}]}]]

[[vm]]
name = "seq"
vcpus = 1
workload = "cpu-bound"

[run]
duration = "40ms"
"#;

fn trace_of(text: &str, window: Option<(u64, u64)>) -> (Vec<Ev>, String) {
    let sc = load_scenario(text, "t.toml").unwrap();
    let out = run(&sc, &RunOptions { trace: true, trace_window: window, ..Default::default() }).unwrap();
    let json = out.trace_json.unwrap();
    let v: Ev = serde_json::from_str(&json).expect("the trace is valid JSON");
    (v["traceEvents"].as_array().unwrap().clone(), json)
}

/// One hand-off arrow as written: its `s` and `f` events with their positions in the file.
struct Arrow<'a> {
    s: (usize, &'a Ev),
    f: (usize, &'a Ev),
}

/// Check what Perfetto needs of the v1 flows and pair them: each `s` / `f` directly follows a
/// zero-length slice on its own track at its time (the slice it binds to: `release: ...` /
/// `resume: ...`); ids are unique; every `f` has exactly one `s` of the same id, category and
/// name, earlier in the file and not later in time, and every `s` its `f`; no v2 `bind_id` can
/// meet Perfetto's numbers for v1 flows (0, 1, 2 ...).
fn arrows(evs: &[Ev]) -> Vec<Arrow<'_>> {
    let mut starts: BTreeMap<u64, (usize, &Ev)> = BTreeMap::new();
    let mut ends: BTreeMap<u64, (usize, &Ev)> = BTreeMap::new();
    for (k, e) in evs.iter().enumerate() {
        if let Some(id) = e["bind_id"].as_u64() {
            assert!(id >= 1 << 32, "v2 id {id} could be a v1 flow's number: {e}");
        }
        let ph = e["ph"].as_str().unwrap();
        if ph != "s" && ph != "f" {
            continue;
        }
        let marker = &evs[k - 1];
        let prefix = if ph == "s" { "release: " } else { "resume: " };
        assert!(
            marker["ph"] == "X" && ns(marker, "dur") == 0 && track(marker) == track(e) && ns(marker, "ts") == ns(e, "ts"),
            "{e} does not follow its zero-length slice: {marker}"
        );
        assert!(marker["name"].as_str().unwrap().starts_with(prefix), "{marker}");
        assert_eq!(e["cat"], "lock hand-off");
        let id = e["id"].as_u64().expect("a numeric id");
        let side = if ph == "s" { &mut starts } else { &mut ends };
        assert!(side.insert(id, (k, e)).is_none(), "flow id {id} is used twice by {ph}");
        if ph == "f" {
            assert_eq!(e["bp"], "e", "{e}");
        } else {
            assert!(e.get("bp").is_none());
        }
    }
    assert_eq!(starts.keys().collect::<Vec<_>>(), ends.keys().collect::<Vec<_>>(), "every s has its f and every f its s");
    starts
        .into_iter()
        .map(|(id, s)| {
            let f = ends[&id];
            assert_eq!((&s.1["name"], &s.1["cat"]), (&f.1["name"], &f.1["cat"]), "flow {id}");
            assert!(s.0 < f.0 && ns(s.1, "ts") <= ns(f.1, "ts"), "flow {id}: its start comes first");
            Arrow { s, f }
        })
        .collect()
}

/// VM process id -> name, from the trace's metadata.
fn vm_names(evs: &[Ev]) -> HashMap<u64, String> {
    evs.iter()
        .filter(|e| e["name"] == "process_name" && e["pid"] != 0)
        .map(|e| (e["pid"].as_u64().unwrap(), e["args"]["name"].as_str().unwrap().trim_start_matches("VM ").to_string()))
        .collect()
}

/// Whether the vCPU of VM track `t` is on some pCPU at `at` (the host's slices name it `vm/vN`).
fn on_a_pcpu(evs: &[Ev], names: &HashMap<u64, String>, t: (u64, u64), at: u64) -> bool {
    let label = format!("{}/v{}", names[&t.0], t.1);
    evs.iter()
        .any(|e| e["ph"] == "X" && e["pid"] == 0 && e["name"] == label.as_str() && ns(e, "ts") <= at && at <= ns(e, "ts") + ns(e, "dur"))
}

#[test]
fn each_known_handoff_is_an_arrow_from_the_releasers_vcpu_to_where_the_waiter_resumes() {
    let (evs, _) = trace_of(HANDOFFS, None);
    let names = vm_names(&evs);
    let arrows = arrows(&evs);
    let by_vm: BTreeMap<&str, &Arrow> = arrows.iter().map(|a| (names[&a.s.1["pid"].as_u64().unwrap()].as_str(), a)).collect();
    assert_eq!(arrows.len(), 3, "one hand-off per VM");
    for (vm, kind, lock) in
        [("spin", "spinlock hand-off", "dcache"), ("mutex", "mutex wake", "mutex 0"), ("mmsem", "mmap_sem hand-off", "mmap_sem")]
    {
        let a = by_vm[vm];
        let (s, f) = (a.s.1, a.f.1);
        assert_eq!(s["name"], kind, "{vm}");
        // Thread 0 releases on one vCPU; thread 1 resumes on the other, in the same VM.
        assert_eq!(track(s).0, track(f).0, "{vm}");
        assert_ne!(track(s).1, track(f).1, "{vm}: the waiter runs on the other vCPU");
        let (release, resume) = (&evs[a.s.0 - 1], &evs[a.f.0 - 1]);
        assert_eq!(release["name"].as_str().unwrap(), format!("release: {lock}"));
        assert_eq!(resume["name"].as_str().unwrap(), format!("resume: {lock}"));
        assert_eq!(release["args"]["thread"].as_str().unwrap(), format!("{vm}/t0 on {vm}/v{}", track(s).1));
        assert_eq!(release["args"]["to"].as_str().unwrap(), format!("{vm}/t1"));
        assert_eq!(resume["args"]["thread"].as_str().unwrap(), format!("{vm}/t1 on {vm}/v{}", track(f).1));
        assert_eq!(resume["args"]["from"], release["args"]["thread"]);
        // Thread 0 held it for its 100 us; both vCPUs run at each end of the arrow.
        assert!(ns(s, "ts") >= 100_000, "{vm}: released at {}", ns(s, "ts"));
        assert!(on_a_pcpu(&evs, &names, track(s), ns(s, "ts")) && on_a_pcpu(&evs, &names, track(f), ns(f, "ts")), "{vm}");
    }
    // The spinner takes the lock as soon as it runs guest code after the release: it was
    // spinning then, or in a pause-loop exit (no other vCPU to yield to) that ends when it resumes.
    let spin = by_vm["spin"];
    let (from, to) = (ns(spin.s.1, "ts"), ns(spin.f.1, "ts"));
    assert!(
        evs.iter().any(|e| (e["name"] == "spin" || e["name"] == "overhead")
            && track(e) == track(spin.f.1)
            && ns(e, "ts") <= from
            && ns(e, "ts") + ns(e, "dur") == to),
        "the waiter spun from before {from} to {to}"
    );
    assert!(evs.iter().filter(|e| e["name"] == "spin" && track(e) == track(spin.f.1)).count() > 10, "it spun while thread 0 held the lock");
    // The sleepers ran no thread code from the release until they resumed.
    for vm in ["mutex", "mmsem"] {
        let a = by_vm[vm];
        let (from, to) = (ns(a.s.1, "ts"), ns(a.f.1, "ts"));
        assert!(from < to, "{vm}");
        let busy = |e: &&Ev| ["user", "kernel", "spin"].contains(&e["name"].as_str().unwrap()) && track(e) == track(a.f.1);
        assert!(!evs.iter().filter(busy).any(|e| (from..to).contains(&ns(e, "ts"))), "{vm}: the waiter ran before it resumed");
    }
    // The mutex waiter's vCPU had halted: the unlock's reschedule IPI, sent after the release,
    // reaches it before the waiter resumes.
    let a = by_vm["mutex"];
    let (from, to) = (ns(a.s.1, "ts"), ns(a.f.1, "ts"));
    let ipi = evs
        .iter()
        .find(|e| e["flow_in"] == true && track(e) == track(a.f.1) && ns(e, "ts") >= from)
        .expect("an IPI reached the waiter's vCPU");
    assert!(ipi["name"] == "resched received" && ns(ipi, "ts") <= to, "{ipi}");
    assert!(evs
        .iter()
        .any(|e| e["name"] == "halted" && track(e) == track(a.f.1) && ns(e, "ts") < from && ns(e, "ts") + ns(e, "dur") >= from));
}

#[test]
fn a_run_without_contention_draws_no_handoff() {
    let (evs, _) = trace_of(UNCONTENDED, None);
    assert!(arrows(&evs).is_empty());
    assert!(!evs.iter().any(|e| e["name"].as_str().is_some_and(|n| n.starts_with("release: ") || n.starts_with("resume: "))));
    // It did take its locks: kernel time under the kernel lock, mmap and munmap.
    assert!(evs.iter().filter(|e| e["name"] == "kernel").count() > 100);
}

#[test]
fn contended_handoffs_pair_up_in_whole_and_windowed_traces_and_repeat_byte_for_byte() {
    let (evs, json) = trace_of(CONTENDED, None);
    let all = arrows(&evs);
    let names = vm_names(&evs);
    let kinds: BTreeMap<&str, usize> = all.iter().fold(BTreeMap::new(), |mut m, a| {
        *m.entry(a.s.1["name"].as_str().unwrap()).or_default() += 1;
        m
    });
    for kind in ["spinlock hand-off", "mutex wake", "mmap_sem hand-off"] {
        assert!(kinds.get(kind).is_some_and(|&n| n >= 5), "{kind}: {kinds:?}");
    }
    for a in &all {
        assert!(on_a_pcpu(&evs, &names, track(a.s.1), ns(a.s.1, "ts")), "the releaser runs: {}", a.s.1);
        assert!(on_a_pcpu(&evs, &names, track(a.f.1), ns(a.f.1, "ts")), "the waiter runs where it resumes: {}", a.f.1);
    }
    // Some waiter had its vCPU preempted and resumed only when it ran again.
    assert!(all.iter().any(|a| ns(a.f.1, "ts") > ns(a.s.1, "ts") + 1_000_000), "no hand-off waited a millisecond");
    assert_eq!(trace_of(CONTENDED, None).1, json, "the same run gives the same trace, flows included");
    // A window cuts arrows crossing its edges whole.
    let (windowed, _) = trace_of(CONTENDED, Some((10_000_000, 20_000_000)));
    let inside = arrows(&windowed);
    assert!(!inside.is_empty() && inside.len() < all.len());
    for a in &inside {
        assert!((10_000_000..20_000_000).contains(&ns(a.s.1, "ts")) && ns(a.f.1, "ts") < 20_000_000);
    }
}

#[test]
fn the_barrier_trace_stays_loadable_with_handoffs() {
    let (evs, _, _) = traced(None);
    arrows(&evs);
    let (windowed, _, _) = traced(Some((50_000_000, 60_000_000)));
    arrows(&windowed);
}
