//! NUMA placement keys: `[host] node_memory`, `[[vm]] memory` and `[[vm]] numa_placement`
//! (xl's automatic NUMA placement and the domain node affinity of Xen 4.4; hypervisor/xl_numa.rs,
//! hypervisor/node_affinity.rs). Defaults are resolved here, so the spec says what happens.

use super::section::{error, int_value, memory_value, Section};
use super::spec::{HostSpec, NumaPlacement, DEFAULT_VM_MEMORY_MIB, UNBOUNDED_NODE_MEMORY_MIB};
use crate::error::SimError;
use crate::hypervisor::policies::{self, HostFeature};
use crate::params::show_toml;
use toml::Value;

/// `[host] node_memory`: each node's free memory when the first VM is created, one size for every
/// node or an array with one per node; unbounded when absent.
pub fn node_memory(host: &Section, numa_nodes: u32) -> Result<Vec<u64>, SimError> {
    let key = "node_memory";
    match host.get(key) {
        None => Ok(vec![UNBOUNDED_NODE_MEMORY_MIB; numa_nodes as usize]),
        Some(Value::Array(list)) => {
            if list.len() != numa_nodes as usize {
                return Err(host.error_at(
                    key,
                    format!(
                        "expected one size per NUMA node ({numa_nodes}, as numa_nodes = {numa_nodes}), got {} entries; \
                         or write a single size such as \"80GB\" for every node",
                        list.len()
                    ),
                ));
            }
            list.iter().enumerate().map(|(i, v)| memory_value(host.file, &format!("{}[{i}]", host.key(key)), v)).collect()
        }
        Some(v) => Ok(vec![memory_value(host.file, &host.key(key), v)?; numa_nodes as usize]),
    }
}

/// `[[vm]] memory` (MiB) and `numa_placement` of VM `name` in pool `pool`. Absent
/// `numa_placement` means what `xl create` does: automatic placement when the config sets no
/// `cpus` (xl_cmdimpl.c turns it off when it parses `cpus=`; libxl_create.c defaults it on) and
/// the pool's scheduler reads node affinity (credit as Xen 4.4); otherwise `Off`. `"auto"` and
/// `{ nodes = [...] }` are refused where the scheduler does not read node affinity.
pub fn vm_numa(section: &Section, host: &HostSpec, name: &str, pool: usize) -> Result<(u64, NumaPlacement), SimError> {
    let memory = match section.get("memory") {
        None => DEFAULT_VM_MEMORY_MIB,
        Some(v) => memory_value(section.file, &section.key("memory"), v)?,
    };
    let spec = &host.pools[pool];
    let kind = policies::find(&spec.policy).expect("pool policies are checked against the registry");
    let lacks = kind.lacks(&spec.params, HostFeature::NodeAffinity);
    let key = "numa_placement";
    let expected = "\"auto\" (xl's automatic NUMA placement), \"off\" (automatic node affinity, from the vCPUs' \
                    affinity) or a table { nodes = [0, 2] }";
    let placement = match section.get(key) {
        None if lacks.is_none() && section.get("cpus").is_none() => NumaPlacement::Auto,
        None => NumaPlacement::Off,
        Some(Value::String(s)) if s == "off" => NumaPlacement::Off,
        Some(Value::String(s)) if s == "auto" => NumaPlacement::Auto,
        Some(Value::Table(t)) => {
            let path = section.key(key);
            let sub = Section::new(section.file, path.clone(), t);
            sub.allow_only(&["nodes"])?;
            let list = match sub.get("nodes") {
                Some(Value::Array(list)) if !list.is_empty() => list,
                Some(other) => {
                    return Err(sub.error_at("nodes", format!("expected a non-empty array of NUMA node numbers, got {}", show_toml(other))))
                }
                None => return Err(sub.error_at("nodes", "missing; expected a non-empty array of NUMA node numbers such as [0, 2]")),
            };
            let last = i64::from(host.topology.numa_nodes) - 1;
            let mut nodes = Vec::new();
            for (i, v) in list.iter().enumerate() {
                let item = format!("{}[{i}]", sub.key("nodes"));
                let n = int_value(section.file, &item, v, 0, last).map_err(|e| match e {
                    SimError::Scenario { file, key, message } => {
                        SimError::Scenario { file, key, message: format!("{message} (the host has NUMA nodes 0-{last})") }
                    }
                    other => other,
                })? as u32;
                if nodes.contains(&n) {
                    return Err(error(section.file, &item, format!("node {n} is listed twice")));
                }
                nodes.push(n);
            }
            NumaPlacement::Nodes(nodes)
        }
        Some(other) => return Err(section.error_at(key, format!("expected {expected}, got {}", show_toml(other)))),
    };
    if placement != NumaPlacement::Off {
        if let Some(why) = lacks {
            return Err(section.error_at(
                key,
                format!(
                    "got {}, but in VM {name:?}'s pool {:?}, {why}; write numa_placement = \"off\" or leave it out",
                    show_toml(section.get(key).expect("only a written value can be other than off here")),
                    spec.name
                ),
            ));
        }
    }
    Ok((memory, placement))
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{assert_error, load, minimal};

    #[test]
    fn numa_placement_memory_and_node_memory_load_with_xl_s_defaults() {
        use super::super::spec::{NumaPlacement, UNBOUNDED_NODE_MEMORY_MIB};
        let xen44 = "numa_nodes = 2\npolicy = \"credit\"\nparams = { xen = \"4.4\" }";
        let host = |extra: &str| format!("{xen44}\n{extra}");
        let s = load(&minimal(&host(""), "")).unwrap();
        // No cpus under 4.4: xl places the domain; memory 1 GiB; node memory unbounded.
        assert_eq!((s.vms[0].numa_placement.clone(), s.vms[0].memory_mib), (NumaPlacement::Auto, 1024));
        assert_eq!(s.host.node_memory_mib, vec![UNBOUNDED_NODE_MEMORY_MIB; 2]);
        // cpus in the config turns xl's placement off.
        assert_eq!(load(&minimal(&host(""), "cpus = \"0-1\"")).unwrap().vms[0].numa_placement, NumaPlacement::Off);
        let s = load(&minimal(&host("node_memory = [\"80GB\", \"1TB\"]"), "memory = \"512MB\"\nnuma_placement = { nodes = [1] }")).unwrap();
        assert_eq!(s.host.node_memory_mib, vec![80 * 1024, 1 << 20]);
        assert_eq!((s.vms[0].numa_placement.clone(), s.vms[0].memory_mib), (NumaPlacement::Nodes(vec![1]), 512));
        assert_eq!(load(&minimal(&host("node_memory = \"4GiB\""), "")).unwrap().host.node_memory_mib, vec![4096; 2]);
        // Other schedulers: off by default; "off" is accepted anywhere.
        assert_eq!(load(&minimal("", "")).unwrap().vms[0].numa_placement, NumaPlacement::Off);
        assert!(load(&minimal("", "numa_placement = \"off\"")).is_ok());
    }

    #[test]
    fn bad_numa_placement_and_memory_are_rejected() {
        let xen = |v: &str| format!("numa_nodes = 2\npolicy = \"credit\"\nparams = {{ xen = \"{v}\" }}");
        let h44 = xen("4.4");
        let at = |host: &str, vm: &str| minimal(host, vm);
        assert_error(
            &at(&h44, "numa_placement = \"on\""),
            "vm[0].numa_placement: expected \"auto\" (xl's automatic NUMA placement), \"off\"",
        );
        assert_error(
            &at(&h44, "numa_placement = { nodes = [2] }"),
            "vm[0].numa_placement.nodes[0]: expected an integer of at most 1, got 2 (the host has NUMA nodes 0-1)",
        );
        assert_error(&at(&h44, "numa_placement = { nodes = [1, 1] }"), "vm[0].numa_placement.nodes[1]: node 1 is listed twice");
        assert_error(&at(&h44, "numa_placement = { nodes = [] }"), "vm[0].numa_placement.nodes: expected a non-empty array");
        assert_error(&at(&h44, "numa_placement = { node = [0] }"), "vm[0].numa_placement.node: unknown key");
        assert_error(
            &at(&xen("4.18"), "numa_placement = \"auto\""),
            "vm[0].numa_placement: got \"auto\", but in VM \"a\"'s pool \"pool0\", xen = \"4.18\" (policy \"credit\") no longer schedules by",
        );
        assert_error(
            &at(&xen("3.3"), "numa_placement = { nodes = [0] }"),
            "vm[0].numa_placement: got { nodes = [0] }, but in VM \"a\"'s pool \"pool0\", xen = \"3.3\" (policy \"credit\") has no per-domain NUMA node affinity",
        );
        assert_error(
            &minimal("", "numa_placement = \"auto\""),
            "vm[0].numa_placement: got \"auto\", but in VM \"a\"'s pool \"pool0\", policy \"cfs\" does not schedule by",
        );
        assert_error(&minimal("", "memory = 4096"), "vm[0].memory: expected a memory size with a unit, such as \"4GB\"");
        assert_error(&minimal("", "memory = \"4 parsecs\""), "vm[0].memory: expected a memory size with a unit");
        assert_error(&minimal("", "memory = \"0GB\""), "vm[0].memory: expected a memory size with a unit");
        assert_error(
            &at(&h44, "").replacen("[[vm]]", "node_memory = [\"1GB\"]\n[[vm]]", 1),
            "host.node_memory: expected one size per NUMA node (2",
        );
        assert_error(
            &at(&h44, "").replacen("[[vm]]", "node_memory = [\"1GB\", 3]\n[[vm]]", 1),
            "host.node_memory[1]: expected a memory size",
        );
    }
}
