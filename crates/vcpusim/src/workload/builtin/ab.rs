//! `ab`: ApacheBench keeping `concurrency` requests outstanding against a threaded web server in
//! the VM (seed 003 slide 14: "ab had a large number of threads").
//!
//! **The server** is Apache httpd's worker MPM (httpd 2.2 `server/mpm/worker/worker.c`), one
//! child process: a listener thread (`listener_thread`) waits for a connection (poll + accept),
//! then hands the socket to an idle worker through the fd queue (`ap_queue_push`, fdqueue.c: a
//! mutex and a condition variable; the queue holds at most ThreadsPerChild sockets); each worker
//! thread (`worker_thread`) pops a socket (`ap_queue_pop`), reads the request, runs the handler
//! (user code: parse, map the URI to the file, log), writes the response and closes the
//! connection (`process_socket` -> `ap_process_connection`, `ap_lingering_close`). Threads per
//! child: `DEFAULT_THREADS_PER_CHILD` = 25 (worker/mpm_default.h), plus the listener.
//!
//! **The client** is `ab -c concurrency` (httpd `support/ab.c`) on another machine: it opens
//! `concurrency` connections, and each time a response is complete it opens the next one
//! (`start_connect` from `close_connection`), without keep-alive (ab's default, no `-k`). The
//! client machine and the network are not modelled: the time from a response to the client's
//! next request, and the interrupts of the network device, are zero (docs/model.md "§ seed 003:
//! workloads"). A connection is a token in queue 0 (capacity `concurrency`); the listener puts
//! the `concurrency` first ones at start (ab's first burst of connects), takes one per accept,
//! and each worker puts one back when it has closed its connection (the client connects again).
//!
//! **Metrics**: one unit of progress per completed request; vms.csv gains `requests_per_sec`
//! and `time_per_request_ms` when a VM runs `ab` (run/report.rs `AB_COLUMNS`), computed as
//! ab's `output_results` prints them: "Requests per second" = done / timetaken and "Time per
//! request (mean)" = concurrency * timetaken * 1000 / done (Little's law over the closed loop).
//!
//! **Costs per request** (all assumed; no seed gives them): accept 10 us of kernel time in the
//! listener (TCP accept, fd allocation), a 5 us read, 25 us of handler in user mode, 30 us of
//! kernel time for the write and the close (send, FIN, lingering close). About 70 us of CPU
//! per request: ~14,000 requests/s per core, the order a 2010s Xeon serves a small static file
//! without keep-alive.

use crate::params::{ParamSpec, Params};
use crate::time::{Nanos, US};
use crate::workload::program::{Dist, Op, Program};
use crate::workload::Workload;

pub struct Ab;

const PROGRESS_UNIT: &str = "requests completed (responses written and connections closed)";

/// httpd worker MPM's `DEFAULT_THREADS_PER_CHILD` (server/mpm/worker/mpm_default.h).
pub const THREADS_PER_CHILD: u32 = 25;
/// ab's concurrency (`-c`); assumed: the slides do not give it.
pub const DEFAULT_CONCURRENCY: u64 = 100;
/// Kernel work of poll + accept of one connection in the listener (assumed).
pub const ACCEPT: Nanos = 10 * US;
/// Kernel work of reading the request (assumed).
pub const READ: Nanos = 5 * US;
/// User work of the request's handler (assumed).
pub const HANDLER: Nanos = 25 * US;
/// Kernel work of writing the response and closing the connection (assumed).
pub const WRITE_CLOSE: Nanos = 30 * US;

/// Queue 0: connections the client has opened and the listener not yet accepted.
const CONNECTIONS: usize = 0;
/// Queue 1: the worker MPM's fd queue, accepted sockets waiting for a worker.
const FD_QUEUE: usize = 1;

impl Workload for Ab {
    fn name(&self) -> &'static str {
        "ab"
    }
    fn describe(&self) -> &'static str {
        "ApacheBench (ab -c N, no keep-alive) against Apache httpd's worker MPM in the VM: one \
         listener and 25 worker threads (ThreadsPerChild); request throughput and mean latency \
         as ab reports them (seed 003 slide 14)"
    }
    fn progress_unit(&self) -> &'static str {
        PROGRESS_UNIT
    }
    /// The listener and ThreadsPerChild workers, whatever the vCPU count.
    fn default_threads(&self, _vcpus: u32) -> u32 {
        THREADS_PER_CHILD + 1
    }
    fn params(&self) -> Vec<ParamSpec> {
        vec![
            ParamSpec::int(
                "concurrency",
                DEFAULT_CONCURRENCY,
                "requests ab keeps outstanding (ab -c); assumed 100, the slides do not give it.",
            )
            .range(1.0, 100_000.0),
            ParamSpec::duration("accept", ACCEPT, "kernel time of poll + accept per connection, in the listener thread (assumed)."),
            ParamSpec::duration("read", READ, "kernel time of reading one request (assumed)."),
            ParamSpec::duration("handler", HANDLER, "user time of the request handler (assumed)."),
            ParamSpec::duration("write_close", WRITE_CLOSE, "kernel time of writing the response and closing the connection (assumed)."),
        ]
    }
    fn build(&self, threads: u32, params: &Params) -> Result<Program, String> {
        if threads < 2 {
            return Err(format!("ab needs at least 2 threads (the listener and a worker), got {threads}"));
        }
        let concurrency = params.int("concurrency");
        if concurrency == 0 {
            return Err("ab: concurrency must be at least 1, got 0".into());
        }
        let workers = (threads - 1) as usize;
        let mut program = Program::new(PROGRESS_UNIT);
        program.queues = vec![concurrency as usize, workers];
        program.clients = Some(concurrency as u32);
        let syscall = |ns: Nanos| Op::kernel(Dist::Const(ns));
        let mut listener = vec![Op::Loop { count: Some(concurrency), body: vec![Op::QueuePut(CONNECTIONS)] }];
        listener.push(Op::Loop {
            count: None,
            body: vec![Op::QueueGet(CONNECTIONS), syscall(params.duration("accept")), Op::QueuePut(FD_QUEUE)],
        });
        program.threads.push(listener);
        let worker = vec![Op::Loop {
            count: None,
            body: vec![
                Op::QueueGet(FD_QUEUE),
                syscall(params.duration("read")),
                Op::Compute(Dist::Exp { mean: params.duration("handler") }),
                syscall(params.duration("write_close")),
                Op::Progress,
                Op::QueuePut(CONNECTIONS),
            ],
        }];
        program.threads.extend(std::iter::repeat_n(worker, workers));
        Ok(program)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::builtin::test_support::*;

    #[test]
    fn a_listener_feeds_threads_per_child_workers_through_the_fd_queue() {
        assert_defaults_parse(&Ab);
        assert_eq!(Ab.default_threads(4), 26);
        let program = build_valid(&Ab, 26, &Params::defaults(&Ab.params()));
        assert_eq!(program.queues, vec![100, 25]);
        assert_eq!(program.clients, Some(100));
        // The listener opens ab's first `concurrency` connections, then accepts and hands off.
        assert_eq!(program.threads[0][0], Op::Loop { count: Some(100), body: vec![Op::QueuePut(CONNECTIONS)] });
        let body = loop_body(&program.threads[0][1..]);
        assert_eq!(body[0], Op::QueueGet(CONNECTIONS));
        assert_eq!(body[2], Op::QueuePut(FD_QUEUE));
        // A worker counts a request once its connection is closed, then the client reconnects.
        let body = loop_body(&program.threads[25]);
        assert_eq!(body[0], Op::QueueGet(FD_QUEUE));
        assert_eq!(&body[4..], &[Op::Progress, Op::QueuePut(CONNECTIONS)]);
        let cpu: f64 = [ACCEPT, READ, HANDLER, WRITE_CLOSE].iter().map(|n| *n as f64).sum();
        assert_eq!(cpu, 70_000.0);
    }

    #[test]
    fn one_thread_is_refused_with_the_reason() {
        let err = Ab.build(1, &Params::defaults(&Ab.params())).unwrap_err();
        assert!(err.contains("at least 2 threads"), "{err}");
    }
}
