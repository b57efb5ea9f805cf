//! The library's front door: load, validate and run scenarios; list the catalog; benchmark.
//! The Python bindings (crates/vcpusim-py) are a thin layer over exactly these functions.

use crate::error::SimError;
use crate::scenario::spec::Scenario;

pub use crate::output::{Progress, RunOptions, RunOutput};

/// Parse and validate a scenario from TOML text; `source` names it in error messages.
pub fn load_scenario(text: &str, source: &str) -> Result<Scenario, SimError> {
    crate::scenario::load::from_toml_str(text, source)
}

/// A scenario's TOML tables as JSON text, parsed exactly as [`load_scenario`] parses them but not
/// validated (the Python API edits scenarios as dicts through this).
pub fn scenario_tables_json(text: &str, source: &str) -> Result<String, SimError> {
    let tables = crate::scenario::load::parse_tables(text, source)?;
    Ok(serde_json::to_string(&tables).expect("TOML values serialize as JSON"))
}

/// Run a validated scenario.
pub fn run(scenario: &Scenario, options: &RunOptions) -> Result<RunOutput, SimError> {
    crate::run::run(scenario, options)
}

/// Run a validated scenario, calling `watch` now and then (see `sim::WATCH_EVERY_EVENTS`) with
/// where the run is; when it returns false the run stops with `SimError::Interrupted`.
pub fn run_watched(scenario: &Scenario, options: &RunOptions, watch: impl FnMut(&Progress) -> bool) -> Result<RunOutput, SimError> {
    crate::run::run_watched(scenario, options, watch)
}

/// The policies and workloads with their parameters and defaults, as JSON.
pub fn catalog_json() -> String {
    crate::scenario::catalog::catalog_json()
}
