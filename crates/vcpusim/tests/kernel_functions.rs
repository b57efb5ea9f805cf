//! The guest kernel functions a vCPU publishes (`GuestVcpu::func`, what seed 002's hypervisor
//! reads from the instruction pointer): the real function each kernel path runs in, and what
//! the host does with them (seed 002 Table 3's detector, and yields counted by function).
//! - a program's `syscall` op runs its work in the function it names (`function = "..."`);
//! - a futex wake runs `try_to_wake_up` (`ttwu_do_activate`) and sends its IPI from
//!   `resched_curr`, under the bucket lock in Linux 3.2 and after it from 4.2 (wake_q);
//! - a PV unlock's kick is made from the unlock (`__raw_spin_unlock`);
//! - the detector accelerates a preempted holder in a Table 3 function and not one elsewhere;
//! - vms.csv's `yields_in_*` split the host's yields by the yielder's function.

mod common;

use vcpusim::api::load_scenario;
use vcpusim::sim::state::Sim;
use vcpusim::time::{MS, US};
use vcpusim::vmexit::KernelFn;

fn build(text: &str) -> Sim {
    let sc = load_scenario(text, "<test>").unwrap_or_else(|e| panic!("scenario does not load: {e}\n{text}"));
    let mut sim = Sim::build(&sc, 1, false, true).unwrap();
    sim.start();
    sim
}

/// Thread 0 on vCPU 0 holds mutex 0 for 1 ms while thread 1 on vCPU 1 blocks on it; thread 0's
/// unlock wakes thread 1 (futex_wake). Each thread has a pCPU of its own.
fn mutex_hand_over(kernel: &str) -> String {
    format!(
        "[host]\npcpus = 2\npolicy = \"credit\"\n[host.ple]\nenabled = false\n[guest]\nkernel = \"{kernel}\"\n\
         [[vm]]\nname = \"a\"\nvcpus = 2\nworkload = \"program\"\n\
         [vm.program]\nmutexes = 1\n\
         threads = [[{{lock = 0}}, {{compute = \"1ms\"}}, {{unlock = 0}}, {{compute = \"10ms\"}}], \
                    [{{compute = \"100us\"}}, {{lock = 0}}, {{unlock = 0}}, {{compute = \"10ms\"}}]]\n\
         [run]\nduration = \"5ms\"\n"
    )
}

/// vCPU 0's distinct (function, holds a kernel spinlock) states from 1 ms to 2.5 ms (the vCPUs
/// come online at about 0.5 ms; the unlock is about 1 ms later), sampled every 10 ns.
fn waker_functions(kernel: &str) -> Vec<(KernelFn, bool)> {
    let mut sim = build(&mutex_hand_over(kernel));
    sim.run_until(MS, None).unwrap();
    let mut seen: Vec<(KernelFn, bool)> = Vec::new();
    let mut t = MS;
    while t < 2_500 * US {
        t += 10;
        sim.run_until(t, None).unwrap();
        let guest = &sim.guests()[0];
        let state = (guest.vcpus[0].func, !sim.guests().threads()[0].held.is_empty());
        if seen.last() != Some(&state) {
            seen.push(state);
        }
    }
    seen
}

/// The waker's `futex_wake` -> `ttwu_do_activate` -> `resched_curr` under `kernel`, in that
/// order; whether the wake-up and the IPI ran holding a spinlock (the bucket lock).
fn wake_sequence(kernel: &str) -> (bool, bool) {
    let seen = waker_functions(kernel);
    let at = |f: KernelFn| seen.iter().position(|(g, _)| *g == f).unwrap_or_else(|| panic!("{f:?} never published: {seen:?}"));
    let (wake, ttwu, ipi) = (at(KernelFn::FutexWake), at(KernelFn::TtwuDoActivate), at(KernelFn::ReschedCurr));
    assert!(wake < ttwu && ttwu < ipi, "{seen:?}");
    (seen[ttwu].1, seen[ipi].1)
}

#[test]
fn a_futex_wake_wakes_in_ttwu_and_sends_its_ipi_from_resched_curr_under_the_bucket_lock_in_3_2() {
    // 3.2's wake_futex -> wake_up_state runs inside the bucket lock, the IPI too.
    assert_eq!(wake_sequence("linux-3.2"), (true, true));
}

#[test]
fn a_futex_wake_wakes_after_the_bucket_lock_from_4_2() {
    // mark_wake_futex under the lock; wake_up_q after spin_unlock(&hb->lock).
    assert_eq!(wake_sequence("linux-4.4"), (false, false));
}

/// One VM of two vCPUs on two pCPUs beside a 2-vCPU hog, Xen 4.7 credit with micro-sliced cores
/// (static, one core, lock detection only): thread 0 holds kernel lock 0 for 300 us in `func`,
/// thread 1 spins for it (ticket lock, PLE on).
fn holder_in(func: &str) -> String {
    format!(
        "[host]\npcpus = 3\npolicy = \"credit\"\nparams = {{ xen = \"4.7\" }}\n\
         [host.microsliced]\nmode = \"static\"\ncores = 1\ndetect = [\"ple\"]\n\
         [guest]\nkernel = \"linux-4.4\"\nspinlock = \"ticket\"\n\
         [[vm]]\nname = \"a\"\nvcpus = 2\nworkload = \"program\"\n\
         [vm.program]\nkernel_locks = [\"k\"]\n\
         threads = [[{{loop = \"forever\", body = [{{syscall = \"300us\", lock = 0, function = \"{func}\"}}, {{compute = \"50us\"}}]}}], \
                    [{{loop = \"forever\", body = [{{compute = \"50us\"}}, {{syscall = \"5us\", lock = 0}}, {{progress = true}}]}}]]\n\
         [[vm]]\nname = \"hog\"\nvcpus = 2\nworkload = \"cpu-bound\"\n\
         [run]\nduration = \"400ms\"\n"
    )
}

#[test]
fn the_detector_accelerates_a_preempted_holder_in_a_table_3_function_only() {
    let accelerated = |func: &str| {
        let out = common::run_toml(&holder_in(func), true);
        let t = common::vm_table(&out);
        (common::num(&t, "a", "accelerated_lock_count"), common::num(&t, "a", "yields_in_lock_spin"), common::num(&t, "a", "lhp_count"))
    };
    let (critical, yields, lhp) = accelerated("get_page_from_freelist");
    assert!(lhp > 0.0 && yields > 0.0, "the holder is preempted and the waiter yields: {lhp} LHPs, {yields} yields");
    assert!(critical > 0.0, "a holder preempted in get_page_from_freelist is accelerated: {critical}");
    // The same section in a function outside Table 3: never.
    let (other, yields, lhp) = accelerated("free_pcppages_bulk");
    assert!(lhp > 0.0 && yields > 0.0, "{lhp} LHPs, {yields} yields");
    assert_eq!(other, 0.0, "free_pcppages_bulk is not on the whitelist");
}

#[test]
fn yields_are_counted_by_the_function_the_yielder_was_in() {
    // Lock spinning: every pause-loop exit is in the spinlock's slow path.
    let out = common::run_toml(&holder_in("free_pcppages_bulk"), false);
    let t = common::vm_table(&out);
    let yields = common::num(&t, "a", "yields");
    assert!(yields > 0.0);
    assert_eq!(common::num(&t, "a", "yields_in_lock_spin"), yields);
    assert_eq!(common::num(&t, "a", "yields_in_ipi_wait") + common::num(&t, "a", "yields_in_other"), 0.0);
    // TLB shootdowns to preempted vCPUs under a 4.4 guest: the waits for acknowledgements
    // (csd_lock_wait's PAUSE loop and the SCHEDOP_yield of the call-function send) are IPI waits.
    let text = common::shootdowns_overcommitted(3, "\"credit\"\nparams = { xen = \"4.7\" }", "kernel = \"linux-4.4\"");
    let t = common::vm_table(&common::run_toml(&text, false));
    let (ipi, all) = (common::num(&t, "tlb", "yields_in_ipi_wait"), common::num(&t, "tlb", "yields"));
    assert!(ipi > 0.0, "{ipi} of {all}");
    assert_eq!(ipi + common::num(&t, "tlb", "yields_in_lock_spin") + common::num(&t, "tlb", "yields_in_other"), all);
    // A SCHEDOP_yield of the send is an IPI wait by mechanism and by function alike.
    assert!(ipi >= common::num(&t, "tlb", "yields_ipi"));
}

#[test]
fn a_pv_unlock_kicks_from_raw_spin_unlock() {
    // The PV holder-and-waiter of tests/linux44.rs: the waiter blocks after 50 us; every unlock
    // of a lock with a blocked waiter kicks it. Sample the holder's vCPU while it kicks.
    let text = common::holder_and_waiter("\"credit\"\nparams = { xen = \"4.7\" }", "spinlock = \"pv-qspinlock\"\npv_spin = \"50us\"");
    let mut sim = build(&text);
    let mut kicking = 0;
    let mut t = 0;
    while t < 20 * MS {
        t += 50;
        sim.run_until(t, None).unwrap();
        let th = &sim.guests().threads()[0];
        if matches!(th.steps.front(), Some(vcpusim::guest::thread::Step::Kick { .. })) && th.vcpu.idx() == 0 {
            assert_eq!(sim.guests()[0].vcpus[0].func, KernelFn::RawSpinUnlock, "at {t} ns");
            kicking += 1;
        }
    }
    assert!(kicking > 0, "the holder kicked its waiter");
}

#[test]
fn a_syscall_op_names_its_function_and_bad_names_are_clear_errors() {
    let text = holder_in("release_pages");
    assert!(load_scenario(&text, "<t>").is_ok());
    let err = load_scenario(&holder_in("release_page"), "x.toml").unwrap_err().to_string();
    assert!(
        err.contains("x.toml")
            && err.contains("function")
            && err.contains("release_page")
            && err.contains("did you mean \"release_pages\""),
        "{err}"
    );
    let err = load_scenario(&holder_in("_raw_spin_lock"), "x.toml").unwrap_err().to_string();
    assert!(err.contains("not work a program names"), "{err}");
}
