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

import itertools
import json
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


def points(grid: Mapping[str, Sequence]) -> list[dict]:
    """Every combination of the grid's values, the first key varying slowest."""
    keys = list(grid)
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
    root = check_writable(out, "sweep results") if out is not None else None
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
    import pandas as pd

    frames = []
    label_columns: list[str] = []
    for i, (labels, result) in enumerate(labelled):
        for k in labels:
            if k not in label_columns:
                label_columns.append(k)
        wide = result.metrics.pivot(index="vm", columns="metric", values="value")
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
    """Mean, standard deviation, min and max of each of ``values`` per group ``by`` (over seeds,
    say). Columns: ``by``, then ``<value>_mean``, ``_std``, ``_min``, ``_max``, and ``n`` (rows)."""
    g = df.groupby(list(by), sort=False)
    out = g[list(values)].agg(["mean", "std", "min", "max"])
    out.columns = [f"{v}_{stat}" for v, stat in out.columns]
    out["n"] = g.size()
    return out.reset_index()
