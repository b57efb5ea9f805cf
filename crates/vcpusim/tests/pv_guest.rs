//! The Linux 6.x guest's paravirtual features on KVM (guest side:
//! guest/pv_guest.rs, guest/pv_spinlock.rs, sim/line.rs): each feature on against off on a
//! scenario showing the pathology it targets, each off when its key is off, and the loader's
//! checks (KVM-only keys on a Xen host, the kernel's dependencies).

mod common;

use vcpusim::api::load_scenario;
use vcpusim::guest::config::{KernelPreset, PvFeatures};
use vcpusim::guest::thread::{FutexKey, ThreadState};
use vcpusim::ids::VcpuId;
use vcpusim::sim::state::Sim;
use vcpusim::time::{MS, US};
use vcpusim::vmexit::Hypervisor;
use vcpusim::workload::program::SpinlockKind;

fn sim(text: &str, until_ms: u64) -> Sim {
    common::run_sim_checked(text, until_ms)
}

fn load_error(text: &str) -> String {
    match load_scenario(text, "f.toml") {
        Ok(_) => panic!("loaded, but should not:\n{text}"),
        Err(e) => e.to_string(),
    }
}

/// Two threads on two vCPUs of a VM alone on two pCPUs of a KVM (cfs) host: thread 0 holds
/// kernel lock 0 for 2 ms at a time, thread 1 wants it briefly between computing.
fn holder_and_waiter(guest: &str) -> String {
    common::holder_and_waiter("\"cfs\"", &format!("kernel = \"linux-6.x\"\npv_spin = \"50us\"\n{guest}"))
}

#[test]
fn kvm_pv_qspinlock_waiters_halt_after_the_threshold_and_the_kick_wakes_them() {
    let pv = sim(&holder_and_waiter(""), 40);
    assert!(pv.guests()[0].config.kvm_pv_spinlock(), "linux-6.x on cfs takes KVM's wait and kick");
    let (stats, guest) = (&pv.vms()[0].stats, &pv.guests()[0]);
    // Each of thread 1's ~2 ms waits outlasts its 50 us spin: kvm_wait halts the vCPU (a
    // blocking wait, counted with the poll blocks), and the unlock's KVM_HC_KICK_CPU wakes it.
    assert!(guest.stats.pv_polls >= 5, "{} waits", guest.stats.pv_polls);
    assert!(stats.poll_blocks >= 5, "{} halts in kvm_wait", stats.poll_blocks);
    assert_eq!(guest.stats.pv_kicks, stats.kicks, "every kick the guest queued was carried out");
    assert!(stats.kicks + 1 >= stats.poll_blocks, "{} kicks for {} blocks", stats.kicks, stats.poll_blocks);
    // Spinning stops at the threshold: 50 us per wait and per return from a halt.
    let (waits, polls) = (guest.stats.spin_wait.count, guest.stats.pv_polls);
    assert!(stats.spin_ns <= (waits + polls + 1) * 50 * US, "{} ns spun over {waits} waits and {polls} halts", stats.spin_ns);
    assert!(guest.stats.progress > 20, "{}", guest.stats.progress);

    // Off: the 6.x guest without PV spinlocks takes virt_spin_lock's test-and-set lock and
    // spins through every hold; nothing halts in a lock wait and nobody kicks.
    let off = sim(&holder_and_waiter("pv_spinlock = false"), 40);
    assert_eq!(off.guests()[0].config.spinlock, SpinlockKind::TestAndSet);
    assert_eq!(off.vms()[0].stats.poll_blocks + off.vms()[0].stats.kicks + off.guests()[0].stats.pv_polls, 0);
    assert!(off.vms()[0].stats.spin_ns > 10 * stats.spin_ns, "virt_spin_lock {} ns vs pv {} ns", off.vms()[0].stats.spin_ns, stats.spin_ns);
}

/// `common::shootdowns_overcommitted` under cfs (KVM) with the linux-6.x guest and `guest`'s
/// keys on top.
fn shootdowns_overcommitted(guest: &str, pcpus: u32) -> String {
    common::shootdowns_overcommitted(pcpus, "\"cfs\"", &format!("kernel = \"linux-6.x\"\n{guest}"))
}

#[test]
fn pv_tlb_flush_never_waits_for_a_preempted_vcpu() {
    let on = sim(&shootdowns_overcommitted("pv_sched_yield = false", 2), 300);
    let off = sim(&shootdowns_overcommitted("pv_sched_yield = false\npv_tlb_flush = false", 2), 300);
    let (g_on, g_off) = (&on.guests()[0].stats, &off.guests()[0].stats);
    eprintln!(
        "on: {} shootdowns, {} deferred, tlb wait {} us, max latency {} us; off: {} shootdowns, tlb wait {} us, max latency {} us",
        g_on.tlb_shootdowns,
        g_on.pv_tlb_deferred,
        on.vms()[0].stats.tlb_wait_ns / US,
        g_on.tlb_shootdown.max / US,
        g_off.tlb_shootdowns,
        off.vms()[0].stats.tlb_wait_ns / US,
        g_off.tlb_shootdown.max / US
    );
    assert!(g_on.pv_tlb_deferred > 0, "targets were preempted and left out");
    assert_eq!(g_off.pv_tlb_deferred, 0, "off when the key is off");
    // Off, a shootdown waits for a preempted target until cfs runs it again (milliseconds); on,
    // only running targets are IPIed, and they acknowledge within microseconds.
    assert!(g_off.tlb_shootdown.max > MS, "off: the longest wait is {} us", g_off.tlb_shootdown.max / US);
    // (A shootdown's latency also counts the initiator's own preemptions, so its maximum is
    // no measure of this; the time spent spinning for acknowledgements is.)
    let wait_per = |s: &Sim| s.vms()[0].stats.tlb_wait_ns / s.guests()[0].stats.tlb_shootdowns;
    assert!(wait_per(&on) * 20 < wait_per(&off), "spinning per shootdown: on {} ns vs off {} ns", wait_per(&on), wait_per(&off));
    assert!(on.vms()[0].stats.tlb_wait_ns * 5 < off.vms()[0].stats.tlb_wait_ns);
    assert!(g_on.tlb_shootdowns > 2 * g_off.tlb_shootdowns, "no waiting: more munmaps done");
    // The host flushed every deferred vCPU at its VM entry: none that runs still has the flag.
    for (v, info) in on.vinfo().iter().enumerate() {
        if info.state == vcpusim::hypervisor::policy::VcpuState::Running {
            assert_eq!(on.pv()[v].flush_tlb_pages, 0, "vCPU {v} runs with KVM_VCPU_FLUSH_TLB still set");
        }
    }
}

#[test]
fn pv_sched_yield_shortens_ipi_waits_with_a_directed_yield() {
    // Three pCPUs for six vCPUs: a shootdown usually finds one preempted target, which the
    // directed yield runs in the initiator's stead.
    let on = sim(&shootdowns_overcommitted("pv_tlb_flush = false", 3), 300);
    let off = sim(&shootdowns_overcommitted("pv_tlb_flush = false\npv_sched_yield = false", 3), 300);
    let (g_on, g_off) = (&on.guests()[0].stats, &off.guests()[0].stats);
    eprintln!(
        "on: {} shootdowns, {} PV yields, {} IPI yields, mean latency {} us, tlb wait {} us; off: {} shootdowns, mean latency {} us, tlb wait {} us",
        g_on.tlb_shootdowns, g_on.pv_sched_yields, on.vms()[0].stats.yields_ipi, g_on.tlb_shootdown.mean() / 1000.0, on.vms()[0].stats.tlb_wait_ns / US,
        g_off.tlb_shootdowns, g_off.tlb_shootdown.mean() / 1000.0, off.vms()[0].stats.tlb_wait_ns / US
    );
    assert!(g_on.pv_sched_yields > 0, "shootdowns found preempted targets");
    assert_eq!(on.vms()[0].stats.yields_ipi, g_on.pv_sched_yields, "each KVM_HC_SCHED_YIELD is a yield the host took");
    assert!(g_on.pv_sched_yields <= g_on.tlb_shootdowns, "at most one yield per send");
    assert_eq!(off.vms()[0].stats.yields_ipi + g_off.pv_sched_yields, 0, "off when the key is off");
    // The directed yield runs the target sooner: shorter shootdowns, less spinning for each,
    // more of them done.
    assert!(
        g_on.tlb_shootdown.mean() * 1.2 < g_off.tlb_shootdown.mean(),
        "mean latency on {} vs off {}",
        g_on.tlb_shootdown.mean(),
        g_off.tlb_shootdown.mean()
    );
    let wait_per = |s: &Sim| s.vms()[0].stats.tlb_wait_ns / s.guests()[0].stats.tlb_shootdowns;
    assert!(wait_per(&on) * 5 < wait_per(&off) * 4, "spinning per shootdown: on {} ns vs off {} ns", wait_per(&on), wait_per(&off));
    assert!(g_on.tlb_shootdowns > g_off.tlb_shootdowns);
}

#[test]
fn pv_ipi_sends_a_shootdown_with_one_exit() {
    // No overcommit (6 pCPUs for 6 vCPUs): every shootdown IPIs the three other vCPUs, which
    // costs three APIC-write exits without PV IPIs and one KVM_HC_SEND_IPI with them.
    let base = "pv_tlb_flush = false\npv_sched_yield = false";
    let on = sim(&shootdowns_overcommitted(base, 6), 300);
    let off = sim(&shootdowns_overcommitted(&format!("{base}\npv_ipi = false"), 6), 300);
    let per = |s: &Sim| s.vms()[0].stats.overhead_ns as f64 / s.guests()[0].stats.tlb_shootdowns as f64;
    let ipi_send = on.vm_costs()[0].ipi_send as f64;
    eprintln!("overhead per shootdown: on {} ns, off {} ns, ipi_send {ipi_send}", per(&on), per(&off));
    // Two exits fewer per shootdown (of three targets): the rest of the overhead is the same.
    let saved = per(&off) - per(&on);
    assert!((saved - 2.0 * ipi_send).abs() < 0.2 * ipi_send, "saved {saved} ns per shootdown, expected ~{}", 2.0 * ipi_send);
}

#[test]
fn vcpu_is_preempted_keeps_a_wakeup_off_a_preempted_idle_vcpu() {
    // available_idle_cpu: a woken thread whose previous vCPU is idle but preempted goes to an
    // idle vCPU that runs instead; without vcpu_is_preempted it goes back to the previous one.
    for (vip, expected) in [(true, 1u32), (false, 0u32)] {
        let text = format!(
            "[host]\npcpus = 2\npolicy = \"cfs\"\n[guest]\nkernel = \"linux-6.x\"\nvcpu_is_preempted = {vip}\npv_sched_yield = {vip}\n\
             [[vm]]\nname = \"a\"\nvcpus = 2\nthreads = 1\nworkload = \"program\"\n\
             [vm.program]\nthreads = [[{{loop = \"forever\", body = [{{compute = \"1ms\"}}]}}]]\n\
             [run]\nduration = \"10ms\"\n"
        );
        let sc = load_scenario(&text, "<t>").unwrap();
        let mut s = Sim::build(&sc, 1, false, false).unwrap();
        let t = s.guests()[0].threads[0];
        let prev = s.guests().threads()[t.idx()].vcpu;
        assert_eq!(prev, VcpuId(0));
        // Put the thread to sleep by hand (as futex_wait does) and mark its vCPU preempted.
        let (g, threads, pv) = s.drive_guest(0);
        g.vcpus[0].current = None;
        g.vcpus[0].runqueue.retain(|u| *u != t);
        threads[t.idx()].state = ThreadState::Blocked(FutexKey::Socket);
        g.blocked_threads += 1;
        g.run_masks = vcpusim::guest::scheduler::RunMasks::of(&g.vcpus);
        pv[0].preempted = true;
        g.wake_thread(threads, pv, 0, VcpuId(1), t);
        assert_eq!(s.guests().threads()[t.idx()].vcpu, VcpuId(expected), "vcpu_is_preempted = {vip}");
    }
}

#[test]
fn the_linux_6_preset_turns_every_feature_on_for_kvm_and_the_kvm_only_ones_off_for_xen() {
    let kvm = load_scenario(&holder_and_waiter(""), "<t>").unwrap();
    let g = &kvm.vms[0].guest;
    assert_eq!(g.pv, PvFeatures::ALL);
    assert_eq!(g.hypervisor, Hypervisor::Kvm);
    assert_eq!(g.spinlock, SpinlockKind::PvQueued);
    assert_eq!(g.tlb_targets, vcpusim::guest::config::TlbTargets::SkipLazy);
    assert_eq!(g.futex_wake_ipi, vcpusim::guest::config::FutexWakeIpi::AfterUnlock);
    assert!(!g.call_function_yield);
    let xen = load_scenario(&holder_and_waiter("").replace("policy = \"cfs\"", "policy = \"credit\""), "<t>").unwrap();
    let g = &xen.vms[0].guest;
    assert_eq!(g.hypervisor, Hypervisor::Xen);
    assert!(g.pv.pv_spinlock && g.pv.vcpu_is_preempted && g.pv.steal_time);
    assert!(!g.pv.pv_tlb_flush && !g.pv.pv_sched_yield && !g.pv.pv_ipi);
    assert!(!g.kvm_pv_spinlock(), "Xen's SCHEDOP_poll path");
    // The old presets have no PV feature.
    for old in [KernelPreset::Linux32, KernelPreset::Linux44] {
        assert_eq!(old.apply(&Default::default()).pv, PvFeatures::default());
    }
}

#[test]
fn the_linux_6_guest_on_xen_uses_the_xen_pv_spinlock() {
    let text = holder_and_waiter("").replace("policy = \"cfs\"", "policy = \"credit\"\nparams = { xen = \"4.7\" }");
    let s = sim(&text, 40);
    // SCHEDOP_poll blocks and EVTCHNOP_send kicks; no KVM flag is ever set.
    assert!(s.vms()[0].stats.poll_blocks >= 5 && s.vms()[0].stats.kicks >= 5);
    assert!(s.vinfo().iter().all(|v| !v.pv_unhalted));
}

#[test]
fn the_loader_refuses_kvm_only_features_on_xen_and_missing_dependencies() {
    let credit = |guest: &str| holder_and_waiter(guest).replace("policy = \"cfs\"", "policy = \"credit\"");
    let e = load_error(&credit("pv_tlb_flush = true"));
    assert!(e.contains("pv_tlb_flush is a KVM paravirtual interface") && e.contains("policy = \"credit\""), "{e}");
    assert!(e.starts_with("f.toml: "), "{e}");
    let e = load_error(&credit("pv_ipi = true"));
    assert!(e.contains("pv_ipi is a KVM paravirtual interface"), "{e}");
    // Written false on Xen is fine.
    load_scenario(&credit("pv_sched_yield = false"), "f.toml").unwrap();
    let e = load_error(&holder_and_waiter("steal_time = false"));
    assert!(e.contains("vcpu_is_preempted = true needs steal_time = true"), "{e}");
    let e = load_error(&holder_and_waiter("steal_time = false\nvcpu_is_preempted = false"));
    assert!(e.contains("pv_tlb_flush = true needs steal_time = true"), "{e}");
    let e = load_error(&holder_and_waiter("vcpu_is_preempted = false"));
    assert!(e.contains("pv_sched_yield = true needs vcpu_is_preempted = true"), "{e}");
    let e = load_error(&holder_and_waiter("spinlock = \"ticket\""));
    assert!(e.contains("guest.pv_spinlock") && e.contains("spinlock = \"ticket\""), "{e}");
    let e = load_error(&holder_and_waiter("pv_ipi = 1"));
    assert!(e.contains("guest.pv_ipi: expected true or false"), "{e}");
    // The features are settable per VM.
    let per_vm = holder_and_waiter("").replace("[run]", "[vm.guest]\npv_ipi = false\n[run]");
    let sc = load_scenario(&per_vm, "<t>").unwrap();
    assert!(!sc.vms[0].guest.pv.pv_ipi && sc.vms[0].guest.pv.pv_tlb_flush);
}

#[test]
fn the_linux_6_guest_holds_the_invariants_under_every_policy() {
    // Every registered policy (cfs: the KVM features; the others: Xen's PV spinlock), workloads
    // with futex bucket locks, TLB shootdowns and barriers, overcommitted, in check mode: no
    // vCPU sleeps in a PV wait with its lock handed over and no kick coming, and the rest of
    // the engine's invariants.
    for policy in ["cfs", "credit", "gang", "hybrid"] {
        for workload in ["mutex", "tlb", "barrier"] {
            let text = common::workload_beside_hog(policy, workload, "kernel = \"linux-6.x\"\npv_spin = \"20us\"");
            let s = sim(&text, 200);
            assert!(s.guests()[0].stats.progress > 0, "{policy}/{workload}: no progress");
        }
    }
}
