"""The machinery every experiment set shares (experiments/asplos13, experiments/hybrid): settings
from the command line, running scenario cases over seeds with ``vcpusim.sweep_cases`` (saved as they
finish so a rerun resumes), one long table of runs, mean and spread over seeds, CSV and PNG
output, and the paper's claims printed beside ours.

Each set's ``common.py`` points ``OUT`` at its own ``out/`` folder and adds the paper's setup.
A figure script made with ``figure_main(fig, measure, write_outputs, claims)`` runs alone as
before; in a set (``run_set``) its outputs are drawn in a thread while the next figure's runs go.
"""

from __future__ import annotations

import argparse
import importlib
import io
import math
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

try:
    import matplotlib
except ImportError:  # the package itself draws nothing; its figures are an extra
    raise SystemExit("the experiment scripts draw figures with matplotlib: pip install \".[plot]\"") from None

matplotlib.use("Agg")  # files only, no display
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

import vcpusim  # noqa: E402

#: What each set's common.py re-exports to its figure scripts (``from runkit import *``).
__all__ = [
    "DIRECTION", "NOT_REPRODUCED", "OUT", "REPRODUCED", "Case", "Claim", "Settings", "aggregate",
    "bar_plot", "beyond_noise", "console", "figure_main", "finite", "fmt", "judge", "param_default", "require_workload", "line_plot", "out_dir", "parse_args",
    "per_seed_ratio", "report", "run_cases", "run_set", "use_quick_outputs", "verdict", "write_csv",
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

    def seed_list(self, full: int = 3) -> list[int]:
        """Seeds 1..n: ``full`` for a full run (at least three, section 4), one with --quick."""
        n = self.seeds if self.seeds is not None else (1 if self.quick else full)
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


#: Mean, std, min and max over seeds per group (``vcpusim.aggregate``).
aggregate = vcpusim.aggregate


def out_dir(fig: str) -> Path:
    d = OUT.root / fig
    d.mkdir(parents=True, exist_ok=True)
    return d


def write_csv(df: pd.DataFrame, fig: str, name: str) -> Path:
    path = out_dir(fig) / f"{name}.csv"
    df.to_csv(path, index=False, float_format="%.6g")
    return path


def fmt(mean: float, spread: float | None = None, digits: int = 2, pct: bool = False) -> str:
    """``mean ± std`` for the claim tables (NaN spread, from one seed, is left out)."""
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return "n/a"
    scale, unit = (100.0, "%") if pct else (1.0, "")
    s = f"{mean * scale:.{digits}f}{unit}"
    if spread is not None and not (isinstance(spread, float) and math.isnan(spread)):
        s += f" ± {spread * scale:.{digits}f}{unit}"
    return s


def _pyplot():
    """matplotlib.pyplot, imported by the first figure drawn (about 0.1 s: in run_set that is the
    drawing thread, so a set's first runs do not wait for it)."""
    import matplotlib.pyplot as plt

    return plt


def bar_plot(agg: pd.DataFrame, x: str, hue: str | None, value: str, ylabel: str, title: str,
             path: Path, hline: float | None = None, log: bool = False) -> Path:
    """Grouped bars of ``<value>_mean`` with ``<value>_std`` error bars."""
    xs = list(dict.fromkeys(agg[x]))
    hues = list(dict.fromkeys(agg[hue])) if hue else [None]
    width = 0.8 / len(hues)
    fig, ax = _pyplot().subplots(figsize=(min(16, max(6, 0.22 * len(xs) * len(hues) + 3)), 4.5))
    for i, h in enumerate(hues):
        sub = agg if h is None else agg[agg[hue] == h]
        sub = sub.set_index(x).reindex(xs)
        pos = np.arange(len(xs)) + (i - (len(hues) - 1) / 2) * width
        ax.bar(pos, sub[f"{value}_mean"], width, yerr=sub[f"{value}_std"].fillna(0), capsize=2,
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
    """One line of ``<value>_mean`` per ``hue`` with a min-max band."""
    fig, ax = _pyplot().subplots(figsize=(6, 4))
    for h in (list(dict.fromkeys(agg[hue])) if hue else [None]):
        sub = agg if h is None else agg[agg[hue] == h]
        sub = sub.sort_values(x)
        ax.plot(sub[x], sub[f"{value}_mean"], marker="o", label=None if h is None else str(h))
        ax.fill_between(sub[x], sub[f"{value}_min"], sub[f"{value}_max"], alpha=0.2)
    return _save(fig, ax, xlabel, ylabel, title, bool(hue), path)


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

REPRODUCED = "reproduced"
DIRECTION = "direction only"
NOT_REPRODUCED = "not reproduced"


@dataclass
class Claim:
    """One claim of the paper beside our value. ``verdict``: reproduced (same direction and
    within the paper's range), direction only, or not reproduced."""

    figure: str
    claim: str
    paper: str
    ours: str
    verdict: str
    note: str = ""


def verdict(direction: bool, in_range: bool = True) -> str:
    if not direction:
        return NOT_REPRODUCED
    return REPRODUCED if in_range else DIRECTION


def finite(x) -> bool:
    """A value a claim can be judged on: not None and not NaN."""
    return x is not None and not (isinstance(x, float) and math.isnan(x))


def judge(ours: float, paper: float, tol: float = 0.25, direction: bool | None = None) -> str:
    """R when ``ours`` is within ``tol`` (relative) of the paper's value; D when only the direction
    holds (``direction``, default: same sign); N otherwise."""
    if not finite(ours):
        return NOT_REPRODUCED
    same = (ours > 0) == (paper > 0) if direction is None else direction
    if not same:
        return NOT_REPRODUCED
    return REPRODUCED if abs(ours - paper) <= tol * abs(paper) else DIRECTION

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
    table = Table(title=f"{fig}: the paper's claims vs ours", show_lines=True)
    for col in ("figure", "claim", "paper", "ours", "verdict"):
        table.add_column(col, overflow="fold")
    colour = {REPRODUCED: "green", DIRECTION: "yellow", NOT_REPRODUCED: "red"}
    for c in claims:
        ours = c.ours + (f"\n[dim]{c.note}[/dim]" if c.note else "")
        table.add_row(c.figure, c.claim, c.paper, ours, f"[{colour.get(c.verdict, 'white')}]{c.verdict}[/]")
    (getattr(_drawing, "console", None) or console).print(table)
    df = pd.DataFrame([c.__dict__ for c in claims])
    return write_csv(df, fig, "claims")


def per_seed_ratio(df: pd.DataFrame, value: str, keys: Sequence[str], ref_col: str, ref_val,
                   name: str) -> pd.DataFrame:
    """Add column ``name`` = value / value of the reference row (``ref_col == ref_val``) with the
    same ``keys`` (seed included), so ratios are paired on one seed before averaging."""
    ref = df[df[ref_col] == ref_val][list(keys) + [value]].rename(columns={value: "_ref"})
    out = df.merge(ref, on=list(keys), how="left")
    out[name] = out[value] / out["_ref"]
    return out.drop(columns="_ref")


def beyond_noise(agg_a: pd.Series, agg_b: pd.Series, value: str) -> bool:
    """Whether the means of ``value`` in two aggregate rows differ by more than two standard
    errors of their difference (seed-to-seed spread; one seed: any difference counts)."""
    ma, mb = agg_a[f"{value}_mean"], agg_b[f"{value}_mean"]
    sa, sb = agg_a[f"{value}_std"], agg_b[f"{value}_std"]
    if any(isinstance(s, float) and math.isnan(s) for s in (sa, sb)):
        return ma != mb
    se = math.sqrt(sa**2 / agg_a["n"] + sb**2 / agg_b["n"])
    return abs(ma - mb) > 2 * se


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
    (every claim beside ours) and ``run_all_times.csv`` under ``OUT.root``."""
    settings = parse_args(doc)
    times, claims = [], []
    start = time.perf_counter()

    def collect(name: str, seconds: float, figure_claims: list[Claim]) -> None:
        verdicts = [c.verdict for c in figure_claims]
        times.append({"figure": name, "seconds": round(seconds, 1), "claims": len(verdicts),
                      REPRODUCED: verdicts.count(REPRODUCED), DIRECTION: verdicts.count(DIRECTION),
                      NOT_REPRODUCED: verdicts.count(NOT_REPRODUCED)})
        claims.extend({"script": name, **c.__dict__} for c in figure_claims)

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
                  **{v: sum(t[v] for t in times) for v in (REPRODUCED, DIRECTION, NOT_REPRODUCED)}})
    OUT.root.mkdir(parents=True, exist_ok=True)  # out/, or out/quick/ with --quick
    pd.DataFrame(claims).to_csv(OUT.root / "claims_all.csv", index=False)
    pd.DataFrame(times).to_csv(OUT.root / "run_all_times.csv", index=False)

    table = Table(title=f"{title} ({'quick' if settings.quick else 'full'}), {settings.processes} processes")
    for col in times[0]:
        table.add_column(col, justify="left" if col == "figure" else "right")
    for t in times:
        table.add_row(*(str(v) for v in t.values()))
    console.print(table)
