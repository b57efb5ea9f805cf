//! Xen 4.4's NUMA node affinity under Credit and xl's automatic placement, at the engine level
//! (hypervisor/node_affinity.rs, hypervisor/xl_numa.rs, credit's node-affinity balance step):
//! seed 001's "0-16" case (section III-G, Figure 9) and its fix (section IV-A, Figures 10-11).
//!
//! The host is seed 001's: two Opteron 6376 sockets, four NUMA nodes of 8 cores (nodes 0-3 hold
//! pCPUs 0-7, 8-15, 16-23, 24-31), CMT modules of two cores. The VM has 16 vCPUs pinned to
//! pCPUs 16-31 (nodes 2 and 3) while xl gave it node affinity {0, 2}. Each run has k always-busy
//! threads; the per-pCPU busy time is measured between events after a warm-up.

use vcpusim::api::load_scenario;
use vcpusim::hardware::cpumask::CpuMask;
use vcpusim::ids::{PcpuId, VcpuId};
use vcpusim::sim::build::numa_placement;
use vcpusim::sim::state::Sim;
use vcpusim::time::{MS, SEC};

/// The seed's host and VM with `threads` always-busy threads; `vm_extra` adds VM keys.
fn seed_case(threads: u32, vm_extra: &str) -> String {
    format!(
        "[host]\npcpus = 32\nsockets = 2\nnuma_nodes = 4\ncores_per_module = 2\nllc = \"node\"\npolicy = \"credit\"\n\
         params = {{ xen = \"4.4\" }}\n\
         [[vm]]\nname = \"par\"\nvcpus = 16\nmemory = \"4GB\"\ncpus = \"16-31\"\n{vm_extra}\nworkload = \"cpu-bound\"\nthreads = {threads}\n\
         [run]\nduration = \"3s\"\nseed = 1\n"
    )
}

/// Busy time of each pCPU over [`from`, `until`), as a share of the window, stepping the engine
/// event by event (in check mode: the engine's invariants run after every event).
fn pcpu_busy(text: &str, from: u64, until: u64) -> Vec<f64> {
    let sc = load_scenario(text, "<test>").unwrap_or_else(|e| panic!("{e}\n{text}"));
    let mut sim = Sim::build(&sc, sc.run.seed, false, true).unwrap();
    let mut busy = vec![0u64; sim.pinfo().len()];
    sim.start();
    let mut last = 0;
    loop {
        let t = sim.next_event_at().filter(|&t| t <= until).unwrap_or(until);
        for (p, info) in sim.pinfo().iter().enumerate() {
            if info.current.is_some() {
                busy[p] += t.min(until).saturating_sub(last.max(from));
            }
        }
        last = t.max(last);
        if t >= until {
            break;
        }
        sim.run_until(t, None).unwrap_or_else(|e| panic!("{e}"));
    }
    busy.iter().map(|&b| b as f64 / (until - from) as f64).collect()
}

/// The pCPUs busy more than half the window.
fn used(busy: &[f64]) -> Vec<usize> {
    (0..busy.len()).filter(|&p| busy[p] > 0.5).collect()
}

/// Modules (pairs 2m, 2m+1) with both cores used.
fn competing(used: &[usize]) -> usize {
    used.iter().filter(|&&p| p % 2 == 0 && used.contains(&(p + 1))).count()
}

fn in_node(p: usize, node: usize) -> bool {
    p / 8 == node
}

/// Section III-G, Figure 9: with node affinity {0, 2} and vCPU affinity 16-31, threads 1-4 take
/// node 2's idle modules one core each, threads 5-8 their sibling cores, threads 9-12 node 3's
/// idle modules, threads 13-16 their siblings. xl chose {0, 2} from the free memory (the
/// `node_memory` below makes nodes 0 and 2 the pair with the most free, as on the seed's host).
#[test]
fn seed_0_16_with_xl_node_affinity_fills_node_2_modules_then_siblings_then_node_3() {
    let placed = "numa_placement = \"auto\"";
    let host_memory = "node_memory = [\"80GB\", \"70GB\", \"79GB\", \"70GB\"]";
    for k in 1..=16u32 {
        let text = seed_case(k, placed).replacen("[[vm]]", &format!("{host_memory}\n[[vm]]"), 1);
        let busy = pcpu_busy(&text, SEC, 3 * SEC);
        let u = used(&busy);
        let detail = format!("k = {k}: used pCPUs {u:?}, busy {busy:.2?}");
        assert_eq!(u.len(), k as usize, "{detail}");
        let (node2, node3): (Vec<usize>, Vec<usize>) = u.iter().partition(|&&p| in_node(p, 2));
        assert!(node2.iter().chain(&node3).all(|&p| (16..32).contains(&p)), "{detail}");
        let k = k as usize;
        let want_node2 = k.min(8);
        assert_eq!((node2.len(), node3.len()), (want_node2, k - want_node2), "{detail}");
        // Node 2: one core per module up to 4 threads, then siblings.
        assert_eq!(competing(&node2), want_node2.saturating_sub(4), "{detail}");
        // Node 3 likewise, once node 2 is full.
        assert_eq!(competing(&node3), (k - want_node2).saturating_sub(4), "{detail}");
    }
}

/// Section IV-A, Figures 10-11: with node affinity reset (`"off"`, the seed's tool), it derives
/// from the vCPU affinity ({2, 3}) and is automatic, so credit skips the node step: up to 8
/// threads use one core of each module of nodes 2 and 3, siblings only beyond.
#[test]
fn seed_0_16_with_node_affinity_reset_uses_node_2_and_3_modules_before_siblings() {
    for k in 1..=16u32 {
        let busy = pcpu_busy(&seed_case(k, "numa_placement = \"off\""), SEC, 3 * SEC);
        let u = used(&busy);
        let detail = format!("k = {k}: used pCPUs {u:?}, busy {busy:.2?}");
        assert_eq!(u.len(), k as usize, "{detail}");
        assert!(u.iter().all(|&p| (16..32).contains(&p)), "{detail}");
        assert_eq!(competing(&u), (k as usize).saturating_sub(8), "{detail}");
    }
}

/// The explicit form says the same as xl's choice: `{ nodes = [0, 2] }` gives the same busy map.
/// With equal free memory on every node xl takes the first pair, {0, 1}, which misses the vCPU
/// affinity: the node step is skipped and the map is that of `"off"`.
#[test]
fn explicit_nodes_match_xl_s_choice_and_a_disjoint_choice_is_ignored() {
    let host_memory = "node_memory = [\"80GB\", \"70GB\", \"79GB\", \"70GB\"]";
    let auto = seed_case(6, "numa_placement = \"auto\"").replacen("[[vm]]", &format!("{host_memory}\n[[vm]]"), 1);
    let nodes = seed_case(6, "numa_placement = { nodes = [0, 2] }");
    let placed = pcpu_busy(&auto, SEC, 2 * SEC);
    assert_eq!(placed, pcpu_busy(&nodes, SEC, 2 * SEC));
    assert_eq!(competing(&used(&placed)), 2);
    let equal = pcpu_busy(&seed_case(6, "numa_placement = \"auto\""), SEC, 2 * SEC);
    assert_eq!(equal, pcpu_busy(&seed_case(6, "numa_placement = \"off\""), SEC, 2 * SEC));
    assert_eq!(competing(&used(&equal)), 0);
}

fn node_affinities(text: &str) -> Vec<(bool, Vec<u32>, Vec<u32>)> {
    let sc = load_scenario(text, "<test>").unwrap_or_else(|e| panic!("{e}\n{text}"));
    numa_placement(&sc).into_iter().map(|(na, mem)| (na.auto, na.nodes, mem)).collect()
}

/// xl places the VMs one after the other: each counts the vCPUs of those before it (libxl
/// `nr_vcpus_on_nodes`) and sees the memory they took. Without `cpus` and under Xen 4.4 the
/// default is automatic placement; with `cpus`, xl's config turns it off; other versions and
/// policies leave node affinity automatic. Memory follows the node affinity.
#[test]
fn xl_places_vms_in_file_order_and_defaults_follow_xl() {
    let host = |params: &str| {
        format!(
            "[host]\npcpus = 32\nsockets = 2\nnuma_nodes = 4\ncores_per_module = 2\npolicy = \"credit\"\nparams = {params}\n\
             node_memory = \"16GB\"\n"
        )
    };
    let vm = |name: &str, vcpus: u32, extra: &str| {
        format!("[[vm]]\nname = \"{name}\"\nvcpus = {vcpus}\nmemory = \"6GB\"\n{extra}\nworkload = \"cpu-bound\"\n")
    };
    let text = [
        host("{ xen = \"4.4\" }"),
        vm("a", 8, ""),
        vm("b", 8, ""),
        vm("c", 4, "cpus = \"0-3\""),
        vm("d", 8, ""),
        vm("e", 2, "numa_placement = { nodes = [0, 1, 2, 3] }"),
    ]
    .concat();
    let got = node_affinities(&text);
    // a: one node of 8 pCPUs suffices; all equal, so node 0. b: node 0 now has 8 vCPUs: node 1.
    assert_eq!(got[0], (false, vec![0], vec![0]));
    assert_eq!(got[1], (false, vec![1], vec![1]));
    // c: cpus given, so no placement: automatic, from its pinning.
    assert_eq!(got[2], (true, vec![0], vec![0]));
    // d: nodes 2 and 3 have no vCPUs; equal memory: node 2.
    assert_eq!(got[3], (false, vec![2], vec![2]));
    // e: every node is the "reset" command: automatic, over every node.
    assert_eq!(got[4], (true, vec![0, 1, 2, 3], vec![0, 1, 2, 3]));
    // Four 4-vCPU VMs take a node each (fewest vCPUs first); a fifth ties on vCPUs and on free
    // memory everywhere: the first node.
    let crowded = [host("{ xen = \"4.4\" }"), vm("a", 4, ""), vm("b", 4, ""), vm("c", 4, ""), vm("d", 4, ""), vm("e", 1, "")].concat();
    let nodes: Vec<Vec<u32>> = node_affinities(&crowded).into_iter().map(|(_, n, _)| n).collect();
    assert_eq!(nodes, vec![vec![0], vec![1], vec![2], vec![3], vec![0]]);
    // Other versions: no placement (4.5 on sets soft affinity instead; not modelled).
    let later = [host("{ xen = \"4.18\" }"), vm("a", 8, "")].concat();
    assert_eq!(node_affinities(&later)[0], (true, vec![0, 1, 2, 3], vec![0, 1, 2, 3]));
}

/// Free memory decides between equal vCPU counts, and a VM that fits nowhere keeps an automatic
/// affinity (libxl: "Not even a suitable placement candidate!").
#[test]
fn xl_prefers_free_memory_and_gives_up_when_nothing_fits() {
    let text = |mem: &str| {
        format!(
            "[host]\npcpus = 32\nsockets = 2\nnuma_nodes = 4\npolicy = \"credit\"\nparams = {{ xen = \"4.4\" }}\n\
             node_memory = [\"8GB\", \"8GB\", \"12GB\", \"8GB\"]\n\
             [[vm]]\nname = \"a\"\nvcpus = 4\nmemory = \"{mem}\"\nworkload = \"cpu-bound\"\n"
        )
    };
    assert_eq!(node_affinities(&text("4GB"))[0], (false, vec![2], vec![2]));
    // 10 GB: only node 2 holds it alone.
    assert_eq!(node_affinities(&text("10GB"))[0], (false, vec![2], vec![2]));
    // 14 GB: two nodes, the pair with the most free memory: 0 and 2 (20 GB; first of equals).
    assert_eq!(node_affinities(&text("14GB"))[0], (false, vec![0, 2], vec![0, 2]));
    // 40 GB: nowhere.
    assert_eq!(node_affinities(&text("40GB"))[0], (true, vec![0, 1, 2, 3], vec![0, 1, 2, 3]));
}

/// `xl vcpu-pin` after creation (`Sim::set_affinity`) recomputes an automatic node affinity
/// (`domain_update_node_affinity`) and leaves an explicit one alone (the seed's conflict).
#[test]
fn pinning_after_creation_updates_only_an_automatic_node_affinity() {
    for (placement, want) in [("\"off\"", vec![2]), ("{ nodes = [0, 1] }", vec![0, 1])] {
        let text = format!(
            "[host]\npcpus = 32\nsockets = 2\nnuma_nodes = 4\npolicy = \"credit\"\nparams = {{ xen = \"4.4\" }}\n\
             [[vm]]\nname = \"a\"\nvcpus = 2\nnuma_placement = {placement}\nworkload = \"cpu-bound\"\n"
        );
        let sc = load_scenario(&text, "<test>").unwrap();
        let mut sim = Sim::build(&sc, 1, false, true).unwrap();
        sim.start();
        sim.run_until(10 * MS, None).unwrap();
        let pin = CpuMask::from_pcpus((16..24).map(PcpuId));
        for v in 0..2 {
            sim.set_affinity(VcpuId(v), pin.clone(), CpuMask::full(32)).unwrap();
        }
        assert_eq!(sim.vminfo()[0].node_affinity.nodes, want, "{placement}");
        sim.run_until(100 * MS, None).unwrap();
    }
}

/// The example of docs/scenario-format.md ("NUMA placement under Xen 4.4") loads, and xl's
/// placement gives it nodes 0 and 2 with its memory there.
#[test]
fn the_documented_example_gets_nodes_0_and_2() {
    let doc = include_str!("../../../docs/scenario-format.md");
    let section = doc.split("### NUMA placement under Xen 4.4").nth(1).expect("the section");
    let example = section.split("```toml\n").nth(1).and_then(|b| b.split("```").next()).expect("a toml block");
    assert_eq!(node_affinities(example), vec![(false, vec![0, 2], vec![0, 2])]);
}
