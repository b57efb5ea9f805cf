//! The standard benchmark behind `vcpusim bench`: how fast the engine simulates the quickstart
//! scenario, compared with the cheapest possible event loop on the same machine, whether memory
//! stays flat as simulated time grows (it must: tracing off, results are aggregates), and, on
//! request, how the cost of an event moves with the size of the host under each policy.
//!
//! What is counted:
//! - **Live events**: events the engine handled that did something. The run's `events` (the
//!   summary's count) also holds *stale* ones, a `Dispatch`, `ActivityDone` or `PauseLoopExit`
//!   whose vCPU's epoch moved on (`Sim::stale_events`); they are reported apart, as are the
//!   cancelled queue entries popped and thrown away (`EventQueue::skipped`), which were never
//!   counted as events.
//! - **Bare heap**: the same number of pop/push pairs on a `BinaryHeap` of entries as large as
//!   the engine's own (`EventQueue::<Event>::ENTRY_BYTES`), timed once after every timed engine
//!   run (interleaved, so a slow patch of a shared machine hits both), min and median reported.
//! - **Scaling** (`scaling`): the quickstart's mix scaled with the host (one 8-vCPU barrier VM
//!   and four 1-vCPU CPU-bound VMs per 8 pCPUs), one row per pCPU count and policy: live
//!   events/s, ns per live event, the event queue's peak length, peak RSS of the run.
//!
//! - **Machine** (`machine`): the processor and its caches, since the same binary's figures
//!   differ twofold between two machines of this workplace.
//!
//! Wall-clock time is measured here and only here; it never feeds back into a simulation.

pub mod machine;

use crate::api;
use crate::build_info;
use crate::engine::event_queue::EventQueue;
use crate::error::SimError;
use crate::scenario::spec::Scenario;
use crate::sim::state::{Event, Sim};
use crate::time::{Nanos, SEC};
use serde::Serialize;
use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::time::Instant;

/// The scenario the benchmark runs: the same file users start from.
pub const QUICKSTART_TOML: &str = include_str!("../../../scenarios/quickstart.toml");
pub const QUICKSTART_SOURCE: &str = "scenarios/quickstart.toml";

/// The policies of the scaling table: cfs, credit, gang and hybrid, and eevdf beside them.
pub const SCALING_POLICIES: [&str; 5] = ["cfs", "credit", "gang", "hybrid", "eevdf"];
/// The seeds' mechanisms over a policy, for the scaling table's rows beside the policies
/// (`--scaling-policies credit+microsliced,...`): seed 002's micro-sliced cores on its Xen 4.7
/// (static, one micro core per 8 pCPUs: the seed's 12-pCPU host ran one to three, so the pool
/// grows with the host as its ratio does), seed 003's IRS on Xen 4.4 (its Xen 4.5 is not
/// modelled; 4.4 is the nearest, as in `scenarios/examples/irs.toml`; the barrier VMs' guests
/// take the notice) and its two baselines, and seed 000's UVF over cfs and over credit (the
/// overlay on, no `[vm.uvf]` feature: its per-event cost, not its effect). Not in the default table; they
/// catch a mechanism whose per-event cost grows with the host (docs/speed.md: a copy of every
/// vCPU's kernel function per policy call cost micro-sliced cores 20 times as much per event at
/// 1,024 pCPUs as at 8).
pub const SCALING_MECHANISMS: [&str; 6] =
    ["credit+microsliced", "credit+irs", "credit+relaxed-co", "credit+delay-preempt", "cfs+uvf", "credit+uvf"];
/// The scaling scenario's bare-metal machine (`scaling_scenario`).
pub const SCALING_BARE_METAL: &str = "bare-metal";
/// pCPU counts of the quick scaling table (the default of `--scaling`).
pub const SCALING_PCPUS_QUICK: [u32; 3] = [8, 32, 128];
/// pCPU counts of the full scaling table (`--scaling-pcpus full`): 8 to 1024.
pub const SCALING_PCPUS_FULL: [u32; 8] = [8, 16, 32, 64, 128, 256, 512, 1024];

#[derive(Clone, Debug)]
pub struct BenchOptions {
    /// Simulated duration of the timed run; `None` keeps the scenario's own `[run] duration`.
    pub duration: Option<Nanos>,
    /// Simulated durations (short, long) of the memory-flatness runs; `None` skips the check.
    pub memory_durations: Option<(Nanos, Nanos)>,
    /// How many times the timed run (and the bare-heap loop after it) is repeated. At least 1.
    pub repeats: u32,
    /// The scaling table; `None` skips it.
    pub scaling: Option<ScalingOptions>,
}

impl Default for BenchOptions {
    fn default() -> Self {
        BenchOptions { duration: None, memory_durations: Some((10 * SEC, 40 * SEC)), repeats: 5, scaling: None }
    }
}

#[derive(Clone, Debug)]
pub struct ScalingOptions {
    /// Host sizes, in pCPUs; each a multiple of 8.
    pub pcpus: Vec<u32>,
    pub policies: Vec<String>,
    /// Simulated time of the 8-pCPU row; a host of P pCPUs runs `8 / P` of it, so that every
    /// row handles about as many events.
    pub sim_time_at_8: Nanos,
    /// Timed runs per row (the figures are from the fastest). At least 1.
    pub repeats: u32,
}

impl ScalingOptions {
    /// The quick table: 8, 32 and 128 pCPUs, every policy, 2 simulated seconds at 8 pCPUs.
    pub fn quick() -> Self {
        ScalingOptions {
            pcpus: SCALING_PCPUS_QUICK.to_vec(),
            policies: SCALING_POLICIES.iter().map(|s| s.to_string()).collect(),
            sim_time_at_8: 2 * SEC,
            repeats: 1,
        }
    }

    /// The full table: 8 to 1024 pCPUs.
    pub fn full() -> Self {
        ScalingOptions { pcpus: SCALING_PCPUS_FULL.to_vec(), ..Self::quick() }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct BenchReport {
    pub scenario: String,
    /// "release" or "debug": numbers from a debug build are not comparable.
    pub build_profile: String,
    /// Whether the committed PGO profile was applied, and the build backend's note on it
    /// (`build_info`): a profile-guided build and one without are not comparable either.
    pub build_pgo: bool,
    pub build_pgo_note: String,
    /// The machine it ran on: figures from two machines are not comparable.
    pub machine: machine::Machine,
    /// Times the timed run was repeated; the figures below are per run.
    pub repeats: u32,
    pub sim_time_ns: u64,
    /// Median wall time of one run (build, start and event loop; no report serialization).
    pub wall_time_s: f64,
    /// Fastest run.
    pub wall_time_min_s: f64,
    /// Live events of one run: `events_counted - stale_events`.
    pub events: u64,
    /// Events the run counted (the summary's `events`), stale ones included.
    pub events_counted: u64,
    /// Counted events that did nothing (stale epoch).
    pub stale_events: u64,
    /// Cancelled queue entries popped and skipped (never counted as events).
    pub cancelled_skipped: u64,
    /// The event queue's peak length (cancelled entries not yet skipped included).
    pub peak_queue_len: u64,
    /// `events / wall_time_s`: live events per second of the median run.
    pub events_per_s: f64,
    /// Live events per second of the fastest run.
    pub events_per_s_best: f64,
    /// Wall nanoseconds per live event, median run.
    pub ns_per_event: f64,
    pub sim_seconds_per_wall_second: f64,
    /// Bytes of one engine queue entry, and of the bare heap's.
    pub entry_bytes: usize,
    /// The bare-heap loop (as many pop/push pairs as live events), median of its timings.
    pub bare_heap_events_per_s: f64,
    /// The bare-heap loop, fastest timing.
    pub bare_heap_events_per_s_best: f64,
    /// `events_per_s / bare_heap_events_per_s` (medians): the share of raw queue speed the
    /// engine keeps.
    pub events_per_s_vs_bare_heap: f64,
    /// Peak resident set size of this process so far (VmHWM), when /proc/self/status has it.
    pub peak_rss_kib: Option<u64>,
    pub memory: Option<MemoryFlatness>,
    pub scaling: Option<Vec<ScalingRow>>,
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

/// One row of the scaling table.
#[derive(Clone, Debug, Serialize)]
pub struct ScalingRow {
    pub policy: String,
    pub pcpus: u32,
    pub vcpus: u32,
    pub sim_time_ns: u64,
    /// Timed runs of this row (`ScalingOptions::repeats`); the figures are the fastest one's.
    pub runs: u32,
    /// Wall time of the fastest run, setup included.
    pub wall_time_s: f64,
    /// Of which building and starting the host (`Sim::build`, `Sim::start`: domains, fork
    /// placement of every vCPU), which grows with the host and is paid once a run.
    pub setup_s: f64,
    pub events: u64,
    pub stale_events: u64,
    pub cancelled_skipped: u64,
    /// Live events per second of the event loop (`wall_time_s - setup_s`).
    pub events_per_s: f64,
    /// Nanoseconds of the event loop per live event: the per-event cost, setup apart.
    pub ns_per_event: f64,
    pub peak_queue_len: u64,
    /// Peak RSS during the row's runs (VmHWM reset before them through /proc/self/clear_refs;
    /// where that is refused, the process's peak so far, marked by `rss_reset = false`). The
    /// reset sets the peak to what is resident then, which includes memory the allocator kept
    /// from the rows before (freed, not returned to the system): `rss_at_start_kib`. A row's
    /// own footprint is at most the peak; a run alone can be well under it.
    pub peak_rss_kib: Option<u64>,
    pub rss_reset: bool,
    /// VmRSS when the row's runs began (after the reset): the floor under `peak_rss_kib`.
    pub rss_at_start_kib: Option<u64>,
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
    let pending = timed.host.topology.npcpus() as u64 + timed.vms.iter().map(|v| v.vcpus as u64).sum::<u64>();
    let mut engine_walls = Vec::new();
    let mut heap_walls = Vec::new();
    let mut facts = None;
    for _ in 0..repeats {
        let (f, wall) = timed_run(&timed)?;
        engine_walls.push(wall);
        // Deterministic: every repeat does the same work, so the same live count.
        heap_walls.push(time_bare_heap(f.live(), pending));
        facts = Some(f);
    }
    let facts = facts.expect("at least one run");
    let wall_time_s = median(&engine_walls);
    let wall_time_min_s = min(&engine_walls);
    let live = facts.live();
    let events_per_s = live as f64 / wall_time_s;
    let bare_heap_events_per_s = live as f64 / median(&heap_walls);

    Ok(BenchReport {
        scenario: scenario.source.clone(),
        build_profile: build_info::profile().to_string(),
        build_pgo: build_info::pgo_applied(),
        build_pgo_note: build_info::pgo_note().to_string(),
        machine: machine::Machine::this(),
        repeats,
        sim_time_ns: facts.sim_time_ns,
        wall_time_s,
        wall_time_min_s,
        events: live,
        events_counted: facts.events,
        stale_events: facts.stale,
        cancelled_skipped: facts.skipped,
        peak_queue_len: facts.peak_queue_len,
        events_per_s,
        events_per_s_best: live as f64 / wall_time_min_s,
        ns_per_event: wall_time_s * 1e9 / live.max(1) as f64,
        sim_seconds_per_wall_second: facts.sim_time_ns as f64 / SEC as f64 / wall_time_s,
        entry_bytes: EventQueue::<Event>::ENTRY_BYTES,
        bare_heap_events_per_s,
        bare_heap_events_per_s_best: live as f64 / min(&heap_walls),
        events_per_s_vs_bare_heap: if bare_heap_events_per_s > 0.0 { events_per_s / bare_heap_events_per_s } else { 0.0 },
        peak_rss_kib: peak_rss_kib(),
        memory,
        scaling: match &options.scaling {
            Some(s) => Some(scaling_table(s)?),
            None => None,
        },
    })
}

/// What the benchmark needs from one run.
#[derive(Clone, Copy, Debug)]
struct RunFacts {
    events: u64,
    stale: u64,
    skipped: u64,
    peak_queue_len: u64,
    sim_time_ns: u64,
}

impl RunFacts {
    fn live(&self) -> u64 {
        self.events - self.stale
    }
}

/// Build, start and run a simulation as `api::run` does (no trace, no check), without the
/// report; returns its facts and the wall time of the whole.
fn timed_run(scenario: &Scenario) -> Result<(RunFacts, f64), SimError> {
    timed_run_split(scenario).map(|(facts, _, wall)| (facts, wall))
}

/// The events one run of `scenario` pops: (all, stale), built, started and run as `timed_run`
/// does (no trace, no check, no report). `benches/instructions.py` divides the instructions a
/// window of simulated time costs by the live events it pops (the `scaling` example).
pub fn count_events(scenario: &Scenario) -> Result<(u64, u64), SimError> {
    timed_run(scenario).map(|(facts, _)| (facts.events, facts.stale))
}

/// `timed_run`, also returning the wall time of building and starting the host (`Sim::build`,
/// `Sim::start`) apart: (facts, setup, whole).
fn timed_run_split(scenario: &Scenario) -> Result<(RunFacts, f64, f64), SimError> {
    let start = Instant::now();
    let mut sim = Sim::build(scenario, scenario.run.seed, false, false)?;
    sim.start();
    let setup = start.elapsed().as_secs_f64();
    sim.run_until(scenario.run.duration, scenario.run.max_events)?;
    sim.take_samples(sim.now());
    sim.finish();
    let wall = start.elapsed().as_secs_f64().max(1e-9);
    let facts = RunFacts {
        events: sim.events(),
        stale: sim.stale_events(),
        skipped: sim.queue().skipped(),
        peak_queue_len: sim.queue().peak_len() as u64,
        sim_time_ns: sim.now(),
    };
    drop(sim);
    Ok((facts, setup, wall))
}

fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(Ordering::Equal));
    let n = v.len();
    if n == 0 {
        0.0
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn min(xs: &[f64]) -> f64 {
    xs.iter().copied().fold(f64::INFINITY, f64::min)
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
    let (short_facts, _) = timed_run(&run)?;
    let after_short = peak_rss_kib();
    run.run.duration = long;
    let (long_facts, _) = timed_run(&run)?;
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

/// The scaling scenario: the quickstart's mix once per 8 pCPUs (one 8-vCPU barrier VM, four
/// 1-vCPU CPU-bound VMs), with no iteration target, for `duration`. `policy` is a policy name or
/// one of `SCALING_MECHANISMS` (`policy+mechanism`), which adds the mechanism's sections, or
/// `SCALING_BARE_METAL`: one bare-metal machine on every pCPU (a node per 8, two per socket,
/// two-core modules) running the mix's 12 threads per 8 pCPUs, six to a mutex (`mutex`), so
/// Linux 3.13's load balancer and wake placement (guest/bare_metal_balance.rs) work at the
/// host's size with the same contention at every size.
pub fn scaling_scenario(policy: &str, pcpus: u32, duration: Nanos) -> Result<Scenario, SimError> {
    let bad = |key: &str, message: String| SimError::Scenario { file: "vcpusim bench".into(), key: key.into(), message };
    if pcpus == 0 || !pcpus.is_multiple_of(8) {
        return Err(bad(
            "scaling pcpus",
            format!("got {pcpus}, expected a positive multiple of 8 (the quickstart's mix is scaled per 8 pCPUs)"),
        ));
    }
    let groups = pcpus / 8;
    if policy == SCALING_BARE_METAL {
        let sockets = if groups.is_multiple_of(2) { groups / 2 } else { 1 };
        let text = format!(
            "[host]\npcpus = {pcpus}\nsockets = {sockets}\nnuma_nodes = {groups}\ncores_per_module = 2\nllc = \"node\"\n\
             policy = \"credit\"\n\n[[vm]]\nname = \"machine\"\nbare_metal = true\nworkload = \"mutex\"\nthreads = {threads}\n\
             params = {{ mutexes = {mutexes} }}\n\n[run]\nduration = \"{duration}ns\"\nseed = 1\n",
            threads = 12 * groups,
            mutexes = 2 * groups,
        );
        return api::load_scenario(&text, &format!("bench scaling: {policy}, {pcpus} pCPUs"));
    }
    let (base, host_extra, guest_extra) = match policy.split_once('+') {
        None => (policy, String::new(), ""),
        Some((base, mechanism)) if SCALING_MECHANISMS.contains(&policy) => match mechanism {
            "microsliced" => (base, format!("params = {{ xen = \"4.7\" }}\n[host.microsliced]\nmode = \"static\"\ncores = {groups}\n"), ""),
            "irs" => (base, "params = { xen = \"4.4\" }\noverlay = \"irs\"\n".to_string(), "[vm.guest]\nirs = true\n"),
            "uvf" => (base, "[host.uvf]\n".to_string(), "[vm.uvf]\n"),
            overlay => (base, format!("overlay = {overlay:?}\n"), ""),
        },
        Some(_) => {
            return Err(bad(
                "scaling policies",
                format!("got {policy:?}, expected a policy name or one of {}", SCALING_MECHANISMS.join(", ")),
            ))
        }
    };
    let text = format!(
        "[host]\npcpus = {pcpus}\npolicy = {base:?}\n{host_extra}\n\
         [[vm]]\nname = \"parallel\"\ncount = {groups}\nvcpus = 8\nworkload = \"barrier\"\nthreads = 8\n{guest_extra}\n\
         [[vm]]\nname = \"seq\"\ncount = {seq}\nvcpus = 1\nworkload = \"cpu-bound\"\n\n\
         [run]\nduration = \"{duration}ns\"\nseed = 1\n",
        seq = 4 * groups,
    );
    api::load_scenario(&text, &format!("bench scaling: {policy}, {pcpus} pCPUs"))
}

fn scaling_table(options: &ScalingOptions) -> Result<Vec<ScalingRow>, SimError> {
    let mut rows = Vec::new();
    for &pcpus in &options.pcpus {
        for policy in &options.policies {
            let duration = (options.sim_time_at_8 as u128 * 8 / pcpus.max(1) as u128) as Nanos;
            let scenario = scaling_scenario(policy, pcpus, duration.max(1))?;
            let rss_reset = reset_peak_rss();
            let rss_at_start_kib = rss_kib();
            let mut best: Option<(RunFacts, f64, f64)> = None;
            let runs = options.repeats.max(1);
            for _ in 0..runs {
                let (facts, setup, wall) = timed_run_split(&scenario)?;
                if best.is_none_or(|(_, _, w)| wall < w) {
                    best = Some((facts, setup, wall));
                }
            }
            let (facts, setup, wall) = best.expect("at least one run");
            let event_loop = (wall - setup).max(1e-9);
            let live = facts.live();
            rows.push(ScalingRow {
                policy: policy.clone(),
                pcpus,
                vcpus: scenario.vms.iter().map(|v| v.vcpus).sum(),
                sim_time_ns: facts.sim_time_ns,
                runs,
                wall_time_s: wall,
                setup_s: setup,
                events: live,
                stale_events: facts.stale,
                cancelled_skipped: facts.skipped,
                events_per_s: live as f64 / event_loop,
                ns_per_event: event_loop * 1e9 / live.max(1) as f64,
                peak_queue_len: facts.peak_queue_len,
                peak_rss_kib: peak_rss_kib(),
                rss_reset,
                rss_at_start_kib,
            });
        }
    }
    Ok(rows)
}

/// `--scaling-pcpus`: "quick", "full" or a comma-separated list of multiples of 8.
pub fn parse_scaling_pcpus(text: &str) -> Result<Vec<u32>, String> {
    match text.trim() {
        "quick" => Ok(SCALING_PCPUS_QUICK.to_vec()),
        "full" => Ok(SCALING_PCPUS_FULL.to_vec()),
        list => list
            .split(',')
            .map(|x| match x.trim().parse::<u32>() {
                Ok(n) if n > 0 && n.is_multiple_of(8) => Ok(n),
                _ => Err(format!(
                    "got {x:?} in {text:?}, expected \"quick\", \"full\" or pCPU counts that are positive multiples of 8, comma-separated"
                )),
            })
            .collect(),
    }
}

/// `--scaling-policies`: a comma-separated list of policy names.
pub fn parse_scaling_policies(text: &str) -> Result<Vec<String>, String> {
    let names: Vec<String> = text.split(',').map(|x| x.trim().to_string()).filter(|x| !x.is_empty()).collect();
    if names.is_empty() {
        return Err(format!("got {text:?}, expected policy names, comma-separated (e.g. {:?})", SCALING_POLICIES.join(",")));
    }
    Ok(names)
}

/// A heap entry of the engine's size: the (time, sequence) key the engine orders by, padded
/// with a payload to `EventQueue::<Event>::ENTRY_BYTES`.
#[derive(Clone, Copy)]
struct BareEntry {
    at: u64,
    seq: u64,
    _payload: [u8; BARE_PAYLOAD],
}

const BARE_PAYLOAD: usize = EventQueue::<Event>::ENTRY_BYTES.saturating_sub(16);

impl PartialEq for BareEntry {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl Eq for BareEntry {}
impl PartialOrd for BareEntry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for BareEntry {
    // Reversed, as the engine's: earliest on top of the max-heap.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

fn time_bare_heap(events: u64, pending: u64) -> f64 {
    let start = Instant::now();
    std::hint::black_box(bare_heap_loop(events, pending));
    start.elapsed().as_secs_f64().max(1e-9)
}

/// Speed of the simplest discrete-event loop: `events` pop/push pairs on a binary heap holding
/// `pending` future events (as many as the scenario has pCPUs + vCPUs, roughly the timers an
/// engine keeps), its entries as large as the engine's. One timing; `vcpusim bench` interleaves
/// several with its engine runs.
pub fn bare_heap_events_per_s(events: u64, pending: u64) -> f64 {
    events as f64 / time_bare_heap(events, pending)
}

/// The loop itself; returns the time of the last event so the work cannot be optimized away.
/// Each popped event schedules its successor a pseudo-random delay later.
pub fn bare_heap_loop(events: u64, pending: u64) -> u64 {
    let pending = pending.max(1);
    let mut heap: BinaryHeap<BareEntry> = BinaryHeap::with_capacity(pending as usize + 1);
    // A fixed xorshift stream: the delays only need to scatter the heap, not be "random".
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next_delay = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        1 + state % 1_000_000
    };
    let payload = [0u8; BARE_PAYLOAD];
    for seq in 0..pending {
        heap.push(BareEntry { at: next_delay(), seq, _payload: payload });
    }
    let mut now = 0;
    for seq in pending..pending + events {
        let top = heap.pop().expect("the heap never empties: every pop pushes one");
        now = top.at;
        heap.push(BareEntry { at: std::hint::black_box(top.at + next_delay()), seq, _payload: top._payload });
    }
    now
}

/// Peak resident set size (VmHWM) of this process, in KiB; `None` where /proc is absent.
pub fn peak_rss_kib() -> Option<u64> {
    status_kib("VmHWM:")
}

/// The resident set now (VmRSS), in KiB, when /proc/self/status has it.
fn rss_kib() -> Option<u64> {
    status_kib("VmRSS:")
}

/// One `/proc/self/status` value in KiB (`key` with its colon), where the file has it.
fn status_kib(key: &str) -> Option<u64> {
    std::fs::read_to_string("/proc/self/status").ok().and_then(|s| parse_status_kib(&s, key))
}

/// Reset VmHWM to the current RSS (Linux: "5" to /proc/PID/clear_refs, since 4.0); false where
/// that is not possible.
fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// A `/proc/PID/status` line's value in kB (`key` with its colon: "VmRSS:").
fn parse_status_kib(status: &str, key: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with(key))?;
    line[key.len()..].trim().trim_end_matches("kB").trim().parse().ok()
}

/// A scaling row's peak RSS and, in brackets, what was resident when it began (MiB); `*` marks a
/// peak that could not be reset (the process's peak so far).
fn rss_text(x: &ScalingRow) -> String {
    let mib = |k: u64| k as f64 / 1024.0;
    match (x.peak_rss_kib, x.rss_at_start_kib) {
        (None, _) => "-".into(),
        (Some(peak), start) => format!(
            "{:.1}{}{}",
            mib(peak),
            if x.rss_reset { "" } else { "*" },
            start.map(|s| format!(" ({:.1})", mib(s))).unwrap_or_default()
        ),
    }
}

/// The report as text tables (what `cargo bench --bench scaling` and `vcpusim bench` print).
pub fn to_text(r: &BenchReport) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "vcpusim bench: {}, {} build, {} timed runs (each followed by a bare-heap timing)\n  build: {}\n  machine: {}",
        r.scenario, r.build_profile, r.repeats, r.build_pgo_note, r.machine.summary
    );
    let mut row = |k: &str, v: String| {
        let _ = writeln!(s, "  {k:<44} {v:>16}");
    };
    row("simulated time", format!("{} s", r.sim_time_ns as f64 / 1e9));
    row("wall time per run (median / min)", format!("{:.3} / {:.3} s", r.wall_time_s, r.wall_time_min_s));
    row("live events per run", r.events.to_string());
    row("stale events (counted, did nothing)", r.stale_events.to_string());
    row("cancelled queue entries skipped", r.cancelled_skipped.to_string());
    row("peak event-queue length", r.peak_queue_len.to_string());
    row("live events per second (median)", format!("{:.0}", r.events_per_s));
    row("live events per second (best)", format!("{:.0}", r.events_per_s_best));
    row("ns per live event (median)", format!("{:.1}", r.ns_per_event));
    row("simulated seconds per wall second", format!("{:.2}", r.sim_seconds_per_wall_second));
    row(&format!("bare heap, {}-byte entries, events/s (median)", r.entry_bytes), format!("{:.0}", r.bare_heap_events_per_s));
    row("bare heap events/s (best)", format!("{:.0}", r.bare_heap_events_per_s_best));
    row("engine vs bare heap (medians)", format!("{:.4}", r.events_per_s_vs_bare_heap));
    row("peak RSS", r.peak_rss_kib.map(|k| format!("{:.1} MiB", k as f64 / 1024.0)).unwrap_or("-".into()));
    if let Some(m) = &r.memory {
        row(
            &format!("peak RSS growth {} s -> {} s simulated", m.short_sim_time_ns as f64 / 1e9, m.long_sim_time_ns as f64 / 1e9),
            m.growth_kib.map(|g| format!("{:.1} MiB", g as f64 / 1024.0)).unwrap_or("-".into()),
        );
    }
    if let Some(rows) = &r.scaling {
        let runs = rows.first().map_or(1, |x| x.runs);
        let _ = writeln!(s, "\nscaling (quickstart mix per 8 pCPUs; fastest of {runs} run(s) of each row; events/s and ns/event of the event loop, setup apart):");
        // The policy column as wide as its longest name (`credit+delay-preempt`).
        let w = rows.iter().map(|x| x.policy.len()).max().unwrap_or(0).max(7);
        let _ = writeln!(
            s,
            "  {:<w$} {:>6} {:>6} {:>9} {:>10} {:>12} {:>9} {:>9} {:>10} {:>9} {:>17}",
            "policy", "pcpus", "vcpus", "sim ms", "events", "events/s", "ns/event", "setup ms", "peak queue", "stale %", "RSS MiB (start)"
        );
        for x in rows {
            let _ = writeln!(
                s,
                "  {:<w$} {:>6} {:>6} {:>9.1} {:>10} {:>12.0} {:>9.1} {:>9.1} {:>10} {:>9.1} {:>17}",
                x.policy,
                x.pcpus,
                x.vcpus,
                x.sim_time_ns as f64 / 1e6,
                x.events,
                x.events_per_s,
                x.ns_per_event,
                x.setup_s * 1e3,
                x.peak_queue_len,
                100.0 * x.stale_events as f64 / (x.events + x.stale_events).max(1) as f64,
                rss_text(x),
            );
        }
    }
    s
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
    fn bare_heap_entries_are_as_large_as_the_engines() {
        assert_eq!(std::mem::size_of::<BareEntry>(), EventQueue::<Event>::ENTRY_BYTES.max(16));
    }

    #[test]
    fn median_and_min() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(min(&[3.0, 1.0, 2.0]), 1.0);
    }

    #[test]
    fn parses_vm_hwm_from_proc_status() {
        let status = "Name:\tx\nVmPeak:\t  2000 kB\nVmHWM:\t    1234 kB\nVmRSS:\t 1000 kB\n";
        assert_eq!(parse_status_kib(status, "VmHWM:"), Some(1234));
        assert_eq!(parse_status_kib("Name:\tx\n", "VmHWM:"), None);
        assert_eq!(parse_status_kib(status, "VmRSS:"), Some(1000));
        assert_eq!(parse_status_kib(status, "VmPeak:"), Some(2000));
        if cfg!(target_os = "linux") {
            assert!(peak_rss_kib().unwrap() > 0 && rss_kib().unwrap() > 0);
        }
    }

    #[test]
    fn default_options_check_memory_over_10_and_40_simulated_seconds() {
        let options = BenchOptions::default();
        assert_eq!(options.memory_durations, Some((10 * SEC, 40 * SEC)));
        assert_eq!(options.duration, None);
        assert!(options.repeats >= 1);
        assert!(options.scaling.is_none());
        assert_eq!(ScalingOptions::full().pcpus.first(), Some(&8));
        assert_eq!(ScalingOptions::full().pcpus.last(), Some(&1024));
    }

    #[test]
    fn parses_scaling_arguments() {
        assert_eq!(parse_scaling_pcpus("full").unwrap().len(), 8);
        assert_eq!(parse_scaling_pcpus("8, 64").unwrap(), vec![8, 64]);
        let err = parse_scaling_pcpus("8,12").unwrap_err();
        assert!(err.contains("\"12\"") && err.contains("multiples of 8"), "{err}");
        assert_eq!(parse_scaling_policies("cfs,gang").unwrap(), vec!["cfs", "gang"]);
        assert!(parse_scaling_policies(" , ").is_err());
    }

    #[test]
    fn scaling_scenario_scales_the_quickstart_mix() {
        let s = scaling_scenario("credit", 32, SEC / 100).unwrap();
        assert_eq!(s.host.topology.npcpus(), 32);
        assert_eq!(s.vms.iter().map(|v| v.vcpus).sum::<u32>(), 4 * 12);
        assert!(matches!(scaling_scenario("cfs", 12, SEC), Err(SimError::Scenario { .. })));
    }

    #[test]
    fn the_bare_metal_scaling_row_is_one_machine_on_every_pcpu() {
        let s = scaling_scenario(SCALING_BARE_METAL, 32, SEC / 100).unwrap();
        assert_eq!(s.vms.len(), 1);
        let m = &s.vms[0];
        assert!(m.bare_metal && m.vcpus == 32, "one CPU per pCPU");
        assert_eq!(s.host.topology.place(crate::ids::PcpuId(31)).node, 3, "a node per 8 pCPUs");
        assert_eq!(s.host.topology.place(crate::ids::PcpuId(31)).socket, 1, "two nodes per socket");
    }

    #[test]
    fn scaling_mechanisms_add_their_sections_and_unknown_ones_are_named() {
        let micro = scaling_scenario("credit+microsliced", 32, SEC / 100).unwrap();
        assert_eq!(micro.host.microsliced.as_ref().map(|m| m.cores), Some(4), "one micro core per 8 pCPUs");
        let irs = scaling_scenario("credit+irs", 16, SEC / 100).unwrap();
        assert!(irs.host.overlay.is_some());
        assert_eq!(irs.vms.iter().filter(|v| v.guest.irs).count(), 2, "the barrier VMs take the notice");
        for m in SCALING_MECHANISMS {
            let s = scaling_scenario(m, 8, SEC / 100).unwrap_or_else(|e| panic!("{m}: {e}"));
            assert_eq!(s.vms.iter().map(|v| v.vcpus).sum::<u32>(), 12, "{m}: the quickstart's mix");
            assert!(s.host.microsliced.is_some() || s.host.overlay.is_some() || s.host.uvf.is_some(), "{m}: a mechanism is on");
        }
        match scaling_scenario("credit+foo", 8, SEC) {
            Err(SimError::Scenario { key, message, .. }) => {
                assert_eq!(key, "scaling policies");
                assert!(message.contains("\"credit+foo\"") && message.contains("credit+microsliced"), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn standard_bench_reports_consistent_rates() {
        // Needs the engine; a short timed run and a tiny memory check keep it quick in debug.
        let options = BenchOptions {
            duration: Some(SEC / 5),
            memory_durations: Some((SEC / 20, SEC / 5)),
            repeats: 2,
            scaling: Some(ScalingOptions {
                pcpus: vec![8, 16],
                policies: vec!["cfs".into(), "credit".into()],
                sim_time_at_8: SEC / 50,
                repeats: 2,
            }),
        };
        let report = run_standard(&options).expect("the quickstart scenario runs");
        assert!(report.sim_time_ns > 0 && report.sim_time_ns <= SEC / 5, "{}", report.sim_time_ns);
        assert!(report.events > 0);
        assert_eq!(report.events + report.stale_events, report.events_counted);
        let expected_rate = report.events as f64 / report.wall_time_s;
        assert!((report.events_per_s - expected_rate).abs() <= 1e-6 * expected_rate);
        assert!(report.events_per_s_best >= report.events_per_s);
        assert!(report.events_per_s_vs_bare_heap > 0.0);
        assert!(report.peak_queue_len > 0);
        assert_eq!(report.repeats, 2);
        let memory = report.memory.as_ref().expect("memory check requested");
        assert_eq!((memory.short_sim_time_ns, memory.long_sim_time_ns), (SEC / 20, SEC / 5));
        assert!(memory.long_events > memory.short_events);
        let rows = report.scaling.as_ref().expect("scaling requested");
        assert_eq!(rows.len(), 4);
        assert_eq!((rows[3].policy.as_str(), rows[3].pcpus, rows[3].vcpus), ("credit", 16, 24));
        assert_eq!(rows[3].sim_time_ns, SEC / 100);
        assert!(rows.iter().all(|r| r.events > 0 && r.peak_queue_len > 0 && r.runs == 2));
        let json = report.to_json();
        assert!(json.contains("\"events_per_s\"") && json.contains("\"scaling\""));
        assert!(to_text(&report).contains("credit") && to_text(&report).contains("fastest of 2 run(s)"));
    }

    #[test]
    fn bench_events_match_the_runs_summary() {
        // The benchmark's run is the same simulation `api::run` does: same counted events.
        let mut s = api::load_scenario(QUICKSTART_TOML, QUICKSTART_SOURCE).unwrap();
        s.run.duration = SEC / 10;
        let out = api::run(&s, &api::RunOptions::default()).unwrap();
        let summary: serde_json::Value = serde_json::from_str(&out.summary_json).unwrap();
        let (facts, _) = timed_run(&s).unwrap();
        assert_eq!(Some(facts.events), summary["events"].as_u64());
        assert!(facts.stale < facts.events);
    }
}
