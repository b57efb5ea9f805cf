//! Generated hostile input for the scenario loader and the program-op parser (proptest), the Rust
//! side of benches/fuzz_scenarios.py. Each property holds for every input: the loader either
//! takes the text or refuses it with an error that names the file; a scenario it takes runs, under
//! an event cap (and, for the generated programs, every engine self-check) to its end or to a
//! clean error. Never a panic.
//!
//! - any text at all;
//! - the repository's scenarios with one value replaced by an edge value (0, -1, 2^63, 1e300,
//!   NaN, inf, "", a long string, an array, a table) or one key dropped;
//! - programs drawn from the op grammar (compute, syscall under a kernel lock, mutex, barrier,
//!   user spinlock, futex-free loops), with indices and durations in and out of range.
//!
//! The test command runs a fixed-seed subset (about 20 s in a debug build). A longer campaign:
//! `VCPUSIM_FUZZ_CASES=20000 cargo test --release -p vcpusim --test fuzz_loader` (a random seed
//! each run; a failure prints the input and proptest's seed).

use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};
use vcpusim::api::{load_scenario, run};
use vcpusim::output::RunOptions;

const SOURCE: &str = "fuzz.toml";

const SCENARIOS: &[&str] = &[
    include_str!("../../../scenarios/quickstart.toml"),
    include_str!("../../../scenarios/examples/custom-program.toml"),
    include_str!("../../../scenarios/examples/cpupools.toml"),
    include_str!("../../../scenarios/examples/linux44.toml"),
    include_str!("../../../scenarios/examples/irs.toml"),
    include_str!("../../../scenarios/examples/eevdf.toml"),
];

/// The subset's size and seed, or the campaign's (`VCPUSIM_FUZZ_CASES`).
fn config(cases: u32) -> Config {
    match std::env::var("VCPUSIM_FUZZ_CASES").ok().and_then(|n| n.parse().ok()) {
        Some(n) => Config { cases: n, failure_persistence: None, ..Config::default() },
        None => Config { cases, rng_seed: RngSeed::Fixed(0x5eed), failure_persistence: None, ..Config::default() },
    }
}

/// Load `text`; if the loader takes it, run it (with every self-check, if `check`). Panics (the property's
/// failure) only on a loader error that does not name the file.
fn load_and_run(text: &str, check: bool) {
    match load_scenario(text, SOURCE) {
        Err(e) => assert!(e.to_string().starts_with(SOURCE), "a loader error that names no file: {e}\n--- input ---\n{text}"),
        Ok(sc) => {
            // A clean error (a deadlock the program walks into, the event cap) is an answer.
            let _ = run(&sc, &RunOptions { check, ..RunOptions::default() });
        }
    }
}

/// Put a short run and an event cap on a scenario table, so that any scenario it takes is cheap.
fn bounded(mut table: toml::Table) -> toml::Table {
    let run = table.entry("run").or_insert_with(|| toml::Value::Table(toml::Table::new()));
    if let toml::Value::Table(run) = run {
        run.insert("duration".into(), toml::Value::String("3ms".into()));
        run.insert("max_events".into(), toml::Value::Integer(5_000));
    }
    table
}

/// Every path to a value in `v` (table keys and array indices), depth first.
fn paths(v: &toml::Value, prefix: &mut Vec<PathStep>, out: &mut Vec<Vec<PathStep>>) {
    match v {
        toml::Value::Table(t) => {
            for (k, child) in t {
                prefix.push(PathStep::Key(k.clone()));
                out.push(prefix.clone());
                paths(child, prefix, out);
                prefix.pop();
            }
        }
        toml::Value::Array(a) => {
            for (i, child) in a.iter().enumerate() {
                prefix.push(PathStep::Index(i));
                out.push(prefix.clone());
                paths(child, prefix, out);
                prefix.pop();
            }
        }
        _ => {}
    }
}

#[derive(Clone, Debug)]
enum PathStep {
    Key(String),
    Index(usize),
}

/// Replace (or, with `None`, remove) the value at `path`.
fn edit(root: &mut toml::Value, path: &[PathStep], new: Option<toml::Value>) {
    let (last, parents) = path.split_last().expect("a path has a step");
    let mut at = root;
    for step in parents {
        at = match (step, at) {
            (PathStep::Key(k), toml::Value::Table(t)) => t.get_mut(k).expect("the path was read from this value"),
            (PathStep::Index(i), toml::Value::Array(a)) => &mut a[*i],
            _ => unreachable!("the path was read from this value"),
        };
    }
    match (last, at, new) {
        (PathStep::Key(k), toml::Value::Table(t), Some(v)) => {
            t.insert(k.clone(), v);
        }
        (PathStep::Key(k), toml::Value::Table(t), None) => {
            t.remove(k);
        }
        (PathStep::Index(i), toml::Value::Array(a), Some(v)) => a[*i] = v,
        (PathStep::Index(i), toml::Value::Array(a), None) => {
            a.remove(*i);
        }
        _ => unreachable!("the path was read from this value"),
    }
}

fn edge_value() -> impl Strategy<Value = Option<toml::Value>> {
    use toml::Value as V;
    prop_oneof![
        Just(None),
        Just(Some(V::Integer(0))),
        Just(Some(V::Integer(-1))),
        Just(Some(V::Integer(i64::MAX))),
        Just(Some(V::Integer(1 << 40))),
        Just(Some(V::Float(1e300))),
        Just(Some(V::Float(1e-300))),
        Just(Some(V::Float(f64::NAN))),
        Just(Some(V::Float(f64::INFINITY))),
        Just(Some(V::String(String::new()))),
        Just(Some(V::String("x".repeat(5000)))),
        Just(Some(V::String("1e999ms".into()))),
        Just(Some(V::Boolean(true))),
        Just(Some(V::Array(vec![]))),
        Just(Some(V::Array(vec![V::Integer(1), V::String("a".into())]))),
        Just(Some(V::Table(toml::Table::new()))),
        any::<i64>().prop_map(|n| Some(V::Integer(n))),
        "[a-z0-9\\-]{0,12}".prop_map(|s| Some(V::String(s))),
        // Plausible values, so that many mutants load and run.
        (1i64..17).prop_map(|n| Some(V::Integer(n))),
        (0.1f64..4.0).prop_map(|f| Some(V::Float(f))),
        prop_oneof![Just("10us"), Just("1ms"), Just("2s"), Just("credit"), Just("cfs"), Just("0-3")]
            .prop_map(|s| Some(V::String(s.into()))),
    ]
}

/// One op of a program (or a lock, its work and its unlock), drawn from the op grammar: mostly
/// valid (one mutex, one barrier of two threads, one kernel lock, one user spinlock), with a
/// tenth out of range (an index the scenario
/// does not declare, a duration without a unit, an unknown op). Valid ops may still make an
/// invalid program (an unlock of a lock not held, a barrier only one thread reaches): the run
/// must end in a clean error then.
fn op() -> impl Strategy<Value = String> {
    let dur = prop_oneof![Just("0ns"), Just("1us"), Just("5us"), Just("200us")];
    let valid = prop_oneof![
        dur.clone().prop_map(|d| format!("{{compute = \"{d}\"}}")),
        dur.clone().prop_map(|d| format!("{{syscall = \"{d}\", lock = 0}}")),
        dur.clone().prop_map(|d| format!("{{syscall = \"{d}\"}}")),
        dur.clone().prop_map(|d| format!("{{lock = 0}}, {{compute = \"{d}\"}}, {{unlock = 0}}")),
        dur.clone().prop_map(|d| format!("{{spin_lock = 0}}, {{compute = \"{d}\"}}, {{spin_unlock = 0}}")),
        Just("{barrier = 0}".to_string()),
        prop_oneof![Just("1us"), Just("200us")].prop_map(|d| format!("{{barrier = 0, wait = \"spin-then-block\", spin = \"{d}\"}}")),
        (1i64..4).prop_map(|n| format!("{{munmap = {n}}}")),
        Just("{progress = true}".to_string()),
    ];
    let invalid = prop_oneof![
        (1i64..4).prop_map(|k| format!("{{syscall = \"1us\", lock = {k}}}")),
        (1i64..4).prop_map(|b| format!("{{barrier = {b}}}")),
        (1i64..4).prop_map(|s| format!("{{spin_lock = {s}}}")),
        Just("{compute = \"-1us\"}".to_string()),
        Just("{compute = \"5\"}".to_string()),
        Just("{bogus = 1}".to_string()),
    ];
    prop_oneof![9 => valid, 1 => invalid]
}

/// A VM of two threads on two vCPUs running one generated op list (so a barrier has both).
fn program() -> impl Strategy<Value = String> {
    (prop::collection::vec(op(), 1..8), any::<bool>()).prop_map(|(ops, looped)| {
        let ops = ops.join(", ");
        // A forever loop needs an op that takes time (the loader's runaway guard).
        let list = if looped { format!("[{{loop = \"forever\", body = [{ops}, {{compute = \"1us\"}}]}}]") } else { format!("[{ops}]") };
        format!(
            "[host]\npcpus = 2\npolicy = \"credit\"\n[[vm]]\nname = \"p\"\nvcpus = 2\nworkload = \"program\"\nthreads = 2\n\
             [vm.program]\nmutexes = 1\nbarriers = [2]\nkernel_locks = [\"k\"]\nspinlocks = [\"ticket\"]\n\
             threads = [{list}]\n[run]\nduration = \"3ms\"\nmax_events = 5000\n"
        )
    })
}

proptest! {
    #![proptest_config(config(300))]

    #[test]
    fn any_text_is_taken_or_refused_naming_the_file(text in "\\PC{0,400}") {
        load_and_run(&text, true);
    }
}

proptest! {
    #![proptest_config(config(60))]

    #[test]
    fn a_scenario_with_one_value_replaced_is_taken_or_refused_naming_the_file(
        which in 0..SCENARIOS.len(),
        pick in any::<prop::sample::Index>(),
        new in edge_value(),
    ) {
        let table: toml::Table = toml::from_str(SCENARIOS[which]).expect("the repository's scenarios parse");
        let mut root = toml::Value::Table(bounded(table));
        let mut all = Vec::new();
        paths(&root, &mut Vec::new(), &mut all);
        let path = pick.get(&all).clone();
        edit(&mut root, &path, new);
        // NaN and inf have TOML spellings (nan, inf): the text is what a user could write.
        let text = toml::to_string(&root).expect("a TOML value serializes");
        load_and_run(&text, false);
    }
}

proptest! {
    #![proptest_config(config(120))]

    #[test]
    fn a_generated_program_is_taken_or_refused_and_runs_to_a_clean_end(text in program()) {
        load_and_run(&text, true);
    }
}
