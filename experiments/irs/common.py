"""Shared setup of the seed-003 experiment scripts (IRS, "Interference-Resilient Scheduling",
Zhao, Rao et al.: ../shared/seeds/003_1735afc6a4bd8306.txt, slides 5 and 12-18).

One place for the slides' host and VMs: 4 pCPUs under Xen credit (``xen = "4.4"``: the IRS work's
Xen 4.5 is not modelled and schedules as 4.4 on one NUMA node without soft affinity, docs/model.md
"§ seed 003: IRS"), a 4-vCPU parallel VM ("par") whose vCPU i is pinned on pCPU i, and
single-vCPU CPU hogs ("noise<k>", ``cpu-bound``) pinned on pCPU k, one per interfered vCPU
(slide 5's picture: "single-thread interfering program" on each of the parallel VM's pCPUs).

**Schemes** (slides 4, 12-13): ``vanilla`` (credit, pause-loop exiting off), ``ple`` (credit
with ``[host.ple]`` as it is), ``relaxed-co`` (``overlay = "relaxed-co"``, VMware ESX 4.x relaxed
co-scheduling), ``irs`` (``overlay = "irs"`` with the guest's SA receiver and
migrator) and ``irs-nomig`` (IRS without the migrator, slide 18). PLE is off in every scheme but
``ple`` so that each differs from vanilla in one thing. A scheme this build refuses is reported
by :func:`available`; its claims are then N, "not measured" (:func:`unmeasured_claim`).

**Every figure draws from one pool of runs.** A run is a *point* (bench, scheme, noise, layout,
bg, seed); its scenario depends only on the point, so slide 12 and slide 16 share their
1/2/4-interferer runs and every figure shares the vanilla runs. Runs are saved under
``out/.runs/pool/`` as they finish (``runkit.run_cases``): a killed sweep loses nothing.

**Performance** is progress per simulated second over a fixed run (vms.csv ``progress`` /
``sim_s``): the PARSEC models run their parallel phase without end (docs/model.md §10.1), and
the NPB runs are given enough ``rounds`` never to finish, so both are measured the same way.
"Improvement" is performance under a scheme over vanilla's on the same seed, minus 1 (slides
12-16: "higher is better"). Seeds are paired: interferers and workload draw the same numbers.

**Judging** (docs/validation.md, ``protocol.py``; nothing here sets a band or a threshold). A
claim about one program is judged on that program's change over vanilla, paired on the seed
(``protocol.change``). A claim the slides make about a suite ("Improvement on PARSEC
performance", slide 16's one trend line) is judged on the suite's mean improvement: per seed, the
mean over the suite's programs of their improvement on that seed (:func:`suite`), then the mean
and 95% interval over seeds; two schemes, or two levels of interference, are compared by the
per-seed differences of those means (:func:`paired_diff`). Where the slides state a claim at
several levels of interference, each level is an item and the claim takes the lowest verdict
(``worst``).

**Shortened, stated.** The slides' runs are whole benchmark runs; ours are ``DURATION`` of
simulated time (5 s, 1 s with --quick), seeds 1-5 (``Settings.seed_list``: the protocol's
minimum; the slides do not say how many runs they averaged), and a subset of PARSEC and NPB
(below). NPB steps are class A's, each ``NPB_STEP_WORK`` of serial work (a shorter step than
class A's so that a 2 s run holds many barriers: a stated departure, the sync pattern per step is
the model's).

Nothing here is fitted to a slide's number. One slide number is an input: slide 7's 20-26 us from
notice to switch is set by ``NOTIFY_DELAY`` (23 us, ``[host.irs] notify_delay``) and the guest
handler's 20 us (``irs_handler``, the model's default), so slide 12's row for it is a calibration.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

import vcpusim

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # experiments/, for the shared runkit

from runkit import *  # noqa: E402,F401,F403  (re-exported for the figure scripts: runkit.__all__)
from runkit import Case, Settings, run_cases  # noqa: E402

OUT.set_root(HERE / "out")

# --- The slides' host and VMs --------------------------------------------------------------------

PCPUS = 4
VCPUS = 4
#: The IRS work ran Xen 4.5; 4.4 is the nearest modelled credit (docs/model.md § seed 003: IRS).
XEN = "4.4"
#: Slide 7: "20-26 us delay" from notice to switch; 23 us is its middle (docs/model.md § seed 003:
#: IRS). An input of the IRS model, with the guest's 20 us ``irs_handler``: slide 12's row for slide
#: 7 is a calibration.
NOTIFY_DELAY = "23us"

DURATION = ("5s", "1s")  # (full, --quick)

VANILLA, PLE, RELAXED_CO, DELAY_PREEMPT, IRS, IRS_NOMIG = (
    "vanilla", "ple", "relaxed-co", "delay-preempt", "irs", "irs-nomig")
SCHEME_LABEL = {VANILLA: "vanilla Xen", PLE: "PLE", RELAXED_CO: "relaxed-Co", DELAY_PREEMPT: "delay-preempt",
                IRS: "IRS", IRS_NOMIG: "IRS w/o migrator"}

# --- Workloads -----------------------------------------------------------------------------------

#: PARSEC in blocking mode (every parsec.* model's default, docs/model.md § seed 003: workloads).
#: The slides do not list their PARSEC programs; a subset covering the model's shapes: barrier
#: workers (streamcluster, fluidanimate), task/lock workers (bodytrack, canneal, facesim,
#: raytrace, blackscholes, swaptions), pipelines (dedup, ferret) and x264's frame wavefront.
PARSEC = ("blackscholes", "bodytrack", "canneal", "dedup", "facesim", "ferret", "fluidanimate",
          "raytrace", "streamcluster", "swaptions", "x264")
#: Slide 12: "pipeline parallelism leaves little room for performance improvement".
PIPELINE = ("dedup", "ferret")
QUICK_PARSEC = ("bodytrack", "dedup", "streamcluster")

#: NPB with spinning waits (OMP_WAIT_POLICY=active), class A steps. The slides do not list theirs.
NPB = ("bt", "cg", "ep", "ft", "is", "lu", "mg", "sp", "ua")
QUICK_NPB = ("cg", "ep")
NPB_WAIT = "active"
#: Serial work of one NPB step (``scale`` is chosen per benchmark to give it): 20 ms, 5 ms at 4
#: threads, so a 2 s run holds hundreds of steps. A stated shortening, not a calibration.
NPB_STEP_WORK_MS = 20.0
#: Enough back-to-back runs that no NPB run finishes within DURATION.
NPB_ROUNDS = 1000

#: Slide 5's "user-level work stealing": seed 001's Tascell fib (the only work-stealing model), one
#: run of FIB_SERIAL of 1-thread work to completion (performance = 1 / its time).
FIB = "fib"
FIB_SERIAL = "8s"
FIB_LIMIT = "60s"

#: Slide 14: ApacheBench against httpd's worker MPM (ab's defaults: concurrency 100, assumed).
AB = "ab"

def workload_name(bench: str) -> str:
    """``streamcluster`` -> parsec.streamcluster, ``cg`` -> npb.cg, ``ab``; a clear exit if missing."""
    name = {AB: AB, FIB: "tascell.fib"}.get(bench) or (f"npb.{bench}" if bench in NPB else f"parsec.{bench}")
    return require_workload(name)


def npb_scale(bench: str) -> float:
    """``scale`` giving one step NPB_STEP_WORK_MS of serial work (the model's class A work per
    step is its serial runtime / steps: workload/builtin/npb)."""
    steps = int(param_default(workload_name(bench), "steps"))
    return NPB_STEP_WORK_MS / (NPB_SERIAL_S[bench] * 1e3 / steps)


#: Class A serial runtimes of the NPB models (workload/builtin/npb/<name>.rs ``serial_runtime``).
NPB_SERIAL_S = {"bt": 168, "cg": 5, "dc": 30, "ep": 21, "ft": 9, "is": 1.7, "lu": 119, "mg": 4.5,
                "sp": 121, "ua": 60}


def par_vm(bench: str, scheme: str, name: str = "par", cpus=None) -> dict:
    """The parallel VM: 4 vCPUs, vCPU i pinned on pCPU i (``cpus=None``) unless ``cpus`` says
    otherwise ("" = unpinned), its guest registered for IRS's notice under the IRS schemes."""
    workload = workload_name(bench)
    vm = {"name": name, "vcpus": VCPUS, "workload": workload}
    if workload.startswith("npb."):
        vm["params"] = {"wait": NPB_WAIT, "scale": npb_scale(bench), "rounds": NPB_ROUNDS}
        vm["threads"] = VCPUS
    elif bench == FIB:
        vm.update({"threads": VCPUS, "iterations": 1, "params": {"serial": FIB_SERIAL}})
    elif workload == AB:
        pass  # 26 threads: the listener and ThreadsPerChild = 25 workers
    elif not _is_pipeline(bench):
        vm["threads"] = VCPUS
    # Pipelines: PARSEC's `-n 4` (every parallel stage 4 threads), the model's default.
    if cpus is None:
        vm["cpus"] = [str(i) for i in range(VCPUS)]
    elif cpus != "":
        vm["cpus"] = cpus
    if scheme in (IRS, IRS_NOMIG):
        vm["guest"] = {"irs": True}
    return vm


def _is_pipeline(bench: str) -> bool:
    return bench in PIPELINE or bench == "x264"


def noise_vms(n: int, pinned: bool = True) -> list[dict]:
    """``n`` single-vCPU CPU hogs, hog k pinned on pCPU k (slide 5), or unpinned (slide 17)."""
    vms = []
    for k in range(n):
        vm = {"name": f"noise{k}", "vcpus": 1, "workload": "cpu-bound"}
        if pinned:
            vm["cpus"] = [str(k)]
        vms.append(vm)
    return vms


def host(scheme: str, pcpus: int = PCPUS) -> dict:
    h = {"pcpus": pcpus, "policy": "credit", "params": {"xen": XEN}, "ple": {"enabled": scheme == PLE}}
    if scheme in (IRS, IRS_NOMIG):
        h["overlay"] = "irs"
        h["irs"] = {"notify_delay": NOTIFY_DELAY, "migrator": scheme == IRS}
    elif scheme in (RELAXED_CO, DELAY_PREEMPT):
        h["overlay"] = scheme
    return h


#: Layouts: ``pinned`` (slide 5: par's vCPU i and hog i on pCPU i), ``solo`` (par alone, pinned),
#: ``pair`` (slide 15: a foreground and a background 4-vCPU PARSEC VM, each vCPU i on pCPU i),
#: ``stacking`` (slide 17: 3 pCPUs, a 3-thread par and 2 hogs, nothing pinned).
def scenario(bench: str, scheme: str, noise: int, layout: str = "pinned", bg: str = "") -> dict:
    if layout == "stacking":
        vm = par_vm(bench, scheme, cpus="")
        vm["vcpus"] = 3
        vm["threads"] = 3
        return {"host": host(scheme, pcpus=3), "vm": [vm] + noise_vms(noise, pinned=False)}
    vms = [par_vm(bench, scheme)]
    if layout == "pair":
        # Our reading of slide 15: only the foreground guest runs IRS's receiver.
        vms.append(par_vm(bg, VANILLA, name="bg"))
    elif layout == "solo":
        noise = 0
    vms += noise_vms(noise)
    return {"host": host(scheme), "vm": vms}


_AVAILABLE: dict[str, str | None] = {}


def available(scheme: str) -> str | None:
    """None when this build runs ``scheme``, else the loader's reason (say a build without the
    relaxed-co overlay): that scheme's claims are then N, "not measured" (:func:`unmeasured_claim`)."""
    if scheme not in _AVAILABLE:
        data = {**scenario("streamcluster", scheme, 1), "run": {"duration": "1ms", "seed": 1}}
        try:
            vcpusim.Scenario.from_dict(data, f"probe[{scheme}]")
            _AVAILABLE[scheme] = None
        except Exception as e:  # noqa: BLE001  (the loader's own error is the reason)
            _AVAILABLE[scheme] = str(e).strip().splitlines()[0]
    return _AVAILABLE[scheme]


def schemes_run(schemes) -> list[str]:
    return [s for s in schemes if available(s) is None]


# --- Running the pool ----------------------------------------------------------------------------

LABELS = ("bench", "scheme", "noise", "layout", "bg")


def run_points(points, settings: Settings, seeds=None) -> pd.DataFrame:
    """Run every point (bench, scheme, noise, layout, bg) on every seed (saved under
    ``out/.runs/pool``, shared by all scripts) and return one row per (run, VM) with ``perf``
    (progress per simulated second) and ``seed``."""
    seeds = seeds or settings.seed_list()
    points = list(dict.fromkeys(points))
    cases = [Case(dict(zip(LABELS, p)), scenario(*p), FIB_LIMIT if p[0] == FIB else None) for p in points]
    df = run_cases("pool", cases, seeds, settings.duration(*DURATION), settings)
    # A run stops early only when its programs finished (tascell fib): sim_s is then its time.
    df["perf"] = pd.to_numeric(df["progress"], errors="coerce") / df["sim_s"]
    return df.reset_index(drop=True)


def point(bench, scheme, noise, layout="pinned", bg=""):
    return (bench, scheme, int(noise), layout, bg)


def par_rows(df: pd.DataFrame, vm: str = "par") -> pd.DataFrame:
    return df[df["vm"] == vm].copy()


def improvement(df: pd.DataFrame, keys=("bench", "noise", "layout", "bg"), value: str = "perf",
                ref: str = VANILLA) -> pd.DataFrame:
    """Add ``improvement`` = value / vanilla's value on the same point and seed - 1."""
    out = per_seed_ratio(df, value, list(keys) + ["seed"], "scheme", ref, "ratio")
    out["improvement"] = out["ratio"] - 1
    return out


# --- Measures ------------------------------------------------------------------------------------


def noise_levels(settings: Settings, full=(1, 2, 4), quick=(1, 4)) -> tuple[int, ...]:
    return quick if settings.quick else full


def parsec_set(settings: Settings) -> tuple[str, ...]:
    return QUICK_PARSEC if settings.quick else PARSEC


def npb_set(settings: Settings) -> tuple[str, ...]:
    return QUICK_NPB if settings.quick else NPB


#: metrics.csv rows of the overlay runs (docs/scenario-format.md), NaN-free: absent = 0.
OVERLAY_METRICS = ("preempt_notices", "preempt_acks", "preempt_timeouts", "notify_to_switch_mean_us",
                   "notify_to_switch_max_us", "irs_migrations", "irs_wake_preemptions")


def compare(benches, schemes, noises, settings: Settings, seeds=None, layout: str = "pinned") -> pd.DataFrame:
    """The parallel VM's rows of every (bench, scheme, noise) point plus vanilla's (the
    reference), with ``improvement`` over vanilla on the same seed. Schemes this build refuses
    are left out (see :func:`available`)."""
    run = [VANILLA] + [s for s in schemes_run(schemes) if s != VANILLA]
    pts = [point(b, s, n, layout) for b in benches for s in run for n in noises]
    df = par_rows(run_points(pts, settings, seeds))
    for m in OVERLAY_METRICS + ("runnable_wait_mean_us",):
        df[m] = pd.to_numeric(df[m], errors="coerce").fillna(0.0) if m in df else 0.0
    return improvement(df)


def select(df: pd.DataFrame, **where) -> pd.DataFrame:
    """The rows whose columns equal ``where``'s values (a list, tuple or set: any of them)."""
    sub = df
    for k, v in where.items():
        sub = sub[sub[k].isin(list(v))] if isinstance(v, (list, tuple, set)) else sub[sub[k] == v]
    return sub


def suite(df: pd.DataFrame, scheme: str, noise: int, benches=None, value: str = "improvement") -> pd.Series:
    """Per seed (the index), the mean of ``value`` over the programs ``benches`` (default: every
    program ``df`` holds) under ``scheme`` with ``noise`` interfering VMs: the suite's improvement
    on that seed. A seed that lacks one of the programs gives NaN (left out by ``Estimate.of``)."""
    sub = select(df, scheme=scheme, noise=noise)
    if benches is not None:
        sub = sub[sub["bench"].isin(list(benches))]
    if sub.duplicated(["bench", "seed"]).any():
        raise ValueError(f"{scheme} at {noise}: several rows per program and seed")
    if sub.empty:
        return pd.Series(dtype=float)
    return sub.pivot(index="seed", columns="bench", values=value).mean(axis=1, skipna=False)


def estimate(per_seed: pd.Series) -> Estimate:
    """Mean and 95% interval over seeds of one value per seed."""
    return Estimate.of(per_seed.tolist())


def paired_diff(a: pd.Series, b: pd.Series) -> Estimate:
    """``a - b`` paired on the seed (the index): mean and 95% interval of the per-seed differences,
    over the seeds both have."""
    return Estimate.of((a - b).dropna().tolist())


def per_seed(df: pd.DataFrame, value: str, **where) -> pd.Series:
    """``value`` of the rows matching ``where`` (one per seed), indexed by seed."""
    sub = select(df, **where)
    if sub["seed"].duplicated().any():
        raise ValueError(f"{where} picks several rows per seed")
    return sub.set_index("seed")[value].astype(float).sort_index()


def program_change(df: pd.DataFrame, bench: str, scheme: str, noise: int, value: str = "perf",
                   ref: str = VANILLA) -> Estimate:
    """One program's change of ``value`` under ``scheme`` over ``ref``, paired on the seed
    (``protocol.change``: mean over mean, minus 1)."""
    new = per_seed(df, value, bench=bench, scheme=scheme, noise=noise)
    base = per_seed(df, value, bench=bench, scheme=ref, noise=noise)
    seeds = new.index.intersection(base.index)
    return change(new[seeds].tolist(), base[seeds].tolist(), paired=True)


def vms(n: int) -> str:
    return f"{n} VM" + ("" if n == 1 else "s")


def items_text(items: dict, digits: int = 1, pct: bool = True) -> str:
    """``label: mean [lo, hi]; ...`` for a claim's items (an int label is a number of interfering VMs)."""
    return "; ".join(f"{vms(k) if isinstance(k, (int,)) else k}: {e.text(digits, pct=pct)}" for k, e in items.items())



def unmeasured_claim(*, id: str, figure: str, claim: str, paper: str, source: str, type: str,
                     scheme: str, kind: str = PREDICTION) -> Claim:
    """A claim on a scheme this build refuses: N, "not measured" (docs/validation.md)."""
    return Claim(id=id, figure=figure, claim=claim, paper=paper, source=source, kind=kind, type=type,
                 ours=f"not measured: {scheme} is not in this build ({available(scheme)})", verdict=N, n=0,
                 cause=MECHANISM, note="the scheme could not be run")


def levels_of(df: pd.DataFrame, scheme: str) -> list[int]:
    """The interference levels ``scheme`` ran at."""
    return sorted(int(n) for n in df[df["scheme"] == scheme]["noise"].unique())


def beats_claim(df: pd.DataFrame, other: str, *, id: str, figure: str, what: str, source: str,
                cause: str) -> Claim:
    """Slide 19's "IRS outperforms PLE / relaxed co-scheduling" on ``df`` (``what``: blocking
    PARSEC or spinning NPB): at each level of interference both ran, the suite's mean improvement
    under IRS minus under ``other``, paired on the seed, above zero beyond noise; the claim takes
    the lowest verdict over the levels."""
    label = SCHEME_LABEL[other]
    claim = f"IRS outperforms {label} ({what}), at each level of interference"
    paper = "Outperforms PLE and relaxed co-scheduling"
    if available(other) is not None:
        return unmeasured_claim(id=id, figure=figure, claim=claim, paper=paper, source=source, type=DIRECTION,
                                scheme=other)
    levels = [n for n in levels_of(df, other) if n in levels_of(df, IRS)]
    diffs = {n: paired_diff(suite(df, IRS, n), suite(df, other, n)) for n in levels}
    parts = [f"{vms(n)}: IRS {estimate(suite(df, IRS, n)).text(1, pct=True)} vs {label} "
             f"{estimate(suite(df, other, n)).text(1, pct=True)}, difference {d.text(1, pct=True)}"
             for n, d in diffs.items()]
    return Claim(id=id, figure=figure, claim=claim, paper=paper, source=source, type=DIRECTION,
                 ours="; ".join(parts) or "no level run", n=min_n(diffs.values()),
                 verdict=worst(judge_direction(d, +1) for d in diffs.values()), cause=cause,
                 note="suite mean improvement over vanilla; per level, IRS minus the other, paired on the seed "
                      "(points of improvement)")


def trend_claim(df: pd.DataFrame, *, id: str, figure: str, what: str, paper: str, source: str, kind: str,
                cause: str, note: str = "") -> Claim:
    """Slides 12 and 16: IRS's suite mean improvement falls from each level of interference to the
    next (an ordering: every adjacent pair apart beyond noise, differences paired on the seed)."""
    levels = levels_of(df, IRS)
    series = {n: suite(df, IRS, n) for n in levels}
    items = {n: estimate(s) for n, s in series.items()}
    drops = [paired_diff(series[a], series[b]) for a, b in zip(levels, levels[1:])]
    verdict = judge_order(list(items.values()), paired_diffs=drops) if len(levels) > 1 else N
    drop_text = ", ".join(f"{a}->{b}: {d.text(1, pct=True)}" for (a, b), d in zip(zip(levels, levels[1:]), drops))
    return Claim(id=id, figure=figure, claim=f"IRS's improvement decreases as interference rises ({what})",
                 paper=paper, source=source, kind=kind,
                 type=DIRECTION, ours=f"{items_text(items)}; per-seed drop {drop_text}", n=min_n(items.values()),
                 verdict=verdict, cause=cause,
                 note="; ".join(p for p in ("suite mean improvement per level, each adjacent pair's drop paired on "
                                            "the seed", note) if p))


def notify_to_switch(df: pd.DataFrame) -> tuple[pd.Series, float, int]:
    """Per seed, the notice-weighted mean notify-to-switch (us) over the IRS runs with notices;
    the largest over them; the number of notices."""
    sub = df[df["scheme"].isin([IRS, IRS_NOMIG]) & (df["preempt_notices"] > 0)]
    n = int(sub["preempt_notices"].sum())
    if not n:
        return pd.Series(dtype=float), float("nan"), 0
    weighted = sub.assign(w=sub["notify_to_switch_mean_us"] * sub["preempt_notices"]).groupby("seed")
    mean = weighted["w"].sum() / weighted["preempt_notices"].sum()
    return mean, float(sub["notify_to_switch_max_us"].max()), n


def improvement_plot(df: pd.DataFrame, fig: str, name: str, title: str, x: str = "bench") -> None:
    """Slides 12-16's bars: improvement over vanilla per ``x``, one bar per scheme."""
    sub = df[df["scheme"] != VANILLA].copy()
    sub["scheme"] = sub["scheme"].map(SCHEME_LABEL)
    agg = aggregate(sub, [x, "scheme"], ["improvement"])
    bar_plot(agg, x, "scheme", "improvement", "improvement over vanilla Xen (higher is better)", title,
             out_dir(fig) / f"{name}.png", hline=0.0)
