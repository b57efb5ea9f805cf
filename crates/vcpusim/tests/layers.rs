//! The layers' sealed boundaries (docs/architecture.md): the guest kernel (`src/guest/`) reaches
//! the host only across the VM-exit line (`vmexit.rs`), so it names neither the engine (`sim`)
//! nor the hypervisor; the hypervisor's policies and mechanisms (`src/hypervisor/`) see the host
//! through `HostView` and requests, so they do not name the engine. Read from the sources: a
//! path such as `crate::sim::state::Sim` in a `use`, in code or in a doc link is a reference.

use std::fs;
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            out.extend(sources(&path));
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// Whether `code` names `path` (`crate::sim`, or `crate::sim::...`, but not `crate::simulate`).
fn names(code: &str, path: &str) -> bool {
    code.match_indices(path).any(|(at, _)| !code[at + path.len()..].starts_with(|c: char| c.is_alphanumeric() || c == '_'))
}

/// The source without its comments, with grouped imports spelled out: `use crate::{sim::X, y}`
/// becomes `crate::sim::X crate::y`, so that a group hides no path.
fn code_of(text: &str) -> String {
    let code: String = text.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n");
    let mut out = String::new();
    let mut rest = code.as_str();
    while let Some(at) = rest.find("crate::{") {
        out.push_str(&rest[..at]);
        let after = &rest[at + "crate::{".len()..];
        let (mut depth, mut end) = (1, after.len());
        for (i, c) in after.char_indices() {
            depth += (c == '{') as i32 - (c == '}') as i32;
            if depth == 0 {
                end = i;
                break;
            }
        }
        for item in after[..end].split(',') {
            out.push_str(&format!(" crate::{} ", item.trim()));
        }
        // Keep the line count, so that later lines keep their numbers.
        out.push_str(&"\n".repeat(after[..end].matches('\n').count()));
        rest = &after[(end + 1).min(after.len())..];
    }
    out.push_str(rest);
    out
}

/// Lines of `layer`'s sources (outside comments) that name one of `forbidden` (module paths of
/// the crate, `crate::sim` say), as `file:line: text` (a grouped import: its first line).
fn references(layer: &str, forbidden: &[&str]) -> Vec<String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found = Vec::new();
    for file in sources(&src.join(layer)) {
        let code = code_of(&fs::read_to_string(&file).expect("a source file"));
        for (i, line) in code.lines().enumerate() {
            if forbidden.iter().any(|f| names(line, f)) {
                found.push(format!("{}:{}: {}", file.strip_prefix(&src).unwrap_or(&file).display(), i + 1, line.trim()));
            }
        }
    }
    found
}

#[test]
fn the_guest_names_neither_the_engine_nor_the_hypervisor() {
    let found = references("guest", &["crate::sim", "crate::hypervisor", "super::super::sim", "super::super::hypervisor"]);
    assert!(found.is_empty(), "the guest reaches the host only across vmexit.rs:\n{}", found.join("\n"));
}

#[test]
fn the_hypervisor_does_not_name_the_engine() {
    let found = references("hypervisor", &["crate::sim", "super::super::sim"]);
    assert!(found.is_empty(), "the hypervisor sees the host through HostView and requests:\n{}", found.join("\n"));
}

#[test]
fn the_scan_finds_a_reference_where_there_is_one() {
    // The engine names both layers: the scan must see it, or the tests above prove nothing.
    assert!(!references("sim", &["crate::hypervisor"]).is_empty());
    assert!(!references("sim", &["crate::guest"]).is_empty());
    // A longer name that starts with a forbidden one is not a reference.
    assert!(references("guest", &["crate::guest::kerne"]).is_empty());
    // A grouped import hides no path.
    let code = code_of("use crate::{\n    ids::VcpuId, // a comment\n    sim::state::Sim,\n};\nfn f() {}");
    assert!(names(&code, "crate::sim") && names(&code, "crate::ids") && !names(&code, "crate::hypervisor"), "{code}");
}
