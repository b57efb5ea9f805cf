//! The arithmetic of seed 001's contention model: how much slower a core runs when the cores it
//! shares hardware with are busy, and when its memory is on another NUMA node.
//!
//! A running vCPU's speed is the product of one *factor* per contention [`Source`], each in
//! (0, 1] and each computed from the vCPU's *sensitivity* to that source (its workload's
//! slowdown when the source is fully contended, in [0, 1); `workload/sensitivity.rs`) and the
//! pCPU's neighbourhood (`Neighbourhood`: which sibling cores and cache peers are busy, how much
//! of the VM's memory is remote):
//!
//! ```text
//!   module_frontend = 1 - s_fe  × busy module siblings / other cores of the module
//!   module_fpu      = 1 - s_fpu × busy module siblings / other cores of the module
//!   llc             = 1 - s_llc × busy LLC peers / other cores sharing the LLC
//!   numa_remote     = 1 - s_mem × share of the VM's memory off the pCPU's node
//!   speed           = module_frontend × module_fpu × llc × numa_remote
//! ```
//!
//! Why these sources (seed 001, Kourai and Nakata, section III-F and Figure 16): an Opteron 6376
//! module's two cores share the instruction fetch and decode front end, the FPU and the L2
//! cache (AMD Family 15h Software Optimization Guide, pub. 47414, section 2); the LLC is shared
//! per node ("LLC is shared in each node, not in each module", section V-B); and memory on
//! another node is slower to reach (section II, "Therefore, the vCPU scheduler attempts to
//! assign one or small number of nodes"). The factors are independent and multiply, so one
//! more source (a virtualization overhead, say) is one more [`Source`] and one more line in
//! [`factors`]. docs/model.md "Contention" gives each formula's source and its shortcuts.
//!
//! Everything is integer parts per million (`hardware/speed.rs`), so runs are bit-reproducible.

use crate::hardware::speed::{Speed, SPEED_ONE};

/// A contention source: one factor of a vCPU's speed, one `[host.contention]` switch, one
/// sensitivity per workload and one `slowdown_<name>` column of vms.csv.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Source {
    /// The CMT module's shared instruction fetch and decode (seed 001 Figure 16: "instruction
    /// fetch stalls").
    ModuleFrontend,
    /// The module's shared floating-point unit (Figure 16: "FPU dispatch stalls").
    ModuleFpu,
    /// The last-level cache shared by the cores of `[host] llc` (Figure 16: "LLC misses").
    Llc,
    /// Memory on other NUMA nodes than the pCPU's.
    NumaRemote,
}

/// How many sources there are: the length of every per-source array.
pub const SOURCES: usize = 4;

impl Source {
    /// Every source, in the order of the per-source arrays and of the output columns.
    pub const ALL: [Source; SOURCES] = [Source::ModuleFrontend, Source::ModuleFpu, Source::Llc, Source::NumaRemote];

    /// The key of `[host.contention]` and `[vm.contention]`, and the suffix of vms.csv's
    /// `slowdown_<name>` column.
    pub const fn name(self) -> &'static str {
        match self {
            Source::ModuleFrontend => "module_frontend",
            Source::ModuleFpu => "module_fpu",
            Source::Llc => "llc",
            Source::NumaRemote => "numa_remote",
        }
    }

    pub const fn index(self) -> usize {
        self as usize
    }
}

/// Which sources `[host.contention]` turns on (all off by default).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Switches(pub [bool; SOURCES]);

impl Switches {
    pub fn on(&self, s: Source) -> bool {
        self.0[s.index()]
    }

    pub fn any(&self) -> bool {
        self.0.iter().any(|&b| b)
    }
}

/// A workload's slowdown from each source when that source is fully contended, in parts per
/// million, each in [0, 1 000 000): 0.2 = the workload runs at 0.8 of its speed with the
/// module sibling busy (front end), with every other core of its LLC busy (LLC), or with all
/// its memory remote (NUMA).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sensitivity(pub [u32; SOURCES]);

impl Sensitivity {
    /// From slowdowns as fractions, in `Source::ALL` order; each must be in [0, 1).
    pub fn from_fractions(slowdowns: [f64; SOURCES]) -> Result<Sensitivity, String> {
        let mut ppm = [0; SOURCES];
        for (i, &x) in slowdowns.iter().enumerate() {
            ppm[i] = fraction_to_ppm(x).map_err(|m| format!("{}: {m}", Source::ALL[i].name()))?;
        }
        Ok(Sensitivity(ppm))
    }

    pub fn get(&self, s: Source) -> u32 {
        self.0[s.index()]
    }

    /// As fractions, for reports.
    pub fn fraction(&self, s: Source) -> f64 {
        self.get(s) as f64 / SPEED_ONE as f64
    }
}

/// What a sensitivity value must be, for messages.
pub const SENSITIVITY_EXPECTED: &str =
    "a slowdown in [0, 1) (0 = insensitive; 0.2 = runs at 0.8 of its speed when the source is fully contended)";

/// A slowdown fraction in [0, 1) as parts per million, rounded down (so 0.9999999 stays below
/// 1 000 000 and a factor never reaches 0).
pub fn fraction_to_ppm(x: f64) -> Result<u32, String> {
    if !(x.is_finite() && (0.0..1.0).contains(&x)) {
        return Err(format!("expected {SENSITIVITY_EXPECTED}, got {x}"));
    }
    Ok(((x * SPEED_ONE as f64).floor() as u32).min(SPEED_ONE - 1))
}

/// What the model needs to know about where a vCPU runs and what runs beside it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Neighbourhood {
    /// Busy (running a vCPU) other cores of the pCPU's module (its sibling group).
    pub module_busy: u32,
    /// Other cores of the module.
    pub module_others: u32,
    /// Busy other pCPUs sharing the pCPU's last-level cache.
    pub llc_busy: u32,
    /// Other pCPUs sharing the last-level cache.
    pub llc_others: u32,
    /// The VM's memory nodes that are not the pCPU's node ...
    pub remote_nodes: u32,
    /// ... out of this many memory nodes (pages spread evenly over them).
    pub memory_nodes: u32,
}

/// The factor of each source, in parts per million of nominal (each in (0, 1 000 000]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Factors(pub [u32; SOURCES]);

impl Factors {
    /// No contention: every factor 1.0.
    pub const NOMINAL: Factors = Factors([SPEED_ONE; SOURCES]);

    pub fn get(&self, s: Source) -> u32 {
        self.0[s.index()]
    }

    /// The speed: the product of the factors, each step rounded down, at least 1 ppm.
    pub fn speed(&self) -> Speed {
        let ppm = self.0.iter().fold(SPEED_ONE as u64, |acc, &f| acc * f as u64 / SPEED_ONE as u64);
        Speed::from_ppm(ppm.max(1) as u32)
    }

    /// Work lost to each source while `work` work-ns were done at these factors: the work the
    /// vCPU would have done in the same time with that one factor at 1.0, minus `work`
    /// (`work × (1 - f) / f`, rounded down).
    pub fn lost(&self, work: u64) -> [u64; SOURCES] {
        let mut lost = [0; SOURCES];
        for (l, &f) in lost.iter_mut().zip(&self.0) {
            *l = (work as u128 * (SPEED_ONE - f) as u128 / f as u128).min(u64::MAX as u128) as u64;
        }
        lost
    }
}

/// `1 - s × num / den` in ppm (1.0 when `den` is 0: nothing to share with).
fn one_minus(s: u32, num: u32, den: u32) -> u32 {
    if den == 0 || num == 0 {
        return SPEED_ONE;
    }
    let cut = s as u64 * num.min(den) as u64 / den as u64;
    SPEED_ONE - cut as u32
}

/// Each source's factor for a vCPU of sensitivity `sens` in neighbourhood `n`; sources that
/// `on` leaves off are 1.0.
pub fn factors(on: &Switches, sens: &Sensitivity, n: &Neighbourhood) -> Factors {
    let mut f = Factors::NOMINAL;
    let mut set = |s: Source, value: u32| {
        if on.on(s) {
            f.0[s.index()] = value;
        }
    };
    set(Source::ModuleFrontend, one_minus(sens.get(Source::ModuleFrontend), n.module_busy, n.module_others));
    set(Source::ModuleFpu, one_minus(sens.get(Source::ModuleFpu), n.module_busy, n.module_others));
    set(Source::Llc, one_minus(sens.get(Source::Llc), n.llc_busy, n.llc_others));
    set(Source::NumaRemote, one_minus(sens.get(Source::NumaRemote), n.remote_nodes, n.memory_nodes));
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL_ON: Switches = Switches([true; SOURCES]);

    fn sens(fe: f64, fpu: f64, llc: f64, mem: f64) -> Sensitivity {
        Sensitivity::from_fractions([fe, fpu, llc, mem]).unwrap()
    }

    #[test]
    fn a_busy_module_sibling_costs_both_module_factors() {
        let s = sens(0.2, 0.1, 0.0, 0.0);
        let alone = Neighbourhood { module_others: 1, ..Default::default() };
        assert_eq!(factors(&ALL_ON, &s, &alone), Factors::NOMINAL);
        assert_eq!(factors(&ALL_ON, &s, &alone).speed(), Speed::ONE);
        let shared = Neighbourhood { module_busy: 1, module_others: 1, ..Default::default() };
        let f = factors(&ALL_ON, &s, &shared);
        assert_eq!((f.get(Source::ModuleFrontend), f.get(Source::ModuleFpu)), (800_000, 900_000));
        assert_eq!(f.speed(), Speed::from_ppm(720_000));
        // Switched off, a source is 1.0 whatever the sensitivity.
        let fe_only = Switches([true, false, false, false]);
        assert_eq!(factors(&fe_only, &s, &shared).speed(), Speed::from_ppm(800_000));
    }

    #[test]
    fn the_llc_factor_grows_with_busy_peers() {
        let s = sens(0.0, 0.0, 0.14, 0.0);
        let at = |busy| factors(&ALL_ON, &s, &Neighbourhood { llc_busy: busy, llc_others: 7, ..Default::default() }).get(Source::Llc);
        let seen: Vec<u32> = (0..=7).map(at).collect();
        assert_eq!(seen, [1_000_000, 980_000, 960_000, 940_000, 920_000, 900_000, 880_000, 860_000]);
    }

    #[test]
    fn remote_memory_share_scales_the_numa_factor() {
        let s = sens(0.0, 0.0, 0.0, 0.3);
        let at = |remote, nodes| {
            factors(&ALL_ON, &s, &Neighbourhood { remote_nodes: remote, memory_nodes: nodes, ..Default::default() }).get(Source::NumaRemote)
        };
        assert_eq!(at(0, 1), 1_000_000); // all local
        assert_eq!(at(1, 1), 700_000); // all remote
        assert_eq!(at(1, 2), 850_000); // half remote
        assert_eq!(at(3, 4), 775_000);
    }

    #[test]
    fn lost_work_is_what_the_factor_took() {
        let f = Factors([800_000, SPEED_ONE, 500_000, SPEED_ONE]);
        // 800 work-ns done at 0.8 front end: 1000 would have been done without it.
        assert_eq!(f.lost(800), [200, 0, 800, 0]);
        assert_eq!(Factors::NOMINAL.lost(12345), [0; SOURCES]);
    }

    #[test]
    fn sensitivities_outside_zero_one_are_refused() {
        for bad in [-0.1, 1.0, 1.5, f64::NAN, f64::INFINITY] {
            let e = Sensitivity::from_fractions([0.0, 0.0, bad, 0.0]).unwrap_err();
            assert!(e.starts_with("llc: expected a slowdown in [0, 1)"), "{e}");
        }
        // Just below 1 stays a positive factor.
        let s = Sensitivity::from_fractions([0.9999999999, 0.0, 0.0, 0.0]).unwrap();
        assert_eq!(s.get(Source::ModuleFrontend), 999_999);
        let n = Neighbourhood { module_busy: 1, module_others: 1, ..Default::default() };
        assert_eq!(factors(&ALL_ON, &s, &n).speed(), Speed::from_ppm(1));
    }
}
