//! Reading a scenario file: TOML text -> a validated [`Scenario`] with every default filled in.
//!
//! The tables are walked by hand so that every error names the file, the key path
//! (`vm[1].params.spin`), the bad value and what was expected, and unknown keys are rejected at
//! every level with a did-you-mean suggestion. `vcpusim list` prints the same keys
//! (scenario/catalog.rs); scenarios/examples/ shows the format in use.

use super::contention_sections;
use super::program_ops::{self, parse_program};
use super::section::{error, Section};
use super::sections;
use super::spec::{HostSpec, PoolChange, PoolSpec, Scenario, VmClassChange, VmSpec, DEFAULT_POOL};
use super::suggest::with_suggestion;
use super::uvf_sections;
use crate::error::SimError;
use crate::guest::config::{GuestConfig, PvFeatures};
use crate::hardware::cpumask::{parse_cpulist, CpuMask};
use crate::hardware::topology::{LlcScope, Topology};
use crate::hypervisor::policies;
use crate::hypervisor::policy::VmType;
use crate::ids::PcpuId;
use crate::params::{show_toml, Params};
use crate::workload::{
    self,
    program::{Op, Program},
};
use std::collections::BTreeMap;
use std::sync::Arc;
use toml::Value;

/// `sweep` is the grid of `vcpusim sweep` (python/vcpusim/grids.py): a run ignores it, the
/// loader only checks its shape ([`sweep_table`]).
const TOP_KEYS: &[&str] = &["host", "guest", "vm", "run", "sweep"];
pub(super) const HOST_KEYS: &[&str] = &[
    "pcpus", "policy", "sockets", "numa_nodes", "threads_per_core", "cores_per_module", "llc", "start_skew", "placement", "params", "ple",
    "costs", "halt_poll", "uvf", "pool", "pool_change", "contention", "node_memory", "microsliced", "overlay", "irs", "relaxed_co",
    "delay_preempt",
];
pub(super) const VM_KEYS: &[&str] = &[
    "name", "count", "vcpus", "weight", "type", "u_factor", "sched_pe", "workload", "threads", "iterations", "params", "program", "guest",
    "uvf", "pool", "cpus", "cpus_soft", "cap", "memory_nodes", "contention", "memory", "numa_placement", "bare_metal",
];
/// Keys of one `[[host.pool]]` entry.
const POOL_KEYS: &[&str] = &["name", "pcpus", "policy", "params"];
/// Keys of one `[[host.pool_change]]` entry.
const POOL_CHANGE_KEYS: &[&str] = &["at", "pcpu", "to"];
/// Keys of one `[[vm.sched_pe]]` entry.
const SCHED_PE_KEYS: &[&str] = &["at", "type", "u_factor"];

/// The policy used when `[host]` names none.
pub const DEFAULT_POLICY: &str = "cfs";
/// Xen's CSCHED_DEFAULT_WEIGHT (xen/common/sched/credit.c); equal weights give equal shares.
pub const DEFAULT_WEIGHT: u32 = 256;

const U32_MAX: i64 = u32::MAX as i64;

/// Upper bound on counts of pCPUs, vCPUs, threads and VM copies: far above any real host, low
/// enough that a typo (`vcpus = 80000000`) is an error rather than an out-of-memory crash.
const MAX_SIZE: u32 = 1 << 16;

/// A count key (`pcpus`, `vcpus`, `threads`, `count`) of at least 1 and at most [`MAX_SIZE`].
fn size(section: &Section, key: &str, required: bool) -> Result<Option<u32>, SimError> {
    let value = if required { Some(section.required_int(key, 1, i64::MAX)?) } else { section.int(key, 1, i64::MAX)? };
    match value {
        Some(n) if n > MAX_SIZE as i64 => {
            Err(section
                .error_at(key, format!("expected at most {MAX_SIZE} (a guard against typos; no simulated host needs more), got {n}")))
        }
        other => Ok(other.map(|n| n as u32)),
    }
}

/// Parse and validate a scenario; `source` names it in messages (a path, or "<python>").
pub fn from_toml_str(text: &str, source: &str) -> Result<Scenario, SimError> {
    let root = parse_tables(text, source)?;
    let top = Section::new(source, "", &root);
    top.allow_only(TOP_KEYS)?;
    if let Some(section) = top.table("sweep")? {
        sweep_table(&section)?;
    }
    let (mut host, change_index) = host(&top)?;
    let guest = match top.table("guest")? {
        Some(section) => sections::guest_config(&section, &GuestConfig::default())?,
        None => GuestConfig::default(),
    };
    let (mut vms, paths) = vms(&top, &guest, &host)?;
    carve_bare_metal(source, &mut host, &mut vms, &paths, &change_index)?;
    if host.uvf.is_none() {
        // Per-VM features without the host overlay would silently do nothing.
        if let Some(i) = vm_with_uvf(&top) {
            return Err(error(
                source,
                &format!("vm[{i}].uvf"),
                "urgent-vCPU-first features need the overlay turned on: add a [host.uvf] section",
            ));
        }
    }
    let run = sections::run(top.table("run")?.as_ref())?;
    // A class change after the end of the run would silently never happen.
    if let Some((vm, change)) = vms.iter().flat_map(|vm| vm.sched_pe.iter().map(move |c| (vm, c))).find(|(_, c)| c.at > run.duration) {
        return Err(error(
            source,
            "run.duration",
            format!(
                "VM {:?} has a [[vm.sched_pe]] change at {}, after the run ends (duration = {}); \
                 lengthen the run or drop the change",
                vm.name,
                crate::time::format_duration(change.at),
                crate::time::format_duration(run.duration)
            ),
        ));
    }
    // Likewise a pool change after the end.
    if let Some((i, change)) = change_index.iter().zip(&host.pool_changes).find(|(_, c)| c.at > run.duration) {
        return Err(error(
            source,
            "run.duration",
            format!(
                "host.pool_change[{i}] moves pCPU {} at {}, after the run ends (duration = {}); \
                 lengthen the run or drop the change",
                change.pcpu.0,
                crate::time::format_duration(change.at),
                crate::time::format_duration(run.duration)
            ),
        ));
    }
    if host.microsliced.is_some() && !host.pool_changes.is_empty() {
        // The micro pool takes and gives back pool0's pCPUs itself (sim/microsliced.rs); a
        // scripted move could take a pCPU from under an accelerated vCPU.
        return Err(error(
            source,
            "host.pool_change",
            "[[host.pool_change]] cannot be combined with [host.microsliced], which moves pCPUs between \
             the default pool and the micro pool itself; drop one of them",
        ));
    }
    if let (Some(micro), Some(pool0)) = (&host.microsliced, host.pools.first()) {
        micro.check_cores(&pool0.name, pool0.pcpus.count()).map_err(|m| error(source, "host.microsliced.cores", m))?;
    }
    replay_pool_changes(source, &host, &change_index, &vms)?;
    super::bounds::check(&top, &mut host, &vms, &run)?;
    Ok(Scenario { source: source.to_string(), host, vms, run })
}

/// Play `[[host.pool_change]]` through in time order, refusing what Xen refuses: moving a pCPU
/// into the pool it is in, emptying the default pool (Pool-0 always keeps a pCPU), and taking
/// the last pCPU of a pool that has VMs (`cpupool_unassign_cpu` returns -EBUSY). A pool without
/// VMs may become empty. `change_index[k]` is the file index of `host.pool_changes[k]`.
fn replay_pool_changes(source: &str, host: &HostSpec, change_index: &[usize], vms: &[VmSpec]) -> Result<(), SimError> {
    let npcpus = host.topology.npcpus();
    let mut pool_of = vec![0; npcpus];
    for (k, pool) in host.pools.iter().enumerate() {
        for p in pool.pcpus.iter() {
            pool_of[p.idx()] = k;
        }
    }
    let mut size: Vec<usize> = host.pools.iter().map(|p| p.pcpus.count()).collect();
    for (change, &i) in host.pool_changes.iter().zip(change_index) {
        let path = format!("host.pool_change[{i}]");
        let (p, at) = (change.pcpu, crate::time::format_duration(change.at));
        let from = pool_of[p.idx()];
        let (from_name, to_name) = (&host.pools[from].name, &host.pools[change.to].name);
        if from == change.to {
            return Err(error(
                source,
                &format!("{path}.to"),
                format!("pCPU {} is already in pool {to_name:?} at {at}; a change must move it to another pool", p.0),
            ));
        }
        for (k, name) in [(from, from_name), (change.to, to_name)] {
            let policy = &host.pools[k].policy;
            let supported = policies::find(policy).is_ok_and(|kind| kind.supports_pool_changes());
            if !supported {
                let able: Vec<&str> = policies::registry().iter().filter(|k| k.supports_pool_changes()).map(|k| k.name()).collect();
                return Err(error(
                    source,
                    &path,
                    format!(
                        "pool {name:?} runs policy = {policy:?}, which cannot gain or lose pCPUs during a run; pool changes need a pool of {}",
                        able.iter().map(|n| format!("{n:?}")).collect::<Vec<_>>().join(" or ")
                    ),
                ));
            }
        }
        if size[from] == 1 {
            if from == 0 {
                return Err(error(
                    source,
                    &path,
                    format!(
                        "moving pCPU {} to {to_name:?} at {at} would leave the default pool {from_name:?} with no pCPU; \
                         Xen's Pool-0 always keeps at least one pCPU",
                        p.0
                    ),
                ));
            }
            let members: Vec<String> = vms.iter().filter(|vm| vm.pool == from).map(|vm| format!("{:?}", vm.name)).collect();
            if !members.is_empty() {
                return Err(error(
                    source,
                    &path,
                    format!(
                        "moving pCPU {} to {to_name:?} at {at} would leave pool {from_name:?} with no pCPU while it has \
                         VMs ({}) (Xen refuses: cpupool_unassign_cpu returns -EBUSY); move another pCPU into \
                         {from_name:?} first or drop the change",
                        p.0,
                        members.join(", ")
                    ),
                ));
            }
        }
        size[from] -= 1;
        size[change.to] += 1;
        pool_of[p.idx()] = change.to;
    }
    Ok(())
}

/// The index of the first `[[vm]]` entry with a `[vm.uvf]` table.
fn vm_with_uvf(top: &Section) -> Option<usize> {
    match top.get("vm") {
        Some(Value::Array(list)) => list.iter().position(|v| matches!(v, Value::Table(t) if t.contains_key("uvf"))),
        _ => None,
    }
}

/// The scenario's TOML as tables, before any key is checked: the one TOML parser of the project
/// (the Python side reads and edits scenarios through it, so both accept the same dialect).
pub fn parse_tables(text: &str, source: &str) -> Result<toml::Table, SimError> {
    text.parse().map_err(|e| syntax_error(text, source, &e))
}

/// The `[sweep]` table: each key a scenario key (dotted, or written as nested tables), each value
/// the non-empty array of values it takes. Which keys exist, and whether each value is valid there,
/// is checked by the sweep itself, which loads every point of the grid through this loader.
fn sweep_table(section: &Section) -> Result<(), SimError> {
    if section.table.is_empty() {
        return Err(section.error("empty; expected keys such as \"host.policy\" = [\"cfs\", \"credit\"]"));
    }
    for (key, value) in section.table {
        match value {
            Value::Table(_) => sweep_table(&section.table(key)?.expect("a table value is a table"))?,
            Value::Array(values) if !values.is_empty() => {}
            other => {
                return Err(section.error_at(
                    key,
                    format!("expected the array of values to sweep, such as [\"cfs\", \"credit\"] or [1, 2, 4], got {}", show_toml(other)),
                ))
            }
        }
    }
    Ok(())
}

/// A TOML parse error with the 1-based line and column of where it starts.
fn syntax_error(text: &str, source: &str, e: &toml::de::Error) -> SimError {
    let span = e.span().unwrap_or(0..0);
    let mut offset = span.start.min(text.len());
    // The span is in bytes; step back to a character boundary before slicing.
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    // Name the offending text when it is short ("duplicate key" alone does not say which).
    let mut message = e.message().trim().to_string();
    if let Some(snippet) = text.get(span).map(str::trim).filter(|t| !t.is_empty() && t.len() <= 40 && !t.contains('\n')) {
        message = format!("{message} (at {snippet:?})");
    }
    SimError::Syntax { file: source.to_string(), line, column, message }
}

/// `[host]`, with the file index of each of its (sorted) pool changes.
fn host(top: &Section) -> Result<(HostSpec, Vec<usize>), SimError> {
    let host = top.table("host")?.ok_or_else(|| top.error_at("host", "missing; expected a [host] table with at least pcpus = N"))?;
    host.allow_only(HOST_KEYS)?;
    let pcpus = size(&host, "pcpus", true)?.expect("a required key is present");
    let sockets = size(&host, "sockets", false)?.unwrap_or(1);
    let numa_nodes = size(&host, "numa_nodes", false)?.unwrap_or(1);
    let threads_per_core = size(&host, "threads_per_core", false)?.unwrap_or(1);
    // Checked here in wide arithmetic, before Topology::new multiplies them in u32.
    if u64::from(sockets) * u64::from(threads_per_core) > u64::from(pcpus) {
        return Err(host.error(format!(
            "sockets = {sockets} with threads_per_core = {threads_per_core} needs at least {} pcpus, got pcpus = {pcpus}",
            u64::from(sockets) * u64::from(threads_per_core)
        )));
    }
    let topology = Topology::new(pcpus, sockets, numa_nodes, threads_per_core).map_err(|m| host.error(m))?;
    let cores_per_module = size(&host, "cores_per_module", false)?.unwrap_or(1);
    let llc = match host.string("llc")? {
        None => LlcScope::default(),
        Some(name) => LlcScope::parse(name)
            .ok_or_else(|| host.error_at("llc", format!("unknown last-level-cache scope {name:?}; expected {}", LlcScope::NAMES)))?,
    };
    let topology = topology.with_modules(cores_per_module, llc).map_err(|m| host.error_at("cores_per_module", m))?;

    let policy_name = host.string("policy")?.unwrap_or(DEFAULT_POLICY);
    let kind = policy_kind(&host, policy_name)?;
    let params = policy_params(&host, kind)?;
    let params = with_placement(&host, kind, params)?;
    let ple_section = host.table("ple")?;
    let mut ple = sections::ple(ple_section.as_ref(), kind.ple_grow())?;
    let costs = sections::costs(host.table("costs")?.as_ref())?;
    let start_skew = match host.get("start_skew") {
        Some(v) => super::section::duration_value(host.file, &host.key("start_skew"), v, false)?,
        None => super::spec::DEFAULT_START_SKEW,
    };
    let uvf = host.table("uvf")?.map(|s| uvf_sections::host_uvf(&s)).transpose()?;
    if uvf.is_some() && !kind.carries_uvf() {
        return Err(host.error_at(
            "uvf",
            format!(
                "the urgent-vCPU-first overlay rides on a proportional-share policy ({}), got policy = {:?}",
                uvf_carriers(),
                kind.name()
            ),
        ));
    }
    let microsliced = host.table("microsliced")?.map(|s| super::microsliced_sections::host_microsliced(&s)).transpose()?;
    if microsliced.is_some() && kind.name() != "credit" {
        return Err(host.error_at(
            "microsliced",
            format!(
                "micro-sliced cores are a child cpupool of a credit pool (seed 002 section 5, Xen 4.7's credit), got policy = {:?}",
                kind.name()
            ),
        ));
    }
    let overlay = super::overlay_sections::host_overlay(&host, kind.name(), kind.defers_preemption())?;
    if overlay.is_some() && (uvf.is_some() || microsliced.is_some()) {
        let other = if uvf.is_some() { "uvf" } else { "microsliced" };
        return Err(host.error_at("overlay", format!("a preemption overlay does not combine with [host.{other}] (each holds or moves the policy's picks its own way); leave one out")));
    }
    let default_pool =
        PoolSpec { name: DEFAULT_POOL.to_string(), pcpus: CpuMask::empty(), policy: kind.name().to_string(), params: params.clone() };
    let pools = pools(&host, &topology, default_pool, kind)?;
    if pools.len() > 1 {
        if let Some((name, why)) = lacking(&pools, policies::HostFeature::Cpupools) {
            return Err(
                host.error_at("pool", format!("[[host.pool]] needs cpupools, but in pool {name:?}, {why}; leave out [[host.pool]]"))
            );
        }
    }
    if let Some((name, why)) = lacking(&pools, policies::HostFeature::PauseLoopExiting) {
        // Pause-loop exiting is on by default; a version without it turns it off, and writing
        // `enabled = true` for it is an error.
        if let Some(section) = ple_section.as_ref().filter(|s| ple.enabled && s.get("enabled").is_some()) {
            return Err(section.error_at(
                "enabled",
                format!("got true, but in pool {name:?}, {why}; set enabled = false or leave it out (it is off there)"),
            ));
        }
        ple.enabled = false;
    }
    let halt_poll = host.table("halt_poll")?.map(|s| sections::halt_poll(&s)).transpose()?;
    if halt_poll.is_some() {
        if let Some((name, why)) = lacking(&pools, policies::HostFeature::HaltPolling) {
            return Err(host.error_at(
                "halt_poll",
                format!("halt polling is KVM's (kvm_vcpu_halt), but in pool {name:?}, {why}; leave out [host.halt_poll]"),
            ));
        }
    }
    let (change_index, pool_changes) = pool_changes(&host, &topology, &pools)?.into_iter().unzip();
    let contention = host.table("contention")?.map(|s| contention_sections::host_contention(&s)).transpose()?.unwrap_or_default();
    let node_memory_mib = super::numa_sections::node_memory(&host, topology.numa_nodes)?;
    let spec = HostSpec {
        topology,
        policy: kind.name().to_string(),
        params,
        costs,
        ple,
        start_skew,
        uvf,
        pools,
        pool_changes,
        contention,
        node_memory_mib,
        microsliced,
        overlay,
        halt_poll,
    };
    Ok((spec, change_index))
}

/// The policy named `name`, for `section.policy` (`[host]` or a `[[host.pool]]`).
fn policy_kind(section: &Section, name: &str) -> Result<&'static dyn policies::PolicyKind, SimError> {
    policies::find(name).map_err(|m| {
        let names: Vec<&str> = policies::registry().iter().map(|p| p.name()).collect();
        section.error_at("policy", with_suggestion(m, name, &names))
    })
}

/// `section.params` (`[host.params]` or a pool's `params`) checked against `kind`'s parameter
/// specs, defaults filled in (those that depend on another parameter by `resolve_params`).
fn policy_params(section: &Section, kind: &dyn policies::PolicyKind) -> Result<Params, SimError> {
    let specs = kind.params();
    let table = section.table("params")?;
    let mut params = match &table {
        Some(t) => t.params(&specs)?,
        None => Params::defaults(&specs),
    };
    let given = |name: &str| table.as_ref().is_some_and(|t| t.get(name).is_some());
    kind.resolve_params(&mut params, &given).map_err(|(key, message)| match &table {
        Some(t) => t.error_at(key, message),
        None => section.error_at("params", message),
    })?;
    Ok(params)
}

/// The first pool whose policy, with its parameters, lacks `feature` (credit with `xen = "3.3"`
/// has no pause-loop exiting), with the policy's reason.
fn lacking(pools: &[PoolSpec], feature: policies::HostFeature) -> Option<(String, String)> {
    pools.iter().find_map(|p| {
        let kind = policies::find(&p.policy).expect("pool policies are checked against the registry");
        kind.lacks(&p.params, feature).map(|why| (p.name.clone(), why))
    })
}

/// A cpulist string (`"0-3,8"`) written at the full key path `key` in `section`'s file.
fn cpulist(section: &Section, key: &str, value: &Value, npcpus: usize) -> Result<CpuMask, SimError> {
    match value {
        Value::String(text) => parse_cpulist(text, npcpus).map_err(|m| error(section.file, key, m)),
        other => Err(error(
            section.file,
            key,
            format!("expected a cpulist string such as \"0-3,8\" (pCPU numbers and inclusive ranges), got {}", show_toml(other)),
        )),
    }
}

/// `[[host.pool]]`: Xen cpupools. `pools[0]` is the default pool `default_pool` (`[host] policy`
/// and params), which keeps every pCPU no entry lists; the entries follow in file order. A pCPU
/// is in at most one entry, and the default pool keeps at least one (Xen's Pool-0 always does).
fn pools(
    host: &Section,
    topology: &Topology,
    mut default_pool: PoolSpec,
    host_kind: &dyn policies::PolicyKind,
) -> Result<Vec<PoolSpec>, SimError> {
    let npcpus = topology.npcpus();
    let list = match host.get("pool") {
        None => &Vec::new(),
        Some(Value::Array(list)) => list,
        Some(Value::Table(_)) => {
            return Err(host.error_at(
                "pool",
                "expected [[host.pool]] sections (an array of tables), got a single [host.pool] table; write [[host.pool]]",
            ))
        }
        Some(other) => return Err(host.error_at("pool", format!("expected [[host.pool]] sections, got {}", show_toml(other)))),
    };
    // Before any pool is read: each pool's scheduler instance keeps state for every pCPU.
    let pairs = (list.len() as u64 + 1) * npcpus as u64;
    if pairs > MAX_POOL_PCPU_PAIRS {
        return Err(host.error_at(
            "pool",
            format!(
                "{} [[host.pool]] entries and the default pool on {npcpus} pCPUs: each pool's scheduler instance keeps \
                 state for every pCPU of the host, {pairs} (pool, pCPU) pairs; expected at most {MAX_POOL_PCPU_PAIRS} \
                 (at most {} entries on this host)",
                list.len(),
                (MAX_POOL_PCPU_PAIRS / npcpus as u64).saturating_sub(1)
            ),
        ));
    }
    let mut pools: Vec<PoolSpec> = Vec::new();
    // Which pool (index into `pools`) each pCPU was given to, to report overlaps.
    let mut owner: Vec<Option<usize>> = vec![None; npcpus];
    for (i, value) in list.iter().enumerate() {
        let path = host.key(&format!("pool[{i}]"));
        let Value::Table(table) = value else {
            return Err(error(host.file, &path, format!("expected a [[host.pool]] table with name and pcpus, got {}", show_toml(value))));
        };
        let entry = Section::new(host.file, path, table);
        entry.allow_only(POOL_KEYS)?;
        let name = entry.required_string("name", "a pool name such as \"fast\"")?;
        if !valid_name(name) {
            return Err(entry.error_at("name", format!("expected a name of letters, digits, '-', '_' and '.', got {name:?}")));
        }
        if name == DEFAULT_POOL {
            return Err(entry.error_at(
                "name",
                format!(
                    "{DEFAULT_POOL:?} is the default pool's name ([host] policy and every pCPU no [[host.pool]] lists); \
                     choose another name"
                ),
            ));
        }
        if let Some(first) = pools.iter().position(|p| p.name == name) {
            return Err(entry.error_at("name", format!("duplicate pool name {name:?}: host.pool[{first}] already has it")));
        }
        let pcpus_value = entry.require("pcpus", "a cpulist such as \"10-11\" (the pool's pCPUs)")?;
        let pcpus = cpulist(&entry, &entry.key("pcpus"), pcpus_value, npcpus)?;
        for p in pcpus.iter() {
            if let Some(j) = owner[p.idx()] {
                return Err(entry.error_at(
                    "pcpus",
                    format!(
                        "pCPU {} is in pool {:?} (host.pool[{j}]) and in pool {name:?}; a pCPU belongs to one pool",
                        p.0, pools[j].name
                    ),
                ));
            }
            owner[p.idx()] = Some(i);
        }
        let kind = match entry.string("policy")? {
            Some(policy) => policy_kind(&entry, policy)?,
            None => host_kind,
        };
        let params = policy_params(&entry, kind)?;
        pools.push(PoolSpec { name: name.to_string(), pcpus, policy: kind.name().to_string(), params });
    }
    default_pool.pcpus = CpuMask::from_pcpus((0..npcpus).filter(|&p| owner[p].is_none()).map(|p| PcpuId(p as u32)));
    if default_pool.pcpus.is_empty() {
        return Err(host.error_at(
            "pool",
            format!(
                "the [[host.pool]] entries take every pCPU (0-{}), leaving the default pool {DEFAULT_POOL:?} with none; \
                 Xen's Pool-0 always keeps at least one pCPU: leave one out of every [[host.pool]]",
                npcpus - 1
            ),
        ));
    }
    pools.insert(0, default_pool);
    Ok(pools)
}

/// `[[host.pool_change]]`: pCPUs moved between pools at run time, sorted by `at` (stable). Each
/// entry is checked on its own here; `replay_pool_changes` checks the sequence once the VMs are
/// known, and `from_toml_str` checks the times against the run's duration.
/// Each change comes with its index in the file, for messages.
fn pool_changes(host: &Section, topology: &Topology, pools: &[PoolSpec]) -> Result<Vec<(usize, PoolChange)>, SimError> {
    let Some(list) = host.array("pool_change")? else { return Ok(Vec::new()) };
    let npcpus = topology.npcpus();
    let names: Vec<&str> = pools.iter().map(|p| p.name.as_str()).collect();
    let mut changes = Vec::new();
    for (i, value) in list.iter().enumerate() {
        let path = host.key(&format!("pool_change[{i}]"));
        let Value::Table(table) = value else {
            return Err(error(
                host.file,
                &path,
                format!("expected a [[host.pool_change]] table with at, pcpu and to, got {}", show_toml(value)),
            ));
        };
        let entry = Section::new(host.file, path, table);
        entry.allow_only(POOL_CHANGE_KEYS)?;
        let at_value = entry.require("at", "a duration with a unit, such as \"2s\" (when the pCPU moves)")?;
        let at = super::section::duration_value(entry.file, &entry.key("at"), at_value, false)?;
        let pcpu = entry.required_int("pcpu", 0, i64::MAX)?;
        if pcpu >= npcpus as i64 {
            return Err(entry.error_at("pcpu", format!("pCPU {pcpu} is out of range: the host has pCPUs 0-{}", npcpus - 1)));
        }
        let to = entry.required_string("to", "a pool name (\"pool0\" or a [[host.pool]] name)")?;
        let Some(to) = names.iter().position(|n| *n == to) else {
            let m = format!("unknown pool {to:?}; expected one of: {}", pool_names(pools));
            return Err(entry.error_at("to", with_suggestion(m, to, &names)));
        };
        changes.push((i, PoolChange { at, pcpu: PcpuId(pcpu as u32), to }));
    }
    // Stable: equal times keep file order.
    changes.sort_by_key(|(_, c)| c.at);
    Ok(changes)
}

/// The pool names, quoted, for messages: `"pool0", "fast"`.
fn pool_names(pools: &[PoolSpec]) -> String {
    pools.iter().map(|p| format!("{:?}", p.name)).collect::<Vec<_>>().join(", ")
}

/// `[host] placement` (seed 000 section 3.2; hypervisor/policies/placement.rs). It reaches the
/// policy as its `placement` parameter, so only a policy declaring one (cfs) takes `balance` or
/// `lc-balance`; `default`, the policy's own placement, is valid with any policy.
fn with_placement(host: &Section, kind: &dyn policies::PolicyKind, mut params: Params) -> Result<Params, SimError> {
    use crate::hypervisor::policies::placement::Placement;
    let Some(value) = host.get("placement") else { return Ok(params) };
    let names = Placement::NAMES;
    let name = match value {
        Value::String(s) if names.contains(&s.as_str()) => s.as_str(),
        Value::String(s) => {
            let m = format!("expected one of {}, got {s:?}", names.join(", "));
            return Err(host.error_at("placement", with_suggestion(m, s, names)));
        }
        other => return Err(host.error_at("placement", format!("expected one of {}, got {}", names.join(", "), show_toml(other)))),
    };
    let declared = kind.params().into_iter().find(|s| s.name == "placement");
    let Some(spec) = declared else {
        if name == "default" {
            return Ok(params);
        }
        return Err(host.error_at(
            "placement",
            format!(
                "placement = {name:?} is implemented for policy = \"cfs\" only, got policy = {:?} \
                 (which places vCPUs its own way; leave placement out or write \"default\")",
                kind.name()
            ),
        ));
    };
    if host.table("params")?.is_some_and(|p| p.get("placement").is_some()) {
        return Err(host.error_at("params.placement", "placement is given twice; keep [host] placement only"));
    }
    params.set("placement", spec.parse(value).map_err(|m| host.error_at("placement", m))?);
    Ok(params)
}

/// The VMs, and the file path (`vm[i]`) of each.
fn vms(top: &Section, guest: &GuestConfig, host: &HostSpec) -> Result<(Vec<VmSpec>, Vec<String>), SimError> {
    let expected = "at least one [[vm]] section";
    let list = match top.get("vm") {
        Some(Value::Array(list)) if !list.is_empty() => list,
        None | Some(Value::Array(_)) => return Err(top.error_at("vm", format!("missing; expected {expected}"))),
        Some(Value::Table(_)) => {
            return Err(top.error_at("vm", "expected [[vm]] sections (an array of tables), got a single [vm] table; write [[vm]]"))
        }
        Some(other) => return Err(top.error_at("vm", format!("expected {expected}, got {}", show_toml(other)))),
    };
    let mut vms = Vec::new();
    let mut paths = Vec::new();
    // Which [[vm]] entry each expanded name came from, to report duplicates.
    let mut owners: BTreeMap<String, usize> = BTreeMap::new();
    let free = unpinned(list, host.topology.npcpus());
    let keeps_groups = |name: &str| policies::find(name).is_ok_and(|k| k.groups_per_vm_and_pcpu());
    let mut totals = Totals {
        pcpus: host.topology.npcpus() as u64,
        group_pools: host.pools.iter().filter(|pool| keeps_groups(&pool.policy)).count() as u64,
        group_policies: {
            let mut names: Vec<&str> = host.pools.iter().map(|pool| pool.policy.as_str()).filter(|name| keeps_groups(name)).collect();
            names.sort_unstable();
            names.dedup();
            names.join(" and ")
        },
        ..Totals::default()
    };
    for (i, value) in list.iter().enumerate() {
        let path = format!("vm[{i}]");
        let Value::Table(table) = value else {
            return Err(error(top.file, &path, format!("expected a [[vm]] table, got {}", show_toml(value))));
        };
        let section = Section::new(top.file, path, table);
        for spec in vm(&section, guest, host, &free, &mut totals)? {
            if let Some(first) = owners.insert(spec.name.clone(), i) {
                return Err(section.error_at(
                    "name",
                    format!("duplicate VM name {:?}: vm[{first}] already has it (count = N names VMs name-0 .. name-(N-1))", spec.name),
                ));
            }
            vms.push(spec);
            paths.push(section.path.clone());
        }
    }
    Ok((vms, paths))
}

/// The pCPUs no VM but a bare-metal one names in its `cpus`: a bare-metal VM's default. Values
/// that do not parse are left to `vm` to report.
fn unpinned(list: &[Value], npcpus: usize) -> CpuMask {
    let mut free = CpuMask::full(npcpus);
    for value in list {
        let Value::Table(t) = value else { continue };
        if matches!(t.get("bare_metal"), Some(Value::Boolean(true))) {
            continue;
        }
        let texts: Vec<&str> = match t.get("cpus") {
            Some(Value::String(text)) => vec![text.as_str()],
            Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        for text in texts {
            if let Ok(mask) = crate::hardware::cpumask::parse_cpulist(text, npcpus) {
                for p in mask.iter() {
                    free.remove(p);
                }
            }
        }
    }
    free
}

/// Keys a bare-metal VM cannot have: there is no hypervisor to schedule it, so nothing to weigh,
/// cap, pool or classify, and its CPUs are its own.
const NOT_BARE_METAL: &[(&str, &str)] = &[
    ("weight", "a scheduling weight"),
    ("cap", "a CPU cap"),
    ("pool", "a cpupool"),
    ("type", "a VM class"),
    ("u_factor", "a u-factor"),
    ("sched_pe", "VM class changes"),
    ("uvf", "urgent-vCPU-first features"),
    ("cpus_soft", "a soft affinity"),
    ("count", "copies (each needs pCPUs of its own)"),
];

/// `bare_metal = true`: its pCPUs (`cpus`, default: every pCPU no other VM names in its `cpus`)
/// and its vCPUs, one per pCPU (vCPU i on the i-th); `None` for a VM.
fn bare_metal_cpus(section: &Section, host: &HostSpec, free: &CpuMask) -> Result<Option<Vec<CpuMask>>, SimError> {
    match section.get("bare_metal") {
        None | Some(Value::Boolean(false)) => return Ok(None),
        Some(Value::Boolean(true)) => {}
        Some(other) => return Err(section.error_at("bare_metal", format!("expected true or false, got {}", show_toml(other)))),
    }
    for (key, what) in NOT_BARE_METAL {
        if let Some(value) = section.get(key) {
            return Err(section.error_at(
                key,
                format!(
                    "got {}, but a bare-metal VM (bare_metal = true) runs its kernel directly on its pCPUs, with no \
                     hypervisor to give it {what}; drop {key}",
                    show_toml(value)
                ),
            ));
        }
    }
    let npcpus = host.topology.npcpus();
    let mask = match section.get("cpus") {
        None => {
            if free.is_empty() {
                return Err(section.error(
                    "bare_metal = true with no cpus: every pCPU is in another VM's cpus, so none is left for it; \
                     give it cpus = \"...\"",
                ));
            }
            free.clone()
        }
        Some(value @ Value::String(_)) => cpulist(section, &section.key("cpus"), value, npcpus)?,
        Some(other) => {
            return Err(section.error_at(
                "cpus",
                format!(
                    "expected one cpulist string such as \"0-15\" (a bare-metal VM's CPUs are its pCPUs, one vCPU \
                     each), got {}",
                    show_toml(other)
                ),
            ))
        }
    };
    if let Some(value) = section.get("vcpus") {
        let n = section.int("vcpus", 1, U32_MAX)?.unwrap_or(0) as usize;
        if n != mask.count() {
            return Err(section.error_at(
                "vcpus",
                format!(
                    "got {}, but a bare-metal VM has one CPU per pCPU of its cpus {:?}: expected {} (or leave vcpus out)",
                    show_toml(value),
                    mask.to_cpulist(),
                    mask.count()
                ),
            ));
        }
    }
    Ok(Some(mask.iter().map(|p| CpuMask::from_pcpus([p])).collect()))
}

/// The name of the pool holding the bare-metal VMs' pCPUs.
pub const BARE_METAL_POOL: &str = "bare-metal";

/// Give the bare-metal VMs their pCPUs: take them out of every pool (a `[[host.pool]]` or pool
/// change naming one is an error, as is a VM left with no pCPU) and put them in a pool of their
/// own run by the internal `native` policy (hypervisor/policies/native.rs).
fn carve_bare_metal(
    source: &str,
    host: &mut HostSpec,
    vms: &mut [VmSpec],
    paths: &[String],
    change_index: &[usize],
) -> Result<(), SimError> {
    let mut taken = CpuMask::empty();
    let mut owner = BTreeMap::new();
    for (i, vm) in vms.iter().enumerate().filter(|(_, vm)| vm.bare_metal) {
        for mask in &vm.cpus {
            for p in mask.iter() {
                if let Some(j) = owner.insert(p.0, i) {
                    return Err(error(
                        source,
                        &format!("{}.cpus", paths[i]),
                        format!(
                            "bare-metal VM {:?} names pCPU {} that bare-metal VM {:?} has; give them disjoint cpus",
                            vm.name, p.0, vms[j].name
                        ),
                    ));
                }
                taken.insert(p);
            }
        }
    }
    if taken.is_empty() {
        return Ok(());
    }
    let owner_of = |p: u32| vms[owner[&p]].name.clone();
    for (k, pool) in host.pools.iter().enumerate().skip(1) {
        if let Some(p) = pool.pcpus.iter().find(|p| taken.contains(*p)) {
            return Err(error(
                source,
                &format!("host.pool[{}].pcpus", k - 1),
                format!(
                    "pool {:?} holds pCPU {}, which bare-metal VM {:?} runs on; leave it out of the pool",
                    pool.name,
                    p.0,
                    owner_of(p.0)
                ),
            ));
        }
    }
    if let Some((k, change)) = change_index.iter().zip(&host.pool_changes).find(|(_, c)| taken.contains(c.pcpu)) {
        return Err(error(
            source,
            &format!("host.pool_change[{k}].pcpu"),
            format!("pCPU {} belongs to bare-metal VM {:?}, not to a cpupool; it cannot move", change.pcpu.0, owner_of(change.pcpu.0)),
        ));
    }
    if host.pools.iter().any(|p| p.name == BARE_METAL_POOL) {
        return Err(error(source, "host.pool", format!("the pool name {BARE_METAL_POOL:?} is reserved for bare-metal VMs' pCPUs")));
    }
    for p in taken.iter() {
        host.pools[0].pcpus.remove(p);
    }
    for (i, vm) in vms.iter().enumerate().filter(|(_, vm)| !vm.bare_metal) {
        let pool = &host.pools[vm.pool];
        if let Some(mask) = vm.cpus.iter().find(|m| !m.intersects(&pool.pcpus)) {
            return Err(error(
                source,
                &format!("{}.cpus", paths[i]),
                format!(
                    "VM {:?} may run only on pCPUs {:?}, and bare-metal VMs take all of them out of the hypervisor \
                     (its pool {:?} keeps {:?}); give the VMs disjoint cpus",
                    vm.name,
                    mask.to_cpulist(),
                    pool.name,
                    pool.pcpus.to_cpulist()
                ),
            ));
        }
    }
    let kind = &crate::hypervisor::policies::native::NativeKind;
    use crate::hypervisor::policies::PolicyKind;
    host.pools.push(PoolSpec {
        name: BARE_METAL_POOL.to_string(),
        pcpus: taken,
        policy: kind.name().to_string(),
        params: crate::params::Params::defaults(&kind.params()),
    });
    let index = host.pools.len() - 1;
    for vm in vms.iter_mut().filter(|vm| vm.bare_metal) {
        vm.pool = index;
    }
    Ok(())
}

/// Letters, digits, `-`, `_` and `.`: safe in file names, CSV cells and trace track names (VM
/// and pool names).
fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// One `[[vm]]` entry, expanded into `count` VMs.
/// Fit VM `name`'s paravirtual guest features (`GuestConfig::pv`) to the hypervisor of its pool's
/// policy (`PolicyKind::hypervisor`), with the kernel's dependencies (`PvFeatures::resolve`). A
/// bare-metal VM has no hypervisor to talk to: every feature is off.
fn pv_guest(
    section: &Section,
    name: &str,
    mut guest: GuestConfig,
    host: &HostSpec,
    pool: usize,
    bare: bool,
) -> Result<GuestConfig, SimError> {
    if bare {
        guest.pv = PvFeatures::default();
        return Ok(guest);
    }
    let spec = &host.pools[pool];
    let kind = policies::find(&spec.policy).expect("pool policies are checked against the registry");
    guest.hypervisor = kind.hypervisor();
    let given = guest.pv_given;
    guest.pv.resolve(&given, guest.hypervisor).map_err(|(key, message)| {
        let at = if section.table("guest").ok().flatten().is_some() { "guest" } else { "name" };
        section.error_at(at, format!("VM {name:?} (pool {:?}, policy = {:?}): guest.{key}: {message}", spec.name, spec.policy))
    })?;
    Ok(guest)
}

fn vm(section: &Section, guest: &GuestConfig, host: &HostSpec, free: &CpuMask, totals: &mut Totals) -> Result<Vec<VmSpec>, SimError> {
    section.allow_only(VM_KEYS)?;
    let bare = bare_metal_cpus(section, host, free)?;
    let name = section.required_string("name", "a VM name such as \"web\"")?;
    if !valid_name(name) {
        return Err(section.error_at("name", format!("expected a name of letters, digits, '-', '_' and '.', got {name:?}")));
    }
    let count = size(section, "count", false)?.unwrap_or(1);
    let vcpus = match &bare {
        Some(cpus) => cpus.len() as u32,
        None => size(section, "vcpus", true)?.expect("a required key is present"),
    };
    // Before any mask is made: a scenario past the bound would allocate them first.
    totals.check_vcpus(section, count, vcpus)?;
    let weight = section.int("weight", 1, U32_MAX)?.unwrap_or(DEFAULT_WEIGHT as i64) as u32;
    let threads = size(section, "threads", false)?;
    let iterations = section.int("iterations", 1, i64::MAX)?.map(|n| n as u64);
    let workload_name = section.required_string("workload", "a workload name (see `vcpusim list`)")?;
    let guest = match section.table("guest")? {
        Some(g) => sections::guest_config(&g, guest)?,
        None => guest.clone(),
    };
    let uvf = section.table("uvf")?.map(|u| uvf_sections::vm_uvf(&u)).transpose()?.unwrap_or_default();
    let (vm_type, u_factor) = vm_class(section)?;
    let sched_pe = sched_pe(section, (vm_type, u_factor))?;
    let (pool, cpus, cpus_soft) = match &bare {
        // The pool is set by `carve_bare_metal` once every VM is known.
        // Each vCPU's own pCPU; one full soft mask for all of them.
        Some(cpus) => {
            let everywhere = Arc::new(CpuMask::full(host.topology.npcpus()));
            (0, cpus.iter().cloned().map(Arc::new).collect(), vec![everywhere; cpus.len()])
        }
        None => placement_keys(section, host, name, vcpus)?,
    };
    let cap = cap(section)?;
    let guest = pv_guest(section, name, guest, host, pool, bare.is_some())?;
    let memory_nodes = contention_sections::memory_nodes(section, host.topology.numa_nodes)?;
    let contention = match section.table("contention")? {
        // Sensitivities without the host's contention model would silently do nothing.
        Some(c) if !host.contention.any() => {
            return Err(c.error(
                "per-VM contention sensitivities need the contention model turned on: add a [host.contention] \
                 section with at least one source set to true",
            ))
        }
        Some(c) => contention_sections::vm_contention(&c, crate::workload::sensitivity::of(workload_name))?,
        None => crate::workload::sensitivity::of(workload_name),
    };
    let (memory_mib, numa_placement) = super::numa_sections::vm_numa(section, host, name, pool)?;
    if cap > 0 {
        let spec = &host.pools[pool];
        let kind = policies::find(&spec.policy).expect("pool policies are checked against the registry");
        if !kind.honours_cap() {
            return Err(section.error_at(
                "cap",
                format!(
                    "VM {name:?} is in pool {:?}, whose policy = {:?} does not enforce caps; \
                     move the VM to a pool of a policy that does ({}) or drop cap",
                    spec.name,
                    spec.policy,
                    cap_honourers()
                ),
            ));
        }
    }

    let (program, threads, params) = if workload_name == program_ops::WORKLOAD_NAME {
        custom_program(section, threads, vcpus)?
    } else {
        builtin_program(section, workload_name, threads, vcpus, name)?
    };
    let problem_key = if workload_name == program_ops::WORKLOAD_NAME { section.key("program") } else { section.path.clone() };
    program.validate().map_err(|m| error(section.file, &problem_key, format!("VM {name:?}: {m}")))?;
    if let Some(n) = iterations {
        // The engine stops a VM when its progress reaches `iterations`; without a progress op
        // it would silently run for the whole duration instead.
        if !program.threads.iter().any(|ops| counts_progress(ops)) {
            return Err(section.error_at(
                "iterations",
                format!(
                    "VM {name:?} never counts progress ({}), so it can never reach {n} iterations; \
                     omit iterations to run for the whole duration",
                    program.progress_unit
                ),
            ));
        }
    }

    let spec = VmSpec {
        name: name.to_string(),
        vcpus,
        weight,
        workload: workload_name.to_string(),
        threads,
        iterations,
        params,
        program,
        guest,
        uvf,
        vm_type,
        u_factor,
        sched_pe,
        pool,
        cpus,
        cpus_soft,
        cap,
        memory_nodes,
        contention,
        memory_mib,
        numa_placement,
        bare_metal: bare.is_some(),
    };
    totals.add(section, count, &spec)?;
    if count == 1 {
        return Ok(vec![spec]);
    }
    Ok((0..count).map(|k| VmSpec { name: format!("{name}-{k}"), ..spec.clone() }).collect())
}

/// The most vCPUs, and guest threads, a scenario may have over all its VMs (`count` copies
/// included). Each key is bounded on its own (`vcpus` and `count` up to 65,536), but their
/// product is not: 65,536 copies of a 65,536-vCPU VM would be 4.3 billion vCPUs, and loading
/// them (each copy holds its program and a CPU mask per vCPU) ended in a failed allocation
/// after half a minute. A million vCPUs is 16 times the largest host this model was run on.
pub const MAX_TOTAL_VCPUS: u64 = 1 << 20;
/// See [`MAX_TOTAL_VCPUS`]; threads may outnumber vCPUs (hackbench runs 400 by default).
pub const MAX_TOTAL_THREADS: u64 = 1 << 22;
/// The most (VM, pCPU) pairs a scenario may have (VMs over all `count` copies × pCPUs). The run
/// keeps each VM's busy time on each pCPU (metrics/pcpu_usage.rs: seed 001's per-pCPU usage and
/// competing modules) and writes a `pcpu_busy_ms[<p>]` row of metrics.csv for each pair, about
/// 60 bytes a pair in all (1 GB at this bound); `cfs` and `eevdf` also keep a group run queue per
/// pair, as Linux keeps `tg->cfs_rq[cpu]` for a task group, about 200 bytes each (3.4 GB). The
/// 1,024-pCPU scaling mix (640 VMs) has 0.66 million pairs; 65,536 one-vCPU VMs on 65,536 pCPUs,
/// each key within its bounds, would have 4.3 billion and end in a failed allocation of 32 GiB.
pub const MAX_VM_PCPU_PAIRS: u64 = 1 << 24;
/// The most (pool, pCPU) pairs a host may have (`[[host.pool]]` entries and the default pool ×
/// pCPUs). Each pool's scheduler instance keeps its per-pCPU state for every pCPU of the host
/// (indexed by pCPU id, as Xen's per-CPU areas are): about 140 bytes a pair under credit, 490
/// under cfs (2 GB at this bound). One pool per pCPU of a 16,384-pCPU host would be 268 million
/// pairs and ended in a failed allocation; the bound allows 1,024 pools on 4,096 pCPUs, 64 on
/// 65,536.
pub const MAX_POOL_PCPU_PAIRS: u64 = 1 << 22;
/// The most per-vCPU cpulists (`cpus` or `cpus_soft` given as an array) × pCPUs over all VMs:
/// each such cpulist is a mask of one bit per pCPU, 512 MiB at this bound (an array of 65,536
/// cpulists on 65,536 pCPUs). A single cpulist, or none, is one mask shared by the VM's vCPUs
/// and its copies (`VmSpec::cpus`), so only arrays count.
pub const MAX_CPULIST_BITS: u64 = 1 << 32;

/// The vCPUs, threads, VMs and per-vCPU cpulists of the VMs read so far ([`MAX_TOTAL_VCPUS`],
/// [`MAX_VM_PCPU_PAIRS`], [`MAX_CPULIST_BITS`]), on a host of `pcpus`.
#[derive(Default)]
struct Totals {
    vcpus: u64,
    threads: u64,
    vms: u64,
    cpulists: u64,
    pcpus: u64,
    /// The pools whose policy keeps a group run queue for every VM on every pCPU
    /// (`PolicyKind::groups_per_vm_and_pcpu`: each such instance keeps its own table), and
    /// their policies (`"cfs and eevdf"`), for messages.
    group_pools: u64,
    group_policies: String,
}

impl Totals {
    /// `count` copies of a VM with `each` of `what` (`key`) bring the scenario to `total`, past
    /// `most`.
    fn over(section: &Section, count: u32, (what, key): (&str, &str), each: u64, total: u64, most: u64) -> SimError {
        section.error_at(
            if count > 1 { "count" } else { key },
            format!(
                "the scenario's VMs have {total} {what} with this one ({count} × {each} {what}); expected at most \
                 {most} over all VMs (fewer copies or smaller VMs)"
            ),
        )
    }

    /// Refuse `count` copies of a VM of `vcpus` vCPUs before any of their masks and tables is
    /// made: past [`MAX_TOTAL_VCPUS`], [`MAX_VM_PCPU_PAIRS`] or [`MAX_CPULIST_BITS`] with the VMs
    /// read so far.
    fn check_vcpus(&self, section: &Section, count: u32, vcpus: u32) -> Result<(), SimError> {
        let total = self.vcpus + u64::from(count) * u64::from(vcpus);
        if total > MAX_TOTAL_VCPUS {
            return Err(Self::over(section, count, ("vCPUs", "vcpus"), vcpus.into(), total, MAX_TOTAL_VCPUS));
        }
        let vms = self.vms + u64::from(count);
        let pairs = vms * self.pcpus;
        let tables = pairs * self.group_pools;
        if pairs > MAX_VM_PCPU_PAIRS || tables > MAX_VM_PCPU_PAIRS {
            let copies = if count > 1 { format!(" ({count} copies)") } else { String::new() };
            let (k, policy) = (self.group_pools, &self.group_policies);
            let message = if pairs > MAX_VM_PCPU_PAIRS {
                let groups = if k > 0 {
                    format!(
                        ", and each pool of {policy} ({k} here) keeps a group run queue for each pair (Linux's tg->cfs_rq[cpu], \
                         about 200 bytes each)"
                    )
                } else {
                    String::new()
                };
                format!(
                    "the scenario has {vms} VMs with this one{copies} on {} pCPUs: {pairs} (VM, pCPU) pairs, expected at \
                     most {MAX_VM_PCPU_PAIRS}; use fewer copies, fewer VMs or fewer pCPUs. The run keeps each VM's busy \
                     time on each pCPU and writes a pcpu_busy_ms row of metrics.csv for each pair{groups}",
                    self.pcpus
                )
            } else {
                format!(
                    "the scenario has {vms} VMs with this one{copies} on {} pCPUs, and each pool of {policy} ({k} here) \
                     keeps a group run queue for every VM on every pCPU (Linux's tg->cfs_rq[cpu], about 200 bytes each): \
                     {tables} in all, expected at most {MAX_VM_PCPU_PAIRS}; use fewer copies, fewer VMs, fewer pools of {policy} or \
                     fewer pCPUs",
                    self.pcpus
                )
            };
            return Err(if count > 1 { section.error_at("count", message) } else { section.error(message) });
        }
        let arrays = cpulist_arrays(section);
        let bits = (self.cpulists + arrays) * self.pcpus;
        if arrays > 0 && bits > MAX_CPULIST_BITS {
            let key = if matches!(section.get("cpus"), Some(Value::Array(_))) { "cpus" } else { "cpus_soft" };
            return Err(section.error_at(
                key,
                format!(
                    "the scenario's VMs have {} per-vCPU cpulists with this one's, on {} pCPUs: each is a mask of one bit \
                     per pCPU, {:.1} GiB in all; expected cpulists × pCPUs at most {MAX_CPULIST_BITS} (give one cpulist \
                     string for every vCPU of the VM where they are the same: it is one mask)",
                    self.cpulists + arrays,
                    self.pcpus,
                    bits as f64 / 8.0 / (1u64 << 30) as f64
                ),
            ));
        }
        Ok(())
    }

    /// Count `count` copies of `spec` (its vCPUs passed `check_vcpus`), or refuse them for their
    /// threads before they are made.
    fn add(&mut self, section: &Section, count: u32, spec: &VmSpec) -> Result<(), SimError> {
        let copies = u64::from(count);
        let (vcpus, threads) = (u64::from(spec.vcpus), spec.program.threads.len() as u64);
        let total = self.threads + copies * threads;
        if total > MAX_TOTAL_THREADS {
            return Err(Self::over(section, count, ("guest threads", "threads"), threads, total, MAX_TOTAL_THREADS));
        }
        self.vcpus += copies * vcpus;
        self.threads = total;
        self.vms += copies;
        self.cpulists += cpulist_arrays(section);
        Ok(())
    }
}

/// How many cpulists a `[[vm]]` section gives one per vCPU (`cpus` and `cpus_soft` arrays; its
/// copies share them).
fn cpulist_arrays(section: &Section) -> u64 {
    ["cpus", "cpus_soft"]
        .iter()
        .map(|key| match section.get(key) {
            Some(Value::Array(list)) => list.len() as u64,
            _ => 0,
        })
        .sum()
}

/// `pool`, `cpus` and `cpus_soft`: the VM's cpupool (an index into `host.pools`) and each vCPU's
/// hard and soft affinity (default: the whole host; the engine applies the pool). A hard mask
/// must meet the pool's pCPUs at the start, or the vCPU could never run; a soft mask may miss
/// the hard one (Xen then ignores soft affinity). With `[host.uvf]`, a VM with `[vm.uvf]` must
/// be in a pool whose policy carries the overlay.
fn placement_keys(section: &Section, host: &HostSpec, name: &str, vcpus: u32) -> Result<(usize, VcpuMasks, VcpuMasks), SimError> {
    let pool = match section.string("pool")? {
        None => 0,
        Some(pool) => host.pools.iter().position(|p| p.name == pool).ok_or_else(|| {
            let names: Vec<&str> = host.pools.iter().map(|p| p.name.as_str()).collect();
            let m = format!("unknown pool {pool:?}; expected one of: {}", pool_names(&host.pools));
            section.error_at("pool", with_suggestion(m, pool, &names))
        })?,
    };
    let spec = &host.pools[pool];
    let npcpus = host.topology.npcpus();
    let cpus = affinity(section, "cpus", vcpus, npcpus)?;
    for (key, mask) in cpus.written() {
        if !mask.intersects(&spec.pcpus) {
            return Err(error(
                section.file,
                key,
                format!(
                    "VM {name:?}: hard affinity {:?} has no pCPU in its pool {:?} (pCPUs {:?}), so the vCPU could never run; \
                     give cpus that meet the pool or choose another pool",
                    mask.to_cpulist(),
                    spec.name,
                    spec.pcpus.to_cpulist()
                ),
            ));
        }
    }
    if let Some(value) = section.get("cpus_soft") {
        let kind = policies::find(&spec.policy).expect("pool policies are checked against the registry");
        if let Some(why) = kind.lacks(&spec.params, policies::HostFeature::SoftAffinity) {
            return Err(section.error_at(
                "cpus_soft",
                format!("got {}, but in VM {name:?}'s pool {:?}, {why}; leave cpus_soft out", show_toml(value), spec.name),
            ));
        }
    }
    let cpus_soft = affinity(section, "cpus_soft", vcpus, npcpus)?;
    if host.uvf.is_some() && section.get("uvf").is_some() {
        let kind = policies::find(&spec.policy).expect("pool policies are checked against the registry");
        if !kind.carries_uvf() {
            return Err(section.error_at(
                "uvf",
                format!(
                    "VM {name:?} is in pool {:?}, whose policy = {:?} does not carry the urgent-vCPU-first overlay; \
                     move the VM to a pool of a proportional-share policy ({}) or drop [vm.uvf]",
                    spec.name,
                    spec.policy,
                    uvf_carriers()
                ),
            ));
        }
    }
    Ok((pool, cpus.per_vcpu(), cpus_soft.per_vcpu()))
}

/// One affinity mask per vCPU (`VmSpec::cpus`, `cpus_soft`).
type VcpuMasks = Vec<Arc<CpuMask>>;

/// The masks of `cpus` or `cpus_soft` as written: one for every vCPU, or one per vCPU; each with
/// the key path it was written at, for messages.
enum Masks {
    /// One mask for every one of this many vCPUs.
    Every((String, Arc<CpuMask>), u32),
    Each(Vec<(String, Arc<CpuMask>)>),
}

impl Masks {
    /// The masks as written, each with its key path.
    fn written(&self) -> &[(String, Arc<CpuMask>)] {
        match self {
            Masks::Every(one, _) => std::slice::from_ref(one),
            Masks::Each(list) => list,
        }
    }

    /// One mask per vCPU; the vCPUs of one cpulist share it.
    fn per_vcpu(self) -> VcpuMasks {
        match self {
            Masks::Every((_, mask), vcpus) => vec![mask; vcpus as usize],
            Masks::Each(list) => list.into_iter().map(|(_, mask)| mask).collect(),
        }
    }
}

/// `cpus` / `cpus_soft`: one cpulist for every vCPU, or an array of `vcpus` cpulists, one per
/// vCPU; absent: the full host for every vCPU.
fn affinity(section: &Section, key: &str, vcpus: u32, npcpus: usize) -> Result<Masks, SimError> {
    let path = section.key(key);
    match section.get(key) {
        None => Ok(Masks::Every((path, Arc::new(CpuMask::full(npcpus))), vcpus)),
        Some(Value::Array(list)) => {
            if list.len() != vcpus as usize {
                return Err(section.error_at(
                    key,
                    format!(
                        "expected one cpulist per vCPU ({vcpus}, as vcpus = {vcpus}), got {} entries; \
                         or write a single cpulist string for every vCPU",
                        list.len()
                    ),
                ));
            }
            let each = list
                .iter()
                .enumerate()
                .map(|(k, value)| {
                    let item = format!("{path}[{k}]");
                    let mask = Arc::new(cpulist(section, &item, value, npcpus)?);
                    Ok((item, mask))
                })
                .collect::<Result<_, SimError>>()?;
            Ok(Masks::Each(each))
        }
        Some(value @ Value::String(_)) => {
            let mask = Arc::new(cpulist(section, &path, value, npcpus)?);
            Ok(Masks::Every((path, mask), vcpus))
        }
        Some(other) => Err(section.error_at(
            key,
            format!(
                "expected a cpulist string such as \"0-3,8\" for every vCPU, or an array of them, one per vCPU; got {}",
                show_toml(other)
            ),
        )),
    }
}

/// `cap`: at most this percent of one pCPU for the whole VM (`xl sched-credit -c`); 0 = no cap.
/// A cap above 100 x vcpus caps nothing and is allowed, as Xen allows it.
fn cap(section: &Section) -> Result<u32, SimError> {
    match section.get("cap") {
        None => Ok(0),
        Some(Value::Integer(n)) if (0..=U32_MAX).contains(n) => Ok(*n as u32),
        Some(other) => Err(section.error_at(
            "cap",
            format!("expected a non-negative integer (percent of one pCPU, as xl sched-credit -c; 0 = no cap), got {}", show_toml(other)),
        )),
    }
}

/// The policies that carry the urgent-vCPU-first overlay, quoted: `"cfs" or "credit"`.
/// The policies that enforce `[[vm]] cap`, quoted, for messages.
fn cap_honourers() -> String {
    let names: Vec<String> = policies::registry().iter().filter(|k| k.honours_cap()).map(|k| format!("{:?}", k.name())).collect();
    names.join(" or ")
}

fn uvf_carriers() -> String {
    let carriers: Vec<String> = policies::registry().iter().filter(|k| k.carries_uvf()).map(|k| format!("{:?}", k.name())).collect();
    carriers.join(" or ")
}

/// `type` and `u_factor`: seed 004's VM class and the master vCPU's u-factor (section 3.3, 4.2).
/// Only the `hybrid` policy reads them; other policies accept and ignore them, so one scenario
/// can be run under `credit` and `hybrid` unchanged (the seed's Credit vs CON vs HIT comparisons).
/// A u-factor on a `hit` VM is a contradiction (it shapes co-scheduling) and is refused.
fn vm_class(section: &Section) -> Result<(VmType, f64), SimError> {
    class_with_defaults(section, (VmType::default(), 0.0))
}

/// `type` and `u_factor` of `section`, each defaulting to the class in effect (`before`), except
/// that a VM made `hit` drops its u-factor.
fn class_with_defaults(section: &Section, before: (VmType, f64)) -> Result<(VmType, f64), SimError> {
    let vm_type = match section.string("type")? {
        None => before.0,
        Some(name) => VmType::from_name(name)
            .ok_or_else(|| section.error_at("type", format!("expected one of {}, got {name:?}", VmType::NAMES.join(", "))))?,
    };
    let u_factor = match section.get("u_factor") {
        None if vm_type == VmType::HighThroughput => 0.0,
        None => before.1,
        Some(value) => {
            // Seed 004 section 3.3: "u-factor in [0, 1]"; 1 = a two-slot master phase every phase.
            let expected = "a number in [0, 1] (the master vCPU's u-factor; 0 = CPS)";
            let u = match value {
                Value::Float(f) => *f,
                Value::Integer(i) => *i as f64,
                other => return Err(section.error_at("u_factor", format!("expected {expected}, got {}", show_toml(other)))),
            };
            if !(0.0..=1.0).contains(&u) {
                return Err(section.error_at("u_factor", format!("expected {expected}, got {}", show_toml(value))));
            }
            u
        }
    };
    if u_factor > 0.0 && vm_type != VmType::Concurrent {
        return Err(section
            .error_at("u_factor", format!("u_factor = {u_factor} applies to concurrent VMs only; add type = \"con\" or remove u_factor")));
    }
    Ok((vm_type, u_factor))
}

/// `[[vm.sched_pe]]`: run-time changes of the VM's class, as the seed's `xm sched-pe` makes them
/// (seed 004 sections 4.2 and 6.5: "the system administrator could also change the type and
/// u-factor of a VM via the user interface"). Each entry has `at` and at least one of `type` /
/// `u_factor`; omitted ones keep the value in effect (a VM made `hit` drops its u-factor).
/// Entries must be in increasing `at` order.
fn sched_pe(vm: &Section, initial: (VmType, f64)) -> Result<Vec<VmClassChange>, SimError> {
    let Some(list) = vm.array("sched_pe")? else { return Ok(Vec::new()) };
    let mut changes: Vec<VmClassChange> = Vec::new();
    let mut class = initial;
    for (i, value) in list.iter().enumerate() {
        let path = vm.key(&format!("sched_pe[{i}]"));
        let Value::Table(table) = value else {
            return Err(error(
                vm.file,
                &path,
                format!("expected a [[vm.sched_pe]] table with at = \"2s\" and type / u_factor, got {}", show_toml(value)),
            ));
        };
        let entry = Section::new(vm.file, path, table);
        entry.allow_only(SCHED_PE_KEYS)?;
        let at_value = entry.require("at", "a duration with a unit, such as \"2s\" (when the change happens)")?;
        let at = super::section::duration_value(entry.file, &entry.key("at"), at_value, false)?;
        if let Some(prev) = changes.last() {
            if at <= prev.at {
                return Err(entry.error_at(
                    "at",
                    format!(
                        "expected a time after the previous entry's ({:?}), got {}: list [[vm.sched_pe]] entries in time order",
                        crate::time::format_duration(prev.at),
                        show_toml(at_value)
                    ),
                ));
            }
        }
        if entry.get("type").is_none() && entry.get("u_factor").is_none() {
            return Err(entry.error("a [[vm.sched_pe]] entry changes nothing: give type and/or u_factor"));
        }
        class = class_with_defaults(&entry, class)?;
        changes.push(VmClassChange { at, vm_type: class.0, u_factor: class.1 });
    }
    Ok(changes)
}

fn custom_program(section: &Section, threads: Option<u32>, vcpus: u32) -> Result<(Program, u32, Params), SimError> {
    if section.get("params").is_some() {
        return Err(section.error_at("params", "a custom program takes no params; put its settings in the ops of [vm.program]"));
    }
    let table = section.table("program")?.ok_or_else(|| {
        section.error_at("program", "missing; workload = \"program\" needs a [vm.program] table with threads = [[ops], ...]")
    })?;
    let (program, threads) = parse_program(&table, threads, vcpus)?;
    Ok((program, threads, Params::default()))
}

fn builtin_program(
    section: &Section,
    workload_name: &str,
    threads: Option<u32>,
    vcpus: u32,
    vm_name: &str,
) -> Result<(Program, u32, Params), SimError> {
    let workload = workload::find(workload_name).map_err(|m| {
        let mut names: Vec<&str> = workload::registry().iter().map(|w| w.name()).collect();
        names.push(program_ops::WORKLOAD_NAME);
        let m = format!("{m}, or {:?} for a custom [vm.program]", program_ops::WORKLOAD_NAME);
        section.error_at("workload", with_suggestion(m, workload_name, &names))
    })?;
    if section.get("program").is_some() {
        return Err(section.error_at("program", format!("only used with workload = \"program\", but workload = {workload_name:?}")));
    }
    let specs = workload.params();
    let params = match section.table("params")? {
        Some(p) => p.params(&specs)?,
        None => Params::defaults(&specs),
    };
    let threads = threads.unwrap_or_else(|| workload.default_threads(vcpus));
    let program = workload.build(threads, &params).map_err(|m| {
        // A build error that names one of the parameters is about [vm.params].
        let about_param = specs.iter().any(|s| mentions_word(&m, s.name));
        let key = if about_param { section.key("params") } else { section.path.clone() };
        error(section.file, &key, format!("VM {vm_name:?}: {m}"))
    })?;
    if let Some(nic) = &program.nic {
        // The device's event channel is bound to one of the VM's own vCPUs.
        if nic.irq_vcpu >= vcpus {
            return Err(section.error_at(
                "params",
                format!("VM {vm_name:?}: irq_vcpu = {} names no vCPU; expected an index below vcpus = {vcpus}", nic.irq_vcpu),
            ));
        }
    }
    Ok((program, threads, params))
}

/// Whether an op list (loop bodies included) has a `Progress` op.
fn counts_progress(ops: &[Op]) -> bool {
    ops.iter().any(|op| match op {
        // A work-stealing worker counts the computation's end.
        Op::Progress | Op::WorkSteal => true,
        Op::Loop { body, .. } => counts_progress(body),
        _ => false,
    })
}

/// Whether `text` contains `word` as a whole word (parameter names contain `_`).
fn mentions_word(text: &str, word: &str) -> bool {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).any(|w| w == word)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::SEC;

    const QUICKSTART: &str = include_str!("../../../../scenarios/quickstart.toml");
    const CUSTOM: &str = include_str!("../../../../scenarios/examples/custom-program.toml");

    fn load(text: &str) -> Result<Scenario, SimError> {
        from_toml_str(text, "s.toml")
    }

    fn message(text: &str) -> String {
        match load(text) {
            Ok(_) => panic!("expected an error for:\n{text}"),
            Err(e) => e.to_string(),
        }
    }

    /// A minimal valid scenario with a custom program, so these tests do not depend on the
    /// built-in workloads' parameters; `extra` is spliced in where a test needs it.
    fn minimal(host_extra: &str, vm_extra: &str) -> String {
        format!(
            "[host]\npcpus = 2\n{host_extra}\n\n[[vm]]\nname = \"a\"\nvcpus = 2\nworkload = \"program\"\n{vm_extra}\n\
             [vm.program]\nthreads = [[{{compute = \"1ms\"}}, {{progress = true}}]]\n"
        )
    }

    fn assert_error(text: &str, want_prefix: &str) {
        let got = message(text);
        assert!(got.starts_with(&format!("s.toml: {want_prefix}")), "\n got: {got}\nwant: s.toml: {want_prefix}");
    }

    #[test]
    fn uvf_sections_load_and_bad_ones_are_rejected() {
        let s = load(&minimal("[host.uvf]\nurgent_tslice = \"300us\"", "[vm.uvf]\nresched_dp = \"500us\"\ntlb_co = true")).unwrap();
        let host = s.host.uvf.expect("[host.uvf] turns the overlay on");
        assert_eq!((host.urgent_tslice, host.urgent_allowance), (300 * crate::time::US, 18 * crate::time::MS));
        assert_eq!(s.vms[0].uvf.resched_dp, Some(500 * crate::time::US));
        assert!(s.vms[0].uvf.tlb_co && s.vms[0].uvf.resched_co.is_none() && !s.vms[0].uvf.early_dp);
        assert!(load(&minimal("", "")).unwrap().host.uvf.is_none());

        assert_error(&minimal("", "[vm.uvf]\ntlb_co = true"), "vm[0].uvf: urgent-vCPU-first features need the overlay");
        assert_error(
            &minimal("policy = \"gang\"\n[host.uvf]", ""),
            "host.uvf: the urgent-vCPU-first overlay rides on a proportional-share policy (\"cfs\" or \"credit\"), got policy = \"gang\"",
        );
        assert!(load(&minimal("policy = \"credit\"\n[host.uvf]", "")).unwrap().host.uvf.is_some());
        assert_error(&minimal("[host.uvf]", "[vm.uvf]\nearly_dp = true"), "vm[0].uvf.early_dp: early_dp = true needs resched_dp");
        assert_error(&minimal("[host.uvf]", "[vm.uvf]\ntlb_c = true"), "vm[0].uvf.tlb_c: unknown key; did you mean \"tlb_co\"?");
        assert_error(&minimal("[host.uvf]", "[vm.uvf]\nresched_co = \"0us\""), "vm[0].uvf.resched_co:");
    }

    #[test]
    fn credit_xen_versions_resolve_their_tunables_and_refuse_what_they_lack() {
        let credit = |params: &str, rest: &str| minimal(&format!("policy = \"credit\"\n{rest}\n[host.params]\n{params}"), "");
        // The default is today's Xen, with its tunables and PLE.
        let s = load(&credit("", "")).unwrap();
        assert_eq!(s.host.params.choice("xen"), "4.18");
        assert_eq!(s.host.params.duration("load_balance_ratelimit"), crate::time::MS);
        assert!(s.host.ple.enabled);
        // 4.4 has the ratelimit but no load-balance ratelimit; 3.3 neither, nor PLE.
        let s = load(&credit("xen = \"4.4\"", "")).unwrap();
        assert_eq!((s.host.params.duration("ratelimit"), s.host.params.duration("load_balance_ratelimit")), (crate::time::MS, 0));
        assert!(s.host.ple.enabled);
        let s = load(&credit("xen = \"3.3\"", "")).unwrap();
        assert_eq!((s.host.params.duration("ratelimit"), s.host.params.duration("tslice")), (0, 30 * crate::time::MS));
        assert!(!s.host.ple.enabled, "Xen 3.3 has no pause-loop exiting");
        // Writing what a version has not is an error naming the key, the value and the version.
        assert_error(&credit("xen = \"3.3\"\nratelimit = \"1ms\"", ""), "host.params.ratelimit: xen = \"3.3\" has no ratelimit");
        assert_error(
            &credit("xen = \"4.7\"\nload_balance_ratelimit = \"2ms\"", ""),
            "host.params.load_balance_ratelimit: xen = \"4.7\" has no",
        );
        assert_error(&credit("xen = \"3.3\"\ntslice = \"10ms\"", ""), "host.params.tslice: xen = \"3.3\" has no tslice");
        assert!(load(&credit("xen = \"3.3\"\nratelimit = \"0ms\"", "")).is_ok(), "the value it behaves as may be written");
        assert_error(&credit("xen = \"4.8\"", ""), "host.params.xen: expected one of 3.3, 4.4, 4.7, 4.18, got \"4.8\"");
        // A version written as a TOML number: said so, with the quoted form (3.10 reads as 3.1,
        // which is no choice: the example is then the default).
        assert_error(
            &credit("xen = 4.4", ""),
            "host.params.xen: expected one of 3.3, 4.4, 4.7, 4.18 as a string, got the number 4.4; the choices are strings: xen = \"4.4\" (with --set",
        );
        assert_error(
            &credit("xen = 4", ""),
            "host.params.xen: expected one of 3.3, 4.4, 4.7, 4.18 as a string, got the number 4; the choices are strings: xen = \"4.18\"",
        );
        assert_error(&credit("xen = \"3.3\"", "[host.ple]\nenabled = true"), "host.ple.enabled: got true, but in pool \"pool0\", xen = \"3.3\" (policy \"credit\") has no pause-loop exiting: it arrived in Xen 4.0");
        assert!(load(&credit("xen = \"3.3\"", "[host.ple]\nenabled = false")).is_ok());
        // Soft affinity arrived in 4.5, cpupools in 4.1.
        let soft = minimal("policy = \"credit\"\n[host.params]\nxen = \"4.4\"", "cpus_soft = \"1\"");
        assert_error(
            &soft,
            "vm[0].cpus_soft: got \"1\", but in VM \"a\"'s pool \"pool0\", xen = \"4.4\" (policy \"credit\") has no soft affinity",
        );
        assert!(load(&minimal("policy = \"credit\"\n[host.params]\nxen = \"4.7\"", "cpus_soft = \"1\"")).is_ok());
        let pooled = pools(&[("params = { tslice = \"1ms\" }", "params = { xen = \"3.3\" }"), ("cpus_soft = \"11\"\n", "")], "");
        assert_error(
            &pooled,
            "host.pool: [[host.pool]] needs cpupools, but in pool \"fast\", xen = \"3.3\" (policy \"credit\") has no cpupools",
        );
    }

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

    #[test]
    fn quickstart_loads_with_expansion() {
        let s = load(QUICKSTART).unwrap();
        assert_eq!(s.host.topology.npcpus(), 8);
        assert_eq!(s.host.policy, "cfs");
        let names: Vec<&str> = s.vms.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(names, ["parallel", "seq-0", "seq-1", "seq-2", "seq-3"]);
        let parallel = &s.vms[0];
        assert_eq!((parallel.vcpus, parallel.threads, parallel.iterations), (8, 8, Some(2000)));
        assert_eq!(parallel.workload, "barrier");
        assert_eq!(parallel.weight, DEFAULT_WEIGHT);
        for seq in &s.vms[1..] {
            assert_eq!((seq.vcpus, seq.iterations, seq.workload.as_str()), (1, None, "cpu-bound"));
        }
        assert_eq!((s.run.duration, s.run.seed, s.run.max_events, s.run.check), (60 * SEC, 1, None, false));
    }

    #[test]
    fn custom_program_example_loads() {
        let s = load(CUSTOM).unwrap();
        assert_eq!(s.vms.len(), 2);
        let worker = &s.vms[0];
        assert_eq!(worker.workload, "program");
        assert_eq!(worker.program.threads.len(), worker.threads as usize);
        assert_eq!(worker.program.progress_unit, "Progress ops executed");
        assert_eq!(worker.guest.spinlock, crate::workload::program::SpinlockKind::TestAndSet);
    }

    #[test]
    fn a_sweep_table_is_accepted_and_its_shape_checked() {
        // A run ignores the grid: the scenario is the same with or without it.
        let plain = load(&minimal("", "")).unwrap();
        let grid = "\n[sweep]\n\"host.policy\" = [\"cfs\", \"credit\"]\nseed = [1, 2]\nvm.a.vcpus = [1, 2]\n";
        let swept = load(&format!("{}{grid}", minimal("", ""))).unwrap();
        assert_eq!(format!("{plain:?}"), format!("{swept:?}"));
        assert_error(&format!("{}\n[sweep]\n", minimal("", "")), "sweep: empty; expected keys");
        assert_error(&format!("{}\n[sweep]\nseed = 3\n", minimal("", "")), "sweep.seed: expected the array of values to sweep");
        assert_error(&format!("{}\n[sweep]\nvm.a.vcpus = []\n", minimal("", "")), "sweep.vm.a.vcpus: expected the array");
        assert_error(&format!("sweep = 1\n{}", minimal("", "")), "sweep: expected a table");
    }

    #[test]
    fn minimal_scenario_fills_defaults() {
        let s = load(&minimal("", "")).unwrap();
        assert_eq!(s.host.policy, DEFAULT_POLICY);
        assert_eq!(s.host.costs, crate::hardware::costs::Costs::default());
        assert_eq!(s.host.ple.grow, policies::find("cfs").unwrap().ple_grow());
        let vm = &s.vms[0];
        assert_eq!((vm.name.as_str(), vm.weight, vm.threads), ("a", 256, 2));
        assert_eq!(vm.program.threads.len(), 2);
        // The default guest, told which hypervisor its pool's policy is (no PV feature is on).
        let hypervisor = policies::find(DEFAULT_POLICY).unwrap().hypervisor();
        assert_eq!(vm.guest, GuestConfig { hypervisor, ..GuestConfig::default() });
        assert_eq!(s.run.duration, 10 * SEC);
    }

    /// A parameter value written as a user would write it in TOML.
    fn to_toml(value: &crate::params::ParamValue) -> Value {
        use crate::params::ParamValue as P;
        match value {
            P::Duration(ns) => Value::String(crate::time::format_duration(*ns)),
            P::Int(i) => Value::Integer(*i as i64),
            P::Float(f) => Value::Float(*f),
            P::Bool(b) => Value::Boolean(*b),
            P::Choice(c) => Value::String(c.clone()),
        }
    }

    #[test]
    fn every_policy_loads_with_its_params_written_out() {
        for kind in policies::registry() {
            let specs = kind.params();
            let params: String = specs.iter().map(|s| format!("{} = {}\n", s.name, to_toml(&s.default))).collect();
            let host = format!("policy = \"{}\"\n[host.params]\n{params}", kind.name());
            let s = load(&minimal(&host, "")).unwrap_or_else(|e| panic!("{}: {e}", kind.name()));
            assert_eq!(s.host.policy, kind.name());
            assert_eq!(s.host.params, Params::defaults(&specs), "{}", kind.name());
            // The PLE window growth default is the policy's (Xen credit keeps it fixed).
            assert_eq!(s.host.ple.grow, kind.ple_grow(), "{}", kind.name());
        }
    }

    #[test]
    fn every_workload_loads_with_its_params_written_out() {
        for w in workload::registry() {
            let specs = w.params();
            let params: String = specs.iter().map(|s| format!("{} = {}\n", s.name, to_toml(&s.default))).collect();
            let text = format!("[host]\npcpus = 4\n[[vm]]\nname = \"v\"\nvcpus = 4\nworkload = \"{}\"\n[vm.params]\n{params}", w.name());
            let s = load(&text).unwrap_or_else(|e| panic!("{}: {e}", w.name()));
            let vm = &s.vms[0];
            assert_eq!(vm.params, Params::defaults(&specs), "{}", w.name());
            assert_eq!(vm.threads, w.default_threads(4), "{}", w.name());
            assert_eq!(vm.program.progress_unit, w.progress_unit());
        }
    }

    #[test]
    fn top_level_guest_is_overridden_per_vm() {
        let text = format!("[guest]\ntick = \"10ms\"\nspinlock = \"tas\"\n\n{}\n[vm.guest]\nspinlock = \"ticket\"\n", minimal("", ""));
        let s = load(&text).unwrap();
        let g = &s.vms[0].guest;
        assert_eq!(g.tick, 10 * crate::time::MS);
        assert_eq!(g.spinlock, crate::workload::program::SpinlockKind::Ticket);
    }

    #[test]
    fn unknown_keys_suggest_the_valid_one() {
        assert_error(&minimal("schduler = \"credit\"", ""), "host.schduler: unknown key; did you mean \"policy\"?");
        assert_error(&minimal("", "vcpu = 2"), "vm[0].vcpu: unknown key; did you mean \"vcpus\"?");
        assert_error(&format!("{}\n[runn]\nseed = 1\n", minimal("", "")), "runn: unknown key; did you mean \"run\"?");
        assert_error(&minimal("[host.params]\nfrobnicate = 1", ""), "host.params.frobnicate: unknown key");
        assert_error(&minimal("[host.ple]\nwindow = 100", ""), "host.ple.window: unknown key; did you mean");
        let m = message(&minimal("zzzzzzzz = 1", ""));
        assert!(m.contains("valid keys: pcpus, policy, sockets"), "{m}");
    }

    #[test]
    fn unknown_policy_and_workload_list_the_valid_names() {
        let m = message(&minimal("policy = \"fifo\"", ""));
        assert!(m.starts_with("s.toml: host.policy: unknown policy \"fifo\""), "{m}");
        for p in policies::registry() {
            assert!(m.contains(p.name()), "{m} lacks {}", p.name());
        }
        assert!(message(&minimal("policy = \"credt\"", "")).ends_with("did you mean \"credit\"?"));
        let text = "[host]\npcpus = 1\n[[vm]]\nname = \"a\"\nvcpus = 1\nworkload = \"nope\"\n";
        let m = message(text);
        assert!(m.starts_with("s.toml: vm[0].workload: unknown workload \"nope\""), "{m}");
        assert!(m.contains("\"program\""), "{m}");
        for w in workload::registry() {
            assert!(m.contains(w.name()), "{m} lacks {}", w.name());
        }
    }

    #[test]
    fn malformed_toml_reports_the_line() {
        let text = "[host]\npcpus = 2\npolicy = \"cfs\n[[vm]]\n";
        match load(text).unwrap_err() {
            SimError::Syntax { file, line, column, message } => {
                assert_eq!(file, "s.toml");
                assert_eq!(line, 3, "{message}");
                assert!(column >= 1);
            }
            other => panic!("expected a syntax error, got {other}"),
        }
        match load("[run]\nseed = 1\n[run]\n").unwrap_err() {
            SimError::Syntax { line, message, .. } => {
                assert_eq!(line, 3);
                assert!(message.contains("\"run\""), "{message}");
            }
            other => panic!("expected a syntax error, got {other}"),
        }
        match load("[host]\npcpus = = 2\n").unwrap_err() {
            SimError::Syntax { line, column, .. } => assert_eq!((line, column), (2, 9)),
            other => panic!("expected a syntax error, got {other}"),
        }
    }

    #[test]
    fn counts_within_their_bounds_whose_product_is_not_are_refused_before_the_copies_are_made() {
        // 65,536 copies of a 65,536-vCPU VM: each key in range, 4.3 billion vCPUs in all.
        let huge = minimal("", "count = 65536").replace("vcpus = 2", "vcpus = 65536");
        assert_error(
            &huge,
            "vm[0].count: the scenario's VMs have 4294967296 vCPUs with this one (65536 × 65536 vCPUs); expected at most 1048576",
        );
        // The bound is over all VMs: the second entry crosses it.
        let two = format!(
            "{}\n[[vm]]\nname = \"b\"\nvcpus = 65536\ncount = 2\nworkload = \"idle\"\n",
            minimal("", "count = 15").replace("vcpus = 2", "vcpus = 65536")
        );
        assert_error(&two, "vm[1].count: the scenario's VMs have 1114112 vCPUs with this one (2 × 65536 vCPUs)");
        assert!(load(&minimal("", "count = 16").replace("vcpus = 2", "vcpus = 65536")).is_ok(), "exactly the bound loads");
        // Threads too (a program's threads may outnumber its vCPUs).
        let threads = minimal("", "count = 65536\nthreads = 65536");
        assert_error(&threads, "vm[0].count: the scenario's VMs have 4294967296 guest threads with this one");
        // VMs × pCPUs: every VM's busy time on every pCPU is kept and written (metrics.csv), under
        // every policy; cfs and eevdf keep a group run queue per pair too, and the message says so.
        let groups = minimal("", "count = 4097").replace("pcpus = 2", "pcpus = 4096").replace("vcpus = 2", "vcpus = 1");
        assert_error(
            &groups,
            "vm[0].count: the scenario has 4097 VMs with this one (4097 copies) on 4096 pCPUs: 16781312 (VM, pCPU) pairs, expected at \
             most 16777216; use fewer copies, fewer VMs or fewer pCPUs. The run keeps each VM's busy time on each pCPU and writes a \
             pcpu_busy_ms row of metrics.csv for each pair, and each pool of cfs (1 here) keeps a group run queue for each pair \
             (Linux's tg->cfs_rq[cpu], about 200 bytes each)",
        );
        assert!(load(&groups.replace("count = 4097", "count = 4096")).is_ok(), "4,096 x 4,096 loads");
        // Each pool of cfs keeps its own table: 64 pools of 16 pCPUs multiply it by 64. (That
        // host with 1,024 VMs took more than 12 GB and died on a failed allocation.)
        let pooled = |policy: &str, vms: u32| {
            let entries: String =
                (1..64).map(|k| format!("[[host.pool]]\nname = \"p{k}\"\npcpus = \"{}-{}\"\n\n", 16 * k, 16 * k + 15)).collect();
            format!(
                "[host]\npcpus = 1024\npolicy = \"{policy}\"\n\n{entries}[[vm]]\nname = \"a\"\ncount = {vms}\nvcpus = 1\nworkload = \"idle\"\n"
            )
        };
        assert_error(
            &pooled("cfs", 257),
            "vm[0].count: the scenario has 257 VMs with this one (257 copies) on 1024 pCPUs, and each pool of cfs (64 here) keeps a \
             group run queue for every VM on every pCPU (Linux's tg->cfs_rq[cpu], about 200 bytes each): 16842752 in all, expected \
             at most 16777216",
        );
        assert!(load(&pooled("cfs", 256)).is_ok(), "64 x 256 x 1,024 group run queues load");
        assert!(load(&pooled("credit", 1024)).is_ok(), "credit keeps no group run queues");
        // Pools of both policies that keep them: named together, counted together.
        let mixed = pooled("cfs", 257).replacen("pcpus = \"16-31\"\n", "pcpus = \"16-31\"\npolicy = \"eevdf\"\n", 1);
        assert_error(
            &mixed,
            "vm[0].count: the scenario has 257 VMs with this one (257 copies) on 1024 pCPUs, and each pool of cfs and eevdf (64 \
             here) keeps a group run queue",
        );
        // Pools × pCPUs: each pool's instance keeps state for every pCPU of the host, bounded
        // before any entry is read. (One pool per pCPU of 16,384 died on a failed allocation.)
        let many_pools = |entries: u32| {
            let list: String = (1..=entries).map(|k| format!("[[host.pool]]\nname = \"p{k}\"\npcpus = \"{k}\"\n\n")).collect();
            format!("[host]\npcpus = 16384\npolicy = \"credit\"\n\n{list}[[vm]]\nname = \"a\"\nvcpus = 1\nworkload = \"idle\"\n")
        };
        assert_error(
            &many_pools(256),
            "host.pool: 256 [[host.pool]] entries and the default pool on 16384 pCPUs: each pool's scheduler instance keeps state for \
             every pCPU of the host, 4210688 (pool, pCPU) pairs; expected at most 4194304 (at most 255 entries on this host)",
        );
        assert!(load(&many_pools(255)).is_ok(), "the bound itself loads");
        // 65,536 one-vCPU VMs on 65,536 pCPUs under credit passed every bound and then died on a
        // failed allocation of 32 GiB (the busy-time table); a VM past the bound on its own is named.
        let many = minimal("policy = \"credit\"", "count = 65536").replace("pcpus = 2", "pcpus = 65536").replace("vcpus = 2", "vcpus = 1");
        assert_error(
            &many,
            "vm[0].count: the scenario has 65536 VMs with this one (65536 copies) on 65536 pCPUs: 4294967296 (VM, pCPU) pairs",
        );
        assert!(!format!("{:?}", load(&many).unwrap_err()).contains("group run queue"), "credit keeps no group run queues");
        let past = format!("{}\n[[vm]]\nname = \"last\"\nvcpus = 1\nworkload = \"idle\"\n", many.replace("count = 65536", "count = 256"));
        assert_error(&past, "vm[1]: the scenario has 257 VMs with this one on 65536 pCPUs: 16842752 (VM, pCPU) pairs");
        // Affinity: one cpulist (or none) is one mask however many vCPUs and copies share it, so a
        // 65,536-vCPU VM on 65,536 pCPUs twice over loads (it took 4 GiB of masks before).
        let wide = minimal("policy = \"credit\"", "count = 2").replace("pcpus = 2", "pcpus = 65536").replace("vcpus = 2", "vcpus = 65536");
        assert!(load(&wide).is_ok(), "131,072 vCPUs of one shared mask each on 65,536 pCPUs load");
        // A cpulist per vCPU is a mask each: bounded over all VMs, before any is parsed.
        let listed = |n: usize, soft: bool| {
            let list = vec!["\"0\""; n].join(", ");
            let keys = if soft { format!("cpus = [{list}]\ncpus_soft = [{list}]") } else { format!("cpus = [{list}]") };
            minimal("policy = \"credit\"", &keys).replace("pcpus = 2", "pcpus = 65536").replace("vcpus = 2", &format!("vcpus = {n}"))
        };
        assert_error(
            &listed(32_769, true),
            "vm[0].cpus: the scenario's VMs have 65538 per-vCPU cpulists with this one's, on 65536 pCPUs: each is a mask of one bit per \
             pCPU, 0.5 GiB in all; expected cpulists × pCPUs at most 4294967296",
        );
        assert!(load(&listed(4_096, false)).is_ok(), "4,096 cpulists on 65,536 pCPUs load");
    }

    #[test]
    fn bad_counts_are_rejected_with_key_paths() {
        assert_error(&minimal("", "").replace("pcpus = 2", "pcpus = 0"), "host.pcpus: expected an integer of at least 1, got 0");
        assert_error(&minimal("", "").replace("pcpus = 2\n", ""), "host.pcpus: missing; expected an integer of at least 1");
        assert_error(&minimal("", "").replace("vcpus = 2", "vcpus = 0"), "vm[0].vcpus: expected an integer of at least 1, got 0");
        assert_error(&minimal("", "weight = 0"), "vm[0].weight: expected an integer of at least 1, got 0");
        assert_error(&minimal("", "count = 0"), "vm[0].count: expected an integer of at least 1, got 0");
        assert_error(&minimal("", "iterations = -3"), "vm[0].iterations: expected an integer of at least 1, got -3");
        assert_error(&minimal("", "").replace("pcpus = 2", "pcpus = \"2\""), "host.pcpus: expected an integer of at least 1, got \"2\"");
        assert_error(&minimal("sockets = 4", ""), "host: sockets = 4 with threads_per_core = 1 needs at least 4 pcpus");
        // Topology::new's own checks are reported under `host` too.
        assert_error(&minimal("numa_nodes = 3", ""), "host: the 2 cores cannot be split evenly over numa_nodes = 3");
        assert_error(&minimal("", "count = 100000000"), "vm[0].count: expected at most 65536");
        assert_error(
            &minimal("cores_per_module = 4", ""),
            "host.cores_per_module: cores_per_module = 4 does not divide the 2 cores of each NUMA node",
        );
        assert_error(&minimal("llc = \"l3\"", ""), "host.llc: unknown last-level-cache scope \"l3\"; expected \"node\"");
        let cmt = load(&minimal("cores_per_module = 2\nllc = \"module\"", "")).unwrap();
        assert_eq!(cmt.host.topology.siblings(PcpuId(1)).count(), 2);
        assert_eq!(cmt.host.topology.llc, LlcScope::Module);
        assert_error(
            &minimal("sockets = 65536\nthreads_per_core = 65536", ""),
            "host: sockets = 65536 with threads_per_core = 65536 needs at least 4294967296 pcpus",
        );
        assert_error(&minimal("", "").replace("vcpus = 2", "vcpus = 5000000000"), "vm[0].vcpus: expected at most 65536");
    }

    #[test]
    fn bad_durations_are_rejected_with_key_paths() {
        let with_run = |run: &str| format!("{}\n[run]\n{run}\n", minimal("", ""));
        assert_error(&with_run("duration = \"-1s\""), "run.duration: expected a non-negative duration");
        assert_error(&with_run("duration = \"60\""), "run.duration: \"60\" has no unit");
        assert_error(&with_run("duration = 60"), "run.duration: expected a duration");
        assert_error(&with_run("duration = \"0s\""), "run.duration: expected a duration");
        assert_error(&minimal("[host.costs]\nipi_send = \"-1us\"", ""), "host.costs.ipi_send: expected a non-negative duration");
        let guest = format!("[guest]\ntick = \"4\"\n{}", minimal("", ""));
        assert_error(&guest, "guest.tick: \"4\" has no unit");
    }

    #[test]
    fn duplicate_and_malformed_names_are_rejected() {
        let two = |first: &str, second: &str| {
            format!(
                "{}\n[[vm]]\nname = \"{second}\"\nvcpus = 1\nworkload = \"program\"\n[vm.program]\nthreads = [[{{progress = true}}]]\n",
                minimal("", "").replace("name = \"a\"", &format!("name = \"{first}\""))
            )
        };
        assert_error(&two("web", "web"), "vm[1].name: duplicate VM name \"web\": vm[0] already has it");
        // Expansion makes "web-1"; a later VM with that name collides.
        let expanded = two("web", "web-1").replace("vcpus = 2\n", "vcpus = 2\ncount = 2\n");
        assert_error(&expanded, "vm[1].name: duplicate VM name \"web-1\"");
        assert_error(&two("my vm", "b"), "vm[0].name: expected a name of letters, digits");
        assert_error(&minimal("", "").replace("name = \"a\"\n", ""), "vm[0].name: missing");
    }

    #[test]
    fn vm_section_shape_is_checked() {
        assert_error("[host]\npcpus = 1\n", "vm: missing; expected at least one [[vm]] section");
        assert_error("[host]\npcpus = 1\n[vm]\nname = \"a\"\n", "vm: expected [[vm]] sections");
        assert_error(&minimal("", "").replace("[host]\npcpus = 2\n", ""), "host: missing");
        assert_error(&minimal("", "params = {x = 1}"), "vm[0].params: a custom program takes no params");
        let no_program = "[host]\npcpus = 1\n[[vm]]\nname = \"a\"\nvcpus = 1\nworkload = \"program\"\n";
        assert_error(no_program, "vm[0].program: missing");
    }

    #[test]
    fn custom_program_errors_carry_the_vm_path() {
        let bad_op = minimal("", "").replace("{progress = true}", "{progres = true}");
        assert_error(&bad_op, "vm[0].program.threads[0][1].progres: unknown op; did you mean \"progress\"?");
        // A 3-party barrier in a 2-thread program can never open: Program::validate says so.
        let barrier =
            minimal("", "").replace("[vm.program]\n", "[vm.program]\nbarriers = [3]\n").replace("{compute = \"1ms\"}", "{barrier = 0}");
        let m = message(&barrier);
        assert!(m.starts_with("s.toml: vm[0].program: VM \"a\": barrier 0 waits for 3 threads"), "{m}");
    }

    #[test]
    fn builtin_workload_params_are_checked() {
        let Some(w) = workload::registry().first() else { return };
        let text =
            format!("[host]\npcpus = 2\n[[vm]]\nname = \"a\"\nvcpus = 2\nworkload = \"{}\"\n[vm.params]\nno_such_param = 1\n", w.name());
        assert_error(&text, "vm[0].params.no_such_param: unknown key");
        let text = text.replace("[vm.params]\nno_such_param = 1\n", "[vm.program]\nthreads = [[{progress = true}]]\n");
        assert_error(&text, "vm[0].program: only used with workload = \"program\"");
    }

    #[test]
    fn iterations_need_a_progress_op() {
        let text = minimal("", "iterations = 10").replace("{progress = true}", "{compute = \"2ms\"}");
        assert_error(&text, "vm[0].iterations: VM \"a\" never counts progress");
        assert_eq!(load(&minimal("", "iterations = 10")).unwrap().vms[0].iterations, Some(10));
    }

    #[test]
    fn vm_type_and_u_factor_load_and_bad_ones_are_rejected() {
        let s = load(&minimal("", "type = \"con\"\nu_factor = 0.25")).unwrap();
        assert_eq!((s.vms[0].vm_type, s.vms[0].u_factor), (VmType::Concurrent, 0.25));
        let s = load(&minimal("", "")).unwrap();
        assert_eq!((s.vms[0].vm_type, s.vms[0].u_factor), (VmType::HighThroughput, 0.0));
        let s = load(&minimal("", "type = \"con\"\nu_factor = 0")).unwrap();
        assert_eq!(s.vms[0].u_factor, 0.0);
        assert_error(&minimal("", "type = \"gang\""), "vm[0].type: expected one of hit, con, got \"gang\"");
        assert_eq!(load(&minimal("", "type = \"con\"\nu_factor = 1.0")).unwrap().vms[0].u_factor, 1.0);
        assert_error(&minimal("", "type = \"con\"\nu_factor = 1.5"), "vm[0].u_factor: expected a number in [0, 1]");
        assert_error(&minimal("", "type = \"con\"\nu_factor = -0.5"), "vm[0].u_factor: expected a number in [0, 1]");
        assert_error(&minimal("", "type = \"con\"\nu_factor = \"a lot\""), "vm[0].u_factor: expected a number in [0, 1]");
        assert_error(&minimal("", "u_factor = 0.25"), "vm[0].u_factor: u_factor = 0.25 applies to concurrent VMs only");
    }

    #[test]
    fn sched_pe_changes_resolve_omitted_keys_and_bad_ones_are_rejected() {
        use super::super::spec::VmClassChange;
        let with = |entries: &str| format!("{}{entries}", minimal("", ""));
        let con = "[[vm.sched_pe]]\nat = \"2s\"\ntype = \"con\"\nu_factor = 0.25\n";
        let u_only = "[[vm.sched_pe]]\nat = \"3s\"\nu_factor = 0.5\n";
        let back = "[[vm.sched_pe]]\nat = \"4s\"\ntype = \"hit\"\n";
        let s = load(&with(&format!("{con}{u_only}{back}"))).unwrap();
        let c = |at: u64, t, u| VmClassChange { at: at * SEC, vm_type: t, u_factor: u };
        assert_eq!(s.vms[0].sched_pe, [c(2, VmType::Concurrent, 0.25), c(3, VmType::Concurrent, 0.5), c(4, VmType::HighThroughput, 0.0)]);
        assert!(load(&minimal("", "")).unwrap().vms[0].sched_pe.is_empty());
        assert_error(&with("[[vm.sched_pe]]\ntype = \"con\"\n"), "vm[0].sched_pe[0].at: missing; expected a duration");
        assert_error(&with("[[vm.sched_pe]]\nat = \"2\"\ntype = \"con\"\n"), "vm[0].sched_pe[0].at: \"2\" has no unit");
        assert_error(&with("[[vm.sched_pe]]\nat = \"2s\"\n"), "vm[0].sched_pe[0]: a [[vm.sched_pe]] entry changes nothing");
        assert_error(
            &with("[[vm.sched_pe]]\nat = \"2s\"\ntype = \"gang\"\n"),
            "vm[0].sched_pe[0].type: expected one of hit, con, got \"gang\"",
        );
        assert_error(&with("[[vm.sched_pe]]\nat = \"2s\"\nweight = 3\n"), "vm[0].sched_pe[0].weight: unknown key");
        assert_error(&with(u_only), "vm[0].sched_pe[0].u_factor: u_factor = 0.5 applies to concurrent VMs only");
        assert_error(
            &with(&format!("{back}{con}")),
            "vm[0].sched_pe[1].at: expected a time after the previous entry's (\"4s\"), got \"2s\"",
        );
        assert_error(&minimal("", "sched_pe = 3"), "vm[0].sched_pe: expected an array, got 3");
        let late = format!("{}[run]\nduration = \"1s\"\n", with(con));
        assert_error(&late, "run.duration: VM \"a\" has a [[vm.sched_pe]] change at 2s, after the run ends (duration = 1s)");
    }

    /// The example: a 12-pCPU credit host with pool "fast" on pCPUs 10-11; `host_extra`
    /// and `vm_extra` are spliced into `[host]` (after the pools) and the VM.
    const POOLS: &str = "[host]\npcpus = 12\npolicy = \"credit\"\n\n\
        [[host.pool]]\nname = \"fast\"\npcpus = \"10-11\"\npolicy = \"credit\"\nparams = { tslice = \"1ms\" }\n\n\
        [[host.pool_change]]\nat = \"2s\"\npcpu = 9\nto = \"fast\"\n\n\
        [[vm]]\nname = \"web\"\nvcpus = 4\npool = \"fast\"\ncpus = \"10-11\"\ncpus_soft = \"11\"\ncap = 150\nworkload = \"cpu-bound\"\n";

    fn pools(replace: &[(&str, &str)], extra: &str) -> String {
        let mut text = POOLS.to_string();
        for (from, to) in replace {
            assert!(text.contains(from), "{from:?} not in the pool scenario");
            text = text.replacen(from, to, 1);
        }
        text + extra
    }

    fn mask(text: &str, n: usize) -> crate::hardware::cpumask::CpuMask {
        parse_cpulist(text, n).unwrap()
    }

    /// A vCPU affinity mask as `VmSpec::cpus` holds it.
    fn shared(text: &str, n: usize) -> Arc<crate::hardware::cpumask::CpuMask> {
        Arc::new(mask(text, n))
    }

    /// Whether the masks are all one allocation.
    fn one_mask(masks: &[&Arc<crate::hardware::cpumask::CpuMask>]) -> bool {
        masks.windows(2).all(|w| Arc::ptr_eq(w[0], w[1]))
    }

    #[test]
    fn pools_affinity_and_cap_load() {
        let s = load(POOLS).unwrap();
        let names: Vec<&str> = s.host.pools.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["pool0", "fast"]);
        assert_eq!(s.host.pools[0].pcpus, mask("0-9", 12));
        assert_eq!((s.host.pools[0].policy.as_str(), &s.host.pools[0].params), ("credit", &s.host.params));
        let fast = &s.host.pools[1];
        assert_eq!((fast.pcpus.to_cpulist().as_str(), fast.policy.as_str()), ("10-11", "credit"));
        assert_eq!(fast.params.duration("tslice"), crate::time::MS);
        assert_eq!(fast.params.duration("ratelimit"), crate::time::MS, "defaults are filled");
        assert_eq!(s.host.pool_changes, [PoolChange { at: 2 * SEC, pcpu: PcpuId(9), to: 1 }]);
        let web = &s.vms[0];
        assert_eq!((web.pool, web.cap), (1, 150));
        assert_eq!(web.cpus, vec![shared("10-11", 12); 4]);
        assert_eq!(web.cpus_soft, vec![shared("11", 12); 4]);
        // One cpulist for every vCPU is one mask, not a copy per vCPU.
        assert!(one_mask(&web.cpus.iter().collect::<Vec<_>>()) && one_mask(&web.cpus_soft.iter().collect::<Vec<_>>()));

        // One cpulist per vCPU; count copies share the masks; a cap above 100 x vcpus is allowed.
        let s = load(&pools(
            &[("\ncpus = \"10-11\"", "\ncpus = [\"10\", \"11\", \"10\", \"0-11\"]\ncount = 2"), ("cap = 150", "cap = 1000")],
            "",
        ))
        .unwrap();
        for vm in &s.vms {
            assert_eq!(vm.cpus, [shared("10", 12), shared("11", 12), shared("10", 12), shared("0-11", 12)]);
            assert_eq!((vm.pool, vm.cap), (1, 1000));
        }
        // The copies share each vCPU's mask; so do the copies' full soft masks.
        assert_eq!(s.vms.len(), 2);
        assert!((0..4).all(|i| one_mask(&[&s.vms[0].cpus[i], &s.vms[1].cpus[i]])));
        assert!(!one_mask(&[&s.vms[0].cpus[0], &s.vms[0].cpus[2]]), "equal cpulists written apart are parsed apart");
        assert!(one_mask(&s.vms.iter().flat_map(|vm| &vm.cpus_soft).collect::<Vec<_>>()));
        // A soft mask that misses the hard one is allowed (Xen ignores it then).
        assert!(load(&pools(&[("cpus_soft = \"11\"", "cpus_soft = \"0-3\"")], "")).is_ok());
        // A pool's policy defaults to [host] policy; params are that policy's, cfs takes placement.
        let s = load(&pools(&[("policy = \"credit\"\nparams = { tslice = \"1ms\" }\n", "")], "")).unwrap();
        assert_eq!(s.host.pools[1].policy, "credit");
        assert_eq!(s.host.pools[1].params, s.host.params);
        let s = load(&pools(
            &[("policy = \"credit\"\nparams = { tslice = \"1ms\" }", "policy = \"cfs\"\nparams = { placement = \"balance\" }")],
            "",
        ))
        .unwrap();
        assert_eq!(s.host.pools[1].params.choice("placement"), "balance");

        // Without pool keys: one pool0 of every pCPU, full masks, no cap.
        let s = load(&minimal("", "")).unwrap();
        assert_eq!(s.host.pools.len(), 1);
        assert_eq!((s.host.pools[0].name.as_str(), &s.host.pools[0].pcpus), ("pool0", &mask("0-1", 2)));
        assert!(s.host.pool_changes.is_empty());
        let vm = &s.vms[0];
        assert_eq!((vm.pool, vm.cap), (0, 0));
        assert_eq!((vm.cpus.clone(), vm.cpus_soft.clone()), (vec![shared("0-1", 2); 2], vec![shared("0-1", 2); 2]));
        assert!(one_mask(&vm.cpus.iter().collect::<Vec<_>>()));
        // Masks default to the whole host, not the pool: the engine applies the pool.
        let s = load(&pools(&[("\ncpus = \"10-11\"\ncpus_soft = \"11\"\n", "\n")], "")).unwrap();
        assert_eq!(s.vms[0].cpus, vec![shared("0-11", 12); 4]);
    }

    #[test]
    fn bad_pools_are_rejected() {
        let pool = |from: &str, to: &str| pools(&[(from, to)], "");
        assert_error(&pool("name = \"fast\"\n", ""), "host.pool[0].name: missing; expected a pool name such as \"fast\"");
        assert_error(
            &pool("name = \"fast\"", "name = \"my pool\""),
            "host.pool[0].name: expected a name of letters, digits, '-', '_' and '.', got \"my pool\"",
        );
        assert_error(&pool("name = \"fast\"", "name = \"pool0\""), "host.pool[0].name: \"pool0\" is the default pool's name");
        let two = "[[host.pool]]\nname = \"fast\"\npcpus = \"8\"\n[[host.pool]]\nname = \"fast\"\npcpus = \"9\"\n";
        assert_error(
            &pool("[[host.pool_change]]", &format!("{two}[[host.pool_change]]")),
            "host.pool[1].name: duplicate pool name \"fast\": host.pool[0] already has it",
        );
        assert_error(&pool("pcpus = \"10-11\"\n", ""), "host.pool[0].pcpus: missing; expected a cpulist such as \"10-11\"");
        assert_error(
            &pool("pcpus = \"10-11\"", "pcpus = \"3-1\""),
            "host.pool[0].pcpus: range \"3-1\" in \"3-1\" runs backwards; write it low-high",
        );
        assert_error(
            &pool("pcpus = \"10-11\"", "pcpus = \"a\""),
            "host.pool[0].pcpus: \"a\" in \"a\" is not a pCPU number; expected a cpulist",
        );
        assert_error(
            &pool("pcpus = \"10-11\"", "pcpus = \"12\""),
            "host.pool[0].pcpus: pCPU 12 in \"12\" is out of range: the host has pCPUs 0-11",
        );
        assert_error(&pool("pcpus = \"10-11\"", "pcpus = 10"), "host.pool[0].pcpus: expected a cpulist string such as \"0-3,8\"");
        let overlap = "[[host.pool]]\nname = \"slow\"\npcpus = \"0-3,11\"\n";
        assert_error(
            &pool("[[host.pool_change]]", &format!("{overlap}[[host.pool_change]]")),
            "host.pool[1].pcpus: pCPU 11 is in pool \"fast\" (host.pool[0]) and in pool \"slow\"; a pCPU belongs to one pool",
        );
        assert_error(&pool("pcpus = \"10-11\"", "pcpus = \"0-11\""), "host.pool: the [[host.pool]] entries take every pCPU (0-11), leaving the default pool \"pool0\" with none; Xen's Pool-0 always keeps at least one pCPU");
        assert_error(
            &pool("policy = \"credit\"\nparams", "policy = \"credt\"\nparams"),
            "host.pool[0].policy: unknown policy \"credt\"; expected one of: cfs, credit, eevdf, gang, hybrid; did you mean \"credit\"?",
        );
        assert_error(&pool("tslice = \"1ms\"", "tslce = \"1ms\""), "host.pool[0].params.tslce: unknown key; did you mean \"tslice\"?");
        assert_error(&pool("tslice = \"1ms\"", "tslice = \"1\""), "host.pool[0].params.tslice: \"1\" has no unit");
        // params are checked against the pool's policy, as [host.params] is.
        assert_error(&pool("tslice = \"1ms\"", "placement = \"balance\""), "host.pool[0].params.placement: unknown key");
        assert_error(&pool("name = \"fast\"", "name = \"fast\"\ncpus = \"1\""), "host.pool[0].cpus: unknown key; did you mean \"pcpus\"?");
        let single = minimal("[host.pool]\nname = \"x\"\npcpus = \"1\"", "");
        assert_error(&single, "host.pool: expected [[host.pool]] sections (an array of tables), got a single [host.pool] table");
    }

    #[test]
    fn pool_changes_are_sorted_replayed_and_bad_ones_rejected() {
        let change = |at: &str, pcpu: u32, to: &str| format!("[[host.pool_change]]\nat = \"{at}\"\npcpu = {pcpu}\nto = \"{to}\"\n");
        // Sorted by time, stable for equal times; a pool with no VMs may be emptied.
        let extra = format!("{}{}{}", change("5s", 10, "pool0"), change("1s", 8, "fast"), change("1s", 7, "fast"));
        let s = load(&pools(
            &[("name = \"web\"\nvcpus = 4\npool = \"fast\"\ncpus = \"10-11\"\ncpus_soft = \"11\"", "name = \"web\"\nvcpus = 4")],
            &extra,
        ))
        .unwrap();
        let got: Vec<(u64, u32, usize)> = s.host.pool_changes.iter().map(|c| (c.at / SEC, c.pcpu.0, c.to)).collect();
        assert_eq!(got, [(1, 8, 1), (1, 7, 1), (2, 9, 1), (5, 10, 0)]);
        let s = load(&format!(
            "{}{}{}",
            pools(&[("pool = \"fast\"\ncpus = \"10-11\"\n", "")], ""),
            change("3s", 10, "pool0"),
            change("3s", 11, "pool0")
        ));
        let s = s.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.host.pool_changes.len(), 3);

        let with = |entry: &str| pools(&[], entry);
        assert_error(&with("[[host.pool_change]]\npcpu = 1\nto = \"fast\"\n"), "host.pool_change[1].at: missing; expected a duration");
        assert_error(&with("[[host.pool_change]]\nat = \"1\"\npcpu = 1\nto = \"fast\"\n"), "host.pool_change[1].at: \"1\" has no unit");
        assert_error(&with(&change("1s", 12, "fast")), "host.pool_change[1].pcpu: pCPU 12 is out of range: the host has pCPUs 0-11");
        assert_error(
            &with("[[host.pool_change]]\nat = \"1s\"\npcpu = -1\nto = \"fast\"\n"),
            "host.pool_change[1].pcpu: expected a non-negative integer, got -1",
        );
        assert_error(
            &with(&change("1s", 1, "fats")),
            "host.pool_change[1].to: unknown pool \"fats\"; expected one of: \"pool0\", \"fast\"; did you mean \"fast\"?",
        );
        assert_error(
            &with("[[host.pool_change]]\nat = \"1s\"\npcpu = 1\nto = \"fast\"\nfrom = \"pool0\"\n"),
            "host.pool_change[1].from: unknown key",
        );
        assert_error(
            &with("[run]\nduration = \"1s\"\n"),
            "run.duration: host.pool_change[0] moves pCPU 9 at 2s, after the run ends (duration = 1s); lengthen the run or drop the change",
        );
        assert_error(
            &with(&change("1s", 10, "fast")),
            "host.pool_change[1].to: pCPU 10 is already in pool \"fast\" at 1s; a change must move it to another pool",
        );
        // pCPU 9 joined "fast" at 2s (pool_change[0]), so moving it again to "fast" later is an error.
        assert_error(&with(&change("3s", 9, "fast")), "host.pool_change[1].to: pCPU 9 is already in pool \"fast\" at 3s");
        let empties = format!("{}{}{}", change("3s", 10, "pool0"), change("3s", 11, "pool0"), change("3s", 9, "pool0"));
        assert_error(&with(&empties), "host.pool_change[3]: moving pCPU 9 to \"pool0\" at 3s would leave pool \"fast\" with no pCPU while it has VMs (\"web\") (Xen refuses: cpupool_unassign_cpu returns -EBUSY)");
        let host =
            "[host]\npcpus = 2\n[[host.pool]]\nname = \"p\"\npcpus = \"1\"\n[[host.pool_change]]\nat = \"1s\"\npcpu = 0\nto = \"p\"\n";
        assert_error(&minimal("", "").replace("[host]\npcpus = 2\n", host), "host.pool_change[0]: moving pCPU 0 to \"p\" at 1s would leave the default pool \"pool0\" with no pCPU; Xen's Pool-0 always keeps at least one pCPU");
    }

    #[test]
    fn pool_changes_need_policies_that_support_them() {
        let text = |policy: &str| {
            format!(
                "[host]\npcpus = 4\n[[host.pool]]\nname = \"g\"\npcpus = \"2-3\"\npolicy = \"{policy}\"\n\
                 [[host.pool_change]]\nat = \"1s\"\npcpu = 1\nto = \"g\"\n\
                 [[vm]]\nname = \"a\"\nvcpus = 1\nworkload = \"cpu-bound\"\n[run]\nduration = \"2s\"\n"
            )
        };
        assert!(load(&text("credit")).is_ok());
        assert!(load(&text("cfs")).is_ok());
        assert_error(
            &text("gang"),
            "host.pool_change[0]: pool \"g\" runs policy = \"gang\", which cannot gain or lose pCPUs during a run; pool changes need a pool of \"cfs\" or \"credit\"",
        );
        assert!(message(&text("hybrid")).contains("policy = \"hybrid\", which cannot gain or lose pCPUs"));
    }

    #[test]
    fn bad_vm_pools_affinity_and_caps_are_rejected() {
        let vm = |from: &str, to: &str| pools(&[(from, to)], "");
        assert_error(
            &vm("pool = \"fast\"", "pool = \"fsat\""),
            "vm[0].pool: unknown pool \"fsat\"; expected one of: \"pool0\", \"fast\"; did you mean \"fast\"?",
        );
        assert_error(&vm("pool = \"fast\"", "pool = 1"), "vm[0].pool: expected a string, got 1");
        assert_error(
            &vm("\ncpus = \"10-11\"", "\ncpus = [\"10\", \"11\"]"),
            "vm[0].cpus: expected one cpulist per vCPU (4, as vcpus = 4), got 2 entries",
        );
        assert_error(&vm("\ncpus = \"10-11\"", "\ncpus = \"11-10\""), "vm[0].cpus: range \"11-10\" in \"11-10\" runs backwards");
        assert_error(
            &vm("\ncpus = \"10-11\"", "\ncpus = [\"10\", \"11\", \"x\", \"10\"]"),
            "vm[0].cpus[2]: \"x\" in \"x\" is not a pCPU number",
        );
        assert_error(
            &vm("\ncpus = \"10-11\"", "\ncpus = [\"10\", \"11\", 10, \"10\"]"),
            "vm[0].cpus[2]: expected a cpulist string such as \"0-3,8\"",
        );
        assert_error(
            &vm("\ncpus = \"10-11\"", "\ncpus = 10"),
            "vm[0].cpus: expected a cpulist string such as \"0-3,8\" for every vCPU, or an array of them, one per vCPU; got 10",
        );
        assert_error(
            &vm("cpus_soft = \"11\"", "cpus_soft = \"12\""),
            "vm[0].cpus_soft: pCPU 12 in \"12\" is out of range: the host has pCPUs 0-11",
        );
        assert_error(
            &vm("\ncpus = \"10-11\"", "\ncpus = \"0-3\""),
            "vm[0].cpus: VM \"web\": hard affinity \"0-3\" has no pCPU in its pool \"fast\" (pCPUs \"10-11\"), so the vCPU could never run",
        );
        assert_error(
            &vm("\ncpus = \"10-11\"", "\ncpus = [\"10\", \"11\", \"9\", \"10\"]"),
            "vm[0].cpus[2]: VM \"web\": hard affinity \"9\" has no pCPU in its pool \"fast\"",
        );
        assert_error(
            &vm("cap = 150", "cap = -1"),
            "vm[0].cap: expected a non-negative integer (percent of one pCPU, as xl sched-credit -c; 0 = no cap), got -1",
        );
        assert_error(
            &vm("cap = 150", "cap = 1.5"),
            "vm[0].cap: expected a non-negative integer (percent of one pCPU, as xl sched-credit -c; 0 = no cap), got 1.5",
        );
        assert_error(
            &vm("cap = 150", "cap = \"150\""),
            "vm[0].cap: expected a non-negative integer (percent of one pCPU, as xl sched-credit -c; 0 = no cap), got \"150\"",
        );
    }

    #[test]
    fn a_cap_in_a_pool_whose_policy_ignores_caps_is_rejected() {
        for policy in ["gang", "hybrid"] {
            let text = pools(
                &[(
                    "pcpus = \"10-11\"\npolicy = \"credit\"\nparams = { tslice = \"1ms\" }",
                    &format!("pcpus = \"10-11\"\npolicy = \"{policy}\""),
                )],
                "",
            );
            // The pool change would be rejected for gang/hybrid too: drop it.
            let text = text.replace("[[host.pool_change]]\nat = \"2s\"\npcpu = 9\nto = \"fast\"\n\n", "");
            assert_error(
                &text,
                &format!(
                    "vm[0].cap: VM \"web\" is in pool \"fast\", whose policy = \"{policy}\" does not enforce caps; \
                     move the VM to a pool of a policy that does (\"cfs\" or \"credit\") or drop cap"
                ),
            );
            // Without a cap (or with cap = 0) the VM loads.
            assert!(load(&text.replace("cap = 150\n", "cap = 0\n")).is_ok());
        }
    }

    #[test]
    fn uvf_needs_a_carrying_policy_in_the_vms_pool() {
        let gang = |vm_uvf: &str| {
            pools(
                &[
                    ("policy = \"credit\"\nparams = { tslice = \"1ms\" }", "policy = \"gang\""),
                    ("[[host.pool_change]]\nat = \"2s\"\npcpu = 9\nto = \"fast\"", "[host.uvf]"),
                    ("cap = 150\n", ""),
                ],
                vm_uvf,
            )
        };
        // [host.uvf] applies to the pools whose policy carries it; a gang pool without [vm.uvf] is
        // fine (and without a cap, which gang does not enforce).
        assert!(load(&gang("")).unwrap().host.uvf.is_some());
        assert_error(&gang("[vm.uvf]\ntlb_co = true\n"), "vm[0].uvf: VM \"web\" is in pool \"fast\", whose policy = \"gang\" does not carry the urgent-vCPU-first overlay; move the VM to a pool of a proportional-share policy (\"cfs\" or \"credit\") or drop [vm.uvf]");
        // pool0's policy must still carry it when [host.uvf] is given.
        let pool0_gang = pools(
            &[("policy = \"credit\"\n\n", "policy = \"gang\"\n\n"), ("[[host.pool_change]]", "[host.uvf]\n\n[[host.pool_change]]")],
            "",
        );
        assert_error(&pool0_gang, "host.uvf: the urgent-vCPU-first overlay rides on a proportional-share policy");
    }

    #[test]
    fn mentions_word_needs_whole_words() {
        assert!(mentions_word("spin must be > 0", "spin"));
        assert!(!mentions_word("spinning forever", "spin"));
        assert!(mentions_word("bad work_ms: 3", "work_ms"));
    }
}
