//! `vcpusim bench` without Python: the same report (`vcpusim::bench`), as text or `--json`.
//!
//! `cargo bench -p vcpusim --bench bench -- --help` lists the flags (`USAGE` below).
//!
//! A release binary of this file run on two builds, one after the other, is how before/after
//! ratios are measured side by side (the Python CLI needs the package installed).

use vcpusim::bench::{parse_scaling_pcpus, parse_scaling_policies, run_on, run_standard, to_text, BenchOptions, ScalingOptions};
use vcpusim::time::parse_duration;

/// What `--help` prints: the flags this file accepts.
const USAGE: &str = "usage: cargo bench -p vcpusim --bench bench -- [--json] [--duration 60s] [--repeats 5]
  [--no-memory] [--scaling] [--scaling-pcpus quick|full|8,64,...] [--scaling-policies cfs,...]
  [--scaling-sim-time 2s] [--scaling-repeats 1] [--scenario FILE]

  --json               the whole report as JSON (the text report otherwise)
  --duration D         simulated time of each timed quickstart run
  --repeats N          timed runs of the quickstart, each followed by a bare-heap loop
  --no-memory          skip the RSS growth runs
  --scaling            add the scaling table (8-1024 pCPUs, every policy)
  --scaling-pcpus L    host sizes: quick, full or a comma list
  --scaling-policies L policies of the scaling table, a comma list; a seed's mechanism over one:
                       credit+microsliced, credit+irs, credit+relaxed-co, credit+delay-preempt,
                       cfs+uvf, credit+uvf; or bare-metal (one Linux 3.13 machine on every pCPU)
  --scaling-sim-time D simulated time at 8 pCPUs (scaled down with the host)
  --scaling-repeats N  runs per scaling row (the fastest is reported)
  --scenario FILE      time this scenario in place of the quickstart (e.g. a PLE storm)
";

fn main() {
    if let Err(message) = run() {
        eprintln!("bench: {message}");
        std::process::exit(2);
    }
}

fn run() -> Result<(), String> {
    let mut options = BenchOptions::default();
    let mut json = false;
    let mut scaling: Option<ScalingOptions> = None;
    let mut scenario: Option<String> = None;
    let mut args = std::env::args().skip(1);
    let duration = |flag: &str, v: Option<String>| -> Result<u64, String> {
        let v = v.ok_or_else(|| format!("{flag} needs a value"))?;
        parse_duration(&v).map_err(|e| format!("{flag} {v:?}: {e}"))
    };
    let positive = |flag: &str, v: &str| -> Result<u32, String> {
        v.parse().ok().filter(|&n: &u32| n >= 1).ok_or_else(|| format!("{flag} {v:?}: expected a positive integer"))
    };
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--help" | "-h" => {
                print!("{USAGE}");
                return Ok(());
            }
            "--json" => json = true,
            "--no-memory" => options.memory_durations = None,
            "--duration" => options.duration = Some(duration("--duration", args.next())?),
            "--repeats" => {
                let v = args.next().ok_or("--repeats needs a value")?;
                options.repeats = positive("--repeats", &v)?;
            }
            "--scaling" => {
                scaling.get_or_insert_with(ScalingOptions::quick);
            }
            "--scaling-pcpus" => {
                let v = args.next().ok_or("--scaling-pcpus needs a value")?;
                scaling.get_or_insert_with(ScalingOptions::quick).pcpus =
                    parse_scaling_pcpus(&v).map_err(|e| format!("--scaling-pcpus: {e}"))?;
            }
            "--scaling-policies" => {
                let v = args.next().ok_or("--scaling-policies needs a value")?;
                scaling.get_or_insert_with(ScalingOptions::quick).policies =
                    parse_scaling_policies(&v).map_err(|e| format!("--scaling-policies: {e}"))?;
            }
            "--scaling-sim-time" => {
                let t = duration("--scaling-sim-time", args.next())?;
                scaling.get_or_insert_with(ScalingOptions::quick).sim_time_at_8 = t;
            }
            "--scaling-repeats" => {
                let v = args.next().ok_or("--scaling-repeats needs a value")?;
                scaling.get_or_insert_with(ScalingOptions::quick).repeats = positive("--scaling-repeats", &v)?;
            }
            "--scenario" => scenario = Some(args.next().ok_or("--scenario needs a file")?),
            "--bench" => {} // cargo bench passes it
            other => return Err(format!("unknown argument {other:?} (--help lists the flags)")),
        }
    }
    options.scaling = scaling;
    let report = match scenario {
        Some(path) => {
            let text = std::fs::read_to_string(&path).map_err(|e| format!("--scenario {path:?}: {e}"))?;
            let scenario = vcpusim::api::load_scenario(&text, &path).map_err(|e| e.to_string())?;
            run_on(&scenario, &options)
        }
        None => run_standard(&options),
    }
    .map_err(|e| e.to_string())?;
    if json {
        println!("{}", report.to_json());
    } else {
        print!("{}", to_text(&report));
    }
    Ok(())
}
