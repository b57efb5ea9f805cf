//! Seed 001's contention model as a `SpeedModel` (sim/speed_change.rs): it reads who runs where from
//! the host view and hands the arithmetic to `hardware/contention.rs`.
//!
//! The speed of vCPU `v` on pCPU `p` is the product of the factors of the sources
//! `[host.contention]` turns on, computed from `v`'s VM's sensitivities (its workload's row in
//! workload/sensitivity.rs, `[vm.contention]` applied) and `p`'s neighbourhood:
//! - *module*: how many other cores of `p`'s sibling group (`Topology::siblings`: the CMT
//!   module, or the core's SMT threads) are busy, i.e. running a vCPU (an idle pCPU, or one
//!   whose vCPU halted, shares nothing);
//! - *LLC*: how many other pCPUs sharing `p`'s last-level cache (`Topology::llc_peers`) are busy;
//! - *NUMA*: how many of the VM's memory nodes (`VmInfo::memory_nodes`) are not `p`'s node.
//!
//! `coupled(p)` is `p`'s module peers and LLC peers, precomputed, so a switch on `p` re-evaluates
//! exactly the pCPUs whose speed it can move, with no work proportional to the host.

use super::super::speed_change::SpeedModel;
use crate::hardware::contention::{factors, Factors, Neighbourhood, Sensitivity, Switches};
use crate::hardware::speed::Speed;
use crate::hardware::topology::Topology;
use crate::hypervisor::policy::HostView;
use crate::ids::{PcpuId, VcpuId};

pub struct ContentionModel {
    on: Switches,
    /// Each VM's sensitivities, by VM id.
    sensitivity: Vec<Sensitivity>,
    /// Each pCPU's other sibling-group members.
    module_peers: Vec<Vec<PcpuId>>,
    /// Each pCPU's other LLC sharers.
    llc_peers: Vec<Vec<PcpuId>>,
    /// Each pCPU's coupled pCPUs: the union of the two lists above (module peers first).
    coupled: Vec<Vec<PcpuId>>,
    /// Each pCPU's NUMA node.
    node: Vec<u32>,
}

impl ContentionModel {
    pub fn new(on: Switches, sensitivity: Vec<Sensitivity>, topology: &Topology) -> Self {
        let n = topology.npcpus() as u32;
        let others = |p: PcpuId, list: &mut dyn Iterator<Item = PcpuId>| list.filter(|&q| q != p).collect::<Vec<_>>();
        let module_peers: Vec<Vec<PcpuId>> = (0..n).map(PcpuId).map(|p| others(p, &mut topology.siblings(p))).collect();
        let llc_peers: Vec<Vec<PcpuId>> = (0..n).map(PcpuId).map(|p| others(p, &mut topology.llc_peers(p))).collect();
        let coupled = (0..n as usize)
            .map(|p| {
                let mut c = module_peers[p].clone();
                c.extend(llc_peers[p].iter().filter(|q| !module_peers[p].contains(q)));
                c
            })
            .collect();
        let node = (0..n).map(|p| topology.place(PcpuId(p)).node).collect();
        ContentionModel { on, sensitivity, module_peers, llc_peers, coupled, node }
    }

    /// Where `v` runs on `p`, as the arithmetic needs it.
    pub fn neighbourhood(&self, host: &HostView, v: VcpuId, p: PcpuId) -> Neighbourhood {
        let busy = |list: &[PcpuId]| list.iter().filter(|q| host.pcpu(**q).current.is_some()).count() as u32;
        let memory = &host.vm_of(v).memory_nodes;
        let local = memory.contains(&self.node[p.idx()]) as u32;
        Neighbourhood {
            module_busy: busy(&self.module_peers[p.idx()]),
            module_others: self.module_peers[p.idx()].len() as u32,
            llc_busy: busy(&self.llc_peers[p.idx()]),
            llc_others: self.llc_peers[p.idx()].len() as u32,
            remote_nodes: memory.len() as u32 - local,
            memory_nodes: memory.len() as u32,
        }
    }
}

impl SpeedModel for ContentionModel {
    fn name(&self) -> &'static str {
        "contention"
    }

    fn speed(&self, host: &HostView, v: VcpuId, p: PcpuId) -> Speed {
        self.speed_parts(host, v, p).0
    }

    fn speed_parts(&self, host: &HostView, v: VcpuId, p: PcpuId) -> (Speed, Factors) {
        let vm = host.vcpu(v).vm;
        let f = factors(&self.on, &self.sensitivity[vm.idx()], &self.neighbourhood(host, v, p));
        (f.speed(), f)
    }

    fn is_constant(&self) -> bool {
        !self.on.any()
    }

    fn coupled(&self, _topology: &Topology, p: PcpuId) -> &[PcpuId] {
        &self.coupled[p.idx()]
    }
}
