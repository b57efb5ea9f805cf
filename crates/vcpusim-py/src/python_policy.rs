//! Policies written in Python: a subclass of `vcpusim.Policy` (python/vcpusim/policy.py), named
//! `python:<module>:<Class>` by a scenario or handed to `vcpusim.run(policy=...)`, run as an
//! engine policy through the public interface (`vcpusim::policy`), checked as every policy is.
//!
//! ```text
//!   scenario "python:mod:Class" ─▶ resolve (import, read `params`) ─▶ PyKind (leaked, cached)
//!   engine ── insert_vcpu / wake / do_schedule ... ─▶ PyPolicy ── method call ─▶ the Python object
//!                                                    │  Host: the view and the requests, valid
//!                                                    └─ only during the call (a raw pointer)
//! ```
//!
//! A callback that raises stops the run (`PolicyCtx::fail`); the exception, with its traceback
//! and a note of the callback and the simulated time, is what `vcpusim.run` raises
//! ([`take_raised`]). Callbacks the class leaves to `vcpusim.Policy` are not called at all.

use pyo3::exceptions::{PyIndexError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::sync::Mutex;
use vcpusim::hardware::topology::PcpuPlace;
use vcpusim::policy::{
    default_pick_pcpu, Decision, HostShape, HostView, IpiKind, Nanos, ParamSpec, ParamValue, Params, PcpuId, Policy, PolicyCtx, PolicyKind,
    Resolver, Timer, VcpuId, VcpuInfo, VcpuState, VmId, VmSched, YieldReason,
};
use vcpusim::vmexit::Hypervisor;

/// The prefix of a Python policy's name in a scenario.
pub const PREFIX: &str = "python:";

thread_local! {
    /// Policy objects and classes handed to `run(policy=...)` for the run in progress on this
    /// thread, by the name the scenario gives them: each pool naming an object gets a deep copy
    /// of it, each naming a class an object made with its `[host.params]`.
    static PROTOTYPES: RefCell<HashMap<String, Py<PyAny>>> = RefCell::new(HashMap::new());
    /// The exception a Python policy raised in the run in progress on this thread.
    static RAISED: RefCell<Option<PyErr>> = const { RefCell::new(None) };
}

/// Make `python:` names resolvable (called when the extension module loads).
pub fn install() {
    vcpusim::policy::register_resolver(Resolver { prefix: PREFIX, form: "python:<module>:<Class>", resolve });
}

/// The prototypes of one run, set while it lasts.
pub struct Prototypes;

impl Prototypes {
    pub fn set(prototypes: HashMap<String, Py<PyAny>>) -> Self {
        PROTOTYPES.with(|p| *p.borrow_mut() = prototypes);
        RAISED.with(|r| r.borrow_mut().take());
        Prototypes
    }
}

impl Drop for Prototypes {
    fn drop(&mut self) {
        PROTOTYPES.with(|p| p.borrow_mut().clear());
    }
}

/// The exception a Python policy raised in the last run on this thread, if any.
pub fn take_raised() -> Option<PyErr> {
    RAISED.with(|r| r.borrow_mut().take())
}

/// Whether `name` names a Python policy.
pub fn is_python(name: &str) -> bool {
    name.starts_with(PREFIX)
}

/// Kinds resolved so far: name, the class each was made from, the kind. A name resolves to a new
/// kind when its class is another object (a module reloaded, a notebook cell run again).
static KINDS: Mutex<Vec<(String, Py<PyAny>, &'static PyKind)>> = Mutex::new(Vec::new());

fn resolve(name: &str) -> Result<&'static dyn PolicyKind, String> {
    Python::attach(|py| {
        let class = class_of(py, name)?;
        let known = |kinds: &Vec<(String, Py<PyAny>, &'static PyKind)>| {
            kinds.iter().find(|(n, c, _)| n == name && c.bind(py).is(&class)).map(|k| k.2)
        };
        if let Some(kind) = known(&KINDS.lock().unwrap_or_else(|e| e.into_inner())) {
            return Ok(kind as &dyn PolicyKind);
        }
        // Built with the lock released: reading the class runs Python code.
        let kind: &'static PyKind = Box::leak(Box::new(PyKind::new(py, name, &class)?));
        let mut kinds = KINDS.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(kind) = known(&kinds) {
            return Ok(kind as &dyn PolicyKind);
        }
        kinds.push((name.to_string(), class.unbind(), kind));
        Ok(kind as &dyn PolicyKind)
    })
}

/// The class `name` stands for: the type of its prototype, or `<Class>` imported from `<module>`.
fn class_of<'py>(py: Python<'py>, name: &str) -> Result<Bound<'py, PyAny>, String> {
    if let Some(proto) = PROTOTYPES.with(|p| p.borrow().get(name).map(|o| o.clone_ref(py))) {
        let proto = proto.into_bound(py);
        return Ok(if proto.is_instance_of::<pyo3::types::PyType>() { proto } else { proto.get_type().into_any() });
    }
    let rest = &name[PREFIX.len()..];
    let Some((module, qualname)) = rest.split_once(':').filter(|(m, q)| !m.is_empty() && !q.is_empty()) else {
        return Err("expected python:<module>:<Class>, such as \"python:my_policies:RoundRobin\"".to_string());
    };
    let mut class = py.import(module).map_err(|e| format!("cannot import module {module:?}: {e}"))?.into_any();
    for part in qualname.split('.') {
        class = class.getattr(part).map_err(|_| {
            format!("module {module:?} has no {qualname:?} (a class defined inside a function cannot be named; pass it as run(policy=...))")
        })?;
    }
    let base = py.import("vcpusim.policy").and_then(|m| m.getattr("Policy")).map_err(|e| format!("cannot import vcpusim.Policy: {e}"))?;
    let is_policy = class.cast::<pyo3::types::PyType>().ok().is_some_and(|t| t.is_subclass(&base).unwrap_or(false));
    if !is_policy {
        return Err(format!("{module}.{qualname} is not a subclass of vcpusim.Policy"));
    }
    Ok(class)
}

/// The callbacks a class may define beyond the three every policy must (`insert_vcpu`, `wake`,
/// `do_schedule`): those it leaves to `vcpusim.Policy` are never called.
#[derive(Clone, Copy, Debug, Default)]
struct Defines {
    adjust: bool,
    sleep: bool,
    yield_vcpu: bool,
    on_timer: bool,
    ipi_sent: bool,
    ipi_send_started: bool,
    ipi_handled: bool,
    pick_pcpu: bool,
    adjust_affinity: bool,
    remove_vcpu: bool,
    remove_pcpu: bool,
    add_pcpu: bool,
    check: bool,
}

/// A Python policy class as the registry knows it.
struct PyKind {
    name: &'static str,
    describe: &'static str,
    class: Py<PyAny>,
    specs: Vec<ParamSpec>,
    /// The class's `vm_params`: the per-VM settings `[vm.sched]` gives it.
    vm_specs: Vec<ParamSpec>,
    defines: Defines,
    hypervisor: Hypervisor,
    honours_cap: bool,
}

/// A class attribute, or `None` when the class does not set it (inherits `vcpusim.Policy`'s).
fn attr_of<'py>(class: &Bound<'py, PyAny>, base: &Bound<'py, PyAny>, attr: &str) -> Result<Option<Bound<'py, PyAny>>, String> {
    let mine = class.getattr(attr).map_err(|e| format!("{attr}: {e}"))?;
    let theirs = base.getattr(attr).map_err(|e| format!("{attr}: {e}"))?;
    Ok((!mine.is(&theirs)).then_some(mine))
}

impl PyKind {
    fn new(py: Python<'_>, name: &str, class: &Bound<'_, PyAny>) -> Result<Self, String> {
        let base = py.import("vcpusim.policy").and_then(|m| m.getattr("Policy")).map_err(|e| e.to_string())?;
        let defines = |attr: &str| attr_of(class, &base, attr).map(|a| a.is_some());
        for required in ["insert_vcpu", "wake", "do_schedule"] {
            if !defines(required)? {
                return Err(format!("the class does not define {required}(), which every policy answers"));
            }
        }
        let d = Defines {
            adjust: defines("adjust")?,
            sleep: defines("sleep")?,
            yield_vcpu: defines("yield_vcpu")?,
            on_timer: defines("on_timer")?,
            ipi_sent: defines("ipi_sent")?,
            ipi_send_started: defines("ipi_send_started")?,
            ipi_handled: defines("ipi_handled")?,
            pick_pcpu: defines("pick_pcpu")?,
            adjust_affinity: defines("adjust_affinity")?,
            remove_vcpu: defines("remove_vcpu")?,
            remove_pcpu: defines("remove_pcpu")?,
            add_pcpu: defines("add_pcpu")?,
            check: defines("check")?,
        };
        let hypervisor =
            match class.getattr("hypervisor").and_then(|h| h.extract::<String>()).map_err(|e| format!("hypervisor: {e}"))?.as_str() {
                "xen" => Hypervisor::Xen,
                "kvm" => Hypervisor::Kvm,
                other => return Err(format!("hypervisor = {other:?}: expected \"xen\" or \"kvm\"")),
            };
        let honours_cap = class.getattr("honours_cap").and_then(|h| h.extract::<bool>()).map_err(|e| format!("honours_cap: {e}"))?;
        let doc: String = class.getattr("__doc__").ok().and_then(|d| d.extract::<String>().ok()).unwrap_or_default();
        let describe = doc.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("a policy written in Python").to_string();
        Ok(PyKind {
            name: Box::leak(name.to_string().into_boxed_str()),
            describe: Box::leak(describe.into_boxed_str()),
            class: class.clone().unbind(),
            specs: param_specs(class, "params")?,
            vm_specs: param_specs(class, "vm_params")?,
            defines: d,
            hypervisor,
            honours_cap,
        })
    }
}

/// The class's `params` or `vm_params` (`attr`: a dict of name to default) as parameter specs: a
/// bool is a bool, an int (≥ 0) an integer, a float a number, a string with a unit ("30ms") a
/// duration, given to the policy in ns.
fn param_specs(class: &Bound<'_, PyAny>, attr: &str) -> Result<Vec<ParamSpec>, String> {
    let params = class.getattr(attr).map_err(|e| format!("{attr}: {e}"))?;
    let params = params.cast::<PyDict>().map_err(|_| format!("{attr}: expected a dict of parameter name to default"))?;
    let mut specs = Vec::new();
    for (key, default) in params.iter() {
        let key: String = key.extract().map_err(|_| format!("{attr}: a key {key} is not a string"))?;
        let name: &'static str = Box::leak(key.clone().into_boxed_str());
        let doc = if attr == "params" {
            "a parameter of the Python policy (its class's `params`)"
        } else {
            "a per-VM setting of the Python policy (its class's `vm_params`)"
        };
        let spec = if let Ok(b) = default.cast::<pyo3::types::PyBool>() {
            ParamSpec::boolean(name, b.is_true(), doc)
        } else if let Some(i) = default.cast::<pyo3::types::PyInt>().ok().and_then(|i| i.extract::<u64>().ok()) {
            ParamSpec::int(name, i, doc)
        } else if let Ok(f) = default.cast::<pyo3::types::PyFloat>() {
            ParamSpec::float(name, f.value(), doc)
        } else if let Some(ns) = default.extract::<String>().ok().and_then(|t| vcpusim::time::parse_duration(&t).ok()) {
            ParamSpec::duration(name, ns, doc)
        } else {
            return Err(format!("{attr}[{key:?}] = {default}: expected a bool, an integer ≥ 0, a float or a duration such as \"30ms\""));
        };
        specs.push(spec);
    }
    Ok(specs)
}

impl PolicyKind for PyKind {
    fn name(&self) -> &'static str {
        self.name
    }
    fn describe(&self) -> &'static str {
        self.describe
    }
    fn params(&self) -> Vec<ParamSpec> {
        self.specs.clone()
    }
    fn vm_params(&self) -> Vec<ParamSpec> {
        self.vm_specs.clone()
    }
    fn build(&self, params: &Params, shape: HostShape) -> Box<dyn Policy> {
        Python::attach(|py| {
            let made = make(py, self, params).map_err(|e| (e, "__init__".to_string()));
            let host = random(py, shape.seed)
                .and_then(|random| Py::new(py, Host::new(random)))
                .expect("a Host object and a random.Random can always be made");
            let (object, failed) = match made {
                Ok(o) => (Some(o), None),
                Err(e) => (None, Some(e)),
            };
            let vm_params = self.vm_specs.iter().map(|s| s.name).collect();
            Box::new(PyPolicy {
                name: self.name,
                defines: self.defines,
                vm_params,
                object,
                host,
                pending: failed,
                failed: false,
                message: None,
            }) as Box<dyn Policy>
        })
    }
    /// A Python policy offers none of the extensions (answered without building one: a build
    /// runs the user's constructor).
    fn offers(&self, _ext: vcpusim::policy::Extension) -> bool {
        false
    }
    fn supports_pool_changes(&self) -> bool {
        let d = self.defines;
        d.remove_vcpu && d.remove_pcpu && d.add_pcpu
    }
    fn honours_cap(&self) -> bool {
        self.honours_cap
    }
    fn hypervisor(&self) -> Hypervisor {
        self.hypervisor
    }
    fn ple_grow(&self) -> u64 {
        if self.hypervisor == Hypervisor::Kvm {
            2
        } else {
            1
        }
    }
}

/// The policy object of one pool: a deep copy of the run's prototype object, or
/// `Class(**params)` (the class named, or handed to the run).
fn make(py: Python<'_>, kind: &PyKind, params: &Params) -> PyResult<Py<PyAny>> {
    let proto = PROTOTYPES.with(|p| p.borrow().get(kind.name).map(|o| o.clone_ref(py)));
    if let Some(proto) = proto.as_ref().filter(|p| !p.bind(py).is_instance_of::<pyo3::types::PyType>()) {
        return Ok(py.import("copy")?.call_method1("deepcopy", (proto,))?.unbind());
    }
    let kwargs = PyDict::new(py);
    for (name, value) in params.iter() {
        set_param(&kwargs, name, value)?;
    }
    Ok(kind.class.bind(py).call((), Some(&kwargs))?.unbind())
}

/// `dict[name] = value` as Python sees a parameter: durations in ns, choices as strings.
fn set_param(dict: &Bound<'_, PyDict>, name: &str, value: &ParamValue) -> PyResult<()> {
    match value {
        ParamValue::Duration(ns) => dict.set_item(name, *ns),
        ParamValue::Int(i) => dict.set_item(name, *i),
        ParamValue::Float(f) => dict.set_item(name, *f),
        ParamValue::Bool(b) => dict.set_item(name, *b),
        ParamValue::Choice(c) => dict.set_item(name, c),
    }
}

fn random(py: Python<'_>, seed: u64) -> PyResult<Py<PyAny>> {
    Ok(py.import("random")?.getattr("Random")?.call1((seed,))?.unbind())
}

/// One pool's Python policy.
struct PyPolicy {
    name: &'static str,
    defines: Defines,
    /// The names of the class's `vm_params`, which `adjust` hands to `Host::vm_params`.
    vm_params: Vec<&'static str>,
    object: Option<Py<PyAny>>,
    host: Py<Host>,
    /// The constructor's exception, reported at the first call (which can stop the run).
    pending: Option<(PyErr, String)>,
    /// A callback raised: every later call of the run answers as simply as it can.
    failed: bool,
    message: Option<String>,
}

impl PyPolicy {
    /// Call the object with the host view set to `ctx` for the call; an exception stops the run.
    fn call<R>(
        &mut self,
        ctx: &mut PolicyCtx,
        callback: impl FnOnce() -> String,
        f: impl FnOnce(Python<'_>, &Bound<'_, PyAny>, &Bound<'_, Host>) -> PyResult<R>,
    ) -> Option<R> {
        if self.failed {
            return None;
        }
        Python::attach(|py| {
            if let Some((err, during)) = self.pending.take() {
                self.fail(py, ctx, err, during);
                return None;
            }
            let object = self.object.as_ref().expect("made, or pending holds why not").bind(py);
            let host = self.host.bind(py);
            host.borrow().enter(ctx);
            let result = f(py, object, host);
            host.borrow().leave();
            match result {
                Ok(r) => Some(r),
                Err(err) => {
                    self.fail(py, ctx, err, callback());
                    None
                }
            }
        })
    }

    fn fail(&mut self, py: Python<'_>, ctx: &mut PolicyCtx, err: PyErr, during: String) {
        let class = self.name.rsplit([':', '.']).next().unwrap_or(self.name);
        let at = format!("t = {:.6} ms", ctx.now() as f64 / 1e6);
        let what = err.value(py).get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "an exception".to_string());
        self.message = Some(format!("{during} raised {what}: {}", err.value(py)));
        // The note Python shows under the traceback: which callback, when.
        let note = format!("raised in {class}.{during} at {at} of simulated time (policy {:?})", self.name);
        let _ = err.value(py).call_method1(intern!(py, "add_note"), (note,));
        RAISED.with(|r| {
            r.borrow_mut().get_or_insert(err);
        });
        self.failed = true;
        ctx.fail();
    }
}

fn yield_reason(reason: YieldReason) -> (&'static str, Option<u32>) {
    match reason {
        YieldReason::PauseLoop => ("pause-loop", None),
        YieldReason::Hypercall => ("hypercall", None),
        YieldReason::DirectedTo(t) => ("directed", Some(t.0)),
    }
}

/// `do_schedule`'s answer read from Python: None, a vCPU id, or (vCPU id or None, slice in ns or
/// None).
fn decision(p: PcpuId, answer: &Bound<'_, PyAny>) -> PyResult<Decision> {
    if answer.is_none() {
        return Ok(Decision::idle());
    }
    let bad = || {
        PyTypeError::new_err(format!(
            "do_schedule(pCPU {p}) returned {}: expected None, a vCPU id, or (vCPU id or None, slice in ns or None)",
            answer.repr().map(|r| r.to_string()).unwrap_or_else(|_| "an object".to_string())
        ))
    };
    if let Ok(v) = answer.extract::<u32>() {
        return Ok(Decision::run(VcpuId(v), None));
    }
    let (next, slice): (Option<u32>, Option<Nanos>) = answer.extract().map_err(|_| bad())?;
    Ok(Decision { next: next.map(VcpuId), slice })
}

impl Policy for PyPolicy {
    fn name(&self) -> &'static str {
        self.name
    }

    fn insert_vcpu(&mut self, ctx: &mut PolicyCtx, v: VcpuId) {
        self.call(ctx, || format!("insert_vcpu(vCPU {v})"), |py, o, h| o.call_method1(intern!(py, "insert_vcpu"), (h, v.0)).map(drop));
    }

    fn wake(&mut self, ctx: &mut PolicyCtx, v: VcpuId, waker: Option<PcpuId>) {
        self.call(
            ctx,
            || format!("wake(vCPU {v})"),
            |py, o, h| o.call_method1(intern!(py, "wake"), (h, v.0, waker.map(|p| p.0))).map(drop),
        );
    }

    fn sleep(&mut self, ctx: &mut PolicyCtx, v: VcpuId) {
        if self.defines.sleep {
            self.call(ctx, || format!("sleep(vCPU {v})"), |py, o, h| o.call_method1(intern!(py, "sleep"), (h, v.0)).map(drop));
        }
    }

    fn yield_vcpu(&mut self, ctx: &mut PolicyCtx, v: VcpuId, reason: YieldReason) {
        if self.defines.yield_vcpu {
            let (why, target) = yield_reason(reason);
            self.call(
                ctx,
                || format!("yield_vcpu(vCPU {v}, {why:?})"),
                |py, o, h| o.call_method1(intern!(py, "yield_vcpu"), (h, v.0, why, target)).map(drop),
            );
        }
    }

    fn do_schedule(&mut self, ctx: &mut PolicyCtx, p: PcpuId) -> Decision {
        let answer = self.call(
            ctx,
            || format!("do_schedule(pCPU {p})"),
            |py, o, h| decision(p, &o.call_method1(intern!(py, "do_schedule"), (h, p.0))?),
        );
        // After a failure the run stops at the end of this event: keep what runs.
        answer.unwrap_or_else(|| {
            let current = ctx.host.pcpu(p).current.filter(|&c| ctx.host.vcpu(c).state == VcpuState::Running);
            Decision { next: current, slice: None }
        })
    }

    fn on_timer(&mut self, ctx: &mut PolicyCtx, key: u64) {
        if self.defines.on_timer {
            self.call(ctx, || format!("on_timer({key})"), |py, o, h| o.call_method1(intern!(py, "on_timer"), (h, key)).map(drop));
        }
    }

    fn ipi_sent(&mut self, ctx: &mut PolicyCtx, from: VcpuId, to: VcpuId, kind: IpiKind) {
        if self.defines.ipi_sent {
            self.call(
                ctx,
                || format!("ipi_sent(vCPU {from}, vCPU {to}, {:?})", kind.name()),
                |py, o, h| o.call_method1(intern!(py, "ipi_sent"), (h, from.0, to.0, kind.name())).map(drop),
            );
        }
    }

    fn ipi_send_started(&mut self, ctx: &mut PolicyCtx, v: VcpuId) {
        if self.defines.ipi_send_started {
            self.call(
                ctx,
                || format!("ipi_send_started(vCPU {v})"),
                |py, o, h| o.call_method1(intern!(py, "ipi_send_started"), (h, v.0)).map(drop),
            );
        }
    }

    fn ipi_handled(&mut self, ctx: &mut PolicyCtx, v: VcpuId, kind: IpiKind) {
        if self.defines.ipi_handled {
            self.call(
                ctx,
                || format!("ipi_handled(vCPU {v}, {:?})", kind.name()),
                |py, o, h| o.call_method1(intern!(py, "ipi_handled"), (h, v.0, kind.name())).map(drop),
            );
        }
    }

    fn adjust(&mut self, ctx: &mut PolicyCtx, vm: VmId, sched: &VmSched) {
        if !self.vm_params.is_empty() {
            Python::attach(|py| {
                let settings: Vec<(&'static str, ParamValue)> =
                    self.vm_params.iter().filter_map(|&name| sched.params.value(name).map(|v| (name, v.clone()))).collect();
                self.host.bind(py).borrow().vm_settings.borrow_mut().insert(vm.0, settings);
            });
        }
        if self.defines.adjust || self.pending.is_some() {
            let (weight, cap) = (sched.weight, sched.cap);
            self.call(
                ctx,
                || format!("adjust(VM {vm})"),
                |py, o, h| o.call_method1(intern!(py, "adjust"), (h, vm.0, weight, cap)).map(drop),
            );
        }
    }

    fn pick_pcpu(&mut self, ctx: &mut PolicyCtx, v: VcpuId) -> Option<PcpuId> {
        if !self.defines.pick_pcpu {
            return default_pick_pcpu(&ctx.host, v);
        }
        self.call(
            ctx,
            || format!("pick_pcpu(vCPU {v})"),
            |py, o, h| o.call_method1(intern!(py, "pick_pcpu"), (h, v.0))?.extract::<Option<u32>>(),
        )
        .flatten()
        .map(PcpuId)
    }

    fn adjust_affinity(&mut self, ctx: &mut PolicyCtx, v: VcpuId) {
        if self.defines.adjust_affinity {
            self.call(
                ctx,
                || format!("adjust_affinity(vCPU {v})"),
                |py, o, h| o.call_method1(intern!(py, "adjust_affinity"), (h, v.0)).map(drop),
            );
        }
    }

    fn remove_vcpu(&mut self, ctx: &mut PolicyCtx, v: VcpuId) {
        self.call(ctx, || format!("remove_vcpu(vCPU {v})"), |py, o, h| o.call_method1(intern!(py, "remove_vcpu"), (h, v.0)).map(drop));
    }

    fn remove_pcpu(&mut self, ctx: &mut PolicyCtx, p: PcpuId) {
        self.call(ctx, || format!("remove_pcpu(pCPU {p})"), |py, o, h| o.call_method1(intern!(py, "remove_pcpu"), (h, p.0)).map(drop));
    }

    fn add_pcpu(&mut self, ctx: &mut PolicyCtx, p: PcpuId) {
        self.call(ctx, || format!("add_pcpu(pCPU {p})"), |py, o, h| o.call_method1(intern!(py, "add_pcpu"), (h, p.0)).map(drop));
    }

    fn failure(&mut self) -> Option<String> {
        self.message.clone()
    }

    fn check(&self, view: &HostView) -> Result<(), String> {
        if !self.defines.check || self.failed {
            return Ok(());
        }
        let Some(object) = &self.object else { return Ok(()) };
        Python::attach(|py| {
            let host = self.host.bind(py);
            host.borrow().enter_view(view);
            let answer = object.bind(py).call_method1(intern!(py, "check"), (host,));
            host.borrow().leave();
            match answer {
                Ok(a) if a.is_none() => Ok(()),
                Ok(a) => Err(format!("{}.check: {}", self.name, a.str().map(|s| s.to_string()).unwrap_or_default())),
                Err(e) => Err(format!("{}.check raised {}", self.name, e)),
            }
        })
    }
}

/// The host as a Python policy sees it during one callback (`vcpusim.Host` in the docs): the
/// policy's view and its requests. Valid only during the call it is passed to; one object per
/// pool, reused.
#[pyclass(frozen, unsendable, module = "vcpusim", name = "Host")]
pub struct Host {
    /// The context of the call in progress, or null.
    ctx: Cell<*mut PolicyCtx<'static>>,
    /// The view alone (check mode's `check`), or null.
    view: Cell<*const HostView<'static>>,
    /// The policy's timers by its keys (made on first use, Xen `init_timer`).
    timers: RefCell<HashMap<u64, Timer>>,
    random: Py<PyAny>,
    /// Each VM's `[vm.sched]` settings as its last `adjust` gave them (the class's `vm_params`).
    vm_settings: RefCell<HashMap<u32, Vec<(&'static str, ParamValue)>>>,
}

impl Host {
    fn new(random: Py<PyAny>) -> Self {
        Host {
            ctx: Cell::new(std::ptr::null_mut()),
            view: Cell::new(std::ptr::null()),
            timers: RefCell::new(HashMap::new()),
            random,
            vm_settings: RefCell::new(HashMap::new()),
        }
    }
    fn enter(&self, ctx: &mut PolicyCtx) {
        let ctx: *mut PolicyCtx = ctx;
        self.ctx.set(ctx.cast());
        // SAFETY: `ctx` is valid and borrowed by no one else until `leave` (the caller passes
        // it to Python and does not touch it until the Python call returns).
        self.view.set(unsafe { &(*ctx).host as *const HostView }.cast());
    }
    fn enter_view(&self, view: &HostView) {
        let view: *const HostView = view;
        self.view.set(view.cast());
    }
    fn leave(&self) {
        self.ctx.set(std::ptr::null_mut());
        self.view.set(std::ptr::null());
    }
    fn view(&self) -> PyResult<&HostView<'_>> {
        let view = self.view.get();
        if view.is_null() {
            return Err(PyRuntimeError::new_err("the host is valid only during the callback it was passed to"));
        }
        // SAFETY: set by `enter` / `enter_view` for the duration of a callback, during which
        // the view outlives every use (the borrow ends with this method's caller).
        Ok(unsafe { &*view })
    }
    fn with_ctx<R>(&self, what: &str, f: impl FnOnce(&mut PolicyCtx) -> PyResult<R>) -> PyResult<R> {
        let ctx = self.ctx.get();
        if ctx.is_null() {
            let why = if self.view.get().is_null() { "valid only during the callback it was passed to" } else { "read-only in check()" };
            return Err(PyRuntimeError::new_err(format!("host.{what}: the host is {why}")));
        }
        // SAFETY: as in `view`; no other reference to the context lives during this call.
        f(unsafe { &mut *ctx })
    }
    fn vcpu_id(&self, v: u32) -> PyResult<VcpuId> {
        let n = self.view()?.vcpus.len();
        if (v as usize) < n {
            Ok(VcpuId(v))
        } else {
            Err(PyIndexError::new_err(format!("vCPU {v} does not exist (the host has {n}: 0..{})", n.saturating_sub(1))))
        }
    }
    /// What the host knows of vCPU `v` (checked).
    fn info(&self, v: u32) -> PyResult<&VcpuInfo> {
        let v = self.vcpu_id(v)?;
        Ok(self.view()?.vcpu(v))
    }
    fn pcpu_id(&self, p: u32) -> PyResult<PcpuId> {
        let n = self.view()?.pcpus.len();
        if (p as usize) < n {
            Ok(PcpuId(p))
        } else {
            Err(PyIndexError::new_err(format!("pCPU {p} does not exist (the host has {n}: 0..{})", n.saturating_sub(1))))
        }
    }
    fn vm_id(&self, vm: u32) -> PyResult<VmId> {
        let n = self.view()?.vms.len();
        if (vm as usize) < n {
            Ok(VmId(vm))
        } else {
            Err(PyIndexError::new_err(format!("VM {vm} does not exist (the host has {n})")))
        }
    }
    fn place(&self, p: u32) -> PyResult<PcpuPlace> {
        let p = self.pcpu_id(p)?;
        Ok(self.view()?.topology.place(p))
    }
}

#[pymethods]
impl Host {
    /// The simulated time now, in ns.
    #[getter]
    fn now(&self) -> PyResult<u64> {
        Ok(self.view()?.now)
    }
    /// This policy's pCPUs (its pool's), in increasing order.
    #[getter]
    fn pcpus(&self) -> PyResult<Vec<u32>> {
        Ok(self.view()?.pcpu_ids().map(|p| p.0).collect())
    }
    /// How many vCPUs the host has (ids 0..nvcpus; a policy schedules those of its pool).
    #[getter]
    fn nvcpus(&self) -> PyResult<usize> {
        Ok(self.view()?.vcpus.len())
    }
    /// How many pCPUs the host has (ids 0..npcpus; a policy schedules those of its pool).
    #[getter]
    fn npcpus(&self) -> PyResult<usize> {
        Ok(self.view()?.pcpus.len())
    }
    /// How many VMs the host has.
    #[getter]
    fn nvms(&self) -> PyResult<usize> {
        Ok(self.view()?.vms.len())
    }
    /// The policy's own random stream (a `random.Random` seeded from the run's seed).
    #[getter]
    fn random(&self, py: Python<'_>) -> Py<PyAny> {
        self.random.clone_ref(py)
    }
    /// VM `vm`'s per-VM settings: the class's `vm_params`, with what the VM's `[vm.sched]`
    /// gives (durations in ns); empty before the VM's first `adjust` or without `vm_params`.
    fn vm_params<'py>(&self, py: Python<'py>, vm: u32) -> PyResult<Bound<'py, PyDict>> {
        let nvms = self.view()?.vms.len();
        if vm as usize >= nvms {
            return Err(PyIndexError::new_err(format!("VM {vm}: the host has VMs 0..{nvms}")));
        }
        let out = PyDict::new(py);
        for (name, value) in self.vm_settings.borrow().get(&vm).into_iter().flatten() {
            set_param(&out, name, value)?;
        }
        Ok(out)
    }
    /// The vCPU running on pCPU `p`, or None.
    fn current(&self, p: u32) -> PyResult<Option<u32>> {
        let p = self.pcpu_id(p)?;
        Ok(self.view()?.pcpu(p).current.map(|v| v.0))
    }
    /// `"running"`, `"runnable"` or `"halted"`.
    fn state<'py>(&self, py: Python<'py>, v: u32) -> PyResult<Bound<'py, PyString>> {
        Ok(match self.info(v)?.state {
            VcpuState::Running => intern!(py, "running"),
            VcpuState::Runnable => intern!(py, "runnable"),
            VcpuState::Halted => intern!(py, "halted"),
        }
        .clone())
    }
    /// The VM of vCPU `v`.
    fn vm(&self, v: u32) -> PyResult<u32> {
        Ok(self.info(v)?.vm.0)
    }
    /// `v`'s index in its VM (vCPU0, vCPU1, ...).
    fn index(&self, v: u32) -> PyResult<u32> {
        Ok(self.info(v)?.index)
    }
    /// The pCPU `v` runs on, or None when it is not running.
    fn pcpu(&self, v: u32) -> PyResult<Option<u32>> {
        Ok(self.info(v)?.pcpu.map(|p| p.0))
    }
    /// The pCPU `v` last ran on (where it is placed first, before it ever ran).
    fn last_pcpu(&self, v: u32) -> PyResult<u32> {
        Ok(self.info(v)?.last_pcpu.0)
    }
    /// `v`'s total time on a pCPU so far, ns (up to its last switch-out or the start of this run).
    fn run_time(&self, v: u32) -> PyResult<u64> {
        Ok(self.info(v)?.run_time)
    }
    /// When `v`'s current run started, ns (meaningful while it runs).
    fn run_start(&self, v: u32) -> PyResult<u64> {
        Ok(self.info(v)?.run_start)
    }
    /// Whether `v` was descheduled involuntarily and is still runnable.
    fn preempted(&self, v: u32) -> PyResult<bool> {
        Ok(self.info(v)?.preempted)
    }
    /// Whether `v` belongs to this policy's pool.
    fn owns(&self, v: u32) -> PyResult<bool> {
        let v = self.vcpu_id(v)?;
        Ok(self.view()?.owns_vcpu(v))
    }
    /// Whether `v` may run on `p` (its pool and hard affinity).
    fn may_run(&self, v: u32, p: u32) -> PyResult<bool> {
        let (v, p) = (self.vcpu_id(v)?, self.pcpu_id(p)?);
        Ok(self.view()?.may_run(v, p))
    }
    /// Whether `v` may run on `p` and `p` is in its soft affinity.
    fn prefers(&self, v: u32, p: u32) -> PyResult<bool> {
        let (v, p) = (self.vcpu_id(v)?, self.pcpu_id(p)?);
        Ok(self.view()?.prefers(v, p))
    }
    /// The name of VM `vm`.
    fn vm_name(&self, vm: u32) -> PyResult<String> {
        let vm = self.vm_id(vm)?;
        Ok(self.view()?.vm(vm).name.clone())
    }
    /// The vCPUs of VM `vm`, by index.
    fn vm_vcpus(&self, vm: u32) -> PyResult<Vec<u32>> {
        let vm = self.vm_id(vm)?;
        Ok(self.view()?.vm(vm).vcpus.iter().map(|v| v.0).collect())
    }
    /// The socket of pCPU `p`.
    fn socket(&self, p: u32) -> PyResult<u32> {
        Ok(self.place(p)?.socket)
    }
    /// The NUMA node of pCPU `p`.
    fn node(&self, p: u32) -> PyResult<u32> {
        Ok(self.place(p)?.node)
    }
    /// The core of pCPU `p` (host-wide number; SMT threads of one core share it).
    fn core(&self, p: u32) -> PyResult<u32> {
        Ok(self.place(p)?.core)
    }
    /// The last-level cache of pCPU `p` (host-wide number).
    fn llc(&self, p: u32) -> PyResult<u32> {
        Ok(self.place(p)?.llc)
    }
    /// Ask for `do_schedule` on pCPU `p` of this pool (Xen: raise SCHEDULE_SOFTIRQ there),
    /// after the callback returns.
    fn reschedule(&self, p: u32) -> PyResult<()> {
        let p = self.pcpu_id(p)?;
        if !self.view()?.owns_pcpu(p) {
            return Err(PyValueError::new_err(format!("host.reschedule: pCPU {p} is not in this policy's pool")));
        }
        self.with_ctx("reschedule", |ctx| {
            ctx.reschedule(p);
            Ok(())
        })
    }
    /// Arm the timer `key` (any integer ≥ 0 the policy chooses) to fire at `at` ns (clamped to
    /// now): `on_timer(host, key)` then. A pending expiry of the same key is cancelled first.
    fn set_timer(&self, key: u64, at: u64) -> PyResult<()> {
        self.with_ctx("set_timer", |ctx| {
            let timer = *self.timers.borrow_mut().entry(key).or_insert_with(|| ctx.init_timer(key));
            ctx.set_timer(&timer, at);
            Ok(())
        })
    }
    /// Disarm the timer `key`; harmless if it is not armed.
    fn stop_timer(&self, key: u64) -> PyResult<()> {
        self.with_ctx("stop_timer", |ctx| {
            if let Some(timer) = self.timers.borrow().get(&key) {
                ctx.stop_timer(timer);
            }
            Ok(())
        })
    }
    fn __repr__(&self) -> String {
        match self.view() {
            Ok(v) => format!("<vcpusim.Host at t={} ns: {} pCPUs in this pool, {} vCPUs>", v.now, v.npcpus(), v.vcpus.len()),
            Err(_) => "<vcpusim.Host outside a callback>".to_string(),
        }
    }
}
