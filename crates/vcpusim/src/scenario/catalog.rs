//! The catalog `vcpusim list` prints: every policy and workload with its parameters, and the keys
//! of the fixed sections (`[guest]`, `[host.ple]`, `[host.costs]`, `[host.uvf]`, `[vm.uvf]`, `[run]`), each with its type,
//! default, accepted values and meaning. Built from the same spec lists the loader checks
//! against, so it cannot disagree with it.

use super::load::DEFAULT_POLICY;
use super::program_ops;
use super::sections::{self, SectionKey};
use super::uvf_sections;
use crate::hypervisor::policies;
use crate::params::{ParamKind, ParamSpec, ParamValue};
use crate::time::format_duration;
use crate::workload;
use serde::Serialize;
use serde_json::Value;

#[derive(Serialize)]
struct Catalog {
    policies: Vec<PolicyEntry>,
    workloads: Vec<WorkloadEntry>,
    guest: Vec<KeyEntry>,
    host_ple: Vec<KeyEntry>,
    host_costs: Vec<KeyEntry>,
    host_uvf: Vec<KeyEntry>,
    vm_uvf: Vec<KeyEntry>,
    run: Vec<KeyEntry>,
}

#[derive(Serialize)]
struct PolicyEntry {
    name: &'static str,
    description: &'static str,
    params: Vec<KeyEntry>,
}

#[derive(Serialize)]
struct WorkloadEntry {
    name: &'static str,
    description: &'static str,
    progress_unit: &'static str,
    params: Vec<KeyEntry>,
}

/// One parameter or key.
#[derive(Serialize)]
struct KeyEntry {
    name: &'static str,
    #[serde(rename = "type")]
    kind: &'static str,
    /// `null` when leaving the key out means "not set".
    default: Value,
    /// What the loader accepts, in the words of its error messages.
    expected: String,
    doc: &'static str,
}

fn kind_name(kind: ParamKind) -> &'static str {
    match kind {
        ParamKind::Duration => "duration",
        ParamKind::Int => "int",
        ParamKind::Float => "float",
        ParamKind::Bool => "bool",
        ParamKind::Choice(_) => "choice",
    }
}

/// Defaults as they would be written in a scenario: durations as strings with a unit.
fn default_json(value: &ParamValue) -> Value {
    match value {
        ParamValue::Duration(ns) => Value::from(format_duration(*ns)),
        ParamValue::Int(v) => Value::from(*v),
        ParamValue::Float(v) => Value::from(*v),
        ParamValue::Bool(v) => Value::from(*v),
        ParamValue::Choice(s) => Value::from(s.as_str()),
    }
}

fn param_entry(spec: &ParamSpec) -> KeyEntry {
    KeyEntry {
        name: spec.name,
        kind: kind_name(spec.kind),
        default: default_json(&spec.default),
        expected: spec.expected(),
        doc: spec.doc,
    }
}

fn section_entries(keys: &[SectionKey]) -> Vec<KeyEntry> {
    keys.iter()
        .map(|k| KeyEntry {
            default: if k.optional { Value::Null } else { default_json(&k.spec.default) },
            ..param_entry(&k.spec)
        })
        .collect()
}

fn catalog() -> Catalog {
    let policies = policies::registry()
        .iter()
        .map(|p| PolicyEntry {
            name: p.name(),
            description: p.describe(),
            params: p.params().iter().map(param_entry).collect(),
        })
        .collect();
    let mut workloads: Vec<WorkloadEntry> = workload::registry()
        .iter()
        .map(|w| WorkloadEntry {
            name: w.name(),
            description: w.describe(),
            progress_unit: w.progress_unit(),
            params: w.params().iter().map(param_entry).collect(),
        })
        .collect();
    workloads.push(WorkloadEntry {
        name: program_ops::WORKLOAD_NAME,
        description: program_ops::DESCRIPTION,
        progress_unit: program_ops::PROGRESS_UNIT,
        params: Vec::new(),
    });
    // The PLE growth default depends on the policy; show the default policy's.
    let grow = policies::find(DEFAULT_POLICY).map_or(2, |p| p.ple_grow());
    Catalog {
        policies,
        workloads,
        guest: section_entries(&sections::guest_keys()),
        host_ple: section_entries(&sections::ple_keys(grow)),
        host_costs: section_entries(&sections::costs_keys()),
        host_uvf: section_entries(&uvf_sections::host_uvf_keys()),
        vm_uvf: section_entries(&uvf_sections::vm_uvf_keys()),
        run: section_entries(&sections::run_keys()),
    }
}

/// The catalog as pretty-printed JSON.
pub fn catalog_json() -> String {
    serde_json::to_string_pretty(&catalog()).expect("the catalog holds only strings, numbers and booleans")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed() -> Value {
        serde_json::from_str(&catalog_json()).expect("the catalog is valid JSON")
    }

    fn names(list: &Value) -> Vec<String> {
        list.as_array().unwrap().iter().map(|e| e["name"].as_str().unwrap().to_string()).collect()
    }

    #[test]
    fn every_policy_appears_with_all_its_params() {
        let json = parsed();
        let listed = json["policies"].as_array().unwrap();
        assert_eq!(listed.len(), policies::registry().len());
        for (entry, kind) in listed.iter().zip(policies::registry()) {
            assert_eq!(entry["name"], kind.name());
            assert_eq!(entry["description"], kind.describe());
            let want: Vec<&str> = kind.params().iter().map(|s| s.name).collect();
            assert_eq!(names(&entry["params"]), want);
        }
    }

    #[test]
    fn every_workload_appears_with_all_its_params() {
        let json = parsed();
        let listed = json["workloads"].as_array().unwrap();
        assert_eq!(listed.len(), workload::registry().len() + 1);
        for (entry, w) in listed.iter().zip(workload::registry()) {
            assert_eq!(entry["name"], w.name());
            assert_eq!(entry["progress_unit"], w.progress_unit());
            let want: Vec<&str> = w.params().iter().map(|s| s.name).collect();
            assert_eq!(names(&entry["params"]), want);
            for p in entry["params"].as_array().unwrap() {
                for field in ["name", "type", "default", "expected", "doc"] {
                    assert!(p.get(field).is_some(), "{} lacks {field}", p["name"]);
                }
            }
        }
        let custom = listed.last().unwrap();
        assert_eq!(custom["name"], "program");
        assert_eq!(custom["progress_unit"], "Progress ops executed");
    }

    #[test]
    fn fixed_sections_list_their_keys_with_defaults() {
        let json = parsed();
        assert_eq!(names(&json["guest"]), ["futex_wake_ipi", "tlb_targets", "spinlock", "tick", "futex_buckets"]);
        assert_eq!(names(&json["host_ple"]), ["enabled", "window_cycles", "cpu_ghz", "grow", "window_max_cycles"]);
        assert_eq!(
            names(&json["host_costs"]),
            ["ipi_send", "ipi_delivery", "ipi_handler", "context_switch", "hlt_exit", "tlb_flush_per_page", "syscall", "virt_overhead"]
        );
        assert_eq!(names(&json["run"]), ["duration", "seed", "max_events", "check", "sample_every"]);
        let tick = &json["guest"][3];
        assert_eq!((tick["type"].as_str(), tick["default"].as_str()), (Some("duration"), Some("4ms")));
        assert_eq!(json["host_ple"][1]["default"], 4096);
        assert_eq!(json["host_costs"][0]["default"], "2us");
        assert_eq!(json["run"][0]["default"], "10s");
        assert!(json["run"][2]["default"].is_null(), "max_events has no default");
        assert_eq!(json["guest"][2]["expected"], "one of ticket, tas");
        for section in ["guest", "host_ple", "host_costs", "run"] {
            for key in json[section].as_array().unwrap() {
                assert!(!key["doc"].as_str().unwrap().is_empty(), "{section}.{} has no doc", key["name"]);
            }
        }
    }
}
