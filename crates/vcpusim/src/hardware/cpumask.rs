//! pCPU sets: affinity masks and cpupool membership, with `xl`'s cpulist syntax.
//!
//! A `CpuMask` is a bitset over the host's pCPUs (Xen `cpumask_t`, Linux `struct cpumask`).
//! Iteration is in increasing pCPU order, so every loop over a mask is deterministic.
//! `parse_cpulist` reads what `xl` accepts for `cpus=` and cpupool `cpus=`: comma-separated
//! pCPU numbers and inclusive ranges, `"0-3,8,10-11"` (xl's `parse_cpurange`; `all` too).

use crate::ids::PcpuId;

#[derive(Clone, Default)]
pub struct CpuMask {
    words: Vec<u64>,
}

/// Equal as sets: trailing zero words (left by `remove` or `and`) do not count.
impl PartialEq for CpuMask {
    fn eq(&self, other: &Self) -> bool {
        let n = self.words.len().max(other.words.len());
        (0..n).all(|i| self.words.get(i).copied().unwrap_or(0) == other.words.get(i).copied().unwrap_or(0))
    }
}

impl Eq for CpuMask {}

impl CpuMask {
    /// The empty set.
    pub fn empty() -> Self {
        CpuMask { words: Vec::new() }
    }

    /// pCPUs `0..n`.
    pub fn full(n: usize) -> Self {
        let mut m = CpuMask::empty();
        for p in 0..n {
            m.insert(PcpuId(p as u32));
        }
        m
    }

    pub fn from_pcpus(pcpus: impl IntoIterator<Item = PcpuId>) -> Self {
        let mut m = CpuMask::empty();
        for p in pcpus {
            m.insert(p);
        }
        m
    }

    pub fn insert(&mut self, p: PcpuId) {
        let (w, b) = (p.idx() / 64, p.idx() % 64);
        if self.words.len() <= w {
            self.words.resize(w + 1, 0);
        }
        self.words[w] |= 1 << b;
    }

    pub fn remove(&mut self, p: PcpuId) {
        let (w, b) = (p.idx() / 64, p.idx() % 64);
        if let Some(word) = self.words.get_mut(w) {
            *word &= !(1 << b);
        }
    }

    #[inline]
    pub fn contains(&self, p: PcpuId) -> bool {
        let (w, b) = (p.idx() / 64, p.idx() % 64);
        self.words.get(w).is_some_and(|word| word & (1 << b) != 0)
    }

    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }

    pub fn count(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    pub fn and(&self, other: &CpuMask) -> CpuMask {
        let n = self.words.len().min(other.words.len());
        CpuMask { words: (0..n).map(|i| self.words[i] & other.words[i]).collect() }
    }

    pub fn intersects(&self, other: &CpuMask) -> bool {
        self.words.iter().zip(&other.words).any(|(a, b)| a & b != 0)
    }

    /// Whether every pCPU of `self` is in `other`.
    pub fn is_subset(&self, other: &CpuMask) -> bool {
        self.words.iter().enumerate().all(|(i, &w)| w & !other.words.get(i).copied().unwrap_or(0) == 0)
    }

    /// The pCPUs in increasing order.
    pub fn iter(&self) -> impl Iterator<Item = PcpuId> + '_ {
        self.words.iter().enumerate().flat_map(|(i, &w)| {
            (0..64).filter(move |b| w & (1u64 << b) != 0).map(move |b| PcpuId((i * 64 + b) as u32))
        })
    }

    /// Whether `self ∩ within` is a non-empty proper subset of `within` (Xen's
    /// `has_soft_affinity`: `self` soft, `within` hard ∩ pool given as `a ∩ b`), without
    /// allocating: it is asked on every wake.
    pub fn narrows(&self, a: &CpuMask, b: &CpuMask) -> bool {
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
    pub fn meets_both(&self, a: &CpuMask, b: &CpuMask) -> bool {
        self.words.iter().zip(&a.words).zip(&b.words).any(|((x, y), z)| x & y & z != 0)
    }

    /// The lowest pCPU, if any.
    pub fn first(&self) -> Option<PcpuId> {
        self.iter().next()
    }

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
}
