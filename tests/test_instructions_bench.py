"""benches/instructions.py: the window arithmetic (instructions and live events of the run to the
window's end less those of the run to its start), the ratio against the first size and the 1.5x
mark, parsing cachegrind's and the example's output, and the bad-input messages. No valgrind
here: the counts are made up, except in the last test, which builds the example when cargo and
valgrind are both on the machine."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benches"))
import instructions  # noqa: E402

CACHEGRIND = """==123== Cachegrind, a cache and branch-prediction profiler
==123== Command: scaling cfs 8 100ms
==123==
==123== I   refs:      943,253,456
"""
CACHEGRIND_NEWER = "==9== I refs:        1,000\n"


def counts(table: dict):
    calls = []

    def run(policy, pcpus, duration):
        calls.append((policy, pcpus, duration))
        return table[(policy, pcpus, duration)]

    run.calls = calls
    return run


def test_the_window_is_the_difference_of_two_runs_per_live_event():
    run = counts({
        # (instructions, events, stale): setup costs 1,000,000 in both runs and cancels.
        ("cfs", 8, "1ms"): (1_000_000 + 100 * 1_000, 120, 20),
        ("cfs", 8, "2ms"): (1_000_000 + 300 * 1_000, 330, 30),       # 200 live events more, 1,000 each
        ("cfs", 64, "1ms"): (9_000_000 + 800 * 1_100, 900, 100),
        ("cfs", 64, "2ms"): (9_000_000 + 2_400 * 1_100, 2_700, 300),  # 1,600 live events more, 1,100 each
    })
    report = instructions.measure(["cfs"], [8, 64], ("1ms", "2ms"), run)
    (row,) = report["rows"]
    small, large = row["sizes"]
    assert small["live_events"] == 200 and small["stale_events"] == 10
    assert small["per_event"] == pytest.approx(1_000.0)
    assert large["live_events"] == 1_600 and large["per_event"] == pytest.approx(1_100.0)
    assert row["ratio_last_to_first"] == pytest.approx(1.1) and row["within_target"]
    assert sorted(run.calls) == sorted((("cfs", n, d) for n in (8, 64) for d in ("1ms", "2ms")))


def test_a_policy_over_the_target_is_marked_and_the_table_names_it():
    run = counts({
        ("gang", 8, "1ms"): (0, 0, 0), ("gang", 8, "2ms"): (100_000, 100, 0),
        ("gang", 1024, "1ms"): (0, 0, 0), ("gang", 1024, "2ms"): (1_600_000, 1_000, 0),
    })
    report = instructions.measure(["gang"], [8, 1024], ("1ms", "2ms"), run, jobs=2)
    assert report["rows"][0]["ratio_last_to_first"] == pytest.approx(1.6)
    assert not report["rows"][0]["within_target"]
    text = instructions.report_text(report)
    assert "| gang | 1,000 / 1,600 | 1.60x (over 1.5x) | 100 / 1,000 |" in text


def test_a_window_without_new_live_events_is_refused_with_its_numbers():
    run = counts({("credit", 8, "1ms"): (10, 50, 5), ("credit", 8, "2ms"): (20, 60, 15),
                  ("credit", 16, "1ms"): (10, 50, 5), ("credit", 16, "2ms"): (20, 70, 5)})
    with pytest.raises(SystemExit, match=r"credit at 8 pCPUs: .* no more live events .*\(45 against 45\)"):
        instructions.measure(["credit"], [8, 16], ("1ms", "2ms"), run)


def test_cachegrind_and_example_output_are_parsed_and_a_missing_line_is_named():
    assert instructions.parse_valgrind(CACHEGRIND, "events 60886 stale 9656\n") == (943_253_456, 60_886, 9_656)
    assert instructions.parse_valgrind(CACHEGRIND_NEWER, "events 5 stale 0\n")[0] == 1_000
    with pytest.raises(SystemExit, match="I refs"):
        instructions.parse_valgrind("==1== no summary\n", "events 5 stale 0\n")
    with pytest.raises(SystemExit, match="events N stale S"):
        instructions.parse_valgrind(CACHEGRIND, "")


@pytest.mark.parametrize("argv, message", [
    (["--pcpus", "8"], "two or more positive multiples of 8"),
    (["--pcpus", "8,12"], "two or more positive multiples of 8"),
    (["--pcpus", "8,x"], "expected comma-separated pCPU counts"),
    (["--window", "100ms"], "START,END"),
    (["--window", "100ms,2x"], "START,END"),
    (["--window", "200ms,100ms"], "the end must come after the start"),
    (["--window", "1s,1000ms"], "the end must come after the start"),
    (["--jobs", "0"], "at least 1"),
    (["--policies", " , "], "at least one policy"),
    (["--exe", "/nonexistent/scaling"], "not an executable file"),
])
def test_bad_arguments_end_with_a_message_naming_the_flag(argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        instructions.parse_args(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert message in err and argv[0] in err


def test_defaults_are_issue_15s_table():
    args = instructions.parse_args([])
    assert args.policies == ["cfs", "credit", "gang", "hybrid", "eevdf"]
    assert args.pcpus == [8, 64, 256, 1024] and args.window == ("100ms", "500ms")


def test_a_missing_tool_is_named_before_anything_is_built(monkeypatch):
    monkeypatch.setattr(instructions.shutil, "which", lambda tool: None if tool == "valgrind" else "/usr/bin/" + tool)
    with pytest.raises(SystemExit, match="valgrind was not found"):
        instructions.build_example()


@pytest.mark.skipif(shutil.which("valgrind") is None or shutil.which("cargo") is None, reason="needs valgrind and cargo")
def test_one_small_row_under_valgrind():
    # The debug build `cargo test` has just made (the release build takes minutes): it executes
    # many more instructions per event than the release build, but pops the same events.
    exe = instructions.build_example(release=False)
    report = instructions.measure(["credit"], [8, 16], ("5ms", "10ms"), instructions.valgrind_runner(exe), jobs=2)

    def live(pcpus, duration):
        out = subprocess.run([exe, "credit", str(pcpus), duration], capture_output=True, text=True, check=True).stdout
        events, stale = map(int, out.split()[1::2])
        return events - stale

    for cell in report["rows"][0]["sizes"]:
        n = cell["pcpus"]
        assert cell["live_events"] == live(n, "10ms") - live(n, "5ms") > 0
        assert 500 < cell["per_event"] < 500_000
