"""The machinery every experiment set shares (experiments/asplos13, hybrid, xen_cmt, microsliced,
irs, modern): settings from the command line, running scenario cases over seeds with
``vcpusim.sweep_cases`` (saved as they finish so a rerun resumes), one long table of runs, mean
and 95% interval over seeds, CSV and PNG output, and the paper's claims printed beside ours,
each judged by the validation protocol (``protocol.py``, docs/validation.md).

Each set's ``common.py`` points ``OUT`` at its own ``out/`` folder and adds the paper's setup.
A figure script made with ``figure_main(fig, measure, write_outputs, claims)`` runs alone as
before; in a set (``run_set``) its outputs are drawn in a thread while the next figure's runs go.
"""

from __future__ import annotations

import argparse
import importlib
import io
import math
import sys
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

try:
    import matplotlib
except ImportError:  # the package itself draws nothing; its figures are an extra
    raise SystemExit("the experiment scripts draw figures with matplotlib: pip install \".[experiments]\"") from None

matplotlib.use("Agg")  # files only, no display
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.markup import escape  # noqa: E402
from rich.table import Table  # noqa: E402

import vcpusim  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))  # protocol.py beside this file
import protocol  # noqa: E402
from protocol import (  # noqa: E402,F401  (re-exported: the protocol's vocabulary)
    AMBIGUOUS, CALIBRATION, D, DIRECTION, EXTRA, MEASURED, MECHANISM, NO_EFFECT, N, POINT, PREDICTION,
    NO_ESTIMATE, RANGE, R, WORKLOAD, Estimate, beyond_noise, change, judge_count, judge_direction, judge_holds,
    judge_no_effect, judge_order, judge_point, judge_range, relative, welch, worst,
)

#: What each set's common.py re-exports to its figure scripts (``from runkit import *``).
__all__ = [
    "AMBIGUOUS", "CALIBRATION", "D", "DIRECTION", "EXTRA", "MEASURED", "MECHANISM", "NO_EFFECT", "NO_ESTIMATE", "N", "OUT",
    "POINT", "PREDICTION", "R", "RANGE", "WORKLOAD", "Case", "Claim", "Estimate", "Settings", "aggregate",
    "bar_plot", "beyond_noise", "change", "console", "est", "figure_main", "finite", "judge_count",
    "judge_direction", "judge_holds", "judge_no_effect", "interval_bars", "items_text", "judge_order", "judge_point", "judge_range",
    "line_plot", "min_n", "out_dir", "param_default", "parse_args", "per_seed_ratio", "relative", "report", "require_workload",
    "run_cases", "run_set", "seed_values", "use_quick_outputs", "welch", "worst", "write_csv",
]

# Wide enough for the claim tables when output goes to a file or a pipe.
console = Console(width=None if Console().is_terminal else 160)


class Outputs:
    """Where a set writes: figures under ``root``, saved runs under ``root/.runs`` (kept apart so
    the CSV/PNG outputs stay small)."""

    def __init__(self, root: Path | None = None):
        self.root = Path(root) if root is not None else Path("out")

    def set_root(self, root: Path) -> None:
        self.root = Path(root)

    @property
    def runs(self) -> Path:
        return self.root / ".runs"


#: The running set's outputs; its common.py sets the root at import.
OUT = Outputs()


# --- Settings shared by every script -------------------------------------------------------------


@dataclass
class Settings:
    """What a script run asks for: quick or full, how many seeds, how many processes."""

    quick: bool = False
    seeds: int | None = None  # None: the script's default
    processes: int = 2

    def seed_list(self, full: int = protocol.MIN_SEEDS) -> list[int]:
        """Seeds 1..n: ``full`` for a full run, never fewer than the protocol's ``MIN_SEEDS``
        (docs/validation.md); one with --quick; ``--seeds`` overrides both."""
        n = self.seeds if self.seeds is not None else (1 if self.quick else max(full, protocol.MIN_SEEDS))
        return list(range(1, n + 1))

    def duration(self, full: str, quick: str) -> str:
        return quick if self.quick else full


def parse_args(doc: str | None) -> Settings:
    parser = argparse.ArgumentParser(description=(doc or "").strip().splitlines()[0] if doc else None)
    parser.add_argument("--quick", action="store_true", help="one seed and short runs (a smoke run)")
    parser.add_argument("--seeds", type=int, default=None, help="number of seeds (default: the figure's)")
    parser.add_argument("--processes", type=int, default=2, help="worker processes (default 2)")
    a = parser.parse_args()
    if a.seeds is not None and a.seeds < 1:
        parser.error(f"--seeds: expected at least 1, got {a.seeds}")
    if a.processes < 1:
        parser.error(f"--processes: expected at least 1, got {a.processes}")
    if a.quick:
        use_quick_outputs()
    return Settings(quick=a.quick, seeds=a.seeds, processes=a.processes)


def use_quick_outputs() -> None:
    """Send outputs to ``<root>/quick/`` so a --quick run never overwrites the full results."""
    OUT.set_root(OUT.root / "quick")


# --- Running -------------------------------------------------------------------------------------


@dataclass
class Case:
    """One scenario of a figure (without seed and duration) and the labels that identify it."""

    labels: dict
    scenario: dict
    duration: str | None = None  # None: the figure's duration


def _source(fig: str, labels: dict, seed: int) -> str:
    return f"{fig}[" + ",".join(f"{k}={v}" for k, v in labels.items()) + f",seed={seed}]"


def run_cases(fig: str, cases: Sequence[Case], seeds: Sequence[int], duration: str,
              settings: Settings, out_root: Path | None = None) -> pd.DataFrame:
    """Run every case on every seed and return one row per (case, seed, VM).

    Rows hold every vms.csv column, every metrics.csv metric of that VM as a column, ``sim_s``
    (simulated seconds), the case's labels and ``ms_per_unit`` (execution time per unit of
    progress, NaN when there was none): ``vcpusim.sweep_cases``'s table in the layout of the
    runs.csv files. Runs are saved under ``out_root/<fig>/`` as they finish, each in a folder
    named by a hash of its scenario: a rerun, or a changed set, computes only the runs not saved yet.
    """
    labelled = []
    for case in cases:
        for seed in seeds:
            data = dict(case.scenario)
            # A case may carry other [run] keys (say sample_every); duration and seed are the set's.
            data["run"] = {**data.get("run", {}), "duration": case.duration or duration, "seed": seed}
            labelled.append((case.labels, vcpusim.Scenario.from_dict(data, _source(fig, case.labels, seed))))
    runs_dir = Path(out_root if out_root is not None else OUT.runs) / fig
    df = vcpusim.sweep_cases(labelled, runs_dir=runs_dir, processes=settings.processes, labels_first=False)
    df = df.drop(columns=vcpusim.grids.RUN_COLUMN)
    progress = df["progress"].astype(float)
    df["ms_per_unit"] = np.where(progress > 0, df["sim_s"] * 1e3 / progress.where(progress > 0, 1), np.nan)
    # LHPs by lock class are only reported for classes that had one: absent means zero.
    lhp_cols = [c for c in df.columns if c.startswith("lhp_count[")]
    df[lhp_cols] = df[lhp_cols].fillna(0)
    return df


# --- Aggregating and writing ---------------------------------------------------------------------


def aggregate(df: pd.DataFrame, by: Sequence[str], values: Sequence[str]) -> pd.DataFrame:
    """Per group ``by`` (the seeds of one point): ``vcpusim.aggregate``'s ``<value>_mean``,
    ``_std``, ``_min``, ``_max`` and ``n`` (rows), then its 95% Student-t interval ``<value>_lo``,
    ``_hi`` (the protocol's: both are ``vcpusim.stats.Estimate``) and ``<value>_n``, the finite
    values it is taken over (``Estimate.of_row`` reads them back), in that column order."""
    out = vcpusim.aggregate(df, by, values)
    g = df.groupby(list(by), sort=False)
    for v in values:
        out[f"{v}_n"] = g[v].count().to_numpy()
    order = [*by, *(f"{v}_{s}" for v in values for s in ("mean", "std", "min", "max")), "n",
             *(f"{v}_{s}" for v in values for s in ("lo", "hi", "n"))]
    return out[order]


def seed_values(df: pd.DataFrame, value: str, **labels) -> list[float]:
    """``value`` of the rows whose columns equal ``labels``, one per seed in seed order: two
    calls with the same seeds give lists paired on the seed (``protocol.change(..., paired=True)``).
    A seed that appears twice is an error (the labels do not pick one row per seed)."""
    sub = df
    for k, v in labels.items():
        sub = sub[sub[k] == v]
    if sub["seed"].duplicated().any():
        raise ValueError(f"{labels} picks several rows per seed; add the labels that tell them apart")
    return [float(x) for x in sub.sort_values("seed")[value]]


def min_n(estimates) -> int:
    """Seeds per point of a claim over several items: the fewest any item had (0 for none)."""
    return min((e.n for e in estimates), default=0)


def items_text(items: dict, digits: int = 1, pct: bool = True, unit: str = "") -> str:
    """``name mean [lo, hi], ...``: each item of a claim over several items, for its ``ours``."""
    return ", ".join(f"{k} {e.text(digits, pct=pct, unit=unit)}" for k, e in items.items()) or "not run"


def est(row, value: str) -> Estimate:
    """The estimate of ``value`` in an aggregate row (``aggregate``'s mean, interval and count)."""
    return Estimate.of_row(row, value)


def out_dir(fig: str) -> Path:
    d = OUT.root / fig
    d.mkdir(parents=True, exist_ok=True)
    return d


def write_csv(df: pd.DataFrame, fig: str, name: str) -> Path:
    path = out_dir(fig) / f"{name}.csv"
    df.to_csv(path, index=False, float_format="%.6g")
    return path


def _pyplot():
    """matplotlib.pyplot, imported by the first figure drawn (about 0.1 s: in run_set that is the
    drawing thread, so a set's first runs do not wait for it)."""
    import matplotlib.pyplot as plt

    return plt


def bar_plot(agg: pd.DataFrame, x: str, hue: str | None, value: str, ylabel: str, title: str,
             path: Path, hline: float | None = None, log: bool = False) -> Path:
    """Grouped bars of ``<value>_mean`` with the 95% interval as error bars."""
    xs = list(dict.fromkeys(agg[x]))
    hues = list(dict.fromkeys(agg[hue])) if hue else [None]
    width = 0.8 / len(hues)
    fig, ax = _pyplot().subplots(figsize=(min(16, max(6, 0.22 * len(xs) * len(hues) + 3)), 4.5))
    for i, h in enumerate(hues):
        sub = agg if h is None else agg[agg[hue] == h]
        sub = sub.set_index(x).reindex(xs)
        pos = np.arange(len(xs)) + (i - (len(hues) - 1) / 2) * width
        ax.bar(pos, sub[f"{value}_mean"], width, yerr=interval_bars(sub, value), capsize=2,
               label=None if h is None else str(h))
    ax.set_xticks(np.arange(len(xs)))
    ax.set_xticklabels([str(v) for v in xs], rotation=30, ha="right")
    if log:
        ax.set_yscale("log")
    if hline is not None:
        ax.axhline(hline, color="grey", lw=0.8, ls="--")
    return _save(fig, ax, None, ylabel, title, bool(hue), path)


def line_plot(agg: pd.DataFrame, x: str, hue: str | None, value: str, xlabel: str, ylabel: str,
              title: str, path: Path) -> Path:
    """One line of ``<value>_mean`` per ``hue`` with its 95% interval as a band."""
    fig, ax = _pyplot().subplots(figsize=(6, 4))
    for h in (list(dict.fromkeys(agg[hue])) if hue else [None]):
        sub = agg if h is None else agg[agg[hue] == h]
        sub = sub.sort_values(x)
        ax.plot(sub[x], sub[f"{value}_mean"], marker="o", label=None if h is None else str(h))
        ax.fill_between(sub[x], sub[f"{value}_lo"].fillna(sub[f"{value}_mean"]),
                        sub[f"{value}_hi"].fillna(sub[f"{value}_mean"]), alpha=0.2)
    return _save(fig, ax, xlabel, ylabel, title, bool(hue), path)


def interval_bars(sub: pd.DataFrame, value: str) -> np.ndarray:
    """matplotlib's asymmetric ``yerr`` for the 95% interval (zero where there is none)."""
    mean = sub[f"{value}_mean"].to_numpy(dtype=float)
    lo = np.nan_to_num(mean - sub[f"{value}_lo"].to_numpy(dtype=float))
    hi = np.nan_to_num(sub[f"{value}_hi"].to_numpy(dtype=float) - mean)
    return np.vstack([lo, hi])


def _save(fig, ax, xlabel: str | None, ylabel: str, title: str, legend: bool, path: Path) -> Path:
    """Label the axes, add the legend when there are series, write the PNG and free the figure."""
    if xlabel is not None:
        ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    if legend:
        ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    _pyplot().close(fig)
    return path


# --- Claims --------------------------------------------------------------------------------------


@dataclass(kw_only=True)
class Claim:
    """One claim of a paper beside ours, judged by the protocol (docs/validation.md).

    ``id`` is unique within its figure script (the ledger names it ``<FIG>.<id>``); ``paper`` is
    the paper's value as quoted and ``source`` where the seed states it (its section, figure or
    table); ``verdict`` comes from a ``protocol.judge_*`` function; ``estimate`` is our mean and
    interval when the claim rests on one value (``n`` otherwise: the seeds per point); ``cause``
    says why a prediction misses (``protocol.CAUSES``; left out of the outputs when it is R)."""

    id: str
    figure: str
    claim: str
    paper: str
    source: str
    ours: str
    verdict: str
    kind: str = PREDICTION
    type: str = POINT
    estimate: Estimate | None = None
    n: int | None = None
    cause: str = ""
    note: str = ""

    def __post_init__(self) -> None:
        for field, value, allowed in (("kind", self.kind, protocol.KINDS), ("type", self.type, protocol.TYPES),
                                      ("verdict", self.verdict, protocol.VERDICTS),
                                      ("cause", self.cause, protocol.CAUSES + ("",))):
            if value not in allowed:
                raise ValueError(f"claim {self.id!r}: {field} must be one of {allowed}, got {value!r}")
        if not self.id or any(c in self.id for c in " ,.\n"):
            raise ValueError(f"claim id {self.id!r}: a non-empty slug without spaces, commas or dots")
        if self.n is None and self.estimate is not None:
            self.n = self.estimate.n

    def row(self, fig: str) -> dict:
        """The claims.csv row (docs/validation.md lists the columns)."""
        e = self.estimate
        return {"id": f"{fig}.{self.id}", "figure": self.figure, "claim": self.claim, "kind": self.kind,
                "type": self.type, "paper": self.paper, "source": self.source, "ours": self.ours,
                "mean": e.mean if e else math.nan, "ci_lo": e.lo if e else math.nan,
                "ci_hi": e.hi if e else math.nan, "n_seeds": self.n, "verdict": self.verdict,
                "cause": self.cause if self.verdict != R else "", "note": self.note}


#: claims.csv's columns, in order.
CLAIM_COLUMNS = ("id", "figure", "claim", "kind", "type", "paper", "source", "ours", "mean", "ci_lo", "ci_hi",
                 "n_seeds", "verdict", "cause", "note")


def finite(x) -> bool:
    """A value a claim can be judged on: not None and not NaN."""
    return x is not None and not (isinstance(x, float) and math.isnan(x))


_CATALOG: dict[str, dict] | None = None


def require_workload(name: str) -> str:
    """``name`` if this build of vcpusim has that workload; else a clear exit (not a traceback)."""
    global _CATALOG
    if _CATALOG is None:
        _CATALOG = {w["name"]: w for w in vcpusim.catalog()["workloads"]}
    if name not in _CATALOG:
        raise SystemExit(f"workload {name!r} is not in this build of vcpusim; rebuild with `pip install .`")
    return name


def param_default(workload: str, param: str):
    """The default of ``workload``'s parameter ``param``, from the catalog of this build."""
    require_workload(workload)
    return {p["name"]: p for p in _CATALOG[workload]["params"]}[param]["default"]



def report(fig: str, claims: Sequence[Claim]) -> Path:
    """Print the claim-vs-ours table and write it to ``out/<fig>/claims.csv``."""
    ids = [c.id for c in claims]
    if len(set(ids)) != len(ids):
        raise ValueError(f"{fig}: claim ids repeat: {sorted({i for i in ids if ids.count(i) > 1})}")
    table = Table(title=f"{fig}: the paper's claims vs ours", show_lines=True)
    for col in ("id", "figure", "claim", "paper", "ours", "verdict"):
        table.add_column(col, overflow="fold")
    colour = {R: "green", D: "yellow", N: "red"}
    for c in claims:
        # Claim texts are data, not markup: "barrier_waits[departure]" must print as written.
        ours = escape(c.ours) + (f"\n[dim]{escape(c.note)}[/dim]" if c.note else "")
        kind = "" if c.kind == PREDICTION else f" [dim]({c.kind})[/dim]"
        table.add_row(escape(c.id), escape(c.figure), escape(c.claim), f"{escape(c.paper)}\n[dim]{escape(c.source)}[/dim]",
                      ours, f"[{colour[c.verdict]}]{c.verdict}[/]{kind}")
    (getattr(_drawing, "console", None) or console).print(table)
    df = pd.DataFrame([c.row(fig) for c in claims], columns=list(CLAIM_COLUMNS))
    return write_csv(df, fig, "claims")


def per_seed_ratio(df: pd.DataFrame, value: str, keys: Sequence[str], ref_col: str, ref_val,
                   name: str) -> pd.DataFrame:
    """Add column ``name`` = value / value of the reference row (``ref_col == ref_val``) with the
    same ``keys`` (seed included), so ratios are paired on one seed before averaging."""
    ref = df[df[ref_col] == ref_val][list(keys) + [value]].rename(columns={value: "_ref"})
    out = df.merge(ref, on=list(keys), how="left")
    out[name] = out[value] / out["_ref"]
    return out.drop(columns="_ref")


# --- Whole figures and whole sets ----------------------------------------------------------------


def figure_main(fig: str, measure: Callable, write_outputs: Callable, claims: Callable) -> Callable:
    """The ``main(settings)`` of a figure script whose steps are measure -> write CSV/PNG (returning
    the aggregate) -> claims: runs them, prints and writes the claim table, returns the claims."""

    def finish(measured) -> list[Claim]:
        found = claims(write_outputs(measured))
        report(fig, found)
        return found

    def main(settings: Settings) -> list[Claim]:
        return finish(measure(settings))

    # run_set runs the two stages apart: a figure's outputs are drawn while the next one's runs go.
    main.measure, main.finish = measure, finish  # type: ignore[attr-defined]
    return main


#: In run_set's drawing thread: ``console``, a Console that records what ``report`` prints there
#: (printed by the main thread when the figure is collected, not over the next sweep's progress bar).
_drawing = threading.local()


def _finish_recorded(finish: Callable, measured) -> tuple[list[Claim], str, float]:
    """``finish(measured)``, what it printed, and when it ended (``time.perf_counter``)."""
    out = io.StringIO()
    _drawing.console = Console(file=out, width=console.width, force_terminal=console.is_terminal,
                               color_system=console.color_system)
    try:
        found = finish(measured)
        return found, out.getvalue(), time.perf_counter()
    finally:
        del _drawing.console


def run_set(title: str, figures: Sequence[str], doc: str | None) -> None:
    """Run every figure script of a set (each module's ``main(settings)``; a ``figure_main``'s
    drawing overlaps the next figure's runs), time each (from its first run to its last output,
    so overlapping figures' seconds add up to more than the total), and write ``claims_all.csv``
    (every claim beside ours, the columns of docs/validation.md) and ``run_all_times.csv`` (with
    each figure's prediction verdicts) under ``OUT.root``."""
    settings = parse_args(doc)
    times, claims = [], []
    start = time.perf_counter()

    def collect(name: str, seconds: float, figure_claims: list[Claim]) -> None:
        fig = getattr(sys.modules[name], "FIG", name)
        verdicts = [c.verdict for c in figure_claims if c.kind == PREDICTION]
        times.append({"figure": name, "seconds": round(seconds, 1), "claims": len(figure_claims),
                      "predictions": len(verdicts), **{v: verdicts.count(v) for v in protocol.VERDICTS}})
        claims.extend({"script": name, **c.row(fig)} for c in figure_claims)

    # A figure made with figure_main is measured here, then drawn (CSV, PNG, claims) in one drawing
    # thread while the next figure's runs go: the runs keep both cores busy meanwhile, where the
    # drawing alone kept one. Figures are collected in order; their outputs are the same files.
    drawing: tuple[str, float, Future] | None = None

    def collect_drawn() -> None:
        nonlocal drawing
        if drawing is not None:
            name, t0, future = drawing
            drawing = None
            figure_claims, printed, ended = future.result()
            console.file.write(printed)
            collect(name, ended - t0, figure_claims)

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="draw") as drawer:
        for name in figures:
            console.rule(name)
            main = importlib.import_module(name).main
            t0 = time.perf_counter()
            if hasattr(main, "finish"):
                measured = main.measure(settings)
                collect_drawn()
                drawing = (name, t0, drawer.submit(_finish_recorded, main.finish, measured))
            else:
                collect_drawn()
                figure_claims = main(settings)
                collect(name, time.perf_counter() - t0, figure_claims)
        collect_drawn()
    total = time.perf_counter() - start
    times.append({"figure": "total", "seconds": round(total, 1), "claims": len(claims),
                  **{k: sum(t[k] for t in times) for k in ("predictions",) + protocol.VERDICTS}})
    OUT.root.mkdir(parents=True, exist_ok=True)  # out/, or out/quick/ with --quick
    pd.DataFrame(claims, columns=["script", *CLAIM_COLUMNS]).to_csv(OUT.root / "claims_all.csv", index=False,
                                                                    float_format="%.6g")
    pd.DataFrame(times).to_csv(OUT.root / "run_all_times.csv", index=False)

    table = Table(title=f"{title} ({'quick' if settings.quick else 'full'}), {settings.processes} processes")
    for col in times[0]:
        table.add_column(col, justify="left" if col == "figure" else "right")
    for t in times:
        table.add_row(*(str(v) for v in t.values()))
    console.print(table)
