//! PARSEC 2.1 application models (`parsec.<name>`), one file per application.
//!
//! Each file holds a [`Profile`]: the application's structure (data-parallel workers, a
//! pipeline of stages joined by queues, or x264's frame wavefront), what its threads do between
//! synchronizations, and the numbers it is calibrated from with their sources. This file turns
//! a profile into a [`Program`] with the guest's existing ops, so that futex traffic, TLB
//! shootdowns and mmap_sem contention come out of the guest kernel as they do for every other
//! workload.
//!
//! Sources common to all models:
//! - Bienia, Kumar, Singh, Li, "The PARSEC benchmark suite: characterization and architectural
//!   implications", PACT'08 (PARSEC below): parallelization model, synchronization primitives,
//!   working sets.
//! - Seed 000 (`000_43dd62cb774fc5d7.txt`): section 3.1 runs each application with 8 threads in
//!   an 8-vCPU VM on 8 pCPUs, native input, and reports IPI rates per vCPU by type (Figure 1;
//!   the text gives the TLB rates of dedup, ferret and vips: 1761, 443, 1350 IPIs/s/vCPU),
//!   Table 1 (share of CPU in TLB shootdown and lock spinning when corun with streamcluster) and
//!   Figure 3 (the futex-queue lock dominates spin time; dedup and vips also spin on the mm
//!   semaphore's wait-queue lock).
//!
//! Calibration target: solo behaviour only (8 threads, 8 vCPUs, 8 pCPUs, nothing else running).
//! Figure 1 is a plot that our text copy of the seed does not contain, so reschedule-IPI rates
//! are not calibrated: they come out of each model's structure. TLB rates are calibrated where
//! the text gives them; for the other applications the TLB activity is estimated from Table 1
//! (share of CPU in TLB shootdown relative to vips', see [`tlb_rate_from_table1`]). Every other
//! length is marked "assumed" where it is defined.

pub mod blackscholes;
pub mod bodytrack;
pub mod canneal;
pub mod dedup;
pub mod facesim;
pub mod ferret;
pub mod fluidanimate;
pub mod freqmine;
pub mod raytrace;
pub mod streamcluster;
pub mod swaptions;
pub mod vips;
pub mod x264;
pub mod x264_single;

use crate::params::{ParamSpec, Params};
use crate::time::Nanos;
use crate::workload::program::{BarrierWait, Dist, ObjIndex, Op, Program};
use crate::workload::Workload;

/// Something a thread does between two computations.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Event {
    /// A critical section of `hold` under one of the profile's shared pthread mutexes.
    Critical { hold: Nanos },
    /// A buffer large enough for glibc malloc to mmap it (>= 128 KiB, DEFAULT_MMAP_THRESHOLD_MIN,
    /// malloc/malloc.c): mmap, compute `touch` on it, free it (munmap: a TLB shootdown).
    Buffer { pages: u32, touch: Nanos },
}

/// How a worker's computation between events is spread.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Spread {
    /// Exponential around the mean: threads drift apart (no lockstep).
    Exp,
    /// Uniform in mean * (1 +- this fraction): balanced bulk-synchronous phases.
    Uniform(f64),
}

/// One step of a pipeline: a pool of threads taking items from the previous stage's queue.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stage {
    pub name: &'static str,
    /// One thread (PARSEC's serial input / output stages) or a pool (`-n` threads in PARSEC).
    pub parallel: bool,
    /// Mean computation per item, outside the events.
    pub work: Nanos,
    /// Events per item, spread through the work.
    pub events: &'static [(Event, u32)],
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Shape {
    /// Data-parallel: every thread runs the same phase: `work` of computation with `events`
    /// spread through it, then (optionally) a barrier of all threads.
    Workers {
        work: Nanos,
        spread: Spread,
        /// Events per phase, spread evenly through it.
        events: &'static [(Event, u32)],
        /// One event every this many phases (for activity rarer than once per phase).
        rare: Option<(Event, u32)>,
        barrier: Option<BarrierWait>,
    },
    /// Pipeline: stages joined by bounded queues (a mutex and two condition variables each,
    /// guest/sync.rs), items enter at the first stage and count progress at the last.
    Pipeline { stages: &'static [Stage], queue_capacity: usize },
    /// x264's frame-parallel encoding: thread t encodes frame t, and each macroblock row of it
    /// needs the same row of frame t - 1 done (its reference), so thread t takes a "row ready"
    /// token from thread t - 1's queue for every row it encodes. Real frame threads form a
    /// ring (the thread that finishes frame t takes frame t + threads, which references the last
    /// thread's frame), so the lags between neighbours add up to one frame: a chain whose
    /// queues hold rows_per_frame / threads rows (rounded up) stands for it.
    Wavefront { row_work: Nanos, rows_per_frame: usize },
    /// PARSEC bodytrack's worker group (TrackingBenchmark/threads/WorkerGroup.cpp): thread 0 is
    /// the main thread, which only dispatches; threads 1..=N the workers; thread N + 1 the
    /// asynchronous I/O thread that loads the next frame. For each command of a frame:
    /// - main: `SendCmd` (lock `workDispatch`, set the command, `NotifyAll`, unlock), then wait
    ///   at `poolReadyBarrier` (N + 1) for the command to end, and count it;
    /// - worker: `RecvCmd` (lock, wait while idle, unlock); worker 0 resets the ticket dispenser
    ///   (`resetDispenser`); `workInit` barrier (N); the ticket loop (`getTicket`, then the
    ///   ticket's work); `workDoneBarrier` (N); its master sets the command idle under
    ///   `workDispatch`; `poolReadyBarrier` (N + 1).
    ///
    /// The broadcast and `RecvCmd`'s predicate wait are a PARSEC barrier of N + 1 parties (a
    /// mutex and a condition variable whose last arriver, normally main, broadcasts and whose
    /// sleepers re-take the mutex one by one: the same futex traffic); the three barriers are
    /// glibc's. Between frames the I/O thread's next frame is taken from a queue of one.
    WorkerGroup {
        /// Each command of a frame, in order: its tickets and the mean computation per ticket.
        commands: &'static [(u64, Nanos)],
        /// The I/O thread's computation per frame, and the buffers it maps and frees.
        io_work: Nanos,
        io_buffers: (Event, u32),
    },
    /// PARSEC facesim's Alamere TaskQ (TaskQ/lib/taskQDistCommon.c, taskQDistFixed.c; PhysBAM's
    /// THREAD_POOL_ALAMERE.cpp): N threads, thread 0 the main thread, one task queue per thread
    /// with its own mutex, and one batch sync (a mutex, `taskAvail`, `tasksDone`, a counter).
    /// Each batch: main enqueues one task per queue (`Add_Task` -> `pickQueue`, each queue in turn, the
    /// queue's mutex around `putEntryHead`), then `taskQWait`: `signalTasks`, its own task
    /// (`doOwnTasks`: the queue's mutex around each pop, the last pop finding it empty), a second
    /// `doOwnTasks` after `stealTasks`, `waitForEnd`. A worker: `waitForTasks`, then its own
    /// task the same way. The batches of one progress unit run in turn, one task of mean
    /// `batches[b]` each (exponential).
    TaskQueue { batches: &'static [Nanos] },
}

/// A PARSEC application model: its structure and its numbers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Profile {
    /// Scenario name, `parsec.<app>`.
    pub name: &'static str,
    pub describe: &'static str,
    pub progress_unit: &'static str,
    pub shape: Shape,
    /// Shared mutexes for `Critical` events: the i-th critical section of thread t per phase
    /// uses mutex (t + i) % mutexes.
    pub mutexes: usize,
    /// Runs one thread unless the scenario says otherwise (the sequential x264 of section 4.1.2).
    pub single_threaded: bool,
    /// Which barrier the phase barrier is (`Shape::Workers`).
    pub barrier_impl: BarrierImpl,
}

/// The barrier a data-parallel application's source calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BarrierImpl {
    /// glibc's `pthread_barrier_wait` (one futex word: `Op::Barrier`), or the application's own
    /// blocking barrier of the same shape.
    Pthread,
    /// PARSEC's `parsec_barrier_wait` (`Op::ParsecBarrier`: a mutex and a condition variable).
    /// PARSEC 2.1's streamcluster.cpp and fluidanimate's pthreads.cpp include
    /// parsec_barrier.hpp, whose ENABLE_AUTOMATIC_DROPIN macros turn their pthread_barrier_*
    /// calls into parsec_barrier_*; its ENABLE_SPIN_BARRIER (defined in the header) makes it
    /// poll for up to SPIN_COUNTER_MAX = 350 * 100 iterations ("no more than 0.1 ms") before it
    /// blocks on the condition variable.
    Parsec,
}

/// A profile as a built-in workload.
pub struct Parsec(pub &'static Profile);

const WAITS: &[&str] = &["block", "spin", "spin-then-block"];

fn wait_name(wait: BarrierWait) -> &'static str {
    match wait {
        BarrierWait::Block => "block",
        BarrierWait::Spin => "spin",
        BarrierWait::SpinThenBlock(_) => "spin-then-block",
    }
}

impl Workload for Parsec {
    fn name(&self) -> &'static str {
        self.0.name
    }
    fn describe(&self) -> &'static str {
        self.0.describe
    }
    fn progress_unit(&self) -> &'static str {
        self.0.progress_unit
    }
    fn params(&self) -> Vec<ParamSpec> {
        // Only barrier applications have a knob: seed 000 Figure 10 compares streamcluster's
        // spin-then-block barrier with a block-only one.
        let Shape::Workers { barrier: Some(wait), .. } = self.0.shape else { return Vec::new() };
        let spin = match wait {
            BarrierWait::SpinThenBlock(spin) => spin,
            _ => 100 * crate::time::US,
        };
        vec![
            ParamSpec::choice(
                "wait",
                WAITS,
                wait_name(wait),
                "how a thread waits at the phase barrier: block (pthread_barrier_wait / \
                 futex_wait), spin, or spin-then-block. The default is the application's own \
                 (see its model file).",
            ),
            ParamSpec::duration(
                "spin",
                spin,
                "CPU time spun before blocking when wait = spin-then-block (streamcluster: \
                 'approximately 0.1ms', seed 000 section 4.2.3).",
            ),
        ]
    }
    fn default_threads(&self, vcpus: u32) -> u32 {
        if self.0.single_threaded {
            return 1;
        }
        match self.0.shape {
            // PARSEC's `-n N` gives every parallel stage N threads; serial stages have one.
            Shape::Pipeline { stages, .. } => stages.iter().map(|s| if s.parallel { vcpus } else { 1 }).sum(),
            // `-n N`: N workers, the main thread and the I/O thread.
            Shape::WorkerGroup { .. } => vcpus + 2,
            _ => vcpus,
        }
    }
    fn build(&self, threads: u32, params: &Params) -> Result<Program, String> {
        if threads == 0 {
            return Err(format!("{} needs at least 1 thread, got 0", self.0.name));
        }
        let p = self.0;
        let mut program = Program::new(p.progress_unit);
        program.mutexes = p.mutexes;
        match p.shape {
            Shape::Workers { work, spread, events, rare, barrier } => {
                let wait = barrier.map(|_| barrier_wait(params)).transpose()?;
                if wait.is_some() {
                    program.barriers = vec![threads as usize];
                }
                let parsec = p.barrier_impl == BarrierImpl::Parsec;
                program.threads =
                    (0..threads as usize).map(|t| vec![worker_loop(p, t, work, spread, events, rare, wait, parsec)]).collect();
            }
            Shape::Pipeline { stages, queue_capacity } => {
                let groups = stage_groups(stages.len(), threads as usize);
                let per_group = threads_per_group(stages, &groups, threads as usize);
                program.queues = vec![queue_capacity; groups.len() - 1];
                let mut t = 0;
                for (g, range) in groups.iter().enumerate() {
                    for _ in 0..per_group[g] {
                        let mut body = Vec::new();
                        if g > 0 {
                            body.push(Op::QueueGet(g - 1));
                        }
                        for s in &stages[range.clone()] {
                            body.extend(spread_events(p, t, s.work, Spread::Exp, s.events));
                        }
                        body.push(if g + 1 < groups.len() { Op::QueuePut(g) } else { Op::Progress });
                        program.threads.push(vec![Op::Loop { count: None, body }]);
                        t += 1;
                    }
                }
            }
            Shape::WorkerGroup { commands, io_work, io_buffers } => {
                if threads < 3 {
                    return Err(format!("{} needs at least 3 threads (main, a worker, the I/O thread), got {threads}", p.name));
                }
                worker_group(&mut program, p, threads as usize - 2, commands, io_work, io_buffers);
            }
            Shape::TaskQueue { batches } => task_queue(&mut program, threads as usize, batches),
            Shape::Wavefront { row_work, rows_per_frame } => {
                let n = threads as usize;
                program.queues = vec![rows_per_frame.div_ceil(n).max(1); n - 1];
                program.threads = (0..n)
                    .map(|t| {
                        let mut body = Vec::new();
                        if t > 0 {
                            body.push(Op::QueueGet(t - 1));
                        }
                        body.push(Op::Compute(Dist::Exp { mean: row_work }));
                        body.push(if t + 1 < n { Op::QueuePut(t) } else { Op::Progress });
                        vec![Op::Loop { count: None, body }]
                    })
                    .collect();
            }
        }
        Ok(program)
    }
}

/// The threads of a `Shape::WorkerGroup` with `n` workers (see there). Objects: mutex 0 is
/// `workDispatch`; barriers 0 (the dispatch, N + 1, PARSEC form), 1 (`workInit`, N), 2
/// (`workDoneBarrier`, N), 3 (`poolReadyBarrier`, N + 1); dispenser 0; queue 0 (the loaded
/// frame).
fn worker_group(program: &mut Program, p: &Profile, n: usize, commands: &[(u64, Nanos)], io_work: Nanos, io_buffers: (Event, u32)) {
    let block = BarrierWait::Block;
    program.mutexes = 1;
    program.barriers = vec![n + 1, n, n, n + 1];
    program.dispensers = 1;
    program.queues = vec![1];
    let dispatch = Op::ParsecBarrier { barrier: 0, wait: block };
    let pool_ready = Op::Barrier { barrier: 3, wait: block };
    // Main: take the next frame's images, then dispatch each command and wait for it.
    let mut main = vec![Op::QueueGet(0)];
    for _ in commands {
        main.extend([dispatch.clone(), pool_ready.clone(), Op::Progress]);
    }
    program.threads.push(vec![Op::Loop { count: None, body: main }]);
    for w in 0..n {
        let mut frame = Vec::new();
        for &(tickets, ticket_work) in commands {
            frame.push(dispatch.clone());
            if w == 0 {
                frame.push(Op::ResetTickets { dispenser: 0, count: tickets });
            }
            frame.extend([
                Op::Barrier { barrier: 1, wait: block },
                Op::Tickets { dispenser: 0, body: vec![Op::Compute(Dist::Exp { mean: ticket_work })] },
                Op::Barrier { barrier: 2, wait: block },
            ]);
            if w == 0 {
                frame.extend([Op::MutexLock(0), Op::MutexUnlock(0)]);
            }
            frame.push(pool_ready.clone());
        }
        program.threads.push(vec![Op::Loop { count: None, body: frame }]);
    }
    // The I/O thread: load a frame (its buffers, its decoding), hand it over, and the next.
    let (event, count) = io_buffers;
    let mut io = spread_events(p, n + 1, io_work, Spread::Exp, &[(event, count)]);
    io.push(Op::QueuePut(0));
    program.threads.push(vec![Op::Loop { count: None, body: io }]);
}

/// The threads of a `Shape::TaskQueue` of `n` threads (see there). Objects: task queue q under
/// mutex q, TaskQ sync 0 of all `n` threads. A thread that finds its own queue empty steals
/// (`stealTasks`): a task still in another thread's queue (its thread not yet running, say its
/// vCPU preempted) is taken by the first thread that looks.
fn task_queue(program: &mut Program, n: usize, batches: &[Nanos]) {
    program.mutexes = n;
    program.task_syncs = vec![n];
    program.task_queues = (0..n).collect();
    // Main: taskQInit's waitForEnd (every worker arrived), then the batches: a task per queue
    // (`Add_Task` -> `pickQueue`: each queue in turn), then `taskQWait`: signalTasks, doOwnTasks,
    // stealTasks, doOwnTasks, waitForEnd.
    let mut iteration = Vec::new();
    for &work in batches {
        iteration.extend((0..n).map(Op::TaskqPut));
        iteration.push(Op::TaskqSignal(0));
        iteration.push(Op::TaskqOwn { queue: 0, work });
        iteration.push(Op::TaskqSteal { queue: 0, work, repeat: false });
        iteration.push(Op::TaskqOwn { queue: 0, work });
        iteration.push(Op::TaskqWaitForEnd(0));
    }
    iteration.push(Op::Progress);
    program.threads.push(vec![Op::TaskqWaitForEnd(0), Op::Loop { count: None, body: iteration }]);
    // A worker (`taskQIdleLoop`): wait for the batch's signal (its first wait also counts it in
    // for taskQInit), its own tasks, then steal and run until a pass over the other queues finds nothing; the batches
    // in main's order.
    for q in 1..n {
        let mut body = Vec::new();
        for &work in batches {
            body.push(Op::TaskqWaitForTasks(0));
            body.push(Op::TaskqOwn { queue: q, work });
            body.push(Op::TaskqSteal { queue: q, work, repeat: true });
        }
        program.threads.push(vec![Op::Loop { count: None, body }]);
    }
}

/// The barrier wait the scenario chose; profiles with a barrier always declare `wait` and
/// `spin` (see `params`), with the profile's own wait as the default.
fn barrier_wait(params: &Params) -> Result<BarrierWait, String> {
    match params.choice("wait") {
        "block" => Ok(BarrierWait::Block),
        "spin" => Ok(BarrierWait::Spin),
        "spin-then-block" => Ok(BarrierWait::SpinThenBlock(params.duration("spin"))),
        other => Err(format!("wait must be one of {}, got {other:?}", WAITS.join(", "))),
    }
}

/// A worker's endless loop: phases, each ending at the barrier; thread 0 counts a phase when
/// there is a barrier (all threads finished it), every thread counts its own otherwise.
#[allow(clippy::too_many_arguments)]
fn worker_loop(
    p: &Profile,
    t: usize,
    work: Nanos,
    spread: Spread,
    events: &[(Event, u32)],
    rare: Option<(Event, u32)>,
    wait: Option<BarrierWait>,
    parsec_barrier: bool,
) -> Op {
    let mut phase = spread_events(p, t, work, spread, events);
    if let Some(wait) = wait {
        phase.push(if parsec_barrier { Op::ParsecBarrier { barrier: 0, wait } } else { Op::Barrier { barrier: 0, wait } });
    }
    if wait.is_none() || t == 0 {
        phase.push(Op::Progress);
    }
    let body = match rare {
        Some((event, every)) if every > 1 => {
            let mut body = vec![Op::Loop { count: Some(u64::from(every)), body: phase }];
            body.extend(event_ops(p, t, 0, event));
            body
        }
        Some((event, _)) => {
            phase.extend(event_ops(p, t, 0, event));
            phase
        }
        None => phase,
    };
    Op::Loop { count: None, body }
}

/// `work` of computation cut into equal pieces with the events between them. Events of each
/// kind are spaced evenly (the k-th of n sits at (k + 0.5) / n of the way), ties in list order.
fn spread_events(p: &Profile, t: usize, work: Nanos, spread: Spread, events: &[(Event, u32)]) -> Vec<Op> {
    let mut slots: Vec<(f64, usize, Event)> = Vec::new();
    for (kind, (event, n)) in events.iter().enumerate() {
        for k in 0..*n {
            slots.push(((k as f64 + 0.5) / *n as f64, kind, *event));
        }
    }
    slots.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let piece = work / (slots.len() as u64 + 1);
    let compute = |ns: Nanos| match spread {
        Spread::Exp => Dist::Exp { mean: ns },
        Spread::Uniform(f) => {
            let delta = (ns as f64 * f).round() as Nanos;
            if delta == 0 {
                Dist::Const(ns)
            } else {
                Dist::Uniform { lo: ns - delta.min(ns), hi: ns + delta }
            }
        }
    };
    let mut ops = Vec::new();
    let mut criticals = 0;
    for (_, _, event) in &slots {
        if piece > 0 {
            ops.push(Op::Compute(compute(piece)));
        }
        ops.extend(event_ops(p, t, criticals, *event));
        criticals += usize::from(matches!(event, Event::Critical { .. }));
    }
    if piece > 0 || ops.is_empty() {
        ops.push(Op::Compute(compute(piece.max(1))));
    }
    ops
}

/// The ops of one event; `i` numbers the thread's critical sections within the phase.
fn event_ops(p: &Profile, t: usize, i: usize, event: Event) -> Vec<Op> {
    match event {
        Event::Critical { hold } => {
            let m: ObjIndex = (t + i) % p.mutexes.max(1);
            vec![Op::MutexLock(m), Op::Compute(Dist::Const(hold)), Op::MutexUnlock(m)]
        }
        Event::Buffer { pages, touch } => {
            vec![Op::Mmap { pages }, Op::Compute(Dist::Const(touch)), Op::Munmap { pages }]
        }
    }
}

/// Which stages each thread group runs: one stage per group when there are enough threads,
/// otherwise neighbouring stages fused so that `threads` groups cover them all.
fn stage_groups(stages: usize, threads: usize) -> Vec<std::ops::Range<usize>> {
    let groups = stages.min(threads);
    (0..groups).map(|g| g * stages / groups..(g + 1) * stages / groups).collect()
}

/// Threads of each group: one for a serial stage, the rest shared round-robin among the
/// parallel ones (all groups when fused or when nothing is parallel).
fn threads_per_group(stages: &[Stage], groups: &[std::ops::Range<usize>], threads: usize) -> Vec<usize> {
    let mut counts = vec![1; groups.len()];
    let parallel: Vec<usize> = (0..groups.len()).filter(|g| groups[*g].len() > 1 || stages[groups[*g].start].parallel).collect();
    let pool = if parallel.is_empty() { (0..groups.len()).collect() } else { parallel };
    for i in 0..threads - groups.len() {
        counts[pool[i % pool.len()]] += 1;
    }
    counts
}

/// TLB-shootdown IPIs per second per vCPU estimated from seed 000 Table 1 for an application
/// whose rate the text does not give: its share of CPU in TLB shootdown (corun) scaled by vips'
/// rate per unit of share (1350 IPIs/s/vCPU for 41.35%). A rough estimate (applied to ferret,
/// 8.5%, it gives 278 for a measured 443), used only where nothing better exists.
pub fn tlb_rate_from_table1(tlb_share_percent: f64) -> f64 {
    tlb_share_percent * vips::SOLO_TLB_IPIS_PER_VCPU / vips::TABLE1_TLB_SHARE
}

/// Registered workloads, in `vcpusim list` order.
pub static BLACKSCHOLES: Parsec = Parsec(&blackscholes::PROFILE);
pub static BODYTRACK: Parsec = Parsec(&bodytrack::PROFILE);
pub static CANNEAL: Parsec = Parsec(&canneal::PROFILE);
pub static DEDUP: Parsec = Parsec(&dedup::PROFILE);
pub static FACESIM: Parsec = Parsec(&facesim::PROFILE);
pub static FERRET: Parsec = Parsec(&ferret::PROFILE);
pub static FLUIDANIMATE: Parsec = Parsec(&fluidanimate::PROFILE);
pub static FREQMINE: Parsec = Parsec(&freqmine::PROFILE);
pub static RAYTRACE: Parsec = Parsec(&raytrace::PROFILE);
pub static STREAMCLUSTER: Parsec = Parsec(&streamcluster::PROFILE);
pub static SWAPTIONS: Parsec = Parsec(&swaptions::PROFILE);
pub static VIPS: Parsec = Parsec(&vips::PROFILE);
pub static X264: Parsec = Parsec(&x264::PROFILE);
pub static X264_SINGLE: Parsec = Parsec(&x264_single::PROFILE);

#[cfg(test)]
pub(crate) mod model_tests {
    //! Shared checks of the model files.
    use super::*;
    use crate::hardware::costs::Costs;
    use crate::time::SEC;
    use crate::workload::builtin::test_support::*;

    /// Kernel work per page of mmap/munmap, as guest/interpreter.rs charges it.
    const MM_WORK_PER_PAGE: f64 = 250.0;

    /// Build with the default thread count for an 8-vCPU VM and check the program.
    pub fn build_default(w: &Parsec) -> Program {
        assert_defaults_parse(w);
        let threads = w.default_threads(8);
        build_valid(w, threads, &Params::defaults(&w.params()))
    }

    /// Solo TLB-shootdown IPIs/s/vCPU of a data-parallel model with one thread per vCPU on
    /// `n` vCPUs, from its phase: the arithmetic of workload/builtin/tlb.rs (each munmap sends
    /// n - 1 IPIs; a period is the phase's CPU time plus handling the others' shootdowns plus
    /// the initiator's wait, `wait_ns`).
    pub fn workers_tlb_rate(p: &Profile, n: f64, wait_ns: f64) -> f64 {
        let Shape::Workers { work, events, rare, .. } = p.shape else { panic!("{} is not data-parallel", p.name) };
        let costs = Costs::default();
        let mut period = work as f64;
        let mut shootdowns = 0.0;
        let mut add = |event: &Event, times: f64| {
            if let Event::Buffer { pages, touch } = event {
                let mm = 2.0 * (costs.syscall as f64 + *pages as f64 * MM_WORK_PER_PAGE);
                let handle = (n - 1.0) * (costs.ipi_handler + *pages as u64 * costs.tlb_flush_per_page) as f64;
                period += times * (*touch as f64 + mm + handle + wait_ns);
                shootdowns += times;
            }
            if let Event::Critical { hold } = event {
                period += times * *hold as f64;
            }
        };
        for (e, k) in events {
            add(e, *k as f64);
        }
        if let Some((e, every)) = rare {
            add(&e, 1.0 / every as f64);
        }
        shootdowns * (n - 1.0) * SEC as f64 / period
    }

    /// All ops of a thread, loops flattened (for structure checks).
    pub fn flat(ops: &[Op]) -> Vec<Op> {
        let mut out = Vec::new();
        for op in ops {
            match op {
                Op::Loop { body, .. } => out.extend(flat(body)),
                other => out.push(other.clone()),
            }
        }
        out
    }

    pub fn count(ops: &[Op], pred: impl Fn(&Op) -> bool) -> usize {
        flat(ops).iter().filter(|op| pred(op)).count()
    }

    #[test]
    fn events_are_spread_evenly_between_equal_pieces_of_work() {
        static P: Profile = Profile {
            name: "parsec.test",
            describe: "test",
            progress_unit: "phases",
            shape: Shape::Workers { work: 0, spread: Spread::Exp, events: &[], rare: None, barrier: None },
            mutexes: 2,
            single_threaded: false,
            barrier_impl: BarrierImpl::Pthread,
        };
        let buffer = Event::Buffer { pages: 4, touch: 10 };
        let critical = Event::Critical { hold: 5 };
        let ops = spread_events(&P, 1, 600, Spread::Exp, &[(critical, 2), (buffer, 1)]);
        let exp = Op::Compute(Dist::Exp { mean: 150 });
        // Critical sections at 1/4 and 3/4, the buffer at 1/2; thread 1 starts at mutex 1.
        let expected = [
            exp.clone(),
            Op::MutexLock(1),
            Op::Compute(Dist::Const(5)),
            Op::MutexUnlock(1),
            exp.clone(),
            Op::Mmap { pages: 4 },
            Op::Compute(Dist::Const(10)),
            Op::Munmap { pages: 4 },
            exp.clone(),
            Op::MutexLock(0),
            Op::Compute(Dist::Const(5)),
            Op::MutexUnlock(0),
            exp,
        ];
        assert_eq!(ops, expected);
    }

    #[test]
    fn pipeline_threads_fill_parallel_stages_and_fuse_stages_when_short_of_threads() {
        let stage = |parallel| Stage { name: "s", parallel, work: 10, events: &[] };
        let stages = [stage(false), stage(true), stage(true), stage(false)];
        let groups = stage_groups(4, 10);
        assert_eq!(threads_per_group(&stages, &groups, 10), [1, 4, 4, 1]);
        let groups = stage_groups(4, 2);
        assert_eq!(groups, [0..2, 2..4]);
        assert_eq!(threads_per_group(&stages, &groups, 2), [1, 1]);
        assert_eq!(stage_groups(4, 3), [0..1, 1..2, 2..4]);
    }

    #[test]
    fn every_model_builds_for_an_8_vcpu_vm_and_for_odd_thread_counts() {
        for w in [
            &BLACKSCHOLES, &BODYTRACK, &CANNEAL, &DEDUP, &FACESIM, &FERRET, &FLUIDANIMATE, &FREQMINE, &RAYTRACE, &STREAMCLUSTER,
            &SWAPTIONS, &VIPS, &X264, &X264_SINGLE,
        ] {
            assert!(w.name().starts_with("parsec."), "{}", w.name());
            build_default(w);
            for threads in [1, 2, 3, 5, 13] {
                if matches!(w.0.shape, Shape::WorkerGroup { .. }) && threads < 3 {
                    // Main, a worker and the I/O thread at least.
                    let err = w.build(threads, &Params::defaults(&w.params())).unwrap_err();
                    assert!(err.contains("at least 3 threads"), "{err}");
                    continue;
                }
                build_valid(w, threads, &Params::defaults(&w.params()));
            }
            assert!(w.build(0, &Params::defaults(&w.params())).unwrap_err().contains("at least 1 thread"));
        }
    }
}
