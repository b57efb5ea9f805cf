//! CPU time allocation by potential energy (PE) and PE dissipation: seed 004
//! (004_2f4d1756ca892fd2.txt) section 5.3 Algorithm 2 and section 5.4 Algorithm 3, as pure
//! integer arithmetic so that conservation is exact.
//!
//! Algorithm 2 hands out `PE_total = |P| x PE_unit x L` at every allocation event: VM `V_i` gets
//! `PE_total x w(V_i)`; a high-throughput VM splits it equally over its vCPUs, a concurrent VM
//! gives its master vCPU `(1 + uf) / (|C(V_i)| + uf)` of it and every other vCPU
//! `1 / (|C(V_i)| + uf)`. The seed writes these as real numbers; here each split is done with the
//! largest-remainder method (floors first, then one unit each to the largest remainders, ties to the
//! lower index), so the units handed out always add up to exactly `PE_total`.

/// u-factors are held as integers in millionths, so the PCPS shares are exact rationals.
pub const U_SCALE: u64 = 1_000_000;

/// A u-factor in [0, 1] as millionths (rounded to the nearest).
pub fn u_millionths(u: f64) -> u64 {
    (u.clamp(0.0, 1.0) * U_SCALE as f64).round() as u64
}

/// [`split_exact_into`] in a fresh list.
#[cfg(test)]
pub fn split_exact(total: u64, parts: &[u64]) -> Vec<u64> {
    let mut out = vec![0; parts.len()];
    split_exact_into(total, parts, &mut out);
    out
}

/// Split `total` units over `parts` in proportion to their (non-negative) weights, exactly, into
/// `out` (as long as `parts`): floors first, the remaining units one each to the largest
/// remainders (ties: lower index). All-zero weights get nothing.
pub fn split_exact_into(total: u64, parts: &[u64], out: &mut [u64]) {
    assert_eq!(out.len(), parts.len(), "split_exact_into: one output per part");
    let sum: u128 = parts.iter().map(|w| *w as u128).sum();
    if sum == 0 {
        out.fill(0);
        return;
    }
    // Each part's floor and remainder of total x w / sum, in 64 bits when the product fits (the
    // same numbers; a 128-bit division is a library call).
    let share = |w: u64| -> (u64, u128) {
        match (total.checked_mul(w), u64::try_from(sum)) {
            (Some(x), Ok(s)) => (x / s, (x % s) as u128),
            _ => {
                let x = total as u128 * w as u128;
                ((x / sum) as u64, x % sum)
            }
        }
    };
    for (o, &w) in out.iter_mut().zip(parts) {
        *o = share(w).0;
    }
    let short = (total - out.iter().sum::<u64>()) as usize;
    if short > 0 {
        // Largest remainder first, ties to the lower index: each remainder computed once, sorted
        // on the stack for the usual few parts (a VM's vCPUs, the pool's VMs).
        let (mut on_stack, mut on_heap) = ([(std::cmp::Reverse(0u128), 0usize); SPLIT_ON_STACK], Vec::new());
        let order = scratch(&mut on_stack, &mut on_heap, parts.len());
        for (slot, (i, &w)) in order.iter_mut().zip(parts.iter().enumerate()) {
            *slot = (std::cmp::Reverse(share(w).1), i);
        }
        order.sort_unstable();
        for &(_, i) in &order[..short] {
            out[i] += 1;
        }
    }
}

/// Parts `split_exact` orders on the stack (more go to a heap buffer).
const SPLIT_ON_STACK: usize = 32;

/// `n` slots of working space: the front of `stack` when it is long enough (the usual few parts:
/// a VM's vCPUs, the pool's VMs), else `heap` grown to `n`. Their values are left to the caller.
fn scratch<'a, T: Copy + Default>(stack: &'a mut [T], heap: &'a mut Vec<T>, n: usize) -> &'a mut [T] {
    if n <= stack.len() {
        &mut stack[..n]
    } else {
        heap.resize(n, T::default());
        &mut heap[..]
    }
}

/// One VM as Algorithm 2 sees it.
#[derive(Clone, Copy, Debug)]
pub struct AllocVm {
    pub weight: u64,
    pub nvcpus: usize,
    /// Concurrent VM: the master vCPU (index 0) gets the PCPS share.
    pub concurrent: bool,
    /// The master's u-factor in millionths ([`U_SCALE`]); 0 = CPS.
    pub u: u64,
    /// The most PE the VM can take in one event (see [`per_vm_increments_into`]); `u64::MAX` for none.
    pub limit: u64,
}

/// Algorithm 2's working lists, kept between allocation events (built afresh, they would be
/// nine small lists per event, every slot boundary at the default L = 1). The lists' contents
/// are rewritten by each event; only their buffers carry over.
#[derive(Clone, Debug, Default)]
pub struct Scratch {
    /// The VMs of the event, in pool order (filled by the caller).
    pub vms: Vec<AllocVm>,
    weights: Vec<u64>,
    open: Vec<bool>,
    open_weights: Vec<u64>,
    split: Vec<u64>,
    per_vm: Vec<u64>,
    out: Vec<u64>,
}

/// [`allocate_into`] in fresh lists.
#[cfg(test)]
pub fn allocate(pe_total: u64, vms: &[AllocVm]) -> Vec<u64> {
    let mut s = Scratch { vms: vms.to_vec(), ..Scratch::default() };
    allocate_into(pe_total, &mut s).to_vec()
}

/// Algorithm 2 for one allocation event, for the VMs in `s.vms`: the PE increment of every vCPU,
/// VM by VM in order, each VM's vCPUs by index, in one list (VM `i`'s vCPUs follow VM `i - 1`'s).
/// The increments add up to exactly `pe_total` when any VM has weight and vCPUs.
pub fn allocate_into(pe_total: u64, s: &mut Scratch) -> &[u64] {
    per_vm_increments_into(pe_total, s);
    s.out.clear();
    s.out.resize(s.vms.iter().map(|vm| vm.nvcpus).sum(), 0);
    let mut shares_on_stack = [0u64; SPLIT_ON_STACK];
    let mut shares_on_heap = Vec::new();
    let mut at = 0;
    for (vm, &pe_inc) in s.vms.iter().zip(&s.per_vm) {
        // Algorithm 2 lines 6-8 (master: 1 + uf, others: 1, over |C(V_i)| + uf) and lines
        // 11-12 (equal split); with uf = 0 both are the same equal split, which is what makes
        // CPS the u-factor-0 case of PCPS.
        let master_extra = if vm.concurrent { vm.u } else { 0 };
        let shares = scratch(&mut shares_on_stack, &mut shares_on_heap, vm.nvcpus);
        for (j, share) in shares.iter_mut().enumerate() {
            *share = if j == 0 { U_SCALE + master_extra } else { U_SCALE };
        }
        split_exact_into(pe_inc, shares, &mut s.out[at..at + vm.nvcpus]);
        at += vm.nvcpus;
    }
    &s.out
}

/// [`per_vm_increments_into`] in fresh lists.
#[cfg(test)]
pub fn per_vm_increments(pe_total: u64, vms: &[AllocVm]) -> Vec<u64> {
    let mut s = Scratch { vms: vms.to_vec(), ..Scratch::default() };
    per_vm_increments_into(pe_total, &mut s);
    s.per_vm
}

/// Line 4 of Algorithm 2, `PE_inc = PE_total x w(V_i)`, water-filled: a VM never gets more
/// than its `limit`, and what it cannot take is split over the others by weight, round by round
/// until no VM is over its limit. With no limits this is line 4 exactly. The limit is how much
/// a VM can dissipate in one interval (vCPUs x PE_unit x L, set in work-conserving mode): PE a
/// VM cannot use would pile up at the PE bound and be lost, and the time it stands for would be
/// lent round robin per vCPU rather than by weight (a 3-vCPU VM entitled to 4 pCPUs would hand
/// its fourth pCPU to the other VMs in proportion to their vCPU counts). Credit gets the same
/// effect by taking a vCPU whose credit overflows out of accounting (credit.c `csched_acct`).
/// If every VM reaches its limit, the rest is still handed out by weight, so the event gives out
/// exactly `pe_total`. For the VMs in `s.vms`, into `s.per_vm`.
fn per_vm_increments_into(pe_total: u64, s: &mut Scratch) {
    let n = s.vms.len();
    s.weights.clear();
    s.weights.extend(s.vms.iter().map(|vm| if vm.nvcpus == 0 { 0 } else { vm.weight }));
    s.per_vm.clear();
    s.per_vm.resize(n, 0);
    s.open.clear();
    s.open.extend(s.weights.iter().map(|w| *w > 0));
    s.split.clear();
    s.split.resize(n, 0);
    let mut left = pe_total;
    loop {
        s.open_weights.clear();
        s.open_weights.extend(s.weights.iter().zip(&s.open).map(|(w, o)| if *o { *w } else { 0 }));
        if s.open_weights.iter().all(|w| *w == 0) {
            split_exact_into(left, &s.weights, &mut s.split);
            for (o, inc) in s.per_vm.iter_mut().zip(&s.split) {
                *o += inc;
            }
            return;
        }
        split_exact_into(left, &s.open_weights, &mut s.split);
        // The VMs the split takes to their limit leave the round (each split is fixed for the
        // round, so closing them one by one is closing them together).
        let mut any_full = false;
        for i in 0..n {
            if s.open[i] && s.split[i] >= s.vms[i].limit {
                s.per_vm[i] = s.vms[i].limit;
                left -= s.vms[i].limit;
                s.open[i] = false;
                any_full = true;
            }
        }
        if !any_full {
            for (o, inc) in s.per_vm.iter_mut().zip(&s.split) {
                *o += inc;
            }
            return;
        }
    }
}

/// Algorithm 3 line 2, generalised to partial slots: a vCPU that ran `ran` ns loses
/// `PE_unit x ran / slot`; the sub-unit remainder (in PE_unit x ns) is carried in `carry`, so a
/// vCPU that runs whole slots loses exactly `PE_unit` per slot and nothing is lost to rounding.
pub fn dissipate(pe_unit: u64, slot: u64, ran: u64, carry: &mut u128) -> i64 {
    let scaled = pe_unit as u128 * ran as u128 + *carry;
    *carry = scaled % slot as u128;
    (scaled / slot as u128) as i64
}

/// The master's extra slot comes after every `ceil(1 / uf)`-th co-scheduled slot (Algorithm 4
/// line 6); None for CPS.
pub fn extra_slot_interval(u: u64) -> Option<u64> {
    (u > 0).then(|| U_SCALE.div_ceil(u))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(weight: u64, nvcpus: usize) -> AllocVm {
        AllocVm { weight, nvcpus, concurrent: false, u: 0, limit: u64::MAX }
    }

    fn con(weight: u64, nvcpus: usize, u: f64) -> AllocVm {
        AllocVm { weight, nvcpus, concurrent: true, u: u_millionths(u), limit: u64::MAX }
    }

    /// The split as first written (a stable sort of the indices by remainder, each remainder
    /// recomputed in 128 bits at every comparison): `split_exact` must give the same units.
    fn split_reference(total: u64, parts: &[u64]) -> Vec<u64> {
        let sum: u128 = parts.iter().map(|w| *w as u128).sum();
        if sum == 0 {
            return vec![0; parts.len()];
        }
        let mut out: Vec<u64> = parts.iter().map(|w| (total as u128 * *w as u128 / sum) as u64).collect();
        let given: u64 = out.iter().sum();
        let mut order: Vec<usize> = (0..parts.len()).collect();
        order.sort_by_key(|i| std::cmp::Reverse(total as u128 * parts[*i] as u128 % sum));
        for i in order.into_iter().take((total - given) as usize) {
            out[i] += 1;
        }
        out
    }

    #[test]
    fn split_exact_matches_the_reference_split_in_64_and_128_bits() {
        let mut rng = crate::engine::rng::stream(7, "split_exact test");
        let mut rnd = |n: u64| rand::Rng::random_range(&mut rng, 0..n);
        for case in 0..20_000 {
            // Mostly a VM's few parts (ordered on the stack), sometimes more than SPLIT_ON_STACK.
            let n = if case % 10 == 0 { SPLIT_ON_STACK + 1 + rnd(30) as usize } else { 1 + rnd(9) as usize };
            // Small weights (many ties), PE-sized ones, and ones whose products overflow 64 bits.
            let scale = [4, 1_000_000, u64::MAX / 3][case % 3];
            let parts: Vec<u64> = (0..n).map(|_| if rnd(5) == 0 { 0 } else { rnd(scale) }).collect();
            let total = [rnd(1000), rnd(10_000_000), rnd(u64::MAX / 2)][case % 3];
            let got = split_exact(total, &parts);
            assert_eq!(got, split_reference(total, &parts), "total {total}, parts {parts:?}");
            if parts.iter().any(|w| *w > 0) {
                assert_eq!(got.iter().sum::<u64>(), total);
            }
        }
    }

    #[test]
    fn limits_water_fill_by_weight_and_still_hand_out_everything() {
        let limited = |weight, nvcpus, limit| AllocVm { limit, ..hit(weight, nvcpus) };
        // 2400 units, weights 64 : 128 : 512 (of 704); the third VM can take 900 of its 1745.
        // Its 845 spare go 1 : 2 to the others: 500 and 1000 (whole pCPUs 1.67 and 3.33 of 8).
        let out = per_vm_increments(2400, &[limited(64, 8, 2400), limited(128, 4, 1200), limited(512, 3, 900)]);
        assert_eq!(out, vec![500, 1000, 900]);
        // A second round: after the first VM is filled, the second reaches its limit too.
        let out = per_vm_increments(1000, &[limited(100, 1, 100), limited(100, 1, 300), limited(100, 1, 1000)]);
        assert_eq!(out, vec![100, 300, 600]);
        // Everyone full: the rest still goes out by weight (conservation).
        let out = per_vm_increments(1000, &[limited(1, 1, 100), limited(3, 1, 100)]);
        assert_eq!(out.iter().sum::<u64>(), 1000);
        assert_eq!(out, vec![100 + 200, 100 + 600]);
        // No limits: line 4 as written.
        assert_eq!(per_vm_increments(2400, &[hit(64, 8), hit(128, 4), hit(512, 3)]), split_exact(2400, &[64, 128, 512]));
    }

    #[test]
    fn every_event_hands_out_exactly_p_times_pe_unit_times_l() {
        // Awkward weights and sizes so that no split is even.
        let mixes: Vec<Vec<AllocVm>> = vec![
            vec![hit(256, 8), hit(128, 4)],
            vec![hit(256, 8), con(97, 3, 0.25), con(333, 4, 0.0), hit(1, 1), con(512, 7, 0.9)],
            vec![con(7, 5, 0.33), hit(11, 2), hit(13, 6)],
        ];
        for (npcpus, pe_unit, l) in [(8u64, 300u64, 1u64), (3, 7, 5), (16, 1000, 3), (1, 1, 1)] {
            let total = npcpus * pe_unit * l;
            for vms in &mixes {
                let out = allocate(total, vms);
                let handed: u64 = out.iter().sum();
                assert_eq!(handed, total, "P={npcpus} PE_unit={pe_unit} L={l}");
                assert_eq!(out.len(), vms.iter().map(|vm| vm.nvcpus).sum::<usize>(), "one increment per vCPU");
            }
        }
    }

    #[test]
    fn vm_increments_follow_weights_and_master_gets_the_pcps_share() {
        // Weights 256 : 128 of 2400 units (8 pCPUs x 300): 1600 and 800.
        let out = allocate(2400, &[hit(256, 8), con(128, 4, 0.25)]);
        assert_eq!(out[..8], [200; 8]);
        // 800 over 4 + 0.25: master 800 x 1.25 / 4.25 = 235.29, others 188.24.
        assert_eq!(out[8..].iter().sum::<u64>(), 800);
        assert_eq!(out[8..], [236, 188, 188, 188]);
        // A VM of more vCPUs than split_exact orders on the stack.
        let out = allocate(1000, &[hit(1, 1), con(1, SPLIT_ON_STACK + 3, 0.5)]);
        assert_eq!(out.len(), SPLIT_ON_STACK + 4);
        assert_eq!(
            out[1..],
            split_exact(500, &[U_SCALE * 3 / 2].into_iter().chain(std::iter::repeat_n(U_SCALE, SPLIT_ON_STACK + 2)).collect::<Vec<_>>())
        );
    }

    #[test]
    fn u_factor_zero_is_the_equal_cps_split() {
        let cps = allocate(3000, &[con(300, 4, 0.0), hit(700, 3)]);
        let as_hit = allocate(3000, &[hit(300, 4), hit(700, 3)]);
        assert_eq!(cps, as_hit);
        assert_eq!(cps[..4], [225; 4]);
        assert_eq!(extra_slot_interval(0), None);
    }

    #[test]
    fn extra_slot_interval_is_ceil_of_one_over_u() {
        assert_eq!(extra_slot_interval(u_millionths(0.25)), Some(4));
        assert_eq!(extra_slot_interval(u_millionths(0.3)), Some(4));
        assert_eq!(extra_slot_interval(u_millionths(0.5)), Some(2));
        assert_eq!(extra_slot_interval(u_millionths(0.999)), Some(2));
    }

    #[test]
    fn dissipation_is_pe_unit_per_slot_and_carries_remainders() {
        let mut carry = 0;
        assert_eq!(dissipate(300, 30, 30, &mut carry), 300);
        assert_eq!(carry, 0);
        // Three thirds of a slot of 7 units: 2, 2, 3 (the carried remainders add up).
        let mut carry = 0;
        let parts: Vec<i64> = (0..3).map(|_| dissipate(7, 30, 10, &mut carry)).collect();
        assert_eq!(parts.iter().sum::<i64>(), 7);
        assert_eq!(parts, vec![2, 2, 3]);
    }
}
