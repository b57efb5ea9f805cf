//! `[host.uvf]` and `[vm.uvf]`: the urgent-vCPU-first overlay of seed 000 section 3.1.3
//! (hypervisor/uvf.rs). `[host.uvf]` present turns the overlay on with its two host-wide knobs;
//! `[vm.uvf]` turns on features per VM, as the seed exposes them (section 3.1.2). Keys are declared
//! once here for the loader and the catalog.

use super::section::Section;
use super::sections::{read, SectionKey};
use crate::error::SimError;
use crate::hypervisor::uvf::UvfHost;
use crate::hypervisor::uvf::UvfVm;
use crate::params::{ParamSpec, ParamValue};

/// `[host.uvf]` keys.
pub fn host_uvf_keys() -> Vec<SectionKey> {
    let d = UvfHost::default();
    vec![
        SectionKey::defaulted(
            ParamSpec::duration(
                "urgent_tslice",
                d.urgent_tslice,
                "Time slice of an urgent vCPU, protected from preemption; urgent vCPUs on one pCPU take turns \
                 (seed 000 section 3.1.3; 500 us chosen in section 4.1.1)",
            )
            .at_least(1.0),
        ),
        SectionKey::defaulted(ParamSpec::duration(
            "urgent_allowance",
            d.urgent_allowance,
            "How far behind the running vCPU, in the base policy's virtual time, an urgent vCPU may be and \
             still preempt it, borrowing from its future share (section 3.1.3; 18 ms chosen in section 4.1.1, \
             above CFS's 12 ms sleeper credit)",
        )),
    ]
}

/// `[vm.uvf]` keys; an absent duration key leaves that feature off.
pub fn vm_uvf_keys() -> Vec<SectionKey> {
    vec![
        SectionKey::optional(
            ParamSpec::duration(
                "resched_dp",
                0,
                "Resched-DP: a vCPU that sends a reschedule IPI stays urgent (not preempted) this long, to release \
                 the wait-queue lock it holds (seed 000 section 3.1.3; 500 us in section 4); unset: off",
            )
            .at_least(1.0),
        ),
        SectionKey::defaulted(ParamSpec::boolean(
            "early_dp",
            false,
            "Start the Resched-DP delay at the first APIC access of any IPI send, before the send's exits \
             (early delayed preemption, section 4.1.1, Figure 7a); needs resched_dp",
        )),
        SectionKey::defaulted(ParamSpec::boolean(
            "tlb_co",
            false,
            "TLB-Co: a vCPU that receives a TLB-shootdown IPI is urgent until it acknowledges (EOI) \
             (section 3.1.3)",
        )),
        SectionKey::optional(
            ParamSpec::duration(
                "resched_co",
                0,
                "Resched-Co: a vCPU that receives a reschedule IPI is urgent this long, to co-schedule \
                 communicating threads (section 3.1.2-3.1.3; 500 us in section 4.2); unset: off",
            )
            .at_least(1.0),
        ),
    ]
}

/// `[host.uvf]`.
pub fn host_uvf(section: &Section) -> Result<UvfHost, SimError> {
    let mut cfg = UvfHost::default();
    for (name, value) in read(section, &host_uvf_keys())? {
        match (name, value) {
            ("urgent_tslice", Some(ParamValue::Duration(d))) => cfg.urgent_tslice = d,
            ("urgent_allowance", Some(ParamValue::Duration(d))) => cfg.urgent_allowance = d,
            _ => {}
        }
    }
    Ok(cfg)
}

/// `[vm.uvf]`.
pub fn vm_uvf(section: &Section) -> Result<UvfVm, SimError> {
    let mut cfg = UvfVm::default();
    for (name, value) in read(section, &vm_uvf_keys())? {
        match (name, value) {
            ("resched_dp", Some(ParamValue::Duration(d))) => cfg.resched_dp = Some(d),
            ("early_dp", Some(ParamValue::Bool(b))) => cfg.early_dp = b,
            ("tlb_co", Some(ParamValue::Bool(b))) => cfg.tlb_co = b,
            ("resched_co", Some(ParamValue::Duration(d))) => cfg.resched_co = Some(d),
            _ => {}
        }
    }
    if cfg.early_dp && cfg.resched_dp.is_none() {
        return Err(section.error_at("early_dp", "early_dp = true needs resched_dp (the delay it starts early)"));
    }
    Ok(cfg)
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{assert_error, load, minimal};

    #[test]
    fn uvf_sections_load_and_bad_ones_are_rejected() {
        let s = load(&minimal("[host.uvf]\nurgent_tslice = \"300us\"", "[vm.uvf]\nresched_dp = \"500us\"\ntlb_co = true")).unwrap();
        let host = s.host.uvf.expect("[host.uvf] turns the overlay on");
        assert_eq!((host.urgent_tslice, host.urgent_allowance), (300 * crate::time::US, 18 * crate::time::MS));
        assert_eq!(s.vms[0].uvf.resched_dp, Some(500 * crate::time::US));
        assert!(s.vms[0].uvf.tlb_co && s.vms[0].uvf.resched_co.is_none() && !s.vms[0].uvf.early_dp);
        assert!(load(&minimal("", "")).unwrap().host.uvf.is_none());

        assert_error(&minimal("", "[vm.uvf]\ntlb_co = true"), "vm[0].uvf: urgent-vCPU-first features need the overlay");
        assert_error(
            &minimal("policy = \"gang\"\n[host.uvf]", ""),
            "host.uvf: the urgent-vCPU-first overlay rides on a proportional-share policy (\"cfs\" or \"credit\"), got policy = \"gang\"",
        );
        assert!(load(&minimal("policy = \"credit\"\n[host.uvf]", "")).unwrap().host.uvf.is_some());
        assert_error(&minimal("[host.uvf]", "[vm.uvf]\nearly_dp = true"), "vm[0].uvf.early_dp: early_dp = true needs resched_dp");
        assert_error(&minimal("[host.uvf]", "[vm.uvf]\ntlb_c = true"), "vm[0].uvf.tlb_c: unknown key; did you mean \"tlb_co\"?");
        assert_error(&minimal("[host.uvf]", "[vm.uvf]\nresched_co = \"0us\""), "vm[0].uvf.resched_co:");
    }
}
