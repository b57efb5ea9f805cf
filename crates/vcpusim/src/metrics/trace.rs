//! Schedule trace in the Chrome trace-event JSON that Perfetto imports (ui.perfetto.dev;
//! Perfetto's importer is src/trace_processor/importers/json/json_trace_parser_impl.cc, which
//! reads `X` slices with `args`, `C` counters, `i` instants, `M` names, and v2 flows: `bind_id`
//! with `flow_out` / `flow_in` on `X` slices, not on instants).
//!
//! Tracks:
//! - process 0 "host": one thread track per pCPU whose slices name the vCPU on it (`vm/vN`,
//!   args `vm`, `vcpu`, `left`: why it left: `preempted`, `yield`, `halt`, `end`), and counter
//!   tracks of the vCPUs waiting for a pCPU (`runnable vCPUs`, per pool when there are several);
//! - one process per VM with a thread track per vCPU: what it does while it runs (`user`,
//!   `kernel` and `spin` with arg `function`, the guest kernel function; `tlb-wait`, `user-spin`,
//!   `irq`, `overhead`) and its state while it does not: `runnable: preempted` / `runnable:
//!   yielded` (args `pcpu` it left and `held_by`, the vCPU that took that pCPU next),
//!   `runnable: woken` and `halted`; instants for lock-holder preemptions (arg `lock_class`);
//!   zero-length `ipi ...` slices joined by a flow arrow from the sender to the recipient, where the
//!   interrupt reaches the guest; counters of its running vCPUs and its share of the host
//!   (running vCPUs / pCPUs).
//!
//! Lock hand-offs (guest/handoff.rs: a kernel spinlock passed to the next waiter, a mutex unlock's
//! futex wake, `mmap_sem` granted to the next writer) are v1 flow events, category
//! [`HANDOFF_CATEGORY`]: a zero-length `release: <lock>` slice on the releasing vCPU's track
//! followed by `"ph":"s"`, and a zero-length `resume: <lock>` slice on the track of the vCPU where
//! the waiter next runs, followed by `"ph":"f"` with `"bp":"e"`; both flow events bind to the
//! slice just before them (Perfetto's `FlowTracker::Begin` / `End(bind_enclosing_slice)` take the
//! topmost open slice on the track; its sorter puts a zero-length slice and an event without a
//! duration at the same time in file order, after the longer slices starting then). A start whose
//! waiter never resumed inside the trace (the run, the window or the cap ended first) is left
//! out, so every `s` has its `f` and every `f` its `s`. Perfetto numbers v1 flows 0, 1, 2 ... in
//! the same id space as v2 `bind_id`s (`FlowTracker::GetFlowIdForV1Event`, a 32-bit counter), so
//! the IPI arrows' `bind_id`s start at [`V2_FLOW_ID_BASE`], past any v1 number.
//!
//! Timestamps are microseconds with ns precision. A trace keeps at most `max` records (slices,
//! instants, counter values; [`DEFAULT_MAX_EVENTS`]): past that it counts what it drops and
//! remembers until when it is complete (the cut), so the caller can warn; the slices open at the
//! cut are kept, ended there, and a global `trace cut` instant marks it. A window (`--trace-from/--trace-to`)
//! keeps only what overlaps `[from, to)`, slices clipped to it (a counter's first value inside the
//! window is its first change there), so a late stretch of a long run fits under the cap. The
//! first line of the JSON carries `otherData` (dropped count, complete-until time, window, and the
//! run's identity handed to [`TraceSink::to_json`]), so a reader can tell which run a trace
//! belongs to without parsing it.

use crate::time::Nanos;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt::Write;

/// Default cap on recorded events, so a long traced run cannot exhaust memory.
pub const DEFAULT_MAX_EVENTS: usize = 2_000_000;

/// The first v2 flow id (IPI arrows): Perfetto gives v1 flows (lock hand-offs) the ids 0, 1, 2 ...
/// of a 32-bit counter in the same id space (trace_processor/importers/common/flow_tracker.h,
/// `v1_id_counter_`), so v2 ids from 2^32 on never meet them.
pub const V2_FLOW_ID_BASE: u64 = 1 << 32;

/// The category of the lock hand-off flow events (part of a v1 flow's identity, with its id and
/// name).
pub const HANDOFF_CATEGORY: &str = "lock hand-off";

/// A flow arrow's end carried by a zero-length slice (Perfetto's JSON flow v2).
#[derive(Clone, Copy, Debug)]
enum Flow {
    Out(u64),
    In(u64),
}

#[derive(Clone, Debug)]
enum Rec {
    /// `args`: a JSON object's text, or empty.
    Span {
        pid: u32,
        tid: u32,
        name: String,
        start: Nanos,
        dur: Nanos,
        args: String,
        flow: Option<Flow>,
    },
    Instant {
        pid: u32,
        tid: u32,
        name: String,
        at: Nanos,
        args: String,
    },
    Counter {
        pid: u32,
        name: String,
        at: Nanos,
        value: f64,
    },
    /// A v1 flow event (`s`, or `f` with `bp: e` when `end`), right after the zero-length slice it
    /// binds to.
    FlowV1 {
        pid: u32,
        tid: u32,
        at: Nanos,
        id: u64,
        name: &'static str,
        end: bool,
    },
}

/// A lock hand-off whose waiter has not resumed yet.
#[derive(Clone, Debug)]
struct PendingHandOff {
    id: u64,
    name: &'static str,
    lock: String,
    from: String,
}

/// Why a vCPU is off its pCPU, for its state track.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OffReason {
    /// Descheduled while still runnable (its slice ended, or another vCPU was preferred).
    Preempted,
    /// Gave its pCPU up while runnable (a pause-loop exit's yield).
    Yielded,
    /// Halted (HLT), waiting for an interrupt.
    Halted,
    /// Woken from HLT, waiting for a pCPU.
    Woken,
    /// Not yet run since the start.
    Starting,
}

impl OffReason {
    fn slice_name(self) -> &'static str {
        match self {
            OffReason::Preempted => "runnable: preempted",
            OffReason::Yielded => "runnable: yielded",
            OffReason::Halted => "halted",
            OffReason::Woken => "runnable: woken",
            OffReason::Starting => "runnable: starting",
        }
    }
}

/// A vCPU's current stretch off its pCPU.
#[derive(Clone, Debug)]
struct OffCpu {
    pid: u32,
    tid: u32,
    since: Nanos,
    reason: OffReason,
    pcpu: Option<u32>,
    held_by: Option<String>,
}

pub struct TraceSink {
    names: Vec<(u32, Option<u32>, String)>,
    recs: Vec<Rec>,
    max: usize,
    pub dropped: u64,
    /// When the first record was dropped (the end of the span or the instant's time): the trace
    /// holds everything that ended before it.
    pub complete_until: Option<Nanos>,
    /// Only `[from, to)` is recorded.
    window: Option<(Nanos, Nanos)>,
    /// Each vCPU's stretch off its pCPU, by host-wide vCPU index.
    off: Vec<Option<OffCpu>>,
    /// Per pCPU: the vCPUs descheduled there (index, since) whose pCPU holder is not known yet.
    waiting_on: Vec<Vec<(usize, Nanos)>>,
    /// Per vCPU: flow ids of IPIs sent to it and not yet delivered, in sending order.
    pending_flows: Vec<VecDeque<u64>>,
    next_flow: u64,
    /// Per waiting thread (host-wide index): the hand-off it has not resumed from yet.
    pending_handoffs: BTreeMap<usize, PendingHandOff>,
    /// Hand-offs whose `f` is written (the others' `s` is left out of the JSON).
    finished_handoffs: BTreeSet<u64>,
    next_handoff: u64,
    /// Each counter's last value, so only changes are recorded.
    counters: BTreeMap<(u32, String), f64>,
}

fn grow<T: Default>(v: &mut Vec<T>, i: usize) -> &mut T {
    if v.len() <= i {
        v.resize_with(i + 1, T::default);
    }
    &mut v[i]
}

impl TraceSink {
    pub fn new(max: usize) -> Self {
        TraceSink {
            names: Vec::new(),
            recs: Vec::new(),
            max,
            dropped: 0,
            complete_until: None,
            window: None,
            off: Vec::new(),
            waiting_on: Vec::new(),
            pending_flows: Vec::new(),
            next_flow: V2_FLOW_ID_BASE + 1,
            pending_handoffs: BTreeMap::new(),
            finished_handoffs: BTreeSet::new(),
            next_handoff: 1,
            counters: BTreeMap::new(),
        }
    }

    /// Record only what overlaps `[from, to)` of simulated time.
    pub fn set_window(&mut self, from: Nanos, to: Nanos) {
        self.window = Some((from, to));
    }

    pub fn window(&self) -> Option<(Nanos, Nanos)> {
        self.window
    }

    /// Keep at most `max` records.
    pub fn set_max(&mut self, max: usize) {
        self.max = max;
    }

    pub fn max(&self) -> usize {
        self.max
    }

    /// Name a process (`tid = None`) or a thread track.
    pub fn name(&mut self, pid: u32, tid: Option<u32>, name: impl Into<String>) {
        self.names.push((pid, tid, name.into()));
    }

    /// Whether there is room for one more record; if not, count it as dropped at `at`.
    fn room(&mut self, at: Nanos) -> bool {
        if self.recs.len() < self.max {
            return true;
        }
        self.dropped += 1;
        self.complete_until.get_or_insert(at);
        false
    }

    fn outside(&self, at: Nanos) -> bool {
        self.window.is_some_and(|(from, to)| at < from || at >= to)
    }

    pub fn span(&mut self, pid: u32, tid: u32, name: &str, start: Nanos, end: Nanos) {
        self.span_with(pid, tid, name, start, end, &[]);
    }

    /// A slice with args (key, JSON value). Past the cap, a slice that was open at the cut
    /// (`complete_until`: it started before it) is still recorded, ended at the cut, so that
    /// what ran at the cut does not vanish from its track (a busy pCPU would look idle); its
    /// part after the cut counts as dropped. A track has one open slice at a time (two for a
    /// vCPU: its activity and its off state), so these records beyond the cap are bounded by
    /// the tracks.
    pub fn span_with(&mut self, pid: u32, tid: u32, name: &str, start: Nanos, end: Nanos, args: &[(&str, serde_json::Value)]) {
        let (start, end) = match self.window {
            Some((from, to)) => (start.max(from), end.min(to)),
            None => (start, end),
        };
        if end <= start {
            return;
        }
        let end = if self.room(end) {
            end
        } else {
            match self.complete_until.filter(|&cut| start < cut) {
                Some(cut) => cut.min(end),
                None => return,
            }
        };
        self.recs.push(Rec::Span { pid, tid, name: name.to_string(), start, dur: end - start, args: args_text(args), flow: None });
    }

    pub fn instant(&mut self, pid: u32, tid: u32, name: &str, at: Nanos) {
        self.instant_with(pid, tid, name, at, &[]);
    }

    pub fn instant_with(&mut self, pid: u32, tid: u32, name: &str, at: Nanos, args: &[(&str, serde_json::Value)]) {
        if self.outside(at) {
            return;
        }
        if self.room(at) {
            self.recs.push(Rec::Instant { pid, tid, name: name.to_string(), at, args: args_text(args) });
        }
    }

    /// A counter track's value from `at` on (recorded only when it changes).
    pub fn counter(&mut self, pid: u32, name: &str, at: Nanos, value: f64) {
        let key = (pid, name.to_string());
        if self.counters.get(&key) == Some(&value) {
            return;
        }
        self.counters.insert(key, value);
        if !self.outside(at) && self.room(at) {
            self.recs.push(Rec::Counter { pid, name: name.to_string(), at, value });
        }
    }

    /// A zero-length slice where a flow arrow starts or ends.
    fn flow_mark(&mut self, pid: u32, tid: u32, name: &str, at: Nanos, args: &[(&str, serde_json::Value)], flow: Flow) {
        if !self.outside(at) && self.room(at) {
            self.recs.push(Rec::Span { pid, tid, name: name.to_string(), start: at, dur: 0, args: args_text(args), flow: Some(flow) });
        }
    }

    /// An IPI leaves the sender's track; `to` (a host-wide vCPU index) receives it later, at
    /// [`TraceSink::ipi_received`] (IPIs to one vCPU arrive in sending order).
    pub fn ipi_sent(&mut self, pid: u32, tid: u32, name: &str, at: Nanos, to: usize, args: &[(&str, serde_json::Value)]) {
        let id = self.next_flow;
        self.next_flow += 1;
        self.flow_mark(pid, tid, name, at, args, Flow::Out(id));
        grow(&mut self.pending_flows, to).push_back(id);
    }

    /// The oldest IPI pending for vCPU `to` reaches its guest (the arrow's end).
    pub fn ipi_received(&mut self, to: usize, pid: u32, tid: u32, name: &str, at: Nanos, args: &[(&str, serde_json::Value)]) {
        if let Some(id) = grow(&mut self.pending_flows, to).pop_front() {
            self.flow_mark(pid, tid, name, at, args, Flow::In(id));
        }
    }

    /// A zero-length marker slice and the v1 flow event bound to it; false when either did not
    /// fit (outside the window, past the cap).
    #[allow(clippy::too_many_arguments)]
    fn flow_v1(
        &mut self,
        pid: u32,
        tid: u32,
        marker: &str,
        at: Nanos,
        args: &[(&str, serde_json::Value)],
        id: u64,
        name: &'static str,
        end: bool,
    ) -> bool {
        if self.outside(at) || !self.room(at) {
            return false;
        }
        self.recs.push(Rec::Span { pid, tid, name: marker.to_string(), start: at, dur: 0, args: args_text(args), flow: None });
        if !self.room(at) {
            return false;
        }
        self.recs.push(Rec::FlowV1 { pid, tid, at, id, name, end });
        true
    }

    /// Thread `to` (host-wide index) is let go on `lock` at `at` by `from` (a label), running on
    /// the vCPU of track `pid`/`tid`: the start of a `name` arrow to where `to` resumes
    /// ([`TraceSink::handoff_resumed`]).
    #[allow(clippy::too_many_arguments)]
    pub fn handoff_released(
        &mut self,
        pid: u32,
        tid: u32,
        at: Nanos,
        name: &'static str,
        lock: &str,
        from: &str,
        to: usize,
        to_label: &str,
    ) {
        let id = self.next_handoff;
        self.next_handoff += 1;
        let args = [("lock", lock.into()), ("kind", name.into()), ("thread", from.into()), ("to", to_label.into())];
        if self.flow_v1(pid, tid, &format!("release: {lock}"), at, &args, id, name, false) {
            self.pending_handoffs.insert(to, PendingHandOff { id, name, lock: lock.to_string(), from: from.to_string() });
        } else {
            // No start in the trace: its waiter's resumption draws no arrow either.
            self.pending_handoffs.remove(&to);
        }
    }

    /// Thread `thread` (host-wide index, labelled `label`) runs again on the vCPU of track
    /// `pid`/`tid` at `at`: the end of the arrow of the hand-off it was waiting for, if any.
    pub fn handoff_resumed(&mut self, thread: usize, label: &str, pid: u32, tid: u32, at: Nanos) {
        let Some(h) = self.pending_handoffs.remove(&thread) else { return };
        let args = [("lock", h.lock.as_str().into()), ("kind", h.name.into()), ("thread", label.into()), ("from", h.from.into())];
        if self.flow_v1(pid, tid, &format!("resume: {}", h.lock), at, &args, h.id, h.name, true) {
            self.finished_handoffs.insert(h.id);
        }
    }

    /// vCPU `v` (host-wide index; track `pid`/`tid`) leaves pCPU `pcpu` (or never had one) at `at`.
    pub fn vcpu_off(&mut self, v: usize, pid: u32, tid: u32, at: Nanos, pcpu: Option<u32>, reason: OffReason) {
        self.close_off(v, at);
        if let (Some(p), OffReason::Preempted | OffReason::Yielded) = (pcpu, reason) {
            grow(&mut self.waiting_on, p as usize).push((v, at));
        }
        *grow(&mut self.off, v) = Some(OffCpu { pid, tid, since: at, reason, pcpu, held_by: None });
    }

    /// Halted vCPU `v` is woken: it now waits for a pCPU.
    pub fn vcpu_woken(&mut self, v: usize, at: Nanos) {
        let Some(Some(off)) = self.off.get(v) else { return };
        if off.reason != OffReason::Halted {
            return;
        }
        let (pid, tid) = (off.pid, off.tid);
        self.vcpu_off(v, pid, tid, at, None, OffReason::Woken);
    }

    /// vCPU `v` runs on pCPU `pcpu` from `at`, as `label` (`vm/vN`): its stretch off ends, and
    /// the vCPUs descheduled on that pCPU learn who holds it.
    pub fn vcpu_on(&mut self, v: usize, at: Nanos, pcpu: u32, label: &str) {
        self.close_off(v, at);
        let waiting = std::mem::take(grow(&mut self.waiting_on, pcpu as usize));
        for (w, since) in waiting {
            if let Some(Some(off)) = self.off.get_mut(w) {
                if off.since == since && off.held_by.is_none() {
                    off.held_by = Some(label.to_string());
                }
            }
        }
    }

    /// End every vCPU's stretch off its pCPU at `at` (the end of the run).
    pub fn close_all(&mut self, at: Nanos) {
        for v in 0..self.off.len() {
            self.close_off(v, at);
        }
    }

    fn close_off(&mut self, v: usize, at: Nanos) {
        let Some(off) = self.off.get_mut(v).and_then(Option::take) else { return };
        let mut args: Vec<(&str, serde_json::Value)> = Vec::new();
        if let Some(p) = off.pcpu {
            args.push(("pcpu", p.into()));
        }
        if let Some(h) = off.held_by {
            args.push(("held_by", h.into()));
        }
        self.span_with(off.pid, off.tid, off.reason.slice_name(), off.since, at, &args);
    }

    /// The trace as Chrome trace-event JSON. `run` names the run it belongs to (key, JSON value;
    /// say the seed and the event count), written into `otherData` on the first line.
    pub fn to_json(&self, run: &[(&str, serde_json::Value)]) -> String {
        let us = |ns: Nanos| format!("{}.{:03}", ns / 1000, ns % 1000);
        let mut out = String::with_capacity(64 * (self.recs.len() + self.names.len()) + 256);
        let mut other = serde_json::Map::new();
        other.insert("dropped_events".into(), self.dropped.into());
        other.insert("complete_until_ns".into(), self.complete_until.into());
        other.insert("window_from_ns".into(), self.window.map(|w| w.0).into());
        other.insert("window_to_ns".into(), self.window.map(|w| w.1).into());
        for (key, value) in run {
            other.insert((*key).into(), value.clone());
        }
        let other = serde_json::to_string(&other).expect("JSON values serialize");
        writeln!(out, "{{\"displayTimeUnit\":\"ns\",\"otherData\":{other},\"traceEvents\":[").expect("infallible");
        let mut first = true;
        let mut sep = |out: &mut String| {
            if !first {
                out.push_str(",\n");
            }
            first = false;
        };
        let quote = |s: &str| serde_json::to_string(s).expect("a string serializes");
        for (pid, tid, name) in &self.names {
            sep(&mut out);
            let name = quote(name);
            match tid {
                None => write!(out, "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{pid},\"args\":{{\"name\":{name}}}}}"),
                Some(t) => write!(out, "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{pid},\"tid\":{t},\"args\":{{\"name\":{name}}}}}"),
            }
            .expect("writing to a String cannot fail");
        }
        let with_args = |args: &str| if args.is_empty() { String::new() } else { format!(",\"args\":{args}") };
        if let Some(cut) = self.complete_until {
            // The cut, on every track (a global instant): nothing after it was recorded.
            sep(&mut out);
            let args = format!("{{\"dropped_events\":{}}}", self.dropped);
            write!(out, "{{\"ph\":\"i\",\"s\":\"g\",\"name\":\"trace cut\",\"pid\":0,\"tid\":0,\"ts\":{}{}}}", us(cut), with_args(&args))
                .expect("writing to a String cannot fail");
        }
        for r in &self.recs {
            if let Rec::FlowV1 { id, end: false, .. } = r {
                if !self.finished_handoffs.contains(id) {
                    continue;
                }
            }
            sep(&mut out);
            match r {
                Rec::Span { pid, tid, name, start, dur, args, flow } => {
                    let flow = match flow {
                        None => String::new(),
                        Some(Flow::Out(id)) => format!(",\"bind_id\":{id},\"flow_out\":true"),
                        Some(Flow::In(id)) => format!(",\"bind_id\":{id},\"flow_in\":true"),
                    };
                    write!(
                        out,
                        "{{\"ph\":\"X\",\"name\":{},\"pid\":{pid},\"tid\":{tid},\"ts\":{},\"dur\":{}{}{flow}}}",
                        quote(name),
                        us(*start),
                        us(*dur),
                        with_args(args)
                    )
                }
                Rec::Instant { pid, tid, name, at, args } => write!(
                    out,
                    "{{\"ph\":\"i\",\"s\":\"t\",\"name\":{},\"pid\":{pid},\"tid\":{tid},\"ts\":{}{}}}",
                    quote(name),
                    us(*at),
                    with_args(args)
                ),
                Rec::Counter { pid, name, at, value } => write!(
                    out,
                    "{{\"ph\":\"C\",\"name\":{},\"pid\":{pid},\"ts\":{},\"args\":{{\"value\":{}}}}}",
                    quote(name),
                    us(*at),
                    serde_json::Value::from(*value)
                ),
                Rec::FlowV1 { pid, tid, at, id, name, end } => write!(
                    out,
                    "{{\"ph\":\"{}\",\"id\":{id},\"cat\":{},\"name\":{},\"pid\":{pid},\"tid\":{tid},\"ts\":{}{}}}",
                    if *end { "f" } else { "s" },
                    quote(HANDOFF_CATEGORY),
                    quote(name),
                    us(*at),
                    if *end { ",\"bp\":\"e\"" } else { "" }
                ),
            }
            .expect("writing to a String cannot fail");
        }
        out.push_str("\n]}\n");
        out
    }
}

/// Slice args as a JSON object's text ("" for none).
fn args_text(args: &[(&str, serde_json::Value)]) -> String {
    if args.is_empty() {
        return String::new();
    }
    let map: serde_json::Map<String, serde_json::Value> = args.iter().map(|(k, v)| ((*k).to_string(), v.clone())).collect();
    serde_json::to_string(&map).expect("JSON values serialize")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_valid_chrome_trace_json() {
        let mut t = TraceSink::new(2);
        t.name(0, None, "host");
        t.name(0, Some(1), "pCPU1");
        t.span(0, 1, "vm/v0", 1500, 4000);
        t.instant(1, 0, "lhp", 2000);
        t.instant(1, 0, "dropped", 2000);
        let json = t.to_json(&[("seed", 7.into())]);
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        let evs = v["traceEvents"].as_array().unwrap();
        // Two names, the cut's marker (the cap was reached), the slice, the first instant.
        assert_eq!(evs.len(), 5);
        assert_eq!((evs[2]["name"].as_str(), evs[2]["ts"].as_f64()), (Some("trace cut"), Some(2.0)));
        assert_eq!(evs[3]["ts"].as_f64().unwrap(), 1.5);
        assert_eq!(evs[3]["dur"].as_f64().unwrap(), 2.5);
        assert_eq!(v["otherData"]["dropped_events"], 1);
        assert_eq!(v["otherData"]["complete_until_ns"], 2000);
        assert_eq!(v["otherData"]["seed"], 7);
        // The first line alone says which run this is and whether it is whole.
        let first = json.lines().next().unwrap().strip_suffix("\"traceEvents\":[").unwrap();
        let head: serde_json::Value = serde_json::from_str(&format!("{}}}", first.trim_end_matches(','))).unwrap();
        assert_eq!(head["otherData"], v["otherData"]);
    }

    #[test]
    fn a_window_keeps_what_overlaps_it_clipped() {
        let mut t = TraceSink::new(100);
        t.set_window(1000, 2000);
        t.span(0, 0, "before", 0, 999);
        t.span(0, 0, "across-start", 500, 1500);
        t.span(0, 0, "inside", 1200, 1300);
        t.span(0, 0, "across-end", 1900, 2500);
        t.span(0, 0, "after", 2000, 3000);
        t.instant(0, 0, "early", 999);
        t.instant(0, 0, "first", 1000);
        t.instant(0, 0, "last", 1999);
        t.instant(0, 0, "late", 2000);
        let v: serde_json::Value = serde_json::from_str(&t.to_json(&[])).unwrap();
        let got: Vec<(String, f64, f64)> = v["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| (e["name"].as_str().unwrap().to_string(), e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap_or(0.0)))
            .collect();
        let want = [("across-start", 1.0, 0.5), ("inside", 1.2, 0.1), ("across-end", 1.9, 0.1), ("first", 1.0, 0.0), ("last", 1.999, 0.0)];
        assert_eq!(got.len(), want.len(), "{got:?}");
        for ((name, ts, dur), (wn, wts, wdur)) in got.iter().zip(want) {
            assert_eq!((name.as_str(), *ts, *dur), (wn, wts, wdur));
        }
        assert_eq!(v["otherData"]["dropped_events"], 0, "what falls outside the window is not 'dropped'");
        assert_eq!((v["otherData"]["window_from_ns"].as_u64(), v["otherData"]["window_to_ns"].as_u64()), (Some(1000), Some(2000)));
    }

    fn events(t: &TraceSink) -> Vec<serde_json::Value> {
        let v: serde_json::Value = serde_json::from_str(&t.to_json(&[])).unwrap();
        v["traceEvents"].as_array().unwrap().iter().filter(|e| e["ph"] != "M").cloned().collect()
    }

    /// At the cap: the slices open at the cut are kept, ended at the cut (a busy track does not
    /// look idle after it), later ones are dropped and counted, and a global instant marks it.
    #[test]
    fn a_cut_trace_ends_the_slices_open_at_the_cut_and_marks_it() {
        let mut t = TraceSink::new(2);
        t.span(0, 0, "a", 0, 10_000);
        t.span(0, 1, "b", 5_000, 20_000);
        t.span(0, 2, "c", 8_000, 30_000); // the first past the cap: the cut is its end, 30 us
        t.span(0, 0, "d", 25_000, 40_000); // open at the cut: kept, ended at 30 us
        t.span(0, 1, "e", 35_000, 50_000); // after the cut: dropped
        t.counter(0, "x", 45_000, 1.0); // after the cut: dropped
        let got: Vec<(String, String, f64, f64)> = events(&t)
            .iter()
            .map(|e| {
                (
                    e["ph"].as_str().unwrap().into(),
                    e["name"].as_str().unwrap().into(),
                    e["ts"].as_f64().unwrap(),
                    e["dur"].as_f64().unwrap_or(0.0),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("i".into(), "trace cut".into(), 30.0, 0.0),
                ("X".into(), "a".into(), 0.0, 10.0),
                ("X".into(), "b".into(), 5.0, 15.0),
                ("X".into(), "c".into(), 8.0, 22.0),
                ("X".into(), "d".into(), 25.0, 5.0),
            ]
        );
        let v: serde_json::Value = serde_json::from_str(&t.to_json(&[])).unwrap();
        assert_eq!((v["otherData"]["complete_until_ns"].as_u64(), v["otherData"]["dropped_events"].as_u64()), (Some(30_000), Some(4)));
        let cut = &v["traceEvents"].as_array().unwrap().iter().find(|e| e["name"] == "trace cut").unwrap().clone();
        assert_eq!((cut["s"].as_str(), cut["args"]["dropped_events"].as_u64()), (Some("g"), Some(4)));
    }

    #[test]
    fn off_cpu_states_name_the_pcpu_holder_and_close_at_the_end() {
        let mut t = TraceSink::new(100);
        t.vcpu_off(0, 1, 0, 1000, Some(3), OffReason::Preempted);
        t.vcpu_off(1, 1, 1, 1500, Some(2), OffReason::Halted);
        t.vcpu_on(5, 1200, 3, "b/v0"); // another vCPU takes pCPU 3: it holds what vCPU 0 waits for
        t.vcpu_on(6, 1300, 3, "c/v0"); // a later holder does not replace the first
        t.vcpu_woken(1, 2000);
        t.vcpu_on(0, 2500, 1, "a/v0");
        t.close_all(3000);
        let got: Vec<(String, f64, f64, serde_json::Value)> = events(&t)
            .iter()
            .map(|e| (e["name"].as_str().unwrap().into(), e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap(), e["args"].clone()))
            .collect();
        let want = [
            ("halted", 1.5, 0.5, serde_json::json!({"pcpu": 2})),
            ("runnable: preempted", 1.0, 1.5, serde_json::json!({"pcpu": 3, "held_by": "b/v0"})),
            ("runnable: woken", 2.0, 1.0, serde_json::Value::Null),
        ];
        assert_eq!(got.len(), want.len(), "{got:?}");
        for (g, w) in got.iter().zip(want) {
            assert_eq!((g.0.as_str(), g.1, g.2, &g.3), (w.0, w.1, w.2, &w.3));
        }
    }

    #[test]
    fn ipis_are_flows_from_sender_to_recipient_in_sending_order() {
        let mut t = TraceSink::new(100);
        t.ipi_sent(1, 0, "resched", 1000, 7, &[("to", "a/v1".into())]);
        t.ipi_sent(1, 2, "tlb", 1100, 7, &[]);
        t.ipi_received(7, 1, 1, "resched received", 1400, &[]);
        t.ipi_received(7, 1, 1, "tlb received", 1500, &[]);
        t.ipi_received(7, 1, 1, "nothing pending", 1600, &[]);
        let e = events(&t);
        assert_eq!(e.len(), 4);
        assert!(e.iter().all(|e| e["ph"] == "X" && e["dur"].as_f64() == Some(0.0)));
        let (first, second) = (V2_FLOW_ID_BASE + 1, V2_FLOW_ID_BASE + 2);
        assert_eq!((e[0]["bind_id"].as_u64(), e[0]["flow_out"].as_bool()), (Some(first), Some(true)));
        assert_eq!(
            (e[2]["bind_id"].as_u64(), e[2]["flow_in"].as_bool(), e[2]["name"].as_str()),
            (Some(first), Some(true), Some("resched received"))
        );
        assert_eq!((e[3]["bind_id"].as_u64(), e[1]["bind_id"].as_u64()), (Some(second), Some(second)));
        assert_eq!(e[0]["args"]["to"], "a/v1");
    }

    #[test]
    fn handoffs_are_v1_flows_bound_to_the_marker_slice_before_them() {
        let mut t = TraceSink::new(100);
        t.set_window(1000, 5000);
        // Released before the window: no start, so no end either.
        t.handoff_released(1, 0, 900, "mutex wake", "mutex 0", "a/t0 on a/v0", 7, "a/t7");
        t.handoff_resumed(7, "a/t7 on a/v1", 1, 1, 1100);
        // A pair inside it.
        t.handoff_released(1, 0, 2000, "spinlock hand-off", "futex-queue", "a/t0 on a/v0", 3, "a/t3");
        t.handoff_resumed(3, "a/t3 on a/v2", 1, 2, 2500);
        t.handoff_resumed(3, "a/t3 on a/v2", 1, 2, 2600); // resumed already: nothing more
                                                          // Its waiter never resumes: the start is left out.
        t.handoff_released(1, 1, 3000, "mmap_sem hand-off", "mmap_sem", "a/t1 on a/v1", 4, "a/t4");
        let e = events(&t);
        let got: Vec<(&str, &str, f64, u64)> = e
            .iter()
            .map(|e| (e["ph"].as_str().unwrap(), e["name"].as_str().unwrap(), e["ts"].as_f64().unwrap(), e["tid"].as_u64().unwrap()))
            .collect();
        assert_eq!(
            got,
            [
                ("X", "release: futex-queue", 2.0, 0),
                ("s", "spinlock hand-off", 2.0, 0),
                ("X", "resume: futex-queue", 2.5, 2),
                ("f", "spinlock hand-off", 2.5, 2),
                ("X", "release: mmap_sem", 3.0, 1),
            ]
        );
        assert_eq!((e[1]["id"].as_u64(), e[3]["id"].as_u64()), (Some(2), Some(2)));
        assert!(e[1]["cat"] == HANDOFF_CATEGORY && e[3]["cat"] == HANDOFF_CATEGORY);
        assert_eq!((e[1].get("bp"), e[3]["bp"].as_str()), (None, Some("e")));
        assert_eq!(e[0]["dur"].as_f64(), Some(0.0));
        assert_eq!((e[0]["args"]["to"].as_str(), e[2]["args"]["from"].as_str()), (Some("a/t3"), Some("a/t0 on a/v0")));
    }

    #[test]
    fn counters_record_changes_only_and_respect_the_window() {
        let mut t = TraceSink::new(100);
        t.set_window(1000, 2000);
        t.counter(0, "runnable vCPUs", 500, 3.0); // before the window: remembered, not written
        t.counter(0, "runnable vCPUs", 1200, 3.0); // no change
        t.counter(0, "runnable vCPUs", 1300, 2.0);
        t.counter(1, "share of the host", 1400, 0.5);
        t.counter(0, "runnable vCPUs", 2500, 1.0);
        let e = events(&t);
        let got: Vec<(u64, &str, f64, f64)> = e
            .iter()
            .map(|e| {
                (e["pid"].as_u64().unwrap(), e["name"].as_str().unwrap(), e["ts"].as_f64().unwrap(), e["args"]["value"].as_f64().unwrap())
            })
            .collect();
        assert_eq!(got, [(0, "runnable vCPUs", 1.3, 2.0), (1, "share of the host", 1.4, 0.5)]);
        assert!(e.iter().all(|e| e["ph"] == "C"));
    }
}
