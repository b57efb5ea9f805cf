//! Seed 004's VM class (section 4.1) and the master vCPU's u-factor (section 3.3): the hybrid
//! policy's own per-VM settings, which reach it by name in `VmSched::params` (`[[vm]] type` and
//! `u_factor`; `[[vm.sched_pe]]` changes them at run time, as the seed's `xm sched-pe` does).

use crate::params::{ParamValue, Params};

/// The VM classes of seed 004 (004_2f4d1756ca892fd2.txt section 4.1): a high-throughput VM's
/// vCPUs are scheduled asynchronously (PS), a concurrent VM's are co-scheduled (CPS / PCPS).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum VmType {
    /// `hit`: high-throughput (the seed's default type).
    #[default]
    HighThroughput,
    /// `con`: concurrent.
    Concurrent,
}

impl VmType {
    /// The names scenarios use, in the order error messages list them.
    pub const NAMES: &'static [&'static str] = &["hit", "con"];

    pub fn name(self) -> &'static str {
        match self {
            VmType::HighThroughput => "hit",
            VmType::Concurrent => "con",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "hit" => Some(VmType::HighThroughput),
            "con" => Some(VmType::Concurrent),
            _ => None,
        }
    }
}

/// A VM's class: its type and, for a concurrent VM, the master vCPU's u-factor in [0, 1]
/// (0 = CPS, > 0 = PCPS).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct VmClass {
    pub vm_type: VmType,
    pub u_factor: f64,
}

impl VmClass {
    /// The names of the class's two settings in `VmSched::params`.
    pub const TYPE: &'static str = "type";
    pub const U_FACTOR: &'static str = "u_factor";

    pub fn new(vm_type: VmType, u_factor: f64) -> Self {
        VmClass { vm_type, u_factor }
    }

    /// The class as `VmSched::params` carries it.
    pub fn params(self) -> Params {
        let mut p = Params::default();
        p.set(Self::TYPE, ParamValue::Choice(self.vm_type.name().to_string()));
        p.set(Self::U_FACTOR, ParamValue::Float(self.u_factor));
        p
    }

    /// The class in `params`; a setting not given is the default's (a `hit` VM, u-factor 0), as
    /// for a VM whose scenario names no class. A value of another type or name is a bug of the
    /// code that made `params` (the loader checks the scenario's).
    pub fn from_params(params: &Params) -> Self {
        let vm_type = match params.value(Self::TYPE) {
            None => VmType::default(),
            Some(ParamValue::Choice(name)) => VmType::from_name(name).unwrap_or_else(|| panic!("VM type {name:?}")),
            Some(other) => panic!("VM type {other:?}"),
        };
        let u_factor = match params.value(Self::U_FACTOR) {
            None => 0.0,
            Some(ParamValue::Float(u)) => *u,
            Some(other) => panic!("u-factor {other:?}"),
        };
        VmClass { vm_type, u_factor }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_class_survives_its_params_and_absent_settings_are_the_defaults() {
        let con = VmClass::new(VmType::Concurrent, 0.25);
        assert_eq!(VmClass::from_params(&con.params()), con);
        assert_eq!(VmClass::from_params(&Params::default()), VmClass::new(VmType::HighThroughput, 0.0));
        let mut only_type = Params::default();
        only_type.set(VmClass::TYPE, ParamValue::Choice("con".into()));
        assert_eq!(VmClass::from_params(&only_type), VmClass::new(VmType::Concurrent, 0.0));
    }
}
