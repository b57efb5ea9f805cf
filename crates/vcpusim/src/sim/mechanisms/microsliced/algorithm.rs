//! Algorithm 1 of seed 002 (section 4.3, "Adjusting the number of micro-sliced cores"), as a pure
//! state machine: the host feeds it the urgent events counted over the interval that just ended
//! (IPI-, PLE- and vIRQ-triggered) and it answers the number of micro-sliced cores for the next
//! interval and that interval's length. The host (`sim/mechanisms/microsliced/`) resizes the pool and arms
//! the next call.
//!
//! The pseudocode, line by line (numbers are the seed's):
//! - 2-7: not in profile mode: start profiling with no micro core for one profile interval.
//! - 11-12: record this interval's counts under the current core count.
//! - 14-20: with no micro core and no urgent event: stay at none for one epoch (run phase).
//! - 22-26: otherwise take one core; if IPIs dominate ("numIPIs > numPLEs OR numIPIs > numIRQs",
//!   exactly as written: an OR) keep profiling;
//! - 27-31: else (PLE or IRQ dominant) stop at one core for one epoch (early termination).
//! - 32-33: below the limit: one more core, keep profiling.
//! - 34-37: at the limit: `FindBestuCoreCnt`, then one epoch at that count.
//!
//! `FindBestuCoreCnt` is not spelled out by the seed beyond "select a configuration which
//! generates the least number of yields" (section 5) after profiling "the number of IPI events"
//! (section 4.3). The authors' released code (github.com/Jeongseob/xen, branch
//! dyn-usliced-cores, xen/common/sched_credit.c `csched_event_acct`) takes the count with the
//! fewest IPI yields among 1..=limit, the smallest count on a tie; so do we.
//!
//! Where the released `csched_event_acct` differs from Algorithm 1 (we follow the algorithm;
//! docs/model.md § seed 002: micro-sliced cores lists these): it counts no vIRQs,
//! terminates early when PLEs exceed IPIs (not "IPIs exceed PLEs or IRQs"), waits 20 ms rather
//! than an epoch when nothing happened, and hard-codes the limit at 3.

use crate::time::Nanos;

/// Urgent events counted over one interval (the released code's `struct sched_event_stat`, with
/// vIRQs added as the seed's Algorithm 1 reads them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UrgentCounts {
    /// Yields classified as IPI waits (TLB synchronization, `smp_call_function_many`).
    pub ipis: u64,
    /// Yields classified as lock spinning (pause-loop exits in a spinlock).
    pub ples: u64,
    /// Virtual IRQs relayed for I/O devices.
    pub irqs: u64,
}

impl UrgentCounts {
    /// `CheckUrgentEvents`: did any urgent event occur?
    pub fn any(&self) -> bool {
        self.ipis + self.ples + self.irqs > 0
    }
}

/// The state of Algorithm 1 between two calls.
#[derive(Clone, Debug)]
pub struct Algorithm1 {
    /// `NUM_LIMIT_uCORES`.
    pub limit: u32,
    /// `ProfileInterval` (10 ms in the seed).
    pub profile_interval: Nanos,
    /// `EpochInterval` (1000 ms in the seed).
    pub epoch: Nanos,
    /// `profileMode`.
    pub profile_mode: bool,
    /// `numuCores`.
    pub num_cores: u32,
    /// `urEvents[numuCores]`: the counts recorded with each number of cores in this profile.
    pub ur_events: Vec<UrgentCounts>,
}

/// What one call of the procedure decided: the cores for the next interval, its length, and
/// which branch it took (for the trace and the tests).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    pub num_cores: u32,
    pub interval: Nanos,
    pub branch: Branch,
}

/// The branches of Algorithm 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Branch {
    /// Lines 2-7: a new profile starts with no micro core.
    StartProfile,
    /// Lines 14-20: nothing urgent with no core: none for an epoch.
    NoUrgentEvents,
    /// Lines 22-26: IPI dominant: one core, keep profiling.
    IpiDominant,
    /// Lines 27-31: PLE or IRQ dominant: one core for an epoch.
    EarlyTermination,
    /// Lines 32-33: one more core, keep profiling.
    AddCore,
    /// Lines 34-37: the limit reached: the best count for an epoch.
    BestCount,
}

impl Branch {
    pub fn name(self) -> &'static str {
        match self {
            Branch::StartProfile => "start profile",
            Branch::NoUrgentEvents => "no urgent events",
            Branch::IpiDominant => "IPI dominant",
            Branch::EarlyTermination => "PLE/IRQ dominant",
            Branch::AddCore => "add a core",
            Branch::BestCount => "best count",
        }
    }
}

impl Algorithm1 {
    /// Before the first call: not profiling, no core (line 2 starts a profile at once).
    pub fn new(limit: u32, profile_interval: Nanos, epoch: Nanos) -> Self {
        Algorithm1 {
            limit,
            profile_interval,
            epoch,
            profile_mode: false,
            num_cores: 0,
            ur_events: vec![UrgentCounts::default(); limit as usize + 1],
        }
    }

    /// `ADAPTIVEMICROSLICEDCORES`, called when its timer fires with the system-wide counts of the
    /// interval that ended (`systemWideStats`).
    pub fn step(&mut self, stats: UrgentCounts) -> Step {
        let profile = self.profile_interval;
        if !self.profile_mode {
            // Lines 2-7.
            self.num_cores = 0;
            self.profile_mode = true;
            return self.out(profile, Branch::StartProfile);
        }
        // Lines 11-12.
        let curr = stats;
        self.ur_events[self.num_cores as usize] = curr;
        if self.num_cores == 0 {
            // Lines 14-20 (CheckUrgentEvents on what was just recorded).
            if !self.ur_events[0].any() {
                self.profile_mode = false;
                return self.out(self.epoch, Branch::NoUrgentEvents);
            }
            // Line 22.
            self.num_cores += 1;
            if curr.ipis > curr.ples || curr.ipis > curr.irqs {
                // Lines 23-26.
                return self.out(profile, Branch::IpiDominant);
            }
            // Lines 27-31.
            self.profile_mode = false;
            return self.out(self.epoch, Branch::EarlyTermination);
        }
        if self.num_cores < self.limit {
            // Lines 32-33.
            self.num_cores += 1;
            return self.out(profile, Branch::AddCore);
        }
        // Lines 34-37 (num_cores == limit).
        self.num_cores = self.find_best();
        self.profile_mode = false;
        self.out(self.epoch, Branch::BestCount)
    }

    /// `FindBestuCoreCnt`: the count in 1..=limit with the fewest IPI yields (the first on a tie).
    fn find_best(&self) -> u32 {
        (1..=self.limit).min_by_key(|&n| (self.ur_events[n as usize].ipis, n)).unwrap_or(1)
    }

    fn out(&self, interval: Nanos, branch: Branch) -> Step {
        Step { num_cores: self.num_cores, interval, branch }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::MS;

    fn counts(ipis: u64, ples: u64, irqs: u64) -> UrgentCounts {
        UrgentCounts { ipis, ples, irqs }
    }

    fn alg(limit: u32) -> Algorithm1 {
        Algorithm1::new(limit, 10 * MS, 1000 * MS)
    }

    /// Drive the algorithm through a scripted trace; return (cores, interval, branch) per call.
    fn run(a: &mut Algorithm1, trace: &[UrgentCounts]) -> Vec<(u32, Nanos, Branch)> {
        trace.iter().map(|c| a.step(*c)).map(|s| (s.num_cores, s.interval, s.branch)).collect()
    }

    #[test]
    fn the_first_call_starts_a_profile_with_no_core_for_one_profile_interval() {
        let mut a = alg(3);
        // Whatever was counted before profiling is not recorded (lines 2-7 jump to out).
        let s = a.step(counts(50, 50, 50));
        assert_eq!((s.num_cores, s.interval, s.branch), (0, 10 * MS, Branch::StartProfile));
        assert!(a.profile_mode);
        assert_eq!(a.ur_events[0], UrgentCounts::default());
    }

    #[test]
    fn no_urgent_event_keeps_zero_cores_for_an_epoch_then_profiles_again() {
        let mut a = alg(3);
        let got = run(&mut a, &[counts(0, 0, 0), counts(0, 0, 0), counts(9, 9, 9)]);
        assert_eq!(
            got,
            vec![(0, 10 * MS, Branch::StartProfile), (0, 1000 * MS, Branch::NoUrgentEvents), (0, 10 * MS, Branch::StartProfile)]
        );
    }

    #[test]
    fn ipi_dominant_searches_up_to_the_limit_and_keeps_the_count_with_fewest_ipi_yields() {
        let mut a = alg(3);
        let got = run(
            &mut a,
            &[
                counts(0, 0, 0),   // start profile
                counts(100, 5, 0), // 0 cores: IPI dominant -> 1
                counts(40, 5, 0),  // 1 core -> 2
                counts(10, 5, 0),  // 2 cores -> 3 (the limit)
                counts(12, 5, 0),  // 3 cores: best is 2 (10 IPIs)
            ],
        );
        assert_eq!(
            got,
            vec![
                (0, 10 * MS, Branch::StartProfile),
                (1, 10 * MS, Branch::IpiDominant),
                (2, 10 * MS, Branch::AddCore),
                (3, 10 * MS, Branch::AddCore),
                (2, 1000 * MS, Branch::BestCount),
            ]
        );
        assert_eq!(a.ur_events[1..].iter().map(|c| c.ipis).collect::<Vec<_>>(), vec![40, 10, 12]);
        // The run phase ends with a new profile at zero cores.
        assert_eq!(a.step(counts(1, 1, 1)).branch, Branch::StartProfile);
        assert_eq!(a.num_cores, 0);
    }

    #[test]
    fn a_tie_picks_the_smallest_count() {
        let mut a = alg(3);
        let got = run(&mut a, &[counts(0, 0, 0), counts(10, 0, 0), counts(7, 0, 0), counts(7, 0, 0), counts(7, 0, 0)]);
        assert_eq!(got.last().copied(), Some((1, 1000 * MS, Branch::BestCount)));
    }

    #[test]
    fn ple_or_irq_dominant_terminates_early_with_one_core_for_an_epoch() {
        // PLE dominant: IPIs exceed neither PLEs nor IRQs.
        let mut a = alg(3);
        let got = run(&mut a, &[counts(0, 0, 0), counts(3, 50, 3)]);
        assert_eq!(got[1], (1, 1000 * MS, Branch::EarlyTermination));
        assert!(!a.profile_mode);
        // IRQ dominant.
        let mut a = alg(3);
        let got = run(&mut a, &[counts(0, 0, 0), counts(0, 0, 40)]);
        assert_eq!(got[1], (1, 1000 * MS, Branch::EarlyTermination));
    }

    #[test]
    fn the_ipi_test_is_an_or_as_written() {
        // More IPIs than IRQs but fewer than PLEs: "numIPIs > numPLEs OR numIPIs > numIRQs" holds.
        let mut a = alg(3);
        let got = run(&mut a, &[counts(0, 0, 0), counts(5, 50, 0)]);
        assert_eq!(got[1], (1, 10 * MS, Branch::IpiDominant));
        // Equal IPIs, PLEs and IRQs: neither strict test holds.
        let mut a = alg(3);
        let got = run(&mut a, &[counts(0, 0, 0), counts(5, 5, 5)]);
        assert_eq!(got[1], (1, 1000 * MS, Branch::EarlyTermination));
    }

    #[test]
    fn a_limit_of_one_decides_after_one_profiled_core() {
        let mut a = alg(1);
        let got = run(&mut a, &[counts(0, 0, 0), counts(9, 0, 0), counts(4, 0, 0)]);
        assert_eq!(got, vec![(0, 10 * MS, Branch::StartProfile), (1, 10 * MS, Branch::IpiDominant), (1, 1000 * MS, Branch::BestCount)]);
    }
}
