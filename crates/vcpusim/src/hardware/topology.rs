//! The pCPU topology: sockets, NUMA nodes, CMT modules, cores, hardware threads, and which pCPUs
//! share a last-level cache.
//!
//! ```text
//!   socket 0                                   socket 1
//!   ├─ node 0 (LLC if llc = "node")            ├─ node 2
//!   │  ├─ module 0: core 0 [pCPU 0], core 1 [pCPU 1]     (cores_per_module = 2)
//!   │  └─ module 1: core 2 [pCPU 2], core 3 [pCPU 3]
//!   └─ node 1                                  └─ node 3
//! ```
//!
//! pCPUs are numbered socket-major, then core, then hardware thread, as Linux and Xen number them
//! on most Intel hosts and on seed 001's Opteron 6376 (section III-E: "Xen assigned the number
//! 0-15 to pCPUs in processor 1"; section III-G: nodes 0-3 hold pCPUs 0-7, 8-15, 16-23, 24-31).
//!
//! **Siblings.** What the OS and Xen call a pCPU's siblings (`cpu_sibling_mask`) is the group
//! `sibling_group` names: the hardware threads of one core, or, on AMD CMT parts, the cores of one
//! module. Xen's `set_cpu_sibling_map` (xen/arch/x86/smpboot.c, 4.4) links two CPUs as thread
//! siblings when `cpu_has(c, X86_FEATURE_TOPOEXT)` and their `compute_unit_id` match, and Linux's
//! `set_cpu_sibling_map` does the same, so Credit's `_csched_cpu_pick` and the CFS SMT domain
//! see a module as one core with two threads. A host is either SMT or CMT here (a module of
//! multi-threaded cores has no real counterpart; the loader accepts only one of the two).

use crate::hardware::cpumask::CpuMask;
use crate::ids::PcpuId;

/// Which pCPUs share a last-level cache (`[host] llc`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum LlcScope {
    /// One LLC per socket (most Intel parts; the default).
    #[default]
    Socket,
    /// One LLC per NUMA node (seed 001's Opteron 6376: "LLC is shared in each node", section V-B).
    Node,
    /// One per CMT module (its shared L2 as the last level).
    Module,
}

impl LlcScope {
    pub const NAMES: &'static str = "\"node\", \"socket\" or \"module\"";

    pub fn parse(name: &str) -> Option<LlcScope> {
        match name {
            "socket" => Some(LlcScope::Socket),
            "node" => Some(LlcScope::Node),
            "module" => Some(LlcScope::Module),
            _ => None,
        }
    }
}

/// Where one pCPU sits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PcpuPlace {
    pub socket: u32,
    pub node: u32,
    /// Core number across the whole host.
    pub core: u32,
    /// Hardware thread within the core.
    pub thread: u32,
    /// The sibling group across the whole host: the core (`cores_per_module = 1`) or the CMT
    /// module holding it (see the module doc, "Siblings").
    pub module: u32,
    /// The last-level cache across the whole host (per `LlcScope`).
    pub llc: u32,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Topology {
    pub sockets: u32,
    pub numa_nodes: u32,
    pub threads_per_core: u32,
    pub cores_per_module: u32,
    pub llc: LlcScope,
    places: Vec<PcpuPlace>,
}

impl Topology {
    /// `pcpus` hardware threads split evenly over sockets, nodes and cores.
    /// Errors say which count does not divide which.
    pub fn new(pcpus: u32, sockets: u32, numa_nodes: u32, threads_per_core: u32) -> Result<Self, String> {
        if pcpus == 0 {
            return Err("pcpus must be at least 1".into());
        }
        for (name, v) in [("sockets", sockets), ("numa_nodes", numa_nodes), ("threads_per_core", threads_per_core)] {
            if v == 0 {
                return Err(format!("{name} must be at least 1"));
            }
        }
        if !pcpus.is_multiple_of(sockets * threads_per_core) {
            return Err(format!(
                "pcpus = {pcpus} cannot be split into {sockets} socket(s) of whole cores with {threads_per_core} thread(s) each"
            ));
        }
        if !numa_nodes.is_multiple_of(sockets) && !sockets.is_multiple_of(numa_nodes) {
            return Err(format!("numa_nodes = {numa_nodes} must divide or be a multiple of sockets = {sockets}"));
        }
        let cores = pcpus / threads_per_core;
        if !cores.is_multiple_of(numa_nodes) {
            return Err(format!("the {cores} cores cannot be split evenly over numa_nodes = {numa_nodes}"));
        }
        let cores_per_socket = cores / sockets;
        let cores_per_node = cores / numa_nodes;
        let places = (0..pcpus)
            .map(|p| {
                let core = p / threads_per_core;
                let socket = core / cores_per_socket;
                PcpuPlace { socket, node: core / cores_per_node, core, thread: p % threads_per_core, module: core, llc: socket }
            })
            .collect();
        Ok(Topology { sockets, numa_nodes, threads_per_core, cores_per_module: 1, llc: LlcScope::Socket, places })
    }

    /// The same host with CMT modules of `cores_per_module` cores and last-level caches shared
    /// per `llc`. A module never straddles a node or a socket, and a host is SMT or CMT, not both.
    pub fn with_modules(mut self, cores_per_module: u32, llc: LlcScope) -> Result<Self, String> {
        if cores_per_module == 0 {
            return Err("cores_per_module must be at least 1".into());
        }
        if cores_per_module > 1 && self.threads_per_core > 1 {
            return Err(format!(
                "cores_per_module = {cores_per_module} with threads_per_core = {}: a host has SMT threads or CMT modules, not both",
                self.threads_per_core
            ));
        }
        let cores = self.places.len() as u32 / self.threads_per_core;
        // Nodes and sockets nest (one divides the other), so the smaller span bounds a module.
        let span = cores / self.sockets.max(self.numa_nodes);
        if !span.is_multiple_of(cores_per_module) {
            return Err(format!(
                "cores_per_module = {cores_per_module} does not divide the {span} cores of each {}",
                if self.numa_nodes >= self.sockets { "NUMA node" } else { "socket" }
            ));
        }
        self.cores_per_module = cores_per_module;
        self.llc = llc;
        for pl in &mut self.places {
            pl.module = pl.core / cores_per_module;
            pl.llc = match llc {
                LlcScope::Socket => pl.socket,
                LlcScope::Node => pl.node,
                LlcScope::Module => pl.module,
            };
        }
        Ok(self)
    }

    /// One socket, one node, one thread per core.
    pub fn flat(pcpus: u32) -> Self {
        Topology::new(pcpus, 1, 1, 1).expect("a flat topology of at least one pCPU is valid")
    }

    pub fn npcpus(&self) -> usize {
        self.places.len()
    }

    pub fn place(&self, p: PcpuId) -> PcpuPlace {
        self.places[p.idx()]
    }

    /// Hardware threads sharing a core with `p` (including `p`).
    pub fn core_siblings(&self, p: PcpuId) -> impl Iterator<Item = PcpuId> + '_ {
        let core = self.place(p).core;
        self.places.iter().enumerate().filter(move |(_, pl)| pl.core == core).map(|(i, _)| PcpuId(i as u32))
    }

    /// `p`'s siblings as the OS and Xen see them (`cpu_sibling_mask`, including `p`): the
    /// threads of its core, or the cores of its CMT module.
    pub fn siblings(&self, p: PcpuId) -> impl Iterator<Item = PcpuId> + '_ {
        let module = self.place(p).module;
        self.places.iter().enumerate().filter(move |(_, pl)| pl.module == module).map(|(i, _)| PcpuId(i as u32))
    }

    /// pCPUs sharing `p`'s last-level cache (including `p`).
    pub fn llc_peers(&self, p: PcpuId) -> impl Iterator<Item = PcpuId> + '_ {
        let llc = self.place(p).llc;
        self.places.iter().enumerate().filter(move |(_, pl)| pl.llc == llc).map(|(i, _)| PcpuId(i as u32))
    }

    /// The pCPUs of NUMA node `node` (empty if there is no such node).
    pub fn node_mask(&self, node: u32) -> CpuMask {
        CpuMask::from_pcpus(self.places.iter().enumerate().filter(|(_, pl)| pl.node == node).map(|(i, _)| PcpuId(i as u32)))
    }

    /// Number of sibling groups (modules, or cores without CMT).
    pub fn nmodules(&self) -> u32 {
        self.places.last().map_or(0, |pl| pl.module + 1)
    }

    pub fn same_node(&self, a: PcpuId, b: PcpuId) -> bool {
        self.place(a).node == self.place(b).node
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_socket_major() {
        let t = Topology::new(8, 2, 2, 2).unwrap();
        assert_eq!(t.place(PcpuId(0)), PcpuPlace { socket: 0, node: 0, core: 0, thread: 0, module: 0, llc: 0 });
        assert_eq!(t.place(PcpuId(1)), PcpuPlace { socket: 0, node: 0, core: 0, thread: 1, module: 0, llc: 0 });
        assert_eq!(t.siblings(PcpuId(5)).collect::<Vec<_>>(), vec![PcpuId(4), PcpuId(5)]);
        assert_eq!(t.place(PcpuId(4)).socket, 1);
        assert_eq!(t.core_siblings(PcpuId(5)).collect::<Vec<_>>(), vec![PcpuId(4), PcpuId(5)]);
        assert!(!t.same_node(PcpuId(0), PcpuId(7)));
    }

    /// Seed 001's host: two Opteron 6376 sockets of 16 cores, 4 nodes of 8, modules of 2 cores,
    /// one LLC per node (sections III-A, III-G, V-B).
    #[test]
    fn opteron_6376_host() {
        let t = Topology::new(32, 2, 4, 1).unwrap().with_modules(2, LlcScope::Node).unwrap();
        assert_eq!(t.nmodules(), 16);
        assert_eq!(t.siblings(PcpuId(17)).collect::<Vec<_>>(), vec![PcpuId(16), PcpuId(17)]);
        assert_eq!(t.place(PcpuId(23)).node, 2);
        assert_eq!(t.place(PcpuId(24)).node, 3);
        assert_eq!(t.place(PcpuId(16)).socket, 1);
        assert_eq!(t.llc_peers(PcpuId(9)).collect::<Vec<_>>(), (8..16).map(PcpuId).collect::<Vec<_>>());
        assert_eq!(t.node_mask(2).to_cpulist(), "16-23");
        let by_socket = Topology::new(32, 2, 4, 1).unwrap().with_modules(2, LlcScope::Socket).unwrap();
        assert_eq!(by_socket.llc_peers(PcpuId(0)).count(), 16);
        let by_module = Topology::new(32, 2, 4, 1).unwrap().with_modules(2, LlcScope::Module).unwrap();
        assert_eq!(by_module.llc_peers(PcpuId(3)).collect::<Vec<_>>(), vec![PcpuId(2), PcpuId(3)]);
    }

    #[test]
    fn rejects_bad_modules() {
        let t = || Topology::new(32, 2, 4, 1).unwrap();
        assert!(t().with_modules(3, LlcScope::Node).unwrap_err().contains("does not divide the 8 cores of each NUMA node"));
        assert!(t().with_modules(0, LlcScope::Node).is_err());
        let smt = Topology::new(8, 1, 1, 2).unwrap();
        assert!(smt.with_modules(2, LlcScope::Socket).unwrap_err().contains("not both"));
        // Without CMT a module is a core: siblings are the core's threads.
        let flat = Topology::new(8, 1, 1, 2).unwrap().with_modules(1, LlcScope::Socket).unwrap();
        assert_eq!(flat.nmodules(), 4);
    }

    #[test]
    fn rejects_uneven_splits() {
        assert!(Topology::new(6, 4, 1, 1).unwrap_err().contains("socket"));
        assert!(Topology::new(0, 1, 1, 1).is_err());
    }
}
