//! NAS Parallel Benchmarks 3.3, OpenMP version, class A (`npb.<name>`), one file per benchmark.
//!
//! Seed 004 (`004_2f4d1756ca892fd2.txt`) section 6.2 runs them with 4 threads in a 4-vCPU VM
//! (Figures 5, 6, 9, 10b, 11) as its "concurrent" workloads, and section 6.3 motivates PCPS by
//! the master thread's sequential parts. Each file holds a [`Profile`]: what one time step does,
//! as a sequence of OpenMP constructs ([`Region`]), with the numbers and their sources. This
//! file turns a profile into a run-to-completion [`Program`].
//!
//! Structure common to every model (from the NPB3.3-OMP sources, e.g. `LU/lu.f`, `SP/sp.f`):
//! - **initialization** by the master before the first parallel region (input, constants,
//!   timers; [`Profile::init`]); the other threads wait at the team barrier that stands for the
//!   first fork;
//! - one untimed **warm-up step** where the source does one ("perform one SSOR iteration to
//!   touch all data pages", `lu.f`; "do one time step to touch all code", `sp.f`);
//! - the **time steps**: each is the master's serial part (loop control, timers, convergence
//!   check between parallel regions: `serial` of the step's work, then the fork barrier) and the
//!   regions; `!$omp do` without `nowait` and `!$omp end parallel` end in a barrier of all
//!   threads; `progress` counts time steps (thread 0 after the step's last barrier);
//! - **verification** by the master alone ([`Profile::verify`]); the last step is counted only
//!   after it, so a scenario with `iterations = steps` finishes exactly when the benchmark ends
//!   and reports its runtime as `completion_time_ms`.
//!
//! **OpenMP barrier kind** (`wait`): the seed's guests ran Fedora Core 6 (section 6.1), whose
//! GCC 4.1 carries the GCC 4.2 libgomp, where `gomp_barrier_wait_end` (config/linux/bar.c)
//! calls `futex_wait` at once: the default is `block` (assumed: the seed does not name its
//! compiler). GCC >= 4.4 libgomp spins GOMP_SPINCOUNT = 300,000 polls first (libgomp
//! `env.c`, when OMP_WAIT_POLICY is unset and threads <= CPUs): about 1 ms of a load + pause
//! loop on a 2.33 GHz Core 2 (assumed ~8 cycles per poll) — `wait = "spin-then-block"` with the
//! default `spin`. Intel's runtime spins KMP_BLOCKTIME = 200 ms: set `spin = "200ms"`.
//!
//! **Work**: one time step is the class-A serial runtime of the timed part divided by the step
//! count ([`Profile::serial_runtime`]), on one core of the seed's machine (Xeon X5410, 2.33 GHz,
//! section 6.1). The seed gives no runtimes in its text; each file derives its serial runtime
//! from the benchmark's operation count (the Mop formula of its `print_results` call) and an
//! assumed single-core rate, and says so. Speedup is perfect apart from synchronization: the
//! X5410's shared memory bus, which limits real 4-thread speedups, is not modelled.
//!
//! **Load imbalance**: each piece of work is uniform in mean x (1 +- [`Profile::imbalance`]),
//! assumed 5%: `schedule(static)` gives equal blocks; the spread stands for cache and memory
//! effects.

pub mod bt;
pub mod cg;
pub mod dc;
pub mod ep;
pub mod ft;
pub mod is;
pub mod lu;
pub mod mg;
pub mod omp_wait;
pub mod sp;
pub mod ua;

use crate::params::{ParamSpec, Params};
use crate::time::{Nanos, MS, SEC};
use crate::workload::program::{BarrierWait, Dist, ObjIndex, Op, Program};
use crate::workload::Workload;

/// One OpenMP construct of a time step, with its share of the step's parallel work.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Region {
    /// Work split into `barriers` equal phases, each ending in a barrier of all threads (an
    /// `!$omp do` without `nowait`, or the join of `!$omp end parallel`).
    Parallel { share: f64, barriers: u32 },
    /// A pipelined wavefront sweep over `planes` planes (LU's `blts`/`buts`): thread t works on
    /// its block of plane k once its neighbour finished plane k, a point-to-point flag handed
    /// over with busy waiting (`sync_left` / `sync_right` in NPB3.3-OMP LU), then a barrier.
    /// Forward sweeps wait for thread t - 1, reverse sweeps for thread t + 1.
    Wavefront { share: f64, planes: u32, reverse: bool },
    /// Work with `writes` write(2) calls spread through it (per VM, shared among the threads),
    /// each `write_work` of kernel CPU, then a barrier. Disk waits are not modelled (the model
    /// has no blocking I/O op).
    Io { share: f64, writes: u32, write_work: Nanos },
}

impl Region {
    pub fn share(&self) -> f64 {
        match *self {
            Region::Parallel { share, .. } | Region::Wavefront { share, .. } | Region::Io { share, .. } => share,
        }
    }
    /// Barriers of all threads this region ends phases with.
    pub fn barriers(&self) -> u64 {
        match *self {
            Region::Parallel { barriers, .. } => u64::from(barriers),
            Region::Wavefront { .. } | Region::Io { .. } => 1,
        }
    }
}

/// An NPB benchmark model: its structure and its numbers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Profile {
    /// Scenario name, `npb.<bench>`.
    pub name: &'static str,
    pub describe: &'static str,
    pub progress_unit: &'static str,
    /// Class-A time steps (iterations) of the timed part.
    pub steps: u64,
    /// Class-A serial runtime of the timed part on one core of the seed's machine.
    pub serial_runtime: Nanos,
    /// One time step, in program order; shares add up to 1.
    pub step: &'static [Region],
    /// Share of each step's work the master runs alone outside parallel regions.
    pub serial: f64,
    /// Master-only initialization before the first parallel region.
    pub init: Nanos,
    /// One untimed step before the timed ones.
    pub warmup: bool,
    /// Master-only verification after the last step.
    pub verify: Nanos,
    /// Half-width of the uniform spread of each piece of work, as a fraction of it.
    pub imbalance: f64,
}

impl Profile {
    /// Barriers of all threads per time step (with the serial part's fork when it has one).
    pub fn barriers_per_step(&self, serial: f64) -> u64 {
        self.step.iter().map(Region::barriers).sum::<u64>() + u64::from(serial > 0.0)
    }
    /// Point-to-point flag hand-overs per step between one pair of neighbouring threads.
    pub fn handoffs_per_step(&self) -> u64 {
        self.step
            .iter()
            .map(|r| match *r {
                Region::Wavefront { planes, .. } => u64::from(planes),
                _ => 0,
            })
            .sum()
    }
}

/// A profile as a built-in workload.
pub struct Npb(pub &'static Profile);

const WAITS: &[&str] = &["block", "spin", "spin-then-block", "active", "passive"];

/// GOMP_SPINCOUNT's 300,000 polls on the seed's 2.33 GHz Xeon, assumed ~8 cycles each.
pub const GOMP_SPIN: Nanos = MS;

impl Workload for Npb {
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
        let p = self.0;
        vec![
            ParamSpec::int("steps", p.steps, "time steps of the timed part; the default is class A's (see the model file).").at_least(1.0),
            ParamSpec::float(
                "scale",
                1.0,
                "fraction of class A's work per step, initialization and verification (1 = class A \
                 on the seed's Xeon X5410; smaller values shorten runs without changing the \
                 synchronization structure).",
            )
            .range(1e-6, 1.0),
            ParamSpec::float(
                "serial",
                p.serial,
                "share of each step's work the master thread runs alone between parallel regions \
                 (loop control, timers, convergence checks); the default is the model's estimate \
                 from the NPB3.3-OMP source. Seed 004 section 6.3 sets u-factor 0.25 'according \
                 to the proportion of the sequential part', a far larger part than the source shows.",
            )
            .range(0.0, 0.9),
            ParamSpec::choice(
                "wait",
                WAITS,
                "block",
                "how threads wait at OpenMP barriers: block (futex_wait at once: GCC 4.2 libgomp, \
                 as in the seed's Fedora Core 6; assumed), spin, or spin-then-block (GCC >= 4.4 \
                 libgomp, GOMP_SPINCOUNT; Intel KMP_BLOCKTIME); active / passive: GCC >= 4.4 \
                 libgomp under OMP_WAIT_POLICY=active (3e10 polls, 300 s, then block: seed 003's \
                 spinning NPB) or passive (block at once); see npb/omp_wait.rs. LU's \
                 point-to-point flags always spin.",
            ),
            ParamSpec::duration(
                "spin",
                GOMP_SPIN,
                "CPU time spun before blocking when wait = spin-then-block: 1ms ~ GOMP_SPINCOUNT's \
                 300,000 polls on a 2.33 GHz Core 2 (assumed ~8 cycles per poll); Intel: 200ms.",
            ),
            ParamSpec::int(
                "rounds",
                1,
                "benchmark runs back to back (seed 004 section 6.4 repeats each workload with a \
                 batch program); 0 repeats forever. Progress counts time steps over all rounds.",
            ),
        ]
    }
    fn build(&self, threads: u32, params: &Params) -> Result<Program, String> {
        let p = self.0;
        if threads == 0 {
            return Err(format!("{} needs at least 1 thread, got 0", p.name));
        }
        let steps = params.int("steps");
        if steps == 0 {
            return Err(format!("{}: steps must be at least 1, got 0", p.name));
        }
        let scale = params.float("scale");
        if !(scale > 0.0 && scale <= 1.0) {
            return Err(format!("{}: scale must be in (0, 1], got {scale}", p.name));
        }
        let serial = params.float("serial");
        if !(0.0..=0.9).contains(&serial) {
            return Err(format!("{}: serial must be between 0 and 0.9, got {serial}", p.name));
        }
        let wait = match params.choice("wait") {
            "block" => BarrierWait::Block,
            "spin" => BarrierWait::Spin,
            "spin-then-block" => BarrierWait::SpinThenBlock(params.duration("spin")),
            "active" => omp_wait::WaitPolicy::Active.barrier_wait(),
            "passive" => omp_wait::WaitPolicy::Passive.barrier_wait(),
            other => return Err(format!("{}: wait must be one of {}, got {other:?}", p.name, WAITS.join(", "))),
        };
        let rounds = params.int("rounds");
        let n = threads as usize;
        let builder = Builder { p, n, wait, serial, step_work: p.serial_runtime as f64 * scale / p.steps as f64 };
        let mut program = Program::new(p.progress_unit);
        let waves = p.step.iter().any(|r| matches!(r, Region::Wavefront { .. }));
        // Barrier 0: the team. Then, for wavefronts, one two-party flag per neighbouring pair,
        // per sweep direction.
        program.barriers = vec![n];
        if waves && n > 1 {
            program.barriers.extend(std::iter::repeat_n(2, 2 * (n - 1)));
        }
        let init = (p.init as f64 * scale).round() as Nanos;
        let verify = (p.verify as f64 * scale).round() as Nanos;
        program.threads = (0..n)
            .map(|t| {
                let mut round = Vec::new();
                if t == 0 && init > 0 {
                    round.push(Op::Compute(Dist::Const(init)));
                }
                round.push(builder.team());
                if p.warmup {
                    round.extend(builder.step(t));
                }
                if steps > 1 {
                    let mut body = builder.step(t);
                    if t == 0 {
                        body.push(Op::Progress);
                    }
                    round.push(Op::Loop { count: Some(steps - 1), body });
                }
                round.extend(builder.step(t));
                if t == 0 {
                    if verify > 0 {
                        round.push(Op::Compute(Dist::Const(verify)));
                    }
                    round.push(Op::Progress);
                }
                match rounds {
                    1 => round,
                    0 => vec![Op::Loop { count: None, body: round }],
                    r => vec![Op::Loop { count: Some(r), body: round }],
                }
            })
            .collect();
        Ok(program)
    }
}

/// Turns one profile's regions into a thread's ops.
struct Builder {
    p: &'static Profile,
    n: usize,
    wait: BarrierWait,
    serial: f64,
    /// Serial (one-thread) work of one time step, ns.
    step_work: f64,
}

impl Builder {
    fn team(&self) -> Op {
        Op::Barrier { barrier: 0, wait: self.wait }
    }

    /// A piece of computation of mean `ns`, spread by the profile's imbalance.
    fn compute(&self, ns: f64) -> Op {
        let mean = ns.round().max(1.0) as Nanos;
        let delta = (mean as f64 * self.p.imbalance).round() as Nanos;
        if delta == 0 {
            Op::Compute(Dist::Const(mean))
        } else {
            Op::Compute(Dist::Uniform { lo: mean - delta.min(mean), hi: mean + delta })
        }
    }

    /// The two-party flag between threads `a` and `a + 1` for a sweep direction.
    fn flag(&self, a: usize, reverse: bool) -> Op {
        let base = if reverse { self.n } else { 1 };
        let barrier: ObjIndex = base + a;
        // The flags are `do while (isync(...) ...) ; !$omp flush` loops: pure spinning.
        Op::Barrier { barrier, wait: BarrierWait::Spin }
    }

    /// One time step of thread `t` (without its progress count).
    fn step(&self, t: usize) -> Vec<Op> {
        let n = self.n as f64;
        let parallel = self.step_work * (1.0 - self.serial);
        let mut ops = Vec::new();
        if self.serial > 0.0 {
            if t == 0 {
                ops.push(self.compute(self.step_work * self.serial));
            }
            ops.push(self.team());
        }
        for region in self.p.step {
            let work = parallel * region.share() / n;
            match *region {
                Region::Parallel { barriers, .. } => {
                    let phase = vec![self.compute(work / f64::from(barriers)), self.team()];
                    if barriers == 1 {
                        ops.extend(phase);
                    } else {
                        ops.push(Op::Loop { count: Some(u64::from(barriers)), body: phase });
                    }
                }
                Region::Wavefront { planes, reverse, .. } => {
                    let last = self.n - 1;
                    let mut plane = Vec::new();
                    let (waits_on, signals) = if reverse {
                        ((t < last).then_some(t), (t > 0).then(|| t - 1))
                    } else {
                        ((t > 0).then(|| t - 1), (t < last).then_some(t))
                    };
                    if let Some(a) = waits_on {
                        plane.push(self.flag(a, reverse));
                    }
                    plane.push(self.compute(work / f64::from(planes)));
                    if let Some(a) = signals {
                        plane.push(self.flag(a, reverse));
                    }
                    ops.push(Op::Loop { count: Some(u64::from(planes)), body: plane });
                    ops.push(self.team());
                }
                Region::Io { writes, write_work, .. } => {
                    // Thread t takes writes t, t + n, ... (round-robin, like schedule(static,1)).
                    let mine = (writes as usize + self.n - 1 - t) / self.n;
                    let piece = work / (mine as f64 + 1.0);
                    for _ in 0..mine {
                        ops.push(self.compute(piece));
                        ops.push(Op::kernel(Dist::Const(write_work)));
                    }
                    ops.push(self.compute(piece));
                    ops.push(self.team());
                }
            }
        }
        ops
    }
}

/// Seconds as ns, for the profiles' runtimes.
pub const fn secs(s: u64) -> Nanos {
    s * SEC
}

/// Registered workloads, in `vcpusim list` order.
pub static BT: Npb = Npb(&bt::PROFILE);
pub static CG: Npb = Npb(&cg::PROFILE);
pub static DC: Npb = Npb(&dc::PROFILE);
pub static EP: Npb = Npb(&ep::PROFILE);
pub static FT: Npb = Npb(&ft::PROFILE);
pub static IS: Npb = Npb(&is::PROFILE);
pub static LU: Npb = Npb(&lu::PROFILE);
pub static MG: Npb = Npb(&mg::PROFILE);
pub static SP: Npb = Npb(&sp::PROFILE);
pub static UA: Npb = Npb(&ua::PROFILE);

/// All models, for tests.
pub static ALL_NPB: [&Npb; 10] = [&BT, &CG, &DC, &EP, &FT, &IS, &LU, &MG, &SP, &UA];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::builtin::test_support::*;

    /// All ops of a thread with loops unrolled, counting repetitions.
    fn unrolled(ops: &[Op]) -> Vec<Op> {
        let mut out = Vec::new();
        for op in ops {
            match op {
                Op::Loop { count: Some(c), body } => {
                    let inner = unrolled(body);
                    for _ in 0..*c {
                        out.extend(inner.iter().cloned());
                    }
                }
                Op::Loop { count: None, .. } => panic!("endless loop"),
                other => out.push(other.clone()),
            }
        }
        out
    }

    #[test]
    fn every_profile_shares_its_step_whole_and_builds_for_odd_thread_counts() {
        for w in ALL_NPB {
            let total: f64 = w.0.step.iter().map(Region::share).sum();
            assert!((total - 1.0).abs() < 1e-9, "{}: shares add up to {total}", w.name());
            assert!(w.name().starts_with("npb."));
            assert_defaults_parse(w);
            for threads in [1, 2, 3, 4, 8] {
                build_valid(w, threads, &Params::defaults(&w.params()));
            }
            assert!(w.build(0, &Params::defaults(&w.params())).unwrap_err().contains("at least 1 thread"));
        }
    }

    #[test]
    fn the_program_is_init_warmup_steps_and_verification_with_one_progress_per_step() {
        let params = params_with(&LU, &[("steps", toml::Value::Integer(5)), ("scale", 0.01.into())]);
        let program = build_valid(&LU, 4, &params);
        let master = unrolled(&program.threads[0]);
        let worker = unrolled(&program.threads[2]);
        assert_eq!(master.iter().filter(|op| **op == Op::Progress).count(), 5);
        assert_eq!(*master.last().unwrap(), Op::Progress);
        // The master initializes before the first barrier and verifies after the last one.
        assert!(matches!(master[0], Op::Compute(Dist::Const(_))));
        assert!(matches!(master[master.len() - 2], Op::Compute(Dist::Const(_))));
        assert!(matches!(worker[0], Op::Barrier { barrier: 0, .. }));
        let team = |ops: &[Op]| ops.iter().filter(|op| matches!(op, Op::Barrier { barrier: 0, .. })).count() as u64;
        let per_step = lu::PROFILE.barriers_per_step(lu::PROFILE.serial);
        // Warm-up step + 5 timed steps + the first fork.
        assert_eq!(team(&master), 1 + 6 * per_step);
        assert_eq!(team(&worker), team(&master));
    }

    #[test]
    fn wavefront_threads_wait_for_their_left_neighbour_going_down_and_right_going_up() {
        let params = params_with(&LU, &[("steps", toml::Value::Integer(1))]);
        let program = build_valid(&LU, 4, &params);
        let flags = |t: usize| -> Vec<usize> {
            unrolled(&program.threads[t])
                .iter()
                .filter_map(|op| match op {
                    Op::Barrier { barrier, wait: BarrierWait::Spin } => Some(*barrier),
                    _ => None,
                })
                .collect()
        };
        let planes = 62;
        // Thread 0 only signals (flag 1 down, flag 4 up is thread 0..1's reverse flag).
        let t0 = flags(0);
        assert_eq!(t0.len(), 2 * 2 * planes, "two sweeps, warm-up + one step");
        assert!(t0.iter().all(|b| *b == 1 || *b == 4));
        // Thread 1: waits on flag 1 and signals flag 2 going down; mirrored going up.
        let t1 = flags(1);
        assert_eq!(&t1[..3], &[1, 2, 1]);
        assert_eq!(&t1[2 * planes..2 * planes + 3], &[5, 4, 5]);
        assert_eq!(program.barriers, vec![4, 2, 2, 2, 2, 2, 2]);
    }

    #[test]
    fn rounds_repeat_the_whole_benchmark_and_bad_values_are_rejected() {
        let forever = build_valid(&EP, 4, &params_with(&EP, &[("rounds", toml::Value::Integer(0))]));
        assert!(matches!(forever.threads[0][..], [Op::Loop { count: None, .. }]));
        let three = build_valid(&EP, 4, &params_with(&EP, &[("rounds", toml::Value::Integer(3))]));
        assert!(matches!(three.threads[1][..], [Op::Loop { count: Some(3), .. }]));
        let spec = |name: &str| LU.params().into_iter().find(|s| s.name == name).unwrap();
        assert!(spec("scale").parse(&0.0.into()).is_err());
        assert!(spec("steps").parse(&toml::Value::Integer(0)).is_err());
        assert!(spec("wait").parse(&"sleep".into()).unwrap_err().contains("block, spin, spin-then-block"));
        let spin = build_valid(&SP, 2, &params_with(&SP, &[("wait", "spin-then-block".into()), ("spin", "200ms".into())]));
        assert!(unrolled(&spin.threads[1]).contains(&Op::Barrier { barrier: 0, wait: BarrierWait::SpinThenBlock(200 * MS) }));
    }

    /// Mean compute time of a thread's ops, loops unrolled.
    fn cpu(ops: &[Op]) -> f64 {
        unrolled(ops)
            .iter()
            .map(|op| match op {
                Op::Compute(d) => d.mean(),
                _ => 0.0,
            })
            .sum()
    }

    /// Seed 001 section V-B runs the ten NPB3.3-OMP benchmarks with 1 to 16 threads: each
    /// model splits a fixed total of work evenly over any thread count (`schedule(static)`),
    /// and builds for every count.
    #[test]
    fn every_model_keeps_its_total_work_and_splits_it_evenly_at_1_to_16_threads() {
        for w in ALL_NPB {
            let p = w.0;
            let params = params_with(w, &[("steps", toml::Value::Integer(p.steps.min(2) as i64)), ("scale", 0.05.into())]);
            let total = |n: u32| {
                let program = build_valid(w, n, &params);
                let per: Vec<f64> = program.threads.iter().map(|t| cpu(t)).collect();
                (per.iter().sum::<f64>(), per)
            };
            let (one, _) = total(1);
            for n in 2..=16 {
                let (all, per) = total(n);
                // Rounding each piece to whole ns is all that moves.
                assert!((all - one).abs() / one < 1e-3, "{}: {n} threads do {all} ns, 1 thread {one} ns", w.name());
                // Workers (not the master, which adds the serial part, init and verification)
                // get equal shares.
                let worker = per[1];
                assert!(per[1..].iter().all(|w| (w - worker).abs() / worker < 1e-3), "{}: {n} threads {per:?}", w.name());
            }
        }
    }

    #[test]
    fn the_serial_part_is_master_only_and_keeps_the_total_work() {
        let build = |serial: f64| {
            build_valid(&SP, 4, &params_with(&SP, &[("steps", toml::Value::Integer(3)), ("scale", 0.01.into()), ("serial", serial.into())]))
        };
        let (none, quarter) = (build(0.0), build(0.25));
        let total = |p: &Program| p.threads.iter().map(|t| cpu(t)).sum::<f64>();
        assert!((total(&none) - total(&quarter)).abs() / total(&none) < 1e-3);
        // The master's extra over a worker: initialization, verification and 25% of 4 steps'
        // work (warm-up included) that only it runs.
        let extra = cpu(&quarter.threads[0]) - cpu(&quarter.threads[1]);
        let step = sp::PROFILE.serial_runtime as f64 * 0.01 / sp::PROFILE.steps as f64;
        let expected = 4.0 * 0.25 * step + (sp::PROFILE.init + sp::PROFILE.verify) as f64 * 0.01;
        assert!((extra - expected).abs() / expected < 0.01, "{extra} vs {expected}");
    }
}
