//! KVM 6.x on the host, and the host side of the 6.x guest's PV kick. Host halt polling
//! (`[host.halt_poll]`, sim/mechanisms/halt_poll/rule.rs, sim/mechanisms/halt_poll/), the dynamic PLE window's
//! shrink (`[host.ple] shrink`), and 6.6's `kvm_vcpu_on_spin` (`[host.params] kvm = "6.6"`):
//! each cuts the pathology it targets, and each is off when its key is.

mod common;

use common::{run_sim_checked, run_toml};
use vcpusim::api::load_scenario;

/// A ping-pong on two vCPUs pinned to two pCPUs: thread 0 puts a token in queue 0, works 20 us
/// and waits on queue 1; thread 1 answers after 5 us. Each hand-off wakes a thread whose vCPU
/// halted (the 20 us keep thread 0's vCPU busy when thread 1 wakes, so the guest cannot pull
/// thread 1 over instead). `host_extra` goes under `[host]`, `extra` after it (another VM).
fn ping_pong(host_extra: &str, extra: &str) -> String {
    format!(
        "[host]\npcpus = 2\npolicy = \"cfs\"\n{host_extra}\n\
         [host.costs]\nhalt_wake = \"20us\"\n\
         {extra}\
         [[vm]]\nname = \"pp\"\nvcpus = 2\nworkload = \"program\"\ncpus = [\"0\", \"1\"]\n\
         [vm.program]\nqueues = [1, 1]\n\
         threads = [[{{loop = \"forever\", body = [{{compute = \"5us\"}}, {{put = 0}}, {{compute = \"20us\"}}, {{get = 1}}, {{progress = true}}]}}], \
                    [{{loop = \"forever\", body = [{{get = 0}}, {{compute = \"5us\"}}, {{put = 1}}]}}]]\n\
         [run]\nduration = \"50ms\"\nseed = 1\n"
    )
}

const POLL: &str = "[host.halt_poll]\n";

#[test]
fn halt_polling_cuts_wakeups_and_round_trip_time_of_a_ping_pong_and_costs_host_cpu() {
    let off = run_sim_checked(&ping_pong("", ""), 50);
    let on = run_sim_checked(&ping_pong(POLL, ""), 50);
    let (so, sn) = (&off.vms()[0].stats, &on.vms()[0].stats);
    let (po, pn) = (off.guests()[0].stats.progress, on.guests()[0].stats.progress);
    // Off: every hand-off blocks the receiver and wakes it through the host.
    assert_eq!(so.halt_polls + so.halt_poll_successes, 0);
    assert!(so.wakeups > 500, "{} wake-ups", so.wakeups);
    // On: after the poll has grown, the receiver polls and the token arrives within the poll:
    // almost no host wake-ups, no 20 us wake-up path, so more round trips.
    assert!(sn.halt_poll_successes * 10 > sn.halt_polls * 9, "{} of {} polls succeeded", sn.halt_poll_successes, sn.halt_polls);
    assert!(sn.wakeups * 20 < so.wakeups, "wake-ups: {} with polling, {} without", sn.wakeups, so.wakeups);
    assert!(pn * 10 > po * 11, "round trips: {pn} with polling, {po} without");
    // The polling is the host's time on the guest's pCPU: charged as overhead.
    assert!(sn.overhead_ns > so.overhead_ns, "overhead {} ns with polling, {} ns without", sn.overhead_ns, so.overhead_ns);
}

#[test]
fn halt_polling_is_off_without_its_section_and_with_max_0() {
    // Absent, and `max = 0` (halt_poll_ns = 0: kvm_vcpu_halt never polls), give the same
    // bytes: the poll machinery does nothing at all.
    let absent = run_toml(&ping_pong("", ""), true);
    let zero = run_toml(&ping_pong("[host.halt_poll]\nmax = \"0us\"\n", ""), true);
    assert_eq!(absent.vms_csv, zero.vms_csv);
    assert_eq!(absent.metrics_csv, zero.metrics_csv);
    assert_eq!(absent.summary_json, zero.summary_json);
}

#[test]
fn halt_polling_stops_when_another_vcpu_waits_for_the_pcpu() {
    // A CPU-bound VM on both pCPUs: the receiver's pCPU always has another runnable vCPU, so
    // kvm_vcpu_can_poll (single_task_running) fails and no poll catches a wake-up.
    let busy = "[[vm]]\nname = \"busy\"\nvcpus = 2\nworkload = \"cpu-bound\"\ncpus = [\"0\", \"1\"]\n";
    let on = run_sim_checked(&ping_pong(POLL, busy), 50);
    let s = &on.vms()[1].stats;
    assert!(s.halt_polls > 0, "no halt tried to poll");
    assert_eq!(s.halt_poll_successes, 0, "a vCPU polled with another waiting for its pCPU");
    assert!(s.halts >= s.halt_polls, "{} blocks for {} polls: every poll ended in a block", s.halts, s.halt_polls);
}

#[test]
fn halt_polling_is_refused_under_a_xen_policy() {
    let text = ping_pong(POLL, "").replace("policy = \"cfs\"", "policy = \"credit\"");
    let err = load_scenario(&text, "<test>").expect_err("credit has no KVM halt polling").to_string();
    assert!(err.contains("host.halt_poll") && err.contains("not a KVM host scheduler"), "{err}");
}

/// Four threads taking one kernel lock for 20 us between 20 us of work, on a 4-vCPU VM that
/// shares two pCPUs with a CPU-bound VM (lock holders get preempted; waiters spin and take
/// pause-loop exits), under KVM 6.6 with the dynamic PLE window; `ple_extra` goes in
/// `[host.ple]`.
fn lock_storm(ple_extra: &str) -> String {
    format!(
        "[host]\npcpus = 2\npolicy = \"cfs\"\nparams = {{ kvm = \"6.6\" }}\n\
         [host.ple]\ngrow = 2\n{ple_extra}\n\
         [[vm]]\nname = \"locks\"\nvcpus = 4\nworkload = \"program\"\n\
         [vm.program]\nkernel_locks = [\"k\"]\n\
         threads = [[{{loop = \"forever\", body = [{{syscall = \"20us\", lock = 0}}, {{compute = \"20us\"}}, {{progress = true}}]}}]]\n\
         [[vm]]\nname = \"busy\"\nvcpus = 2\nworkload = \"cpu-bound\"\n\
         [run]\nduration = \"300ms\"\nseed = 1\n"
    )
}

#[test]
fn the_ple_window_reset_at_schedule_in_keeps_waiters_from_spinning_on_a_grown_window() {
    // shrink = 0 (KVM's default): each schedule-in resets the window, so a waiter whose lock
    // holder is preempted exits after ~1.5 us and yields to it. shrink = 2 only halves it: the
    // window doubles at each exit and halves at each schedule-in, so it ratchets up towards
    // ple_window_max and waiters spin through whole preemptions of their holder.
    let reset = run_sim_checked(&lock_storm("shrink = 0"), 300);
    let kept = run_sim_checked(&lock_storm("shrink = 2"), 300);
    let (r, k) = (&reset.vms()[0].stats, &kept.vms()[0].stats);
    assert!(r.spin_ns * 3 < k.spin_ns, "spin: {} ns with the reset, {} ns with a halving shrink", r.spin_ns, k.spin_ns);
    assert!(r.ple_exits > 10 * k.ple_exits, "PLE exits: {} with the reset, {} without", r.ple_exits, k.ple_exits);
    let (pr, pk) = (reset.guests()[0].stats.progress, kept.guests()[0].stats.progress);
    assert!(pr > 3 * pk, "progress: {pr} with the reset, {pk} with a halving shrink");
}

#[test]
fn the_ple_shrink_key_left_out_is_the_reset() {
    let absent = run_toml(&lock_storm(""), true);
    let zero = run_toml(&lock_storm("shrink = 0"), true);
    assert_eq!(absent.vms_csv, zero.vms_csv);
    assert_eq!(absent.metrics_csv, zero.metrics_csv);
}

/// A TLB-shootdown-heavy VM (builtin `tlb`) of 4 vCPUs with a CPU-bound VM on two pCPUs, under
/// KVM version `kvm` with the dynamic PLE window.
fn shootdowns(kvm: &str) -> String {
    format!(
        "[host]\npcpus = 2\npolicy = \"cfs\"\nparams = {{ kvm = \"{kvm}\" }}\n[host.ple]\ngrow = 2\n\
         [[vm]]\nname = \"tlb\"\nvcpus = 4\nworkload = \"tlb\"\n\
         [[vm]]\nname = \"busy\"\nvcpus = 2\nworkload = \"cpu-bound\"\n\
         [run]\nduration = \"500ms\"\nseed = 1\n"
    )
}

#[test]
fn kvm_6_6_boosts_woken_shootdown_targets_and_cuts_the_senders_tlb_wait() {
    // A shootdown's sender spins for acknowledgements; a target woken by the IPI waits in a run
    // queue. 3.10-3.16 boost only vCPUs preempted while runnable, so the sender's pause-loop
    // exits cannot help the woken target; 6.6 boosts a ready vCPU with its interrupt pending
    // (d73eb57b80b9 "KVM: Boost vCPUs that are delivering interrupts").
    let old = run_sim_checked(&shootdowns("3.16"), 500);
    let new = run_sim_checked(&shootdowns("6.6"), 500);
    let (o, n) = (&old.vms()[0].stats, &new.vms()[0].stats);
    assert!(n.tlb_wait_ns * 4 < o.tlb_wait_ns * 3, "TLB wait: {} ns under 6.6, {} ns under 3.16", n.tlb_wait_ns, o.tlb_wait_ns);
    let (po, pn) = (old.guests()[0].stats.progress, new.guests()[0].stats.progress);
    assert!(pn * 10 > po * 11, "progress: {pn} under 6.6, {po} under 3.16");
}

/// Run `text` until `ready(sim)` holds (checked every microsecond, at most 20 ms).
fn run_until(text: &str, ready: impl Fn(&vcpusim::sim::state::Sim) -> bool) -> vcpusim::sim::state::Sim {
    let sc = load_scenario(text, "<test>").expect("loads");
    let mut sim = vcpusim::sim::state::Sim::build(&sc, sc.run.seed, false, true).expect("builds");
    sim.start();
    for us in 1..20_000 {
        sim.run_until(us * vcpusim::time::US, None).expect("runs");
        if ready(&sim) {
            return sim;
        }
    }
    panic!("the state was never reached");
}

#[test]
fn a_pv_kick_wakes_a_blocked_vcpu_and_ends_a_halt_poll_without_a_wakeup() {
    use vcpusim::hypervisor::policy::VcpuState;
    use vcpusim::ids::VcpuId;
    let (a, b) = (VcpuId(0), VcpuId(1));
    // Off: vCPU 1 blocked in HLT; the kick (KVM_HC_KICK_CPU) wakes it through the host.
    let mut sim = run_until(&ping_pong("", ""), |s| s.vinfo()[1].state == VcpuState::Halted && s.vinfo()[0].state == VcpuState::Running);
    let wakeups = sim.vms()[0].stats.wakeups;
    sim.kvm_kick_cpu(a, b);
    assert_eq!(sim.vms()[0].stats.wakeups, wakeups + 1);
    assert_ne!(sim.vinfo()[1].state, VcpuState::Halted);
    // Its own pCPU was idle: it runs at once, out of vcpu_block, so pv_unhalted is spent.
    assert_eq!(sim.vinfo()[1].state, VcpuState::Running);
    assert!(!sim.vinfo()[1].pv_unhalted);
    // On, once vCPU 1 polls: the kick ends the poll; no wake-up, it stays on its pCPU.
    let mut sim = run_until(&ping_pong(POLL, ""), |s| {
        s.vms()[0].stats.halt_poll_successes > 3 && s.mechanisms().pollers == [b] && s.vinfo()[0].state == VcpuState::Running
    });
    let (wakeups, successes) = (sim.vms()[0].stats.wakeups, sim.vms()[0].stats.halt_poll_successes);
    sim.kvm_kick_cpu(a, b);
    assert!(sim.mechanisms().pollers.is_empty());
    assert_eq!(sim.vms()[0].stats.wakeups, wakeups);
    assert_eq!(sim.vms()[0].stats.halt_poll_successes, successes + 1);
    assert_eq!(sim.vinfo()[1].state, VcpuState::Running);
}

#[test]
fn the_kvm6_example_runs_in_check_mode_and_halt_polls() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios/examples/kvm6.toml")).unwrap();
    let sim = run_sim_checked(&text, 200);
    let polls: u64 = sim.vms().iter().map(|v| v.stats.halt_polls).sum();
    assert!(polls > 0, "no vCPU halt-polled");
}

#[test]
fn a_vcpu_preempted_while_polling_in_the_idle_loop_was_preempted_in_kernel_mode() {
    use vcpusim::hypervisor::policy::VcpuState;
    // A 6.6 guest with the haltpoll driver on (polls of up to 3 ms, so that the host's tick
    // lands in them), two vCPUs sharing one pCPU with a CPU-bound VM, a thread pinned to each:
    // a vCPU whose thread waits polls in the idle loop (cpuidle-haltpoll's poll state, CPL 0)
    // and is preempted there. kvm_arch_vcpu_put records `preempted_in_kernel` from the CPL, so
    // 6.6's kvm_vcpu_on_spin keeps it as a candidate (it skips only vCPUs preempted in user
    // mode without an interrupt pending): an idle vCPU is boosted as the real host boosts it.
    let text = "[host]\npcpus = 1\npolicy = \"cfs\"\nparams = { kvm = \"6.6\" }\n\
         [guest]\nkernel = \"linux-6.x\"\nhaltpoll = true\nguest_halt_poll_ns = \"3ms\"\nguest_halt_poll_grow_start = \"3ms\"\n\
         [[vm]]\nname = \"pp\"\nvcpus = 2\nworkload = \"program\"\n\
         [vm.program]\nqueues = [1, 1]\ncpus = [\"0\", \"1\"]\n\
         threads = [[{loop = \"forever\", body = [{compute = \"5us\"}, {put = 0}, {compute = \"20us\"}, {get = 1}, {progress = true}]}], \
                    [{loop = \"forever\", body = [{get = 0}, {compute = \"5us\"}, {put = 1}]}]]\n\
         [[vm]]\nname = \"hog\"\nvcpus = 1\nworkload = \"cpu-bound\"\n\
         [run]\nduration = \"50ms\"\nseed = 1\n";
    let idle_and_preempted = |s: &vcpusim::sim::state::Sim| {
        (0..2).find(|&i| {
            let info = &s.vinfo()[i];
            info.state == VcpuState::Runnable && info.preempted && s.guests()[0].vcpus[i].haltpoll.polling_since.is_some()
        })
    };
    let sim = run_until(text, |s| idle_and_preempted(s).is_some());
    let v = idle_and_preempted(&sim).expect("reached");
    assert!(sim.vinfo()[v].preempted_in_kernel, "vCPU {v}, preempted in its idle poll, counts as preempted in user mode");
}
