//! Criterion benchmark: the quickstart scenario (scenarios/quickstart.toml), shortened to one
//! simulated second so a sample takes well under a second in a release build.
//! `cargo bench -p vcpusim`; `vcpusim bench` reports the same engine's speed in events/s.

use criterion::{criterion_group, criterion_main, Criterion};
use vcpusim::api::{self, RunOptions};
use vcpusim::bench::{QUICKSTART_SOURCE, QUICKSTART_TOML};
use vcpusim::time::SEC;

fn quickstart(c: &mut Criterion) {
    let mut scenario = api::load_scenario(QUICKSTART_TOML, QUICKSTART_SOURCE).expect("the quickstart scenario loads");
    scenario.run.duration = SEC;
    let options = RunOptions::default();
    let mut group = c.benchmark_group("quickstart");
    group.sample_size(10);
    group.bench_function("1s_simulated", |b| {
        b.iter(|| api::run(std::hint::black_box(&scenario), &options).expect("the quickstart scenario runs"))
    });
    group.finish();
}

criterion_group!(benches, quickstart);
criterion_main!(benches);
