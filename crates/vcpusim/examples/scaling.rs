//! Events/s as the host grows (issue 15's scaling check), and the one run that
//! `benches/instructions.py` counts instructions of.
//!
//! The scenario is the scaling table's (`vcpusim::bench::scaling_scenario`: the quickstart mix,
//! one 8-vCPU barrier VM beside four 1-vCPU CPU-bound VMs per 8 pCPUs, or a policy with one of
//! the seeds' mechanisms, `credit+microsliced` and so on).
//!
//! - `cargo run --release -p vcpusim --example scaling -- [POLICIES] [PCPUS] [SIM_MS_AT_8]`, e.g.
//!   `-- cfs,credit,gang,hybrid 8,64,256,1024 800`: one line per (policy, pCPUs) with events,
//!   wall seconds, events/s and ns per event, the simulated time shrinking as the host grows so
//!   every run does a similar amount of work.
//! - `... --example scaling -- --one POLICY PCPUS DURATION` (DURATION as in a scenario, `100ms`):
//!   runs that one scenario without writing a report and prints `events N stale S`.
//!
//! Not a test: speed is never asserted. Bad arguments end with a message and exit status 2.

use std::process::exit;
use std::time::Instant;

fn fail(message: String) -> ! {
    eprintln!("scaling: {message}");
    exit(2)
}

fn scenario(policy: &str, pcpus: &str, duration: &str) -> vcpusim::scenario::spec::Scenario {
    let pcpus: u32 = pcpus.parse().unwrap_or_else(|_| fail(format!("pCPU count {pcpus:?}: expected a positive multiple of 8")));
    let duration = vcpusim::time::parse_duration(duration).unwrap_or_else(|e| fail(format!("duration {duration:?}: {e}")));
    vcpusim::bench::scaling_scenario(policy, pcpus, duration).unwrap_or_else(|e| fail(e.to_string()))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).is_some_and(|a| a == "--one") {
        let [policy, pcpus, duration] = &args[2..] else { fail("--one takes POLICY PCPUS DURATION, e.g. --one cfs 1024 100ms".into()) };
        let sc = scenario(policy, pcpus, duration);
        match vcpusim::bench::count_events(&sc) {
            Ok((events, stale)) => println!("events {events} stale {stale}"),
            Err(e) => {
                eprintln!("{e}");
                exit(1)
            }
        }
        return;
    }
    let policies = args.get(1).map(String::as_str).unwrap_or("cfs,credit,gang,hybrid");
    let sizes = args.get(2).map(String::as_str).unwrap_or("8,64,256,1024");
    let sim_ms_at_8: u64 =
        args.get(3).map_or(800, |s| s.parse().unwrap_or_else(|_| fail(format!("SIM_MS_AT_8 {s:?}: expected milliseconds"))));
    println!("{:<8} {:>6} {:>8} {:>12} {:>8} {:>12} {:>10}", "policy", "pcpus", "sim_ms", "events", "wall_s", "events/s", "ns/event");
    for policy in policies.split(',') {
        for p in sizes.split(',') {
            let pcpus: u64 = p.parse().unwrap_or_else(|_| fail(format!("pCPU count {p:?}: expected a positive multiple of 8")));
            let sim_ms = (sim_ms_at_8 * 8 / pcpus.max(1)).max(20);
            let sc = scenario(policy, p, &format!("{sim_ms}ms"));
            let t = Instant::now();
            let out = vcpusim::api::run(&sc, &vcpusim::api::RunOptions::default()).unwrap_or_else(|e| fail(e.to_string()));
            let wall = t.elapsed().as_secs_f64();
            let summary: serde_json::Value = serde_json::from_str(&out.summary_json).expect("the report's summary is JSON");
            let events = summary["events"].as_u64().expect("the summary counts events");
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
