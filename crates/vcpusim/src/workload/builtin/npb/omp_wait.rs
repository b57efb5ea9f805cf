//! How libgomp's threads wait at an OpenMP barrier under `OMP_WAIT_POLICY` (NPB with
//! spinning waits, seed 003 slide 13).
//!
//! GCC >= 4.4 libgomp (`libgomp/env.c` `initialize_env`): `parse_wait_policy` reads
//! OMP_WAIT_POLICY (active > 0, passive < 0, unset 0) and, unless GOMP_SPINCOUNT is set, sets
//! the spin count: `gomp_spin_count_var = 30000000000LL` for active ("5 min blocking" at the
//! file's "rough estimation of 100000 spins per msec"), 0 for passive, and leaves the
//! unset default (300,000 polls, [`super::GOMP_SPIN`]). A waiting thread first polls its futex
//! word that many times (`libgomp/config/linux/wait.h` `do_spin`: an atomic load and
//! `cpu_relax` per iteration), then calls `futex_wait` (`do_wait`). So
//! `OMP_WAIT_POLICY=active` is spin-then-block with a spin of 3e10 polls: it never blocks in a
//! run of any length the simulator is used for, and a descheduled waiter's sibling keeps
//! burning its pCPU — the "spinning workloads" of the slides.
//!
//! Shortcut: libgomp uses `gomp_throttled_spin_count_var` (1000 polls under active, 100 under
//! the default) when it manages more threads than the guest has CPUs; the workload does not
//! know the VM's vCPU count, so this case is not modelled (the NPB runs use one thread per
//! vCPU, where it does not arise). User-mode polling does not cause pause-loop exits (PLE
//! counts PAUSE only at CPL 0: Intel SDM vol. 3C, "PAUSE-loop exiting"; sim/execute.rs), as for
//! every `BarrierWait::Spin`.

use crate::time::{Nanos, MS};
use crate::workload::program::BarrierWait;

/// `gomp_spin_count_var` under OMP_WAIT_POLICY=active (libgomp/env.c).
pub const ACTIVE_SPIN_COUNT: u64 = 30_000_000_000;
/// libgomp's own estimate of its poll rate (env.c: "100000 spins per msec").
pub const SPINS_PER_MS: u64 = 100_000;
/// The active policy's spin as CPU time: 3e10 / 1e5 per ms = 300 s ("5 min blocking").
pub const ACTIVE_SPIN: Nanos = ACTIVE_SPIN_COUNT / SPINS_PER_MS * MS;

/// OMP_WAIT_POLICY's values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitPolicy {
    /// OMP_WAIT_POLICY=active: spin ACTIVE_SPIN_COUNT polls, then block.
    Active,
    /// OMP_WAIT_POLICY=passive: spin count 0, futex_wait at once.
    Passive,
}

impl WaitPolicy {
    /// The barrier wait of a libgomp thread under this policy.
    pub fn barrier_wait(self) -> BarrierWait {
        match self {
            WaitPolicy::Active => BarrierWait::SpinThenBlock(ACTIVE_SPIN),
            WaitPolicy::Passive => BarrierWait::Block,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::SEC;

    #[test]
    fn active_spins_five_minutes_by_libgomps_estimate_and_passive_blocks_at_once() {
        assert_eq!(ACTIVE_SPIN, 300 * SEC);
        assert_eq!(WaitPolicy::Active.barrier_wait(), BarrierWait::SpinThenBlock(300 * SEC));
        assert_eq!(WaitPolicy::Passive.barrier_wait(), BarrierWait::Block);
    }
}
