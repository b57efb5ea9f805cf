//! `mosbench.exim`: the Exim 4.71 mail server under MOSBENCH's SMTP load.
//!
//! **The application** (MOSBENCH exim/, config.py, exim/configure.tmpl, exim/smtpbm.c): load
//! generators (`clients = 96`) open SMTP connections to Exim; each connection sends 10 messages
//! (`smtpbm.c` `do1`: MAIL FROM, RCPT TO, DATA, a one-line body, ten times, then QUIT). The Exim
//! daemon forks a process per connection; for each message that process writes the message to
//! the spool (a `-D` data and a `-H` header file in one of 62 spool subdirectories,
//! `split_spool_directory = true`) and forks a delivery process (`deliver_drop_privilege =
//! true`: no exec), which appends the message to the recipient's mailbox (taking a lock file
//! beside it), appends a line to the main log, removes the spool files and exits. Everything is
//! on tmpfs. Seed 002 section 6.1: exim "frequently creates processes and small files"; its
//! metric is throughput (Figure 5); Figure 7: its yields are mostly pause-loop exits.
//!
//! **Model**: one thread per concurrent SMTP session, `2 x vCPUs` of them (assumed: enough
//! sessions to keep every vCPU busy; MOSBENCH drives 96). A thread loops over connections: fork
//! the session process, 10 messages, exit. A message:
//! - receive: 4 SMTP round trips of socket work (15 us each, assumed) and 150 us of Exim's own
//!   parsing and ACLs (assumed);
//! - spool: create the two spool files, each under its subdirectory's `i_mutex` (a sleeping
//!   mutex: a futex mutex in the model, see mosbench/mod.rs) with a section under the
//!   subdirectory's own `d_lock` (62 of them, class `dentry`), 10 us each (assumed); the
//!   subdirectory is message-dependent;
//! - deliver: fork (60 us) + `wake_up_new_task`; the child faults in 64 copied-on-write pages
//!   (assumed; its CPU's per-CPU page list serves them without `zone->lock`); 150 us of user work; lock file create + remove (two `d_lock` sections); append
//!   to the mailbox; append to the main log under the log's `i_mutex` (one mutex: every delivery
//!   appends to the same file, 5 us held); remove the two spool files under the spool mutex;
//!   exit (30 us), free the pages and wake the session process;
//! - in all 1 ms of CPU per message (assumed), 70% of it in the kernel (assumed: MOSBENCH
//!   describes Exim as kernel-intensive, and the model's kernel paths above already make up
//!   more than half of a message; the exact single-core share is not in our stored sources).
//!   The kernel time not itemized above is spread over the delivery's fault batches.
//!
//! **Progress**: messages delivered (all sessions); the throughput is progress per second.

use super::{fault_in, fault_kernel, free_kernel, free_pages, kernel, section, KernelLocks, BATCH_PAGES, DENTRY_HOLD, RQ_HOLD};
use crate::hardware::costs::Costs;
use crate::params::{ParamSpec, Params};
use crate::time::{format_duration, Nanos, US};
use crate::vmexit::KernelFn;
use crate::workload::program::{Dist, ObjIndex, Op, Program};
use crate::workload::Workload;

pub struct Exim;

const PROGRESS_UNIT: &str = "messages delivered (all SMTP sessions)";
/// Messages per SMTP connection (MOSBENCH exim/smtpbm.c `do1`).
pub const MESSAGES_PER_CONNECTION: u64 = 10;
/// Spool subdirectories (`split_spool_directory`: 0-9, A-Z, a-z).
pub const SPOOL_DIRS: usize = 62;
/// CPU per message (assumed).
pub const MESSAGE_CPU: Nanos = 1_000 * US;
/// Kernel share of a message's CPU (assumed, module doc).
pub const KERNEL_SHARE: f64 = 0.70;
const SMTP_ROUND_TRIPS: u64 = 4;
const SOCKET_WORK: Nanos = 15 * US;
const RECEIVE_USER: Nanos = 150 * US;
const DELIVER_USER: Nanos = 150 * US;
const SPOOL_FILE_WORK: Nanos = 10 * US;
const MAILBOX_WORK: Nanos = 20 * US;
const LOG_WORK: Nanos = 5 * US;
const UNLINK_WORK: Nanos = 5 * US;
const FORK_WORK: Nanos = 60 * US;
const EXIT_WORK: Nanos = 30 * US;
/// Pages the delivery process faults in (copy-on-write after fork, assumed).
const DELIVERY_PAGES: u64 = 64;
const FREE_WORK: Nanos = BATCH_PAGES * 50;
/// Index of the main log's mutex (after the spool directories').
const LOG_MUTEX: ObjIndex = SPOOL_DIRS;

/// Unlocked kernel work per delivery fault batch so that a message has `kernel_share` of
/// `message` in the kernel.
pub fn fault_work(message: Nanos, kernel_share: f64) -> Result<Nanos, String> {
    let syscall = Costs::default().syscall;
    let batches = DELIVERY_PAGES / BATCH_PAGES;
    let kernel_total = message as f64 * kernel_share;
    let fixed = SMTP_ROUND_TRIPS * (syscall + SOCKET_WORK)
        + 2 * (2 * syscall + DENTRY_HOLD + SPOOL_FILE_WORK)
        + (syscall + FORK_WORK)
        + (syscall + RQ_HOLD)
        + fault_kernel(batches, syscall)
        + batches * FREE_WORK
        + free_kernel(batches, syscall)
        + 2 * (syscall + DENTRY_HOLD)
        + (syscall + MAILBOX_WORK)
        + (syscall + LOG_WORK)
        + 2 * (2 * syscall + DENTRY_HOLD + UNLINK_WORK)
        + (syscall + EXIT_WORK)
        + (syscall + RQ_HOLD);
    if kernel_total < fixed as f64 {
        return Err(format!(
            "a message of {} with kernel_share {kernel_share} has {} of kernel time; its itemized kernel paths need {}; \
             raise kernel_share or message",
            format_duration(message),
            format_duration(kernel_total.round() as Nanos),
            format_duration(fixed)
        ));
    }
    Ok(((kernel_total - fixed as f64) / batches as f64).round() as Nanos)
}

/// One message of session `t`, its `k`-th in the connection. `spool_dentries[d]` is spool
/// subdirectory d's `d_lock`; `locks.dentry` is the mail directory's (every mailbox's lock file
/// is created and removed there).
fn message_ops(locks: &KernelLocks, spool_dentries: &[ObjIndex], t: usize, k: usize, fault_work: Nanos, user_scale: f64) -> Vec<Op> {
    let spool = (t * 13 + k * 7) % SPOOL_DIRS;
    let user = |ns: Nanos| Op::Compute(Dist::Exp { mean: (ns as f64 * user_scale).round() as Nanos });
    let in_dir = |m: ObjIndex, func: KernelFn, work: Nanos| {
        vec![Op::MutexLock(m), section(spool_dentries[m], DENTRY_HOLD, func), kernel(work), Op::MutexUnlock(m)]
    };
    let mut ops = Vec::new();
    // Receive over SMTP.
    ops.push(user(RECEIVE_USER / 2));
    ops.push(Op::Loop { count: Some(SMTP_ROUND_TRIPS), body: vec![kernel(SOCKET_WORK)] });
    ops.push(user(RECEIVE_USER / 2));
    // Spool the -D and -H files.
    ops.extend(in_dir(spool, KernelFn::DAlloc, SPOOL_FILE_WORK));
    ops.extend(in_dir(spool, KernelFn::DAlloc, SPOOL_FILE_WORK));
    // Fork the delivery process.
    ops.push(kernel(FORK_WORK));
    ops.push(section(locks.rq(t, 2 * k), RQ_HOLD, KernelFn::WakeUpNewTask));
    let batches = DELIVERY_PAGES / BATCH_PAGES;
    ops.push(fault_in(locks, batches, 0, fault_work));
    ops.push(user(DELIVER_USER));
    // Mailbox: lock file, append, unlock file; then the main log.
    ops.push(section(locks.dentry, DENTRY_HOLD, KernelFn::DAlloc));
    ops.push(kernel(MAILBOX_WORK));
    ops.push(section(locks.dentry, DENTRY_HOLD, KernelFn::DDelete));
    ops.push(Op::MutexLock(LOG_MUTEX));
    ops.push(kernel(LOG_WORK));
    ops.push(Op::MutexUnlock(LOG_MUTEX));
    // Remove the spool files, exit, wake the session process.
    ops.extend(in_dir(spool, KernelFn::DDelete, UNLINK_WORK));
    ops.extend(in_dir(spool, KernelFn::DDelete, UNLINK_WORK));
    ops.push(free_pages(locks, batches, FREE_WORK));
    ops.push(kernel(EXIT_WORK));
    ops.push(section(locks.rq(t, 2 * k + 1), RQ_HOLD, KernelFn::TtwuDoActivate));
    ops.push(Op::Progress);
    ops
}

/// The spool subdirectories' `d_lock`s (class [`DENTRY`](super::DENTRY)), appended to the
/// program's kernel locks.
fn spool_dentries(program: &mut Program) -> Vec<ObjIndex> {
    (0..SPOOL_DIRS)
        .map(|_| {
            program.kernel_locks.push(super::DENTRY.to_string());
            program.kernel_locks.len() - 1
        })
        .collect()
}

impl Workload for Exim {
    fn name(&self) -> &'static str {
        "mosbench.exim"
    }
    fn describe(&self) -> &'static str {
        "MOSBENCH exim: SMTP sessions of 10 messages; each message is spooled as two files under a \
         spool directory's i_mutex, delivered by a forked process (page faults, mailbox lock file, \
         main-log append under one mutex) and unspooled; 1 ms per message, 70% kernel (assumed)"
    }
    fn progress_unit(&self) -> &'static str {
        PROGRESS_UNIT
    }
    fn params(&self) -> Vec<ParamSpec> {
        vec![
            ParamSpec::duration("message", MESSAGE_CPU, "CPU time per message, all processes. 1ms: assumed.").at_least(500.0 * US as f64),
            ParamSpec::float(
                "kernel_share",
                KERNEL_SHARE,
                "share of a message's CPU time in the kernel. 0.7: assumed (MOSBENCH: Exim is \
                 kernel-intensive).",
            )
            .range(0.3, 0.95),
        ]
    }
    fn default_threads(&self, vcpus: u32) -> u32 {
        2 * vcpus
    }
    fn build(&self, threads: u32, params: &Params) -> Result<Program, String> {
        if threads == 0 {
            return Err("mosbench.exim needs at least 1 SMTP session (threads), got 0".into());
        }
        let message = params.duration("message");
        let share = params.float("kernel_share");
        let fault_work = fault_work(message, share).map_err(|e| format!("mosbench.exim: {e}"))?;
        // The user work scales so that a message's user time is (1 - share) of it.
        let user_scale = message as f64 * (1.0 - share) / (RECEIVE_USER + DELIVER_USER) as f64;
        let mut program = Program::new(PROGRESS_UNIT);
        program.mutexes = SPOOL_DIRS + 1;
        let locks = KernelLocks::declare(&mut program, (threads as usize).div_ceil(2));
        let spool_dentries = spool_dentries(&mut program);
        let syscall = Costs::default().syscall;
        program.threads = (0..threads as usize)
            .map(|t| {
                let mut body = vec![kernel(FORK_WORK), section(locks.rq(t, 0), RQ_HOLD, KernelFn::WakeUpNewTask)];
                for k in 0..MESSAGES_PER_CONNECTION as usize {
                    body.extend(message_ops(&locks, &spool_dentries, t, k, fault_work, user_scale));
                }
                // QUIT: the session process exits (its pages were the daemon's: shared, not freed).
                body.push(kernel(EXIT_WORK.saturating_sub(syscall)));
                vec![Op::Loop { count: None, body }]
            })
            .collect();
        Ok(program)
    }
}

#[cfg(test)]
mod tests {
    use super::super::model_tests::*;
    use super::*;
    use crate::workload::builtin::test_support::*;

    #[test]
    fn a_message_costs_its_cpu_with_its_kernel_share() {
        assert_defaults_parse(&Exim);
        let program = build_valid(&Exim, 24, &Params::defaults(&Exim.params()));
        assert_eq!(program.mutexes, 63);
        let mut p = Program::new("x");
        let locks = KernelLocks::declare(&mut p, 12);
        let spool = spool_dentries(&mut p);
        let ops = message_ops(&locks, &spool, 3, 4, fault_work(MESSAGE_CPU, KERNEL_SHARE).unwrap(), 1.0);
        let (user, kernel) = mean_time(&ops);
        assert!((user + kernel - MESSAGE_CPU as f64).abs() < 1_000.0, "{}", user + kernel);
        assert!((kernel / (user + kernel) - KERNEL_SHARE).abs() < 0.005);
        // The spool files' d_lock sections are their subdirectory's; the lock file's the mail
        // directory's.
        assert_eq!(sections(&ops, spool[(3 * 13 + 4 * 7) % SPOOL_DIRS]), 4);
        assert_eq!(sections(&ops, locks.dentry), 2);
        assert_eq!(program.kernel_locks.iter().filter(|c| *c == "dentry").count(), 1 + SPOOL_DIRS);
        // Two spool creates and two removals under the spool directory's mutex, one log append.
        assert_eq!(ops.iter().filter(|op| matches!(op, Op::MutexLock(m) if *m < SPOOL_DIRS)).count(), 4);
        assert_eq!(ops.iter().filter(|op| **op == Op::MutexLock(LOG_MUTEX)).count(), 1);
        let body = loop_body(&program.threads[0]);
        assert_eq!(body.iter().filter(|op| **op == Op::Progress).count(), 10);
    }

    #[test]
    fn impossible_budgets_are_errors() {
        let err = Exim.build(2, &params_with(&Exim, &[("kernel_share", 0.3.into()), ("message", "500us".into())])).unwrap_err();
        assert!(err.contains("kernel_share 0.3") && err.contains("itemized"), "{err}");
    }
}
