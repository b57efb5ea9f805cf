//! Urgent-vCPU-first (UVF) scheduling, seed 000 section 3.1.3: an overlay a proportional-share
//! policy carries to run vCPUs that handle urgent IPIs before the others.
//!
//! - A vCPU is *urgent* while it has unacknowledged event-based requests (a TLB-shootdown IPI
//!   until its EOI: TLB-Co) or a time-based request has not expired (the sender of a reschedule
//!   IPI for `resched_dp`: Resched-DP; its recipient for `resched_co`: Resched-Co).
//! - Each pCPU has a FIFO *urgent queue* over the primary run queue: a queued urgent vCPU sits in
//!   both. The policy checks the urgent queue first and takes the first vCPU the base policy's
//!   fairness allows within the *urgent allowance* (`eligible`, supplied by the policy: virtual
//!   time in CFS).
//! - An urgent vCPU runs for at most the *urgent tslice* protected from preemption; if it is
//!   still urgent then, it goes to the tail of the urgent queue (round robin among urgent vCPUs).
//!   A running vCPU that becomes urgent (a Resched-DP sender) is protected the same way.
//! - A pause-loop exit cancels urgency (section 4.3): the vCPU is busy-waiting, not doing the
//!   urgent work.
//!
//! This file is policy-independent state and rules; `overlay.rs` holds the rules every base
//! policy shares, and `policies/cfs/urgent.rs` and `policies/credit/urgent.rs` wire them in.

pub mod carrier;

use crate::hypervisor::policy::Timer;
use crate::ids::{PcpuId, VcpuId, VmId};
use crate::time::{Nanos, MS, US};
use std::collections::VecDeque;

/// Host-wide UVF settings (`[host.uvf]`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct UvfHost {
    /// Time slice of an urgent vCPU, protected from preemption (seed 000 section 4.1.1 chose
    /// 500 us).
    pub urgent_tslice: Nanos,
    /// How far (in the base policy's virtual time) an urgent vCPU may be behind the running one
    /// and still preempt it, borrowing from its future share (section 4.1.1 chose 18 ms).
    pub urgent_allowance: Nanos,
}

impl Default for UvfHost {
    fn default() -> Self {
        UvfHost { urgent_tslice: 500 * US, urgent_allowance: 18 * MS }
    }
}

/// Per-VM UVF features (`[vm.uvf]`), the seed's per-VM knobs (section 3.1.2).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct UvfVm {
    /// Resched-DP: a reschedule-IPI sender stays urgent (not preempted) this long.
    pub resched_dp: Option<Nanos>,
    /// Early delayed preemption: start the Resched-DP delay at the first APIC access of any IPI
    /// send, before the send's exits (section 4.1.1, Figure 7a).
    pub early_dp: bool,
    /// TLB-Co: a TLB-shootdown IPI recipient is urgent until it acknowledges.
    pub tlb_co: bool,
    /// Resched-Co: a reschedule-IPI recipient is urgent this long.
    pub resched_co: Option<Nanos>,
}

impl UvfVm {
    pub fn any(&self) -> bool {
        self.resched_dp.is_some() || self.tlb_co || self.resched_co.is_some()
    }
}

/// The overlay's settings, given to the policy that carries it when it is built
/// (`HostShape::uvf`): `[host.uvf]`, and every VM's `[vm.uvf]` by VM id (a VM past the end has
/// every feature off).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct UvfConfig {
    pub host: UvfHost,
    pub vms: Vec<UvfVm>,
}

/// UVF state of one host.
#[derive(Clone, Debug)]
pub struct Uvf {
    pub cfg: UvfHost,
    /// Each VM's `[vm.uvf]` features, by VM id.
    vms: Vec<UvfVm>,
    /// Time-based urgency: urgent until this time.
    until: Vec<Nanos>,
    /// Event-based urgency: requests not yet acknowledged.
    events: Vec<u32>,
    /// Per-pCPU urgent FIFO queues.
    queues: Vec<VecDeque<VcpuId>>,
    /// Per vCPU: how many urgent queues hold it (at most one entry per queue; an entry left
    /// behind when it moved is dropped by that queue's next `pick`). A halt (`remove`) and a
    /// balancer move (`move_queued`) look at every queue only when this is not zero: else on a
    /// 1,024-pCPU host every halt reads 1,024 queues (docs/speed.md).
    entries: Vec<u32>,
    /// Per-pCPU end of the running urgent vCPU's protected tslice (0: none).
    protected_until: Vec<Nanos>,
    /// Per-pCPU: a preemption was held back by the protection.
    deferred: Vec<bool>,
    /// Per-pCPU: the running vCPU was picked while urgent, on an urgent tslice lent from its
    /// future CPU time (seed 000 section 3.1.3: it may "preemptively run during an urgent
    /// tslice, which is borrowed from its future CPU time"); the pCPU is scheduled afresh when
    /// that tslice ends.
    loaned: Vec<bool>,
    /// Per-pCPU UVF timers, each with the expiry it is armed for. The overlay's expiries (a
    /// protected tslice's end, a time-based request's end) are independent: every one fires and
    /// the handler re-checks protection and urgency then, as it always has. Re-arming one timer
    /// would cancel an earlier expiry whose handler is not always a no-op (it releases a
    /// held-back preemption or requeues a still-urgent runner), so each pending expiry holds a
    /// timer of its own, taken from this pool and returned when it fires.
    expiries: Vec<Vec<(Timer, Option<Nanos>)>>,
}

impl Uvf {
    pub fn new(cfg: UvfConfig, nvcpus: usize, npcpus: usize) -> Self {
        Uvf {
            cfg: cfg.host,
            vms: cfg.vms,
            until: vec![0; nvcpus],
            events: vec![0; nvcpus],
            queues: vec![VecDeque::new(); npcpus],
            entries: vec![0; nvcpus],
            protected_until: vec![0; npcpus],
            deferred: vec![false; npcpus],
            loaned: vec![false; npcpus],
            expiries: vec![Vec::new(); npcpus],
        }
    }

    /// `vm`'s `[vm.uvf]` features.
    pub fn vm(&self, vm: VmId) -> UvfVm {
        self.vms.get(vm.idx()).copied().unwrap_or_default()
    }

    pub fn is_urgent(&self, v: VcpuId, now: Nanos) -> bool {
        self.events[v.idx()] > 0 || now < self.until[v.idx()]
    }

    /// A time-based request: urgent for `dur` from `now`. True if `v` was not urgent before.
    pub fn request_time(&mut self, v: VcpuId, now: Nanos, dur: Nanos) -> bool {
        let entered = !self.is_urgent(v, now);
        self.until[v.idx()] = self.until[v.idx()].max(now + dur);
        entered
    }

    /// An event-based request, pending until `ack_event`. True if `v` was not urgent before.
    pub fn request_event(&mut self, v: VcpuId, now: Nanos) -> bool {
        let entered = !self.is_urgent(v, now);
        self.events[v.idx()] += 1;
        entered
    }

    /// The EOI of an event-based request.
    pub fn ack_event(&mut self, v: VcpuId) {
        self.events[v.idx()] = self.events[v.idx()].saturating_sub(1);
    }

    /// A pause-loop exit: drop every request of `v` and its protection on `p`.
    pub fn cancel(&mut self, v: VcpuId, p: Option<PcpuId>) {
        self.until[v.idx()] = 0;
        self.events[v.idx()] = 0;
        if let Some(p) = p {
            self.protected_until[p.idx()] = 0;
        }
    }

    /// Put `v` at the tail of `p`'s urgent queue (once).
    pub fn enqueue(&mut self, p: PcpuId, v: VcpuId) {
        let q = &mut self.queues[p.idx()];
        if !q.contains(&v) {
            q.push_back(v);
            self.entries[v.idx()] += 1;
        }
    }

    /// Take `v` out of every urgent queue (it halted or moved).
    pub fn remove(&mut self, v: VcpuId) {
        if self.entries[v.idx()] == 0 {
            return;
        }
        for q in &mut self.queues {
            q.retain(|x| *x != v);
        }
        self.entries[v.idx()] = 0;
    }

    /// `v` moved to run queue `to`: if it waited in an urgent queue, it waits in `to`'s now.
    pub fn move_queued(&mut self, v: VcpuId, to: PcpuId) {
        if self.entries[v.idx()] > 0 {
            self.remove(v);
            self.enqueue(to, v);
        }
    }

    /// Whether `p`'s urgent queue holds anyone besides `except`.
    pub fn others_waiting(&self, p: PcpuId, except: VcpuId) -> bool {
        self.queues[p.idx()].iter().any(|x| *x != except)
    }

    /// The first vCPU in `p`'s urgent queue that is still urgent, still queued on `p`
    /// (`queued_here`) and `eligible`; it leaves the urgent queue. Stale entries (no longer
    /// urgent or queued elsewhere) are dropped on the way; ineligible ones keep their place.
    pub fn pick(
        &mut self,
        p: PcpuId,
        now: Nanos,
        queued_here: impl Fn(VcpuId) -> bool,
        eligible: impl Fn(VcpuId) -> bool,
    ) -> Option<VcpuId> {
        let q = &mut self.queues[p.idx()];
        if q.is_empty() {
            return None;
        }
        let (until, events, entries) = (&self.until, &self.events, &mut self.entries);
        let urgent = |v: VcpuId| events[v.idx()] > 0 || now < until[v.idx()];
        q.retain(|v| {
            let keep = urgent(*v) && queued_here(*v);
            if !keep {
                entries[v.idx()] -= 1;
            }
            keep
        });
        let pos = q.iter().position(|v| eligible(*v))?;
        let v = q.remove(pos)?;
        entries[v.idx()] -= 1;
        Some(v)
    }

    /// Check mode: each vCPU's entry count is the number of queues holding it.
    pub fn check_entries(&self) -> Result<(), String> {
        let mut held = vec![0u32; self.entries.len()];
        for q in &self.queues {
            for v in q {
                held[v.idx()] += 1;
            }
        }
        match held.iter().zip(&self.entries).position(|(h, n)| h != n) {
            Some(v) => Err(format!("uvf: vCPU {v} is in {} urgent queues, its count says {}", held[v], self.entries[v])),
            None => Ok(()),
        }
    }

    /// Start a protected urgent tslice on `p`; returns its end (for a timer).
    pub fn protect(&mut self, p: PcpuId, now: Nanos) -> Nanos {
        let end = now + self.cfg.urgent_tslice;
        self.protected_until[p.idx()] = end;
        end
    }

    /// Whether `p` is in a protected tslice at all (the running vCPU's urgency aside).
    pub fn protecting(&self, p: PcpuId, now: Nanos) -> bool {
        now < self.protected_until[p.idx()]
    }

    pub fn unprotect(&mut self, p: PcpuId) {
        self.protected_until[p.idx()] = 0;
    }

    /// Whether `current`, running on `p`, may not be preempted now.
    pub fn protects(&self, p: PcpuId, current: VcpuId, now: Nanos) -> bool {
        self.protecting(p, now) && self.is_urgent(current, now)
    }

    /// `p`'s runner was picked while urgent: its tslice is a loan.
    pub fn lend(&mut self, p: PcpuId) {
        self.loaned[p.idx()] = true;
    }

    /// End `p`'s loan, if any: whether there was one.
    pub fn repay(&mut self, p: PcpuId) -> bool {
        std::mem::take(&mut self.loaned[p.idx()])
    }

    /// Note a preemption held back on `p`.
    pub fn defer(&mut self, p: PcpuId) {
        self.deferred[p.idx()] = true;
    }

    /// Take the held-back preemption flag of `p`.
    pub fn take_deferred(&mut self, p: PcpuId) -> bool {
        std::mem::take(&mut self.deferred[p.idx()])
    }

    /// A free timer of `p`'s pool (made by `init` if none is), noted as armed for `at`.
    pub fn expiry_timer(&mut self, p: PcpuId, at: Nanos, init: impl FnOnce() -> Timer) -> Timer {
        let pool = &mut self.expiries[p.idx()];
        let slot = match pool.iter().position(|(_, armed)| armed.is_none()) {
            Some(i) => i,
            None => {
                pool.push((init(), None));
                pool.len() - 1
            }
        };
        pool[slot].1 = Some(at);
        pool[slot].0
    }

    /// One of `p`'s expiries at `now` fired: its timer is free again. (Which one does not
    /// matter: they share a key and a handler.)
    pub fn expiry_fired(&mut self, p: PcpuId, now: Nanos) {
        if let Some(slot) = self.expiries[p.idx()].iter_mut().find(|(_, armed)| *armed == Some(now)) {
            slot.1 = None;
        }
    }

    /// When the urgency of `v` will end by itself (time-based part), if it is time-based only.
    pub fn time_based_end(&self, v: VcpuId) -> Option<Nanos> {
        (self.events[v.idx()] == 0).then_some(self.until[v.idx()])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uvf() -> Uvf {
        Uvf::new(UvfConfig::default(), 4, 2)
    }

    #[test]
    fn the_entry_counts_follow_every_queue_change_and_a_halt_leaves_no_entry_behind() {
        let mut u = uvf();
        let (v, w) = (VcpuId(1), VcpuId(2));
        assert!(u.request_event(v, 0) && u.request_event(w, 0));
        u.enqueue(PcpuId(0), v);
        u.enqueue(PcpuId(0), v);
        assert_eq!(u.entries[v.idx()], 1, "once per queue");
        // Left behind in queue 0 when it moved to queue 1's run queue: two entries.
        u.enqueue(PcpuId(1), v);
        u.enqueue(PcpuId(1), w);
        assert_eq!((u.entries[v.idx()], u.entries[w.idx()]), (2, 1));
        u.check_entries().unwrap();
        // Queue 0's pick drops v's stale entry (not queued there) and finds nobody.
        assert_eq!(u.pick(PcpuId(0), 0, |_| false, |_| true), None);
        assert_eq!(u.entries[v.idx()], 1);
        // Queue 1's pick takes v; w keeps its place.
        assert_eq!(u.pick(PcpuId(1), 0, |_| true, |x| x == v), Some(v));
        assert_eq!((u.entries[v.idx()], u.entries[w.idx()]), (0, 1));
        u.check_entries().unwrap();
        // A halt takes w out of every queue; one of a vCPU in none changes nothing.
        u.remove(w);
        u.remove(v);
        assert_eq!(u.entries, vec![0; 4]);
        assert!(!u.others_waiting(PcpuId(1), VcpuId(0)));
        u.check_entries().unwrap();
        // A count that disagrees with the queues is caught.
        u.enqueue(PcpuId(0), w);
        u.entries[w.idx()] = 0;
        assert!(u.check_entries().unwrap_err().contains("vCPU 2 is in 1 urgent queues"));
    }

    #[test]
    fn time_based_urgency_expires_and_event_based_lasts_until_acknowledged() {
        let mut u = uvf();
        let v = VcpuId(1);
        assert!(u.request_time(v, 0, 500 * US));
        assert!(u.is_urgent(v, 499 * US));
        assert!(!u.is_urgent(v, 500 * US));
        assert!(u.request_event(v, MS));
        assert!(!u.request_event(v, MS), "already urgent: not a new entry");
        u.ack_event(v);
        assert!(u.is_urgent(v, 10 * MS), "one request still pending");
        u.ack_event(v);
        assert!(!u.is_urgent(v, 10 * MS));
        u.ack_event(v);
        assert!(!u.is_urgent(v, 10 * MS), "a spurious EOI does not underflow");
    }

    #[test]
    fn pick_is_fifo_skips_ineligible_and_drops_stale_entries() {
        let mut u = uvf();
        let p = PcpuId(0);
        for v in [VcpuId(0), VcpuId(1), VcpuId(2)] {
            u.request_event(v, 0);
            u.enqueue(p, v);
        }
        u.enqueue(p, VcpuId(1));
        u.ack_event(VcpuId(0)); // no longer urgent: stale
        let picked = u.pick(p, 0, |_| true, |v| v != VcpuId(1));
        assert_eq!(picked, Some(VcpuId(2)), "vCPU 0 is stale and vCPU 1 ineligible");
        assert_eq!(u.pick(p, 0, |_| true, |_| true), Some(VcpuId(1)), "the ineligible one kept its place");
        assert_eq!(u.pick(p, 0, |_| true, |_| true), None);
        // A vCPU queued elsewhere now is dropped.
        u.enqueue(p, VcpuId(3));
        u.request_event(VcpuId(3), 0);
        assert_eq!(u.pick(p, 0, |v| v != VcpuId(3), |_| true), None);
    }

    #[test]
    fn protection_holds_only_while_the_runner_is_urgent_and_within_the_tslice() {
        let mut u = uvf();
        let (p, v) = (PcpuId(1), VcpuId(2));
        u.request_time(v, 0, 2 * MS);
        let end = u.protect(p, 0);
        assert_eq!(end, 500 * US);
        assert!(u.protects(p, v, 100 * US));
        assert!(!u.protects(p, v, 500 * US), "tslice over");
        u.protect(p, MS);
        u.cancel(v, Some(p));
        assert!(!u.protects(p, v, MS + 1), "a pause-loop exit cancels urgency and protection");
    }
}
