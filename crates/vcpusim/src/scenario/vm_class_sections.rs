//! `[[vm]] type` and `u_factor`, and `[[vm.sched_pe]]`: seed 004's VM class, the master vCPU's
//! u-factor and their changes at run time, read by the `hybrid` policy. See `[[vm]]` and
//! "`[[vm.sched_pe]]`: run-time changes of the VM class" in docs/scenario-format.md.

use super::section::{error, Section};
use super::spec::VmClassChange;
use crate::error::SimError;
use crate::hypervisor::policies::hybrid::class::{VmClass, VmType};
use crate::params::show_toml;
use toml::Value;

/// Keys of one `[[vm.sched_pe]]` entry.
const SCHED_PE_KEYS: &[&str] = &["at", "type", "u_factor"];

/// `type` and `u_factor`: seed 004's VM class and the master vCPU's u-factor (section 3.3, 4.2).
/// Only the `hybrid` policy reads them; other policies accept and ignore them, so one scenario
/// can be run under `credit` and `hybrid` unchanged (the seed's Credit vs CON vs HIT comparisons).
/// A u-factor on a `hit` VM is a contradiction (it shapes co-scheduling) and is refused.
pub(super) fn vm_class(section: &Section) -> Result<VmClass, SimError> {
    class_with_defaults(section, VmClass::default())
}

/// `type` and `u_factor` of `section`, each defaulting to the class in effect (`before`), except
/// that a VM made `hit` drops its u-factor.
fn class_with_defaults(section: &Section, before: VmClass) -> Result<VmClass, SimError> {
    let vm_type = match section.string("type")? {
        None => before.vm_type,
        Some(name) => VmType::from_name(name)
            .ok_or_else(|| section.error_at("type", format!("expected one of {}, got {name:?}", VmType::NAMES.join(", "))))?,
    };
    let u_factor = match section.get("u_factor") {
        None if vm_type == VmType::HighThroughput => 0.0,
        None => before.u_factor,
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
    Ok(VmClass::new(vm_type, u_factor))
}

/// `[[vm.sched_pe]]`: run-time changes of the VM's class, as the seed's `xm sched-pe` makes them
/// (seed 004 sections 4.2 and 6.5: "the system administrator could also change the type and
/// u-factor of a VM via the user interface"). Each entry has `at` and at least one of `type` /
/// `u_factor`; omitted ones keep the value in effect (a VM made `hit` drops its u-factor).
/// Entries must be in increasing `at` order.
pub(super) fn sched_pe(vm: &Section, initial: VmClass) -> Result<Vec<VmClassChange>, SimError> {
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
        changes.push(VmClassChange { at, params: class.params() });
    }
    Ok(changes)
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{assert_error, load, minimal};
    use super::*;
    use crate::time::SEC;

    #[test]
    fn vm_type_and_u_factor_load_and_bad_ones_are_rejected() {
        let class = |text: &str| VmClass::from_params(&load(&minimal("", text)).unwrap().vms[0].sched_params);
        assert_eq!(class("type = \"con\"\nu_factor = 0.25"), VmClass::new(VmType::Concurrent, 0.25));
        assert_eq!(class(""), VmClass::new(VmType::HighThroughput, 0.0));
        assert_eq!(class("type = \"con\"\nu_factor = 0"), VmClass::new(VmType::Concurrent, 0.0));
        assert_error(&minimal("", "type = \"gang\""), "vm[0].type: expected one of hit, con, got \"gang\"");
        assert_eq!(class("type = \"con\"\nu_factor = 1.0").u_factor, 1.0);
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
        let c = |at: u64, t, u| VmClassChange { at: at * SEC, params: VmClass::new(t, u).params() };
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
}
