//! Weighted fairness at engine level: always-busy VMs of random weights get their entitled CPU
//! share, measured over 20 s after a 5 s warm-up (the start-up
//! transient is real scheduler behaviour: Credit's credit caps, CFS's shares windows and
//! balancing intervals). Also the 3.2 group-share effect and KVM 3.2's directed yield.
//!
//! The mixes are drawn so that an exact placement exists: every VM's vCPUs weigh the same
//! (`weight / vcpus`, integer units), and the vCPUs can be split over the pCPUs so that every
//! pCPU holds the same total weight (checked by search). On such a placement each VM gets
//! exactly its weight's share of the host, and none is entitled to more than its vCPUs can run.
//! The workload computes in 1 s chunks, so the runs are cheap (ticks and switches only).
//!
//! `fairness_holds(policy, params)` runs every mix under one policy; other policies (credit by
//! Xen version) call it with theirs.

mod common;

use common::{run_toml, Rng};
use std::collections::HashSet;

/// A mix: pCPUs, and per VM (vCPUs, per-vCPU weight units).
#[derive(Clone, Debug)]
struct Mix {
    pcpus: u32,
    vms: Vec<(u32, u32)>,
}

/// Weight of one unit: VM weight = units x vCPUs x UNIT (so 1:2:3 units on equal vCPU counts
/// give weights 1:2:3).
const UNIT: u32 = 64;

impl Mix {
    fn weights(&self) -> Vec<u32> {
        self.vms.iter().map(|&(n, u)| n * u * UNIT).collect()
    }
    /// Each VM's entitled share of the host: its weight over the total.
    fn entitlement(&self) -> Vec<f64> {
        let w = self.weights();
        let total: u32 = w.iter().sum();
        w.iter().map(|&x| x as f64 / total as f64).collect()
    }
}

/// Can vCPUs of the given unit sizes (`counts[s]` of size `s`) fill `bins` bins of exactly
/// `cap` units each? A search over how the next bin is filled, remembering dead ends.
fn partitions(counts: &mut Vec<u32>, bins: u32, cap: u32, dead: &mut HashSet<(Vec<u32>, u32)>) -> bool {
    if bins == 0 {
        return counts.iter().all(|&c| c == 0);
    }
    if dead.contains(&(counts.clone(), bins)) {
        return false;
    }
    // Fill one bin: choose how many of each size, largest first.
    fn fill(counts: &mut Vec<u32>, size: usize, left: u32, bins: u32, cap: u32, dead: &mut HashSet<(Vec<u32>, u32)>) -> bool {
        if left == 0 {
            return partitions(counts, bins - 1, cap, dead);
        }
        if size == 0 {
            return false;
        }
        let max = counts[size].min(left / size as u32);
        for k in (0..=max).rev() {
            counts[size] -= k;
            let ok = fill(counts, size - 1, left - k * size as u32, bins, cap, dead);
            counts[size] += k;
            if ok {
                return true;
            }
        }
        false
    }
    let top = counts.len() - 1;
    let ok = fill(counts, top, cap, bins, cap, dead);
    if !ok {
        dead.insert((counts.clone(), bins));
    }
    ok
}

/// Whether `mix` has a placement with the same weight on every pCPU.
fn has_exact_placement(mix: &Mix) -> bool {
    let total: u32 = mix.vms.iter().map(|&(n, u)| n * u).sum();
    if !total.is_multiple_of(mix.pcpus) {
        return false;
    }
    let cap = total / mix.pcpus;
    let max_u = mix.vms.iter().map(|&(_, u)| u).max().unwrap();
    if cap < max_u {
        return false;
    }
    let mut counts = vec![0; max_u as usize + 1];
    for &(n, u) in &mix.vms {
        counts[u as usize] += n;
    }
    partitions(&mut counts, mix.pcpus, cap, &mut HashSet::new())
}

/// A fixed example (three always-busy 4-vCPU VMs, weights 1:2:3, on 6 pCPUs), then random
/// mixes of 2-5 VMs of 1-8 vCPUs and 1-4 weight units per vCPU on 4-16 pCPUs that have an exact
/// placement, drawn from a fixed seed.
fn mixes(count: usize) -> Vec<Mix> {
    let mut out = vec![Mix { pcpus: 6, vms: vec![(4, 1), (4, 2), (4, 3)] }];
    let mut rng = Rng::new(11);
    while out.len() < count {
        let pcpus = 4 + rng.below(13) as u32;
        let nvms = 2 + rng.below(4) as usize;
        let vms: Vec<(u32, u32)> = (0..nvms).map(|_| (1 + rng.below(8) as u32, 1 + rng.below(4) as u32)).collect();
        let mix = Mix { pcpus, vms };
        // Distinct weights make it a weighted mix; an exact placement makes it attainable.
        let w = mix.weights();
        if w.iter().all(|&x| x == w[0]) || !has_exact_placement(&mix) {
            continue;
        }
        out.push(mix);
    }
    out
}

/// Cumulative pCPU ms of `vm` at `at` seconds (`[run] sample_every` rows of metrics.csv).
fn sample(metrics_csv: &str, vm: &str, at: &str) -> f64 {
    let metric = format!("pcpu_time_ms[{at}s]");
    metrics_csv
        .lines()
        .find_map(|line| {
            let mut cols = line.splitn(3, ',');
            let (name, m, value) = (cols.next()?, cols.next()?, cols.next()?);
            (name == vm && m == metric).then(|| value.parse::<f64>().expect("a number"))
        })
        .unwrap_or_else(|| panic!("no {metric} for {vm}"))
}

/// The scenario of `mix` under `policy` with `[host.params]` lines `params`.
fn scenario(mix: &Mix, policy: &str, params: &str, seed: u64) -> String {
    let mut text = format!("[host]\npcpus = {}\npolicy = \"{policy}\"\n", mix.pcpus);
    if !params.is_empty() {
        text += &format!("[host.params]\n{params}\n");
    }
    for (i, (&(n, _), w)) in mix.vms.iter().zip(mix.weights()).enumerate() {
        text +=
            &format!("\n[[vm]]\nname = \"vm{i}\"\nvcpus = {n}\nweight = {w}\nworkload = \"cpu-bound\"\nparams = {{ chunk = \"1s\" }}\n");
    }
    text += &format!("\n[run]\nduration = \"25s\"\nsample_every = \"5s\"\nseed = {seed}\n");
    text
}

/// Each VM's share of the host over [5 s, 25 s].
fn shares(mix: &Mix, policy: &str, params: &str, seed: u64) -> Vec<f64> {
    let out = run_toml(&scenario(mix, policy, params, seed), false);
    (0..mix.vms.len())
        .map(|i| {
            let vm = format!("vm{i}");
            let ms = sample(&out.metrics_csv, &vm, "25.000") - sample(&out.metrics_csv, &vm, "5.000");
            ms / (mix.pcpus as f64 * 20_000.0)
        })
        .collect()
}

/// How close a VM's share must be to its entitlement.
#[derive(Clone, Copy, Debug)]
pub enum Tolerance {
    /// Within this fraction of the entitlement (0.03: 3% of it).
    Relative(f64),
    /// Within this fraction of the host (0.03: 3 points of host share).
    Absolute(f64),
}

/// Every mix's VMs get their entitlement within `tol` under `policy` with `[host.params]`
/// lines `params`; returns the largest relative deviation seen.
pub fn fairness_holds(policy: &str, params: &str, tol: Tolerance) -> f64 {
    let mut failures = Vec::new();
    let mut worst: f64 = 0.0;
    for (k, mix) in mixes(31).iter().enumerate() {
        let got = shares(mix, policy, params, k as u64 + 1);
        for (i, (g, e)) in got.iter().zip(mix.entitlement()).enumerate() {
            worst = worst.max((g - e).abs() / e);
            let ok = match tol {
                Tolerance::Relative(r) => (g - e).abs() <= r * e,
                Tolerance::Absolute(a) => (g - e).abs() <= a,
            };
            if !ok {
                failures.push(format!("mix {k} {mix:?} vm{i}: share {g:.4}, entitled {e:.4}"));
            }
        }
    }
    assert!(failures.is_empty(), "{policy} {params} {tol:?}: {} VMs off:\n{}", failures.len(), failures.join("\n"));
    worst
}

#[test]
fn the_mixes_are_valid_and_include_the_issue_example() {
    let all = mixes(31);
    assert_eq!(all.len(), 31);
    assert_eq!(all[0].weights(), [256, 512, 768]);
    for m in &all {
        assert!((4..=16).contains(&m.pcpus) && (2..=5).contains(&m.vms.len()), "{m:?}");
        assert!(has_exact_placement(m));
        let e: f64 = m.entitlement().iter().sum();
        assert!((e - 1.0).abs() < 1e-9);
    }
    // The search refuses what cannot be split: 3 vCPUs of 2 units on 2 pCPUs (3 units each).
    assert!(!has_exact_placement(&Mix { pcpus: 2, vms: vec![(3, 2)] }));
    assert!(has_exact_placement(&Mix { pcpus: 2, vms: vec![(2, 2), (2, 1)] }));
}

/// Linux 3.2 as configured by default: every VM within 3 points of host share of its
/// entitlement. Not within 3% of it for every VM: 3.2's balancer leaves pCPU loads up to
/// `imbalance_pct` (125%) apart (`find_busiest_group`: balanced while
/// `100 x busiest <= 125 x this`), and a VM on a pCPU heavier than the average gets less than
/// its weight's share there (docs/model.md section 7.1 gives the numbers).
#[test]
fn cfs_gives_always_busy_vms_their_entitled_share() {
    let worst = fairness_holds("cfs", "", Tolerance::Absolute(0.03));
    assert!(worst < 0.15, "cfs: worst relative deviation {worst:.3}");
}

/// With the balancer's tolerance taken away (`imbalance_pct = 101`), the group shares and the
/// balancer (moving several vCPUs per pass, each group's share following its vCPUs) reach the
/// exact placement: every VM within 3% of its entitlement.
/// EEVDF (Linux 6.6) keeps the group shares of the cgroup hierarchy KVM hosts use: every mix's
/// VMs get their entitlement as under cfs (same tolerance; eevdf's balancer is 6.6's).
#[test]
fn eevdf_gives_always_busy_vms_their_entitled_share() {
    let worst = fairness_holds("eevdf", "", Tolerance::Absolute(0.03));
    assert!(worst < 0.15, "eevdf: worst relative deviation {worst:.3}");
}

#[test]
fn cfs_without_the_imbalance_margin_gives_every_vm_its_share_within_3_percent() {
    fairness_holds("cfs", "imbalance_pct = 101", Tolerance::Relative(0.03));
}

/// Linux 3.2's group shares (`calc_cfs_shares`, kernel/sched_fair.c): an 8-vCPU VM running two
/// busy threads beside an always-busy 8-vCPU VM, equal weights, on 8 pCPUs, each VM's vCPU `i`
/// pinned to pCPU `i` (so pCPU `i` holds one vCPU of each). Each VM's `tg->shares` is
/// 1024 x 8; a group entity on a pCPU weighs shares x (its run queue's load) / (the group's total
/// load). The busy VM has load 1024 on each of 8 pCPUs: 8192 x 1024 / 8192 = 1024. The two-thread
/// VM has load 1024 on 2 pCPUs only: 8192 x 1024 / 2048 = 4096. So on those two pCPUs it gets
/// 4096 / (4096 + 1024) of the time, and of the host 2 x 0.8 / 8 = 0.2. (Splitting each VM's
/// shares evenly over its vCPUs, as the flattened model did, gives 2 x 0.5 / 8 = 0.125.)
#[test]
fn a_vm_with_two_busy_vcpus_competes_with_its_whole_shares() {
    let pcpus = 8.0;
    let shares = 1024.0 * pcpus;
    let busy_gse = shares * 1024.0 / (8.0 * 1024.0);
    let two_gse = shares * 1024.0 / (2.0 * 1024.0);
    let predicted = 2.0 * two_gse / (two_gse + busy_gse) / pcpus;
    assert!((predicted - 0.2_f64).abs() < 1e-12);
    let pins = "cpus = [\"0\", \"1\", \"2\", \"3\", \"4\", \"5\", \"6\", \"7\"]\n";
    let text = format!(
        "[host]\npcpus = 8\npolicy = \"cfs\"\n\n\
         [[vm]]\nname = \"two\"\nvcpus = 8\nthreads = 2\n{pins}workload = \"cpu-bound\"\nparams = {{ chunk = \"1s\" }}\n\n\
         [[vm]]\nname = \"busy\"\nvcpus = 8\n{pins}workload = \"cpu-bound\"\nparams = {{ chunk = \"1s\" }}\n\n\
         [run]\nduration = \"25s\"\nsample_every = \"5s\"\nseed = 1\n"
    );
    let out = run_toml(&text, false);
    let share = |vm: &str| (sample(&out.metrics_csv, vm, "25.000") - sample(&out.metrics_csv, vm, "5.000")) / (pcpus * 20_000.0);
    let (two, busy) = (share("two"), share("busy"));
    assert!((two - predicted).abs() <= 0.03 * predicted, "two busy vCPUs: share {two:.4}, calc_cfs_shares predicts {predicted:.4}");
    assert!((busy - (1.0 - predicted)).abs() <= 0.03 * (1.0 - predicted), "busy VM: share {busy:.4}");
}
