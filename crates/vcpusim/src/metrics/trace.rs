//! Schedule trace in Chrome trace-event JSON (opens in Perfetto / chrome://tracing).
//!
//! Process 0 "host" has one track per pCPU showing which vCPU runs; each VM is a process with
//! one track per vCPU showing what it does (user, kernel, spin, tlb-wait ...), plus instants for
//! IPIs and lock-holder preemptions. Timestamps are microseconds with ns precision.
//!
//! A trace keeps at most `max` records (spans and instants; [`DEFAULT_MAX_EVENTS`]): past that it
//! counts what it drops and remembers until when it is complete, so the caller can warn. A
//! window (`--trace-from/--trace-to`) keeps only what overlaps `[from, to)`, spans clipped to it,
//! so a late stretch of a long run fits under the cap. The first line of the JSON carries
//! `otherData` (dropped count, complete-until time, window, and the run's identity handed to
//! [`TraceSink::to_json`]), so a reader can tell which run a trace belongs to without parsing it.

use crate::time::Nanos;
use std::fmt::Write;

/// Default cap on recorded events, so a long traced run cannot exhaust memory.
pub const DEFAULT_MAX_EVENTS: usize = 2_000_000;

#[derive(Clone, Debug)]
enum Rec {
    Span { pid: u32, tid: u32, name: String, start: Nanos, dur: Nanos },
    Instant { pid: u32, tid: u32, name: String, at: Nanos },
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
}

impl TraceSink {
    pub fn new(max: usize) -> Self {
        TraceSink { names: Vec::new(), recs: Vec::new(), max, dropped: 0, complete_until: None, window: None }
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

    pub fn span(&mut self, pid: u32, tid: u32, name: &str, start: Nanos, end: Nanos) {
        let (start, end) = match self.window {
            Some((from, to)) => (start.max(from), end.min(to)),
            None => (start, end),
        };
        if end > start && self.room(end) {
            self.recs.push(Rec::Span { pid, tid, name: name.to_string(), start, dur: end - start });
        }
    }

    pub fn instant(&mut self, pid: u32, tid: u32, name: &str, at: Nanos) {
        if self.window.is_some_and(|(from, to)| at < from || at >= to) {
            return;
        }
        if self.room(at) {
            self.recs.push(Rec::Instant { pid, tid, name: name.to_string(), at });
        }
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
        write!(out, "{{\"displayTimeUnit\":\"ns\",\"otherData\":{other},\"traceEvents\":[\n").expect("infallible");
        let mut first = true;
        let mut sep = |out: &mut String| {
            if !first {
                out.push_str(",\n");
            }
            first = false;
        };
        for (pid, tid, name) in &self.names {
            sep(&mut out);
            let name = serde_json::to_string(name).expect("a string serializes");
            match tid {
                None => write!(out, "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{pid},\"args\":{{\"name\":{name}}}}}"),
                Some(t) => write!(
                    out,
                    "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{pid},\"tid\":{t},\"args\":{{\"name\":{name}}}}}"
                ),
            }
            .expect("writing to a String cannot fail");
        }
        for r in &self.recs {
            sep(&mut out);
            match r {
                Rec::Span { pid, tid, name, start, dur } => write!(
                    out,
                    "{{\"ph\":\"X\",\"name\":\"{name}\",\"pid\":{pid},\"tid\":{tid},\"ts\":{},\"dur\":{}}}",
                    us(*start),
                    us(*dur)
                ),
                Rec::Instant { pid, tid, name, at } => write!(
                    out,
                    "{{\"ph\":\"i\",\"s\":\"t\",\"name\":\"{name}\",\"pid\":{pid},\"tid\":{tid},\"ts\":{}}}",
                    us(*at)
                ),
            }
            .expect("writing to a String cannot fail");
        }
        out.push_str("\n]}\n");
        out
    }
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
        assert_eq!(evs.len(), 4);
        assert_eq!(evs[2]["ts"].as_f64().unwrap(), 1.5);
        assert_eq!(evs[2]["dur"].as_f64().unwrap(), 2.5);
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
}
