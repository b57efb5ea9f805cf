//! One run of the scaling table's scenario (`vcpusim::bench::scaling_scenario`: the quickstart
//! mix, one 8-vCPU barrier VM beside four 1-vCPU CPU-bound VMs per 8 pCPUs, or a policy with one
//! of the seeds' mechanisms, `credit+microsliced` and so on), without writing a report; prints
//! `events N stale S`. `benches/instructions.py` runs it under cachegrind to count instructions
//! per event; the timed scaling table is `cargo bench -p vcpusim --bench bench -- --scaling`.
//!
//! `cargo run --release -p vcpusim --example scaling -- POLICY PCPUS DURATION`, e.g.
//! `-- cfs 1024 100ms` (DURATION as in a scenario). Bad arguments end with a message and exit
//! status 2.

use std::process::exit;

fn fail(message: String) -> ! {
    eprintln!("scaling: {message}");
    exit(2)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, policy, pcpus, duration] = &args[..] else { fail("expected POLICY PCPUS DURATION, e.g. cfs 1024 100ms".into()) };
    let pcpus: u32 = pcpus.parse().unwrap_or_else(|_| fail(format!("pCPU count {pcpus:?}: expected a positive multiple of 8")));
    let duration = vcpusim::time::parse_duration(duration).unwrap_or_else(|e| fail(format!("duration {duration:?}: {e}")));
    let scenario = vcpusim::bench::scaling_scenario(policy, pcpus, duration).unwrap_or_else(|e| fail(e.to_string()));
    match vcpusim::bench::count_events(&scenario) {
        Ok((events, stale)) => println!("events {events} stale {stale}"),
        Err(e) => {
            eprintln!("{e}");
            exit(1)
        }
    }
}
