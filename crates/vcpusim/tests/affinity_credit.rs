//! Hard and soft affinity under Credit at the engine level (hypervisor/policies/credit.rs:
//! `_csched_cpu_pick`, `__runq_tickle`, `csched_load_balance` with their affinity balance steps).
//! Scenarios are built from TOML, then the masks are set on the `Sim` before `start` (the scenario
//! keys are not needed); every run is in check mode, so the engine's invariants, including "a
//! running vCPU is inside its pool and its hard affinity", run after every event, and a
//! `do_schedule` answer outside hard affinity fails the run at once.

mod common;

use common::Rng;
use vcpusim::api::load_scenario;
use vcpusim::hardware::cpumask::CpuMask;
use vcpusim::hypervisor::host_view::Affinity;
use vcpusim::ids::{PcpuId, VcpuId};
use vcpusim::sim::state::Sim;
use vcpusim::time::{MS, SEC};

fn mask(pcpus: &[u32]) -> CpuMask {
    CpuMask::from_pcpus(pcpus.iter().map(|&p| PcpuId(p)))
}

fn build(text: &str) -> Sim {
    let sc = load_scenario(text, "<test>").unwrap_or_else(|e| panic!("{e}\n{text}"));
    Sim::build(&sc, sc.run.seed, false, true).unwrap()
}

/// Run `sim` event by event until `until`, charging each vCPU's time on each pCPU (from the
/// engine's `vinfo[v].pcpu` between events). Returns `[vcpu][pcpu]` run time in ns. Panics on
/// any engine error (invariants are checked after every event).
fn run_measured(sim: &mut Sim, until: u64) -> Vec<Vec<u64>> {
    let npcpus = sim.pinfo().len();
    let mut on = vec![vec![0u64; npcpus]; sim.vinfo().len()];
    sim.start();
    let mut last = 0;
    loop {
        let next = sim.next_event_at().filter(|&t| t <= until);
        let t = next.unwrap_or(until);
        for (v, info) in sim.vinfo().iter().enumerate() {
            if let Some(p) = info.pcpu {
                on[v][p.idx()] += t - last;
            }
        }
        last = t;
        let Some(t) = next else { break };
        sim.run_until(t, None).unwrap_or_else(|e| panic!("{e}"));
    }
    on
}

/// A random non-empty mask over `n` pCPUs: a single pCPU (a pin) a third of the time, otherwise
/// each pCPU with probability 1/2.
fn random_mask(rng: &mut Rng, n: u32) -> CpuMask {
    if rng.below(3) == 0 {
        return mask(&[rng.below(n as u64) as u32]);
    }
    loop {
        let m = CpuMask::from_pcpus((0..n).filter(|_| rng.below(2) == 0).map(PcpuId));
        if !m.is_empty() {
            return m;
        }
    }
}

#[test]
fn random_hard_masks_are_never_left_and_runs_pass_every_invariant() {
    let topologies = ["pcpus = 8", "pcpus = 8\nsockets = 2\nthreads_per_core = 2", "pcpus = 6\nsockets = 2\nnuma_nodes = 2"];
    let workloads = ["cpu-bound", "barrier", "mutex"];
    let mut total_runs = 0;
    for seed in 0..6u64 {
        let topo = topologies[(seed % 3) as usize];
        let text = format!(
            "[host]\n{topo}\npolicy = \"credit\"\n\
             [[vm]]\nname = \"a\"\nvcpus = 4\nworkload = \"{}\"\n\
             [[vm]]\nname = \"b\"\nvcpus = 3\nworkload = \"{}\"\n\
             [[vm]]\nname = \"c\"\nvcpus = 2\nworkload = \"{}\"\n\
             [[vm]]\nname = \"d\"\nvcpus = 1\nweight = 512\nworkload = \"cpu-bound\"\n\
             [run]\nduration = \"1500ms\"\nseed = {seed}\n",
            workloads[(seed % 3) as usize],
            workloads[((seed + 1) % 3) as usize],
            workloads[((seed + 2) % 3) as usize],
        );
        let mut sim = build(&text);
        let n = sim.pinfo().len() as u32;
        let mut rng = Rng::new(seed);
        for v in 0..sim.vinfo().len() {
            let hard = random_mask(&mut rng, n);
            // A soft mask for some: random, possibly disjoint from the hard one.
            let soft = if rng.below(2) == 0 { random_mask(&mut rng, n) } else { CpuMask::full(n as usize) };
            sim.placement_mut().set_affinity(VcpuId(v as u32), Affinity::new(hard, soft));
        }
        let until = 1500 * MS;
        let on = run_measured(&mut sim, until);
        let mut ran = 0;
        for (v, per_pcpu) in on.iter().enumerate() {
            for (p, &t) in per_pcpu.iter().enumerate() {
                assert!(
                    t == 0 || sim.placement().affinity(VcpuId(v as u32)).hard.contains(PcpuId(p as u32)),
                    "seed {seed}: vCPU {v} ran {t} ns on pCPU {p}, outside its hard affinity {:?}",
                    sim.placement().affinity(VcpuId(v as u32)).hard
                );
                ran += t;
            }
        }
        // The host did work: the cpu-bound VM alone keeps a pCPU busy.
        assert!(ran > until, "seed {seed}: only {ran} ns of vCPU time");
        total_runs += 1;
    }
    assert_eq!(total_runs, 6);
}

#[test]
fn soft_affinity_is_honoured_whenever_a_preferred_pcpu_is_free() {
    // Two busy 1-vCPU VMs with soft masks {2} and {3} on an otherwise idle 8-pCPU host (2 sockets x
    // 2 cores x 2 threads, so the idle-core preference of `_csched_cpu_pick` pulls the other way).
    let text = "[host]\npcpus = 8\nsockets = 2\nthreads_per_core = 2\npolicy = \"credit\"\nstart_skew = \"0ms\"\n\
                [[vm]]\nname = \"x\"\nvcpus = 1\nworkload = \"cpu-bound\"\n\
                [[vm]]\nname = \"y\"\nvcpus = 1\nworkload = \"cpu-bound\"\n\
                [run]\nduration = \"2s\"\nseed = 5\n";
    let mut sim = build(text);
    let full = CpuMask::full(8);
    sim.placement_mut().set_affinity(VcpuId(0), Affinity::new(full.clone(), mask(&[2])));
    sim.placement_mut().set_affinity(VcpuId(1), Affinity::new(full.clone(), mask(&[3])));
    let on = run_measured(&mut sim, 2 * SEC);
    for (v, want) in [(0usize, 2usize), (1, 3)] {
        let total: u64 = on[v].iter().sum();
        let share = on[v][want] as f64 / total as f64;
        assert!(total > 19 * SEC / 10, "vCPU {v} ran only {total} ns");
        assert!(share >= 0.99, "vCPU {v} ran {:.4} of its time on its soft pCPU {want}: {:?}", share, on[v]);
    }
}

#[test]
fn soft_affinity_yields_to_hard_when_the_preferred_pcpu_is_taken() {
    // Two busy vCPUs share the soft mask {1} on 4 pCPUs: only one fits there, the other runs
    // elsewhere rather than waiting (soft affinity is a preference, the hard step finds an idler).
    let text = "[host]\npcpus = 4\npolicy = \"credit\"\nstart_skew = \"0ms\"\n\
                [[vm]]\nname = \"x\"\nvcpus = 2\nworkload = \"cpu-bound\"\n\
                [run]\nduration = \"1s\"\nseed = 2\n";
    let mut sim = build(text);
    for v in 0..2 {
        sim.placement_mut().set_affinity(VcpuId(v as u32), Affinity::new(CpuMask::full(4), mask(&[1])));
    }
    let on = run_measured(&mut sim, SEC);
    let total: Vec<u64> = on.iter().map(|r| r.iter().sum()).collect();
    for (v, &t) in total.iter().enumerate() {
        assert!(t > 99 * SEC / 100, "vCPU {v} waited instead of using a free pCPU: ran {t} ns: {on:?}");
    }
    let on_soft = on[0][1] + on[1][1];
    assert!(on_soft > 99 * SEC / 100, "pCPU 1 ran a soft-affine vCPU only {on_soft} ns");
}

#[test]
fn two_vcpus_pinned_to_one_pcpu_share_it_evenly_and_never_leave() {
    let text = "[host]\npcpus = 4\npolicy = \"credit\"\nstart_skew = \"0ms\"\n\
                [[vm]]\nname = \"p\"\ncount = 2\nvcpus = 1\nworkload = \"cpu-bound\"\n\
                [[vm]]\nname = \"free\"\nvcpus = 2\nworkload = \"cpu-bound\"\n\
                [run]\nduration = \"3s\"\nseed = 9\n";
    let mut sim = build(text);
    for v in 0..2 {
        sim.placement_mut().set_affinity(VcpuId(v as u32), Affinity::new(mask(&[0]), CpuMask::full(4)));
    }
    let until = 3 * SEC;
    let on = run_measured(&mut sim, until);
    for (v, on_v) in on.iter().enumerate().take(2) {
        let elsewhere: u64 = on_v[1..].iter().sum();
        assert_eq!(elsewhere, 0, "pinned vCPU {v} ran off pCPU 0: {on_v:?}");
    }
    let (a, b) = (on[0][0] as f64, on[1][0] as f64);
    assert!(a + b > 0.999 * until as f64, "pCPU 0 idled: {a} + {b}: {on:?}");
    let share = a / (a + b);
    assert!((share - 0.5).abs() < 0.03, "pinned vCPUs split pCPU 0 as {share:.3} / {:.3}", 1.0 - share);
    // The free vCPUs never need pCPU 0 (three other pCPUs for two of them) and keep running.
    for (v, on_v) in on.iter().enumerate().take(4).skip(2) {
        let total: u64 = on_v.iter().sum();
        assert!(total > 99 * until / 100, "free vCPU {v} ran {total} ns");
    }
}
