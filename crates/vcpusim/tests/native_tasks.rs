//! `[[vm]] native = true` (scenario/native_sections.rs, sim/mechanisms/native_tasks.rs): host
//! processes scheduled by the KVM host's policy beside the vCPUs, with native costs and kernel
//! spinlock sections that are not preemptible.

mod common;
use common::*;

/// One metrics.csv value (vm,metric,value rows).
fn metric(out: &vcpusim::output::RunOutput, vm: &str, name: &str) -> f64 {
    let key = format!("{vm},{name},");
    let line = out.metrics_csv.lines().find(|l| l.starts_with(&key)).unwrap_or_else(|| panic!("no {key} in metrics.csv"));
    line[key.len()..].parse().expect("a number")
}

/// Two native processes of weights 1024 and 2048 and a 1-vCPU VM of weight 1024 on one pCPU,
/// all CPU-bound.
fn three_on_one(policy: &str) -> String {
    format!(
        "[host]\npcpus = 1\npolicy = \"{policy}\"\n\
         [[vm]]\nname = \"light\"\nnative = true\nworkload = \"cpu-bound\"\nweight = 1024\n\
         [[vm]]\nname = \"heavy\"\nnative = true\nworkload = \"cpu-bound\"\nweight = 2048\n\
         [[vm]]\nname = \"guest\"\nvcpus = 1\nworkload = \"cpu-bound\"\nweight = 1024\n\
         [run]\nduration = \"3s\"\nseed = 3\n"
    )
}

#[test]
fn two_native_processes_and_a_vm_on_one_pcpu_share_it_by_weight() {
    for policy in ["cfs", "eevdf"] {
        let out = run_toml(&three_on_one(policy), true);
        let t = vm_table(&out);
        let share = |vm: &str| num(&t, vm, "cpu_share");
        // Weights 1 : 2 : 1 of one pCPU.
        for (vm, want) in [("light", 0.25), ("heavy", 0.5), ("guest", 0.25)] {
            assert!((share(vm) - want).abs() < 0.02, "{policy}: {vm} got {} of the pCPU, want {want}", share(vm));
        }
        // The VM pays its virtualization; the processes pay no exits.
        assert_eq!(num(&t, "light", "ple_exit_count"), 0.0, "{policy}");
    }
}

#[test]
fn a_native_process_gets_one_schedulable_entity_per_thread_sized_to_its_cpus() {
    let text = "[host]\npcpus = 4\npolicy = \"cfs\"\n\
                [[vm]]\nname = \"daemon\"\nnative = true\ncpus = \"1-2\"\nworkload = \"cpu-bound\"\n\
                [[vm]]\nname = \"io\"\nnative = true\nworkload = \"cpu-bound\"\nthreads = 3\n";
    let sc = vcpusim::api::load_scenario(text, "<test>").expect("loads");
    // nproc = the two pCPUs its cpus allow: cpu-bound's default is one thread per CPU.
    assert_eq!((sc.vms[0].vcpus, sc.vms[0].native), (2, true));
    assert_eq!(sc.vms[1].vcpus, 3);
    // Each thread pinned to its own entity.
    let pins: Vec<_> = sc.vms[1].program.thread_cpus.clone();
    assert_eq!(pins, vec![Some(vec![0]), Some(vec![1]), Some(vec![2])]);
    assert!(sc.vms[0].cpus.iter().all(|m| m.to_cpulist() == "1-2"));
}

/// A process (or a VM) whose thread holds kernel lock 0 for 2 ms at a time, beside a CPU hog on
/// one pCPU under CFS.
fn holder_beside_hog(native: bool) -> String {
    let kind = if native { "native = true" } else { "vcpus = 1" };
    format!(
        "[host]\npcpus = 1\npolicy = \"cfs\"\n[host.ple]\nenabled = false\n\
         [[vm]]\nname = \"holder\"\n{kind}\nworkload = \"program\"\n\
         [vm.program]\nkernel_locks = [\"k\"]\n\
         threads = [[{{loop = \"forever\", body = [{{syscall = \"2ms\", lock = 0}}, {{compute = \"1ms\"}}, {{progress = true}}]}}]]\n\
         [[vm]]\nname = \"hog\"\nnative = true\nworkload = \"cpu-bound\"\n\
         [run]\nduration = \"2s\"\nseed = 1\n"
    )
}

#[test]
fn a_native_task_is_never_preempted_holding_a_kernel_spinlock() {
    let as_vm = run_toml(&holder_beside_hog(false), true);
    let vm = vm_table(&as_vm);
    assert!(num(&vm, "holder", "lhp_count") > 10.0, "a vCPU is preempted holding its lock (got {})", num(&vm, "holder", "lhp_count"));

    let native = run_toml(&holder_beside_hog(true), true);
    let t = vm_table(&native);
    assert_eq!(num(&t, "holder", "lhp_count"), 0.0, "preemption waits for the unlock");
    let deferred = metric(&native, "holder", "native_deferred_preemptions");
    assert!(deferred > 10.0, "the ticks that came inside the section were deferred, got {deferred}");
    // Deferring does not starve the hog: both still get about half (equal weights).
    assert!((num(&t, "hog", "cpu_share") - 0.5).abs() < 0.1, "hog got {}", num(&t, "hog", "cpu_share"));
}

#[test]
fn native_processes_are_refused_where_they_cannot_be() {
    let err = |text: &str| vcpusim::api::load_scenario(text, "f.toml").expect_err("refused").to_string();
    let xen = "[host]\npcpus = 2\npolicy = \"credit\"\n[[vm]]\nname = \"d\"\nnative = true\nworkload = \"cpu-bound\"\n";
    let e = err(xen);
    assert!(e.contains("vm[0].native") && e.contains("KVM host") && e.contains("Domain-0"), "{e}");
    let vcpus = "[host]\npcpus = 2\npolicy = \"cfs\"\n[[vm]]\nname = \"d\"\nnative = true\nvcpus = 2\nworkload = \"cpu-bound\"\n";
    let e = err(vcpus);
    assert!(e.contains("vm[0].vcpus") && e.contains("threads"), "{e}");
    let both = "[host]\npcpus = 2\npolicy = \"cfs\"\n[[vm]]\nname = \"d\"\nnative = true\nbare_metal = true\nworkload = \"cpu-bound\"\n";
    assert!(err(both).contains("vm[0].bare_metal"), "{}", err(both));
    let pinned = "[host]\npcpus = 2\npolicy = \"cfs\"\n[[vm]]\nname = \"d\"\nnative = true\nworkload = \"program\"\n\
                  [vm.program]\ncpus = \"0\"\nthreads = [[{compute = \"1ms\"}]]\n";
    assert!(err(pinned).contains("thread affinity"), "{}", err(pinned));
    let bad = "[host]\npcpus = 2\npolicy = \"cfs\"\n[[vm]]\nname = \"d\"\nnative = \"yes\"\nworkload = \"cpu-bound\"\n";
    assert!(err(bad).contains("vm[0].native") && err(bad).contains("true or false"), "{}", err(bad));
}
