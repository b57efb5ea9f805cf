//! Credit2's run queues: which pCPUs share one (`runqueue=`), the queue of runnable units sorted
//! by credit, and the decaying load averages balancing and placement compare. Functions are named
//! after xen/common/sched/credit2.c (RELEASE-4.18.0), line numbers `L...` of that file.
//!
//! ```text
//!   pCPUs 0-7 on socket 0, 8-15 on socket 1, runqueue = "socket":
//!   rq 0: cpus 0-7   runq [v3 c=9.1ms, v7 c=4.0ms, ...]  load 5  b_avgload 4.6 (Q18)
//!   rq 1: cpus 8-15  runq [...]
//! ```

use crate::policy::{HostView, PcpuId, VcpuId};

/// `LOADAVG_GRANULARITY_SHIFT` (L382): load times are `now >> 10` (units of 1,024 ns).
pub const LOADAVG_GRANULARITY_SHIFT: u32 = 10;

/// How pCPUs are grouped into run queues (`credit2_runqueue`, L445-474; default `socket`, L457).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Grouping {
    Cpu,
    Core,
    Socket,
    Node,
    All,
}

impl Grouping {
    pub const NAMES: &'static [&'static str] = &["cpu", "core", "socket", "node", "all"];

    pub fn from_name(name: &str) -> Self {
        match name {
            "cpu" => Grouping::Cpu,
            "core" => Grouping::Core,
            "node" => Grouping::Node,
            "all" => Grouping::All,
            _ => Grouping::Socket,
        }
    }
}

/// `struct csched2_runqueue_data` (L495-519).
#[derive(Clone, Debug)]
pub struct Runqueue {
    /// Its pCPUs (`active`), ascending.
    pub cpus: Vec<PcpuId>,
    /// Runnable units not running, by credit, highest first, FIFO among equals (`runq`).
    pub runq: Vec<VcpuId>,
    /// Every unit assigned here, in any state, in assignment order (`svc`).
    pub svc: Vec<VcpuId>,
    /// Runnable units, queued or running (`load`).
    pub load: i64,
    /// In `now >> 10` units (`load_last_update`).
    pub load_last_update: i64,
    /// Decaying averages of `load`, fixed point with `precision` fractional bits: `avgload`, and
    /// `b_avgload`, which assignments adjust and every decision reads.
    pub avgload: i64,
    pub b_avgload: i64,
    /// The largest weight of the units assigned here (`max_weight`, starts at 1).
    pub max_weight: u32,
    /// Where the next round-robin pick starts (`pick_bias`).
    pub pick_bias: PcpuId,
}

impl Runqueue {
    fn new(first: PcpuId) -> Self {
        Runqueue {
            cpus: vec![first],
            runq: Vec::new(),
            svc: Vec::new(),
            load: 0,
            load_last_update: 0,
            avgload: 0,
            b_avgload: 0,
            max_weight: 1,
            pick_bias: first,
        }
    }

    /// `cpumask_cycle(n, mask)` over this queue's pCPUs that pass `ok`: the first after `n`,
    /// wrapping (cpumask.h L235-250).
    pub fn cycle(&self, n: PcpuId, ok: impl Fn(PcpuId) -> bool) -> Option<PcpuId> {
        self.cpus.iter().copied().filter(|&p| p > n && ok(p)).min().or_else(|| self.cpus.iter().copied().find(|&p| ok(p)))
    }

    /// `cpumask_test_or_cycle(n, mask)`: `n` itself if it passes, else `cycle`.
    pub fn test_or_cycle(&self, n: PcpuId, ok: impl Fn(PcpuId) -> bool) -> Option<PcpuId> {
        if self.cpus.contains(&n) && ok(n) {
            return Some(n);
        }
        self.cycle(n, ok)
    }
}

/// The run queue of each of `cpus` (ascending), built as `cpu_add_to_runqueue` (L926-1051) adds
/// them one by one: a pCPU joins a queue that matches it by `grouping`, the one holding an SMT
/// sibling of it first, else the least-full one with room for it and its siblings below
/// `max_cpus_runq = online / (((online - 1) / max_cpus_per_queue) + 1)` (L947-948), else it
/// starts a new queue. Returns the queues and each pCPU's queue index (by pCPU id).
pub fn build(host: &HostView, cpus: &[PcpuId], grouping: Grouping, max_cpus_per_queue: usize) -> (Vec<Runqueue>, Vec<Option<usize>>) {
    let online = cpus.len().max(1);
    let min_rqs = (online - 1) / max_cpus_per_queue.max(1) + 1;
    let max_cpus_runq = online / min_rqs;
    let topology = host.topology;
    let mut queues: Vec<Runqueue> = Vec::new();
    let mut rq_of: Vec<Option<usize>> = vec![None; host.pcpus.len()];
    for &cpu in cpus {
        let place = topology.place(cpu);
        // `cpu_runqueue_match` (L860-871), against the queue's first pCPU (`pick_bias` at birth).
        let matches = |rq: &Runqueue| {
            let other = topology.place(rq.cpus[0]);
            match grouping {
                Grouping::All => true,
                Grouping::Core => other.socket == place.socket && other.core == place.core,
                Grouping::Socket => other.socket == place.socket,
                Grouping::Node => other.node == place.node,
                Grouping::Cpu => false,
            }
        };
        let siblings: Vec<PcpuId> = topology.siblings(cpu).collect();
        let mut chosen: Option<usize> = None;
        for (i, rq) in queues.iter().enumerate() {
            if !matches(rq) {
                continue;
            }
            if rq.cpus.iter().any(|p| siblings.contains(p)) {
                chosen = Some(i);
                break;
            }
            // Room for `cpu` and every sibling of it not yet added (`cpu_runqueue_siblings_match`).
            let room = rq.cpus.len() + siblings.iter().filter(|s| !rq.cpus.contains(s)).count() <= max_cpus_runq;
            if rq.cpus.len() < max_cpus_runq
                && (room || grouping == Grouping::All)
                && chosen.is_none_or(|c| rq.cpus.len() < queues[c].cpus.len())
            {
                chosen = Some(i);
            }
        }
        match chosen {
            Some(i) => {
                queues[i].cpus.push(cpu);
                queues[i].cpus.sort();
                rq_of[cpu.idx()] = Some(i);
            }
            None => {
                rq_of[cpu.idx()] = Some(queues.len());
                queues.push(Runqueue::new(cpu));
            }
        }
    }
    (queues, rq_of)
}

/// The decaying average of `update_runq_load` / `update_svc_load` (L1272-1420): over the `delta`
/// (in `now >> 10` units) since the last update, `avg += delta * (load << P) >> W - delta * avg >> W`,
/// or `load << P` outright when more than a window (`1 << W`) has passed.
pub fn decay(avg: i64, load: i64, last: i64, now: i64, precision: u32, window: u32) -> i64 {
    if last + (1i64 << window) < now {
        return load << precision;
    }
    let delta = (now - last).max(0) as i128;
    let add = (delta * ((load as i128) << precision)) >> window;
    let sub = (delta * avg as i128) >> window;
    (avg as i128 + add - sub) as i64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hardware::topology::Topology;

    fn queues_of(topology: &Topology, grouping: Grouping, max: usize) -> Vec<Vec<u32>> {
        let host = HostView::new(0, &[], &[], &[], topology);
        let n = topology.npcpus() as u32;
        let pcpus: Vec<crate::policy::PcpuInfo> = (0..n).map(|p| crate::policy::PcpuInfo { id: PcpuId(p), current: None }).collect();
        let host = HostView { pcpus: &pcpus, ..host };
        let cpus: Vec<PcpuId> = (0..n).map(PcpuId).collect();
        build(&host, &cpus, grouping, max).0.iter().map(|rq| rq.cpus.iter().map(|p| p.0).collect()).collect()
    }

    #[test]
    fn runqueues_follow_the_grouping_and_split_sockets_above_sixteen_pcpus() {
        let two_sockets = Topology::new(8, 2, 2, 1).expect("valid");
        assert_eq!(queues_of(&two_sockets, Grouping::Socket, 16), vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]]);
        assert_eq!(queues_of(&two_sockets, Grouping::All, 16), vec![(0..8).collect::<Vec<u32>>()]);
        assert_eq!(queues_of(&two_sockets, Grouping::Cpu, 16).len(), 8);
        // One socket of 32 pCPUs: min_rqs = 31/16 + 1 = 2, max_cpus_runq = 16: the first queue
        // takes pCPUs until it is full, then pCPU 16 starts the second.
        let big = Topology::new(32, 1, 1, 1).expect("valid");
        assert_eq!(queues_of(&big, Grouping::Socket, 16), vec![(0..16).collect::<Vec<u32>>(), (16..32).collect()]);
        // SMT siblings always share a queue.
        let smt = Topology::new(8, 1, 1, 2).expect("valid");
        for rq in queues_of(&smt, Grouping::Core, 16) {
            assert_eq!(rq.len(), 2, "{rq:?}");
        }
    }

    #[test]
    fn the_load_average_moves_toward_the_load_by_delta_over_the_window() {
        let p = 18;
        let w = 20;
        let one = 1i64 << p;
        // Half a window at load 2 from 0: +1.0.
        assert_eq!(decay(0, 2, 0, 1 << (w - 1), p, w), one);
        // Past a whole window: the load itself.
        assert_eq!(decay(5 * one, 1, 0, (1 << w) + 1, p, w), one);
        // No time: unchanged.
        assert_eq!(decay(3 * one, 0, 100, 100, p, w), 3 * one);
    }
}
