//! The golden-output suite: a fixed set of scenarios whose `vms.csv`, `metrics.csv` and
//! `summary.json` must stay byte-identical (compared by SHA-256) through every refactoring.
//!
//! The cases are every scenario under `scenarios/` (as users run them) and every file under
//! `tests/golden/cases/` here: one per policy and overlay, and three reduced cases of each figure
//! script of `experiments/asplos13` and `experiments/hybrid` (written by
//! `tests/golden/make_cases.py`). The expected hashes are in `tests/golden/hashes.tsv`.
//!
//! A commit that changes an output on purpose rewrites the hashes in the same commit and says
//! why (CONTRIBUTING.md, "Golden outputs"):
//!
//! ```sh
//! VCPUSIM_BLESS=1 cargo test -p vcpusim --test golden
//! ```
//!
//! To see *what* moved, `VCPUSIM_GOLDEN_DUMP=<dir>` also writes every case's three files under
//! `<dir>/<case>/`; dump before and after a change and `diff -r` the two directories.

use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use vcpusim::api::{load_scenario, run, RunOptions};

const OUTPUTS: [&str; 3] = ["vms.csv", "metrics.csv", "summary.json"];

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn toml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> =
        std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())).map(|e| e.expect("a directory entry").path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            toml_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "toml") {
            out.push(p);
        }
    }
}

/// Every golden case as (name, path), in a fixed order.
fn cases() -> Vec<(String, PathBuf)> {
    let root = crate_dir().join("../..");
    let mut found = Vec::new();
    let mut repo = Vec::new();
    toml_files(&root.join("scenarios"), &mut repo);
    for p in repo {
        let rel = p.strip_prefix(&root).expect("under the repo").to_string_lossy().replace('\\', "/");
        found.push((rel, p));
    }
    let mut own = Vec::new();
    toml_files(&crate_dir().join("tests/golden/cases"), &mut own);
    for p in own {
        let name = format!("golden/{}", p.file_name().expect("a file name").to_string_lossy());
        found.push((name, p));
    }
    found
}

fn sha256(text: &str) -> String {
    Sha256::digest(text.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

/// The three output hashes of one case, in `OUTPUTS` order.
fn hashes_of(name: &str, path: &Path) -> [String; 3] {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    // The case name, not the absolute path, is the scenario's source: summary.json records it,
    // and its hash must not depend on where the repository is checked out.
    let sc = load_scenario(&text, name).unwrap_or_else(|e| panic!("{e}"));
    let out = run(&sc, &RunOptions::default()).unwrap_or_else(|e| panic!("{}: run failed: {e}", path.display()));
    if let Some(dir) = std::env::var_os("VCPUSIM_GOLDEN_DUMP") {
        let case = PathBuf::from(dir).join(name.replace('/', "__"));
        std::fs::create_dir_all(&case).expect("create the dump directory");
        for (name, text) in OUTPUTS.iter().zip([&out.vms_csv, &out.metrics_csv, &out.summary_json]) {
            std::fs::write(case.join(name), text).expect("write a dumped output");
        }
    }
    [sha256(&out.vms_csv), sha256(&out.metrics_csv), sha256(&out.summary_json)]
}

fn hashes_file() -> PathBuf {
    crate_dir().join("tests/golden/hashes.tsv")
}

fn read_expected() -> BTreeMap<String, [String; 3]> {
    let text = std::fs::read_to_string(hashes_file()).unwrap_or_default();
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f.len(), 4, "hashes.tsv: expected case and three hashes, got {l:?}");
            (f[0].to_string(), [f[1].to_string(), f[2].to_string(), f[3].to_string()])
        })
        .collect()
}

#[test]
fn golden_outputs_are_unchanged() {
    let cases = cases();
    assert!(cases.len() >= 40, "the golden suite lost cases: {}", cases.len());
    let got: Vec<(String, [String; 3])> = cases.iter().map(|(name, p)| (name.clone(), hashes_of(name, p))).collect();

    if std::env::var_os("VCPUSIM_BLESS").is_some() {
        let mut text = String::from("# case\tsha256(vms.csv)\tsha256(metrics.csv)\tsha256(summary.json)\n");
        for (name, h) in &got {
            text += &format!("{name}\t{}\t{}\t{}\n", h[0], h[1], h[2]);
        }
        std::fs::write(hashes_file(), text).expect("write hashes.tsv");
        eprintln!("blessed {} golden cases", got.len());
        return;
    }

    let expected = read_expected();
    let mut problems = Vec::new();
    for (name, h) in &got {
        match expected.get(name) {
            None => problems.push(format!("{name}: no committed hashes (a new case: bless it)")),
            Some(e) => {
                let changed: Vec<&str> = (0..3).filter(|&i| e[i] != h[i]).map(|i| OUTPUTS[i]).collect();
                if !changed.is_empty() {
                    problems.push(format!("{name}: {} changed", changed.join(", ")));
                }
            }
        }
    }
    for name in expected.keys() {
        if !got.iter().any(|(n, _)| n == name) {
            problems.push(format!("{name}: in hashes.tsv but no longer a case"));
        }
    }
    assert!(
        problems.is_empty(),
        "golden outputs differ ({} of {} cases):\n  {}\nIf the change is on purpose, rerun with VCPUSIM_BLESS=1 and say why in the commit.",
        problems.len(),
        got.len(),
        problems.join("\n  ")
    );
}

/// Check mode only observes: the same case gives the same bytes with it on.
#[test]
fn check_mode_changes_no_output() {
    let dir = crate_dir().join("tests/golden/cases");
    for name in ["policy-cfs.toml", "policy-credit.toml", "policy-gang.toml", "policy-hybrid-con.toml"] {
        let path = dir.join(name);
        let text = std::fs::read_to_string(&path).expect("read case");
        let sc = load_scenario(&text, name).expect("loads");
        let plain = run(&sc, &RunOptions::default()).expect("runs");
        let checked = run(&sc, &RunOptions { check: true, ..Default::default() }).expect("runs in check mode");
        assert_eq!(plain.vms_csv, checked.vms_csv, "{name}");
        assert_eq!(plain.metrics_csv, checked.metrics_csv, "{name}");
        assert_eq!(plain.summary_json, checked.summary_json, "{name}");
    }
}
