//! Helpers for the engine-level tests: run TOML text and read the per-VM table.
#![allow(dead_code)]

use std::collections::BTreeMap;
use vcpusim::api::{load_scenario, run, RunOptions, RunOutput};

/// Build `text` as a `Sim` in check mode, run it for `ms` simulated milliseconds and finish it,
/// for tests that read the engine's state (overlays' holds and skews) rather than its outputs.
pub fn run_sim_checked(text: &str, ms: u64) -> vcpusim::sim::state::Sim {
    let sc = load_scenario(text, "<test>").unwrap_or_else(|e| panic!("scenario does not load: {e}\n{text}"));
    let mut sim = vcpusim::sim::state::Sim::build(&sc, sc.run.seed, false, true).expect("builds");
    sim.start();
    sim.run_until(ms * vcpusim::time::MS, None).expect("runs in check mode without an invariant failing");
    sim.finish();
    sim
}

/// A VM ("tlb") whose thread 0 munmaps (a TLB shootdown to its three other vCPUs, each running
/// a CPU-bound thread) beside a CPU-bound 2-vCPU VM ("hog"), on `pcpus` pCPUs under `policy`
/// (the value of `[host] policy` and any line after it), with `guest` as the `[guest]` body:
/// on fewer than six pCPUs shootdown targets are often preempted. Runs 300 ms.
pub fn shootdowns_overcommitted(pcpus: u32, policy: &str, guest: &str) -> String {
    format!(
        "[host]\npcpus = {pcpus}\npolicy = {policy}\n[guest]\n{guest}\n\
         [[vm]]\nname = \"tlb\"\nvcpus = 4\nworkload = \"program\"\n\
         [vm.program]\nthreads = [[{{loop = \"forever\", body = [{{compute = \"200us\"}}, {{mmap = 1}}, {{munmap = 1}}, {{progress = true}}]}}], \
                                  [{{loop = \"forever\", body = [{{compute = \"1ms\"}}, {{progress = true}}]}}], \
                                  [{{loop = \"forever\", body = [{{compute = \"1ms\"}}, {{progress = true}}]}}], \
                                  [{{loop = \"forever\", body = [{{compute = \"1ms\"}}, {{progress = true}}]}}]]\n\
         [[vm]]\nname = \"hog\"\nvcpus = 2\nworkload = \"program\"\n\
         [vm.program]\nthreads = [[{{loop = \"forever\", body = [{{compute = \"1ms\"}}]}}], [{{loop = \"forever\", body = [{{compute = \"1ms\"}}]}}]]\n\
         [run]\nduration = \"300ms\"\n"
    )
}

/// A 4-vCPU VM ("par") running `workload` beside a 3-vCPU CPU-bound VM on 4 pCPUs under
/// `policy`, with `guest` as the `[guest]` body; 200 ms, seed 5.
pub fn workload_beside_hog(policy: &str, workload: &str, guest: &str) -> String {
    format!(
        "[host]\npcpus = 4\npolicy = \"{policy}\"\n[guest]\n{guest}\n\
         [[vm]]\nname = \"par\"\nvcpus = 4\nworkload = \"{workload}\"\n\
         [[vm]]\nname = \"hog\"\nvcpus = 3\nworkload = \"cpu-bound\"\n\
         [run]\nduration = \"200ms\"\nseed = 5\n"
    )
}

/// Two threads on two vCPUs of a VM ("a") alone on two pCPUs without pause-loop exiting, under
/// `policy` (the value of `[host] policy` and any line after it), with `guest` as the
/// `[guest]` body: thread 0 holds kernel lock 0 for 2 ms at a time, thread 1 wants it briefly
/// between computing. Runs 40 ms.
pub fn holder_and_waiter(policy: &str, guest: &str) -> String {
    format!(
        "[host]\npcpus = 2\npolicy = {policy}\n[host.ple]\nenabled = false\n[guest]\n{guest}\n\
         [[vm]]\nname = \"a\"\nvcpus = 2\nworkload = \"program\"\n\
         [vm.program]\nkernel_locks = [\"k\"]\n\
         threads = [[{{loop = \"forever\", body = [{{syscall = \"2ms\", lock = 0}}, {{compute = \"100us\"}}, {{progress = true}}]}}], \
                    [{{loop = \"forever\", body = [{{compute = \"300us\"}}, {{syscall = \"5us\", lock = 0}}, {{progress = true}}]}}]]\n\
         [run]\nduration = \"40ms\"\n"
    )
}

pub fn run_toml(text: &str, check: bool) -> RunOutput {
    let sc = load_scenario(text, "<test>").unwrap_or_else(|e| panic!("scenario does not load: {e}\n{text}"));
    run(&sc, &RunOptions { check, ..Default::default() }).unwrap_or_else(|e| panic!("run failed: {e}"))
}

/// One CSV line's cells, honouring double-quoted fields (`progress_unit` may hold commas).
pub fn csv_cells(line: &str) -> Vec<String> {
    let mut cells = vec![String::new()];
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                chars.next();
                cells.last_mut().unwrap().push('"');
            }
            '"' => quoted = !quoted,
            ',' if !quoted => cells.push(String::new()),
            c => cells.last_mut().unwrap().push(c),
        }
    }
    cells
}

/// vms.csv as a map VM name -> column -> value.
pub fn vm_table(out: &RunOutput) -> BTreeMap<String, BTreeMap<String, String>> {
    let mut lines = out.vms_csv.lines();
    let header: Vec<String> = csv_cells(lines.next().expect("a header"));
    lines
        .map(|l| {
            let cells = csv_cells(l);
            let row: BTreeMap<String, String> = header.iter().zip(cells.iter()).map(|(h, c)| (h.to_string(), c.to_string())).collect();
            (row["vm"].clone(), row)
        })
        .collect()
}

pub fn num(table: &BTreeMap<String, BTreeMap<String, String>>, vm: &str, col: &str) -> f64 {
    let v = &table[vm][col];
    v.parse().unwrap_or_else(|_| panic!("{vm}.{col} = {v:?} is not a number"))
}

/// One pCPU run span of the schedule trace: which VM's vCPU ran on which pCPU, when (ns).
#[derive(Clone, Debug)]
pub struct Span {
    pub pcpu: u32,
    pub vm: String,
    /// The vCPU's index inside its VM.
    pub vcpu: u32,
    pub start_ns: u64,
    pub end_ns: u64,
}

/// Run TOML text with the trace on and return the pCPU run spans (track 0 of trace.json).
pub fn run_spans(text: &str, check: bool) -> (RunOutput, Vec<Span>) {
    let sc = load_scenario(text, "<test>").unwrap_or_else(|e| panic!("scenario does not load: {e}\n{text}"));
    let out = run(&sc, &RunOptions { check, trace: true, ..Default::default() }).unwrap_or_else(|e| panic!("run failed: {e}"));
    let spans = spans_of(&out);
    (out, spans)
}

/// The pCPU run spans (track 0) of a run's trace.
pub fn spans_of(out: &RunOutput) -> Vec<Span> {
    let json: serde_json::Value = serde_json::from_str(out.trace_json.as_deref().expect("a trace")).expect("trace JSON");
    let events = json["traceEvents"].as_array().expect("traceEvents");
    let ns = |v: &serde_json::Value| (v.as_f64().expect("a number") * 1000.0).round() as u64;
    events
        .iter()
        .filter(|e| e["ph"] == "X" && e["pid"] == 0)
        .map(|e| {
            let name = e["name"].as_str().expect("a span name");
            let start_ns = ns(&e["ts"]);
            Span {
                pcpu: e["tid"].as_u64().expect("tid") as u32,
                vm: name.rsplit_once('/').map_or(name, |(vm, _)| vm).to_string(),
                vcpu: name.rsplit_once("/v").and_then(|(_, i)| i.parse().ok()).expect("a vCPU index"),
                start_ns,
                end_ns: start_ns + ns(&e["dur"]),
            }
        })
        .collect()
}

/// A seeded generator for the random-scenario tests (PCG64, as the engine's streams).
pub struct Rng(rand_pcg::Pcg64Mcg);

impl Rng {
    pub fn new(seed: u64) -> Self {
        use rand::SeedableRng;
        Rng(rand_pcg::Pcg64Mcg::seed_from_u64(seed))
    }
    /// Uniform in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        use rand::Rng as _;
        self.0.random_range(0..n)
    }
    /// A non-empty subset of `pcpus` as a cpulist.
    pub fn mask(&mut self, pcpus: &[u32]) -> String {
        let mut picked: Vec<u32> = pcpus.iter().copied().filter(|_| self.below(2) == 0).collect();
        if picked.is_empty() {
            picked.push(pcpus[self.below(pcpus.len() as u64) as usize]);
        }
        picked.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(",")
    }
}

/// The error loading a one-VM, one-vCPU scenario whose `[vm.program]` body is `program` (file
/// name `f.toml`): for tests of the program language's messages.
pub fn refused_program(program: &str) -> String {
    let text = format!("[host]\npcpus = 1\n[[vm]]\nname = \"a\"\nvcpus = 1\nworkload = \"program\"\n[vm.program]\n{program}\n");
    load_scenario(&text, "f.toml").expect_err("refused").to_string()
}
