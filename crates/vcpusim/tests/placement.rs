//! `[host] placement` at the engine level (seed 000 section 3.2; hypervisor/policies/balance_placement.rs):
//! balance scheduling never stacks sibling vCPUs, load-conscious balance sometimes does, and the
//! key is checked like every other.

mod common;
use common::*;
use vcpusim::api::load_scenario;
use vcpusim::hypervisor::policy::VcpuState;
use vcpusim::ids::VcpuId;
use vcpusim::sim::state::Sim;

/// Seed 000 section 4.1.2's mix: a parallel app in an 8-vCPU VM beside four UP VMs on 8 pCPUs,
/// all with equal shares, so a UP vCPU weighs 8x a vCPU of the 8-vCPU VM and loads are imbalanced.
fn mix(placement: &str, duration: &str) -> String {
    format!(
        "[host]\npcpus = 8\npolicy = \"cfs\"\nplacement = \"{placement}\"\n[host.ple]\nenabled = false\n\
         [[vm]]\nname = \"par\"\nvcpus = 8\nworkload = \"barrier\"\n\
         [[vm]]\nname = \"up\"\ncount = 4\nvcpus = 1\nworkload = \"cpu-bound\"\n\
         [run]\nduration = \"{duration}\"\nseed = 3\n"
    )
}

/// Times a pCPU switched from one vCPU straight to a sibling while the first stayed runnable
/// there (preempted, not halted). `do_schedule` on a pCPU picks only from that pCPU's run queue,
/// so each such switch shows two siblings stacked on one run queue. The run is in check mode:
/// under `balance`, `Cfs::check` fails the run the moment two siblings share a run queue.
fn sibling_switches(text: &str) -> u64 {
    let sc = load_scenario(text, "<test>").unwrap_or_else(|e| panic!("{e}\n{text}"));
    let mut sim = Sim::build(&sc, sc.run.seed, false, true).unwrap();
    sim.start();
    let mut before: Vec<Option<VcpuId>> = sim.pinfo().iter().map(|p| p.current).collect();
    let mut switches = 0;
    while let Some(t) = sim.next_event_at().filter(|&t| t <= sc.run.duration) {
        sim.run_until(t, None).unwrap_or_else(|e| panic!("{e}"));
        for (p, info) in sim.pinfo().iter().enumerate() {
            if let (Some(a), Some(b)) = (before[p], info.current) {
                let out = &sim.vinfo()[a.idx()];
                let stacked = a != b
                    && out.vm == sim.vinfo()[b.idx()].vm
                    && out.state == VcpuState::Runnable
                    && out.preempted
                    && out.last_pcpu.idx() == p;
                switches += stacked as u64;
            }
            before[p] = info.current;
        }
    }
    switches
}

#[test]
fn balance_never_stacks_siblings_while_lc_balance_and_the_default_wake_path_sometimes_do() {
    let balance = sibling_switches(&mix("balance", "400ms"));
    let lc = sibling_switches(&mix("lc-balance", "400ms"));
    let default = sibling_switches(&mix("default", "400ms"));
    assert_eq!(balance, 0, "balance stacked siblings");
    assert!(lc > 0, "lc-balance never stacked siblings on the imbalanced mix");
    assert!(default > 0, "the default wake path never stacked siblings");
}

#[test]
fn balance_keeps_siblings_apart_in_check_mode_with_several_smp_vms() {
    // Two 4-vCPU VMs that block and wake all the time, and a busy 2-vCPU VM, on 4 pCPUs:
    // Cfs::check (run after every event) fails the run if two siblings ever share a run queue.
    let text = "[host]\npcpus = 4\nplacement = \"balance\"\n\
                [[vm]]\nname = \"a\"\nvcpus = 4\nworkload = \"barrier\"\n\
                [[vm]]\nname = \"b\"\nvcpus = 4\nworkload = \"mutex\"\n\
                [[vm]]\nname = \"c\"\nvcpus = 2\nworkload = \"cpu-bound\"\n\
                [run]\nduration = \"300ms\"\nseed = 5\n";
    let t = vm_table(&run_toml(text, true));
    for vm in ["a", "b", "c"] {
        assert!(num(&t, vm, "cpu_time_ms") > 0.0, "{vm} never ran");
    }
}

#[test]
fn balance_stacks_when_a_vm_has_more_vcpus_than_the_host_has_pcpus() {
    // 4 vCPUs on 2 pCPUs: every pCPU holds a sibling, so waking vCPUs fall back to the least
    // loaded pCPU and the run still makes progress.
    let text = "[host]\npcpus = 2\nplacement = \"balance\"\n\
                [[vm]]\nname = \"big\"\nvcpus = 4\nworkload = \"barrier\"\n\
                [run]\nduration = \"200ms\"\nseed = 1\n";
    let t = vm_table(&run_toml(text, true));
    assert!(num(&t, "big", "cpu_time_ms") > 0.9 * 2.0 * 200.0, "the host was not kept busy");
}

fn load_error(text: &str) -> String {
    load_scenario(text, "p.toml").expect_err("the scenario should not load").to_string()
}

#[test]
fn bad_placement_values_are_errors_naming_the_key_and_the_choices() {
    let vm = "[[vm]]\nname = \"a\"\nvcpus = 2\nworkload = \"cpu-bound\"\n";
    let e = load_error(&format!("[host]\npcpus = 2\nplacement = \"lc_balance\"\n{vm}"));
    assert!(e.contains("host.placement") && e.contains("default, balance, lc-balance"), "{e}");
    assert!(e.contains("\"lc-balance\""), "no suggestion: {e}");
    let e = load_error(&format!("[host]\npcpus = 2\nplacement = 3\n{vm}"));
    assert!(e.contains("host.placement") && e.contains("got 3"), "{e}");
    let e = load_error(&format!("[host]\npcpus = 2\npolicy = \"credit\"\nplacement = \"balance\"\n{vm}"));
    assert!(e.contains("host.placement") && e.contains("\"cfs\" only") && e.contains("credit"), "{e}");
    let e = load_error(&format!("[host]\npcpus = 2\nplacement = \"balance\"\n[host.params]\nplacement = \"balance\"\n{vm}"));
    assert!(e.contains("host.params.placement") && e.contains("twice"), "{e}");
    // "default" is every policy's own placement.
    load_scenario(&format!("[host]\npcpus = 2\npolicy = \"credit\"\nplacement = \"default\"\n{vm}"), "p.toml").unwrap();
}
