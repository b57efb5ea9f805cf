//! glibc 2.15's condition-variable broadcast (FUTEX_CMP_REQUEUE onto the mutex, woken one at a
//! time as the mutex is released) and PARSEC's `parsec_barrier` built on it (`guest/sync.rs`,
//! `guest/futex.rs`).

use vcpusim::api::load_scenario;
use vcpusim::guest::thread::FutexKey;
use vcpusim::sim::state::Sim;
use vcpusim::time::MS;

/// Run one VM of `vcpus` vCPUs on as many pCPUs with `[vm.program]` body `program` for `ms`.
fn run(vcpus: u32, program: &str, ms: u64) -> Sim {
    let text = format!(
        "[host]\npcpus = {vcpus}\n[[vm]]\nname = \"a\"\nvcpus = {vcpus}\nworkload = \"program\"\n\
         [vm.program]\n{program}\n[run]\nduration = \"{ms}ms\"\n"
    );
    let sc = load_scenario(&text, "<test>").unwrap();
    let mut sim = Sim::build(&sc, 1, false, true).unwrap();
    sim.start();
    sim.run_until(ms * MS, None).unwrap();
    sim
}

/// Thread 0 broadcasts every 2 ms while holding the mutex for 200 us; threads 1-3 wait on the
/// condition variable and leave 100 us between their unlock and their next wait.
const BROADCAST: &str = "mutexes = 1\nconds = 1\nthreads = [\
    [{loop = \"forever\", body = [{compute = \"2ms\"}, {lock = 0}, {broadcast = 0}, {compute = \"200us\"}, {unlock = 0}, {progress = true}]}], \
    [{loop = \"forever\", body = [{lock = 0}, {cond_wait = 0, mutex = 0}, {unlock = 0}, {compute = \"100us\"}]}], \
    [{loop = \"forever\", body = [{lock = 0}, {cond_wait = 0, mutex = 0}, {unlock = 0}, {compute = \"100us\"}]}], \
    [{loop = \"forever\", body = [{lock = 0}, {cond_wait = 0, mutex = 0}, {unlock = 0}, {compute = \"100us\"}]}]]";

#[test]
fn a_broadcast_wakes_one_waiter_and_requeues_the_others_onto_the_mutex() {
    // Stop 100 us into the first 200 us hold: the broadcaster holds the mutex. One waiter was
    // woken (and, finding the mutex held, sleeps on it: lll_cond_lock), the other two were moved
    // onto the mutex's futex without waking: all three sleep on the mutex, the woken one last.
    let text = format!(
        "[host]\npcpus = 4\n[[vm]]\nname = \"a\"\nvcpus = 4\nworkload = \"program\"\n[vm.program]\n{BROADCAST}\n\
         [run]\nduration = \"10ms\"\n"
    );
    let sc = load_scenario(&text, "<test>").unwrap();
    let mut sim = Sim::build(&sc, 1, false, true).unwrap();
    sim.start();
    // The first broadcast comes after 2 ms of compute, plus the pCPUs' start skew (up to 30 ms).
    let mut t = 0;
    let mut seen = false;
    while t < 40 * MS && !seen {
        t += MS / 50;
        sim.run_until(t, None).unwrap();
        let guest = &sim.guests()[0];
        if guest.objects.conds[0] == 1 && guest.objects.mutexes[0] != vcpusim::guest::objects::MutexWord::Free {
            let on_mutex = guest.objects.futex_waiters.get(&FutexKey::Mutex(0)).map(|q| q.len()).unwrap_or(0);
            let on_cond = guest.objects.futex_waiters.get(&FutexKey::Cond(0)).map(|q| q.len()).unwrap_or(0);
            if on_mutex == 3 {
                assert_eq!(on_cond, 0);
                // One futex_wait per waiter on the condition, one more by the woken waiter.
                assert_eq!(guest.stats.futex_waits, 4, "the requeued waiters did not wake");
                seen = true;
            }
        }
    }
    assert!(seen, "never saw the three waiters on the mutex after the broadcast");
}

#[test]
fn requeued_waiters_wake_one_by_one_through_the_mutex() {
    // Per round: three waits on the condition, and one on the mutex by the waiter the broadcast
    // woke. Waking all three (no requeue) makes each find the mutex held and sleep on it: six.
    let sim = run(4, BROADCAST, 200);
    let guest = &sim.guests()[0];
    let rounds = guest.stats.progress;
    assert!(rounds > 80, "{rounds} rounds");
    let per_round = guest.stats.futex_waits as f64 / rounds as f64;
    assert!((3.8..4.3).contains(&per_round), "{per_round} futex waits per round");
}

/// Eight threads in bulk-synchronous phases of uniform 300-400 us, at barrier 0 built as `imp`.
fn phases(imp: &str, wait: &str) -> String {
    format!(
        "barriers = [8]\nthreads = [[{{loop = \"forever\", body = [{{compute = {{uniform = [\"300us\", \"400us\"]}}}}, \
         {{barrier = 0, impl = \"{imp}\", {wait}}}, {{progress = true}}]}}]]"
    )
}

#[test]
fn parsec_barrier_phases_run_solo_at_the_pthread_barriers_pace_on_a_mutex_and_a_condition() {
    let pthread = run(8, &phases("pthread", "wait = \"block\""), 100);
    for wait in ["wait = \"block\"", "wait = \"spin-then-block\", spin = \"100us\""] {
        let sim = run(8, &phases("parsec", wait), 100);
        let guest = &sim.guests()[0];
        let (p, q) = (guest.stats.progress as f64, pthread.guests()[0].stats.progress as f64);
        // Every thread counts a phase: 8 per barrier opening.
        assert!(p > 0.9 * q && p < 1.1 * q, "{wait}: {p} phases vs pthread's {q}");
        // No thread ever sleeps on the pthread barrier's word; they sleep on the condition.
        assert!(!guest.objects.futex_waiters.contains_key(&FutexKey::Barrier(0)));
        let pb = &guest.objects.parsec[0];
        assert!(guest.objects.futex_waiters.keys().all(|k| *k == FutexKey::Cond(pb.cond) || *k == FutexKey::Mutex(pb.mutex)));
        if wait.contains("block\"") && !wait.contains("spin") {
            assert!(guest.stats.futex_waits as f64 >= 7.0 * q / 8.0, "every non-last arriver cond_waits");
        }
    }
}

#[test]
fn futex_words_in_different_buckets_take_different_bucket_locks() {
    // Two pairs of threads, each pair contending for its own mutex: the two mutex words hash
    // to buckets 60 and 63 (Linux 3.2's hash_futex), so their futex calls take two different
    // bucket spinlocks and never spin on each other's.
    let program = "mutexes = 2\nthreads = [\
        [{loop = \"forever\", body = [{lock = 0}, {compute = \"20us\"}, {unlock = 0}, {compute = \"5us\"}, {progress = true}]}], \
        [{loop = \"forever\", body = [{lock = 0}, {compute = \"20us\"}, {unlock = 0}, {compute = \"5us\"}, {progress = true}]}], \
        [{loop = \"forever\", body = [{lock = 1}, {compute = \"20us\"}, {unlock = 1}, {compute = \"5us\"}, {progress = true}]}], \
        [{loop = \"forever\", body = [{lock = 1}, {compute = \"20us\"}, {unlock = 1}, {compute = \"5us\"}, {progress = true}]}]]";
    let sim = run(4, program, 50);
    let guest = &sim.guests()[0];
    assert!(guest.stats.futex_waits > 100, "{} futex waits", guest.stats.futex_waits);
    let objects = &guest.objects;
    assert_ne!(objects.futex_bucket(FutexKey::Mutex(0), 256), objects.futex_bucket(FutexKey::Mutex(1), 256));
    let (l0, l1) = (objects.bucket_lock[&FutexKey::Mutex(0)], objects.bucket_lock[&FutexKey::Mutex(1)]);
    assert_ne!(l0, l1);
}
