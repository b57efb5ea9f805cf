//! placeholder, being written
use super::{HostShape, PolicyKind};
use crate::hypervisor::policy::Policy;
use crate::params::{ParamSpec, Params};
pub struct GangKind;
impl PolicyKind for GangKind {
    fn name(&self) -> &'static str { "gang" }
    fn describe(&self) -> &'static str { "" }
    fn params(&self) -> Vec<ParamSpec> { Vec::new() }
    fn build(&self, _params: &Params, _host: HostShape) -> Box<dyn Policy> { unimplemented!() }
}
