//! placeholder, being written
pub fn catalog_json() -> String { "{}".into() }
