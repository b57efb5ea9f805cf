//! Work at a speed: how fast a running vCPU gets through its timed work.
//!
//! Every timed piece of work a vCPU does (a thread's compute or kernel step, an IPI handler, a
//! hypervisor overhead charged to it) is an amount of *work*, counted in work-ns: nanoseconds at
//! speed 1.0. The pCPU it runs on advances that work at a *speed* the host's `SpeedModel`
//! (`sim/speed_change.rs`) gives,
//! and the speed may change while the work is in progress (an SMT sibling or CMT module partner
//! becomes busy, the vCPU runs on another NUMA node than its memory). This is SimGrid's model
//! (`CpuImpl::execution_start` in src/kernel/resource/CpuImpl.cpp): an execution is an action
//! with a remaining amount, advanced at the resource's speed; when the speed changes, the amount
//! done so far is subtracted and the completion is re-timed.
//!
//! ```text
//!            speed 1.0              speed 0.5
//!   work  |=========·=========|=========·=========·=========·=========|
//!         start     0.5 ms done        the other 0.5 ms of work takes 1 ms
//!   time  0                   0.5 ms                                  1.5 ms
//!                             ^ speed change: settle (remaining -= floor(0.5 ms × 1.0)),
//!                               re-time ActivityDone at now + ceil(remaining / 0.5)
//! ```
//!
//! This file is the arithmetic of work and speed, below everything. The hook a contention model
//! plugs into (`SpeedModel`, which reads the host's view of who runs where) is in `sim/speed_change.rs`,
//! with the engine side (`sim/speed_change.rs`, `sim/execute.rs`):
//! - `start_timed` schedules `ActivityDone` at `now + time_for(remaining, speed)`;
//! - `settle` subtracts `work_in(elapsed, speed)` from what is left;
//! - `Sim::speed_changed(pcpu)` asks the model again for the vCPU running there and, if its
//!   speed moved, settles at the old speed and re-times the end event at the new one.
//!   `switch_in` asks the model for the vCPU's speed on its new pCPU (so a migration re-evaluates
//!   it), and a switch on pCPU p notifies the pCPUs the model says are coupled to p.
//!
//! Only work scales. Spinning (spinlock waits, TLB acknowledgement waits, user spin budgets),
//! the PLE window and interrupt delivery latency are time, not work: a spinner that runs slower
//! does not finish sooner or later, it waits for someone else (docs/model.md "Work at a speed").
//!
//! **Fixed point.** A `Speed` is an integer in parts per million of the nominal speed
//! (`SPEED_ONE = 1_000_000`), so the speeds a model is likely to name (0.5, 0.8, 0.85) are exact,
//! and all arithmetic is integer (u128 intermediates, no overflow, no `f64` on the hot path),
//! which keeps runs bit-reproducible on every machine. Roundings:
//! - time to finish `w` work-ns at speed `s` is `ceil(w / s)` ns: work never finishes before it
//!   is all done;
//! - work done in `e` ns at speed `s` is `floor(e × s)` work-ns: a vCPU is never credited with
//!   work it has not done.
//!
//! Together they are consistent: `floor(ceil(w / s) × s) >= w`, so the `ActivityDone` event
//! always finds the work done. A settle without a speed change (an interrupt, a preemption) may
//! re-time the rest up to 1 ns later than the uninterrupted end; at speed 1.0 both roundings are
//! exact and nothing moves, which is what keeps the default model's outputs byte-identical.

use crate::time::Nanos;

/// The nominal speed (1.0) in the fixed-point unit: parts per million.
pub const SPEED_ONE: u32 = 1_000_000;

/// A pCPU's speed for one vCPU, in parts per million of nominal. Never zero: a stalled resource
/// would mean work that never ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Speed(u32);

impl Speed {
    /// Nominal speed, 1.0.
    pub const ONE: Speed = Speed(SPEED_ONE);

    /// A speed of `ppm` parts per million of nominal (1.0 = `SPEED_ONE`). Panics on zero.
    pub const fn from_ppm(ppm: u32) -> Speed {
        assert!(ppm > 0, "a speed must be positive");
        Speed(ppm)
    }

    /// `num / den` of nominal, rounded down to a ppm (at least 1 ppm). Panics if `den` is zero.
    pub fn from_ratio(num: u32, den: u32) -> Speed {
        assert!(den > 0, "a speed ratio needs a positive denominator");
        let ppm = (num as u64 * SPEED_ONE as u64 / den as u64).clamp(1, u32::MAX as u64);
        Speed(ppm as u32)
    }

    pub const fn ppm(self) -> u32 {
        self.0
    }

    /// This speed slowed further by `other` (the product, rounded down to a ppm, at least 1):
    /// a contention factor times a VM's fixed virtualization factor.
    #[inline]
    pub fn times(self, other: Speed) -> Speed {
        if other.0 == SPEED_ONE {
            return self;
        }
        let ppm = (self.0 as u64 * other.0 as u64 / SPEED_ONE as u64).clamp(1, u32::MAX as u64);
        Speed(ppm as u32)
    }

    /// The speed at which work takes `1 + overhead` times as long (`overhead` >= 0), rounded to
    /// the nearest ppm: `[host.costs] virt_overhead`.
    pub fn slowed_by(overhead: f64) -> Speed {
        let ppm = (SPEED_ONE as f64 / (1.0 + overhead.max(0.0))).round().clamp(1.0, SPEED_ONE as f64);
        Speed(ppm as u32)
    }

    /// Nanoseconds needed to do `work` work-ns at this speed: `ceil(work / speed)`, saturating.
    #[inline]
    pub fn time_for(self, work: Nanos) -> Nanos {
        if self.0 == SPEED_ONE {
            return work; // the default model's only case: no division
        }
        let t = (work as u128 * SPEED_ONE as u128).div_ceil(self.0 as u128);
        t.min(Nanos::MAX as u128) as Nanos
    }

    /// Work-ns done in `elapsed` ns at this speed: `floor(elapsed × speed)`, saturating.
    #[inline]
    pub fn work_in(self, elapsed: Nanos) -> Nanos {
        if self.0 == SPEED_ONE {
            return elapsed;
        }
        let w = elapsed as u128 * self.0 as u128 / SPEED_ONE as u128;
        w.min(Nanos::MAX as u128) as Nanos
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nominal_speed_is_the_identity() {
        for w in [0, 1, 999, 1_000_000, u64::MAX] {
            assert_eq!(Speed::ONE.time_for(w), w);
            assert_eq!(Speed::ONE.work_in(w), w);
        }
    }

    #[test]
    fn time_rounds_up_and_work_rounds_down() {
        let half = Speed::from_ppm(500_000);
        assert_eq!(half.time_for(500_000), 1_000_000);
        assert_eq!(half.time_for(3), 6);
        assert_eq!(half.work_in(3), 1); // 1.5 work-ns done: credit 1
        let third = Speed::from_ratio(1, 3); // 333_333 ppm
        assert_eq!(third.ppm(), 333_333);
        // 1 work-ns at 0.333333 takes 3.000003 ns: 4 ns.
        assert_eq!(third.time_for(1), 4);
        assert_eq!(third.work_in(3), 0); // 0.999999 work-ns
        let double = Speed::from_ppm(2 * SPEED_ONE);
        assert_eq!(double.time_for(5), 3); // 2.5 ns -> 3
        assert_eq!(double.work_in(3), 6);
    }

    #[test]
    fn the_end_event_always_finds_the_work_done() {
        // floor(ceil(w / s) × s) >= w for awkward speeds and amounts.
        for ppm in [1, 7, 333_333, 500_001, 999_999, 1_000_001, 3_141_593, u32::MAX] {
            let s = Speed::from_ppm(ppm);
            for w in [1, 2, 3, 17, 999, 1_000_000, 123_456_789, 1 << 40] {
                assert!(s.work_in(s.time_for(w)) >= w, "ppm {ppm} work {w}");
                // and not a nanosecond earlier
                assert!(s.work_in(s.time_for(w) - 1) < w, "ppm {ppm} work {w}");
            }
        }
    }

    #[test]
    fn no_overflow_at_the_extremes() {
        let slowest = Speed::from_ppm(1);
        assert_eq!(slowest.time_for(u64::MAX), u64::MAX);
        let fastest = Speed::from_ppm(u32::MAX);
        assert_eq!(fastest.work_in(u64::MAX), u64::MAX);
        assert_eq!(Speed::from_ratio(0, 5), Speed::from_ppm(1));
    }
}
