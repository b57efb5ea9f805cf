//! Native host processes (`[[vm]] native = true`): a program whose threads are tasks of the host
//! kernel, scheduled by the host policy beside the vCPUs (a KVM host's I/O threads, daemons,
//! containers). The loader reads them as VMs of a special shape, so the engine, the host policy
//! and the outputs need nothing new to carry them:
//!
//! ```text
//!   [[vm]] native = true, threads = 3     host policy (cfs / eevdf)
//!     thread 0 ── pinned to ── "vCPU" 0 ─┐
//!     thread 1 ── pinned to ── "vCPU" 1 ─┼── tasks of the process's cgroup (its weight),
//!     thread 2 ── pinned to ── "vCPU" 2 ─┘   on the pCPUs of its pool and cpus
//! ```
//!
//! Each thread gets a schedulable entity of its own (one "vCPU" per thread, the thread pinned
//! to it), so the guest scheduler never moves a thread and the host policy places and preempts
//! each one as the host kernel places and preempts a task. The costs are native
//! (`Costs::native`: no VM exits, no virtualization overhead, no pause-loop exits), the
//! paravirtual features are off, and the kernel's critical sections are not preemptible: the
//! engine defers a preemption until the thread leaves its last spinlock
//! (sim/mechanisms/native_tasks.rs). Only KVM hosts run them: on Xen the host's processes live
//! in Domain-0, a VM. docs/scenario-format.md "Native host processes" is the user's page.

use super::section::Section;
use super::spec::HostSpec;
use crate::error::SimError;
use crate::hypervisor::policies;
use crate::params::show_toml;
use crate::vmexit::Hypervisor;
use crate::workload::program::Program;
use toml::Value;

/// Keys a native process cannot have, and why.
const NOT_NATIVE: &[(&str, &str)] = &[
    ("bare_metal", "pCPUs of its own (it shares the host's pCPUs with the VMs)"),
    ("vcpus", "vCPUs (its threads are host tasks; set how many with threads)"),
    ("type", "a VM class"),
    ("u_factor", "a u-factor"),
    ("sched_pe", "VM class changes"),
    ("sched", "settings for a VM scheduling policy"),
    ("uvf", "urgent-vCPU-first features (they act on virtual IPIs)"),
    ("memory", "memory for xl's NUMA placement"),
    ("numa_placement", "xl's NUMA placement"),
];

/// Whether `[[vm]] native = true`, its forbidden keys refused.
pub(super) fn is_native(section: &Section) -> Result<bool, SimError> {
    if !section.flag("native")? {
        return Ok(false);
    }
    section.refuse(NOT_NATIVE, |what| format!("a native host process (native = true) is a program of host threads with no {what}"))?;
    if let Some(value @ Value::Array(_)) = section.get("cpus") {
        return Err(section.error_at(
            "cpus",
            format!("expected one cpulist string such as \"0-3\" for every thread of a native process, got {}", show_toml(value)),
        ));
    }
    Ok(true)
}

/// A native process runs only under a KVM host's policy (Linux schedules its tasks and the vCPU
/// threads alike); on Xen the host's own processes live in Domain-0.
pub(super) fn check_host(section: &Section, host: &HostSpec, pool: usize) -> Result<(), SimError> {
    let spec = &host.pools[pool];
    let kind = policies::find(&spec.policy).expect("pool policies are checked against the registry");
    if kind.hypervisor() == Hypervisor::Kvm {
        return Ok(());
    }
    let kvm: Vec<String> =
        policies::registry().iter().filter(|k| k.hypervisor() == Hypervisor::Kvm).map(|k| format!("{:?}", k.name())).collect();
    Err(section.error_at(
        "native",
        format!(
            "native = true needs a KVM host, whose kernel schedules its own tasks beside the vCPU threads, but pool {:?} \
             runs policy = {:?} (Xen: the host's processes run in Domain-0, a VM); use a pool of {}",
            spec.name,
            spec.policy,
            kvm.join(" or ")
        ),
    ))
}

/// The CPUs a native process sees (`nproc`): those of its pool that its `cpus` allow, which
/// sizes a workload's default thread count as the program would size itself on the host.
pub(super) fn nproc(section: &Section, host: &HostSpec) -> Result<u32, SimError> {
    let pool = match section.string("pool")? {
        Some(name) => host.pools.iter().find(|p| p.name == name),
        None => host.pools.first(),
    };
    // An unknown pool or a bad cpulist is reported by the placement keys.
    let Some(pool) = pool else { return Ok(1) };
    let mut mask = pool.pcpus.clone();
    if let Some(value @ Value::String(_)) = section.get("cpus") {
        if let Ok(cpus) = super::section::cpulist(section, &section.key("cpus"), value, host.topology.npcpus()) {
            mask = mask.and(&cpus);
        }
    }
    Ok((mask.count() as u32).max(1))
}

/// Give each thread of a native process its own schedulable entity: thread i runs only on
/// "vCPU" i. Programs that set thread affinity inside the process are refused (a host task's
/// affinity is the process's `cpus` here).
pub(super) fn pin_threads(section: &Section, name: &str, program: &mut Program) -> Result<(), SimError> {
    if program.thread_cpus.iter().any(Option::is_some) || !program.cpu_masks.is_empty() {
        return Err(section.error(format!(
            "VM {name:?}: a native process cannot set thread affinity in its program (cpus / setaffinity ops); \
             give the process's cpus instead"
        )));
    }
    if program.nic.is_some() {
        return Err(
            section.error(format!("VM {name:?}: a native process has no virtual network device; its workload reads one (a net workload)"))
        );
    }
    let n = program.threads.len() as u32;
    program.thread_cpus = (0..n).map(|i| Some(vec![i])).collect();
    Ok(())
}
