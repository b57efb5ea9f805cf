//! vCPU-to-pCPU placement layered over a proportional-share policy: which run queues a waking
//! vCPU may join and which a load balancer may move it to (seed 000 section 3.2).
//!
//! - `default`: no restriction; the base policy's own wake path and load balancer decide.
//! - `balance` (Sukwong and Kim, "Is co-scheduling too expensive for SMP VMs?", EuroSys'11; seed
//!   000 sections 2.2 and 3.2.2): sibling vCPUs (vCPUs of one VM) never share a run queue, so
//!   they are more likely to run at the same time. A waking vCPU goes to the least loaded pCPU
//!   holding no sibling; the load balancer never moves a vCPU onto a pCPU holding a sibling.
//! - `lc-balance`, load-conscious balance (seed 000 section 3.2.2, Figure 6b): the same candidate
//!   set, but when every candidate is above the average pCPU load the vCPU may go to any pCPU
//!   (the least loaded overall), and the load balancer may stack it onto a sibling's pCPU when
//!   that pCPU is below the average load.
//!
//! Loads are the base policy's run-queue loads (CFS: the sum of the flattened group weights of
//! the queued and running vCPUs), so a UP VM's vCPU weighs as much as all eight vCPUs of an
//! equally weighted 8-vCPU VM, which is what makes the seed's mixes imbalanced (section 3.2.1).
//!
//! The functions here are pure: they see a [`PlacementView`] and decide; the policy reads its
//! own run queues through one (CFS: `cfs/select.rs`, in place, no per-wakeup copy). The tests
//! hold them to the rules written as lists of candidate pCPUs over plain slices.

/// The placement rule (`[host] placement`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    Default,
    Balance,
    LcBalance,
}

impl Placement {
    /// The scenario spellings, in the order `vcpusim list` shows them.
    pub const NAMES: &'static [&'static str] = &["default", "balance", "lc-balance"];

    pub fn from_name(name: &str) -> Option<Placement> {
        match name {
            "default" => Some(Placement::Default),
            "balance" => Some(Placement::Balance),
            "lc-balance" => Some(Placement::LcBalance),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Placement::Default => "default",
            Placement::Balance => "balance",
            Placement::LcBalance => "lc-balance",
        }
    }
}

/// What placement reads about each pCPU, seen from one vCPU being placed (pCPUs numbered
/// `0..npcpus()`).
pub trait PlacementView {
    fn npcpus(&self) -> usize;
    /// Run-queue load (queued and running vCPUs' weights).
    fn load(&self, p: usize) -> u64;
    /// Whether the run queue holds a sibling of the vCPU (queued or running; not itself).
    fn holds_sibling(&self, p: usize) -> bool;
    /// Whether `p` is the policy's pool's: the average load is theirs.
    fn in_pool(&self, p: usize) -> bool;
    /// Whether the vCPU may run on `p` (pool ∩ hard affinity): the only candidates.
    fn usable(&self, p: usize) -> bool;

    /// The least loaded pCPU `p` with `keep(p)` (ties: `prev`, the warm cache the base wake path
    /// would also keep, then the lowest number, so the choice is deterministic). `keep` implies
    /// `usable`. This one reads every pCPU; a view with an index of its loads answers sooner
    /// (CFS: policies/load_index.rs), and the tests hold it to this one.
    fn least_loaded_where(&self, prev: usize, keep: impl Fn(usize) -> bool) -> Option<usize> {
        scan_least_loaded(self, prev, keep)
    }

    /// The pool's total load and pCPU count (u128: weights times pCPU counts can pass u64).
    fn pool_total(&self) -> (u128, u128) {
        scan_pool_total(self)
    }
}

/// [`PlacementView::least_loaded_where`] by reading every pCPU.
pub fn scan_least_loaded<V: PlacementView + ?Sized>(view: &V, prev: usize, keep: impl Fn(usize) -> bool) -> Option<usize> {
    (0..view.npcpus()).filter(|&p| keep(p)).min_by_key(|&p| (view.load(p), p != prev, p))
}

/// [`PlacementView::pool_total`] by reading every pCPU.
pub fn scan_pool_total<V: PlacementView + ?Sized>(view: &V) -> (u128, u128) {
    (0..view.npcpus()).filter(|&p| view.in_pool(p)).fold((0, 0), |(t, n), p| (t + view.load(p) as u128, n + 1))
}

/// Where a waking vCPU goes under `placement`: the least loaded candidate (`prev` on ties, then
/// the lowest number). Candidates: the usable pCPUs holding no sibling; under `balance` every
/// usable pCPU when there is none ("more vCPUs than pCPUs: stacking is unavoidable"); under
/// `lc-balance` every usable pCPU unless a sibling-free one is at or below the average load ("If
/// at least one underloaded pCPU exists in the set, the set is determined as the pCPU affinity
/// ... Otherwise the affinity is set to all pCPUs", seed 000 3.2.2). `None` for `default` (the
/// base policy's wake path decides). No list built (it runs at every wakeup); a test holds it
/// to the rule written with candidate lists.
///
/// Under `lc-balance` some sibling-free candidate is at or below the average exactly when the
/// least loaded one is, so that one search decides both the set and the choice in it.
pub fn select_waking<V: PlacementView>(placement: Placement, view: &V, prev: usize) -> Option<usize> {
    let free = |p: usize| view.usable(p) && !view.holds_sibling(p);
    let all = |p: usize| view.usable(p);
    match placement {
        Placement::Default => None,
        Placement::Balance => view.least_loaded_where(prev, free).or_else(|| view.least_loaded_where(prev, all)),
        Placement::LcBalance => match view.least_loaded_where(prev, free) {
            Some(p) if vs_average(view, view.pool_total(), p).is_le() => Some(p),
            _ => view.least_loaded_where(prev, all),
        },
    }
}

/// `p`'s load against the average load of the pool's pCPUs (`PlacementView::pool_total`), without rounding the
/// average: load x n against the total.
fn vs_average<V: PlacementView>(view: &V, (total, n): (u128, u128), p: usize) -> std::cmp::Ordering {
    (view.load(p) as u128 * n).cmp(&total)
}

/// May the load balancer move the view's vCPU onto pCPU `dest`, given the run-queue loads (its
/// current queue included), the pool's pCPUs (whose loads make the average) and whether `dest`
/// holds one of its siblings? (Affinity is the caller's to check.)
pub fn may_move_to<V: PlacementView>(placement: Placement, view: &V, dest: usize) -> bool {
    match placement {
        Placement::Default => true,
        Placement::Balance => !view.holds_sibling(dest),
        // "vCPU stacking is also allowed when the load balancer tries to migrate the vCPU to an
        // underloaded pCPU to which its sibling vCPU has been assigned" (seed 000 3.2.2).
        Placement::LcBalance => !view.holds_sibling(dest) || vs_average(view, view.pool_total(), dest).is_lt(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The view over plain slices, and the rules written with candidate lists: the reference
    /// the one-pass functions above are held to.
    #[derive(Clone, Copy, Debug)]
    struct LoadView<'a> {
        loads: &'a [u64],
        holds_sibling: &'a [bool],
        pool: &'a [bool],
        usable: &'a [bool],
    }

    impl PlacementView for LoadView<'_> {
        fn npcpus(&self) -> usize {
            self.loads.len()
        }
        fn load(&self, p: usize) -> u64 {
            self.loads[p]
        }
        fn holds_sibling(&self, p: usize) -> bool {
            self.holds_sibling[p]
        }
        fn in_pool(&self, p: usize) -> bool {
            self.pool[p]
        }
        fn usable(&self, p: usize) -> bool {
            self.usable[p]
        }
    }

    impl LoadView<'_> {
        /// loads[p] against the average of the pool's loads, summed from the slices.
        fn by_average(&self, p: usize) -> std::cmp::Ordering {
            let (total, n) =
                self.loads.iter().zip(self.pool).filter(|(_, &inp)| inp).fold((0u128, 0u128), |(t, n), (&l, _)| (t + l as u128, n + 1));
            (self.loads[p] as u128 * n).cmp(&total)
        }
        fn above_average(&self, p: usize) -> bool {
            self.by_average(p).is_gt()
        }
        fn below_average(&self, p: usize) -> bool {
            self.by_average(p).is_lt()
        }
        fn sibling_free(&self) -> Vec<usize> {
            (0..self.npcpus()).filter(|&p| self.usable[p] && !self.holds_sibling[p]).collect()
        }
        fn all_usable(&self) -> Vec<usize> {
            (0..self.npcpus()).filter(|&p| self.usable[p]).collect()
        }
        fn least_loaded(&self, candidates: &[usize], prev: usize) -> Option<usize> {
            candidates.iter().copied().min_by_key(|&p| (self.loads[p], p != prev, p))
        }
    }

    /// The pCPUs a waking vCPU may join (seed 000 3.2.2), as a list.
    fn wake_candidates(placement: Placement, view: &LoadView) -> Option<Vec<usize>> {
        let free = view.sibling_free();
        match placement {
            Placement::Default => None,
            Placement::Balance => Some(if free.is_empty() { view.all_usable() } else { free }),
            Placement::LcBalance => {
                let some_underloaded = free.iter().any(|&p| !view.above_average(p));
                Some(if some_underloaded { free } else { view.all_usable() })
            }
        }
    }

    /// Weights as CFS gives them with equal VM weights on 4 pCPUs: a 4-vCPU VM's vCPU 1024, a UP
    /// VM's vCPU 4096 (seed 000 Figure 6).
    const SMP: u64 = 1024;
    const UP: u64 = 4096;

    fn view<'a>(loads: &'a [u64], holds_sibling: &'a [bool]) -> LoadView<'a> {
        let all: &'static [bool] = Box::leak(vec![true; loads.len()].into_boxed_slice());
        LoadView { loads, holds_sibling, pool: all, usable: all }
    }

    fn may_move(placement: Placement, v: &LoadView, dest: usize) -> bool {
        let by_average = match placement {
            Placement::Default => true,
            Placement::Balance => !v.holds_sibling[dest],
            Placement::LcBalance => !v.holds_sibling[dest] || v.below_average(dest),
        };
        let moved = may_move_to(placement, v, dest);
        assert_eq!(moved, by_average, "may_move_to against the average of the slices");
        moved
    }

    #[test]
    fn names_round_trip() {
        for name in Placement::NAMES {
            assert_eq!(Placement::from_name(name).map(Placement::name), Some(*name));
        }
        assert_eq!(Placement::from_name("lc_balance"), None);
    }

    #[test]
    fn default_leaves_the_wake_choice_to_the_base_policy_and_never_bars_a_move() {
        let v = view(&[0, SMP, SMP], &[true, true, false]);
        assert_eq!(select_waking(Placement::Default, &v, 0), None);
        assert!(may_move(Placement::Default, &v, 0));
    }

    #[test]
    fn balance_never_stacks_siblings_even_on_a_much_busier_pcpu() {
        // Figure 6a: siblings sit on the idle-ish pCPUs 2 and 3; pCPUs 0 and 1 run UP VMs.
        let loads = [UP, UP, SMP, SMP];
        let sib = [false, false, true, true];
        let v = view(&loads, &sib);
        assert_eq!(wake_candidates(Placement::Balance, &v), Some(vec![0, 1]));
        assert_eq!(select_waking(Placement::Balance, &v, 3), Some(0));
        // The least loaded sibling-free pCPU wins, whatever prev is.
        let loads = [UP + SMP, UP, SMP, SMP];
        assert_eq!(select_waking(Placement::Balance, &view(&loads, &sib), 0), Some(1));
        // The load balancer never moves it onto a sibling's pCPU, however empty.
        let loads = [UP + SMP, UP, 0, SMP];
        let v = view(&loads, &sib);
        assert!(!may_move(Placement::Balance, &v, 2));
        assert!(may_move(Placement::Balance, &v, 1));
    }

    #[test]
    fn balance_falls_back_to_the_least_loaded_pcpu_when_every_pcpu_holds_a_sibling() {
        let loads = [3 * SMP, SMP, 2 * SMP];
        let v = view(&loads, &[true; 3]);
        assert_eq!(select_waking(Placement::Balance, &v, 0), Some(1));
        assert_eq!(select_waking(Placement::LcBalance, &v, 0), Some(1));
    }

    #[test]
    fn ties_prefer_the_previous_pcpu_then_the_lowest_number() {
        let loads = [SMP, 0, 0, 0];
        let v = view(&loads, &[false; 4]);
        assert_eq!(select_waking(Placement::Balance, &v, 3), Some(3));
        assert_eq!(select_waking(Placement::Balance, &v, 0), Some(1));
    }

    #[test]
    fn lc_balance_stacks_only_when_every_sibling_free_pcpu_is_above_average() {
        // Figure 6b: total 2 UP + 2 SMP = 10240 over 4 pCPUs, average 2560. The sibling-free
        // pCPUs 0 and 1 (4096 each) are both above it: the vCPU may go anywhere, and the least
        // loaded pCPU holds a sibling.
        let loads = [UP, UP, SMP, SMP];
        let sib = [false, false, true, true];
        let v = view(&loads, &sib);
        assert_eq!(wake_candidates(Placement::LcBalance, &v), Some(vec![0, 1, 2, 3]));
        assert_eq!(select_waking(Placement::LcBalance, &v, 0), Some(2));
        // Both sibling-free pCPUs above the average (1792 for [4096, 2048, 0, 1024]): stack.
        let loads = [UP, 2 * SMP, 0, SMP];
        assert_eq!(select_waking(Placement::LcBalance, &view(&loads, &sib), 0), Some(2));
        // One sibling-free pCPU below the average keeps the balance set, even though a
        // sibling's pCPU is lighter still: average (4096 + 1024 + 0 + 1024) / 4 = 1536.
        let loads = [UP, SMP, 0, SMP];
        let v = view(&loads, &sib);
        assert_eq!(wake_candidates(Placement::LcBalance, &v), Some(vec![0, 1]));
        assert_eq!(select_waking(Placement::LcBalance, &v, 2), Some(1));
        // Exactly at the average is not above it: [2048, 2048, 0, 4096] averages 2048.
        let loads = [2 * SMP, 2 * SMP, 0, UP];
        assert_eq!(wake_candidates(Placement::LcBalance, &view(&loads, &sib)), Some(vec![0, 1]));
    }

    #[test]
    fn lc_balance_moves_onto_a_siblings_pcpu_only_below_the_average_load() {
        // Average (4096 + 4096 + 1024 + 1024) / 4 = 2560.
        let loads = [UP, UP, SMP, SMP];
        let sib = [false, false, true, true];
        let v = view(&loads, &sib);
        assert!(may_move(Placement::LcBalance, &v, 2), "1024 < 2560: stacking allowed");
        assert!(!may_move(Placement::Balance, &v, 2));
        // A sibling's pCPU at the average is not underloaded: average of [0, 0, 2048, 2048] is 1024.
        let loads = [0, 0, 2 * SMP, 2 * SMP];
        let sib = [false, false, false, true];
        let v = view(&loads, &sib);
        assert!(!may_move(Placement::LcBalance, &v, 3));
        let loads = [SMP, SMP, SMP, SMP];
        assert!(!may_move(Placement::LcBalance, &view(&loads, &sib), 3), "equal loads: nobody is below average");
        // A sibling-free destination is always allowed.
        assert!(may_move(Placement::LcBalance, &view(&loads, &sib), 2));
    }

    /// `select_waking` (one pass, no list) picks what the list version picks: the least loaded
    /// of `wake_candidates`, on random views with ties, partial pools and affinities, and
    /// pCPUs that hold siblings or may not be used.
    #[test]
    fn wake_candidates_select_the_same_pcpu_as_select_waking() {
        let mut rng = crate::engine::rng::stream(1, "placement test");
        let mut rnd = |n: u64| rand::Rng::random_range(&mut rng, 0..n);
        for _ in 0..20_000 {
            let n = 1 + rnd(9) as usize;
            // Few distinct loads, so ties (and loads at the average) are common.
            let loads: Vec<u64> = (0..n).map(|_| [0, SMP, 2 * SMP, UP, u64::MAX / 4][rnd(5) as usize]).collect();
            let sib: Vec<bool> = (0..n).map(|_| rnd(2) == 0).collect();
            let pool: Vec<bool> = (0..n).map(|_| rnd(5) != 0).collect();
            let usable: Vec<bool> = (0..n).map(|p| pool[p] && rnd(4) != 0).collect();
            let v = LoadView { loads: &loads, holds_sibling: &sib, pool: &pool, usable: &usable };
            let prev = rnd(n as u64) as usize;
            for placement in [Placement::Default, Placement::Balance, Placement::LcBalance] {
                let by_list = wake_candidates(placement, &v).and_then(|c| v.least_loaded(&c, prev));
                assert_eq!(select_waking(placement, &v, prev), by_list, "{placement:?} {v:?} prev {prev}");
            }
        }
    }

    #[test]
    fn averages_do_not_overflow_with_huge_weights() {
        let big = u64::MAX / 2;
        let loads = [big, big, 0];
        let v = view(&loads, &[true, false, false]);
        assert!(v.above_average(0) && v.below_average(2));
        assert_eq!(select_waking(Placement::LcBalance, &v, 0), Some(2));
    }
}
