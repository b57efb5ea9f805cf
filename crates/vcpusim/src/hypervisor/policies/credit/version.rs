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
    /// the per-domain NUMA node affinity in its place (`prefer_step`), 3.3 neither.
    pub fn has_soft_affinity(self) -> bool {
        self >= Xen::V4_7
    }

    /// What the first balance step of `_csched_cpu_pick`, `__runq_tickle` and
    /// `csched_load_balance` / `csched_runq_steal` prefers. 4.3 and 4.4:
    /// `CSCHED_BALANCE_NODE_AFFINITY`, the domain's node affinity (`csched_balance_cpumask`:
    /// `node_affinity_cpumask` ∩ `cpu_affinity`), taken by a vCPU whose domain's affinity is
    /// explicit, short of every pCPU and meets its affinity (`__vcpu_has_node_affinity`). 4.5 on
    /// (commit db6b221591, "sched: introduce soft-affinity and use it instead d->node-affinity"):
    /// `CSCHED_BALANCE_SOFT_AFFINITY`, the vCPU's soft affinity, under `has_soft_affinity`. The
    /// loops are otherwise the same code. 3.3 has no balance steps.
    pub fn prefer_step(self) -> PreferStep {
        match self {
            Xen::V3_3 => PreferStep::None,
            Xen::V4_4 => PreferStep::Node,
            Xen::V4_7 | Xen::V4_18 => PreferStep::Soft,
        }
    }

    /// The domain's NUMA node affinity steers the scheduler (`prefer_step` is `Node`), so xl's
    /// automatic NUMA placement (`numa_placement`) matters: Xen 4.3 and 4.4.
    pub fn has_node_affinity_step(self) -> bool {
        self.prefer_step() == PreferStep::Node
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

    /// The pCPU's ticker stops while the pCPU is idle and restarts when it runs a vCPU. 3.3 has
    /// no way to stop it: `csched_start_tickers` arms every pCPU's ticker at boot and
    /// `csched_tick` re-arms it every 10 ms, idle or not (sched_credit.c at 3.3.0). From 4.0 the
    /// idle loop stops it through `sched_tick_suspend` (`csched_tick_suspend`, when the pCPU
    /// enters a C-state); from 4.13 credit stops it itself when going idle (commit 969f58bde2).
    /// 4.4 and 4.7 are modelled as the latter (a busy host's idle pCPUs sleep).
    pub fn ticker_stops_when_idle(self) -> bool {
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

    /// Which idlers `__runq_tickle`'s rotor (`last_tickle_cpu`) cycles over once an idler suits
    /// the woken vCPU. 4.5-4.7: every idler of the pool (`cpumask_cycle(..., &idle_mask)`), so the
    /// tickled one may be outside the vCPU's affinity (it then finds nothing to steal). 4.4: its
    /// `idle_mask` is already the step's suitable idlers; 4.8 on cycles the suitable ones.
    pub fn tickle_rotor_over_all_idlers(self) -> bool {
        self == Xen::V4_7
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

/// The first balance step (see `Xen::prefer_step`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PreferStep {
    /// No balance steps (3.3).
    None,
    /// `CSCHED_BALANCE_NODE_AFFINITY`: the domain's node affinity (4.3, 4.4).
    Node,
    /// `CSCHED_BALANCE_SOFT_AFFINITY`: the vCPU's soft affinity (4.5 on).
    Soft,
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

/// Each rule of a version, driven through the policy: every test computes an outcome under all
/// four versions and compares it with that version's expectation; the expectations of versions
/// whose code differs there are asserted to differ, so a test of one version's rule fails under
/// the others. (4.4 and 4.7 share the yield, ratelimit and steal code byte for byte; the MIGRATING
/// and kick-cur-away tests tell them apart.)
#[cfg(test)]
mod rules {
    use super::super::tests::{cfg_for, hand_set, idler_mask, Ev, FakeHost};
    use super::super::{CreditVcpu, Pri, DEFAULT_TSLICE, PRI_BOOST, PRI_UNDER};
    use super::Xen;
    use crate::hardware::topology::Topology;
    use crate::hypervisor::policy::{Policy, VcpuState, YieldReason};
    use crate::ids::{PcpuId, VcpuId, VmId};
    use crate::time::{Nanos, MS, US};
    use std::fmt::Debug;

    const ALL: [Xen; 4] = [Xen::V3_3, Xen::V4_4, Xen::V4_7, Xen::V4_18];

    /// `outcome(xen) == expected(xen)` for every version, and the expectations of `distinct`
    /// (one version per group of identical code) differ pairwise.
    fn per_version<T: PartialEq + Debug>(distinct: &[Xen], outcome: impl Fn(Xen) -> T, expected: impl Fn(Xen) -> T) {
        for (i, a) in distinct.iter().enumerate() {
            for b in &distinct[i + 1..] {
                assert_ne!(expected(*a), expected(*b), "the test cannot tell Xen {a} from Xen {b}");
            }
        }
        for xen in ALL {
            assert_eq!(outcome(xen), expected(xen), "Xen {xen}");
        }
    }

    fn ids(list: &[VcpuId]) -> Vec<usize> {
        list.iter().map(|v| v.idx()).collect()
    }

    /// Yield: `r` runs on the one pCPU, `a` (UNDER) and `o` (OVER) wait; `r` yields 10 us after it
    /// started. Who runs next, for how long, the queue, and `r`'s YIELD flag.
    fn after_yield(xen: Xen) -> (Option<usize>, Option<Nanos>, Vec<usize>, bool) {
        let (r, a, o) = (0, 1, 2);
        let mut h = hand_set(xen, 1, 3, &[o], &[Some(r)], &[&[a, o]]);
        h.now = 10 * US;
        let d = h.call(|pol, ctx| {
            pol.yield_vcpu(ctx, VcpuId(r as u32), YieldReason::PauseLoop);
            pol.do_schedule(ctx, PcpuId(0))
        });
        (d.next.map(|v| v.idx()), d.slice, ids(&h.policy.pcpus[0].runq), h.policy.vcpus[r].yielding)
    }

    #[test]
    fn yield_rule_of_each_version() {
        let (r, a, o) = (0, 1, 2);
        per_version(&[Xen::V3_3, Xen::V4_4, Xen::V4_18], after_yield, |xen| match xen {
            // No yield operation: re-queued at the tail of UNDER, ahead of the OVER vCPU; no
            // ratelimit, so `a` runs at once.
            Xen::V3_3 => (Some(a), Some(DEFAULT_TSLICE), vec![r, o], false),
            // The ratelimit binds a yielder: it keeps the pCPU for a whole ratelimit, flagged.
            Xen::V4_4 | Xen::V4_7 => (Some(r), Some(MS), vec![a, o], true),
            // The yielder skips the ratelimit and waits behind the OVER vCPU, still flagged.
            Xen::V4_18 => (Some(a), Some(DEFAULT_TSLICE), vec![o, r], true),
        });
        // 4.4 and 4.7: when the ratelimit ends the flag puts it behind `o`, then is cleared.
        for xen in [Xen::V4_4, Xen::V4_7] {
            let mut h = hand_set(xen, 1, 3, &[o], &[Some(r)], &[&[a, o]]);
            h.now = 10 * US;
            h.call(|pol, ctx| {
                pol.yield_vcpu(ctx, VcpuId(r as u32), YieldReason::PauseLoop);
                pol.do_schedule(ctx, PcpuId(0))
            });
            h.now += MS;
            let d = h.call(|pol, ctx| pol.do_schedule(ctx, PcpuId(0)));
            assert_eq!(d.next, Some(VcpuId(a as u32)), "Xen {xen}");
            assert_eq!(ids(&h.policy.pcpus[0].runq), vec![o, r], "Xen {xen}");
            assert!(!h.policy.vcpus[r].yielding, "Xen {xen}: a queued yielder is not flagged");
        }
    }

    /// Ratelimit: `r` has run 300 us on the one pCPU when the halted `w` wakes (a BOOST). Who
    /// runs after the reschedule the wake asked for, and for how long.
    fn after_boosted_wake(xen: Xen) -> (Option<usize>, Option<Nanos>) {
        let (r, w) = (0, 1);
        let mut h = hand_set(xen, 1, 2, &[], &[Some(r)], &[&[]]);
        h.now = 300 * US;
        h.vcpus[w].state = VcpuState::Runnable;
        h.call(|pol, ctx| pol.wake(ctx, VcpuId(w as u32), None));
        assert_eq!(h.policy.vcpus[w].pri, PRI_BOOST, "Xen {xen}");
        assert_eq!(h.events.pop().map(|(_, e)| e), Some(Ev::Resched(0)), "Xen {xen}: the wake tickles the pCPU");
        let d = h.call(|pol, ctx| pol.do_schedule(ctx, PcpuId(0)));
        (d.next.map(|v| v.idx()), d.slice)
    }

    #[test]
    fn ratelimit_rule_of_each_version() {
        let (r, w) = (0, 1);
        per_version(&[Xen::V3_3, Xen::V4_4, Xen::V4_18], after_boosted_wake, |xen| match xen {
            // No ratelimit: the BOOST preempts at once.
            Xen::V3_3 => (Some(w), Some(DEFAULT_TSLICE)),
            // A whole ratelimit more (`tslice = MICROSECS(prv->ratelimit_us)`).
            Xen::V4_4 | Xen::V4_7 => (Some(r), Some(MS)),
            // What is left of it (`prv->ratelimit - runtime`).
            Xen::V4_18 => (Some(r), Some(700 * US)),
        });
    }

    /// Stealing: pCPU 1 idles; pCPU 0 runs x0 with y0 waiting, pCPU 3 runs x3 with y3 waiting,
    /// and on pCPU 2 y2 (which has run 2 ms) yields to the waiting x2. Which vCPU pCPU 1 steals.
    fn stolen(xen: Xen) -> Option<usize> {
        let (x0, y0, y2, x2, x3, y3) = (0, 1, 2, 3, 4, 5);
        let mut h = hand_set(xen, 4, 6, &[], &[Some(x0), None, Some(y2), Some(x3)], &[&[y0], &[], &[x2], &[y3]]);
        h.now = 2 * MS;
        let d = h.call(|pol, ctx| {
            pol.yield_vcpu(ctx, VcpuId(y2 as u32), YieldReason::PauseLoop);
            pol.do_schedule(ctx, PcpuId(2))
        });
        assert_eq!(d.next, Some(VcpuId(x2 as u32)), "Xen {xen}");
        assert_eq!(h.policy.vcpus[y2].yielding, xen == Xen::V4_18, "Xen {xen}: the waiting yielder's flag");
        h.call(|pol, ctx| pol.do_schedule(ctx, PcpuId(1))).next.map(|v| v.idx())
    }

    #[test]
    fn steal_rule_of_each_version() {
        let (y0, y2, y3) = (1, 2, 5);
        per_version(&[Xen::V3_3, Xen::V4_4, Xen::V4_18], stolen, |xen| match xen {
            // From the thief's neighbour round the host: pCPU 2's waiting yielder.
            Xen::V3_3 => Some(y2),
            // The node's first busy pCPU: pCPU 0.
            Xen::V4_4 | Xen::V4_7 => Some(y0),
            // From the balance bias (pCPU 0) on: pCPU 2's yielder is skipped, pCPU 3's taken.
            Xen::V4_18 => Some(y3),
        });
    }

    /// BOOST on a move and on the first wake: the priority of a vCPU the tick flagged for
    /// migration once it is woken on its new pCPU, and of a vCPU just inserted.
    fn boosts(xen: Xen) -> (Pri, Pri) {
        let mut h = hand_set(xen, 2, 1, &[], &[Some(0), None], &[&[], &[]]);
        h.policy.vcpus[0].migrate_pending = true;
        h.now = 5 * MS;
        h.call(|pol, ctx| pol.do_schedule(ctx, PcpuId(0)));
        let moved = h.policy.vcpus[0].pri;
        let mut h = FakeHost::new(Topology::flat(2), &[(1, 256)], cfg_for(xen));
        h.adjust(0);
        h.call(|pol, ctx| pol.insert_vcpu(ctx, VcpuId(0)));
        (moved, h.policy.vcpus[0].pri)
    }

    #[test]
    fn migrating_and_insert_boost_rules_tell_4_4_from_4_7() {
        per_version(&[Xen::V4_4, Xen::V4_7, Xen::V4_18], boosts, |xen| match xen {
            // No MIGRATING flag: vcpu_migrate's wake is a BOOST; so is the unpause after creation.
            Xen::V3_3 | Xen::V4_4 => (PRI_BOOST, PRI_BOOST),
            // MIGRATING (4.7), but csched_vcpu_insert does not pick a pCPU yet (4.8).
            Xen::V4_7 => (PRI_UNDER, PRI_BOOST),
            Xen::V4_18 => (PRI_UNDER, PRI_UNDER),
        });
    }

    /// The priority of a parked vCPU when `csched_acct` unparks it.
    fn unparked(xen: Xen) -> Pri {
        let mut h = hand_set(xen, 1, 2, &[], &[Some(0)], &[&[]]);
        let svc = &mut h.policy.vcpus[1];
        (svc.awake, svc.parked) = (true, true);
        h.vcpus[1].state = VcpuState::Runnable;
        h.call(|pol, ctx| pol.unpark(ctx, VcpuId(1)));
        assert_eq!(h.policy.vcpus[1].queued_on, Some(PcpuId(0)), "Xen {xen}");
        h.policy.vcpus[1].pri
    }

    #[test]
    fn unpark_boosts_in_4_4_and_4_7_only() {
        per_version(&[Xen::V3_3, Xen::V4_4], unparked, |xen| match xen {
            Xen::V4_4 | Xen::V4_7 => PRI_BOOST,
            Xen::V3_3 | Xen::V4_18 => PRI_UNDER,
        });
    }

    /// Accounting: VM A (4 vCPUs) and VM B (1 vCPU), equal weights, all active, on 2 pCPUs (600
    /// credits a period); A's first vCPU holds 250 credits. After one `csched_acct`: A's second
    /// vCPU's credit, B's, A's first vCPU's and whether it is still active; then what a tick
    /// charges a vCPU that ran 1 ms.
    fn accounting(xen: Xen) -> (i64, i64, i64, bool, i64) {
        let mut h = FakeHost::new(Topology::flat(2), &[(4, 256), (1, 256)], cfg_for(xen));
        h.adjust(0);
        h.adjust(1);
        h.call(|pol, ctx| pol.fit_to(&ctx.host));
        for v in 0..5 {
            let mut svc = CreditVcpu::new(VmId(u32::from(v == 4)), PcpuId(0));
            svc.awake = true;
            h.policy.vcpus.push(svc);
        }
        for v in 0..5 {
            h.policy.acct_start(VcpuId(v));
        }
        h.policy.vcpus[0].credit = 250;
        h.call(|pol, ctx| pol.acct(ctx));
        let p = &h.policy;
        let acct = (p.vcpus[1].credit, p.vcpus[4].credit, p.vcpus[0].credit, p.vcpus[0].active);
        // The tick: vCPU 1 runs on pCPU 0 from 0 to 1 ms.
        let mut h = hand_set(xen, 1, 1, &[], &[Some(0)], &[&[]]);
        h.now = MS;
        h.call(|pol, ctx| pol.unit_acct(ctx, VcpuId(0), 0));
        (acct.0, acct.1, acct.2, acct.3, -h.policy.vcpus[0].credit)
    }

    #[test]
    fn accounting_rules_of_3_3_and_4_x() {
        per_version(&[Xen::V3_3, Xen::V4_4], accounting, |xen| match xen {
            // By domain weight: A and B 300 each; B's single vCPU gets its peak, A's four 75;
            // A's first passes +300 and is zeroed; the tick takes 100 credits.
            Xen::V3_3 => (75, 300, 0, false, 100),
            // By weight x active vCPUs: 120 each; (250 + 120) / 2 = 185 retired; 1 ms costs 10.
            _ => (120, 120, 185, false, 10),
        });
    }

    /// Tickling: pCPU 0 runs an UNDER vCPU, pCPUs 1-3 idle; a halted vCPU wakes (BOOST) on
    /// pCPU 0. Which pCPUs are told to reschedule.
    fn tickled(xen: Xen) -> Vec<usize> {
        let mut h = hand_set(xen, 4, 2, &[], &[Some(0), None, None, None], &[&[], &[], &[], &[]]);
        h.vcpus[1].state = VcpuState::Runnable;
        h.call(|pol, ctx| pol.wake(ctx, VcpuId(1), None));
        std::iter::from_fn(|| h.events.pop())
            .filter_map(|(_, e)| match e {
                Ev::Resched(p) => Some(p),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn tickle_rule_of_3_3_and_4_x() {
        per_version(&[Xen::V3_3, Xen::V4_4], tickled, |xen| match xen {
            // The pCPU (BOOST beats UNDER) and every idler.
            Xen::V3_3 => vec![0, 1, 2, 3],
            // One idler, rotating (`opt_tickle_one_idle`), and not the busy pCPU.
            _ => vec![1],
        });
    }

    /// Placement: 2 cores x 2 threads; the vCPU waits on pCPU 1, whose sibling 0 idles, and the
    /// other core (pCPUs 2, 3) idles. Where `csched_cpu_pick` puts it.
    fn picked(xen: Xen) -> usize {
        let mut h = FakeHost::new(Topology::new(4, 1, 1, 2).unwrap(), &[(1, 256)], cfg_for(xen));
        h.call(|pol, ctx| pol.fit_to(&ctx.host));
        let mut svc = CreditVcpu::new(VmId(0), PcpuId(1));
        svc.awake = true;
        h.policy.vcpus.push(svc);
        h.policy.idlers = idler_mask(&[true, false, true, true]);
        h.policy.pcpus[1].runq.push(VcpuId(0));
        h.call(|pol, ctx| pol.cpu_pick(&ctx.host, VcpuId(0), false))
    }

    #[test]
    fn cpu_pick_rule_of_3_3_and_4_x() {
        per_version(&[Xen::V3_3, Xen::V4_4], picked, |xen| match xen {
            // Its own pCPU counts as idle, so its core has as many idlers as the other: it stays.
            Xen::V3_3 => 1,
            // Its busy pCPU does not count; the fully idle core wins (thread 2, the first idler).
            _ => 2,
        });
    }

    /// Kick cur away: pCPU 0 runs `cur` (UNDER, hard affinity `cur_hard`); pCPU 1 idles; a vCPU
    /// pinned to pCPU 0 wakes there as a BOOST. Whether `cur` is flagged to move.
    fn kicked(xen: Xen, cur_hard: &'static [u32]) -> bool {
        let mut h = FakeHost::new(Topology::flat(2), &[(2, 256)], cfg_for(xen)).with_affinity(&[(cur_hard, &[]), (&[0], &[])]);
        h.adjust(0);
        h.call(|pol, ctx| pol.fit_to(&ctx.host));
        for _ in 0..2 {
            let mut svc = CreditVcpu::new(VmId(0), PcpuId(0));
            svc.awake = true;
            h.policy.vcpus.push(svc);
        }
        h.policy.pcpus[0].curr = Some(VcpuId(0));
        h.policy.idlers = idler_mask(&[false, true]);
        h.policy.set_pri(VcpuId(1), PRI_BOOST);
        h.policy.runq_insert(VcpuId(1));
        h.call(|pol, ctx| pol.runq_tickle(ctx, VcpuId(1)));
        h.policy.vcpus[0].migrate_pending
    }

    /// The tickle rotor: pCPU 0 runs an UNDER vCPU; pCPUs 1 and 3 idle; a vCPU allowed on pCPUs
    /// 0, 2 and 3 wakes on pCPU 0. Which idler is tickled (the rotor starts after pCPU 3).
    fn rotor_tickled(xen: Xen) -> Vec<usize> {
        let mut h = FakeHost::new(Topology::flat(4), &[(2, 256)], cfg_for(xen)).with_affinity(&[(&[], &[]), (&[0, 2, 3], &[])]);
        h.adjust(0);
        h.call(|pol, ctx| pol.fit_to(&ctx.host));
        for _ in 0..2 {
            let mut svc = CreditVcpu::new(VmId(0), PcpuId(0));
            svc.awake = true;
            h.policy.vcpus.push(svc);
        }
        h.policy.pcpus[0].curr = Some(VcpuId(0));
        h.policy.idlers = idler_mask(&[false, true, false, true]);
        h.policy.runq_insert(VcpuId(1));
        h.call(|pol, ctx| pol.runq_tickle(ctx, VcpuId(1)));
        std::iter::from_fn(|| h.events.pop())
            .filter_map(|(_, e)| match e {
                Ev::Resched(p) => Some(p),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn tickle_rotor_of_4_7_cycles_every_idler() {
        per_version(&[Xen::V4_7, Xen::V4_18], rotor_tickled, |xen| match xen {
            // 3.3: the pCPU is busy, so every idler the vCPU may use.
            Xen::V3_3 => vec![3],
            // 4.7: the rotor's next idler, pCPU 1, although the vCPU may not run there.
            Xen::V4_7 => vec![1],
            // 4.4 (its idle mask is the suitable idlers) and 4.8 on: the next suitable idler.
            Xen::V4_4 | Xen::V4_18 => vec![3],
        });
    }

    /// The node-affinity step: 4 pCPUs in 2 NUMA nodes (0-1, 2-3); VM 0 (vCPUs 0-1) has the
    /// explicit node affinity {1}, VM 1 (vCPUs 2-3) none. Where `csched_cpu_pick` puts VM 0's
    /// vCPU from idle pCPU 0; which idler a wake of VM 0's vCPU on busy pCPU 0 tickles; and which
    /// of VM 1's then VM 0's vCPUs, queued in that order on busy pCPU 0, idle pCPU 3 steals.
    fn node_affine(xen: Xen) -> (usize, Vec<usize>, Option<usize>) {
        use crate::hypervisor::node_affinity::NodeAffinity;
        let topo = Topology::new(4, 1, 2, 1).unwrap();
        let mut h = FakeHost::new(topo.clone(), &[(2, 256), (2, 256)], cfg_for(xen)).with_affinity(&[(&[] as &[u32], &[] as &[u32]); 4]);
        h.vms[0].node_affinity =
            NodeAffinity::set(&topo, &[1], [&crate::hardware::cpumask::CpuMask::full(4)], &crate::hardware::cpumask::CpuMask::full(4));
        h.adjust(0);
        h.adjust(1);
        h.call(|pol, ctx| pol.fit_to(&ctx.host));
        for v in 0..4u32 {
            let mut svc = CreditVcpu::new(VmId(v / 2), PcpuId(0));
            svc.awake = true;
            h.policy.vcpus.push(svc);
        }
        // Placement from an idle host.
        h.policy.idlers = crate::hardware::cpumask::CpuMask::full(4);
        let picked = h.call(|pol, ctx| pol.cpu_pick(&ctx.host, VcpuId(0), false));
        // Tickle: pCPU 0 runs VM 1's vCPU 3; vCPU 0 wakes there.
        h.policy.pcpus[0].curr = Some(VcpuId(3));
        h.policy.idlers = idler_mask(&[false, true, true, true]);
        h.policy.runq_insert(VcpuId(0));
        h.call(|pol, ctx| pol.runq_tickle(ctx, VcpuId(0)));
        let tickled = std::iter::from_fn(|| h.events.pop())
            .filter_map(|(_, e)| match e {
                Ev::Resched(p) => Some(p),
                _ => None,
            })
            .collect();
        // Steal: the queue of pCPU 0 is VM 1's vCPU 2, then VM 0's vCPU 0.
        h.policy.runq_remove(VcpuId(0));
        h.policy.runq_insert(VcpuId(2));
        h.policy.runq_insert(VcpuId(0));
        h.policy.idlers = idler_mask(&[false, true, true, true]);
        let stolen = h.call(|pol, ctx| pol.load_balance(&ctx.host, 3, super::super::PRI_IDLE)).map(|v| v.idx());
        (picked, tickled, stolen)
    }

    #[test]
    fn node_affinity_step_is_4_4_s() {
        per_version(&[Xen::V4_4, Xen::V4_7], node_affine, |xen| match xen {
            // Node-affine first: an idler of node 1 (the idle bias starts at the last pCPU, so 2);
            // of node 1's idlers the rotor's next (after 3: 2); VM 0's vCPU, queued second.
            Xen::V4_4 => (2, vec![2], Some(0)),
            // No node step: the vCPU stays on its idle pCPU; the rotor's next idler of all (1);
            // the first queued vCPU. 3.3 tickles every idler.
            Xen::V4_7 | Xen::V4_18 => (0, vec![1], Some(2)),
            Xen::V3_3 => (0, vec![1, 2, 3], Some(2)),
        });
    }

    #[test]
    fn kick_cur_away_rule_tells_4_4_4_7_and_4_18_apart() {
        let outcome = |xen| (kicked(xen, &[0, 1]), kicked(xen, &[0]));
        per_version(&[Xen::V4_4, Xen::V4_7, Xen::V4_18], outcome, |xen| match xen {
            // Always.
            Xen::V4_4 => (true, true),
            // Only if an idler suits cur.
            Xen::V4_7 => (true, false),
            // 3.3 has no such branch; 4.13 on tests new's affinity, so never.
            Xen::V3_3 | Xen::V4_18 => (false, false),
        });
    }
}
