//! Variable host charges (`[host.costs] variation`): each context switch in, HLT or poll exit
//! and exit round trip after a yield costs its `[host.costs]` value times a factor drawn
//! uniformly from `[1 - variation, 1 + variation]`, from one random stream per vCPU
//! (`host/costs/variation/...`, so no other draw of the run moves). Off (variation 0, the
//! default): every charge is its exact value and no stream is made.
//!
//! ```text
//!   switch_in (context_switch + halt_wake) -+
//!   on_exit Hlt, Hypercall::Poll (hlt_exit) -+-> Sim::charged(v, cost): cost x U[1 - variation, 1 + variation]
//!   yield_exit round trip (ipi_send)        -+
//! ```
//!
//! Why it exists: with every charge exact, vCPUs that take pause-loop exits run strictly
//! periodically, and their phases can lock against a third pCPU's switches. Under KVM 3.2's
//! directed yield two stacked siblings can then be boosted in turn inside each other's switch-in
//! for seconds (EXPERIMENTS.md E4, Fig 11). Real exit and switch times vary with cache misses
//! and lock contention; no measured distribution of them is modelled, which is why it is off by
//! default (docs/model.md §4).

use super::super::state::Sim;
use crate::engine::rng::{stream, Stream};
use crate::ids::VcpuId;
use crate::time::Nanos;

/// The host's spread and one stream per vCPU, indexed by vCPU id.
pub struct CostVariation {
    variation: f64,
    streams: Vec<Stream>,
}

impl CostVariation {
    /// `variation` (above 0) with streams for vCPUs `0..vcpus`, named by the VM and the vCPU's
    /// index in it.
    pub fn new(seed: u64, variation: f64, vcpus: impl Iterator<Item = (String, u32)>) -> CostVariation {
        let streams = vcpus.map(|(vm, i)| stream(seed, &format!("host/costs/variation/vm/{vm}/vcpu/{i}"))).collect();
        CostVariation { variation, streams }
    }

    /// `cost` times a factor drawn uniformly from `[1 - variation, 1 + variation]`, to the
    /// nanosecond.
    pub fn draw(&mut self, v: VcpuId, cost: Nanos) -> Nanos {
        let f: f64 = rand::Rng::random_range(&mut self.streams[v.idx()], (1.0 - self.variation)..=(1.0 + self.variation));
        (cost as f64 * f).round() as Nanos
    }
}

impl Sim {
    /// `cost` as the host charges it to `v` this time: exact, or drawn around it under
    /// `[host.costs] variation` (see the module doc).
    #[inline]
    pub(in crate::sim) fn charged(&mut self, v: VcpuId, cost: Nanos) -> Nanos {
        match self.mechanisms.cost_variation.as_mut() {
            Some(c) if cost > 0 => c.draw(v, cost),
            _ => cost,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_stay_in_the_band_average_the_cost_and_repeat_per_seed() {
        let vcpus = || (0..2).map(|i| ("a".to_string(), i));
        let (mut a, mut b, mut other) =
            (CostVariation::new(1, 0.5, vcpus()), CostVariation::new(1, 0.5, vcpus()), CostVariation::new(2, 0.5, vcpus()));
        let draws: Vec<Nanos> = (0..20_000).map(|_| a.draw(VcpuId(1), 3_000)).collect();
        assert!(draws.iter().all(|&d| (1_500..=4_500).contains(&d)));
        let mean = draws.iter().sum::<Nanos>() as f64 / draws.len() as f64;
        assert!((mean - 3_000.0).abs() < 20.0, "mean {mean}");
        assert!(draws.iter().any(|&d| d < 1_600) && draws.iter().any(|&d| d > 4_400), "the band is used to its edges");
        let again: Vec<Nanos> = (0..20_000).map(|_| b.draw(VcpuId(1), 3_000)).collect();
        assert_eq!(draws, again, "same seed, same draws");
        let elsewhere: Vec<Nanos> = (0..100).map(|_| other.draw(VcpuId(1), 3_000)).collect();
        assert_ne!(draws[..100], elsewhere[..], "another seed draws otherwise");
        // vCPU 0's stream is its own: drawing from it leaves vCPU 1's sequence where it was.
        let mut c = CostVariation::new(1, 0.5, vcpus());
        c.draw(VcpuId(0), 3_000);
        assert_eq!(c.draw(VcpuId(1), 3_000), draws[0]);
    }
}
