//! The built-in workloads, one file each.
//!
//! Each is calibrated from what the seeds report about the application it stands for when it
//! runs alone (seed 000 sections 3.1 and 4.1: IPI rates, barrier frequency, kernel-time shares),
//! never from how it fares under a particular policy. Where a seed gives no number, the
//! parameter's doc says "assumed".

pub mod ab;
mod barrier;
mod cpu_bound;
pub mod dbench;
pub mod ebizzy;
pub mod hackbench;
mod idle;
pub mod iperf;
pub mod kbuild;
mod lookbusy;
pub mod memclone;
pub mod mosbench;
mod mutex;
pub mod npb;
pub mod parsec;
mod pipeline;
pub mod spec2000;
pub mod spec2006;
pub mod tascell;
mod tlb;

use super::Workload;

pub use barrier::BarrierWorkload;
pub use cpu_bound::CpuBound;
pub use idle::Idle;
pub use iperf::Iperf;
pub use lookbusy::Lookbusy;
pub use mutex::MutexWorkload;
pub use pipeline::Pipeline;
pub use tlb::Tlb;

/// All built-in workloads, in the order `vcpusim list` shows them.
pub static ALL: &[&dyn Workload] = &[
    &Idle,
    &CpuBound,
    &BarrierWorkload,
    &MutexWorkload,
    &Tlb,
    &Pipeline,
    &parsec::BLACKSCHOLES,
    &parsec::BODYTRACK,
    &parsec::CANNEAL,
    &parsec::DEDUP,
    &parsec::FACESIM,
    &parsec::FERRET,
    &parsec::FLUIDANIMATE,
    &parsec::FREQMINE,
    &parsec::RAYTRACE,
    &parsec::STREAMCLUSTER,
    &parsec::SWAPTIONS,
    &parsec::VIPS,
    &parsec::X264,
    &parsec::X264_SINGLE,
    &npb::BT,
    &npb::CG,
    &npb::DC,
    &npb::EP,
    &npb::FT,
    &npb::IS,
    &npb::LU,
    &npb::MG,
    &npb::SP,
    &npb::UA,
    &spec2000::GCC,
    &spec2000::BZIP2,
    &tascell::FIB,
    &tascell::NQUEEN,
    &Iperf,
    &Lookbusy,
    &mosbench::gmake::Gmake,
    &mosbench::exim::Exim,
    &mosbench::psearchy::Psearchy,
    &memclone::Memclone,
    &spec2006::BZIP2,
    &spec2006::MCF,
    &spec2006::HMMER,
    &spec2006::SJENG,
    &spec2006::LIBQUANTUM,
    &spec2006::H264REF,
    &ab::Ab,
    &ebizzy::Ebizzy,
    &kbuild::Kbuild,
    &dbench::Dbench,
    &hackbench::Hackbench,
];

/// Shared checks for the workload tests.
#[cfg(test)]
pub(crate) mod test_support {
    use crate::params::{ParamValue, Params};
    use crate::time::format_duration;
    use crate::workload::program::{Op, Program};
    use crate::workload::Workload;

    /// The TOML a user would write for this value.
    pub fn to_toml(value: &ParamValue) -> toml::Value {
        match value {
            ParamValue::Duration(ns) => toml::Value::String(format_duration(*ns)),
            ParamValue::Int(i) => toml::Value::Integer(*i as i64),
            ParamValue::Float(f) => toml::Value::Float(*f),
            ParamValue::Bool(b) => toml::Value::Boolean(*b),
            ParamValue::Choice(s) => toml::Value::String(s.clone()),
        }
    }

    /// Every default, written as TOML, parses back to itself through its own spec (so the
    /// default is inside the spec's bounds and `vcpusim list` shows a value a user can copy).
    pub fn assert_defaults_parse(w: &dyn Workload) {
        for spec in w.params() {
            let parsed = spec.parse(&to_toml(&spec.default));
            assert_eq!(parsed, Ok(spec.default.clone()), "{}: default of {}", w.name(), spec.name);
            assert!(!spec.doc.is_empty(), "{}: {} has no doc", w.name(), spec.name);
        }
    }

    /// The workload's defaults with `overrides` (name, TOML value) applied through the specs,
    /// as the scenario loader would.
    pub fn params_with(w: &dyn Workload, overrides: &[(&str, toml::Value)]) -> Params {
        let specs = w.params();
        let mut params = Params::defaults(&specs);
        for (name, value) in overrides {
            let spec = specs.iter().find(|s| s.name == *name).unwrap_or_else(|| panic!("no parameter {name}"));
            params.set(name, spec.parse(value).unwrap_or_else(|e| panic!("{name}: {e}")));
        }
        params
    }

    /// Build with `threads` threads and check the result is a valid program of that size.
    pub fn build_valid(w: &dyn Workload, threads: u32, params: &Params) -> Program {
        let program = w.build(threads, params).unwrap_or_else(|e| panic!("{}: {e}", w.name()));
        program.validate().unwrap_or_else(|e| panic!("{}: {e}", w.name()));
        assert_eq!(program.threads.len(), threads as usize, "{}: thread count", w.name());
        assert_eq!(program.progress_unit, w.progress_unit());
        program
    }

    /// The body of the thread's single endless loop.
    pub fn loop_body(ops: &[Op]) -> &[Op] {
        match ops {
            [Op::Loop { count: None, body }] => body,
            other => panic!("expected one endless loop, got {other:?}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::*;
    use super::*;
    use crate::params::Params;

    #[test]
    fn registry_lists_each_workload_once_in_order() {
        let names: Vec<_> = ALL.iter().map(|w| w.name()).collect();
        assert_eq!(names[..6], ["idle", "cpu-bound", "barrier", "mutex", "tlb", "pipeline"]);
        let parsec: Vec<_> = names[6..20].iter().map(|n| n.strip_prefix("parsec.").expect("a PARSEC model")).collect();
        assert_eq!(
            parsec,
            [
                "blackscholes", "bodytrack", "canneal", "dedup", "facesim", "ferret", "fluidanimate", "freqmine", "raytrace",
                "streamcluster", "swaptions", "vips", "x264", "x264-single",
            ]
        );
        let err = crate::workload::find("nope").err().expect("an unknown name is an error");
        assert!(err.contains("idle, cpu-bound"), "{err}");
    }

    #[test]
    fn every_workload_builds_valid_programs_with_its_defaults() {
        for w in ALL {
            assert_defaults_parse(*w);
            assert!(!w.describe().is_empty() && !w.progress_unit().is_empty());
            let params = Params::defaults(&w.params());
            for threads in [3, 4, 8, 16] {
                build_valid(*w, threads, &params);
            }
            build_valid(*w, w.default_threads(8), &params);
        }
    }
}
