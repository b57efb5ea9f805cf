//! `[run] sample_every` and the competing-modules windows (`metrics/pcpu_usage.rs`, closed the
//! same way, between events).
//!
//! `[run] sample_every`: each VM's cumulative pCPU time at every multiple of the interval, the
//! time series XenMon gives (seed 004 section 6.2 samples V1's CPU usage this way for Figure 8).
//! Samples are taken between events, from the vCPUs' accumulated run time plus the part of the
//! current run before the sample instant, so they cost nothing when unset and do not change the
//! event sequence when set.
//!
//! With `[host.microsliced]` each sample instant also records the micro-sliced pool's size (its
//! pCPU count at that instant: seed 002's per-second series of the micro pool, Figure 6), as
//! `metrics.csv` rows `micro_pool_pcpus[<t>s]`; without it nothing more is recorded.

use super::super::state::Sim;
use crate::metrics::table::{MetricRows, F3};
use crate::time::{to_ms, Nanos};

pub struct Samples {
    pub every: Nanos,
    /// (instant, pCPU time of each VM up to it), in time order.
    pub rows: Vec<(Nanos, Vec<Nanos>)>,
    /// With `[host.microsliced]`: the micro pool's pCPU count at each instant of `rows`, in the
    /// same order (empty without it).
    pub micro_pcpus: Vec<u32>,
}

impl Samples {
    pub fn new(every: Nanos) -> Self {
        Samples { every, rows: Vec::new(), micro_pcpus: Vec::new() }
    }

    fn next_at(&self) -> Nanos {
        (self.rows.len() as u64 + 1) * self.every
    }
}

impl Sim {
    /// Record every sample instant up to `until`. Called before the events at `until` run, so
    /// no vCPU's current run started after an instant being recorded.
    ///
    /// Inlined into the event loop, where it runs before every event: without `[run]
    /// sample_every` it is one test (the call it was cost ~1% of the quickstart's instructions).
    #[inline(always)]
    pub fn take_samples(&mut self, until: Nanos) {
        if self.mechanisms.samples.as_ref().is_some_and(|s| s.next_at() <= until) {
            self.record_samples(until);
        }
    }

    #[inline(never)]
    fn record_samples(&mut self, until: Nanos) {
        let Some(samples) = self.mechanisms.samples.as_mut() else { return };
        // No event runs between the last one and `until`, so the pool's size now is its size at
        // every instant recorded here.
        let micro = self.mechanisms.microsliced.as_ref().map(|m| self.placement.view(m.pool).pcpus.len() as u32);
        while samples.next_at() <= until {
            let at = samples.next_at();
            let mut per_vm = vec![0; self.vminfo.len()];
            for info in &self.vinfo {
                let current = if info.pcpu.is_some() { at.saturating_sub(info.run_start) } else { 0 };
                per_vm[info.vm.idx()] += info.run_time + current;
            }
            samples.rows.push((at, per_vm));
            if let Some(n) = micro {
                samples.micro_pcpus.push(n);
            }
        }
    }
}

impl Sim {
    /// Close every competing-modules window (`metrics/pcpu_usage.rs`) that ends at or before
    /// `until`. Called before the events at `until` run, so every run in progress started
    /// before the window ends.
    pub fn close_usage_windows(&mut self, until: Nanos) {
        while self.usage.next_window_end() <= until {
            let end = self.usage.next_window_end();
            self.close_usage_window_at(end);
        }
    }

    /// Close the last, partial window at the end of the run (`finish`).
    pub fn close_last_usage_window(&mut self) {
        self.close_usage_window_at(self.now);
    }

    fn close_usage_window_at(&mut self, end: Nanos) {
        let running: Vec<_> =
            self.vinfo.iter().filter_map(|info| info.pcpu.map(|p| (info.vm.idx(), p, end.saturating_sub(info.run_start)))).collect();
        let until: Vec<_> = self.guests.iter().map(|g| g.finished_at).collect();
        self.usage.close_window(end, &running, &until);
    }
}

impl Sim {
    /// VM `i`'s time series rows: its cumulative pCPU time at each sample, and the micro pool's
    /// size (a host quantity, repeated in every VM's rows: metrics.csv is per VM).
    pub(in crate::sim) fn sample_metrics(&self, i: usize, rows: &mut MetricRows) {
        let Some(samples) = &self.mechanisms.samples else { return };
        for (at, per_vm) in &samples.rows {
            rows.put(format_args!("pcpu_time_ms[{:.3}s]", *at as f64 / 1e9), F3(to_ms(per_vm[i])));
        }
        for ((at, _), n) in samples.rows.iter().zip(&samples.micro_pcpus) {
            rows.put(format_args!("micro_pool_pcpus[{:.3}s]", *at as f64 / 1e9), n);
        }
    }
}
