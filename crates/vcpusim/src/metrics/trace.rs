//! Schedule trace in Chrome trace-event JSON (opens in Perfetto / chrome://tracing).
//!
//! Process 0 "host" has one track per pCPU showing which vCPU runs; each VM is a process with
//! one track per vCPU showing what it does (user, kernel, spin, tlb-wait ...), plus instants for
//! IPIs and lock-holder preemptions. Timestamps are microseconds with ns precision.

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
}

impl TraceSink {
    pub fn new(max: usize) -> Self {
        TraceSink { names: Vec::new(), recs: Vec::new(), max, dropped: 0 }
    }

    /// Name a process (`tid = None`) or a thread track.
    pub fn name(&mut self, pid: u32, tid: Option<u32>, name: impl Into<String>) {
        self.names.push((pid, tid, name.into()));
    }

    fn push(&mut self, r: Rec) {
        if self.recs.len() < self.max {
            self.recs.push(r);
        } else {
            self.dropped += 1;
        }
    }

    pub fn span(&mut self, pid: u32, tid: u32, name: &str, start: Nanos, end: Nanos) {
        if end > start {
            self.push(Rec::Span { pid, tid, name: name.to_string(), start, dur: end - start });
        }
    }

    pub fn instant(&mut self, pid: u32, tid: u32, name: &str, at: Nanos) {
        self.push(Rec::Instant { pid, tid, name: name.to_string(), at });
    }

    pub fn to_json(&self) -> String {
        let us = |ns: Nanos| format!("{}.{:03}", ns / 1000, ns % 1000);
        let mut out = String::with_capacity(64 * (self.recs.len() + self.names.len()) + 64);
        out.push_str("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
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
        write!(out, "\n],\"otherData\":{{\"dropped_events\":{}}}}}\n", self.dropped).expect("infallible");
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
        let v: serde_json::Value = serde_json::from_str(&t.to_json()).unwrap();
        let evs = v["traceEvents"].as_array().unwrap();
        assert_eq!(evs.len(), 4);
        assert_eq!(evs[2]["ts"].as_f64().unwrap(), 1.5);
        assert_eq!(evs[2]["dur"].as_f64().unwrap(), 2.5);
        assert_eq!(v["otherData"]["dropped_events"], 1);
    }
}
