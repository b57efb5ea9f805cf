"""Slide 5: slowdown of 4-thread PARSEC and NPB programs under interference.

Seed 003 slide 5 ("Potential of Guest OS Load Balancing"): a 4-vCPU VM runs a 4-thread parallel
program, each vCPU pinned on its own pCPU, and one single-vCPU VM running a single-thread
CPU-bound program is pinned on each of those pCPUs. Claims: parallel programs "suffer from lower
CPU utilizations caused by frequent LHP and LWP" (lock-holder and lock-waiter preemption), while
"user-level work stealing" tolerates it, so "[if the guest could] schedule critical threads, any
application can be made resilient to interference".

Ours: performance with 4 interferers over performance alone (same seed), vanilla Xen 4.4 credit.
A fair share of each pCPU is half, so a program that loses nothing to synchronization slows down
2x; the parallel VM's CPU use over that fair share (vms.csv ``cpu_time_ms`` / (2 pCPUs x run)) is
its "CPU utilization". Tascell fib (seed 001's work-stealing model) stands for user-level work
stealing (the slides do not name their work-stealing program).

    python experiments/irs/slide05_slowdown.py [--quick]
"""

from __future__ import annotations

import pandas as pd

from common import (
    DIRECTION, FIB, NOT_REPRODUCED, PCPUS, REPRODUCED, VANILLA, Claim, Settings, aggregate, bar_plot,
    figure_main, npb_set, out_dir, par_rows, parse_args, parsec_set, per_seed_ratio, point, run_points,
    write_csv,
)

FIG = "slide05"
FAIR_SLOWDOWN = 2.0  # one hog per pCPU: half of each pCPU


def benches(settings: Settings) -> list[str]:
    return list(parsec_set(settings)) + list(npb_set(settings)) + [FIB]


def measure(settings: Settings, seeds=None) -> pd.DataFrame:
    pts = [point(b, VANILLA, n, layout) for b in benches(settings) for n, layout in ((0, "solo"), (PCPUS, "pinned"))]
    df = par_rows(run_points(pts, settings, seeds))
    df["utilization"] = pd.to_numeric(df["cpu_time_ms"], errors="coerce") / (df["sim_s"] * 1e3 * PCPUS / 2)
    out = per_seed_ratio(df, "perf", ["bench", "seed"], "layout", "solo", "rel")
    out = out[out["layout"] == "pinned"].copy()
    out["slowdown"] = 1 / out["rel"]
    out["suite"] = out["bench"].map(lambda b: "work stealing" if b == FIB else ("NPB" if b in npb_set(settings) else "PARSEC"))
    return out


def write_outputs(df: pd.DataFrame) -> pd.DataFrame:
    agg = aggregate(df, ["suite", "bench"], ["slowdown", "utilization"])
    write_csv(df[["suite", "bench", "seed", "perf", "slowdown", "utilization"]], FIG, "runs")
    write_csv(agg, FIG, "slide05_slowdown")
    bar_plot(agg, "bench", None, "slowdown", "slowdown (x, alone = 1)",
             "Slide 5: 4-thread programs, one CPU hog per pCPU (vanilla Xen)", out_dir(FIG) / "slide05.png",
             hline=FAIR_SLOWDOWN)
    return agg


def claims(agg: pd.DataFrame) -> list[Claim]:
    par = agg[agg["suite"] != "work stealing"]
    worse = par[par["slowdown_mean"] > FAIR_SLOWDOWN * 1.05]
    util = par["utilization_mean"]
    fib = agg[agg["suite"] == "work stealing"]
    out = [Claim(
        "Slide 5", "parallel programs slow down beyond their fair share under one interfering VM per pCPU "
        "(lower CPU utilization from LHP and LWP)", "slowdown well above 2x (plot)",
        f"{len(worse)}/{len(par)} programs > 2.1x (max {par['slowdown_mean'].max():.2f}x, "
        f"{par.loc[par['slowdown_mean'].idxmax(), 'bench']}); CPU use {util.min():.0%}-{util.max():.0%} of the fair share",
        REPRODUCED if len(worse) >= len(par) / 2 else (DIRECTION if len(worse) else NOT_REPRODUCED),
        "R: at least half the programs beyond 2.1x; fair share = half of each pCPU")]
    if len(fib):
        f = fib.iloc[0]
        resilient = f["slowdown_mean"] <= par["slowdown_mean"].median()
        out.append(Claim(
            "Slide 5", "user-level work stealing tolerates interference (what guest load balancing could give "
            "every program)", "near the fair share",
            f"tascell fib {f['slowdown_mean']:.2f}x vs median parallel program {par['slowdown_mean'].median():.2f}x",
            REPRODUCED if resilient and f["slowdown_mean"] <= FAIR_SLOWDOWN * 1.05 else (DIRECTION if resilient else NOT_REPRODUCED),
            "R: at or below the median and within 5% of 2x"))
    return out


main = figure_main(FIG, measure, write_outputs, claims)


if __name__ == "__main__":
    main(parse_args(__doc__))
