"""Intervals and comparisons a user can trust (vcpusim.aggregate, vcpusim.compare, `vcpusim
compare`): the 95% Student-t interval over seeds and the test of "beyond noise" are the same
functions the experiment ledgers judge claims with (vcpusim.stats, experiments/protocol.py)."""

import math
import sys
from pathlib import Path

import pandas as pd
import pytest
from scipy import stats as scipy_stats

import vcpusim
from vcpusim import stats

# Two 2-vCPU VMs sharing 2 pCPUs under credit for 200 ms: b's weight is the grid's.
TEXT = """
[host]
pcpus = 2
policy = "credit"
[[vm]]
name = "a"
vcpus = 2
workload = "mutex"
[[vm]]
name = "b"
vcpus = 2
weight = 256
workload = "cpu-bound"
[run]
duration = "200ms"
"""


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    """A sweep over b's weight (256, 1024) and five seeds."""
    out = tmp_path_factory.mktemp("sweep")
    sc = vcpusim.Scenario(TEXT, "two.toml")
    t = vcpusim.sweep(sc, grid={"vm.b.weight": [256, 1024], "seed": range(1, 6)}, out=out, processes=1)
    return t, out


def test_aggregate_gives_the_student_t_interval_of_the_mean(table):
    t, _ = table
    agg = vcpusim.aggregate(t, ["vm.b.weight", "vm"], ["cpu_time_ms"])
    assert list(agg.columns) == ["vm.b.weight", "vm", "cpu_time_ms_mean", "cpu_time_ms_std", "cpu_time_ms_min",
                                 "cpu_time_ms_max", "cpu_time_ms_lo", "cpu_time_ms_hi", "n"]
    for row in agg.itertuples():
        xs = t[(t["vm.b.weight"] == row[1]) & (t["vm"] == row[2])]["cpu_time_ms"]
        half = scipy_stats.t.ppf(0.975, len(xs) - 1) * xs.std() / math.sqrt(len(xs))
        assert row.cpu_time_ms_lo == pytest.approx(xs.mean() - half, rel=1e-12, abs=1e-9)
        assert row.cpu_time_ms_hi == pytest.approx(xs.mean() + half, rel=1e-12, abs=1e-9)
    # One row a group: no interval.
    one = vcpusim.aggregate(t[t["seed"] == 1], ["vm.b.weight", "vm"], ["cpu_time_ms"])
    assert one["cpu_time_ms_lo"].isna().all() and (one["n"] == 1).all()


def test_compare_finds_the_weight_change_and_nothing_in_a_run_against_itself(table):
    t, _ = table
    light, heavy = t[t["vm.b.weight"] == 256], t[t["vm.b.weight"] == 1024]
    same = vcpusim.compare(light, light, metrics=["cpu_time_ms", "steal_time_ms"])
    assert not same["differs"].any() and set(same["test"]) == {"paired"}
    assert (same["diff"] == 0).all()
    out = vcpusim.compare(light, heavy, metrics=["cpu_time_ms"])
    row = out.set_index("vm").loc["b"]
    assert row["test"] == "paired" and row["differs"] and row["diff"] > 0, row
    # b's per-seed gains, as the experiment protocol reads them (one function: vcpusim.stats).
    per_seed = heavy[heavy.vm == "b"].set_index("seed")["cpu_time_ms"] - light[light.vm == "b"].set_index("seed")["cpu_time_ms"]
    est = stats.Estimate.of(per_seed)
    assert (row["diff_lo"], row["diff_hi"]) == pytest.approx((est.lo, est.hi))
    assert row["change"] == pytest.approx(row["diff"] / light[light.vm == "b"]["cpu_time_ms"].mean())


def test_compare_without_shared_seeds_uses_welch_and_one_run_a_side_has_no_interval(table):
    t, _ = table
    light = t[(t["vm.b.weight"] == 256) & (t["seed"] <= 3)]
    heavy = t[(t["vm.b.weight"] == 1024) & (t["seed"] >= 3)]
    out = vcpusim.compare(light, heavy, metrics=["cpu_time_ms"])
    assert set(out["test"]) == {"welch"}
    b = out.set_index("vm").loc["b"]
    w = stats.welch(list(heavy[heavy.vm == "b"]["cpu_time_ms"]), list(light[light.vm == "b"]["cpu_time_ms"]))
    assert (b["diff_lo"], b["diff_hi"]) == pytest.approx((w.lo, w.hi))
    single = vcpusim.compare(t[(t["vm.b.weight"] == 256) & (t.seed == 1)], t[(t["vm.b.weight"] == 1024) & (t.seed == 1)])
    assert set(single["test"]) == {"none"} and not single["differs"].any()


def test_compare_refuses_a_table_of_several_points(table):
    t, _ = table
    with pytest.raises(ValueError, match="more than one run with seed 1: .* select one first"):
        vcpusim.compare(t, t)
    with pytest.raises(TypeError, match="compare: a: expected a table of runs"):
        vcpusim.compare(5, t)
    with pytest.raises(KeyError, match="no column 'nope' in a"):
        one = t[(t.seed == 1) & (t["vm.b.weight"] == 256)]
        vcpusim.compare(one, one, metrics=["nope"])


def test_the_ledgers_protocol_uses_the_same_estimates_and_test():
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))
    import protocol

    assert protocol.Estimate is stats.Estimate and protocol.welch is stats.welch
    assert protocol.beyond_noise is stats.beyond_noise and protocol.change is stats.change
    assert protocol.CONFIDENCE == stats.CONFIDENCE == 0.95


def test_the_compare_command_reads_sweep_folders_and_says_what_differs(table, cli, tmp_path):
    _, out = table
    csv_out = tmp_path / "cmp.csv"
    done = cli("compare", out, out, "--where-a", "vm.b.weight=256", "--where-b", "vm.b.weight=1024",
               "--metric", "cpu_time_ms", "--csv", csv_out)
    assert done.returncode == 0, done.stderr
    assert "differ beyond noise" in done.stdout and "paired" in done.stdout
    written = pd.read_csv(csv_out)
    assert set(written["vm"]) == {"a", "b"} and written.set_index("vm").loc["b", "differs"]
    bad = cli("compare", out, out, "--where", "nope=1")
    assert bad.returncode != 0 and "has no column 'nope'" in bad.stderr and "Traceback" not in bad.stderr
    several = cli("compare", out, out)
    assert several.returncode != 0 and "select one first" in several.stderr and "Traceback" not in several.stderr
