//! A log-bucketed latency histogram: constant memory however long the run, ~9% bucket width.

use crate::time::Nanos;

/// Buckets per power of two.
const SUB: u32 = 8;
const BUCKETS: usize = 64 * SUB as usize;

#[derive(Clone, Debug)]
pub struct Histogram {
    counts: Vec<u64>,
    pub count: u64,
    pub sum: u128,
    pub max: Nanos,
    /// The smallest sample (exact); `Nanos::MAX` while empty (`min_or_zero`).
    pub min: Nanos,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram { counts: vec![0; BUCKETS], count: 0, sum: 0, max: 0, min: Nanos::MAX }
    }
}

fn bucket_of(v: Nanos) -> usize {
    if v < SUB as u64 {
        return v as usize;
    }
    let exp = 63 - v.leading_zeros(); // floor(log2 v) >= 3
    let mantissa = (v >> (exp - 3)) & (SUB as u64 - 1);
    ((exp - 2) * SUB) as usize + mantissa as usize
}

/// Lower edge of a bucket.
fn bucket_floor(b: usize) -> Nanos {
    if b < SUB as usize {
        return b as Nanos;
    }
    let exp = (b / SUB as usize) as u32 + 2;
    let mantissa = (b % SUB as usize) as u64;
    (SUB as u64 + mantissa) << (exp - 3)
}

impl Histogram {
    pub fn record(&mut self, v: Nanos) {
        self.counts[bucket_of(v).min(BUCKETS - 1)] += 1;
        self.count += 1;
        self.sum += v as u128;
        self.max = self.max.max(v);
        self.min = self.min.min(v);
    }

    /// The smallest sample, 0 when there is none.
    pub fn min_or_zero(&self) -> Nanos {
        if self.count == 0 {
            0
        } else {
            self.min
        }
    }

    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum as f64 / self.count as f64
        }
    }

    /// The q-quantile (0..=1), as the lower edge of its bucket (exact below 8 ns).
    pub fn quantile(&self, q: f64) -> Nanos {
        if self.count == 0 {
            return 0;
        }
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut seen = 0;
        for (b, c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return bucket_floor(b).min(self.max);
            }
        }
        self.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_monotone_and_tight() {
        let mut last = 0;
        for v in [0u64, 1, 7, 8, 9, 15, 16, 100, 1000, 123_456, 10_000_000_000] {
            let b = bucket_of(v);
            assert!(b >= last);
            last = b;
            let lo = bucket_floor(b);
            assert!(lo <= v && v as f64 <= lo as f64 * 1.126 + 1.0, "{v} in bucket from {lo}");
        }
    }

    #[test]
    fn quantiles() {
        let mut h = Histogram::default();
        for v in 1..=1000u64 {
            h.record(v * 1000);
        }
        let p50 = h.quantile(0.5) as f64;
        assert!((p50 - 500_000.0).abs() / 500_000.0 < 0.13, "{p50}");
        assert!(h.quantile(1.0) <= 1_000_000 && h.quantile(1.0) as f64 >= 1_000_000.0 / 1.13);
        assert_eq!(h.max, 1_000_000);
        assert!((h.mean() - 500_500.0).abs() < 1.0);
    }
}
