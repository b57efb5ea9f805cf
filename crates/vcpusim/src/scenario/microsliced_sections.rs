//! `[host.microsliced]`: seed 002's micro-sliced cores (sim/mechanisms/microsliced/). Present turns
//! them on: a child pool of the default pool, static (`cores` pCPUs from the start) or dynamic
//! (Algorithm 1, at most `cores`). Keys are declared once here for the loader and the catalog.

use super::section::Section;
use super::sections::SectionKey;
use crate::error::SimError;
use crate::hypervisor::critical_detect::Detect;
use crate::params::{show_toml, ParamSpec, ParamValue};
use crate::time::{Nanos, MS, SEC, US};
use toml::Value;

// The micro pool's configuration; the engine side that acts on it is sim/mechanisms/microsliced/.

/// `HCPU_TSLICE_US` (released sched_credit.c) and the seed's 0.1 ms micro slice (section 4).
pub const DEFAULT_SLICE: Nanos = 100 * US;
/// Algorithm 1's `ProfileInterval` (10 ms; `HCPU_MANAGER_PROFILE_TICK_MS`).
pub const DEFAULT_PROFILE_INTERVAL: Nanos = 10 * MS;
/// Algorithm 1's `EpochInterval` (1000 ms; `HCPU_MANAGER_TICK_MS`).
pub const DEFAULT_EPOCH: Nanos = 1000 * MS;
/// `NUM_LIMIT_HIDDEN_CPUS` of the released code (dynamic mode's default limit).
pub const DEFAULT_LIMIT: u32 = 3;

/// Static: a fixed pool; dynamic: Algorithm 1 sizes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Static,
    Dynamic,
}

impl Mode {
    pub const NAMES: &'static [&'static str] = &["static", "dynamic"];
    pub fn name(self) -> &'static str {
        match self {
            Mode::Static => "static",
            Mode::Dynamic => "dynamic",
        }
    }
}

/// `[host.microsliced]`.
#[derive(Clone, Debug, PartialEq)]
pub struct MicroConfig {
    pub mode: Mode,
    /// Static: the pool's size; dynamic: `NUM_LIMIT_uCORES`.
    pub cores: u32,
    /// The micro slice.
    pub slice: Nanos,
    pub profile_interval: Nanos,
    pub epoch: Nanos,
    pub detect: Detect,
    /// The guest's symbol table reaches the hypervisor: the parent pool's policy declares the
    /// `kernel_fn` channel (`symbols = false` turns the channel off: nothing is detected).
    pub symbols: bool,
}

impl MicroConfig {
    /// The micro pool is carved out of the default pool (`pool`, of `pcpus` pCPUs), which must
    /// keep at least one pCPU for normal scheduling. Checked by the loader (so `vcpusim
    /// validate` says it) and again where the pool is built, for a scenario made in Rust.
    pub fn check_cores(&self, pool: &str, pcpus: usize) -> Result<(), String> {
        if self.cores as usize >= pcpus {
            return Err(format!("cores = {} leaves pool {pool:?} ({pcpus} pCPUs) no pCPU for normal scheduling", self.cores));
        }
        Ok(())
    }
}

impl Default for MicroConfig {
    fn default() -> Self {
        MicroConfig {
            mode: Mode::Static,
            cores: 1,
            slice: DEFAULT_SLICE,
            profile_interval: DEFAULT_PROFILE_INTERVAL,
            epoch: DEFAULT_EPOCH,
            detect: Detect::ALL,
            symbols: true,
        }
    }
}

/// `[host.microsliced]` keys (`detect`, a list of names, is read apart: see [`host_microsliced`]).
pub fn host_microsliced_keys() -> Vec<SectionKey> {
    vec![
        SectionKey::defaulted(ParamSpec::choice(
            "mode",
            Mode::NAMES,
            "static",
            "static: `cores` pCPUs are micro-sliced from the start; dynamic: Algorithm 1 (seed 002 section 4.3) \
             sizes the pool between 0 and `cores` (profile intervals, then an epoch)",
        )),
        SectionKey::defaulted(
            ParamSpec::int(
                "cores",
                1,
                "static: the pool's size; dynamic: NUM_LIMIT_uCORES (3 in the authors' released code, \
                 NUM_LIMIT_HIDDEN_CPUS); must leave the default pool a pCPU",
            )
            .at_least(1.0),
        ),
        SectionKey::defaulted(
            ParamSpec::duration(
                "slice",
                DEFAULT_SLICE,
                "the micro slice: an accelerated vCPU runs at most this long on a micro pCPU, then returns \
                 (0.1 ms: seed 002 section 4, HCPU_TSLICE_US in the released sched_credit.c)",
            )
            .range(1.0, SEC as f64),
        ),
        SectionKey::defaulted(
            ParamSpec::duration("profile_interval", DEFAULT_PROFILE_INTERVAL, "Algorithm 1's ProfileInterval (10 ms in the seed)")
                .range(1.0, 3600.0 * SEC as f64),
        ),
        SectionKey::defaulted(
            ParamSpec::duration("epoch", DEFAULT_EPOCH, "Algorithm 1's EpochInterval, the run phase (1000 ms in the seed)")
                .range(1.0, 3600.0 * SEC as f64),
        ),
        SectionKey::defaulted(ParamSpec::boolean(
            "symbols",
            true,
            "the guest's kernel symbol table reaches the hypervisor: the default pool's policy declares the \
             kernel_fn channel (false: nothing is detected or accelerated)",
        )),
    ]
}

/// `[host.microsliced]`.
pub fn host_microsliced(section: &Section) -> Result<MicroConfig, SimError> {
    let keys = host_microsliced_keys();
    let mut valid: Vec<&str> = keys.iter().map(|k| k.spec.name).collect();
    valid.push("detect");
    section.allow_only(&valid)?;
    let mut cfg = MicroConfig::default();
    for k in &keys {
        match (k.spec.name, section.param(&k.spec)?) {
            ("mode", Some(ParamValue::Choice(c))) => cfg.mode = if c == "dynamic" { Mode::Dynamic } else { Mode::Static },
            ("cores", Some(ParamValue::Int(n))) => {
                cfg.cores = u32::try_from(n).map_err(|_| section.error_at("cores", format!("{n} is too many cores")))?
            }
            ("slice", Some(ParamValue::Duration(d))) => cfg.slice = d,
            ("profile_interval", Some(ParamValue::Duration(d))) => cfg.profile_interval = d,
            ("epoch", Some(ParamValue::Duration(d))) => cfg.epoch = d,
            ("symbols", Some(ParamValue::Bool(b))) => cfg.symbols = b,
            _ => {}
        }
    }
    if let Some(list) = section.array("detect")? {
        let mut detect = Detect { ple: false, ipi: false, irq: false };
        for item in list {
            match item {
                Value::String(s) if s == "ple" => detect.ple = true,
                Value::String(s) if s == "ipi" => detect.ipi = true,
                Value::String(s) if s == "irq" => detect.irq = true,
                other => {
                    return Err(section.error_at(
                        "detect",
                        format!("unknown urgent signal {}; expected a list of {}", show_toml(other), Detect::NAMES.join(", ")),
                    ))
                }
            }
        }
        cfg.detect = detect;
    }
    Ok(cfg)
}
