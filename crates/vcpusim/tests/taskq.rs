//! PARSEC facesim's Alamere TaskQ batch sync (`[vm.program] task_syncs`, ops
//! `taskq_wait_for_tasks`, `taskq_signal`, `taskq_wait_for_end`; guest/interpreter.rs, guest/run.rs
//! `TaskqArrive` / `TaskqEndCheck`): TaskQ/lib/taskQDistCommon.c's `waitForTasks`, `signalTasks`
//! and `waitForEnd` on one mutex, two condition variables and a counter.

mod common;
use common::*;

/// Main (thread 0) and three workers on four pCPUs. Main waits for the workers to arrive
/// (`taskQInit`'s `waitForEnd`), then per batch signals, computes `main_work`, waits for the
/// end and counts the batch; each worker waits for tasks, then computes `worker_work`.
fn batches(batches: u32, main_work: &str, worker_work: &str, wait_for_end: bool) -> String {
    let end = if wait_for_end { "{taskq_wait_for_end = 0}, " } else { "" };
    let worker = format!("[{{loop = \"forever\", body = [{{taskq_wait_for_tasks = 0}}, {{compute = \"{worker_work}\"}}]}}]");
    format!(
        "[host]\npcpus = 4\npolicy = \"cfs\"\nstart_skew = \"0ms\"\n[host.ple]\nenabled = false\n\
         [[vm]]\nname = \"a\"\nvcpus = 4\ncpus = [\"0\", \"1\", \"2\", \"3\"]\nworkload = \"program\"\niterations = {batches}\n\
         [vm.program]\ntask_syncs = [4]\ncpus = [\"0\", \"1\", \"2\", \"3\"]\n\
         threads = [[{{taskq_wait_for_end = 0}}, {{loop = \"forever\", body = [{{taskq_signal = 0}}, \
         {{compute = \"{main_work}\"}}, {end}{{progress = true}}]}}],\n{worker},\n{worker},\n{worker}]\n\
         [run]\nduration = \"1s\"\nseed = 1\n"
    )
}

#[test]
fn main_waits_for_the_slowest_worker_of_each_batch() {
    let out = run_toml(&batches(20, "100us", "1ms", true), true);
    let t = vm_table(&out);
    assert_eq!(num(&t, "a", "progress"), 20.0);
    // Each batch lasts as long as a worker's 1 ms task, not main's 100 us.
    let done = num(&t, "a", "completion_time_ms");
    assert!((20.0..26.0).contains(&done), "20 batches of 1 ms took {done} ms");
    // The workers sleep between batches (pthread_cond_wait on taskAvail), and main sleeps on
    // tasksDone until the last of them arrives.
    assert!(num(&t, "a", "futex_waits") >= 4.0 * 20.0, "futex waits {}", num(&t, "a", "futex_waits"));
}

#[test]
fn without_the_end_wait_main_runs_ahead() {
    // Main signalling again without waitForEnd: its batches take its own 100 us, and the
    // workers, still computing, miss the broadcasts.
    let out = run_toml(&batches(20, "100us", "1ms", false), true);
    let done = num(&vm_table(&out), "a", "completion_time_ms");
    assert!(done < 5.0, "20 batches took {done} ms");
}

#[test]
fn taskq_ops_name_what_is_wrong() {
    let err = refused_program;
    let e = err("threads = [[{taskq_signal = 0}]]");
    assert!(e.contains("no TaskQ batch sync") && e.contains("task_syncs"), "{e}");
    let e = err("task_syncs = [2]\nthreads = [[{taskq_wait_for_end = 1}]]");
    assert!(e.contains("TaskQ batch sync index from 0 to 0"), "{e}");
    let e = err("task_syncs = [0]\nthreads = [[{taskq_wait_for_end = 0}]]");
    assert!(e.contains("task_syncs[0]") && e.contains("TaskQ"), "{e}");
}

#[test]
fn a_batch_sync_counting_more_threads_than_take_part_deadlocks_naming_it() {
    // task_syncs = [3] with two threads: main waits on tasksDone for a third arrival that never
    // comes, the worker on taskAvail for a signal main never sends.
    let text = "[host]\npcpus = 2\n[[vm]]\nname = \"a\"\nvcpus = 2\nworkload = \"program\"\n[vm.program]\ntask_syncs = [3]\n\
                threads = [[{taskq_wait_for_end = 0}, {taskq_signal = 0}], [{taskq_wait_for_tasks = 0}]]\n[run]\nduration = \"1s\"\n";
    let sc = vcpusim::api::load_scenario(text, "t.toml").unwrap();
    match vcpusim::api::run(&sc, &vcpusim::api::RunOptions::default()) {
        Err(vcpusim::SimError::Deadlock { waits, .. }) => {
            assert_eq!(waits.len(), 2, "{waits:?}");
            assert!(waits.iter().any(|w| w.contains("TaskQ sync 0's tasksDone (2 of 3 arrived)")), "{waits:?}");
            assert!(waits.iter().any(|w| w.contains("TaskQ sync 0's taskAvail")), "{waits:?}");
        }
        other => panic!("expected a deadlock, got {other:?}"),
    }
}

/// Main and three workers, each with a task queue of its own (`task_queues`, queue q under
/// mutex q), on four pinned pCPUs: each batch main puts `tasks` tasks of 1 ms into queue 0 only,
/// signals, runs its own, steals once, runs again and waits for the end; a worker runs its own
/// tasks, then steals (`repeat`) until a round finds nothing.
fn unbalanced(tasks: usize, steal: bool) -> String {
    let puts = "{taskq_put = 0}, ".repeat(tasks);
    let (main_steal, worker_steal) = if steal {
        ("{taskq_steal = 0, work = \"1ms\", repeat = false}, {taskq_own = 0, work = \"1ms\"}, ", ", {taskq_steal = Q, work = \"1ms\"}")
    } else {
        ("", "")
    };
    let worker = |q: usize| {
        format!(
            "[{{loop = \"forever\", body = [{{taskq_wait_for_tasks = 0}}, {{taskq_own = {q}, work = \"1ms\"}}{}]}}]",
            worker_steal.replace('Q', &q.to_string())
        )
    };
    format!(
        "[host]\npcpus = 4\npolicy = \"cfs\"\nstart_skew = \"0ms\"\n[host.ple]\nenabled = false\n\
         [[vm]]\nname = \"a\"\nvcpus = 4\ncpus = [\"0\", \"1\", \"2\", \"3\"]\nworkload = \"program\"\niterations = 10\n\
         [vm.program]\nmutexes = 4\ntask_syncs = [4]\ntask_queues = [0, 1, 2, 3]\ncpus = [\"0\", \"1\", \"2\", \"3\"]\n\
         threads = [[{{taskq_wait_for_end = 0}}, {{loop = \"forever\", body = [{puts}{{taskq_signal = 0}}, \
         {{taskq_own = 0, work = \"1ms\"}}, {main_steal}{{taskq_wait_for_end = 0}}, {{progress = true}}]}}],\n{},\n{},\n{}]\n\
         [run]\nduration = \"1s\"\nseed = 1\n",
        worker(1),
        worker(2),
        worker(3)
    )
}

#[test]
fn idle_threads_steal_from_a_loaded_queue() {
    // Eight 1 ms tasks a batch, all in main's queue: alone, main runs them in ~8 ms a batch;
    // with stealing the four threads share them (half of what a queue holds per steal).
    let alone = run_sim_checked(&unbalanced(8, false), 1000);
    let shared = run_sim_checked(&unbalanced(8, true), 1000);
    let (ta, ts) = (alone.guests()[0].finished_at.unwrap(), shared.guests()[0].finished_at.unwrap());
    assert!(ta > 70 * vcpusim::time::MS, "alone: {ta} ns for 10 batches");
    assert!(ts * 2 < ta, "stealing: {ts} ns vs {ta} ns");
    // Moves, not tasks: a task stolen into a worker's queue may be stolen on from there.
    let stolen = shared.guests()[0].stats.taskq_stolen;
    assert!(stolen >= 30, "{stolen} tasks moved");
    assert_eq!(alone.guests()[0].stats.taskq_stolen, 0);
    // Every task runs once either way: 80 exponential tasks of mean 1 ms of user time.
    for sim in [&alone, &shared] {
        let user_ms = sim.vms()[0].stats.user_ns as f64 / 1e6;
        assert!((50.0..110.0).contains(&user_ms), "{user_ms} ms of tasks");
    }
}

#[test]
fn task_queue_ops_name_what_is_wrong() {
    let err = refused_program;
    let e = err("threads = [[{taskq_put = 0}]]");
    assert!(e.contains("no TaskQ task queue") && e.contains("task_queues"), "{e}");
    let e = err("task_queues = [0]\nthreads = [[{taskq_put = 0}]]");
    assert!(e.contains("task_queues") && e.contains("mutexes"), "{e}");
    let e = err("mutexes = 1\ntask_queues = [1]\nthreads = [[{taskq_put = 0}]]");
    assert!(e.contains("task_queues[0]"), "{e}");
    let e = err("mutexes = 1\ntask_queues = [0]\nthreads = [[{taskq_own = 0}]]");
    assert!(e.contains("work"), "{e}");
    let e = err("mutexes = 1\ntask_queues = [0]\nthreads = [[{taskq_steal = 0, work = \"1ms\", repeat = 1}]]");
    assert!(e.contains("repeat") && e.contains("true or false"), "{e}");
}
