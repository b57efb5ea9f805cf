//! placeholder, being written
use super::spec::Scenario;
use crate::error::SimError;
pub fn from_toml_str(_text: &str, source: &str) -> Result<Scenario, SimError> {
    Err(SimError::Scenario { file: source.into(), key: String::new(), message: "loader not written yet".into() })
}
