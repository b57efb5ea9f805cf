//! Engine-level tests of the `hybrid` policy (seed 004, 004_2f4d1756ca892fd2.txt; docs/model.md
//! 7.5): shares, co-scheduling, CPS = PCPS at u_factor 0, run-time class changes, bad keys, and the
//! analytic checks of the seed's section 3 in an idealized slot model.

mod common;
use common::*;
use vcpusim::api::{load_scenario, run, RunOptions};
use vcpusim::hypervisor::policy::VcpuState;
use vcpusim::sim::state::Sim;

/// Host costs zeroed, pCPUs in step, no PLE: the idealized slot model of seed 004 section 3.
const IDEAL_HOST: &str = "start_skew = \"0s\"\n[host.ple]\nenabled = false\n[host.costs]\n\
    ipi_send = \"0ns\"\nipi_delivery = \"0ns\"\nipi_handler = \"0ns\"\ncontext_switch = \"0ns\"\n\
    hlt_exit = \"0ns\"\ntlb_flush_per_page = \"0ns\"\nsyscall = \"0ns\"\n";

/// A concurrent job of `n` tasks on an `n`-vCPU VM of weight `weight`, beside an idle manager VM
/// (the seed's Dom0) of weight `dom0`, capped: phases of exactly one 30 ms slot, synchronized by
/// a spinning barrier; the master task's every `long_every`-th phase lasts two slots.
#[allow(clippy::too_many_arguments)] // the job's parameters, each named at the call sites' table
fn ideal_job(pcpus: u32, n: u32, weight: u32, dom0: u32, class: &str, pe_unit: u32, long_every: Option<u32>, phases: u64) -> f64 {
    let phase = "{compute = \"30ms\"}, {barrier = 0, wait = \"spin\"}";
    let master = match long_every {
        None => format!("[{{loop = \"forever\", body = [{phase}, {{progress = true}}]}}]"),
        Some(1) => format!("[{{loop = \"forever\", body = [{{compute = \"30ms\"}}, {phase}, {{progress = true}}]}}]"),
        Some(k) => format!(
            "[{{loop = \"forever\", body = [{{loop = {short}, body = [{phase}, {{progress = true}}]}}, \
             {{compute = \"30ms\"}}, {phase}, {{progress = true}}]}}]",
            short = k - 1
        ),
    };
    let slave = format!("[{{loop = \"forever\", body = [{phase}]}}]");
    let threads: Vec<String> = std::iter::once(master).chain((1..n).map(|_| slave.clone())).collect();
    let text = format!(
        "[host]\npcpus = {pcpus}\npolicy = \"hybrid\"\n{IDEAL_HOST}[host.params]\nwork_conserving = false\npe_unit = {pe_unit}\n\
         [[vm]]\nname = \"job\"\nvcpus = {n}\nweight = {weight}\n{class}\nworkload = \"program\"\niterations = {phases}\n\
         [vm.program]\nbarriers = [{n}]\nthreads = [{}]\n\
         [[vm]]\nname = \"dom0\"\nvcpus = {pcpus}\nweight = {dom0}\nworkload = \"idle\"\n\
         [run]\nduration = \"3600s\"\n",
        threads.join(", ")
    );
    let t = vm_table(&run_toml(&text, false));
    num(&t, "job", "completion_time_ms") / 30.0
}

/// Cpu-bound VMs of the given (name, vCPUs, weight, type) on 8 pCPUs for 10 s, check mode.
fn cpu_bound_mix(
    work_conserving: bool,
    vms: &[(&str, u32, u32, &str)],
) -> std::collections::BTreeMap<String, std::collections::BTreeMap<String, String>> {
    let mut text = format!("[host]\npcpus = 8\npolicy = \"hybrid\"\n[host.params]\nwork_conserving = {work_conserving}\n");
    for (name, vcpus, weight, class) in vms {
        text += &format!("[[vm]]\nname = \"{name}\"\nvcpus = {vcpus}\nweight = {weight}\ntype = \"{class}\"\nworkload = \"cpu-bound\"\n");
    }
    text += "[run]\nduration = \"10s\"\nseed = 1\n";
    vm_table(&run_toml(&text, true))
}

/// Each always-busy VM's entitlement in pCPUs on `npcpus`: capped, its weight's share (no more
/// than its vCPUs); work-conserving, max-min by weight (a VM with fewer vCPUs than its share gets
/// them all and the rest is split over the others by weight, again and again).
fn entitlements(npcpus: f64, vms: &[(&str, u32, u32, &str)], work_conserving: bool) -> Vec<f64> {
    let total: f64 = vms.iter().map(|v| v.2 as f64).sum();
    if !work_conserving {
        return vms.iter().map(|v| (npcpus * v.2 as f64 / total).min(v.1 as f64)).collect();
    }
    let mut got = vec![None; vms.len()];
    let mut left = npcpus;
    loop {
        let open_weight: f64 = vms.iter().zip(&got).filter(|(_, g)| g.is_none()).map(|(v, _)| v.2 as f64).sum();
        let full: Vec<usize> =
            (0..vms.len()).filter(|i| got[*i].is_none() && left * vms[*i].2 as f64 / open_weight >= vms[*i].1 as f64).collect();
        if full.is_empty() {
            return vms.iter().zip(got).map(|(v, g)| g.unwrap_or(left * v.2 as f64 / open_weight)).collect();
        }
        for i in full {
            got[i] = Some(vms[i].1 as f64);
            left -= vms[i].1 as f64;
        }
    }
}

#[test]
fn cpu_shares_follow_weights_within_3_percent_in_both_modes() {
    let mixes: &[&[(&str, u32, u32, &str)]] = &[
        // Two CON VMs homed with a HIT VM each; b's vCPUs must be balanced onto a's pCPUs.
        &[("a", 4, 256, "con"), ("b", 4, 512, "hit"), ("c", 4, 256, "hit"), ("d", 4, 256, "con")],
        // Algorithm 1 by weight: counting vCPUs would home c on a's pCPUs (4 + 2 pCPUs on 4).
        &[("a", 4, 512, "con"), ("b", 4, 256, "hit"), ("c", 4, 256, "con")],
        // Three equal CON VMs on 8 pCPUs: two are homed on the same four pCPUs whatever the
        // mapping; they get 2.67 pCPUs each only by moving, whole, onto pCPUs another leaves idle.
        &[("a", 4, 256, "con"), ("b", 4, 256, "con"), ("c", 4, 256, "con")],
        // The heavy CON VM created last lands on a light one's pCPUs and must move.
        &[("a", 4, 256, "con"), ("b", 4, 256, "con"), ("c", 4, 512, "con")],
        // ... and with HIT VMs in the way, it moves by taking pCPUs from HIT vCPUs of less PE.
        &[("a", 4, 256, "con"), ("b", 4, 256, "hit"), ("c", 4, 512, "con"), ("d", 2, 256, "hit")],
        // Odd sizes.
        &[("a", 3, 256, "con"), ("b", 3, 256, "con"), ("c", 3, 256, "con"), ("d", 3, 256, "hit")],
        // HIT only, a VM with fewer vCPUs than its share: work-conserving mode gives its spare
        // pCPU to the others by weight (1.67 : 3.33), not by their vCPU counts.
        &[("a", 8, 64, "hit"), ("b", 4, 128, "hit"), ("c", 3, 512, "hit")],
        // Capped: a HIT VM beside CON VMs whose siblings head its queues borrows no more than a
        // slot's worth, so it keeps to its cap (0.73 pCPUs; it took 0.94 when debts were forgiven).
        &[("a", 6, 64, "hit"), ("b", 4, 128, "con"), ("c", 3, 512, "con")],
    ];
    for vms in mixes {
        for wc in [true, false] {
            let t = cpu_bound_mix(wc, vms);
            for (vm, want) in vms.iter().zip(entitlements(8.0, vms, wc)) {
                let got = num(&t, vm.0, "cpu_time_ms") / 10_000.0;
                assert!((got - want).abs() / want < 0.03, "wc={wc} {vms:?}: {} got {got:.3} pCPUs, want {want:.3}", vm.0);
            }
        }
    }
}

#[test]
fn capped_vm_beside_an_idle_manager_gets_its_weight_only() {
    // Seed 004 section 6.2: V0 (Dom0, 8 vCPUs, weight 256) idle, V1 (4 vCPUs, 128): capped, V1
    // gets 8 x 128/384 = 2.67 pCPUs (33.3% of the host, Figure 8), under CON and HIT alike.
    for class in ["con", "hit"] {
        let text = format!(
            "[host]\npcpus = 8\npolicy = \"hybrid\"\n[host.params]\nwork_conserving = false\n\
             [[vm]]\nname = \"dom0\"\nvcpus = 8\nweight = 256\nworkload = \"idle\"\n\
             [[vm]]\nname = \"v1\"\nvcpus = 4\nweight = 128\ntype = \"{class}\"\nworkload = \"cpu-bound\"\n\
             [run]\nduration = \"10s\"\n"
        );
        let t = vm_table(&run_toml(&text, true));
        let share = num(&t, "v1", "cpu_share");
        assert!((share - 1.0 / 3.0).abs() / (1.0 / 3.0) < 0.03, "{class}: share {share:.4}");
    }
}

/// A 4-vCPU VM whose threads meet at a spinning barrier every 1 ms, beside a 6-vCPU hog, on 4
/// pCPUs: barrier phases completed in 5 s. (With a hog of the VM's own shape the HIT vCPUs would
/// run in lockstep, one per pCPU, which co-schedules them by accident.)
fn spin_barrier_phases(class: &str) -> f64 {
    let text = format!(
        "[host]\npcpus = 4\npolicy = \"hybrid\"\n\
         [[vm]]\nname = \"bsp\"\nvcpus = 4\ntype = \"{class}\"\nworkload = \"barrier\"\n\
         [vm.params]\nwork = \"1ms\"\njitter = 0.0\nwait = \"spin\"\n\
         [[vm]]\nname = \"hog\"\nvcpus = 6\nworkload = \"cpu-bound\"\n\
         [run]\nduration = \"5s\"\nseed = 3\n"
    );
    num(&vm_table(&run_toml(&text, true)), "bsp", "progress")
}

#[test]
fn a_concurrent_vm_is_co_scheduled_so_its_spin_barrier_progresses_far_faster() {
    // Under `con` the four vCPUs hold the pCPUs together for whole slots: a barrier every 1 ms of
    // work, i.e. about 30 phases per co-scheduled slot, half the slots. Under `hit` the vCPUs run
    // in different slots and a phase completes only when all four happen to overlap.
    let con = spin_barrier_phases("con");
    let hit = spin_barrier_phases("hit");
    assert!(con > 2000.0, "con: only {con} phases in 5 s");
    // Measured: about 2500 vs 870 (seed 3).
    assert!(con > 2.5 * hit, "con {con} phases vs hit {hit}: co-scheduling should win by far");
}

#[test]
fn u_factor_zero_gives_byte_identical_output_to_cps() {
    let text = |extra: &str| {
        format!(
            "[host]\npcpus = 4\npolicy = \"hybrid\"\n\
             [[vm]]\nname = \"job\"\nvcpus = 4\ntype = \"con\"\n{extra}workload = \"barrier\"\n\
             [[vm]]\nname = \"web\"\nvcpus = 3\nweight = 384\nworkload = \"mutex\"\n\
             [run]\nduration = \"2s\"\nseed = 5\n"
        )
    };
    let out = |t: String| run(&load_scenario(&t, "<test>").unwrap(), &RunOptions { check: true, ..Default::default() }).unwrap();
    let cps = out(text(""));
    let zero = out(text("u_factor = 0\n"));
    assert_eq!(cps.vms_csv, zero.vms_csv);
    assert_eq!(cps.metrics_csv, zero.metrics_csv);
    assert_eq!(cps.summary_json, zero.summary_json);
    // And PCPS does change the schedule (the comparison is not vacuous).
    assert_ne!(cps.vms_csv, out(text("u_factor = 0.25\n")).vms_csv);
}

#[test]
fn bad_hybrid_keys_give_clear_errors() {
    let base = "[host]\npcpus = 4\npolicy = \"hybrid\"\n[[vm]]\nname = \"a\"\nvcpus = 2\nworkload = \"cpu-bound\"\n";
    let cases = [
        (base.replace("policy = \"hybrid\"\n", "policy = \"hybrid\"\n[host.params]\nslot = \"0ms\"\n"), "host.params.slot"),
        (
            base.replace("policy = \"hybrid\"\n", "policy = \"hybrid\"\n[host.params]\nwork_conserving = \"no\"\n"),
            "host.params.work_conserving",
        ),
        (
            base.replace("policy = \"hybrid\"\n", "policy = \"hybrid\"\n[host.params]\npe_units = 3\n"),
            "host.params.pe_units: unknown key; did you mean \"pe_unit\"?",
        ),
        (format!("{base}type = \"concurrent\"\n"), "vm[0].type: expected one of hit, con, got \"concurrent\""),
        (format!("{base}type = \"con\"\nu_factor = 2\n"), "vm[0].u_factor: expected a number in [0, 1]"),
        (format!("{base}u_factor = 0.5\n"), "vm[0].u_factor: u_factor = 0.5 applies to concurrent VMs only"),
        (format!("{base}[[vm.sched_pe]]\nat = \"1s\"\ntype = \"gang\"\n"), "vm[0].sched_pe[0].type: expected one of hit, con"),
        (format!("{base}[[vm.sched_pe]]\ntype = \"con\"\n"), "vm[0].sched_pe[0].at: missing"),
    ];
    for (text, want) in cases {
        let err = load_scenario(&text, "bad.toml").expect_err(want).to_string();
        assert!(err.starts_with(&format!("bad.toml: {want}")), "got {err}\nwant bad.toml: {want}");
    }
}

#[test]
fn a_vm_switched_from_hit_to_con_is_co_scheduled_after_the_change() {
    // `xm sched-pe` at 2.5 s: the spin-barrier VM runs as `hit` beside a hog, then as `con`.
    // Check mode runs the policy's invariants (no two vCPUs of a concurrent VM in one run queue)
    // after every event; the barrier rate shows the change took effect.
    let text = |change: &str| {
        format!(
            "[host]\npcpus = 4\npolicy = \"hybrid\"\n\
             [[vm]]\nname = \"bsp\"\nvcpus = 4\nworkload = \"barrier\"\n{change}\
             [vm.params]\nwork = \"1ms\"\njitter = 0.0\nwait = \"spin\"\n\
             [[vm]]\nname = \"hog\"\nvcpus = 6\nworkload = \"cpu-bound\"\n\
             [run]\nduration = \"5s\"\nseed = 3\n"
        )
    };
    let hit_all_along = num(&vm_table(&run_toml(&text(""), true)), "bsp", "progress");
    let switched = num(&vm_table(&run_toml(&text("[[vm.sched_pe]]\nat = \"2500ms\"\ntype = \"con\"\n"), true)), "bsp", "progress");
    let con_all_along = spin_barrier_phases("con");
    // Half the run each way: about the mean of the two whole runs (measured 1678 vs 870 and 2497).
    let mean = (hit_all_along + con_all_along) / 2.0;
    assert!((switched - mean).abs() < 0.1 * mean, "switched {switched}, hit {hit_all_along}, con {con_all_along}");
}

// ---- Analytic checks: seed 004 section 3 in the idealized slot model ----
//
// Phases are exactly one 30 ms slot, host costs are zero and the pCPUs start together, the job is
// capped beside an idle manager VM (so nothing else is in its run queues). Under these conditions
// the hybrid policy's schedule is exactly periodic, and the tests below are exact.
//
// Formula 1 says makespan_cps = ceil(N r), r = |C(V)| / (|P| w(V)) slots per phase. The simulated
// completion time is floor(N r) slots: (1) Algorithm 4 runs a master with PE > 0, so PE is spent
// in advance and the g-th co-scheduled slot starts at floor((g - 1) r) (the first one waits a slot
// for the idle manager VM, whose vCPUs head the queues until they halt); (2) a phase ends exactly
// at a slot boundary and the engine handles the boundary first, so thread 0 passes the barrier
// (and the phase is counted) when the (N + 1)-th co-scheduled slot starts, at floor(N r). The two
// agree whenever N r is an integer, and then also makespan(2N) - makespan(N) = N r exactly.

#[test]
fn cps_makespan_is_formula_1_whenever_n_r_is_whole() {
    // (weight, Dom0 weight) on 4 pCPUs with a 4-vCPU job: w = 3/10 (the seed's section 2.2
    // example, r = 10/3), w = 1/3 (r = 3); a 2-vCPU job at w = 1/4 (r = 2).
    for (n, weight, dom0, r) in [(4u32, 3u32, 7u32, 10.0 / 3.0), (4, 1, 2, 3.0), (2, 1, 3, 2.0)] {
        for phases in [1u64, 2, 3, 4, 5, 6, 12] {
            let got = ideal_job(4, n, weight, dom0, "type = \"con\"", 300, None, phases);
            let x = phases as f64 * r;
            assert_eq!(got, (x + 1e-9).floor(), "n={n} w={weight}/{} N={phases}", weight + dom0);
            if (x - x.round()).abs() < 1e-9 {
                assert_eq!(got, (x - 1e-9).ceil(), "Formula 1, n={n} N={phases}");
            }
        }
        let one = ideal_job(4, n, weight, dom0, "type = \"con\"", 300, None, 6);
        let two = ideal_job(4, n, weight, dom0, "type = \"con\"", 300, None, 12);
        assert_eq!(two - one, (6.0 * r).round(), "makespan(2N) - makespan(N) = N r");
    }
}

#[test]
fn cps_over_pcps_makespan_is_formulas_3_and_4() {
    // 4-vCPU job, w = 1/2 on 4 pCPUs. The master's phase is two slots every ceil(1/u) phases
    // (Formula 4; u = 1 is Formula 3 with u = 1: every master phase is two slots). pe_unit is
    // chosen so that Algorithm 2's master share (1 + u)/(|C| + u) is a whole number of PE units
    // (170 x 2 x 5/17 = 100 for u = 1/4; 300 x 2 x 2/5 = 240 for u = 1): rounding would otherwise
    // tilt the master's share. Over whole periods the ratio is exactly |V|(1 + u)/(|V| + u).
    for (u, k, pe_unit, phases) in [(0.25, 4u32, 170u32, [8u64, 16, 32]), (1.0, 1, 300, [2, 4, 8])] {
        let want = 4.0 * (1.0 + u) / (4.0 + u);
        let mut spans = Vec::new();
        for n in phases {
            let cps = ideal_job(4, 4, 1, 1, "type = \"con\"", pe_unit, Some(k), n);
            let pcps = ideal_job(4, 4, 1, 1, &format!("type = \"con\"\nu_factor = {u}"), pe_unit, Some(k), n);
            assert!((cps / pcps - want).abs() < 1e-9, "u={u} N={n}: CPS {cps} / PCPS {pcps} slots, Formula 4 says {want}");
            spans.push((cps, pcps));
        }
        // Per period of k phases: CPS needs |C|(k + 1) vCPU-slots, PCPS |C| k + 1, at |P| w = 2 pCPUs.
        let (n0, n1) = (phases[0] as f64, phases[1] as f64);
        let k = k as f64;
        assert_eq!(spans[1].0 - spans[0].0, (n1 - n0) / k * 4.0 * (k + 1.0) / 2.0);
        assert_eq!(spans[1].1 - spans[0].1, (n1 - n0) / k * (4.0 * k + 1.0) / 2.0);
    }
}

// ---- Analytic check: Formula 2 (PS against CPS) ----
//
// Formula 2 (seed 004 section 3.2) says makespan_ps / makespan_cps ~ 2 |Lag|, makespan_ps being
// the supremum over PS runs whose largest deviation is |Lag|. With nothing else in the job's run
// queues its HIT vCPUs run in lockstep and PS equals CPS, so the job runs beside busy HIT VMs of
// other shapes, which makes the per-pCPU queues differ and the job's vCPUs drift apart.

/// What one run of `job_beside_hogs` measured, in slots.
struct LagRun {
    /// When the job's master passed its last barrier (the makespan).
    makespan: f64,
    /// max over the job's vCPUs and t <= makespan of |Lag(t, v)|.
    max_abs_lag: f64,
    /// max over the job's vCPUs of (max_t Lag(t, v) - min_t Lag(t, v)), at most 2 max |Lag|.
    widest_lag_range: f64,
    /// min over the job's vCPUs of that range.
    narrowest_lag_range: f64,
}

/// `ideal_job`'s uniform job (phases of `compute`, spinning barrier, zero costs, start_skew 0) of
/// 4 tasks and `phases` phases, weight 1, type `class`, on 4 pCPUs beside cpu-bound HIT VMs `hogs`
/// (vCPUs, weight), capped. Steps the run event by event and follows seed 004 section 3.2's
/// Lag(t, v) = t |P| w(V) / |C(V)| - Received(v, 0, t) for each of the job's vCPUs. Received is
/// linear between events (a vCPU runs or does not), so Lag's extremes are at event times and
/// sampling after every event gives them exactly.
fn job_beside_hogs(class: &str, hogs: &[(u32, u32)], phases: u64, compute: &str) -> LagRun {
    const SLOT: f64 = 30e6;
    let phase = format!("{{compute = \"{compute}\"}}, {{barrier = 0, wait = \"spin\"}}");
    let master = format!("[{{loop = \"forever\", body = [{phase}, {{progress = true}}]}}]");
    let slave = format!("[{{loop = \"forever\", body = [{phase}]}}]");
    let mut text = format!(
        "[host]\npcpus = 4\npolicy = \"hybrid\"\n{IDEAL_HOST}[host.params]\nwork_conserving = false\n\
         [[vm]]\nname = \"job\"\nvcpus = 4\nweight = 1\ntype = \"{class}\"\nworkload = \"program\"\niterations = {phases}\n\
         [vm.program]\nbarriers = [4]\nthreads = [{master}, {slave}, {slave}, {slave}]\n"
    );
    for (i, (vcpus, weight)) in hogs.iter().enumerate() {
        text += &format!("[[vm]]\nname = \"hog{i}\"\nvcpus = {vcpus}\nweight = {weight}\nworkload = \"cpu-bound\"\n");
    }
    text += "[run]\nduration = \"3600s\"\n";
    let sc = load_scenario(&text, "<test>").unwrap_or_else(|e| panic!("{e}\n{text}"));
    let mut sim = Sim::build(&sc, sc.run.seed, false, true).unwrap();
    sim.start();
    // Capped mode: w(V) = 1 / (1 + the hogs' weights), busy or not; Lag grows at |P| w(V) / 4.
    let rate = 1.0 / (1 + hogs.iter().map(|h| h.1).sum::<u32>()) as f64;
    let job = sim.vminfo()[0].vcpus.clone();
    let (mut lowest, mut highest) = (vec![0.0f64; 4], vec![0.0f64; 4]);
    while sim.guests()[0].finished_at.is_none() {
        let t = sim.next_event_at().expect("the job finishes");
        sim.run_until(t, None).unwrap_or_else(|e| panic!("{e}"));
        for (i, v) in job.iter().enumerate() {
            let info = &sim.vinfo()[v.idx()];
            let current = if info.state == VcpuState::Running { sim.now() - info.run_start } else { 0 };
            let lag = sim.now() as f64 / SLOT * rate - (info.run_time + current) as f64 / SLOT;
            lowest[i] = lowest[i].min(lag);
            highest[i] = highest[i].max(lag);
        }
    }
    let ranges: Vec<f64> = (0..4).map(|i| highest[i] - lowest[i]).collect();
    LagRun {
        makespan: sim.guests()[0].finished_at.unwrap() as f64 / SLOT,
        max_abs_lag: (0..4).map(|i| highest[i].max(-lowest[i])).fold(0.0, f64::max),
        widest_lag_range: ranges.iter().cloned().fold(0.0, f64::max),
        narrowest_lag_range: ranges.iter().cloned().fold(f64::INFINITY, f64::min),
    }
}

/// Mix A: hogs of 3 vCPUs (weight 1) and 2 vCPUs (1): w(V) = 1/3, r = |C(V)| / (|P| w(V)) = 3
/// slots per phase, and PS keeps the job fair (max |Lag| = 2/3, within the seed's ideal 1).
/// Mix B: hogs of 3 vCPUs (2) and 1 vCPU (1): w(V) = 1/4, r = 4, max |Lag| = 1.75 under PS.
#[allow(clippy::type_complexity)] // (name, [(vCPUs, weight); 2], slots per phase, PS keeps it fair)
const FORMULA_2_MIXES: [(&str, [(u32, u32); 2], f64, bool); 2] = [("A", [(3, 1), (2, 1)], 3.0, true), ("B", [(3, 2), (1, 1)], 4.0, false)];

#[test]
fn ps_over_cps_makespan_is_within_1_plus_2_lag_and_above_1_when_lag_exceeds_1() {
    // A phase lasts 1 us less than a slot, so a task reaches the barrier inside its slot, as in
    // the seed's model (tau(J^m) + 1 <= tau(J^(m+1)): the next phase may run in the next slot).
    // With phases of exactly one slot the engine handles the boundary first and every arrival
    // waits for the vCPU's next turn (next test).
    //
    // What the model supports exactly. D is the widest range of Lag(., v) of one job vCPU in the
    // PS run (D <= 2 max |Lag|). A phase released at R is done for v once Received(v, R, t) reaches
    // one slot; by the definition of Lag, Received(v, R, t) = (t - R) / r - (Lag(t, v) - Lag(R, v))
    // >= (t - R) / r - D, so each phase takes at most (1 + D) r and the master passes the last
    // barrier at most D r after its release: makespan_ps <= (N (1 + D) + D) r, i.e. a ratio to CPS's
    // ~N r of at most 1 + 2 |Lag| (+ O(1/N)). That holds for every PS run, hence for the supremum;
    // the seed's 2 |Lag| is its leading term for |Lag| >> 1. Measured (N = 12, 48), max |Lag|
    // being a property of the run, not a parameter:
    //   mix A: |Lag| 2/3, PS 35 / CPS 34 = 1.029, 143 / 141.998 = 1.007 (fair PS ~ CPS);
    //   mix B: |Lag| 1.75, PS 65 / CPS 45 = 1.444, 238 / 188.998 = 1.259;
    // so here the ratio is > 1, clearly so once |Lag| > 1, and below 2 |Lag| (1.33, 3.5): one run
    // does not reach the supremum. Swapping PS and CPS gives ratios below 1 and fails.
    for (mix, hogs, r, fair) in FORMULA_2_MIXES {
        for phases in [12u64, 48] {
            let n = phases as f64;
            let ps = job_beside_hogs("hit", &hogs, phases, "29999us");
            let cps = job_beside_hogs("con", &hogs, phases, "29999us");
            let lag = ps.max_abs_lag;
            let at = format!("mix {mix}, N = {phases}: PS {} slots, CPS {} slots, max |Lag| {lag:.3}", ps.makespan, cps.makespan);
            // CPS: co-scheduled slots every r slots, the last phase done at its slot's end
            // ((N - 1) r + 1 <= Formula 1's ceil(N r); 1 us per phase early), and fair.
            assert!((cps.makespan - ((n - 1.0) * r + 1.0)).abs() < 0.01, "{at}: CPS is not (N - 1) r + 1");
            assert!(cps.max_abs_lag < 1.0, "{at}: CPS max |Lag| {}", cps.max_abs_lag);
            // Lag is measured, not assumed: a HIT vCPU runs whole slots and Lag falls by 1 - 1/r
            // over each, so every range is at least that; mix A is fair, mix B is not.
            assert!(ps.narrowest_lag_range >= 1.0 - 1.0 / r - 1e-9, "{at}: a Lag range {}", ps.narrowest_lag_range);
            assert!(ps.widest_lag_range <= 2.0 * lag + 1e-9, "{at}");
            assert_eq!(lag < 1.0, fair, "{at}");
            // The exact bound, then the ratio.
            let bound = (n * (1.0 + ps.widest_lag_range) + ps.widest_lag_range) * r;
            assert!(ps.makespan <= bound + 1e-9, "{at}: PS exceeds (N (1 + D) + D) r = {bound}");
            let ratio = ps.makespan / cps.makespan;
            assert!(ratio > 1.0, "{at}: ratio {ratio:.3}, PS should not beat CPS");
            assert!(fair || ratio > 1.2, "{at}: ratio {ratio:.3}, |Lag| > 1 should cost PS clearly more");
            assert!(ratio <= 2.0 * lag, "{at}: ratio {ratio:.3} above 2 |Lag|");
        }
    }
}

#[test]
fn with_phases_of_exactly_one_slot_each_ps_phase_costs_an_extra_turn() {
    // Same mixes, phases of exactly 30 ms: a task's compute ends exactly at a slot boundary, the
    // engine handles the boundary first, and the task reaches the barrier only in its vCPU's next
    // turn. Under CPS that costs nothing (the next co-scheduled slot releases everyone at once);
    // under PS the phase ends only after every vCPU had a second turn, so PS costs about twice
    // CPS with the same |Lag| (measured, N = 12: A 68 / 36 = 1.89, B 97 / 49 = 1.98). This is
    // the literal worst case of the seed ("not less than twice"), but it comes from the tie.
    for (mix, hogs, _, _) in FORMULA_2_MIXES {
        let exact = (job_beside_hogs("hit", &hogs, 12, "30ms"), job_beside_hogs("con", &hogs, 12, "30ms"));
        let inside = job_beside_hogs("hit", &hogs, 12, "29999us");
        assert!((exact.0.max_abs_lag - inside.max_abs_lag).abs() < 1e-6, "mix {mix}: the PS schedule changed");
        let ratio = exact.0.makespan / exact.1.makespan;
        assert!(ratio > 1.8, "mix {mix}: PS {} / CPS {} slots", exact.0.makespan, exact.1.makespan);
        assert!(exact.0.makespan > 1.3 * inside.makespan, "mix {mix}: exact {} vs inside {}", exact.0.makespan, inside.makespan);
    }
}

/// The quickstart mix without `iterations` under `hybrid`: the 8-vCPU `barrier`
/// VM left high-throughput beside four 1-vCPU cpu-bound VMs, seed 1, for 200 s. Barrier phases
/// completed in each 40 s window.
fn quickstart_hit_windows() -> Vec<u64> {
    let text = "[host]\npcpus = 8\npolicy = \"hybrid\"\n\
        [[vm]]\nname = \"parallel\"\nvcpus = 8\nworkload = \"barrier\"\nthreads = 8\n\
        [[vm]]\nname = \"seq\"\ncount = 4\nvcpus = 1\nworkload = \"cpu-bound\"\n\
        [run]\nduration = \"200s\"\nseed = 1\n";
    let sc = load_scenario(text, "quickstart-hit.toml").expect("a valid scenario");
    let mut sim = Sim::build(&sc, sc.run.seed, false, false).expect("builds");
    sim.start();
    let mut windows = Vec::new();
    let mut last = 0;
    for end_s in [40u64, 80, 120, 160, 200] {
        sim.run_until(end_s * 1_000_000_000, None).expect("runs");
        let progress = sim.guests()[0].stats.progress;
        windows.push(progress - last);
        last = progress;
    }
    windows
}

#[test]
fn a_high_throughput_barrier_vm_beside_cpu_bound_vms_keeps_progressing_for_200_s() {
    // The spinners of a futex-bucket ticket-lock convoy yield their pCPU at each pause-loop exit
    // to the vCPU queued behind them there, so the preempted vCPUs whose tickets come up run, as
    // under credit's yield (docs/model.md 7.5). When the yield was ignored, the convoy, once
    // formed (at 73.4 s here), never dissolved: windows [49383, 39202, 444, 444, 445] (88,585
    // phases by 80 s, 89,473 by 160 s). Measured now: 48,900-49,800 in every window.
    let w = quickstart_hit_windows();
    assert!(w[0] > 20_000, "only {} phases in the first 40 s: {w:?}", w[0]);
    for (i, n) in w.iter().enumerate().skip(1) {
        assert!(4 * n >= 3 * w[0], "window {i} ({}-{} s) completed {n} phases, the first {}: {w:?}", 40 * i, 40 * (i + 1), w[0]);
    }
}
