//! The runner: build a simulation from a scenario, run it, and serialize its results. It sits
//! above `sim` (the simulation) and `metrics` (counters, trace) and imports both; neither imports
//! it. `api.rs` is the front door over it.

pub mod report;

use crate::error::SimError;
use crate::output::{Progress, RunOptions, RunOutput};
use crate::scenario::spec::Scenario;
use crate::sim::state::Sim;

pub fn run(scenario: &Scenario, options: &RunOptions) -> Result<RunOutput, SimError> {
    run_watched(scenario, options, |_| true)
}

/// [`run`], telling `watch` where the run is every `sim::WATCH_EVERY_EVENTS` events; a false
/// answer stops it with `SimError::Interrupted` and no output.
pub fn run_watched(scenario: &Scenario, options: &RunOptions, mut watch: impl FnMut(&Progress) -> bool) -> Result<RunOutput, SimError> {
    let seed = options.seed.unwrap_or(scenario.run.seed);
    let trace = options.trace || options.trace_window.is_some() || options.trace_max_events.is_some();
    let mut sim = Sim::build(scenario, seed, trace, options.check || scenario.run.check)?;
    sim.limit_trace(options.trace_window, options.trace_max_events);
    sim.start();
    let duration_ns = scenario.run.duration;
    let finished =
        sim.run_watched(duration_ns, scenario.run.max_events, |now_ns, events| watch(&Progress { now_ns, duration_ns, events }))?;
    sim.take_samples(sim.now());
    sim.finish();
    if sim.check_mode() {
        // Once more with the last segments charged: what the tables will say.
        sim.check_invariants()?;
    }
    Ok(report::build(&sim, scenario, seed, finished))
}
