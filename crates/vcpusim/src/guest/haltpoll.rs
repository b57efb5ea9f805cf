//! The guest's idle polling before HLT: Linux 6.6's `cpuidle-haltpoll` driver with the
//! `haltpoll` governor (`[guest] haltpoll`).
//!
//! ```text
//!   vCPU idle ──select──┬─ poll (state 0): PAUSE loop until need_resched or poll_limit_ns
//!                       │     woken in time: runs the thread, no HLT, the waker sends no IPI
//!                       │     timed out: select again, which now halts
//!                       └─ halt (state 1): HLT exit, blocked until a wake-up; its residency
//!                             grows or shrinks poll_limit_ns (reflect)
//! ```
//!
//! The real code (Linux 6.6): drivers/cpuidle/cpuidle-haltpoll.c (two states: `poll` from
//! drivers/cpuidle/poll_state.c and `haltpoll idle` = `default_idle`, HLT), registered only when
//! the host gives `KVM_HINTS_REALTIME` or the module's `force` is set (`haltpoll_want`, since
//! 5.7): on an overcommitted host without the hint it is not loaded, so no preset turns it on.
//! drivers/cpuidle/governors/haltpoll.c: `haltpoll_select` (poll_limit_ns 0: halt; after a poll
//! that timed out: halt; otherwise poll), `haltpoll_reflect` -> `adjust_poll_limit` after a halt,
//! with the module parameters `guest_halt_poll_ns` (200 us), `guest_halt_poll_grow` (2),
//! `guest_halt_poll_grow_start` (50 us), `guest_halt_poll_shrink` (2) and
//! `guest_halt_poll_allow_shrink` (true). A device starts with poll_limit_ns = 0
//! (`haltpoll_enable_device`). The engine side: a poll is a spin of `TimeKind::IdlePoll` with the
//! remaining limit as its budget; a wake-up of a thread onto a polling vCPU pokes it instead of
//! sending an IPI (`set_nr_and_not_polling`: TIF_POLLING_NRFLAG is set, so `resched_curr` sends
//! none).

use crate::time::Nanos;

/// The governor's module parameters (drivers/cpuidle/governors/haltpoll.c).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Haltpoll {
    /// `guest_halt_poll_ns`: the longest poll, and the halt residency above which it shrinks.
    pub poll_ns: Nanos,
    /// `guest_halt_poll_grow`: the factor a poll limit grows by.
    pub grow: u64,
    /// `guest_halt_poll_grow_start`: the least a grown limit becomes.
    pub grow_start: Nanos,
    /// `guest_halt_poll_shrink`: the divisor a limit shrinks by (0: to 0).
    pub shrink: u64,
    /// `guest_halt_poll_allow_shrink`.
    pub allow_shrink: bool,
}

impl Default for Haltpoll {
    fn default() -> Self {
        Haltpoll { poll_ns: 200_000, grow: 2, grow_start: 50_000, shrink: 2, allow_shrink: true }
    }
}

/// The cpuidle state the governor picks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdleState {
    /// State 0, `poll_idle`: poll for at most this long.
    Poll(Nanos),
    /// State 1, `default_idle`: HLT.
    Halt,
}

/// One vCPU's `cpuidle_device` fields the governor reads and writes, and the poll or halt in
/// progress.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HaltpollDevice {
    /// `dev->poll_limit_ns`.
    pub poll_limit_ns: Nanos,
    /// `dev->last_state_idx == 0`: the last state entered was the poll.
    pub last_was_poll: bool,
    /// `dev->poll_time_limit`: the last poll ended at its limit, not by a wake-up.
    pub poll_time_limit: bool,
    /// When the poll in progress began.
    pub polling_since: Option<Nanos>,
    /// When the halt in progress began.
    pub halted_since: Option<Nanos>,
}

impl HaltpollDevice {
    /// `haltpoll_select`.
    pub fn select(&self) -> IdleState {
        if self.poll_limit_ns == 0 {
            return IdleState::Halt;
        }
        if self.last_was_poll && self.poll_time_limit {
            // Halt if no event occurred on the poll window.
            return IdleState::Halt;
        }
        IdleState::Poll(self.poll_limit_ns)
    }

    /// A poll ended at `now`, by a wake-up or at its limit (`poll_idle` returning, then
    /// `haltpoll_reflect(dev, 0)`: no adjustment after a poll).
    pub fn poll_ended(&mut self, timed_out: bool) {
        self.polling_since = None;
        self.last_was_poll = true;
        self.poll_time_limit = timed_out;
    }

    /// A halt that began at `since` ended at `now`: `haltpoll_reflect(dev, 1)` with its residency.
    pub fn halt_ended(&mut self, params: &Haltpoll, residency: Nanos) {
        self.halted_since = None;
        self.last_was_poll = false;
        self.poll_time_limit = false;
        self.adjust_poll_limit(params, residency);
    }

    /// `adjust_poll_limit`: grow when the halt was longer than the limit but within
    /// `guest_halt_poll_ns`, shrink when it was longer than that.
    fn adjust_poll_limit(&mut self, p: &Haltpoll, block_ns: Nanos) {
        if block_ns > self.poll_limit_ns && block_ns <= p.poll_ns {
            self.poll_limit_ns = self.poll_limit_ns.saturating_mul(p.grow).max(p.grow_start).min(p.poll_ns);
        } else if block_ns > p.poll_ns && p.allow_shrink {
            self.poll_limit_ns = if p.shrink == 0 { 0 } else { self.poll_limit_ns / p.shrink };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fresh_device_halts_then_grows_from_grow_start_and_doubles_to_the_cap() {
        let p = Haltpoll::default();
        let mut d = HaltpollDevice::default();
        // poll_limit_ns starts at 0: halt.
        assert_eq!(d.select(), IdleState::Halt);
        // A 30 us halt (above the limit 0, within 200 us): grow to max(0 * 2, 50 us).
        d.halt_ended(&p, 30_000);
        assert_eq!(d.poll_limit_ns, 50_000);
        assert_eq!(d.select(), IdleState::Poll(50_000));
        // The poll times out: halt next; an 80 us halt grows it to 100, then 200 (the cap).
        d.poll_ended(true);
        assert_eq!(d.select(), IdleState::Halt);
        d.halt_ended(&p, 80_000);
        assert_eq!(d.poll_limit_ns, 100_000);
        d.poll_ended(true);
        d.halt_ended(&p, 150_000);
        assert_eq!(d.poll_limit_ns, 200_000);
        d.poll_ended(true);
        d.halt_ended(&p, 199_000);
        assert_eq!(d.poll_limit_ns, 200_000, "capped at guest_halt_poll_ns (and 199 us is below the limit: no grow)");
    }

    #[test]
    fn a_poll_ended_by_a_wake_up_polls_again_and_long_halts_shrink() {
        let p = Haltpoll::default();
        let mut d = HaltpollDevice { poll_limit_ns: 200_000, ..Default::default() };
        d.poll_ended(false);
        assert_eq!(d.select(), IdleState::Poll(200_000), "a wake-up within the window: poll again");
        // Halts longer than guest_halt_poll_ns halve it: 200, 100, 50, 25 us...
        d.poll_ended(true);
        d.halt_ended(&p, 5_000_000);
        assert_eq!(d.poll_limit_ns, 100_000);
        d.halt_ended(&p, 5_000_000);
        d.halt_ended(&p, 5_000_000);
        d.halt_ended(&p, 5_000_000);
        assert_eq!(d.poll_limit_ns, 12_500);
        // A halt within the limit changes nothing; one between limit and 200 us grows back to
        // the grow start at least.
        d.halt_ended(&p, 10_000);
        assert_eq!(d.poll_limit_ns, 12_500);
        d.halt_ended(&p, 20_000);
        assert_eq!(d.poll_limit_ns, 50_000);
        // allow_shrink = false keeps it; shrink = 0 resets it.
        let keep = Haltpoll { allow_shrink: false, ..p };
        d.halt_ended(&keep, 5_000_000);
        assert_eq!(d.poll_limit_ns, 50_000);
        let reset = Haltpoll { shrink: 0, ..p };
        d.halt_ended(&reset, 5_000_000);
        assert_eq!(d.poll_limit_ns, 0);
        assert_eq!(d.select(), IdleState::Halt);
    }
}
