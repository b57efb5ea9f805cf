//! `[host] overlay` and `[host.irs]`: the preemption overlays (sim/mechanisms/preemption_overlay/rule.rs).
//! Keys are declared once here for the loader and the catalog.

use super::section::Section;
use super::sections::SectionKey;
use crate::error::SimError;
use crate::params::{ParamSpec, ParamValue};
use crate::time::{Nanos, MS, SEC, US};

// The overlays' configuration: what the scenario says; the rules that act on it are the
// engine's (sim/mechanisms/preemption_overlay/, sim/mechanisms/relaxed_co/).

/// `[host] overlay`: which overlay wraps the policy's preemptions (none by default).
#[derive(Clone, Debug, PartialEq)]
pub enum OverlayConfig {
    /// Seed 003's IRS (`[host.irs]`).
    Irs(IrsConfig),
    /// VMware ESX 4.x relaxed co-scheduling (`[host.relaxed_co]`, sim/mechanisms/relaxed_co/).
    RelaxedCo(RelaxedCoConfig),
    /// Uhlig et al. VM'04 delayed preemption (`[host.delay_preempt]`, sim/mechanisms/preemption_overlay/delay_preempt.rs).
    DelayPreempt(DelayPreemptConfig),
}

impl OverlayConfig {
    /// The names `[host] overlay` accepts.
    pub const NAMES: &'static [&'static str] = &["irs", "relaxed-co", "delay-preempt"];

    pub fn name(&self) -> &'static str {
        match self {
            OverlayConfig::Irs(_) => "irs",
            OverlayConfig::RelaxedCo(_) => "relaxed-co",
            OverlayConfig::DelayPreempt(_) => "delay-preempt",
        }
    }
}

/// IRS's notify delay (the default of `[host.irs] notify_delay`): the slides'
/// "20-26 us delay (SA send + guest migration + completion)" (seed 003 slide 7); 23 us is the
/// middle. The hypervisor switches at the guest's ack or after this long, whichever comes first.
pub const IRS_NOTIFY_DELAY: Nanos = 23 * US;

/// `[host.irs]`: Interference-Resilient Scheduling's hypervisor side and its migrator switch.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IrsConfig {
    /// The longest the hypervisor delays an involuntary preemption after the notice.
    pub notify_delay: Nanos,
    /// The guest-side migrator (seed 003 slide 8): load from rt_avg including steal time, and
    /// wake-up preemption of an IRS-migrated task. Read by the guests of IRS VMs.
    pub migrator: bool,
}

impl Default for IrsConfig {
    fn default() -> Self {
        IrsConfig { notify_delay: IRS_NOTIFY_DELAY, migrator: true }
    }
}

/// The default skew threshold (assumed: "a few milliseconds", see the module doc).
pub const DEFAULT_SKEW_THRESHOLD: Nanos = 3 * MS;

/// `[host.relaxed_co]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RelaxedCoConfig {
    /// Skew beyond which a VM's leading vCPUs are co-stopped.
    pub skew_threshold: Nanos,
}

impl Default for RelaxedCoConfig {
    fn default() -> Self {
        RelaxedCoConfig { skew_threshold: DEFAULT_SKEW_THRESHOLD }
    }
}

/// The default bound of a deferral (assumed, see the module doc).
pub const DEFAULT_MAX_DELAY: Nanos = MS;

/// `[host.delay_preempt]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DelayPreemptConfig {
    /// The longest a preemption is deferred for a vCPU whose guest holds a spinlock.
    pub max_delay: Nanos,
}

impl Default for DelayPreemptConfig {
    fn default() -> Self {
        DelayPreemptConfig { max_delay: DEFAULT_MAX_DELAY }
    }
}

/// `[host.irs]` keys.
pub fn host_irs_keys() -> Vec<SectionKey> {
    vec![
        SectionKey::defaulted(
            ParamSpec::duration(
                "notify_delay",
                IRS_NOTIFY_DELAY,
                "the longest the hypervisor delays an involuntary preemption after the notice: it switches \
                 at the guest's ack or after this, whichever comes first (seed 003 slide 7: SA send + guest \
                 migration + completion take 20-26 us; 23 us is the middle)",
            )
            .range(1.0, SEC as f64),
        ),
        SectionKey::defaulted(ParamSpec::boolean(
            "migrator",
            true,
            "the guest-side migrator (seed 003 slide 8): vCPU load from rt_avg including steal time, and \
             the wake-up balancer may preempt a task IRS migrated so the preempted vCPU's thread comes back",
        )),
    ]
}

/// `[host.relaxed_co]` keys (sim/mechanisms/relaxed_co/rule.rs).
pub fn host_relaxed_co_keys() -> Vec<SectionKey> {
    vec![SectionKey::defaulted(
        ParamSpec::duration(
            "skew_threshold",
            DEFAULT_SKEW_THRESHOLD,
            "skew beyond which a VM's running vCPUs (the leaders) are co-stopped until the laggards catch up \
             (VMware ESX relaxed co-scheduling: 'a few milliseconds', configurable; 3 ms assumed)",
        )
        .range(1.0, SEC as f64),
    )]
}

/// `[host.delay_preempt]` keys (sim/mechanisms/preemption_overlay/delay_preempt.rs).
pub fn host_delay_preempt_keys() -> Vec<SectionKey> {
    vec![SectionKey::defaulted(
        ParamSpec::duration(
            "max_delay",
            DEFAULT_MAX_DELAY,
            "the longest the hypervisor defers the preemption of a vCPU whose guest marked a held spinlock \
             (Uhlig et al. VM'04 delayed preemption; L4's per-thread maximum delay, no value given: 1 ms assumed)",
        )
        .range(1.0, SEC as f64),
    )]
}

/// Read the one duration key of an overlay's section, if the section is there.
fn section_duration(section: Option<&Section>, keys: Vec<SectionKey>, default: crate::time::Nanos) -> Result<crate::time::Nanos, SimError> {
    let Some(section) = section else { return Ok(default) };
    let valid: Vec<&str> = keys.iter().map(|k| k.spec.name).collect();
    section.allow_only(&valid)?;
    match section.param(&keys[0].spec)? {
        Some(ParamValue::Duration(d)) => Ok(d),
        _ => Ok(default),
    }
}

/// `[host] overlay` (a name, or absent) with `[host.irs]`. `policy_defers` says whether the
/// default pool's policy can hold a preemption back (`PolicyKind::offers(Extension::HoldPreemption)`).
pub fn host_overlay(host: &Section, policy: &str, policy_defers: bool) -> Result<Option<OverlayConfig>, SimError> {
    let irs_section = host.table("irs")?;
    let relaxed_section = host.table("relaxed_co")?;
    let delay_section = host.table("delay_preempt")?;
    let Some(name) = host.string("overlay")? else {
        if irs_section.is_some() {
            return Err(
                host.error_at("irs", "[host.irs] configures the IRS overlay; add overlay = \"irs\" to [host] or leave out [host.irs]")
            );
        }
        if relaxed_section.is_some() {
            return Err(host.error_at(
                "relaxed_co",
                "[host.relaxed_co] configures relaxed co-scheduling; add overlay = \"relaxed-co\" to [host] or leave out [host.relaxed_co]",
            ));
        }
        if delay_section.is_some() {
            return Err(host.error_at(
                "delay_preempt",
                "[host.delay_preempt] configures delayed preemption; add overlay = \"delay-preempt\" to [host] or leave out [host.delay_preempt]",
            ));
        }
        return Ok(None);
    };
    let cfg = match name {
        "irs" => {
            let mut cfg = IrsConfig::default();
            if let Some(section) = irs_section.as_ref() {
                let keys = host_irs_keys();
                let valid: Vec<&str> = keys.iter().map(|k| k.spec.name).collect();
                section.allow_only(&valid)?;
                for k in &keys {
                    match (k.spec.name, section.param(&k.spec)?) {
                        ("notify_delay", Some(ParamValue::Duration(d))) => cfg.notify_delay = d,
                        ("migrator", Some(ParamValue::Bool(b))) => cfg.migrator = b,
                        _ => {}
                    }
                }
            }
            OverlayConfig::Irs(cfg)
        }
        "relaxed-co" => OverlayConfig::RelaxedCo(RelaxedCoConfig {
            skew_threshold: section_duration(relaxed_section.as_ref(), host_relaxed_co_keys(), DEFAULT_SKEW_THRESHOLD)?,
        }),
        "delay-preempt" => OverlayConfig::DelayPreempt(DelayPreemptConfig {
            max_delay: section_duration(delay_section.as_ref(), host_delay_preempt_keys(), DEFAULT_MAX_DELAY)?,
        }),
        other => {
            return Err(host.error_at("overlay", format!("unknown overlay {other:?}; expected one of {}", OverlayConfig::NAMES.join(", "))))
        }
    };
    if irs_section.is_some() && !matches!(cfg, OverlayConfig::Irs(_)) {
        return Err(host.error_at("irs", format!("[host.irs] configures the IRS overlay, but overlay = {:?}", cfg.name())));
    }
    if relaxed_section.is_some() && !matches!(cfg, OverlayConfig::RelaxedCo(_)) {
        return Err(
            host.error_at("relaxed_co", format!("[host.relaxed_co] configures relaxed co-scheduling, but overlay = {:?}", cfg.name()))
        );
    }
    if delay_section.is_some() && !matches!(cfg, OverlayConfig::DelayPreempt(_)) {
        return Err(
            host.error_at("delay_preempt", format!("[host.delay_preempt] configures delayed preemption, but overlay = {:?}", cfg.name()))
        );
    }
    if !policy_defers {
        return Err(host.error_at(
            "overlay",
            format!(
                "the {:?} overlay holds back the policy's preemptions, which policy = {policy:?} cannot; use policy = \"credit\"",
                cfg.name()
            ),
        ));
    }
    Ok(Some(cfg))
}
