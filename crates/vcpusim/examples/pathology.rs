//! Seed 000 section 2 / Figure 2 check: the share of CPU time an 8-vCPU VM spends spinning on
//! kernel locks or waiting for TLB-shootdown acknowledgements, solo versus corun on 8 pCPUs, per
//! policy, with two corunners: an always-busy 8-vCPU VM (`hog`, cpu-bound) and an 8-vCPU
//! streamcluster-like VM (`sc`, the `barrier` workload: seed 000 Figure 2 coruns every
//! application with streamcluster). Prints a CSV table (EXPERIMENTS.md records it).
//! `cargo run --release --example pathology [duration] [nople]`
use vcpusim::api::{load_scenario, run, RunOptions};

fn scenario(policy: &str, workload: &str, corunner: Option<&str>, duration: &str, seed: u64, ple: bool) -> String {
    let hog = match corunner {
        Some(w) => format!("[[vm]]\nname = \"corunner\"\nvcpus = 8\nworkload = \"{w}\"\n"),
        None => String::new(),
    };
    format!(
        "[host]\npcpus = 8\npolicy = \"{policy}\"\n[host.ple]\nenabled = {ple}\n[[vm]]\nname = \"app\"\nvcpus = 8\nworkload = \"{workload}\"\n{hog}[run]\nduration = \"{duration}\"\nseed = {seed}\n"
    )
}

fn main() {
    let duration = std::env::args().nth(1).unwrap_or_else(|| "2s".into());
    let ple = std::env::args().nth(2).is_none_or(|a| a != "nople");
    println!("workload,policy,run,cpu_time_ms,spin_time_ms,tlb_wait_ms,sync_share,lhp_count,lwp_count,progress_per_s,ple_exits,resched_ipi_per_vcpu_s,tlb_ipi_per_vcpu_s,futex_waits");
    for workload in ["barrier", "mutex", "tlb"] {
        for policy in ["cfs", "credit", "gang"] {
            for (run_name, corunner) in [("solo", None), ("corun-hog", Some("cpu-bound")), ("corun-sc", Some("barrier"))] {
                let text = scenario(policy, workload, corunner, &duration, 1, ple);
                let sc = load_scenario(&text, "<pathology>").expect("valid scenario");
                let out = run(&sc, &RunOptions::default()).expect("run succeeds");
                let header: Vec<&str> = out.vms_csv.lines().next().unwrap().split(',').collect();
                let row: Vec<&str> = out.vms_csv.lines().nth(1).unwrap().split(',').collect();
                let col = |name: &str| row[header.iter().position(|h| *h == name).unwrap()].parse::<f64>().unwrap();
                let cpu = col("cpu_time_ms");
                let share = (col("spin_time_ms") + col("tlb_wait_ms")) / cpu.max(1e-9);
                let secs = sc.run.duration as f64 / 1e9;
                println!(
                    "{workload},{policy},{},{cpu:.1},{:.1},{:.1},{share:.4},{},{},{:.1},{},{:.0},{:.0},{}",
                    run_name,
                    col("spin_time_ms"),
                    col("tlb_wait_ms"),
                    col("lhp_count"),
                    col("lwp_count"),
                    col("progress") / secs,
                    col("ple_exit_count"),
                    col("ipi_resched_count") / secs / 8.0,
                    col("ipi_tlb_count") / secs / 8.0,
                    col("futex_waits")
                );
            }
        }
    }
}
