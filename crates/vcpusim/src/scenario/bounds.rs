//! Bounds that span sections of a scenario, checked once the whole file is read: times that
//! multiply (a cost per page by a program's pages, a cost per IPI target by a VM's vCPUs), the
//! number of `[run] sample_every` samples, and `[host] start_skew` against `[run] duration`.
//! Each is an error naming the key, the value and what was expected; the run itself also
//! saturates where times multiply (`guest/run.rs`), so nothing wraps whatever the caller does.
//!
//! And the size bounds, checked while the file is read, before what they bound is made: each
//! count key on its own (`size`), and over all VMs their vCPUs, threads, (VM, pCPU) pairs and
//! per-vCPU cpulists (`Totals`), and the host's (pool, pCPU) pairs ([`MAX_POOL_PCPU_PAIRS`],
//! pool_sections.rs). See "General rules" in docs/scenario-format.md.

use super::section::{error, Section};
use super::spec::{HostSpec, RunSpec, VmSpec, DEFAULT_START_SKEW};
use crate::error::SimError;
use crate::hypervisor::policies;
use crate::time::{format_duration, MAX_DURATION};
use crate::workload::program::Op;
use toml::Value;

/// The largest value of a key read into a `u32` (`weight`, `cap`, a bare-metal VM's `vcpus`).
pub(super) const U32_MAX: i64 = u32::MAX as i64;

/// The most `[run] sample_every` samples a run may take (one metrics.csv row per VM each, held in
/// memory until the end): a million is 30 hours at 100 ms, and guards against a typo asking for
/// billions.
pub const MAX_SAMPLES: u64 = 1_000_000;

/// Check the cross-section bounds of a loaded scenario, and cut a defaulted `start_skew` that
/// is not shorter than the run to half of it (see `start_skew`).
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

/// Upper bound on counts of pCPUs, vCPUs, threads and VM copies: far above any real host, low
/// enough that a typo (`vcpus = 80000000`) is an error rather than an out-of-memory crash.
const MAX_SIZE: u32 = 1 << 16;

/// A count key (`pcpus`, `vcpus`, `threads`, `count`) of at least 1 and at most [`MAX_SIZE`].
pub(super) fn size(section: &Section, key: &str, required: bool) -> Result<Option<u32>, SimError> {
    let value = if required { Some(section.required_int(key, 1, i64::MAX)?) } else { section.int(key, 1, i64::MAX)? };
    match value {
        Some(n) if n > MAX_SIZE as i64 => {
            Err(section
                .error_at(key, format!("expected at most {MAX_SIZE} (a guard against typos; no simulated host needs more), got {n}")))
        }
        other => Ok(other.map(|n| n as u32)),
    }
}

/// The most vCPUs, and guest threads, a scenario may have over all its VMs (`count` copies
/// included). Each key is bounded on its own (`vcpus` and `count` up to 65,536), but their
/// product is not: 65,536 copies of a 65,536-vCPU VM would be 4.3 billion vCPUs, and loading
/// them (each copy holds its program and a CPU mask per vCPU) ended in a failed allocation
/// after half a minute. A million vCPUs is 16 times the largest host this model was run on.
pub const MAX_TOTAL_VCPUS: u64 = 1 << 20;
/// See [`MAX_TOTAL_VCPUS`]; threads may outnumber vCPUs (hackbench runs 400 by default).
pub const MAX_TOTAL_THREADS: u64 = 1 << 22;
/// The most (VM, pCPU) pairs a scenario may have (VMs over all `count` copies × pCPUs). The run
/// keeps each VM's busy time on each pCPU (metrics/pcpu_usage.rs: seed 001's per-pCPU usage and
/// competing modules) and writes a `pcpu_busy_ms[<p>]` row of metrics.csv for each pair, about
/// 60 bytes a pair in all (1 GB at this bound); `cfs` and `eevdf` also keep a group run queue per
/// pair, as Linux keeps `tg->cfs_rq[cpu]` for a task group, about 200 bytes each (3.4 GB). The
/// 1,024-pCPU scaling mix (640 VMs) has 0.66 million pairs; 65,536 one-vCPU VMs on 65,536 pCPUs,
/// each key within its bounds, would have 4.3 billion and end in a failed allocation of 32 GiB.
pub const MAX_VM_PCPU_PAIRS: u64 = 1 << 24;
/// The most (pool, pCPU) pairs a host may have (`[[host.pool]]` entries and the default pool ×
/// pCPUs). Each pool's scheduler instance keeps its per-pCPU state for every pCPU of the host
/// (indexed by pCPU id, as Xen's per-CPU areas are): about 140 bytes a pair under credit, 490
/// under cfs (2 GB at this bound). One pool per pCPU of a 16,384-pCPU host would be 268 million
/// pairs and ended in a failed allocation; the bound allows 1,024 pools on 4,096 pCPUs, 64 on
/// 65,536.
pub const MAX_POOL_PCPU_PAIRS: u64 = 1 << 22;
/// The most per-vCPU cpulists (`cpus` or `cpus_soft` given as an array) × pCPUs over all VMs:
/// each such cpulist is a mask of one bit per pCPU, 512 MiB at this bound (an array of 65,536
/// cpulists on 65,536 pCPUs). A single cpulist, or none, is one mask shared by the VM's vCPUs
/// and its copies (`VmSpec::cpus`), so only arrays count.
pub const MAX_CPULIST_BITS: u64 = 1 << 32;

/// The vCPUs, threads, VMs and per-vCPU cpulists of the VMs read so far ([`MAX_TOTAL_VCPUS`],
/// [`MAX_VM_PCPU_PAIRS`], [`MAX_CPULIST_BITS`]), on a host of `pcpus`.
#[derive(Default)]
pub(super) struct Totals {
    vcpus: u64,
    threads: u64,
    vms: u64,
    cpulists: u64,
    pcpus: u64,
    /// The pools whose policy keeps a group run queue for every VM on every pCPU
    /// (`PolicyKind::groups_per_vm_and_pcpu`: each such instance keeps its own table), and
    /// their policies (`"cfs and eevdf"`), for messages.
    group_pools: u64,
    group_policies: String,
}

impl Totals {
    /// No VM read yet, on `host` (its pCPUs, and its pools that keep group run queues).
    pub(super) fn new(host: &HostSpec) -> Self {
        let keeps_groups = |name: &str| policies::find(name).is_ok_and(|k| k.groups_per_vm_and_pcpu());
        Totals {
            pcpus: host.topology.npcpus() as u64,
            group_pools: host.pools.iter().filter(|pool| keeps_groups(&pool.policy)).count() as u64,
            group_policies: {
                let mut names: Vec<&str> = host.pools.iter().map(|pool| pool.policy.as_str()).filter(|name| keeps_groups(name)).collect();
                names.sort_unstable();
                names.dedup();
                names.join(" and ")
            },
            ..Totals::default()
        }
    }

    /// `count` copies of a VM with `each` of `what` (`key`) bring the scenario to `total`, past
    /// `most`.
    fn over(section: &Section, count: u32, (what, key): (&str, &str), each: u64, total: u64, most: u64) -> SimError {
        section.error_at(
            if count > 1 { "count" } else { key },
            format!(
                "the scenario's VMs have {total} {what} with this one ({count} × {each} {what}); expected at most \
                 {most} over all VMs (fewer copies or smaller VMs)"
            ),
        )
    }

    /// Refuse `count` copies of a VM of `vcpus` vCPUs before any of their masks and tables is
    /// made: past [`MAX_TOTAL_VCPUS`], [`MAX_VM_PCPU_PAIRS`] or [`MAX_CPULIST_BITS`] with the VMs
    /// read so far.
    pub(super) fn check_vcpus(&self, section: &Section, count: u32, vcpus: u32) -> Result<(), SimError> {
        let total = self.vcpus + u64::from(count) * u64::from(vcpus);
        if total > MAX_TOTAL_VCPUS {
            return Err(Self::over(section, count, ("vCPUs", "vcpus"), vcpus.into(), total, MAX_TOTAL_VCPUS));
        }
        let vms = self.vms + u64::from(count);
        let pairs = vms * self.pcpus;
        let tables = pairs * self.group_pools;
        if pairs > MAX_VM_PCPU_PAIRS || tables > MAX_VM_PCPU_PAIRS {
            let copies = if count > 1 { format!(" ({count} copies)") } else { String::new() };
            let (k, policy) = (self.group_pools, &self.group_policies);
            let message = if pairs > MAX_VM_PCPU_PAIRS {
                let groups = if k > 0 {
                    format!(
                        ", and each pool of {policy} ({k} here) keeps a group run queue for each pair (Linux's tg->cfs_rq[cpu], \
                         about 200 bytes each)"
                    )
                } else {
                    String::new()
                };
                format!(
                    "the scenario has {vms} VMs with this one{copies} on {} pCPUs: {pairs} (VM, pCPU) pairs, expected at \
                     most {MAX_VM_PCPU_PAIRS}; use fewer copies, fewer VMs or fewer pCPUs. The run keeps each VM's busy \
                     time on each pCPU and writes a pcpu_busy_ms row of metrics.csv for each pair{groups}",
                    self.pcpus
                )
            } else {
                format!(
                    "the scenario has {vms} VMs with this one{copies} on {} pCPUs, and each pool of {policy} ({k} here) \
                     keeps a group run queue for every VM on every pCPU (Linux's tg->cfs_rq[cpu], about 200 bytes each): \
                     {tables} in all, expected at most {MAX_VM_PCPU_PAIRS}; use fewer copies, fewer VMs, fewer pools of {policy} or \
                     fewer pCPUs",
                    self.pcpus
                )
            };
            return Err(if count > 1 { section.error_at("count", message) } else { section.error(message) });
        }
        let arrays = cpulist_arrays(section);
        let bits = (self.cpulists + arrays) * self.pcpus;
        if arrays > 0 && bits > MAX_CPULIST_BITS {
            let key = if matches!(section.get("cpus"), Some(Value::Array(_))) { "cpus" } else { "cpus_soft" };
            return Err(section.error_at(
                key,
                format!(
                    "the scenario's VMs have {} per-vCPU cpulists with this one's, on {} pCPUs: each is a mask of one bit \
                     per pCPU, {:.1} GiB in all; expected cpulists × pCPUs at most {MAX_CPULIST_BITS} (give one cpulist \
                     string for every vCPU of the VM where they are the same: it is one mask)",
                    self.cpulists + arrays,
                    self.pcpus,
                    bits as f64 / 8.0 / (1u64 << 30) as f64
                ),
            ));
        }
        Ok(())
    }

    /// Count `count` copies of `spec` (its vCPUs passed `check_vcpus`), or refuse them for their
    /// threads before they are made.
    pub(super) fn add(&mut self, section: &Section, count: u32, spec: &VmSpec) -> Result<(), SimError> {
        let copies = u64::from(count);
        let (vcpus, threads) = (u64::from(spec.vcpus), spec.program.threads.len() as u64);
        let total = self.threads + copies * threads;
        if total > MAX_TOTAL_THREADS {
            return Err(Self::over(section, count, ("guest threads", "threads"), threads, total, MAX_TOTAL_THREADS));
        }
        self.vcpus += copies * vcpus;
        self.threads = total;
        self.vms += copies;
        self.cpulists += cpulist_arrays(section);
        Ok(())
    }
}

/// How many cpulists a `[[vm]]` section gives one per vCPU (`cpus` and `cpus_soft` arrays; its
/// copies share them).
fn cpulist_arrays(section: &Section) -> u64 {
    ["cpus", "cpus_soft"]
        .iter()
        .map(|key| match section.get(key) {
            Some(Value::Array(list)) => list.len() as u64,
            _ => 0,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{assert_error, load, minimal};

    #[test]
    fn counts_within_their_bounds_whose_product_is_not_are_refused_before_the_copies_are_made() {
        // 65,536 copies of a 65,536-vCPU VM: each key in range, 4.3 billion vCPUs in all.
        let huge = minimal("", "count = 65536").replace("vcpus = 2", "vcpus = 65536");
        assert_error(
            &huge,
            "vm[0].count: the scenario's VMs have 4294967296 vCPUs with this one (65536 × 65536 vCPUs); expected at most 1048576",
        );
        // The bound is over all VMs: the second entry crosses it.
        let two = format!(
            "{}\n[[vm]]\nname = \"b\"\nvcpus = 65536\ncount = 2\nworkload = \"idle\"\n",
            minimal("", "count = 15").replace("vcpus = 2", "vcpus = 65536")
        );
        assert_error(&two, "vm[1].count: the scenario's VMs have 1114112 vCPUs with this one (2 × 65536 vCPUs)");
        assert!(load(&minimal("", "count = 16").replace("vcpus = 2", "vcpus = 65536")).is_ok(), "exactly the bound loads");
        // Threads too (a program's threads may outnumber its vCPUs).
        let threads = minimal("", "count = 65536\nthreads = 65536");
        assert_error(&threads, "vm[0].count: the scenario's VMs have 4294967296 guest threads with this one");
        // VMs × pCPUs: every VM's busy time on every pCPU is kept and written (metrics.csv), under
        // every policy; cfs and eevdf keep a group run queue per pair too, and the message says so.
        let groups = minimal("", "count = 4097").replace("pcpus = 2", "pcpus = 4096").replace("vcpus = 2", "vcpus = 1");
        assert_error(
            &groups,
            "vm[0].count: the scenario has 4097 VMs with this one (4097 copies) on 4096 pCPUs: 16781312 (VM, pCPU) pairs, expected at \
             most 16777216; use fewer copies, fewer VMs or fewer pCPUs. The run keeps each VM's busy time on each pCPU and writes a \
             pcpu_busy_ms row of metrics.csv for each pair, and each pool of cfs (1 here) keeps a group run queue for each pair \
             (Linux's tg->cfs_rq[cpu], about 200 bytes each)",
        );
        assert!(load(&groups.replace("count = 4097", "count = 4096")).is_ok(), "4,096 x 4,096 loads");
        // Each pool of cfs keeps its own table: 64 pools of 16 pCPUs multiply it by 64. (That
        // host with 1,024 VMs took more than 12 GB and died on a failed allocation.)
        let pooled = |policy: &str, vms: u32| {
            let entries: String =
                (1..64).map(|k| format!("[[host.pool]]\nname = \"p{k}\"\npcpus = \"{}-{}\"\n\n", 16 * k, 16 * k + 15)).collect();
            format!(
                "[host]\npcpus = 1024\npolicy = \"{policy}\"\n\n{entries}[[vm]]\nname = \"a\"\ncount = {vms}\nvcpus = 1\nworkload = \"idle\"\n"
            )
        };
        assert_error(
            &pooled("cfs", 257),
            "vm[0].count: the scenario has 257 VMs with this one (257 copies) on 1024 pCPUs, and each pool of cfs (64 here) keeps a \
             group run queue for every VM on every pCPU (Linux's tg->cfs_rq[cpu], about 200 bytes each): 16842752 in all, expected \
             at most 16777216",
        );
        assert!(load(&pooled("cfs", 256)).is_ok(), "64 x 256 x 1,024 group run queues load");
        assert!(load(&pooled("credit", 1024)).is_ok(), "credit keeps no group run queues");
        // Pools of both policies that keep them: named together, counted together.
        let mixed = pooled("cfs", 257).replacen("pcpus = \"16-31\"\n", "pcpus = \"16-31\"\npolicy = \"eevdf\"\n", 1);
        assert_error(
            &mixed,
            "vm[0].count: the scenario has 257 VMs with this one (257 copies) on 1024 pCPUs, and each pool of cfs and eevdf (64 \
             here) keeps a group run queue",
        );
        // Pools × pCPUs: each pool's instance keeps state for every pCPU of the host, bounded
        // before any entry is read. (One pool per pCPU of 16,384 died on a failed allocation.)
        let many_pools = |entries: u32| {
            let list: String = (1..=entries).map(|k| format!("[[host.pool]]\nname = \"p{k}\"\npcpus = \"{k}\"\n\n")).collect();
            format!("[host]\npcpus = 16384\npolicy = \"credit\"\n\n{list}[[vm]]\nname = \"a\"\nvcpus = 1\nworkload = \"idle\"\n")
        };
        assert_error(
            &many_pools(256),
            "host.pool: 256 [[host.pool]] entries and the default pool on 16384 pCPUs: each pool's scheduler instance keeps state for \
             every pCPU of the host, 4210688 (pool, pCPU) pairs; expected at most 4194304 (at most 255 entries on this host)",
        );
        assert!(load(&many_pools(255)).is_ok(), "the bound itself loads");
        // 65,536 one-vCPU VMs on 65,536 pCPUs under credit passed every bound and then died on a
        // failed allocation of 32 GiB (the busy-time table); a VM past the bound on its own is named.
        let many = minimal("policy = \"credit\"", "count = 65536").replace("pcpus = 2", "pcpus = 65536").replace("vcpus = 2", "vcpus = 1");
        assert_error(
            &many,
            "vm[0].count: the scenario has 65536 VMs with this one (65536 copies) on 65536 pCPUs: 4294967296 (VM, pCPU) pairs",
        );
        assert!(!format!("{:?}", load(&many).unwrap_err()).contains("group run queue"), "credit keeps no group run queues");
        let past = format!("{}\n[[vm]]\nname = \"last\"\nvcpus = 1\nworkload = \"idle\"\n", many.replace("count = 65536", "count = 256"));
        assert_error(&past, "vm[1]: the scenario has 257 VMs with this one on 65536 pCPUs: 16842752 (VM, pCPU) pairs");
        // Affinity: one cpulist (or none) is one mask however many vCPUs and copies share it, so a
        // 65,536-vCPU VM on 65,536 pCPUs twice over loads (it took 4 GiB of masks before).
        let wide = minimal("policy = \"credit\"", "count = 2").replace("pcpus = 2", "pcpus = 65536").replace("vcpus = 2", "vcpus = 65536");
        assert!(load(&wide).is_ok(), "131,072 vCPUs of one shared mask each on 65,536 pCPUs load");
        // A cpulist per vCPU is a mask each: bounded over all VMs, before any is parsed.
        let listed = |n: usize, soft: bool| {
            let list = vec!["\"0\""; n].join(", ");
            let keys = if soft { format!("cpus = [{list}]\ncpus_soft = [{list}]") } else { format!("cpus = [{list}]") };
            minimal("policy = \"credit\"", &keys).replace("pcpus = 2", "pcpus = 65536").replace("vcpus = 2", &format!("vcpus = {n}"))
        };
        assert_error(
            &listed(32_769, true),
            "vm[0].cpus: the scenario's VMs have 65538 per-vCPU cpulists with this one's, on 65536 pCPUs: each is a mask of one bit per \
             pCPU, 0.5 GiB in all; expected cpulists × pCPUs at most 4294967296",
        );
        assert!(load(&listed(4_096, false)).is_ok(), "4,096 cpulists on 65,536 pCPUs load");
    }
}
