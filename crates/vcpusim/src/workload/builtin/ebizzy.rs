//! `ebizzy`: ebizzy 0.3 in its `-M` ("never use mmap") mode, the memory-allocation loop KVM's
//! paravirtual TLB-flush work measures with.
//!
//! **The program** (ebizzy 0.3 `ebizzy.c`, copy in LTP utils/benchmark/ebizzy-0.3/):
//! `read_options` sets `threads = 2 * sysconf(_SC_NPROCESSORS_ONLN)`, `chunks = 10`,
//! `chunk_size = record_size * 64 * 1024` (512 KiB with 8-byte records) and, for `-M`,
//! `mallopt(M_MMAP_MAX, 0)`. `main` allocates and fills the ten chunks, then `start_threads`
//! starts the threads, which spin until `threads_go`; each runs `search_mem`: pick a chunk,
//! `alloc_mem(copy_size)` (malloc), `memcpy` the chunk into it, `bsearch` a key, `free_mem`
//! (free), and count one record. The report is `records_read / elapsed` ("records/s") and the
//! run's user and sys time from `getrusage`.
//!
//! **What `-M` does in glibc** (malloc/malloc.c, malloc/arena.c). Without `-M` a 512 KiB malloc
//! is over the mmap threshold only until its first free: freeing an mmapped chunk raises the
//! dynamic mmap threshold to its size and the trim threshold to twice that (`__libc_free`), and
//! later copies come from the heap untrimmed. `M_MMAP_MAX = 0` forbids mmap, so no chunk is ever
//! mmapped, the thresholds never move, and the trim threshold stays at `DEFAULT_TRIM_THRESHOLD`
//! = 128 KiB. Each thread gets an arena of its own (`arena_get2`, up to 8 x cores of them), an
//! mmap'ed heap. free of the copy coalesces it into the arena's top chunk and `_int_free` calls
//! `heap_trim(heap, mp_.top_pad)`, which keeps the top pad (`DEFAULT_TOP_PAD` = 128 KiB) and gives
//! the rest back when it is at least the trim threshold (current glibc; older versions give back
//! any whole page past the pad) through `shrink_heap`: `madvise(MADV_DONTNEED)` (the
//! `MAP_FIXED` remap only with `overcommit_memory = 2`). The kernel zaps those pages and
//! flushes every other CPU that runs the address space: a TLB shootdown per record, under
//! `mmap_sem` for read (mm/madvise.c `madvise_need_mmap_write`). The next malloc grows the heap
//! again inside the already-`mprotect`ed area (`grow_heap`: no system call), and the memcpy
//! faults the zapped pages back in, one anonymous page fault per page.
//!
//! **Model**: `threads` threads (default `2 x vCPUs`), each an endless loop of records:
//! 1. the page faults of the copy: `(chunk - top pad)` pages x `fault` of kernel work (one
//!    `Syscall`; the faults take `mmap_sem` for read, which the model does not represent);
//! 2. the copy and the search: `chunk / copy_gbps` of user time;
//! 3. the free: [`Op::MadviseDontneed`] of the same pages (zap work plus the shootdown, under
//!    `mmap_sem` for read only, so threads' frees do not serialize);
//! 4. one record.
//!
//! With `chunk - 128 KiB` below the trim threshold glibc never trims: the loop is the copy alone.
//!
//! **Numbers**: chunk 512 KiB, top pad and trim threshold 128 KiB: ebizzy 0.3 and glibc's
//! defaults; a page fault 1.2 us of kernel work (memclone.rs's `FAULT`, assumed: an anonymous
//! fault with `clear_page`); the copy at 10 GB/s (assumed: one core's memcpy bandwidth of a
//! Xeon of the PV patches' era). No source we have gives ebizzy -M's solo records/s or sys
//! share on a stated machine, so the solo characteristics the calibration test checks are the
//! ones these numbers give (module constants below): 52 us of user and 140 us of kernel time per
//! record (73% kernel); on 8 vCPUs the handlers of the other vCPUs' shootdowns and the IPI
//! exits add about 55 us, so a vCPU makes about 3,800 records/s.
//!
//! Not modelled: the `lru_lock` pagevec drains of the refaulted pages (the pages cycle through
//! the CPU's per-CPU list, so no `zone->lock`: mosbench/mod.rs), the `bsearch` (17 compares),
//! the start spin on `threads_go`.
//!
//! **Progress**: records (ebizzy's own unit).

use super::memclone::FAULT;
use crate::params::{ParamSpec, Params};
use crate::time::Nanos;
use crate::workload::program::{Dist, Op, Program};
use crate::workload::Workload;

pub struct Ebizzy;

const PROGRESS_UNIT: &str = "records (ebizzy's records/s numerator, all threads)";
/// ebizzy 0.3 `chunk_size = record_size * 64 * 1024` with 8-byte records, in KiB.
pub const CHUNK_KIB: u64 = 512;
/// glibc `DEFAULT_TOP_PAD` (malloc/malloc.c): what `heap_trim` keeps above the top chunk, KiB.
pub const TOP_PAD_KIB: u64 = 128;
/// glibc `DEFAULT_TRIM_THRESHOLD` (malloc/malloc.c), KiB: `heap_trim` gives back nothing smaller.
pub const TRIM_THRESHOLD_KIB: u64 = 128;
/// Copy bandwidth of one core, GB/s (assumed).
pub const COPY_GBPS: f64 = 10.0;
const PAGE_KIB: u64 = 4;

/// Pages `heap_trim` gives back (and the next copy faults in) per record of a `chunk_kib` chunk.
pub fn trimmed_pages(chunk_kib: u64) -> u64 {
    let extra = chunk_kib.saturating_sub(TOP_PAD_KIB);
    if extra < TRIM_THRESHOLD_KIB {
        0
    } else {
        extra / PAGE_KIB
    }
}

/// User time of the copy of a `chunk_kib` chunk at `gbps`.
pub fn copy_time(chunk_kib: u64, gbps: f64) -> Nanos {
    ((chunk_kib * 1024) as f64 / gbps).round() as Nanos
}

impl Workload for Ebizzy {
    fn name(&self) -> &'static str {
        "ebizzy"
    }
    fn describe(&self) -> &'static str {
        "ebizzy 0.3 -M: 2 x vCPUs threads each copy a 512 KiB chunk into a fresh malloc buffer and free \
         it; glibc trims the thread's arena with madvise(MADV_DONTNEED), so every record refaults 96 \
         pages and ends in a TLB shootdown to the other vCPUs"
    }
    fn progress_unit(&self) -> &'static str {
        PROGRESS_UNIT
    }
    fn params(&self) -> Vec<ParamSpec> {
        vec![
            ParamSpec::int(
                "chunk",
                CHUNK_KIB,
                "size of a chunk and of each copy, KiB (ebizzy -s / 1024). 512: ebizzy 0.3's default \
                 (8-byte records x 64 Ki). Below 256 glibc never trims, so no shootdowns.",
            )
            .range(4.0, 65_536.0),
            ParamSpec::float("copy_gbps", COPY_GBPS, "memcpy bandwidth of one core, GB/s (assumed 10): sets the user time of a record.")
                .range(0.1, 1_000.0),
            ParamSpec::duration("fault", FAULT, "kernel work per page fault of the copy (assumed 1.2us, as memclone).").at_least(100.0),
        ]
    }
    fn default_threads(&self, vcpus: u32) -> u32 {
        2 * vcpus
    }
    fn build(&self, threads: u32, params: &Params) -> Result<Program, String> {
        if threads == 0 {
            return Err("ebizzy needs at least 1 thread, got 0".into());
        }
        let chunk = params.int("chunk");
        let pages = trimmed_pages(chunk);
        let mut body = Vec::new();
        if pages > 0 {
            body.push(Op::kernel(Dist::Const(pages * params.duration("fault"))));
        }
        body.push(Op::Compute(Dist::Const(copy_time(chunk, params.float("copy_gbps")))));
        if pages > 0 {
            body.push(Op::MadviseDontneed { pages: pages as u32 });
        }
        body.push(Op::Progress);
        let mut program = Program::new(PROGRESS_UNIT);
        program.threads = (0..threads).map(|_| vec![Op::Loop { count: None, body: body.clone() }]).collect();
        Ok(program)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::builtin::test_support::*;

    #[test]
    fn a_record_refaults_and_madvises_what_glibc_trims() {
        assert_defaults_parse(&Ebizzy);
        let program = build_valid(&Ebizzy, 16, &Params::defaults(&Ebizzy.params()));
        assert_eq!(Ebizzy.default_threads(8), 16);
        // 512 KiB - 128 KiB of top pad = 384 KiB = 96 pages, faulted at 1.2 us each.
        assert_eq!(
            loop_body(&program.threads[3]),
            [Op::kernel(Dist::Const(96 * 1_200)), Op::Compute(Dist::Const(52_429)), Op::MadviseDontneed { pages: 96 }, Op::Progress,]
        );
    }

    #[test]
    fn chunks_within_the_trim_threshold_never_trim() {
        assert_eq!(trimmed_pages(255), 0);
        assert_eq!(trimmed_pages(256), 32);
        let program = build_valid(&Ebizzy, 2, &params_with(&Ebizzy, &[("chunk", 200i64.into())]));
        assert_eq!(loop_body(&program.threads[0]), [Op::Compute(Dist::Const(copy_time(200, COPY_GBPS))), Op::Progress]);
        assert!(Ebizzy.build(0, &Params::defaults(&Ebizzy.params())).unwrap_err().contains("at least 1"));
    }
}
