//! Run a scenario file and print its vms.csv: `cargo run --release --example run_file -- FILE [check]`.
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = &args[1];
    let text = std::fs::read_to_string(path).expect("readable scenario");
    let sc = match vcpusim::api::load_scenario(&text, path) {
        Ok(sc) => sc,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let opts = vcpusim::api::RunOptions { check: args.get(2).is_some_and(|a| a == "check"), ..Default::default() };
    let t = std::time::Instant::now();
    match vcpusim::api::run(&sc, &opts) {
        Ok(out) => {
            print!("{}", out.vms_csv);
            print!("{}", out.summary_json);
            eprintln!("wall {:.2}s", t.elapsed().as_secs_f64());
        }
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}
