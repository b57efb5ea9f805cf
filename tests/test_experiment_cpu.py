"""benches/experiment_cpu.py: the alternation of builds (each case under every build, the order
rotating from case to case and across rounds), the refusal to compare different outputs, the
per-round speed-ups and the bad-input messages. No timing: the CPU times here are made up."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benches"))
import experiment_cpu  # noqa: E402

BUILDS = {"old": "/bin/old", "new": "/bin/new"}
CASES = [("asplos13", Path("asplos13-fig07a-0.toml")), ("hybrid", Path("hybrid-fig05-0.toml")),
         ("asplos13", Path("asplos13-fig09-1.toml"))]


def fake_runs(cpu: dict, outputs: dict | None = None):
    """A stand-in for run_one: the CPU time `cpu[(binary, case)]`, the output hash `outputs[...]`
    (one for all by default); the calls in order in `.calls`."""
    calls = []

    def run(binary, path):
        calls.append((binary, path.stem))
        return cpu[(binary, path.stem)], (outputs or {}).get((binary, path.stem), "same")

    run.calls = calls
    return run


def test_every_case_runs_under_every_build_in_a_rotating_order_across_rounds():
    cpu = {(b, p.stem): 1.0 for b in BUILDS.values() for _, p in CASES}
    run = fake_runs(cpu)
    experiment_cpu.measure(BUILDS, CASES, rounds=2, run=run)
    assert len(run.calls) == 2 * len(CASES) * len(BUILDS)
    # Pairs of calls per case: old first, then new first, and so on through the second round
    # (three cases: the second round starts where the first left off).
    firsts = [run.calls[i][0] for i in range(0, len(run.calls), 2)]
    assert firsts == ["/bin/old", "/bin/new", "/bin/old", "/bin/new", "/bin/old", "/bin/new"]
    assert [c[1] for c in run.calls[::2]] == [p.stem for _, p in CASES] * 2


def test_totals_and_the_round_by_round_speed_up():
    # Round 1: each case's first run takes 2.0 s, its second 1.0 s; round 2: 1.0 s each.
    times = iter([2.0, 1.0, 2.0, 1.0, 2.0, 1.0,   # round 1: old, new per case (order rotates)
                  1.0, 1.0, 1.0, 1.0, 1.0, 1.0])  # round 2
    calls = []

    def run(binary, path):
        calls.append(binary)
        return next(times), "same"

    report = experiment_cpu.measure(BUILDS, CASES, rounds=2, run=run)
    per_round = report["rounds"]
    # Round 1 gives 2.0 to whichever build ran first in each case: old, new, old.
    assert per_round[0]["old"]["all"] == pytest.approx(5.0) and per_round[0]["new"]["all"] == pytest.approx(4.0)
    assert per_round[1]["old"]["all"] == pytest.approx(3.0) and per_round[1]["new"]["all"] == pytest.approx(3.0)
    assert report["cpu_s"]["old"]["all"] == pytest.approx(8.0)
    assert report["cpu_s"]["old"]["asplos13"] + report["cpu_s"]["old"]["hybrid"] == pytest.approx(8.0)
    assert report["speedup"]["new"]["per_round"] == pytest.approx([1.25, 1.0])
    assert report["speedup"]["new"]["median"] == pytest.approx(1.125)
    text = experiment_cpu.report_text(report)
    assert "2 round(s)" in text and "median 1.12x, range 1.00-1.25x" in text


def test_different_outputs_are_not_compared():
    cpu = {(b, p.stem): 1.0 for b in BUILDS.values() for _, p in CASES}
    run = fake_runs(cpu, {("/bin/new", "hybrid-fig05-0"): "other"})
    with pytest.raises(SystemExit, match="hybrid-fig05-0: the builds' outputs differ"):
        experiment_cpu.measure(BUILDS, CASES, run=run)


@pytest.mark.parametrize("items, message", [
    (["main"], "expected NAME=PATH"),
    (["=/bin/sh"], "expected NAME=PATH"),
    (["a=/bin/sh", "a=/bin/sh"], "the name 'a' is given twice"),
    (["a=/nonexistent/run_file"], "/nonexistent/run_file is not an executable file"),
])
def test_bad_builds_are_refused_by_name(items, message):
    with pytest.raises(SystemExit, match=message):
        experiment_cpu.parse_builds(items)


def test_the_command_says_what_is_wrong_without_a_traceback():
    script = str(ROOT / "benches" / "experiment_cpu.py")
    done = subprocess.run([sys.executable, script, "a=/nonexistent/run_file"], capture_output=True, text=True)
    assert done.returncode != 0 and "is not an executable file" in done.stderr and "Traceback" not in done.stderr
    done = subprocess.run([sys.executable, script, f"a={sys.executable}", "--rounds", "0"], capture_output=True, text=True)
    assert done.returncode == 2 and "--rounds: expected at least 1, got 0" in done.stderr and "Traceback" not in done.stderr
