"""Sweeps as grids: vcpusim.sweep / `vcpusim sweep`, the [sweep] table, the tidy table, resuming
after SIGKILL, and Ray."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest
import vcpusim
from conftest import SMALL_SCENARIO

GRID_TABLE = """
[sweep]
"host.policy" = ["cfs", "credit"]
vm.parallel.threads = [2, 4]
seed = [1, 2]
"""


@pytest.fixture
def base():
    return vcpusim.Scenario(SMALL_SCENARIO, "small.toml").with_duration("50ms")


def test_a_grid_is_the_product_of_its_values_one_row_per_run_and_vm(base):
    import numpy as np

    grid = {"host.policy": ["cfs", "credit"], "vm.parallel.threads": np.array([2, 4]), "seed": range(1, 3)}
    table = vcpusim.sweep(base, grid, processes=1, progress=False)
    vms = base.info["vms"]
    assert len(table) == 2 * 2 * 2 * len(vms)
    assert list(table.columns[:3]) == ["host.policy", "vm.parallel.threads", "seed"]
    # The first key varies slowest; each run's rows are its VMs, in vms.csv's order.
    runs = table.drop_duplicates(["host.policy", "vm.parallel.threads", "seed"])
    assert runs[["host.policy", "vm.parallel.threads", "seed"]].values.tolist() == [
        [p, t, s] for p in ("cfs", "credit") for t in (2, 4) for s in (1, 2)]
    assert table["vm"].tolist()[: len(vms)] == vms
    # Each run's rows are exactly what a plain run of that point gives.
    point = base.override({"host.policy": "credit", "vm.parallel.threads": 2, "run.seed": 2})
    alone = vcpusim.run(point)
    rows = table[(table["host.policy"] == "credit") & (table["vm.parallel.threads"] == 2) & (table["seed"] == 2)]
    for column in ("cpu_time_ms", "spin_time_ms", "progress", "policy", "threads"):
        assert rows[column].tolist() == alone.vms[column].tolist(), column
    assert (rows["policy"] == "credit").all() and (rows[rows["vm"] == "parallel"]["threads"] == 2).all()
    spin = alone.metrics.set_index(["vm", "metric"])["value"]
    assert rows["spin_wait_count"].tolist() == [spin[(vm, "spin_wait_count")] for vm in vms]
    assert (rows["sim_s"] == 0.05).all()


def test_the_sweep_table_of_a_scenario_is_its_grid_and_a_run_ignores_it(base, tmp_path):
    swept = vcpusim.Scenario(base.text + GRID_TABLE, "grid.toml")
    assert vcpusim.grids.grid_of(swept) == {"host.policy": ["cfs", "credit"], "vm.parallel.threads": [2, 4], "seed": [1, 2]}
    assert vcpusim.run(swept).files() == vcpusim.run(vcpusim.Scenario(base.text, "grid.toml")).files()
    # Each point leaves the [sweep] table out: its run key does not depend on the rest of the grid.
    point = vcpusim.grids.point_scenario(swept, {"seed": 1})
    assert "sweep" not in point.to_dict()
    table = vcpusim.sweep(swept, processes=2, progress=False, out=tmp_path / "out")
    assert len(table) == 8 * len(base.info["vms"])
    # A grid given in Python replaces the table's.
    small = vcpusim.sweep(swept, {"seed": [3]}, processes=1, progress=False)
    assert small["seed"].unique().tolist() == [3]


def test_csv_and_parquet_hold_the_table(base, tmp_path):
    pytest.importorskip("pyarrow")
    out = tmp_path / "out"
    table = vcpusim.sweep(base, {"host.policy": ["cfs", "gang"], "seed": [1, 2]}, processes=2, progress=False, out=out)
    from_parquet = pd.read_parquet(out / "sweep.parquet")
    pd.testing.assert_frame_equal(from_parquet, table, check_dtype=False)
    from_csv = pd.read_csv(out / "sweep.csv")
    assert from_csv.shape == table.shape and list(from_csv.columns) == list(table.columns)
    assert from_csv["cpu_time_ms"].tolist() == table["cpu_time_ms"].tolist()
    # The run column names each run's saved folder.
    for key in table["run"].unique():
        assert vcpusim.Result.read(out / "runs" / key).summary["sim_time_ns"] == 50_000_000


def test_bad_grids_are_refused_before_anything_runs(base, tmp_path, monkeypatch):
    ran = []
    monkeypatch.setattr(vcpusim.runs, "_run_in_worker", lambda *a: ran.append(a))
    with pytest.raises(vcpusim.ScenarioError, match=r"host\.policy: unknown policy \"fifo\".*after sweep point run.seed=1, host\.policy='fifo'"):
        vcpusim.sweep(base, {"seed": [1, 2], "host.policy": ["cfs", "fifo"]}, processes=1, progress=False)
    with pytest.raises(vcpusim.ScenarioError, match=r"no \[\[vm\]\] entry named 'nope'"):
        vcpusim.sweep(base, {"vm.nope.vcpus": [1]}, processes=1, progress=False)
    with pytest.raises(TypeError, match=r"sweep: grid\['seed'\]: expected a list of values to sweep, got int 3"):
        vcpusim.sweep(base, {"seed": 3})
    with pytest.raises(ValueError, match=r"grid\['seed'\]: expected at least one value"):
        vcpusim.sweep(base, {"seed": []})
    with pytest.raises(vcpusim.ScenarioError, match="no grid to sweep"):
        vcpusim.sweep(base)
    with pytest.raises(vcpusim.ScenarioError, match=r"grid.toml: sweep.seed: expected the array of values to sweep"):
        vcpusim.Scenario(base.text + "\n[sweep]\nseed = 3\n", "grid.toml")
    assert not ran


def _sweep_file(tmp_path, extra_grid=""):
    path = tmp_path / "grid.toml"
    # Long enough per run (about 0.2 s of wall time) for a kill to land between runs.
    path.write_text(SMALL_SCENARIO.replace('duration = "200ms"', 'duration = "1s"') + GRID_TABLE + extra_grid)
    return path


def _cli(*args, **kwargs):
    return subprocess.run([sys.executable, "-m", "vcpusim", *args], capture_output=True, text=True, timeout=600, **kwargs)


def test_cli_sweep_writes_the_table_and_reports_errors(tmp_path):
    path = _sweep_file(tmp_path)
    done = _cli("sweep", str(path), "--out", str(tmp_path / "o"), "--grid", "seed=5", "-j", "2")
    assert done.returncode == 0, done.stderr
    assert "4 runs over host.policy (2), seed (1), vm.parallel.threads (2); 0 saved earlier" in done.stderr
    table = pd.read_csv(tmp_path / "o" / "sweep.csv")
    assert table["seed"].unique().tolist() == [5] and len(table) == 4 * 3
    # --set changes the base, and the same key can be swept with a TOML array.
    done = _cli("sweep", str(path), "--out", str(tmp_path / "p"), "--grid", "seed=[7]", "--grid", "host.policy=gang",
                "--set", "run.duration=50ms", "-q")
    assert done.returncode == 0, done.stderr
    table = pd.read_csv(tmp_path / "p" / "sweep.csv")
    assert set(table["policy"]) == {"gang"} and set(table["sim_s"]) == {0.05}
    bad = _cli("sweep", str(path), "--out", str(tmp_path / "q"), "--grid", "host.policy=cfs,fifo")
    assert bad.returncode == 2 and bad.stderr.startswith("error: ") and "unknown policy \"fifo\"" in bad.stderr, bad.stderr
    none = tmp_path / "plain.toml"
    none.write_text(SMALL_SCENARIO)
    bad = _cli("sweep", str(none), "--out", str(tmp_path / "q"))
    assert bad.returncode == 2 and "no [sweep] table and no --grid" in bad.stderr


def test_a_sweep_killed_with_sigkill_resumes_with_only_the_unfinished_runs(tmp_path):
    path = _sweep_file(tmp_path)
    whole = tmp_path / "whole"
    done = _cli("sweep", str(path), "--out", str(whole), "-j", "1", "-q")
    assert done.returncode == 0, done.stderr

    out = tmp_path / "killed"
    runs = out / "runs"
    proc = subprocess.Popen([sys.executable, "-m", "vcpusim", "sweep", str(path), "--out", str(out), "-j", "1", "-q"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        if runs.is_dir() and sum(1 for p in runs.iterdir() if p.is_dir() and not p.name.startswith(".")) >= 2:
            break
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    finished = {p.name: p.stat().st_mtime_ns for p in runs.iterdir() if p.is_dir() and not p.name.startswith(".")}
    assert 2 <= len(finished) < 8, f"the kill landed mid-sweep ({len(finished)} of 8 saved)"
    assert not (out / "sweep.csv").exists()

    again = _cli("sweep", str(path), "--out", str(out), "-j", "2")
    assert again.returncode == 0, again.stderr
    assert f"8 runs over host.policy (2), seed (2), vm.parallel.threads (2); {len(finished)} saved earlier" in again.stderr
    # The saved runs were reused as they were (not written again); the rest were computed.
    for name, mtime in finished.items():
        assert (runs / name).stat().st_mtime_ns == mtime, name
    assert len([p for p in runs.iterdir() if p.is_dir() and not p.name.startswith(".")]) == 8
    for name in ("sweep.csv", "sweep.parquet"):
        if name == "sweep.parquet" and not (whole / name).exists():
            continue  # no pyarrow
        assert (out / name).read_bytes() == (whole / name).read_bytes(), name


def test_ray_runs_the_same_sweep(base, tmp_path):
    ray = pytest.importorskip("ray")
    grid = {"host.policy": ["cfs", "credit"], "seed": [1, 2]}
    local = vcpusim.sweep(base, grid, processes=1, progress=False)
    try:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        remote = vcpusim.sweep(base, grid, ray="auto", progress=False, out=tmp_path / "ray")
    finally:
        ray.shutdown()
    pd.testing.assert_frame_equal(remote, local)
    again = vcpusim.sweep(base, grid, processes=1, progress=False, out=tmp_path / "ray")
    pd.testing.assert_frame_equal(again, remote)


class _Ref:
    """An object reference: hashable, holds the result."""

    def __init__(self, value):
        self.value = value


class _FakeRay:
    """Stands in for the ray module (when Ray is not installed, as in CI): remote calls run at
    once in this process; ``wait`` hands results back one at a time, last submitted first."""

    def __init__(self):
        self.initialized, self.calls = False, []

    def is_initialized(self):
        return self.initialized

    def init(self, address=None, **kwargs):
        self.initialized, self.address = True, address

    def remote(self, function):
        fake = self

        class Remote:
            @staticmethod
            def remote(*args):
                fake.calls.append(args[1])
                return _Ref(function(*args))

        return Remote

    def wait(self, refs, num_returns=1):
        return [refs[-1]], refs[:-1]

    def get(self, ref):
        return ref.value


def test_the_ray_code_path_with_a_stand_in_for_ray(base, tmp_path, monkeypatch):
    fake = _FakeRay()
    monkeypatch.setitem(sys.modules, "ray", fake)
    grid = {"host.policy": ["cfs", "gang"], "seed": [1, 2]}
    remote = vcpusim.sweep(base, grid, ray="ray://head:10001", progress=False, out=tmp_path / "r")
    assert fake.address == "ray://head:10001" and len(fake.calls) == 4
    pd.testing.assert_frame_equal(remote, vcpusim.sweep(base, grid, processes=1, progress=False))
    # Resumed from the saved runs: nothing goes to the cluster again.
    vcpusim.sweep(base, grid, ray="ray://head:10001", progress=False, out=tmp_path / "r")
    assert len(fake.calls) == 4
    with pytest.raises(TypeError, match="sweep: ray: expected a Ray address"):
        vcpusim.sweep(base, grid, ray=True)
