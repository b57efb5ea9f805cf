//! Credit2's mechanisms, each against what credit2.c does: slices from the credit gap, the
//! weight-scaled burn, caps by budget, load balancing between socket run queues, yields; first
//! through the fake host (the test plays the engine), then whole runs through the engine.

use super::*;
use crate::hypervisor::policies::test_host::FakeHost;
use crate::time::MS as MS_NS;

fn credit2(npcpus: u32, vms: &[(u32, u32)]) -> FakeHost {
    FakeHost::new(npcpus, vms, None, |shape| Credit2Kind.build(&Params::defaults(&Credit2Kind.params()), shape))
}

/// Run the fake host's pCPU 0 slice after slice until `until`, as the engine's slice ends would.
fn run_slices(host: &mut FakeHost, until: Nanos) {
    while host.now < until {
        let slice = host.last_slice.expect("a busy pCPU has a slice");
        host.advance_to((host.now + slice).min(until));
        host.schedule(PcpuId(0));
        host.check();
    }
}

#[test]
fn a_slice_runs_the_credit_down_to_the_next_waiters_within_500us_to_10ms() {
    // Alone: no waiter, so the whole 10 ms credit, clamped at CSCHED2_MAX_TIMER.
    let alone = credit2(1, &[(1, 256)]);
    assert_eq!(alone.last_slice, Some(10 * MS_NS));
    // Two units with equal credit: rt_credit 0, so min_time = max(500 us, ratelimit 1 ms).
    let mut two = credit2(1, &[(1, 256), (1, 256)]);
    assert_eq!(two.last_slice, Some(MS_NS));
    let first = two.pcpus[0].current.expect("one runs");
    // After 1 ms the runner has 9 ms and the waiter 10: the waiter runs. Its slice is computed
    // before the runner goes back to the queue (csched2_context_saved comes after
    // csched2_runtime), so the queue is empty and it gets its whole credit, clamped to 10 ms.
    two.advance_to(MS_NS);
    two.schedule(PcpuId(0));
    let second = two.pcpus[0].current.expect("one runs");
    assert_ne!(first, second);
    assert_eq!(two.last_slice, Some(10 * MS_NS));
}

#[test]
fn a_heavier_domain_burns_credit_slower_and_runs_in_proportion_to_its_weight() {
    // t2c_update: running t ns costs t * max_weight / weight, so weight 512 against 256 gets two
    // thirds of one pCPU between credit resets.
    let mut host = credit2(1, &[(1, 512), (1, 256)]);
    run_slices(&mut host, 600 * MS_NS);
    let (heavy, light) = (host.vm_run_time(0) as f64, host.vm_run_time(1) as f64);
    assert!((heavy / light - 2.0).abs() < 0.1, "heavy {heavy} light {light}");
}

#[test]
fn a_yield_hands_the_pcpu_to_a_waiter_even_of_lower_credit() {
    // runq_candidate: with the yield flag the scan does not stop at units of lower credit than
    // the yielder, and ratelimit does not keep it.
    let mut host = credit2(1, &[(1, 256), (1, 256)]);
    let a = host.pcpus[0].current.expect("one runs");
    host.advance_to(MS_NS);
    host.schedule(PcpuId(0));
    let b = host.pcpus[0].current.expect("the other runs");
    assert_ne!(a, b);
    // b has run 200 us (credit 9.8 ms, a has 9 ms): without a yield, ratelimit keeps b.
    host.advance_to(1200 * crate::time::US);
    host.schedule(PcpuId(0));
    assert_eq!(host.pcpus[0].current, Some(b), "ratelimit keeps a unit that ran under 1 ms");
    host.call(|pol, ctx| pol.yield_vcpu(ctx, b, YieldReason::PauseLoop));
    host.schedule(PcpuId(0));
    assert_eq!(host.pcpus[0].current, Some(a), "a yield gives way to a waiter of lower credit");
}

/// `vms.csv`'s `cpu_time_ms` of each VM, by name, from a run of `text`.
fn cpu_times(text: &str) -> Vec<(String, f64)> {
    let scenario = crate::api::load_scenario(text, "credit2-test.toml").expect("valid");
    let out = crate::api::run(&scenario, &crate::api::RunOptions { check: true, ..Default::default() }).expect("runs checked");
    let mut lines = out.vms_csv.lines();
    let header: Vec<&str> = lines.next().expect("header").split(',').collect();
    let (vm, cpu) = (header.iter().position(|h| *h == "vm").unwrap(), header.iter().position(|h| *h == "cpu_time_ms").unwrap());
    lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[vm].to_string(), f[cpu].parse().expect("a number"))
        })
        .collect()
}

#[test]
fn a_cap_holds_a_domain_to_its_percent_of_one_pcpu() {
    // Budget: cap 30 is 3 ms per 10 ms period, shared by the VM's two vCPUs in 1.5 ms quotas.
    let times = cpu_times(
        r#"
[host]
pcpus = 2
policy = "credit2"
[[vm]]
name = "capped"
vcpus = 2
cap = 30
workload = "cpu-bound"
threads = 2
[[vm]]
name = "free"
vcpus = 2
workload = "cpu-bound"
threads = 2
[run]
duration = "1s"
"#,
    );
    let capped = times[0].1;
    assert!((capped - 300.0).abs() < 15.0, "{times:?}: 30% of one pCPU over 1 s");
    assert!(times[1].1 > 1600.0, "{times:?}: the uncapped VM takes the rest");
}

#[test]
fn balance_load_moves_units_to_an_idle_socket_queue() {
    // Soft affinity to socket 0 sends every vCPU to its run queue (csched2_res_pick prefers the
    // soft queue); a tickle looks only inside a unit's own queue, so socket 1 idles until the
    // credit resets of queue 0 run balance_load, which pushes units across until the loads meet.
    let text = r#"
[host]
pcpus = 4
sockets = 2
policy = "credit2"
[[vm]]
name = "seq"
count = 4
vcpus = 1
workload = "cpu-bound"
cpus_soft = "0-1"
[run]
duration = "2s"
"#;
    let total: f64 = cpu_times(text).iter().map(|(_, t)| t).sum();
    assert!(total > 7000.0, "four pCPUs busy for most of 2 s, got {total} ms");
    // With one run queue for the host (`runqueue = "all"`) there is nothing to balance and the
    // same total comes from tickling alone.
    let all: f64 = cpu_times(&text.replace("policy = \"credit2\"", "policy = \"credit2\"\nparams = { runqueue = \"all\" }"))
        .iter()
        .map(|(_, t)| t)
        .sum();
    assert!(all > 7800.0, "{all}");
}

#[test]
fn a_ratelimit_xl_would_refuse_is_a_scenario_error() {
    let text =
        "[host]\npcpus = 1\npolicy = \"credit2\"\nparams = { ratelimit = \"50us\" }\n[[vm]]\nname = \"a\"\nworkload = \"cpu-bound\"\n";
    let e = crate::api::load_scenario(text, "r.toml").expect_err("50 us is below 100 us");
    assert!(e.to_string().contains("ratelimit") && e.to_string().contains("100us to 500ms"), "{e}");
}

#[test]
fn churn_keeps_the_queues_sorted_and_the_loads_counted() {
    let mut host = credit2(4, &[(4, 256), (2, 512), (1, 128)]);
    host.random_halts_and_wakes(400, 700 * crate::time::US);
}
