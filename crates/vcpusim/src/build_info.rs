//! How this build of the engine was made, for the reports that time it (`vcpusim bench`,
//! `vcpusim --version`).
//!
//! `pip install .` goes through `build_backend/vcpusim_build.py`, which decides whether to apply
//! the committed profile-guided-optimization profile (`pgo/`) and records its decision in the
//! compile-time environment: `VCPUSIM_BUILD_PGO` ("on" or "off") and `VCPUSIM_BUILD_PGO_NOTE`
//! (one line: which profile, and whether it was taken on these sources, or why none was
//! applied). A build made by cargo or maturin directly has neither. rustc records the variables
//! it reads, so cargo rebuilds this crate when they change.

/// Said of a build that did not come through the build backend.
pub const NOT_THROUGH_BACKEND: &str = "built by cargo or maturin directly, not through build_backend/vcpusim_build.py: no PGO profile";

/// Whether the committed PGO profile was applied to this build.
pub fn pgo_applied() -> bool {
    option_env!("VCPUSIM_BUILD_PGO") == Some("on")
}

/// The build backend's one-line account of the profile (or why none was applied).
pub fn pgo_note() -> &'static str {
    option_env!("VCPUSIM_BUILD_PGO_NOTE").unwrap_or(NOT_THROUGH_BACKEND)
}

/// "release" or "debug": numbers from a debug build are not comparable.
pub fn profile() -> &'static str {
    if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cargo_build_says_it_has_no_profile() {
        // `cargo test` does not go through the build backend (unless someone exported its
        // variables by hand, which this test would then report).
        assert_eq!(option_env!("VCPUSIM_BUILD_PGO"), None);
        assert!(!pgo_applied());
        assert_eq!(pgo_note(), NOT_THROUGH_BACKEND);
        assert_eq!(profile(), if cfg!(debug_assertions) { "debug" } else { "release" });
    }
}
