//! A validated scenario: every value checked, every default filled in.

use crate::guest::config::GuestConfig;
use crate::hardware::costs::{Costs, Ple};
use crate::hardware::cpumask::CpuMask;
use crate::hardware::topology::Topology;
use crate::hypervisor::uvf::{UvfHost, UvfVm};
use crate::params::Params;
use crate::time::Nanos;
use crate::workload::program::Program;
use std::sync::Arc;

#[derive(Clone, Debug)]
pub struct Scenario {
    /// Where it came from (a file path, or `"<python>"`), for messages.
    pub source: String,
    pub host: HostSpec,
    pub vms: Vec<VmSpec>,
    pub run: RunSpec,
}

#[derive(Clone, Debug)]
pub struct HostSpec {
    pub topology: Topology,
    /// Policy name, checked against hypervisor::policies::registry().
    pub policy: String,
    /// Policy parameters, checked against the policy's spec list, defaults filled.
    pub params: Params,
    pub costs: Costs,
    pub ple: Ple,
    /// Each pCPU starts scheduling at a seeded random time in [0, start_skew). Real hosts'
    /// pCPUs boot, tick and take interrupts at unrelated times; without this every pCPU would
    /// make its first decision at t = 0 and slice-based policies would stay phase-locked,
    /// co-scheduling sibling vCPUs by accident (docs/model.md "Shortcuts").
    pub start_skew: Nanos,
    /// `[host.uvf]`: the urgent-vCPU-first overlay (seed 000 section 3.1.3); None = off.
    pub uvf: Option<UvfHost>,
    /// Xen cpupools, each with its own scheduler instance. `pools[0]` is the default pool
    /// `"pool0"` (`[host] policy` / `params`, and every pCPU no `[[host.pool]]` lists); the
    /// others follow in file order. Every pCPU is in exactly one pool; none is empty.
    pub pools: Vec<PoolSpec>,
    /// `[[host.pool_change]]`: pCPUs moved between pools at run time, in time order (stable for
    /// equal times, as written).
    pub pool_changes: Vec<PoolChange>,
    /// `[host.contention]`: the contention sources turned on (seed 001; hardware/contention.rs).
    /// All off (the default, and without the table): every pCPU runs at nominal speed.
    pub contention: crate::hardware::contention::Switches,
    /// `node_memory`: each NUMA node's free memory in MiB when the first VM is created (what
    /// xl's placement reads from `libxl_get_numainfo`); [`UNBOUNDED_NODE_MEMORY_MIB`] each when
    /// not given.
    pub node_memory_mib: Vec<u64>,
    /// `[host.microsliced]`: seed 002's micro-sliced cores (sim/mechanisms/microsliced/); None = off.
    pub microsliced: Option<crate::scenario::microsliced_sections::MicroConfig>,
    /// `[host] overlay` with its section (`[host.irs]`): the preemption overlays
    /// (sim/mechanisms/preemption_overlay/rule.rs); None = off.
    pub overlay: Option<crate::scenario::overlay_sections::OverlayConfig>,
    /// `[host.halt_poll]`: KVM's host halt polling (sim/mechanisms/halt_poll/rule.rs); None = off.
    pub halt_poll: Option<crate::scenario::sections::HaltPoll>,
}

/// `node_memory` when the scenario gives none: more than any VM asks for, equal on every node,
/// so xl's placement (`hypervisor/xl_numa.rs`) decides by vCPU counts and what earlier VMs took.
pub const UNBOUNDED_NODE_MEMORY_MIB: u64 = 1 << 40;

/// `[[vm]] memory` when not given, in MiB. xl's own default (libxl_create.c: `max_memkb = 32 *
/// 1024`) boots no current guest; 1 GiB is a small real one. It only matters to xl's placement.
pub const DEFAULT_VM_MEMORY_MIB: u64 = 1024;

/// `[[vm]] numa_placement`: who sets the domain's NUMA node affinity (Xen 4.4 credit reads it;
/// `hypervisor/node_affinity.rs`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NumaPlacement {
    /// xl's automatic placement at creation (`hypervisor/xl_numa.rs`) sets it; `cpus`, if given,
    /// is applied after creation (`xl vcpu-pin`) and does not reset it (seed 001 section III-G).
    Auto,
    /// Automatic node affinity, derived from the vCPUs' affinity (xl with `cpus=` in the config,
    /// or seed 001 section IV-A's tool that resets it to all nodes).
    Off,
    /// Set explicitly to these nodes (as xl's placement would have; all nodes = `Off`).
    Nodes(Vec<u32>),
}

/// `[[vm]] memory_nodes`: which NUMA nodes hold the VM's memory, its pages spread evenly over
/// them. Resolved at build (`sim/build.rs` `resolve_memory_nodes`) into `VmInfo::memory_nodes`.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum MemoryNodes {
    /// Where the toolstack puts it (`"auto"`, the default): with a node affinity, its nodes;
    /// without, every node (Xen 4.4 stripes a domain without node affinity over all nodes).
    #[default]
    Auto,
    /// These nodes, sorted, distinct, each below `numa_nodes`.
    Nodes(Vec<u32>),
}

/// Name of the default pool (Xen's `Pool-0`, spelled as a scenario name).
pub const DEFAULT_POOL: &str = "pool0";

/// One cpupool: a set of pCPUs scheduled by its own policy instance (Xen `struct cpupool`).
#[derive(Clone, Debug)]
pub struct PoolSpec {
    pub name: String,
    /// Its pCPUs at the start.
    pub pcpus: crate::hardware::cpumask::CpuMask,
    /// Policy name, checked against the registry.
    pub policy: String,
    /// That policy's parameters, defaults filled.
    pub params: Params,
}

/// One `[[host.pool_change]]`: at `at`, pCPU `pcpu` leaves its pool for pool `to` (an index into
/// `HostSpec::pools`), as `xl cpupool-cpu-remove` + `xl cpupool-cpu-add`.
#[derive(Clone, Debug, PartialEq)]
pub struct PoolChange {
    pub at: Nanos,
    pub pcpu: crate::ids::PcpuId,
    pub to: usize,
}

/// Default `[host] start_skew`: one Xen credit time slice, so slice boundaries are spread over
/// a whole slice.
pub const DEFAULT_START_SKEW: Nanos = 30 * crate::time::MS;

#[derive(Clone, Debug)]
pub struct VmSpec {
    /// Unique; `count = N` expands `name` into `name-0` .. `name-(N-1)`.
    pub name: String,
    pub vcpus: u32,
    /// Proportional-share weight; default 256 (Xen CSCHED_DEFAULT_WEIGHT). Equal weights give
    /// equal shares under every policy.
    pub weight: u32,
    /// Workload name (for reports).
    pub workload: String,
    pub threads: u32,
    /// The VM finishes once its progress reaches this.
    pub iterations: Option<u64>,
    pub params: Params,
    /// The program its threads run (built from the workload and params).
    pub program: Program,
    pub guest: GuestConfig,
    /// `[vm.uvf]`: which urgent-vCPU-first features apply to this VM's vCPUs.
    pub uvf: UvfVm,
    /// The VM's settings for one policy only (`VmSched::params`): `type`, seed 004's VM class
    /// (`hit`, the default, or `con`), and `u_factor`, the master vCPU's u-factor in [0, 1]
    /// (section 3.3; PCPS when > 0), both read by the `hybrid` policy (`hybrid/class.rs`).
    pub sched_params: Params,
    /// `[[vm.sched_pe]]`: run-time changes of `type` / `u_factor` (seed 004 section 6.5's
    /// `xm sched-pe`), in increasing time order, each fully resolved.
    pub sched_pe: Vec<VmClassChange>,
    /// The pool its vCPUs start in (an index into `HostSpec::pools`; `pool = "..."`).
    pub pool: usize,
    /// Hard affinity of each vCPU (`cpus`, xl `cpus=`): it never runs outside. One mask per
    /// vCPU; the full host when not given. Each meets the VM's pool. The vCPUs given one
    /// cpulist (or none), and the `count` copies of a VM, share one mask: a mask is a bit per
    /// pCPU, and a copy per vCPU was O(pCPUs × vCPUs) memory (1 GiB for one 65,536-vCPU VM on
    /// 65,536 pCPUs, in the scenario and again in the engine).
    pub cpus: Vec<Arc<CpuMask>>,
    /// Soft affinity of each vCPU (`cpus_soft`, xl `cpus_soft=`): preferred, not required.
    /// One mask per vCPU, shared as `cpus`; the full host when not given.
    pub cpus_soft: Vec<Arc<CpuMask>>,
    /// `cap`: at most this percent of one pCPU for the whole VM (`xl sched-credit -c`); 0 = none.
    pub cap: u32,
    /// `memory_nodes`: where the VM's memory lives (default `"auto"`).
    pub memory_nodes: MemoryNodes,
    /// The VM's sensitivity to each contention source: its workload's row
    /// (workload/sensitivity.rs) with `[vm.contention]` applied. Read only with
    /// `[host.contention]`.
    pub contention: crate::hardware::contention::Sensitivity,
    /// `memory` in MiB (xl `memory=`): what xl's NUMA placement must find free.
    pub memory_mib: u64,
    /// `numa_placement`, its default resolved by the loader (see `NumaPlacement`).
    pub numa_placement: NumaPlacement,
    /// `bare_metal = true`: the guest kernel runs directly on the pCPUs of `cpus`, one vCPU per
    /// pCPU, in the `bare-metal` pool (hypervisor/policies/native.rs): no hypervisor, no exit
    /// costs, PLE or virtualization overhead, and its guest scheduler sees the host topology.
    pub bare_metal: bool,
    /// `native = true`: a process of the host (scenario/native_sections.rs): one vCPU per
    /// thread, each thread pinned to its own, scheduled by the host policy beside the VMs with
    /// native costs and non-preemptible kernel sections (sim/mechanisms/native_tasks.rs).
    pub native: bool,
}

/// One `[[vm.sched_pe]]` entry: at `at` the VM's `sched_params` become `params`.
#[derive(Clone, Debug, PartialEq)]
pub struct VmClassChange {
    pub at: Nanos,
    pub params: Params,
}

#[derive(Clone, Debug)]
pub struct RunSpec {
    /// Stop at this simulated time even if workloads are unfinished.
    pub duration: Nanos,
    pub seed: u64,
    /// Stop with an error after this many events (a guard against runaway scenarios).
    pub max_events: Option<u64>,
    /// Check engine invariants after every event (slow; tests use it).
    pub check: bool,
    /// Record each VM's cumulative pCPU time every this often (`metrics.csv`), like XenMon.
    pub sample_every: Option<Nanos>,
    /// Report the PARSEC barrier's block-waits by phase (`metrics.csv`, seed 000 Figure 10b).
    pub barrier_waits: bool,
}
