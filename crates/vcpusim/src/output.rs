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
    /// Record only this window of simulated time `[from, to)` in the trace (ns); `None`: the whole
    /// run, up to the trace's event cap.
    pub trace_window: Option<(u64, u64)>,
    /// Keep at most this many trace records (`None`: `metrics::trace::DEFAULT_MAX_EVENTS`).
    pub trace_max_events: Option<usize>,
}

/// Where a watched run is (`api::run_watched`): simulated time against the run's duration and
/// the events processed so far.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    pub now_ns: u64,
    pub duration_ns: u64,
    pub events: u64,
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
    /// What the user should know about these results but is not an error (a trace cut at its
    /// event cap), one sentence each; the CLI prints them, Python raises them as warnings.
    pub warnings: Vec<String>,
}
