"""Shared setup of the seed-002 experiment scripts (Ahn, Park, Huh et al., "Accelerating Critical
OS Services in Virtualized Systems with Flexible Micro-sliced Cores", EuroSys'18:
../shared/seeds/002_6e83742be1ba7a4e.txt).

One place for the paper's host (sections 3.1 and 6.1: one socket of an Intel Xeon E5645, 12
hardware threads, six cores with hyper-threading; Xen 4.7's credit scheduler with its default
30 ms slice, pause-loop exiting on), its VMs (two of 12 vCPUs, 2:1 overcommit, Linux 4.4 guests
with ``CONFIG_PARAVIRT_SPINLOCKS=y``: ``[guest] kernel = "linux-4.4"``), the co-runner (PARSEC
swaptions in the second VM), the micro-sliced configurations (static 1-6 cores at a 0.1 ms slice,
dynamic = Algorithm 1) and the workloads (MOSBENCH gmake, exim, psearchy, memclone, PARSEC dedup
and vips; Figure 8's unaffected ones; Figure 9's iperf + lookbusy).

**Every figure draws from one pool of runs.** A run is a *point*: (workload, configuration,
seed), where the configuration is ``solo`` (the workload's VM alone), ``base`` (beside swaptions,
plain credit), ``s1``..``s6`` (beside swaptions with that many static micro-sliced cores) or
``dyn`` (beside swaptions, dynamic, Algorithm 1 with a limit of ``DYN_LIMIT``). Table 2, Table
4, Figures 4-7 share the same runs; runs are saved under ``out/.runs/pool/`` as they finish
(``runkit.run_cases``): a killed sweep loses nothing and a rerun resumes.

**Performance is a rate over a fixed simulated time**, not the time to run the whole benchmark:
the seed's inputs are "native" / "default" and its run lengths are not given, and the baseline
co-runs are too slow to finish. A workload's *throughput* is its vms.csv ``progress`` per
simulated second (dedup chunks, vips tiles, exim messages, psearchy files, swaptions' 5 ms
blocks); "execution time" ratios are inverse throughput ratios. Two models count coarse units
whose first ones all finish together (gmake's 0.4 s compile jobs in 24 slots started at once,
memclone's runs of 12 threads meeting at a barrier; SPEC CPU2006's hundredths of a reference run),
so for them the rate is their *useful CPU time* per second (``user_time_ms`` + ``kernel_time_ms``: work, not spinning, TLB waiting or
exit overhead): what their units are made of, so over a long run it is proportional to their
progress.

**Measured runs start at 0**, with every thread started together; the seed measured whole runs.

**Yield counts are whole-run totals** in the seed (Table 2, Figure 7: "the number of yields" of a
run). A run of a benchmark to a fixed amount of work (PARSEC's native input, a gmake build,
memclone's runs, psearchy's files) has a total proportional to its yields per unit of work; a run
of a fixed length (MOSBENCH's exim: smtpbm runs 60 s, docs/model.md § seed 002: workload models)
to its yields per second. ``add_rates`` gives each count both ways and ``<count>_run``, the one
that stands for the seed's whole-run total (``FIXED_TIME`` lists the fixed-length benchmarks).

**Claims are judged by the validation protocol** (docs/validation.md, ``protocol.py``): every
point is run on ``settings.seed_list()`` (at least five seeds in a full run); two configurations
of a point were run on the same seeds, so they are compared per seed (``protocol.change(...,
paired=True)`` on ``values``; ``level_vs`` for a level the seed compares with a baseline).
"""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # experiments/, for the shared runkit

from runkit import *  # noqa: E402,F401,F403  (re-exported for the figure scripts: runkit.__all__)
from runkit import Case, Estimate, Settings, change, finite, per_seed_ratio, run_cases, seed_values  # noqa: E402

OUT.set_root(HERE / "out")

# --- The paper's host and VMs (seed 002 sections 3.1, 6.1) ---------------------------------------

PCPUS = 12  # one Xeon E5645 socket: 6 cores x 2 hardware threads ("only a socket (12 threads)")
THREADS_PER_CORE = 2
VM_VCPUS = 12  # "two virtual machines which are configured with 12 virtual CPUs"
#: "Linux kernel 4.4 ... we did not change the default kernel configuration options such as
#: CONFIG_PARAVIRT_SPINLOCKS=y" (6.1): the linux-4.4 preset (docs/model.md § seed 002).
GUEST = {"kernel": "linux-4.4"}
#: The kernel behind Table 4a's waits, "reported by Lockstat" (3.3): /proc/lock_stat needs
#: CONFIG_LOCK_STAT, which selects DEBUG_SPINLOCK, whose waiters loop on a trylock
#: (docs/model.md § seed 002: mosbench under the 4.4 guest, and the kernel behind Table 4a).
LOCKSTAT_GUEST = {"kernel": "linux-4.4", "spinlock": "debug"}
#: "the time slice for the baseline is set to the default 30ms. The micro-sliced cpupool is
#: configured to have a time slice of 0.1ms" (6.1); profile 10 ms, run phase 1 s (4.3, Alg. 1).
MICRO_SLICE = "100us"
PROFILE_INTERVAL = "10ms"
EPOCH = "1s"
#: Figure 4 varies 1 to 6 static micro-sliced cores ("we limit the number of micro-sliced cores to
#: 6 out of the 12 cores"); Algorithm 1's NUM_LIMIT_uCORES is not given: assumed the same 6.
STATIC_CORES = (1, 2, 3, 4, 5, 6)
DYN_LIMIT = 6
CORUNNER = "parsec.swaptions"  # "the second co-runner virtual machine running swaptions"

CONFIGS = ("solo", "base") + tuple(f"s{n}" for n in STATIC_CORES) + ("dyn",)


def host(config: str) -> dict:
    """The Xen 4.7 credit host; with ``s<N>``/``dyn`` the ``[host.microsliced]`` table."""
    h = {"pcpus": PCPUS, "threads_per_core": THREADS_PER_CORE, "policy": "credit", "params": {"xen": "4.7"}}
    micro = micro_table(config)
    if micro:
        h["microsliced"] = micro
    return h


def micro_table(config: str, detect=("ple", "ipi", "irq")) -> dict | None:
    if config in ("solo", "base"):
        return None
    common = {"slice": MICRO_SLICE, "profile_interval": PROFILE_INTERVAL, "epoch": EPOCH, "detect": list(detect)}
    if config == "dyn":
        return {"mode": "dynamic", "cores": DYN_LIMIT, **common}
    if config.startswith("s") and config[1:].isdigit():
        return {"mode": "static", "cores": int(config[1:]), **common}
    raise ValueError(f"configuration {config!r}: expected one of {', '.join(CONFIGS)}")


# --- Workloads -----------------------------------------------------------------------------------

#: The target workloads of Figures 4-7 (6.1): PARSEC dedup and vips (native input), MOSBENCH exim,
#: gmake, psearchy (default inputs), memclone.
TARGETS = ("mosbench.gmake", "memclone", "parsec.dedup", "parsec.vips", "mosbench.exim", "mosbench.psearchy")
SHORT = {"mosbench.gmake": "gmake", "memclone": "memclone", "parsec.dedup": "dedup", "parsec.vips": "vips",
         "mosbench.exim": "exim", "mosbench.psearchy": "psearchy", "parsec.swaptions": "swaptions"}
#: Benchmarks the seed ran for a fixed time, not to a fixed amount of work: their yield totals are
#: per second (module doc). MOSBENCH's exim driver (smtpbm) runs 60 s (docs/model.md § seed 002:
#: workload models).
FIXED_TIME = ("mosbench.exim",)
#: Rate = useful CPU time per second for these (coarse units, module doc), and for every
#: ``spec2006.*`` copy set (hundredths of a reference run: 401.bzip2's is 4.8 s of one copy, mcf's
#: longer, so a few seconds count few units; a copy is pure user work, so its CPU time is its
#: progress).
WORK_RATE = ("mosbench.gmake", "memclone")

#: Simulated seconds per run (full, --quick). gmake and memclone's rates are CPU-time based, so a
#: few seconds suffice; memclone is the costliest to simulate (~1.5 s of wall time per simulated
#: second co-run: millions of pause-loop exits).
DURATION = {"mosbench.gmake": ("6s", "1s"), "memclone": ("3s", "500ms"), "parsec.dedup": ("5s", "1s"),
            "parsec.vips": ("5s", "1s"), "mosbench.exim": ("5s", "1s"), "mosbench.psearchy": ("5s", "1s")}
DEFAULT_DURATION = ("5s", "1s")


def duration(workload: str, settings: Settings) -> str:
    return settings.duration(*DURATION.get(workload, DEFAULT_DURATION))


def vm(name: str, workload: str, **extra) -> dict:
    return {"name": name, "vcpus": VM_VCPUS, "workload": workload, **extra}


#: The dynamic runs sample the micro pool's size every second (a per-second series;
#: --quick: every 100 ms, its runs being shorter than a second).
SAMPLE_EVERY = ("1s", "100ms")


def scenario(workload: str, config: str, settings: Settings, guest: dict = GUEST) -> dict:
    vms = [vm("app", workload)]
    if config != "solo":
        vms.append(vm("corunner", CORUNNER))
    run = {"sample_every": settings.duration(*SAMPLE_EVERY)} if config == "dyn" else {}
    return {"host": host(config), "guest": dict(guest), "vm": vms, "run": run}


# --- Running the pool ----------------------------------------------------------------------------


def run_points(workloads, configs, settings: Settings, seeds=None, lockstat: bool = False) -> pd.DataFrame:
    """Run every (workload, configuration) point on every seed (saved under ``out/.runs/pool``,
    shared by all scripts); one row per run and VM (``vm`` = app / corunner) with ``rate`` (the
    throughput of the module doc, per simulated second) and ``sim_s``. ``lockstat``: the guests
    run Table 4a's kernel (``LOCKSTAT_GUEST``; the rows are labelled ``guest = lockstat``)."""
    seeds = seeds or settings.seed_list()
    guest, label = (LOCKSTAT_GUEST, {"guest": "lockstat"}) if lockstat else (GUEST, {})
    frames = []
    for w in workloads:
        cases = [Case({"workload": w, "config": c, **label}, scenario(w, c, settings, guest), duration(w, settings))
                 for c in configs]
        frames.append(run_cases("pool", cases, seeds, duration(w, settings), settings))
    df = pd.concat(frames, ignore_index=True)
    return add_rates(df)


#: Yields by the mechanism that took them (vms.csv): pause-loop exits, SCHEDOP_yield after
#: call-function IPIs to a stolen vCPU, HLT and SCHEDOP_poll blocks. Their sum is a run's yields.
YIELD_SOURCES = ("yields_ple", "yields_ipi", "yields_halt")

#: Figure 7's three sources as the seed classifies them, by the guest kernel function at the
#: yielding vCPU's instruction pointer (section 4.1; vms.csv ``yields_in_*``): a yield while
#: spinning for a lock ("PLE"), while waiting for IPI acknowledgements in
#: ``smp_call_function_many`` or the call-function send's SCHEDOP_yield ("IPI"), and the blocks
#: ("halt"). ``yields_in_other`` (a yield in any other function) is kept beside them; with these
#: guests it is zero. The four sum to ``yields_total``.
FN_SOURCES = ("yields_in_lock_spin", "yields_in_ipi_wait", "yields_halt")


def add_rates(df: pd.DataFrame) -> pd.DataFrame:
    df = df.copy()
    progress = pd.to_numeric(df["progress"], errors="coerce")
    work = (pd.to_numeric(df["user_time_ms"], errors="coerce") + pd.to_numeric(df["kernel_time_ms"], errors="coerce")) / 1e3
    coarse = (df["vm"] == "app") & (df["workload"].isin(WORK_RATE) | df["workload"].str.startswith("spec2006."))
    df["rate"] = np.where(coarse, work, progress) / df["sim_s"]
    df["work"] = df["rate"] * df["sim_s"]  # units of progress (or useful CPU seconds) done in the run
    for c in YIELD_SOURCES + FN_SOURCES + ("yields_in_other",):
        df[c] = pd.to_numeric(df[c], errors="coerce")
    df["yields_total"] = sum(df[c] for c in YIELD_SOURCES)
    # The seed's whole-run totals (module doc): per unit of work, or per second for FIXED_TIME.
    per = np.where(df["workload"].isin(FIXED_TIME), df["sim_s"], df["work"].where(df["work"] > 0))
    for c in dict.fromkeys(YIELD_SOURCES + FN_SOURCES + ("yields_in_other", "yields_total")):
        df[f"{c}_per_s"] = df[c] / df["sim_s"]
        df[f"{c}_run"] = df[c] / per
    return df


def run_unit(workload: str) -> str:
    """What ``<count>_run`` is per, for ``workload``'s notes."""
    return "per second (a fixed-length run)" if workload in FIXED_TIME else "per unit of work (a fixed-work run)"


def app(df: pd.DataFrame) -> pd.DataFrame:
    return df[df["vm"] == "app"].reset_index(drop=True)


def corunner(df: pd.DataFrame) -> pd.DataFrame:
    return df[df["vm"] == "corunner"].reset_index(drop=True)


def normalized(df: pd.DataFrame, ref: str = "base") -> pd.DataFrame:
    """Per run: ``speedup`` = rate / the same seed's ``ref`` rate (app and co-runner rows each)."""
    return per_seed_ratio(df, "rate", ["workload", "vm", "seed"], "config", ref, "speedup")


# --- Per-seed values and the comparisons the claims make (docs/validation.md) ----------------------


def values(df: pd.DataFrame, value: str, workload: str, config: str, vm: str = "app", **labels) -> list[float]:
    """``value`` of one point, one per seed in seed order (empty when the point was not run, as
    with --quick's fewer configurations): two calls give lists paired on the seed."""
    return seed_values(df, value, workload=workload, config=config, vm=vm, **labels)


def throughput_change(df: pd.DataFrame, workload: str, config: str, base: str = "base", vm: str = "app") -> Estimate:
    """The relative change of ``vm``'s throughput (``rate``) from ``base`` to ``config``, paired
    on the seed: +0.91 is "91% more throughput"."""
    return change(values(df, "rate", workload, config, vm), values(df, "rate", workload, base, vm), paired=True)


def time_change(df: pd.DataFrame, workload: str, config: str, base: str = "base", vm: str = "app") -> Estimate:
    """The relative change of ``vm``'s execution time from ``base`` to ``config`` (execution time
    of a fixed amount of work = 1 / rate), paired on the seed: +0.14 is "14% slower"."""
    inv = [1 / x if x > 0 else float("nan") for x in values(df, "rate", workload, config, vm)]
    inv_b = [1 / x if x > 0 else float("nan") for x in values(df, "rate", workload, base, vm)]
    return change(inv, inv_b, paired=True)


def count_change(df: pd.DataFrame, workload: str, count: str, config: str, base: str = "base") -> Estimate:
    """The relative change of the app's whole-run total of ``count`` (``<count>_run``, module doc)
    from ``base`` to ``config``, paired on the seed."""
    return change(values(df, f"{count}_run", workload, config), values(df, f"{count}_run", workload, base), paired=True)


def static_best(df: pd.DataFrame, workload: str) -> str | None:
    """The static configuration with the highest mean throughput of ``workload`` over seeds (the
    seed's "static best": "the number of micro-sliced cores which exhibits the best performance in
    the previous experiments"); None if no static configuration was run."""
    means = {}
    for c in sorted(set(df["config"])):
        if c.startswith("s") and c[1:].isdigit():
            v = [x for x in values(df, "rate", workload, c) if finite(x)]
            if v:
                means[c] = sum(v) / len(v)
    return max(means, key=means.get) if means else None


def level_vs(new: list[float], base: list[float]) -> tuple[Estimate, float]:
    """A level the seed compares with a baseline (a co-run wait beside the solo one): the
    estimate to judge it by (``judge_point(est, paper, ref=base_mean)``), with the level's mean
    over the seeds both have and the 95% interval of the per-seed paired differences shifted by
    the baseline's mean, so it excludes that mean exactly when the paired difference excludes
    zero; and the baseline's mean."""
    pairs = [(a, b) for a, b in zip(new, base) if finite(a) and finite(b)] if len(new) == len(base) else []
    if not pairs:
        return NO_ESTIMATE, float("nan")
    base_mean = float(np.mean([b for _, b in pairs]))
    diff = Estimate.of([a - b for a, b in pairs])
    return diff.map(lambda x: x + base_mean), base_mean




# --- Measures, plots -----------------------------------------------------------------------------


def combined(app_speedup: float, co_speedup: float) -> float:
    """The pair's combined throughput improvement: the mean of the two normalized throughputs,
    minus 1 (the seed does not define it; assumed)."""
    return (app_speedup + co_speedup) / 2 - 1


def quick_configs(settings: Settings) -> tuple[str, ...]:
    """--quick: baseline, one, three static cores and dynamic."""
    return ("solo", "base", "s1", "s3", "dyn") if settings.quick else CONFIGS


def static_configs(settings: Settings) -> list[str]:
    return [c for c in quick_configs(settings) if c.startswith("s") and c[1:].isdigit()]


# --- Figure 9 / Table 4c: iperf on a mixed vCPU ---------------------------------------------------

#: Section 6.2, Figure 9: "two virtual machines with one vCPU each, pinned onto the same physical
#: CPU"; the micro-sliced core needs a pCPU of its own, so the host has two and both VMs are pinned
#: to pCPU 0 (pCPU 1 idles without micro cores; with them it is the micro pool, as the released
#: code's odd-numbered pick: docs/model.md § seed 002: micro-sliced cores).
IPERF_PCPUS = 2
#: (label, iperf VM threads, lookbusy VM?): "solo" = iperf alone in its VM and on the host (Table
#: 4c's upper bound); "mixed" = iperf's server and a CPU hog on the one vCPU (Figure 9b) beside the
#: lookbusy VM.
IPERF_CASES = {"solo": (1, False), "mixed": (2, True)}
IPERF_DURATION = ("2s", "500ms")


def iperf_scenario(case: str, protocol: str, micro: str) -> dict:
    """Figure 9's scenario (scenarios/examples/iperf-mixed.toml) with ``micro`` = ``base`` or a
    static configuration ``s<N>`` (irq detection and the rest on)."""
    threads, busy = IPERF_CASES[case]
    h = {"pcpus": IPERF_PCPUS, "policy": "credit", "params": {"xen": "4.7"}}
    table = micro_table(micro)
    if table:
        h["microsliced"] = table
    vms = [{"name": "io", "vcpus": 1, "cpus": "0", "workload": "iperf", "threads": threads, "params": {"protocol": protocol}}]
    if busy:
        vms.append({"name": "busy", "vcpus": 1, "cpus": "0", "workload": "lookbusy"})
    return {"host": h, "guest": dict(GUEST), "vm": vms}


def run_iperf(points, settings: Settings, seeds=None) -> pd.DataFrame:
    """``points``: (case, protocol, micro) triples; one row per run and VM, in the shared pool."""
    seeds = seeds or settings.seed_list()
    cases = [Case({"workload": "iperf", "case": c, "protocol": p, "config": m}, iperf_scenario(c, p, m)) for c, p, m in points]
    df = run_cases("pool", cases, seeds, settings.duration(*IPERF_DURATION), settings)
    for col in ("throughput_mbps", "jitter_ms", "cpu_time_ms"):
        df[col] = pd.to_numeric(df[col], errors="coerce")
    return df


# --- Figures 4 and 5: targets vs static micro-sliced cores ----------------------------------------


def cores_of(config: str) -> int:
    """``base`` -> 0, ``s<N>`` -> N."""
    return 0 if config == "base" else int(config[1:])


def static_table(df: pd.DataFrame) -> pd.DataFrame:
    """One row per (bench, cores, seed): the target's and swaptions' rates normalized to the same
    seed's baseline (``app_speedup``, ``co_speedup``), the co-runner's execution-time change
    (``co_slowdown`` = 1 / co_speedup - 1), the combined improvement, the app's yields and its
    mean TLB-shootdown latency (``tlb_latency_us``). For the CSV and the plot; the claims compare
    the pool's runs themselves (``throughput_change`` and the like)."""
    d = normalized(df[df["config"] != "solo"])
    d = d[(d["config"] == "base") | d["config"].str.match(r"^s\d+$")]
    a, c = app(d), corunner(d)
    keys = ["workload", "config", "seed"]
    a = a.assign(tlb_latency_us=pd.to_numeric(a["tlb_shootdown_latency_mean_us"], errors="coerce"))
    own = ["speedup", "rate", "yields_total", "yields_ple", "yields_ipi", "yields_halt", "yields_total_run",
           "tlb_latency_us", "steal_time_ms", "cpu_time_ms"]
    t = a[keys + own].merge(
        c[keys + ["speedup", "rate"]].rename(columns={"speedup": "co_speedup", "rate": "co_rate"}), on=keys)
    t = t.rename(columns={"speedup": "app_speedup"})
    t["co_slowdown"] = 1 / t["co_speedup"] - 1
    t["combined"] = [combined(x, y) for x, y in zip(t["app_speedup"], t["co_speedup"])]
    t["bench"] = t["workload"].map(SHORT)
    t["cores"] = t["config"].map(cores_of)
    return t.sort_values(["bench", "cores", "seed"]).reset_index(drop=True)


def static_measure(benches, settings: Settings) -> pd.DataFrame:
    """Figures 4/5: every bench beside swaptions at the baseline and each static core count."""
    return run_points(benches, [c for c in quick_configs(settings) if c not in ("solo", "dyn")], settings)


def static_outputs(df: pd.DataFrame, fig: str, name: str, cols, labels, title: str) -> pd.DataFrame:
    """Figures 4/5: the per-run table (``runs.csv``), its aggregate over seeds (``<name>.csv``) and
    the bar plot ``<fig>.png``; returns the aggregate."""
    t = static_table(df)
    write_csv(t, fig, "runs")
    agg = aggregate(t, ["bench", "cores"], cols)
    write_csv(agg, fig, name)
    cores_plot(agg, labels, out_dir(fig) / f"{fig}.png", title, "throughput / baseline")
    return agg




def cores_plot(agg: pd.DataFrame, benches, path: Path, title: str, app_label: str) -> Path:
    """Figures 4/5: per bench, the target's normalized throughput (bars, 95% interval) and
    swaptions' normalized execution time (line, right axis) over 0 (baseline) to 6 micro-sliced
    cores."""
    fig, axes = plt.subplots(1, len(benches), figsize=(3.2 * len(benches), 3.4), squeeze=False)
    for ax, b in zip(axes[0], benches):
        sub = agg[agg["bench"] == b].sort_values("cores")
        ax.bar(sub["cores"], sub["app_speedup_mean"], yerr=interval_bars(sub, "app_speedup"), color="tab:blue", capsize=2)
        ax.axhline(1.0, color="grey", lw=0.7, ls="--")
        ax.set_title(b)
        ax.set_xlabel("micro-sliced cores (0 = baseline)")
        ax.set_ylabel(app_label, fontsize=8)
        ax2 = ax.twinx()
        ax2.plot(sub["cores"], 1 + sub["co_slowdown_mean"], color="tab:red", marker="o", ms=3)
        ax2.set_ylabel("swaptions exec. time (norm.)", color="tab:red", fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
