"""Shared setup of the seed-001 experiment scripts (Kourai and Nakata, "Analysis of the Impact of
CPU Virtualization on Parallel Applications in Xen": ../shared/seeds/001_3ec87dad18c47651.txt).

One place for the paper's host (section III-A: two AMD Opteron 6376 sockets of 16 cores, four
NUMA nodes of 8 cores, CMT modules of two cores sharing a front end, FPU and L2, one LLC per
node; Xen 4.4.0's credit scheduler), its VM (16 vCPUs, 4 GB, Linux 3.13 guest), its pCPU
distributions ("m-n": m pCPUs from processor 1 counted from pCPU 0, n from processor 2 counted
from pCPU 16, section III-D), its node affinity (xl put the VM on nodes 0 and 2, section III-G),
its physical machine ("PM": the same Linux 3.13 on the bare host) and its workloads
(tascell-fib, tascell-nq, the ten NAS Parallel Benchmarks, 1 to 16 threads).

**Every figure draws from one pool of runs.** A run is a *point*: (workload, placement,
threads, seed). The point's scenario and its saved-run name depend only on the point, so Figures
4, 5-9 and 6 share the same 0-16 / 8-8 runs, Figure 1's VM line is Figure 4's 0-16 line, and a
figure run after another computes only what is new. Runs are saved under ``out/.runs/pool/`` as
they finish (``runkit.run_cases``): a killed sweep loses nothing.

**What is an input, not a result.** The fixed virtualization overhead (``[host.costs]
virt_overhead``) is set to the seed's own reported 24% at one thread (section III-B). So
Figure 1's one-thread VM/PM ratio is 1.24 by construction (a calibration row, never counted);
only how it changes with threads is ours. The contention magnitudes (docs/model.md section 13)
are assumed, not measured; a claim a magnitude decides names "workload calibration" as its
cause.

**Runtime** is vms.csv ``completion_time_ms`` of a run to completion (``iterations`` = one
tascell run, or the NPB model's steps), the seed's "execution time". The seed averages 10 runs
of every point (III-A, V), so a full run takes seeds 1-10 (docs/validation.md: as many seeds as
the paper averaged runs; ``--seeds`` overrides). Every point of a figure runs on the same seeds,
so two placements are compared seed by seed (``seed_values``, ``protocol.change(...,
paired=True)``): each claim's value is a mean over seeds with its 95% interval.

**Scale: none.** tascell-fib and tascell-nq keep the models' own 1-thread times (30 s and 10 s,
assumed: the seed gives them only in plots) and NPB runs class A whole (``NPB_SCALE = 1``): a
run costs 0.01-0.6 s of wall time (LU at 16 threads the most), so nothing needed shortening.
Only ``--quick`` shrinks the work (1 s tascell runs, 2% of class A), for smoke runs.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd


HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # experiments/, for the shared runkit

from runkit import *  # noqa: E402,F401,F403  (re-exported for the figure scripts: runkit.__all__)
from runkit import Case, Settings, run_cases  # noqa: E402

OUT.set_root(HERE / "out")

# --- The paper's host (seed 001 section III-A, III-G) --------------------------------------------

PCPUS = 32  # two Opteron 6376, 16 cores each
SOCKET_PCPUS = 16
#: "Xen assigned the number 0-15 to pCPUs in processor 1 and the number 16-31 to those in
#: processor 2" (III-E); "nodes 0, 1, 2, and 3 contain pCPUs 0-7, 8-15, 16-23, and 24-31" (III-G).
NODE_PCPUS = 8
CORES_PER_MODULE = 2  # Clustered Multi-Thread: two cores per module (III-F)

#: Seed 001 III-B: "fixed virtualization overhead was 24% at least from the performance in a single
#: thread". An input (``[host.costs] virt_overhead``), not a result: docs/model.md "Bare metal".
VIRT_OVERHEAD = 0.24

#: Every contention source of docs/model.md section 13 on: CMT module front end and FPU, the
#: node's shared LLC (V-B: "LLC is shared in each node"), remote NUMA memory.
CONTENTION = {"module_frontend": True, "module_fpu": True, "llc": True, "numa_remote": True}

#: III-G: "In our experiments, nodes 0 and 2 were assigned to a VM" by xl's automatic placement.
#: Said as what xl chose (``numa_placement = { nodes = [0, 2] }``) rather than through an invented
#: free-memory table that would make xl choose it.
XL_NODES = [0, 2]
#: Where the VM's memory is: xl's placement allocates it on the node affinity at creation (Xen 4.4
#: allocates from ``d->node_affinity``), and neither pinning afterwards nor the seed's reset tool
#: (IV-A) moves it. The same for every VM configuration, so placements differ only in pCPUs.
VM_MEMORY_NODES = [0, 2]

#: The HVM guest's PAUSE loops under AMD's pause filter. Xen 4.4.0 sets the filter's count in
#: xen/arch/x86/hvm/svm/vmcb.c ``construct_vmcb`` (``vmcb->_pause_filter_count =
#: SVM_PAUSEFILTER_INIT``, 3000 in xen/include/asm-x86/hvm/svm/svm.h; no threshold, which came in
#: 4.11) and yields at the exit (svm.c ``svm_vmexit_do_pause`` -> SCHEDOP_yield). The filter counts
#: PAUSE at any privilege level (AMD64 APM vol. 2 15.14.4), so the guests' user-space spins exit
#: too. The model's window is in cycles: 3000 PAUSEs at Piledriver's PAUSE reciprocal throughput,
#: 40 cycles (Agner Fog, "Instruction tables", 2021-08-17, Piledriver: "PAUSE 40 40", ops and
#: reciprocal throughput), at the 6376's 2.3 GHz (III-A). A lower bound: the loop's load, compare
#: and branch are taken to overlap the PAUSE (docs/model.md section 5).
SVM_PAUSEFILTER_INIT = 3000
PILEDRIVER_PAUSE_CYCLES = 40
CPU_GHZ = 2.3
PAUSE_FILTER = {"cpl": "any", "window_cycles": SVM_PAUSEFILTER_INIT * PILEDRIVER_PAUSE_CYCLES, "cpu_ghz": CPU_GHZ}

VM_VCPUS = 16  # "a target VM with 16 vCPUs and 4 GB of memory" (III-A)
VM_MEMORY = "4GB"
THREADS = tuple(range(1, 17))  # 1 to 16 threads (Figures 1, 3, 4, 6, 10-14)

#: Seed 001 ran every point 10 times and averaged ("we ran tascell-fib 10 times", III-A; "We ran
#: each application 10 times", V): the protocol runs as many seeds (docs/validation.md, Noise).
SEEDS_FULL = 10


def host() -> dict:
    """Seed 001's host under Xen 4.4 credit with every contention source on and AMD's pause
    filter."""
    return {
        "pcpus": PCPUS, "sockets": 2, "numa_nodes": 4, "cores_per_module": CORES_PER_MODULE,
        "threads_per_core": 1, "llc": "node", "policy": "credit", "params": {"xen": "4.4"},
        "contention": dict(CONTENTION), "costs": {"virt_overhead": VIRT_OVERHEAD},
        "ple": dict(PAUSE_FILTER),
    }


def distribution(m: int, n: int) -> str:
    """Section III-D's "m-n": m pCPUs of processor 1 from pCPU 0 and n of processor 2 from pCPU
    16, as an xl cpulist ("0-16" -> "16-31", "8-8" -> "0-7,16-23", "7-9" -> "0-6,16-24")."""
    if not (0 <= m <= SOCKET_PCPUS and 0 <= n <= SOCKET_PCPUS and m + n == VM_VCPUS):
        raise ValueError(f"distribution {m}-{n}: expected m + n = {VM_VCPUS}, each 0..{SOCKET_PCPUS}")
    parts = []
    if m:
        parts.append("0" if m == 1 else f"0-{m - 1}")
    if n:
        parts.append("16" if n == 1 else f"16-{16 + n - 1}")
    return ",".join(parts)


#: Figure 4's nine distributions, 0-16 ... 8-8.
DISTRIBUTIONS = tuple(f"{m}-{16 - m}" for m in range(9))


def dist_cpus(name: str) -> str:
    m, n = (int(x) for x in name.split("-"))
    return distribution(m, n)


#: Section IV-C: "we used only pCPUs with even numbers": one core per module, every node.
OPTIMAL_CPUS = ",".join(str(p) for p in range(0, PCPUS, 2))


# --- Placements ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Placement:
    """Where the program runs: a VM with ``cpus`` (None: no vCPU affinity) and a node affinity
    (``"xl"``: xl's {0, 2} left in place; ``"off"``: reset by the seed's tool, IV-A, so Xen derives
    it from the vCPU affinity), or the bare host (``pm``) limited to ``cpus``."""

    name: str
    cpus: str | list | None
    node_affinity: str = "xl"  # "xl" | "off"
    pm: bool = False
    #: Tascell's ``-a``: worker n binds itself to the guest's CPU n (``affinity`` parameter).
    thread_affinity: bool = False

    def vm(self, workload: str, threads: int, params: dict, iterations: int) -> dict:
        vm = {"name": "pm" if self.pm else "par", "workload": workload, "threads": threads,
              "iterations": iterations, "params": dict(params)}
        if self.thread_affinity:
            vm["params"]["affinity"] = True
        if self.pm:
            vm["bare_metal"] = True
            vm["cpus"] = self.cpus or f"0-{PCPUS - 1}"
            return vm
        vm.update({"vcpus": VM_VCPUS, "memory": VM_MEMORY, "memory_nodes": list(VM_MEMORY_NODES),
                   "numa_placement": {"nodes": list(XL_NODES)} if self.node_affinity == "xl" else "off"})
        if self.cpus is not None:
            vm["cpus"] = self.cpus
        return vm


def dist(name: str) -> Placement:
    """Distribution ``name`` pinned after xl's placement (III-D, III-G: node affinity {0, 2})."""
    return Placement(name, dist_cpus(name))


#: Figure 1's VM: "16 cores in only one processor" = 0-16 (pCPUs 16-31).
VM_0_16 = dist("0-16")
VM_8_8 = dist("8-8")
#: IV-A, Figures 10-11: 0-16 after the reset tool: node affinity follows the vCPU affinity ({2, 3}).
VM_0_16_FIXED = Placement("0-16 node affinity reset", dist_cpus("0-16"), "off")
#: IV-B, Figures 12-13: no vCPU affinity, with xl's node affinity {0, 2} / with it reset.
NO_AFFINITY = Placement("no vCPU affinity", None, "xl")
NO_AFFINITY_NO_NODE = Placement("no vCPU or node affinity", None, "off")
#: IV-C, Figure 14: even pCPUs. "the node affinity was not substantially affected because usable
#: pCPUs were across all the nodes": modelled with the node affinity following the vCPU affinity
#: (every node).
OPTIMAL = Placement("optimal", OPTIMAL_CPUS, "off")
#: III-C, Figure 3: "thread scheduler disabled": 0-16 with each Tascell worker bound to its own
#: vCPU (Tascell's -a: worker n calls sched_setaffinity on CPU n).
THREAD_PINNED = Placement("0-16 thread scheduler disabled", dist_cpus("0-16"), thread_affinity=True)
#: III-C, Figure 3: "assigning pCPUs to vCPUs one by one": vCPU i on pCPU 16 + i (0-16).
VCPU_PINNED = Placement("0-16 vCPU scheduler disabled", [str(16 + i) for i in range(VM_VCPUS)])
#: The PM: Linux 3.13 on the whole host (no Xen), and with the optimal cgroup cpuset (IV-C).
PM = Placement("PM", None, pm=True)
PM_OPTIMAL = Placement("PM optimal", OPTIMAL_CPUS, pm=True)

# --- Workloads -----------------------------------------------------------------------------------

FIB = "tascell.fib"
NQ = "tascell.nqueen"
#: Seed 001 V-B: "10 benchmarks" of NPB with OpenMP (IS inferred from the count: docs/model.md).
NPB = ("bt", "cg", "dc", "ep", "ft", "is", "lu", "mg", "sp", "ua")

#: NPB runs simulate this fraction of class A's work (``scale``): all of it. Seed 001 gives
#: neither its class nor its runtimes (docs/model.md, NPB at 1-16 threads), so absolute times are
#: not comparable; the figures compare placements at equal thread counts.
NPB_SCALE = 1.0
#: Seed 001 ran Linux 3.13 guests and hosts (III-A), whose distributions ship GCC >= 4.4:
#: libgomp spins ~GOMP_SPINCOUNT before blocking at a barrier (assumed: the seed does not name
#: its compiler). The model's ``spin-then-block`` with its default 1 ms spin.
NPB_WAIT = {"wait": "spin-then-block"}
#: --quick: tascell works of 1 s and 2% of class A, so a whole script takes about a minute.
QUICK_SERIAL = {FIB: "1s", NQ: "1s"}
QUICK_NPB_SCALE = 0.02

def workload_name(bench: str) -> str:
    """``fib`` -> tascell.fib, ``nq`` -> tascell.nqueen, ``cg`` -> npb.cg; a clear exit if missing."""
    name = {"fib": FIB, "nq": NQ}.get(bench, f"npb.{bench}")
    return require_workload(name)


def steps(bench: str) -> int:
    return int(param_default(workload_name(bench), "steps"))


def workload_setup(bench: str, settings: Settings) -> tuple[str, dict, int]:
    """(workload, params, iterations) of one run to completion of ``bench``."""
    name = workload_name(bench)
    if bench in ("fib", "nq"):
        return name, ({"serial": QUICK_SERIAL[name]} if settings.quick else {}), 1
    scale = QUICK_NPB_SCALE if settings.quick else NPB_SCALE
    return name, {"scale": scale, **NPB_WAIT}, steps(bench)


#: Simulated-time limit of a run (it stops when the program finishes): fib at one thread in a VM
#: takes 37 s; NPB's slowest, BT at one thread in a VM, 221 s.
LIMIT = ("600s", "30s")


#: III-A: "we ran Linux 3.13.0 as a fully virtualized guest", and 3.13 on the PM: the guest
#: kernel preset of that release (docs/model.md 8: Xen's PV ticket-lock slow path in the HVM
#: guest, the call-function yield; native ticket locks on bare metal).
GUEST = {"kernel": "linux-3.13"}


def scenario(bench: str, placement: Placement, threads: int, settings: Settings) -> dict:
    workload, params, iterations = workload_setup(bench, settings)
    return {"host": host(), "guest": dict(GUEST), "vm": [placement.vm(workload, threads, params, iterations)]}


# --- Running the pool ----------------------------------------------------------------------------


def run_points(benches, placements, threads, settings: Settings, seeds=None) -> pd.DataFrame:
    """Run every (bench, placement, threads) point on every seed (saved under ``out/.runs/pool``,
    shared by all scripts) and return one row per run with ``runtime_s``, ``competing_modules``
    (vms.csv) and the per-pCPU busy times ``pcpu_busy_ms[p]``. Fails loudly if a run did not
    finish within ``LIMIT``."""
    seeds = seeds or settings.seed_list(SEEDS_FULL)
    cases = [Case({"bench": b, "placement": p.name, "threads": k}, scenario(b, p, k, settings))
             for b in benches for p in placements for k in threads]
    df = run_cases("pool", cases, seeds, settings.duration(*LIMIT), settings)
    df["runtime_s"] = pd.to_numeric(df["completion_time_ms"], errors="coerce") / 1e3
    bad = df[df["runtime_s"].isna()]
    if len(bad):
        rows = ", ".join(f"{r['bench']}/{r['placement']}/{r['threads']}t/seed {r['seed']}" for _, r in bad.head(5).iterrows())
        raise SystemExit(f"{len(bad)} runs did not finish within {settings.duration(*LIMIT)} ({rows})")
    df["competing_modules"] = df["competing_modules"].astype(float)
    return df.reset_index(drop=True)


def busy_columns() -> list[str]:
    return [f"pcpu_busy_ms[{p}]" for p in range(PCPUS)]


def utilization(df: pd.DataFrame) -> pd.DataFrame:
    """Per-pCPU utilization of each run: ``pcpu_busy_ms[p]`` / simulated time, as ``u<p>``."""
    out = df.copy()
    for p in range(PCPUS):
        col = f"pcpu_busy_ms[{p}]"
        busy = pd.to_numeric(out[col], errors="coerce").fillna(0.0) if col in out else 0.0
        out[f"u{p}"] = busy / (out["sim_s"] * 1e3)
    return out


# --- Measures, plots -----------------------------------------------------------------------------


def time_plot(agg: pd.DataFrame, hue: str, path: Path, title: str, ideal_from: str | None = None,
              value: str = "runtime_s", ylabel: str = "execution time (s)", log: bool = True) -> Path:
    """Seed 001's execution-time plots: one line per ``hue`` over threads, log-log like Figure 1;
    ``ideal_from``: the ideal line (1-thread time / threads) of that series."""
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    for h in dict.fromkeys(agg[hue]):
        sub = agg[agg[hue] == h].sort_values("threads")
        ax.plot(sub["threads"], sub[f"{value}_mean"], marker="o", ms=3, label=str(h))
        if ideal_from is not None and h == ideal_from:
            one = sub[sub["threads"] == sub["threads"].min()][f"{value}_mean"].iloc[0]
            t0 = sub["threads"].min()
            ax.plot(sub["threads"], one * t0 / sub["threads"], ls="--", color="grey", lw=0.8, label=f"ideal ({h})")
    if log:
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
    ax.set_xlabel("threads")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def heatmap(matrix: np.ndarray, rows: list, path: Path, title: str, ylabel: str) -> Path:
    """A per-pCPU usage map (Figures 5, 7, 8, 9): rows x 32 pCPUs, colour = utilization 0..1,
    with module and node boundaries marked."""
    fig, ax = plt.subplots(figsize=(9, 0.32 * len(rows) + 1.6))
    im = ax.imshow(matrix, aspect="auto", cmap="Greys", vmin=0, vmax=1, interpolation="nearest")
    ax.set_xticks(range(PCPUS))
    ax.set_xticklabels([str(p) for p in range(PCPUS)], fontsize=6)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([str(r) for r in rows], fontsize=7)
    for p in range(CORES_PER_MODULE, PCPUS, CORES_PER_MODULE):
        ax.axvline(p - 0.5, color="tab:blue", lw=0.3 if p % NODE_PCPUS else 1.2)
    ax.set_xlabel("pCPU (thin lines: modules, thick: NUMA nodes)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    fig.colorbar(im, ax=ax, fraction=0.02, pad=0.01, label="utilization")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def usage_matrix(df: pd.DataFrame, by: str, rows: list) -> np.ndarray:
    """Mean per-pCPU utilization over seeds, one row per value of ``by`` in ``rows``."""
    u = utilization(df)
    cols = [f"u{p}" for p in range(PCPUS)]
    return np.vstack([u[u[by] == r][cols].mean().to_numpy() for r in rows])


# --- Claims: values per seed (docs/validation.md) ------------------------------------------------


def times(df: pd.DataFrame, placement: str, threads: int, value: str = "runtime_s", **labels) -> list[float]:
    """``value`` of one point (placement, threads and any other ``labels``, say ``bench``), one
    per seed in seed order: lists of two points are paired on the seed."""
    return seed_values(df, value, placement=placement, threads=threads, **labels)


def seedwise(f, *series: list[float]) -> Estimate:
    """``f`` applied seed by seed to lists paired on the seed (``times``), as one Estimate: a
    per-seed difference or ratio, whose interval is the paired one."""
    if len({len(s) for s in series}) > 1:
        raise ValueError(f"series of different lengths: {[len(s) for s in series]}")
    return Estimate.of([f(*xs) for xs in zip(*series)])


def seed_efficiency(df: pd.DataFrame, placement: str, a: int, b: int, **labels) -> list[float]:
    """Per seed, the parallel efficiency of going from ``a`` to ``b`` threads, (T(a) / T(b)) / (b / a)
    (1 = ideal)."""
    ta, tb = times(df, placement, a, **labels), times(df, placement, b, **labels)
    return [(x / y) / (b / a) for x, y in zip(ta, tb)]


def seed_ratio(df: pd.DataFrame, a: str, b: str, threads: int, **labels) -> list[float]:
    """Per seed, placement ``a``'s time over ``b``'s at ``threads``, minus 1."""
    return [x / y - 1 for x, y in zip(times(df, a, threads, **labels), times(df, b, threads, **labels))]


def slower(df: pd.DataFrame, a: str, b: str, threads: int, **labels) -> Estimate:
    """How much longer placement ``a`` takes than ``b`` at ``threads`` (mean(T_a) / mean(T_b) - 1,
    positive: ``a`` slower, i.e. ``b`` performs that much better), paired on the seed."""
    return change(times(df, a, threads, **labels), times(df, b, threads, **labels), paired=True)


def largest(items: dict) -> tuple:
    """The item with the largest mean (the paper's "up to"), as (key, Estimate); (None, empty)
    when no item has a mean."""
    known = [(k, e) for k, e in items.items() if e.known]
    return max(known, key=lambda ke: ke[1].mean) if known else (None, Estimate.of([]))




#: --quick: the thread counts the claims read (1, 4, 8, 12, 16), one seed, short work.
QUICK_THREADS = (1, 4, 8, 12, 16)


def thread_counts(settings: Settings) -> tuple[int, ...]:
    return QUICK_THREADS if settings.quick else THREADS
