//! Custom programs: `workload = "program"` with a `[vm.program]` table of synchronization objects
//! and one op list per thread, each op an inline table naming it (`{lock = 0}`), mapped onto
//! [`workload::program::Op`](crate::workload::program::Op).
//!
//! Object indices are checked here, where the op's key path is known
//! (`vm[0].program.threads[2][3].lock`); `Program::validate` then checks what needs the whole
//! program (barriers that can gather their parties).

use super::section::{duration_value, error, int_expectation, int_value, Section};
use super::suggest::{did_you_mean, unknown_key_message};
use crate::error::SimError;
use crate::params::show_toml;
use crate::vmexit::KernelFn;
use crate::workload::program::{BarrierWait, Dist, Op, Program, SpinlockKind};
use std::collections::BTreeSet;
use toml::Value;

/// The most objects of one kind (`mutexes`, `conds`) a program may declare: each is a word of
/// guest state allocated before the run, and 2^20 is far more than any modelled program uses
/// (a guard against a typo that would ask for gigabytes).
pub const MAX_OBJECTS: usize = 1 << 20;

/// The pseudo-workload name that selects a custom program.
pub const WORKLOAD_NAME: &str = "program";
pub const DESCRIPTION: &str =
    "A custom program written in the scenario: [vm.program] declares mutexes (count), barriers (parties of each), \
     conds (count), queues (capacity of each) and kernel_locks (names), and threads = [[ops of thread 0], \
     [ops of thread 1], ...] (a single list is run by every thread). Ops: {compute = D}, \
     {syscall = D, lock = k, function = \"release_pages\"}, {lock = m}, {unlock = m}, {barrier = b, wait = \"block\" | \"spin\" | \
     \"spin-then-block\", spin = \"50us\", impl = \"pthread\" | \"parsec\"}, {cond_wait = c, mutex = m}, {signal = c}, {broadcast = c}, \
     {spin_lock = s}, {spin_unlock = s} (user-space spinlocks: spinlocks = [\"ticket\" | \"tas\", ...]), \
     {put = q}, {get = q}, {mmap = pages}, {munmap = pages}, {progress = true}, \
     {setaffinity = \"0-1\" | \"all\"}, {loop = N | \"forever\", body = [ops]}, \
     {reset_tickets = d, count = T}, {tickets = d, body = [ops]} (ticket dispensers: dispensers = N), \
     {taskq_wait_for_tasks = k}, {taskq_signal = k}, {taskq_wait_for_end = k} (PARSEC facesim's TaskQ batch sync: \
     task_syncs = [threads taking part in each]), {taskq_put = q}, {taskq_own = q, work = \"400us\"}, \
     {taskq_steal = q, work = \"400us\", repeat = true} (work: a task's mean, exponential) (its task queues: task_queues = [mutex of each]); a duration D is \"1ms\", {exp = \"1ms\"}, \
     {uniform = [\"1ms\", \"2ms\"]} or {normal = [mean, sd]}";
pub const PROGRESS_UNIT: &str = "Progress ops executed";

/// The keys of `[vm.program]`.
pub const PROGRAM_KEYS: &[&str] =
    &["mutexes", "barriers", "conds", "queues", "dispensers", "task_syncs", "task_queues", "kernel_locks", "spinlocks", "threads", "cpus"];

/// Every op, with the extra keys it takes (the op's own name is its first key).
const OPS: &[(&str, &[&str])] = &[
    ("compute", &[]),
    ("syscall", &["lock", "function"]),
    ("lock", &[]),
    ("unlock", &[]),
    ("spin_lock", &[]),
    ("spin_unlock", &[]),
    ("barrier", &["wait", "spin", "impl"]),
    ("cond_wait", &["mutex"]),
    ("signal", &[]),
    ("broadcast", &[]),
    ("put", &[]),
    ("get", &[]),
    ("mmap", &[]),
    ("munmap", &[]),
    ("progress", &[]),
    ("setaffinity", &[]),
    ("loop", &["body"]),
    ("tickets", &["body"]),
    ("reset_tickets", &["count"]),
    ("taskq_wait_for_tasks", &[]),
    ("taskq_signal", &[]),
    ("taskq_wait_for_end", &[]),
    ("taskq_put", &[]),
    ("taskq_own", &["work"]),
    ("taskq_steal", &["work", "repeat"]),
];

const BARRIER_WAITS: &[&str] = &["block", "spin", "spin-then-block"];
/// `impl` of a barrier op: glibc's pthread_barrier_wait or PARSEC's parsec_barrier_wait.
const BARRIER_IMPLS: &[&str] = &["pthread", "parsec"];
const DISTS: &[&str] = &["exp", "uniform", "normal"];

fn op_names() -> Vec<&'static str> {
    OPS.iter().map(|(name, _)| *name).collect()
}

/// Parse `[vm.program]`. `vm_threads` is the VM's `threads` key, `default_threads` what to use
/// when neither it nor the program fixes the count. Returns the program and its thread count.
pub fn parse_program(section: &Section, vm_threads: Option<u32>, default_threads: u32) -> Result<(Program, u32), SimError> {
    section.allow_only(PROGRAM_KEYS)?;
    let file = section.file;
    let mut program = Program::new(PROGRESS_UNIT);
    program.mutexes = count(section, "mutexes")?;
    program.conds = count(section, "conds")?;
    program.barriers = sizes(section, "barriers", "the number of threads that meet at each barrier")?;
    program.queues = sizes(section, "queues", "the capacity of each queue")?;
    program.dispensers = count(section, "dispensers")?;
    program.task_syncs = sizes(section, "task_syncs", "the number of threads that take part in each TaskQ batch sync")?;
    if let Some(items) = section.array("task_queues")? {
        if !items.is_empty() && program.mutexes == 0 {
            return Err(
                section.error_at("task_queues", "each TaskQ task queue names its mutex, but the program declares none; add mutexes")
            );
        }
        program.task_queues = items
            .iter()
            .enumerate()
            .map(|(i, v)| {
                int_value(file, &format!("{}[{i}]", section.key("task_queues")), v, 0, program.mutexes as i64 - 1).map(|m| m as usize)
            })
            .collect::<Result<_, _>>()?;
    }
    if let Some(names) = section.array("kernel_locks")? {
        // Each name's first index: the duplicate check is a lookup, not a scan of the names so far.
        let mut seen: std::collections::HashMap<&str, usize> = std::collections::HashMap::with_capacity(names.len());
        for (i, name) in names.iter().enumerate() {
            match name {
                Value::String(s) if !s.trim().is_empty() => {
                    if let Some(&j) = seen.get(s.as_str()) {
                        let key = format!("{}[{i}]", section.key("kernel_locks"));
                        return Err(error(
                            file,
                            &key,
                            format!(
                                "{s:?} is already kernel_locks[{j}]; each entry is one lock, named by its lock class \
                                 (lhp_count[{s}]), so names must differ"
                            ),
                        ));
                    }
                    seen.insert(s.as_str(), i);
                    program.kernel_locks.push(s.clone())
                }
                other => {
                    let key = format!("{}[{i}]", section.key("kernel_locks"));
                    return Err(error(file, &key, format!("expected a lock name such as \"mmap_sem\", got {}", show_toml(other))));
                }
            }
        }
    }

    if let Some(kinds) = section.array("spinlocks")? {
        for (i, kind) in kinds.iter().enumerate() {
            let key = format!("{}[{i}]", section.key("spinlocks"));
            program.spinlocks.push(match kind {
                Value::String(s) if s == "ticket" => SpinlockKind::Ticket,
                Value::String(s) if s == "tas" => SpinlockKind::TestAndSet,
                other => {
                    return Err(error(
                        file,
                        &key,
                        format!(
                            "expected the kind of a user-space spinlock, \"ticket\" or \"tas\" (test-and-set), got {}",
                            show_toml(other)
                        ),
                    ))
                }
            });
        }
        if program.spinlocks.len() > MAX_OBJECTS {
            return Err(section.error_at("spinlocks", format!("expected at most {MAX_OBJECTS} spinlocks, got {}", program.spinlocks.len())));
        }
    }
    let threads_key = section.key("threads");
    let lists = section.array("threads")?.ok_or_else(|| {
        section.error_at(
            "threads",
            "missing; expected an array of op lists, one per thread, such as [[{compute = \"1ms\"}, {progress = true}]]",
        )
    })?;
    if lists.is_empty() {
        return Err(error(file, &threads_key, "expected at least one op list, got []"));
    }
    let reader = OpReader { file, program: &program, vcpus: default_threads, masks: Default::default() };
    let mut threads = Vec::with_capacity(lists.len());
    for (t, list) in lists.iter().enumerate() {
        let path = format!("{threads_key}[{t}]");
        let ops = reader.ops(&path, list)?;
        check_mutex_use(file, &path, &ops, &mut BTreeSet::new())?;
        threads.push(ops);
    }
    let masks = reader.masks.into_inner();
    program.cpu_masks = masks;
    let nthreads = match (threads.len(), vm_threads) {
        (1, n) => n.unwrap_or(default_threads),
        (k, Some(n)) if n as usize != k => {
            return Err(error(
                file,
                &threads_key,
                format!(
                    "has {k} op lists but the VM says threads = {n}; give one list per thread, or a single list that every thread runs"
                ),
            ))
        }
        (k, _) => k as u32,
    };
    if threads.len() == 1 {
        let only = threads.pop().expect("one list");
        threads = vec![only; nthreads as usize];
    }
    program.threads = threads;
    program.thread_cpus = thread_cpus(section, nthreads, default_threads)?;
    Ok((program, nthreads))
}

/// `cpus`: each thread's CPU affinity over the VM's vCPUs (`sched_setaffinity` as the thread's
/// first act, `taskset -c` for them all): one cpulist for every thread, or one per thread.
fn thread_cpus(section: &Section, nthreads: u32, vcpus: u32) -> Result<Vec<Option<Vec<u32>>>, SimError> {
    let key = section.key("cpus");
    let mask = |path: &str, value: &Value| -> Result<Option<Vec<u32>>, SimError> {
        match value {
            Value::String(text) => crate::hardware::cpumask::parse_cpulist(text, vcpus as usize)
                .map(|m| Some(m.iter().map(|p| p.0).collect()))
                .map_err(|m| error(section.file, path, format!("{m}; here the VM's vCPU indices, 0 to {}", vcpus - 1))),
            other => {
                Err(error(section.file, path, format!("expected a cpulist of the VM's vCPUs such as \"0-3\", got {}", show_toml(other))))
            }
        }
    };
    match section.get("cpus") {
        None => Ok(Vec::new()),
        Some(Value::Array(items)) => {
            if items.len() != nthreads as usize {
                return Err(error(
                    section.file,
                    &key,
                    format!("has {} cpulists for {nthreads} threads; give one per thread, or one string for all", items.len()),
                ));
            }
            items.iter().enumerate().map(|(t, v)| mask(&format!("{key}[{t}]"), v)).collect()
        }
        Some(value) => {
            let one = mask(&key, value)?;
            Ok(vec![one; nthreads as usize])
        }
    }
}

/// Mutex discipline, checked on the program text: a thread unlocks only a mutex it holds, and
/// calls cond_wait only holding the wait's mutex (POSIX pthread_mutex_unlock: EPERM for an
/// error-checking mutex the caller does not own, undefined for a default one;
/// pthread_cond_wait: "shall be called with mutex locked by the calling thread"). A thread's ops
/// run in order and loops have no conditions, so this is exact: after a loop body's first pass
/// each mutex is in the state its last op in the body left it, the same after every later pass,
/// so two passes see every state a body starts from. `held` is what the thread holds before `ops`.
fn check_mutex_use(file: &str, path: &str, ops: &[Op], held: &mut BTreeSet<Held>) -> Result<(), SimError> {
    for (i, op) in ops.iter().enumerate() {
        let at = format!("{path}[{i}]");
        match op {
            Op::MutexLock(m) => {
                // Locking a mutex it holds is a self-deadlock; the run reports it naming the mutex.
                held.insert(Held::Mutex(*m));
            }
            // The guard releases the mutex when the thread holds it.
            Op::MutexUnlock(m) if !held.remove(&Held::Mutex(*m)) => {
                return Err(error(
                    file,
                    &format!("{at}.unlock"),
                    format!(
                        "unlocks mutex {m}, which this thread does not hold here; a thread unlocks only a mutex \
                         it locked (POSIX: an error-checking mutex refuses with EPERM, a default one is undefined)"
                    ),
                ));
            }
            // A thread spinning for a lock it holds spins for ever (no run can report it).
            Op::SpinLock(k) if !held.insert(Held::Spin(*k)) => {
                return Err(error(
                    file,
                    &format!("{at}.spin_lock"),
                    format!("takes user spinlock {k}, which this thread already holds here: it would spin for ever"),
                ));
            }
            Op::SpinUnlock(k) if !held.remove(&Held::Spin(*k)) => {
                return Err(error(
                    file,
                    &format!("{at}.spin_unlock"),
                    format!("releases user spinlock {k}, which this thread does not hold here; a thread releases only a spinlock it took"),
                ));
            }
            Op::CondWait { cond, mutex } if !held.contains(&Held::Mutex(*mutex)) => {
                return Err(error(
                    file,
                    &format!("{at}.mutex"),
                    format!(
                        "cond_wait on condition variable {cond} releases mutex {mutex}, which this thread does not hold \
                         here; lock it first (POSIX: pthread_cond_wait is called with the mutex locked by the caller)"
                    ),
                ));
            }
            Op::Loop { count, body } => {
                let passes = if *count == Some(1) { 1 } else { 2 };
                for pass in 0..passes {
                    check_mutex_use(file, &format!("{at}.body"), body, held).map_err(|e| match e {
                        SimError::Scenario { file, key, message } if pass == 1 => {
                            SimError::Scenario { file, key, message: format!("{message} (on the loop's second pass)") }
                        }
                        other => other,
                    })?;
                }
            }
            Op::Tickets { body, .. } => {
                // It runs any number of times, none included: the locks after it must not depend
                // on how many.
                let before = held.clone();
                for _ in 0..2 {
                    check_mutex_use(file, &format!("{at}.body"), body, held)?;
                }
                if *held != before {
                    return Err(error(
                        file,
                        &format!("{at}.body"),
                        "a ticket loop's body runs once per ticket it gets, maybe never, so it must release every \
                         lock it takes and take none it releases",
                    ));
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// A lock a thread holds at a point of its program (`check_mutex_use`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Held {
    Mutex(usize),
    Spin(usize),
}

/// A count of objects: a non-negative integer up to [`MAX_OBJECTS`], 0 when absent.
fn count(section: &Section, key: &str) -> Result<usize, SimError> {
    let n = section.int(key, 0, i64::MAX)?.unwrap_or(0);
    if n > MAX_OBJECTS as i64 {
        return Err(section
            .error_at(key, format!("expected at most {MAX_OBJECTS} (each is allocated before the run; a guard against typos), got {n}")));
    }
    Ok(n as usize)
}

/// An array of positive sizes (barrier parties, queue capacities), empty when absent.
fn sizes(section: &Section, key: &str, meaning: &str) -> Result<Vec<usize>, SimError> {
    let Some(items) = section.array(key)? else { return Ok(Vec::new()) };
    items
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let path = format!("{}[{i}]", section.key(key));
            int_value(section.file, &path, v, 1, u32::MAX as i64).map(|n| n as usize).map_err(|e| match e {
                SimError::Scenario { file, key, message } => SimError::Scenario { file, key, message: format!("{message} ({meaning})") },
                other => other,
            })
        })
        .collect()
}

/// Reads ops against the objects a program declares.
struct OpReader<'a> {
    file: &'a str,
    program: &'a Program,
    /// The VM's vCPUs, which a `setaffinity` cpulist indexes.
    vcpus: u32,
    /// The masks the `setaffinity` ops read so far (`Program::cpu_masks`), each once.
    masks: std::cell::RefCell<Vec<Option<Vec<u32>>>>,
}

impl OpReader<'_> {
    /// The index of `mask` in the program's CPU mask table, added if new.
    fn mask_index(&self, mask: Option<Vec<u32>>) -> usize {
        let mut masks = self.masks.borrow_mut();
        masks.iter().position(|m| *m == mask).unwrap_or_else(|| {
            masks.push(mask);
            masks.len() - 1
        })
    }
}

impl OpReader<'_> {
    /// An op list at `path` (`vm[0].program.threads[2]`).
    fn ops(&self, path: &str, value: &Value) -> Result<Vec<Op>, SimError> {
        let Value::Array(items) = value else {
            return Err(error(
                self.file,
                path,
                format!("expected an array of ops such as [{{compute = \"1ms\"}}], got {}", show_toml(value)),
            ));
        };
        items.iter().enumerate().map(|(i, item)| self.op(&format!("{path}[{i}]"), item)).collect()
    }

    /// One op at `path` (`vm[0].program.threads[2][3]`).
    fn op(&self, path: &str, value: &Value) -> Result<Op, SimError> {
        let names = op_names();
        let Value::Table(table) = value else {
            return Err(error(
                self.file,
                path,
                format!("expected an op as an inline table such as {{compute = \"1ms\"}}, got {}", show_toml(value)),
            ));
        };
        let s = Section::new(self.file, path, table);
        // `syscall` also takes a `lock` key, so it wins over the `lock` op.
        let present: Vec<&str> = names.iter().copied().filter(|n| table.contains_key(*n)).collect();
        let head = match present.as_slice() {
            [] => return Err(self.unknown_op(&s)),
            [one] => *one,
            [first, ..] if *first == "syscall" || present.contains(&"syscall") => "syscall",
            [first, second, ..] => {
                return Err(s.error(format!("one op per table, but it names both {first:?} and {second:?}")));
            }
        };
        let extra = OPS.iter().find(|(n, _)| *n == head).map(|(_, e)| *e).unwrap_or(&[]);
        let mut allowed = vec![head];
        allowed.extend_from_slice(extra);
        s.allow_only(&allowed)?;
        let value = &table[head];
        let key = s.key(head);
        let op = match head {
            "compute" => Op::Compute(dist(self.file, &key, value)?),
            "syscall" => {
                let lock = match s.get("lock") {
                    Some(v) => Some(self.index(&s.key("lock"), v, "kernel lock", self.program.kernel_locks.len(), "kernel_locks")?),
                    None => None,
                };
                let func = match s.get("function") {
                    Some(v) => kernel_function(self.file, &s.key("function"), v)?,
                    None => KernelFn::Syscall,
                };
                Op::Syscall { work: dist(self.file, &key, value)?, lock, func }
            }
            "lock" => Op::MutexLock(self.index(&key, value, "mutex", self.program.mutexes, "mutexes")?),
            "spin_lock" => Op::SpinLock(self.index(&key, value, "user spinlock", self.program.spinlocks.len(), "spinlocks")?),
            "spin_unlock" => Op::SpinUnlock(self.index(&key, value, "user spinlock", self.program.spinlocks.len(), "spinlocks")?),
            "unlock" => Op::MutexUnlock(self.index(&key, value, "mutex", self.program.mutexes, "mutexes")?),
            "barrier" => self.barrier(&s, &key, value)?,
            "cond_wait" => {
                let cond = self.index(&key, value, "condition variable", self.program.conds, "conds")?;
                let mutex_value = s.require("mutex", "the index of the mutex the wait releases, such as mutex = 0")?;
                let mutex = self.index(&s.key("mutex"), mutex_value, "mutex", self.program.mutexes, "mutexes")?;
                Op::CondWait { cond, mutex }
            }
            "signal" | "broadcast" => {
                let cond = self.index(&key, value, "condition variable", self.program.conds, "conds")?;
                Op::CondSignal { cond, all: head == "broadcast" }
            }
            "put" => Op::QueuePut(self.index(&key, value, "queue", self.program.queues.len(), "queues")?),
            "get" => Op::QueueGet(self.index(&key, value, "queue", self.program.queues.len(), "queues")?),
            "mmap" | "munmap" => {
                let pages = int_value(self.file, &key, value, 1, u32::MAX as i64)? as u32;
                if head == "mmap" {
                    Op::Mmap { pages }
                } else {
                    Op::Munmap { pages }
                }
            }
            "progress" => match value {
                Value::Boolean(true) => Op::Progress,
                other => {
                    return Err(error(self.file, &key, format!("expected true (count one unit of progress), got {}", show_toml(other))))
                }
            },
            "setaffinity" => match value {
                Value::String(text) if text.trim() == "all" => Op::SetAffinity(self.mask_index(None)),
                Value::String(text) => crate::hardware::cpumask::parse_cpulist(text, self.vcpus as usize)
                    .map(|m| Op::SetAffinity(self.mask_index(Some(m.iter().map(|p| p.0).collect()))))
                    .map_err(|m| error(self.file, &key, format!("{m}; here the VM's vCPU indices, 0 to {}", self.vcpus - 1)))?,
                other => {
                    return Err(error(
                        self.file,
                        &key,
                        format!("expected a cpulist of the VM's vCPUs such as \"0-3\", or \"all\", got {}", show_toml(other)),
                    ))
                }
            },
            "loop" => self.repeat(&s, &key, value)?,
            "tickets" => {
                let dispenser = self.index(&key, value, "ticket dispenser", self.program.dispensers, "dispensers")?;
                let body_value = s.require("body", "the ops run with each ticket, such as body = [{compute = \"50us\"}]")?;
                let body = self.ops(&s.key("body"), body_value)?;
                if body.is_empty() {
                    return Err(s.error_at("body", "expected at least one op to run with each ticket, got []"));
                }
                Op::Tickets { dispenser, body }
            }
            "reset_tickets" => {
                let dispenser = self.index(&key, value, "ticket dispenser", self.program.dispensers, "dispensers")?;
                let count_value = s.require("count", "the number of tickets to hand out, such as count = 60")?;
                let count = int_value(self.file, &s.key("count"), count_value, 0, i64::MAX)? as u64;
                Op::ResetTickets { dispenser, count }
            }
            "taskq_wait_for_tasks" => Op::TaskqWaitForTasks(self.taskq(&key, value)?),
            "taskq_signal" => Op::TaskqSignal(self.taskq(&key, value)?),
            "taskq_wait_for_end" => Op::TaskqWaitForEnd(self.taskq(&key, value)?),
            "taskq_put" => Op::TaskqPut(self.task_queue(&key, value)?),
            "taskq_own" | "taskq_steal" => {
                let queue = self.task_queue(&key, value)?;
                let work_value = s.require("work", "the mean work of one task, such as work = \"400us\" (exponential)")?;
                let work = duration_value(self.file, &s.key("work"), work_value, false)?;
                if head == "taskq_own" {
                    Op::TaskqOwn { queue, work }
                } else {
                    let repeat = match s.get("repeat") {
                        None => true,
                        Some(Value::Boolean(b)) => *b,
                        Some(other) => return Err(s.error_at("repeat", format!("expected true or false, got {}", show_toml(other)))),
                    };
                    Op::TaskqSteal { queue, work, repeat }
                }
            }
            _ => unreachable!("every name in OPS is handled"),
        };
        Ok(op)
    }

    fn unknown_op(&self, s: &Section) -> SimError {
        let names = op_names();
        let Some(first) = s.table.keys().next() else {
            return s.error(format!("empty op; expected one of: {}", names.join(", ")));
        };
        let message = if DISTS.contains(&first.as_str()) {
            format!("{first:?} is a distribution, not an op; write it inside compute or syscall, e.g. {{compute = {{{first} = ...}}}}")
        } else {
            match did_you_mean(first, &names) {
                Some(s) => format!("unknown op; did you mean {s:?}?"),
                None => format!("unknown op; expected one of: {}", names.join(", ")),
            }
        };
        s.error_at(first, message)
    }

    /// An object index that must name one of the `count` objects declared by `count_key`.
    fn taskq(&self, key: &str, value: &Value) -> Result<usize, SimError> {
        self.index(key, value, "TaskQ batch sync", self.program.task_syncs.len(), "task_syncs")
    }

    fn task_queue(&self, key: &str, value: &Value) -> Result<usize, SimError> {
        self.index(key, value, "TaskQ task queue", self.program.task_queues.len(), "task_queues")
    }

    fn index(&self, key: &str, value: &Value, what: &str, count: usize, count_key: &str) -> Result<usize, SimError> {
        if count == 0 {
            return Err(error(self.file, key, format!("the program declares no {what}; add {count_key} to [vm.program]")));
        }
        let i = int_value(self.file, key, value, 0, count as i64 - 1).map_err(|_| {
            error(
                self.file,
                key,
                format!("expected a {what} index from 0 to {} ({count_key} declares {count}), got {}", count - 1, show_toml(value)),
            )
        })?;
        Ok(i as usize)
    }

    fn barrier(&self, s: &Section, key: &str, value: &Value) -> Result<Op, SimError> {
        let barrier = self.index(key, value, "barrier", self.program.barriers.len(), "barriers")?;
        let wait = match s.string("wait")? {
            None => "block",
            Some(w) if BARRIER_WAITS.contains(&w) => w,
            Some(w) => {
                return Err(s.error_at("wait", format!("expected one of {}, got {w:?}", BARRIER_WAITS.join(", "))));
            }
        };
        let spin = s.get("spin");
        let wait = match (wait, spin) {
            ("spin-then-block", Some(v)) => BarrierWait::SpinThenBlock(duration_value(self.file, &s.key("spin"), v, true)?),
            ("spin-then-block", None) => {
                return Err(s.error_at("spin", "missing; expected the spin limit with wait = \"spin-then-block\", such as spin = \"50us\""));
            }
            (other, Some(_)) => {
                return Err(s.error_at("spin", format!("only used with wait = \"spin-then-block\", but wait = {other:?}")));
            }
            ("spin", None) => BarrierWait::Spin,
            _ => BarrierWait::Block,
        };
        match s.string("impl")? {
            None | Some("pthread") => Ok(Op::Barrier { barrier, wait }),
            Some("parsec") => Ok(Op::ParsecBarrier { barrier, wait }),
            Some(other) => Err(s.error_at("impl", format!("expected one of {}, got {other:?}", BARRIER_IMPLS.join(", ")))),
        }
    }

    fn repeat(&self, s: &Section, key: &str, value: &Value) -> Result<Op, SimError> {
        let count = match value {
            Value::String(w) if w == "forever" => None,
            Value::Integer(n) if *n >= 1 => Some(*n as u64),
            other => {
                return Err(error(
                    self.file,
                    key,
                    format!("expected {} or \"forever\", got {}", int_expectation(1, i64::MAX), show_toml(other)),
                ))
            }
        };
        let body_value = s.require("body", "the ops to repeat, such as body = [{compute = \"1ms\"}]")?;
        let body = self.ops(&s.key("body"), body_value)?;
        if body.is_empty() {
            return Err(s.error_at("body", "expected at least one op to repeat, got []"));
        }
        if count.is_none() && !body.iter().any(takes_time) {
            return Err(s.error_at(
                "body",
                "a forever loop needs an op that takes time (compute or syscall with a duration above 0, mmap, munmap), or the simulated clock would never advance",
            ));
        }
        Ok(Op::Loop { count, body })
    }
}

/// Whether an op always costs simulated time, whatever the other threads do. Synchronization
/// ops do not: an uncontended lock or the last thread at a barrier passes at once.
fn takes_time(op: &Op) -> bool {
    let positive = |d: &Dist| match *d {
        Dist::Const(v) => v > 0,
        Dist::Uniform { hi, .. } => hi > 0,
        Dist::Exp { mean } => mean > 0,
        Dist::Normal { mean, sd } => mean > 0 || sd > 0,
    };
    match op {
        Op::Compute(d) | Op::Syscall { work: d, .. } => positive(d),
        Op::Mmap { .. } | Op::Munmap { .. } | Op::MadviseDontneed { .. } => true,
        Op::Loop { body, .. } => body.iter().any(takes_time),
        // Runs the tasks its queue holds: taken as time, as the tasks a loop puts there are
        // (a loop that puts none is caught at run time, `MAX_ZERO_TIME_STEPS`).
        Op::TaskqOwn { work, .. } => *work > 0,
        // Its body may run no time at all (no tickets left).
        _ => false,
    }
}

/// The kernel function a `syscall` op's work runs in (`function = "get_page_from_freelist"`):
/// a name of `KernelFn::name` that program work may name (`KernelFn::nameable_in_syscall`).
fn kernel_function(file: &str, key: &str, value: &Value) -> Result<KernelFn, SimError> {
    let names: Vec<&str> = KernelFn::ALL.iter().filter(|f| f.nameable_in_syscall()).map(|f| f.name()).collect();
    let Value::String(name) = value else {
        return Err(error(file, key, format!("expected a kernel function's name such as \"release_pages\", got {}", show_toml(value))));
    };
    match KernelFn::from_name(name) {
        Some(f) if f.nameable_in_syscall() => Ok(f),
        Some(_) => Err(error(
            file,
            key,
            format!(
                "{name:?} is a state or wait loop the guest kernel enters by itself, not work a program names; one of: {}",
                names.join(", ")
            ),
        )),
        None => {
            let hint = did_you_mean(name, &names).map(|n| format!(" (did you mean {n:?}?)")).unwrap_or_default();
            Err(error(file, key, format!("unknown kernel function {name:?}{hint}; one of: {}", names.join(", "))))
        }
    }
}

/// A duration distribution: `"1ms"`, `{exp = "1ms"}`, `{uniform = ["1ms", "2ms"]}` or
/// `{normal = ["1ms", "100us"]}` (mean, standard deviation).
pub fn dist(file: &str, key: &str, value: &Value) -> Result<Dist, SimError> {
    let expected = "a duration such as \"1ms\", or {exp = \"1ms\"}, {uniform = [\"1ms\", \"2ms\"]} or {normal = [\"1ms\", \"100us\"]}";
    let table = match value {
        Value::String(_) => return Ok(Dist::Const(duration_value(file, key, value, false)?)),
        Value::Table(t) => t,
        other => return Err(error(file, key, format!("expected {expected}, got {}", show_toml(other)))),
    };
    let mut keys = table.keys();
    let (Some(kind), None) = (keys.next(), keys.next()) else {
        return Err(error(file, key, format!("expected {expected}, got {}", show_toml(value))));
    };
    let path = format!("{key}.{kind}");
    let pair = |what: [&str; 2]| -> Result<(u64, u64), SimError> {
        match &table[kind] {
            Value::Array(a) if a.len() == 2 => {
                Ok((duration_value(file, &format!("{path}[0]"), &a[0], false)?, duration_value(file, &format!("{path}[1]"), &a[1], false)?))
            }
            other => Err(error(file, &path, format!("expected [{}, {}] as two durations, got {}", what[0], what[1], show_toml(other)))),
        }
    };
    match kind.as_str() {
        "exp" => Ok(Dist::Exp { mean: duration_value(file, &path, &table[kind], false)? }),
        "uniform" => {
            let (lo, hi) = pair(["low", "high"])?;
            if hi < lo {
                return Err(error(file, &path, format!("expected low <= high, got {}", show_toml(&table[kind]))));
            }
            Ok(Dist::Uniform { lo, hi })
        }
        "normal" => {
            let (mean, sd) = pair(["mean", "standard deviation"])?;
            Ok(Dist::Normal { mean, sd })
        }
        other => Err(error(file, &path, unknown_key_message(other, DISTS).replace("unknown key", "unknown distribution"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::{MS, US};

    fn parse(text: &str, vm_threads: Option<u32>) -> Result<(Program, u32), SimError> {
        let table: toml::Table = text.parse().expect("test TOML parses");
        let section = Section::new("p.toml", "vm[0].program", &table);
        parse_program(&section, vm_threads, 2)
    }

    fn message(text: &str) -> String {
        parse(text, None).unwrap_err().to_string()
    }

    #[test]
    fn every_op_kind_parses() {
        let text = r#"
            mutexes = 1
            barriers = [2]
            conds = 1
            queues = [4]
            kernel_locks = ["mmap_sem"]
            threads = [[
                {compute = "1ms"},
                {compute = {exp = "2ms"}},
                {compute = {uniform = ["1ms", "3ms"]}},
                {compute = {normal = ["1ms", "100us"]}},
                {syscall = "5us", lock = 0},
                {syscall = "7us"},
                {lock = 0},
                {unlock = 0},
                {barrier = 0},
                {barrier = 0, wait = "spin"},
                {barrier = 0, wait = "spin-then-block", spin = "50us"},
                {lock = 0},
                {cond_wait = 0, mutex = 0},
                {unlock = 0},
                {signal = 0},
                {broadcast = 0},
                {put = 0},
                {get = 0},
                {mmap = 4},
                {munmap = 8},
                {progress = true},
                {loop = 3, body = [{compute = "1us"}]},
                {loop = "forever", body = [{progress = true}, {compute = "1ms"}]},
            ]]
        "#;
        let (program, n) = parse(text, Some(2)).unwrap();
        assert_eq!(n, 2);
        assert_eq!(program.threads.len(), 2);
        assert_eq!(program.threads[0], program.threads[1]);
        assert_eq!(program.progress_unit, PROGRESS_UNIT);
        assert_eq!((program.mutexes, program.conds), (1, 1));
        assert_eq!((program.barriers.clone(), program.queues.clone()), (vec![2], vec![4]));
        assert_eq!(program.kernel_locks, vec!["mmap_sem".to_string()]);
        let expected = vec![
            Op::Compute(Dist::Const(MS)),
            Op::Compute(Dist::Exp { mean: 2 * MS }),
            Op::Compute(Dist::Uniform { lo: MS, hi: 3 * MS }),
            Op::Compute(Dist::Normal { mean: MS, sd: 100 * US }),
            Op::kernel_section(0, Dist::Const(5 * US), KernelFn::Syscall),
            Op::kernel(Dist::Const(7 * US)),
            Op::MutexLock(0),
            Op::MutexUnlock(0),
            Op::Barrier { barrier: 0, wait: BarrierWait::Block },
            Op::Barrier { barrier: 0, wait: BarrierWait::Spin },
            Op::Barrier { barrier: 0, wait: BarrierWait::SpinThenBlock(50 * US) },
            Op::MutexLock(0),
            Op::CondWait { cond: 0, mutex: 0 },
            Op::MutexUnlock(0),
            Op::CondSignal { cond: 0, all: false },
            Op::CondSignal { cond: 0, all: true },
            Op::QueuePut(0),
            Op::QueueGet(0),
            Op::Mmap { pages: 4 },
            Op::Munmap { pages: 8 },
            Op::Progress,
            Op::Loop { count: Some(3), body: vec![Op::Compute(Dist::Const(US))] },
            Op::Loop { count: None, body: vec![Op::Progress, Op::Compute(Dist::Const(MS))] },
        ];
        assert_eq!(program.threads[0], expected);
        program.validate().unwrap();
    }

    #[test]
    fn thread_count_follows_the_lists() {
        let two = r#"threads = [[{compute = "1ms"}], [{progress = true}]]"#;
        let (p, n) = parse(two, None).unwrap();
        assert_eq!((n, p.threads.len()), (2, 2));
        assert_ne!(p.threads[0], p.threads[1]);
        let e = parse(two, Some(3)).unwrap_err().to_string();
        assert!(e.contains("vm[0].program.threads: has 2 op lists but the VM says threads = 3"), "{e}");
        // One list and no VM thread count: the default (here 2) threads all run it.
        let (p, n) = parse(r#"threads = [[{compute = "1ms"}]]"#, None).unwrap();
        assert_eq!((n, p.threads.len()), (2, 2));
    }

    #[test]
    fn bad_ops_report_their_path() {
        let cases = [
            (
                "mutexes = 1\nthreads = [[{compute = \"1ms\"}, {lock = 3}]]",
                "vm[0].program.threads[0][1].lock: expected a mutex index from 0 to 0 (mutexes declares 1), got 3",
            ),
            ("threads = [[{lock = 0}]]", "vm[0].program.threads[0][0].lock: the program declares no mutex"),
            ("threads = [[{compute = \"1ms\"}], [{lokc = 0}]]", "vm[0].program.threads[1][0].lokc: unknown op; did you mean \"lock\"?"),
            (
                "barriers = [1]\nthreads = [[{barrier = 0, wiat = \"spin\"}]]",
                "vm[0].program.threads[0][0].wiat: unknown key; did you mean \"wait\"?",
            ),
            (
                "barriers = [1]\nthreads = [[{barrier = 0, wait = \"nap\"}]]",
                "vm[0].program.threads[0][0].wait: expected one of block, spin, spin-then-block, got \"nap\"",
            ),
            ("barriers = [1]\nthreads = [[{barrier = 0, wait = \"spin-then-block\"}]]", "vm[0].program.threads[0][0].spin: missing"),
            (
                "barriers = [1]\nthreads = [[{barrier = 0, spin = \"5us\"}]]",
                "vm[0].program.threads[0][0].spin: only used with wait = \"spin-then-block\"",
            ),
            ("threads = [[{compute = \"5\"}]]", "vm[0].program.threads[0][0].compute: \"5\" has no unit"),
            ("threads = [[{compute = \"-5ms\"}]]", "vm[0].program.threads[0][0].compute: expected a non-negative duration"),
            (
                "threads = [[{compute = {uniform = [\"3ms\", \"1ms\"]}}]]",
                "vm[0].program.threads[0][0].compute.uniform: expected low <= high",
            ),
            (
                "threads = [[{compute = {normal = [\"3ms\"]}}]]",
                "vm[0].program.threads[0][0].compute.normal: expected [mean, standard deviation]",
            ),
            (
                "threads = [[{compute = {expo = \"3ms\"}}]]",
                "vm[0].program.threads[0][0].compute.expo: unknown distribution; did you mean \"exp\"?",
            ),
            (
                "threads = [[{uniform = [\"1ms\", \"2ms\"]}]]",
                "vm[0].program.threads[0][0].uniform: \"uniform\" is a distribution, not an op",
            ),
            ("mutexes = 1\nthreads = [[{lock = 0, unlock = 0}]]", "vm[0].program.threads[0][0]: one op per table"),
            ("threads = [[{progress = false}]]", "vm[0].program.threads[0][0].progress: expected true"),
            ("threads = [[{mmap = 0}]]", "vm[0].program.threads[0][0].mmap: expected an integer of at least 1, got 0"),
            (
                "threads = [[{loop = 0, body = [{progress = true}]}]]",
                "vm[0].program.threads[0][0].loop: expected an integer of at least 1 or \"forever\", got 0",
            ),
            (
                "mutexes = 1\nthreads = [[{loop = \"forever\", body = [{lock = 0}, {unlock = 0}, {progress = true}]}]]",
                "vm[0].program.threads[0][0].body: a forever loop needs an op that takes time",
            ),
            (
                "threads = [[{loop = \"forever\", body = [{compute = \"0ms\"}]}]]",
                "vm[0].program.threads[0][0].body: a forever loop needs an op that takes time",
            ),
            ("threads = [[{loop = 2}]]", "vm[0].program.threads[0][0].body: missing"),
            (
                "threads = [[{loop = 2, body = [{mmap = \"x\"}]}]]",
                "vm[0].program.threads[0][0].body[0].mmap: expected an integer of at least 1, got \"x\"",
            ),
            ("conds = 1\nthreads = [[{cond_wait = 0}]]", "vm[0].program.threads[0][0].mutex: missing"),
            ("threads = [[{}]]", "vm[0].program.threads[0][0]: empty op"),
            ("threads = [[\"compute\"]]", "vm[0].program.threads[0][0]: expected an op as an inline table"),
            ("threads = []", "vm[0].program.threads: expected at least one op list"),
            ("barriers = [0]\nthreads = [[{progress = true}]]", "vm[0].program.barriers[0]: expected an integer of at least 1, got 0"),
            ("mutex = 1\nthreads = [[{progress = true}]]", "vm[0].program.mutex: unknown key; did you mean \"mutexes\"?"),
            ("mutexes = 1", "vm[0].program.threads: missing"),
        ];
        for (text, want) in cases {
            let got = message(text);
            assert!(got.starts_with(&format!("p.toml: {want}")), "for {text:?}\n got: {got}\nwant: {want}");
        }
    }
}
