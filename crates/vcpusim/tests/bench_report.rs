//! The benchmark's report says which build it timed (`vcpusim::build_info`): a build made by
//! cargo, as this test's is, has no PGO profile, and both the text and the JSON say so, so that
//! a number from a profile-guided build is never read against one from a build without it; and
//! which machine it ran on.

use vcpusim::bench::machine::Machine;
use vcpusim::bench::{run_standard, to_text, BenchOptions};
use vcpusim::build_info::{self, NOT_THROUGH_BACKEND};
use vcpusim::time::MS;

#[test]
fn the_report_names_the_build_it_timed() {
    let options = BenchOptions { duration: Some(10 * MS), memory_durations: None, repeats: 1, scaling: None };
    let report = run_standard(&options).expect("the quickstart runs");
    assert!(!report.build_pgo && !build_info::pgo_applied());
    assert_eq!(report.build_pgo_note, NOT_THROUGH_BACKEND);
    assert_eq!(report.build_profile, build_info::profile());
    let json: serde_json::Value = serde_json::from_str(&report.to_json()).expect("the report is JSON");
    assert_eq!(json["build_pgo"], serde_json::Value::Bool(false));
    assert_eq!(json["build_pgo_note"], NOT_THROUGH_BACKEND);
    let text = to_text(&report);
    assert_eq!(text.lines().nth(1), Some(format!("  build: {NOT_THROUGH_BACKEND}").as_str()), "{text}");
    // And the machine: the same build runs twice as fast on one machine as on another.
    let machine = Machine::this();
    assert_eq!(report.machine, machine);
    assert_eq!(json["machine"]["summary"], machine.summary.as_str());
    assert_eq!(text.lines().nth(2), Some(format!("  machine: {}", machine.summary).as_str()), "{text}");
    if cfg!(target_os = "linux") {
        assert!(machine.logical_cpus.is_some_and(|n| n >= 1), "{machine:?}");
    }
}
