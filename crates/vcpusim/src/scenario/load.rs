//! Reading a scenario file: TOML text -> a validated [`Scenario`] with every default filled in.
//!
//! The tables are walked by hand so that every error names the file, the key path
//! (`vm[1].params.spin`), the bad value and what was expected, and unknown keys are rejected at
//! every level with a did-you-mean suggestion. `vcpusim list` prints the same keys
//! (scenario/catalog.rs); docs/scenario-format.md describes the format, scenarios/examples/
//! shows it in use.
//!
//! This file is the entry: the TOML syntax, the top-level keys and the checks across sections
//! once everything is read. Each section has its loader: `[host]` in host_sections.rs,
//! `[[host.pool]]` and `[[host.pool_change]]` in pool_sections.rs, `[[vm]]` in vm_sections.rs
//! (its pool and affinity in affinity_sections.rs, its class in vm_class_sections.rs), the
//! bare-metal VMs' pCPUs in bare_metal.rs, the size bounds in bounds.rs.

use super::section::{error, Section};
use super::spec::Scenario;
use super::{bare_metal, host_sections, pool_sections, sections, vm_sections};
use crate::error::SimError;
use crate::guest::config::GuestConfig;
use crate::params::show_toml;
use toml::Value;

/// `sweep` is the grid of `vcpusim sweep` (python/vcpusim/grids.py): a run ignores it, the
/// loader only checks its shape ([`sweep_table`]).
const TOP_KEYS: &[&str] = &["host", "guest", "vm", "run", "sweep"];

/// Parse and validate a scenario; `source` names it in messages (a path, or `"<python>"`).
pub fn from_toml_str(text: &str, source: &str) -> Result<Scenario, SimError> {
    let root = parse_tables(text, source)?;
    let top = Section::new(source, "", &root);
    top.allow_only(TOP_KEYS)?;
    if let Some(section) = top.table("sweep")? {
        sweep_table(&section)?;
    }
    let (mut host, change_index) = host_sections::host(&top)?;
    let guest = match top.table("guest")? {
        Some(section) => sections::guest_config(&section, &GuestConfig::default())?,
        None => GuestConfig::default(),
    };
    let (mut vms, paths) = vm_sections::vms(&top, &guest, &host)?;
    bare_metal::carve_bare_metal(source, &mut host, &mut vms, &paths, &change_index)?;
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
        // The micro pool takes and gives back pool0's pCPUs itself (sim/mechanisms/microsliced/); a
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
    pool_sections::replay_pool_changes(source, &host, &change_index, &vms)?;
    super::bounds::check(&top, &mut host, &vms, &run)?;
    Ok(Scenario { source: source.to_string(), host, vms, run })
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

#[cfg(test)]
mod tests {
    use super::super::host_sections::DEFAULT_POLICY;
    use super::super::test_support::{assert_error, load, message, minimal};
    use super::super::vm_sections::DEFAULT_WEIGHT;
    use super::*;
    use crate::hypervisor::policies;
    use crate::time::SEC;

    const QUICKSTART: &str = include_str!("../../../../scenarios/quickstart.toml");
    const CUSTOM: &str = include_str!("../../../../scenarios/examples/custom-program.toml");

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
}
