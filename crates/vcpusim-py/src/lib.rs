//! `vcpusim._core`: thin Python bindings over `vcpusim::api`.
//!
//! Every entry point releases the GIL while Rust works and runs under `catch_unwind`, so a bug
//! that panics reaches Python as `vcpusim.InternalError` with the panic message, never as pyo3's
//! `PanicException` (a BaseException that `except Exception` would not catch).

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::panic::{catch_unwind, AssertUnwindSafe};
use vcpusim::api::{self, RunOptions, RunOutput};
use vcpusim::bench::{run_standard, BenchOptions};
use vcpusim::time::parse_duration;
use vcpusim::SimError;

create_exception!(vcpusim, VcpusimError, PyException, "Base class of every error vcpusim raises.");
create_exception!(vcpusim, ScenarioError, VcpusimError, "The scenario is invalid: bad TOML, key or value.");
create_exception!(vcpusim, DeadlockError, VcpusimError, "Every simulated thread blocked with nothing pending.");
create_exception!(vcpusim, LimitError, VcpusimError, "A run limit (such as max_events) was reached.");
create_exception!(vcpusim, InternalError, VcpusimError, "A bug in vcpusim: a broken invariant or a Rust panic.");

/// Why a guarded call failed: an error the library reported, or a panic.
enum Failure {
    Sim(SimError),
    Panic(String),
}

impl From<SimError> for Failure {
    fn from(e: SimError) -> Self {
        Failure::Sim(e)
    }
}

impl From<Failure> for PyErr {
    fn from(failure: Failure) -> PyErr {
        match failure {
            Failure::Sim(e) => {
                let message = e.to_string();
                match e.kind() {
                    "scenario" => ScenarioError::new_err(message),
                    "deadlock" => DeadlockError::new_err(message),
                    "limit" => LimitError::new_err(message),
                    "invariant" => InternalError::new_err(message),
                    _ => VcpusimError::new_err(message),
                }
            }
            Failure::Panic(message) => InternalError::new_err(format!("internal error (a bug in vcpusim, please report it): {message}")),
        }
    }
}

thread_local! {
    /// Where the last panic on this thread happened, recorded by [`record_panic_location`].
    static PANIC_LOCATION: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Panic hook of this extension (each cdylib has its own std, so this touches no other library):
/// remember where the panic happened for the InternalError message instead of printing a
/// backtrace over the user's terminal.
fn record_panic_location(info: &std::panic::PanicHookInfo<'_>) {
    let location = info.location().map(|l| format!("{}:{}", l.file(), l.line()));
    PANIC_LOCATION.with(|cell| *cell.borrow_mut() = location);
}

/// Run `work` without the GIL and turn a panic into a `Failure`.
fn guarded<T, F>(py: Python<'_>, work: F) -> Result<T, Failure>
where
    T: Send,
    F: FnOnce() -> Result<T, Failure> + Send,
{
    py.detach(|| match catch_unwind(AssertUnwindSafe(work)) {
        Ok(result) => result,
        Err(payload) => {
            let location = PANIC_LOCATION.with(|cell| cell.borrow_mut().take());
            let message = panic_message(payload.as_ref());
            Err(Failure::Panic(match location {
                Some(at) => format!("{message} (at {at})"),
                None => message,
            }))
        }
    })
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_string()
    }
}

/// Validate a scenario and return a short summary of it:
/// `{"source", "pcpus", "policy", "vms": [names], "vcpus", "duration_ns", "seed"}`.
#[pyfunction]
#[pyo3(signature = (text, source="<python>"))]
fn load<'py>(py: Python<'py>, text: &str, source: &str) -> PyResult<Bound<'py, PyDict>> {
    let scenario = guarded(py, || Ok(api::load_scenario(text, source)?))?;
    let summary = PyDict::new(py);
    summary.set_item("source", &scenario.source)?;
    summary.set_item("pcpus", scenario.host.topology.npcpus())?;
    summary.set_item("policy", &scenario.host.policy)?;
    summary.set_item("vms", scenario.vms.iter().map(|v| v.name.clone()).collect::<Vec<_>>())?;
    summary.set_item("vcpus", scenario.vms.iter().map(|v| v.vcpus as u64).sum::<u64>())?;
    summary.set_item("duration_ns", scenario.run.duration)?;
    summary.set_item("seed", scenario.run.seed)?;
    Ok(summary)
}

/// Load and run a scenario. Returns `{"vms_csv", "metrics_csv", "summary_json", "trace_json"}`
/// (`trace_json` is None unless `trace`).
#[pyfunction]
#[pyo3(signature = (text, source="<python>", seed=None, trace=false, check=false))]
fn run<'py>(py: Python<'py>, text: &str, source: &str, seed: Option<u64>, trace: bool, check: bool) -> PyResult<Bound<'py, PyDict>> {
    let output: RunOutput = guarded(py, || {
        let scenario = api::load_scenario(text, source)?;
        Ok(api::run(&scenario, &RunOptions { seed, trace, check })?)
    })?;
    let result = PyDict::new(py);
    result.set_item("vms_csv", output.vms_csv)?;
    result.set_item("metrics_csv", output.metrics_csv)?;
    result.set_item("summary_json", output.summary_json)?;
    result.set_item("trace_json", output.trace_json)?;
    Ok(result)
}

/// The policies and workloads with their parameters and defaults, as JSON text.
#[pyfunction]
fn catalog(py: Python<'_>) -> PyResult<String> {
    Ok(guarded(py, || Ok(api::catalog_json()))?)
}

/// Run the standard benchmark (see vcpusim::bench) and return its report as JSON text.
/// Durations are strings with units ("1s"); `memory=False` skips the memory-flatness check.
#[pyfunction]
#[pyo3(name = "bench", signature = (duration=None, memory=true, memory_short="10s", memory_long="40s", repeats=5))]
fn run_bench(py: Python<'_>, duration: Option<&str>, memory: bool, memory_short: &str, memory_long: &str, repeats: u32) -> PyResult<String> {
    let duration_arg = |name: &str, text: &str| {
        parse_duration(text).map_err(|e| VcpusimError::new_err(format!("bench: {name}: {e}")))
    };
    let options = BenchOptions {
        duration: duration.map(|d| duration_arg("duration", d)).transpose()?,
        memory_durations: if memory {
            Some((duration_arg("memory_short", memory_short)?, duration_arg("memory_long", memory_long)?))
        } else {
            None
        },
        repeats,
    };
    Ok(guarded(py, || Ok(run_standard(&options)?.to_json()))?)
}

/// Panic inside a guarded call: lets the tests prove panics surface as InternalError.
#[pyfunction]
fn _panic_for_test(py: Python<'_>, message: String) -> PyResult<()> {
    Ok(guarded(py, move || -> Result<(), Failure> { panic!("{message}") })?)
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    std::panic::set_hook(Box::new(record_panic_location));
    m.add("VcpusimError", py.get_type::<VcpusimError>())?;
    m.add("ScenarioError", py.get_type::<ScenarioError>())?;
    m.add("DeadlockError", py.get_type::<DeadlockError>())?;
    m.add("LimitError", py.get_type::<LimitError>())?;
    m.add("InternalError", py.get_type::<InternalError>())?;
    m.add_function(wrap_pyfunction!(load, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(catalog, m)?)?;
    m.add_function(wrap_pyfunction!(run_bench, m)?)?;
    m.add_function(wrap_pyfunction!(_panic_for_test, m)?)?;
    Ok(())
}
