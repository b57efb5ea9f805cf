//! Each workload's sensitivity to the contention sources of `hardware/contention.rs`: its
//! slowdown, in [0, 1), when a source is fully contended (the module sibling core busy, every
//! other core of its last-level cache busy, all its memory on another node). One table keyed by
//! workload name, so a workload added elsewhere (the Tascell models) gets its row here;
//! `[vm.contention]` overrides any value for one VM. docs/model.md "Contention" gives the source
//! of every row.
//!
//! **Calibration.** From each application's own behaviour alone or single-threaded, never from
//! how a VM fares against bare metal (the comparisons seed 001 draws):
//! - the module rows start from AMD's own throughput figure for a Bulldozer/Piledriver module:
//!   two threads on one module give about 1.8 times the throughput of one (John Fruehe, AMD,
//!   quoted by Hexus, "AMD talks servers, present and future", 2009: "up to 80 per cent more
//!   throughput when running two threads simultaneously compared to a single thread"), so a
//!   typical integer thread runs at ~0.9 with its sibling busy: [`GENERIC_FRONTEND`];
//! - which shared resource each application stresses is seed 001's Figure 16 (hardware
//!   counters, 8 threads, 0-16 over 8-8): instruction-fetch stalls dominate tascell-fib,
//!   tascell-nq (less than fib), DC and LU; FPU dispatch stalls CG, UA, LU and SP; LLC misses
//!   CG, MG, DC, FT and SP; EP is insensitive to all;
//! - memory intensity of the NPB kernels follows their specification (Bailey et al., "The NAS
//!   Parallel Benchmarks", RNR-94-007 / NAS-95-020: CG's unstructured sparse matrix-vector
//!   products and irregular long-distance access, MG's memory-intensive multigrid with short-
//!   and long-distance access, FT's all-to-all 3-D FFT transposes, IS's random-access bucket
//!   sort, EP's "embarrassingly parallel" computation with no communication), and of PARSEC
//!   2.1 its working-set characterization (Bienia et al., PACT 2008: canneal and streamcluster
//!   have working sets far beyond the LLC, blackscholes and swaptions fit in cache and are
//!   floating-point bound).
//!
//! The magnitudes within those orderings are **assumed** (the seed gives ratios of event
//! counts, not slowdowns); each stays inside AMD's 0.8-0.9 module range for the module sources
//! combined.

use crate::hardware::contention::{Sensitivity, SOURCES};

/// A typical integer thread's front-end slowdown with its module sibling busy: 1.8x module
/// throughput for two threads (AMD) = 0.9 per thread.
pub const GENERIC_FRONTEND: f64 = 0.10;

/// One row: workload name and its slowdowns (module front end, module FPU, LLC, NUMA remote).
pub struct Row {
    pub workload: &'static str,
    pub slowdown: [f64; SOURCES],
}

const fn row(workload: &'static str, frontend: f64, fpu: f64, llc: f64, numa_remote: f64) -> Row {
    Row { workload, slowdown: [frontend, fpu, llc, numa_remote] }
}

/// The row used for a workload with none here (custom programs, the synthetic workloads): a
/// generic integer thread, AMD's figure, with no cache or memory sensitivity.
pub const DEFAULT: Row = row("default", GENERIC_FRONTEND, 0.0, 0.0, 0.0);

/// Every workload's row. Orderings from seed 001 Figure 16 and the characterizations above;
/// magnitudes assumed.
pub static TABLE: &[Row] = &[
    // Pure CPU work (x264 uniprocessor VMs, freqmine): AMD's generic figure.
    row("cpu-bound", GENERIC_FRONTEND, 0.0, 0.0, 0.0),
    // Tascell (seed 001 sections III-A, V-A): fib(48) and N-Queen(16) are recursive integer
    // searches with tiny working sets. Figure 16: instruction-fetch stalls are the cause, lower
    // for nq than for fib; no FPU, LLC or memory traffic to speak of.
    row("tascell.fib", 0.20, 0.0, 0.0, 0.0),
    row("tascell.nqueen", 0.12, 0.0, 0.0, 0.0),
    // NPB (seed 001 section V-B, Figure 16).
    row("npb.bt", 0.05, 0.08, 0.05, 0.10),
    row("npb.cg", 0.02, 0.10, 0.15, 0.25),
    row("npb.dc", 0.12, 0.0, 0.12, 0.05),
    row("npb.ep", 0.0, 0.0, 0.0, 0.0),
    row("npb.ft", 0.02, 0.05, 0.12, 0.20),
    row("npb.is", 0.02, 0.0, 0.10, 0.20),
    row("npb.lu", 0.10, 0.10, 0.05, 0.10),
    row("npb.mg", 0.02, 0.05, 0.15, 0.20),
    row("npb.sp", 0.02, 0.10, 0.12, 0.15),
    row("npb.ua", 0.02, 0.10, 0.05, 0.15),
    // PARSEC 2.1 (Bienia et al. 2008 working sets; not in seed 001, so no Figure 16 ordering).
    row("parsec.blackscholes", 0.05, 0.10, 0.0, 0.0),
    row("parsec.bodytrack", GENERIC_FRONTEND, 0.05, 0.02, 0.02),
    row("parsec.canneal", 0.02, 0.0, 0.15, 0.25),
    row("parsec.dedup", GENERIC_FRONTEND, 0.0, 0.05, 0.05),
    row("parsec.facesim", 0.05, 0.10, 0.05, 0.05),
    row("parsec.ferret", GENERIC_FRONTEND, 0.05, 0.05, 0.05),
    row("parsec.fluidanimate", 0.05, 0.10, 0.05, 0.05),
    row("parsec.freqmine", GENERIC_FRONTEND, 0.0, 0.05, 0.05),
    row("parsec.raytrace", 0.05, 0.10, 0.02, 0.02),
    row("parsec.streamcluster", 0.02, 0.05, 0.15, 0.25),
    row("parsec.swaptions", 0.05, 0.10, 0.0, 0.0),
    row("parsec.vips", GENERIC_FRONTEND, 0.05, 0.05, 0.05),
    row("parsec.x264", GENERIC_FRONTEND, 0.05, 0.05, 0.05),
    row("parsec.x264-single", GENERIC_FRONTEND, 0.05, 0.05, 0.05),
];

/// The row of `workload`, or [`DEFAULT`].
pub fn row_of(workload: &str) -> &'static Row {
    TABLE.iter().find(|r| r.workload == workload).unwrap_or(&DEFAULT)
}

/// The sensitivity of `workload` (before any `[vm.contention]` override).
pub fn of(workload: &str) -> Sensitivity {
    Sensitivity::from_fractions(row_of(workload).slowdown).expect("every table row is in [0, 1)")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hardware::contention::Source;

    #[test]
    fn every_row_is_valid_names_a_workload_once_and_module_speeds_stay_in_amds_range() {
        let mut seen = std::collections::BTreeSet::new();
        for r in TABLE.iter().chain([&DEFAULT]) {
            assert!(seen.insert(r.workload), "{} twice", r.workload);
            let s = Sensitivity::from_fractions(r.slowdown).unwrap_or_else(|e| panic!("{}: {e}", r.workload));
            // Both module sources together: each core at 0.7 to 1.0 with its sibling busy.
            let module = (1.0 - s.fraction(Source::ModuleFrontend)) * (1.0 - s.fraction(Source::ModuleFpu));
            assert!((0.7..=1.0).contains(&module), "{}: module factor {module}", r.workload);
            // A registered workload, or one the Tascell models will register.
            assert!(
                r.workload == "default" || r.workload.starts_with("tascell.") || crate::workload::find(r.workload).is_ok(),
                "{} is not a workload",
                r.workload
            );
        }
    }

    #[test]
    fn figure_16_orderings_hold() {
        let f = |w: &str, s: Source| of(w).fraction(s);
        // Fetch stalls: fib above nq; DC and LU sensitive; EP insensitive to everything.
        assert!(f("tascell.fib", Source::ModuleFrontend) > f("tascell.nqueen", Source::ModuleFrontend));
        for w in ["npb.dc", "npb.lu"] {
            assert!(f(w, Source::ModuleFrontend) >= 0.1, "{w}");
        }
        for w in ["npb.cg", "npb.ua", "npb.lu", "npb.sp"] {
            assert!(f(w, Source::ModuleFpu) >= 0.1, "{w}");
        }
        for w in ["npb.cg", "npb.mg", "npb.dc", "npb.ft", "npb.sp"] {
            assert!(f(w, Source::Llc) >= 0.12, "{w}");
        }
        assert_eq!(of("npb.ep"), Sensitivity::default());
        assert_eq!(of("no-such-workload"), of("default"));
    }
}
