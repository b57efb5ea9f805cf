"""Shared setup of the modern-KVM experiment set (EXPERIMENTS.md E9): what each of
the Linux 6.x guest's paravirtual features and the 6.x KVM host's mechanisms buys on an
overcommitted host, and what the seeds' schemes (seed 000's UVF, seed 002's micro-sliced cores,
seed 003's IRS) still add on top of that modern baseline.

**The host** (``host``): ``PCPUS`` = 8 pCPUs scheduled by ``eevdf`` (Linux 6.6, policy
"eevdf") with ``kvm = "6.6"`` (kvm_vcpu_on_spin's 6.6 candidate rules, the interrupt-delivering
and queue-head boosts), the dynamic PLE window (``[host.ple] grow = 2``, 6.x's
``ple_window_grow``; ``shrink`` 0 as 6.x), host halt polling (``[host.halt_poll]`` with its x86
defaults: 200 us, grow 2, grow_start 10 us) and the wake-up path it avoids charged at
``HALT_WAKE`` (assumed, docs/scenario-format.md ``[host.costs] halt_wake``).

**The guest**: ``[guest] kernel = "linux-6.x"`` (PV qspinlock, vcpu_is_preempted, PV TLB flush,
PV sched yield, PV IPIs, steal time; docs/model.md "Linux 6.x guest (KVM PV)").

**Layouts** (the PV patches' overcommit sweeps): ``1vm``, ``2vm``, ``3vm``: 1, 2 or 3 VMs, each with
as many vCPUs as the host has pCPUs (the authors' "1, 2 and 3 VMs of 64 vCPUs on 64 pCPUs"), every
VM running the program; ``1.5x`` and ``1.875x``: one VM self-overcommitted with 12 and 15 vCPUs.
Performance is the mean over the VMs of each VM's progress per simulated second (ebizzy:
records/s; kbuild: compile jobs/s; dbench: loadfile ops/s; hackbench: messages/s).

**Schemes** are canonical strings of tokens, so that every table draws from one pool of runs
(``out/.runs/pool/``, saved as they finish; a killed sweep loses nothing, a rerun computes
nothing twice): ``modern`` (the baseline above); ``-<feature>`` turns one guest feature off
(``-pv_tlb_flush``, ``-pv_sched_yield``, ``-pv_spinlock``, ``-vcpu_is_preempted`` which also
turns off PV sched yield that needs it, ``-pv_ipi``), ``-halt_poll`` the host's halt polling,
``kvm=3.16`` KVM 3.16's kvm_vcpu_on_spin candidate rules (no boosts; the PLE window stays 6.x's
dynamic one), ``guest=linux-3.2`` the
seeds' guest (no PV feature); ``host=cfs`` the Linux 3.2 CFS host with the same 6.6 KVM, ``uvf``
seed 000's urgent-vCPU-first over it; ``host=credit`` Xen 4.7 credit (the KVM-only features off,
PV qspinlock by SCHEDOP_poll), ``microsliced`` seed 002's dynamic micro-sliced pool over it and
``irs`` seed 003's IRS overlay with ``xen = "4.4"`` (the IRS work's credit) and its reference
``host=credit44``; ``host=credit2`` Xen 4.18's credit2 (today's default Xen scheduler), a baseline
beside Xen 4.7 credit (table 8; no claim is judged against it).

**Shortened, stated**: 8 pCPUs where the PV patches used 64-80, ``DURATION`` of simulated time
(2 s, 0.2 s with --quick; kbuild 20 s, ``LONG``). Nothing is calibrated to a patch's reported gain: the
workload models are calibrated from their solo characteristics (tests/
modern_workloads_calibration.rs) and every host and guest parameter is its kernel default.

**Claims are judged by the validation protocol** (docs/validation.md, ``protocol.py``): every
point is run on ``settings.seed_list()`` (seeds 1-5 in a full run, the protocol's minimum). A
feature on and off (or a scheme and its reference) are run on the same seeds, so every
comparison is paired on the seed: ``feature_change`` is ``protocol.change(on, off, paired=True)``
of a point's per-seed values (``mean(on) / mean(off) - 1``, the ratio of mean records/s a patch
message reports, with the 95% interval of the per-seed differences); ``feature_diff`` is the
per-seed difference of a count that is zero without the feature. No script sets a band or
threshold of its own: a point value is judged with ``judge_point``, a direction with
``judge_direction``, "no gain" with ``judge_no_effect``, a claim over several layouts or programs
with ``worst`` of its items.

**What counts.** The "papers" of tables 1-7 are the Linux patches' commit messages (each
script's docstring quotes the numbers and names the commit): a number a message states for a
program and layout we run is a prediction. What a message does not claim (a program or layout it
did not measure, a feature's mechanism seen in our counters) is an ``extra``. Table 8 asks
whether seeds 000, 002 and 003's schemes still gain on a Linux 6.x guest, a question the seeds
did not ask (their own claims are predictions of E4, E7 and E8): its rows are extras.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd


HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # experiments/, for the shared runkit

from runkit import *  # noqa: E402,F401,F403  (re-exported for the table scripts: runkit.__all__)
from runkit import (  # noqa: E402
    Case, Estimate, Settings, aggregate, change, require_workload, run_cases, seed_values,
)

OUT.set_root(HERE / "out")

# --- The host, the guest and the layouts ---------------------------------------------------------

PCPUS = 8
#: Assumed cost of the host's wake-up path of a vCPU blocked in HLT (kick, schedule, vcpu_load):
#: what halt polling saves. Not from a measurement; docs/model.md § KVM 6.x host.
HALT_WAKE = "10us"
#: 6.x's ple_window_grow (arch/x86/kvm/vmx/vmx.c); ple_window_shrink is 0 there too.
PLE_GROW = 2

DURATION = ("2s", "200ms")  # (full, --quick)
#: Programs whose unit of progress is coarse get longer runs: a kbuild compile job is 400 ms of
#: CPU, so 2 s would count 8-17 jobs per VM and quantize gains in 6-12% steps.
LONG = {"kbuild": ("20s", "1s")}

LAYOUTS = ("1vm", "2vm", "3vm", "1.5x", "1.875x")
VM_LAYOUTS = ("1vm", "2vm", "3vm")
SELF_LAYOUTS = ("1vm", "1.5x", "1.875x")


def layout_vms(layout: str) -> list[int]:
    """vCPU counts of the layout's VMs: n VMs of PCPUS vCPUs, or one VM of ratio x PCPUS."""
    if layout.endswith("vm"):
        return [PCPUS] * int(layout[:-2])
    return [round(float(layout[:-1]) * PCPUS)]


MODERN = "modern"
#: Seed 000's "LC+Resched-DP+TLB-Co" per-VM knobs (experiments/asplos13/common.py's values).
UVF_VM = {"resched_dp": "500us", "tlb_co": True}
GUEST_FEATURES = ("pv_spinlock", "vcpu_is_preempted", "pv_tlb_flush", "pv_sched_yield", "pv_ipi")
#: Features that need another (docs/scenario-format.md [guest]): turning the key off turns these off.
NEEDED_BY = {"vcpu_is_preempted": ("pv_sched_yield",)}
KVM_SCHEMES = ("host=cfs", "uvf")
XEN_SCHEMES = ("host=credit", "microsliced", "host=credit44", "irs", "host=credit2")


def scheme(*tokens: str) -> str:
    """The canonical name of a set of changes to the baseline (sorted tokens, ``modern`` if none)."""
    return ",".join(sorted(set(tokens))) or MODERN


def tokens(s: str) -> list[str]:
    return [] if s == MODERN else s.split(",")


def host(s: str) -> dict:
    """The ``[host]`` table of scheme ``s``."""
    t = tokens(s)
    if "host=credit2" in t:
        return {"pcpus": PCPUS, "policy": "credit2"}  # Xen 4.18's credit2, its defaults
    if any(x in t for x in XEN_SCHEMES):
        h = {"pcpus": PCPUS, "policy": "credit", "params": {"xen": "4.4" if ("irs" in t or "host=credit44" in t) else "4.7"}}
        if "microsliced" in t:
            h["microsliced"] = {"mode": "dynamic", "cores": PCPUS // 2}
        if "irs" in t:
            h["overlay"] = "irs"
        return h
    kvm = "3.16" if "kvm=3.16" in t else "6.6"
    h = {"pcpus": PCPUS, "policy": "cfs" if any(x in t for x in KVM_SCHEMES) else "eevdf",
         "params": {"kvm": kvm}, "costs": {"halt_wake": HALT_WAKE}}
    h["ple"] = {"grow": PLE_GROW}  # kvm=3.16 keeps 6.x's window: the table compares candidate rules only
    if "-halt_poll" not in t:
        h["halt_poll"] = {}
    if "uvf" in t:
        h["uvf"] = {}  # urgent_tslice 500 us, urgent_allowance 18 ms: seed 000's values
        h["placement"] = "lc-balance"  # seed 000's best scheme: LC balance + Resched-DP + TLB-Co
    return h


def guest(s: str) -> dict:
    """The ``[guest]`` table of scheme ``s``."""
    t = tokens(s)
    if "guest=linux-3.2" in t:
        return {"kernel": "linux-3.2"}
    g = {"kernel": "linux-6.x"}
    for f in GUEST_FEATURES:
        if f"-{f}" in t:
            g[f] = False
            for dep in NEEDED_BY.get(f, ()):
                g[dep] = False
    return g


# --- Workloads -----------------------------------------------------------------------------------

#: The programs the PV feature patches measured with (their workload models) and one PARSEC
#: program of the seeds (dedup: munmap-heavy, the shootdown pathology).
BENCHES = ("ebizzy", "kbuild", "dbench", "hackbench", "dedup")


def workload_name(bench: str) -> str:
    return require_workload("parsec.dedup" if bench == "dedup" else bench)


def vm(bench: str, name: str, vcpus: int, s: str) -> dict:
    v = {"name": name, "vcpus": vcpus, "workload": workload_name(bench)}
    if bench == "dedup":
        v["threads"] = vcpus  # PARSEC's -n vCPUs (pipeline stages of that many threads)
    if "irs" in tokens(s):
        v["guest"] = {**guest(s), "irs": True}
    if "uvf" in tokens(s):
        v["uvf"] = dict(UVF_VM)
    return v


def scenario(bench: str, layout: str, s: str) -> dict:
    return {"host": host(s), "guest": guest(s),
            "vm": [vm(bench, f"vm{i}", n, s) for i, n in enumerate(layout_vms(layout))]}


# --- Running the pool ----------------------------------------------------------------------------

LABELS = ("bench", "layout", "scheme")

#: metrics.csv rows the tables read (absent = 0: a counter a run never touched).
METRICS = ("spin_time_ms", "tlb_wait_ms", "ple_exit_count", "tlb_shootdowns", "pv_poll_blocks", "pv_kicks",
           "yields_ipi", "lhp_count", "halts", "overhead_ms", "cpu_time_ms", "steal_share")


def point(bench: str, layout: str, s: str) -> tuple:
    return (bench, layout, s)


def run_points(points, settings: Settings, seeds=None) -> pd.DataFrame:
    """Run every (bench, layout, scheme) point on every seed (saved under ``out/.runs/pool``) and
    return one row per (run, seed): ``perf``, the mean over the run's VMs of progress per simulated
    second, and the METRICS summed over the VMs."""
    seeds = seeds or settings.seed_list()
    points = list(dict.fromkeys(points))
    cases = [Case(dict(zip(LABELS, p)), scenario(*p), settings.duration(*LONG[p[0]]) if p[0] in LONG else None)
             for p in points]
    df = run_cases("pool", cases, seeds, settings.duration(*DURATION), settings)
    df["perf"] = pd.to_numeric(df["progress"], errors="coerce") / df["sim_s"]
    for m in METRICS:
        df[m] = pd.to_numeric(df[m], errors="coerce").fillna(0.0) if m in df else 0.0
    keys = list(LABELS) + ["seed"]
    sums = df.groupby(keys, sort=False)[[m for m in METRICS if m not in ("steal_share",)]].sum()
    means = df.groupby(keys, sort=False)[["perf", "steal_share"]].mean()
    return means.join(sums).reset_index()


def compare(benches, layouts, schemes, ref: str, settings: Settings, seeds=None) -> pd.DataFrame:
    """Rows of every (bench, layout, scheme) point and of ``ref`` with ``gain`` = perf over ref's
    on the same bench, layout and seed, minus 1 (seeds paired: the same random draws)."""
    run = [ref] + [s for s in schemes if s != ref]
    df = run_points([point(b, l, s) for b in benches for l in layouts for s in run], settings, seeds)
    out = per_seed_ratio(df, "perf", ["bench", "layout", "seed"], "scheme", ref, "ratio")
    out["gain"] = out["ratio"] - 1
    return out


# --- Per-seed values and the comparisons the claims make (docs/validation.md) --------------------

#: No estimate: a point that was not run (--quick runs fewer layouts and programs). Every judge
#: function gives N for it.
def values(df: pd.DataFrame, col: str, **where) -> list[float]:
    """``col`` of the rows ``where`` picks, one per seed in seed order (empty when the point was
    not run): two calls with the same labels but one give lists paired on the seed."""
    if df.empty:
        return []
    return seed_values(df, col, **where)



def paired_diff(new: list[float], base: list[float]) -> Estimate:
    """Mean and 95% interval of the per-seed differences ``new - base``."""
    if not new or not base or len(new) != len(base):
        return NO_ESTIMATE
    return Estimate.of([a - b for a, b in zip(new, base)])


def feature_change(df: pd.DataFrame, col: str = "perf", **where) -> Estimate:
    """What a feature changes at one point of an ``ablation``: ``mean(on) / mean(off) - 1`` of
    ``col``, paired on the seed (+0.78 is "78% more records/s with the feature")."""
    return change(values(df, col, variant="on", **where), values(df, col, variant="off", **where), paired=True)


def feature_diff(df: pd.DataFrame, col: str, **where) -> Estimate:
    """The per-seed difference of ``col`` with the feature on minus off (a count that is zero
    without it, where a relative change has no base)."""
    return paired_diff(values(df, col, variant="on", **where), values(df, col, variant="off", **where))


def totals(df: pd.DataFrame, col: str, **where) -> list[float]:
    """Per seed, in seed order, the sum of ``col`` over the rows ``where`` picks (every program
    and layout of a table): one whole-table total per seed."""
    sub = df
    for k, v in where.items():
        sub = sub[sub[k].isin(v)] if isinstance(v, (list, tuple, set)) else sub[sub[k] == v]
    return [float(x) for x in sub.groupby("seed")[col].sum().sort_index()]




def vms_text(layout: str) -> str:
    """"2 VMs" for ``2vm``, "one VM of 15 vCPUs" for ``1.875x``."""
    n = layout_vms(layout)
    return (f"{len(n)} VM" + ("s" if len(n) > 1 else "")) if layout.endswith("vm") else f"one VM of {n[0]} vCPUs"


def overcommitted(layouts) -> list[str]:
    """The layouts with more vCPUs than pCPUs, in ``LAYOUTS`` order."""
    return [l for l in LAYOUTS if l in set(layouts) and sum(layout_vms(l)) > PCPUS]


def vms_set(settings: Settings, full=VM_LAYOUTS, quick=("1vm", "3vm")) -> tuple[str, ...]:
    return quick if settings.quick else full


def benches_set(settings: Settings, full=BENCHES, quick=("ebizzy", "hackbench")) -> tuple[str, ...]:
    return quick if settings.quick else full


# --- One feature on and off ----------------------------------------------------------------------


def ablation(feature_token: str, benches, layouts, settings: Settings, base=(), seeds=None) -> pd.DataFrame:
    """The baseline (``base`` tokens on top of modern) against the same with ``feature_token``
    (say ``-pv_tlb_flush``) added: rows of both, ``gain`` on the baseline's rows = what the
    feature buys (the baseline over the run without it, same seed, minus 1)."""
    on, off = scheme(*base), scheme(*base, feature_token)
    df = compare(benches, layouts, [on], off, settings, seeds)
    df["variant"] = df["scheme"].map({on: "on", off: "off"})
    return df


def feature_outputs(df: pd.DataFrame, fig: str, title: str) -> pd.DataFrame:
    """runs.csv (every run), <fig>.csv (mean gain and metrics per bench and layout) and the bars."""
    cols = ["bench", "layout", "scheme", "variant", "seed", "perf", "gain", *METRICS]
    write_csv(df[[c for c in cols if c in df]], fig, "runs")
    agg = aggregate(df, ["bench", "layout", "variant"], ["perf", "gain", *METRICS])
    write_csv(agg, fig, fig)
    on = agg[agg["variant"] == "on"].copy()
    on["case"] = on["bench"] + " " + on["layout"]
    bar_plot(on, "case", None, "gain", "gain with the feature (higher is better)", title,
             out_dir(fig) / f"{fig}.png", hline=0.0)
    return df
