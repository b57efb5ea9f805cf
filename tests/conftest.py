"""Shared fixtures: a small fast scenario, the quickstart file, and a CLI runner.

The tests import the installed `vcpusim` package (`pip install ".[test]"`), the way users get it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "build_backend"))
import vcpusim_build  # noqa: E402  (the build backend's decisions, for the PGO tests)

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


# The build backend and scripts/pgo_profile.py (tests/test_build_backend.py, test_pgo_profile.py).

COMMIT = "59807616e1fa2540724bfbac14d7976d7e4a3860"


def rustc_vv(commit: str = COMMIT, release: str = "1.95.0", llvm: str = "22.1.2") -> str:
    return (f"rustc {release} ({commit[:9]} 2026-04-14)\nbinary: rustc\ncommit-hash: {commit}\n"
            f"commit-date: 2026-04-14\nhost: x86_64-unknown-linux-gnu\nrelease: {release}\nLLVM version: {llvm}\n")


@pytest.fixture
def pgo_project(tmp_path):
    """A checkout in miniature: Cargo files, one crate, and a profile made by rustc COMMIT on its
    sources."""
    (tmp_path / "Cargo.toml").write_text("[workspace]\n")
    (tmp_path / "Cargo.lock").write_text("version = 4\n")
    src = tmp_path / "crates" / "engine" / "src"
    src.mkdir(parents=True)
    (src.parent / "Cargo.toml").write_text("[package]\nname = 'engine'\n")
    (src / "lib.rs").write_text("pub fn run() {}\n")
    (src.parent / "tests").mkdir()
    (src.parent / "tests" / "t.rs").write_text("#[test] fn t() {}\n")
    (tmp_path / "pgo").mkdir()
    (tmp_path / vcpusim_build.PROFILE).write_bytes(b"\xfflprofi\x81profile")
    write_meta(tmp_path)
    return tmp_path


def write_meta(root: Path, **changes) -> None:
    meta = {"rustc_release": "1.95.0", "rustc_commit": COMMIT, "llvm": "22.1.2",
            "sources": vcpusim_build.source_digest(root), "training": ["scenarios/quickstart.toml"], **changes}
    (root / vcpusim_build.META).write_text(json.dumps(meta))
