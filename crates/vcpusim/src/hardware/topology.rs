//! The pCPU topology: sockets, NUMA nodes, cores and hardware threads.
//!
//! pCPUs are numbered socket-major, then core, then hardware thread, as Linux numbers them on most
//! Intel hosts with `threads_per_core = 1`. Issue 2's policies treat the host as flat; placement
//! policies in later issues (seed 001's CMT modules and NUMA node affinity) read this.

use crate::ids::PcpuId;

/// Where one pCPU sits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PcpuPlace {
    pub socket: u32,
    pub node: u32,
    /// Core number across the whole host.
    pub core: u32,
    /// Hardware thread within the core.
    pub thread: u32,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Topology {
    pub sockets: u32,
    pub numa_nodes: u32,
    pub threads_per_core: u32,
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
        if pcpus % (sockets * threads_per_core) != 0 {
            return Err(format!(
                "pcpus = {pcpus} cannot be split into {sockets} socket(s) of whole cores with {threads_per_core} thread(s) each"
            ));
        }
        if numa_nodes % sockets != 0 && sockets % numa_nodes != 0 {
            return Err(format!("numa_nodes = {numa_nodes} must divide or be a multiple of sockets = {sockets}"));
        }
        let cores = pcpus / threads_per_core;
        if cores % numa_nodes != 0 {
            return Err(format!("the {cores} cores cannot be split evenly over numa_nodes = {numa_nodes}"));
        }
        let cores_per_socket = cores / sockets;
        let cores_per_node = cores / numa_nodes;
        let places = (0..pcpus)
            .map(|p| {
                let core = p / threads_per_core;
                PcpuPlace { socket: core / cores_per_socket, node: core / cores_per_node, core, thread: p % threads_per_core }
            })
            .collect();
        Ok(Topology { sockets, numa_nodes, threads_per_core, places })
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
        assert_eq!(t.place(PcpuId(0)), PcpuPlace { socket: 0, node: 0, core: 0, thread: 0 });
        assert_eq!(t.place(PcpuId(1)), PcpuPlace { socket: 0, node: 0, core: 0, thread: 1 });
        assert_eq!(t.place(PcpuId(4)).socket, 1);
        assert_eq!(t.core_siblings(PcpuId(5)).collect::<Vec<_>>(), vec![PcpuId(4), PcpuId(5)]);
        assert!(!t.same_node(PcpuId(0), PcpuId(7)));
    }

    #[test]
    fn rejects_uneven_splits() {
        assert!(Topology::new(6, 4, 1, 1).unwrap_err().contains("socket"));
        assert!(Topology::new(0, 1, 1, 1).is_err());
    }
}
