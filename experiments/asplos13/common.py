"""Shared machinery of the seed-000 experiment scripts (Kim et al., "Demand-based coordinated
scheduling for SMP VMs", ASPLOS'13: ../shared/seeds/000_43dd62cb774fc5d7.txt).

One place for the paper's setup (section 4: 8 pCPUs without SMT, 8-vCPU VMs for parallel
applications, 1-vCPU "UP" VMs, equal shares, no PLE on the main Xeon X5550 host), for the five
scheduling configurations of section 4 (Figures 8, 9, 11) and for the pipeline every script
shares: build scenarios from dicts, run them over seeds with ``vcpusim.run_many`` (two processes,
saved as they finish so a rerun resumes), turn the runs into one long table, aggregate mean and
spread over seeds, write CSV and PNG, and print the paper's claims beside ours.

"Execution time" is measured the same way in every script: each run lasts a fixed simulated
duration and a workload's time per unit of progress is ``simulated time / progress``. The paper
repeats every workload of a mix until all executions overlap (section 4), so a rate over a
window where everything runs together is its closest analogue; a normalized execution time is
then a ratio of progress counts over the same window.
"""

from __future__ import annotations

import argparse
import hashlib
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

import vcpusim  # noqa: E402

HERE = Path(__file__).resolve().parent
OUT_ROOT = HERE / "out"
#: Saved runs (one folder per run), kept apart from the figures so the CSV/PNG outputs stay small.
RUNS_ROOT = OUT_ROOT / ".runs"

# Wide enough for the claim tables when output goes to a file or a pipe.
console = Console(width=None if Console().is_terminal else 160)

# --- The paper's setup (seed 000 section 4) ------------------------------------------------------

PCPUS = 8  # two quad-core Xeon X5550, hyperthreading disabled
PAR_VCPUS = 8  # "an 8-vCPU VM ... to host a parallel application" (4.1.1), eight threads (3.1)
UP_VMS = 4  # "four 1-vCPU VMs (called UP VMs)" running single-threaded x264 (4.1.2)
# Equal shares per VM (CFS group shares, section 4): every VM keeps the default weight.

#: Section 4.1.1, last paragraph: "we chose 500us as preemption delay and urgent tslice, and 18ms
#: as urgent allowance in the remaining evaluations".
URGENT_TSLICE = "500us"
URGENT_ALLOWANCE = "18ms"
RESCHED_DP = "500us"
#: Section 4.2: a reschedule-IPI recipient is urgent "for 500us, which is the same as the urgent
#: tslice".
RESCHED_CO = "500us"

#: The X5550 host of sections 3-4.2 has no pause-loop exiting.
PLE_OFF = {"enabled": False}
#: Section 4.3: Xeon E5607 (2.27 GHz), PLE_Gap 128 and PLE_Window 4096. KVM in Linux 3.2 keeps the
#: window fixed (ple_window_grow arrived in 3.18), hence grow = 1.
PLE_ON = {"enabled": True, "window_cycles": 4096, "cpu_ghz": 2.27, "grow": 1}

#: PARSEC 2.1 applications as the seed lists them (Table 1, Figure 8).
PARSEC_APPS = (
    "blackscholes", "bodytrack", "canneal", "dedup", "facesim", "ferret", "fluidanimate",
    "freqmine", "raytrace", "streamcluster", "swaptions", "vips", "x264",
)
#: The sequential workload of the UP VMs (section 4.1.2).
UP_APP = "x264-single"

#: Built-in stand-ins for a core built without the PARSEC models (workload name, params).
STAND_INS = {
    "streamcluster": ("barrier", {}),
    "vips": ("tlb", {}),
    "dedup": ("pipeline", {}),
    "x264-single": ("cpu-bound", {}),
}


def _available_workloads() -> set[str]:
    return {w["name"] for w in vcpusim.catalog()["workloads"]}


_WORKLOADS: set[str] | None = None


def workload(app: str) -> tuple[str, dict]:
    """The workload name and default params that model PARSEC application ``app``."""
    global _WORKLOADS
    if _WORKLOADS is None:
        _WORKLOADS = _available_workloads()
    name = f"parsec.{app}"
    if name in _WORKLOADS:
        return name, {}
    if app in STAND_INS:
        return STAND_INS[app]
    raise SystemExit(f"workload {name!r} is not in this build of vcpusim and has no stand-in; "
                     f"rebuild with `pip install .` (available: {sorted(_WORKLOADS)})")


def parallel_vm(name: str, app: str, *, uvf: dict | None = None, params: dict | None = None,
                guest: dict | None = None) -> dict:
    """An 8-vCPU VM running ``app`` with eight threads."""
    wl, base_params = workload(app)
    vm = {"name": name, "vcpus": PAR_VCPUS, "threads": PAR_VCPUS, "workload": wl}
    merged = {**base_params, **(params or {})}
    if merged:
        vm["params"] = merged
    if uvf:
        vm["uvf"] = dict(uvf)
    if guest:
        vm["guest"] = dict(guest)
    return vm


def up_vms(name: str = "up", count: int = UP_VMS) -> dict:
    """``count`` 1-vCPU VMs running single-threaded x264 (section 4.1.2)."""
    wl, params = workload(UP_APP)
    vm = {"name": name, "count": count, "vcpus": 1, "workload": wl}
    if params:
        vm["params"] = params
    return vm


def host(*, placement: str = "default", uvf: dict | None = None, ple: dict = PLE_OFF) -> dict:
    """The 8-pCPU CFS host; ``uvf`` is the ``[host.uvf]`` table (None: the overlay is off)."""
    h = {"pcpus": PCPUS, "policy": "cfs", "placement": placement, "ple": dict(ple)}
    if uvf is not None:
        h["uvf"] = dict(uvf)
    return h


def uvf_host(tslice: str = URGENT_TSLICE, allowance: str = URGENT_ALLOWANCE) -> dict:
    return {"urgent_tslice": tslice, "urgent_allowance": allowance}


@dataclass(frozen=True)
class Config:
    """One scheduling scheme of section 4: a placement and the UVF features of every VM."""

    name: str
    placement: str
    resched_dp: bool = False
    tlb_co: bool = False
    resched_co: bool = False

    @property
    def uses_uvf(self) -> bool:
        return self.resched_dp or self.tlb_co or self.resched_co

    def vm_uvf(self) -> dict | None:
        knobs = {}
        if self.resched_dp:
            knobs["resched_dp"] = RESCHED_DP
        if self.tlb_co:
            knobs["tlb_co"] = True
        if self.resched_co:
            knobs["resched_co"] = RESCHED_CO
        return knobs or None

    def host(self, ple: dict = PLE_OFF) -> dict:
        return host(placement=self.placement, uvf=uvf_host() if self.uses_uvf else None, ple=ple)


BASELINE = Config("Baseline", "default")
BALANCE = Config("Balance", "balance")
LC_BALANCE = Config("LC Balance", "lc-balance")
LC_DP = Config("LC+Resched-DP", "lc-balance", resched_dp=True)
LC_DP_TLB = Config("LC+Resched-DP+TLB-Co", "lc-balance", resched_dp=True, tlb_co=True)
#: The five schemes of Figures 8 and 9 (section 4, "a" to "e" in Figure 9's caption).
FIVE_CONFIGS = (BASELINE, BALANCE, LC_BALANCE, LC_DP, LC_DP_TLB)


def mix_with_up_vms(config: Config, app: str, *, ple: dict = PLE_OFF, guest: dict | None = None) -> dict:
    """Section 4.1.2's mix: ``app`` in an 8-vCPU VM beside four UP VMs running x264, every VM
    with the configuration's UVF features (a host-wide scheme)."""
    uvf = config.vm_uvf()
    up = up_vms()
    if uvf:
        up["uvf"] = uvf
    return {"host": config.host(ple), "vm": [parallel_vm("par", app, uvf=uvf, guest=guest), up]}


def solo(app: str, *, vcpus: int = PAR_VCPUS, params: dict | None = None) -> dict:
    """``app`` alone on the host (the seed's "solorun"), under the default CFS host."""
    if vcpus == 1:
        vm = up_vms("solo", count=1)
        vm.pop("count")
    else:
        vm = parallel_vm("solo", app, params=params)
    return {"host": host(), "vm": [vm]}


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
    """Send outputs to ``out/quick/`` so a --quick run never overwrites the full results."""
    global OUT_ROOT, RUNS_ROOT
    OUT_ROOT = HERE / "out" / "quick"
    RUNS_ROOT = OUT_ROOT / ".runs"


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

    Rows hold the case's labels, ``seed``, every vms.csv column, every metrics.csv metric of
    that VM as a column, ``sim_s`` (simulated seconds) and ``ms_per_unit`` (execution time per
    unit of progress, NaN when there was none). Runs are saved under
    ``out_root/<fig>/<hash of the scenario set>/`` as they finish: rerunning the same set
    resumes, a changed set starts afresh in another folder.
    """
    scenarios, keys = [], []
    for case in cases:
        for seed in seeds:
            data = dict(case.scenario)
            data["run"] = {"duration": case.duration or duration, "seed": seed}
            scenarios.append(vcpusim.Scenario.from_dict(data, _source(fig, case.labels, seed)))
            keys.append((case.labels, seed))
    digest = hashlib.sha256("\0".join(s.source + "\0" + s.text for s in scenarios).encode()).hexdigest()[:12]
    out_dir = Path(out_root if out_root is not None else RUNS_ROOT) / fig / digest
    results = vcpusim.run_many(scenarios, processes=settings.processes, out_dir=out_dir)

    frames = []
    for (labels, seed), result in zip(keys, results):
        vms = result.vms.copy()
        metrics = result.metrics.pivot(index="vm", columns="metric", values="value")
        vms = vms.merge(metrics, left_on="vm", right_index=True, how="left")
        vms["sim_s"] = result.summary["sim_time_ns"] / 1e9
        for k, v in labels.items():
            vms[k] = v
        frames.append(vms)
    df = pd.concat(frames, ignore_index=True)
    progress = df["progress"].astype(float)
    df["ms_per_unit"] = np.where(progress > 0, df["sim_s"] * 1e3 / progress.where(progress > 0, 1), np.nan)
    # LHPs by lock class are only reported for classes that had one: absent means zero.
    lhp_cols = [c for c in df.columns if c.startswith("lhp_count[")]
    df[lhp_cols] = df[lhp_cols].fillna(0)
    return df


def kernel_ratio(df: pd.DataFrame) -> pd.Series:
    """Share of a VM's CPU time in the guest kernel (Figure 2): timed kernel work, kernel
    spinlock spinning, TLB-ack waiting and IPI handlers over all its CPU time."""
    kernel = df["kernel_time_ms"] + df["spin_time_ms"] + df["tlb_wait_ms"] + df["irq_time_ms"]
    return kernel / df["cpu_time_ms"]


# --- Aggregating and writing ---------------------------------------------------------------------


def aggregate(df: pd.DataFrame, by: Sequence[str], values: Sequence[str]) -> pd.DataFrame:
    """Mean, standard deviation, min and max over seeds of each value, per group ``by``.

    Columns: ``by``, then ``<value>_mean``, ``_std``, ``_min``, ``_max``, and ``n`` (runs)."""
    g = df.groupby(list(by), sort=False)
    out = g[list(values)].agg(["mean", "std", "min", "max"])
    out.columns = [f"{v}_{stat}" for v, stat in out.columns]
    out["n"] = g.size()
    return out.reset_index()


def out_dir(fig: str) -> Path:
    d = OUT_ROOT / fig
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


def bar_plot(agg: pd.DataFrame, x: str, hue: str | None, value: str, ylabel: str, title: str,
             path: Path, hline: float | None = None, log: bool = False) -> Path:
    """Grouped bars of ``<value>_mean`` with ``<value>_std`` error bars."""
    xs = list(dict.fromkeys(agg[x]))
    hues = list(dict.fromkeys(agg[hue])) if hue else [None]
    width = 0.8 / len(hues)
    fig, ax = plt.subplots(figsize=(min(16, max(6, 0.22 * len(xs) * len(hues) + 3)), 4.5))
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
    fig, ax = plt.subplots(figsize=(6, 4))
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
    plt.close(fig)
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


def report(fig: str, claims: Sequence[Claim]) -> Path:
    """Print the claim-vs-ours table and write it to ``out/<fig>/claims.csv``."""
    table = Table(title=f"{fig}: the paper's claims vs ours", show_lines=True)
    for col in ("figure", "claim", "paper", "ours", "verdict"):
        table.add_column(col, overflow="fold")
    colour = {REPRODUCED: "green", DIRECTION: "yellow", NOT_REPRODUCED: "red"}
    for c in claims:
        ours = c.ours + (f"\n[dim]{c.note}[/dim]" if c.note else "")
        table.add_row(c.figure, c.claim, c.paper, ours, f"[{colour.get(c.verdict, 'white')}]{c.verdict}[/]")
    console.print(table)
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
