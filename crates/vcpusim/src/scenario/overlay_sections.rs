//! `[host] overlay` and `[host.irs]`: the preemption overlays of issue 14 (hypervisor/overlay.rs).
//! Keys are declared once here for the loader and the catalog.

use super::section::Section;
use super::sections::SectionKey;
use crate::error::SimError;
use crate::hypervisor::overlay::{IrsConfig, OverlayConfig, IRS_NOTIFY_DELAY};
use crate::params::{ParamSpec, ParamValue};
use crate::time::SEC;

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

/// `[host] overlay` (a name, or absent) with `[host.irs]`. `policy_defers` says whether the
/// default pool's policy can hold a preemption back (`PolicyKind::defers_preemption`).
pub fn host_overlay(host: &Section, policy: &str, policy_defers: bool) -> Result<Option<OverlayConfig>, SimError> {
    let irs_section = host.table("irs")?;
    let Some(name) = host.string("overlay")? else {
        if irs_section.is_some() {
            return Err(host.error_at("irs", "[host.irs] configures the IRS overlay; add overlay = \"irs\" to [host] or leave out [host.irs]"));
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
        "relaxed-co" | "delay-preempt" => {
            return Err(host.error_at(
                "overlay",
                format!("{name:?} is not implemented yet (issue 14 part 3); expected \"irs\" or no overlay"),
            ))
        }
        other => {
            return Err(host.error_at(
                "overlay",
                format!("unknown overlay {other:?}; expected one of {}", OverlayConfig::NAMES.join(", ")),
            ))
        }
    };
    if irs_section.is_some() && !matches!(cfg, OverlayConfig::Irs(_)) {
        return Err(host.error_at("irs", format!("[host.irs] configures the IRS overlay, but overlay = {:?}", cfg.name())));
    }
    if !policy_defers {
        return Err(host.error_at(
            "overlay",
            format!("the {:?} overlay holds back the policy's preemptions, which policy = {policy:?} cannot; use policy = \"credit\"", cfg.name()),
        ));
    }
    Ok(Some(cfg))
}
