//! Seed 003 (IRS): the preemption overlay seam (sim/mechanisms/preemption_overlay/rule.rs,
//! sim/mechanisms/preemption_overlay/), the hypervisor's notice with its ack or timeout, the guest's SA receiver and
//! migrator (guest/irs.rs), all in check mode (the hold is within its bound after every event;
//! no thread is lost or duplicated; a thread is off the vCPU when the guest acknowledges).

mod common;
use common::run_sim_checked;
use vcpusim::api::load_scenario;
use vcpusim::sim::state::Sim;
use vcpusim::time::{MS, US};
use vcpusim::SimError;

/// A 4-vCPU blocking parallel VM whose vCPUs share pCPUs with pinned single-vCPU hogs
/// (seed 003 slide 5's layout).
fn scenario(overlay: &str, guest_irs: bool, workload: &str) -> String {
    format!(
        "[host]\npcpus = 4\npolicy = \"credit\"\nparams = {{ xen = \"4.4\" }}\n{overlay}\n\
         [[vm]]\nname = \"par\"\nvcpus = 4\nworkload = \"{workload}\"\n[vm.guest]\nirs = {guest_irs}\n\
         [[vm]]\nname = \"noise0\"\nvcpus = 1\ncpus = [\"0\"]\nworkload = \"cpu-bound\"\n\
         [[vm]]\nname = \"noise1\"\nvcpus = 1\ncpus = [\"1\"]\nworkload = \"cpu-bound\"\n\
         [run]\nduration = \"400ms\"\n"
    )
}

const IRS: &str = "overlay = \"irs\"";

#[test]
fn irs_notifies_moves_threads_and_switches_within_the_notify_delay() {
    let sim = run_sim_checked(&scenario(IRS, true, "parsec.streamcluster"), 400);
    let ov = sim.mechanisms().preemption_overlay.as_ref().expect("overlay built");
    let s = ov.stats;
    eprintln!("{s:?}");
    assert!(s.notices >= 3, "involuntary preemptions of par's vCPUs were notified: {s:?}");
    assert!(s.acks > 0, "the guest acknowledged: {s:?}");
    assert!(s.migrated > 0, "threads were moved to siblings: {s:?}");
    assert!(s.delay_max_ns <= 23 * US, "every switch within the notify delay: {s:?}");
}

/// `scenario` with par's guest running Linux 4.4 (SCHEDOP_yield after call-function IPIs to a
/// runnable target, PV qspinlock's SCHEDOP_poll blocks).
fn scenario_44(overlay: &str, workload: &str) -> String {
    scenario(overlay, true, workload).replace("irs = true", "irs = true\nkernel = \"linux-4.4\"")
}

#[test]
fn halts_yields_and_pause_loop_exits_are_never_notified() {
    // Linux 3.2 ticket spinlocks under interference: pause-loop exits; dedup's TLB shootdowns
    // under Linux 4.4: SCHEDOP_yield; both block in futexes: halts.
    let ple = run_sim_checked(&scenario(IRS, true, "parsec.dedup"), 400);
    let s = ple.mechanisms().preemption_overlay.as_ref().unwrap().stats;
    eprintln!("3.2 dedup {s:?} ple_exits {}", ple.vms()[0].stats.ple_exits);
    assert!(ple.vms()[0].stats.ple_exits > 0, "par took pause-loop exits");
    assert!(s.not_asked_ple > 0, "pause-loop exits that gave the pCPU away were not notified: {s:?}");
    assert!(s.not_asked_halt > 0, "halts that gave the pCPU away were not notified: {s:?}");
    let y = run_sim_checked(&scenario_44(IRS, "parsec.dedup"), 400);
    let s = y.mechanisms().preemption_overlay.as_ref().unwrap().stats;
    eprintln!("4.4 dedup {s:?} yields_ipi {}", y.vms()[0].stats.yields_ipi);
    assert!(y.vms()[0].stats.yields_ipi > 0, "par yielded by SCHEDOP_yield");
    assert!(s.not_asked_yield > 0, "SCHEDOP_yields that gave the pCPU away were not notified: {s:?}");
    for sim in [&ple, &y] {
        let s = sim.mechanisms().preemption_overlay.as_ref().unwrap().stats;
        // Every notice belongs to a hold the overlay granted for an involuntary preemption, and
        // every hold ended by an ack, its deadline, or the vCPU leaving by itself.
        assert_eq!(s.notices, s.held, "{s:?}");
        let open = sim.mechanisms().preemption_overlay.as_ref().unwrap().holds.iter().flatten().count() as u64;
        assert_eq!(s.held, s.acks + s.timeouts + s.dropped + open, "{s:?}");
    }
}

#[test]
fn a_slow_handler_is_cut_at_the_notify_delay_and_an_unregistered_guest_is_never_notified() {
    let slow = scenario(IRS, true, "parsec.streamcluster").replace("irs = true", "irs = true\nirs_handler = \"50us\"");
    let sim = run_sim_checked(&slow, 400);
    let s = sim.mechanisms().preemption_overlay.as_ref().unwrap().stats;
    assert!(s.timeouts > 0 && s.acks == 0, "every hold ended at its deadline: {s:?}");
    assert_eq!(s.delay_max_ns, 23 * US, "the switch came exactly at the notify delay: {s:?}");
    let custom = scenario("overlay = \"irs\"\n[host.irs]\nnotify_delay = \"5us\"", true, "parsec.streamcluster")
        .replace("irs = true", "irs = true\nirs_handler = \"50us\"");
    let s = run_sim_checked(&custom, 200).mechanisms().preemption_overlay.as_ref().unwrap().stats;
    assert!(s.timeouts > 0 && s.delay_max_ns == 5 * US, "[host.irs] notify_delay is the bound: {s:?}");
    let sim = run_sim_checked(&scenario(IRS, false, "parsec.streamcluster"), 400);
    let s = sim.mechanisms().preemption_overlay.as_ref().unwrap().stats;
    assert!(s.asked > 0, "preemptions happened: {s:?}");
    assert_eq!((s.notices, s.held), (0, 0), "a guest without the SA vIRQ is not notified: {s:?}");
}

fn load_error(text: &str) -> String {
    match load_scenario(text, "<irs test>") {
        Err(SimError::Scenario { file, key, message }) => format!("{file}: {key}: {message}"),
        Err(other) => panic!("expected a scenario error, got {other:?}"),
        Ok(_) => panic!("expected {text:?} to be refused"),
    }
}

#[test]
fn bad_overlay_keys_are_refused_with_file_key_and_expectation() {
    let base = scenario(IRS, true, "cpu-bound");
    let e = load_error(&base.replace("overlay = \"irs\"", "overlay = \"irss\""));
    assert!(e.starts_with("<irs test>: host.overlay: unknown overlay \"irss\"; expected one of irs, relaxed-co, delay-preempt"), "{e}");
    // The other overlays load (their own keys: tests/relaxed_co.rs, tests/delay_preempt.rs).
    for other in ["relaxed-co", "delay-preempt"] {
        assert!(load_scenario(&base.replace("overlay = \"irs\"", &format!("overlay = \"{other}\"")), "<irs test>").is_ok(), "{other}");
    }
    let e = load_error(&base.replace("overlay = \"irs\"", "[host.irs]\nmigrator = false"));
    assert!(e.contains("host.irs") && e.contains("add overlay = \"irs\""), "{e}");
    let e = load_error(&base.replace("policy = \"credit\"", "policy = \"cfs\"").replace("params = { xen = \"4.4\" }", ""));
    assert!(e.contains("host.overlay") && e.contains("policy = \"cfs\""), "{e}");
    let e = load_error(&base.replace("overlay = \"irs\"", "overlay = \"irs\"\n[host.irs]\nnotify_delay = \"soon\""));
    assert!(e.contains("host.irs.notify_delay"), "{e}");
    let e = load_error(&base.replace("overlay = \"irs\"", "overlay = \"irs\"\n[host.irs]\nmigratr = true"));
    assert!(e.contains("host.irs") && e.contains("migrator"), "did-you-mean: {e}");
}

/// Run `text` for `ms` in check mode, sampling VM 0's stacking every 100 us; returns (mean
/// stacked vCPUs, VM 0's progress).
fn stacking(text: &str, ms: u64) -> (f64, u64) {
    let sc = load_scenario(text, "<irs test>").expect("the scenario loads");
    let mut sim = Sim::build(&sc, sc.run.seed, false, true).expect("builds");
    sim.start();
    let (mut sum, mut n) = (0u64, 0u64);
    let mut t = 0;
    while t < ms * MS {
        t += 100 * US;
        sim.run_until(t, None).expect("runs in check mode");
        sum += u64::from(sim.stacked_vcpus(0));
        n += 1;
    }
    sim.finish();
    if let Some(ov) = sim.mechanisms().preemption_overlay.as_ref() {
        eprintln!("{:?}", ov.stats);
    }
    (sum as f64 / n as f64, sim.guests()[0].stats.progress)
}

#[test]
fn cpu_stacking_under_vanilla_xen_and_irs_with_and_without_the_migrator() {
    let base = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios/examples/cpu-stacking.toml")).unwrap();
    let irs = |migrator: bool| {
        base.replace(
            "params = { xen = \"4.4\" }",
            &format!("params = {{ xen = \"4.4\" }}\noverlay = \"irs\"\n[host.irs]\nmigrator = {migrator}"),
        )
        .replace("threads = 3", "threads = 3\n[vm.guest]\nirs = true")
    };
    let vanilla = stacking(&base, 1000);
    let without = stacking(&irs(false), 1000);
    let with = stacking(&irs(true), 1000);
    eprintln!("stacked vCPUs (mean), progress: vanilla {vanilla:?}, IRS without migrator {without:?}, IRS with migrator {with:?}");
    assert!(vanilla.0 > 0.05, "vanilla Xen stacks the parallel VM's vCPUs: {vanilla:?}");
    // Slide 18's ordering (IRS without the migrator stacks more than vanilla, with it less) is
    // NOT what this model produces: the blocking VM's vCPUs are rarely preempted while running
    // here (they block first), so few notices are sent, and the handler's moves leave idle
    // vCPUs that halt rather than queue (docs/model.md § seed 003). Measured (seed 1, 1 s):
    // streamcluster 0.351 / 0.351 / 0.349, fluidanimate 0.340 / 0.247 / 0.181, bodytrack
    // 0.542 / 0.378 / 0.425, blackscholes 0.613 / 0.510 / 0.510 (vanilla / without / with).
    // Pinned here so a change of the mechanics shows: IRS without the migrator does not stack
    // more than vanilla.
    assert!(without.0 <= vanilla.0 + 1e-9, "{without:?} vs {vanilla:?}");
}

#[test]
fn metrics_csv_gains_the_overlay_rows_only_in_overlay_runs() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios/examples/irs.toml")).unwrap();
    let sc = load_scenario(&text, "irs.toml").unwrap();
    let opts = |check| vcpusim::output::RunOptions { seed: Some(7), check, ..Default::default() };
    let out = vcpusim::api::run(&sc, &opts(false)).expect("runs");
    let rows: Vec<&str> = out.metrics_csv.lines().filter(|l| l.starts_with("par,")).collect();
    let value = |m: &str| -> f64 {
        let row = rows.iter().find(|l| l.split(',').nth(1) == Some(m)).unwrap_or_else(|| panic!("no {m} row"));
        row.rsplit(',').next().unwrap().parse().unwrap()
    };
    assert!(value("preempt_notices") > 0.0);
    assert_eq!(value("preempt_notices"), value("preempt_acks") + value("preempt_timeouts"));
    assert!(value("notify_to_switch_max_us") <= 23.0);
    assert!(value("irs_migrations") > 0.0);
    let noise_notices = out.metrics_csv.lines().find(|l| l.starts_with("noise0,preempt_notices,")).unwrap();
    assert_eq!(noise_notices, "noise0,preempt_notices,0", "an unregistered guest is not notified");
    let again = vcpusim::api::run(&sc, &opts(true)).expect("runs in check mode");
    assert_eq!(out.metrics_csv, again.metrics_csv, "deterministic, and check mode changes nothing");
    let host_irs = ["overlay", "[host.irs]", "notify_delay", "migrator"];
    let vanilla: Vec<&str> = text.lines().filter(|l| !host_irs.iter().any(|k| l.starts_with(k))).collect();
    let vanilla = load_scenario(&vanilla.join("\n"), "v.toml").unwrap();
    let plain = vcpusim::api::run(&vanilla, &opts(false)).expect("runs");
    assert!(!plain.metrics_csv.contains("preempt_notices"), "no overlay, no overlay rows");
}

/// `text` built (not run) with VM 0's guest emptied, every vCPU with no thread running or
/// queued, for a test to lay out by hand; with VM 0's vCPU ids and thread ids.
fn emptied_guest(text: &str) -> (Sim, Vec<vcpusim::ids::VcpuId>, Vec<vcpusim::ids::ThreadId>) {
    let sc = load_scenario(text, "<irs test>").unwrap();
    let mut sim = Sim::build(&sc, 1, false, true).unwrap();
    let (g, _, _) = sim.drive_guest(0);
    let ids = g.vcpus.iter().map(|v| v.id).collect();
    let threads = g.threads.clone();
    for gv in g.vcpus.iter_mut() {
        gv.runqueue.clear();
        gv.current = None;
    }
    (sim, ids, threads)
}

#[test]
fn the_handler_picks_the_least_waiting_sibling_and_rt_avg_ages_as_linux_3x() {
    let (mut sim, ids, threads) = emptied_guest(&scenario(IRS, true, "parsec.streamcluster"));
    let (g, _, _) = sim.drive_guest(0);
    // vCPU 0 runs thread 0 in user mode and is notified; vCPU 1 runs a thread with one queued;
    // vCPU 2 is idle but runnable in Xen's runstate (preempted); vCPU 3 is idle and not.
    g.vcpus[0].current = Some(threads[0]);
    g.vcpus[1].current = Some(threads[1]);
    g.vcpus[1].runqueue.push_back(threads[2]);
    g.vcpus[2].runqueue.clear();
    for (k, id) in ids.iter().enumerate() {
        sim.drive_guest(0).2[id.idx()].runnable = k == 2;
    }
    for (t, v) in [(0, 0), (1, 1), (2, 1)] {
        sim.drive_guest(0).1[threads[t].idx()].vcpu = ids[v];
    }
    let (g, th, pv) = sim.drive_guest(0);
    g.run_masks = vcpusim::guest::scheduler::RunMasks::of(&g.vcpus);
    g.vcpus[0].func = vcpusim::vmexit::KernelFn::User;
    g.preempt_notice(0);
    assert!(g.irs.as_ref().unwrap().pending[0]);
    // Take it as `run` would, then end the handler.
    g.irs.as_mut().unwrap().pending[0] = false;
    g.irs.as_mut().unwrap().active[0] = Some(vcpusim::vmexit::KernelFn::User);
    let done = g.notice_done(th, pv, 0, 0);
    assert_eq!(done.moved, Some((threads[0], ids[3])), "the idle vCPU that is not waiting for a pCPU");
    let g = &sim.guests()[0];
    assert_eq!(g.vcpus[0].current, None);
    assert_eq!(g.vcpus[3].runqueue.front(), Some(&threads[0]));
    assert_eq!(sim.guests().threads()[threads[0].idx()].vcpu, ids[3]);

    // rt_avg with steal (scale_rt_power, sched_avg_update): 250 ms of steal in 4 ms ticks is
    // 248 ms of rt_avg over a 500 ms period; 600 ms later it has halved once.
    let (g, _, pv) = sim.drive_guest(0);
    pv[ids[1].idx()].steal_time_ns = 250 * MS;
    let c0 = g.capacity(pv, 1, 0);
    assert!((c0 - (500.0 - 248.0) / 500.0).abs() < 1e-9, "{c0}");
    let c1 = g.capacity(pv, 1, 600 * MS);
    assert!((c1 - (600.0 - 124.0) / 600.0).abs() < 1e-9, "{c1}");
}

/// The migrator's wake-up preemption round-robins an IRS-migrated thread only at a preemptible
/// point: user mode, no spinlock held, and not spinning for one (guest/irs.rs `irs_preempt_due`).
/// Without this check a thread spinning for a futex-queue ticket lock is queued behind the woken
/// one; the ticket then passes to a thread that is not running and every vCPU of the VM spins in
/// `_raw_spin_lock` until the end of the run (ab, one hog, seed 1: from 905.6 ms on, 3.8 s of
/// kernel spin in 2 s; experiments/irs slide 14).
#[test]
fn the_migrators_wake_preemption_never_deschedules_a_lock_spinner() {
    let text = "[host]\npcpus = 4\npolicy = \"credit\"\nparams = { xen = \"4.4\" }\noverlay = \"irs\"\n\
                [host.ple]\nenabled = false\n\
                [[vm]]\nname = \"par\"\nvcpus = 4\ncpus = [\"0\", \"1\", \"2\", \"3\"]\nworkload = \"ab\"\n[vm.guest]\nirs = true\n\
                [[vm]]\nname = \"noise0\"\nvcpus = 1\ncpus = [\"0\"]\nworkload = \"cpu-bound\"\n\
                [run]\nduration = \"2s\"\nseed = 1\n";
    let sim = run_sim_checked(text, 2000);
    let ov = sim.mechanisms().preemption_overlay.as_ref().expect("overlay built");
    let stats = &sim.vms()[0].stats;
    eprintln!("{:?}; par spun {} ms", ov.stats, stats.spin_ns / MS);
    assert!(ov.stats.notices > 0 && ov.stats.migrated > 0, "IRS acted: {:?}", ov.stats);
    // Vanilla Xen on the same seed spins ~2 ms in 2 s; a lost ticket holder makes it seconds.
    assert!(stats.spin_ns < 100 * MS, "par spun {} ms in 2 s", stats.spin_ns / MS);
}

/// The tick's hand-over stands for Linux's nohz idle balancing, which pulls only for CPUs that
/// stopped their tick in the idle loop (`select_nohz_load_balancer(1)`): a vCPU whose thread the
/// notice handler moved away while the host deschedules it is idle to the guest scheduler but
/// not in its idle loop, so a sibling's tick does not hand a queued thread back to it; a vCPU
/// that halted in its idle loop gets one.
#[test]
fn the_tick_hands_threads_only_to_vcpus_in_their_idle_loop() {
    let (mut sim, ids, threads) =
        emptied_guest(&scenario(IRS, true, "parsec.streamcluster").replace("vcpus = 4\n", "vcpus = 4\nthreads = 5\n"));
    let (g, _, _) = sim.drive_guest(0);
    // vCPU k runs thread k (every sibling is busy when the notice comes); thread 4 is queued
    // behind thread 1 on vCPU 1.
    for (k, gv) in g.vcpus.iter_mut().enumerate() {
        gv.current = Some(threads[k]);
        gv.idle_loop = false;
    }
    g.vcpus[1].runqueue.push_back(threads[4]);
    let (g, th, pv) = sim.drive_guest(0);
    for (k, id) in ids.iter().enumerate() {
        th[threads[k].idx()].vcpu = *id;
        pv[id.idx()].runnable = false;
    }
    th[threads[4].idx()].vcpu = ids[1];
    g.run_masks = vcpusim::guest::scheduler::RunMasks::of(&g.vcpus);
    g.vcpus[0].func = vcpusim::vmexit::KernelFn::User;
    g.preempt_notice(0);
    g.irs.as_mut().unwrap().pending[0] = false;
    g.irs.as_mut().unwrap().active[0] = Some(vcpusim::vmexit::KernelFn::User);
    let done = g.notice_done(th, pv, 0, 0);
    assert!(done.moved.is_some(), "the handler moved thread 0 away");
    assert!(g.vcpus[0].idle() && !g.vcpus[0].idle_loop, "vCPU 0 is idle to the scheduler, not in its idle loop");
    // vCPU 1's tick finds no vCPU in its idle loop: its queued thread stays.
    let tick = g.timer_tick(th, 1).expect("vCPU 1 has a thread queued");
    assert_eq!(tick.resched_ipi, None, "the tick handed a thread to vCPU 0, which never went idle in its loop");
    assert_eq!(g.vcpus[1].runqueue.len(), 1);
    // Once vCPU 0 has halted in its idle loop, the tick hands it the thread.
    g.vcpus[0].idle_loop = true;
    let tick = g.timer_tick(th, 1).expect("vCPU 1 has a thread queued");
    assert_eq!(tick.resched_ipi, Some(ids[0]));
    assert!(g.vcpus[1].runqueue.is_empty() && g.vcpus[0].runqueue.len() == 1);
}
