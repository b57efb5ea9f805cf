//! Events/s as the host grows (issue 15's scaling check): the quickstart mix (one 8-vCPU barrier
//! VM beside four 1-vCPU CPU-bound VMs per 8 pCPUs) replicated to fill 8 .. 1024 pCPUs, under
//! each policy, for a simulated time that shrinks as the host grows so every run does a similar
//! amount of work.
//!
//! `cargo run --release -p vcpusim --example scaling -- [POLICIES] [PCPUS] [SIM_MS_AT_8]`
//! e.g. `-- cfs,credit,gang,hybrid 8,64,256,1024 800`. Prints one line per (policy, pCPUs):
//! events, wall seconds, events/s and ns per event. Not a test: speed is never asserted.

use std::time::Instant;

fn scenario(policy: &str, pcpus: u32, sim_ms: u64) -> String {
    let groups = pcpus / 8;
    format!(
        r#"
[host]
pcpus = {pcpus}
policy = "{policy}"

[[vm]]
name = "parallel"
count = {groups}
vcpus = 8
workload = "barrier"
threads = 8

[[vm]]
name = "seq"
count = {seq}
vcpus = 1
workload = "cpu-bound"

[run]
duration = "{sim_ms}ms"
seed = 1
"#,
        seq = groups * 4
    )
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let policies = args.get(1).map(String::as_str).unwrap_or("cfs,credit,gang,hybrid");
    let sizes = args.get(2).map(String::as_str).unwrap_or("8,64,256,1024");
    let sim_ms_at_8: u64 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(800);
    println!("{:<8} {:>6} {:>8} {:>12} {:>8} {:>12} {:>10}", "policy", "pcpus", "sim_ms", "events", "wall_s", "events/s", "ns/event");
    for policy in policies.split(',') {
        for p in sizes.split(',') {
            let pcpus: u32 = p.parse().expect("pCPU count");
            let sim_ms = (sim_ms_at_8 * 8 / pcpus as u64).max(20);
            let text = scenario(policy, pcpus, sim_ms);
            let sc = vcpusim::api::load_scenario(&text, "scaling.toml").expect("scenario loads");
            let t = Instant::now();
            let out = vcpusim::api::run(&sc, &vcpusim::api::RunOptions::default()).expect("run");
            let wall = t.elapsed().as_secs_f64();
            let summary: serde_json::Value = serde_json::from_str(&out.summary_json).expect("summary");
            let events = summary["events"].as_u64().expect("events");
            println!(
                "{:<8} {:>6} {:>8} {:>12} {:>8.2} {:>12.0} {:>10.0}",
                policy,
                pcpus,
                sim_ms,
                events,
                wall,
                events as f64 / wall,
                wall * 1e9 / events as f64
            );
        }
    }
}
