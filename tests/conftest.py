"""Shared fixtures: a small fast scenario, the quickstart file, and a CLI runner.

The tests import the installed `vcpusim` package (`pip install ".[test]"`), the way users get it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
QUICKSTART = REPO / "scenarios" / "quickstart.toml"

#: The quickstart's shape (a barrier-synchronized SMP VM beside single-vCPU CPU-bound VMs),
#: shrunk so one run takes a fraction of a second.
SMALL_SCENARIO = """\
[host]
pcpus = 4
policy = "cfs"

[[vm]]
name = "parallel"
vcpus = 4
workload = "barrier"
threads = 4

[[vm]]
name = "seq"
count = 2
vcpus = 1
workload = "cpu-bound"

[run]
duration = "200ms"
seed = 1
"""

#: Columns of vms.csv promised to users (README, `vcpusim run` table).
VM_COLUMNS = ["vm", "policy", "cpu_time_ms", "spin_time_ms", "tlb_wait_ms", "lhp_count", "progress", "completion_time_ms"]


@pytest.fixture
def small_toml(tmp_path: Path) -> Path:
    path = tmp_path / "small.toml"
    path.write_text(SMALL_SCENARIO)
    return path


@pytest.fixture
def quickstart() -> Path:
    return QUICKSTART


def write_scenario(directory: Path, text: str, name: str = "scenario.toml") -> Path:
    path = directory / name
    path.write_text(text)
    return path


def run_cli(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run `python -m vcpusim ARGS` the way a user runs `vcpusim ARGS`."""
    return subprocess.run(
        [sys.executable, "-m", "vcpusim", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
    )


@pytest.fixture
def cli():
    return run_cli


@pytest.fixture(autouse=True)
def _no_runs_from_other_tests():
    """Each test starts with no runs remembered from another test's sweeps (`vcpusim.runs`
    takes a run another sweep of this process saved): tests stay independent of their order."""
    import vcpusim.runs

    vcpusim.runs._SAVED_RUNS.clear()
    yield
    vcpusim.runs._SAVED_RUNS.clear()
