//! Ticket loops (`[vm.program] dispensers`, ops `reset_tickets` and `tickets`; guest/interpreter.rs
//! `TicketStart`, guest/run.rs `TakeTicket`): PARSEC bodytrack's `TicketDispenser`, work handed
//! out one ticket at a time under a mutex, so threads that run slower take fewer.

mod common;
use common::*;

/// Four threads on four pCPUs, a CPU hog sharing pCPU 3; each round thread 0 resets the
/// dispenser to 40 tickets of 100 us, all meet at a barrier, share the tickets (or, `static`,
/// take 10 each), meet again and compute 1 us; `rounds` rounds, or forever. `iterations` ends the VM there.
fn rounds(dynamic: bool, rounds: &str, iterations: Option<u32>) -> String {
    let work = if dynamic {
        "{tickets = 0, body = [{compute = \"100us\"}, {progress = true}]}"
    } else {
        "{loop = 10, body = [{compute = \"100us\"}, {progress = true}]}"
    };
    let reset = if dynamic { "{reset_tickets = 0, count = 40}, " } else { "" };
    let iterations = iterations.map(|n| format!("iterations = {n}\n")).unwrap_or_default();
    format!(
        "[host]\npcpus = 4\npolicy = \"cfs\"\n[host.ple]\nenabled = false\n\
         [[vm]]\nname = \"a\"\nvcpus = 4\ncpus = [\"0\", \"1\", \"2\", \"3\"]\nworkload = \"program\"\n{iterations}\
         [vm.program]\nbarriers = [4]\ndispensers = 1\ncpus = [\"0\", \"1\", \"2\", \"3\"]\n\
         threads = [[{{loop = {rounds}, body = [{reset}{{barrier = 0}}, {work}, {{barrier = 0}}, {{compute = \"1us\"}}]}}],\n\
                    [{{loop = {rounds}, body = [{{barrier = 0}}, {work}, {{barrier = 0}}, {{compute = \"1us\"}}]}}],\n\
                    [{{loop = {rounds}, body = [{{barrier = 0}}, {work}, {{barrier = 0}}, {{compute = \"1us\"}}]}}],\n\
                    [{{loop = {rounds}, body = [{{barrier = 0}}, {work}, {{barrier = 0}}, {{compute = \"1us\"}}]}}]]\n\
         [[vm]]\nname = \"hog\"\nvcpus = 1\ncpus = \"3\"\nworkload = \"cpu-bound\"\n\
         [run]\nduration = \"2s\"\nseed = 2\n"
    )
}

#[test]
fn every_ticket_is_taken_exactly_once() {
    let out = run_toml(&rounds(true, "10", None), true);
    let t = vm_table(&out);
    assert_eq!(num(&t, "a", "progress"), 400.0, "10 rounds of 40 tickets");
}

#[test]
fn threads_that_run_slower_take_fewer_tickets() {
    let time = |dynamic| {
        let out = run_toml(&rounds(dynamic, "\"forever\"", Some(400)), true);
        num(&vm_table(&out), "a", "completion_time_ms")
    };
    let (shared, fixed) = (time(true), time(false));
    // A fixed share waits every round for the thread beside the hog (10 tickets at half speed);
    // shared tickets go to the three others while it is descheduled.
    assert!(shared * 1.3 < fixed, "shared tickets {shared} ms, fixed shares {fixed} ms");
}

#[test]
fn ticket_ops_name_what_is_wrong() {
    let err = refused_program;
    let e = err("threads = [[{tickets = 0, body = [{compute = \"1ms\"}]}]]");
    assert!(e.contains("no ticket dispenser") && e.contains("dispensers"), "{e}");
    let e = err("dispensers = 1\nthreads = [[{tickets = 1, body = [{compute = \"1ms\"}]}]]");
    assert!(e.contains("ticket dispenser index from 0 to 0"), "{e}");
    let e = err("dispensers = 1\nthreads = [[{tickets = 0, body = []}]]");
    assert!(e.contains("body") && e.contains("at least one op"), "{e}");
    let e = err("dispensers = 1\nmutexes = 1\nthreads = [[{tickets = 0, body = [{lock = 0}, {compute = \"1ms\"}]}]]");
    assert!(e.contains("threads[0][0].body") && e.contains("must release every lock"), "{e}");
    let e = err("dispensers = 1\nthreads = [[{reset_tickets = 0}]]");
    assert!(e.contains("count"), "{e}");
    let e = err("dispensers = 1\nthreads = [[{reset_tickets = 0, count = -1}]]");
    assert!(e.contains("count") && e.contains("-1"), "{e}");
}
