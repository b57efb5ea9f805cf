//! Inputs that once ran into silent overflow, an allocation abort or a malformed table: each is
//! now a clear loader error naming the file, the key and the value, or a well-formed output.

use vcpusim::api::load_scenario;

fn with_ple(ple: &str) -> String {
    format!(
        "[host]\npcpus = 4\npolicy = \"credit\"\n[host.ple]\n{ple}\n\
         [[vm]]\nname = \"a\"\nvcpus = 4\nworkload = \"mutex\"\n[run]\nduration = \"50ms\"\n"
    )
}

#[test]
fn a_clock_that_makes_a_pause_loop_window_of_centuries_is_refused() {
    for (ple, key) in [
        ("cpu_ghz = 2.2e-16", "window_cycles = 4096"),
        ("cpu_ghz = 1e-300", "window_cycles = 4096"),
        ("cpu_ghz = 1e-10\ngrow = 2", "window_max_cycles = 4294967295"),
        ("window_cycles = 9223372036854775807\nwindow_max_cycles = 9223372036854775807\ncpu_ghz = 0.5", "window_cycles"),
    ] {
        let e = load_scenario(&with_ple(ple), "p.toml").expect_err(ple).to_string();
        assert!(e.contains("p.toml") && e.contains("host.ple.cpu_ghz") && e.contains(key) && e.contains("292 years"), "{ple}: {e}");
    }
    // A real clock, however slow, is fine: 4096 cycles at 1 MHz is 4.1 ms.
    load_scenario(&with_ple("cpu_ghz = 0.001"), "p.toml").expect("a 1 MHz clock");
}

#[test]
fn the_mutex_workloads_mutex_count_is_bounded_before_anything_is_allocated() {
    let text =
        |n: &str| format!("[host]\npcpus = 2\n[[vm]]\nname = \"m\"\nvcpus = 2\nworkload = \"mutex\"\nparams = {{ mutexes = {n} }}\n");
    for n in ["1000000000", "100000000000"] {
        let e = load_scenario(&text(n), "m.toml").expect_err(n).to_string();
        assert!(e.contains("m.toml") && e.contains("mutexes") && e.contains("1048576") && e.contains(n), "{n}: {e}");
    }
    load_scenario(&text("1048576"), "m.toml").expect("the bound itself");
}

/// The fields of one CSV record (RFC 4180: a quoted field may hold commas and doubled quotes).
fn fields(line: &str) -> Vec<String> {
    let (mut out, mut cur, mut quoted, mut chars) = (Vec::new(), String::new(), false, line.chars().peekable());
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out
}

#[test]
fn lock_names_with_commas_and_quotes_keep_metrics_csv_at_three_fields() {
    let text = "[host]\npcpus = 2\n[[vm]]\nname = \"p\"\nvcpus = 2\nworkload = \"program\"\n\
                [vm.program]\nkernel_locks = [\"x,y\", \"say \\\"hi\\\"\"]\n\
                threads = [[{loop = \"forever\", body = [{syscall = \"20us\", lock = 0}, {syscall = \"20us\", lock = 1}, {compute = \"10us\"}]}]]\n\
                [run]\nduration = \"20ms\"\n";
    let sc = load_scenario(text, "k.toml").unwrap();
    let out = vcpusim::api::run(&sc, &Default::default()).expect("runs");
    let mut names = Vec::new();
    for line in out.metrics_csv.lines() {
        let f = fields(line);
        assert_eq!(f.len(), 3, "row {line:?} has {} fields", f.len());
        names.push(f[1].clone());
    }
    assert!(names.contains(&"spin_wait_count[x,y]".to_string()), "the comma name reads back whole");
    assert!(names.contains(&"spin_wait_count[say \"hi\"]".to_string()), "the quoted name reads back whole");
}
