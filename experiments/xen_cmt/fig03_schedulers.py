"""Figure 3: tascell-fib with the guest's thread scheduler or Xen's vCPU scheduler disabled.

Seed 001 section III-C, in the 0-16 VM of Figure 1: "thread scheduler disabled" = each thread
pinned to its own vCPU (tascell's CPU affinity); "vCPU scheduler disabled" = "assigning pCPUs to
vCPUs one by one" (vCPU i on pCPU 16 + i). Claims: without the thread scheduler the time is 6-9%
shorter, and the scalability almost the same; without the vCPU scheduler the scalability differs
from both schedulers enabled, the improvement slowing "down more gradually like a PM".

**The thread scheduler cannot be disabled in vcpusim**: the guest has no thread CPU affinity
(sched_setaffinity). A VM's guest starts thread i on vCPU i (sim/build.rs) and wakes a thread on
its previous vCPU when that vCPU is idle, else on another idle one (guest/scheduler.rs
``wake_target``), and an idle vCPU pulls a queued thread (``pick_next``): threads can move. So
that curve is not drawn and both its claims are "not measured" (N).

The vCPU-scheduler claims compare per-seed parallel efficiencies, (T(a) / T(b)) / (b / a) of a
step from a to b threads, paired on the seed: with the vCPU scheduler disabled the 4 -> 8
efficiency is above that with both schedulers (no steep slowdown at 4 threads), and its 8 -> 12
efficiency is below its 4 -> 8 (the improvement keeps slowing as threads increase, as a PM's:
no recovery above 8).

    python experiments/xen_cmt/fig03_schedulers.py [--quick]
"""

from __future__ import annotations

import pandas as pd

from common import (
    DIRECTION, MECHANISM, NO_EFFECT, PM, RANGE, VCPU_PINNED, VM_0_16, Claim, N, Settings, aggregate,
    figure_main, judge_direction, out_dir, parse_args, run_points, seed_efficiency, seedwise, thread_counts,
    time_plot, write_csv,
)

FIG = "fig03"
BOTH = "both enabled (0-16)"
VCPU_OFF = "vCPU scheduler disabled"
SOURCE = "§III-C, Fig 3 (text)"
NOT_MODELLED = ("the guest has no thread CPU affinity (sched_setaffinity): threads move between vCPUs at wake-ups "
                "(wake_target) and idle pulls; adding it is a change to the simulator")


def measure(settings: Settings, threads=None, seeds=None) -> pd.DataFrame:
    df = run_points(["fib"], [VM_0_16, VCPU_PINNED, PM], threads or thread_counts(settings), settings, seeds)
    names = {VM_0_16.name: BOTH, VCPU_PINNED.name: VCPU_OFF, PM.name: PM.name}
    df["config"] = df["placement"].map(names)
    return df


def write_outputs(df: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """CSV and PNG outputs; returns the runs and the aggregate (the claims read the runs)."""
    agg = aggregate(df, ["config", "threads"], ["runtime_s", "competing_modules"])
    write_csv(df[["config", "threads", "seed", "runtime_s", "competing_modules"]], FIG, "runs")
    write_csv(agg, FIG, "fig03_runtime")
    time_plot(agg[agg["config"] != PM.name], "config", out_dir(FIG) / "fig03.png",
              "Figure 3: tascell-fib with one scheduler disabled (0-16)")
    return df, agg


def claims(measured: tuple[pd.DataFrame, pd.DataFrame]) -> list[Claim]:
    df, _ = measured
    ks = set(df["threads"])
    n = int(df["seed"].nunique())
    out = [
        Claim(id="thread-off-shorter", figure="Fig 3", claim="thread scheduler disabled: execution time 6-9% shorter",
              paper="6-9% shorter", source=SOURCE, type=RANGE, ours="not measured: no thread CPU affinity in the guest",
              verdict=N, n=n, cause=MECHANISM, note=NOT_MODELLED),
        Claim(id="thread-off-same-scaling", figure="Fig 3",
              claim="thread scheduler disabled: scalability almost the same as with both schedulers",
              paper="almost the same", source=SOURCE, type=NO_EFFECT,
              ours="not measured: no thread CPU affinity in the guest", verdict=N, n=n, cause=MECHANISM,
              note=NOT_MODELLED),
    ]
    if {4, 8, 12} <= ks:
        off48 = seed_efficiency(df, VCPU_PINNED.name, 4, 8)
        gentler = seedwise(lambda a, b: a - b, off48, seed_efficiency(df, VM_0_16.name, 4, 8))
        out.append(Claim(
            id="vcpu-off-no-knee", figure="Fig 3",
            claim="vCPU scheduler disabled: the improvement from 4 to 8 threads slows less than with both schedulers",
            paper="different scalability; slowed down more gradually", source=SOURCE, type=DIRECTION, estimate=gentler,
            ours=f"efficiency 4->8, vCPU scheduler disabled minus both enabled: {gentler.text(3)}",
            verdict=judge_direction(gentler, +1), cause=MECHANISM,
            note="efficiency of a step = (T(a)/T(b)) / (b/a), per seed, paired on the seed; above 0 beyond noise"))
        keeps = seedwise(lambda a, b: a - b, seed_efficiency(df, VCPU_PINNED.name, 8, 12), off48)
        out.append(Claim(
            id="vcpu-off-like-pm", figure="Fig 3",
            claim="vCPU scheduler disabled: the improvement keeps slowing as threads increase, like a PM (8->12 below 4->8)",
            paper="slowed down more gradually like a PM", source=SOURCE, type=DIRECTION, estimate=keeps,
            ours=f"efficiency 8->12 minus 4->8, vCPU scheduler disabled: {keeps.text(3)}",
            verdict=judge_direction(keeps, -1), cause=MECHANISM,
            note="'like a PM': no recovery above 8 threads (Fig 1's VM recovers there); per-seed efficiencies paired "
                 "on the seed, below 0 beyond noise"))
    return out


main = figure_main(FIG, measure, write_outputs, claims)


if __name__ == "__main__":
    main(parse_args(__doc__))
