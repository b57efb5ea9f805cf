//! Errors a user can cause, each saying what went wrong in the user's terms.

use std::fmt;

#[derive(Clone, Debug, PartialEq)]
pub enum SimError {
    /// A scenario value is wrong: the file, the key path (`vm[1].params.spin`), the bad value and
    /// what was expected.
    Scenario { file: String, key: String, message: String },
    /// The TOML itself does not parse.
    Syntax { file: String, line: usize, column: usize, message: String },
    /// Every thread is blocked and nothing is pending: which thread waits on what.
    Deadlock { time_ns: u64, waits: Vec<String> },
    /// A run limit was hit (event budget).
    Limit { message: String },
    /// An engine invariant broke (a bug in vcpusim or a policy, found in check mode).
    Invariant { time_ns: u64, message: String },
    /// A policy broke the interface's contract (a decision the engine refuses: a vCPU running
    /// elsewhere, halted, or outside its pool or hard affinity) or stopped the run itself
    /// (`PolicyCtx::fail`: a policy written in Python raised an exception).
    Policy { time_ns: u64, policy: String, message: String },
    /// Writing results failed.
    Io { path: String, message: String },
    /// A program misused a synchronization object at run time (unlocking a mutex it does not
    /// hold, waiting on a condition variable without its mutex): VM, thread, op and object.
    /// Custom programs are checked for this when loaded; this catches what only a run shows.
    Program { time_ns: u64, message: String },
    /// The caller's watcher asked the run to stop (Ctrl-C in the CLI or in Python): no result.
    Interrupted { time_ns: u64 },
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Scenario { file, key, message } => write!(f, "{file}: {key}: {message}"),
            SimError::Syntax { file, line, column, message } => {
                write!(f, "{file}:{line}:{column}: invalid TOML: {message}")
            }
            SimError::Deadlock { time_ns, waits } => write!(
                f,
                "deadlock at t={:.3} ms: every thread is blocked and nothing is pending:\n  {}",
                *time_ns as f64 / 1e6,
                waits.join("\n  ")
            ),
            SimError::Limit { message } => write!(f, "run limit reached: {message}"),
            SimError::Invariant { time_ns, message } => {
                write!(f, "invariant violated at t={time_ns} ns: {message}")
            }
            SimError::Policy { time_ns, policy, message } => {
                write!(f, "policy {policy} failed at t={:.3} ms: {message}", *time_ns as f64 / 1e6)
            }
            SimError::Io { path, message } => write!(f, "cannot write {path}: {message}"),
            SimError::Program { time_ns, message } => {
                write!(f, "program error at t={:.3} ms: {message}", *time_ns as f64 / 1e6)
            }
            SimError::Interrupted { time_ns } => {
                write!(f, "interrupted at t = {:.3} s of simulated time", *time_ns as f64 / 1e9)
            }
        }
    }
}

impl std::error::Error for SimError {}

impl SimError {
    /// A stable name for the error kind (the Python exception class is chosen by it).
    pub fn kind(&self) -> &'static str {
        match self {
            // A misused object is the scenario's program's fault: ScenarioError in Python.
            SimError::Scenario { .. } | SimError::Syntax { .. } | SimError::Program { .. } => "scenario",
            SimError::Deadlock { .. } => "deadlock",
            SimError::Limit { .. } => "limit",
            SimError::Invariant { .. } => "invariant",
            SimError::Policy { .. } => "policy",
            SimError::Io { .. } => "io",
            SimError::Interrupted { .. } => "interrupted",
        }
    }
}
