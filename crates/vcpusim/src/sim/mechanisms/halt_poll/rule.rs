//! KVM's host halt polling (`[host.halt_poll]`), as v6.6 virt/kvm/kvm_main.c `kvm_vcpu_halt`:
//! a vCPU that executes HLT with nothing pending first stays on its pCPU polling for a wake-up
//! for up to its own `vcpu->halt_poll_ns`, and blocks (`kvm_vcpu_block`) only if none came.
//! A wake-up during the poll resumes the guest at once, with no host wake-up and no scheduler
//! round trip; the poll's time is the host's, spent on that pCPU.
//!
//! ```text
//!   HLT ──> poll up to halt_poll_ns ──(event: kvm_vcpu_check_block < 0)──> resume, no block
//!                 │ (timeout, or another task runnable here: kvm_vcpu_can_poll)
//!                 ▼
//!            kvm_vcpu_block ──(wake-up, then scheduled in)──> resume
//!   then: halt_ns = time from HLT to resume  ─> grow / shrink halt_poll_ns
//! ```
//!
//! This file holds the per-vCPU rule ([`HaltPoll::after_halt`]) on the module parameters
//! (scenario/sections.rs `HaltPoll`); the engine side (when to poll, what ends a poll) is
//! `mod.rs` beside it.

use crate::scenario::sections::HaltPoll;
use crate::time::Nanos;
#[cfg(test)]
use crate::time::US;

impl HaltPoll {
    /// `grow_halt_poll_ns`: `val *= grow`, at least `grow_start` (6.6 does not cap here: the
    /// next halt caps it to `halt_poll_ns`).
    pub fn grown(&self, val: Nanos) -> Nanos {
        if self.grow == 0 {
            return val;
        }
        val.saturating_mul(self.grow).max(self.grow_start)
    }

    /// `shrink_halt_poll_ns`: 0 or `val / shrink`, and 0 once below `grow_start`.
    pub fn shrunk(&self, val: Nanos) -> Nanos {
        let val = val.checked_div(self.shrink).unwrap_or(0);
        if val < self.grow_start {
            0
        } else {
            val
        }
    }

    /// The vCPU's poll at a halt: `halt_poll_ns` capped to the module's (`kvm_vcpu_halt`:
    /// `if (vcpu->halt_poll_ns > max_halt_poll_ns) vcpu->halt_poll_ns = max_halt_poll_ns`).
    pub fn capped(&self, val: Nanos) -> Nanos {
        val.min(self.max)
    }

    /// The end of `kvm_vcpu_halt`: the vCPU's next `halt_poll_ns` after a halt of `halt_ns`
    /// (from HLT to running again, polling included) with `poll_ns` its (capped) poll. On x86
    /// every wake-up is valid (`vcpu_valid_wakeup`).
    pub fn after_halt(&self, poll_ns: Nanos, halt_ns: Nanos) -> Nanos {
        if self.max == 0 {
            return 0;
        }
        if halt_ns <= poll_ns {
            // The poll caught the wake-up: keep it.
            poll_ns
        } else if poll_ns > 0 && halt_ns > self.max {
            // "we had a long block, shrink polling".
            self.shrunk(poll_ns)
        } else if poll_ns < self.max && halt_ns < self.max {
            // "we had a short halt and our poll time is too small".
            self.grown(poll_ns)
        } else {
            poll_ns
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_halt_grows_the_poll_from_grow_start_and_a_long_one_resets_it() {
        let hp = HaltPoll::default();
        // A 50 us halt with no poll: grow from 0 to 10 us, then 20, 40, 80 us.
        let mut poll = 0;
        let mut seen = vec![];
        for _ in 0..4 {
            poll = hp.after_halt(hp.capped(poll), 50 * US + poll);
            seen.push(poll);
        }
        assert_eq!(seen, [10 * US, 20 * US, 40 * US, 80 * US]);
        // Caught within the poll: unchanged.
        assert_eq!(hp.after_halt(80 * US, 30 * US), 80 * US);
        // Longer than halt_poll_ns: shrink (halt_poll_ns_shrink = 0: reset to 0).
        assert_eq!(hp.after_halt(80 * US, 300 * US), 0);
        // A halving shrink stops at grow_start.
        let halve = HaltPoll { shrink: 2, ..hp };
        assert_eq!(halve.after_halt(80 * US, 300 * US), 40 * US);
        assert_eq!(halve.after_halt(15 * US, 300 * US), 0);
        // The cap applies at the next halt, not when growing.
        assert_eq!(hp.grown(160 * US), 320 * US);
        assert_eq!(hp.capped(320 * US), 200 * US);
        // halt_poll_ns = 0 turns polling off for good.
        assert_eq!(HaltPoll { max: 0, ..hp }.after_halt(0, 10 * US), 0);
    }
}
