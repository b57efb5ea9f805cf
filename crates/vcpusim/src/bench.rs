//! The standard benchmark behind `vcpusim bench`: how fast the engine simulates the quickstart
//! scenario, compared with the cheapest possible event loop on the same machine, and whether
//! memory stays flat as simulated time grows (it must: tracing off, results are aggregates).
//!
//! Wall-clock time is measured here and only here; it never feeds back into a simulation.

use crate::api::{self, RunOptions};
use crate::error::SimError;
use crate::scenario::spec::Scenario;
use crate::time::{Nanos, SEC};
use serde::Serialize;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Instant;

/// The scenario the benchmark runs: the same file users start from.
pub const QUICKSTART_TOML: &str = include_str!("../../../scenarios/quickstart.toml");
pub const QUICKSTART_SOURCE: &str = "scenarios/quickstart.toml";

#[derive(Clone, Debug)]
pub struct BenchOptions {
    /// Simulated duration of the timed run; `None` keeps the scenario's own `[run] duration`.
    pub duration: Option<Nanos>,
    /// Simulated durations (short, long) of the memory-flatness runs; `None` skips the check.
    pub memory_durations: Option<(Nanos, Nanos)>,
    /// How many times the timed run is repeated (the quickstart takes ~0.15 s in a release
    /// build: one run alone is too short to time reliably). At least 1.
    pub repeats: u32,
}

impl Default for BenchOptions {
    fn default() -> Self {
        BenchOptions { duration: None, memory_durations: Some((10 * SEC, 40 * SEC)), repeats: 5 }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct BenchReport {
    pub scenario: String,
    /// "release" or "debug": numbers from a debug build are not comparable.
    pub build_profile: String,
    /// Times the timed run was repeated; the figures below are per run, rates over all runs.
    pub repeats: u32,
    pub sim_time_ns: u64,
    /// Mean wall time of one run.
    pub wall_time_s: f64,
    pub events: u64,
    pub events_per_s: f64,
    pub sim_seconds_per_wall_second: f64,
    /// The same number of push/pop pairs on a bare binary heap (no simulation work at all).
    pub bare_heap_events_per_s: f64,
    /// `events_per_s / bare_heap_events_per_s`: the share of raw queue speed the engine keeps.
    pub events_per_s_vs_bare_heap: f64,
    /// Peak resident set size of this process so far (VmHWM), when /proc/self/status has it.
    pub peak_rss_kib: Option<u64>,
    pub memory: Option<MemoryFlatness>,
}

impl BenchReport {
    /// Pretty JSON, the form `vcpusim bench --json` prints.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a report of numbers and strings serializes")
    }
}

/// Peak RSS after a short and after a long run of the same scenario. With tracing off, memory
/// must not grow with simulated time, so `growth_kib` should stay near zero.
#[derive(Clone, Debug, Serialize)]
pub struct MemoryFlatness {
    pub short_sim_time_ns: u64,
    pub long_sim_time_ns: u64,
    pub short_events: u64,
    pub long_events: u64,
    pub peak_rss_after_short_kib: Option<u64>,
    pub peak_rss_after_long_kib: Option<u64>,
    pub growth_kib: Option<i64>,
}

/// Run the standard benchmark on the quickstart scenario.
pub fn run_standard(options: &BenchOptions) -> Result<BenchReport, SimError> {
    let scenario = api::load_scenario(QUICKSTART_TOML, QUICKSTART_SOURCE)?;
    run_on(&scenario, options)
}

/// Run the benchmark on any scenario (tests use a small one).
pub fn run_on(scenario: &Scenario, options: &BenchOptions) -> Result<BenchReport, SimError> {
    // The memory check runs first: VmHWM only ever grows, so a longer timed run before it would
    // hide the growth it looks for.
    let memory = match options.memory_durations {
        Some((short, long)) => Some(memory_flatness(scenario, short, long)?),
        None => None,
    };

    let mut timed = scenario.clone();
    if let Some(duration) = options.duration {
        timed.run.duration = duration;
    }
    let repeats = options.repeats.max(1);
    let start = Instant::now();
    let facts = run_quietly(&timed)?;
    for _ in 1..repeats {
        run_quietly(&timed)?; // deterministic: every repeat does the same work
    }
    let wall_time_s = (start.elapsed().as_secs_f64() / repeats as f64).max(1e-9);

    let pending = timed.host.topology.npcpus() as u64 + timed.vms.iter().map(|v| v.vcpus as u64).sum::<u64>();
    let bare_heap_events_per_s = bare_heap_events_per_s(facts.events, pending);
    let events_per_s = facts.events as f64 / wall_time_s;

    Ok(BenchReport {
        scenario: scenario.source.clone(),
        build_profile: if cfg!(debug_assertions) { "debug" } else { "release" }.to_string(),
        repeats,
        sim_time_ns: facts.sim_time_ns,
        wall_time_s,
        events: facts.events,
        events_per_s,
        sim_seconds_per_wall_second: facts.sim_time_ns as f64 / SEC as f64 / wall_time_s,
        bare_heap_events_per_s,
        events_per_s_vs_bare_heap: if bare_heap_events_per_s > 0.0 { events_per_s / bare_heap_events_per_s } else { 0.0 },
        peak_rss_kib: peak_rss_kib(),
        memory,
    })
}

/// What the benchmark needs from one run's summary.
struct RunFacts {
    events: u64,
    sim_time_ns: u64,
}

fn run_quietly(scenario: &Scenario) -> Result<RunFacts, SimError> {
    let output = api::run(scenario, &RunOptions::default())?;
    let summary: serde_json::Value = serde_json::from_str(&output.summary_json).map_err(|e| internal(format!("summary.json is not JSON: {e}")))?;
    let integer = |key: &str| {
        summary
            .get(key)
            .and_then(|v| v.as_u64())
            .ok_or_else(|| internal(format!("summary.json has no integer {key:?}")))
    };
    Ok(RunFacts { events: integer("events")?, sim_time_ns: integer("sim_time_ns")? })
}

fn internal(message: String) -> SimError {
    SimError::Invariant { time_ns: 0, message }
}

fn memory_flatness(scenario: &Scenario, short: Nanos, long: Nanos) -> Result<MemoryFlatness, SimError> {
    let mut run = scenario.clone();
    // A run ends early once every VM with `iterations` reached them (the quickstart's parallel VM
    // does in ~3 simulated seconds); without targets both runs last their whole duration, so the
    // long one really simulates 4x the time.
    for vm in &mut run.vms {
        vm.iterations = None;
    }
    run.run.duration = short;
    let short_facts = run_quietly(&run)?;
    let after_short = peak_rss_kib();
    run.run.duration = long;
    let long_facts = run_quietly(&run)?;
    let after_long = peak_rss_kib();
    Ok(MemoryFlatness {
        short_sim_time_ns: short_facts.sim_time_ns,
        long_sim_time_ns: long_facts.sim_time_ns,
        short_events: short_facts.events,
        long_events: long_facts.events,
        peak_rss_after_short_kib: after_short,
        peak_rss_after_long_kib: after_long,
        growth_kib: match (after_short, after_long) {
            (Some(a), Some(b)) => Some(b as i64 - a as i64),
            _ => None,
        },
    })
}

/// Speed of the simplest discrete-event loop: `events` pop/push pairs on a binary heap holding
/// `pending` future events (as many as the scenario has pCPUs + vCPUs, roughly the timers an
/// engine keeps). Each popped event schedules its successor a pseudo-random delay later.
pub fn bare_heap_events_per_s(events: u64, pending: u64) -> f64 {
    let start = Instant::now();
    let processed = bare_heap_loop(events, pending);
    std::hint::black_box(processed);
    let wall = start.elapsed().as_secs_f64().max(1e-9);
    events as f64 / wall
}

/// The loop itself; returns the time of the last event so the work cannot be optimized away.
pub fn bare_heap_loop(events: u64, pending: u64) -> u64 {
    let pending = pending.max(1);
    let mut heap: BinaryHeap<Reverse<(u64, u64)>> = BinaryHeap::with_capacity(pending as usize + 1);
    // A fixed xorshift stream: the delays only need to scatter the heap, not be "random".
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next_delay = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        1 + state % 1_000_000
    };
    for seq in 0..pending {
        heap.push(Reverse((next_delay(), seq)));
    }
    let mut now = 0;
    for seq in pending..pending + events {
        let Reverse((time, _)) = heap.pop().expect("the heap never empties: every pop pushes one");
        now = time;
        heap.push(Reverse((std::hint::black_box(time + next_delay()), seq)));
    }
    now
}

/// Peak resident set size (VmHWM) of this process, in KiB; `None` where /proc is absent.
pub fn peak_rss_kib() -> Option<u64> {
    std::fs::read_to_string("/proc/self/status").ok().and_then(|s| parse_vm_hwm_kib(&s))
}

fn parse_vm_hwm_kib(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line["VmHWM:".len()..].trim().trim_end_matches("kB").trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_heap_processes_events_in_time_order() {
        // With one pending event the loop is a chain: the last time is the sum of all delays,
        // so it grows with the number of events processed.
        let short = bare_heap_loop(10, 1);
        let long = bare_heap_loop(1000, 1);
        assert!(long > short, "{long} <= {short}");
        // Determinism: the same inputs give the same final time.
        assert_eq!(bare_heap_loop(500, 16), bare_heap_loop(500, 16));
        assert!(bare_heap_events_per_s(10_000, 16) > 0.0);
    }

    #[test]
    fn parses_vm_hwm_from_proc_status() {
        let status = "Name:\tx\nVmPeak:\t  2000 kB\nVmHWM:\t    1234 kB\nVmRSS:\t 1000 kB\n";
        assert_eq!(parse_vm_hwm_kib(status), Some(1234));
        assert_eq!(parse_vm_hwm_kib("Name:\tx\n"), None);
        if cfg!(target_os = "linux") {
            assert!(peak_rss_kib().unwrap() > 0);
        }
    }

    #[test]
    fn default_options_check_memory_over_10_and_40_simulated_seconds() {
        let options = BenchOptions::default();
        assert_eq!(options.memory_durations, Some((10 * SEC, 40 * SEC)));
        assert_eq!(options.duration, None);
        assert!(options.repeats >= 1);
    }

    #[test]
    fn standard_bench_reports_consistent_rates() {
        // Needs the engine; a short timed run and a tiny memory check keep it quick in debug.
        let options = BenchOptions { duration: Some(SEC / 5), memory_durations: Some((SEC / 20, SEC / 5)), repeats: 2 };
        let report = run_standard(&options).expect("the quickstart scenario runs");
        assert!(report.sim_time_ns > 0 && report.sim_time_ns <= SEC / 5, "{}", report.sim_time_ns);
        assert!(report.events > 0);
        let expected_rate = report.events as f64 / report.wall_time_s;
        assert!((report.events_per_s - expected_rate).abs() <= 1e-6 * expected_rate);
        assert!(report.events_per_s_vs_bare_heap > 0.0);
        assert_eq!(report.repeats, 2);
        let memory = report.memory.as_ref().expect("memory check requested");
        assert_eq!((memory.short_sim_time_ns, memory.long_sim_time_ns), (SEC / 20, SEC / 5));
        assert!(memory.long_events > memory.short_events);
        let json = report.to_json();
        assert!(json.contains("\"events_per_s\""));
    }
}
