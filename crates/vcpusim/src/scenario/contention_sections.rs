//! `[host.contention]`, `[vm.contention]` and `[[vm]] memory_nodes`: seed 001's contention model
//! (hardware/contention.rs, sim/mechanisms/contention_model.rs). `[host.contention]` turns sources on (all off by
//! default; without the table every pCPU runs at nominal speed and no output changes);
//! `[vm.contention]` overrides the VM's workload sensitivities (workload/sensitivity.rs); and
//! `memory_nodes` says where the VM's memory lives. Keys are declared once here for the loader
//! and the catalog.

use super::section::Section;
use super::sections::{read, SectionKey};
use super::spec::MemoryNodes;
use crate::error::SimError;
use crate::hardware::contention::{fraction_to_ppm, Sensitivity, Source, Switches};
use crate::params::{show_toml, ParamSpec, ParamValue};
use toml::Value;

/// `[host.contention]` keys: one switch per source, all off by default.
pub fn host_contention_keys() -> Vec<SectionKey> {
    let doc = |s: Source| match s {
        Source::ModuleFrontend => {
            "A core runs slower while the other core of its CMT module (its sibling group) is busy: the module's \
             shared instruction fetch and decode (seed 001 section III-F, Figure 16)"
        }
        Source::ModuleFpu => {
            "A core runs slower while the other core of its CMT module is busy: the module's shared floating-point \
             unit (seed 001 Figure 16)"
        }
        Source::Llc => {
            "A core runs slower the more of the other cores sharing its last-level cache ([host] llc) are busy \
             (seed 001 section V-B, Figure 16)"
        }
        Source::NumaRemote => "A vCPU runs slower by the share of its VM's memory ([[vm]] memory_nodes) that is not on its pCPU's node",
    };
    Source::ALL.iter().map(|&s| SectionKey::defaulted(ParamSpec::boolean(s.name(), false, doc(s)))).collect()
}

/// `[vm.contention]` keys: one sensitivity per source, defaulting to the workload's row.
pub fn vm_contention_keys() -> Vec<SectionKey> {
    Source::ALL
        .iter()
        .map(|&s| {
            SectionKey::optional(ParamSpec::float(
                s.name(),
                0.0,
                "The VM's slowdown in [0, 1) when this source is fully contended, replacing its workload's \
                 (workload/sensitivity.rs; docs/model.md \"Contention\"); unset: the workload's",
            ))
        })
        .collect()
}

/// `[host.contention]`: which sources are on.
pub fn host_contention(section: &Section) -> Result<Switches, SimError> {
    let mut on = Switches::default();
    for (name, value) in read(section, &host_contention_keys())? {
        if let (Some(ParamValue::Bool(b)), Some(s)) = (value, Source::ALL.iter().find(|s| s.name() == name)) {
            on.0[s.index()] = b;
        }
    }
    Ok(on)
}

/// `[vm.contention]` on top of the workload's sensitivity `base`.
pub fn vm_contention(section: &Section, base: Sensitivity) -> Result<Sensitivity, SimError> {
    let mut sens = base;
    for (name, value) in read(section, &vm_contention_keys())? {
        let (Some(ParamValue::Float(x)), Some(s)) = (value, Source::ALL.iter().find(|s| s.name() == name)) else { continue };
        sens.0[s.index()] = fraction_to_ppm(x).map_err(|m| section.error_at(name, m))?;
    }
    Ok(sens)
}

/// `memory_nodes`: `"auto"` (the default) or a non-empty array of distinct NUMA node numbers
/// below `numa_nodes`.
pub fn memory_nodes(vm: &Section, numa_nodes: u32) -> Result<MemoryNodes, SimError> {
    let expected = format!(
        "\"auto\" or an array of distinct NUMA node numbers from 0 to {} (the host has numa_nodes = {numa_nodes}), such as [0, 1]",
        numa_nodes - 1
    );
    match vm.get("memory_nodes") {
        None => Ok(MemoryNodes::Auto),
        Some(Value::String(s)) if s == "auto" => Ok(MemoryNodes::Auto),
        Some(Value::Array(list)) if !list.is_empty() => {
            let mut nodes = Vec::new();
            for value in list {
                match value {
                    Value::Integer(n) if (0..numa_nodes as i64).contains(n) && !nodes.contains(&(*n as u32)) => nodes.push(*n as u32),
                    Value::Integer(n) if (0..numa_nodes as i64).contains(n) => {
                        return Err(vm.error_at("memory_nodes", format!("node {n} is listed twice; expected {expected}")))
                    }
                    other => {
                        return Err(vm.error_at(
                            "memory_nodes",
                            format!("got node {} in {}; expected {expected}", show_toml(other), show_toml(&Value::Array(list.clone()))),
                        ))
                    }
                }
            }
            nodes.sort_unstable();
            Ok(MemoryNodes::Nodes(nodes))
        }
        Some(other) => Err(vm.error_at("memory_nodes", format!("expected {expected}, got {}", show_toml(other)))),
    }
}
