//! What a run is asked for and what it gives back: plain data, below every other module, so that
//! the runner (`run/`), the front door (`api.rs`) and the bindings share it without importing
//! each other.

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
