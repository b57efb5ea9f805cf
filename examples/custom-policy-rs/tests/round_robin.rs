//! The round-robin policy through the public interface only: registration, a checked run, its
//! fairness, and the engine refusing a policy's bad decision.

use vcpusim::api::{self, RunOptions};
use vcpusim::policy::{Decision, HostShape, ParamSpec, Params, PcpuId, Policy, PolicyCtx, PolicyKind, VcpuId, VmId, VmSched, YieldReason};
use vcpusim::SimError;

const MIX: &str = r#"
[host]
pcpus = 2
policy = "round-robin"
params = { slice = "5ms" }
[[vm]]
name = "seq"
count = 4
vcpus = 1
workload = "cpu-bound"
[run]
duration = "400ms"
seed = 3
"#;

fn cpu_times(vms_csv: &str) -> Vec<f64> {
    let mut lines = vms_csv.lines();
    let header: Vec<&str> = lines.next().expect("a header").split(',').collect();
    let cpu = header.iter().position(|h| *h == "cpu_time_ms").expect("cpu_time_ms");
    lines.map(|l| l.split(',').nth(cpu).expect("a cell").parse().expect("a number")).collect()
}

#[test]
fn a_registered_policy_runs_checked_and_shares_the_host_evenly() {
    custom_policy::register();
    custom_policy::register(); // twice is harmless
    assert!(vcpusim::policy::registry_names().contains(&"round-robin".to_string()));
    let scenario = api::load_scenario(MIX, "<test>").expect("the scenario names a registered policy");
    let options = RunOptions { check: true, ..RunOptions::default() };
    let out = api::run(&scenario, &options).expect("the run passes check mode, the policy's own check included");
    let times = cpu_times(&out.vms_csv);
    // Four always-runnable vCPUs on two pCPUs, 5 ms slices over 400 ms: each gets half a pCPU.
    assert_eq!(times.len(), 4);
    for t in &times {
        assert!((t - 200.0).abs() < 10.0, "{times:?}: round robin gives each VM half a pCPU");
    }
}

#[test]
fn parameters_are_checked_against_the_kind() {
    custom_policy::register();
    let bad = MIX.replace("slice = \"5ms\"", "slise = \"5ms\"");
    let e = api::load_scenario(&bad, "<test>").expect_err("an unknown parameter");
    assert!(e.to_string().contains("slise"), "{e}");
}

/// A policy that runs vCPU 0 everywhere: the engine refuses its second decision.
struct Greedy;

impl Policy for Greedy {
    fn name(&self) -> &'static str {
        "greedy"
    }
    fn insert_vcpu(&mut self, ctx: &mut PolicyCtx, _v: VcpuId) {
        for p in ctx.host.pcpu_ids() {
            ctx.reschedule(p);
        }
    }
    fn wake(&mut self, _ctx: &mut PolicyCtx, _v: VcpuId, _waker: Option<PcpuId>) {}
    fn sleep(&mut self, _ctx: &mut PolicyCtx, _v: VcpuId) {}
    fn yield_vcpu(&mut self, _ctx: &mut PolicyCtx, _v: VcpuId, _reason: YieldReason) {}
    fn do_schedule(&mut self, _ctx: &mut PolicyCtx, _p: PcpuId) -> Decision {
        Decision::run(VcpuId(0), None)
    }
    fn adjust(&mut self, _ctx: &mut PolicyCtx, _vm: VmId, _sched: &VmSched) {}
}

struct GreedyKind;

impl PolicyKind for GreedyKind {
    fn name(&self) -> &'static str {
        "greedy"
    }
    fn describe(&self) -> &'static str {
        "runs vCPU 0 on every pCPU (a broken policy)"
    }
    fn params(&self) -> Vec<ParamSpec> {
        Vec::new()
    }
    fn build(&self, _params: &Params, _host: HostShape) -> Box<dyn Policy> {
        Box::new(Greedy)
    }
}

#[test]
fn a_decision_that_runs_a_vcpu_twice_stops_the_run_naming_the_policy_and_the_call() {
    vcpusim::policy::register(&GreedyKind).expect("a new name");
    let text = MIX.replace("round-robin", "greedy").replace("params = { slice = \"5ms\" }", "");
    let scenario = api::load_scenario(&text, "<test>").expect("valid");
    let e = api::run(&scenario, &RunOptions::default()).expect_err("vCPU 0 cannot run on two pCPUs");
    assert!(matches!(e, SimError::Policy { .. }), "{e:?}");
    assert_eq!(e.kind(), "policy");
    let message = e.to_string();
    assert!(
        message.contains("policy greedy") && message.contains("do_schedule(pCPU 1) picked vCPU 0, but it is Running on pCPU 0"),
        "{message}"
    );
}

#[test]
fn another_kind_may_not_take_a_registered_or_built_in_name() {
    struct Impostor;
    impl PolicyKind for Impostor {
        fn name(&self) -> &'static str {
            "credit"
        }
        fn describe(&self) -> &'static str {
            ""
        }
        fn params(&self) -> Vec<ParamSpec> {
            Vec::new()
        }
        fn build(&self, _params: &Params, _host: HostShape) -> Box<dyn Policy> {
            Box::new(Greedy)
        }
    }
    let e = vcpusim::policy::register(&Impostor).expect_err("credit is built in");
    assert!(e.contains("\"credit\" is registered already"), "{e}");
}
