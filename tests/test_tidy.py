"""grids.tidy (the sweep table) against its reference implementation, grids._tidy_reference
(a pandas parse, pivot and merge per run): the same DataFrame (columns and their order, dtypes,
values, index) and the same CSV bytes, on real results of varied runs and on edited copies of them
that reach pandas' per-run type inference (a run whose metrics are all integers, metrics missing
for a VM, labels that shadow columns...). Inputs the fast path does not cover must still give the
reference's table (tidy falls back to it)."""

from __future__ import annotations

import re

import pandas as pd
import pytest
import vcpusim
from conftest import SMALL_SCENARIO
from vcpusim import grids

#: Overrides of the small scenario: several policies (different metric sets: lhp_count[...] classes
#: in some runs only), a VM with an iteration target (iterations and completion_time_ms set), an
#: idle VM, a mutex workload.
VARIANTS = {
    "cfs": {},
    "credit": {"host.policy": "credit"},
    "gang": {"host.policy": "gang"},
    "eevdf": {"host.policy": "eevdf"},
    "hybrid": {"host.policy": "hybrid"},
    "target": {"vm.parallel.iterations": 5},
    "idle": {"vm.seq.workload": "idle"},
    "mutex": {"vm.parallel.workload": "mutex", "run.seed": 2},
}


@pytest.fixture(scope="module")
def results() -> dict[str, vcpusim.Result]:
    base = vcpusim.Scenario(SMALL_SCENARIO, "small.toml").with_duration("30ms")
    return {name: vcpusim.run(base.override(o) if o else base) for name, o in VARIANTS.items()}


def fresh(result: vcpusim.Result, metrics_csv: str | None = None, vms_csv: str | None = None) -> vcpusim.Result:
    """A copy without cached DataFrames (optionally with edited texts)."""
    return vcpusim.Result(vms_csv if vms_csv is not None else result.vms_csv,
                          metrics_csv if metrics_csv is not None else result.metrics_csv, result.summary_json)


def edit_metrics(result: vcpusim.Result, keep) -> vcpusim.Result:
    head, *lines = result.metrics_csv.splitlines()
    return fresh(result, "\n".join([head, *[ln for ln in lines if keep(ln)]]) + "\n")


def all_int(result):
    """Only the metrics written as integers that every VM has (per-class ones such as
    lhp_count[futex-queue] are for some VMs only): that run's metric columns are int64."""
    return edit_metrics(result, lambda ln: ln.rsplit(",", 1)[1].lstrip("-").isdigit() and "[" not in ln)


def without_vm(result, vm="seq-0"):
    """No metrics for one VM: its row gets NaN, and the run's metric columns float64."""
    return edit_metrics(result, lambda ln: not ln.startswith(vm + ","))


def assert_same(labelled, keys=None, labels_first=True, fast=True):
    """tidy == the reference (frame and CSV bytes); ``fast``: the fast path covers the input."""
    if fast:
        grids._tidy_fast([(labels, fresh(r)) for labels, r in labelled], keys, labels_first)  # must not raise
    else:
        with pytest.raises(grids._NotCovered):  # declared outside what it covers, not a failure
            grids._tidy_fast([(labels, fresh(r)) for labels, r in labelled], keys, labels_first)
    expected = grids._tidy_reference([(labels, fresh(r)) for labels, r in labelled], keys, labels_first)
    got = grids.tidy([(labels, fresh(r)) for labels, r in labelled], keys, labels_first)
    pd.testing.assert_frame_equal(got, expected, check_dtype=True, check_exact=True, check_column_type=True,
                                  check_index_type=True)
    assert got.to_csv() == expected.to_csv()
    assert got.to_csv(index=False) == expected.to_csv(index=False)
    return got


def keys_for(labelled):
    return [f"{i:016x}" for i in range(len(labelled))]


@pytest.mark.parametrize("labels_first", [True, False])
@pytest.mark.parametrize("with_keys", [True, False])
def test_every_variant_together(results, labels_first, with_keys):
    labelled = [({"variant": name, "seed": i, "weight": 100 + i, "scale": 0.5 * i}, r)
                for i, (name, r) in enumerate(results.items())]
    got = assert_same(labelled, keys_for(labelled) if with_keys else None, labels_first)
    # What the comparison is about: columns that only some runs have, metrics that repeat a
    # vms.csv column (one column each, no merge suffixes), Int64.
    assert got["iterations"].dtype == "Int64" and got["iterations"].notna().any()
    assert "sched_latency_p50_us" in got.columns and "sched_latency_p99_us" in got.columns
    assert not [c for c in got.columns if c.endswith(("_x", "_y"))], list(got.columns)
    # The groupby a user writes works on the one column.
    assert got.groupby("variant")["sched_latency_p99_us"].mean().notna().all()
    lhp = [c for c in got.columns if c.startswith("lhp_count[")]
    assert lhp and got[lhp].isna().any().any()


def test_each_variant_alone_and_repeated(results):
    for name, r in results.items():
        assert_same([({"variant": name}, r)])
        assert_same([({"variant": name, "seed": s}, r) for s in (1, 2, 3)], keys_for([0, 1, 2]))


def test_a_run_whose_metrics_are_all_integers(results):
    r = results["cfs"]
    # Alone: int64 metric columns; beside a run with float metrics: float64.
    got = assert_same([({"k": 1}, all_int(r))])
    counts = ["spin_wait_count", "runnable_wait_count", "sched_latency_count"]  # metrics, not vms.csv columns
    assert counts and all(got[c].dtype == "int64" for c in counts)
    got = assert_same([({"k": 1}, all_int(r)), ({"k": 2}, r)])
    assert all(got[c].dtype == "float64" for c in counts)
    # Two all-integer runs with different metric sets: a metric absent in one run is float64.
    fewer = edit_metrics(all_int(results["mutex"]), lambda ln: ",wakeups," not in ln)
    got = assert_same([({"k": 1}, all_int(r)), ({"k": 2}, fewer)])
    assert got["wakeups"].dtype == "float64" and got["spin_wait_count"].dtype == "int64"
    # A per-class metric for one VM only: that run's pivot has empty cells, so all float64.
    got = assert_same([({"k": 1}, edit_metrics(r, lambda ln: ln.rsplit(",", 1)[1].isdigit()))])
    assert got["spin_wait_count"].dtype == "float64"


def test_metrics_missing_for_a_vm_or_for_a_vm_not_in_vms(results):
    r = results["cfs"]
    assert_same([({"k": 1}, without_vm(all_int(r)))])  # merge leaves NaN: float64
    assert_same([({"k": 1}, without_vm(r)), ({"k": 2}, r)])
    # An incomplete pivot (one cell missing) of an all-integer run.
    dropped = edit_metrics(all_int(r), lambda ln: not ln.startswith("parallel,spin_wait_count,"))
    got = assert_same([({"k": 1}, dropped)])
    assert got["runnable_wait_count"].dtype == "float64"
    # Metrics of a VM that vms.csv does not have: its columns exist, its row does not.
    ghost = fresh(all_int(r), all_int(r).metrics_csv + "ghost,only_ghost,7\n")
    got = assert_same([({"k": 1}, ghost)])
    assert got["only_ghost"].isna().all() and got["spin_wait_count"].dtype == "float64"


def test_labels_that_shadow_columns(results):
    r, m = results["cfs"], results["mutex"]
    # vms.csv columns (int columns given ints and text), a metric, a suffixed overlap, sim_s's place.
    assert_same([({"seed": 7, "weight": "heavy", "wakeups": 1.5, "sched_latency_p50_us": "x"}, r),
                 ({"seed": 8, "weight": "light", "wakeups": 2, "sched_latency_p50_us": "y"}, m)],
                keys_for([0, 1]))
    # A metric some runs have (lhp_count[futex-queue] in the mutex run only).
    assert_same([({"lhp_count[futex-queue]": 1}, r), ({"lhp_count[futex-queue]": 2}, m)], labels_first=False)
    # Label values JSON-encoded (tables, lists, None) and numpy-free ints and floats mixed.
    assert_same([({"p": [1, 2], "q": {"a": 1}, "n": None, "x": 1}, r), ({"p": [3], "q": {}, "n": None, "x": 0.25}, m)])


def test_inputs_left_to_the_reference(results):
    r, m = results["cfs"], results["mutex"]
    # Text and numbers in one label column; booleans; labels that differ between runs.
    assert_same([({"x": 1}, r), ({"x": "a"}, m)], fast=False)
    assert_same([({"x": True}, r), ({"x": False}, m)], fast=False)
    assert_same([({"x": 1}, r), ({"y": 2}, m)], fast=False)
    assert_same([({"x": 1, "y": 2}, r), ({"y": 2, "x": 1}, m)], fast=False)
    # Another vms.csv header (a column fewer) in one run.
    head, *rows = r.vms_csv.splitlines()
    cut = fresh(r, vms_csv="\n".join(line.rsplit(",", 1)[0] for line in [head, *rows]) + "\n")
    assert_same([({"k": 1}, r), ({"k": 2}, cut)], fast=False)
    # A column that is text in one run and numbers in another (its own parse differs).
    numeric_pool = fresh(m, vms_csv=m.vms_csv.replace(",pool0,", ",7,"))
    assert_same([({"k": 1}, r), ({"k": 2}, numeric_pool)], fast=False)
    # A float metric that is empty (NaN) in one run.
    empty = fresh(m, re.sub(r"(?m)^(parallel,spin_wait_mean_us,).*$", r"\1", m.metrics_csv))
    assert ",spin_wait_mean_us,\n" in empty.metrics_csv
    assert_same([({"k": 1}, r), ({"k": 2}, empty)], fast=False)


def test_a_failure_inside_the_fast_path_still_gives_the_reference_table_and_says_so(results, monkeypatch):
    labelled = [({"k": 1}, results["cfs"]), ({"k": 2}, results["mutex"])]
    expected = grids._tidy_reference([(labels, fresh(r)) for labels, r in labelled])

    def broken(*args):
        raise IndexError("a bug")

    monkeypatch.setattr(grids, "_tidy_fast", broken)
    with pytest.warns(RuntimeWarning, match="fast path failed"):
        got = grids.tidy([(labels, fresh(r)) for labels, r in labelled])
    pd.testing.assert_frame_equal(got, expected)


def test_no_runs():
    for keys in (None, []):
        pd.testing.assert_frame_equal(grids.tidy([], keys), grids._tidy_reference([], keys))
