"""Sweeps as grids: every combination of some scenario keys' values, run, and gathered into one
tidy table (one row per run and VM, the swept values as columns).

    table = vcpusim.sweep("scenarios/quickstart.toml",
                          grid={"host.policy": ["cfs", "credit"], "seed": range(3)},
                          out="sweep/")

A grid maps dotted scenario keys (as ``--set`` and :meth:`Scenario.override` take them:
``host.policy``, ``vm.NAME.vcpus``, ``host.params.tslice``; ``seed`` is short for ``run.seed``) to
the values each takes. It is given in Python or in the scenario's ``[sweep]`` table::

    [sweep]
    "host.policy" = ["cfs", "credit", "gang"]
    seed = [1, 2, 3]

(the Rust loader accepts that table, checks each entry is a non-empty array, and a plain run
ignores it). The points are the Cartesian product, the first key varying slowest: in a grid
given in Python, its order; in a ``[sweep]`` table, the keys sorted by name (TOML tables have no
order, and the loader's parser keeps none). Each point is
the base scenario without its ``[sweep]`` table, with the point's values set, validated as a file
is; a bad key or value is an error naming the key and the point before anything runs.

The runs go through :func:`vcpusim.run_many` (local processes, its content-hash cache under
``out/runs/``) or :func:`vcpusim.run_many_ray` (``ray=ADDRESS``). Each run's folder is named by
a hash of its own scenario, so a sweep that was killed, or extended with more values, computes
only the runs not saved yet, and the table it writes is byte for byte the one an uninterrupted
sweep writes. The table is written as ``out/sweep.csv`` and, with pyarrow installed
(``pip install "vcpusim[parquet]"``), ``out/sweep.parquet``.

:func:`sweep_cases` is the same for runs that are not a product (a list of labels and
scenarios), and :func:`tidy` builds the table from results already at hand; :func:`aggregate`
takes the mean and spread over seeds. The experiment scripts (experiments/runkit.py) use them.
"""

from __future__ import annotations

import io
import itertools
import json
import math
import os
import re
import warnings
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from . import _core
from .api import Result, Scenario, _type_name, as_scenario, check_flag, check_writable
from .runs import _check_processes, run_key, run_many, run_many_ray

#: The scenario table that declares a grid.
SWEEP_TABLE = "sweep"
#: The one grid key that is not a dotted scenario key: the run's seed.
SEED_KEY = "seed"
#: Under ``out``: the saved runs (run_many's folders), the table as CSV and as Parquet.
RUNS_DIR = "runs"
TABLE_CSV = "sweep.csv"
TABLE_PARQUET = "sweep.parquet"
#: The table's column naming the folder of a run under ``out/runs/``.
RUN_COLUMN = "run"
#: Simulated seconds of the run (summary.json's sim_time_ns / 1e9).
SIM_COLUMN = "sim_s"


def grid_of(scenario: Scenario) -> dict[str, list]:
    """The ``[sweep]`` table of a scenario as a grid (dotted key -> values, keys sorted by name as
    the loader gives them); empty without one. Nested tables (``vm.par.vcpus = [...]`` written
    unquoted) are read as dotted keys."""
    table = scenario.to_dict().get(SWEEP_TABLE)
    grid: dict[str, list] = {}

    def walk(node: Mapping, prefix: str) -> None:
        for key, value in node.items():
            path = f"{prefix}.{key}" if prefix else key
            if isinstance(value, Mapping):
                walk(value, path)
            else:
                grid[path] = list(value)  # the loader checked it is a non-empty array

    if table is not None:
        walk(table, "")
    return grid


def _check_grid(grid: Any, where: str) -> dict[str, list]:
    if not isinstance(grid, Mapping):
        raise TypeError(f"{where}: grid: expected a dict of dotted scenario keys to lists of values, got {_type_name(grid)}")
    out = {}
    for key, values in grid.items():
        if not isinstance(key, str) or not key:
            raise TypeError(f"{where}: grid: keys are dotted scenario keys such as \"host.policy\", got {key!r}")
        if isinstance(values, (str, bytes, Mapping)) or not isinstance(values, Iterable):
            raise TypeError(f"{where}: grid[{key!r}]: expected a list of values to sweep, got {_type_name(values)}")
        # numpy scalars (np.arange, a DataFrame column) as the Python values TOML takes.
        values = [v.item() if hasattr(v, "item") and not isinstance(v, (str, bytes)) else v for v in values]
        if not values:
            raise ValueError(f"{where}: grid[{key!r}]: expected at least one value, got an empty list")
        out[key] = values
    return out


#: The most runs one sweep may have. Each run is a scenario in memory before the first one starts
#: and a folder on disk after; a grid of three 1,000-value axes (a billion points) took 15 GB
#: in 40 s before anything was said. 100,000 runs of a second each is about 14 hours on 2 cores.
MAX_SWEEP_RUNS = 100_000


def points(grid: Mapping[str, Sequence]) -> list[dict]:
    """Every combination of the grid's values, the first key varying slowest; a ValueError,
    before any is made, if there are more than :data:`MAX_SWEEP_RUNS` or an axis is empty."""
    keys = list(grid)
    sizes = {k: len(grid[k]) for k in keys}
    total = math.prod(sizes.values())
    if total == 0:
        empty = ", ".join(k for k, n in sizes.items() if n == 0)
        raise ValueError(f"grid: {empty}: expected at least one value to sweep, got none")
    if total > MAX_SWEEP_RUNS:
        shape = " × ".join(f"{k} ({n})" for k, n in sizes.items())
        raise ValueError(
            f"grid: {shape} is {total:,} runs; expected at most {MAX_SWEEP_RUNS:,} in one sweep "
            "(split it into several sweeps, or sweep fewer values)"
        )
    return [dict(zip(keys, combo)) for combo in itertools.product(*(grid[k] for k in keys))]


def _label(value: Any) -> Any:
    """A swept value as a table cell: scalars as they are, tables and arrays as JSON text."""
    if isinstance(value, (str, int, float, bool)):
        return value
    return json.dumps(value, sort_keys=True, default=str)


def _point_source(base: Scenario, point: Mapping[str, Any]) -> str:
    inner = ",".join(f"{k}={_label(v)}" for k, v in point.items())
    return f"{base.source}[{inner}]"


def point_scenario(base: Scenario, point: Mapping[str, Any]) -> Scenario:
    """The base scenario (without its ``[sweep]`` table) with the point's values set."""
    data = base.to_dict()
    data.pop(SWEEP_TABLE, None)
    plain = Scenario.from_dict(data, _point_source(base, point))
    values = {("run.seed" if k == SEED_KEY else k): v for k, v in point.items()}
    return plain.override(values, what="sweep point")


def sweep(
    base: Scenario | Mapping[str, Any] | str | os.PathLike,
    grid: Mapping[str, Iterable] | None = None,
    *,
    out: str | os.PathLike | None = None,
    processes: int | None = None,
    ray: str | None = None,
    progress: bool = True,
    trace: bool = False,
    check: bool = False,
):
    """Run every point of ``grid`` (default: the base scenario's ``[sweep]`` table; a grid given
    here replaces it) and return the tidy table (pandas DataFrame): one row per run and VM, the
    swept keys first (named as in the grid), then ``run`` (the folder under ``out/runs/``), every
    column of vms.csv, every metric of metrics.csv as a column, and ``sim_s``.

    With ``out``, runs are saved as they finish and reused when the sweep runs again (see the
    module doc), and the table is written as ``out/sweep.csv`` (and ``out/sweep.parquet``).
    ``ray`` runs on a Ray cluster at that address (``"auto"``, ``"ray://host:10001"``; needs
    ``pip install "vcpusim[ray]"``) instead of local processes. Like :func:`run_many`, a script
    that runs locally in several processes must call this under ``if __name__ == "__main__":``.
    """
    where = "sweep"
    base = as_scenario(base)
    grid = _check_grid(grid, where) if grid is not None else grid_of(base)
    if not grid:
        raise _core.ScenarioError(
            f"{base.source}: no grid to sweep: give grid={{\"host.policy\": [...], ...}} or add a [sweep] table"
        )
    cases = [(point, point_scenario(base, point)) for point in points(grid)]
    return sweep_cases(cases, out=out, processes=processes, ray=ray, progress=progress, trace=trace, check=check)


def sweep_cases(
    cases: Iterable[tuple[Mapping[str, Any], Scenario | Mapping[str, Any] | str | os.PathLike]],
    *,
    out: str | os.PathLike | None = None,
    runs_dir: str | os.PathLike | None = None,
    processes: int | None = None,
    ray: str | None = None,
    progress: bool = True,
    trace: bool = False,
    check: bool = False,
    labels_first: bool = True,
):
    """Run labelled scenarios (``[(labels, scenario), ...]``, the labels a dict of column values)
    and return their tidy table (:func:`tidy`); :func:`sweep` for runs that are not a grid.
    ``out`` as in :func:`sweep`; ``runs_dir`` saves the runs there instead of ``out/runs``
    (without writing a table); ``labels_first`` as in :func:`tidy`."""
    where = "sweep"
    items = list(cases)
    labels, scenarios = [], []
    for i, item in enumerate(items):
        if not (isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], Mapping)):
            raise TypeError(f"{where}: cases[{i}]: expected a (labels dict, scenario) pair, got {_type_name(item)}")
        labels.append(dict(item[0]))
        try:
            scenarios.append(as_scenario(item[1]))
        except TypeError as e:
            raise TypeError(f"{where}: cases[{i}]: {e}") from None
    if ray is not None and not isinstance(ray, str):
        raise TypeError(f"{where}: ray: expected a Ray address such as \"auto\" or \"ray://host:10001\", got {_type_name(ray)}")
    for name, value in (("progress", progress), ("trace", trace), ("check", check)):
        check_flag(value, name, where)
    workers = _check_processes(processes, where)
    root = check_writable(out, "sweep results", "out") if out is not None else None
    saved = Path(runs_dir) if runs_dir is not None else (root / RUNS_DIR if root is not None else None)
    if ray is not None:
        results = run_many_ray(scenarios, progress=progress, out_dir=saved, trace=trace, check=check, address=ray)
    else:
        results = run_many(scenarios, processes=workers, progress=progress, out_dir=saved, trace=trace, check=check)
    keys = [run_key(s, trace, check) for s in scenarios]
    table = tidy(list(zip(labels, results)), keys, labels_first=labels_first)
    if root is not None:
        write_table(table, root)
    return table


def tidy(labelled: Sequence[tuple[Mapping[str, Any], Result]], keys: Sequence[str] | None = None,
         labels_first: bool = True):
    """One row per run and VM: the labels, ``run`` (when ``keys``, the runs' folder names, are
    given), vms.csv's columns, each metrics.csv metric as a column (sorted by name; a metric a run
    did not report is empty in its rows), and ``sim_s``. A label named like a vms.csv column
    (``seed``, ``weight``) replaces that column's values. ``labels_first=False`` puts each run's labels after its
    other columns instead, the layout of the experiment scripts' ``runs.csv``."""
    if isinstance(labelled, (str, bytes, Mapping)) or not isinstance(labelled, Iterable):
        raise TypeError(f"tidy: labelled: expected (labels, Result) pairs, got {_type_name(labelled)}")
    labelled = list(labelled)
    for i, pair in enumerate(labelled):
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2 and isinstance(pair[0], Mapping)
                and isinstance(pair[1], Result)):
            raise TypeError(f"tidy: labelled[{i}]: expected a (labels dict, Result) pair, got {_type_name(pair)}")
    if labelled:
        try:
            return _tidy_fast(labelled, keys, labels_first)
        except _NotCovered:  # an input the fast path does not reproduce exactly: the reference decides
            pass
        except Exception as e:  # a gap in the fast path itself: still the reference's table, but said
            warnings.warn(f"grids.tidy: the fast path failed ({e!r}); the per-run version made the table",
                          RuntimeWarning, stacklevel=2)
    return _tidy_reference(labelled, keys, labels_first)


def _tidy_reference(labelled: Sequence[tuple[Mapping[str, Any], Result]], keys: Sequence[str] | None = None,
         labels_first: bool = True):
    """:func:`tidy` as it was first written (a pandas parse, pivot and merge per run): the
    definition the fast path must match exactly (tests compare them), and its fallback."""
    import pandas as pd

    frames = []
    label_columns: list[str] = []
    for i, (labels, result) in enumerate(labelled):
        for k in labels:
            if k not in label_columns:
                label_columns.append(k)
        metrics = result.metrics
        # A metric that repeats a vms.csv column (the same quantity written in both files: the
        # scheduling-latency quantiles) is that column: one column per quantity, no merge suffixes.
        metrics = metrics[~metrics["metric"].isin(result.vms.columns)]
        wide = metrics.pivot(index="vm", columns="metric", values="value")
        frame = result.vms.merge(wide, left_on="vm", right_index=True, how="left")
        frame[SIM_COLUMN] = result.summary["sim_time_ns"] / 1e9
        head = {k: _label(v) for k, v in labels.items()}
        if keys is not None:
            head[RUN_COLUMN] = keys[i]
        for k, v in head.items():
            frame[k] = v
        frames.append(frame)
    if not frames:
        return pd.DataFrame(columns=label_columns)
    table = pd.concat(frames, ignore_index=True)
    if labels_first:
        first = label_columns + ([RUN_COLUMN] if keys is not None else [])
        table = table[first + [c for c in table.columns if c not in first]]
    return table.copy()  # one block per dtype: columns added by callers are cheap


# --- tidy without a pandas parse, pivot and merge per run ----------------------------------------
#
# The reference builds one small frame per run; for sweeps of hundreds of runs that costs more than
# many of the runs themselves (~8 ms a run, in the main process, serially). The fast path parses
# all runs' vms.csv as one text and all their metrics.csv as another (each row prefixed with its
# run's position), then lays out the columns the reference would have made. It has to reproduce
# pandas' per-run semantics (type inference per run, then concat's dtype unification), so it
# checks what it relies on and raises _NotCovered otherwise: tidy then runs the reference.


class _NotCovered(Exception):
    """The input is outside what _tidy_fast reproduces exactly."""


#: The column prefixed to every row of the joined texts: the row's run (position in ``labelled``).
_RUN_INDEX = "__tidy_run_index__"
#: The header metrics.csv has (the fast path reads only that layout).
_METRICS_HEADER = "vm,metric,value"
#: A character no number (int, float, inf, nan) is written with: a cell holding one is text.
_NOT_NUMERIC = r"[^0-9eE+\-._ \tinfatyINFATY]"
#: read_csv's default words for booleans: a column of only these is bool, not text.
_BOOL_WORDS = ["True", "TRUE", "true", "False", "FALSE", "false"]
#: A line whose last field is not a plain integer (metrics.csv's value column is then not int64).
_NON_INT_LAST_FIELD = re.compile(r",(?![+-]?[0-9]+\n)[^,\n]*\n")  # ASCII digits, as read_csv
#: Integers up to this size are exact as float64 (int64 -> float64 in concat changes no value).
_EXACT_INT = 2**53


def _body_with_run(text: str, header: str, run: int) -> tuple[str, int]:
    """A run's CSV rows (without the header) with ``run,`` before each, and how many rows."""
    head, _, body = text.partition("\n")
    # One line per row, checked: a blank line, a CR or a quoted line break would make the joined
    # text's rows differ from the run's own (caught again by the row count after parsing).
    if head != header or "\r" in text or "\n\n" in text or (body and not body.endswith("\n")):
        raise _NotCovered
    rows = body.count("\n")
    if not rows:
        return "", 0
    prefix = f"{run},"
    return prefix + body[:-1].replace("\n", "\n" + prefix) + "\n", rows


def _read_joined(pd, texts: Sequence[str], header: str, **read_csv):
    """All runs' rows as one frame (first column: the run) and each row's run."""
    import numpy as np

    parts, counts = [], []
    for i, text in enumerate(texts):
        part, rows = _body_with_run(text, header, i)
        parts.append(part)
        counts.append(rows)
    run_of_row = np.repeat(np.arange(len(texts)), counts)
    frame = pd.read_csv(io.StringIO(f"{_RUN_INDEX},{header}\n" + "".join(parts)), **read_csv)
    if (list(frame.columns) != [_RUN_INDEX, *header.split(",")] or not isinstance(frame.index, pd.RangeIndex)
            or len(frame) != len(run_of_row) or frame[_RUN_INDEX].dtype != np.int64
            or not np.array_equal(frame[_RUN_INDEX].to_numpy(), run_of_row)):
        raise _NotCovered
    return frame, run_of_row, np.asarray(counts)


def _check_text_per_run(column, run_of_row, runs: int) -> None:
    """A text column of the joined frame is text in every run's own parse too: each run has a
    cell that is neither a number nor a boolean (else that run's parse infers another dtype)."""
    import numpy as np

    text = (column.notna() & column.str.contains(_NOT_NUMERIC, regex=True, na=False)
            & ~column.isin(_BOOL_WORDS)).to_numpy(dtype=bool)
    seen = np.zeros(runs, dtype=bool)
    seen[run_of_row[text]] = True
    if not seen.all():
        raise _NotCovered


def _is_text(pd, dtype) -> bool:
    return dtype == object or isinstance(dtype, pd.StringDtype)


def _check_exact_floats(values) -> None:
    """No integer that float64 would round (so int64 runs concatenated as float64 keep values)."""
    import numpy as np

    if (np.abs(values) >= _EXACT_INT).any():  # NaN compares False
        raise _NotCovered


def _head_column(pd, values: list):
    """The column a scalar label set per run makes after concat (``frame[k] = v`` per run): int64,
    float64 or text; other mixes (bool, text with numbers) are left to the reference."""
    import numpy as np

    types = {type(v) for v in values}
    if types <= {int, float}:
        if int in types and any(abs(v) >= _EXACT_INT for v in values if type(v) is int):
            raise _NotCovered
        return pd.Series(np.array(values, dtype=np.int64 if types == {int} else np.float64))
    if types == {str}:
        probe = pd.DataFrame({"a": [0]})
        probe["b"] = values[0]  # the dtype a text scalar gets (object, or str with pandas 3)
        return pd.Series(values, dtype=probe["b"].dtype)
    raise _NotCovered


def _tidy_fast(labelled: Sequence[tuple[Mapping[str, Any], Result]], keys: Sequence[str] | None,
               labels_first: bool):
    """:func:`_tidy_reference`'s table for the inputs it covers; raises _NotCovered otherwise."""
    import numpy as np
    import pandas as pd

    runs = len(labelled)
    # The columns set after the merge, in order: sim_s, the labels, run. Every run must have the
    # same label names (then each of these columns is set in every run).
    label_names = list(labelled[0][0])
    head_names = [SIM_COLUMN, *label_names] + ([RUN_COLUMN] if keys is not None else [])
    if len(set(head_names)) != len(head_names) or not all(type(k) is str for k in label_names):
        raise _NotCovered
    head_values: dict[str, list] = {k: [] for k in head_names}
    for i, (labels, result) in enumerate(labelled):
        if list(labels) != label_names:
            raise _NotCovered
        head_values[SIM_COLUMN].append(result.summary["sim_time_ns"] / 1e9)
        for k, v in labels.items():
            head_values[k].append(_label(v))
        if keys is not None:
            head_values[RUN_COLUMN].append(keys[i])

    # vms.csv of every run at once. Same header in every run (one set of columns).
    header = labelled[0][1].vms_csv.partition("\n")[0]
    vm_columns = header.split(",")
    if not header or '"' in header or len(set(vm_columns)) != len(vm_columns) or _RUN_INDEX in vm_columns:
        raise _NotCovered
    vms, run_of_row, vm_counts = _read_joined(pd, [r.vms_csv for _, r in labelled], header,
                                              dtype={"iterations": "Int64"})
    if not vm_counts.all():
        raise _NotCovered
    # Each column's dtype as concat gives it from the runs' own parses: int64 and bool hold in
    # every run; float64 is int64 or float64 per run (same values); text must be text in each run.
    for name in vm_columns:
        dtype = vms[name].dtype
        if name == "iterations" and dtype == "Int64" or dtype == np.int64 or dtype == bool:
            continue
        if dtype == np.float64:
            _check_exact_floats(vms[name].to_numpy())
        elif _is_text(pd, dtype):
            _check_text_per_run(vms[name], run_of_row, runs)
        else:
            raise _NotCovered
    if not _is_text(pd, vms["vm"].dtype) or vms["vm"].isna().any():
        raise _NotCovered
    rows = len(vms)

    # metrics.csv of every run at once: (run, vm, metric) -> value.
    metric_texts = [r.metrics_csv for _, r in labelled]
    if any('"' in t for t in metric_texts):
        raise _NotCovered
    metrics, m_run, m_counts = _read_joined(pd, metric_texts, _METRICS_HEADER)
    if not m_counts.all():
        raise _NotCovered
    for name in ("vm", "metric"):
        if not _is_text(pd, metrics[name].dtype) or metrics[name].isna().any():
            raise _NotCovered
        _check_text_per_run(metrics[name], m_run, runs)
    # A metric that repeats a vms.csv column is that column (as in _tidy_reference).
    repeated = metrics["metric"].isin(vm_columns).to_numpy()
    if repeated.any():
        metrics = metrics[~repeated].reset_index(drop=True)
        m_run = m_run[~repeated]
    value = metrics["value"]
    if value.dtype not in (np.int64, np.float64) or value.isna().any():
        raise _NotCovered
    values = value.to_numpy(dtype=np.float64)
    _check_exact_floats(values)
    # A run's own parse reads value as int64 only if every value of that run is an integer.
    int_tokens = np.array([_NON_INT_LAST_FIELD.search(t.partition("\n")[2]) is None for t in metric_texts])

    # VM names of both files as codes; a (run, vm) key per row.
    vm_codes, vm_names = pd.factorize(pd.concat([vms["vm"], metrics["vm"]], ignore_index=True))
    vm_codes = vm_codes.astype(np.int64)
    n_vm = len(vm_names)
    vms_key = run_of_row * n_vm + vm_codes[:rows]
    m_vm_key = m_run * n_vm + vm_codes[rows:]
    if len(np.unique(vms_key)) != rows:
        raise _NotCovered  # a VM named twice in one run
    metric_codes, metric_names = pd.factorize(metrics["metric"], sort=True)  # pivot sorts by name
    metric_names = list(metric_names)
    n_metric = len(metric_names)
    if "vm" in metric_names or len(np.unique(m_vm_key * n_metric + metric_codes)) != len(metrics):
        raise _NotCovered  # pivot fails on a (vm, metric) given twice
    # Per run: does its pivot have every (vm, metric) cell, and every VM of vms.csv a row there?
    # Only then does its frame keep the metrics as int64 (a missing cell makes them all float64).
    m_vm_unique = np.unique(m_vm_key)
    vms_per_run = np.bincount(m_vm_unique // n_vm, minlength=runs)
    present_keys = np.unique(m_run * n_metric + metric_codes)
    present = np.zeros((runs, n_metric), dtype=bool)
    present[present_keys // n_metric, present_keys % n_metric] = True
    full_pivot = np.bincount(m_run, minlength=runs) == vms_per_run * present.sum(axis=1)
    unmatched = ~np.isin(vms_key, m_vm_unique)
    full_merge = np.bincount(run_of_row[unmatched], minlength=runs) == 0
    int_run = int_tokens & full_pivot & full_merge

    # The metric values laid out wide, one row per row of vms (metrics of VMs not in vms.csv are
    # dropped, as the left merge drops them).
    target = pd.Index(vms_key).get_indexer(m_vm_key)
    kept = target >= 0
    wide = np.full((n_metric, rows), np.nan)
    wide[metric_codes[kept], target[kept]] = values[kept]

    # Each distinct set of metrics is one layout of columns (the runs' frames before concat):
    # vms.csv's columns, then the metrics by name (none repeats a vms.csv column), then the head
    # columns (in place when the name exists). The table's columns come in order of first
    # appearance across runs, as concat puts them.
    layouts, layout_of_run = np.unique(present, axis=0, return_inverse=True)
    layout_of_run = layout_of_run.reshape(-1)
    source_of: dict[str, tuple] = {}  # column -> (kind, what): one source per column, else not covered
    layouts_of: dict[str, list[int]] = {}
    layout_columns = []
    for li, row in enumerate(layouts):
        # No metric is named like a vms.csv column (those were dropped above), so none collide.
        columns = {c: ("vms", c) for c in vm_columns}
        for j in np.flatnonzero(row):
            columns[metric_names[j]] = ("metric", int(j))
        for k in head_names:
            columns[k] = ("head", k)
        for name, source in columns.items():
            if source_of.setdefault(name, source) != source:
                raise _NotCovered
            layouts_of.setdefault(name, []).append(li)
        layout_columns.append(list(columns))
    order: list[str] = []
    seen_names: set[str] = set()
    done_layouts: set[int] = set()
    for li in layout_of_run.tolist():
        if li not in done_layouts:
            done_layouts.add(li)
            for name in layout_columns[li]:
                if name not in seen_names:
                    seen_names.add(name)
                    order.append(name)

    index = pd.RangeIndex(rows)
    data = {}
    for name in order:
        kind, what = source_of[name]
        in_rows = np.isin(layout_of_run, layouts_of[name])[run_of_row]  # rows whose run has the column
        if kind == "head":
            data[name] = _head_column(pd, head_values[what]).iloc[run_of_row].reset_index(drop=True)
        elif kind == "vms":
            column = vms[what]
            if in_rows.all():
                data[name] = column
            elif column.dtype in (np.int64, np.float64):  # absent in some runs: NaN there, float64
                data[name] = pd.Series(np.where(in_rows, column.to_numpy(dtype=np.float64), np.nan), index=index)
            else:
                raise _NotCovered
        else:
            filled = np.where(in_rows, wide[what], np.nan)
            if in_rows.all() and int_run.all():
                data[name] = pd.Series(filled.astype(np.int64), index=index)
            else:
                data[name] = pd.Series(filled, index=index)
    if labels_first:
        first = label_names + ([RUN_COLUMN] if keys is not None else [])
        order = first + [c for c in order if c not in first]
    return pd.DataFrame({name: data[name] for name in order}, index=index)


def write_table(table, directory: str | os.PathLike) -> list[Path]:
    """``sweep.csv`` and, with pyarrow, ``sweep.parquet`` in ``directory`` (each written beside
    and renamed, so a killed sweep leaves the old table or none). Returns the paths written."""
    directory = Path(directory)
    written = []
    csv_path = directory / TABLE_CSV
    _replace(csv_path, lambda p: table.to_csv(p, index=False))
    written.append(csv_path)
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        (directory / TABLE_PARQUET).unlink(missing_ok=True)  # an older table would not match the CSV
        warnings.warn(f"{directory / TABLE_PARQUET} not written: Parquet needs pyarrow (pip install \"vcpusim[parquet]\")",
                      RuntimeWarning, stacklevel=3)
        return written
    parquet_path = directory / TABLE_PARQUET
    _replace(parquet_path, lambda p: _parquet_safe(table).to_parquet(p, index=False))
    written.append(parquet_path)
    return written


def _parquet_safe(table):
    """Parquet wants one type per column: a label column mixing types (say 1 and "1ms") is
    written as text."""
    out = table.copy()
    for column in out.columns:
        if out[column].dtype == object and len({type(v) for v in out[column].dropna()}) > 1:
            out[column] = out[column].map(lambda v: v if v is None else str(v))
    return out


def _replace(path: Path, write) -> None:
    partial = path.with_name(f".{path.name}.partial")
    try:
        write(partial)
        os.replace(partial, path)
    except OSError as e:
        partial.unlink(missing_ok=True)
        raise _core.VcpusimError(f"cannot write {path}: {e.strerror or e}") from None


def aggregate(df, by: Sequence[str], values: Sequence[str]):
    """Mean, standard deviation, min, max and the 95% Student-t interval of the mean of each of
    ``values`` per group ``by`` (over seeds, say). Columns: ``by``, then ``<value>_mean``,
    ``_std``, ``_min``, ``_max``, ``_lo``, ``_hi`` (the interval: NaN for a group of one row),
    and ``n`` (rows). The interval is :class:`vcpusim.stats.Estimate`'s, the experiment sets'."""
    import pandas as pd

    from .stats import Estimate

    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"aggregate: df: expected a pandas DataFrame (a sweep's table), got {_type_name(df)}")
    for name, columns in (("by", by), ("values", values)):
        if isinstance(columns, str) or not isinstance(columns, Iterable):
            raise TypeError(f"aggregate: {name}: expected a list of column names, got {_type_name(columns)}")
        missing = [c for c in columns if c not in df.columns]
        if missing:
            raise KeyError(f"aggregate: {name}: no column {missing[0]!r} in the table")
    g = df.groupby(list(by), sort=False)
    out = g[list(values)].agg(["mean", "std", "min", "max", "count"])
    columns = {}
    for v in values:
        for stat in ("mean", "std", "min", "max"):
            columns[f"{v}_{stat}"] = out[(v, stat)]
        ests = [Estimate.from_stats(m, sd, n) for m, sd, n in zip(out[(v, "mean")], out[(v, "std")], out[(v, "count")])]
        columns[f"{v}_lo"] = pd.Series([e.lo for e in ests], index=out.index, dtype=float)
        columns[f"{v}_hi"] = pd.Series([e.hi for e in ests], index=out.index, dtype=float)
    result = pd.DataFrame(columns, index=out.index)
    result["n"] = g.size()
    return result.reset_index()


#: Columns of a run's table that name or count the run, not measure it: never compared.
_NOT_MEASURES = ("seed", "run", "vcpus", "weight", "cap", "threads", "iterations")


def _compare_side(side, name: str):
    """One side of :func:`compare` as a table of vms.csv rows: a table (a sweep's, or
    ``Result.vms``), a :class:`Result`, or a list of Results."""
    import pandas as pd

    if isinstance(side, pd.DataFrame):
        table = side
    elif isinstance(side, Result):
        table = side.vms
    elif isinstance(side, (list, tuple)) and side and all(isinstance(r, Result) for r in side):
        table = pd.concat([r.vms for r in side], ignore_index=True)
    else:
        raise TypeError(f"compare: {name}: expected a table of runs (a sweep's, or Result.vms), a Result, "
                        f"or a list of Results, got {_type_name(side)}")
    for column in ("vm", "seed"):
        if column not in table.columns:
            raise KeyError(f"compare: {name}: no {column!r} column: give a sweep's table or Results")
    twice = table.duplicated(["vm", "seed"])
    if twice.any():
        row = table[twice].iloc[0]
        raise ValueError(
            f"compare: {name}: VM {row['vm']!r} has more than one run with seed {row['seed']}: the table "
            "holds several points of a sweep; select one first, e.g. table[table['host.policy'] == 'credit']")
    return table


def compare(a, b, metrics: Sequence[str] | None = None):
    """Whether ``b`` differs from ``a`` beyond noise, per VM and metric: each side a table of
    runs (a sweep's table, one point of it, or ``Result.vms``), a :class:`Result`, or a list of
    Results, over seeds.

    Rows: ``vm``, ``metric``, ``a_mean``, ``b_mean``, ``diff`` (b - a) with its 95% interval
    ``diff_lo`` / ``diff_hi``, ``change`` (diff / a_mean) with ``change_lo`` / ``change_hi``,
    ``n_a``, ``n_b``, ``test`` and ``differs``. When both sides ran the same seeds the interval
    is the per-seed paired differences' (``test = "paired"``), otherwise Welch's (``"welch"``);
    with one run a side there is no interval (``"none"``) and nothing differs. ``differs`` is
    the interval excluding zero: the test of the experiment sets' ledgers (experiments/protocol.py
    uses :mod:`vcpusim.stats` too). ``metrics`` defaults to every numeric column both sides have,
    apart from the run's own settings (seed, vcpus, weight, cap, threads, iterations) and a
    sweep's labels (dotted scenario keys such as ``host.policy``)."""
    import math

    import pandas as pd

    from .stats import Estimate, NO_ESTIMATE, welch

    ta, tb = _compare_side(a, "a"), _compare_side(b, "b")
    if metrics is None:
        # A sweep's labels are dotted scenario keys (host.policy, vm.b.weight): settings, not
        # measures (a metric's own name has no dot before its [index]).
        metrics = [c for c in ta.columns if c in tb.columns and c not in _NOT_MEASURES and "." not in c.split("[")[0]
                   and pd.api.types.is_numeric_dtype(ta[c]) and pd.api.types.is_numeric_dtype(tb[c])
                   and not pd.api.types.is_bool_dtype(ta[c])]
    elif isinstance(metrics, str) or not isinstance(metrics, Iterable):
        raise TypeError(f"compare: metrics: expected a list of column names, got {_type_name(metrics)}")
    else:
        metrics = list(metrics)
        for m in metrics:
            for name, t in (("a", ta), ("b", tb)):
                if m not in t.columns:
                    raise KeyError(f"compare: metrics: no column {m!r} in {name}")
    rows = []
    vms = list(dict.fromkeys([*ta["vm"], *tb["vm"]]))
    for vm in vms:
        va = ta[ta["vm"] == vm].set_index("seed").sort_index()
        vb = tb[tb["vm"] == vm].set_index("seed").sort_index()
        same_seeds = len(va) >= 2 and list(va.index) == list(vb.index)
        for m in metrics:
            xa = [float(x) for x in va[m]] if m in va else []
            xb = [float(x) for x in vb[m]] if m in vb else []
            ea, eb = Estimate.of(xa), Estimate.of(xb)
            if not xa or not xb:
                diff, test = NO_ESTIMATE, "none"
            elif same_seeds:
                diff, test = Estimate.of([y - x for x, y in zip(xa, xb)]), "paired"
            elif len(xa) >= 2 and len(xb) >= 2:
                diff, test = welch(xb, xa), "welch"
            else:
                diff, test = Estimate(eb.mean - ea.mean, math.nan, math.nan, min(len(xa), len(xb))), "none"
            base = ea.mean
            scale = (lambda x: x / base) if base and math.isfinite(base) and base > 0 else (lambda x: math.nan)
            rows.append({
                "vm": vm, "metric": m, "a_mean": ea.mean, "b_mean": eb.mean,
                "diff": diff.mean, "diff_lo": diff.lo, "diff_hi": diff.hi,
                "change": scale(diff.mean), "change_lo": scale(diff.lo), "change_hi": scale(diff.hi),
                "n_a": len(xa), "n_b": len(xb), "test": test, "differs": bool(diff.excludes(0.0)),
            })
    columns = ["vm", "metric", "a_mean", "b_mean", "diff", "diff_lo", "diff_hi", "change", "change_lo",
               "change_hi", "n_a", "n_b", "test", "differs"]
    return pd.DataFrame(rows, columns=columns)
