"""grids.tidy (the sweep table) against its definition, the runs' own tables concatenated (a
pandas parse, pivot and merge per run, kept here as ``per_run``): the same DataFrame (columns and
their order, dtypes, values, index) and the same CSV bytes, on real results of varied runs and on
edited copies of them that reach pandas' type inference (a run whose metrics are all integers,
metrics missing for a VM, labels that shadow columns...). Where the two differ by construction
(tidy reads a column's type once over the sweep, not per run), the tests say what tidy gives."""

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


def per_run(labelled, keys=None, labels_first=True):
    """The table as first defined: each run's vms.csv and pivoted metrics.csv merged, its labels
    set, and the runs' frames concatenated."""
    frames, label_columns = [], []
    for i, (labels, result) in enumerate(labelled):
        label_columns += [k for k in labels if k not in label_columns]
        metrics = result.metrics[~result.metrics["metric"].isin(result.vms.columns)]
        wide = metrics.pivot(index="vm", columns="metric", values="value")
        frame = result.vms.merge(wide, left_on="vm", right_index=True, how="left")
        frame["sim_s"] = result.summary["sim_time_ns"] / 1e9
        head = {k: grids._label(v) for k, v in labels.items()}
        if keys is not None:
            head["run"] = keys[i]
        for k, v in head.items():
            frame[k] = v
        frames.append(frame)
    if not frames:
        return pd.DataFrame(columns=label_columns)
    table = pd.concat(frames, ignore_index=True)
    if labels_first:
        first = label_columns + (["run"] if keys is not None else [])
        table = table[first + [c for c in table.columns if c not in first]]
    return table.copy()


def assert_same(labelled, keys=None, labels_first=True):
    """tidy == the runs' own tables concatenated (frame and CSV bytes)."""
    expected = per_run([(labels, fresh(r)) for labels, r in labelled], keys, labels_first)
    got = grids.tidy([(labels, fresh(r)) for labels, r in labelled], keys, labels_first)
    pd.testing.assert_frame_equal(got, expected, check_dtype=True, check_exact=True, check_column_type=True,
                                  check_index_type=True)
    assert got.to_csv() == expected.to_csv()
    assert got.to_csv(index=False) == expected.to_csv(index=False)
    return got


def assert_same_values(labelled):
    """tidy == the runs' own tables in columns, values and CSV text, with its own dtypes."""
    expected = per_run([(labels, fresh(r)) for labels, r in labelled])
    got = grids.tidy([(labels, fresh(r)) for labels, r in labelled])
    pd.testing.assert_frame_equal(got, expected, check_dtype=False, check_exact=True)
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
    # A per-class metric for one VM only: that run's own pivot has empty cells, which makes all
    # its metrics float64; tidy keeps int64 the metrics every VM reported.
    per_class = edit_metrics(r, lambda ln: ln.rsplit(",", 1)[1].isdigit())
    got = assert_same_values([({"k": 1}, per_class)])
    partial = [c for c in got.columns if got[c].isna().any() and c.startswith(("lhp_count[", "wakeups"))]
    assert partial and all(got[c].dtype == "float64" for c in partial)
    assert got["spin_wait_count"].dtype == "int64" and per_run([({"k": 1}, fresh(per_class))])["spin_wait_count"].dtype == "float64"


def test_metrics_missing_for_a_vm_or_for_a_vm_not_in_vms(results):
    r = results["cfs"]
    assert_same([({"k": 1}, without_vm(all_int(r)))])  # merge leaves NaN: float64
    assert_same([({"k": 1}, without_vm(r)), ({"k": 2}, r)])
    # An incomplete pivot (one cell missing) of an all-integer run.
    # tidy: only that metric's column is float64, with the hole (the run's own table: all of them).
    dropped = edit_metrics(all_int(r), lambda ln: not ln.startswith("parallel,spin_wait_count,"))
    got = assert_same_values([({"k": 1}, dropped)])
    assert got["spin_wait_count"].dtype == "float64" and got["spin_wait_count"].isna().sum() == 1
    assert got["runnable_wait_count"].dtype == "int64"
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


def test_mixed_labels_headers_and_types(results):
    r, m = results["cfs"], results["mutex"]
    # Text and numbers in one label column; booleans; labels that differ between runs.
    assert_same([({"x": 1}, r), ({"x": "a"}, m)])
    assert_same([({"x": True}, r), ({"x": False}, m)])
    assert_same([({"x": 1}, r), ({"y": 2}, m)])
    assert_same([({"x": 1, "y": 2}, r), ({"y": 2, "x": 1}, m)])
    # Another vms.csv header (a column fewer) in one run.
    head, *rows = r.vms_csv.splitlines()
    cut = fresh(r, vms_csv="\n".join(line.rsplit(",", 1)[0] for line in [head, *rows]) + "\n")
    assert_same([({"k": 1}, r), ({"k": 2}, cut)])
    # A column that is text in one run and numbers in another (its own parse differs).
    # tidy reads the column's type over the sweep: text, "7" included (per run: the number 7).
    numeric_pool = fresh(m, vms_csv=m.vms_csv.replace(",pool0,", ",7,"))
    got = grids.tidy([({"k": 1}, fresh(r)), ({"k": 2}, fresh(numeric_pool))])
    expected = per_run([({"k": 1}, fresh(r)), ({"k": 2}, fresh(numeric_pool))])
    assert list(dict.fromkeys(got["pool"])) == ["pool0", "7"] and 7 in set(expected["pool"])
    pd.testing.assert_frame_equal(got.drop(columns="pool"), expected.drop(columns="pool"), check_exact=True)
    # A float metric that is empty (NaN) in one run.
    empty = fresh(m, re.sub(r"(?m)^(parallel,spin_wait_mean_us,).*$", r"\1", m.metrics_csv))
    assert ",spin_wait_mean_us,\n" in empty.metrics_csv
    assert_same([({"k": 1}, r), ({"k": 2}, empty)])


def test_no_runs():
    for keys in (None, []):
        pd.testing.assert_frame_equal(grids.tidy([], keys), per_run([], keys))


def test_a_runs_own_table(results):
    for name, r in results.items():
        own = fresh(r).table
        pd.testing.assert_frame_equal(own, per_run([({}, fresh(r))]), check_exact=True)
        assert list(own["vm"]) == list(r.vms["vm"]) and own["sim_s"].eq(r.summary["sim_time_ns"] / 1e9).all()
        assert {"spin_wait_count", "runnable_wait_p99_us"} <= set(own.columns), name
