//! Work at a speed (`hardware/speed.rs`, `sim/speed_change.rs`): a speed change in the middle of a
//! compute op re-times its end exactly as the arithmetic says, to the nanosecond.
//!
//! One VM, one vCPU, one pCPU; the thread loops over `compute 1ms; progress`. The Sim is driven
//! directly: run to the moment of a change, set the test model's speed, call
//! `Sim::speed_changed`, and then check that the op has not ended 1 ns before the expected time
//! and has ended at it (the VM's progress counter goes 0 -> 1 exactly then).

use std::cell::Cell;
use std::rc::Rc;
use vcpusim::api::load_scenario;
use vcpusim::hardware::speed::{Speed, SPEED_ONE};
use vcpusim::hypervisor::policy::HostView;
use vcpusim::ids::{PcpuId, VcpuId};
use vcpusim::sim::speed_change::SpeedModel;
use vcpusim::sim::state::{Activity, Sim, TimeKind};

/// start_skew 0: the pCPU comes online at t = 0; the default context switch (3 µs) comes first,
/// charged exactly (`variation = 0`: the test times it).
const SCENARIO: &str = r#"
[host]
pcpus = 1
policy = "credit"
start_skew = "0ns"
[host.costs]
variation = 0.0

[[vm]]
name = "solo"
vcpus = 1
workload = "program"

[vm.program]
threads = [[{loop = "forever", body = [{compute = "1ms"}, {progress = true}]}]]

[run]
duration = "1s"
"#;

/// The compute op's work: 1 ms at speed 1.0.
const WORK: u64 = 1_000_000;
/// `[host.costs] context_switch` default, paid (as work) before the first op.
const CONTEXT_SWITCH: u64 = 3_000;

/// A speed model whose one answer the test sets.
struct Dial(Rc<Cell<u32>>);

impl SpeedModel for Dial {
    fn name(&self) -> &'static str {
        "test-dial"
    }
    fn speed(&self, _host: &HostView, _v: VcpuId, _p: PcpuId) -> Speed {
        Speed::from_ppm(self.0.get())
    }
}

struct Run {
    sim: Sim,
    dial: Rc<Cell<u32>>,
    /// When the compute op started.
    start: u64,
}

/// Build the scenario with the dial at `initial_ppm`, run until the compute op has started.
fn start(initial_ppm: u32) -> Run {
    let sc = load_scenario(SCENARIO, "<speed test>").expect("the scenario loads");
    let mut sim = Sim::build(&sc, sc.run.seed, false, true).expect("builds");
    let dial = Rc::new(Cell::new(initial_ppm));
    sim.set_speed_model(Box::new(Dial(dial.clone())));
    sim.start();
    // The context switch is work too: at the initial speed it takes ceil(3 µs / s).
    let start = Speed::from_ppm(initial_ppm).time_for(CONTEXT_SWITCH);
    sim.run_until(start, None).expect("runs");
    let vc = &sim.vcpus()[0];
    assert_eq!((vc.activity, vc.time_kind, vc.seg_start), (Activity::Thread, TimeKind::User, start), "compute starts at {start}");
    Run { sim, dial, start }
}

impl Run {
    /// At `start + offset`, the speed becomes `ppm`.
    fn change_at(&mut self, offset: u64, ppm: u32) -> &mut Self {
        self.sim.run_until(self.start + offset, None).expect("runs");
        assert_eq!(self.sim.now(), self.start + offset);
        assert_eq!(self.progress(), 0, "the op ended before the change at +{offset}");
        self.dial.set(ppm);
        self.sim.speed_changed(PcpuId(0));
        self
    }

    fn progress(&self) -> u64 {
        self.sim.guests()[0].stats.progress
    }

    /// The op ends exactly at `start + offset`.
    fn ends_at(&mut self, offset: u64) {
        let end = self.start + offset;
        self.sim.run_until(end - 1, None).expect("runs");
        assert_eq!(self.progress(), 0, "the op ended before start + {offset} ns");
        self.sim.run_until(end, None).expect("runs");
        assert_eq!(self.progress(), 1, "the op did not end at start + {offset} ns");
    }
}

#[test]
fn slow_down_halfway_ends_at_one_and_a_half_ms() {
    // 0.5 ms at 1.0 does half the work; the other 500 000 work-ns at 0.5 take 1 ms.
    start(SPEED_ONE).change_at(500_000, SPEED_ONE / 2).ends_at(1_500_000);
}

#[test]
fn speed_up_halfway_ends_at_three_quarters_of_a_ms() {
    // 500 000 work-ns left at 2.0 take 250 µs.
    start(SPEED_ONE).change_at(500_000, 2 * SPEED_ONE).ends_at(750_000);
}

#[test]
fn non_dividing_speed_rounds_the_end_up() {
    // 500 000 work-ns at 0.333333: 500 000 / 0.333333 = 1 500 001.5 ns -> 1 500 002.
    start(SPEED_ONE).change_at(500_000, 333_333).ends_at(500_000 + 1_500_002);
}

#[test]
fn work_done_rounds_down_across_changes() {
    // Two changes. At +0 the speed becomes 0.3; at +250 001 ns the work done is
    // floor(250 001 × 0.3) = floor(75 000.3) = 75 000 (rounding up would credit 75 001 and end
    // 1 ns sooner), leaving 925 000; at 0.7 that takes ceil(1 321 428.57) = 1 321 429 ns.
    start(SPEED_ONE).change_at(0, 300_000).change_at(250_001, 700_000).ends_at(250_001 + 1_321_429);
}

#[test]
fn an_unchanged_speed_moves_nothing() {
    start(SPEED_ONE).change_at(500_000, SPEED_ONE).ends_at(WORK);
}

#[test]
fn the_speed_at_switch_in_scales_overhead_and_compute() {
    // At 0.5 from the start the context switch takes 6 µs (checked by `start`) and the op 2 ms.
    start(SPEED_ONE / 2).ends_at(2 * WORK);
}

#[test]
fn default_model_is_constant_and_nominal() {
    let sc = load_scenario(SCENARIO, "<speed test>").expect("the scenario loads");
    let mut sim = Sim::build(&sc, sc.run.seed, false, true).expect("builds");
    assert!(sim.speed_constant());
    sim.start();
    sim.run_until(CONTEXT_SWITCH + WORK - 1, None).expect("runs");
    assert_eq!(sim.guests()[0].stats.progress, 0);
    sim.run_until(CONTEXT_SWITCH + WORK, None).expect("runs");
    assert_eq!(sim.guests()[0].stats.progress, 1);
    assert_eq!(sim.vcpus()[0].speed, Speed::ONE);
}
