//! Run the quickstart mix under the round-robin policy of this crate and under Xen's credit,
//! and print each VM's CPU time and completion.

use vcpusim::api::{self, RunOptions};

const SCENARIO: &str = r#"
[host]
pcpus = 8
policy = "POLICY"

[[vm]]
name = "parallel"
vcpus = 8
workload = "barrier"
threads = 8
iterations = 500

[[vm]]
name = "seq"
count = 4
vcpus = 1
workload = "cpu-bound"

[run]
duration = "10s"
seed = 1
"#;

fn main() {
    custom_policy::register();
    for policy in ["round-robin", "credit"] {
        let text = SCENARIO.replace("POLICY", policy);
        let output = api::load_scenario(&text, "<custom-policy>")
            .and_then(|scenario| api::run(&scenario, &RunOptions::default()))
            .unwrap_or_else(|e| {
                eprintln!("error: {e}");
                std::process::exit(1)
            });
        println!("policy = {policy}");
        // The columns a reader compares: the VM, its CPU time and when it finished.
        let mut lines = output.vms_csv.lines();
        let header: Vec<&str> = lines.next().unwrap_or_default().split(',').collect();
        let col = |name: &str| header.iter().position(|h| *h == name).expect("vms.csv has the column");
        let (vm, cpu, done) = (col("vm"), col("cpu_time_ms"), col("completion_time_ms"));
        for line in lines {
            let f: Vec<&str> = line.split(',').collect();
            let done = if f[done].is_empty() { "-" } else { f[done] };
            println!("  {:<12} cpu_time_ms {:>10}  completion_time_ms {:>10}", f[vm], f[cpu], done);
        }
    }
}
