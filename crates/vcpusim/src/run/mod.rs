//! The runner: build a simulation from a scenario, run it, and serialize its results. It sits
//! above `sim` (the simulation) and `metrics` (counters, trace) and imports both; neither imports
//! it. `api.rs` is the front door over it.

pub mod report;

use crate::error::SimError;
use crate::output::{RunOptions, RunOutput};
use crate::scenario::spec::Scenario;
use crate::sim::state::Sim;

pub fn run(scenario: &Scenario, options: &RunOptions) -> Result<RunOutput, SimError> {
    let seed = options.seed.unwrap_or(scenario.run.seed);
    let mut sim = Sim::build(scenario, seed, options.trace, options.check || scenario.run.check)?;
    sim.start();
    let finished = sim.run_until(scenario.run.duration, scenario.run.max_events)?;
    sim.take_samples(sim.now);
    sim.finish();
    Ok(report::build(&sim, scenario, seed, finished))
}
