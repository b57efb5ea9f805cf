//! `[[vm]] pool`, `cpus` and `cpus_soft`: the VM's cpupool and each vCPU's hard and soft
//! affinity, one cpulist for every vCPU or one per vCPU, checked against the pool's pCPUs and its
//! policy. See `[[vm]]` and "`[[host.pool]]` and `[[host.pool_change]]`: Xen cpupools" in
//! docs/scenario-format.md.

use super::host_sections::uvf_carriers;
use super::pool_sections::pool_names;
use super::section::{cpulist, error, Section};
use super::spec::HostSpec;
use super::suggest::with_suggestion;
use crate::error::SimError;
use crate::hardware::cpumask::CpuMask;
use crate::hypervisor::policies;
use crate::params::show_toml;
use std::sync::Arc;
use toml::Value;

/// `pool`, `cpus` and `cpus_soft`: the VM's cpupool (an index into `host.pools`) and each vCPU's
/// hard and soft affinity (default: the whole host; the engine applies the pool). A hard mask
/// must meet the pool's pCPUs at the start, or the vCPU could never run; a soft mask may miss
/// the hard one (Xen then ignores soft affinity). With `[host.uvf]`, a VM with `[vm.uvf]` must
/// be in a pool whose policy carries the overlay.
pub(super) fn placement_keys(
    section: &Section,
    host: &HostSpec,
    name: &str,
    vcpus: u32,
) -> Result<(usize, VcpuMasks, VcpuMasks), SimError> {
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
pub(super) type VcpuMasks = Vec<Arc<CpuMask>>;

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

#[cfg(test)]
mod tests {
    use super::super::test_support::{assert_error, load, minimal, one_mask, pools, shared, POOLS};

    #[test]
    fn vm_pools_affinity_and_caps_load() {
        let s = load(POOLS).unwrap();
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

        // Without pool keys: full masks, no cap.
        let s = load(&minimal("", "")).unwrap();
        let vm = &s.vms[0];
        assert_eq!((vm.pool, vm.cap), (0, 0));
        assert_eq!((vm.cpus.clone(), vm.cpus_soft.clone()), (vec![shared("0-1", 2); 2], vec![shared("0-1", 2); 2]));
        assert!(one_mask(&vm.cpus.iter().collect::<Vec<_>>()));
        // Masks default to the whole host, not the pool: the engine applies the pool.
        let s = load(&pools(&[("\ncpus = \"10-11\"\ncpus_soft = \"11\"\n", "\n")], "")).unwrap();
        assert_eq!(s.vms[0].cpus, vec![shared("0-11", 12); 4]);
    }

    #[test]
    fn bad_vm_pools_and_affinity_are_rejected() {
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
}
