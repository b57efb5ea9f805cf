//! Seed 003 (IRS, issue 14 parts 1-2): the preemption overlay seam (hypervisor/overlay.rs,
//! sim/overlay.rs), the hypervisor's notice with its ack or timeout, the guest's SA receiver and
//! migrator (guest/irs.rs), all in check mode (the hold is within its bound after every event;
//! no thread is lost or duplicated; a thread is off the vCPU when the guest acknowledges).

use vcpusim::api::load_scenario;
use vcpusim::sim::state::Sim;
use vcpusim::time::{MS, US};
use vcpusim::SimError;

/// A 4-vCPU blocking parallel VM whose vCPUs share pCPUs with pinned single-vCPU hogs (the
/// issue's configuration contract, seed 003 slide 5's layout).
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

fn run_text(text: &str, ms: u64) -> Sim {
    let sc = load_scenario(text, "<irs test>").expect("the scenario loads");
    let mut sim = Sim::build(&sc, sc.run.seed, false, true).expect("builds");
    sim.start();
    sim.run_until(ms * MS, None).expect("runs in check mode without an invariant failing");
    sim.finish();
    sim
}

#[test]
fn irs_notifies_moves_threads_and_switches_within_the_notify_delay() {
    let sim = run_text(&scenario(IRS, true, "parsec.streamcluster"), 400);
    let ov = sim.overlay.as_ref().expect("overlay built");
    let s = ov.stats;
    eprintln!("{s:?}");
    assert!(s.notices >= 3, "involuntary preemptions of par's vCPUs were notified: {s:?}");
    assert!(s.acks > 0, "the guest acknowledged: {s:?}");
    assert!(s.migrated > 0, "threads were moved to siblings: {s:?}");
    assert!(s.delay_max_ns <= 23 * US, "every switch within the notify delay: {s:?}");
}
