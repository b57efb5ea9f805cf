//! Uhlig et al. VM'04 delayed preemption (`overlay = "delay-preempt"`,
//! sim/mechanisms/preemption_overlay/delay_preempt.rs): the guest marks held kernel spinlocks in its PV area, the host
//! defers a preemption of a marked vCPU up to `[host.delay_preempt] max_delay`, and the guest
//! gives the pCPU back after its last critical section. Runs in check mode (every hold within
//! its bound after every event: sim/mechanisms/preemption_overlay/ `check_overlay`).

mod common;
use common::run_sim_checked;
use vcpusim::api::load_scenario;
use vcpusim::time::{MS, US};

/// A 4-vCPU VM running `workload` whose vCPUs 0 and 1 share pCPUs with pinned CPU hogs.
/// `workload = "locked"` is a program whose threads spend 80% of their time in a system call
/// under a kernel spinlock of their own, so that many involuntary preemptions land inside a
/// critical section.
fn scenario(host_extra: &str, workload: &str) -> String {
    let vm = match workload {
        "locked" => {
            let lock = |t: usize| t;
            let threads: Vec<String> = (0..4)
                .map(|t| format!("[{{loop = \"forever\", body = [{{compute = \"100us\"}}, {{syscall = \"400us\", lock = {}}}, {{progress = true}}]}}]", lock(t)))
                .collect();
            format!(
                "workload = \"program\"\nthreads = 4\n[vm.program]\nkernel_locks = [\"k0\", \"k1\", \"k2\", \"k3\"]\nthreads = [{}]\n",
                threads.join(", ")
            )
        }
        w => format!("workload = \"{w}\"\n"),
    };
    format!(
        "[host]\npcpus = 4\npolicy = \"credit\"\nparams = {{ xen = \"4.4\" }}\n{host_extra}\n\
         [[vm]]\nname = \"par\"\nvcpus = 4\n{vm}\
         [[vm]]\nname = \"noise0\"\nvcpus = 1\ncpus = [\"0\"]\nworkload = \"cpu-bound\"\n\
         [[vm]]\nname = \"noise1\"\nvcpus = 1\ncpus = [\"1\"]\nworkload = \"cpu-bound\"\n\
         [run]\nduration = \"400ms\"\n"
    )
}

#[test]
fn marked_preemptions_are_deferred_never_beyond_the_bound_and_given_back_early() {
    let sim = run_sim_checked(&scenario("overlay = \"delay-preempt\"", "locked"), 400);
    let s = sim.mechanisms().preemption_overlay.as_ref().expect("overlay built").stats;
    eprintln!("{s:?}");
    assert!(s.held > 0, "preemptions of lock-holding vCPUs were deferred: {s:?}");
    assert_eq!(s.notices, 0, "delayed preemption sends no notice: {s:?}");
    assert!(s.acks > 0, "the guest gave the pCPU back after its critical section: {s:?}");
    assert!(s.delay_max_ns <= MS, "never beyond max_delay: {s:?}");
    assert!(s.held < s.asked, "unmarked vCPUs are preempted at once: {s:?}");
}

#[test]
fn a_tiny_bound_cuts_deferrals_at_the_bound() {
    let text = scenario("overlay = \"delay-preempt\"\n[host.delay_preempt]\nmax_delay = \"1us\"", "locked");
    let sim = run_sim_checked(&text, 400);
    let s = sim.mechanisms().preemption_overlay.as_ref().expect("overlay built").stats;
    eprintln!("{s:?}");
    assert!(s.held > 0, "{s:?}");
    assert!(s.delay_max_ns <= US, "never beyond max_delay: {s:?}");
}

#[test]
fn a_vm_without_kernel_locks_is_never_deferred() {
    let sim = run_sim_checked(&scenario("overlay = \"delay-preempt\"", "cpu-bound"), 200);
    let s = sim.mechanisms().preemption_overlay.as_ref().expect("overlay built").stats;
    assert!(s.asked > 0, "{s:?}");
    assert_eq!(s.held, 0, "{s:?}");
}

#[test]
fn deferral_reduces_lock_holder_preemptions_on_the_same_seed() {
    let lhp = |host: &str| {
        let sim = run_sim_checked(&scenario(host, "locked"), 400);
        sim.vms()[0].stats.lhp_count()
    };
    let (vanilla, delayed) = (lhp(""), lhp("overlay = \"delay-preempt\""));
    eprintln!("lhp vanilla {vanilla} delayed {delayed}");
    assert!(vanilla > 5 && delayed < vanilla, "vanilla {vanilla}, delay-preempt {delayed}");
}

#[test]
fn delay_preempt_keys_are_checked() {
    for (text, want) in [
        ("[host.delay_preempt]\nmax_delay = \"1ms\"", "add overlay = \"delay-preempt\""),
        ("overlay = \"delay-preempt\"\n[host.delay_preempt]\nmax_delay = \"0ms\"", "max_delay"),
        ("overlay = \"delay-preempt\"\n[host.delay_preempt]\nbound = \"1ms\"", "bound"),
        ("overlay = \"irs\"\n[host.delay_preempt]\nmax_delay = \"1ms\"", "but overlay = \"irs\""),
    ] {
        let err = load_scenario(&scenario(text, "ab"), "s.toml").err().unwrap_or_else(|| panic!("{text} loads")).to_string();
        assert!(err.contains(want), "{text}: {err}");
    }
}
