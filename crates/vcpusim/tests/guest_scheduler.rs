//! The guest scheduler's run masks (guest/scheduler.rs `RunMasks`): the newidle pull, wake
//! placement and tick balancing read which vCPUs have threads queued and which are idle from two
//! masks instead of scanning every sibling. Random sequences of the scheduler's
//! operations on a VM wider than one mask word are checked, operation by operation, against
//! plain scans of every sibling: the same thread pulled, the same vCPU chosen, the same cursor, and
//! masks that match the vCPUs' state.

use rand::Rng;
use rand_pcg::Pcg64Mcg;
use vcpusim::api::load_scenario;
use vcpusim::guest::kernel::GuestKernel;
use vcpusim::guest::scheduler::RunMasks;
use vcpusim::guest::thread::{FutexKey, ThreadState};
use vcpusim::ids::ThreadId;
use vcpusim::sim::state::Sim;

/// A VM of `vcpus` vCPUs with `threads` threads, built but not run.
fn built(vcpus: usize, threads: usize) -> Sim {
    let text = format!(
        "[host]\npcpus = 4\npolicy = \"cfs\"\n\
         [[vm]]\nname = \"w\"\nvcpus = {vcpus}\nthreads = {threads}\nworkload = \"program\"\n\
         [vm.program]\nthreads = [[{{loop = \"forever\", body = [{{compute = \"1ms\"}}]}}]]\n\
         [run]\nduration = \"10ms\"\n"
    );
    let sc = load_scenario(&text, "<t>").unwrap();
    Sim::build(&sc, 1, false, false).unwrap()
}

/// The sibling the newidle pull takes from, as the scan before the masks found it: the longest
/// run queue other than `i`, ties to the lowest id.
fn scan_busiest(g: &GuestKernel, i: usize) -> Option<usize> {
    (0..g.vcpus.len())
        .filter(|&u| u != i && !g.vcpus[u].runqueue.is_empty())
        .max_by_key(|&u| (g.vcpus[u].runqueue.len(), std::cmp::Reverse(g.vcpus[u].id.0)))
}

/// Wake placement as the scan before the masks did it (no PV, no IRS): the previous vCPU if
/// idle, else the first idle one from the cursor round, else the previous; and the new cursor.
fn scan_wake_target(g: &GuestKernel, prev: usize) -> (usize, usize) {
    let n = g.vcpus.len();
    if g.vcpus[prev].idle() {
        return (prev, g.wake_cursor);
    }
    for k in 0..n {
        let u = (g.wake_cursor + k) % n;
        if g.vcpus[u].idle() {
            return (u, (g.wake_cursor + k + 1) % n);
        }
    }
    (prev, g.wake_cursor)
}

fn assert_masks(g: &GuestKernel, step: usize, what: &str) {
    if let Some(i) = g.run_masks.mismatch(&g.vcpus) {
        panic!("step {step} ({what}): the run masks disagree with vCPU index {i}");
    }
}

#[test]
fn the_run_masks_give_the_choices_of_a_scan_over_every_sibling() {
    let (mut pulls, mut placed_away, mut balanced) = (0, 0, 0);
    for (vcpus, threads, seed) in [(70, 90, 1u64), (70, 40, 2), (130, 200, 3), (5, 9, 4)] {
        let mut s = built(vcpus, threads);
        let (g, th, pv) = s.drive_guest(0);
        assert_masks(g, 0, "build");
        let mut blocked: Vec<ThreadId> = Vec::new();
        let mut rng = Pcg64Mcg::new(u128::from(seed) << 1 | 1);
        for step in 1..=20_000 {
            let i = rng.random_range(0..vcpus);
            let what = match rng.random_range(0..5) {
                // An idle or newly idle vCPU picks its next thread.
                0 | 1 if g.vcpus[i].current.is_none() => {
                    let own = g.vcpus[i].runqueue.front().copied();
                    let expected = own.or_else(|| scan_busiest(g, i).and_then(|u| g.vcpus[u].runqueue.back().copied()));
                    pulls += usize::from(own.is_none() && expected.is_some());
                    assert_eq!(g.pick_next(th, i, 0), expected, "step {step}: pick_next on vCPU index {i}");
                    if expected.is_none() {
                        // Nothing to run: `run` goes to the idle loop and halts.
                        g.vcpus[i].idle_loop = true;
                    }
                    "pick_next"
                }
                // The running thread sleeps.
                2 if g.vcpus[i].current.is_some() => {
                    blocked.push(g.block_current(th, i, FutexKey::Socket));
                    // Whether it reached its idle loop before the next operation (`run` goes
                    // there at once unless it finds a thread; a vCPU descheduled meanwhile
                    // has not): an input both the masks and the scan read.
                    g.vcpus[i].idle_loop = rng.random_bool(0.5);
                    "block_current"
                }
                // A sleeper wakes, woken from vCPU `i`.
                3 if !blocked.is_empty() => {
                    let t = blocked.swap_remove(rng.random_range(0..blocked.len()));
                    let prev = g.index_of(th[t.idx()].vcpu);
                    let (target, cursor) = scan_wake_target(g, prev);
                    placed_away += usize::from(target != prev);
                    let waker = g.vcpus[i].id;
                    let ipi = g.wake_thread(th, pv, 0, waker, t);
                    assert_eq!(th[t.idx()].vcpu, g.vcpus[target].id, "step {step}: wake placement of thread {t}");
                    assert_eq!(g.wake_cursor, cursor, "step {step}: wake cursor");
                    assert_eq!(ipi, (g.vcpus[target].id != waker).then_some(g.vcpus[target].id));
                    "wake_thread"
                }
                // The tick of a vCPU with threads queued behind its current one (the first from
                // `i` round): hand one to the first idle sibling in its idle loop, and rotate.
                4 if g.vcpus.iter().any(|v| v.current.is_some() && !v.runqueue.is_empty()) => {
                    let i = (0..vcpus)
                        .map(|k| (i + k) % vcpus)
                        .find(|&u| g.vcpus[u].current.is_some() && !g.vcpus[u].runqueue.is_empty())
                        .unwrap();
                    let to = (0..vcpus).find(|&u| u != i && g.vcpus[u].idle() && g.vcpus[u].idle_loop).map(|u| g.vcpus[u].id);
                    let tick = g.timer_tick(th, i);
                    assert_eq!(tick.and_then(|t| t.resched_ipi), to, "step {step}: tick balance of vCPU index {i}");
                    balanced += usize::from(to.is_some());
                    if tick.is_some() {
                        // The host rotates on return from the tick when the thread is at a
                        // preemptible point; here, whenever a thread is queued behind it.
                        g.round_robin(i);
                    }
                    "timer_tick"
                }
                _ => continue,
            };
            assert_masks(g, step, what);
            let on_vcpus: usize = g.vcpus.iter().map(|v| v.runqueue.len() + usize::from(v.current.is_some())).sum();
            assert_eq!(on_vcpus + blocked.len(), threads, "step {step}: threads lost or doubled");
        }
        assert!(blocked.iter().all(|t| matches!(th[t.idx()].state, ThreadState::Blocked(_))));
    }
    // Each path the masks serve was taken, not only the vCPU's own queue.
    assert!(pulls > 100 && placed_away > 100 && balanced > 100, "{pulls} pulls, {placed_away} placed away, {balanced} balanced");
}

#[test]
fn the_run_masks_are_those_of_the_vcpus_as_built() {
    let s = built(70, 3);
    let g = &s.guests()[0];
    let fresh = RunMasks::of(&g.vcpus);
    assert!(fresh.queued.iter().eq([0, 1, 2]), "three threads queued on the first three vCPUs");
    assert_eq!(fresh.idle.count(), 67);
    assert!(!fresh.idle.contains(0) && fresh.idle.contains(69));
    assert_eq!(g.run_masks.mismatch(&g.vcpus), None);
    // A mask that disagrees is found.
    let mut stale = RunMasks::of(&g.vcpus);
    stale.idle.put(69, false);
    assert_eq!(stale.mismatch(&g.vcpus), Some(69));
}
