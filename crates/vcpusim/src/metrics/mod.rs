//! What happened in a run: per-VM counters, latency histograms, the schedule trace. The result
//! tables are serialized by the runner (`run/report.rs`).

pub mod histogram;
pub mod pcpu_usage;
pub mod table;
pub mod trace;
pub mod vm_stats;
