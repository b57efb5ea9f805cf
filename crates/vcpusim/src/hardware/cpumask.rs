//! Id sets: pCPU masks (affinity, cpupool membership, idle pCPUs) with `xl`'s cpulist syntax,
//! and the same bitset over vCPUs (a policy's assigned vCPUs, a VM's idle siblings).
//!
//! An `IdMask<I>` is a bitset over dense ids (`ids.rs`); `CpuMask` is it over the host's pCPUs
//! (Xen `cpumask_t`, Linux `struct cpumask`), `VcpuMask` over vCPUs. Iteration is in increasing
//! id order, so every loop over a mask is deterministic. The per-event paths of the policies use
//! these in place of scans over every pCPU or vCPU: a membership test is one word, a
//! set operation, count or search is one pass over `n / 64` words, as Xen's `cpumask_and`,
//! `cpumask_weight`, `cpumask_cycle` and Linux's `for_each_cpu_and` are over `BITS_TO_LONGS(n)`.
//! `parse_cpulist` reads what `xl` accepts for `cpus=` and cpupool `cpus=`: comma-separated
//! pCPU numbers and inclusive ranges, `"0-3,8,10-11"` (xl's `parse_cpurange`; `all` too).

use crate::ids::{PcpuId, VcpuId};
use std::marker::PhantomData;

/// A dense id a mask can hold.
pub trait MaskId: Copy {
    fn index(self) -> usize;
    fn from_index(i: usize) -> Self;
}

impl MaskId for PcpuId {
    #[inline]
    fn index(self) -> usize {
        self.idx()
    }
    #[inline]
    fn from_index(i: usize) -> Self {
        PcpuId(i as u32)
    }
}

impl MaskId for VcpuId {
    #[inline]
    fn index(self) -> usize {
        self.idx()
    }
    #[inline]
    fn from_index(i: usize) -> Self {
        VcpuId(i as u32)
    }
}

/// A position in a list (a VM's vCPUs by their index in the VM: `IndexMask`).
impl MaskId for usize {
    #[inline]
    fn index(self) -> usize {
        self
    }
    #[inline]
    fn from_index(i: usize) -> Self {
        i
    }
}

/// A set of positions in a list: a VM's vCPUs by their index in the VM (`VmInfo::runnable`).
pub type IndexMask = IdMask<usize>;

/// A set of ids of kind `I`, one bit each.
pub struct IdMask<I> {
    words: Vec<u64>,
    _id: PhantomData<I>,
}

/// A set of pCPUs (`cpumask_t`).
pub type CpuMask = IdMask<PcpuId>;
/// A set of vCPUs.
pub type VcpuMask = IdMask<VcpuId>;

impl<I> Clone for IdMask<I> {
    fn clone(&self) -> Self {
        IdMask { words: self.words.clone(), _id: PhantomData }
    }
    /// Reuses `self`'s storage (no allocation once it has grown to size).
    fn clone_from(&mut self, source: &Self) {
        self.words.clone_from(&source.words);
    }
}

impl<I> Default for IdMask<I> {
    fn default() -> Self {
        IdMask { words: Vec::new(), _id: PhantomData }
    }
}

/// Equal as sets: trailing zero words (left by `remove` or `and`) do not count.
impl<I> PartialEq for IdMask<I> {
    fn eq(&self, other: &Self) -> bool {
        let n = self.words.len().max(other.words.len());
        (0..n).all(|i| self.words.get(i).copied().unwrap_or(0) == other.words.get(i).copied().unwrap_or(0))
    }
}

impl<I> Eq for IdMask<I> {}

/// The word and bit of index `i`.
#[inline]
fn split(i: usize) -> (usize, u64) {
    (i / 64, 1u64 << (i % 64))
}

impl<I: MaskId> IdMask<I> {
    /// The empty set.
    pub fn empty() -> Self {
        Self::default()
    }

    /// The empty set with room for ids `0..n` (inserting them never allocates).
    pub fn with_len(n: usize) -> Self {
        IdMask { words: vec![0; n.div_ceil(64)], _id: PhantomData }
    }

    /// Ids `0..n`.
    pub fn full(n: usize) -> Self {
        let mut m = Self::with_len(n);
        for (w, word) in m.words.iter_mut().enumerate() {
            let bits = n - w * 64;
            *word = if bits >= 64 { u64::MAX } else { (1u64 << bits) - 1 };
        }
        m
    }

    pub fn from_pcpus(ids: impl IntoIterator<Item = I>) -> Self {
        let mut m = Self::empty();
        for p in ids {
            m.insert(p);
        }
        m
    }

    /// The set of the `i` with `f(i)` among `0..n`.
    pub fn from_fn(n: usize, f: impl Fn(I) -> bool) -> Self {
        let mut m = Self::with_len(n);
        for i in 0..n {
            if f(I::from_index(i)) {
                m.words[i / 64] |= 1 << (i % 64);
            }
        }
        m
    }

    #[inline]
    pub fn insert(&mut self, p: I) {
        let (w, b) = split(p.index());
        if self.words.len() <= w {
            self.words.resize(w + 1, 0);
        }
        self.words[w] |= b;
    }

    #[inline]
    pub fn remove(&mut self, p: I) {
        let (w, b) = split(p.index());
        if let Some(word) = self.words.get_mut(w) {
            *word &= !b;
        }
    }

    /// Insert `p` if `member`, else remove it.
    #[inline]
    pub fn set(&mut self, p: I, member: bool) {
        if member {
            self.insert(p)
        } else {
            self.remove(p)
        }
    }

    /// Insert `p` if `member`, else remove it, within the storage the mask has (`with_len`,
    /// `full`): an id beyond it is left out. No growth path: for the engine's per-event masks.
    #[inline(always)]
    pub fn put(&mut self, p: I, member: bool) {
        let (w, b) = split(p.index());
        if let Some(word) = self.words.get_mut(w) {
            *word = (*word & !b) | if member { b } else { 0 };
        }
    }

    /// Remove every member (keeps the storage).
    pub fn clear(&mut self) {
        self.words.iter_mut().for_each(|w| *w = 0);
    }

    #[inline]
    pub fn contains(&self, p: I) -> bool {
        let (w, b) = split(p.index());
        self.words.get(w).is_some_and(|word| word & b != 0)
    }

    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }

    /// `cpumask_weight`.
    pub fn count(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// `cpumask_weight` of `self ∩ other`, without building it.
    pub fn count_and(&self, other: &Self) -> usize {
        self.words.iter().zip(&other.words).map(|(a, b)| (a & b).count_ones() as usize).sum()
    }

    pub fn and(&self, other: &Self) -> Self {
        let n = self.words.len().min(other.words.len());
        IdMask { words: (0..n).map(|i| self.words[i] & other.words[i]).collect(), _id: PhantomData }
    }

    /// `self &= other` (`cpumask_and` in place).
    pub fn and_with(&mut self, other: &Self) {
        for (i, w) in self.words.iter_mut().enumerate() {
            *w &= other.words.get(i).copied().unwrap_or(0);
        }
    }

    /// `self |= other` (`cpumask_or` in place).
    pub fn or_with(&mut self, other: &Self) {
        if self.words.len() < other.words.len() {
            self.words.resize(other.words.len(), 0);
        }
        for (w, o) in self.words.iter_mut().zip(&other.words) {
            *w |= o;
        }
    }

    /// `self &= !other` (`cpumask_andnot` in place).
    pub fn remove_all(&mut self, other: &Self) {
        for (w, o) in self.words.iter_mut().zip(&other.words) {
            *w &= !o;
        }
    }

    pub fn intersects(&self, other: &Self) -> bool {
        self.words.iter().zip(&other.words).any(|(a, b)| a & b != 0)
    }

    /// Whether every member of `self` is in `other`.
    pub fn is_subset(&self, other: &Self) -> bool {
        self.words.iter().enumerate().all(|(i, &w)| w & !other.words.get(i).copied().unwrap_or(0) == 0)
    }

    /// The members in increasing order.
    pub fn iter(&self) -> impl Iterator<Item = I> + '_ {
        self.words.iter().enumerate().flat_map(|(i, &w)| Bits(w).map(move |b| I::from_index(i * 64 + b)))
    }

    /// The members of `self ∩ other` in increasing order (Linux `for_each_cpu_and`).
    pub fn iter_and<'a>(&'a self, other: &'a Self) -> impl Iterator<Item = I> + 'a {
        self.words.iter().zip(&other.words).enumerate().flat_map(|(i, (&a, &b))| Bits(a & b).map(move |b| I::from_index(i * 64 + b)))
    }

    /// The lowest member at or above index `from`, if any.
    pub fn next_from(&self, from: usize) -> Option<I> {
        let (mut w, _) = split(from);
        let mut word = self.words.get(w)? & (u64::MAX << (from % 64));
        loop {
            if word != 0 {
                return Some(I::from_index(w * 64 + word.trailing_zeros() as usize));
            }
            w += 1;
            word = *self.words.get(w)?;
        }
    }

    /// The first id at or after `from`, wrapping to the lowest, that is in `self` and in every
    /// mask of `also` (`cpumask_next_and` from `from`, then from 0), without building the
    /// intersection: the words are met one at a time, and the search stops at the first hit.
    pub fn first_common_from(&self, also: &[&Self], from: usize) -> Option<I> {
        let n = self.words.len();
        if n == 0 {
            return None;
        }
        let word = |w: usize| also.iter().fold(self.words[w], |acc, m| acc & m.words.get(w).copied().unwrap_or(0));
        let from = if from >= n * 64 { 0 } else { from };
        let (w0, b0) = (from / 64, from % 64);
        let hit = |w: usize, bits: u64| (bits != 0).then(|| I::from_index(w * 64 + bits.trailing_zeros() as usize));
        hit(w0, word(w0) & (!0u64 << b0))
            .or_else(|| (w0 + 1..n).chain(0..w0).find_map(|w| hit(w, word(w))))
            .or_else(|| hit(w0, word(w0) & ((1u64 << b0) - 1)))
    }

    /// `cpumask_cycle(n, mask)`: the first member after `n`, wrapping round; `n` itself if it is
    /// the only one; `None` for an empty set.
    pub fn cycle(&self, n: usize) -> Option<I> {
        self.next_from(n + 1).or_else(|| self.next_from(0))
    }

    /// Whether `self ∩ within` is a non-empty proper subset of `within` (Xen's
    /// `has_soft_affinity`: `self` soft, `within` hard ∩ pool given as `a ∩ b`), without
    /// allocating: it is asked on every wake.
    pub fn narrows(&self, a: &Self, b: &Self) -> bool {
        let n = a.words.len().min(b.words.len());
        let (mut some, mut proper) = (false, false);
        for i in 0..n {
            let within = a.words[i] & b.words[i];
            let inner = within & self.words.get(i).copied().unwrap_or(0);
            some |= inner != 0;
            proper |= inner != within;
        }
        some && proper
    }

    /// Whether `self ∩ a ∩ b` is not empty, without allocating.
    pub fn meets_both(&self, a: &Self, b: &Self) -> bool {
        self.words.iter().zip(&a.words).zip(&b.words).any(|((x, y), z)| x & y & z != 0)
    }

    /// The lowest member, if any.
    pub fn first(&self) -> Option<I> {
        self.next_from(0)
    }

    /// The `k`-th member in increasing order (from 0), if there are more than `k`: what
    /// `iter().nth(k)` gives, counting whole words at a time (one pass over `n / 64` words, not
    /// a step per member).
    pub fn nth(&self, mut k: usize) -> Option<I> {
        for (w, &word) in self.words.iter().enumerate() {
            let ones = word.count_ones() as usize;
            if k < ones {
                return Bits(word).nth(k).map(|b| I::from_index(w * 64 + b));
            }
            k -= ones;
        }
        None
    }
}

/// A set of ids held as a window of a full mask's words: `words[k]` is word `first + k` of the
/// `IdMask` holding the same ids, and every word outside the window is empty. For a group of
/// nearby ids (a core's threads, a socket's pCPUs: credit's `per_cpu(cpu_sibling_mask)` and
/// `cpu_core_mask`) it costs the words the group spans, not a word per 64 ids of the host: one
/// full mask per pCPU was O(P^2) bits (512 MiB at 65,536 pCPUs for the sibling masks alone), and
/// an operation with a host mask reads only the window.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WindowMask<I> {
    first: usize,
    words: Vec<u64>,
    _id: PhantomData<I>,
}

impl<I: MaskId> WindowMask<I> {
    /// The set of `ids` (the empty set when there are none).
    pub fn of(ids: impl IntoIterator<Item = I> + Clone) -> Self {
        let span = ids
            .clone()
            .into_iter()
            .map(|i| i.index() / 64)
            .fold(None, |s: Option<(usize, usize)>, w| Some(s.map_or((w, w), |(lo, hi)| (lo.min(w), hi.max(w)))));
        let Some((lo, hi)) = span else {
            return WindowMask { first: 0, words: Vec::new(), _id: PhantomData };
        };
        let mut words = vec![0; hi - lo + 1];
        for i in ids {
            let (w, bit) = split(i.index());
            words[w - lo] |= bit;
        }
        WindowMask { first: lo, words, _id: PhantomData }
    }

    /// The words of `m` under the window, paired with the window's (`m`'s missing words empty).
    #[inline]
    fn under<'a>(&'a self, m: &'a [u64]) -> impl Iterator<Item = (u64, u64)> + 'a {
        self.words.iter().enumerate().map(move |(k, &w)| (m.get(self.first + k).copied().unwrap_or(0), w))
    }

    /// `|m ∩ self|` (`cpumask_weight` of the `cpumask_and`).
    #[inline]
    pub fn count_in(&self, m: &IdMask<I>) -> usize {
        self.under(&m.words).map(|(a, w)| (a & w).count_ones() as usize).sum()
    }

    /// `m \= self` (`cpumask_andnot(m, m, self)`).
    #[inline]
    pub fn remove_from(&self, m: &mut IdMask<I>) {
        let end = m.words.len().min(self.first + self.words.len());
        for (k, word) in m.words.iter_mut().enumerate().take(end).skip(self.first) {
            *word &= !self.words[k - self.first];
        }
    }

    /// `m \= self ∩ with` (`cpumask_and(&tmp, with, self)` then `cpumask_andnot(m, m, &tmp)`),
    /// reading only the window's words.
    #[inline]
    pub fn remove_common_from(&self, m: &mut IdMask<I>, with: &IdMask<I>) {
        let end = m.words.len().min(self.first + self.words.len());
        for k in self.first..end {
            m.words[k] &= !(self.words[k - self.first] & with.words.get(k).copied().unwrap_or(0));
        }
    }

    /// `m ∩= self` (`cpumask_and(m, m, self)`): every word of `m` outside the window is cleared.
    #[inline]
    pub fn keep_in(&self, m: &mut IdMask<I>) {
        for (k, word) in m.words.iter_mut().enumerate() {
            *word &= k.checked_sub(self.first).and_then(|j| self.words.get(j)).copied().unwrap_or(0);
        }
    }

    /// The same ids as a full mask.
    pub fn to_mask(&self) -> IdMask<I> {
        let mut words = vec![0; self.first + self.words.len()];
        words[self.first..].copy_from_slice(&self.words);
        IdMask { words, _id: PhantomData }
    }
}

/// The set bits of a word, lowest first.
struct Bits(u64);

impl Iterator for Bits {
    type Item = usize;
    #[inline]
    fn next(&mut self) -> Option<usize> {
        if self.0 == 0 {
            return None;
        }
        let b = self.0.trailing_zeros() as usize;
        self.0 &= self.0 - 1;
        Some(b)
    }
}

impl CpuMask {
    /// The cpulist form, `"0-3,8"` (empty: `""`).
    pub fn to_cpulist(&self) -> String {
        let ps: Vec<u32> = self.iter().map(|p| p.0).collect();
        let mut parts = Vec::new();
        let mut i = 0;
        while i < ps.len() {
            let mut j = i;
            while j + 1 < ps.len() && ps[j + 1] == ps[j] + 1 {
                j += 1;
            }
            parts.push(if i == j { ps[i].to_string() } else { format!("{}-{}", ps[i], ps[j]) });
            i = j + 1;
        }
        parts.join(",")
    }
}

impl std::fmt::Debug for CpuMask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CpuMask({:?})", self.to_cpulist())
    }
}

impl std::fmt::Debug for VcpuMask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "VcpuMask({:?})", self.iter().map(|v| v.0).collect::<Vec<_>>())
    }
}

impl std::fmt::Debug for IndexMask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "IndexMask({:?})", self.iter().collect::<Vec<_>>())
    }
}

/// Parse a cpulist (`"0-3,8,10-11"`, or `"all"`) over a host of `npcpus` pCPUs. The error says
/// what was wrong and what is expected, for the loader to prefix with file and key.
pub fn parse_cpulist(text: &str, npcpus: usize) -> Result<CpuMask, String> {
    const EXPECTED: &str = "expected a cpulist such as \"0-3,8\" (pCPU numbers and inclusive ranges)";
    let t = text.trim();
    if t == "all" {
        return Ok(CpuMask::full(npcpus));
    }
    if t.is_empty() {
        return Err(format!("empty cpulist; {EXPECTED}"));
    }
    let number = |s: &str| -> Result<usize, String> {
        let s = s.trim();
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!("{s:?} in {text:?} is not a pCPU number; {EXPECTED}"));
        }
        let p: usize = s.parse().map_err(|_| format!("{s:?} in {text:?} is too large"))?;
        if p >= npcpus {
            return Err(format!("pCPU {p} in {text:?} is out of range: the host has pCPUs 0-{}", npcpus.saturating_sub(1)));
        }
        Ok(p)
    };
    let mut mask = CpuMask::empty();
    for part in t.split(',') {
        if let Some(rest) = part.trim().strip_prefix('-') {
            // "-1": a range with no start, or a negative number; neither is a pCPU.
            return Err(format!(
                "{:?} in {text:?} is not a pCPU number (pCPUs count from 0, and a range needs both ends, \"0-{rest}\"); {EXPECTED}",
                part.trim()
            ));
        }
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (number(a)?, number(b)?);
                if a > b {
                    return Err(format!("range \"{}\" in {text:?} runs backwards; write it low-high", part.trim()));
                }
                for p in a..=b {
                    mask.insert(PcpuId(p as u32));
                }
            }
            None => mask.insert(PcpuId(number(part)? as u32)),
        }
    }
    Ok(mask)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A window mask is the set it was made of, and each operation with a host mask gives what
    /// the same operation with the full mask gives, wherever the window sits (within the first
    /// word, across words, at the far end) and whatever the host mask's length.
    /// `nth` is `iter().nth`, for every k up to past the end, on masks of one to several words.
    #[test]
    fn nth_is_the_kth_member() {
        use rand::Rng;
        let mut rng = crate::engine::rng::stream(11, "nth");
        for n in [1usize, 63, 64, 65, 200, 1_000] {
            for density in [0.02, 0.5, 1.0] {
                let mut m = CpuMask::with_len(n);
                (0..n).filter(|_| rng.random_bool(density)).for_each(|i| m.insert(PcpuId(i as u32)));
                for k in 0..=m.count() + 1 {
                    assert_eq!(m.nth(k), m.iter().nth(k), "n {n}, density {density}, k {k}");
                }
            }
        }
    }

    #[test]
    fn first_common_from_is_the_cyclic_search_of_the_intersection() {
        use rand::Rng;
        let mut rng = crate::engine::rng::stream(11, "first common");
        for case in 0..3_000 {
            let n = rng.random_range(1..260usize);
            let density = rng.random_range(0.0..1.0);
            let mut random = |len: usize| {
                let mut m = CpuMask::with_len(len);
                (0..len).filter(|_| rng.random_bool(density)).for_each(|i| m.insert(PcpuId(i as u32)));
                m
            };
            let a = random(n);
            // Masks of the same length, one shorter (its missing words are empty), none.
            let others: Vec<CpuMask> = (0..case % 3).map(|k| random(if k == 1 { n / 2 } else { n })).collect();
            let refs: Vec<&CpuMask> = others.iter().collect();
            let from = rng.random_range(0..n + 70);
            let member = |i: usize| a.contains(PcpuId(i as u32)) && others.iter().all(|m| m.contains(PcpuId(i as u32)));
            let start = if from >= a.words.len() * 64 { 0 } else { from };
            let want = (start..n).chain(0..start.min(n)).find(|&i| member(i)).map(|i| PcpuId(i as u32));
            assert_eq!(a.first_common_from(&refs, from), want, "case {case}: n {n}, from {from}");
        }
        assert_eq!(CpuMask::empty().first_common_from(&[], 3), None);
    }

    #[test]
    fn window_masks_act_as_the_full_masks_they_stand_for() {
        use rand::Rng;
        let mut rng = crate::engine::rng::stream(7, "window masks");
        for case in 0..2_000 {
            let n = rng.random_range(1..300usize);
            let lo = rng.random_range(0..n);
            let hi = rng.random_range(lo..n.min(lo + 140));
            let ids: Vec<PcpuId> = (lo..=hi).filter(|_| rng.random_bool(0.5)).map(|i| PcpuId(i as u32)).collect();
            let window = WindowMask::of(ids.iter().copied());
            let full = CpuMask::from_pcpus(ids.iter().copied());
            assert_eq!(window.to_mask(), full, "case {case}");
            // A host mask of n ids, or one cut short (as `and` leaves them).
            let len = if case % 5 == 0 { rng.random_range(0..=n) } else { n };
            let mut host = CpuMask::with_len(len);
            (0..len).filter(|_| rng.random_bool(0.6)).for_each(|i| host.insert(PcpuId(i as u32)));
            assert_eq!(window.count_in(&host), host.count_and(&full), "case {case}");
            let (mut a, mut b) = (host.clone(), host.clone());
            window.remove_from(&mut a);
            b.remove_all(&full);
            assert_eq!(a, b, "case {case}: remove_from");
            let (mut a, mut b) = (host.clone(), host.clone());
            window.keep_in(&mut a);
            b.and_with(&full);
            assert_eq!(a, b, "case {case}: keep_in");
            // remove_common_from(m, with): m \= self ∩ with, `with` possibly of another length.
            let wlen = if case % 3 == 0 { rng.random_range(0..=n) } else { n };
            let mut with = CpuMask::with_len(wlen);
            (0..wlen).filter(|_| rng.random_bool(0.5)).for_each(|i| with.insert(PcpuId(i as u32)));
            let (mut a, mut b) = (host.clone(), host.clone());
            window.remove_common_from(&mut a, &with);
            b.remove_all(&full.and(&with));
            assert_eq!(a, b, "case {case}: remove_common_from");
        }
        // Its words are the span of the group, not of the host.
        let far = WindowMask::of([PcpuId(65_534), PcpuId(65_535)]);
        assert_eq!((far.first, far.words.len()), (1_023, 1));
        assert_eq!(WindowMask::<PcpuId>::of([]).to_mask(), CpuMask::empty());
    }

    #[test]
    fn cpulists_parse_like_xl() {
        let m = parse_cpulist("0-3,8,10-11", 12).unwrap();
        assert_eq!(m.iter().map(|p| p.0).collect::<Vec<_>>(), vec![0, 1, 2, 3, 8, 10, 11]);
        assert_eq!(m.to_cpulist(), "0-3,8,10-11");
        assert_eq!(m.count(), 7);
        assert_eq!(parse_cpulist("all", 4).unwrap(), CpuMask::full(4));
        assert_eq!(parse_cpulist(" 5 ", 8).unwrap().to_cpulist(), "5");
        let big = parse_cpulist("63-65", 100).unwrap();
        assert_eq!(big.iter().map(|p| p.0).collect::<Vec<_>>(), vec![63, 64, 65]);
    }

    #[test]
    fn malformed_cpulists_say_what_is_wrong() {
        assert!(parse_cpulist("3-1", 8).unwrap_err().contains("runs backwards"));
        assert!(parse_cpulist("a", 8).unwrap_err().contains("\"a\" in \"a\" is not a pCPU number"));
        assert!(parse_cpulist("8", 8).unwrap_err().contains("pCPU 8 in \"8\" is out of range: the host has pCPUs 0-7"));
        assert!(parse_cpulist("", 8).unwrap_err().contains("empty cpulist"));
        // A negative number names itself, not the empty start of a range.
        assert!(parse_cpulist("-1", 8).unwrap_err().starts_with("\"-1\" in \"-1\" is not a pCPU number (pCPUs count from 0"));
        assert!(parse_cpulist("0,-3", 8).unwrap_err().starts_with("\"-3\" in \"0,-3\" is not a pCPU number"));
        assert!(parse_cpulist("1,,2", 8).is_err());
        assert!(parse_cpulist("-1", 8).is_err());
    }

    #[test]
    fn set_operations() {
        let a = parse_cpulist("0-3", 8).unwrap();
        let b = parse_cpulist("2-5", 8).unwrap();
        assert_eq!(a.and(&b).to_cpulist(), "2-3");
        assert!(a.intersects(&b));
        assert!(!a.intersects(&parse_cpulist("4-7", 8).unwrap()));
        assert!(parse_cpulist("1-2", 8).unwrap().is_subset(&a));
        assert!(!b.is_subset(&a));
        // narrows: soft ∩ (a ∩ b) non-empty and smaller than a ∩ b.
        let all = CpuMask::full(8);
        assert!(parse_cpulist("2", 8).unwrap().narrows(&a, &all));
        assert!(!parse_cpulist("0-3", 8).unwrap().narrows(&a, &all), "equal is not narrower");
        assert!(!parse_cpulist("5", 8).unwrap().narrows(&a, &all), "disjoint is empty");
        assert!(parse_cpulist("2,5", 8).unwrap().narrows(&a, &b), "2 of 2-3");
        let mut c = a.clone();
        c.remove(PcpuId(0));
        assert_eq!(c.first(), Some(PcpuId(1)));
        assert!(CpuMask::empty().is_empty() && CpuMask::empty().is_subset(&a));
        // Equality is of sets, whatever the storage left behind.
        let mut d = parse_cpulist("1,70", 100).unwrap();
        d.remove(PcpuId(70));
        assert_eq!(d, parse_cpulist("1", 100).unwrap());
        assert_ne!(d, parse_cpulist("2", 100).unwrap());
    }

    /// The word-wise operations agree with the plain definitions on random sets of sizes
    /// around word boundaries (`cpumask_cycle`'s wrap included).
    #[test]
    fn word_operations_match_their_definitions() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for n in [1usize, 2, 63, 64, 65, 127, 128, 130, 300] {
            for _ in 0..50 {
                let density = rnd() % 4;
                let draw = |r: u64| r % 4 < density;
                let a: Vec<bool> = (0..n).map(|_| draw(rnd())).collect();
                let b: Vec<bool> = (0..n).map(|_| draw(rnd())).collect();
                let ma = CpuMask::from_fn(n, |p| a[p.idx()]);
                let mb = VcpuMask::from_fn(n, |v| b[v.idx()]);
                let mb_p = CpuMask::from_fn(n, |p| b[p.idx()]);
                let members = |m: &CpuMask| m.iter().map(|p| p.idx()).collect::<Vec<_>>();
                let want = |f: &dyn Fn(usize) -> bool| (0..n).filter(|&i| f(i)).collect::<Vec<_>>();
                assert_eq!(members(&ma), want(&|i| a[i]));
                assert_eq!(mb.iter().map(|v| v.idx()).collect::<Vec<_>>(), want(&|i| b[i]));
                // A vCPU mask reads and writes by the vCPU's own index.
                assert!((0..n).all(|i| mb.contains(VcpuId(i as u32)) == b[i]));
                let mut mv = VcpuMask::empty();
                (0..n).filter(|&i| b[i]).for_each(|i| mv.insert(VcpuId(i as u32)));
                assert_eq!(mv, mb);
                assert_eq!(ma.count(), a.iter().filter(|&&x| x).count());
                assert_eq!(ma.count_and(&mb_p), want(&|i| a[i] && b[i]).len());
                assert_eq!(ma.iter_and(&mb_p).map(|p| p.idx()).collect::<Vec<_>>(), want(&|i| a[i] && b[i]));
                let mut and = ma.clone();
                and.and_with(&mb_p);
                assert_eq!(members(&and), want(&|i| a[i] && b[i]));
                assert_eq!(and, ma.and(&mb_p));
                // The predicates, against their definitions, on masks of equal and of unequal
                // storage (`short` holds only the members of b below n / 2).
                let c: Vec<bool> = (0..n).map(|_| draw(rnd())).collect();
                let mc = CpuMask::from_fn(n, |p| c[p.idx()]);
                let short = CpuMask::from_pcpus((0..n / 2).filter(|&i| b[i]).map(|i| PcpuId(i as u32)));
                let in_b = |i: usize| b[i];
                let in_short = |i: usize| i < n / 2 && b[i];
                let others: [(&CpuMask, &dyn Fn(usize) -> bool); 2] = [(&mb_p, &in_b), (&short, &in_short)];
                for (other, has) in others {
                    assert_eq!(ma.intersects(other), (0..n).any(|i| a[i] && has(i)));
                    assert_eq!(other.intersects(&ma), (0..n).any(|i| a[i] && has(i)));
                    assert_eq!(ma.is_subset(other), (0..n).all(|i| !a[i] || has(i)));
                    assert_eq!(other.is_subset(&ma), (0..n).all(|i| !has(i) || a[i]));
                    assert_eq!(ma.meets_both(other, &mc), (0..n).any(|i| a[i] && has(i) && c[i]));
                    // narrows: a ∩ (other ∩ c) is neither empty nor all of other ∩ c.
                    let within = (0..n).filter(|&i| has(i) && c[i]).count();
                    let inner = (0..n).filter(|&i| has(i) && c[i] && a[i]).count();
                    assert_eq!(ma.narrows(other, &mc), inner > 0 && inner < within, "narrows over {n}");
                }
                assert_eq!(ma.first().map(|p| p.idx()), a.iter().position(|&x| x));
                let mut andnot = ma.clone();
                andnot.remove_all(&mb_p);
                assert_eq!(members(&andnot), want(&|i| a[i] && !b[i]));
                // cpumask_or, onto a mask of equal storage and onto an empty one (which grows).
                for (mut or, has) in
                    [(ma.clone(), &|i: usize| a[i] || b[i]), (CpuMask::empty(), &|i: usize| b[i])] as [(CpuMask, &dyn Fn(usize) -> bool); 2]
                {
                    or.or_with(&mb_p);
                    assert_eq!(members(&or), want(has));
                }
                for k in 0..n {
                    // cpumask_cycle: the first after k, wrapping, k itself last.
                    let naive = (1..=n).map(|d| (k + d) % n).find(|&i| a[i]);
                    assert_eq!(ma.cycle(k).map(|p| p.idx()), naive, "cycle({k}) over {n}");
                    assert_eq!(ma.next_from(k).map(|p| p.idx()), (k..n).find(|&i| a[i]));
                }
                let mut m = CpuMask::with_len(n);
                for (i, &x) in a.iter().enumerate() {
                    m.set(PcpuId(i as u32), x);
                }
                assert_eq!(m, ma);
                // put: the same within the storage; an id beyond it is left out.
                let mut q = IndexMask::with_len(n);
                for (i, &x) in a.iter().enumerate() {
                    q.put(i, !x);
                    q.put(i, x);
                }
                q.put(n + 64, true);
                assert_eq!(q.iter().collect::<Vec<_>>(), want(&|i| a[i]));
                m.clear();
                assert!(m.is_empty());
            }
            assert_eq!(CpuMask::full(n).count(), n);
            assert_eq!(CpuMask::full(n).iter().last(), Some(PcpuId(n as u32 - 1)));
        }
        assert_eq!(CpuMask::empty().cycle(3), None);
        assert_eq!(CpuMask::from_pcpus([PcpuId(3)]).cycle(3), Some(PcpuId(3)), "the only member cycles to itself");
    }
}
