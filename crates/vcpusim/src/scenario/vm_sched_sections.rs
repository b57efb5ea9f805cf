//! `[vm.sched]`: the VM's settings for its pool's policy, checked against what the policy
//! declares (`PolicyKind::vm_params`), as `[host.params]` is against `PolicyKind::params`; they
//! reach the policy in `VmSched::params` at `adjust` (Xen: `xl sched-<scheduler> -d <domain>`,
//! the scheduler's part of `xen_domctl_scheduler_op`). See `[[vm]]` in docs/scenario-format.md.

use super::section::Section;
use super::spec::PoolSpec;
use crate::error::SimError;
use crate::hypervisor::policies::PolicyKind;
use crate::params::Params;

/// `[vm.sched]` of the VM `name` in `pool`, whose policy is `kind`: its values, and the defaults
/// of the settings it leaves out, for every setting the policy declares. A policy that declares
/// none takes an empty set, and refuses a `[vm.sched]`.
pub(super) fn vm_sched(section: &Section, pool: &PoolSpec, kind: &dyn PolicyKind, name: &str) -> Result<Params, SimError> {
    let specs = kind.vm_params();
    match section.table("sched")? {
        None => Ok(Params::defaults(&specs)),
        Some(_) if specs.is_empty() => Err(section.error_at(
            "sched",
            format!("VM {name:?} is in pool {:?}, whose policy = {:?} takes no per-VM settings; drop [vm.sched]", pool.name, pool.policy),
        )),
        Some(table) => table.params(&specs),
    }
}

#[cfg(test)]
mod tests {
    use super::super::section::Section;
    use super::super::test_support::{assert_error, load, minimal};
    use crate::hypervisor::policies::{HostShape, PolicyKind};
    use crate::hypervisor::policy::Policy;
    use crate::params::{ParamSpec, Params};

    /// A policy that declares two per-VM settings (never built here).
    struct Prioritised;
    impl PolicyKind for Prioritised {
        fn name(&self) -> &'static str {
            "test-vm-sched"
        }
        fn describe(&self) -> &'static str {
            "a policy with per-VM settings"
        }
        fn params(&self) -> Vec<ParamSpec> {
            Vec::new()
        }
        fn vm_params(&self) -> Vec<ParamSpec> {
            vec![ParamSpec::int("priority", 1, "the VM's priority").range(0.0, 9.0), ParamSpec::boolean("pinned", false, "x")]
        }
        fn build(&self, _params: &Params, _host: HostShape) -> Box<dyn Policy> {
            unreachable!("the loader's tests build no policy")
        }
    }

    /// `[vm.sched]` as written in `text` (the VM's keys), read for a VM in the default pool.
    fn read(text: &str) -> Result<Params, String> {
        let s = load(&minimal("", "")).unwrap();
        let table: toml::Table = text.parse().unwrap();
        let section = Section::new("s.toml", "vm[0]".to_string(), &table);
        super::vm_sched(&section, &s.host.pools[0], &Prioritised, "a").map_err(|e| e.to_string())
    }

    #[test]
    fn vm_sched_is_checked_against_what_the_policy_declares_and_fills_its_defaults() {
        let p = read("sched = { priority = 7 }").unwrap();
        assert_eq!((p.int("priority"), p.boolean("pinned")), (7, false));
        let p = read("").unwrap();
        assert_eq!((p.int("priority"), p.boolean("pinned")), (1, false));
        assert!(read("sched = { priority = 12 }").unwrap_err().starts_with("s.toml: vm[0].sched.priority:"));
        assert_eq!(read("sched = { priorty = 3 }").unwrap_err(), "s.toml: vm[0].sched.priorty: unknown key; did you mean \"priority\"?");
    }

    #[test]
    fn a_policy_that_declares_no_settings_refuses_vm_sched_and_bare_metal_has_none() {
        assert_error(
            &minimal("policy = \"credit\"", "[vm.sched]\npriority = 3"),
            "vm[0].sched: VM \"a\" is in pool \"pool0\", whose policy = \"credit\" takes no per-VM settings; drop [vm.sched]",
        );
        // Without a [vm.sched] the VM's settings are the class's alone.
        let s = load(&minimal("policy = \"credit\"", "")).unwrap();
        assert_eq!(s.vms[0].sched_params.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(), ["type", "u_factor"]);
    }
}
