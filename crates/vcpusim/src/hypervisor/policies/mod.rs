//! The hypervisor scheduling policies, one file each, and their registry.

pub mod balance_placement;
pub mod cfs;
pub mod credit;
pub mod credit2;
pub mod eevdf;
pub mod gang;
pub mod hybrid;
pub mod load_index;
pub mod matching;
pub mod micro_pool;
pub mod native;
pub mod ordered_set;
#[cfg(test)]
pub(crate) mod test_host;

use crate::hypervisor::policy::Policy;
use crate::params::{ParamSpec, Params};
use crate::vmexit::Hypervisor;

/// Facts about the host a policy may size itself by when it is built.
#[derive(Clone, Debug)]
pub struct HostShape {
    pub npcpus: u32,
    pub nvcpus: u32,
    pub nvms: u32,
    /// `[host.uvf]` and the VMs' `[vm.uvf]`: the urgent-vCPU-first overlay, when enabled and
    /// the policy carries it.
    pub uvf: Option<crate::hypervisor::uvf::UvfConfig>,
    /// `[host.microsliced]`: the critical services seed 002's micro-sliced cores detect, when the
    /// policy carries them (the default pool's; `Policy::microsliced`).
    pub microsliced: Option<crate::hypervisor::critical_detect::Detect>,
    /// A seed of this policy instance's own random stream, drawn from the run's seed and the
    /// pool's name (a policy that draws random numbers: the same run, the same draws). The
    /// built-in policies draw none.
    pub seed: u64,
}

impl HostShape {
    /// A host of these sizes, with no overlay.
    pub fn new(npcpus: u32, nvcpus: u32, nvms: u32) -> Self {
        HostShape { npcpus, nvcpus, nvms, uvf: None, microsliced: None, seed: 0 }
    }
}

/// A policy as the registry knows it: its name, description, parameters and constructor.
pub trait PolicyKind: Sync {
    fn name(&self) -> &'static str;
    fn describe(&self) -> &'static str;
    fn params(&self) -> Vec<ParamSpec>;
    /// The per-VM settings the policy reads (`[vm.sched]`, checked against these specs, defaults
    /// filled in), which reach it in `VmSched::params` at `adjust`: Xen's per-scheduler member
    /// of `xen_domctl_scheduler_op`'s union. None by default.
    fn vm_params(&self) -> Vec<ParamSpec> {
        Vec::new()
    }
    fn build(&self, params: &Params, host: HostShape) -> Box<dyn Policy>;
    /// Default pause-loop-exit window growth factor under this policy (`[host.ple] grow`):
    /// KVM's ple_window_grow = 2 (arch/x86/kvm/vmx/vmx.c); Xen keeps its window fixed (1).
    fn ple_grow(&self) -> u64 {
        2
    }
    /// Whether a pool of this policy can gain and lose pCPUs while the run goes on
    /// (`[[host.pool_change]]`: `Policy::remove_pcpu` / `add_pcpu` are implemented).
    fn supports_pool_changes(&self) -> bool {
        false
    }
    /// Whether the policies of this kind offer extension `ext` of the policy interface: asked
    /// of one built with the kind's default parameters on a host of one pCPU, one vCPU and one
    /// VM (the loader asks before it builds the real ones).
    fn offers(&self, ext: Extension) -> bool {
        let mut params = Params::defaults(&self.params());
        if self.resolve_params(&mut params, &|_| false).is_err() {
            return false;
        }
        let mut policy = self.build(&params, HostShape::new(1, 1, 1));
        match ext {
            Extension::MicroSliced => policy.microsliced().is_some(),
            Extension::HoldPreemption => policy.hold_preemption().is_some(),
            Extension::KvmHost => policy.kvm_host().is_some(),
        }
    }
    /// Whether the policy carries the urgent-vCPU-first overlay of seed 000 (`[host.uvf]`).
    fn carries_uvf(&self) -> bool {
        false
    }
    /// Whether the policy enforces a VM's `[[vm]] cap` (credit: `sdom->cap`; cfs: CFS bandwidth
    /// control). The loader rejects a cap on a VM in a pool whose policy does not.
    fn honours_cap(&self) -> bool {
        false
    }
    /// Whether the policy keeps a group run queue for every VM on every pCPU of the host, as
    /// Linux keeps `tg->cfs_rq[cpu]` for a task group (cfs, eevdf): the loader bounds VMs ×
    /// pCPUs for it (its message at scenario/bounds.rs `MAX_VM_PCPU_PAIRS`).
    fn groups_per_vm_and_pcpu(&self) -> bool {
        false
    }
    /// The paravirtual channels the policy reads (`vmexit::Channels`): guest state it may see,
    /// as a real hypervisor sees it only through an interface the guest shares. None by default.
    fn channels(&self) -> crate::vmexit::Channels {
        crate::vmexit::Channels::NONE
    }
    /// The hypervisor this policy schedules for, whose paravirtual interfaces the guests see:
    /// Xen by default (credit, the seeds' hosts; hybrid and gang, built on Xen's model of a
    /// domain); cfs is Linux's, under KVM.
    fn hypervisor(&self) -> Hypervisor {
        Hypervisor::Xen
    }
    /// Fill in the parameter defaults that depend on another parameter, and refuse a parameter
    /// the modelled version lacks (credit's `xen`: 3.3 has no ratelimit). `given(name)` says
    /// whether the scenario wrote `name`; an error is (parameter name, message). Nothing by default.
    fn resolve_params(&self, _params: &mut Params, _given: &dyn Fn(&str) -> bool) -> Result<(), (&'static str, String)> {
        Ok(())
    }
    /// Why the host software modelled with these parameters lacks `feature` (credit with
    /// `xen = "3.3"` has no pause-loop exiting), or `None` if it has it. The loader refuses a
    /// scenario that uses a lacking feature and turns off what is on by default.
    fn lacks(&self, _params: &Params, feature: HostFeature) -> Option<String> {
        if feature == HostFeature::HaltPolling && self.hypervisor() == Hypervisor::Kvm {
            return None;
        }
        default_lacks(self.name(), feature)
    }
}

/// The extensions of the policy interface (hypervisor/policy.rs): what only some policies do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Extension {
    /// Seed 002's micro-sliced cores (`Policy::microsliced`).
    MicroSliced,
    /// Holding an involuntary preemption back for a preemption overlay (`Policy::hold_preemption`).
    HoldPreemption,
    /// A KVM host scheduler's answers to KVM (`Policy::kvm_host`).
    KvmHost,
}

/// A host feature a policy's modelled version may lack (`PolicyKind::lacks`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostFeature {
    /// Pause-loop exiting (`[host.ple]`).
    PauseLoopExiting,
    /// Soft affinity (`[[vm]] cpus_soft`).
    SoftAffinity,
    /// Cpupools (`[[host.pool]]`).
    Cpupools,
    /// A scheduler that reads the domain's NUMA node affinity, so xl's automatic NUMA placement
    /// steers it (`[[vm]] numa_placement`; credit as Xen 4.3 and 4.4). Policies lack it unless
    /// they say otherwise.
    NodeAffinity,
    /// KVM's host halt polling (`[host.halt_poll]`): only KVM host schedulers
    /// (`PolicyKind::hypervisor` Kvm: cfs, eevdf) have it.
    HaltPolling,
}

/// What a policy named `name` lacks unless it says otherwise (`PolicyKind::lacks`).
pub fn default_lacks(name: &str, feature: HostFeature) -> Option<String> {
    match feature {
        HostFeature::NodeAffinity => {
            Some(format!("policy {name:?} does not schedule by a domain's NUMA node affinity (credit as Xen 4.4 does)"))
        }
        HostFeature::HaltPolling => Some(format!("policy {name:?} is not a KVM host scheduler (cfs and eevdf are)")),
        _ => None,
    }
}

/// The built-in policies, in the order `vcpusim list` shows them.
const BUILT_IN: &[&dyn PolicyKind] =
    &[&cfs::CfsKind, &credit::CreditKind, &credit2::Credit2Kind, &eevdf::EevdfKind, &gang::GangKind, &hybrid::HybridKind];

/// A family of policies named by a prefix (`python:module:Class`), resolved by name when a
/// scenario first names one: see [`register_resolver`].
#[derive(Clone, Copy)]
pub struct Resolver {
    /// The prefix its names start with, such as `"python:"`.
    pub prefix: &'static str,
    /// How its names are written, for error messages (`"python:<module>:<Class>"`).
    pub form: &'static str,
    /// The kind a name of this family stands for, or why there is none.
    pub resolve: fn(&str) -> Result<&'static dyn PolicyKind, String>,
}

/// Policies registered at run time ([`register`]) and the name families resolved on demand
/// ([`register_resolver`]), after the built-in ones.
struct Registered {
    kinds: Vec<&'static dyn PolicyKind>,
    resolvers: Vec<Resolver>,
}

static REGISTERED: std::sync::RwLock<Registered> = std::sync::RwLock::new(Registered { kinds: Vec::new(), resolvers: Vec::new() });

fn registered() -> std::sync::RwLockReadGuard<'static, Registered> {
    // A panic while the lock was held cannot leave the lists half-changed (each change is one
    // push), so a poisoned lock is read as it stands.
    REGISTERED.read().unwrap_or_else(|e| e.into_inner())
}

/// Add a policy to the registry of this process, so scenarios can name it (`policy = "mine"`)
/// and `vcpusim list` shows it: how a policy written in another crate runs on this engine
/// without a fork (examples/custom-policy-rs/). The kind lives as long as the process (a
/// `static`, or `Box::leak`). Registering the same kind again does nothing; a name already
/// taken by another policy, an empty name, a name with a character other than a letter, a digit,
/// `-`, `_` or `+`, and the name of the internal `native` policy are refused.
pub fn register(kind: &'static dyn PolicyKind) -> Result<(), String> {
    let name = kind.name();
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || "-_+".contains(c)) {
        return Err(format!("policy name {name:?}: use letters, digits, '-', '_' or '+'"));
    }
    let mut reg = REGISTERED.write().unwrap_or_else(|e| e.into_inner());
    if let Some(taken) = BUILT_IN.iter().chain(reg.kinds.iter()).copied().find(|k| k.name() == name) {
        // The same kind: address and vtable both (kinds are often zero-sized, and zero-sized
        // statics may share an address).
        #[allow(ambiguous_wide_pointer_comparisons)]
        if std::ptr::eq(taken, kind) {
            return Ok(());
        }
        return Err(format!("a policy named {name:?} is registered already"));
    }
    if name == native::NativeKind.name() {
        return Err(format!("policy name {name:?} is the internal policy of bare-metal VMs"));
    }
    reg.kinds.push(kind);
    Ok(())
}

/// Let a family of policy names be resolved when a scenario names one (the Python bindings
/// resolve `python:module:Class` by importing the class). A second resolver for the same prefix
/// replaces the first.
pub fn register_resolver(resolver: Resolver) {
    let mut reg = REGISTERED.write().unwrap_or_else(|e| e.into_inner());
    reg.resolvers.retain(|r| r.prefix != resolver.prefix);
    reg.resolvers.push(resolver);
}

/// All policies a scenario can name, in the order `vcpusim list` shows them: the built-in ones,
/// then those registered in this process.
pub fn registry() -> Vec<&'static dyn PolicyKind> {
    BUILT_IN.iter().copied().chain(registered().kinds.iter().copied()).collect()
}

/// The names of [`registry`], in its order.
pub fn registry_names() -> Vec<String> {
    registry().iter().map(|k| k.name().to_string()).collect()
}

/// Look a policy up by name, including the internal `native` (the pool of a bare-metal VM),
/// which scenarios cannot name.
pub fn find_any(name: &str) -> Result<&'static dyn PolicyKind, String> {
    if name == native::NativeKind.name() {
        return Ok(&native::NativeKind);
    }
    find(name)
}

/// Look a policy up by name (a built-in or registered one, or a name a resolver knows), or
/// list the valid names.
pub fn find(name: &str) -> Result<&'static dyn PolicyKind, String> {
    if let Some(kind) = BUILT_IN.iter().copied().find(|p| p.name() == name) {
        return Ok(kind);
    }
    let reg = registered();
    if let Some(kind) = reg.kinds.iter().copied().find(|p| p.name() == name) {
        return Ok(kind);
    }
    if let Some(resolver) = reg.resolvers.iter().copied().find(|r| name.starts_with(r.prefix)) {
        // Resolved without the lock: a resolver may register what it builds.
        drop(reg);
        return (resolver.resolve)(name).map_err(|e| format!("policy {name:?}: {e}"));
    }
    let mut names: Vec<String> = BUILT_IN.iter().chain(reg.kinds.iter()).map(|p| p.name().to_string()).collect();
    names.extend(reg.resolvers.iter().map(|r| r.form.to_string()));
    Err(format!("unknown policy {name:?}; expected one of: {}", names.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_offers_the_extensions_of_the_policies_it_builds() {
        // Which policy carries which extension (hypervisor/policy.rs): micro-sliced cores and
        // the preemption overlays' hold are credit's (seed 002, seed 003's baselines); the KVM
        // host schedulers are cfs and eevdf, whose hypervisor is KVM.
        for kind in registry() {
            let credit = kind.name() == "credit";
            assert_eq!(kind.offers(Extension::MicroSliced), credit, "{}", kind.name());
            assert_eq!(kind.offers(Extension::HoldPreemption), credit, "{}", kind.name());
            assert_eq!(kind.offers(Extension::KvmHost), kind.hypervisor() == Hypervisor::Kvm, "{}", kind.name());
        }
        assert!(!native::NativeKind.offers(Extension::HoldPreemption));
    }
}
