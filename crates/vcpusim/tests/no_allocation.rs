//! No allocation per event. This test binary's global allocator counts the
//! heap allocations (`alloc` and `realloc`) each thread makes; a run is built, warmed up (its
//! queues and lists grow to their working size), and then run for a further window of simulated
//! time, and the allocations of that window are held to a bound per 1,000 events. Counts, not
//! time: the same build gives the same count on any machine.
//!
//! What it holds off, in allocations per 1,000 events: a cfs balance cloning the leaf list and
//! each group's task list (27 on 64 pCPUs), eevdf's `detach_tasks` collecting the busiest run
//! queue's vCPUs (25), a gang decision building its lists afresh (17-30), seed 002's detection
//! collecting the preempted siblings at each yield (383: more than one allocation every three
//! events) and a tick's reschedule IPI making a one-target list. What may remain is growth to a
//! new peak and the metrics' sample windows, a few in a window; the bound is 1 per 1,000.
//!
//! Likewise (docs/speed.md): standard `BTreeSet`s for eevdf's balancer index (`lb_index.rs`) and
//! the hybrid steal index beyond 64 vCPUs, which allocate and free nodes as keys come and go
//! (eevdf 10.6 per 1,000 events on 32 pCPUs, hybrid 10.1 on 64; hence
//! `policies/ordered_set.rs`), and a TLB shootdown of the Linux 4.4 guest on Xen or the 6.x guest
//! on KVM copying its target list into the yield step after the sends (9 per 1,000 events on
//! `linux6.toml`; the step reads the shootdown's record instead) and, on 6.x, sorting a copy of
//! the APIC ids.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use vcpusim::api::load_scenario;
use vcpusim::scenario::spec::Scenario;
use vcpusim::sim::state::Sim;
use vcpusim::time::{MS, SEC};

/// Counts this thread's allocations, then lets the system allocator make them.
struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

fn count() {
    ALLOCATIONS.with(|n| n.set(n.get() + 1));
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// At most this many allocations per 1,000 events in the measured window.
const PER_THOUSAND: u64 = 1;

/// Run `scenario` to `warm` ms, then to `warm + span` ms; assert that the allocations of the
/// second part stay within the bound.
fn assert_allocation_free(name: &str, scenario: &Scenario, warm: u64, span: u64) {
    let mut sim = Sim::build(scenario, scenario.run.seed, false, false).expect("builds");
    sim.start();
    sim.run_until(warm * MS, None).expect("runs");
    let (a0, e0) = (ALLOCATIONS.with(Cell::get), sim.events());
    sim.run_until((warm + span) * MS, None).expect("runs");
    let (allocations, events) = (ALLOCATIONS.with(Cell::get) - a0, sim.events() - e0);
    eprintln!("{name}: {allocations} allocations in {events} events");
    assert!(events >= 2_000, "{name}: only {events} events in the window; the check needs a busy run");
    assert!(
        allocations * 1_000 <= PER_THOUSAND * events,
        "{name}: {allocations} allocations in {events} events of steady state (at most {PER_THOUSAND} per 1,000)"
    );
}

/// `vcpusim bench`'s scaling mix on `pcpus` pCPUs: per 8 pCPUs one 8-vCPU barrier VM and four
/// one-vCPU CPU hogs (on 32: 48 vCPUs).
fn scaling_mix(policy: &str, pcpus: u32) -> Scenario {
    vcpusim::bench::scaling_scenario(policy, pcpus, SEC).expect("a valid mix")
}

/// A scenario as shipped, by its path under `scenarios/`: held to the bound over `warm` ms
/// then `span` ms.
macro_rules! assert_shipped_allocation_free {
    ($path:literal, $warm:expr, $span:expr) => {{
        let text = include_str!(concat!("../../../scenarios/", $path));
        let scenario = load_scenario(text, $path).unwrap_or_else(|e| panic!("{}: {e}", $path));
        assert_allocation_free($path, &scenario, $warm, $span);
    }};
}

#[test]
fn cfs_balances_without_allocating() {
    assert_allocation_free("cfs mix", &scaling_mix("cfs", 32), 200, 300);
}

#[test]
fn credit_schedules_without_allocating() {
    assert_allocation_free("credit mix", &scaling_mix("credit", 32), 200, 300);
}

#[test]
fn eevdf_balances_without_allocating() {
    assert_allocation_free("eevdf mix, 8 pCPUs", &scaling_mix("eevdf", 8), 200, 300);
    // 32 pCPUs: the balancer index's busiest sets grow and shrink; with the standard BTreeSet
    // its nodes came and went (10 allocations per 1,000 events), with `OrderedSet` none.
    assert_allocation_free("eevdf mix, 32 pCPUs", &scaling_mix("eevdf", 32), 200, 300);
}

#[test]
fn gang_decides_without_allocating() {
    assert_allocation_free("gang mix", &scaling_mix("gang", 32), 200, 300);
}

#[test]
fn hybrid_schedules_without_allocating() {
    assert_allocation_free("hybrid mix, 32 pCPUs", &scaling_mix("hybrid", 32), 200, 300);
    // 64 pCPUs, 96 vCPUs: the steal index is past its sorted list, in an `OrderedSet` (10
    // allocations per 1,000 events when that was the standard BTreeSet).
    assert_allocation_free("hybrid mix, 64 pCPUs", &scaling_mix("hybrid", 64), 200, 200);
}

/// Relaxed co-scheduling over credit (`overlay = "relaxed-co"`, seed 003's baseline): each state
/// change of a vCPU accounts its VM's skews, and each check arms the next crossing; fresh
/// `Vec`s of the VM's states and skews for both and a clone of the VM's vCPU list per check
/// would make 171 allocations per 1,000 events of this run (docs/speed.md). Mutex
/// and barrier VMs beside hogs, so that vCPUs halt, wake and are co-stopped all through the
/// window.
#[test]
fn relaxed_co_accounts_without_allocating() {
    let text = "[host]\npcpus = 16\npolicy = \"credit\"\noverlay = \"relaxed-co\"\n\n\
                [[vm]]\nname = \"mx\"\ncount = 2\nvcpus = 4\nworkload = \"mutex\"\n\n\
                [[vm]]\nname = \"par\"\nvcpus = 4\nworkload = \"barrier\"\n\n\
                [[vm]]\nname = \"hog\"\ncount = 6\nvcpus = 1\nworkload = \"cpu-bound\"\n\n[run]\nduration = \"1s\"\n";
    let scenario = load_scenario(text, "relaxed-co").unwrap_or_else(|e| panic!("{e}"));
    assert_allocation_free("relaxed-co mutex and barrier VMs", &scenario, 200, 300);
}

/// Seed 002's micro-sliced pool with its detection (a yield looks for preempted siblings).
#[test]
fn microsliced_detection_without_allocating() {
    assert_shipped_allocation_free!("examples/microsliced.toml", 300, 300);
}

/// The Linux 4.4 guest on Xen and the 6.x guest on KVM: TLB shootdowns (each followed by a
/// yield step that reads the targets from the shootdown's record), `mmap_sem`, PV spinlocks, and
/// on 6.x PV IPIs, TLB flushes and `sched_yield`.
#[test]
fn pv_guests_without_allocating() {
    assert_shipped_allocation_free!("examples/linux44.toml", 300, 300);
    assert_shipped_allocation_free!("examples/linux6.toml", 300, 300);
}

/// Seed 003's IRS overlay (its notices' reschedule IPIs) and the quickstart's cfs host.
#[test]
fn irs_and_quickstart_without_allocating() {
    assert_shipped_allocation_free!("examples/irs.toml", 300, 300);
    assert_shipped_allocation_free!("quickstart.toml", 300, 300);
}

/// A bare-metal VM of 48 threads contending for a mutex on 16 of seed 001's CPUs (CMT modules,
/// LLC per node): its guest places each woken thread with Linux 3.13's `select_idle_sibling` over
/// the real topology (guest/bare_metal_placement.rs), which listed both domains' spans and groups as fresh
/// `Vec`s at every wake-up (913 allocations per 1,000 events of this run) before it read each
/// LLC's groups made at the start.
#[test]
fn bare_metal_wakeups_without_allocating() {
    let text = "[host]\npcpus = 32\nsockets = 2\nnuma_nodes = 4\ncores_per_module = 2\nllc = \"node\"\npolicy = \"credit\"\n\
                params = { xen = \"4.4\" }\n\n[[vm]]\nname = \"pm\"\nbare_metal = true\ncpus = \"0-15\"\nworkload = \"mutex\"\nthreads = 48\n\n\
                [run]\nduration = \"1s\"\n";
    let scenario = load_scenario(text, "bare-metal mutex").unwrap_or_else(|e| panic!("{e}"));
    assert_allocation_free("bare-metal mutex", &scenario, 200, 300);
}
