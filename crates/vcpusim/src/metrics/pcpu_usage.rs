//! Per-pCPU usage: how long each VM ran on each pCPU (metrics.csv `pcpu_busy_ms[<p>]`, seed
//! 001's Figures 5, 7, 8 and 9 as xenmon shows them) and seed 001's *competing modules*
//! (vms.csv `competing_modules`, Figures 6, 11 and 13).
//!
//! Competing modules, as seed 001 section III-F measures it: "we measured the pCPU utilization
//! every second and calculated the average number of modules in which the two cores were used
//! simultaneously. We multiplied the utilization of two pCPUs belonging to the same module and
//! considered it the ratio of module contention." So per window of [`WINDOW`]: each pCPU's
//! utilization u (busy time / window), per module the product of its two cores' u, summed over
//! modules, then averaged over the windows (time-weighted, so a last partial window counts for
//! its length). A sibling group of more than two pCPUs counts each pair (the expected number of
//! busy pairs); a group of one counts nothing.
//!
//! Per VM, only that VM's vCPUs' busy time counts (xenmon reports per domain, and in the seed's
//! runs the measured VM is alone on its pCPUs, so the two readings agree), over the windows until
//! the VM reached its iteration target (the seed measures while the program runs); the host-wide
//! value (summary.json) counts every VM, over the whole run.

use crate::hardware::topology::Topology;
use crate::ids::PcpuId;
use crate::time::{Nanos, SEC};

/// The measuring window: "we measured the pCPU utilization every second" (seed 001 III-F).
pub const WINDOW: Nanos = SEC;

/// A time-weighted average of competing modules over windows.
#[derive(Clone, Copy, Debug, Default)]
pub struct CompetingAverage {
    /// Σ competing modules × window length (module·ns).
    weighted: f64,
    /// Σ window lengths.
    time: Nanos,
}

impl CompetingAverage {
    fn add(&mut self, competing: f64, len: Nanos) {
        self.weighted += competing * len as f64;
        self.time += len;
    }

    /// The average number of competing modules (0 before any window closed).
    pub fn average(&self) -> f64 {
        if self.time == 0 {
            0.0
        } else {
            self.weighted / self.time as f64
        }
    }
}

pub struct PcpuUsage {
    npcpus: usize,
    /// The pCPUs of each sibling group (module, or core's threads) with at least two.
    groups: Vec<Vec<usize>>,
    /// Busy time of finished runs, by `vm * npcpus + pcpu`.
    busy: Vec<Nanos>,
    /// Busy time (finished runs and the running part) at the start of the open window.
    at_window_start: Vec<Nanos>,
    window_start: Nanos,
    /// Per VM.
    pub competing: Vec<CompetingAverage>,
    pub host_competing: CompetingAverage,
}

impl PcpuUsage {
    pub fn new(topology: &Topology, nvms: usize) -> Self {
        let npcpus = topology.npcpus();
        let mut groups: Vec<Vec<usize>> = vec![Vec::new(); topology.nmodules() as usize];
        for p in 0..npcpus {
            groups[topology.place(PcpuId(p as u32)).module as usize].push(p);
        }
        groups.retain(|g| g.len() >= 2);
        PcpuUsage {
            npcpus,
            groups,
            busy: vec![0; nvms * npcpus],
            at_window_start: vec![0; nvms * npcpus],
            window_start: 0,
            competing: vec![CompetingAverage::default(); nvms],
            host_competing: CompetingAverage::default(),
        }
    }

    /// A run of VM `vm` on `p` of `ns` ended.
    #[inline]
    pub fn add_busy(&mut self, vm: usize, p: PcpuId, ns: Nanos) {
        self.busy[vm * self.npcpus + p.idx()] += ns;
    }

    /// Busy time of VM `vm` on `p` in finished runs (all of it after `Sim::finish`).
    pub fn busy(&self, vm: usize, p: PcpuId) -> Nanos {
        self.busy[vm * self.npcpus + p.idx()]
    }

    pub fn window_start(&self) -> Nanos {
        self.window_start
    }

    /// When the open window ends.
    #[inline]
    pub fn next_window_end(&self) -> Nanos {
        self.window_start + WINDOW
    }

    /// Close the open window at `end`: `running(vm, p)` is the busy time of a run in progress up
    /// to `end`; `vm_until[vm]` is when VM `vm` stopped being measured (its target reached), if
    /// it did.
    pub fn close_window(&mut self, end: Nanos, running: &[(usize, PcpuId, Nanos)], vm_until: &[Option<Nanos>]) {
        let start = self.window_start;
        if end <= start {
            return;
        }
        let mut now = self.busy.clone();
        for &(vm, p, ns) in running {
            now[vm * self.npcpus + p.idx()] += ns;
        }
        let mut host = vec![0.0; self.npcpus];
        for (vm, stopped) in vm_until.iter().enumerate().take(self.competing.len()) {
            let row = vm * self.npcpus;
            let in_window = |p: usize| now[row + p] - self.at_window_start[row + p];
            for (p, h) in host.iter_mut().enumerate() {
                *h += in_window(p) as f64;
            }
            let until = stopped.map_or(end, |t| t.min(end));
            if until <= start {
                continue;
            }
            let len = (until - start) as f64;
            let util = |p: usize| (in_window(p) as f64 / len).min(1.0);
            let c = self.competing_of(util);
            self.competing[vm].add(c, until - start);
        }
        let len = (end - start) as f64;
        let c = self.competing_of(|p| (host[p] / len).min(1.0));
        self.host_competing.add(c, end - start);
        self.at_window_start = now;
        self.window_start = end;
    }

    /// Σ over sibling groups of Σ over pairs of the product of their utilizations.
    fn competing_of(&self, util: impl Fn(usize) -> f64) -> f64 {
        let mut sum = 0.0;
        for g in &self.groups {
            for (i, &a) in g.iter().enumerate() {
                for &b in &g[i + 1..] {
                    sum += util(a) * util(b);
                }
            }
        }
        sum
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hardware::topology::LlcScope;

    fn host() -> Topology {
        Topology::new(8, 1, 1, 1).unwrap().with_modules(2, LlcScope::Socket).unwrap()
    }

    #[test]
    fn the_seeds_example_half_and_half_is_a_quarter() {
        // "when 50% of one core and 50% of the other core are used, the ratio is 0.25"
        let mut u = PcpuUsage::new(&host(), 1);
        u.add_busy(0, PcpuId(0), WINDOW / 2);
        u.add_busy(0, PcpuId(1), WINDOW / 2);
        u.close_window(WINDOW, &[], &[None]);
        assert_eq!(u.competing[0].average(), 0.25);
        // Two cores of different modules compete with nobody.
        let mut u = PcpuUsage::new(&host(), 1);
        u.add_busy(0, PcpuId(1), WINDOW);
        u.add_busy(0, PcpuId(2), WINDOW);
        u.close_window(WINDOW, &[], &[None]);
        assert_eq!(u.competing[0].average(), 0.0);
    }

    #[test]
    fn windows_average_by_length_and_count_running_parts() {
        let mut u = PcpuUsage::new(&host(), 2);
        // Window 1: module 0 fully busy by VM 0 (one run still going at the end).
        u.add_busy(0, PcpuId(0), WINDOW);
        u.close_window(WINDOW, &[(0, PcpuId(1), WINDOW)], &[None, None]);
        // A half window: the running vCPU ends its run at 1.5 s; VM 1 uses pCPU 0.
        u.add_busy(0, PcpuId(1), WINDOW + WINDOW / 2);
        u.add_busy(1, PcpuId(0), WINDOW / 2);
        u.close_window(WINDOW + WINDOW / 2, &[], &[None, None]);
        // VM 0: 1 module for 1 s, then 0 (only pCPU 1 busy) for 0.5 s: 2/3.
        assert!((u.competing[0].average() - 2.0 / 3.0).abs() < 1e-12);
        // VM 1 alone never competes; the host sees both VMs: 1 module for 1.5 s.
        assert_eq!(u.competing[1].average(), 0.0);
        assert_eq!(u.host_competing.average(), 1.0);
        assert_eq!(u.busy(0, PcpuId(1)), WINDOW + WINDOW / 2);
    }

    #[test]
    fn a_finished_vm_is_measured_until_its_target() {
        let mut u = PcpuUsage::new(&host(), 1);
        u.add_busy(0, PcpuId(0), WINDOW / 4);
        u.add_busy(0, PcpuId(1), WINDOW / 4);
        u.close_window(WINDOW, &[], &[Some(WINDOW / 4)]);
        u.close_window(2 * WINDOW, &[], &[Some(WINDOW / 4)]);
        // Measured over its first quarter second only, where both cores were busy.
        assert_eq!(u.competing[0].average(), 1.0);
    }
}
