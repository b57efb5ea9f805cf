//! One simulation run (being written; see issue 2).
use crate::api::{RunOptions, RunOutput};
use crate::error::SimError;
use crate::scenario::spec::Scenario;

pub fn run(_scenario: &Scenario, _options: &RunOptions) -> Result<RunOutput, SimError> {
    Err(SimError::Limit { message: "the engine is not built yet".into() })
}
