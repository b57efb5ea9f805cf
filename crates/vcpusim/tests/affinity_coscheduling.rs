//! Co-scheduling policies (`gang`, `hybrid`) inside cpupools and under hard affinity
//! (docs/model.md, "Affinity under co-scheduling"): each VM runs only on its pool's pCPUs and
//! inside its vCPUs' masks, co-scheduled VMs still run all their vCPUs together when the masks
//! force a placement a greedy pass would miss, and random pools and masks pass check mode.

mod common;

use common::{num, run_spans, run_toml, vm_table, Rng, Span};

/// Run with check mode and the trace on; the pCPU run spans.
fn spans(text: &str) -> (vcpusim::api::RunOutput, Vec<Span>) {
    run_spans(text, true)
}

/// Total time (ns) during which exactly `k` of `vm`'s vCPUs run, for each k (index = k).
fn concurrency(spans: &[Span], vm: &str, nvcpus: usize) -> Vec<u64> {
    let mut edges: Vec<(u64, i32)> = Vec::new();
    for s in spans.iter().filter(|s| s.vm == vm && s.end_ns > s.start_ns) {
        edges.push((s.start_ns, 1));
        edges.push((s.end_ns, -1));
    }
    edges.sort();
    let mut time = vec![0u64; nvcpus + 1];
    let (mut running, mut last) = (0i32, 0u64);
    for (t, d) in edges {
        time[running as usize] += t - last;
        running += d;
        last = t;
    }
    time
}

/// Time (ns) during which some vCPU of `a` and some vCPU of `b` both run.
fn overlap(spans: &[Span], a: &str, b: &str) -> u64 {
    let sa: Vec<&Span> = spans.iter().filter(|s| s.vm == a).collect();
    let sb: Vec<&Span> = spans.iter().filter(|s| s.vm == b).collect();
    // Union of each side first, then intersect.
    let union = |v: &[&Span]| {
        let mut iv: Vec<(u64, u64)> = v.iter().map(|s| (s.start_ns, s.end_ns)).collect();
        iv.sort();
        let mut out: Vec<(u64, u64)> = Vec::new();
        for (s, e) in iv {
            match out.last_mut() {
                Some(l) if s <= l.1 => l.1 = l.1.max(e),
                _ => out.push((s, e)),
            }
        }
        out
    };
    let (ua, ub) = (union(&sa), union(&sb));
    let mut total = 0;
    for (s1, e1) in &ua {
        for (s2, e2) in &ub {
            let (s, e) = ((*s1).max(*s2), (*e1).min(*e2));
            if e > s {
                total += e - s;
            }
        }
    }
    total
}

/// Every span of `vm`'s vCPU `k` lies on a pCPU of `masks[k]`.
fn assert_inside(spans: &[Span], vm: &str, masks: &[&[u32]]) {
    let mut seen = 0;
    for s in spans.iter().filter(|s| s.vm == vm) {
        seen += 1;
        assert!(masks[s.vcpu as usize].contains(&s.pcpu), "{s:?} ran outside its hard affinity {:?}", masks[s.vcpu as usize]);
    }
    assert!(seen > 0, "{vm} never ran");
}

#[test]
fn a_gang_pool_beside_a_credit_pool() {
    let text = "[host]\npcpus = 8\npolicy = \"credit\"\n\n\
        [[host.pool]]\nname = \"g\"\npcpus = \"4-7\"\npolicy = \"gang\"\n\n\
        [[vm]]\nname = \"busy\"\ncount = 6\nvcpus = 1\nworkload = \"cpu-bound\"\n\n\
        [[vm]]\nname = \"bar\"\nvcpus = 4\nworkload = \"barrier\"\npool = \"g\"\n\n\
        [[vm]]\nname = \"two\"\nvcpus = 2\nworkload = \"cpu-bound\"\npool = \"g\"\n\n\
        [run]\nduration = \"1s\"\nseed = 3\n";
    let (out, spans) = spans(text);
    for s in &spans {
        let in_g = s.vm == "bar" || s.vm == "two";
        assert_eq!(in_g, s.pcpu >= 4, "{s:?} ran outside its pool");
    }
    let t = vm_table(&out);
    for vm in ["bar", "two"] {
        assert!(num(&t, vm, "cpu_time_ms") > 100.0, "{vm} barely ran");
    }
    // "bar" needs all four pCPUs of the pool: it never runs beside "two".
    let bar_time: u64 = concurrency(&spans, "bar", 4)[1..].iter().sum();
    let both = overlap(&spans, "bar", "two");
    assert!((both as f64) < 0.01 * bar_time as f64, "bar and two overlap {both} ns of {bar_time}");
    // While bar runs, its four vCPUs run together most of the time (they halt at barriers).
    let c = concurrency(&spans, "bar", 4);
    assert!(c[4] as f64 > 0.6 * bar_time as f64, "bar's vCPUs ran together only {} of {bar_time} ns: {c:?}", c[4]);
}

#[test]
fn gang_co_schedules_a_vm_whose_masks_need_a_matching() {
    // Index-order greedy placement puts vCPU 0 on pCPU 0 (its last pCPU), leaving vCPU 1 (only
    // pCPU 0) nowhere; the only co-scheduling is v0 on 3, v1 on 0, v2 on 1, v3 on 2.
    let text = "[host]\npcpus = 4\npolicy = \"gang\"\nstart_skew = \"0s\"\n\n\
        [[vm]]\nname = \"m\"\nvcpus = 4\nworkload = \"cpu-bound\"\ncpus = [\"0-3\", \"0\", \"0-1\", \"0-2\"]\n\n\
        [[vm]]\nname = \"o\"\nvcpus = 2\nworkload = \"cpu-bound\"\ncpus = \"2-3\"\n\n\
        [run]\nduration = \"1s\"\nseed = 1\n";
    let (out, spans) = spans(text);
    assert_inside(&spans, "m", &[&[3], &[0], &[1], &[2]]);
    assert_inside(&spans, "o", &[&[2, 3], &[2, 3]]);
    let t = vm_table(&out);
    // Equal weights, both always busy: reserved time 4 : 2 per slice, so m gets about as much
    // reserved pCPU time as o (never starved by a failed placement).
    let (m, o) = (num(&t, "m", "cpu_time_ms"), num(&t, "o", "cpu_time_ms"));
    assert!(m > 1000.0 && o > 500.0, "m {m} ms, o {o} ms");
    let c = concurrency(&spans, "m", 4);
    let running: u64 = c[1..].iter().sum();
    assert!(c[4] as f64 > 0.99 * running as f64, "m's vCPUs were not co-scheduled: {c:?}");
}

#[test]
fn hybrid_co_schedules_a_pinned_concurrent_vm_beside_pinned_hit_vms() {
    // Pool "h" = 2-5 runs hybrid beside a credit pool0 (0-1). Algorithm 1 homes con's vCPU 0 on
    // pCPU 2 (least loaded, lowest), where vCPU 1 must live: a matching moves vCPU 0.
    let text = "[host]\npcpus = 6\npolicy = \"credit\"\n\n\
        [[host.pool]]\nname = \"h\"\npcpus = \"2-5\"\npolicy = \"hybrid\"\n\n\
        [[vm]]\nname = \"busy\"\ncount = 3\nvcpus = 1\nworkload = \"cpu-bound\"\n\n\
        [[vm]]\nname = \"con\"\nvcpus = 4\ntype = \"con\"\nworkload = \"cpu-bound\"\npool = \"h\"\ncpus = [\"2-5\", \"2\", \"2-3\", \"2-4\"]\n\n\
        [[vm]]\nname = \"hit1\"\nvcpus = 2\ntype = \"hit\"\nworkload = \"cpu-bound\"\npool = \"h\"\ncpus = \"4-5\"\n\n\
        [[vm]]\nname = \"hit2\"\nvcpus = 2\ntype = \"hit\"\nworkload = \"cpu-bound\"\npool = \"h\"\ncpus = [\"3\", \"5\"]\n\n\
        [run]\nduration = \"2s\"\nseed = 2\n";
    let (out, spans) = spans(text);
    for s in &spans {
        assert_eq!(s.vm.starts_with("busy"), s.pcpu < 2, "{s:?} ran outside its pool");
    }
    assert_inside(&spans, "con", &[&[5], &[2], &[3], &[4]]);
    assert_inside(&spans, "hit1", &[&[4, 5], &[4, 5]]);
    assert_inside(&spans, "hit2", &[&[3], &[5]]);
    let t = vm_table(&out);
    for vm in ["con", "hit1", "hit2"] {
        assert!(num(&t, vm, "cpu_time_ms") > 200.0, "{vm} barely ran: {}", num(&t, vm, "cpu_time_ms"));
    }
    let c = concurrency(&spans, "con", 4);
    let running: u64 = c[1..].iter().sum();
    assert!(c[4] as f64 > 0.99 * running as f64, "con's vCPUs were not co-scheduled: {c:?}");
}

/// A random host: pool0 (credit or cfs, or the co-scheduling policy itself) and a pool of gang
/// or hybrid, VMs of random sizes, workloads, classes and per-vCPU hard and soft masks.
fn random_scenario(seed: u64) -> String {
    let mut r = Rng::new(seed);
    let npcpus = 4 + r.below(5) as u32;
    let cosched = ["gang", "hybrid"][r.below(2) as usize];
    let split = 1 + r.below(npcpus as u64 - 1) as u32; // pool0 = 0..split, "x" = split..npcpus
    let pool0_policy = ["credit", "cfs", cosched][r.below(3) as usize];
    let mut text = format!(
        "[host]\npcpus = {npcpus}\npolicy = \"{pool0_policy}\"\n\n\
         [[host.pool]]\nname = \"x\"\npcpus = \"{split}-{}\"\npolicy = \"{cosched}\"\n\n",
        npcpus - 1
    );
    let nvms = 2 + r.below(5);
    for i in 0..nvms {
        let in_x = r.below(3) != 0;
        let pcpus: Vec<u32> = if in_x { (split..npcpus).collect() } else { (0..split).collect() };
        let vcpus = 1 + r.below(pcpus.len() as u64 + 1);
        let workload = ["cpu-bound", "barrier", "tlb", "cpu-bound"][r.below(4) as usize];
        let class = ["hit", "con"][r.below(2) as usize];
        let hard: Vec<String> = (0..vcpus).map(|_| format!("\"{}\"", r.mask(&pcpus))).collect();
        let soft: Vec<String> = (0..vcpus).map(|_| format!("\"{}\"", r.mask(&pcpus))).collect();
        text += &format!(
            "[[vm]]\nname = \"v{i}\"\nvcpus = {vcpus}\nweight = {}\nworkload = \"{workload}\"\npool = \"{}\"\ncpus = [{}]\ncpus_soft = [{}]\n",
            64 * (1 + r.below(8)),
            if in_x { "x" } else { "pool0" },
            hard.join(", "),
            soft.join(", ")
        );
        let pool_policy = if in_x { cosched } else { pool0_policy };
        if pool_policy == "hybrid" {
            text += &format!("type = \"{class}\"\n");
        }
        text += "\n";
    }
    text += &format!("[run]\nduration = \"1s\"\nseed = {seed}\n");
    text
}

#[test]
fn random_pools_and_masks_pass_check_mode() {
    let mut policies = std::collections::BTreeSet::new();
    for seed in 1..=12 {
        let text = random_scenario(seed);
        policies.insert(if text.contains("policy = \"gang\"") { "gang" } else { "hybrid" });
        let out = run_toml(&text, true);
        assert!(!out.vms_csv.is_empty(), "seed {seed}");
    }
    assert_eq!(policies.len(), 2, "both co-scheduling policies drawn");
}

#[test]
fn a_capped_hybrid_pool_hands_out_its_own_pcpus_time() {
    // Capped hybrid on pool "h" (2 pCPUs): its two VMs share PE_total of 2 pCPUs, whatever the
    // weights of pool0's VMs (heavy here). The con VM takes both pCPUs in its slots and a runs
    // alone in the others (one pCPU idle): about 3000 of 4000 ms. Were pool0's weights counted,
    // pool h would get an eighth of that.
    let text = "[host]\npcpus = 4\npolicy = \"credit\"\n\n\
        [[host.pool]]\nname = \"h\"\npcpus = \"2-3\"\npolicy = \"hybrid\"\nparams = { work_conserving = false }\n\n\
        [[vm]]\nname = \"heavy\"\ncount = 2\nvcpus = 1\nweight = 2048\nworkload = \"cpu-bound\"\n\n\
        [[vm]]\nname = \"a\"\nvcpus = 1\nworkload = \"cpu-bound\"\npool = \"h\"\n\n\
        [[vm]]\nname = \"c\"\nvcpus = 2\ntype = \"con\"\nworkload = \"cpu-bound\"\npool = \"h\"\n\n\
        [run]\nduration = \"2s\"\nseed = 4\n";
    let t = vm_table(&run_toml(text, true));
    let (a, c) = (num(&t, "a", "cpu_time_ms"), num(&t, "c", "cpu_time_ms"));
    assert!(a + c > 0.6 * 4000.0 && a > 500.0 && c > 1000.0, "pool h used {a} + {c} ms of 4000");
}
