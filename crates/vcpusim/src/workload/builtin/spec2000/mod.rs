//! SPEC CPU2000 rate models (`spec2000.<name>`): seed 004's high-throughput workload.
//!
//! Seed 004 section 6.2: "the SPEC rate metrics of SPEC CPU2000 ... measures the throughput of
//! a machine by running multiple copies of the benchmark simultaneously"; four copies run in
//! the 4-vCPU VM (Figures 7, 8, 10a, 11). A rate run starts `threads` independent copies
//! (separate processes) that never synchronize: each copy is a fixed amount of CPU work, the
//! benchmark's reference-input serial runtime on one core of the seed's Xeon X5410.
//!
//! Only CPU demand is modelled. The copies are separate processes, so none of the guest
//! mechanisms the model has would apply between them: their munmaps would shoot down only their
//! own vCPU, not the VM's others (the model's Munmap targets the whole VM's address space, so
//! adding one would be wrong), and their page faults and cache/memory-bandwidth contention have
//! no op in the model. Nothing is invented for them.
//!
//! **Progress**: hundredths of one copy's reference run, so a VM of `threads` copies has
//! finished when progress reaches 100 x threads (`iterations = 400` for the seed's 4 copies),
//! and `completion_time_ms` is the rate run's runtime (the seed's Figure 10a/11 metric, "the
//! runtime of four copies").

pub mod bzip2;
pub mod gcc;

use crate::params::{ParamSpec, Params};
use crate::time::Nanos;
use crate::workload::program::{Dist, Op, Program};
use crate::workload::Workload;

/// Progress units per copy.
pub const UNITS_PER_COPY: u64 = 100;

/// A SPEC CPU2000 benchmark's reference run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Profile {
    pub name: &'static str,
    pub describe: &'static str,
    /// CPU time of one copy's reference run on one core of the seed's machine.
    pub runtime: Nanos,
}

pub struct Spec2000(pub &'static Profile);

impl Workload for Spec2000 {
    fn name(&self) -> &'static str {
        self.0.name
    }
    fn describe(&self) -> &'static str {
        self.0.describe
    }
    fn progress_unit(&self) -> &'static str {
        "hundredths of a copy's reference run"
    }
    fn params(&self) -> Vec<ParamSpec> {
        vec![
            ParamSpec::float(
                "scale",
                1.0,
                "fraction of the reference run each copy does (1 = the full reference input on \
                 the seed's Xeon X5410; smaller values shorten runs).",
            )
            .range(1e-6, 1.0),
            ParamSpec::int(
                "rounds",
                1,
                "reference runs each copy does back to back (seed 004 section 6.4 repeats \
                 each workload); 0 repeats forever.",
            ),
        ]
    }
    fn build(&self, threads: u32, params: &Params) -> Result<Program, String> {
        rate_copies(self.0.name, self.0.runtime, threads, params, self.progress_unit())
    }
}

/// `threads` independent copies of a SPEC rate benchmark whose reference run takes `runtime` of
/// CPU, each run split into `UNITS_PER_COPY` units of progress, scaled by the `scale` parameter
/// and repeated `rounds` times (0: forever). Shared by SPEC CPU2000 and CPU2006.
pub(in crate::workload::builtin) fn rate_copies(
    name: &str,
    runtime: Nanos,
    threads: u32,
    params: &Params,
    unit_name: &'static str,
) -> Result<Program, String> {
    if threads == 0 {
        return Err(format!("{name} needs at least 1 copy (threads), got 0"));
    }
    let scale = params.float("scale");
    if !(scale > 0.0 && scale <= 1.0) {
        return Err(format!("{name}: scale must be in (0, 1], got {scale}"));
    }
    let unit = ((runtime as f64 * scale) / UNITS_PER_COPY as f64).round().max(1.0) as Nanos;
    let run = Op::Loop { count: Some(UNITS_PER_COPY), body: vec![Op::Compute(Dist::Const(unit)), Op::Progress] };
    let copy = match params.int("rounds") {
        1 => vec![run],
        0 => vec![Op::Loop { count: None, body: vec![run] }],
        r => vec![Op::Loop { count: Some(r), body: vec![run] }],
    };
    let mut program = Program::new(unit_name);
    program.threads = vec![copy; threads as usize];
    Ok(program)
}

pub static GCC: Spec2000 = Spec2000(&gcc::PROFILE);
pub static BZIP2: Spec2000 = Spec2000(&bzip2::PROFILE);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::builtin::test_support::*;

    #[test]
    fn copies_are_independent_fixed_work_with_no_synchronization_objects() {
        for w in [&GCC, &BZIP2] {
            assert_defaults_parse(w);
            let program = build_valid(w, 4, &Params::defaults(&w.params()));
            assert_eq!((program.mutexes, program.barriers.len(), program.conds, program.queues.len()), (0, 0, 0, 0));
            for copy in &program.threads {
                let [Op::Loop { count: Some(100), body }] = &copy[..] else { panic!("{copy:?}") };
                let Op::Compute(Dist::Const(unit)) = body[0] else { panic!("{body:?}") };
                assert_eq!(unit * UNITS_PER_COPY, w.0.runtime);
                assert_eq!(body[1], Op::Progress);
            }
            let half = build_valid(w, 2, &params_with(w, &[("scale", 0.5.into())]));
            let [Op::Loop { body, .. }] = &half.threads[0][..] else { panic!() };
            assert_eq!(body[0], Op::Compute(Dist::Const(w.0.runtime / 200)));
            assert!(w.build(0, &Params::defaults(&w.params())).unwrap_err().contains("at least 1 copy"));
        }
    }
}
