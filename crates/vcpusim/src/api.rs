//! The library's front door: load, validate and run scenarios; list the catalog; benchmark.
//! The Python bindings (crates/vcpusim-py) are a thin layer over exactly these functions.

use crate::error::SimError;
use crate::scenario::spec::Scenario;

pub use crate::output::{RunOptions, RunOutput};

/// Parse and validate a scenario from TOML text; `source` names it in error messages.
pub fn load_scenario(text: &str, source: &str) -> Result<Scenario, SimError> {
    crate::scenario::load::from_toml_str(text, source)
}

/// Run a validated scenario.
pub fn run(scenario: &Scenario, options: &RunOptions) -> Result<RunOutput, SimError> {
    crate::run::run(scenario, options)
}

/// The policies and workloads with their parameters and defaults, as JSON.
pub fn catalog_json() -> String {
    crate::scenario::catalog::catalog_json()
}
