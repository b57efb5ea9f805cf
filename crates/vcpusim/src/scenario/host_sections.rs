//! `[host]`: the topology keys, the policy (`policy`, `[host.params]`, `placement`) and the host's
//! sub-sections, which it reads through their own loaders (sections.rs, pool_sections.rs,
//! uvf_sections.rs, ...) and checks against the policy of each pool. See `[host]` and
//! `[host.params]` in docs/scenario-format.md.

use super::bounds::size;
use super::pool_sections::{policy_kind, policy_params, pool_changes, pools};
use super::section::Section;
use super::spec::{HostSpec, PoolSpec, DEFAULT_POOL};
use super::suggest::with_suggestion;
use super::{contention_sections, sections, uvf_sections};
use crate::error::SimError;
use crate::hardware::cpumask::CpuMask;
use crate::hardware::topology::{LlcScope, Topology};
use crate::hypervisor::policies;
use crate::params::{show_toml, Params};
use toml::Value;

/// Keys of `[host]`.
pub(super) const HOST_KEYS: &[&str] = &[
    "pcpus", "policy", "sockets", "numa_nodes", "threads_per_core", "cores_per_module", "llc", "start_skew", "placement", "params", "ple",
    "costs", "halt_poll", "uvf", "pool", "pool_change", "contention", "node_memory", "microsliced", "overlay", "irs", "relaxed_co",
    "delay_preempt",
];

/// The policy used when `[host]` names none.
pub const DEFAULT_POLICY: &str = "cfs";

/// `[host]`, with the file index of each of its (sorted) pool changes.
pub(super) fn host(top: &Section) -> Result<(HostSpec, Vec<usize>), SimError> {
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
    let overlay = super::overlay_sections::host_overlay(&host, kind.name(), kind.offers(policies::Extension::HoldPreemption))?;
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

/// The first pool whose policy, with its parameters, lacks `feature` (credit with `xen = "3.3"`
/// has no pause-loop exiting), with the policy's reason.
fn lacking(pools: &[PoolSpec], feature: policies::HostFeature) -> Option<(String, String)> {
    pools.iter().find_map(|p| {
        let kind = policies::find(&p.policy).expect("pool policies are checked against the registry");
        kind.lacks(&p.params, feature).map(|why| (p.name.clone(), why))
    })
}

/// `[host] placement` (seed 000 section 3.2; hypervisor/policies/balance_placement.rs). It reaches the
/// policy as its `placement` parameter, so only a policy declaring one (cfs) takes `balance` or
/// `lc-balance`; `default`, the policy's own placement, is valid with any policy.
fn with_placement(host: &Section, kind: &dyn policies::PolicyKind, mut params: Params) -> Result<Params, SimError> {
    use crate::hypervisor::policies::balance_placement::Placement;
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

/// The policies that carry the urgent-vCPU-first overlay, quoted: `"cfs" or "credit"`.
pub(super) fn uvf_carriers() -> String {
    let carriers: Vec<String> = policies::registry().iter().filter(|k| k.carries_uvf()).map(|k| format!("{:?}", k.name())).collect();
    carriers.join(" or ")
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{assert_error, load, message, minimal, pools, to_toml};
    use crate::hardware::topology::LlcScope;
    use crate::hypervisor::policies;
    use crate::ids::PcpuId;
    use crate::params::Params;

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
    fn bad_host_counts_are_rejected_with_key_paths() {
        assert_error(&minimal("", "").replace("pcpus = 2", "pcpus = 0"), "host.pcpus: expected an integer of at least 1, got 0");
        assert_error(&minimal("", "").replace("pcpus = 2\n", ""), "host.pcpus: missing; expected an integer of at least 1");
        assert_error(&minimal("", "").replace("pcpus = 2", "pcpus = \"2\""), "host.pcpus: expected an integer of at least 1, got \"2\"");
        assert_error(&minimal("sockets = 4", ""), "host: sockets = 4 with threads_per_core = 1 needs at least 4 pcpus");
        // Topology::new's own checks are reported under `host` too.
        assert_error(&minimal("numa_nodes = 3", ""), "host: the 2 cores cannot be split evenly over numa_nodes = 3");
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
    }

    #[test]
    fn unknown_policy_lists_the_valid_names() {
        let m = message(&minimal("policy = \"fifo\"", ""));
        assert!(m.starts_with("s.toml: host.policy: unknown policy \"fifo\""), "{m}");
        for p in policies::registry() {
            assert!(m.contains(p.name()), "{m} lacks {}", p.name());
        }
        assert!(message(&minimal("policy = \"credt\"", "")).ends_with("did you mean \"credit\"?"));
    }
}
