//! `parsec.bodytrack`: tracks a human body through multi-camera video with an annealed particle
//! filter.
//!
//! **The application** (PARSEC 2.1, pkgs/apps/bodytrack/src/TrackingBenchmark; the pthreads
//! build): `-n N` runs N worker threads (`WorkPoolPthread`), a main thread that only dispatches
//! and an asynchronous I/O thread that loads the next frame's four camera images
//! (`TrackingModelPthread::GetObservation`). Each frame is 22 commands to the worker group
//! (threads/WorkerGroup.cpp): for each of 4 cameras an edge map in three passes (gradient, row
//! filter, column filter: 60 tickets of 8 image rows each, 640 x 480 images), then for each of 5
//! annealing layers new particles (ceil(4000 / 32) = 125 tickets) and their weights (ceil(4000 /
//! 4) = 1000 tickets). A command is a condition-variable broadcast, the `workInit` barrier, a
//! ticket loop on a mutex-protected `TicketDispenser` (threads/TicketDispenser.h) and two more
//! barriers (`Shape::WorkerGroup` in mod.rs has the protocol).
//!
//! **Seed 000 numbers**: Table 1 (corun): lock spinning 4.56% of CPU (57.58% of kernel time),
//! TLB 1.96% (24.75%); Figure 3: futex-queue lock; section 4.1.1 uses it for the preemption
//! delay sweep (Figure 7a) as a futex-intensive application. Its TLB rate is not in the text.
//!
//! **Model**: the structure above from the source. The work is assumed (no profile of the
//! commands is at hand): every command takes 16 ms of computation in all, 2 ms per worker with 8
//! workers (the granularity of the earlier model's parallel steps), spread evenly over its
//! tickets, exponential per ticket; the I/O thread decodes for 1 ms per frame (assumed). TLB:
//! the I/O thread maps and frees each of the 4 camera images (300 KiB, 75 pages: glibc mmaps
//! blocks of 128 KiB or more) per frame; Table 1's 1.96% estimates 64 IPIs/s/vCPU
//! (`tlb_rate_from_table1`) and tests/parsec_calibration.rs holds the solo rate within 25% of it.
//!
//! **Progress**: worker-group commands.

use super::{BarrierImpl, Event, Profile, Shape};
use crate::time::{Nanos, MS};

/// Seed 000 Table 1: % of total CPU in TLB shootdown, corun.
pub const TABLE1_TLB_SHARE: f64 = 1.96;

/// Computation per command in all (assumed): 2 ms per worker at 8 workers.
const COMMAND_WORK: Nanos = 16 * MS;

const fn per_ticket(tickets: u64) -> (u64, Nanos) {
    (tickets, COMMAND_WORK / tickets)
}

const IMAGE: (u64, Nanos) = per_ticket(60);
const NEW_PARTICLES: (u64, Nanos) = per_ticket(125);
const WEIGHTS: (u64, Nanos) = per_ticket(1000);

/// A frame's commands: 4 cameras' edge maps (3 passes each), then 5 annealing layers.
const FRAME: [(u64, Nanos); 22] = [
    IMAGE, IMAGE, IMAGE, IMAGE, IMAGE, IMAGE, IMAGE, IMAGE, IMAGE, IMAGE, IMAGE, IMAGE, //
    NEW_PARTICLES, WEIGHTS, NEW_PARTICLES, WEIGHTS, NEW_PARTICLES, WEIGHTS, NEW_PARTICLES, WEIGHTS, NEW_PARTICLES, WEIGHTS,
];

pub static PROFILE: Profile = Profile {
    name: "parsec.bodytrack",
    describe: "PARSEC bodytrack: a main thread dispatching 22 commands per frame to N workers \
               (broadcast, three barriers, work taken from a mutex-protected ticket dispenser: \
               60, 125 or 1000 tickets), and an I/O thread freeing 4 camera images per frame \
               (~64 TLB IPIs/s/vCPU, from seed 000 Table 1)",
    progress_unit: "worker-group commands",
    shape: Shape::WorkerGroup { commands: &FRAME, io_work: MS, io_buffers: (Event::Buffer { pages: 75, touch: 0 }, 4) },
    mutexes: 1,
    single_threaded: false,
    barrier_impl: BarrierImpl::Pthread,
};

#[cfg(test)]
mod tests {
    use super::super::model_tests::*;
    use super::super::BODYTRACK;
    use crate::workload::program::Op;
    use crate::workload::Workload;

    #[test]
    fn main_workers_and_the_io_thread_follow_the_worker_group_protocol() {
        let program = build_default(&BODYTRACK);
        // -n 8: main, 8 workers, the I/O thread.
        assert_eq!(BODYTRACK.default_threads(8), 10);
        assert_eq!(program.threads.len(), 10);
        assert_eq!(program.barriers, [9, 8, 8, 9]);
        let main = &program.threads[0];
        assert_eq!(count(main, |op| matches!(op, Op::Progress)), 22, "one count per command");
        assert_eq!(count(main, |op| matches!(op, Op::ParsecBarrier { barrier: 0, .. })), 22);
        // Worker 0 resets the dispenser and idles the command; the others only take tickets.
        let first = &program.threads[1];
        let resets: Vec<u64> =
            flat(first).iter().filter_map(|op| if let Op::ResetTickets { count, .. } = op { Some(*count) } else { None }).collect();
        assert_eq!(resets[..4], [60, 60, 60, 60]);
        assert_eq!(resets[12..14], [125, 1000]);
        assert_eq!(count(first, |op| matches!(op, Op::MutexLock(0))), 22);
        let other = &program.threads[5];
        assert_eq!(count(other, |op| matches!(op, Op::ResetTickets { .. } | Op::MutexLock(_))), 0);
        assert_eq!(count(other, |op| matches!(op, Op::Barrier { .. })), 66, "workInit, workDone, poolReady per command");
        // The I/O thread frees the four camera images of each frame.
        let io = &program.threads[9];
        assert_eq!(count(io, |op| matches!(op, Op::Munmap { pages: 75 })), 4);
        assert_eq!(count(io, |op| matches!(op, Op::QueuePut(0))), 1);
    }
}
