//! `[[vm]]`: each entry's name, count, vCPUs, weight, cap, guest, workload or custom program,
//! expanded into `count` VMs. Its pool and affinity are read by affinity_sections.rs, its class
//! and class changes by vm_class_sections.rs, `bare_metal = true` by bare_metal.rs, and its NUMA,
//! contention and urgent-vCPU-first keys by their own sections' loaders. See `[[vm]]`, `[vm.params]`
//! and "Custom programs" in docs/scenario-format.md.

use super::affinity_sections::placement_keys;
use super::bare_metal::{bare_metal_cpus, unpinned};
use super::bounds::{size, Totals, U32_MAX};
use super::native_sections;
use super::program_ops::{self, parse_program};
use super::section::{error, valid_name, Section};
use super::spec::{HostSpec, VmSpec};
use super::suggest::with_suggestion;
use super::vm_class_sections::{sched_pe, vm_class};
use super::vm_sched_sections::vm_sched;
use super::{contention_sections, sections, uvf_sections};
use crate::error::SimError;
use crate::guest::config::{GuestConfig, PvFeatures};
use crate::hardware::cpumask::CpuMask;
use crate::hypervisor::policies;
use crate::params::{show_toml, Params};
use crate::workload::{
    self,
    program::{Op, Program},
};
use std::collections::BTreeMap;
use std::sync::Arc;
use toml::Value;

/// Keys of one `[[vm]]` entry.
pub(super) const VM_KEYS: &[&str] = &[
    "name", "count", "vcpus", "weight", "type", "u_factor", "sched_pe", "sched", "workload", "threads", "iterations", "params", "program",
    "guest", "uvf", "pool", "cpus", "cpus_soft", "cap", "memory_nodes", "contention", "memory", "numa_placement", "bare_metal", "native",
];

/// Xen's CSCHED_DEFAULT_WEIGHT (xen/common/sched/credit.c); equal weights give equal shares.
pub const DEFAULT_WEIGHT: u32 = 256;

/// The VMs, and the file path (`vm[i]`) of each.
pub(super) fn vms(top: &Section, guest: &GuestConfig, host: &HostSpec) -> Result<(Vec<VmSpec>, Vec<String>), SimError> {
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
    let mut totals = Totals::new(host);
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

/// One `[[vm]]` entry, expanded into `count` VMs.
fn vm(section: &Section, guest: &GuestConfig, host: &HostSpec, free: &CpuMask, totals: &mut Totals) -> Result<Vec<VmSpec>, SimError> {
    section.allow_only(VM_KEYS)?;
    let native = native_sections::is_native(section)?;
    let bare = bare_metal_cpus(section, host, free)?;
    let name = section.required_string("name", "a VM name such as \"web\"")?;
    if !valid_name(name) {
        return Err(section.error_at("name", format!("expected a name of letters, digits, '-', '_' and '.', got {name:?}")));
    }
    let count = size(section, "count", false)?.unwrap_or(1);
    let threads = size(section, "threads", false)?;
    let workload_name = section.required_string("workload", "a workload name (see `vcpusim list`)")?;
    // A native process's program comes first: its threads are its schedulable entities.
    let mut native_program = None;
    let vcpus = match &bare {
        Some(cpus) => cpus.len() as u32,
        None if native => {
            let nproc = native_sections::nproc(section, host)?;
            let (mut program, threads, params) = program_of(section, workload_name, threads, nproc, name)?;
            native_sections::pin_threads(section, name, &mut program)?;
            let n = program.threads.len() as u32;
            native_program = Some((program, threads, params));
            n
        }
        None => size(section, "vcpus", true)?.expect("a required key is present"),
    };
    // Before any mask is made: a scenario past the bound would allocate them first.
    totals.check_vcpus(section, count, vcpus)?;
    let weight = section.int("weight", 1, U32_MAX)?.unwrap_or(DEFAULT_WEIGHT as i64) as u32;
    let iterations = section.int("iterations", 1, i64::MAX)?.map(|n| n as u64);
    let guest = match section.table("guest")? {
        Some(g) => sections::guest_config(&g, guest)?,
        None => guest.clone(),
    };
    let uvf = section.table("uvf")?.map(|u| uvf_sections::vm_uvf(&u)).transpose()?.unwrap_or_default();
    let class = vm_class(section)?;
    let sched_pe = sched_pe(section, class)?;
    let (pool, cpus, cpus_soft) = match &bare {
        // The pool is set by `carve_bare_metal` once every VM is known.
        // Each vCPU's own pCPU; one full soft mask for all of them.
        Some(cpus) => {
            let everywhere = Arc::new(CpuMask::full(host.topology.npcpus()));
            (0, cpus.iter().cloned().map(Arc::new).collect(), vec![everywhere; cpus.len()])
        }
        None => placement_keys(section, host, name, vcpus)?,
    };
    // The class's settings (hybrid's), then `[vm.sched]`'s for the pool's policy, at the start
    // and after each class change.
    let mut sched_params = class.params();
    let mut sched_pe = sched_pe;
    if bare.is_none() && !native {
        let spec = &host.pools[pool];
        let kind = policies::find(&spec.policy).expect("pool policies are checked against the registry");
        let own = vm_sched(section, spec, kind, name)?;
        for params in std::iter::once(&mut sched_params).chain(sched_pe.iter_mut().map(|c| &mut c.params)) {
            for (key, value) in own.iter() {
                params.set(key, value.clone());
            }
        }
    }
    if native {
        native_sections::check_host(section, host, pool)?;
    }
    let cap = cap(section)?;
    let guest = pv_guest(section, name, guest, host, pool, bare.is_some() || native)?;
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

    let (program, threads, params) = match native_program {
        Some(built) => built,
        None => program_of(section, workload_name, threads, vcpus, name)?,
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
        sched_params,
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
        native,
    };
    totals.add(section, count, &spec)?;
    if count == 1 {
        return Ok(vec![spec]);
    }
    Ok((0..count).map(|k| VmSpec { name: format!("{name}-{k}"), ..spec.clone() }).collect())
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

/// The policies that enforce `[[vm]] cap`, quoted, for messages.
fn cap_honourers() -> String {
    let names: Vec<String> = policies::registry().iter().filter(|k| k.honours_cap()).map(|k| format!("{:?}", k.name())).collect();
    names.join(" or ")
}

/// The VM's program: its `[vm.program]` or its workload's, for `vcpus` CPUs.
fn program_of(
    section: &Section,
    workload_name: &str,
    threads: Option<u32>,
    vcpus: u32,
    name: &str,
) -> Result<(Program, u32, Params), SimError> {
    if workload_name == program_ops::WORKLOAD_NAME {
        custom_program(section, threads, vcpus)
    } else {
        builtin_program(section, workload_name, threads, vcpus, name)
    }
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
    // A thread's sched_setaffinity to CPUs the VM does not have fails (EINVAL: no online CPU
    // in the mask), and Tascell's worker exits on it (worker.sc `worker-setaffinity`): the masks
    // threads set at their start, and those their setaffinity ops set.
    // `Some(t)`: thread t's starting mask; `None`: a setaffinity op's.
    let starting = program.thread_cpus.iter().enumerate().map(|(t, c)| (Some(t), c));
    for (thread, cpus) in starting.chain(program.cpu_masks.iter().map(|c| (None, c))) {
        let what = || match thread {
            Some(t) => format!("thread {t}'s CPU affinity"),
            None => "a setaffinity op's CPU mask".to_string(),
        };
        if let Some(bad) = cpus.as_deref().and_then(|c| c.iter().find(|&&i| i >= vcpus)) {
            return Err(section.error_at("params", format!("VM {vm_name:?}: {} names vCPU {bad}, but the VM has vcpus = {vcpus}", what())));
        }
        if cpus.as_deref().is_some_and(|c| c.is_empty()) {
            return Err(section.error_at("params", format!("VM {vm_name:?}: {} is empty", what())));
        }
    }
    Ok((program, threads, params))
}

/// Whether an op list (loop bodies included) has a `Progress` op.
fn counts_progress(ops: &[Op]) -> bool {
    ops.iter().any(|op| match op {
        // A work-stealing worker counts the computation's end.
        Op::Progress | Op::WorkSteal => true,
        Op::Loop { body, .. } | Op::Tickets { body, .. } => counts_progress(body),
        _ => false,
    })
}

/// Whether `text` contains `word` as a whole word (parameter names contain `_`).
fn mentions_word(text: &str, word: &str) -> bool {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).any(|w| w == word)
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{assert_error, load, message, minimal, pools, to_toml};
    use super::*;

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
    fn unknown_workload_lists_the_valid_names() {
        let text = "[host]\npcpus = 1\n[[vm]]\nname = \"a\"\nvcpus = 1\nworkload = \"nope\"\n";
        let m = message(text);
        assert!(m.starts_with("s.toml: vm[0].workload: unknown workload \"nope\""), "{m}");
        assert!(m.contains("\"program\""), "{m}");
        for w in workload::registry() {
            assert!(m.contains(w.name()), "{m} lacks {}", w.name());
        }
    }

    #[test]
    fn bad_vm_counts_are_rejected_with_key_paths() {
        assert_error(&minimal("", "").replace("vcpus = 2", "vcpus = 0"), "vm[0].vcpus: expected an integer of at least 1, got 0");
        assert_error(&minimal("", "weight = 0"), "vm[0].weight: expected an integer of at least 1, got 0");
        assert_error(&minimal("", "count = 0"), "vm[0].count: expected an integer of at least 1, got 0");
        assert_error(&minimal("", "iterations = -3"), "vm[0].iterations: expected an integer of at least 1, got -3");
        assert_error(&minimal("", "count = 100000000"), "vm[0].count: expected at most 65536");
        assert_error(&minimal("", "").replace("vcpus = 2", "vcpus = 5000000000"), "vm[0].vcpus: expected at most 65536");
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
    fn bad_caps_are_rejected() {
        let vm = |from: &str, to: &str| pools(&[(from, to)], "");
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
                     move the VM to a pool of a policy that does (\"cfs\" or \"credit\" or \"credit2\") or drop cap"
                ),
            );
            // Without a cap (or with cap = 0) the VM loads.
            assert!(load(&text.replace("cap = 150\n", "cap = 0\n")).is_ok());
        }
    }

    #[test]
    fn mentions_word_needs_whole_words() {
        assert!(mentions_word("spin must be > 0", "spin"));
        assert!(!mentions_word("spinning forever", "spin"));
        assert!(mentions_word("bad work_ms: 3", "work_ms"));
    }
}
