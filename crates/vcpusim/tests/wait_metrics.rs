//! Runnable-wait (steal) time and scheduling latency on hand-built hosts
//! whose waits are known: the definitions are in docs/model.md §9 and the columns in
//! docs/scenario-format.md ("Output files").

mod common;

use common::{num, run_toml, vm_table};
use std::collections::BTreeMap;

/// metrics.csv as VM -> metric -> value.
fn metrics(out: &vcpusim::api::RunOutput) -> BTreeMap<String, BTreeMap<String, f64>> {
    let mut m: BTreeMap<String, BTreeMap<String, f64>> = BTreeMap::new();
    for line in out.metrics_csv.lines().skip(1) {
        let mut cells = line.splitn(3, ',');
        let (vm, metric, value) = (cells.next().unwrap(), cells.next().unwrap(), cells.next().unwrap());
        m.entry(vm.to_string()).or_default().insert(metric.to_string(), value.parse().unwrap());
    }
    m
}

#[test]
fn two_busy_vms_on_one_pcpu_under_credit_each_wait_one_slice_per_slice_run() {
    // Two always-busy 1-vCPU VMs of equal weight share one pCPU; Credit gives each a 30 ms slice
    // in turn, so each vCPU waits one 30 ms slice (the other's) for every slice it runs, and is
    // runnable for the whole run: on a pCPU or waiting.
    let text = "[host]\npcpus = 1\npolicy = \"credit\"\nstart_skew = \"0ns\"\n\
                [[vm]]\nname = \"a\"\nvcpus = 1\nworkload = \"cpu-bound\"\n\
                [[vm]]\nname = \"b\"\nvcpus = 1\nworkload = \"cpu-bound\"\n\
                [run]\nduration = \"3s\"\n";
    let out = run_toml(text, true);
    let t = vm_table(&out);
    let m = metrics(&out);
    for vm in ["a", "b"] {
        let (cpu, steal) = (num(&t, vm, "cpu_time_ms"), num(&t, vm, "steal_time_ms"));
        // Always runnable: every nanosecond of the run is either on the pCPU or a runnable wait.
        assert!((cpu + steal - 3000.0).abs() < 0.0015, "{vm}: cpu {cpu} + steal {steal} != 3000 ms");
        assert!((steal - 1500.0).abs() <= 30.0, "{vm}: steal {steal} ms, expected half the run");
        assert!((num(&t, vm, "steal_share") - 0.5).abs() <= 0.01, "{vm}");
        let waits = &m[vm];
        // Each wait is the other VM's 30 ms slice (plus its 3 us context switch); the quantiles
        // are the lower edges of ~9%-wide buckets, so 30 ms reads as 29.36 ms.
        for q in ["p50", "p90", "p99"] {
            let w = waits[&format!("runnable_wait_{q}_us")];
            assert!((27_500.0..=30_010.0).contains(&w), "{vm}: runnable_wait_{q}_us = {w}");
        }
        assert!((waits["runnable_wait_mean_us"] - 30_000.0).abs() < 1_000.0, "{vm}: {waits:?}");
        // One wait per slice it ran (the first run of b waits for a's first slice too).
        let count = waits["runnable_wait_count"];
        assert!((count - num(&t, vm, "switches_in")).abs() < 0.5, "{vm}: {count} waits, {} switches in", num(&t, vm, "switches_in"));
        assert!((count - 50.0).abs() <= 1.0, "{vm}: {count} waits of 30 ms in 3 s");
        // Neither ever halts, so neither is ever woken: no scheduling latency.
        assert_eq!(waits["sched_latency_count"], 0.0);
        assert_eq!(waits["steal_time_ms[v0]"], steal, "one vCPU: its steal is the VM's");
    }
}

/// A producer and a consumer in one 2-vCPU VM: the consumer's vCPU halts on an empty queue and
/// is woken by the producer's reschedule IPI every 1 ms; `hog` (if any) keeps the host busy.
/// `pc` weighs twice `hog` so that its ~1.1 pCPUs of demand stay under its 4/3 share: its vCPUs
/// stay at Credit's UNDER priority and every wake-up is boosted (an OVER wakee is not boosted,
/// `csched_vcpu_wake`, and may wait a whole 30 ms slice).
fn pipeline(policy: &str, hog_vcpus: u32) -> String {
    let hog =
        if hog_vcpus > 0 { format!("[[vm]]\nname = \"hog\"\nvcpus = {hog_vcpus}\nworkload = \"cpu-bound\"\n") } else { String::new() };
    format!(
        "[host]\npcpus = 2\npolicy = \"{policy}\"\nstart_skew = \"0ns\"\n\
         [[vm]]\nname = \"pc\"\nvcpus = 2\nweight = 512\nworkload = \"program\"\n\
         [vm.program]\nqueues = [1]\nthreads = [[{{loop = \"forever\", body = [{{compute = \"1ms\"}}, {{put = 0}}]}}], \
         [{{loop = \"forever\", body = [{{get = 0}}, {{compute = \"100us\"}}]}}]]\n\
         {hog}[run]\nduration = \"2s\"\n"
    )
}

#[test]
fn a_woken_vcpu_with_an_idle_pcpu_runs_at_once() {
    // Nothing else on the host: the consumer's vCPU is woken onto its idle pCPU in the same
    // instant (the policy's wake reschedules it synchronously), so every latency is 0.
    for policy in ["credit", "cfs"] {
        let out = run_toml(&pipeline(policy, 0), true);
        let m = &metrics(&out)["pc"];
        let wakeups = m["wakeups"];
        assert!(wakeups > 1000.0, "{policy}: {wakeups} wake-ups in 2 s of 1 ms hand-offs");
        assert_eq!(m["sched_latency_count"], wakeups, "{policy}: one latency per wake-up that ran");
        assert_eq!(m["sched_latency_max_us"], 0.0, "{policy}: {m:?}");
        assert_eq!(num(&vm_table(&out), "pc", "sched_latency_p99_us"), 0.0);
    }
}

#[test]
fn a_woken_vcpu_behind_a_busy_vcpu_waits_and_its_latency_is_part_of_its_steal() {
    // Two hog vCPUs keep both pCPUs busy: a woken vCPU now waits for a pCPU (Credit boosts it,
    // but the ratelimit of 1 ms keeps a hog that has just started), so latencies are positive,
    // and every latency is one of its runnable waits.
    let out = run_toml(&pipeline("credit", 2), true);
    let m = &metrics(&out)["pc"];
    let t = vm_table(&out);
    assert!(m["sched_latency_count"] > 100.0, "{m:?}");
    assert!(m["sched_latency_max_us"] > 0.0, "{m:?}");
    // A boosted wakee preempts a hog as soon as the hog has run its ratelimit (1 ms, Xen's
    // sched_ratelimit_us default): no wake-up waits longer (the context switch comes after).
    assert!(m["sched_latency_max_us"] <= 1_000.0, "{m:?}");
    assert!(m["sched_latency_p50_us"] > 100.0, "{m:?}");
    assert!(m["sched_latency_count"] <= m["runnable_wait_count"]);
    assert!(m["sched_latency_max_us"] <= m["runnable_wait_max_us"]);
    // The VM's steal is the sum over its vCPUs.
    let per_vcpu = m["steal_time_ms[v0]"] + m["steal_time_ms[v1]"];
    assert!((per_vcpu - num(&t, "pc", "steal_time_ms")).abs() < 0.0015, "{per_vcpu} vs {}", num(&t, "pc", "steal_time_ms"));
    // Waits are runnable time only: cpu + steal of a VM fits in its vCPUs × the run.
    for vm in ["pc", "hog"] {
        let total = num(&t, vm, "cpu_time_ms") + num(&t, vm, "steal_time_ms");
        assert!(total <= 2.0 * 2000.0 + 0.002, "{vm}: {total}");
    }
    // The hogs never halt: always runnable, so cpu + steal is exactly 2 vCPUs × 2 s.
    let hog = num(&t, "hog", "cpu_time_ms") + num(&t, "hog", "steal_time_ms");
    assert!((hog - 4000.0).abs() < 0.003, "hog: {hog}");
}

/// PARSEC streamcluster's barrier (`parsec_barrier_wait`, docs/model.md "PARSEC barrier") in an
/// 8-vCPU VM on 8 pCPUs, alone or beside an 8-vCPU hog under cfs, with `[run] barrier_waits`.
fn streamcluster(wait: &str, hog: bool, report: bool) -> String {
    let hog = if hog { "[[vm]]\nname = \"hog\"\nvcpus = 8\nworkload = \"cpu-bound\"\n" } else { "" };
    format!(
        "[host]\npcpus = 8\npolicy = \"cfs\"\n\
         [[vm]]\nname = \"sc\"\nvcpus = 8\nworkload = \"parsec.streamcluster\"\nparams = {{ wait = \"{wait}\" }}\n\
         {hog}[run]\nduration = \"300ms\"\nbarrier_waits = {report}\n"
    )
}

#[test]
fn barrier_waits_count_the_parsec_barriers_block_waits_by_phase_and_only_when_asked() {
    // Block-only: each of the seven threads that arrive before the last blocks once in the
    // arrival phase; no wake-up ever comes before the phase changes (the one condition variable
    // is broadcast only when the phase changes), so arrivals are 7 per barrier, give or take the
    // barrier the run ends in. Progress is thread 0's count of barriers.
    let out = run_toml(&streamcluster("block", false, true), true);
    let m = metrics(&out);
    let phases = num(&vm_table(&out), "sc", "progress");
    let arrival = m["sc"]["barrier_waits[arrival]"];
    assert!(phases > 300.0, "{phases} barriers in 300 ms");
    assert!((arrival - 7.0 * phases).abs() <= 8.0, "{arrival} arrival waits for {phases} barriers");
    // Departure waits: a thread back at the barrier while the previous use's leavers still hold
    // it up. Alone, the seven hand-offs of the mutex after the last arrival are over long before
    // the first leaver has done its next 233-433 us of work; beside a hog that preempts the
    // leavers, they are not.
    let solo = m["sc"]["barrier_waits[departure]"];
    let beside = metrics(&run_toml(&streamcluster("block", true, true), true))["sc"]["barrier_waits[departure]"];
    assert!(beside > 10.0 && beside > 5.0 * solo.max(1.0), "departure waits: {solo} alone, {beside} beside a hog");
    // Asked for nothing, the run reports nothing new (every other run keeps its bytes).
    let plain = run_toml(&streamcluster("block", false, false), true);
    assert!(!plain.metrics_csv.contains("barrier_waits"));
    assert_eq!(plain.vms_csv, out.vms_csv, "counting changes no result");
}
