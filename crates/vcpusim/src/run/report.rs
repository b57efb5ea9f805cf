//! The result tables: `vms.csv` (one row per VM), `metrics.csv` (one row per VM and metric) and
//! `summary.json`. Numbers are formatted with fixed precision so output is byte-identical for
//! the same scenario and seed on any machine.

use crate::output::RunOutput;
use crate::vmexit::IpiKind;
use crate::scenario::spec::Scenario;
use crate::sim::state::Sim;
use crate::time::to_ms;
use std::fmt::Write;

/// Columns of vms.csv, in order. Units are in the names.
pub const VM_COLUMNS: &[&str] = &[
    "vm", "policy", "seed", "workload", "vcpus", "weight", "threads",
    "cpu_time_ms", "user_time_ms", "kernel_time_ms", "spin_time_ms", "tlb_wait_ms", "user_spin_ms",
    "irq_time_ms", "overhead_ms", "cpu_share", "entitled_share",
    "lhp_count", "lhp_futex_count", "lwp_count", "ipi_resched_count", "ipi_tlb_count", "tlb_shootdowns",
    "ple_exit_count", "yields", "urgent_count",
    "preemptions", "switches_in", "halts", "futex_waits",
    "progress", "progress_unit", "iterations", "completion_time_ms",
];

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn f3(x: f64) -> String {
    format!("{x:.3}")
}

pub fn build(sim: &Sim, sc: &Scenario, seed: u64, finished: bool) -> RunOutput {
    let policy = sim.pools[0].policy.name();
    let sim_time = sim.now.max(1);
    let npcpus = sim.pinfo.len() as f64;
    let total_weight: u64 = sim.vms.iter().map(|v| v.sched.weight as u64).sum();

    let mut vms = VM_COLUMNS.join(",");
    vms.push('\n');
    let mut metrics = String::from("vm,metric,value\n");
    for (i, vm) in sim.vms.iter().enumerate() {
        let info = &sim.vminfo[i];
        let spec = &sc.vms[i];
        let s = &vm.stats;
        let ipi = |k: IpiKind| s.ipis_sent.get(&k).copied().unwrap_or(0);
        let row = [
            csv_field(&info.name),
            sim.pools[sim.vcpu_pool[info.vcpus[0].idx()].idx()].policy.name().to_string(),
            seed.to_string(),
            csv_field(&vm.workload),
            info.vcpus.len().to_string(),
            vm.sched.weight.to_string(),
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
            format!("{:.4}", vm.sched.weight as f64 / total_weight as f64),
            s.lhp_count().to_string(),
            s.lhp.get(crate::guest::futex::FUTEX_LOCK_CLASS).copied().unwrap_or(0).to_string(),
            s.lwp.to_string(),
            ipi(IpiKind::Resched).to_string(),
            ipi(IpiKind::TlbShootdown).to_string(),
            s.tlb_shootdowns.to_string(),
            s.ple_exits.to_string(),
            s.yields.to_string(),
            s.urgent_entered.to_string(),
            s.preemptions.to_string(),
            s.switches_in.to_string(),
            s.halts.to_string(),
            s.futex_waits.to_string(),
            s.progress.to_string(),
            csv_field(vm.progress_unit),
            vm.iterations.map(|n| n.to_string()).unwrap_or_default(),
            vm.finished_at.map(|t| f3(to_ms(t))).unwrap_or_default(),
        ];
        vms.push_str(&row.join(","));
        vms.push('\n');

        let name = csv_field(&info.name);
        let mut put = |metric: &str, value: String| {
            writeln!(metrics, "{name},{metric},{value}").expect("writing to a String cannot fail");
        };
        for (label, h) in [("spin_wait", &s.spin_wait), ("tlb_shootdown_latency", &s.tlb_shootdown)] {
            put(&format!("{label}_count"), h.count.to_string());
            put(&format!("{label}_mean_us"), f3(h.mean() / 1e3));
            put(&format!("{label}_p50_us"), f3(h.quantile(0.5) as f64 / 1e3));
            put(&format!("{label}_p99_us"), f3(h.quantile(0.99) as f64 / 1e3));
            put(&format!("{label}_max_us"), f3(h.max as f64 / 1e3));
        }
        for (class, n) in &s.lhp {
            put(&format!("lhp_count[{class}]"), n.to_string());
        }
        put("wakeups", s.wakeups.to_string());
        put("futex_wakes", s.futex_wakes.to_string());
        if let Some(samples) = &sim.samples {
            for (at, per_vm) in &samples.rows {
                put(&format!("pcpu_time_ms[{:.3}s]", *at as f64 / 1e9), f3(to_ms(per_vm[i])));
            }
        }
    }

    let totals_cpu: u64 = sim.vms.iter().map(|v| v.stats.cpu_ns()).sum();
    let summary = serde_json::json!({
        "scenario": sc.source,
        "policy": policy,
        "seed": seed,
        "pcpus": sim.pinfo.len(),
        "vms": sim.vminfo.len(),
        "duration_ns": sc.run.duration,
        "sim_time_ns": sim.now,
        "events": sim.events,
        "all_targets_reached": finished,
        "host_busy_share": format!("{:.4}", totals_cpu as f64 / (sim_time as f64 * npcpus)),
        "trace_dropped_events": sim.trace.as_ref().map(|t| t.dropped).unwrap_or(0),
    });
    RunOutput {
        vms_csv: vms,
        metrics_csv: metrics,
        summary_json: serde_json::to_string_pretty(&summary).expect("JSON values serialize") + "\n",
        trace_json: sim.trace.as_ref().map(|t| t.to_json()),
    }
}
