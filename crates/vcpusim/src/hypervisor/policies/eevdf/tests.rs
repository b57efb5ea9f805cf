//! EEVDF against hand-computed schedules. Unless a test says otherwise: one pCPU, so the base
//! slice is 0.75 ms (factor 1 + ilog2(1) = 1), HZ = 250 (a 4 ms tick) and the pCPU's first tick
//! at 2 ms (ticks are staggered by tick × (p + 1) / (pCPUs + 1)). With a 4 ms tick longer than
//! the slice, the running vCPU's request always runs out between two ticks, so every tick
//! renews its deadline and reschedules (6.6 has no HRTICK by default).

use super::rq::{CfsRq, Features, Place, Se};
use super::EevdfKind;
use crate::hypervisor::policies::test_host::FakeHost;
use crate::hypervisor::policies::PolicyKind;
use crate::hypervisor::policy::{VcpuState, YieldReason};
use crate::ids::{PcpuId, VcpuId};
use crate::params::{ParamValue, Params};
use crate::time::{Nanos, MS, US};

const P0: PcpuId = PcpuId(0);
const A: VcpuId = VcpuId(0);
const B: VcpuId = VcpuId(1);

fn host(npcpus: u32, vms: &[(u32, u32)], set: &[(&str, ParamValue)]) -> FakeHost {
    let mut params = Params::defaults(&EevdfKind.params());
    for (k, v) in set {
        params.set(k, v.clone());
    }
    let h = FakeHost::new(npcpus, vms, None, |shape| EevdfKind.build(&params, shape));
    h.check();
    h
}

fn run_time(h: &FakeHost, v: VcpuId) -> Nanos {
    let i = &h.vcpus[v.idx()];
    i.run_time + if i.state == VcpuState::Running { h.now - i.run_start } else { 0 }
}

/// Advance in 100 µs steps (so every tick and its reschedule happen), checking as we go.
fn advance(h: &mut FakeHost, to: Nanos) {
    let mut t = h.now;
    while t < to {
        t = (t + 100 * US).min(to);
        h.advance_to(t);
        h.check();
    }
}

#[test]
fn equal_weight_busy_vcpus_alternate_at_each_tick_and_get_equal_shares() {
    // A runs from 0 (B, placed at V = 0 with the same deadline, does not preempt it). At the
    // 2 ms tick A's v = 2 passed its deadline: V = (2 + 0) / 2 = 1, A is no longer eligible and
    // B runs; at 6 ms B's v = 4, V = 3, A (v = 2) runs; and so on, 4 ms each.
    for vms in [&[(2, 256)][..], &[(1, 256), (1, 256)][..]] {
        let mut h = host(1, vms, &[]);
        assert_eq!(h.pcpus[0].current, Some(A));
        advance(&mut h, 2 * MS - 100 * US);
        assert_eq!(h.pcpus[0].current, Some(A));
        advance(&mut h, 2 * MS);
        assert_eq!(h.pcpus[0].current, Some(B), "{vms:?}: B runs from the first tick");
        advance(&mut h, 6 * MS);
        assert_eq!(h.pcpus[0].current, Some(A));
        advance(&mut h, 402 * MS);
        assert_eq!((run_time(&h, A), run_time(&h, B)), (202 * MS, 200 * MS), "{vms:?}");
    }
}

#[test]
fn vm_weights_one_to_two_give_cpu_one_to_two() {
    // Shares 1024 and 2048, so group entities of weight 1024 and 2048 (each VM's one vCPU is
    // all of its load). VM 1's 4 ms of run time is 2 ms of its virtual time. From the 2 ms
    // tick on the schedule repeats every 12 ms: VM 1 for 8 ms (at the middle tick V equals
    // both v's and VM 1's deadline is the earlier), VM 0 for 4 ms.
    let mut h = host(1, &[(1, 256), (1, 512)], &[]);
    advance(&mut h, 2 * MS);
    assert_eq!(h.pcpus[0].current, Some(B));
    advance(&mut h, 10 * MS - 100 * US);
    assert_eq!(h.pcpus[0].current, Some(B), "VM 1 keeps the pCPU at the 6 ms tick");
    advance(&mut h, 302 * MS);
    assert_eq!((run_time(&h, A), run_time(&h, B)), (102 * MS, 200 * MS));
}

/// A and B alternate as in the equal-shares test until B runs (2 ms); at 3 ms B halts with
/// v = 1 ms while A's v = 2 ms, so V = 1.5 ms and B's lag is 0.5 ms. A runs alone; at 5 ms
/// (A's v = 4 ms) B wakes.
fn b_sleeps_with_lag(place_lag: bool) -> FakeHost {
    let mut h = host(1, &[(2, 256)], &[("place_lag", ParamValue::Bool(place_lag))]);
    advance(&mut h, 3 * MS);
    assert_eq!(h.pcpus[0].current, Some(B));
    h.halt(B);
    assert_eq!(h.pcpus[0].current, Some(A));
    advance(&mut h, 5 * MS);
    h.wake(B);
    h
}

#[test]
fn a_sleepers_lag_is_preserved_and_its_earlier_deadline_preempts_at_wakeup() {
    // PLACE_LAG: V = 4 (A alone), W = 1024, so B goes to v = 4 − 0.5 × (1024 + 1024) / 1024 = 3
    // with deadline 3.75; V becomes 3.5 (B's lag is 0.5 again) and A (v = 4) is not eligible:
    // pick_eevdf returns B, which preempts.
    let h = b_sleeps_with_lag(true);
    assert_eq!(h.pcpus[0].current, Some(B), "B kept its lag and preempts");
    // Without PLACE_LAG B lands at V = 4 with deadline 4.75, as A's renewed one: A, eligible
    // and `curr`, wins the tie.
    let h = b_sleeps_with_lag(false);
    assert_eq!(h.pcpus[0].current, Some(A));
}

#[test]
fn place_entity_scales_the_saved_lag_by_w_plus_w_over_w() {
    // Two queued entities of weight 1024 at v = 0 and 3000 (V = 1500), and a waking entity of
    // weight 2048 with vlag 600: it lands at V − 600 × (2048 + 2048) / 2048 = 300, and after
    // enqueueing V − v = (0 + 3000 + 2 × 300) / 4 − 300 = 600: the lag is kept.
    let f = Features { place_lag: true, place_deadline_initial: true, run_to_parity: true };
    let mut ses = vec![
        Se { vruntime: 0, weight: 1024, ..Se::default() },
        Se { vruntime: 3000, weight: 1024, ..Se::default() },
        Se { vlag: 600, weight: 2048, ..Se::default() },
    ];
    let mut rq = CfsRq::default();
    rq.account_enqueue(&mut ses, 0);
    rq.account_enqueue(&mut ses, 1);
    assert_eq!(rq.avg_vruntime(&ses), 1500);
    rq.place_entity(&mut ses, 2, Place::Normal, 1000, f);
    assert_eq!(ses[2].vruntime, 300);
    // deadline = v + calc_delta_fair(1000, 2048) = v + 500.
    assert_eq!(ses[2].deadline, 800);
    rq.account_enqueue(&mut ses, 2);
    assert_eq!(rq.avg_vruntime(&ses) - ses[2].vruntime, 600);
    rq.dequeue(&mut ses, 2, 4 * MS);
    assert_eq!(ses[2].vlag, 600, "update_entity_lag saves V − v at dequeue");
    // ENQUEUE_INITIAL with PLACE_DEADLINE_INITIAL: half a slice.
    rq.place_entity(&mut ses, 2, Place::Initial, 1000, f);
    assert_eq!(ses[2].deadline - ses[2].vruntime, 250);
    // The lag is clamped to calc_delta_fair(max(2 × slice, TICK_NSEC)) at dequeue.
    ses[2].vruntime = -100 * MS as i64;
    rq.account_enqueue(&mut ses, 2);
    rq.dequeue(&mut ses, 2, 4 * MS);
    assert_eq!(ses[2].vlag, 2 * MS as i64, "4 ms of real time at weight 2048");
}

#[test]
fn run_to_parity_keeps_an_eligible_curr_against_an_earlier_deadline() {
    // VM 0 (weight 256: group entity 1024) runs from 0 with deadline 0.75 ms. VM 1 (weight
    // 4096: 16384) is inserted at V = 0 with deadline 0 + 0.75 × 1024 / 16384 = 0.047 ms,
    // earlier; VM 0 is still eligible (its v = V = 0).
    let weights = &[(1, 256), (1, 4096)];
    let mut h = host(1, weights, &[]);
    assert_eq!(h.pcpus[0].current, Some(A), "RUN_TO_PARITY: VM 0 keeps its request");
    advance(&mut h, MS);
    assert_eq!(h.pcpus[0].current, Some(A));
    let h = host(1, weights, &[("run_to_parity", ParamValue::Bool(false))]);
    assert_eq!(h.pcpus[0].current, Some(B), "without RUN_TO_PARITY the earlier deadline preempts");
}

#[test]
fn an_ineligible_curr_is_not_protected_by_run_to_parity() {
    // As in the lag test, but B wakes at 3.2 ms, while A (picked at 3 ms with deadline 2.75,
    // renewed at 2 ms) is still within that request (v = 2.2): parity would hold, yet B's lag
    // makes A ineligible.
    let mut h = host(1, &[(2, 256)], &[]);
    advance(&mut h, 3 * MS);
    h.halt(B);
    advance(&mut h, 3 * MS + 200 * US);
    // B: vlag 0.5, V = 2.2 (A alone), B placed at 2.2 − 1.0 = 1.2 with deadline 1.95 < 2.75;
    // V = 1.7 < A's 2.2: A is not eligible, so B preempts despite RUN_TO_PARITY.
    h.wake(B);
    assert_eq!(h.pcpus[0].current, Some(B), "an ineligible curr is not protected");
}

#[test]
fn a_pause_loop_yield_pushes_the_spinners_deadline_but_does_not_boost_an_ineligible_target() {
    // Alternation as in the equal-shares test: at 6 ms A (v = 2, deadline 2.75) is picked, B
    // has v = 4, deadline 4.75. At 6.5 ms A (v = 2.5) takes a pause-loop exit; B was
    // preempted, so KVM tries it: yield_to succeeds (two tasks on the run queue), A's deadline
    // moves to 3.5, but B (v = 4 > V = 3.25) is not eligible and 6.6 ignores the next buddy:
    // A, eligible, is picked again.
    let mut h = host(1, &[(2, 256)], &[]);
    advance(&mut h, 6 * MS + 500 * US);
    assert_eq!(h.pcpus[0].current, Some(A));
    assert!(h.vcpus[B.idx()].preempted);
    h.call(|pol, ctx| pol.yield_vcpu(ctx, A, YieldReason::PauseLoop));
    h.schedule(P0);
    h.check();
    assert_eq!(h.pcpus[0].current, Some(A), "6.6's yield_to does not boost an ineligible target");
    // The pushed deadline shows at the next tick (10 ms): A's v = 6 passed 3.5 and is renewed
    // to 6.75; V = 5, B (v = 4) runs until 14 ms as before.
    advance(&mut h, 10 * MS);
    assert_eq!(h.pcpus[0].current, Some(B));
}

/// Two pCPUs (base slice 0.75 × 2 = 1.5 ms), three vCPUs of one VM (`migration_cost` as
/// given). Fork placement puts A on pCPU 0, B on pCPU 1 and C behind B: B's enqueue raised the
/// group's load, so B's group entity weighs half of A's and pCPU 1 is the less loaded
/// (`select_task_rq_fair`'s least-loaded pick; A's entity is reweighed only at its next update).
/// At 1 ms A halts and pCPU 0 is newly idle while pCPU 1 holds two tasks (`rd->overload`).
fn a_halts_beside_an_overloaded_pcpu(set: &[(&str, ParamValue)]) -> FakeHost {
    let mut h = host(2, &[(3, 256)], set);
    let c = VcpuId(2);
    assert_eq!((h.pcpus[0].current, h.pcpus[1].current), (Some(A), Some(B)));
    assert_eq!(h.vcpus[c.idx()].state, VcpuState::Runnable);
    advance(&mut h, MS);
    h.halt(A);
    h
}

#[test]
fn a_newly_idle_pcpu_pulls_a_queued_vcpu_from_an_overloaded_one() {
    // pCPU 0's avg_idle starts at 2 × migration_cost = 1 ms, more than its MC domain's balance
    // cost (2 pCPUs × 250 ns): newidle_balance runs, the busiest group is pCPU 1 (two tasks),
    // and C, which never ran there, is pulled (migrate_task, imbalance (2 − 0) / 2 = 1).
    let mut h = a_halts_beside_an_overloaded_pcpu(&[]);
    let c = VcpuId(2);
    assert_eq!(h.pcpus[0].current, Some(c), "the newly idle pCPU pulled C");
    // A wakes from no vCPU: its previous pCPU is busy, pCPU 1 too, so it queues on pCPU 0.
    h.wake(A);
    h.check();
    advance(&mut h, 50 * MS);
    for v in [A, B, c] {
        assert!(run_time(&h, v) > 10 * MS, "{v} progresses");
    }
}

#[test]
fn a_newly_idle_pcpu_whose_idle_periods_are_too_short_to_pay_for_a_balance_does_not_pull() {
    // The same with sysctl_sched_migration_cost at 100 ns: pCPU 0's avg_idle starts at
    // 2 × 100 ns = 200 ns, below the MC domain's balance cost (2 pCPUs × 250 ns, capped at
    // 100 + 200 ns = 300 ns), so newidle_balance gives up at once (6.6: `avg_idle <
    // sd->max_newidle_lb_cost`) and C stays queued behind B although pCPU 0 is idle.
    let h = a_halts_beside_an_overloaded_pcpu(&[("migration_cost", ParamValue::Duration(100))]);
    assert_eq!(h.pcpus[0].current, None, "pCPU 0 stays idle");
    assert_eq!(h.vcpus[2].state, VcpuState::Runnable, "C still waits behind B");
}

#[test]
fn churn_keeps_the_books() {
    // Halts and wakes at random on four pCPUs and three VMs; `check` verifies the run queues'
    // sums, counts and the idle mask after every event.
    let mut h = host(4, &[(4, 256), (2, 512), (3, 128)], &[]);
    h.random_halts_and_wakes(3000, 150 * US);
    h.check();
}

/// `keeps_current` (the engine then skips `do_schedule`) holds at every reschedule of
/// a pause-loop storm (`FakeHost::schedule` asserts it), and says true for the spinner's own
/// reschedule after its directed yield.
#[test]
fn keeps_current_is_exact_through_a_pause_loop_storm() {
    let mut h = host(3, &[(4, 256), (1, 256), (1, 256)], &[]);
    h.pause_loop_storm(300, 200 * US);
    assert!(h.kept > 100, "keeps_current said true {} times", h.kept);
}
