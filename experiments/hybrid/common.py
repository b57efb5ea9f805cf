"""Shared setup of the seed-004 experiment scripts (Weng, Guo, Luo, Li, "Hybrid CPU Management
for Adapting to the Diversity of Virtual Machines", IEEE TC: ../shared/seeds/004_2f4d1756ca892fd2.txt).

One place for the paper's setup (section 6: 8 pCPUs; V0 = Domain-0 with 8 vCPUs, weight 256 and
no workload; V1..V6 with 4 vCPUs and weight 256 unless swept, Table 1), for the schedulers the
figures compare (Xen Credit and the Hybrid Scheduler with the VM under test set concurrent,
high-throughput or phase-concurrent), for the workloads (NPB OpenMP class A with 4 threads,
SPEC CPU2000 rate with 4 copies) and for the two ways a runtime is measured:

- **run to completion** (sections 6.2-6.3, one VM under test): the benchmark runs once
  (`iterations` = its steps, or 100 x copies for SPEC) and its runtime is vms.csv's
  ``completion_time_ms``; the simulation stops when it finishes.
- **rate over a window** (section 6.4, several VMs): every workload repeats forever
  (``rounds = 0``), as the seed's batch program repeats each workload "so that all other
  workloads are still running when each workload finishes its first 10 rounds"; the runtime of one
  round is ``simulated time x units per round / progress`` over a window in which all run
  together.

**Scale.** Full runs simulate class A and the full SPEC reference runs (``SCALE = 1``): the
simulator's cost follows the number of synchronization events, which ``scale`` does not reduce,
and the results are *not* scale-independent (Credit's slowdown of LU depends on how a phase
compares with the 30 ms timeslice; EXPERIMENTS.md E5). Only --quick smoke runs shrink the work.

The running machinery (settings, resumable runs, aggregation, CSV/PNG, claim tables) is
../runkit.py, shared with the other experiment sets; every claim is judged by ../protocol.py
(docs/validation.md), through the few helpers at the end of this file (changes paired on the
seed, a change turned into a saving, a claim's items listed).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd


HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # experiments/, for the shared runkit

from runkit import *  # noqa: E402,F401,F403  (re-exported for the figure scripts: runkit.__all__)

OUT.set_root(HERE / "out")

# --- The paper's setup (seed 004 section 6.1, 6.2, Table 1) --------------------------------------

PCPUS = 8  # Dell Precision T5400, dual quad-core Xeon X5410 (section 6.1)
#: "dual quad-core Xeon X5410": two sockets; one NUMA node (Harpertown reaches memory over a shared
#: front-side bus), so Credit's `_csched_cpu_pick` sees two sockets of four cores and no siblings.
SOCKETS = 2
DOM0_VCPUS = 8  # V0, the manager VM: 8 vCPUs, weight 256, no workload (section 6.2)
VM_VCPUS = 4  # V1..V6: 4 vCPUs (section 6.2, Table 1)
DEFAULT_WEIGHT = 256  # Table 1; also Xen's CSCHED_DEFAULT_WEIGHT
THREADS = 4  # "The number of threads of the two parallel benchmarks is set as 4"; 4 SPEC copies
#: Section 6.3: "u-factor is set as 0.25 in the PCPS strategy according to the proportion of the
#: sequential part in parallel benchmarks"; also Hybrid(Phase-CON+HIT) in section 6.4.
PHASE_U_FACTOR = 0.25
#: Figure 5's sweep of V1's weight (section 6.2: "its weight decreasing from 512 to 32").
WEIGHTS = (512, 256, 128, 64, 32)
#: Figure 6's weights (section 6.2: "we test V1 with its weight decreasing from 128 to 32").
FIG6_WEIGHTS = (128, 64, 32)

#: Fraction of class-A work (NPB) and of the reference run (SPEC) the figures simulate: all of
#: it; --quick smoke runs take a twentieth. Why not less: EXPERIMENTS.md E5.
SCALE = 1.0
QUICK_SCALE = 0.05

#: Simulated-time limit of run-to-completion runs (they stop when the benchmark ends); long
#: enough for Credit's slowest case (LU at weight 32 takes ~1200 s).
COMPLETION_LIMIT = ("20000s", "2000s")  # full, quick

#: Section 6.1: "the virtualized system ran Xen 3.3.0". The Credit runs follow Xen 3.3's credit1
#: (``[host.params] xen``; docs/model.md section 7.2.1: tick-sampled debits, per-domain weights, no
#: ratelimit, no yield, and no pause-loop exiting, so PLE is off in them).
XEN = "3.3"

#: Xen 3.3 took no PAUSE exits (VMX pause-loop exiting came with Xen 4.0), under Credit or under
#: the Hybrid Scheduler built on it: PLE is off in every run, so both schedulers meet the same
#: guests. Credit under ``xen = "3.3"`` has it off by default; the hybrid's default is on.
PLE = {"enabled": False}

#: Section 6.1: "all VMs ran ... the Linux 2.6.18 kernel": the guest kernel preset of that
#: release (docs/model.md 8). Its x86_64 spinlocks are include/asm-x86_64/spinlock.h's
#: ``lock; decl`` loop spinning with ``rep;nop`` ("We make no fairness assumptions"): unfair
#: test-and-set, not the ticket locks that came with 2.6.25. Every VM's guest is it.
GUEST = {"kernel": "linux-2.6.18"}

#: Section 6.2 runs V1 non-work-conserving (caps), section 6.4 work-conserving.
CAPPED = False
WORK_CONSERVING = True

#: The NAS parallel benchmarks of Figure 6 (every NPB model of the build).
NPB_SET = ("bt", "cg", "dc", "ep", "ft", "is", "lu", "mg", "sp", "ua")
SPEC_SET = ("gcc", "bzip2")


def scale(settings: Settings) -> float:
    return QUICK_SCALE if settings.quick else SCALE


# --- Schedulers ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scheduler:
    """One scheduler configuration of section 6: the host policy and the class (``type``,
    ``u_factor``) the Hybrid Scheduler gives a VM by its workload's kind. ``concurrent`` is the
    class of VMs running NPB, ``throughput`` of VMs running SPEC; None = not set (Credit)."""

    name: str
    policy: str
    concurrent: tuple[str, float] | None = None
    throughput: tuple[str, float] | None = None

    def vm_class(self, kind: str) -> dict:
        cls = self.concurrent if kind == CONCURRENT else self.throughput
        if cls is None:
            return {}
        vm_type, u = cls
        return {"type": vm_type, "u_factor": u} if vm_type == "con" else {"type": vm_type}


CONCURRENT, THROUGHPUT = "concurrent", "throughput"

#: Default Xen: the credit scheduler of Xen 3.3 (xen/common/sched_credit.c at 3.3.0; ``XEN``).
CREDIT = Scheduler("Credit", "credit")
#: Hybrid Scheduler with every VM under test set concurrent, CPS (section 6.2; Figure 10).
CON = Scheduler("CON", "hybrid", ("con", 0.0), ("con", 0.0))
#: Hybrid Scheduler with every VM under test set high-throughput (section 6.2).
HIT = Scheduler("HIT", "hybrid", ("hit", 0.0), ("hit", 0.0))
#: PCPS with u-factor 0.25 (section 6.3, Figures 9 and 10b).
PHASE_CON = Scheduler("Phase-CON", "hybrid", ("con", PHASE_U_FACTOR), ("con", PHASE_U_FACTOR))
#: Section 6.4: each VM's type follows its workload, CPS for the concurrent ones.
HYBRID_CON = Scheduler("Hybrid(CON+HIT)", "hybrid", ("con", 0.0), ("hit", 0.0))
#: ... and PCPS (u-factor 0.25) for the concurrent ones.
HYBRID_PHASE = Scheduler("Hybrid(Phase-CON+HIT)", "hybrid", ("con", PHASE_U_FACTOR), ("hit", 0.0))


def host(scheduler: Scheduler, work_conserving: bool) -> dict:
    """The 8-pCPU host of two quad-core sockets under ``scheduler``; ``work_conserving = False`` caps every VM at its
    weight's share of the host (section 6.2: V1's share at weight 128 is 128/(128+256) although
    V0 is idle), the same key for Credit and Hybrid. Credit runs the Xen the seed ran (``XEN``)."""
    params: dict = {"work_conserving": work_conserving}
    if scheduler.policy == "credit":
        params["xen"] = XEN
    return {"pcpus": PCPUS, "sockets": SOCKETS, "policy": scheduler.policy, "params": params,
            "ple": dict(PLE)}


def dom0() -> dict:
    """V0, Domain-0: 8 vCPUs, weight 256, no workload (section 6.2)."""
    return {"name": "v0", "vcpus": DOM0_VCPUS, "weight": DEFAULT_WEIGHT, "workload": "idle"}


# --- Workloads -----------------------------------------------------------------------------------

def workload_name(bench: str) -> str:
    """``lu`` -> ``npb.lu``, ``gcc`` -> ``spec2000.gcc``; a clear exit if this build lacks it."""
    name = f"spec2000.{bench}" if bench in SPEC_SET else f"npb.{bench}"
    return require_workload(name)


def kind_of(bench: str) -> str:
    return THROUGHPUT if bench in SPEC_SET else CONCURRENT


def units_per_round(bench: str, threads: int = THREADS) -> int:
    """Progress of one whole benchmark run: NPB's time steps (the model's class-A default), or
    100 hundredths per SPEC copy (docs/model.md, "NPB and SPEC CPU2000 models")."""
    if kind_of(bench) == THROUGHPUT:
        return 100 * threads
    return int(param_default(workload_name(bench), "steps"))


def bench_vm(name: str, bench: str, scheduler: Scheduler, *, weight: int = DEFAULT_WEIGHT,
             work_scale: float, rounds: int = 1, params: dict | None = None) -> dict:
    """A 4-vCPU VM running ``bench`` with 4 threads (copies), classed by ``scheduler``.
    ``rounds = 1``: it finishes after one run (``iterations`` set); ``rounds = 0``: it repeats
    forever (section 6.4's batch program)."""
    vm = {"name": name, "vcpus": VM_VCPUS, "weight": weight, "workload": workload_name(bench),
          "threads": THREADS, "params": {"scale": work_scale, "rounds": rounds, **(params or {})}}
    if rounds == 1:
        vm["iterations"] = units_per_round(bench)
    vm.update(scheduler.vm_class(kind_of(bench)))
    return vm


def single_vm(scheduler: Scheduler, bench: str, weight: int, work_scale: float, *,
              work_conserving: bool = CAPPED, rounds: int = 1, params: dict | None = None) -> dict:
    """Section 6.2's scenario: V0 idle beside V1 running ``bench`` at ``weight``, capped."""
    return {"host": host(scheduler, work_conserving), "guest": dict(GUEST),
            "vm": [dom0(), bench_vm("v1", bench, scheduler, weight=weight, work_scale=work_scale,
                                    rounds=rounds, params=params)]}


def weight_grid(benches, weights, schedulers, work_scale: float, *, labels: dict | None = None,
                params: dict | None = None) -> list[Case]:
    """Section 6.2's sweep: one single-VM case per bench, weight and scheduler, labelled by them
    (``labels`` go after ``bench``; ``params`` are the workload's)."""
    return [Case({"bench": b, **(labels or {}), "weight": w, "scheduler": sch.name},
                 single_vm(sch, b, w, work_scale, params=params))
            for b in benches for w in weights for sch in schedulers]


def multi_vm(scheduler: Scheduler, benches: list[str], work_scale: float) -> dict:
    """Section 6.4's scenario: V0 idle beside V1..Vn (weight 256, Table 1) running ``benches``
    in order, each repeated forever, work-conserving."""
    vms = [dom0()] + [bench_vm(f"v{i + 1}", b, scheduler, work_scale=work_scale, rounds=0)
                      for i, b in enumerate(benches)]
    return {"host": host(scheduler, WORK_CONSERVING), "guest": dict(GUEST), "vm": vms}


# --- Measures ------------------------------------------------------------------------------------


def completion_s(df: pd.DataFrame) -> pd.Series:
    """Runtime of a run-to-completion VM in simulated seconds (NaN if it did not finish)."""
    return pd.to_numeric(df["completion_time_ms"], errors="coerce") / 1e3


def round_s(df: pd.DataFrame, bench_col: str = "bench") -> pd.Series:
    """Runtime of one round of a repeating VM: simulated time x units per round / progress."""
    units = df[bench_col].map(units_per_round)
    progress = df["progress"].astype(float)
    return (df["sim_s"] * units / progress.where(progress > 0)).astype(float)


def require_finished(df: pd.DataFrame, col: str, fig: str) -> None:
    """Runs that hit the duration limit before their benchmark finished have no runtime: fail
    loudly rather than average around them."""
    bad = df[df[col].isna()]
    if len(bad):
        rows = ", ".join(f"{r.get('bench', '?')}/{r.get('scheduler', '?')}/w{r.get('weight', '?')}/seed {r['seed']}"
                         for _, r in bad.head(5).iterrows())
        raise SystemExit(f"{fig}: {len(bad)} runs did not finish within the duration limit ({rows}); "
                         "raise the figure's duration")


def weight_share(weight: int, others: tuple[int, ...] = (DEFAULT_WEIGHT,)) -> float:
    """A VM's share of the host from the weights (seed 004 section 2.1: weight / total weight)."""
    return weight / (weight + sum(others))


def pct(x: float) -> str:
    return f"{x:+.0%}" if finite(x) else "n/a"


def completion_limit(settings: Settings) -> str:
    return settings.duration(*COMPLETION_LIMIT)


def run_single_vm(fig: str, cases: list[Case], settings: Settings, seeds: list[int] | None = None) -> pd.DataFrame:
    """Run section-6.2-style cases to completion and return V1's rows with ``runtime_s``."""
    df = run_cases(fig, cases, seeds or settings.seed_list(), completion_limit(settings), settings)
    v1 = df[df["vm"] == "v1"].copy()
    v1["runtime_s"] = completion_s(v1)
    require_finished(v1, "runtime_s", fig)
    return v1.reset_index(drop=True)


def run_multi_vm(fig: str, cases: list[Case], settings: Settings, window: tuple[str, str],
                 seeds: list[int] | None = None) -> pd.DataFrame:
    """Run section-6.4-style cases over a window and return every workload VM's row with
    ``bench`` (from the workload name) and ``round_s`` (runtime of one round)."""
    df = run_cases(fig, cases, seeds or settings.seed_list(), settings.duration(*window), settings)
    vms = df[df["vm"] != "v0"].copy()
    vms["bench"] = vms["workload"].str.split(".").str[-1]
    vms["round_s"] = round_s(vms)
    require_finished(vms, "round_s", fig)
    return vms.reset_index(drop=True)


#: Simulated window of the section-6.4 runs (full, quick). LU under Credit, the slowest workload,
#: takes 760-1,010 s a round in the six-VM mixes, so the window holds 1.8-2.4 of its rounds; the
#: round time is a rate over the window (simulated time x units per round / progress), not a
#: count of finished rounds.
MIX_WINDOW = ("1800s", "60s")


def per_bench_rounds(vms: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Mean round time per benchmark over the VMs of a run that run it (Figure 11d has two LU and
    two SP VMs), one row per ``keys`` + bench + seed."""
    return vms.groupby(keys + ["bench", "seed"], as_index=False, sort=False)["round_s"].mean()


# --- Claims (the protocol's functions, ../protocol.py, applied to this set's tables) -------------


def paired_change(df: pd.DataFrame, value: str, new: dict, base: dict, **common_labels) -> Estimate:
    """``mean(new) / mean(base) - 1`` of ``value`` between two configurations run on the same
    seeds, with the interval of the per-seed differences (``protocol.change(paired=True)``);
    ``new`` and ``base`` are the labels that pick each, ``common_labels`` those they share."""
    return change(seed_values(df, value, **common_labels, **new), seed_values(df, value, **common_labels, **base),
                  paired=True)




