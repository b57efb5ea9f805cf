//! `hackbench`: groups of senders spraying messages at receivers over sockets (rt-tests
//! `src/hackbench/hackbench.c`; `perf bench sched messaging`, tools/perf/bench/sched-messaging.c,
//! is the same program).
//!
//! **The program**: `num_groups` (10) groups; `group` creates `num_fds` (20) receivers, each with
//! one `socketpair(AF_UNIX, SOCK_STREAM)` (`fdpair`), and 20 senders whose `out_fds[i]` is the
//! write end of receiver `i`'s pair: all 20 senders of a group write to the same socket of each
//! receiver. After the start signal (`ready`, a poll on `wakefd`) a sender does `loops` (100)
//! times: for each receiver, `write` one message of `datasize` (100) bytes; a receiver `read`s
//! `num_fds x loops` messages. The run's time is printed ("Time: 0.890" in hackbench.8's
//! example, "Total time:0.308 sec" in perf-bench.txt's, 10 groups = 400 tasks = 400,000 messages
//! each). The kernel side is `unix_stream_sendmsg` (net/unix/af_unix.c: allocate an skb, copy,
//! `skb_queue_tail` under the receive queue's lock, `sk_data_ready` wakes the reader, so a
//! reader asleep on another CPU gets a reschedule IPI) and `unix_stream_read_generic` (dequeue,
//! copy out, `consume_skb`, whose `sock_wfree` wakes a writer blocked on the send buffer).
//!
//! **Model**: `threads / (2 fds)` groups, the first `fds` threads of a group its receivers, the
//! rest its senders, in `group`'s creation order (threads beyond whole groups form one smaller
//! group, half senders); one bounded queue per receiver
//! stands for its socket. A sender loops forever over its group's receivers: a `Syscall` of
//! `send` kernel work whose last [`QUEUE_HOLD`] is under the receiver's socket lock (class
//! [`SOCKET_LOCK`], the receive queue's spinlock, shared by the 20 senders), then `QueuePut`;
//! a receiver loops on `QueueGet`, a `Syscall` of `recv` work and one unit of progress. A put
//! into an empty queue wakes the sleeping receiver (futex wake, reschedule IPI if it sleeps on
//! another vCPU), a put into a full one sleeps until a get makes room: the socket's wake-ups.
//! Runs are not separated (no start signal, no exit): the model streams at the steady rate, and
//! a run's time is 400,000 messages over that rate.
//!
//! **Numbers**: fds 20, datasize 100: hackbench's defaults. The queue holds [`QUEUE_CAPACITY`]
//! messages: the socket's send buffer (`wmem_default` = 212,992 bytes) over an assumed 768-byte
//! `truesize` of a 100-byte skb. The CPU per message is calibrated (tests/
//! modern_workloads_calibration.rs) to perf-bench.txt's 0.308 s for the default 400,000
//! messages, assumed measured on 8 CPUs (the text does not say): 1.3 M messages/s, 6.2 us of CPU
//! per message in all, of which [`SEND`] and [`RECV`] are the kernel work of the two system calls
//! (assumed split evenly) and the rest the model's wake-ups and context switches.
//!
//! Shortcuts: the socket's wait queues are a glibc-style queue (a futex mutex and two condition
//! variables, guest/sync.rs), so a put or get also takes that mutex in user space; pipes (`-p`)
//! and thread/process mode are not distinguished (one address space either way, and no op here
//! unmaps memory).
//!
//! **Progress**: messages received.

use crate::params::{ParamSpec, Params};
use crate::time::{Nanos, US};
use crate::vmexit::KernelFn;
use crate::workload::program::{Dist, Op, Program};
use crate::workload::Workload;

pub struct Hackbench;

const PROGRESS_UNIT: &str = "messages received (all receivers)";
/// Receivers (and senders) per group: hackbench's `num_fds`.
pub const FDS: u64 = 20;
/// hackbench's `num_groups`: the default thread count is `GROUPS x 2 x FDS` = 400.
pub const GROUPS: u32 = 10;
/// Bytes per message: hackbench's `datasize`.
pub const DATASIZE: u64 = 100;
/// Messages a socket holds before a writer sleeps: 212,992 / 768 (module doc).
pub const QUEUE_CAPACITY: usize = 277;
/// Lock class of a receiver socket's receive-queue lock (`sk_receive_queue.lock`).
pub const SOCKET_LOCK: &str = "unix-socket";
/// Kernel work of one `write` of a message, after the entry cost (calibrated, module doc).
pub const SEND: Nanos = 2 * US;
/// Kernel work of one `read` of a message, after the entry cost (calibrated, module doc).
pub const RECV: Nanos = 2 * US;
/// Part of [`SEND`] under the socket lock (`skb_queue_tail`, assumed).
pub const QUEUE_HOLD: Nanos = 200;
/// Copy cost per byte beyond the default 100 (assumed 10 GB/s: 0.1 ns a byte).
const COPY_PER_KIB: Nanos = 100;

/// (senders, receivers) of each group of `threads` threads: whole groups of `fds` and `fds`, then
/// the remainder (if any) as one group of `r - r / 2` senders and `r / 2` receivers. None when
/// nothing or a single thread would be left to a group.
pub fn group_sizes(threads: usize, fds: usize) -> Option<Vec<(usize, usize)>> {
    let (whole, rest) = (threads / (2 * fds), threads % (2 * fds));
    if threads == 0 || rest == 1 {
        return None;
    }
    let mut sizes = vec![(fds, fds); whole];
    if rest > 0 {
        sizes.push((rest - rest / 2, rest / 2));
    }
    Some(sizes)
}

impl Workload for Hackbench {
    fn name(&self) -> &'static str {
        "hackbench"
    }
    fn describe(&self) -> &'static str {
        "hackbench (rt-tests, perf bench sched messaging): groups of 20 senders writing 100-byte \
         messages to 20 receivers over AF_UNIX sockets, all kernel time and cross-vCPU wake-ups; \
         400 threads = 10 groups by default; calibrated to 0.308 s per 400,000 messages"
    }
    fn progress_unit(&self) -> &'static str {
        PROGRESS_UNIT
    }
    fn params(&self) -> Vec<ParamSpec> {
        vec![
            ParamSpec::int(
                "fds",
                FDS,
                "senders and receivers per group (hackbench -f). 20: hackbench's default. Threads \
                 beyond a multiple of 2 x fds form one smaller group.",
            )
            .range(1.0, 1_000.0),
            ParamSpec::int(
                "datasize",
                DATASIZE,
                "bytes per message (hackbench -s). 100: hackbench's default; larger messages add \
                 copy time on both sides (assumed 10 GB/s).",
            )
            .range(1.0, 1_048_576.0),
        ]
    }
    fn default_threads(&self, _vcpus: u32) -> u32 {
        GROUPS * 2 * FDS as u32
    }
    fn build(&self, threads: u32, params: &Params) -> Result<Program, String> {
        let fds = params.int("fds") as usize;
        let sizes = group_sizes(threads as usize, fds).ok_or_else(|| {
            format!(
                "hackbench runs groups of {fds} senders and {fds} receivers (threads beyond whole groups form \
                 one smaller group, at least 1 sender and 1 receiver), so threads must not be 0 or leave 1 over \
                 a multiple of {}, got {threads}",
                2 * fds
            )
        })?;
        let copy = params.int("datasize").saturating_sub(DATASIZE) * COPY_PER_KIB / 1024;
        let sockets: usize = sizes.iter().map(|(_, r)| r).sum();
        let mut program = Program::new(PROGRESS_UNIT);
        program.queues = vec![QUEUE_CAPACITY; sockets];
        program.kernel_locks = vec![SOCKET_LOCK.to_string(); sockets];
        let mut first = 0;
        for (senders, receivers) in sizes {
            let receivers = first..first + receivers;
            first = receivers.end;
            // `group` creates the receivers first, then the senders.
            for r in receivers.clone() {
                let body = vec![Op::QueueGet(r), Op::kernel(Dist::Const(RECV + copy)), Op::Progress];
                program.threads.push(vec![Op::Loop { count: None, body }]);
            }
            for _ in 0..senders {
                let body = receivers
                    .clone()
                    .flat_map(|r| {
                        [
                            Op::kernel(Dist::Const(SEND + copy - QUEUE_HOLD)),
                            Op::kernel_section(r, Dist::Const(QUEUE_HOLD), KernelFn::SkbQueueTail),
                            Op::QueuePut(r),
                        ]
                    })
                    .collect();
                program.threads.push(vec![Op::Loop { count: None, body }]);
            }
        }
        Ok(program)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::builtin::test_support::*;

    #[test]
    fn a_group_is_fds_senders_writing_to_every_receiver_of_the_group() {
        assert_defaults_parse(&Hackbench);
        let params = params_with(&Hackbench, &[("fds", 2i64.into())]);
        let program = build_valid(&Hackbench, 8, &params);
        assert_eq!(program.queues, vec![QUEUE_CAPACITY; 4]);
        // Group 1 is threads 4-7: receivers 2 and 3 (threads 4 and 5), then its senders.
        let send = |r| {
            [
                Op::kernel(Dist::Const(SEND - QUEUE_HOLD)),
                Op::kernel_section(r, Dist::Const(QUEUE_HOLD), KernelFn::SkbQueueTail),
                Op::QueuePut(r),
            ]
        };
        assert_eq!(loop_body(&program.threads[7]), [send(2), send(3)].concat());
        assert_eq!(loop_body(&program.threads[5]), [Op::QueueGet(3), Op::kernel(Dist::Const(RECV)), Op::Progress]);
        assert_eq!(Hackbench.default_threads(3), 400);
    }

    #[test]
    fn threads_beyond_whole_groups_form_one_smaller_group() {
        assert_eq!(group_sizes(400, 20), Some(vec![(20, 20); 10]));
        assert_eq!(group_sizes(45, 20), Some(vec![(20, 20), (3, 2)]));
        assert_eq!(group_sizes(41, 20), None);
        let err = Hackbench.build(0, &Params::defaults(&Hackbench.params())).unwrap_err();
        assert!(err.contains("multiple of 40, got 0"), "{err}");
        let program = build_valid(&Hackbench, 3, &Params::defaults(&Hackbench.params()));
        assert_eq!(program.queues.len(), 1);
    }
}
