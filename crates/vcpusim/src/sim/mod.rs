//! One simulation run: build, event loop, results.

pub mod build;
pub mod execute;
pub mod guests;
pub mod hypervisor_ops;
pub mod invariants;
pub mod line;
pub mod mechanisms;
pub mod placement;
pub mod policy_calls;
pub mod pools;
pub mod speed_change;
pub mod state;
pub mod tracing;

use crate::error::SimError;
use crate::ids::{PcpuId, VcpuId};
use state::{Event, Sim};

/// How often, in events, [`Sim::run_watched`] calls its watcher. A power of two (the test is a
/// mask); at ~9 M events/s that is every ~0.1 ms of wall time, and far less often than anything
/// in the loop, so a no-op watcher costs nothing measurable. The watcher itself decides how often
/// to do real work (the Python binding reads the clock and acts every 50 ms).
pub const WATCH_EVERY_EVENTS: u64 = 1024;

impl Sim {
    /// Give the policy every VM's settings, insert every vCPU and let every pCPU pick.
    pub fn start(&mut self) {
        if self.trace.is_some() {
            self.trace_start();
        }
        // Masks may have been set between build and start (tests do).
        self.update_trivial_placement();
        // Xen: a domain's scheduling parameters are set (`sched_adjust`) before its vCPUs run;
        // all VMs first, so that no insert sees a VM the policy does not know yet.
        for vm in 0..self.vminfo.len() {
            let sched = self.vms[vm].sched.clone();
            let pool = self.vm_pool(crate::ids::VmId(vm as u32));
            self.with_policy(pool, |pol, ctx| pol.adjust(ctx, crate::ids::VmId(vm as u32), &sched));
        }
        for v in 0..self.vinfo.len() as u32 {
            self.with_vcpu_policy(VcpuId(v), |pol, ctx| pol.insert_vcpu(ctx, VcpuId(v)));
        }
        for p in 0..self.pinfo.len() as u32 {
            let at = self.online_at[p as usize];
            self.queue.push(at, Event::PcpuOnline(PcpuId(p)));
        }
        self.start_devices();
    }

    /// Process events until `duration`, the event budget, or every VM with an iteration target
    /// finished. Returns whether all targets were reached.
    pub fn run_until(&mut self, duration: u64, max_events: Option<u64>) -> Result<bool, SimError> {
        self.run_watched(duration, max_events, |_, _| true)
    }

    /// [`Sim::run_until`], calling `watch(now, events)` every [`WATCH_EVERY_EVENTS`] events; when
    /// it returns false the run stops with [`SimError::Interrupted`] (a user's Ctrl-C, a progress
    /// display). Watching never changes what the run does.
    pub fn run_watched<W: FnMut(u64, u64) -> bool>(
        &mut self,
        duration: u64,
        max_events: Option<u64>,
        mut watch: W,
    ) -> Result<bool, SimError> {
        let has_targets = self.unfinished_targets > 0;
        loop {
            // Tested in place: `take` would move the whole `Option<SimError>` out at every event.
            if self.stop.is_some() {
                return Err(self.stop.take().expect("tested above"));
            }
            if has_targets && self.unfinished_targets == 0 {
                return Ok(true);
            }
            let Some((at, ev)) = self.queue.pop_until(duration) else {
                // Events left are past the end: the run reached it. None left: it stopped short.
                if !self.queue.is_empty() {
                    self.now = duration;
                }
                return Ok(!has_targets);
            };
            self.take_samples(at);
            if at >= self.usage.next_window_end() {
                self.close_usage_windows(at);
            }
            self.now = at;
            self.events += 1;
            if max_events.is_some_and(|m| self.events > m) {
                return Err(SimError::Limit {
                    message: format!("max_events = {} reached at t = {:.3} ms", max_events.unwrap_or(0), at as f64 / 1e6),
                });
            }
            if self.events & (WATCH_EVERY_EVENTS - 1) == 0 && !watch(at, self.events) {
                return Err(SimError::Interrupted { time_ns: at });
            }
            self.handle(ev);
            if self.check && self.stop.is_none() {
                self.check_invariants()?;
            }
        }
    }

    /// Inlined into the loop, its only caller: the call's frame cost ~13 instructions per event.
    #[inline(always)]
    fn handle(&mut self, ev: Event) {
        match ev {
            Event::Dispatch(v, e) => self.on_dispatch(v, e),
            Event::ActivityDone(v, e) => self.on_activity_done(v, e),
            Event::PauseLoopExit(v, e) => {
                let vc = &self.vcpus[v.idx()];
                if vc.epoch == e && vc.ple_due > self.now {
                    // Its PAUSE loop started again since this was armed (`Sim::line_store`).
                    self.queue.push(vc.ple_due, Event::PauseLoopExit(v, e));
                } else if vc.epoch == e {
                    self.on_exit(v, crate::vmexit::Exit::PauseLoop);
                } else {
                    self.stale_events += 1;
                }
            }
            Event::IpiArrive(v, ipi) => self.on_ipi_arrive(v, ipi),
            Event::SliceEnd(p) => {
                self.pcpus[p.idx()].slice_event = None;
                self.reschedule(p);
            }
            Event::PolicyTimer(timer) => {
                if let Some((owner, key)) = self.calls.fire(timer) {
                    self.with_policy(crate::ids::PoolId(owner), |pol, ctx| pol.on_timer(ctx, key));
                }
            }
            Event::PoolChange(p, to) => self.move_pcpu(p, to),
            Event::Mechanism(m) => self.on_mechanism_event(m),
            Event::GuestTick(v) => self.upcall(v, crate::vmexit::Upcall::TimerTick),
            Event::PcpuOnline(p) => {
                self.pcpus[p.idx()].online = true;
                self.reschedule(p);
            }
            Event::VmReconfigure(vm, change) => {
                let v = &mut self.vms[vm.idx()];
                v.sched.params = v.sched_changes[change as usize].clone();
                let sched = v.sched.clone();
                let pool = self.vm_pool(vm);
                self.with_policy(pool, |pol, ctx| pol.adjust(ctx, vm, &sched));
            }
        }
    }

    /// Charge the last segments, add the runnable waits still open to the steal time (a vCPU
    /// waiting at the end was denied that time all the same) and close the trace spans at the
    /// end time.
    pub fn finish(&mut self) {
        // The competing-modules windows up to now (the last one partial) before the runs end.
        self.close_usage_windows(self.now);
        self.close_last_usage_window();
        for v in 0..self.vinfo.len() {
            let v = VcpuId(v as u32);
            if self.vinfo[v.idx()].state == crate::hypervisor::policy::VcpuState::Runnable {
                let open = self.now - self.vcpus[v.idx()].runnable_since;
                self.vcpus[v.idx()].runnable_since = self.now;
                self.pv[v.idx()].steal_time_ns += open;
                self.vms[self.vinfo[v.idx()].vm.idx()].stats.runnable_wait_ns += open;
            }
            if let Some(p) = self.vinfo[v.idx()].pcpu {
                self.settle(v);
                let start = self.vinfo[v.idx()].run_start;
                self.vinfo[v.idx()].run_time += self.now - start;
                self.vinfo[v.idx()].run_start = self.now;
                let vm = self.vinfo[v.idx()].vm.idx();
                self.usage.add_busy(vm, p, self.now - start);
                if let Some(tr) = self.trace.as_mut() {
                    let vm = self.vinfo[v.idx()].vm.idx();
                    let name = format!("{}/v{}", self.vminfo[vm].name, self.vinfo[v.idx()].index);
                    let args =
                        [("vm", self.vminfo[vm].name.as_str().into()), ("vcpu", self.vinfo[v.idx()].index.into()), ("left", "end".into())];
                    tr.span_with(0, p.0, &name, self.pcpus[p.idx()].run_start, self.now, &args);
                }
            }
        }
        self.trace_end();
    }
}
