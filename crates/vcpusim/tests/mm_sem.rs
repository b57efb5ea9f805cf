//! The guest's mmap_sem (`guest/mm_sem.rs`): the uncontended fast path takes no spinlock, and a
//! contended writer sleeps and is woken by the releasing writer's reschedule IPI.

use vcpusim::api::load_scenario;
use vcpusim::guest::mm_sem::WAIT_LOCK_CLASS;
use vcpusim::sim::state::Sim;
use vcpusim::time::MS;
use vcpusim::vmexit::IpiKind;

/// Run a 2-vCPU VM on 2 pCPUs whose threads run `threads` (TOML op lists) for 50 ms.
fn run(threads: &str) -> Sim {
    let text = format!(
        "[host]\npcpus = 2\n[[vm]]\nname = \"a\"\nvcpus = 2\nworkload = \"program\"\n\
         [vm.program]\nthreads = {threads}\n[run]\nduration = \"50ms\"\n"
    );
    let sc = load_scenario(&text, "<test>").unwrap();
    let mut sim = Sim::build(&sc, 1, false, true).unwrap();
    sim.start();
    sim.run_until(50 * MS, None).unwrap();
    sim
}

#[test]
fn an_uncontended_mmap_munmap_never_touches_the_wait_lock() {
    let sim = run("[[{loop = \"forever\", body = [{compute = \"20us\"}, {mmap = 8}, {munmap = 8}, {progress = true}]}], \
                   [{loop = \"forever\", body = [{compute = \"1ms\"}, {progress = true}]}]]");
    let (vm, guest) = (&sim.vms()[0], &sim.guests()[0]);
    assert!(guest.stats.progress > 1000, "{}", guest.stats.progress);
    assert_eq!(guest.objects.mm_sem.wait_lock, None, "the fast path took wait_lock");
    assert_eq!(vm.stats.ipis_sent.get(&IpiKind::Resched), None);
}

#[test]
fn a_contended_munmap_sleeps_and_the_releasing_writer_wakes_it_with_a_reschedule_ipi() {
    // Thread 0 holds mmap_sem for 250 us of every ~260 us (1000 pages of unmap work plus a
    // shootdown); thread 1's mmaps nearly always find it held, so they sleep.
    let sim = run("[[{loop = \"forever\", body = [{compute = \"10us\"}, {munmap = 1000}, {progress = true}]}], \
                   [{loop = \"forever\", body = [{compute = \"20us\"}, {mmap = 1}, {progress = true}]}]]");
    let (vm, guest) = (&sim.vms()[0], &sim.guests()[0]);
    let wait_lock = guest.objects.mm_sem.wait_lock.expect("contention takes wait_lock");
    assert_eq!(sim.guests().locks()[wait_lock.idx()].class, WAIT_LOCK_CLASS);
    // No futex op in the program: every reschedule IPI is an up_write waking a sleeper.
    let resched = vm.stats.ipis_sent.get(&IpiKind::Resched).copied().unwrap_or(0);
    assert_eq!(guest.stats.futex_waits, 0);
    // The semaphore alternates between the two writers: each up_write finds the other one
    // queued, so a wake-up on most of thread 0's ~190 iterations in 50 ms (115 seen).
    assert!(resched > 80, "{resched} reschedule IPIs");
    assert!(guest.stats.progress > 150, "{}", guest.stats.progress);
    assert!(guest.objects.mm_sem.waiters.len() <= 1);
}
