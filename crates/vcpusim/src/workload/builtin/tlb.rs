//! `tlb`: mmap/munmap-heavy threads like PARSEC `vips` (and `dedup`), which "pressure their
//! shared address spaces with intensive TLB shootdown operations" (seed 000 section 3.1.1).
//!
//! Each iteration produces a buffer: compute, mmap a fresh buffer, compute on it, munmap it. The
//! munmap is a TLB shootdown: an IPI to every other vCPU of the VM, then a spin until all
//! acknowledge. Seed 002 section 3.1 explains why these applications do this: they "intensively
//! invoke mmap and munmap system calls to manage the shared address space among threads"; glibc
//! malloc serves every allocation of at least its mmap threshold with its own mapping and
//! returns it with munmap on free.
//!
//! # Calibration (vips, seed 000 section 3.1.1)
//!
//! Seed 000 measures, solo, in an 8-vCPU VM with 8 threads: 1350 TLB-shootdown IPIs per second
//! per vCPU for vips (1761 for dedup, 443 for ferret). vips is the one whose kernel time is
//! TLB shootdown almost alone (Table 1: 87.74% of its kernel time, lock spinning 9.17%), so it is
//! the model for a pure TLB workload; dedup, a pipeline, mixes in wake-up traffic.
//!
//! With n threads, one per vCPU, each munmap sends n - 1 IPIs, so if one iteration of a thread
//! takes a period P, the VM sends n (n - 1) / P IPIs per second, i.e. (n - 1) / P per vCPU.
//! For n = 8 and 1350 IPIs/s/vCPU:
//!
//! ```text
//! P = 7 / 1350 s                                            = 5185 us
//!   - solo TLB-shootdown latency of vips, seed 002 Table 4(b) =   55 us  (average, solo)
//!   - handling the 7 shootdowns of the other threads:
//!       7 x (ipi_handler 2 us + 32 pages x 100 ns flush)     =   36 us  (hardware/costs.rs)
//!   - mmap + munmap kernel work:
//!       2 x (syscall 300 ns + 32 pages x 250 ns)             =   17 us  (guest/interpreter.rs)
//!   = user computation per iteration                         ~ 5077 us
//! ```
//!
//! split evenly (assumed; only the sum sets the rate) into `work` = `touch` = 2.54 ms, which gives
//! P = 5188 us and 1349 IPIs/s/vCPU. The shootdown wait is the seed's measured one, not whatever
//! the simulated solo run produces, so a solo simulation lands within a few percent of 1350.
//! With another thread count the per-vCPU rate scales with n - 1 (the period stays the same).

use crate::params::{ParamSpec, Params};
use crate::time::{Nanos, US};
use crate::workload::program::{Dist, Op, Program};
use crate::workload::Workload;

pub struct Tlb;

const PROGRESS_UNIT: &str = "buffers processed (mmap + munmap pairs, all threads)";

/// Half of the ~5077 us of user computation per iteration derived in the module doc.
const WORK: Nanos = 2_540 * US;
const TOUCH: Nanos = 2_540 * US;
/// glibc's smallest mmap threshold, DEFAULT_MMAP_THRESHOLD_MIN = 128 KiB (malloc/malloc.c), in
/// 4 KiB pages: the smallest buffer malloc maps on its own. 32 pages also stays under Linux's
/// tlb_single_page_flush_ceiling of 33 (arch/x86/mm/tlb.c), so handlers flush page by page.
const PAGES: u64 = 32;

impl Workload for Tlb {
    fn name(&self) -> &'static str {
        "tlb"
    }
    fn describe(&self) -> &'static str {
        "vips/dedup-like mmap/munmap of buffers, each munmap a TLB shootdown to all other vCPUs; \
         calibrated to vips' 1350 TLB IPIs/s/vCPU solo in an 8-vCPU VM (seed 000 section 3.1.1)"
    }
    fn progress_unit(&self) -> &'static str {
        PROGRESS_UNIT
    }
    fn params(&self) -> Vec<ParamSpec> {
        vec![
            ParamSpec::duration(
                "work",
                WORK,
                "mean computation before mapping each buffer, exponentially distributed (assumed) \
                 so threads do not shoot down in lockstep. 2.54ms: half of the computation per \
                 iteration that gives vips' 1350 TLB IPIs/s/vCPU with 8 threads (seed 000 \
                 section 3.1.1; arithmetic in workload/builtin/tlb.rs).",
            ),
            ParamSpec::duration(
                "touch",
                TOUCH,
                "computation on the mapped buffer before it is unmapped. 2.54ms: the other half \
                 (the even split is assumed; only work + touch sets the IPI rate).",
            ),
            ParamSpec::int(
                "pages",
                PAGES,
                "4 KiB pages per buffer. 32 = 128 KiB, glibc malloc's smallest mmap threshold \
                 (DEFAULT_MMAP_THRESHOLD_MIN, malloc/malloc.c), below x86 Linux's 33-page \
                 single-page-flush ceiling.",
            )
            .range(1.0, u32::MAX as f64),
        ]
    }
    fn build(&self, threads: u32, params: &Params) -> Result<Program, String> {
        let pages = params.int("pages");
        let pages = u32::try_from(pages)
            .ok()
            .filter(|p| *p >= 1)
            .ok_or_else(|| format!("pages must be between 1 and {}, got {pages}", u32::MAX))?;
        let body = vec![
            Op::Compute(Dist::Exp { mean: params.duration("work") }),
            Op::Mmap { pages },
            Op::Compute(Dist::Const(params.duration("touch"))),
            Op::Munmap { pages },
            Op::Progress,
        ];
        let mut program = Program::new(PROGRESS_UNIT);
        program.threads = vec![vec![Op::Loop { count: None, body }]; threads as usize];
        Ok(program)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hardware::costs::Costs;
    use crate::time::SEC;
    use crate::workload::builtin::test_support::*;

    /// Seed 002 Table 4(b): vips' average TLB synchronization latency, solo.
    const SOLO_SHOOTDOWN_WAIT: f64 = 55_000.0;
    /// Kernel work per page mapped or unmapped, as guest/interpreter.rs charges it.
    const MM_WORK_PER_PAGE: f64 = 250.0;

    /// The module doc's arithmetic: TLB IPIs per second per vCPU of a solo run with one thread
    /// per vCPU, from the program's own loop body.
    fn solo_ipi_rate_per_vcpu(program: &Program) -> f64 {
        let costs = Costs::default();
        let n = program.threads.len() as f64;
        let body = loop_body(&program.threads[0]);
        let mut period = SOLO_SHOOTDOWN_WAIT;
        let mut shootdowns = 0.0;
        for op in body {
            match op {
                Op::Compute(d) => period += d.mean(),
                Op::Mmap { pages } => period += costs.syscall as f64 + *pages as f64 * MM_WORK_PER_PAGE,
                Op::Munmap { pages } => {
                    shootdowns += 1.0;
                    period += costs.syscall as f64 + *pages as f64 * MM_WORK_PER_PAGE;
                    // Handling the other threads' shootdowns of the same size.
                    let handler = costs.ipi_handler + *pages as u64 * costs.tlb_flush_per_page;
                    period += (n - 1.0) * handler as f64;
                }
                _ => {}
            }
        }
        shootdowns * (n - 1.0) * SEC as f64 / period
    }

    #[test]
    fn defaults_match_vips_solo_tlb_ipi_rate() {
        let program = build_valid(&Tlb, 8, &Params::defaults(&Tlb.params()));
        let rate = solo_ipi_rate_per_vcpu(&program);
        assert!((rate - 1350.0).abs() / 1350.0 < 0.005, "{rate} TLB IPIs/s/vCPU");
        assert_defaults_parse(&Tlb);
    }

    #[test]
    fn each_iteration_maps_touches_and_unmaps_one_buffer() {
        let program = build_valid(&Tlb, 4, &Params::defaults(&Tlb.params()));
        for ops in &program.threads {
            assert_eq!(
                loop_body(ops),
                [
                    Op::Compute(Dist::Exp { mean: 2_540 * US }),
                    Op::Mmap { pages: 32 },
                    Op::Compute(Dist::Const(2_540 * US)),
                    Op::Munmap { pages: 32 },
                    Op::Progress,
                ]
            );
        }
    }

    #[test]
    fn params_change_the_program_and_the_rate() {
        let params = params_with(&Tlb, &[("work", "1ms".into()), ("touch", "500us".into()), ("pages", 8.into())]);
        let program = build_valid(&Tlb, 8, &params);
        let body = loop_body(&program.threads[0]);
        assert_eq!(body[0], Op::Compute(Dist::Exp { mean: 1_000 * US }));
        assert_eq!(body[1], Op::Mmap { pages: 8 });
        assert_eq!(body[2], Op::Compute(Dist::Const(500 * US)));
        assert_eq!(body[3], Op::Munmap { pages: 8 });
        // A shorter iteration shoots down more often.
        assert!(solo_ipi_rate_per_vcpu(&program) > 4_000.0);
        let spec = Tlb.params().into_iter().find(|s| s.name == "pages").unwrap();
        assert!(spec.parse(&0.into()).is_err());
    }
}
