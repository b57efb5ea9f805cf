//! Seed 002's micro-sliced cores (`hypervisor/microsliced/`, `sim/microsliced.rs`): a TLB-heavy
//! VM (PARSEC dedup) beside an always-busy VM on 8 pCPUs under Xen 4.7's credit, in check mode,
//! so the micro pool's invariants (no vCPU waits behind another on a micro pCPU; every
//! accelerated vCPU back within one micro slice plus a context switch) hold after every event.

use vcpusim::api::load_scenario;
use vcpusim::hypervisor::microsliced::{AccelReason, MicroConfig, Mode};
use vcpusim::sim::state::Sim;
use vcpusim::time::MS;

const SCENARIO: &str = "[host]\npcpus = 8\npolicy = \"credit\"\nparams = { xen = \"4.7\" }\n\
     [[vm]]\nname = \"dedup\"\nvcpus = 8\nworkload = \"parsec.dedup\"\nthreads = 8\n\
     [[vm]]\nname = \"hog\"\nvcpus = 8\nworkload = \"cpu-bound\"\n\
     [run]\nduration = \"300ms\"\n";

/// Run the scenario with `micro` for 300 ms in check mode; return the finished sim.
fn run(micro: Option<MicroConfig>) -> Sim {
    let mut sc = load_scenario(SCENARIO, "<microsliced test>").expect("the scenario loads");
    sc.host.microsliced = micro;
    let mut sim = Sim::build(&sc, sc.run.seed, false, true).expect("builds");
    sim.start();
    sim.run_until(300 * MS, None).expect("runs in check mode without an invariant failing");
    sim.finish();
    sim
}

fn accelerated(sim: &Sim, vm: usize) -> u64 {
    sim.vms[vm].stats.accelerated.iter().sum()
}

#[test]
fn static_micro_cores_accelerate_preempted_tlb_recipients_and_hold_the_invariants() {
    let sim = run(Some(MicroConfig { mode: Mode::Static, cores: 2, ..MicroConfig::default() }));
    let m = sim.micro.as_ref().expect("micro pool built");
    assert_eq!(sim.pools[m.pool.idx()].view.pcpus.len(), 2, "two micro pCPUs");
    let tlb = sim.vms[0].stats.accelerated[AccelReason::TlbSync.idx()];
    assert!(tlb > 20, "dedup's preempted siblings were accelerated at its TLB waits ({tlb})");
    assert_eq!(accelerated(&sim, 1), 0, "the hog never yields in a critical function");
    assert!(m.loans.iter().all(|l| l.is_none()) || sim.vcpu_pool.iter().any(|p| *p == m.pool));
}

#[test]
fn with_the_symbol_channel_off_nothing_is_detected_or_accelerated() {
    let sim = run(Some(MicroConfig { mode: Mode::Static, cores: 2, symbols: false, ..MicroConfig::default() }));
    let m = sim.micro.as_ref().expect("micro pool built");
    assert_eq!(accelerated(&sim, 0) + accelerated(&sim, 1), 0);
    assert_eq!((m.counts.ipis, m.counts.ples, m.counts.irqs, m.refused), (0, 0, 0, 0), "nothing detected");
    // The same run with the channel on does detect (the test above): it is the channel that matters.
}

#[test]
fn dynamic_mode_resizes_the_pool_by_algorithm_1() {
    let sim = run(Some(MicroConfig { mode: Mode::Dynamic, cores: 3, epoch: 100 * MS, ..MicroConfig::default() }));
    let m = sim.micro.as_ref().expect("micro pool built");
    let sizes: Vec<u32> = m.sizes.iter().map(|s| s.1).collect();
    assert_eq!(sizes[0], 0, "starts with no micro core");
    assert!(sizes.contains(&1), "profiling took a core: {sizes:?}");
    assert!(accelerated(&sim, 0) > 0, "vCPUs were accelerated on the dynamic pool");
}

#[test]
fn without_microsliced_no_micro_pool_exists() {
    let sim = run(None);
    assert!(sim.micro.is_none());
    assert_eq!(sim.pools.len(), 1);
    assert_eq!(accelerated(&sim, 0), 0);
}
