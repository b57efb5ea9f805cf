//! `[[vm]] bare_metal = true` (scenario/bare_metal.rs `carve_bare_metal`, hypervisor/policies/native.rs,
//! guest/bare_metal_placement.rs): a guest kernel run directly on its own pCPUs beside VMs on the rest.

mod common;
use common::*;
use std::collections::BTreeSet;

/// Seed 001's host (without the contention and NUMA-placement keys).
const HOST: &str = "[host]\npcpus = 32\nsockets = 2\nnuma_nodes = 4\ncores_per_module = 2\nthreads_per_core = 1\n\
                    llc = \"node\"\npolicy = \"credit\"\nparams = { xen = \"4.4\" }\nstart_skew = \"0ms\"\n";

/// The example: a 16-vCPU VM pinned to pCPUs 16-31 beside a bare-metal machine that gets
/// the other pCPUs, both running tascell.fib with 8 threads.
fn issue_example(serial: &str) -> String {
    format!(
        "{HOST}\n[[vm]]\nname = \"par\"\nvcpus = 16\ncpus = \"16-31\"\nworkload = \"tascell.fib\"\nthreads = 8\niterations = 1\n\
         [vm.params]\nserial = \"{serial}\"\n\
         [[vm]]\nname = \"pm\"\nbare_metal = true\nworkload = \"tascell.fib\"\nthreads = 8\niterations = 1\n\
         [vm.params]\nserial = \"{serial}\"\n[run]\nduration = \"20s\"\n"
    )
}

#[test]
fn the_issue_example_loads_with_the_free_pcpus_as_the_machine() {
    let sc = vcpusim::api::load_scenario(&issue_example("1s"), "<test>").expect("the example loads");
    let pm = &sc.vms[1];
    assert!(pm.bare_metal && pm.vcpus == 16, "one CPU per free pCPU");
    assert_eq!(pm.cpus.iter().map(|m| m.to_cpulist()).collect::<Vec<_>>(), (0..16).map(|p| p.to_string()).collect::<Vec<_>>());
    let pool = &sc.host.pools[pm.pool];
    assert_eq!((pool.name.as_str(), pool.pcpus.to_cpulist().as_str()), ("bare-metal", "0-15"));
    assert_eq!(sc.host.pools[0].pcpus.to_cpulist(), "16-31", "Xen keeps the rest");
    assert_eq!(sc.host.pools[sc.vms[0].pool].name, "pool0");
}

#[test]
fn bare_metal_takes_no_exits_and_both_finish_the_same_work() {
    let (out, spans) = run_spans(&issue_example("1s"), true);
    let t = vm_table(&out);
    for vm in ["par", "pm"] {
        assert_eq!(num(&t, vm, "progress"), 1.0, "{vm}");
    }
    // No hypervisor: no exit overheads, no pause-loop exits; its CPUs halt natively.
    assert_eq!(num(&t, "pm", "overhead_ms"), 0.0);
    assert_eq!(num(&t, "pm", "ple_exit_count"), 0.0);
    assert!(num(&t, "pm", "halts") > 0.0, "idle CPUs halt");
    assert!(num(&t, "par", "overhead_ms") > 0.0, "the VM pays its exits");
    // Each side stays on its own pCPUs.
    assert!(spans.iter().filter(|s| s.vm == "pm").all(|s| s.pcpu < 16 && s.pcpu == s.vcpu));
    assert!(spans.iter().filter(|s| s.vm == "par").all(|s| s.pcpu >= 16));
}

/// Linux 3.13 fork balancing and select_idle_sibling on a module host: 8 busy threads on 16 CPUs
/// (8 modules) run one per module.
#[test]
fn bare_metal_threads_take_idle_modules_first() {
    let text = format!(
        "{HOST}\n[[vm]]\nname = \"pm\"\nbare_metal = true\ncpus = \"0-15\"\nworkload = \"cpu-bound\"\nthreads = 8\n\
         [run]\nduration = \"200ms\"\n"
    );
    let (_, spans) = run_spans(&text, true);
    let used: BTreeSet<u32> = spans.iter().filter(|s| s.vm == "pm" && s.end_ns > s.start_ns).map(|s| s.pcpu).collect();
    let modules: BTreeSet<u32> = used.iter().map(|p| p / 2).collect();
    assert_eq!((used.len(), modules.len()), (8, 8), "pCPUs used: {used:?}");
    // Both nodes of the socket (0-7, 8-15) get four.
    assert_eq!(used.iter().filter(|&&p| p < 8).count(), 4, "{used:?}");
}

/// Linux 3.13's load balancer (guest/bare_metal_balance.rs): 9 busy threads on two nodes of four
/// modules leave one node above its capacity of 4 cores. Fork placement puts the ninth beside a
/// busy core, and from then on the balancer keeps moving running threads (MC-level active
/// balances pass the doubled module round the node, the NUMA level pushes one across, which
/// overloads the other node): busy threads run on more pCPUs than there are threads. With 8
/// threads (one per module) nothing moves.
#[test]
fn the_balancer_moves_running_threads_of_an_overloaded_node() {
    let used = |threads: u32| {
        let text = format!(
            "{HOST}\n[[vm]]\nname = \"pm\"\nbare_metal = true\ncpus = \"0-15\"\nworkload = \"cpu-bound\"\nthreads = {threads}\n\
             [run]\nduration = \"2s\"\n"
        );
        let (_, spans) = run_spans(&text, true);
        spans.iter().filter(|s| s.vm == "pm" && s.end_ns > s.start_ns).map(|s| s.pcpu).collect::<BTreeSet<u32>>()
    };
    assert_eq!(used(8).len(), 8);
    let nine = used(9);
    assert!(nine.len() > 9, "pCPUs used: {nine:?}");
    assert!(nine.iter().any(|&p| p < 8) && nine.iter().any(|&p| p >= 8), "{nine:?}");
}

fn load_err(text: &str) -> String {
    vcpusim::api::load_scenario(text, "t.toml").expect_err("refused").to_string()
}

#[test]
fn bad_bare_metal_input_is_refused_with_the_key() {
    let vm = |extra: &str| format!("{HOST}\n[[vm]]\nname = \"pm\"\nbare_metal = true\nworkload = \"cpu-bound\"\n{extra}\n");
    for (key, value) in [("weight", "512"), ("cap", "50"), ("pool", "\"pool0\""), ("type", "\"con\""), ("cpus_soft", "\"0-3\"")] {
        let err = load_err(&vm(&format!("{key} = {value}")));
        assert!(err.contains(&format!("vm[0].{key}")) && err.contains("bare-metal"), "{key}: {err}");
    }
    let err = load_err(&format!("{HOST}[host.uvf]\n[[vm]]\nname = \"pm\"\nbare_metal = true\nworkload = \"cpu-bound\"\n[vm.uvf]\n"));
    assert!(err.contains("vm[0].uvf"), "{err}");
    let err = load_err(&vm("cpus = \"0-3\"\nvcpus = 8"));
    assert!(err.contains("vm[0].vcpus") && err.contains("expected 4"), "{err}");
    let err = load_err(&vm("cpus = [\"0\", \"1\"]"));
    assert!(err.contains("vm[0].cpus") && err.contains("one cpulist string"), "{err}");
    let err = load_err(&vm("bare_metal = 1").replace("bare_metal = true\n", ""));
    assert!(err.contains("vm[0].bare_metal") && err.contains("true or false"), "{err}");
    // A VM pinned only to the machine's pCPUs has nowhere to run.
    let err = load_err(&format!(
        "{HOST}\n[[vm]]\nname = \"a\"\nvcpus = 2\ncpus = \"0-3\"\nworkload = \"cpu-bound\"\n\
         [[vm]]\nname = \"pm\"\nbare_metal = true\ncpus = \"0-7\"\nworkload = \"cpu-bound\"\n"
    ));
    assert!(err.contains("vm[0].cpus") && err.contains("bare-metal"), "{err}");
    // Every pCPU named by VMs: nothing left for the default.
    let err = load_err(&format!(
        "{HOST}\n[[vm]]\nname = \"a\"\nvcpus = 2\ncpus = \"0-31\"\nworkload = \"cpu-bound\"\n\
         [[vm]]\nname = \"pm\"\nbare_metal = true\nworkload = \"cpu-bound\"\n"
    ));
    assert!(err.contains("vm[1]") && err.contains("none is left"), "{err}");
}

/// Seed 001 III-B: at one thread the VM is 24% slower than the physical machine, all of it the
/// fixed overhead (`[host.costs] virt_overhead = 0.24`), side by side on one host.
#[test]
fn one_thread_vm_vs_machine_is_the_configured_overhead() {
    let text = format!(
        "{HOST}[host.costs]\nvirt_overhead = 0.24\n\
         [[vm]]\nname = \"par\"\nvcpus = 16\ncpus = \"16-31\"\nworkload = \"tascell.fib\"\nthreads = 1\niterations = 1\n\
         [vm.params]\nserial = \"1s\"\n\
         [[vm]]\nname = \"pm\"\nbare_metal = true\nworkload = \"tascell.fib\"\nthreads = 1\niterations = 1\n\
         [vm.params]\nserial = \"1s\"\n[run]\nduration = \"20s\"\n"
    );
    let t = vm_table(&run_toml(&text, true));
    let (vm, pm) = (num(&t, "par", "completion_time_ms"), num(&t, "pm", "completion_time_ms"));
    assert!((pm - 1000.0).abs() < 0.01, "{pm}");
    assert!((vm / pm - 1.24).abs() < 0.001, "{vm} / {pm}");
}
