//! The Tascell models (workload/builtin/tascell.rs, guest/worksteal.rs) run as whole VMs.

mod common;
use common::*;

/// One VM of `threads` threads alone on a flat 16-pCPU host under Credit, `serial` of work.
fn solo(
    workload: &str,
    threads: u32,
    serial: &str,
    check: bool,
) -> (f64, std::collections::BTreeMap<String, std::collections::BTreeMap<String, String>>) {
    let text = format!(
        "[host]\npcpus = 16\npolicy = \"credit\"\nstart_skew = \"0ms\"\n\
         [[vm]]\nname = \"app\"\nvcpus = 16\nthreads = {threads}\nworkload = \"{workload}\"\niterations = 1\n\
         [vm.params]\nserial = \"{serial}\"\n\
         [run]\nduration = \"100s\"\nseed = 1\n"
    );
    let t = vm_table(&run_toml(&text, check));
    (num(&t, "app", "completion_time_ms"), t)
}

#[test]
fn one_thread_runs_the_serial_time() {
    for w in ["tascell.fib", "tascell.nqueen"] {
        let (done, t) = solo(w, 1, "2s", true);
        assert_eq!(num(&t, "app", "progress"), 1.0, "{w}");
        // Alone: the serial work and nothing else (no requests: no other worker).
        assert!((done - 2000.0).abs() < 1.0, "{w}: {done} ms");
    }
}

#[test]
fn threads_share_the_fixed_work() {
    for w in ["tascell.fib", "tascell.nqueen"] {
        let mut last = f64::MAX;
        for threads in [2, 4, 8, 16] {
            let (done, t) = solo(w, threads, "2s", threads == 4);
            let user = num(&t, "app", "user_time_ms");
            eprintln!("{w} {threads}: {done} ms, user {user}");
            assert!(done < last, "{w}: {threads} threads took {done} ms, not less than {last}");
            // Near-ideal speedup on idle pCPUs.
            assert!(done < 2000.0 / threads as f64 * 1.15, "{w}: {threads} threads took {done} ms");
            last = done;
        }
    }
}

/// `[host.costs] virt_overhead`: one thread in a VM takes 1 + overhead times its serial time
/// (seed 001 III-B: 24% at one thread).
#[test]
fn virt_overhead_slows_one_thread_by_the_configured_factor() {
    let run = |costs: &str| {
        let text = format!(
            "[host]\npcpus = 4\npolicy = \"credit\"\nstart_skew = \"0ms\"\n{costs}\n\
             [[vm]]\nname = \"app\"\nvcpus = 4\nthreads = 1\nworkload = \"tascell.fib\"\niterations = 1\n\
             [vm.params]\nserial = \"1s\"\n[run]\nduration = \"10s\"\n"
        );
        num(&vm_table(&run_toml(&text, true)), "app", "completion_time_ms")
    };
    let native = run("");
    let virt = run("[host.costs]\nvirt_overhead = 0.24");
    assert!((native - 1000.0).abs() < 0.5, "{native}");
    assert!((virt / native - 1.24).abs() < 0.001, "{virt} vs {native}");
}

#[test]
fn virt_overhead_out_of_range_is_an_error() {
    let text = "[host]\npcpus = 4\npolicy = \"credit\"\n[host.costs]\nvirt_overhead = -0.1\n\
                [[vm]]\nname = \"app\"\nvcpus = 1\nworkload = \"cpu-bound\"\n";
    let err = vcpusim::api::load_scenario(text, "t.toml").expect_err("a negative overhead is refused").to_string();
    assert!(err.contains("host.costs.virt_overhead") && err.contains("-0.1"), "{err}");
}
