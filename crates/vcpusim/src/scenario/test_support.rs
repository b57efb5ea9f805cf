//! What the loader's tests share: loading a scenario text, its error message, a minimal valid
//! scenario to splice keys into, and the cpupool scenario with its masks.

use super::load::from_toml_str;
use super::spec::Scenario;
use crate::error::SimError;
use crate::hardware::cpumask::{parse_cpulist, CpuMask};
use std::sync::Arc;
use toml::Value;

pub(super) fn load(text: &str) -> Result<Scenario, SimError> {
    from_toml_str(text, "s.toml")
}

pub(super) fn message(text: &str) -> String {
    match load(text) {
        Ok(_) => panic!("expected an error for:\n{text}"),
        Err(e) => e.to_string(),
    }
}

/// A minimal valid scenario with a custom program, so these tests do not depend on the
/// built-in workloads' parameters; `extra` is spliced in where a test needs it.
pub(super) fn minimal(host_extra: &str, vm_extra: &str) -> String {
    format!(
        "[host]\npcpus = 2\n{host_extra}\n\n[[vm]]\nname = \"a\"\nvcpus = 2\nworkload = \"program\"\n{vm_extra}\n\
         [vm.program]\nthreads = [[{{compute = \"1ms\"}}, {{progress = true}}]]\n"
    )
}

pub(super) fn assert_error(text: &str, want_prefix: &str) {
    let got = message(text);
    assert!(got.starts_with(&format!("s.toml: {want_prefix}")), "\n got: {got}\nwant: s.toml: {want_prefix}");
}

/// A parameter value written as a user would write it in TOML.
pub(super) fn to_toml(value: &crate::params::ParamValue) -> Value {
    use crate::params::ParamValue as P;
    match value {
        P::Duration(ns) => Value::String(crate::time::format_duration(*ns)),
        P::Int(i) => Value::Integer(*i as i64),
        P::Float(f) => Value::Float(*f),
        P::Bool(b) => Value::Boolean(*b),
        P::Choice(c) => Value::String(c.clone()),
    }
}

/// A 12-pCPU credit host with pool "fast" on pCPUs 10-11, a pool change moving pCPU 9 into it
/// at 2s, and VM "web" in it with affinity and a cap; [`pools`] edits it.
pub(super) const POOLS: &str = "[host]\npcpus = 12\npolicy = \"credit\"\n\n\
    [[host.pool]]\nname = \"fast\"\npcpus = \"10-11\"\npolicy = \"credit\"\nparams = { tslice = \"1ms\" }\n\n\
    [[host.pool_change]]\nat = \"2s\"\npcpu = 9\nto = \"fast\"\n\n\
    [[vm]]\nname = \"web\"\nvcpus = 4\npool = \"fast\"\ncpus = \"10-11\"\ncpus_soft = \"11\"\ncap = 150\nworkload = \"cpu-bound\"\n";

/// [`POOLS`] with each `(from, to)` replaced once, and `extra` appended.
pub(super) fn pools(replace: &[(&str, &str)], extra: &str) -> String {
    let mut text = POOLS.to_string();
    for (from, to) in replace {
        assert!(text.contains(from), "{from:?} not in the pool scenario");
        text = text.replacen(from, to, 1);
    }
    text + extra
}

pub(super) fn mask(text: &str, n: usize) -> CpuMask {
    parse_cpulist(text, n).unwrap()
}

/// A vCPU affinity mask as `VmSpec::cpus` holds it.
pub(super) fn shared(text: &str, n: usize) -> Arc<CpuMask> {
    Arc::new(mask(text, n))
}

/// Whether the masks are all one allocation.
pub(super) fn one_mask(masks: &[&Arc<CpuMask>]) -> bool {
    masks.windows(2).all(|w| Arc::ptr_eq(w[0], w[1]))
}
