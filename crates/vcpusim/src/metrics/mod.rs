//! What happened in a run: per-VM counters, the result tables, the schedule trace.

pub mod histogram;
pub mod report;
pub mod trace;
pub mod vm_stats;
