//! Bare-metal VMs (`[[vm]] bare_metal = true`, seed 001's physical machine): the keys such a VM
//! may not have, its pCPUs (`cpus`, or every pCPU no other VM names), one vCPU each, and, once
//! every VM is read, the carving of those pCPUs out of the host's pools into a pool of their own
//! run by the internal `native` policy (hypervisor/policies/native.rs). See "Bare-metal VMs
//! (`bare_metal = true`)" in docs/scenario-format.md; tests/bare_metal.rs runs them.

use super::bounds::U32_MAX;
use super::section::{cpulist, error, Section};
use super::spec::{HostSpec, PoolSpec, VmSpec};
use crate::error::SimError;
use crate::hardware::cpumask::CpuMask;
use crate::params::show_toml;
use std::collections::BTreeMap;
use toml::Value;

/// The pCPUs no VM but a bare-metal one names in its `cpus`: a bare-metal VM's default. Values
/// that do not parse are left to `vm` to report.
pub(super) fn unpinned(list: &[Value], npcpus: usize) -> CpuMask {
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
    ("sched", "settings for a scheduling policy"),
    ("uvf", "urgent-vCPU-first features"),
    ("cpus_soft", "a soft affinity"),
    ("count", "copies (each needs pCPUs of its own)"),
];

/// `bare_metal = true`: its pCPUs (`cpus`, default: every pCPU no other VM names in its `cpus`)
/// and its vCPUs, one per pCPU (vCPU i on the i-th); `None` for a VM.
pub(super) fn bare_metal_cpus(section: &Section, host: &HostSpec, free: &CpuMask) -> Result<Option<Vec<CpuMask>>, SimError> {
    if !section.flag("bare_metal")? {
        return Ok(None);
    }
    section.refuse(NOT_BARE_METAL, |what| {
        format!("a bare-metal VM (bare_metal = true) runs its kernel directly on its pCPUs, with no hypervisor to give it {what}")
    })?;
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
pub(super) fn carve_bare_metal(
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
