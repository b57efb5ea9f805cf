//! The Tascell worker runtime (Hiraishi et al., PPoPP 2009, "Backtracking-based load
//! balancing"; sources: github.com/tascell/sc-tascell at 1ddaeb3 (2015-07), the version of the
//! seed's time: `src/sample/tcell/worker.sc`, `worker.sh`, `src/rule/tcell.rule`), run by a
//! VM's threads executing `Op::WorkSteal` (one worker per thread).
//!
//! **The protocol, as the source has it** (intra-node workers; the inter-node server is not
//! modelled):
//! - An idle worker sends a task request "treq any" (`recv-exec-send` →
//!   `send-treq-to-initialize-task`). In its own thread, `recv-treq` picks the first candidate
//!   with `choose-treq` (alternately a random worker, `CHS-RANDOM`, and the next in order,
//!   `CHS-ORDER`; `last-choose` starts at `CHS-RANDOM`, so the first request goes in order from
//!   `last-treq` = its own id) and scans all other workers from there; `try-treq` accepts at the
//!   first whose top task is running (`TASK-STARTED`) and pushes the request on that worker's
//!   request stack (`treq-top`). With no taker the answer is `none` at once.
//! - The requester then waits for the answer in `pthread_cond_wait(&thr->cond, &thr->mut)`.
//! - A busy worker polls `thr->req` at every `do-two` / `do-many` entry (every recursive call:
//!   the model answers at once, through `Next::Poll`, which ends the worker's running step).
//!   `handle-reqs` backtracks through the nested `bk` functions: the innermost frame that has
//!   already spawned, or else the task's root, acts first, then each inner frame, outermost first;
//!   each gives away the upper half of its remaining iterations while requests remain
//!   (`workload/worksteal.rs`): the oldest spawnable point, i.e. the largest task. A request it
//!   cannot serve gets `none`. The task (or `none`) is stored for the requester, whose condition
//!   variable is signalled under its mutex.
//! - After `none`, the requester waits `delay` (1 µs, doubled after each further `none` up to
//!   `DELAY-MAX` = 100 ms) in `pthread_cond_timedwait(&thr->cond-r)` and asks again.
//! - Before each request a worker answers every request queued at it with `none`
//!   (`flush-treq-with-none`).
//! - A worker whose loop ends with spawned tasks outstanding waits for them, most recent first
//!   (`wait-rslt` with stealing back): it sends requests to the thief of that task (accepted while
//!   the thief still has it) and runs what it gets, until the result arrives; the thief sends the
//!   result under the owner's mutex and wakes it.
//!
//! **Shortcuts** (docs/model.md, "Tascell"):
//! - The back-off wait after `none` spins (`Step::UserSpin`) instead of sleeping in
//!   `pthread_cond_timedwait`: the guest model has no timed sleep. It ends early when the
//!   awaited result arrives or the computation ends.
//! - A stealing-back request still queued when the thief finishes the task is dropped instead of
//!   answered `none` (the source's `w-none` bookkeeping waits for that `none`).
//! - The probability guard and the `w-rack` check of `try-treq` are not modelled (the samples
//!   are built without `USE-PROBGUARD`; `w-rack` concerns external workers).

use super::kernel::{GuestEnv, GuestKernel};
use super::kernel_fn::KernelFn;
use super::thread::{Action, SpinCond, Step};
use crate::ids::ThreadId;
use crate::time::Nanos;
use crate::workload::program::ObjIndex;
use crate::workload::worksteal::{Node, WorkStealSpec};
use rand::Rng;

/// Index of a task in `WorkStealing::tasks`.
pub type TaskId = u32;

/// What a worker's request got.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Response {
    /// A task: iterations `lo .. hi` of `node`.
    Task {
        id: TaskId,
        node: Node,
        lo: u32,
        hi: u32,
    },
    None,
}

/// An instantaneous step of the runtime (`Action::Ws`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum WsAction {
    /// The requester picks a victim and queues its request there (`recv-treq`, `try-treq`).
    SendTreq,
    /// The requester, holding its mutex: has its answer come (or is the wait moot)? Else
    /// `pthread_cond_wait` and ask again.
    AwaitResponse,
    /// The victim, holding worker `to`'s mutex, stores the answer.
    Deliver { to: u32, response: Response },
    /// The thief, holding the owner's mutex, stores the task's result (`TASK-HOME-DONE`).
    MarkDone(TaskId),
    /// The root task ended: the computation is over.
    Finish,
}

/// A loop in progress (a `do-two` / `do-many` frame the model keeps; see the module doc).
#[derive(Clone, Debug, PartialEq)]
struct Frame {
    node: Node,
    /// The iteration in progress.
    cur: u32,
    /// One past the last iteration still this frame's.
    end: u32,
    /// Work done in iteration `cur` (kept exact for the innermost frame only).
    pos: f64,
    /// Tasks spawned from this frame whose results are still awaited, oldest first.
    subs: Vec<TaskId>,
}

/// A task a worker executes; nested ones come from stealing back.
#[derive(Clone, Debug, PartialEq)]
struct TaskExec {
    id: TaskId,
    frames: Vec<Frame>,
}

/// A request queued at a worker (`task-home` on `treq-top`).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Req {
    from: u32,
    /// Stealing back for this task (else "any").
    back: Option<TaskId>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct TaskRec {
    /// The worker awaiting the result (`None`: the root task).
    pub owner: Option<u32>,
    /// The worker that got it.
    pub thief: u32,
    pub done: bool,
}

/// One worker (`struct thread-data`).
#[derive(Clone, Debug, PartialEq)]
pub struct Worker {
    pub thread: ThreadId,
    /// `thr->mut` and `thr->cond` (indices into the VM's mutexes and condition variables).
    pub mutex: ObjIndex,
    pub cond: ObjIndex,
    tasks: Vec<TaskExec>,
    /// Requests accepted for it, served at its next poll, the most recent first (`treq-top`).
    queue: Vec<Req>,
    /// The answer to its outstanding request.
    response: Option<Response>,
    /// A request is out and unanswered.
    outstanding: bool,
    /// Waiting for this task's result (`wait-rslt`), stealing back.
    back: Option<TaskId>,
    /// The next back-off wait.
    delay: Nanos,
    /// `last-choose` is `CHS-RANDOM` (else `CHS-ORDER`).
    last_random: bool,
    last_treq: u32,
    /// Work the running step of its innermost frame started with.
    run_left: Option<f64>,
}

impl Worker {
    /// Executing a task (its top task is `TASK-STARTED`), not requesting.
    fn executing(&self) -> bool {
        !self.tasks.is_empty() && self.back.is_none() && !self.outstanding && self.response.is_none()
    }
}

/// Counts, for tests and reports.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WsStats {
    /// Tasks handed over (to "any" and stealing-back requests).
    pub steals: u64,
    /// Of which to stealing-back requests.
    pub steals_back: u64,
    /// `none` answers.
    pub nones: u64,
    /// Requests sent.
    pub requests: u64,
}

/// The runtime state of one VM's work-stealing computation.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkStealing {
    pub spec: WorkStealSpec,
    pub workers: Vec<Worker>,
    pub tasks: Vec<TaskRec>,
    /// The root task ended.
    pub done: bool,
    pub stats: WsStats,
    /// Work of every task handed over, in order (tests).
    pub stolen: Vec<f64>,
}

impl WorkStealing {
    /// Worker `w` runs on thread `threads[w]` with mutex and condition variable `w` of the
    /// program; worker 0 starts with the root task.
    pub fn new(spec: WorkStealSpec, threads: &[ThreadId]) -> Self {
        let root = spec.tree.root();
        let n = spec.tree.iterations(root);
        let workers = threads
            .iter()
            .enumerate()
            .map(|(w, &thread)| Worker {
                thread,
                mutex: w,
                cond: w,
                tasks: if w == 0 {
                    vec![TaskExec { id: 0, frames: vec![Frame { node: root, cur: 0, end: n, pos: 0.0, subs: Vec::new() }] }]
                } else {
                    Vec::new()
                },
                queue: Vec::new(),
                response: None,
                outstanding: false,
                back: None,
                delay: spec.delay,
                last_random: true,
                last_treq: w as u32,
                run_left: None,
            })
            .collect();
        WorkStealing {
            spec,
            workers,
            tasks: vec![TaskRec { owner: None, thief: 0, done: false }],
            done: false,
            stats: WsStats::default(),
            stolen: Vec::new(),
        }
    }

    /// Worker `w`'s innermost frame got `done` more work done: move its position on.
    fn advance(&mut self, w: usize, done: f64) {
        let tree = self.spec.tree.clone();
        let Some(f) = self.workers[w].tasks.last_mut().and_then(|t| t.frames.last_mut()) else { return };
        let (cur, pos) = tree.locate(f.node, f.cur, f.end, f.pos + done);
        f.cur = cur;
        f.pos = pos.min(tree.iteration(f.node, cur));
    }

    /// Backtrack worker `w`'s top task to its oldest spawnable point and spawn a task for
    /// worker `to` (one round of the `bk` chain; module doc). `None`: nothing to spawn.
    pub fn spawn(&mut self, w: usize, to: u32) -> Option<Response> {
        let id = self.tasks.len() as TaskId;
        let tree = &self.spec.tree;
        let exec = self.workers[w].tasks.last_mut()?;
        let j = exec.frames.last_mut()?;
        let (node, lo, hi) = if j.end - j.cur >= 2 {
            // The innermost kept frame acts first.
            let put_from = (1 + j.cur + j.end) / 2;
            let task = (j.node, put_from, j.end);
            j.end = put_from;
            j.subs.push(id);
            task
        } else {
            // Then the levels inside its current iteration, outermost first.
            let (mut node, mut it, mut off) = (j.node, j.cur, j.pos);
            loop {
                let pre = tree.pre(node, it);
                if off < pre {
                    return None;
                }
                let child = tree.child(node, it)?;
                off -= pre;
                let end = tree.iterations(child);
                let (cj, coff) = tree.locate(child, 0, end, off);
                if end - cj >= 2 {
                    let put_from = (1 + cj + end) / 2;
                    exec.frames.push(Frame { node: child, cur: cj, end: put_from, pos: coff, subs: vec![id] });
                    break (child, put_from, end);
                }
                (node, it, off) = (child, cj, coff);
            }
        };
        self.stolen.push(tree.range(node, lo, hi));
        self.tasks.push(TaskRec { owner: Some(w as u32), thief: to, done: false });
        Some(Response::Task { id, node, lo, hi })
    }
}

impl GuestKernel {
    /// The worker thread `t` runs.
    fn ws_worker(&self, env: &GuestEnv, t: ThreadId) -> usize {
        env.threads[t.idx()].index as usize
    }

    /// `Op::WorkSteal`: the next steps of worker thread `t`, or `None` when the computation is
    /// over (the thread leaves the op).
    // Out of the interpreter's hot loop (Tascell only): docs/speed.md.
    #[inline(never)]
    pub fn ws_next(&mut self, env: &mut GuestEnv, t: ThreadId) -> Option<Vec<Step>> {
        let w = self.ws_worker(env, t);
        let ws = self.ws.as_deref_mut().expect("a work-stealing op has its runtime");
        if ws.done {
            return None;
        }
        loop {
            if ws.workers[w].run_left.take().is_some() {
                // The innermost frame's step ran to its end: its loop is done.
                if let Some(f) = ws.workers[w].tasks.last_mut().and_then(|x| x.frames.last_mut()) {
                    f.cur = f.end - 1;
                    f.pos = ws.spec.tree.iteration(f.node, f.cur);
                }
            }
            let wk = &ws.workers[w];
            if let Some(resp) = wk.response.filter(|_| !wk.outstanding) {
                // The answer to a request (`AwaitResponse` took it out of the wait).
                ws.workers[w].response = None;
                match resp {
                    Response::Task { id, node, lo, hi } => {
                        let wk = &mut ws.workers[w];
                        wk.tasks.push(TaskExec { id, frames: vec![Frame { node, cur: lo, end: hi, pos: 0.0, subs: Vec::new() }] });
                        wk.back = None;
                        wk.delay = ws.spec.delay;
                    }
                    Response::None => {
                        let wk = &mut ws.workers[w];
                        let delay = wk.delay;
                        wk.delay = (delay * 2).min(ws.spec.delay_max);
                        return Some(vec![Step::UserSpin { cond: SpinCond::WsBackoff { worker: w as u32 }, budget: Some(delay) }]);
                    }
                }
                continue;
            }
            if let Some(sub) = wk.back {
                if ws.tasks[sub as usize].done {
                    ws.workers[w].back = None;
                    continue;
                }
                return Some(self.ws_request(w));
            }
            if wk.tasks.is_empty() {
                return Some(self.ws_request(w));
            }
            if !wk.queue.is_empty() {
                // A poll point: serve the requests queued meanwhile.
                return Some(ws.serve(w));
            }
            let tree = &ws.spec.tree;
            let exec = ws.workers[w].tasks.last_mut().expect("checked");
            let Some(f) = exec.frames.last() else {
                // The task is done: send its result (or end the computation).
                let id = exec.id;
                ws.workers[w].tasks.pop();
                return Some(ws.finish_task(id));
            };
            let left = (tree.range(f.node, f.cur, f.end) - f.pos).max(0.0);
            if left >= 0.5 {
                ws.workers[w].run_left = Some(left);
                return Some(vec![Step::Run { ns: left.round() as Nanos, func: KernelFn::User }]);
            }
            // The frame's loop is over: collect its spawned tasks, most recent first.
            let f = exec.frames.last_mut().expect("checked");
            if let Some(&sub) = f.subs.last() {
                if ws.tasks[sub as usize].done {
                    f.subs.pop();
                } else {
                    let wk = &mut ws.workers[w];
                    wk.back = Some(sub);
                    wk.delay = ws.spec.delay;
                }
                continue;
            }
            exec.frames.pop();
            // The enclosing frame's iteration in progress is complete.
            if let Some(p) = exec.frames.last_mut() {
                p.pos = ws.spec.tree.iteration(p.node, p.cur);
            }
        }
    }

    /// Worker `w` asks for a task ("any", or stealing back from the thief of `back`): flush
    /// the requests queued at it with `none`, send, wait.
    fn ws_request(&mut self, w: usize) -> Vec<Step> {
        let ws = self.ws.as_deref_mut().expect("checked");
        let mut steps = Vec::new();
        for req in std::mem::take(&mut ws.workers[w].queue).into_iter().rev() {
            steps.extend(ws.answer(req.from, Response::None));
        }
        let wk = &ws.workers[w];
        steps.extend([
            Step::Run { ns: ws.spec.request, func: KernelFn::User },
            Step::Do(Action::Ws(WsAction::SendTreq)),
            Step::Do(Action::MutexLock(wk.mutex)),
            Step::Do(Action::Ws(WsAction::AwaitResponse)),
        ]);
        steps
    }

    /// Run an instantaneous runtime step of thread `t`.
    // Out of the interpreter's hot loop (Tascell only): docs/speed.md.
    #[inline(never)]
    pub fn ws_action(&mut self, env: &mut GuestEnv, t: ThreadId, action: WsAction) {
        let w = self.ws_worker(env, t);
        let ws = self.ws.as_deref_mut().expect("a work-stealing op has its runtime");
        match action {
            WsAction::SendTreq => {
                ws.stats.requests += 1;
                let n = ws.workers.len() as u32;
                let victim = match ws.workers[w].back {
                    Some(sub) => {
                        let rec = &ws.tasks[sub as usize];
                        (!rec.done).then_some(rec.thief)
                    }
                    None => {
                        let wk = &mut ws.workers[w];
                        // choose-treq: switch strategy, then scan from the pick.
                        wk.last_random = !wk.last_random;
                        let start = if wk.last_random {
                            env.threads[t.idx()].rng.random_range(0..n)
                        } else {
                            wk.last_treq = (wk.last_treq + 1) % n;
                            wk.last_treq
                        };
                        (0..n).map(|d| (start + d) % n).find(|&id| id as usize != w && ws.workers[id as usize].executing())
                    }
                };
                let wk = &mut ws.workers[w];
                wk.outstanding = true;
                match victim {
                    Some(v) => {
                        let back = wk.back;
                        ws.workers[v as usize].queue.push(Req { from: w as u32, back });
                        let vt = ws.workers[v as usize].thread;
                        self.poll(env.threads, vt);
                    }
                    None => {
                        wk.outstanding = false;
                        wk.response = Some(Response::None);
                        ws.stats.nones += 1;
                    }
                }
            }
            WsAction::AwaitResponse => {
                let wk = &ws.workers[w];
                let moot = wk.back.is_some_and(|s| ws.tasks[s as usize].done);
                let (mutex, cond) = (wk.mutex, wk.cond);
                let steps = if wk.response.is_some() || moot || ws.done {
                    let wk = &mut ws.workers[w];
                    wk.outstanding = false;
                    if moot && wk.response == Some(Response::None) {
                        wk.response = None;
                    }
                    vec![Step::Do(Action::MutexUnlock(mutex))]
                } else {
                    vec![Step::Do(Action::CondWait { cond, mutex }), Step::Do(Action::Ws(WsAction::AwaitResponse))]
                };
                env.push_front_steps(t, steps);
            }
            WsAction::Deliver { to, response } => {
                let wk = &mut ws.workers[to as usize];
                wk.response = Some(response);
                wk.outstanding = false;
            }
            WsAction::MarkDone(id) => {
                ws.tasks[id as usize].done = true;
                // Stealing-back requests for it still queued here are moot (shortcut: dropped).
                ws.workers[w].queue.retain(|r| r.back != Some(id));
                if let Some(owner) = ws.tasks[id as usize].owner {
                    let ot = ws.workers[owner as usize].thread;
                    self.poke(env.threads, ot);
                }
            }
            WsAction::Finish => {
                ws.done = true;
                let spinners: Vec<ThreadId> = ws.workers.iter().map(|x| x.thread).filter(|&x| x != t).collect();
                for s in spinners {
                    self.poke(env.threads, s);
                }
            }
        }
    }

    /// Whether back-off spinner `worker` may stop: its awaited result came, or all is over.
    pub fn ws_backoff_over(&self, worker: u32) -> bool {
        let ws = self.ws.as_deref().expect("a work-stealing spin has its runtime");
        ws.done || ws.workers[worker as usize].back.is_some_and(|s| ws.tasks[s as usize].done)
    }

    /// At the start of thread `t`'s `Run` step `step_remaining` (`left` work-ns still to do):
    /// if it is a worker's task work and requests wait, settle its position and answer them
    /// first (the poll at the next recursive call). Returns the steps to run instead of the rest.
    // Out of the interpreter's hot loop (Tascell only): docs/speed.md.
    #[inline(never)]
    pub fn ws_poll(&mut self, t_index: usize, left: Nanos) -> Option<Vec<Step>> {
        let ws = self.ws.as_deref_mut()?;
        let wk = ws.workers.get_mut(t_index)?;
        if wk.queue.is_empty() || wk.run_left.is_none() {
            return None;
        }
        let started = wk.run_left.take().expect("checked");
        ws.advance(t_index, (started - left as f64).max(0.0));
        Some(ws.serve(t_index))
    }

    /// Queue a poll of thread `t`'s vCPU for the host (`Next::Poll`), if `t` runs there.
    fn poll(&mut self, threads: &[super::thread::Thread], t: ThreadId) {
        let u = threads[t.idx()].vcpu;
        if self.vcpus[self.index_of(u)].current == Some(t) {
            self.polls.push_back(u);
        }
    }
}

impl WorkStealing {
    /// Worker `w` at a poll: answer its queued requests, the most recent first.
    fn serve(&mut self, w: usize) -> Vec<Step> {
        let mut steps = Vec::new();
        while let Some(req) = self.workers[w].queue.pop() {
            let valid = req.back.is_none_or(|s| !self.tasks[s as usize].done);
            let response = if valid { self.spawn(w, req.from) } else { None };
            match response {
                Some(r) => {
                    self.stats.steals += 1;
                    if req.back.is_some() {
                        self.stats.steals_back += 1;
                    }
                    steps.push(Step::Run { ns: self.spec.respond, func: KernelFn::User });
                    steps.extend(self.answer(req.from, r));
                }
                None => steps.extend(self.answer(req.from, Response::None)),
            }
        }
        steps
    }

    /// Store `response` for worker `to` and wake it (under its mutex).
    fn answer(&mut self, to: u32, response: Response) -> Vec<Step> {
        if response == Response::None {
            self.stats.nones += 1;
        }
        let wk = &self.workers[to as usize];
        vec![
            Step::Do(Action::MutexLock(wk.mutex)),
            Step::Do(Action::Ws(WsAction::Deliver { to, response })),
            Step::Do(Action::CondSignal { cond: wk.cond, all: false }),
            Step::Do(Action::MutexUnlock(wk.mutex)),
        ]
    }

    /// Task `id` ended on its worker: send the result to its owner, or end the computation.
    fn finish_task(&mut self, id: TaskId) -> Vec<Step> {
        match self.tasks[id as usize].owner {
            Some(owner) => {
                let o = &self.workers[owner as usize];
                vec![
                    Step::Run { ns: self.spec.result, func: KernelFn::User },
                    Step::Do(Action::MutexLock(o.mutex)),
                    Step::Do(Action::Ws(WsAction::MarkDone(id))),
                    Step::Do(Action::CondSignal { cond: o.cond, all: true }),
                    Step::Do(Action::MutexUnlock(o.mutex)),
                ]
            }
            None => {
                let mut steps = vec![Step::Do(Action::Ws(WsAction::Finish)), Step::Do(Action::Progress)];
                steps.extend(self.workers.iter().map(|x| Step::Do(Action::CondSignal { cond: x.cond, all: true })));
                steps
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::worksteal::Tree;

    fn runtime(tree: Tree, workers: u32) -> WorkStealing {
        let spec = WorkStealSpec { tree, request: 1000, respond: 2000, result: 1000, delay: 1000, delay_max: 100_000_000 };
        WorkStealing::new(spec, &(0..workers).map(ThreadId).collect::<Vec<_>>())
    }

    #[test]
    fn a_steal_hands_over_the_oldest_hence_largest_task() {
        let tree = Tree::fib(30, 1.0);
        let mut ws = runtime(tree.clone(), 4);
        let size = |n: u32| tree.work(Node { depth: n, scale: 1.0 });
        // Worker 0 is 1000 calls into fib(30): inside fib(29), with fib(28) pending at the root.
        ws.advance(0, 1000.0);
        let Some(Response::Task { node, lo, hi, .. }) = ws.spawn(0, 1) else { panic!("fib(28) is spawnable") };
        assert_eq!((node.depth, lo, hi), (30, 1, 2), "the root's second call");
        assert_eq!(ws.stolen[0], size(28));
        // The next request gets the oldest call left: fib(27), the second call of fib(29).
        ws.spawn(0, 2);
        assert_eq!(ws.stolen[1], size(27));
        ws.spawn(0, 3);
        assert_eq!(ws.stolen[2], size(26));
        // Each is the largest piece of work the victim had not started.
        assert!(ws.stolen.windows(2).all(|p| p[0] > p[1]));
        assert_eq!(ws.tasks.iter().filter(|t| t.owner == Some(0)).count(), 3);
        // Past the first branch of the root (in fib(28) itself), nothing is left at the root.
        let mut ws = runtime(tree.clone(), 2);
        ws.advance(0, 1.0 + size(29) + 5.0);
        ws.spawn(0, 1);
        assert_eq!(ws.stolen[0], size(26), "fib(28)'s second call");
    }

    #[test]
    fn a_do_many_gives_the_upper_half_of_its_remaining_iterations() {
        let tree = Tree::nqueens(8, 1.0, &[1, 8, 42, 140, 344, 568, 550, 312, 92]);
        let mut ws = runtime(tree.clone(), 3);
        let root = tree.root();
        // Half-way into the root's first column: columns 1..8 remain; it gives away 4..8.
        ws.advance(0, tree.iteration(root, 0) / 2.0);
        let Some(Response::Task { node, lo, hi, .. }) = ws.spawn(0, 1) else { panic!() };
        assert_eq!((node, lo, hi), (root, 4, 8));
        // Then 2..4 ((1 + 0 + 4) / 2 = 2), then the root has one column after the current one.
        let Some(Response::Task { lo, hi, .. }) = ws.spawn(0, 2) else { panic!() };
        assert_eq!((lo, hi), (2, 4));
        let Some(Response::Task { node, .. }) = ws.spawn(0, 1) else { panic!() };
        assert_eq!((node, ws.stolen[2]), (root, tree.iteration(root, 1)));
        // Now the root has only its current column: the next steal comes from inside it.
        let Some(Response::Task { node, .. }) = ws.spawn(0, 2) else { panic!() };
        assert_eq!(node.depth, 1);
    }

    #[test]
    fn nothing_to_spawn_in_a_leaf() {
        let mut ws = runtime(Tree::fib(2, 5.0), 2);
        assert_eq!(ws.spawn(0, 1), None);
        assert_eq!(ws.spawn(1, 0), None, "an idle worker has no task");
    }
}
