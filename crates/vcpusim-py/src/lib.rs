//! `vcpusim._core`: thin Python bindings over `vcpusim::api`.
//!
//! Every entry point releases the GIL while Rust works and runs under `catch_unwind`, so a bug
//! that panics reaches Python as `vcpusim.InternalError` with the panic message, never as pyo3's
//! `PanicException` (a BaseException that `except Exception` would not catch).
//!
//! `run` watches the simulation (`api::run_watched`): every [`WATCH_INTERVAL`] of wall time it
//! takes the GIL back for a moment to run Python's signal handlers (`py.check_signals()`, so
//! Ctrl-C raises `KeyboardInterrupt` and stops the run with no result) and to call the caller's
//! progress callback.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};
use vcpusim::api::{self, Progress, RunOptions, RunOutput};
use vcpusim::bench::{parse_scaling_pcpus, parse_scaling_policies, run_on, run_standard, BenchOptions, ScalingOptions};
use vcpusim::time::parse_duration;
use vcpusim::SimError;

mod python_policy;

create_exception!(vcpusim, VcpusimError, PyException, "Base class of every error vcpusim raises.");
create_exception!(vcpusim, ScenarioError, VcpusimError, "The scenario is invalid: bad TOML, key or value.");
create_exception!(vcpusim, DeadlockError, VcpusimError, "Every simulated thread blocked with nothing pending.");
create_exception!(vcpusim, LimitError, VcpusimError, "A run limit (such as max_events) was reached.");
create_exception!(vcpusim, PolicyError, VcpusimError, "A policy broke the interface's contract: a decision the engine refuses.");
create_exception!(vcpusim, InternalError, VcpusimError, "A bug in vcpusim: a broken invariant or a Rust panic.");

/// How often a running simulation looks at Python: pending signals (Ctrl-C) and the progress
/// callback. Ctrl-C is answered within this plus [`vcpusim::sim::WATCH_EVERY_EVENTS`] events.
const WATCH_INTERVAL: Duration = Duration::from_millis(50);

/// Why a guarded call failed: an error the library reported, a Python exception raised while
/// it ran (a signal handler's KeyboardInterrupt, the progress callback's error), or a panic.
enum Failure {
    Sim(SimError),
    Python(PyErr),
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
                    "policy" => PolicyError::new_err(message),
                    "invariant" => InternalError::new_err(message),
                    _ => VcpusimError::new_err(message),
                }
            }
            Failure::Python(err) => err,
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

/// [`guarded`] keeping the GIL (a run whose policy is written in Python calls it all along).
fn held<T, F>(work: F) -> Result<T, Failure>
where
    F: FnOnce() -> Result<T, Failure>,
{
    catch_unwind(AssertUnwindSafe(work)).unwrap_or_else(|payload| {
        let location = PANIC_LOCATION.with(|cell| cell.borrow_mut().take());
        let message = panic_message(payload.as_ref());
        Err(Failure::Panic(match location {
            Some(at) => format!("{message} (at {at})"),
            None => message,
        }))
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
/// `{"source", "pcpus", "policy", "vms": [names], "vcpus", "duration_ns", "seed", "topology"}`,
/// where `topology` lists every pCPU as `{"pcpu", "socket", "node", "module", "core", "thread",
/// "llc"}` (hardware/topology.rs numbering; `module` is the sibling group: a core without CMT).
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
    let topology = &scenario.host.topology;
    let places = pyo3::types::PyList::empty(py);
    for p in 0..topology.npcpus() {
        let pl = topology.place(vcpusim::ids::PcpuId(p as u32));
        let d = PyDict::new(py);
        d.set_item("pcpu", p)?;
        d.set_item("socket", pl.socket)?;
        d.set_item("node", pl.node)?;
        d.set_item("module", pl.module)?;
        d.set_item("core", pl.core)?;
        d.set_item("thread", pl.thread)?;
        d.set_item("llc", pl.llc)?;
        places.append(d)?;
    }
    summary.set_item("topology", places)?;
    Ok(summary)
}

/// The scenario's TOML tables as JSON text, parsed by the loader's parser (not validated).
#[pyfunction]
#[pyo3(signature = (text, source="<python>"))]
fn tables(py: Python<'_>, text: &str, source: &str) -> PyResult<String> {
    Ok(guarded(py, || Ok(api::scenario_tables_json(text, source)?))?)
}

/// A duration argument ("2s", "150ms") in ns, or an error naming the argument.
fn duration_arg(name: &str, text: &str) -> PyResult<u64> {
    parse_duration(text).map_err(|e| pyo3::exceptions::PyValueError::new_err(format!("{name}: {e}")))
}

/// Load and run a scenario. Returns `{"vms_csv", "metrics_csv", "summary_json", "trace_json",
/// "warnings"}` (`trace_json` is None unless traced). `trace_from` / `trace_to` (durations such
/// as "2s") trace only that window of simulated time and imply `trace`, as does
/// `trace_max_events` (the cap on trace records, default 2,000,000). `progress`, if given, is
/// called as `progress(now_ns, duration_ns, events)` about every 50 ms of wall time; an
/// exception it raises stops the run and propagates, as does Ctrl-C (KeyboardInterrupt).
/// `policies` maps a policy name the scenario uses (`python:<module>:<Class>`) to a
/// `vcpusim.Policy` object: each pool naming it runs a deep copy.
#[pyfunction]
#[pyo3(signature = (text, source="<python>", seed=None, trace=false, check=false, trace_from=None, trace_to=None, trace_max_events=None, progress=None, policies=None))]
#[allow(clippy::too_many_arguments)]
fn run<'py>(
    py: Python<'py>,
    text: &str,
    source: &str,
    seed: Option<u64>,
    trace: bool,
    check: bool,
    trace_from: Option<&str>,
    trace_to: Option<&str>,
    trace_max_events: Option<usize>,
    progress: Option<Py<PyAny>>,
    policies: Option<std::collections::HashMap<String, Py<PyAny>>>,
) -> PyResult<Bound<'py, PyDict>> {
    let trace_window = match (trace_from, trace_to) {
        (None, None) => None,
        (from, to) => {
            let from = from.map(|t| duration_arg("trace_from", t)).transpose()?.unwrap_or(0);
            let to = to.map(|t| duration_arg("trace_to", t)).transpose()?.unwrap_or(u64::MAX);
            if from >= to {
                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "trace_from ({}) must come before trace_to ({})",
                    trace_from.unwrap_or("0"),
                    trace_to.unwrap_or("the end")
                )));
            }
            Some((from, to))
        }
    };
    let options = RunOptions { seed, trace, check, trace_window, trace_max_events };
    // Policy objects handed to `run(policy=...)`, by the name the scenario gives them, for this
    // run only.
    let _prototypes = python_policy::Prototypes::set(policies.unwrap_or_default());
    let scenario = guarded(py, || Ok(api::load_scenario(text, source)?))?;
    let work = || {
        let mut raised: Option<PyErr> = None;
        let mut last = Instant::now();
        let watched = api::run_watched(&scenario, &options, |at: &Progress| {
            if last.elapsed() < WATCH_INTERVAL {
                return true;
            }
            last = Instant::now();
            let looked = Python::attach(|py| -> PyResult<()> {
                py.check_signals()?;
                if let Some(callback) = &progress {
                    callback.call1(py, (at.now_ns, at.duration_ns, at.events))?;
                }
                Ok(())
            });
            match looked {
                Ok(()) => true,
                Err(e) => {
                    raised = Some(e);
                    false
                }
            }
        });
        match (watched, raised) {
            (Err(SimError::Interrupted { .. }), Some(e)) => Err(Failure::Python(e)),
            // A Python policy's exception, raised as it is (its traceback, and a note of the
            // callback and the simulated time).
            (Err(e @ SimError::Policy { .. }), None) => Err(python_policy::take_raised().map_or(Failure::Sim(e), Failure::Python)),
            (result, _) => Ok(result?),
        }
    };
    // A Python policy takes the GIL at every callback: the run keeps it rather than release it
    // and take it back thousands of times a simulated second.
    let python = scenario.host.pools.iter().any(|pool| python_policy::is_python(&pool.policy));
    let output: RunOutput = if python { held(work)? } else { guarded(py, work)? };
    let result = PyDict::new(py);
    result.set_item("vms_csv", output.vms_csv)?;
    result.set_item("metrics_csv", output.metrics_csv)?;
    result.set_item("summary_json", output.summary_json)?;
    result.set_item("trace_json", output.trace_json)?;
    result.set_item("warnings", output.warnings)?;
    Ok(result)
}

/// The policies and workloads with their parameters and defaults, as JSON text.
#[pyfunction]
fn catalog(py: Python<'_>) -> PyResult<String> {
    Ok(guarded(py, || Ok(api::catalog_json()))?)
}

/// Run the standard benchmark (see vcpusim::bench) and return its report as JSON text.
/// Durations are strings with units ("1s"); `memory=False` skips the memory-flatness check;
/// `scenario_text` (with its `scenario_source` for messages) is timed in place of the quickstart.
#[pyfunction]
#[pyo3(name = "bench", signature = (duration=None, memory=true, memory_short="10s", memory_long="40s", repeats=5, scaling=false, scaling_pcpus="quick", scaling_policies="cfs,credit,gang,hybrid,eevdf", scaling_sim_time="2s", scaling_repeats=1, scenario_text=None, scenario_source="<python>"))]
#[allow(clippy::too_many_arguments)]
fn run_bench(
    py: Python<'_>,
    duration: Option<&str>,
    memory: bool,
    memory_short: &str,
    memory_long: &str,
    repeats: u32,
    scaling: bool,
    scaling_pcpus: &str,
    scaling_policies: &str,
    scaling_sim_time: &str,
    scaling_repeats: u32,
    scenario_text: Option<&str>,
    scenario_source: &str,
) -> PyResult<String> {
    let duration_arg = |name: &str, text: &str| parse_duration(text).map_err(|e| VcpusimError::new_err(format!("bench: {name}: {e}")));
    fn arg<T>(name: &str, r: Result<T, String>) -> PyResult<T> {
        r.map_err(|e| VcpusimError::new_err(format!("bench: {name}: {e}")))
    }
    // Checked whether or not the table is asked for: a mistake is reported, never ignored.
    let scaling_options = ScalingOptions {
        pcpus: arg("scaling_pcpus", parse_scaling_pcpus(scaling_pcpus))?,
        policies: arg("scaling_policies", parse_scaling_policies(scaling_policies))?,
        sim_time_at_8: duration_arg("scaling_sim_time", scaling_sim_time)?,
        repeats: scaling_repeats,
    };
    let options = BenchOptions {
        duration: duration.map(|d| duration_arg("duration", d)).transpose()?,
        memory_durations: if memory {
            let (short, long) = (duration_arg("memory_short", memory_short)?, duration_arg("memory_long", memory_long)?);
            if short >= long {
                return Err(VcpusimError::new_err(format!(
                    "bench: memory_short = {memory_short:?} is not shorter than memory_long = {memory_long:?}; \
                     the memory check compares a short run's peak memory with a longer run's"
                )));
            }
            Some((short, long))
        } else {
            None
        },
        repeats,
        scaling: scaling.then_some(scaling_options),
    };
    Ok(guarded(py, || {
        let report = match scenario_text {
            Some(text) => run_on(&api::load_scenario(text, scenario_source)?, &options)?,
            None => run_standard(&options)?,
        };
        Ok(report.to_json())
    })?)
}

/// How this build was made: {"profile": "release" | "debug", "pgo": bool, "pgo_note": str}
/// (vcpusim::build_info; `vcpusim --version` prints it).
#[pyfunction]
fn build_info(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let info = PyDict::new(py);
    info.set_item("profile", vcpusim::build_info::profile())?;
    info.set_item("pgo", vcpusim::build_info::pgo_applied())?;
    info.set_item("pgo_note", vcpusim::build_info::pgo_note())?;
    Ok(info)
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
    m.add("PolicyError", py.get_type::<PolicyError>())?;
    m.add_class::<python_policy::Host>()?;
    python_policy::install();
    m.add_function(wrap_pyfunction!(load, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(tables, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(catalog, m)?)?;
    m.add_function(wrap_pyfunction!(build_info, m)?)?;
    m.add_function(wrap_pyfunction!(run_bench, m)?)?;
    m.add_function(wrap_pyfunction!(_panic_for_test, m)?)?;
    Ok(())
}
