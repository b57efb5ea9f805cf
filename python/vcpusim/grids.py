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
    (``seed``, ``weight``) replaces that column's values. ``labels_first=False`` puts each run's
    labels after its other columns instead, the layout of the experiment scripts' ``runs.csv``.

    The runs' vms.csv files are read as one table and their metrics.csv files as another (each
    row tagged with its run), so a column's type is read once over the whole sweep, as one
    ``pandas.read_csv`` of all of them would read it; pandas' ``pivot`` lays the metrics out as
    columns and ``merge`` joins them to each run's VMs. :attr:`Result.table` is one run's table."""
    import pandas as pd

    if isinstance(labelled, (str, bytes, Mapping)) or not isinstance(labelled, Iterable):
        raise TypeError(f"tidy: labelled: expected (labels, Result) pairs, got {_type_name(labelled)}")
    labelled = list(labelled)
    for i, pair in enumerate(labelled):
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2 and isinstance(pair[0], Mapping)
                and isinstance(pair[1], Result)):
            raise TypeError(f"tidy: labelled[{i}]: expected a (labels dict, Result) pair, got {_type_name(pair)}")
    label_columns = list(dict.fromkeys(k for labels, _ in labelled for k in labels))
    if not labelled:
        return pd.DataFrame(columns=label_columns)
    results = [r for _, r in labelled]
    vms, vm_headers = _read_runs(pd, [r.vms_csv for r in results], dtype={"iterations": "Int64"})
    metrics, _ = _read_runs(pd, [r.metrics_csv for r in results])
    # A metric that repeats a vms.csv column (the same quantity written in both files: the
    # scheduling-latency quantiles) is that column: one column per quantity, no merge suffixes.
    metrics = metrics[~metrics["metric"].isin(vms.columns)]
    order = _column_order(metrics, vm_headers, [labels for labels, _ in labelled], keys is not None)
    wide = metrics.pivot(index=[_RUN_INDEX, "vm"], columns="metric", values="value")
    wide.columns.name = None
    if metrics["value"].dtype == "int64":
        # pivot makes every column float64 when any cell is empty; a metric every VM of every
        # run reported, as integers, stays int64.
        full = wide.columns[wide.notna().all().to_numpy()]
        wide[full] = wide[full].astype("int64")
    table = vms.merge(wide, left_on=[_RUN_INDEX, "vm"], right_index=True, how="left")
    run_of_row = table.pop(_RUN_INDEX).to_numpy()
    table = table.reset_index(drop=True)
    head = {SIM_COLUMN: [r.summary["sim_time_ns"] / 1e9 for r in results]}
    head.update({k: [_label(labels[k]) if k in labels else None for labels, _ in labelled] for k in label_columns})
    if keys is not None:
        head[RUN_COLUMN] = list(keys)
    for name, values in head.items():
        # Each run's value on each of its rows, typed over all runs (int, float, text or mixed).
        table[name] = pd.Series(values).iloc[run_of_row].reset_index(drop=True)
    if labels_first:
        first = label_columns + ([RUN_COLUMN] if keys is not None else [])
        order = first + [c for c in order if c not in first]
    return table[order].copy()  # one block per dtype: columns added by callers are cheap


def _column_order(metrics, vm_headers: list[list[str]], labels: list[Mapping], with_run: bool) -> list[str]:
    """The table's columns in the order ``pandas.concat`` of the runs' own tables puts them: each
    run's table has its vms.csv columns, its metrics by name, ``sim_s``, its labels (a label named
    like a column stays in that column's place) and ``run``; the union keeps first appearances."""
    pairs = metrics[[_RUN_INDEX, "metric"]].drop_duplicates().sort_values([_RUN_INDEX, "metric"])
    metrics_of: dict[int, list[str]] = {}
    for run, name in zip(pairs[_RUN_INDEX].tolist(), pairs["metric"].tolist()):
        metrics_of.setdefault(run, []).append(name)
    order: dict[str, None] = {}
    seen: set[tuple] = set()
    for run, (header, run_labels) in enumerate(zip(vm_headers, labels)):
        layout = (tuple(header), tuple(metrics_of.get(run, ())), tuple(run_labels))
        if layout in seen:
            continue
        seen.add(layout)
        columns = [c for c in header if c != _RUN_INDEX] + list(layout[1]) + [SIM_COLUMN, *run_labels]
        order.update(dict.fromkeys(columns + ([RUN_COLUMN] if with_run else [])))
    return list(order)


#: The column tagging each row of the runs' joined CSVs with its run (its position in the sweep).
_RUN_INDEX = "__tidy_run_index__"


def _read_runs(pd, texts: Sequence[str], **read_csv):
    """The runs' CSVs as one frame, its first column the run of each row (rows in run order), and
    each run's columns. The runs with one header (every run of one build) are read as one text,
    each row prefixed with its run; a group holding a field with a line break is read run by run."""
    runs_of: dict[str, list[int]] = {}
    for run, text in enumerate(texts):
        runs_of.setdefault(text.partition("\n")[0], []).append(run)
    frames, headers = [], [[] for _ in texts]
    for header, runs in runs_of.items():
        frame = _read_joined(pd, header, runs, texts, **read_csv)
        columns = [c for c in frame.columns if c != _RUN_INDEX]
        for run in runs:
            headers[run] = columns
        frames.append(frame)
    if len(frames) == 1:
        return frames[0], headers
    both = pd.concat(frames, ignore_index=True)
    return both.sort_values(_RUN_INDEX, kind="stable", ignore_index=True), headers


def _read_joined(pd, header: str, runs: list[int], texts: Sequence[str], **read_csv):
    """The CSVs of ``runs`` (all with this header) as one frame tagged with each row's run."""
    parts, lines = [], 0
    for run in runs:
        body = texts[run].partition("\n")[2]
        if body:
            body = body if body.endswith("\n") else body + "\n"
            lines += body.count("\n")
            parts.append(f"{run}," + body[:-1].replace("\n", f"\n{run},") + "\n")
    if _RUN_INDEX not in header and "\r" not in header:
        frame = pd.read_csv(io.StringIO(f"{_RUN_INDEX},{header}\n" + "".join(parts)), **read_csv)
        if len(frame) == lines:  # one row per line: no field holds a line break
            return frame
    frames = [pd.read_csv(io.StringIO(texts[run]), **read_csv) for run in runs]
    for run, frame in zip(runs, frames):
        frame.insert(0, _RUN_INDEX, run)
    return pd.concat(frames, ignore_index=True)


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
