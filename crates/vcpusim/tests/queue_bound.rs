//! The event queue stays bounded by a small multiple of pCPUs + vCPUs under a PLE
//! storm, however long the run. Credit re-arms each pCPU's 30 ms slice end at every schedule
//! (Xen `csched_schedule` returns `ret.time`, `schedule()` re-sets `s_timer`), and a pause-loop
//! exit storm schedules every few microseconds: with lazily cancelled events the heap held every
//! superseded slice end until its 30 ms were up (229 k entries at 64 pCPUs). Asserts on the peak
//! length the engine reports (`EventQueue::peak_len`), never on time.

use vcpusim::api::load_scenario;
use vcpusim::sim::state::Sim;
use vcpusim::time::SEC;

/// Two 4-vCPU VMs whose threads take a shared mutex every 10 us on 2 pCPUs under credit: the
/// futex-bucket spinlock is held by preempted vCPUs all the time, so spinners pause-loop exit
/// (a storm: thousands of exits per simulated second, each a credit schedule).
fn storm(duration_s: u64) -> Sim {
    let text = format!(
        "[host]\npcpus = 2\npolicy = \"credit\"\n\n\
         [[vm]]\nname = \"m\"\ncount = 2\nvcpus = 4\nworkload = \"mutex\"\nthreads = 4\n\
         params = {{ work = \"10us\", critical = \"5us\" }}\n\n\
         [run]\nduration = \"{duration_s}s\"\nseed = 1\n"
    );
    let scenario = load_scenario(&text, "queue_bound storm").expect("the storm scenario loads");
    let mut sim = Sim::build(&scenario, 1, false, false).expect("builds");
    sim.start();
    sim.run_until(duration_s * SEC, None).expect("runs");
    sim
}

#[test]
fn queue_stays_bounded_over_60_simulated_seconds_of_a_credit_ple_storm() {
    let sim = storm(60);
    let (pcpus, vcpus) = (2, 8);
    let ple_exits: u64 = sim.vms().iter().map(|vm| vm.stats.ple_exits).sum();
    assert!(ple_exits > 60 * 2_000, "a storm: {ple_exits} PLE exits in 60 s");
    eprintln!("peak queue length {} after {} events, {ple_exits} PLE exits", sim.queue().peak_len(), sim.events());
    // Live: per pCPU one slice end, per vCPU its dispatch / activity end / PLE exit / guest
    // tick / IPIs in flight and the events their switches left stale, plus credit's timers;
    // the heap also holds cancelled keys, never more than the live ones plus
    // `EventQueue`'s COMPACT_SLACK (16).
    let bound = 4 * (pcpus + vcpus) + 8;
    let peak = sim.queue().peak_len();
    assert!(peak <= bound, "peak queue length {peak} > {bound} ({ple_exits} PLE exits)");
}
