//! Helpers for the engine-level tests: run TOML text and read the per-VM table.
#![allow(dead_code)]

use std::collections::BTreeMap;
use vcpusim::api::{load_scenario, run, RunOptions, RunOutput};

pub fn run_toml(text: &str, check: bool) -> RunOutput {
    let sc = load_scenario(text, "<test>").unwrap_or_else(|e| panic!("scenario does not load: {e}\n{text}"));
    run(&sc, &RunOptions { check, ..Default::default() }).unwrap_or_else(|e| panic!("run failed: {e}"))
}

/// vms.csv as a map VM name -> column -> value (quoted fields are not needed for numbers).
pub fn vm_table(out: &RunOutput) -> BTreeMap<String, BTreeMap<String, String>> {
    let mut lines = out.vms_csv.lines();
    let header: Vec<&str> = lines.next().expect("a header").split(',').collect();
    lines
        .map(|l| {
            let cells: Vec<&str> = l.split(',').collect();
            let row: BTreeMap<String, String> =
                header.iter().zip(cells.iter()).map(|(h, c)| (h.to_string(), c.to_string())).collect();
            (row["vm"].clone(), row)
        })
        .collect()
}

pub fn num(table: &BTreeMap<String, BTreeMap<String, String>>, vm: &str, col: &str) -> f64 {
    let v = &table[vm][col];
    v.parse().unwrap_or_else(|_| panic!("{vm}.{col} = {v:?} is not a number"))
}
