//! Solo calibration of the MOSBENCH, memclone and SPEC CPU2006 models
//! (workload/builtin/mosbench/, memclone.rs, spec2006/) in seed 002's setup (section 3.1: one
//! 12-vCPU VM alone on the 12 hardware threads of a Xeon E5645, Xen 4.7 credit, pause-loop
//! exiting on), with today's default guest (Linux 3.2 ticket spinlocks, no PV spinlocks) and with
//! the seed's own, `[guest] kernel = "linux-4.4"` (PV qspinlock, SCHEDOP_poll / kick, the
//! call-function yield): the seed's solo numbers are 4.4's, so every solo check holds under both,
//! except Table 4a's lock waits, which lockstat measured on a kernel of its own (`spinlock =
//! "debug"`) and are checked there; and co-runs beside swaptions (2:1) for the direction of
//! Table 4a.

mod common;
use common::*;
use std::collections::BTreeMap;

type Table = BTreeMap<String, BTreeMap<String, String>>;

const HOST: &str = "[host]\npcpus = 12\npolicy = \"credit\"\nparams = { xen = \"4.7\" }\n";

/// The guests the solo checks run under: today's default (Linux 3.2) and the seed's Linux 4.4.
const GUESTS: [(&str, &str); 2] = [("linux-3.2", ""), ("linux-4.4", "[guest]\nkernel = \"linux-4.4\"\n")];

fn vm(name: &str, workload: &str, extra: &str) -> String {
    format!("[[vm]]\nname = \"{name}\"\nvcpus = 12\nworkload = \"{workload}\"\n{extra}")
}

/// Run `vms` on the seed's host for `ms`; vms.csv and the metrics of each VM.
fn run(vms: &str, ms: u64, seed: u64) -> (Table, BTreeMap<String, BTreeMap<String, f64>>) {
    run_under("", vms, ms, seed)
}

/// `run` with a `[guest]` table (`guest`, TOML text; empty: the default guest).
fn run_under(guest: &str, vms: &str, ms: u64, seed: u64) -> (Table, BTreeMap<String, BTreeMap<String, f64>>) {
    let text = format!("{HOST}{guest}{vms}[run]\nduration = \"{ms}ms\"\nseed = {seed}\n");
    let out = run_toml(&text, false);
    let mut metrics: BTreeMap<String, BTreeMap<String, f64>> = BTreeMap::new();
    for l in out.metrics_csv.lines().skip(1) {
        let cells = csv_cells(l);
        metrics.entry(cells[0].clone()).or_default().insert(cells[1].clone(), cells[2].parse().unwrap_or(f64::NAN));
    }
    (vm_table(&out), metrics)
}

fn solo(workload: &str, ms: u64) -> (Table, BTreeMap<String, f64>) {
    solo_under("", workload, ms)
}

fn solo_under(guest: &str, workload: &str, ms: u64) -> (Table, BTreeMap<String, f64>) {
    let (t, mut m) = run_under(guest, &vm("app", workload, ""), ms, 1);
    (t, m.remove("app").expect("the app VM's metrics"))
}

/// Seed 002 Table 4a, solo column: average spinlock wait in gmake (us), by kernel component.
const TABLE_4A_SOLO: [(&str, f64); 4] = [("page-reclaim", 1.03), ("page-alloc", 3.42), ("dentry", 2.93), ("runqueue", 1.22)];

/// The kernel Table 4a was measured on: lockstat needs `CONFIG_LOCK_STAT`, which selects
/// `DEBUG_SPINLOCK` (Linux 4.4 lib/Kconfig.debug), whose waiters loop on a trylock.
const LOCKSTAT_GUEST: &str = "[guest]\nkernel = \"linux-4.4\"\nspinlock = \"debug\"\n";

#[test]
fn gmake_solo_lock_waits_match_table_4a_and_its_kernel_share_is_the_builds() {
    // The hold times are fitted here, under lockstat's kernel, over several seeds.
    let mut sums = [0.0; 4];
    let seeds = 1..=3;
    for seed in seeds.clone() {
        let (t, mut m) = run_under(LOCKSTAT_GUEST, &vm("app", "mosbench.gmake", ""), 2_000, seed);
        let m = m.remove("app").expect("the app VM's metrics");
        if seed == 1 {
            gmake_solo_checks("linux-4.4 lockstat", &t, &m);
        }
        for (i, (class, _)) in TABLE_4A_SOLO.iter().enumerate() {
            let n = m[&format!("spin_wait_count[{class}]")];
            assert!(*class == "runqueue" || n >= 50.0, "seed {seed} {class}: only {n} contended acquisitions");
            sums[i] += m[&format!("spin_wait_mean_us[{class}]")];
        }
    }
    for (i, (class, seed_us)) in TABLE_4A_SOLO.iter().enumerate() {
        let mean = sums[i] / seeds.clone().count() as f64;
        println!("gmake solo under lockstat's kernel, {class}: mean wait {mean:.2} us (Table 4a: {seed_us})");
        if *class == "runqueue" {
            // The model's rq locks are taken only at fork, exit and pipe wake-ups (not by the
            // guest scheduler's own switches), so solo they are almost never contended.
            continue;
        }
        assert!((mean - seed_us).abs() / seed_us < 0.15, "{class}: mean wait {mean:.2} us, Table 4a says {seed_us}");
    }
    for (kernel, guest) in GUESTS {
        let (t, m) = solo_under(guest, "mosbench.gmake", 2_000);
        gmake_solo_checks(kernel, &t, &m);
    }
}

/// gmake alone under the `kernel` guest (`t`, `m`: its run's vms.csv and metrics): the build's
/// kernel share and job rate, whatever the lock; the waits are printed (under the production
/// locks they are predictions: 3.2's ticket lock and 4.4's PV qspinlock hand the lock over in
/// order, and their waiters wait longer).
fn gmake_solo_checks(kernel: &str, t: &Table, m: &BTreeMap<String, f64>) {
    println!("{kernel}:");
    for (class, seed_us) in TABLE_4A_SOLO {
        let n = m[&format!("spin_wait_count[{class}]")];
        let mean = m[&format!("spin_wait_mean_us[{class}]")];
        println!("gmake solo {class}: {n} contended acquisitions, mean wait {mean:.2} us (Table 4a: {seed_us})");
    }
    let kernel = num(t, "app", "kernel_time_ms") + num(t, "app", "spin_time_ms");
    let share = kernel / num(t, "app", "cpu_time_ms");
    assert!((share - 0.154).abs() < 0.02, "{kernel}: kernel share {share:.3}");
    // -j 24 on 12 vCPUs: always runnable work, no halts (nor, under 4.4, more than a few
    // SCHEDOP_poll blocks); compile jobs finish at the CPU rate.
    assert!(num(t, "app", "halts") <= 10.0, "{kernel}: {} halts", num(t, "app", "halts"));
    let jobs_per_s = num(t, "app", "progress") / 2.0;
    assert!((20.0..=30.0).contains(&jobs_per_s), "{kernel}: {jobs_per_s} jobs/s (12 vCPUs / 0.4 s = 30 at most)");
    // Table 2: 79,440 yields over the whole solo build (its length is not given); in Linux 4.4
    // most are PV-spinlock blocks, which this guest does not have. Printed for the lead.
    println!("gmake solo: {} PLE yields/s", num(t, "app", "yields") / 2.0);
}

#[test]
fn gmake_beside_swaptions_waits_orders_of_magnitude_longer_for_its_locks() {
    // Seed 002 Table 4a: solo 1-3 us, co-run with swaptions 256-1,299 us. Direction only: the
    // co-run magnitudes depend on the guest's spinlock (linux44) and the policy (usliced).
    let vms = vm("gmake", "mosbench.gmake", "") + &vm("swaptions", "parsec.swaptions", "");
    let (t, m) = run(&vms, 1_000, 1);
    let g = &m["gmake"];
    for (class, _) in TABLE_4A_SOLO {
        println!("gmake co-run {class}: mean wait {:.1} us", g[&format!("spin_wait_mean_us[{class}]")]);
    }
    // The zone lock, the most used, shows it; the others' waiters mostly queue behind it.
    let zone = g["spin_wait_mean_us[page-alloc]"];
    assert!(zone > 10.0 * 3.42, "page-alloc: {zone:.1} us co-run");
    // With ticket locks most of it is lock-waiter preemption: the lock is handed to a
    // preempted waiter and everyone behind it waits for its next slice.
    let (lhp, lwp) = (num(&t, "gmake", "lhp_count"), num(&t, "gmake", "lwp_count"));
    println!("gmake co-run: {lhp} LHP, {lwp} LWP");
    assert!(lwp > 0.0);
}

#[test]
fn exim_solo_spends_seventy_percent_in_the_kernel_and_delivers_at_its_cpu_rate() {
    for (kernel, guest) in GUESTS {
        println!("{kernel}:");
        exim_solo_under(guest);
    }
}

fn exim_solo_under(guest: &str) {
    let (t, m) = solo_under(guest, "mosbench.exim", 500);
    let cpu = num(&t, "app", "cpu_time_ms");
    let kernel = num(&t, "app", "kernel_time_ms") + num(&t, "app", "spin_time_ms");
    assert!((kernel / cpu - 0.70).abs() < 0.05, "{guest}: kernel share {:.3}", kernel / cpu);
    // 1 ms of CPU per message on 12 vCPUs: at most 12,000 messages/s.
    let rate = num(&t, "app", "progress") / 0.5;
    let yields = num(&t, "app", "yields") / 0.5;
    println!("exim solo: {rate:.0} messages/s, {yields:.0} PLE yields/s, {} futex waits", num(&t, "app", "futex_waits"));
    assert!((10_000.0..=12_000.0).contains(&rate), "{rate} messages/s");
    // Table 2: 157,023 yields solo; MOSBENCH's load generator runs 60 s (exim/smtpbm.c), so
    // ~2,617 yields/s, held to a factor of 2 under both guests (seed 1: ~3,700/s under 3.2, PLE
    // exits of ticket-lock spinners; ~2,100/s under 4.4, whose queued waiters exit less often).
    let table_2 = 157_023.0 / 60.0;
    assert!((0.5 * table_2..=2.0 * table_2).contains(&yields), "{yields:.0} yields/s, Table 2 implies {table_2:.0}");
    // Its spool and log mutexes and dentry locks are contended even solo.
    assert!(m["spin_wait_count[dentry]"] > 100.0);
}

#[test]
fn psearchy_solo_indexes_at_the_rate_its_per_file_cost_implies() {
    for (kernel, guest) in GUESTS {
        println!("{kernel}:");
        psearchy_solo_under(guest);
    }
}

fn psearchy_solo_under(guest: &str) {
    let (t, m) = solo_under(guest, "mosbench.psearchy", 1_000);
    // Per file: 800 us parse + ~41 us of open/read/close, plus a 48 MiB flush (~100 ms plus
    // its lock sections) per 1,000 files: ~946 us, so 12 threads index ~12,700 files/s.
    let rate = num(&t, "app", "progress");
    println!("psearchy solo: {rate} files/s, file-table waits {}", m["spin_wait_count[file-table]"]);
    assert!((11_500.0..=13_500.0).contains(&rate), "{rate} files/s");
    assert_eq!(num(&t, "app", "halts"), 0.0);
}

#[test]
fn memclone_solo_is_kernel_bound_and_its_zone_lock_is_the_most_contended() {
    for (kernel, guest) in GUESTS {
        println!("{kernel}:");
        memclone_solo_under(guest);
    }
}

fn memclone_solo_under(guest: &str) {
    let (t, m) = solo_under(guest, "memclone", 500);
    assert_eq!(num(&t, "app", "user_time_ms"), 0.0);
    assert!(num(&t, "app", "progress") >= 1.0, "no run finished in 500 ms");
    let zone = m["spin_wait_count[page-alloc]"];
    for class in ["page-reclaim", "mm-page-table", "dentry"] {
        assert!(zone > m[&format!("spin_wait_count[{class}]")], "{class}");
    }
    println!(
        "memclone solo: {} runs in 500 ms, zone-lock mean wait {:.1} us, {} PLE yields/s",
        num(&t, "app", "progress"),
        m["spin_wait_mean_us[page-alloc]"],
        num(&t, "app", "yields") / 0.5
    );
}

#[test]
fn a_spec2006_copy_runs_its_cpu_time_undisturbed() {
    // 1% of 401.bzip2's 482.5 s: 4.825 s; one copy in a 12-vCPU VM.
    let (t, _) = run(&vm("app", "spec2006.bzip2", "iterations = 100\n[vm.params]\nscale = 0.01\n"), 6_000, 1);
    let done = num(&t, "app", "completion_time_ms");
    assert!((done - 4_825.0).abs() < 5.0, "{done} ms");
    assert_eq!(num(&t, "app", "kernel_time_ms"), 0.0);
}

#[test]
fn dedup_and_vips_solo_shootdown_latency_is_table_4bs_order() {
    // Seed 002 Table 4b, solo: dedup avg 28 us (min 5, max 1,927), vips avg 55 us (min 5,
    // max 2,052). The PARSEC models (calibrated to seed 000's 8-vCPU rates) run here with 12
    // threads (dedup: 3 x 12 + 2) on 12 vCPUs.
    for ((workload, avg), (kernel, guest)) in
        [("parsec.dedup", 28.0), ("parsec.vips", 55.0)].into_iter().flat_map(|w| GUESTS.map(|g| (w, g)))
    {
        let (_, m) = solo_under(guest, workload, 300);
        let mean = m["tlb_shootdown_latency_mean_us"];
        println!("{workload} solo: TLB shootdown mean {mean:.1} us, max {:.1} us (Table 4b: {avg})", m["tlb_shootdown_latency_max_us"]);
        // The model's solo latency is mechanical (11 IPI-send exits of 2 us, the handlers):
        // ~29 us for both, dedup's average; vips' 55 us and both tails of ~2 ms are not
        // reproduced (docs/model.md § seed 002: workload models). Order of magnitude only.
        assert!((0.5 * avg..=2.0 * avg).contains(&mean), "{kernel} {workload}: {mean:.1} us");
    }
}

#[test]
fn a_kernel_share_too_small_for_a_job_is_a_clear_error() {
    let text = format!("{HOST}{}[run]\nduration = \"10ms\"\n", vm("app", "mosbench.gmake", "[vm.params]\nkernel_share = 0.01\n"));
    let err = match vcpusim::api::load_scenario(&text, "gmake.toml") {
        Err(e) => e.to_string(),
        Ok(sc) => vcpusim::api::run(&sc, &Default::default()).expect_err("a job too small for its kernel paths").to_string(),
    };
    println!("{err}");
    assert!(err.contains("kernel_share 0.01") && err.contains("mosbench.gmake"), "{err}");
}

#[test]
fn exim_beside_swaptions_yields_far_more_than_solo() {
    // Seed 002 Table 2: exim 157,023 yields solo, 24,102,495 co-run with swaptions (x153).
    let vms = vm("exim", "mosbench.exim", "") + &vm("swaptions", "parsec.swaptions", "");
    let (t, m) = run(&vms, 500, 1);
    let (solo_t, _) = solo("mosbench.exim", 500);
    let (co, alone) = (num(&t, "exim", "yields"), num(&solo_t, "app", "yields"));
    println!(
        "exim: {alone} yields solo, {co} co-run in 500 ms; {:.0} vs {:.0} messages/s; dentry wait {:.1} us co-run",
        num(&solo_t, "app", "progress") / 0.5,
        num(&t, "exim", "progress") / 0.5,
        m["exim"]["spin_wait_mean_us[dentry]"]
    );
    assert!(co > 10.0 * alone, "{co} co-run vs {alone} solo");
}

#[test]
fn the_models_run_in_check_mode_beside_swaptions() {
    for (_, guest) in GUESTS {
        for workload in ["mosbench.gmake", "mosbench.exim", "mosbench.psearchy", "memclone", "spec2006.mcf"] {
            let vms = vm("app", workload, "") + &vm("swaptions", "parsec.swaptions", "");
            let text = format!("{HOST}{guest}{vms}[run]\nduration = \"60ms\"\nseed = 3\n");
            let t = vm_table(&run_toml(&text, true));
            assert!(num(&t, "app", "cpu_time_ms") > 0.0, "{workload} {guest}");
        }
    }
}

#[test]
fn under_a_lock_statistics_kernel_lock_waits_never_exit_on_pause_loops() {
    // `spinlock = "debug"`: CONFIG_LOCK_STAT selects DEBUG_SPINLOCK, whose __spin_lock_debug
    // loops arch_spin_trylock and __delay(1) with no PAUSE (Linux 4.4). gmake beside swaptions
    // spins on its kernel locks, and none of those spins ends in a pause-loop exit; the same run
    // with 4.4's PV qspinlock takes thousands.
    let vms = vm("gmake", "mosbench.gmake", "") + &vm("swaptions", "parsec.swaptions", "");
    let debug = "[guest]\nkernel = \"linux-4.4\"\nspinlock = \"debug\"\n";
    let (t, _) = run_under(debug, &vms, 300, 1);
    assert!(num(&t, "gmake", "spin_time_ms") > 0.0, "gmake spins on its kernel locks");
    assert_eq!(num(&t, "gmake", "yields_in_lock_spin"), 0.0, "no pause-loop exit while spinning for a lock");
    let (pv, _) = run_under(GUESTS[1].1, &vms, 300, 1);
    assert!(num(&pv, "gmake", "yields_in_lock_spin") > 1000.0, "the PV qspinlock's waits exit");
}

#[test]
fn under_linux_4_4_gmakes_co_run_lock_waits_come_from_waiters_yielding_at_pause_loop_exits() {
    // The 4.4 guest's PV qspinlock (docs/model.md § seed 002): beside swaptions, gmake's
    // zone-lock waits run to milliseconds with almost no lock-holder preemption (Table 4a's
    // ~1 ms co-run waits were measured on a lock-statistics kernel, whose locks do not exit:
    // `spinlock = "debug"`, the test above): a spinning waiter's pause-loop exit is a SCHEDOP_yield, and Xen 4.7
    // credit queues the yielder behind one lower-priority vCPU (`__runq_insert`), a swaptions
    // vCPU that then runs its 30 ms slice, while the FIFO queue behind the yielded waiter cannot
    // take the lock. With pause-loop exiting off the same co-run waits several times less and
    // gmake keeps its CPU share. Nothing here is tuned: it is the host's faithful yield.
    let guest = GUESTS[1].1;
    let vms = vm("gmake", "mosbench.gmake", "") + &vm("swaptions", "parsec.swaptions", "");
    let (t, m) = run_under(guest, &vms, 2_000, 1);
    let no_ple = HOST.to_string() + "[host.ple]\nenabled = false\n";
    let text = format!("{no_ple}{guest}{vms}[run]\nduration = \"2000ms\"\nseed = 1\n");
    let out = run_toml(&text, false);
    let t_off = vm_table(&out);
    let zone_off: f64 = out
        .metrics_csv
        .lines()
        .map(csv_cells)
        .find(|c| c[0] == "gmake" && c[1] == "spin_wait_mean_us[page-alloc]")
        .map(|c| c[2].parse().unwrap())
        .unwrap();
    let zone = m["gmake"]["spin_wait_mean_us[page-alloc]"];
    let (share, share_off) = (num(&t, "gmake", "cpu_share"), num(&t_off, "gmake", "cpu_share"));
    println!(
        "gmake co-run, linux-4.4: zone wait {zone:.0} us with PLE, {zone_off:.0} us without; CPU share {share:.3} vs {share_off:.3}; \
         {} LHP, {} PLE yields",
        num(&t, "gmake", "lhp_count"),
        num(&t, "gmake", "yields_ple")
    );
    assert!(zone > 1_000.0, "{zone:.0} us");
    assert!(zone > 3.0 * zone_off, "PLE on {zone:.0} us vs off {zone_off:.0} us");
    assert!(num(&t, "gmake", "lhp_count") < 20.0, "the waits are not lock-holder preemptions");
    // About half (0.52x at seed 1 with the holds fitted under lockstat's kernel).
    assert!(share < 0.6 * share_off, "yielding gives swaptions the pCPUs: {share:.3} vs {share_off:.3}");
}
