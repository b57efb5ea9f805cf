//! Building a simulation from a validated scenario.

use super::mechanisms::contention_model::ContentionModel;
use super::mechanisms::sampling::Samples;
use super::mechanisms::Mechanisms;
use super::placement::{Cpupool, Placement};
use super::speed_change::ConstantSpeed;
use super::state::{Activity, GuestSlot, Pcpu, Sim, TimeKind, Vcpu, Vm};
use crate::engine::event_queue::EventQueue;
use crate::engine::rng::stream;
use crate::guest::kernel::{GuestKernel, GuestVcpu};
use crate::guest::objects::{Barrier, Dispenser, MutexWord, ParsecBarrier, Queue, SyncObjects, TaskQueue, TaskSync};
use crate::guest::spinlock::Spinlock;
use crate::guest::stats::GuestStats;
use crate::guest::thread::{CodeCache, Thread, ThreadState};
use crate::hardware::cpumask::IndexMask;
use crate::hardware::speed::Speed;
use crate::hypervisor::host_view::{Affinity, PoolView};
use crate::hypervisor::node_affinity::NodeAffinity;
use crate::hypervisor::policies::{self, HostShape};
use crate::hypervisor::policy::{PcpuInfo, VcpuInfo, VmInfo, VmSched};
use crate::hypervisor::uvf::UvfConfig;
use crate::hypervisor::xl_numa;
use crate::ids::{PcpuId, PoolId, VcpuId, VmId};
use crate::metrics::pcpu_usage::PcpuUsage;
use crate::metrics::trace::{TraceSink, DEFAULT_MAX_EVENTS};
use crate::metrics::vm_stats::VmStats;
use crate::scenario::spec::{MemoryNodes, NumaPlacement, Scenario, VmSpec};
use crate::vmexit::PvArea;
use crate::SimError;
use std::collections::VecDeque;

impl Sim {
    pub fn build(sc: &Scenario, seed: u64, trace: bool, check: bool) -> Result<Sim, SimError> {
        let npcpus = sc.host.topology.npcpus();
        let nvcpus: u32 = sc.vms.iter().map(|v| v.vcpus).sum();
        let mut pools = Vec::new();
        let mut pool_channels = Vec::new();
        let mut pcpu_pool = vec![PoolId(0); npcpus];
        for (i, spec) in sc.host.pools.iter().enumerate() {
            let kind = policies::find_any(&spec.policy).map_err(|message| SimError::Scenario {
                file: sc.source.clone(),
                key: if i == 0 { "host.policy".into() } else { format!("host.pool[{}].policy", i - 1) },
                message,
            })?;
            // Every instance sizes its per-pCPU and per-vCPU tables for the whole host (ids are
            // host-wide) and schedules only what its pool holds.
            // The micro pool's parent is the default pool (sim/mechanisms/microsliced/).
            let shape = HostShape {
                uvf: sc
                    .host
                    .uvf
                    .filter(|_| kind.carries_uvf())
                    .map(|host| UvfConfig { host, vms: sc.vms.iter().map(|vm| vm.uvf).collect() }),
                microsliced: sc.host.microsliced.as_ref().filter(|_| i == 0).map(|m| m.detect),
                seed: rand::Rng::random(&mut stream(seed, &format!("host/pool/{}/policy", spec.name))),
                ..HostShape::new(npcpus as u32, nvcpus, sc.vms.len() as u32)
            };
            let policy = kind.build(&spec.params, shape);
            pool_channels.push(kind.channels());
            for p in spec.pcpus.iter() {
                pcpu_pool[p.idx()] = PoolId(i as u32);
            }
            pools.push(Cpupool { view: PoolView::new(PoolId(i as u32), spec.name.clone(), spec.pcpus.clone()), policy });
        }
        let mut sim = Sim {
            now: 0,
            queue: EventQueue::new(),
            events: 0,
            stale_events: 0,
            topology: sc.host.topology.clone(),
            costs: sc.host.costs.clone(),
            ple: sc.host.ple.clone(),
            ple_base_ns: sc.host.ple.ns(sc.host.ple.window_cycles),
            placement: Placement::new(pools, pool_channels, pcpu_pool),
            calls: Default::default(),
            vinfo: Vec::new(),
            pinfo: (0..npcpus as u32).map(|p| PcpuInfo { id: PcpuId(p), current: None }).collect(),
            vminfo: Vec::new(),
            vcpus: Vec::new(),
            pv: Vec::new(),
            pcpus: (0..npcpus).map(|_| Pcpu { online: false, last: None, slice_event: None, run_start: 0 }).collect(),
            vms: Vec::new(),
            guests: Default::default(),
            ipis_in_flight: 0,
            trace: trace.then(|| TraceSink::new(DEFAULT_MAX_EVENTS)),
            check,
            stop: None,
            unfinished_targets: sc.vms.iter().filter(|v| v.iterations.is_some()).count(),
            speed_model: Box::new(ConstantSpeed),
            speed_constant: true,
            speed_factors: Vec::new(),
            usage: PcpuUsage::new(&sc.host.topology, sc.vms.len()),
            vm_speed: Vec::new(),
            mechanisms: Mechanisms {
                halt_poll: sc.host.halt_poll,
                samples: sc.run.sample_every.map(Samples::new),
                native_tasks: super::mechanisms::native_tasks::NativeTasks::new(sc.vms.len(), sc.vms.iter().any(|v| v.native)),
                ..Mechanisms::default()
            },
            vm_costs: Vec::new(),
            online_at: (0..npcpus)
                .map(|p| {
                    use rand::Rng;
                    let skew = sc.host.start_skew;
                    if skew == 0 {
                        0
                    } else {
                        stream(seed, &format!("host/pcpu/{p}/online")).random_range(0..skew)
                    }
                })
                .collect(),
        };
        let names: Vec<String> = (0..npcpus as u32).map(|p| sim.pcpu_track_name(PcpuId(p))).collect();
        if let Some(tr) = sim.trace.as_mut() {
            tr.name(0, None, format!("host ({})", sc.host.policy));
            for (p, name) in names.into_iter().enumerate() {
                tr.name(0, Some(p as u32), name);
            }
        }
        let numa = numa_placement(sc);
        let mut code = CodeCache::default();
        for (i, (spec, (node_affinity, memory_nodes))) in sc.vms.iter().zip(numa).enumerate() {
            sim.add_vm(spec, seed, node_affinity, memory_nodes, &mut code);
            for (k, change) in spec.sched_pe.iter().enumerate() {
                sim.queue.push(change.at, super::state::Event::VmReconfigure(VmId(i as u32), k as u32));
            }
        }
        if sc.host.costs.variation > 0.0 {
            let vcpus = sim.vinfo.iter().map(|info| (sc.vms[info.vm.idx()].name.clone(), info.index));
            let variation = super::mechanisms::cost_variation::CostVariation::new(seed, sc.host.costs.variation, vcpus);
            sim.mechanisms.cost_variation = Some(Box::new(variation));
        }
        if let Some(cfg) = &sc.host.microsliced {
            sim.build_microsliced(cfg).map_err(|message| SimError::Scenario {
                file: sc.source.clone(),
                key: "host.microsliced.cores".into(),
                message,
            })?;
        }
        if let Some(cfg) = &sc.host.overlay {
            if let Some(overlay) = crate::sim::mechanisms::preemption_overlay::rule::build(cfg) {
                sim.mechanisms.preemption_overlay = Some(Box::new(super::mechanisms::preemption_overlay::OverlayState {
                    cfg: cfg.clone(),
                    overlay,
                    holds: vec![None; sim.pinfo.len()],
                    go: None,
                    yielding: None,
                    registered: sim.guests.iter().map(|g| g.config.irs).collect(),
                    stats: Default::default(),
                    per_vm: vec![Default::default(); sim.vminfo.len()],
                }));
                if let crate::scenario::overlay_sections::OverlayConfig::RelaxedCo(rc) = cfg {
                    sim.mechanisms.relaxed_co =
                        Some(Box::new(super::mechanisms::relaxed_co::RelaxedCoState::new(*rc, sim.vinfo.len(), sim.vminfo.len())));
                }
                if let crate::scenario::overlay_sections::OverlayConfig::Irs(irs) = cfg {
                    for g in sim.guests.kernels_mut().filter(|g| g.config.irs) {
                        g.irs = Some(Box::new(crate::guest::irs::IrsGuest::new(g.vcpus.len(), irs.migrator)));
                    }
                }
            }
        }
        sim.update_trivial_placement();
        if sc.host.contention.any() {
            // `[host.contention]` with a source on: seed 001's contention model. Without, the
            // constant model stays and nothing of this runs (outputs as without the model).
            let sensitivities = sc.vms.iter().map(|v| v.contention).collect();
            sim.set_speed_model(Box::new(ContentionModel::new(sc.host.contention, sensitivities, &sim.topology)));
        }
        if sim.vm_speed.iter().any(|s| *s != Speed::ONE) {
            // `[host.costs] virt_overhead`: VMs run slower than nominal even under the constant model
            // (whose factors are all nominal: the overhead is no contention source).
            sim.speed_constant = false;
            sim.speed_factors.resize(sim.vcpus.len(), crate::hardware::contention::Factors::NOMINAL);
        }
        for change in &sc.host.pool_changes {
            sim.queue.push(change.at, super::state::Event::PoolChange(change.pcpu, PoolId(change.to as u32)));
        }
        Ok(sim)
    }

    fn add_vm(&mut self, spec: &VmSpec, seed: u64, node_affinity: NodeAffinity, memory_nodes: Vec<u32>, code: &mut CodeCache) {
        let vm = VmId(self.vminfo.len() as u32);
        let pool = PoolId(spec.pool as u32);
        let first_vcpu = self.vinfo.len() as u32;
        let vcpu_ids: Vec<VcpuId> = (0..spec.vcpus).map(|i| VcpuId(first_vcpu + i)).collect();
        for (i, v) in vcpu_ids.iter().enumerate() {
            let affinity = Affinity { hard: spec.cpus[i].clone(), soft: spec.cpus_soft[i].clone() };
            // The first home: vCPUs spread round-robin over where each may run (hard ∩ pool),
            // preferring its soft affinity there, by host-wide vCPU number (with one pool and no
            // affinity: vCPU v on pCPU v mod P).
            let allowed = affinity.homes(&self.placement.view(pool).mask);
            let home = allowed.nth(v.idx() % allowed.count()).expect("the loader checks hard ∩ pool is not empty");
            self.placement.add_vcpu(pool, affinity);
            self.vinfo.push(VcpuInfo::new(*v, vm, i as u32, home));
            self.vcpus.push(Vcpu {
                slot: GuestSlot { vm: vm.0, index: i as u32 },
                activity: Activity::Off,
                time_kind: TimeKind::Overhead,
                seg_start: 0,
                remaining: 0,
                speed: Speed::ONE,
                epoch: 0,
                ple_cycles: self.ple.window_cycles,
                ple_ns: self.ple_base_ns,
                ple_due: 0,
                yielding: false,
                runnable_since: 0,
                woken: false,
                kick_pending: false,
                polling: false,
                halt_poll_ns: 0,
                halt_start: None,
            });
            // Every vCPU starts runnable (inserted into its pool, not yet run).
            self.pv.push(PvArea { runnable: true, ..PvArea::default() });
        }
        if let Some(tr) = self.trace.as_mut() {
            tr.name(1 + vm.0, None, format!("VM {}", spec.name));
            for i in 0..spec.vcpus {
                tr.name(1 + vm.0, Some(i), format!("vCPU {i}"));
            }
        }
        let program = &spec.program;
        // Queues bring their own mutex and two condition variables after the program's own;
        // each barrier's PARSEC form (`Op::ParsecBarrier`) a mutex and a condition variable
        // after those.
        // Ticket dispensers' mutexes, then each TaskQ sync's mutex and two condition variables,
        // come last.
        let (queue_mutexes, queue_conds) = (program.mutexes + program.queues.len(), program.conds + 2 * program.queues.len());
        let dispenser_mutexes = queue_mutexes + program.barriers.len();
        let (sync_mutexes, sync_conds) = (dispenser_mutexes + program.dispensers, queue_conds + program.barriers.len());
        let mutexes = sync_mutexes + program.task_syncs.len();
        let mut objects = SyncObjects {
            mutexes: vec![MutexWord::Free; mutexes],
            mutex_owner: vec![None; mutexes],
            dispensers: (0..program.dispensers).map(|d| Dispenser { next: 0, total: 0, mutex: dispenser_mutexes + d }).collect(),
            task_syncs: program
                .task_syncs
                .iter()
                .enumerate()
                .map(|(k, &parties)| TaskSync {
                    count: 0,
                    parties,
                    mutex: sync_mutexes + k,
                    task_avail: sync_conds + 2 * k,
                    tasks_done: sync_conds + 2 * k + 1,
                })
                .collect(),
            task_queues: program.task_queues.iter().map(|&mutex| TaskQueue { count: 0, mutex }).collect(),
            barriers: program.barriers.iter().map(|p| Barrier { parties: *p, arrived: 0, generation: 0, spinners: Vec::new() }).collect(),
            conds: vec![0; sync_conds + 2 * program.task_syncs.len()],
            parsec: program
                .barriers
                .iter()
                .enumerate()
                .map(|(b, p)| ParsecBarrier {
                    max: *p,
                    n: 0,
                    arrival: true,
                    mutex: queue_mutexes + b,
                    cond: queue_conds + b,
                    spinners: Vec::new(),
                })
                .collect(),
            queues: program
                .queues
                .iter()
                .enumerate()
                .map(|(i, cap)| Queue {
                    capacity: *cap,
                    items: 0,
                    mutex: program.mutexes + i,
                    not_empty: program.conds + 2 * i,
                    not_full: program.conds + 2 * i + 1,
                })
                .collect(),
            ..SyncObjects::default()
        };
        for name in &program.kernel_locks {
            let l = self.guests.add_lock(Spinlock::new(spec.guest.spinlock, name.clone()));
            objects.kernel_locks.push(l);
        }
        objects.cpu_masks = program
            .cpu_masks
            .iter()
            .map(|m| m.as_ref().map(|c| crate::hardware::cpumask::IndexMask::from_fn(vcpu_ids.len(), |i| c.contains(&(i as u32)))))
            .collect();
        for (k, kind) in program.spinlocks.iter().enumerate() {
            let l = self.guests.add_lock(Spinlock::new(*kind, format!("user-spinlock-{k}")));
            objects.user_spinlocks.push(l);
        }
        let mut guest_vcpus: Vec<GuestVcpu> = vcpu_ids.iter().map(|v| GuestVcpu::new(*v)).collect();
        let mut thread_ids = Vec::new();
        // A bare-metal VM's kernel sees the real topology (its vCPU i is pCPU cpus[i]) and places
        // the threads as Linux 3.13's fork balancing does; a VM's go round-robin.
        let topology = spec.bare_metal.then(|| {
            let pcpus: Vec<PcpuId> = spec.cpus.iter().map(|m| m.first().expect("a bare-metal vCPU has its pCPU")).collect();
            crate::guest::bare_metal_placement::GuestTopology::new(&self.topology, &pcpus)
        });
        let mut load = vec![0u64; vcpu_ids.len()];
        for (i, ops) in program.threads.iter().enumerate() {
            let t = self.guests.next_thread();
            // A thread with a CPU affinity sets it first thing (the loader checked it names the
            // VM's vCPUs); it starts on the first of them when its usual place is outside.
            let cpus = program.thread_cpus.get(i).cloned().flatten().map(|c| IndexMask::from_pcpus(c.iter().map(|&k| k as usize)));
            let slot = match &topology {
                Some(topo) if i > 0 => topo.find_idlest_cpu(0, &load),
                _ => i % vcpu_ids.len(),
            };
            let slot = match &cpus {
                Some(m) if !m.contains(slot) => m.first().expect("the loader rejects an empty affinity"),
                _ => slot,
            };
            load[slot] += 1;
            let v = vcpu_ids[slot];
            self.guests.add_thread(Thread {
                id: t,
                vm,
                index: i as u32,
                state: ThreadState::Ready,
                vcpu: v,
                code: code.get(ops),
                pc: 0,
                loops: Vec::new(),
                steps: crate::guest::thread::StepQueue::new(),
                step_remaining: None,
                spin_budget_left: None,
                pv_spin_left: None,
                pv_state: crate::guest::thread::PvState::Running,
                held: Vec::new(),
                futex_queued: None,
                wait_started: None,
                queued_on: None,
                rng: stream(seed, &format!("vm/{}/thread/{i}", spec.name)),
                cpus,
            });
            guest_vcpus[slot].runqueue.push_back(t);
            thread_ids.push(t);
        }
        let ws = program.work_stealing.clone().map(|spec| Box::new(crate::guest::worksteal::WorkStealing::new(spec, &thread_ids)));
        // A network device (seed 002 section 3.2): the host's end in `devices`, the guest's stack.
        let net = program.nic.clone().map(|nic| {
            let d = self.mechanisms.net_devices.len() as u32;
            let v = vcpu_ids[(nic.irq_vcpu as usize).min(vcpu_ids.len() - 1)];
            self.mechanisms.net_devices.push(super::mechanisms::net_device::NetDevice::new(nic.clone(), v));
            Box::new(crate::guest::netrx::NetStack::new(d, nic))
        });
        self.guests.add_kernel(GuestKernel {
            vm,
            name: spec.name.clone(),
            config: spec.guest.clone(),
            run_masks: crate::guest::scheduler::RunMasks::of(&guest_vcpus),
            vcpus: guest_vcpus,
            live_threads: thread_ids.len(),
            threads: thread_ids,
            objects,
            shootdowns: Vec::new(),
            free_shootdowns: Vec::new(),
            blocked_threads: 0,
            wake_cursor: 0,
            stats: GuestStats::default(),
            iterations: spec.iterations,
            finished_at: None,
            pokes: VecDeque::new(),
            stores: VecDeque::new(),
            // A store restarts a spinner's PAUSE loop only where the reload's miss outlasts
            // PLE_Gap: from its own socket, or from another one on a host that has several.
            watch_stores: !(spec.bare_metal || spec.native)
                && (self.ple.store_restarts_loop(true) || (self.topology.sockets > 1 && self.ple.store_restarts_loop(false))),
            zero_time_steps: 0,
            pinned: program.thread_cpus.iter().any(|c| c.is_some()),
            polls: VecDeque::new(),
            balance: topology
                .as_ref()
                .map(|t| Box::new(crate::guest::bare_metal_balance::Balancer::new(t, spec.guest.tick, program.threads.len()))),
            topology,
            ws,
            handoffs: self.trace.is_some().then(Box::default),
            irs: None,
            net,
            scratch: Default::default(),
        });
        // Every vCPU starts Runnable.
        let runnable = IndexMask::full(vcpu_ids.len());
        self.vminfo.push(VmInfo { id: vm, name: spec.name.clone(), vcpus: vcpu_ids, node_affinity, memory_nodes, runnable });
        if spec.bare_metal || spec.native {
            self.vm_speed.push(Speed::ONE);
            // A host process's threads still pay the host's task switch (`context_switch`: the
            // share of it that is the VMCS load has no sourced split); a bare-metal CPU never
            // switches.
            let switch = if spec.native { self.costs.context_switch } else { 0 };
            self.vm_costs.push(crate::hardware::costs::Costs { context_switch: switch, ..self.costs.native() });
        } else {
            self.vm_speed.push(Speed::slowed_by(self.costs.virt_overhead));
            self.vm_costs.push(self.costs.clone());
        }
        self.vms.push(Vm {
            sched: VmSched { weight: spec.weight, cap: spec.cap, params: spec.sched_params.clone() },
            sched_changes: spec.sched_pe.iter().map(|c| c.params.clone()).collect(),
            progress_unit: program.progress_unit,
            workload: spec.workload.clone(),
            clients: program.clients,
            stats: VmStats::default(),
            bare_metal: spec.bare_metal,
            native: spec.native,
            spin_pauses: spec.guest.spinlock != crate::workload::program::SpinlockKind::Debug,
        });
    }
}

/// Each VM's node affinity and memory nodes, the VMs created in file order as `xl create` would
/// create them one after the other: a VM with `numa_placement = "auto"` gets xl's automatic
/// placement (`hypervisor/xl_numa.rs`) from the free memory left by the VMs before it and their
/// vCPUs (each VM's `cpus` applied right after its creation); `{ nodes = [...] }` sets them; `"off"`
/// leaves the affinity automatic (`NodeAffinity::automatic`: the nodes of the vCPUs' affinity).
/// Memory then follows (`resolve_memory_nodes`): what the domain needs (`need_memory_kib`, memory
/// and shadow) leaves those nodes' free memory, spread evenly
/// (Xen's page allocator cycles over the domain's node affinity, `alloc_heap_pages`).
pub fn numa_placement(sc: &Scenario) -> Vec<(NodeAffinity, Vec<u32>)> {
    let topology = &sc.host.topology;
    let numa_nodes = topology.numa_nodes;
    let mut free_kib: Vec<u64> = sc.host.node_memory_mib.iter().map(|m| m * 1024).collect();
    let mut out: Vec<(NodeAffinity, Vec<u32>)> = Vec::with_capacity(sc.vms.len());
    for spec in &sc.vms {
        let pool = &sc.host.pools[spec.pool].pcpus;
        let need = xl_numa::need_memory_kib(spec.memory_mib * 1024, spec.vcpus);
        let node_affinity = match &spec.numa_placement {
            NumaPlacement::Off => NodeAffinity::automatic(topology, &spec.cpus, pool),
            NumaPlacement::Nodes(nodes) => NodeAffinity::set(topology, nodes, &spec.cpus, pool),
            NumaPlacement::Auto => {
                let existing: Vec<xl_numa::Existing> = sc
                    .vms
                    .iter()
                    .zip(&out)
                    .map(|(vm, (na, _))| xl_numa::Existing { vcpu_affinity: &vm.cpus, node_affinity: &na.nodes })
                    .collect();
                let on_node = xl_numa::vcpus_on_nodes(topology, pool, &existing);
                match xl_numa::place_domain(topology, need, spec.vcpus, pool, &free_kib, &on_node) {
                    Some(nodes) => NodeAffinity::set(topology, &nodes, &spec.cpus, pool),
                    // "Not even a suitable placement candidate!": affinity with all nodes.
                    None => NodeAffinity::automatic(topology, &spec.cpus, pool),
                }
            }
        };
        let memory_nodes = resolve_memory_nodes(spec, Some(&node_affinity.nodes), numa_nodes);
        let share = need / memory_nodes.len().max(1) as u64;
        for &n in &memory_nodes {
            free_kib[n as usize] = free_kib[n as usize].saturating_sub(share);
        }
        out.push((node_affinity, memory_nodes));
    }
    out
}

/// The NUMA nodes holding VM `spec`'s memory (`[[vm]] memory_nodes`), sorted: the nodes it names,
/// or for `"auto"` the domain's node affinity if it has one (Xen 4.4's `alloc_domheap_pages`
/// allocates from `d->node_affinity`, which xl's automatic placement sets), else every node of
/// the host (without node affinity, Xen 4.4 spreads a domain's pages over all nodes). The loader
/// has checked that named nodes are below `numa_nodes`.
pub fn resolve_memory_nodes(spec: &VmSpec, node_affinity: Option<&[u32]>, numa_nodes: u32) -> Vec<u32> {
    match (&spec.memory_nodes, node_affinity) {
        (MemoryNodes::Nodes(nodes), _) => nodes.clone(),
        (MemoryNodes::Auto, Some(nodes)) if !nodes.is_empty() => {
            let mut nodes = nodes.to_vec();
            nodes.sort_unstable();
            nodes.dedup();
            nodes
        }
        (MemoryNodes::Auto, _) => (0..numa_nodes).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vm(memory_nodes: &str) -> VmSpec {
        let text = format!(
            "[host]\npcpus = 8\nnuma_nodes = 4\n[[vm]]\nname = \"a\"\nvcpus = 1\nworkload = \"idle\"\nmemory_nodes = {memory_nodes}\n"
        );
        crate::api::load_scenario(&text, "<test>").expect("loads").vms.remove(0)
    }

    #[test]
    fn memory_nodes_resolve_to_the_named_nodes_the_node_affinity_or_every_node() {
        // Named nodes win over any node affinity, sorted.
        assert_eq!(resolve_memory_nodes(&vm("[3, 1]"), Some(&[0]), 4), [1, 3]);
        // "auto" follows the node affinity when there is one ...
        assert_eq!(resolve_memory_nodes(&vm("\"auto\""), Some(&[2, 0, 2]), 4), [0, 2]);
        // ... and is every node without one (Xen 4.4 stripes the domain).
        assert_eq!(resolve_memory_nodes(&vm("\"auto\""), None, 4), [0, 1, 2, 3]);
        assert_eq!(resolve_memory_nodes(&vm("\"auto\""), Some(&[]), 4), [0, 1, 2, 3]);
    }

    #[test]
    fn threads_of_equal_programs_share_one_compiled_copy() {
        // Three copies of a 4-thread barrier VM and two one-thread VMs of another workload: the
        // barrier's thread 0 (which counts the phases) of each copy reads one program, its
        // threads 1-3 another, the two CPU-bound threads a third, and a thread of a workload of
        // its own ops a fourth.
        let text = "[host]\npcpus = 8\n\
                    [[vm]]\nname = \"bar\"\ncount = 3\nvcpus = 4\nworkload = \"barrier\"\nthreads = 4\n\
                    [[vm]]\nname = \"seq\"\ncount = 2\nvcpus = 1\nworkload = \"cpu-bound\"\n\
                    [[vm]]\nname = \"other\"\nvcpus = 1\nworkload = \"program\"\n\
                    [vm.program]\nthreads = [[{loop = \"forever\", body = [{compute = \"2ms\"}, {progress = true}]}]]\n";
        let sc = crate::api::load_scenario(text, "<test>").expect("loads");
        let sim = Sim::build(&sc, 1, false, false).expect("builds");
        let code: Vec<_> = sim.guests.threads().iter().map(|t| t.code.clone()).collect();
        assert_eq!(code.len(), 15);
        let distinct = |range: std::ops::Range<usize>| {
            let mut firsts: Vec<&std::sync::Arc<[crate::guest::thread::Code]>> = Vec::new();
            for c in &code[range] {
                if !firsts.iter().any(|f| std::sync::Arc::ptr_eq(f, c)) {
                    firsts.push(c);
                }
            }
            firsts.len()
        };
        assert_eq!(distinct(0..12), 2, "the barrier threads share two programs");
        for t in [4, 8] {
            assert!(std::sync::Arc::ptr_eq(&code[0], &code[t]), "each copy's thread 0 reads the first copy's");
        }
        assert!((1..12).filter(|t| t % 4 != 0).all(|t| std::sync::Arc::ptr_eq(&code[1], &code[t])));
        assert_eq!(distinct(12..14), 1, "the CPU-bound threads share");
        assert_eq!(distinct(0..15), 4, "four programs, four copies");
        assert_ne!(code[0], code[14], "a different program is not shared");
    }
}
