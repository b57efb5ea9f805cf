//! Engine invariants, checked after every event in check mode (tests use it).

use super::state::{Activity, Sim};
use crate::guest::thread::ThreadState;
use crate::hypervisor::policy::VcpuState;
use crate::ids::ThreadId;

impl Sim {
    pub fn check_invariants(&self) -> Result<(), String> {
        // A pCPU runs at most one vCPU and a vCPU runs on at most one pCPU, both sides agreeing.
        for (p, info) in self.pinfo.iter().enumerate() {
            if let Some(v) = info.current {
                let vi = &self.vinfo[v.idx()];
                if vi.pcpu.map(|q| q.idx()) != Some(p) {
                    return Err(format!("pCPU {p} runs vCPU {v}, which thinks it is on {:?}", vi.pcpu));
                }
                if vi.state != VcpuState::Running {
                    return Err(format!("pCPU {p} runs vCPU {v} in state {:?}", vi.state));
                }
            }
        }
        for vi in &self.vinfo {
            match (vi.state, vi.pcpu) {
                (VcpuState::Running, Some(p)) if self.pinfo[p.idx()].current == Some(vi.id) => {}
                (VcpuState::Running, _) => return Err(format!("vCPU {} is Running but no pCPU runs it", vi.id)),
                (_, Some(p)) => return Err(format!("vCPU {} is {:?} yet on pCPU {p}", vi.id, vi.state)),
                (_, None) => {}
            }
            if vi.state != VcpuState::Running && self.vcpus[vi.id.idx()].activity != Activity::Off {
                return Err(format!("vCPU {} is {:?} but still executing", vi.id, vi.state));
            }
        }
        // A thread is on at most one vCPU (current or queued), and Ready threads are somewhere;
        // a vCPU running a thread is preempted in its PV area exactly when it is not Running.
        let mut seen = vec![0u8; self.threads.len()];
        for g in &self.guests {
            g.check(&self.threads, &self.pv, |v| self.vinfo[v.idx()].state == VcpuState::Running, &mut seen)?;
        }
        for (i, th) in self.threads.iter().enumerate() {
            let expected = u8::from(th.state == ThreadState::Ready);
            if seen[i] != expected {
                return Err(format!("thread {i} ({:?}) is on {} vCPU queues", th.state, seen[i]));
            }
        }
        // Spinlocks: the holder is not also waiting, no thread waits twice, and a thread that
        // believes it holds a lock does (mutual exclusion). A ticket lock handed to a waiter
        // that has not run yet has a holder whose `held` does not list it yet: that is allowed.
        for (l, lock) in self.locks.iter().enumerate() {
            if let Some(h) = lock.holder {
                if lock.waiters.contains(&h) {
                    return Err(format!("lock {l} holder {h} is also a waiter"));
                }
            }
            let mut ws: Vec<ThreadId> = lock.waiters.iter().copied().collect();
            ws.sort();
            ws.dedup();
            if ws.len() != lock.waiters.len() {
                return Err(format!("lock {l} has a duplicate waiter"));
            }
        }
        for th in &self.threads {
            for l in &th.held {
                if self.locks[l.idx()].holder != Some(th.id) {
                    return Err(format!("thread {} thinks it holds lock {l}, held by {:?}", th.id, self.locks[l.idx()].holder));
                }
            }
        }
        // Per-pCPU time is conserved: time charged to guests equals time vCPUs spent on pCPUs,
        // and no more than the pCPUs had.
        let charged: u64 = self.vms.iter().map(|vm| vm.stats.cpu_ns()).sum::<u64>()
            + self
                .vcpus
                .iter()
                .filter(|vc| !matches!(vc.activity, Activity::Off | Activity::Starting))
                .map(|vc| self.now - vc.seg_start)
                .sum::<u64>();
        let on_pcpu: u64 = self
            .vinfo
            .iter()
            .map(|vi| vi.run_time + if vi.state == VcpuState::Running { self.now - vi.run_start } else { 0 })
            .sum();
        if charged != on_pcpu {
            return Err(format!("time not conserved: {charged} ns charged to guests, {on_pcpu} ns on pCPUs"));
        }
        if on_pcpu > self.now * self.pinfo.len() as u64 {
            return Err(format!("{on_pcpu} ns of vCPU time on {} pCPUs in {} ns", self.pinfo.len(), self.now));
        }
        // Pools and hard affinity: a running vCPU is on a pCPU of its pool and of its mask.
        for (i, vi) in self.vinfo.iter().enumerate() {
            if let Some(p) = vi.pcpu {
                let pool = self.vcpu_pool[i];
                if self.pcpu_pool[p.idx()] != pool {
                    return Err(format!(
                        "vCPU {i} of pool {:?} runs on pCPU {p} of pool {:?}",
                        self.pools[pool.idx()].view.name,
                        self.pools[self.pcpu_pool[p.idx()].idx()].view.name
                    ));
                }
                if !self.affinity[i].hard.contains(p) {
                    return Err(format!("vCPU {i} runs on pCPU {p}, outside its hard affinity {}", self.affinity[i].hard.to_cpulist()));
                }
            }
        }
        for (p, pool) in self.pcpu_pool.iter().enumerate() {
            if !self.pools[pool.idx()].view.mask.contains(crate::ids::PcpuId(p as u32)) {
                return Err(format!("pCPU {p} is recorded in pool {:?} but not in its mask", self.pools[pool.idx()].view.name));
            }
        }
        for (i, pool) in self.pools.iter().enumerate() {
            pool.policy.check(&self.host_view(crate::ids::PoolId(i as u32)))?;
        }
        Ok(())
    }
}
