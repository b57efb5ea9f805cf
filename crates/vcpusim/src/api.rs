//! The library's front door: load, validate and run scenarios; list the catalog; benchmark.
//! The Python bindings (crates/vcpusim-py) are a thin layer over exactly these functions.

use crate::error::SimError;
use crate::scenario::spec::Scenario;

/// Options of one run that the command line may override.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Replace the scenario's `[run] seed`.
    pub seed: Option<u64>,
    /// Record a Chrome trace-event JSON schedule trace.
    pub trace: bool,
    /// Check engine invariants after every event.
    pub check: bool,
}

/// Everything a run produces, already serialized, so that the same bytes reach every front end.
#[derive(Clone, Debug)]
pub struct RunOutput {
    /// One row per VM (`vms.csv`).
    pub vms_csv: String,
    /// One row per (VM, metric) for distributions and breakdowns (`metrics.csv`).
    pub metrics_csv: String,
    /// Run-level facts and totals (`summary.json`).
    pub summary_json: String,
    /// Chrome trace-event JSON, when asked for (`trace.json`).
    pub trace_json: Option<String>,
}

/// Parse and validate a scenario from TOML text; `source` names it in error messages.
pub fn load_scenario(text: &str, source: &str) -> Result<Scenario, SimError> {
    crate::scenario::load::from_toml_str(text, source)
}

/// Run a validated scenario.
pub fn run(scenario: &Scenario, options: &RunOptions) -> Result<RunOutput, SimError> {
    crate::sim::run(scenario, options)
}

/// The policies and workloads with their parameters and defaults, as JSON.
pub fn catalog_json() -> String {
    crate::scenario::catalog::catalog_json()
}
