//! Solo structure of the NPB OpenMP and SPEC CPU2000 rate models (workload/builtin/npb/,
//! workload/builtin/spec2000/) in seed 004's single-VM setup (section 6.2: a 4-vCPU VM running
//! 4 threads / 4 copies), here alone on 4 pCPUs under Xen Credit so that every vCPU always has
//! a pCPU. Runs are scaled down (`scale`, `steps`) to take seconds in a debug build; the
//! structure (barriers per step, the master's serial part, no synchronization between SPEC
//! copies) does not depend on the scale.

mod common;
use common::*;
use std::collections::BTreeMap;
use vcpusim::params::Params;
use vcpusim::workload::builtin::npb::{self, Profile};
use vcpusim::workload::Workload;

type Table = BTreeMap<String, BTreeMap<String, String>>;

/// One 4-vCPU VM alone on 4 pCPUs, finishing after `iterations` units of progress.
fn solo(workload: &str, iterations: u64, params: &str) -> Table {
    let text = format!(
        "[host]\npcpus = 4\npolicy = \"credit\"\nstart_skew = \"0ms\"\n\
         [[vm]]\nname = \"app\"\nvcpus = 4\nthreads = 4\nworkload = \"{workload}\"\niterations = {iterations}\n\
         [vm.params]\n{params}\n\
         [run]\nduration = \"600s\"\nseed = 1\n"
    );
    vm_table(&run_toml(&text, false))
}

/// Serial work of one step of a profile at `scale`, in ms.
fn step_ms(p: &Profile, scale: f64) -> f64 {
    p.serial_runtime as f64 * scale / p.steps as f64 / 1e6
}

#[test]
fn every_npb_model_runs_to_completion_and_counts_its_steps() {
    for w in npb::ALL_NPB {
        let steps = w.0.steps.min(3);
        // About 20 ms of simulated work per step whatever the benchmark.
        let scale = (20.0 / step_ms(w.0, 1.0)).min(1.0);
        let t = solo(w.name(), steps, &format!("steps = {steps}\nscale = {scale}"));
        assert_eq!(num(&t, "app", "progress"), steps as f64, "{}", w.name());
        let done = num(&t, "app", "completion_time_ms");
        // Init, warm-up and verification come on top of the steps' parallel time.
        let parallel = (steps + u64::from(w.0.warmup)) as f64 * step_ms(w.0, scale) / 4.0;
        assert!(done > parallel, "{}: finished in {done} ms, less than {parallel} ms of work on 4 threads", w.name());
        assert_eq!(num(&t, "app", "ipi_tlb_count"), 0.0, "{}", w.name());
    }
}

/// Runtime of a scaled LU or SP with blocking barriers and the given serial share.
fn runtime_ms(workload: &str, steps: u64, scale: f64, serial: f64) -> (Table, f64) {
    let t = solo(workload, steps, &format!("steps = {steps}\nscale = {scale}\nserial = {serial}\nwait = \"block\""));
    let done = num(&t, "app", "completion_time_ms");
    (t, done)
}

#[test]
fn lu_and_sp_meet_at_their_barriers_as_often_as_the_source_says() {
    // With blocking barriers every thread but the last to arrive sleeps in futex_wait once per
    // team barrier; LU's wavefront flags spin and never sleep. So futex waits / 3 counts team
    // barriers: the first fork plus (warm-up + steps) x barriers per step. Seed-relevant
    // numbers: LU 7 per SSOR iteration + the serial part's fork, SP 12 per ADI iteration + 1.
    for (workload, p, per_step) in [("npb.lu", &npb::lu::PROFILE, 8), ("npb.sp", &npb::sp::PROFILE, 13)] {
        assert_eq!(p.barriers_per_step(p.serial), per_step, "{workload}");
        let steps = 10;
        let (t, _) = runtime_ms(workload, steps, 0.02, p.serial);
        let barriers = (1 + (steps + 1) * per_step) as f64;
        let waits = num(&t, "app", "futex_waits");
        assert!(
            waits <= 3.0 * barriers && waits >= 0.9 * 3.0 * barriers,
            "{workload}: {waits} futex waits for {barriers} team barriers of 4 threads"
        );
    }
    assert_eq!(npb::lu::PROFILE.handoffs_per_step(), 2 * 62);
}

#[test]
fn a_solo_run_takes_the_work_divided_by_four_plus_the_masters_serial_part() {
    for (workload, p) in [("npb.lu", &npb::lu::PROFILE), ("npb.sp", &npb::sp::PROFILE)] {
        let (steps, scale) = (8, 0.02);
        let step = step_ms(p, scale);
        let fixed = (p.init + p.verify) as f64 * scale / 1e6;
        let (_, none) = runtime_ms(workload, steps, scale, 0.0);
        let ideal = fixed + (steps + 1) as f64 * step / 4.0;
        // Above the ideal by the slowest thread of each phase (+-5% imbalance) and, for LU, the
        // wavefront's pipeline fill (3 of 62 planes per sweep).
        assert!(none > ideal && none < 1.12 * ideal, "{workload}: {none:.1} ms, ideal {ideal:.1} ms");
        // A quarter of each step run by the master alone costs 0.25 - 0.25/4 of a step more:
        // it would cost nothing extra if the serial part were shared out.
        let (_, quarter) = runtime_ms(workload, steps, scale, 0.25);
        let extra = quarter - none;
        let expected = (steps + 1) as f64 * step * (0.25 - 0.25 / 4.0);
        assert!((extra - expected).abs() / expected < 0.15, "{workload}: serial part costs {extra:.1} ms, expected {expected:.1}");
    }
}

#[test]
fn lu_synchronizes_far_more_often_than_sp_and_ep_hardly_at_all() {
    // Barriers and flag hand-overs per second of a solo run at full class-A work per step:
    // the granularity that orders Figure 6's slowdowns.
    let per_s = |p: &Profile| {
        let step_s = p.serial_runtime as f64 / p.steps as f64 / 1e9 / 4.0;
        (p.barriers_per_step(p.serial) + p.handoffs_per_step()) as f64 / step_s
    };
    let (lu, sp, ep, cg) = (per_s(&npb::lu::PROFILE), per_s(&npb::sp::PROFILE), per_s(&npb::ep::PROFILE), per_s(&npb::cg::PROFILE));
    assert!(lu > 5.0 * sp, "LU {lu:.0}/s vs SP {sp:.0}/s");
    assert!(ep < 1.0 && cg > sp, "EP {ep}/s, CG {cg:.0}/s, SP {sp:.0}/s");
}

#[test]
fn spec_rate_copies_never_synchronize_and_finish_in_their_cpu_time() {
    for w in ["spec2000.gcc", "spec2000.bzip2"] {
        let spec = vcpusim::workload::find(w).unwrap();
        let scale = 0.002;
        let t = solo(w, 400, &format!("scale = {scale}"));
        for col in ["futex_waits", "ipi_resched_count", "ipi_tlb_count", "tlb_shootdowns", "kernel_time_ms"] {
            assert_eq!(num(&t, "app", col), 0.0, "{w}: {col}");
        }
        let program = spec.build(4, &Params::defaults(&spec.params())).unwrap();
        assert!(program.barriers.is_empty() && program.mutexes == 0);
        let runtime = match w {
            "spec2000.gcc" => npb_free_runtime(&vcpusim::workload::builtin::spec2000::gcc::PROFILE),
            _ => npb_free_runtime(&vcpusim::workload::builtin::spec2000::bzip2::PROFILE),
        };
        let done = num(&t, "app", "completion_time_ms");
        let expected = runtime * scale;
        assert!((done - expected).abs() / expected < 0.05, "{w}: {done:.1} ms for {expected:.1} ms of CPU per copy");
    }
}

fn npb_free_runtime(p: &vcpusim::workload::builtin::spec2000::Profile) -> f64 {
    p.runtime as f64 / 1e6
}

/// Seed 001 section V-B: the NPB models at 1 and 16 threads in a 16-vCPU VM on 16 pCPUs run to
/// completion, and 16 threads finish the same work sooner.
#[test]
fn every_npb_model_runs_at_1_and_16_threads() {
    for w in npb::ALL_NPB {
        let steps = w.0.steps.min(2);
        let scale = (5.0 / step_ms(w.0, 1.0)).min(1.0);
        let run = |threads: u32| {
            let text = format!(
                "[host]\npcpus = 16\npolicy = \"credit\"\nstart_skew = \"0ms\"\n\
                 [[vm]]\nname = \"app\"\nvcpus = 16\nthreads = {threads}\nworkload = \"{}\"\niterations = {steps}\n\
                 [vm.params]\nsteps = {steps}\nscale = {scale}\n[run]\nduration = \"600s\"\nseed = 1\n",
                w.name()
            );
            let t = vm_table(&run_toml(&text, false));
            assert_eq!(num(&t, "app", "progress"), steps as f64, "{} at {threads} threads", w.name());
            num(&t, "app", "completion_time_ms")
        };
        let (one, sixteen) = (run(1), run(16));
        assert!(sixteen < one, "{}: 16 threads {sixteen} ms, 1 thread {one} ms", w.name());
    }
}
