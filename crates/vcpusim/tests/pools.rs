//! Cpupools and affinity at engine level: each pool keeps its own scheduler and parameters, a
//! pool change moves the pCPU and what was queued there, and vCPUs stay inside their pool and
//! hard affinity (check mode verifies that after every event).

mod common;

use common::{num, run_spans, vm_table, Span};

/// Median run length (ms) of the spans on the given pCPUs.
fn median_ms(spans: &[Span], pcpus: &[u32]) -> f64 {
    let mut lens: Vec<u64> = spans.iter().filter(|s| pcpus.contains(&s.pcpu)).map(|s| s.end_ns - s.start_ns).collect();
    assert!(!lens.is_empty(), "no spans on pCPUs {pcpus:?}");
    lens.sort_unstable();
    lens[lens.len() / 2] as f64 / 1e6
}

fn busy_vms(prefix: &str, count: u32, pool: &str) -> String {
    format!("[[vm]]\nname = \"{prefix}\"\ncount = {count}\nvcpus = 1\nworkload = \"cpu-bound\"\npool = \"{pool}\"\n\n")
}

#[test]
fn two_credit_pools_keep_their_own_timeslices() {
    let text = format!(
        "[host]\npcpus = 4\npolicy = \"credit\"\n\n\
         [[host.pool]]\nname = \"fast\"\npcpus = \"2-3\"\npolicy = \"credit\"\nparams = {{ tslice = \"1ms\" }}\n\n\
         {}{}[run]\nduration = \"2s\"\nseed = 4\n",
        busy_vms("slow", 4, "pool0"),
        busy_vms("quick", 4, "fast")
    );
    let (_, spans) = run_spans(&text, true);
    // Two always-busy vCPUs per pCPU: runs are whole slices (credit may pick the same vCPU again
    // at a slice end, when it is still UNDER and the other OVER: a run of two slices).
    let slow = median_ms(&spans, &[0, 1]);
    let quick = median_ms(&spans, &[2, 3]);
    let whole_slices =
        |median: f64, tslice: f64| median >= 0.97 * tslice && (median - tslice * (median / tslice).round()).abs() < 0.03 * tslice;
    assert!(whole_slices(slow, 30.0), "pool0 (30 ms tslice): median run {slow} ms is not whole slices");
    assert!(whole_slices(quick, 1.0) && quick <= 3.0, "fast (1 ms tslice): median run {quick} ms is not a slice or two");
    for s in &spans {
        let in_fast = s.vm.starts_with("quick");
        assert_eq!(in_fast, s.pcpu >= 2, "{s:?} ran outside its pool");
    }
}

/// A pool change at 1 s moves pCPU 2 from pool0 to "fast": before it only pool0's VMs run there,
/// after it only fast's, and each pool's CPU time follows its pCPU count.
fn pool_change_moves_the_pcpu(policy: &str) {
    let text = format!(
        "[host]\npcpus = 4\npolicy = \"{policy}\"\n\n\
         [[host.pool]]\nname = \"fast\"\npcpus = \"3\"\npolicy = \"{policy}\"\n\n\
         [[host.pool_change]]\nat = \"1s\"\npcpu = 2\nto = \"fast\"\n\n\
         {}{}[run]\nduration = \"2s\"\nseed = 2\n",
        busy_vms("a", 4, "pool0"),
        busy_vms("b", 2, "fast")
    );
    let (out, spans) = run_spans(&text, true);
    let change = 1_000_000_000;
    for s in spans.iter().filter(|s| s.pcpu == 2) {
        if s.end_ns <= change {
            assert!(s.vm.starts_with("a-"), "{policy}: before the change pCPU 2 ran {s:?}");
        }
        if s.start_ns >= change {
            assert!(s.vm.starts_with("b-"), "{policy}: after the change pCPU 2 ran {s:?}");
        }
        assert!(
            !(s.start_ns < change && s.end_ns > change && s.vm.starts_with("a-") && s.end_ns > change + 10_000),
            "{policy}: {s:?} kept running on pCPU 2 after it left pool0"
        );
    }
    let t = vm_table(&out);
    let cpu = |prefix: &str, n: usize| (0..n).map(|i| num(&t, &format!("{prefix}-{i}"), "cpu_time_ms")).sum::<f64>();
    // pool0: 3 pCPUs for 1 s then 2 for 1 s; fast: 1 then 2 (less the start skew, < 30 ms).
    let (a, b) = (cpu("a", 4), cpu("b", 2));
    assert!((a - 5000.0).abs() < 0.02 * 5000.0, "{policy}: pool0 VMs had {a} ms of CPU, expected about 5000");
    assert!((b - 3000.0).abs() < 0.02 * 3000.0, "{policy}: fast VMs had {b} ms of CPU, expected about 3000");
}

#[test]
fn a_credit_pool_change_moves_the_pcpu_and_its_vcpus() {
    pool_change_moves_the_pcpu("credit");
}

#[test]
fn a_cfs_pool_change_moves_the_pcpu_and_its_vcpus() {
    pool_change_moves_the_pcpu("cfs");
}

#[test]
fn cfs_vcpus_run_only_inside_their_hard_affinity() {
    // Every mask shape: a single pCPU, two VMs pinned to the same one, a range, a per-vCPU list.
    let text = "[host]\npcpus = 6\npolicy = \"cfs\"\n\n\
        [[vm]]\nname = \"pinned\"\ncount = 2\nvcpus = 1\nworkload = \"cpu-bound\"\ncpus = \"0\"\n\n\
        [[vm]]\nname = \"par\"\nvcpus = 4\nworkload = \"barrier\"\ncpus = [\"1-2\", \"1-2\", \"3\", \"4-5\"]\n\n\
        [[vm]]\nname = \"free\"\ncount = 2\nvcpus = 1\nworkload = \"cpu-bound\"\n\n\
        [run]\nduration = \"1s\"\nseed = 5\n";
    let (out, spans) = run_spans(text, true);
    let allowed = |vm: &str, pcpu: u32| match vm {
        "pinned-0" | "pinned-1" => pcpu == 0,
        "par" => (1..=5).contains(&pcpu),
        _ => true,
    };
    for s in &spans {
        assert!(allowed(&s.vm, s.pcpu), "{s:?} ran outside its hard affinity");
    }
    // The two vCPUs pinned to pCPU 0 share it.
    let t = vm_table(&out);
    let (p0, p1) = (num(&t, "pinned-0", "cpu_time_ms"), num(&t, "pinned-1", "cpu_time_ms"));
    assert!(p0 + p1 <= 1000.0 && (p0 - p1).abs() < 0.1 * (p0 + p1), "pinned to pCPU 0: {p0} and {p1} ms");
}

#[test]
fn cfs_soft_affinity_is_kept_on_an_idle_host() {
    let text = "[host]\npcpus = 8\npolicy = \"cfs\"\n\n\
        [[vm]]\nname = \"x\"\nvcpus = 1\nworkload = \"mutex\"\nthreads = 1\ncpus_soft = \"2\"\n\n\
        [[vm]]\nname = \"y\"\nvcpus = 1\nworkload = \"tlb\"\nthreads = 1\ncpus_soft = \"3\"\n\n\
        [run]\nduration = \"1s\"\nseed = 1\n";
    let (_, spans) = run_spans(text, true);
    for (vm, pcpu) in [("x", 2), ("y", 3)] {
        let total: u64 = spans.iter().filter(|s| s.vm == vm).map(|s| s.end_ns - s.start_ns).sum();
        let inside: u64 = spans.iter().filter(|s| s.vm == vm && s.pcpu == pcpu).map(|s| s.end_ns - s.start_ns).sum();
        assert!(total > 0, "{vm} never ran");
        assert!(inside as f64 >= 0.99 * total as f64, "{vm}: {inside} of {total} ns on its soft pCPU {pcpu}");
    }
}

/// Seed 002's operation: single vCPUs move into another pool and back while the run goes on
/// (`Sim::move_vcpu`), running, queued or halted. Check mode verifies after every event that
/// every vCPU runs only in its pool; the trace shows the moved vCPU on the right pCPUs.
#[test]
fn vcpus_move_between_credit_and_cfs_pools_and_back() {
    use vcpusim::api::load_scenario;
    use vcpusim::ids::{PoolId, VcpuId};
    use vcpusim::sim::state::Sim;
    let text = "[host]\npcpus = 4\npolicy = \"credit\"\nstart_skew = \"0ns\"\n\n\
        [[host.pool]]\nname = \"micro\"\npcpus = \"3\"\npolicy = \"cfs\"\n\n\
        [[vm]]\nname = \"par\"\nvcpus = 4\nworkload = \"barrier\"\n\n\
        [[vm]]\nname = \"hog\"\ncount = 2\nvcpus = 1\nworkload = \"cpu-bound\"\n\n\
        [run]\nduration = \"1s\"\n";
    let sc = load_scenario(text, "move.toml").expect("loads");
    let mut sim = Sim::build(&sc, 1, true, true).expect("builds");
    sim.start();
    // par's vCPU 2 (host vCPU 2) spends every other 50 ms in "micro" (pCPU 3).
    let v = VcpuId(2);
    let mut windows = Vec::new();
    let mut t = 0;
    for k in 1..20u64 {
        t = k * 50_000_000;
        sim.run_until(t, None).expect("runs in check mode");
        let to = PoolId((k % 2) as u32);
        sim.move_vcpu(v, to).expect("cfs and credit pools take vCPUs");
        windows.push((t, to));
    }
    sim.run_until(t + 50_000_000, None).expect("runs");
    sim.finish();
    let out = vcpusim::run::report::build(&sim, &sc, 1, false);
    let spans = common::spans_of(&out);
    let pool_at = |ns: u64| windows.iter().rev().find(|(at, _)| *at <= ns).map_or(PoolId(0), |w| w.1);
    let mut in_micro = 0;
    for s in spans.iter().filter(|s| s.vm == "par" && s.vcpu == 2) {
        // A span starts after its move (a switch-in happens after the policy placed it).
        let pool = pool_at(s.start_ns);
        assert_eq!(s.pcpu == 3, pool == PoolId(1), "{s:?} while in pool {pool:?}");
        if s.pcpu == 3 {
            in_micro += s.end_ns - s.start_ns;
        }
    }
    assert!(in_micro > 100_000_000, "the moved vCPU ran only {in_micro} ns in micro");
    // The other vCPUs never left pool0.
    assert!(spans.iter().filter(|s| !(s.vm == "par" && s.vcpu == 2)).all(|s| s.pcpu != 3));
    // Moving into a gang pool is refused with a reason.
    let gang = text.replace("policy = \"cfs\"", "policy = \"gang\"");
    let sc = load_scenario(&gang, "move.toml").expect("loads");
    let mut sim = Sim::build(&sc, 1, false, true).expect("builds");
    sim.start();
    sim.run_until(10_000_000, None).expect("runs");
    let err = sim.move_vcpu(v, PoolId(1)).unwrap_err();
    assert!(err.contains("runs gang, which cannot gain or lose vCPUs"), "{err}");
}

/// `xl vcpu-pin` while the run goes on (`Sim::set_affinity`): after each change every vCPU runs
/// only inside its new hard mask (check mode verifies it after every event; the trace shows it),
/// under credit and cfs; a mask with no pCPU in the pool is refused.
fn repinning_moves_vcpus_at_once(policy: &str) {
    use vcpusim::api::load_scenario;
    use vcpusim::hardware::cpumask::{parse_cpulist, CpuMask};
    use vcpusim::ids::VcpuId;
    use vcpusim::sim::state::Sim;
    let text = format!(
        "[host]\npcpus = 4\npolicy = \"{policy}\"\nstart_skew = \"0ns\"\n\n\
         [[vm]]\nname = \"par\"\nvcpus = 3\nworkload = \"barrier\"\n\n\
         [[vm]]\nname = \"hog\"\ncount = 3\nvcpus = 1\nworkload = \"cpu-bound\"\n\n\
         [run]\nduration = \"1s\"\n"
    );
    let sc = load_scenario(&text, "pin.toml").expect("loads");
    let mut sim = Sim::build(&sc, 1, true, true).expect("builds");
    sim.start();
    let masks = ["0", "1-2", "3", "0,3", "2", "0-3"];
    // (time, vCPU, mask) of every change, and the masks in effect per vCPU from then on.
    let mut changes: Vec<(u64, u32, &str)> = Vec::new();
    for k in 1..30u64 {
        let t = k * 30_000_000 + 7_000;
        sim.run_until(t, None).expect("runs in check mode");
        let v = (k * 5 % 6) as u32;
        let mask = masks[(k * 7 % 6) as usize];
        let hard = parse_cpulist(mask, 4).expect("a cpulist");
        sim.set_affinity(VcpuId(v), hard, CpuMask::full(4)).expect("a mask inside the pool");
        changes.push((t, v, mask));
    }
    sim.run_until(1_000_000_000, None).expect("runs");
    sim.finish();
    let out = vcpusim::run::report::build(&sim, &sc, 1, false);
    let spans = common::spans_of(&out);
    let vcpu_of = |s: &Span| if s.vm == "par" { s.vcpu } else { 3 + s.vm.trim_start_matches("hog-").parse::<u32>().expect("hog-N") };
    for s in &spans {
        let v = vcpu_of(s);
        if let Some((_, _, mask)) = changes.iter().rev().find(|(t, w, _)| *w == v && *t <= s.start_ns) {
            let allowed = parse_cpulist(mask, 4).expect("a cpulist");
            assert!(allowed.contains(vcpusim::ids::PcpuId(s.pcpu)), "{policy}: {s:?} outside its mask {mask:?}");
        }
    }
    let err = sim.set_affinity(VcpuId(0), CpuMask::empty(), CpuMask::full(4)).unwrap_err();
    assert!(err.contains("has no pCPU in its pool"), "{err}");
}

#[test]
fn credit_repinning_moves_vcpus_at_once() {
    repinning_moves_vcpus_at_once("credit");
}

#[test]
fn cfs_repinning_moves_vcpus_at_once() {
    repinning_moves_vcpus_at_once("cfs");
}

/// A vCPU moved into a pool goes where that pool's policy picks (`Policy::pick_pcpu`, Xen's
/// `pick_resource` in `sched_move_domain`): under cfs the idle pCPU of the pool, not the busy
/// one its home would be, so it starts running at once.
#[test]
fn a_moved_vcpu_lands_where_the_new_pool_picks() {
    use vcpusim::api::load_scenario;
    use vcpusim::ids::{PoolId, VcpuId};
    use vcpusim::sim::state::Sim;
    let text = "[host]\npcpus = 4\npolicy = \"cfs\"\nstart_skew = \"0ns\"\n\n\
        [[host.pool]]\nname = \"p\"\npcpus = \"2-3\"\npolicy = \"cfs\"\n\n\
        [[vm]]\nname = \"mover\"\nvcpus = 1\nworkload = \"cpu-bound\"\n\n\
        [[vm]]\nname = \"busy\"\nvcpus = 1\nworkload = \"cpu-bound\"\npool = \"p\"\ncpus = \"2\"\n\n\
        [run]\nduration = \"200ms\"\n";
    let sc = load_scenario(text, "pick.toml").expect("loads");
    let mut sim = Sim::build(&sc, 1, true, true).expect("builds");
    sim.start();
    sim.run_until(50_000_000, None).expect("runs");
    sim.move_vcpu(VcpuId(0), PoolId(1)).expect("moves");
    sim.run_until(200_000_000, None).expect("runs");
    sim.finish();
    let spans = common::spans_of(&vcpusim::run::report::build(&sim, &sc, 1, false));
    let first =
        spans.iter().filter(|s| s.vm == "mover" && s.start_ns >= 50_000_000).min_by_key(|s| s.start_ns).expect("it ran after the move");
    assert_eq!(first.pcpu, 3, "{first:?}");
    assert!(first.start_ns < 50_100_000, "{first:?} waited");
}

/// A pool no VM was put in idles its pCPUs, under every policy, beside a busy pool of the same
/// policy; and a pool's instance that never saw a vCPU schedules those pCPUs without a panic
/// (eevdf's newly-idle balance must not read the domains of a pool it has not built: that is a
/// Rust panic at the first schedule of an empty pool's pCPU).
#[test]
fn a_pool_without_vcpus_idles_under_every_policy() {
    for kind in vcpusim::hypervisor::policies::registry() {
        let policy = kind.name();
        let text = format!(
            "[host]\npcpus = 4\npolicy = \"{policy}\"\n\n\
             [[host.pool]]\nname = \"empty\"\npcpus = \"2-3\"\npolicy = \"{policy}\"\n\n\
             {}[run]\nduration = \"300ms\"\nseed = 3\n",
            busy_vms("a", 3, "pool0")
        );
        let (_, spans) = run_spans(&text, true);
        assert!(spans.iter().all(|s| s.pcpu < 2), "{policy}: a vCPU ran in the empty pool");
        assert!(spans.iter().any(|s| s.pcpu == 1), "{policy}: pool0 did not run");
    }
}
