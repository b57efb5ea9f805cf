//! Which Xen the credit policy behaves like (`[host.params] xen`), and the rules that differ
//! between the versions the seeds ran: 3.3 (seed 004), 4.4 (seed 001), 4.7 (seed 002) and 4.18
//! (today's code, the default).
//!
//! Read from `xen/common/sched_credit.c` at the tags 3.3.0-branched (= 3.3.0-rc7 for this file),
//! RELEASE-4.4.0 and RELEASE-4.7.0, `xen/common/sched/credit.c` at RELEASE-4.18.0 (identical in
//! scheduling to 4.22: the later changes are trace calls), `xen/common/schedule.c` and
//! `xen/arch/x86/hvm/vmx/{vmx,vmcs}.c` at the same tags. Each rule names the function it follows
//! and the commit or release that changed it; docs/model.md §7.2 has the table version x rule.
//! Rules that only matter with affinity (the soft step, the "kick cur away" test, the exclusive
//! pinning shortcut) are in the same list.
//!
//! What is identical in all four and so has no rule here: the run-queue order (BOOST > UNDER >
//! OVER, FIFO within a priority), `csched_runq_sort`, stealing only strictly better vCPUs and only
//! when the local best is OVER or idle, caps parking a vCPU whose credit falls below minus its
//! share of the cap, the floor of -300 credits, the 30 ms default slice and 10 ms tick, BOOST for
//! an UNDER vCPU that wakes from a block.

use std::fmt;

/// The Xen versions the credit policy models, oldest first (so `<` is "older than").
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Xen {
    /// Xen 3.3.0 (2008): seed 004's host.
    V3_3,
    /// Xen 4.4.0 (2014): seed 001's host.
    V4_4,
    /// Xen 4.7.0 (2016): seed 002's host.
    V4_7,
    /// Xen 4.18.0 (2023): today's credit1, the default.
    V4_18,
}

impl Xen {
    /// The values `[host.params] xen` accepts, oldest first.
    pub const NAMES: &'static [&'static str] = &["3.3", "4.4", "4.7", "4.18"];
    /// The default: the newest.
    pub const DEFAULT: &'static str = "4.18";

    pub fn parse(name: &str) -> Option<Xen> {
        match name {
            "3.3" => Some(Xen::V3_3),
            "4.4" => Some(Xen::V4_4),
            "4.7" => Some(Xen::V4_7),
            "4.18" => Some(Xen::V4_18),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Xen::V3_3 => "3.3",
            Xen::V4_4 => "4.4",
            Xen::V4_7 => "4.7",
            Xen::V4_18 => "4.18",
        }
    }

    // ---- tunables that exist ----

    /// `sched_ratelimit_us` (schedule.c, `SCHED_DEFAULT_RATELIMIT_US` = 1000 in sched-if.h) and
    /// its test in `csched_schedule`: Xen 4.2 on. 3.3 returns the 30 ms slice every time.
    pub fn has_ratelimit(self) -> bool {
        self >= Xen::V4_4
    }

    /// `sched_credit_tslice_ms` (`__csched_set_tslice`): Xen 4.2 on. 3.3 has the fixed
    /// `CSCHED_MSECS_PER_TSLICE` = 3 ticks of `CSCHED_MSECS_PER_TICK` = 10 ms.
    pub fn has_tslice_param(self) -> bool {
        self >= Xen::V4_4
    }

    /// `vcpu_migration_delay` (`__csched_vcpu_is_cache_hot`): present in 4.0, absent in 3.3.
    pub fn has_migration_delay(self) -> bool {
        self >= Xen::V4_4
    }

    /// `load-balance-ratelimit` (`CSCHED_DEFAULT_LOAD_BALANCE_RATELIMIT_US` = 1000): Xen 4.18
    /// (absent in 4.17.0). Before it a pCPU tries to steal at every `csched_schedule` whose best
    /// local candidate is OVER or idle.
    pub fn has_load_balance_ratelimit(self) -> bool {
        self >= Xen::V4_18
    }

    /// Pause-loop exiting: Xen 4.0 enables it (vmcs.c `ple_gap` / `ple_window`, vmx.c
    /// `EXIT_REASON_PAUSE_INSTRUCTION` -> `do_sched_op_compat(SCHEDOP_yield)`); 3.3's VMX code has
    /// neither, so a 3.3 guest spins without exits.
    pub fn has_ple(self) -> bool {
        self >= Xen::V4_4
    }

    /// Soft affinity (`cpu_soft_affinity`, `CSCHED_BALANCE_SOFT_AFFINITY`): Xen 4.5 on. 4.4 has
    /// the per-domain NUMA node affinity in its place (`CSCHED_BALANCE_NODE_AFFINITY`, not
    /// modelled: it is skipped for a domain whose node affinity is automatic or spans every node),
    /// 3.3 neither.
    pub fn has_soft_affinity(self) -> bool {
        self >= Xen::V4_7
    }

    /// Cpupools (`xen/common/cpupool.c`): Xen 4.1 on.
    pub fn has_cpupools(self) -> bool {
        self >= Xen::V4_4
    }

    // ---- yield ----

    /// `csched_vcpu_yield` sets `CSCHED_FLAG_VCPU_YIELD` (commit 5fc9f5ef6c, Xen 4.1). In 3.3
    /// schedule.c's `do_yield` only raises `SCHEDULE_SOFTIRQ`: the yielder is re-queued like any
    /// preempted vCPU, at the tail of its priority.
    pub fn has_yield_flag(self) -> bool {
        self >= Xen::V4_4
    }

    /// Where the YIELD flag is cleared. 4.4 and 4.7: in `csched_schedule`, right after the
    /// yielder was re-queued ("Clear YIELD flag before scheduling out"), so it only places it
    /// behind one lower-priority vCPU once and a queued yielder is not flagged. 4.18: in
    /// `__runq_remove` ("Clear YIELD flag when scheduling back in"), so the flag stays while it
    /// waits (and `csched_runq_steal` sees it).
    pub fn yield_flag_kept_while_queued(self) -> bool {
        self >= Xen::V4_18
    }

    /// The ratelimit spares a vCPU that yielded (`!test_bit(CSCHED_FLAG_VCPU_YIELD)` in
    /// `csched_schedule`): Xen 4.8 on. In 4.4 and 4.7 a yield inside the ratelimit keeps the
    /// yielder running.
    pub fn ratelimit_spares_yielder(self) -> bool {
        self >= Xen::V4_18
    }

    /// The ratelimit keeps the vCPU for what is left of it (`ratelimit - runtime`, at least
    /// `CSCHED_MIN_TIMER`): Xen 4.8 on. 4.4 and 4.7 return a whole `MICROSECS(ratelimit_us)`.
    pub fn ratelimit_slice_is_remainder(self) -> bool {
        self >= Xen::V4_18
    }

    /// `csched_runq_steal` skips a vCPU that yielded ("Don't steal a UNIT which has yielded"):
    /// Xen 4.18.
    pub fn steal_skips_yielder(self) -> bool {
        self >= Xen::V4_18
    }

    // ---- accounting ----

    /// How a running vCPU pays. 3.3: `csched_vcpu_acct` subtracts `CSCHED_CREDITS_PER_TICK` =
    /// 100 credits from whichever vCPU runs when the 10 ms tick fires (sampling; nothing is
    /// charged at a context switch). 4.x: `burn_credits` charges 10 credits per ms actually run,
    /// at each tick and each `csched_schedule`.
    pub fn tick_sampled_debit(self) -> bool {
        self == Xen::V3_3
    }

    /// `prv->weight` counts a domain's weight once per active vCPU ("Make weight per-vcpu",
    /// commit 3a37d430ce, Xen 4.1), so `csched_acct` shares credits by weight x active vCPUs. In
    /// 3.3 it counts each active domain's weight once and shares by weight alone.
    pub fn weight_per_vcpu(self) -> bool {
        self >= Xen::V4_4
    }

    /// A vCPU above +`credits_per_tslice` leaves the active list with its credit halved ("so that
    /// when it starts accounting again, it starts a little bit ahead"); 3.3 sets it to 0.
    pub fn halves_credit_over_peak(self) -> bool {
        self >= Xen::V4_4
    }

    /// `csched_acct` unparks with `test_and_clear_bit(PARKED)` *before* `vcpu_unpause`, so
    /// `csched_vcpu_wake` boosts the unparked vCPU, in 4.4 and 4.7 (through 4.12; commit
    /// 5c8c0ae7c4, Xen 4.13, moved the clear after the unpause). 3.3 clears it after the unpause.
    pub fn unpark_boosts(self) -> bool {
        matches!(self, Xen::V4_4 | Xen::V4_7)
    }

    // ---- wake, insert, migration ----

    /// `CSCHED_FLAG_VCPU_MIGRATING`: set by `csched_cpu_pick` so that the wake `vcpu_migrate`
    /// makes is not a BOOST (commit 66c7449a4d, Xen 4.7). Before, a vCPU moved by the tick or
    /// kicked away is boosted when it is woken on its new pCPU.
    pub fn migrating_flag(self) -> bool {
        self >= Xen::V4_7
    }

    /// `csched_vcpu_insert` places a new vCPU with `csched_cpu_pick` (Xen 4.8 on), which also
    /// sets MIGRATING, so the domain's unpause does not boost it. Before, the vCPU waits on the
    /// pCPU domain creation gave it and its first wake is a BOOST.
    pub fn insert_picks_pcpu(self) -> bool {
        self >= Xen::V4_18
    }

    // ---- tickling ----

    /// 3.3's `__runq_tickle`: the woken vCPU's pCPU if it beats the running vCPU, plus every
    /// idler (in its affinity) whenever that pCPU is busy. 4.x: the pCPU if it is idle, or if no
    /// pCPU idles and the vCPU beats the current one; otherwise one idler, rotating
    /// (`opt_tickle_one_idle`, commit e4434634c4, Xen 4.1).
    pub fn tickles_every_idler(self) -> bool {
        self == Xen::V3_3
    }

    /// `__runq_tickle` takes the tickled pCPUs out of `prv->idlers` (Xen 4.8 on); before, a
    /// tickled pCPU stays an idler until its own `csched_schedule`.
    pub fn tickle_clears_idlers(self) -> bool {
        self >= Xen::V4_18
    }

    /// The "kick cur away" branch of `__runq_tickle` (no idler suits the woken vCPU, which beats
    /// the running one: `_VPF_migrating` on cur). 4.4: always. 4.5-4.12 (4.7): if an idler is in
    /// cur's hard affinity. 4.13 on (4.18): the test reads the new vCPU's hard affinity, empty of
    /// idlers there by construction, so it never fires.
    pub fn kick_cur(self) -> KickCur {
        match self {
            Xen::V3_3 => KickCur::Never,
            Xen::V4_4 => KickCur::Always,
            Xen::V4_7 => KickCur::IfAnIdlerSuitsCur,
            Xen::V4_18 => KickCur::Never,
        }
    }

    /// `CSCHED_FLAG_UNIT_PINNED` (a one-pCPU hard mask): `__runq_tickle` tickles that pCPU when it
    /// idles. Xen 4.11 on.
    pub fn pinned_shortcut(self) -> bool {
        self >= Xen::V4_18
    }

    // ---- placement and stealing ----

    /// 3.3's `csched_cpu_pick`: the vCPU's pCPU always counts as idle, the first pCPU with more
    /// idle siblings (same socket: threads of the core; across sockets: cores of the socket, no
    /// factor of two) wins, no idle bias. 4.x: `_csched_cpu_pick` counts its own pCPU idle only if
    /// its run queue is empty, moves to an idler first, needs twice as many idlers across sockets
    /// and rotates among a core's threads by `idle_bias`.
    pub fn cpu_pick_3_3(self) -> bool {
        self == Xen::V3_3
    }

    /// Order of `csched_load_balance`'s peer walk. 3.3: every busy pCPU, from the thief's
    /// neighbour round the host. 4.4 and 4.7: node by node from the thief's, each from its first
    /// busy pCPU. 4.18: each node from its `balance_bias` (the peer last stolen from; Xen 4.9).
    pub fn steal_walk(self) -> StealWalk {
        match self {
            Xen::V3_3 => StealWalk::Ring,
            Xen::V4_4 | Xen::V4_7 => StealWalk::NodesFromFirst,
            Xen::V4_18 => StealWalk::NodesFromBias,
        }
    }
}

impl fmt::Display for Xen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// When `__runq_tickle` sets `_VPF_migrating` on the running vCPU (see `Xen::kick_cur`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KickCur {
    Never,
    Always,
    IfAnIdlerSuitsCur,
}

/// The order of `csched_load_balance`'s walk over the busy peers (see `Xen::steal_walk`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StealWalk {
    Ring,
    NodesFromFirst,
    NodesFromBias,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_order_by_release() {
        for name in Xen::NAMES {
            assert_eq!(Xen::parse(name).unwrap().name(), *name);
        }
        assert_eq!(Xen::parse(Xen::DEFAULT), Some(Xen::V4_18));
        assert!(Xen::V3_3 < Xen::V4_4 && Xen::V4_4 < Xen::V4_7 && Xen::V4_7 < Xen::V4_18);
        assert_eq!(Xen::parse("4.8"), None);
    }
}
