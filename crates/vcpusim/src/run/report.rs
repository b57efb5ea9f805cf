//! The result tables: `vms.csv` (one row per VM), `metrics.csv` (one row per VM and metric) and
//! `summary.json`. Numbers are formatted with fixed precision so output is byte-identical for
//! the same scenario and seed on any machine.

use crate::hardware::contention::Source;
use crate::metrics::table::{MetricRows, F3};
use crate::metrics::vm_stats::YieldFnClass;
use crate::output::RunOutput;
use crate::scenario::spec::Scenario;
use crate::sim::state::Sim;
use crate::time::to_ms;
use crate::vmexit::IpiKind;
use std::fmt::Write;

/// Columns of vms.csv, in order. Units are in the names.
#[rustfmt::skip] // one line per kind of column, as written by hand
pub const VM_COLUMNS: &[&str] = &[
    "vm", "policy", "pool", "seed", "workload", "vcpus", "weight", "cap", "threads",
    "cpu_time_ms", "user_time_ms", "kernel_time_ms", "spin_time_ms", "tlb_wait_ms", "user_spin_ms",
    "irq_time_ms", "overhead_ms", "cpu_share", "entitled_share",
    "steal_time_ms", "steal_share", "sched_latency_p50_us", "sched_latency_p99_us",
    "lhp_count", "lhp_futex_count", "lwp_count", "ipi_resched_count", "ipi_tlb_count", "tlb_shootdowns",
    "ple_exit_count", "yields", "urgent_count", "affinity_broken",
    "preemptions", "switches_in", "halts", "futex_waits",
    "progress", "progress_unit", "iterations", "completion_time_ms",
    "competing_modules", "remote_memory_share",
    "slowdown_module_frontend", "slowdown_module_fpu", "slowdown_llc", "slowdown_numa_remote",
    "yields_ple", "yields_ipi", "yields_halt", "pv_poll_blocks", "pv_kicks",
    "yields_in_ipi_wait", "yields_in_lock_spin", "yields_in_other",
];

/// Columns vms.csv gains when a VM runs a closed-loop server workload (`ab`, `Program::clients`),
/// after the network and micro-sliced ones: ab's "Requests per second" (done / timetaken) and
/// "Time per request (mean)" in ms (concurrency * timetaken * 1000 / done), as httpd's
/// support/ab.c `output_results` computes them, with timetaken the VM's completion time or the
/// run's length; empty for the other VMs. Only then, so that other runs keep their bytes.
pub const AB_COLUMNS: &[&str] = &["requests_per_sec", "time_per_request_ms"];

/// Columns vms.csv gains, after all others, when a VM's guest polls before it halts (`[guest]
/// haltpoll`): CPU time in the idle poll (part of `cpu_time_ms`), polls started, and polls a
/// wake-up ended in time. Only then, so that other runs keep their bytes.
pub const HALTPOLL_COLUMNS: &[&str] = &["idle_poll_ms", "idle_polls", "idle_poll_wakeups"];

/// `s` as one CSV cell of a row built as a list of cells (`metrics::table::csv_field`).
fn csv_field(s: &str) -> String {
    crate::metrics::table::csv_field(s).into_owned()
}

fn f3(x: f64) -> String {
    F3(x).to_string()
}

/// The run's result tables: vms.csv, metrics.csv and summary.json (each mechanism the scenario
/// turned on adds its own columns, rows and sections: sim/mechanisms/), and the trace.
pub fn build(sim: &Sim, sc: &Scenario, seed: u64, finished: bool) -> RunOutput {
    let run_identity = [
        ("scenario", serde_json::json!(sc.source)),
        ("seed", serde_json::json!(seed)),
        ("events", serde_json::json!(sim.events())),
        ("sim_time_ns", serde_json::json!(sim.now())),
    ];
    RunOutput {
        vms_csv: vms_table(sim, sc, seed),
        metrics_csv: metrics_table(sim, sc),
        summary_json: serde_json::to_string_pretty(&summary(sim, sc, seed, finished)).expect("JSON values serialize") + "\n",
        trace_json: sim.trace().map(|t| t.to_json(&run_identity)),
        warnings: sim.trace().map(|t| trace_warnings(t, sim.now())).unwrap_or_default(),
    }
}

/// vms.csv: one row per VM, [`VM_COLUMNS`], then the mechanisms' columns, then [`AB_COLUMNS`]
/// when a VM runs a closed-loop server and [`HALTPOLL_COLUMNS`] when a guest polls when idle.
fn vms_table(sim: &Sim, sc: &Scenario, seed: u64) -> String {
    let sim_time = sim.now().max(1);
    let npcpus = sim.pinfo().len() as f64;
    // Entitlement is per pool: a VM's weight share of its pool's pCPUs (at the start), bounded
    // by its cap, as a share of the whole host.
    let pool_of_vm = |i: usize| sc.vms[i].pool;
    let pool_weight: Vec<u64> = (0..sc.host.pools.len())
        .map(|k| (0..sim.vms().len()).filter(|&i| pool_of_vm(i) == k).map(|i| sim.vms()[i].sched.weight as u64).sum())
        .collect();
    let mut vms = VM_COLUMNS.join(",");
    for column in sim.mechanism_vm_columns() {
        vms.push(',');
        vms.push_str(column);
    }
    let ab = sim.vms().iter().any(|vm| vm.clients.is_some());
    if ab {
        vms.push(',');
        vms.push_str(&AB_COLUMNS.join(","));
    }
    let haltpoll = sim.guests().iter().any(|g| g.config.haltpoll.is_some());
    if haltpoll {
        vms.push(',');
        vms.push_str(&HALTPOLL_COLUMNS.join(","));
    }
    vms.push('\n');
    for (i, vm) in sim.vms().iter().enumerate() {
        let info = &sim.vminfo()[i];
        let spec = &sc.vms[i];
        let s = &vm.stats;
        let guest = &sim.guests()[i];
        let gs = &guest.stats;
        let ipi = |k: IpiKind| s.ipis_sent.get(&k).copied().unwrap_or(0);
        let row = [
            csv_field(&info.name),
            sim.placement().pool(sim.vm_pool(info.id)).policy.name().to_string(),
            csv_field(&sim.placement().view(sim.vm_pool(info.id)).name),
            seed.to_string(),
            csv_field(&vm.workload),
            info.vcpus.len().to_string(),
            vm.sched.weight.to_string(),
            vm.sched.cap.to_string(),
            spec.threads.to_string(),
            f3(to_ms(s.cpu_ns())),
            f3(to_ms(s.user_ns)),
            f3(to_ms(s.kernel_ns)),
            f3(to_ms(s.spin_ns)),
            f3(to_ms(s.tlb_wait_ns)),
            f3(to_ms(s.user_spin_ns)),
            f3(to_ms(s.irq_ns)),
            f3(to_ms(s.overhead_ns)),
            format!("{:.4}", s.cpu_ns() as f64 / (sim_time as f64 * npcpus)),
            format!("{:.4}", {
                let pool = &sc.host.pools[pool_of_vm(i)];
                let by_weight = vm.sched.weight as f64 / pool_weight[pool_of_vm(i)] as f64 * pool.pcpus.count() as f64;
                let capped = if vm.sched.cap > 0 { by_weight.min(vm.sched.cap as f64 / 100.0) } else { by_weight };
                capped / npcpus
            }),
            f3(to_ms(s.runnable_wait_ns)),
            format!("{:.4}", s.runnable_wait_ns as f64 / (sim_time as f64 * info.vcpus.len() as f64)),
            f3(s.sched_latency.quantile(0.5) as f64 / 1e3),
            f3(s.sched_latency.quantile(0.99) as f64 / 1e3),
            s.lhp_count().to_string(),
            s.lhp_by_class(|l| sim.guests().locks()[l].class.as_str())
                .get(crate::guest::futex::FUTEX_LOCK_CLASS)
                .copied()
                .unwrap_or(0)
                .to_string(),
            s.lwp.to_string(),
            ipi(IpiKind::Resched).to_string(),
            ipi(IpiKind::TlbShootdown).to_string(),
            gs.tlb_shootdowns.to_string(),
            s.ple_exits.to_string(),
            s.yields.to_string(),
            s.urgent_entered.to_string(),
            s.affinity_broken.to_string(),
            s.preemptions.to_string(),
            s.switches_in.to_string(),
            s.halts.to_string(),
            gs.futex_waits.to_string(),
            gs.progress.to_string(),
            csv_field(vm.progress_unit),
            guest.iterations.map(|n| n.to_string()).unwrap_or_default(),
            guest.finished_at.map(|t| f3(to_ms(t))).unwrap_or_default(),
            f3(sim.usage().competing[i].average()),
            format!("{:.4}", remote_memory_share(sim, i)),
            format!("{:.4}", s.contention.slowdown(Source::ModuleFrontend)),
            format!("{:.4}", s.contention.slowdown(Source::ModuleFpu)),
            format!("{:.4}", s.contention.slowdown(Source::Llc)),
            format!("{:.4}", s.contention.slowdown(Source::NumaRemote)),
            // Yields by source (seed 002 Figure 7), where the host took them.
            s.ple_exits.to_string(),
            s.yields_ipi.to_string(),
            (s.halts + s.poll_blocks).to_string(),
            s.poll_blocks.to_string(),
            s.kicks.to_string(),
            // The same yields by the kernel function the yielding vCPU was in.
            s.yields_by_fn[YieldFnClass::IpiWait as usize].to_string(),
            s.yields_by_fn[YieldFnClass::LockSpin as usize].to_string(),
            s.yields_by_fn[YieldFnClass::Other as usize].to_string(),
        ];
        debug_assert_eq!(row.len(), VM_COLUMNS.len());
        vms.push_str(&row.join(","));
        sim.mechanism_vm_cells(i, &mut vms);
        if ab {
            let (rps, tpr) = match vm.clients {
                Some(c) if gs.progress > 0 => {
                    let taken_s = guest.finished_at.unwrap_or(sim_time) as f64 / 1e9;
                    (format!("{:.3}", gs.progress as f64 / taken_s), f3(f64::from(c) * taken_s * 1e3 / gs.progress as f64))
                }
                Some(_) => ("0.000".to_string(), String::new()),
                None => (String::new(), String::new()),
            };
            write!(vms, ",{rps},{tpr}").expect("writing to a String cannot fail");
        }
        if haltpoll {
            write!(vms, ",{},{},{}", f3(to_ms(s.idle_poll_ns)), gs.idle_polls, gs.idle_poll_wakeups)
                .expect("writing to a String cannot fail");
        }
        vms.push('\n');
    }
    vms
}

/// metrics.csv: `vm,metric,value` rows, each VM's in turn, the mechanisms' after the engine's.
fn metrics_table(sim: &Sim, sc: &Scenario) -> String {
    let mut metrics = String::from("vm,metric,value\n");
    for (i, vm) in sim.vms().iter().enumerate() {
        let info = &sim.vminfo()[i];
        let s = &vm.stats;
        let guest = &sim.guests()[i];
        let gs = &guest.stats;
        let name = csv_field(&info.name);
        let mut rows = MetricRows::new(&mut metrics, &name);
        macro_rules! put {
            ($metric:expr, $value:expr) => {
                rows.put($metric, $value)
            };
        }
        for (label, h) in [("spin_wait", &gs.spin_wait), ("tlb_shootdown_latency", &gs.tlb_shootdown)] {
            put!(format_args!("{label}_count"), h.count);
            put!(format_args!("{label}_mean_us"), F3(h.mean() / 1e3));
            put!(format_args!("{label}_p50_us"), F3(h.quantile(0.5) as f64 / 1e3));
            put!(format_args!("{label}_p99_us"), F3(h.quantile(0.99) as f64 / 1e3));
            put!(format_args!("{label}_max_us"), F3(h.max as f64 / 1e3));
        }
        for (label, h) in [("runnable_wait", &s.runnable_wait), ("sched_latency", &s.sched_latency)] {
            put!(format_args!("{label}_count"), h.count);
            put!(format_args!("{label}_mean_us"), F3(h.mean() / 1e3));
            for (q, name) in [(0.5, "p50"), (0.9, "p90"), (0.99, "p99")] {
                put!(format_args!("{label}_{name}_us"), F3(h.quantile(q) as f64 / 1e3));
            }
            put!(format_args!("{label}_max_us"), F3(h.max as f64 / 1e3));
        }
        for v in &info.vcpus {
            put!(format_args!("steal_time_ms[v{}]", sim.vinfo()[v.idx()].index), F3(to_ms(sim.pv()[v.idx()].steal_time_ns)));
        }
        for (class, n) in &s.lhp_by_class(|l| sim.guests().locks()[l].class.as_str()) {
            put!(format_args!("lhp_count[{class}]"), n);
        }
        // Only the pCPUs the VM ran on (absent means 0): the rows grow with where it ran, not
        // with the host's size.
        for p in 0..sim.pinfo().len() as u32 {
            let busy = sim.usage().busy(i, crate::ids::PcpuId(p));
            if busy > 0 {
                put!(format_args!("pcpu_busy_ms[{p}]"), F3(to_ms(busy)));
            }
        }
        put!("wakeups", s.wakeups);
        put!("futex_wakes", gs.futex_wakes);
        // Seed 002 Table 4: spinlock waits by kernel lock class (lockstat's waittime-avg of
        // contended acquisitions; every class of the program's `kernel_locks`, and the guest's
        // own classes once they were waited for; the program's user spinlocks, `user-spinlock-k`,
        // always), TLB synchronization min.
        let always: Vec<_> = guest.objects.kernel_locks.iter().chain(&guest.objects.user_spinlocks).copied().collect();
        for (class, w) in &gs.spin_wait_by_class(sim.guests().locks(), &always) {
            put!(format_args!("spin_wait_count[{class}]"), w.count);
            put!(format_args!("spin_wait_mean_us[{class}]"), F3(w.mean() / 1e3));
            put!(format_args!("spin_wait_max_us[{class}]"), F3(w.max as f64 / 1e3));
        }
        put!("tlb_shootdown_latency_min_us", F3(gs.tlb_shootdown.min_or_zero() as f64 / 1e3));
        if sc.run.barrier_waits {
            // Only when asked (`[run] barrier_waits`), so that other runs keep their bytes.
            use crate::guest::stats::{ARRIVAL, DEPARTURE};
            put!("barrier_waits[arrival]", gs.barrier_waits[ARRIVAL]);
            put!("barrier_waits[departure]", gs.barrier_waits[DEPARTURE]);
        }
        sim.mechanism_metrics(i, &mut rows);
    }

    metrics
}

/// summary.json: the run as a whole; a mechanism adds its section (micro-sliced cores).
fn summary(sim: &Sim, sc: &Scenario, seed: u64, finished: bool) -> serde_json::Value {
    let sim_time = sim.now().max(1);
    let npcpus = sim.pinfo().len() as f64;
    let policy = sim.placement().pool(crate::ids::PoolId(0)).policy.name();
    let totals_cpu: u64 = sim.vms().iter().map(|v| v.stats.cpu_ns()).sum();
    let summary = serde_json::json!({
        "scenario": sc.source,
        "policy": policy,
        "seed": seed,
        "pcpus": sim.pinfo().len(),
        "pools": sc.host.pools.iter().map(|p| serde_json::json!({
            "name": p.name,
            "policy": p.policy,
            "pcpus": p.pcpus.to_cpulist(),
        })).collect::<Vec<_>>(),
        "pool_changes": sc.host.pool_changes.iter().map(|c| serde_json::json!({
            "at_ns": c.at,
            "pcpu": c.pcpu.0,
            "to": sc.host.pools[c.to].name,
        })).collect::<Vec<_>>(),
        "vms": sim.vminfo().len(),
        "duration_ns": sc.run.duration,
        "sim_time_ns": sim.now(),
        "events": sim.events(),
        "all_targets_reached": finished,
        // A JSON number rounded to 4 decimals (ryu prints the shortest form, the same everywhere).
        "host_busy_share": (totals_cpu as f64 / (sim_time as f64 * npcpus) * 1e4).round() / 1e4,
        // Seed 001's competing modules over every VM's busy time (metrics/pcpu_usage.rs).
        "competing_modules": (sim.usage().host_competing.average() * 1e3).round() / 1e3,
        "trace_dropped_events": sim.trace().map(|t| t.dropped).unwrap_or(0),
    });
    let mut summary = summary;
    sim.mechanism_summary(&mut summary);
    summary
}

/// Share of VM `i`'s run time on pCPUs outside its memory nodes (`VmInfo::memory_nodes`); 0 for
/// a VM that never ran.
fn remote_memory_share(sim: &Sim, i: usize) -> f64 {
    let memory = &sim.vminfo()[i].memory_nodes;
    let (mut remote, mut total) = (0u64, 0u64);
    for p in 0..sim.pinfo().len() as u32 {
        let p = crate::ids::PcpuId(p);
        let busy = sim.usage().busy(i, p);
        total += busy;
        if !memory.contains(&sim.topology().place(p).node) {
            remote += busy;
        }
    }
    if total == 0 {
        0.0
    } else {
        remote as f64 / total as f64
    }
}

/// What a user should know about the trace: it was cut at its event cap, or its window began at
/// or after the run's end (so it holds no event of the run).
fn trace_warnings(trace: &crate::metrics::trace::TraceSink, end: u64) -> Vec<String> {
    let mut warnings: Vec<String> = trace_cut_warning(trace, end).into_iter().collect();
    if let Some((from, _)) = trace.window() {
        if from >= end {
            warnings.push(format!(
                "the trace is empty: its window starts at t = {:.3} s, and the run ended at t = {:.3} s; \
                 give a --trace-from (trace_from in Python) before the run's end",
                from as f64 / 1e9,
                end as f64 / 1e9,
            ));
        }
    }
    warnings
}

/// The warning for a trace that reached its event cap: how much it holds and how to get the rest.
fn trace_cut_warning(trace: &crate::metrics::trace::TraceSink, end: u64) -> Option<String> {
    let until = trace.complete_until?;
    let seconds = |ns: u64| format!("{:.3} s", ns as f64 / 1e9);
    let span = match trace.window() {
        Some((from, to)) => format!("of the window {} to {}", seconds(from), seconds(to.min(end))),
        None => format!("of the run's {}", seconds(end)),
    };
    Some(format!(
        "the trace is cut: it holds every event up to t = {} {span}; {} later events were dropped \
         (at most {} are kept); trace a shorter window (--trace-from/--trace-to, or trace_from/trace_to \
         in Python) or keep more (--trace-max-events, trace_max_events)",
        seconds(until),
        trace.dropped,
        trace.max(),
    ))
}
