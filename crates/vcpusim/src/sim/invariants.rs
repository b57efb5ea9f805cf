//! Engine invariants, checked after every event in check mode (tests use it).

use super::state::{Activity, Sim};
use crate::guest::thread::ThreadState;
use crate::hypervisor::policy::VcpuState;
use crate::ids::ThreadId;

impl Sim {
    /// Check mode: the engine's invariants (`SimError::Invariant`), then each policy's own
    /// (`Policy::check`; `SimError::Policy`, naming the policy).
    pub fn check_invariants(&self) -> Result<(), crate::SimError> {
        self.check_engine().map_err(|message| crate::SimError::Invariant { time_ns: self.now, message })?;
        for (i, pool) in self.placement.pools().iter().enumerate() {
            pool.policy.check(&self.host_view(crate::ids::PoolId(i as u32))).map_err(|message| crate::SimError::Policy {
                time_ns: self.now,
                policy: pool.policy.name().to_string(),
                message: format!("its check failed: {message}"),
            })?;
        }
        Ok(())
    }

    fn check_engine(&self) -> Result<(), String> {
        self.check_mechanisms()?;
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
            if self.vminfo[vi.vm.idx()].runnable.contains(vi.index as usize) != (vi.state == VcpuState::Runnable) {
                return Err(format!("vCPU {} is {:?} but its VM's runnable mask says otherwise", vi.id, vi.state));
            }
            if vi.state != VcpuState::Running && self.vcpus[vi.id.idx()].activity != Activity::Off {
                return Err(format!("vCPU {} is {:?} but still executing", vi.id, vi.state));
            }
        }
        // A thread is on at most one vCPU (current or queued), and Ready threads are somewhere;
        // a vCPU running a thread is preempted in its PV area exactly when it is not Running.
        let mut seen = vec![0u8; self.guests.threads().len()];
        for g in &self.guests {
            g.check(self.guests.threads(), &self.pv, |v| self.vinfo[v.idx()].state == VcpuState::Running, &mut seen)?;
        }
        // PV spinlocks: a vCPU blocked in SCHEDOP_poll is Halted, and none whose thread was handed
        // its lock sleeps without a kick on its way (no lost wake-up).
        for (v, vc) in self.vcpus.iter().enumerate() {
            let (g, i) = (vc.slot.vm as usize, vc.slot.index as usize);
            let co_stopped = self.co_stopped(crate::ids::VcpuId(v as u32));
            if self.vinfo[v].state == VcpuState::Halted && self.guests[g].vcpus[i].current.is_some() && !vc.polling && !co_stopped {
                return Err(format!("vCPU {v} is halted with a thread on it, but not in SCHEDOP_poll"));
            }
        }
        for g in &self.guests {
            g.check_pv_wakeups(self.guests.threads(), self.guests.locks(), |v| {
                self.vinfo[v.idx()].state == VcpuState::Halted && self.vcpus[v.idx()].polling
            })?;
        }
        for (i, th) in self.guests.threads().iter().enumerate() {
            let expected = u8::from(th.state == ThreadState::Ready);
            if seen[i] != expected {
                return Err(format!("thread {i} ({:?}) is on {} vCPU queues", th.state, seen[i]));
            }
        }
        // Spinlocks: the holder is not also waiting, no thread waits twice, and a thread that
        // believes it holds a lock does (mutual exclusion). A ticket lock handed to a waiter
        // that has not run yet has a holder whose `held` does not list it yet: that is allowed.
        for (l, lock) in self.guests.locks().iter().enumerate() {
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
            // Every waiter is marked with this lock (`Thread::queued_on`, which stands for a
            // search of the queue).
            if let Some(w) = lock.waiters.iter().find(|w| self.guests.threads()[w.idx()].queued_on.map(|q| q.idx()) != Some(l)) {
                return Err(format!("thread {w} waits on lock {l} but is marked {:?}", self.guests.threads()[w.idx()].queued_on));
            }
        }
        for th in self.guests.threads() {
            for l in &th.held {
                if self.guests.locks()[l.idx()].holder != Some(th.id) {
                    return Err(format!("thread {} thinks it holds lock {l}, held by {:?}", th.id, self.guests.locks()[l.idx()].holder));
                }
            }
            // Its queue marker names a lock whose queue holds it (and, above, every waiter is
            // marked with its lock).
            if let Some(l) = th.queued_on {
                if !self.guests.locks()[l.idx()].waiters.contains(&th.id) {
                    return Err(format!("thread {} is marked queued on lock {l}, which has no such waiter", th.id));
                }
            }
        }
        // Time is conserved, VM by VM: the time columns of vms.csv (user, kernel, spin, TLB wait,
        // user spin, IRQ, overhead) sum without overflow to what cpu_time_ms reports, and that
        // plus the open segments equals the time its vCPUs spent on pCPUs; all of it no more than
        // the pCPUs had.
        let mut on_pcpu_total: u64 = 0;
        for (vm, state) in self.vms.iter().enumerate() {
            let s = &state.stats;
            let columns = [s.user_ns, s.kernel_ns, s.spin_ns, s.tlb_wait_ns, s.user_spin_ns, s.idle_poll_ns, s.irq_ns, s.overhead_ns];
            let sum = columns.iter().try_fold(0u64, |a, &c| a.checked_add(c));
            if sum != Some(s.cpu_ns()) {
                return Err(format!("VM {vm}: time columns {columns:?} do not sum to cpu_time {} ns", s.cpu_ns()));
            }
            let vcpus = self.vminfo[vm].vcpus.iter().map(|v| v.idx());
            let open: u64 = vcpus
                .clone()
                .map(|v| &self.vcpus[v])
                .filter(|vc| !matches!(vc.activity, Activity::Off | Activity::Starting))
                .map(|vc| self.now - vc.seg_start)
                .sum();
            let on_pcpu: u64 = vcpus
                .map(|v| &self.vinfo[v])
                .map(|vi| vi.run_time + if vi.state == VcpuState::Running { self.now - vi.run_start } else { 0 })
                .sum();
            if s.cpu_ns().checked_add(open) != Some(on_pcpu) {
                return Err(format!("VM {vm}: time not conserved: {} ns charged (+ {open} ns open), {on_pcpu} ns on pCPUs", s.cpu_ns()));
            }
            on_pcpu_total += on_pcpu;
        }
        let on_pcpu = on_pcpu_total;
        if on_pcpu > self.now * self.pinfo.len() as u64 {
            return Err(format!("{on_pcpu} ns of vCPU time on {} pCPUs in {} ns", self.pinfo.len(), self.now));
        }
        // Pools and hard affinity: a running vCPU is on a pCPU of its pool and of its mask.
        for (i, vi) in self.vinfo.iter().enumerate() {
            if let Some(p) = vi.pcpu {
                let v = vi.id;
                let pool = self.placement.vcpu_pool(v);
                if self.placement.pcpu_pool(p) != pool {
                    return Err(format!(
                        "vCPU {i} of pool {:?} runs on pCPU {p} of pool {:?}",
                        self.placement.view(pool).name,
                        self.placement.view(self.placement.pcpu_pool(p)).name
                    ));
                }
                let hard = &self.placement.affinity(v).hard;
                if !hard.contains(p) && self.placement.pcpu_pool(p) != self.placement.micro_pool() {
                    return Err(format!("vCPU {i} runs on pCPU {p}, outside its hard affinity {}", hard.to_cpulist()));
                }
            }
        }
        // pCPUs in their pools' masks; the pools' kept facts are what every vCPU's masks and
        // pool say now.
        self.placement.check(&self.vminfo)
    }
}
