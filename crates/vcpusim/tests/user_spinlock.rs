//! User-space spinlocks as program ops (`{spin_lock = k}`, `{spin_unlock = k}`, `[vm.program]
//! spinlocks`): a lock word in user memory taken with an atomic and waited for in a PAUSE loop in
//! user mode. Waiters spin as user time, never as kernel spin; the holder stays preemptible by the
//! guest and the host; and pause-loop exiting sees the spin only where the CPU's rules say so
//! (`[host.ple] cpl`: Intel exits at CPL 0 only, AMD's pause filter at any CPL).

mod common;
use common::run_sim_checked;
use vcpusim::api::load_scenario;

/// A 4-vCPU VM of four threads contending for user spinlock 0 (`kind`: held 50 us, then 10 us
/// outside), beside a 2-vCPU hog, on 4 pCPUs of a credit host with PLE on and `cpl` as given:
/// the VM's vCPUs mostly run together, and holders and waiters are preempted.
fn contended(kind: &str, cpl: &str) -> String {
    format!(
        "[host]\npcpus = 4\npolicy = \"credit\"\n[host.ple]\nenabled = true\ncpl = \"{cpl}\"\n\
         [[vm]]\nname = \"p\"\nvcpus = 4\nworkload = \"program\"\n\
         [vm.program]\nspinlocks = [\"{kind}\"]\n\
         threads = [[{{loop = \"forever\", body = [{{spin_lock = 0}}, {{compute = \"50us\"}}, {{spin_unlock = 0}}, \
         {{compute = \"10us\"}}, {{progress = true}}]}}]]\n\
         [[vm]]\nname = \"hog\"\nvcpus = 2\nworkload = \"cpu-bound\"\n\
         [run]\nduration = \"300ms\"\n"
    )
}

#[test]
fn waiters_spin_in_user_mode_and_intel_ple_never_exits_on_them() {
    for kind in ["ticket", "tas"] {
        // Check mode holds mutual exclusion and the waiter queues after every event.
        let sim = run_sim_checked(&contended(kind, "0"), 300);
        let s = &sim.vms()[0].stats;
        assert!(s.user_spin_ns > 10_000_000, "{kind}: waiters spun only {} ns in user mode", s.user_spin_ns);
        assert_eq!(s.spin_ns, 0, "{kind}: a user spinlock's wait is not kernel spin");
        assert_eq!(s.ple_exits, 0, "{kind}: Intel's PLE counts PAUSE at CPL 0 only");
        let g = &sim.guests()[0];
        assert!(g.stats.progress > 100, "{kind}: {} critical sections", g.stats.progress);
        let waits = g.stats.spin_wait_by_class(sim.guests().locks(), &g.objects.user_spinlocks);
        assert!(waits["user-spinlock-0"].count > 0, "{kind}: no contended acquisition recorded");
        assert_eq!(g.stats.spin_wait.count, 0, "{kind}: the kernel spinlock histogram is of kernel locks");
    }
}

#[test]
fn amds_pause_filter_exits_on_user_mode_spins() {
    let sim = run_sim_checked(&contended("ticket", "any"), 300);
    let s = &sim.vms()[0].stats;
    assert!(s.ple_exits > 0, "the pause filter counts PAUSE at any CPL: no exit in {} ns of user spin", s.user_spin_ns);
}

#[test]
fn a_ticket_lock_passes_in_ticket_order_and_tas_to_a_running_waiter() {
    // Under preemption a ticket lock hands the lock to the next ticket even when its vCPU is not
    // running (lock-waiter preemption); a test-and-set lock goes to a waiter that runs. Both
    // complete critical sections; the ticket lock spends more of its time spinning.
    let spin_share = |kind: &str| {
        let sim = run_sim_checked(&contended(kind, "0"), 300);
        let s = &sim.vms()[0].stats;
        s.user_spin_ns as f64 / s.cpu_ns() as f64
    };
    let (ticket, tas) = (spin_share("ticket"), spin_share("tas"));
    assert!(ticket > tas, "ticket spin share {ticket:.3} not above test-and-set's {tas:.3}");
}

#[test]
fn bad_user_spinlock_programs_name_the_key() {
    let program = |spinlocks: &str, ops: &str| {
        format!(
            "[host]\npcpus = 2\n[[vm]]\nname = \"p\"\nvcpus = 2\nworkload = \"program\"\n\
             [vm.program]\nspinlocks = {spinlocks}\nthreads = [[{ops}, {{compute = \"1ms\"}}]]\n"
        )
    };
    for (spinlocks, ops, expect) in [
        ("[\"mcs\"]", "{spin_lock = 0}, {spin_unlock = 0}", "spinlocks[0]: expected the kind of a user-space spinlock"),
        ("[\"ticket\"]", "{spin_lock = 1}, {spin_unlock = 1}", "spin_lock: expected a user spinlock index from 0 to 0"),
        ("[\"ticket\"]", "{spin_unlock = 0}", "threads[0][0].spin_unlock: releases user spinlock 0"),
        (
            "[\"tas\"]",
            "{spin_lock = 0}, {spin_lock = 0}",
            "threads[0][1].spin_lock: takes user spinlock 0, which this thread already holds",
        ),
        ("[]", "{spin_lock = 0}", "declares no user spinlock"),
    ] {
        let e = load_scenario(&program(spinlocks, ops), "u.toml").expect_err(ops).to_string();
        assert!(e.contains("u.toml") && e.contains(expect), "{spinlocks} {ops}: {e}");
    }
}

#[test]
fn the_ple_cpl_key_takes_only_its_two_values() {
    let text = contended("ticket", "3");
    let e = load_scenario(&text, "c.toml").expect_err("cpl 3").to_string();
    assert!(e.contains("c.toml") && e.contains("host.ple.cpl") && e.contains("0, any"), "{e}");
}
