"""The `vcpusim` command: run, validate, list, bench, and how it reports mistakes."""

from __future__ import annotations

import csv
import json
import os
from importlib.metadata import entry_points

import pytest
from conftest import SMALL_SCENARIO, VM_COLUMNS, run_cli, write_scenario

from vcpusim import _core


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_run_writes_the_result_files_with_the_contract_columns(cli, small_toml, tmp_path):
    out = tmp_path / "out"
    done = cli("run", small_toml, "--out", out, "--seed", "3")
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in out.iterdir()) == ["metrics.csv", "provenance.json", "summary.json", "vms.csv"]

    rows = read_csv(out / "vms.csv")
    header = list(rows[0].keys())
    assert [c for c in header if c in VM_COLUMNS] == VM_COLUMNS, header
    assert [r["vm"] for r in rows] == ["parallel", "seq-0", "seq-1"]
    assert {r["policy"] for r in rows} == {"cfs"}
    # Every VM got CPU in 200 ms on 4 pCPUs, and no more than its vCPUs could use.
    for row, vcpus in zip(rows, (4, 1, 1)):
        assert 0 < float(row["cpu_time_ms"]) <= 200 * vcpus + 1e-6

    summary = json.loads((out / "summary.json").read_text())
    assert isinstance(summary["events"], int) and summary["events"] > 0
    assert summary["sim_time_ns"] == 200_000_000
    assert read_csv(out / "metrics.csv"), "metrics.csv has rows"

    # The table on stdout shows every VM and the contract columns.
    for name in ("parallel", "seq-0", "seq-1", "cpu_time_ms", "lhp_count"):
        assert name in done.stdout


def test_run_with_trace_writes_chrome_trace_events(cli, small_toml, tmp_path):
    out = tmp_path / "traced"
    done = cli("run", small_toml, "--out", out, "--trace", "--quiet")
    assert done.returncode == 0, done.stderr
    trace = json.loads((out / "trace.json").read_text())
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    assert events and all("ph" in e for e in events)


def test_same_seed_gives_identical_files_and_another_seed_differs(cli, small_toml, tmp_path):
    outs = {}
    for name, seed in (("a", "7"), ("b", "7"), ("c", "8")):
        outs[name] = tmp_path / name
        done = cli("run", small_toml, "--out", outs[name], "--seed", seed, "--quiet")
        assert done.returncode == 0, done.stderr
    for file in ("vms.csv", "metrics.csv", "summary.json"):
        assert (outs["a"] / file).read_bytes() == (outs["b"] / file).read_bytes(), file
    assert any(
        (outs["a"] / f).read_bytes() != (outs["c"] / f).read_bytes() for f in ("vms.csv", "metrics.csv")
    ), "a different seed changed nothing in the results"


def test_validate_accepts_a_good_scenario_and_the_quickstart(cli, small_toml, quickstart):
    done = cli("validate", small_toml)
    assert done.returncode == 0, done.stderr
    assert "ok:" in done.stdout and "4 pCPUs" in done.stdout and "seq-1" in done.stdout
    done = cli("validate", quickstart)
    assert done.returncode == 0, done.stderr


def test_validate_does_not_run(cli, tmp_path):
    # A week of simulated time validates instantly: validate only loads.
    path = write_scenario(tmp_path, SMALL_SCENARIO.replace('duration = "200ms"', 'duration = "7d"'))
    assert cli("validate", path).returncode == 2  # "d" is not a unit
    path = write_scenario(tmp_path, SMALL_SCENARIO.replace('duration = "200ms"', 'duration = "10080min"'))
    done = cli("validate", path)
    assert done.returncode == 0, done.stderr
    assert "604800 s" in done.stdout


def test_list_shows_policies_and_workloads_with_parameters(cli):
    done = cli("list")
    assert done.returncode == 0, done.stderr
    for name in ("cfs", "credit", "barrier", "cpu-bound"):
        assert name in done.stdout

    done = cli("list", "--json")
    assert done.returncode == 0, done.stderr
    catalog = json.loads(done.stdout)
    policies = {p["name"]: p for p in catalog["policies"]}
    workloads = {w["name"]: w for w in catalog["workloads"]}
    assert {"cfs", "credit"} <= policies.keys()
    assert {"barrier", "cpu-bound"} <= workloads.keys()
    for param in workloads["barrier"]["params"]:
        assert {"name", "default", "doc"} <= param.keys()


def test_list_prints_the_host_and_vm_keys_too(cli):
    # The docs say `list` prints every key, [host] and [[vm]] included.
    done = cli("list")
    assert done.returncode == 0, done.stderr
    for title in ("[host]", "[[vm]]"):
        assert title in done.stdout, title
    for key in ("start_skew", "threads_per_core", "cpus_soft", "iterations", "u_factor"):
        assert key in done.stdout, key
    catalog = json.loads(cli("list", "--json").stdout)
    assert [k["name"] for k in catalog["host"]][:2] == ["pcpus", "policy"]
    vm = {k["name"]: k for k in catalog["vm"]}
    assert vm["weight"]["default"] == 256 and vm["name"]["default"] is None


def test_bench_json_reports_speed(cli):
    done = cli("bench", "--json", "--duration", "100ms", "--memory-short", "50ms", "--memory-long", "200ms", "--repeats", "2")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["events"] > 0
    assert report["events_per_s"] > 0
    assert report["sim_seconds_per_wall_second"] > 0
    assert report["sim_time_ns"] <= 100_000_000
    assert report["repeats"] == 2
    assert report["events_per_s"] == pytest.approx(report["events"] / report["wall_time_s"])
    assert report["events"] + report["stale_events"] == report["events_counted"]
    assert report["events_per_s_best"] >= report["events_per_s"]
    assert report["peak_queue_len"] > 0 and report["entry_bytes"] >= 16
    assert 0 < report["events_per_s_vs_bare_heap"]
    assert report["scaling"] is None
    # The report says which build it timed: with the PGO profile or not, as the backend decided.
    info = _core.build_info()
    assert (report["build_profile"], report["build_pgo"], report["build_pgo_note"]) == (info["profile"], info["pgo"], info["pgo_note"])
    # And the machine: the model /proc/cpuinfo names, and a summary that carries it.
    machine = report["machine"]
    if os.path.exists("/proc/cpuinfo"):
        with open("/proc/cpuinfo") as f:
            models = [line.split(":", 1)[1].split() for line in f if line.split(":", 1)[0].strip() == "model name"]
        assert machine["cpu_model"] == (" ".join(models[0]) if models else None)
    assert machine["summary"].startswith(machine["cpu_model"] or "unknown processor")
    # Rust's available_parallelism: the affinity mask, less where a cgroup quota allows fewer.
    assert 1 <= machine["logical_cpus"] <= os.cpu_count()
    memory = report["memory"]
    assert (memory["short_sim_time_ns"], memory["long_sim_time_ns"]) == (50_000_000, 200_000_000)
    assert memory["long_events"] > memory["short_events"]


def test_bench_scaling_table(cli):
    done = cli(
        "bench", "--json", "--duration", "20ms", "--no-memory", "--repeats", "1", "--scaling",
        "--scaling-pcpus", "8,16", "--scaling-policies", "cfs,credit", "--scaling-sim-time", "20ms",
    )
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)["scaling"]
    assert [(r["policy"], r["pcpus"], r["vcpus"]) for r in rows] == [("cfs", 8, 12), ("credit", 8, 12), ("cfs", 16, 24), ("credit", 16, 24)]
    assert all(r["events"] > 0 and r["peak_queue_len"] > 0 and r["ns_per_event"] > 0 for r in rows)
    assert all(r["runs"] == 1 for r in rows)
    # The peak is reset to what is resident when a row begins, so it can be no lower than that.
    for r in rows:
        if r["peak_rss_kib"] is not None and r["rss_at_start_kib"] is not None:
            assert 0 < r["rss_at_start_kib"] <= r["peak_rss_kib"], r
    # The per-event cost is the event loop's: building the host is timed apart.
    for r in rows:
        assert 0 < r["setup_s"] < r["wall_time_s"]
        assert r["ns_per_event"] == pytest.approx((r["wall_time_s"] - r["setup_s"]) * 1e9 / r["events"])


def test_bench_scaling_rows_are_the_fastest_of_the_runs_asked(cli):
    done = cli(
        "bench", "--no-memory", "--duration", "10ms", "--repeats", "1", "--scaling", "--scaling-pcpus", "8",
        "--scaling-policies", "gang", "--scaling-sim-time", "10ms", "--scaling-repeats", "3",
    )
    assert done.returncode == 0, done.stderr
    assert "fastest of 3 run(s)" in done.stdout
    again = cli(
        "bench", "--json", "--no-memory", "--duration", "10ms", "--repeats", "1", "--scaling", "--scaling-pcpus", "8",
        "--scaling-policies", "gang", "--scaling-sim-time", "10ms", "--scaling-repeats", "2",
    )
    assert again.returncode == 0, again.stderr
    assert [r["runs"] for r in json.loads(again.stdout)["scaling"]] == [2]


def test_bench_times_a_scenario_file(cli, tmp_path):
    small = tmp_path / "storm.toml"
    small.write_text(
        '[host]\npcpus = 2\npolicy = "credit"\n\n'
        '[[vm]]\nname = "a"\nvcpus = 2\nworkload = "barrier"\nthreads = 2\n\n'
        '[[vm]]\nname = "b"\nvcpus = 2\nworkload = "cpu-bound"\n\n'
        '[run]\nduration = "200ms"\nseed = 1\n'
    )
    done = cli("bench", "--json", "--no-memory", "--repeats", "1", "--scenario", str(small))
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["scenario"] == str(small)
    assert report["sim_time_ns"] == 200_000_000 and report["events"] > 0
    quick = json.loads(cli("bench", "--json", "--no-memory", "--repeats", "1", "--duration", "200ms").stdout)
    assert quick["scenario"] != report["scenario"] and quick["events"] != report["events"]


def test_bench_scenario_mistakes_are_user_errors(cli, tmp_path):
    assert_user_error(cli("bench", "--no-memory", "--scenario", str(tmp_path / "nope.toml")), "nope.toml", "no such scenario file")
    bad = tmp_path / "bad.toml"
    bad.write_text('[host]\npcpus = 0\n\n[[vm]]\nname = "a"\nvcpus = 1\nworkload = "cpu-bound"\n')
    assert_user_error(cli("bench", "--no-memory", "--scenario", str(bad)), "bad.toml", "pcpus")


def test_bad_bench_scaling_repeats_is_a_usage_error(cli):
    done = cli("bench", "--scaling", "--scaling-repeats", "0", "--no-memory")
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr
    assert "Invalid value for '--scaling-repeats'" in done.stderr, done.stderr


@pytest.mark.parametrize("command", ["run", "sweep"])
def test_an_empty_out_is_refused_instead_of_writing_here(cli, tmp_path, command):
    scenario = write_scenario(tmp_path, SMALL_SCENARIO)
    here = tmp_path / "here"
    here.mkdir()
    done = cli(command, scenario, "--out", "", *(["--grid", "seed=1"] if command == "sweep" else []), cwd=here)
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr
    assert "Invalid value for '--out'" in done.stderr and "got an empty string" in done.stderr, done.stderr
    assert list(here.iterdir()) == [], "nothing written to the current folder"


def test_bad_bench_scaling_pcpus_is_a_user_error(cli):
    assert_user_error(cli("bench", "--scaling", "--scaling-pcpus", "8,12", "--no-memory"), "multiples of 8")


def test_bench_scaling_rows_of_a_seeds_mechanism(cli):
    done = cli(
        "bench", "--json", "--duration", "10ms", "--no-memory", "--repeats", "1", "--scaling", "--scaling-pcpus", "16",
        "--scaling-policies", "credit,credit+microsliced,cfs+uvf", "--scaling-sim-time", "40ms",
    )
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)["scaling"]
    assert [(r["policy"], r["vcpus"]) for r in rows] == [("credit", 24), ("credit+microsliced", 24), ("cfs+uvf", 24)]
    assert all(r["events"] > 0 for r in rows)
    # The micro pool's two pCPUs (one per 8) take no normal work: another run than plain credit.
    assert rows[0]["events"] != rows[1]["events"]


def test_bad_bench_scaling_mechanism_is_a_user_error(cli):
    assert_user_error(
        cli("bench", "--scaling", "--scaling-pcpus", "8", "--scaling-policies", "credit+foo", "--no-memory", "--repeats", "1", "--duration", "10ms"),
        "credit+foo", "credit+microsliced",
    )


def test_bench_without_memory_check(cli):
    done = cli("bench", "--json", "--duration", "50ms", "--no-memory", "--repeats", "1")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["memory"] is None


def assert_user_error(done, *fragments):
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert done.stderr.startswith("error: "), done.stderr
    assert "Traceback" not in done.stderr
    for fragment in fragments:
        assert fragment in done.stderr, (fragment, done.stderr)


@pytest.mark.parametrize("command", ["run", "validate"])
def test_unknown_key_is_a_user_error_naming_the_key(cli, tmp_path, command):
    path = write_scenario(tmp_path, SMALL_SCENARIO.replace("pcpus = 4", "pcpus = 4\nschduler = 1"))
    args = ["--out", tmp_path / "out"] if command == "run" else []
    done = cli(command, path, *args)
    assert_user_error(done, str(path), "host.schduler", "unknown key")
    assert not (tmp_path / "out").exists()


def test_unknown_policy_lists_the_valid_ones(cli, tmp_path):
    path = write_scenario(tmp_path, SMALL_SCENARIO.replace('policy = "cfs"', 'policy = "fifo-of-doom"'))
    done = cli("validate", path)
    assert_user_error(done, "fifo-of-doom", "cfs", "credit")


def test_bad_toml_reports_the_line(cli, tmp_path):
    text = SMALL_SCENARIO.replace('policy = "cfs"', 'policy = "cfs')  # line 3: unterminated string
    path = write_scenario(tmp_path, text)
    done = cli("run", path, "--out", tmp_path / "out")
    assert_user_error(done, f"{path}:3:")


def test_missing_file_is_a_user_error(cli, tmp_path):
    done = cli("validate", tmp_path / "nope.toml")
    assert_user_error(done, "nope.toml")


def test_bad_bench_duration_is_a_user_error(cli):
    assert_user_error(cli("bench", "--duration", "fast"), "duration")


def test_console_script_is_declared():
    scripts = entry_points(group="console_scripts", name="vcpusim")
    assert [s.value for s in scripts] == ["vcpusim.cli:main"]


def test_version_and_help_usage(cli):
    from importlib.metadata import version

    done = cli("--version")
    first, build = done.stdout.strip().splitlines()
    assert done.returncode == 0 and first == f"vcpusim {version('vcpusim')}"
    # The second line says how the extension was built, as the build backend recorded it.
    info = _core.build_info()
    assert build == f"build: {info['profile']}, {info['pgo_note']}"
    done = cli("run", "--help")
    assert done.returncode == 0
    usage = done.stdout.strip().splitlines()[0]
    assert usage == "Usage: vcpusim run [OPTIONS] FILE", usage
    assert "{" not in done.stdout


def test_seed_out_of_range_is_a_usage_error_not_a_traceback(cli, small_toml, tmp_path):
    done = cli("run", small_toml, "--out", tmp_path / "o", "--seed", "18446744073709551616")
    assert done.returncode == 2, done.stderr
    assert "--seed" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "o").exists()


def test_set_overrides_keys_like_the_file(cli, small_toml, tmp_path):
    out = tmp_path / "o"
    done = cli("run", small_toml, "--out", out, "--quiet", "--set", "host.policy=credit", "--set", "vm.parallel.vcpus=2",
               "--set", "run.duration=50ms")
    assert done.returncode == 0, done.stderr
    rows = read_csv(out / "vms.csv")
    assert {r["policy"] for r in rows} == {"credit"}
    assert rows[0]["vcpus"] == "2"
    assert json.loads((out / "summary.json").read_text())["sim_time_ns"] == 50_000_000
    # The same run written in the file gives the same bytes.
    edited = SMALL_SCENARIO.replace('policy = "cfs"', 'policy = "credit"').replace("vcpus = 4", "vcpus = 2").replace("200ms", "50ms")
    path = write_scenario(tmp_path, edited, small_toml.name)  # same name: summary.json names the file
    done = cli("run", path, "--out", tmp_path / "file", "--quiet")
    assert done.returncode == 0, done.stderr
    for name in ("vms.csv", "metrics.csv"):
        assert (out / name).read_bytes() == (tmp_path / "file" / name).read_bytes()


@pytest.mark.parametrize("setting, fragments", [
    ("vm.parallel.vcpus=0", ["vm[0].vcpus: expected an integer of at least 1, got 0", "(after --set vm.parallel.vcpus=0)"]),
    ("host.policy=fifo", ["fifo", "cfs", "credit"]),
    ("host.schduler=1", ["host.schduler", "unknown key"]),
    ("vm.nope.vcpus=1", ["--set vm.nope.vcpus: no [[vm]] entry named 'nope'"]),
    ("novalue", ["--set 'novalue': expected KEY=VALUE"]),
])
def test_bad_set_is_a_user_error_with_the_files_message(cli, small_toml, tmp_path, setting, fragments):
    for command in ("run", "validate"):
        args = ["--out", tmp_path / "out"] if command == "run" else []
        done = cli(command, small_toml, *args, "--set", setting)
        assert_user_error(done, str(small_toml), *fragments) if "novalue" not in setting else assert_user_error(done, *fragments)
        assert not (tmp_path / "out").exists()


def test_dependencies_are_ranges_with_the_tested_lower_bounds():
    """pyproject.toml's lower bounds are the versions tests/lower-bounds.txt pins (the suite is run
    with them, see that file), and no dependency is pinned to one version."""
    import tomllib

    from conftest import REPO

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    pins = dict(line.split("==") for line in (REPO / "tests" / "lower-bounds.txt").read_text().splitlines()
                if line and not line.startswith("#"))
    required = project["dependencies"] + project["optional-dependencies"]["test"]
    for requirement in required:
        assert "==" not in requirement, requirement
        name, lower = requirement.split(">=")[0], requirement.split(">=")[1].split(",")[0]
        assert name in pins, f"{name} has no tested lower bound in tests/lower-bounds.txt"
        pinned = tuple(int(p) for p in pins[name].split("."))
        assert pinned[: len(lower.split("."))] == tuple(int(p) for p in lower.split(".")), (name, lower, pins[name])
    assert "matplotlib" not in " ".join(project["dependencies"]), "plotting is an extra: the package draws nothing"


# Mistakes an audit of 331 bad inputs found reaching users as tracebacks, hangs or silence.


def test_trace_max_events_past_u64_is_a_usage_error_not_a_traceback(cli, small_toml, tmp_path):
    done = cli("run", small_toml, "--out", tmp_path / "o", "--trace-max-events", str(2**64))
    assert done.returncode == 2, done.stderr
    assert "--trace-max-events" in done.stderr and "Traceback" not in done.stderr
    import vcpusim

    with pytest.raises(ValueError, match=r"trace_max_events: expected a positive integer below 2\*\*64, got int 18446744073709551616"):
        vcpusim.run(small_toml, trace_max_events=2**64)


def test_a_sweep_grid_too_large_is_refused_before_any_scenario_is_made(cli, small_toml, tmp_path):
    thousand = "[" + ",".join(str(i) for i in range(1, 1001)) + "]"
    done = cli("sweep", small_toml, "--out", tmp_path / "s", "--grid", f"seed={thousand}",
               "--grid", f"vm.seq.weight={thousand}", "--grid", f"vm.parallel.threads={thousand}")
    assert_user_error(done, "seed (1000) × vm.seq.weight (1000) × vm.parallel.threads (1000) is 1,000,000,000 runs; expected at most 100,000")
    assert not (tmp_path / "s").exists()


def test_an_empty_grid_axis_is_refused(cli, small_toml, tmp_path):
    done = cli("sweep", small_toml, "--out", tmp_path / "s", "--grid", "seed=[]")
    assert_user_error(done, "seed: expected at least one value to sweep, got none")


def test_advise_csv_to_a_folder_is_refused_before_simulating(cli, tmp_path):
    from conftest import REPO

    (tmp_path / "d").mkdir()
    done = cli("advise", REPO / "scenarios" / "examples" / "cmt-host.toml", "--vm", "par", "--csv", tmp_path / "d")
    assert_user_error(done, "is a directory; expected a file to write")
    assert "best for" not in done.stdout, "refused before the candidates ran"


def test_a_result_file_that_is_a_folder_is_named(cli, small_toml, tmp_path):
    (tmp_path / "o" / "vms.csv").mkdir(parents=True)
    done = cli("run", small_toml, "--out", tmp_path / "o")
    assert_user_error(done, f"cannot write results to {tmp_path / 'o' / 'vms.csv'}: Is a directory")


def test_sweep_on_ray_without_ray_says_what_to_install(small_toml, tmp_path):
    # Ray hidden from the CLI's process (`sys.modules["ray"] = None` makes it unimportable and
    # unfindable), so the test holds whether or not this machine has Ray.
    import subprocess
    import sys

    hide_ray = "import sys; sys.modules['ray'] = None; from vcpusim.cli import main; sys.argv[0] = 'vcpusim'; main()"
    done = subprocess.run(
        [sys.executable, "-c", hide_ray, "sweep", str(small_toml), "--out", str(tmp_path / "s"), "--grid", "seed=1", "--ray", "auto"],
        capture_output=True, text=True, timeout=300,
    )
    assert_user_error(done, "--ray needs Ray, which is not installed: pip install 'vcpusim[ray]'")
    assert not (tmp_path / "s").exists(), "refused before anything was written"


def test_bench_memory_runs_in_the_wrong_order_are_refused(cli):
    done = cli("bench", "--memory-short", "200ms", "--memory-long", "100ms", "--repeats", "1")
    assert_user_error(done, 'memory_short = "200ms" is not shorter than memory_long = "100ms"')


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_validate_of_an_endless_file_stops_at_the_size_bound(cli):
    # A device or a wrong file is not read without end: the bound is named, not a MemoryError.
    done = cli("validate", "/dev/zero")
    assert_user_error(done, "/dev/zero: larger than 64 MiB")


def test_an_out_name_too_long_for_the_filesystem_is_a_user_error(cli, small_toml, tmp_path):
    # Looking the folder up already fails (ENAMETOOLONG): said as an error, not a traceback.
    out = tmp_path / ("x" * 300)
    done = cli("run", small_toml, "--out", out, "--quiet")
    assert_user_error(done, "cannot write results to")
    assert "name too long" in done.stderr.lower()


@pytest.mark.skipif(os.geteuid() == 0, reason="root enters any folder")
def test_an_out_under_a_folder_the_user_may_not_enter_is_a_user_error(cli, small_toml, tmp_path):
    closed = tmp_path / "closed"
    closed.mkdir(mode=0o700)
    closed.chmod(0)
    try:
        done = cli("run", small_toml, "--out", closed / "out", "--quiet")
    finally:
        closed.chmod(0o700)
    assert_user_error(done, "cannot write results to")


def test_list_narrows_to_a_section_a_table_or_names_containing_text(cli):
    everything = cli("list").stdout
    policies = cli("list", "policies")
    assert policies.returncode == 0 and "credit" in policies.stdout and "Workloads" not in policies.stdout
    table = cli("list", "host.ple")
    assert "[host.ple]" in table.stdout and "window_cycles" in table.stdout and "Policies" not in table.stdout
    assert "[host.ple]" in cli("list", "[host.ple]").stdout
    parsec = cli("list", "parsec").stdout
    assert "parsec.streamcluster" in parsec and "tascell.fib" not in parsec and "Policies" not in parsec
    assert len(parsec) < len(everything) / 3
    # A key name matches too (cpu_ghz is a [host.ple] key).
    assert "[host.ple]" in cli("list", "cpu_ghz").stdout
    missing = cli("list", "zzz")
    assert missing.returncode == 2 and "no policy, workload or key name contains 'zzz'" in missing.stderr
    assert "host.ple" in missing.stderr and "Traceback" not in missing.stderr


def test_run_without_out_prints_the_table_and_writes_nothing(tmp_path):
    path = write_scenario(tmp_path, SMALL_SCENARIO)
    before = set(tmp_path.iterdir())
    done = run_cli("run", path, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "cpu_time_ms" in done.stdout and "wrote" not in done.stdout
    assert set(tmp_path.iterdir()) == before, "nothing written"
    # Even with --quiet the table is all a run without --out gives, so it is printed.
    assert "cpu_time_ms" in run_cli("run", path, "--quiet", cwd=tmp_path).stdout
    # A trace has nowhere to go without --out.
    traced = run_cli("run", path, "--trace", cwd=tmp_path)
    assert traced.returncode == 2 and "give --out DIR with --trace" in traced.stderr
    assert set(tmp_path.iterdir()) == before


def test_a_quiet_sweep_prints_nothing_but_writes_its_table(cli, small_toml, tmp_path):
    done = cli("sweep", small_toml, "--out", tmp_path / "s", "--grid", "seed=[1,2]", "-q", "-j", "1")
    assert done.returncode == 0, done.stderr
    assert (done.stdout, done.stderr) == ("", ""), (done.stdout, done.stderr)
    assert (tmp_path / "s" / "sweep.csv").is_file()
    loud = cli("sweep", small_toml, "--out", tmp_path / "s", "--grid", "seed=[1,2]", "-j", "1")
    assert "2 saved earlier" in loud.stderr and "wrote" in loud.stdout
