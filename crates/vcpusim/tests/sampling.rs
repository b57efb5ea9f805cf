//! `[run] sample_every`: the CPU-usage time series in `metrics.csv` (`pcpu_time_ms[<t>s]` rows).

mod common;
use common::*;

/// Seed 004 section 6.2's Figure 8 setup in small: an idle manager VM (weight 256) beside a
/// capped, always-busy VM of weight 128 on 8 pCPUs, under `policy` (CFS has no caps: uncapped).
fn capped_pair(policy: &str, sampling: &str) -> String {
    let params = if policy == "cfs" { "" } else { "[host.params]\nwork_conserving = false\n" };
    format!(
        "[host]\npcpus = 8\npolicy = \"{policy}\"\n{params}\
         [[vm]]\nname = \"dom0\"\nvcpus = 8\nweight = 256\nworkload = \"idle\"\n\
         [[vm]]\nname = \"v1\"\nvcpus = 4\nweight = 128\nworkload = \"cpu-bound\"\n\
         [run]\nduration = \"5s\"\n{sampling}"
    )
}

/// (instant in s, cumulative pCPU ms) of `vm`'s samples, in file order.
fn samples(metrics_csv: &str, vm: &str) -> Vec<(f64, f64)> {
    metrics_csv
        .lines()
        .filter_map(|line| {
            let mut cols = line.splitn(3, ',');
            let (name, metric, value) = (cols.next()?, cols.next()?, cols.next()?);
            let at = metric.strip_prefix("pcpu_time_ms[")?.strip_suffix("s]")?;
            (name == vm).then(|| (at.parse().unwrap(), value.parse().unwrap()))
        })
        .collect()
}

#[test]
fn every_interval_is_sampled_and_the_last_sample_is_the_vms_cpu_time() {
    for policy in ["credit", "hybrid"] {
        let out = run_toml(&capped_pair(policy, "sample_every = \"250ms\"\n"), false);
        let s = samples(&out.metrics_csv, "v1");
        let instants: Vec<f64> = s.iter().map(|(t, _)| *t).collect();
        let want: Vec<f64> = (1..=20).map(|k| k as f64 * 0.25).collect();
        assert_eq!(instants, want, "{policy}");
        // Cumulative, and no interval holds more than the VM's 4 vCPUs can run.
        let mut last = 0.0;
        for (_, ms) in &s {
            assert!(*ms >= last && ms - last <= 4.0 * 250.0 + 1e-6, "{policy}: {s:?}");
            last = *ms;
        }
        let cpu = num(&vm_table(&out), "v1", "cpu_time_ms");
        assert!((last - cpu).abs() < 1.0, "{policy}: last sample {last} ms vs cpu_time_ms {cpu}");
        // The idle VM has a series too, near zero.
        assert_eq!(samples(&out.metrics_csv, "dom0").len(), 20);
    }
}

#[test]
fn the_capped_vms_share_holds_second_by_second_as_in_figure_8() {
    // Theory: 128 / (128 + 256) of 8 pCPUs = 2.67 pCPUs = 2667 ms of pCPU time per second.
    for policy in ["credit", "hybrid"] {
        let out = run_toml(&capped_pair(policy, "sample_every = \"1s\"\n"), false);
        let s = samples(&out.metrics_csv, "v1");
        let mut last = 0.0;
        for (t, ms) in s {
            let share = (ms - last) / (8.0 * 1000.0);
            assert!((share - 1.0 / 3.0).abs() < 0.03, "{policy}: share {share:.3} in the second ending at {t} s");
            last = ms;
        }
    }
}

#[test]
fn sampling_changes_nothing_else() {
    for policy in ["credit", "hybrid", "cfs"] {
        let plain = run_toml(&capped_pair(policy, ""), false);
        let sampled = run_toml(&capped_pair(policy, "sample_every = \"10ms\"\n"), false);
        assert_eq!(plain.vms_csv, sampled.vms_csv, "{policy}");
        assert_eq!(plain.summary_json, sampled.summary_json, "{policy}");
        let unsampled_rows: Vec<&str> = sampled.metrics_csv.lines().filter(|l| !l.contains(",pcpu_time_ms[")).collect();
        assert_eq!(plain.metrics_csv.lines().collect::<Vec<_>>(), unsampled_rows, "{policy}");
        assert_eq!(samples(&sampled.metrics_csv, "v1").len(), 500);
    }
}

/// Seed 002's setup in small: PARSEC dedup beside a hog on 8 pCPUs under Xen 4.7 credit with
/// `micro` as the `[host.microsliced]` table (or none).
fn micro_pair(micro: &str, sampling: &str) -> String {
    format!(
        "[host]\npcpus = 8\npolicy = \"credit\"\nparams = {{ xen = \"4.7\" }}\n{micro}\
         [[vm]]\nname = \"dedup\"\nvcpus = 8\nworkload = \"parsec.dedup\"\nthreads = 8\n\
         [[vm]]\nname = \"hog\"\nvcpus = 8\nworkload = \"cpu-bound\"\n\
         [run]\nduration = \"500ms\"\n{sampling}"
    )
}

/// (instant in s, micro pool pCPUs) of `vm`'s `micro_pool_pcpus[<t>s]` rows, in file order.
fn micro_samples(metrics_csv: &str, vm: &str) -> Vec<(f64, u32)> {
    metrics_csv
        .lines()
        .filter_map(|line| {
            let mut cols = line.splitn(3, ',');
            let (name, metric, value) = (cols.next()?, cols.next()?, cols.next()?);
            let at = metric.strip_prefix("micro_pool_pcpus[")?.strip_suffix("s]")?;
            (name == vm).then(|| (at.parse().unwrap(), value.parse().unwrap()))
        })
        .collect()
}

#[test]
fn a_micro_sliced_run_samples_the_micro_pools_size() {
    // Static: the pool keeps its cores at every instant, in every VM's rows.
    let table = "[host.microsliced]\nmode = \"static\"\ncores = 2\n";
    let out = run_toml(&micro_pair(table, "sample_every = \"50ms\"\n"), false);
    let s = micro_samples(&out.metrics_csv, "dedup");
    assert_eq!(s.iter().map(|(t, _)| *t).collect::<Vec<_>>(), (1..=10).map(|k| k as f64 / 20.0).collect::<Vec<_>>());
    assert!(s.iter().all(|(_, n)| *n == 2), "{s:?}");
    assert_eq!(micro_samples(&out.metrics_csv, "hog"), s, "the same host series in each VM's rows");

    // Dynamic (Algorithm 1 with a 100 ms run phase): each sample is the size summary.json's
    // `microsliced.sizes` gives at that instant (the last change before it), and the series moves.
    let table = "[host.microsliced]\nmode = \"dynamic\"\ncores = 3\nepoch = \"100ms\"\n";
    let out = run_toml(&micro_pair(table, "sample_every = \"5ms\"\n"), false);
    let summary: serde_json::Value = serde_json::from_str(&out.summary_json).unwrap();
    let changes: Vec<(u64, u32)> = summary["microsliced"]["sizes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["at_ns"].as_u64().unwrap(), c["cores"].as_u64().unwrap() as u32))
        .collect();
    let s = micro_samples(&out.metrics_csv, "dedup");
    assert_eq!(s.len(), 100);
    for (t, n) in &s {
        let at = (t * 1e9).round() as u64;
        // A change at the instant itself comes from an event at that time, after the sample.
        let want = changes.iter().rfind(|(c, _)| *c < at || *c == 0).unwrap().1;
        assert_eq!(*n, want, "at {t} s: changes {changes:?}");
    }
    let distinct: std::collections::BTreeSet<u32> = s.iter().map(|(_, n)| *n).collect();
    assert!(distinct.len() > 1, "Algorithm 1 resized the pool: {s:?}");
}

#[test]
fn micro_pool_samples_change_nothing_else_and_need_the_table() {
    let table = "[host.microsliced]\nmode = \"dynamic\"\ncores = 3\nepoch = \"100ms\"\n";
    let plain = run_toml(&micro_pair(table, ""), false);
    let sampled = run_toml(&micro_pair(table, "sample_every = \"10ms\"\n"), false);
    assert_eq!(plain.vms_csv, sampled.vms_csv);
    assert_eq!(plain.summary_json, sampled.summary_json);
    let rest: Vec<&str> =
        sampled.metrics_csv.lines().filter(|l| !l.contains(",pcpu_time_ms[") && !l.contains(",micro_pool_pcpus[")).collect();
    assert_eq!(plain.metrics_csv.lines().collect::<Vec<_>>(), rest);
    // Without [host.microsliced], sampling records no micro pool rows.
    let off = run_toml(&micro_pair("", "sample_every = \"10ms\"\n"), false);
    assert!(!off.metrics_csv.contains("micro_pool_pcpus["));
    assert_eq!(micro_samples(&sampled.metrics_csv, "hog").len(), 50);
}
