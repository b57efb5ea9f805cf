//! What happened in a run: per-VM counters, the result tables, the schedule trace.
