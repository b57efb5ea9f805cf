//! Misuse a new user might try: programs that misuse their
//! mutexes and condition variables, counts and products too large to represent, a start skew
//! longer than the run, and the deadlock report of a thread blocked on a queue. Each is a clear
//! error naming the key, the value and what was expected (or, at run time, the VM, thread, op and
//! object), never a panic, an allocation abort or a wrapped number.

mod common;

use common::{num, run_toml, vm_table};
use vcpusim::api::{load_scenario, run, RunOptions};
use vcpusim::sim::state::Sim;
use vcpusim::workload::program::Op;
use vcpusim::SimError;

/// A one-VM scenario running `program` (the body of `[vm.program]`) on `vcpus` vCPUs and pCPUs.
fn program_scenario(vcpus: u32, program: &str) -> String {
    format!(
        "[host]\npcpus = {vcpus}\npolicy = \"credit\"\n[[vm]]\nname = \"app\"\nvcpus = {vcpus}\nworkload = \"program\"\n\
         [vm.program]\n{program}\n[run]\nduration = \"200ms\"\n"
    )
}

fn load_error(text: &str) -> String {
    match load_scenario(text, "m.toml") {
        Err(e @ SimError::Scenario { .. }) => e.to_string(),
        other => panic!("expected a scenario error, got {other:?}\n{text}"),
    }
}

// ---- a thread blocked on a queue ----

#[test]
fn a_deadlock_on_a_queue_names_the_queue_not_its_condition_variable() {
    // One consumer, no producer: it sleeps on the queue's not-empty condition variable forever.
    let text = program_scenario(1, "queues = [4]\nthreads = [[{compute = \"1ms\"}, {get = 0}]]");
    let sc = load_scenario(&text, "q.toml").unwrap();
    match run(&sc, &RunOptions::default()) {
        Err(SimError::Deadlock { waits, .. }) => {
            assert_eq!(waits.len(), 1, "{waits:?}");
            assert!(waits[0].contains("queue 0 (empty"), "{waits:?}");
            assert!(!waits[0].contains("condition variable"), "{waits:?}");
        }
        other => panic!("expected a deadlock, got {other:?}"),
    }
}

// ---- program misuse, refused when loaded ----

#[test]
fn unlocking_a_mutex_the_thread_never_locked_is_refused_naming_the_op() {
    let e = load_error(&program_scenario(1, "mutexes = 1\nthreads = [[{compute = \"1ms\"}, {unlock = 0}]]"));
    assert!(e.starts_with("m.toml: vm[0].program.threads[0][1].unlock: unlocks mutex 0, which this thread does not hold here"), "{e}");
}

#[test]
fn unlocking_a_mutex_another_thread_holds_is_refused() {
    // Thread 0 locks, thread 1 unlocks: undefined for a default pthread mutex, EPERM for an
    // error-checking one.
    let e =
        load_error(&program_scenario(2, "mutexes = 1\nthreads = [[{lock = 0}, {compute = \"5ms\"}], [{compute = \"1ms\"}, {unlock = 0}]]"));
    assert!(e.starts_with("m.toml: vm[0].program.threads[1][1].unlock: unlocks mutex 0"), "{e}");
}

#[test]
fn cond_wait_without_its_mutex_is_refused() {
    let e = load_error(&program_scenario(1, "mutexes = 1\nconds = 1\nthreads = [[{cond_wait = 0, mutex = 0}]]"));
    assert!(e.starts_with("m.toml: vm[0].program.threads[0][0].mutex: cond_wait on condition variable 0 releases mutex 0"), "{e}");
}

#[test]
fn a_loop_that_unlocks_once_too_often_is_refused_on_its_second_pass() {
    let e =
        load_error(&program_scenario(1, "mutexes = 1\nthreads = [[{lock = 0}, {loop = 3, body = [{compute = \"1ms\"}, {unlock = 0}]}]]"));
    assert!(e.contains("threads[0][1].body[1].unlock: unlocks mutex 0") && e.ends_with("(on the loop's second pass)"), "{e}");
    // The same body once is fine, and so is a loop that takes the mutex back before its end.
    for ok in [
        "mutexes = 1\nthreads = [[{lock = 0}, {loop = 1, body = [{compute = \"1ms\"}, {unlock = 0}]}]]",
        "mutexes = 1\nthreads = [[{lock = 0}, {loop = \"forever\", body = [{compute = \"1ms\"}, {unlock = 0}, {lock = 0}]}]]",
        "mutexes = 1\nconds = 1\nthreads = [[{loop = 5, body = [{lock = 0}, {signal = 0}, {unlock = 0}, {compute = \"1ms\"}]}], \
         [{lock = 0}, {cond_wait = 0, mutex = 0}, {unlock = 0}]]",
    ] {
        load_scenario(&program_scenario(2, ok), "ok.toml").unwrap_or_else(|e| panic!("{e}\n{ok}"));
    }
}

#[test]
fn duplicate_kernel_lock_names_are_refused() {
    let e =
        load_error(&program_scenario(1, "kernel_locks = [\"dcache\", \"inode\", \"dcache\"]\nthreads = [[{syscall = \"1us\", lock = 0}]]"));
    assert!(e.starts_with("m.toml: vm[0].program.kernel_locks[2]: \"dcache\" is already kernel_locks[0]"), "{e}");
}

// ---- program misuse the loader did not see (a program built in Rust) ----

/// Load a valid scenario, then swap in a program the loader never checked.
fn run_unchecked_program(threads: Vec<Vec<Op>>) -> Result<vcpusim::api::RunOutput, SimError> {
    let text = program_scenario(2, "mutexes = 1\nconds = 1\nthreads = [[{compute = \"1ms\"}], [{compute = \"1ms\"}]]");
    let mut sc = load_scenario(&text, "r.toml").unwrap();
    sc.vms[0].program.threads = threads;
    run(&sc, &RunOptions { check: true, ..Default::default() })
}

fn ms(n: u64) -> Op {
    Op::Compute(vcpusim::workload::program::Dist::Const(n * 1_000_000))
}

#[test]
fn at_run_time_unlocking_another_threads_mutex_stops_the_run_naming_thread_op_and_mutex() {
    let e = run_unchecked_program(vec![vec![Op::MutexLock(0), ms(50)], vec![ms(5), Op::MutexUnlock(0), ms(1)]]).unwrap_err();
    match &e {
        SimError::Program { time_ns, message } => {
            // Thread 1 unlocks after its 5 ms of compute, while thread 0 still holds the mutex.
            assert!(*time_ns >= 5_000_000 && *time_ns < 50_000_000, "{e}");
            assert_eq!(message, "VM \"app\" thread 1: unlock of mutex 0, but the thread does not hold mutex 0 (thread 0 holds it)");
        }
        other => panic!("expected a program error, got {other:?}"),
    }
    assert_eq!(e.kind(), "scenario", "Python raises ScenarioError");
}

#[test]
fn at_run_time_cond_wait_without_the_mutex_stops_the_run() {
    let e = run_unchecked_program(vec![vec![ms(1), Op::CondWait { cond: 0, mutex: 0 }], vec![ms(1)]]).unwrap_err();
    match e {
        SimError::Program { message, .. } => assert_eq!(
            message,
            "VM \"app\" thread 0: cond_wait on condition variable 0 with mutex 0, but the thread does not hold mutex 0 (nobody holds it)"
        ),
        other => panic!("expected a program error, got {other:?}"),
    }
}

// ---- counts and products ----

#[test]
fn huge_object_counts_are_refused_before_anything_is_allocated() {
    for (key, value) in [("conds", "4000000000"), ("mutexes", "9223372036854775807"), ("mutexes", "4000000000")] {
        let e = load_error(&program_scenario(1, &format!("{key} = {value}\nthreads = [[{{compute = \"1ms\"}}]]")));
        assert_eq!(
            e,
            format!(
                "m.toml: vm[0].program.{key}: expected at most 1048576 (each is allocated before the run; a guard against typos), got {value}"
            )
        );
    }
}

#[test]
fn a_shootdown_handler_longer_than_time_itself_is_refused_naming_the_cost() {
    let text = program_scenario(2, "threads = [[{compute = \"1ms\"}, {munmap = 1048576}], [{compute = \"5ms\"}]]")
        .replace("[[vm]]", "[host.costs]\ntlb_flush_per_page = \"17592186044415ns\"\n[[vm]]");
    let e = load_error(&text);
    assert!(
        e.starts_with("m.toml: host.costs.tlb_flush_per_page: 17592186044415ns per page × 1048576 pages (VM \"app\"'s largest munmap)"),
        "{e}"
    );
    // A large but representable cost loads.
    load_scenario(&text.replace("17592186044415ns", "1ms"), "ok.toml").unwrap();
}

#[test]
fn an_ipi_send_cost_times_the_vcpus_beyond_the_range_is_refused() {
    let text = program_scenario(4, "threads = [[{compute = \"1ms\"}]]").replace("[[vm]]", "[host.costs]\nipi_send = \"3e18ns\"\n[[vm]]");
    let e = load_error(&text);
    assert!(e.starts_with("m.toml: host.costs.ipi_send: 3000000000s per target × 4 vCPUs"), "{e}");
}

#[test]
fn costs_set_past_the_loader_saturate_and_the_time_columns_still_add_up() {
    // A Rust caller can set any cost after loading: the handler's work saturates instead of
    // wrapping to a small number, and check mode (per VM: the time columns sum to cpu_time_ms,
    // which equals the vCPUs' time on pCPUs) holds to the end.
    let text = program_scenario(
        2,
        "threads = [[{loop = \"forever\", body = [{compute = \"1ms\"}, {munmap = 1024}]}], [{loop = \"forever\", body = [{compute = \"1ms\"}]}], \
         [{loop = \"forever\", body = [{compute = \"1ms\"}]}], [{loop = \"forever\", body = [{compute = \"1ms\"}]}]]",
    );
    // 2^55 ns per page × 2^10 pages overflows u64; so does a third of the range × 4 targets.
    for (per_page, ipi_send) in [(1u64 << 55, 2_000), (100, u64::MAX / 3)] {
        let mut sc = load_scenario(&text.replace("pcpus = 2", "pcpus = 4").replace("vcpus = 2", "vcpus = 4"), "s.toml").unwrap();
        sc.host.costs.tlb_flush_per_page = per_page;
        sc.host.costs.ipi_send = ipi_send;
        let out = run(&sc, &RunOptions { check: true, ..Default::default() }).unwrap();
        let t = vm_table(&out);
        let cpu = num(&t, "app", "cpu_time_ms");
        assert!(cpu <= 4.0 * 200.0 + 1e-9, "cpu_time_ms {cpu} beyond 4 pCPUs × 200 ms");
        for col in ["tlb_wait_ms", "irq_time_ms", "overhead_ms"] {
            assert!(num(&t, "app", col) <= cpu, "{col} = {} > cpu_time_ms {cpu}", num(&t, "app", col));
        }
        let parts: f64 = ["user_time_ms", "kernel_time_ms", "spin_time_ms", "tlb_wait_ms", "user_spin_ms", "irq_time_ms", "overhead_ms"]
            .iter()
            .map(|c| num(&t, "app", c))
            .sum();
        assert!((parts - cpu).abs() < 0.01, "columns sum to {parts}, cpu_time_ms {cpu}");
        // The overflowing cost never ends within the run: no progress past the first munmap.
        assert!(num(&t, "app", "tlb_shootdowns") <= 1.0, "{}", out.vms_csv);
    }
}

#[test]
fn check_mode_names_a_vm_whose_time_columns_do_not_add_up() {
    let text = program_scenario(1, "threads = [[{compute = \"1ms\"}]]");
    let sc = load_scenario(&text, "c.toml").unwrap();
    let mut sim = Sim::build(&sc, 1, false, true).unwrap();
    sim.start();
    sim.run_until(100_000_000, None).unwrap();
    sim.check_invariants().unwrap();
    sim.corrupt_vm_stats(0).tlb_wait_ns = u64::MAX - 5;
    let e = sim.check_invariants().unwrap_err().to_string();
    assert!(e.contains(" ns: VM 0: time columns"), "{e}");
    sim.corrupt_vm_stats(0).tlb_wait_ns = 1;
    let e = sim.check_invariants().unwrap_err().to_string();
    assert!(e.contains(" ns: VM 0: time not conserved"), "{e}");
}

#[test]
fn a_sample_interval_that_would_take_billions_of_samples_is_refused() {
    let text = program_scenario(1, "threads = [[{compute = \"1ms\"}]]")
        .replace("duration = \"200ms\"", "duration = \"1000000s\"\nsample_every = \"1ms\"");
    let e = load_error(&text);
    assert_eq!(
        e,
        "m.toml: run.sample_every: 1ms over duration = 1000000s takes 1000000000 samples; expected at most 1000000 \
         (raise sample_every to at least 1s or shorten the run)"
    );
}

// ---- start_skew against the run ----

#[test]
fn a_start_skew_not_shorter_than_the_run_is_an_error() {
    let text = "[host]\npcpus = 2\nstart_skew = \"9e9s\"\n[[vm]]\nname = \"a\"\nvcpus = 1\nworkload = \"cpu-bound\"\n[run]\nduration = \"200ms\"\n";
    let e = load_error(text);
    assert!(e.starts_with("m.toml: host.start_skew: 9000000000s is not shorter than the run (run.duration = 200ms)"), "{e}");
    load_error(&text.replace("9e9s", "200ms"));
    load_scenario(&text.replace("9e9s", "150ms"), "ok.toml").unwrap();
}

#[test]
fn the_default_start_skew_shrinks_to_half_a_run_shorter_than_it() {
    // 20 ms < the 30 ms default: every pCPU is online by 10 ms, and the VM runs.
    let text = "[host]\npcpus = 2\n[[vm]]\nname = \"a\"\nvcpus = 2\nworkload = \"cpu-bound\"\n[run]\nduration = \"20ms\"\n";
    let sc = load_scenario(text, "d.toml").unwrap();
    assert_eq!(sc.host.start_skew, 10_000_000);
    let cpu = num(&vm_table(&run_toml(text, true)), "a", "cpu_time_ms");
    assert!(cpu >= 20.0, "two vCPUs on two pCPUs online by 10 ms got {cpu} ms in a 20 ms run");
    // Longer runs keep the default.
    let long = load_scenario(&text.replace("20ms", "31ms"), "d.toml").unwrap();
    assert_eq!(long.host.start_skew, 30_000_000);
}
