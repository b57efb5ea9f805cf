//! Guest thread CPU affinity (`Thread::cpus`, `sched_setaffinity`): a pinned thread stays on the
//! vCPUs its mask allows through every path that moves threads in the guest (wake placement,
//! the newidle pull, tick balancing), as Linux's `select_task_rq`, `can_migrate_task` and
//! `select_fallback_rq` keep it; Tascell's `affinity` (its `-a` option) pins worker n to CPU n.

use vcpusim::api::load_scenario;
use vcpusim::sim::state::Sim;
use vcpusim::time::MS;

/// tascell-fib's workers on a VM of 4 vCPUs sharing 2 pCPUs with a hog (so that vCPUs go idle,
/// are preempted and threads wake where another vCPU is idle), with or without Tascell's `-a`.
fn scenario(threads: u32, affinity: bool) -> String {
    format!(
        "[host]\npcpus = 2\npolicy = \"credit\"\n\
         [[vm]]\nname = \"fib\"\nvcpus = 4\nthreads = {threads}\nworkload = \"tascell.fib\"\niterations = 1\n\
         params = {{ serial = \"100ms\", affinity = {affinity} }}\n\
         [[vm]]\nname = \"hog\"\nvcpus = 2\nworkload = \"cpu-bound\"\n\
         [run]\nduration = \"1s\"\n"
    )
}

/// Run `text` in check mode (which fails the run if a thread sits outside its mask), calling
/// `each` after every event up to `until`; the run at its end.
fn each_event(text: &str, until: u64, mut each: impl FnMut(&Sim)) -> Sim {
    let sc = load_scenario(text, "<t>").unwrap_or_else(|e| panic!("{e}"));
    let mut sim = Sim::build(&sc, 3, false, true).unwrap();
    sim.start();
    while let Some(t) = sim.next_event_at().filter(|&t| t <= until) {
        sim.run_until(t, None).unwrap_or_else(|e| panic!("{e}"));
        each(&sim);
    }
    sim
}

/// The vCPU index VM `vm`'s thread `k` is on or queued on.
fn at(sim: &Sim, vm: usize, k: usize) -> usize {
    let g = &sim.guests()[vm];
    g.index_of(sim.guests().threads()[g.threads[k].idx()].vcpu)
}

/// How many times, over every event of the run, one of VM 0's threads was found on another vCPU
/// than its index.
fn moves(threads: u32, affinity: bool) -> u64 {
    let mut away = 0;
    let sim = each_event(&scenario(threads, affinity), 1000 * MS, |sim| {
        away += (0..threads as usize).filter(|&k| at(sim, 0, k) != k).count() as u64;
    });
    assert!(sim.guests()[0].finished_at.is_some(), "fib did not finish in the run: now {} cpu {}", sim.now(), sim.vms()[0].stats.cpu_ns());
    away
}

#[test]
fn pinned_workers_never_leave_their_vcpu_and_unpinned_ones_do() {
    assert_eq!(moves(4, true), 0, "a worker pinned to CPU n was found on another vCPU");
    // The same run without the pin moves workers: the test can tell.
    assert!(moves(4, false) > 0, "unpinned workers never moved: the scenario cannot show the pin");
}

#[test]
fn pinned_workers_fewer_than_vcpus_leave_the_others_idle() {
    // Two workers pinned to vCPUs 0 and 1: vCPUs 2 and 3 never run a thread.
    each_event(&scenario(2, true), 1000 * MS, |sim| {
        let g = &sim.guests()[0];
        for i in 2..4 {
            assert!(g.vcpus[i].current.is_none() && g.vcpus[i].runqueue.is_empty(), "vCPU {i} got a pinned worker");
        }
    });
}

#[test]
fn more_pinned_workers_than_vcpus_is_the_loaders_error() {
    let e = load_scenario(&scenario(5, true), "f.toml").expect_err("worker 4 cannot bind to CPU 4 of a 4-vCPU VM");
    let m = e.to_string();
    assert!(m.contains("f.toml") && m.contains("params") && m.contains("thread 4") && m.contains("vcpus = 4"), "{m}");
}

/// A program whose threads 0 and 1 are pinned to vCPU 0 of a 2-vCPU VM (`[vm.program] cpus`)
/// and thread 2 may run anywhere: the tick balancing and the pulls that feed the idle vCPU 1 hand
/// it only thread 2.
#[test]
fn a_programs_cpus_key_pins_threads_and_balancing_moves_only_the_free_one() {
    let text = "[host]\npcpus = 2\npolicy = \"credit\"\n\
                [[vm]]\nname = \"p\"\nvcpus = 2\nworkload = \"program\"\n\
                [vm.program]\ncpus = [\"0\", \"0\", \"0-1\"]\n\
                threads = [[{loop = \"forever\", body = [{compute = \"1ms\"}]}], \
                [{loop = \"forever\", body = [{compute = \"1ms\"}]}], [{loop = \"forever\", body = [{compute = \"1ms\"}]}]]\n\
                [run]\nduration = \"200ms\"\n";
    let mut free_on_1 = 0;
    each_event(text, 200 * MS, |sim| {
        assert_eq!((at(sim, 0, 0), at(sim, 0, 1)), (0, 0), "a thread pinned to vCPU 0 moved");
        free_on_1 += u64::from(at(sim, 0, 2) == 1);
    });
    assert!(free_on_1 > 0, "the free thread never reached the idle vCPU");
}

#[test]
fn a_programs_cpus_key_names_the_bad_entry() {
    let program = |cpus: &str| {
        format!(
            "[host]\npcpus = 2\n[[vm]]\nname = \"p\"\nvcpus = 2\nworkload = \"program\"\n\
             [vm.program]\ncpus = {cpus}\nthreads = [[{{compute = \"1ms\"}}], [{{compute = \"1ms\"}}]]\n"
        )
    };
    for (cpus, expect) in [
        ("[\"0\", \"2\"]", "cpus[1]"),
        ("[\"0\"]", "1 cpulists for 2 threads"),
        ("[\"0\", 1]", "expected a cpulist of the VM's vCPUs"),
        ("\"\"", "empty cpulist"),
    ] {
        let e = load_scenario(&program(cpus), "c.toml").expect_err(cpus).to_string();
        assert!(e.contains("c.toml") && e.contains(expect), "{cpus}: {e}");
    }
    // One string pins every thread.
    let sc = load_scenario(&program("\"1\""), "c.toml").unwrap();
    let sim = Sim::build(&sc, 1, false, true).unwrap();
    let g = &sim.guests()[0];
    assert!(g.threads.iter().all(|t| g.index_of(sim.guests().threads()[t.idx()].vcpu) == 1));
}

/// One thread on a 2-vCPU VM (vCPU 1 halts once it has run and found nothing, ~12 ms in):
/// `{compute = "30ms"}`, then `setaffinity = mask`, then progress in 1 ms steps forever.
fn setaffinity_program(mask: &str) -> String {
    format!(
        "[host]\npcpus = 2\npolicy = \"credit\"\n\
         [[vm]]\nname = \"p\"\nvcpus = 2\nthreads = 1\nworkload = \"program\"\n\
         [vm.program]\nthreads = [[{{compute = \"30ms\"}}, {{setaffinity = \"{mask}\"}}, \
         {{loop = \"forever\", body = [{{compute = \"1ms\"}}, {{progress = true}}]}}]]\n\
         [run]\nduration = \"100ms\"\n"
    )
}

/// `sched_setaffinity` to a mask without the thread's vCPU moves it at once to the mask's first
/// vCPU, which is woken from its halt by the reschedule IPI and runs it from then on; the vCPU
/// it left goes idle.
#[test]
fn a_setaffinity_op_moves_the_thread_to_the_first_vcpu_of_its_new_mask() {
    let (mut before, mut after, mut halted_before) = (0u64, 0u64, false);
    let sim = each_event(&setaffinity_program("1"), 100 * MS, |sim| {
        let g = &sim.guests()[0];
        if sim.now() < 30 * MS {
            assert_eq!(at(sim, 0, 0), 0, "the thread left vCPU 0 before its setaffinity");
            before += 1;
        } else if g.stats.progress > 0 {
            assert_eq!(at(sim, 0, 0), 1, "the thread came back to vCPU 0 after its setaffinity to vCPU 1");
            assert!(
                g.vcpus[0].idle(),
                "vCPU 0 kept work after its only thread left: {:?} {:?} at {}",
                g.vcpus[0].current,
                g.vcpus[0].runqueue,
                sim.now()
            );
            after += 1;
        }
        if sim.now() < 30 * MS {
            halted_before |= sim.vinfo()[1].state == vcpusim::hypervisor::policy::VcpuState::Halted;
        }
    });
    assert!(halted_before, "vCPU 1 never halted before the op: the test cannot show the IPI");
    assert!(before > 0 && after > 0, "the run never saw both sides of the op");
    // Woken by the IPI, vCPU 1 ran the thread: ~69 of the 70 ms after the op were progress.
    let progress = sim.guests()[0].stats.progress;
    assert!(progress >= 65, "only {progress} progress ops: vCPU 1 did not run the moved thread");
    assert!(sim.guests()[0].vcpus[1].current.is_some(), "vCPU 1 does not run the thread at the end");
}

/// A mask that keeps the thread's vCPU moves nothing (`set_cpus_allowed_ptr`: "Can the task run
/// on the task's current CPU? If so, we're done"), and "all" is accepted.
#[test]
fn a_setaffinity_op_keeping_the_current_vcpu_moves_nothing() {
    for mask in ["0-1", "0", "all"] {
        let sim = each_event(&setaffinity_program(mask), 100 * MS, |sim| {
            assert_eq!(at(sim, 0, 0), 0, "setaffinity {mask:?} moved the thread off vCPU 0");
        });
        let th = &sim.guests().threads()[sim.guests()[0].threads[0].idx()];
        assert_eq!(
            th.cpus.as_ref().map(|m| m.count()),
            if mask == "0" {
                Some(1)
            } else if mask == "all" {
                None
            } else {
                Some(2)
            },
            "{mask}"
        );
    }
}

#[test]
fn a_setaffinity_op_with_a_bad_mask_names_the_op() {
    for (mask, expect) in [
        ("\"2\"", "threads[0][1].setaffinity"),
        ("\"2\"", "VM's vCPU indices, 0 to 1"),
        ("1", "expected a cpulist of the VM's vCPUs"),
        ("\"\"", "empty cpulist"),
    ] {
        let text = setaffinity_program("X").replace("\"X\"", mask);
        let e = load_scenario(&text, "s.toml").expect_err(mask).to_string();
        assert!(e.contains("s.toml") && e.contains(expect), "{mask}: {e}");
    }
}
