//! Bounds that span sections of a scenario, checked once the whole file is read: times that
//! multiply (a cost per page by a program's pages, a cost per IPI target by a VM's vCPUs), the
//! number of `[run] sample_every` samples, and `[host] start_skew` against `[run] duration`.
//! Each is an error naming the key, the value and what was expected; the run itself also
//! saturates where times multiply (`guest/run.rs`), so nothing wraps whatever the caller does.

use super::section::{error, Section};
use super::spec::{HostSpec, RunSpec, VmSpec, DEFAULT_START_SKEW};
use crate::error::SimError;
use crate::time::{format_duration, MAX_DURATION};
use crate::workload::program::Op;

/// The most `[run] sample_every` samples a run may take (one metrics.csv row per VM each, held in
/// memory until the end): a million is 30 hours at 100 ms, and guards against a typo asking for
/// billions.
pub const MAX_SAMPLES: u64 = 1_000_000;

/// Check the cross-section bounds of a loaded scenario, and cut a defaulted `start_skew` that
/// is not shorter than the run to half of it (see [`start_skew`]).
pub fn check(top: &Section, host: &mut HostSpec, vms: &[VmSpec], run: &RunSpec) -> Result<(), SimError> {
    let file = top.file;
    start_skew(top, host, run)?;
    if let Some(every) = run.sample_every {
        let samples = run.duration / every.max(1);
        if samples > MAX_SAMPLES {
            return Err(error(
                file,
                "run.sample_every",
                format!(
                    "{} over duration = {} takes {samples} samples; expected at most {MAX_SAMPLES} \
                     (raise sample_every to at least {} or shorten the run)",
                    format_duration(every),
                    format_duration(run.duration),
                    format_duration(run.duration.div_ceil(MAX_SAMPLES)),
                ),
            ));
        }
    }
    let costs = &host.costs;
    for vm in vms {
        // A shootdown's handler runs ipi_handler + pages × tlb_flush_per_page on every target.
        if let Some(pages) = vm.program.threads.iter().flat_map(|ops| max_munmap_pages(ops)).max() {
            let handler = u128::from(pages) * u128::from(costs.tlb_flush_per_page) + u128::from(costs.ipi_handler);
            if handler > u128::from(MAX_DURATION) {
                return Err(error(
                    file,
                    "host.costs.tlb_flush_per_page",
                    format!(
                        "{} per page × {pages} pages (VM {:?}'s largest munmap) makes a shootdown handler of \
                         {handler} ns, longer than the longest time vcpusim represents ({MAX_DURATION} ns, about \
                         292 years); expected at most {} per page for this program",
                        format_duration(costs.tlb_flush_per_page),
                        vm.name,
                        format_duration((MAX_DURATION - costs.ipi_handler.min(MAX_DURATION)) / u64::from(pages)),
                    ),
                ));
            }
        }
        // One APIC write (a VMEXIT) per target: a send to every other vCPU costs ipi_send × that.
        let send = u128::from(costs.ipi_send) * u128::from(vm.vcpus);
        if send > u128::from(MAX_DURATION) {
            return Err(error(
                file,
                "host.costs.ipi_send",
                format!(
                    "{} per target × {} vCPUs (VM {:?}) makes an IPI send of {send} ns, longer than the longest \
                     time vcpusim represents ({MAX_DURATION} ns); expected at most {} per target",
                    format_duration(costs.ipi_send),
                    vm.vcpus,
                    vm.name,
                    format_duration(MAX_DURATION / u64::from(vm.vcpus)),
                ),
            ));
        }
    }
    Ok(())
}

/// `[host] start_skew` against `[run] duration`. Each pCPU comes online at a random time in
/// [0, start_skew); a skew as long as the run would leave pCPUs that never schedule (unchecked,
/// "9e9s" in a 200 ms run would give every VM zero CPU time without a word). A start_skew written in
/// the file that is not shorter than the run is an error; the default (30 ms, one Xen credit
/// slice) is cut to half the duration for runs of 30 ms or less, which the user did not ask to skew.
fn start_skew(top: &Section, host: &mut HostSpec, run: &RunSpec) -> Result<(), SimError> {
    if host.start_skew < run.duration || host.start_skew == 0 {
        return Ok(());
    }
    let explicit = top.table("host")?.is_some_and(|h| h.get("start_skew").is_some());
    if !explicit {
        debug_assert_eq!(host.start_skew, DEFAULT_START_SKEW);
        host.start_skew = run.duration / 2;
        return Ok(());
    }
    Err(error(
        top.file,
        "host.start_skew",
        format!(
            "{} is not shorter than the run (run.duration = {}): each pCPU comes online at a random time in \
             [0, start_skew), so some would never schedule; expected a skew shorter than the duration \
             (the default is {}, one Xen credit slice; \"0ns\" starts every pCPU at t = 0)",
            format_duration(host.start_skew),
            format_duration(run.duration),
            format_duration(DEFAULT_START_SKEW),
        ),
    ))
}

/// The largest `munmap` of an op list, loops included.
fn max_munmap_pages(ops: &[Op]) -> Option<u32> {
    ops.iter()
        .filter_map(|op| match op {
            Op::Munmap { pages } | Op::MadviseDontneed { pages } => Some(*pages),
            Op::Loop { body, .. } => max_munmap_pages(body),
            _ => None,
        })
        .max()
}
