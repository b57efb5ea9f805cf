//! The catalog `vcpusim list` prints: every policy and workload with its parameters, the keys of
//! `[host]` and `[[vm]]`, and the keys of the fixed sections (`[guest]`, `[host.ple]`,
//! `[host.costs]`, `[host.uvf]`, `[vm.uvf]`, `[run]`), each with its type, default, accepted
//! values and meaning. The fixed sections and parameters are built from the same spec lists the
//! loader checks against; `[host]` and `[[vm]]`, which the loader reads by hand, are described
//! here and a test holds their names equal to the loader's key lists.

use super::contention_sections;
use super::host_sections::DEFAULT_POLICY;
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
    host: Vec<KeyEntry>,
    vm: Vec<KeyEntry>,
    guest: Vec<KeyEntry>,
    host_ple: Vec<KeyEntry>,
    host_costs: Vec<KeyEntry>,
    host_halt_poll: Vec<KeyEntry>,
    host_uvf: Vec<KeyEntry>,
    vm_uvf: Vec<KeyEntry>,
    host_microsliced: Vec<KeyEntry>,
    host_irs: Vec<KeyEntry>,
    host_relaxed_co: Vec<KeyEntry>,
    host_delay_preempt: Vec<KeyEntry>,
    host_contention: Vec<KeyEntry>,
    vm_contention: Vec<KeyEntry>,
    run: Vec<KeyEntry>,
}

#[derive(Serialize)]
struct PolicyEntry {
    name: &'static str,
    description: &'static str,
    params: Vec<KeyEntry>,
    /// The per-VM settings it reads (`[vm.sched]`).
    vm_params: Vec<KeyEntry>,
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
    KeyEntry { name: spec.name, kind: kind_name(spec.kind), default: default_json(&spec.default), expected: spec.expected(), doc: spec.doc }
}

fn section_entries(keys: &[SectionKey]) -> Vec<KeyEntry> {
    keys.iter()
        .map(|k| KeyEntry { default: if k.optional { Value::Null } else { default_json(&k.spec.default) }, ..param_entry(&k.spec) })
        .collect()
}

/// `[host]` keys as docs/scenario-format.md describes them: (name, type, default as written in a
/// scenario or "" for none, meaning).
const HOST_KEY_DOCS: &[(&str, &str, &str, &str)] = &[
    ("pcpus", "int 1-65536, required", "", "hardware threads of the host"),
    ("policy", "string", "cfs", "the default pool's scheduler: a policy name from the table above; its parameters under [host.params]"),
    ("sockets", "int 1-65536", "1", "sockets"),
    ("numa_nodes", "int 1-65536", "1", "NUMA nodes; must divide, or be a multiple of, sockets"),
    ("threads_per_core", "int 1-65536", "1", "SMT threads per core"),
    ("cores_per_module", "int 1-65536", "1", "cores per AMD CMT module (2 on Bulldozer/Piledriver), seen as siblings; a host has SMT threads or modules, not both"),
    ("llc", "string", "socket", "which pCPUs share a last-level cache: socket, node or module"),
    ("start_skew", "duration", "30ms", "each pCPU makes its first scheduling decision at a seeded random time in [0, start_skew); must be shorter than [run] duration (the default is cut to half a run of 30 ms or less)"),
    ("placement", "string", "default", "where a waking vCPU goes: default (the policy's own rule), balance or lc-balance (cfs only; seed 000 section 3.2)"),
    ("params", "table", "", "[host.params]: the policy's parameters (see Policies)"),
    ("ple", "table", "", "[host.ple]: pause-loop exiting (below)"),
    ("costs", "table", "", "[host.costs]: virtualization costs (below)"),
    ("halt_poll", "table", "", "[host.halt_poll]: KVM host halt polling after HLT (below; KVM host policies: cfs); off when absent"),
    ("uvf", "table", "", "[host.uvf]: the urgent-vCPU-first overlay (below); off when absent"),
    ("pool", "array of tables", "", "[[host.pool]]: Xen cpupools, each with name, pcpus, policy and params"),
    ("pool_change", "array of tables", "", "[[host.pool_change]]: at, pcpu, to: a pCPU moved between pools at run time"),
    ("contention", "table", "", "[host.contention]: seed 001's contention sources (below); all off when absent"),
    ("node_memory", "size or array of sizes", "", "free memory of each NUMA node when the first VM is created (xl's placement reads it); default: unlimited, equal on every node"),
    ("microsliced", "table", "", "[host.microsliced]: seed 002's micro-sliced cores (below; also detect, a list of ple, ipi, irq); off when absent"),
    ("overlay", "string", "", "a preemption overlay over the policy (credit): irs (seed 003), relaxed-co (VMware ESX relaxed co-scheduling), delay-preempt (Uhlig et al. VM'04 delayed preemption); none when absent"),
    ("irs", "table", "", "[host.irs]: the IRS overlay's notify delay and migrator (below); with overlay = \"irs\""),
    ("relaxed_co", "table", "", "[host.relaxed_co]: relaxed co-scheduling's skew threshold (below); with overlay = \"relaxed-co\""),
    ("delay_preempt", "table", "", "[host.delay_preempt]: delayed preemption's bound (below); with overlay = \"delay-preempt\""),
];

/// `[[vm]]` keys, as [`HOST_KEY_DOCS`].
const VM_KEY_DOCS: &[(&str, &str, &str, &str)] = &[
    ("name", "string, required", "", "letters, digits, -, _ and .; unique after count expansion"),
    ("count", "int 1-65536", "1", "expand into count identical VMs name-0 .. name-(count-1)"),
    ("vcpus", "int 1-65536, required", "", "vCPUs"),
    ("weight", "int 1-4294967295", "256", "proportional-share weight (Xen CSCHED_DEFAULT_WEIGHT)"),
    ("type", "hit or con", "hit", "seed 004's VM class: high-throughput or concurrent; read by hybrid only"),
    ("u_factor", "number in [0, 1]", "0", "seed 004's master-vCPU u-factor (PCPS when > 0); type = con only; read by hybrid only"),
    ("sched_pe", "array of tables", "", "[[vm.sched_pe]]: at, type, u_factor: run-time class changes"),
    ("sched", "table", "", "[vm.sched]: the VM's settings for its pool's policy, those the policy declares (vcpusim list policies)"),
    ("workload", "string, required", "", "a workload from the table above, or program for a custom [vm.program]"),
    ("threads", "int 1-65536", "", "guest threads; default: the workload's (usually one per vCPU)"),
    ("iterations", "int >= 1", "", "finish when progress reaches this; unset: run for the whole duration"),
    ("params", "table", "", "[vm.params]: the workload's parameters (see Workloads)"),
    ("program", "table", "", "[vm.program]: mutexes, barriers, conds, queues, kernel_locks and threads (op lists) of a custom program"),
    ("guest", "table", "", "[vm.guest]: this VM's [guest] keys (below)"),
    ("uvf", "table", "", "[vm.uvf]: urgent-vCPU-first features of this VM (below)"),
    ("pool", "string", "pool0", "the cpupool the VM's vCPUs run in"),
    ("cpus", "cpulist or array of cpulists", "", "hard affinity (xl cpus=); default every pCPU"),
    ("cpus_soft", "cpulist or array of cpulists", "", "soft affinity (xl cpus_soft=); default every pCPU"),
    ("cap", "int >= 0", "0", "CPU cap in percent of one pCPU over all its vCPUs (0: none); credit and cfs enforce it"),
    ("memory_nodes", "\"auto\" or array of node numbers", "auto", "NUMA nodes holding the VM's memory, pages spread evenly; auto: its node affinity, else every node"),
    ("contention", "table", "", "[vm.contention]: this VM's contention sensitivities (below); default: its workload's"),
    ("memory", "size", "1GB", "the VM's memory (xl memory=): what xl's automatic NUMA placement must find free"),
    ("numa_placement", "\"auto\", \"off\" or { nodes = [...] }", "", "who sets the domain's NUMA node affinity (credit as Xen 4.4): xl's automatic placement, none (derived from cpus), or these nodes; default auto under Xen 4.4 without cpus, else off"),
    ("bare_metal", "bool", "false", "run this guest directly on pCPUs (its cpus, default every pCPU no other VM names), no hypervisor: seed 001's PM"),
    ("native", "bool", "false", "a process of the KVM host, not a VM: one host task per thread (threads, default one per CPU of its pool and cpus), scheduled by the host policy beside the vCPUs with its weight, native costs and non-preemptible kernel spinlock sections"),
];

fn described_keys(docs: &[(&'static str, &'static str, &'static str, &'static str)]) -> Vec<KeyEntry> {
    docs.iter()
        .map(|&(name, kind, default, doc)| KeyEntry {
            name,
            kind,
            default: match default {
                "" => Value::Null,
                d => d.parse::<i64>().map(Value::from).unwrap_or_else(|_| Value::from(d)),
            },
            expected: kind.to_string(),
            doc,
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
            vm_params: p.vm_params().iter().map(param_entry).collect(),
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
        host: described_keys(HOST_KEY_DOCS),
        vm: described_keys(VM_KEY_DOCS),
        guest: section_entries(&sections::guest_keys()),
        host_ple: section_entries(&sections::ple_keys(grow)),
        host_costs: section_entries(&sections::costs_keys()),
        host_halt_poll: section_entries(&sections::halt_poll_keys()),
        host_uvf: section_entries(&uvf_sections::host_uvf_keys()),
        vm_uvf: section_entries(&uvf_sections::vm_uvf_keys()),
        host_contention: section_entries(&contention_sections::host_contention_keys()),
        host_microsliced: section_entries(&super::microsliced_sections::host_microsliced_keys()),
        host_irs: section_entries(&super::overlay_sections::host_irs_keys()),
        host_relaxed_co: section_entries(&super::overlay_sections::host_relaxed_co_keys()),
        host_delay_preempt: section_entries(&super::overlay_sections::host_delay_preempt_keys()),
        vm_contention: section_entries(&contention_sections::vm_contention_keys()),
        run: section_entries(&sections::run_keys()),
    }
}

/// The catalog as pretty-printed JSON.
pub fn catalog_json() -> String {
    serde_json::to_string_pretty(&catalog()).expect("the catalog holds only strings, numbers and booleans")
}

#[cfg(test)]
mod tests {
    use super::super::host_sections::HOST_KEYS;
    use super::super::vm_sections::{DEFAULT_WEIGHT, VM_KEYS};
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
            let want: Vec<&str> = kind.vm_params().iter().map(|s| s.name).collect();
            assert_eq!(names(&entry["vm_params"]), want);
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
    fn host_and_vm_keys_are_the_loaders() {
        let json = parsed();
        assert_eq!(names(&json["host"]), HOST_KEYS);
        assert_eq!(names(&json["vm"]), VM_KEYS);
        assert_eq!(json["host"][1]["default"], DEFAULT_POLICY);
        assert_eq!(json["vm"][3]["default"], DEFAULT_WEIGHT);
        assert!(json["vm"][0]["default"].is_null());
    }

    #[test]
    fn fixed_sections_list_their_keys_with_defaults() {
        let json = parsed();
        assert_eq!(
            names(&json["guest"]),
            [
                "kernel", "futex_wake_ipi", "tlb_targets", "spinlock", "pv_spin", "call_function_yield", "rwsem_spin", "rwsem_steal",
                "pv_spinlock", "vcpu_is_preempted", "pv_tlb_flush", "pv_sched_yield", "pv_ipi", "steal_time", "tick", "futex_buckets",
                "irs", "irs_handler", "haltpoll", "guest_halt_poll_ns", "guest_halt_poll_grow", "guest_halt_poll_grow_start",
                "guest_halt_poll_shrink", "guest_halt_poll_allow_shrink"
            ]
        );
        assert_eq!(
            names(&json["host_ple"]),
            [
                "enabled", "window_cycles", "cpu_ghz", "grow", "window_max_cycles", "shrink", "cpl", "gap_cycles", "line_socket_cycles",
                "line_remote_cycles"
            ]
        );
        assert_eq!(
            names(&json["host_costs"]),
            [
                "ipi_send", "ipi_delivery", "ipi_handler", "context_switch", "hlt_exit", "tlb_flush_per_page", "syscall", "halt_wake",
                "virt_overhead", "variation"
            ]
        );
        assert_eq!(names(&json["host_halt_poll"]), ["max", "grow", "grow_start", "shrink"]);
        assert_eq!(json["host_halt_poll"][0]["default"], "200us");
        assert_eq!(names(&json["run"]), ["duration", "seed", "max_events", "check", "sample_every", "barrier_waits"]);
        let sources = ["module_frontend", "module_fpu", "llc", "numa_remote"];
        assert_eq!(names(&json["host_contention"]), sources);
        assert_eq!(names(&json["vm_contention"]), sources);
        assert_eq!(json["host_contention"][0]["default"], false);
        assert!(json["vm_contention"][0]["default"].is_null(), "unset: the workload's sensitivity");
        let tick = &json["guest"][14];
        assert_eq!((tick["type"].as_str(), tick["default"].as_str()), (Some("duration"), Some("4ms")));
        assert_eq!(json["host_ple"][1]["default"], 4096);
        assert_eq!(json["host_costs"][0]["default"], "2us");
        assert_eq!(json["run"][0]["default"], "10s");
        assert!(json["run"][2]["default"].is_null(), "max_events has no default");
        assert_eq!(json["guest"][3]["expected"], "one of ticket, tas, pv-qspinlock, debug");
        for section in ["guest", "host_ple", "host_costs", "host_halt_poll", "run", "host_contention", "vm_contention"] {
            for key in json[section].as_array().unwrap() {
                assert!(!key["doc"].as_str().unwrap().is_empty(), "{section}.{} has no doc", key["name"]);
            }
        }
    }
}
