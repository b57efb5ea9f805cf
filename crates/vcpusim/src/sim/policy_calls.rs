//! What the policies asked the host for and the timers they own: the outbox of the policy
//! calls. A policy never acts on the host; it pushes a `Request` through its `PolicyCtx`
//! (hypervisor/policy.rs), and the core carries the requests out after the call
//! (`Sim::flush_requests`, sim/hypervisor_ops.rs), in batches so that what a request causes waits
//! for the next batch. Timers are Xen's `struct timer` owned by a scheduler instance
//! (xen/common/sched/private.h, `init_timer` / `set_timer` / `stop_timer`): the table keeps each
//! one's owner pool, key and pending expiry event.
//!
//! ```text
//!   policy call ──push──> requests ──take_batch──> carried out by the core ──give_back──> spare
//!                  └─init/arm─> timers <──fire── Event::PolicyTimer
//! ```
//!
//! Nothing else holds requests or timers, and nothing outside this file changes them except
//! through these methods.

use crate::engine::event_queue::EventId;
use crate::hypervisor::policy::{Request, TimerEntry, TimerId, TimerTable};
use crate::time::Nanos;

#[derive(Default)]
pub struct PolicyCalls {
    /// Requests of policy calls not carried out yet.
    requests: Vec<Request>,
    /// Emptied batch lists, reused (one per nesting level of `flush_requests` in use), so a
    /// reschedule request costs no allocation.
    spare: Vec<Vec<Request>>,
    /// Policy-owned timers: key, owner pool and the pending expiry event.
    timers: TimerTable,
}

impl PolicyCalls {
    /// The outbox a `PolicyCtx` writes to during one call.
    #[inline(always)]
    pub fn outbox(&mut self) -> (&mut Vec<Request>, &mut TimerTable) {
        (&mut self.requests, &mut self.timers)
    }

    /// Requests wait to be carried out.
    #[inline(always)]
    pub fn pending(&self) -> bool {
        !self.requests.is_empty()
    }

    /// How many requests wait (check mode compares it before and after a call).
    pub fn pending_count(&self) -> usize {
        self.requests.len()
    }

    /// The one pending request when it is a lone `SetTimer` (a tick re-arming itself, which
    /// causes no other), taken out; None otherwise, and nothing taken.
    #[inline(always)]
    pub fn take_lone_timer(&mut self) -> Option<(TimerId, Nanos)> {
        if let [Request::SetTimer { timer, at }] = self.requests[..] {
            self.requests.clear();
            return Some((timer, at));
        }
        None
    }

    /// The pending requests as one batch; requests made while it is carried out start the next.
    pub fn take_batch(&mut self) -> Vec<Request> {
        let spare = self.spare.pop().unwrap_or_default();
        std::mem::replace(&mut self.requests, spare)
    }

    /// A batch carried out: its list is kept for reuse.
    pub fn give_back(&mut self, mut batch: Vec<Request>) {
        batch.clear();
        self.spare.push(batch);
    }

    /// A timer's entry: owner pool, key, pending expiry.
    pub fn timer(&self, id: TimerId) -> &TimerEntry {
        self.timers.entry(id)
    }

    /// `set_timer`: `event` is the timer's expiry now; the one it replaces, if any, is returned.
    #[inline(always)]
    pub fn arm(&mut self, id: TimerId, event: EventId) -> Option<EventId> {
        self.timers.arm(id, event)
    }

    /// `stop_timer`: the pending expiry event, if any, to cancel.
    pub fn disarm(&mut self, id: TimerId) -> Option<EventId> {
        self.timers.disarm(id)
    }

    /// The timer's expiry event ran: its owner pool and key, or None if it was stopped since.
    pub fn fire(&mut self, id: TimerId) -> Option<(u32, u64)> {
        self.timers.fire(id)
    }
}
