//! Tests of the wake-up path (`task_waking_fair`, `enqueue_entity`'s `place_entity`,
//! `check_preempt_wakeup`) against what Linux 3.2's kernel/sched_fair.c does with a sleeper's
//! vruntime.

use super::{absolute_vruntime, relative_vruntime, CfsKind};
use crate::hypervisor::policies::test_host::FakeHost;
use crate::hypervisor::policies::PolicyKind;
use crate::ids::{PcpuId, VcpuId};
use crate::params::{ParamValue, Params};
use crate::time::{Nanos, MS};

const RUNNER: VcpuId = VcpuId(0);
const SLEEPER: VcpuId = VcpuId(1);

/// One pCPU, one 2-vCPU VM at 8 pCPUs' 24 ms latency and a wakeup granularity of `gran`:
/// SLEEPER halts, RUNNER runs alone for `asleep`, then SLEEPER wakes. Returns who runs on the
/// pCPU right after the wake-up.
fn after_sleeping(asleep: Nanos, gran: Nanos) -> VcpuId {
    let mut params = Params::defaults(&CfsKind.params());
    params.set("scale_by_cpus", ParamValue::Bool(false));
    params.set("latency", ParamValue::Duration(24 * MS));
    params.set("wakeup_granularity", ParamValue::Duration(gran));
    let mut h = FakeHost::new(1, &[(2, 256)], None, |shape| CfsKind.build(&params, shape));
    h.advance_until_running(PcpuId(0), SLEEPER);
    h.halt(SLEEPER);
    let t0 = h.now;
    h.advance_to(t0 + asleep);
    assert_eq!(h.pcpus[0].current, Some(RUNNER));
    h.wake(SLEEPER);
    h.pcpus[0].current.expect("someone runs")
}

#[test]
fn a_long_sleeper_keeps_half_a_latency_of_lead_and_preempts_its_sibling() {
    // RUNNER's 30 ms alone moved the group's min_vruntime 30 ms past SLEEPER: place_entity
    // keeps 12 ms of that lead (GENTLE_FAIR_SLEEPERS: sched_latency / 2), more than a 4 ms
    // wakeup granularity (3.2's on 8 pCPUs), so check_preempt_wakeup preempts RUNNER at once.
    assert_eq!(after_sleeping(30 * MS, 4 * MS), SLEEPER);
    // The lead is 12 ms, no more: it beats an 11 ms granularity and not a 13 ms one.
    assert_eq!(after_sleeping(30 * MS, 11 * MS), SLEEPER);
    assert_eq!(after_sleeping(30 * MS, 13 * MS), RUNNER);
}

#[test]
fn relative_vruntimes_keep_their_sign_as_linux_u64_arithmetic_does() {
    // Behind the run queue by 5 ms: -5 ms relative, back 5 ms behind the next queue's minimum.
    let rel = relative_vruntime(100 * MS, 105 * MS);
    assert_eq!(rel as i64, -5 * MS as i64);
    assert_eq!(absolute_vruntime(rel, 40 * MS), 35 * MS);
    // Ahead stays ahead.
    assert_eq!(absolute_vruntime(relative_vruntime(107 * MS, 105 * MS), 40 * MS), 42 * MS);
    // A lead longer than the new queue's whole virtual time starts at 0 (the model's
    // min_vruntime starts at 0 where Linux's starts at -2^20 ns).
    assert_eq!(absolute_vruntime(rel, 3 * MS), 0);
}
