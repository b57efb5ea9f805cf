"""Figure 1: tascell-fib in a VM and on the physical machine (PM) at 1-16 threads, with the ideal.

Seed 001 section III-B: the 16-vCPU VM on "16 cores in only one processor" (0-16, pCPUs 16-31,
xl's node affinity {0, 2}) under Xen 4.4, and Linux 3.13 on the bare host. Claims: fixed
virtualization overhead 24% at one thread (**an input here**: ``virt_overhead = 0.24``, a
calibration row); the difference is largest at 8 threads, where the VM takes 72% longer; the
VM's improvement slows steeply from 4 threads where the PM's slows gradually, "improved largely
again after the number of threads exceeded 8" and slowed again above 12.

How each is measured (every VM/PM and thread-to-thread comparison is paired on the seed: the VM
and the PM, and every thread count, run on the same seeds):
- the overhead and the 72%: mean(T_VM) / mean(T_PM) - 1 at 1 and 8 threads (``protocol.change``);
- the largest gap at 8: per seed, the gap T_VM / T_PM - 1 at 8 threads minus the gap at each
  other thread count, above zero beyond noise for every one;
- the shape: the parallel efficiency of a step, (T(a) / T(b)) / (b / a), per seed: from 4 to 8
  threads the VM's below the PM's; the VM's from 8 to 12 above its 4 to 8; its 12 to 16 below
  its 8 to 12.

    python experiments/xen_cmt/fig01_pm_vs_vm.py [--quick]
"""

from __future__ import annotations

import pandas as pd

from common import (
    CALIBRATION, DIRECTION, MECHANISM, PM, POINT, VIRT_OVERHEAD, VM_0_16, WORKLOAD, Claim, Settings, aggregate,
    figure_main, judge_direction, judge_point, items_text, min_n, out_dir, parse_args, run_points,
    seed_efficiency, seed_ratio, seedwise, slower, thread_counts, time_plot, worst, write_csv,
)

FIG = "fig01"
VM, PM_NAME = VM_0_16.name, PM.name
#: Section III-B: "the execution time in a VM was 72% longer than that in a PM" at 8 threads.
PAPER_GAP_8 = 0.72
SOURCE = "§III-B, Fig 1 (text)"


def measure(settings: Settings, threads=None, seeds=None) -> pd.DataFrame:
    return run_points(["fib"], [VM_0_16, PM], threads or thread_counts(settings), settings, seeds)


def write_outputs(df: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """CSV and PNG outputs; returns the runs and the aggregate (the claims read the runs)."""
    agg = aggregate(df, ["placement", "threads"], ["runtime_s", "competing_modules"])
    write_csv(df[["placement", "threads", "seed", "runtime_s", "competing_modules", "cpu_time_ms"]], FIG, "runs")
    write_csv(agg, FIG, "fig01_runtime")
    d = out_dir(FIG)
    time_plot(agg, "placement", d / "fig01.png", "Figure 1: tascell-fib, VM (0-16) vs PM", ideal_from=PM_NAME)
    return df, agg


def claims(measured: tuple[pd.DataFrame, pd.DataFrame]) -> list[Claim]:
    df, _ = measured
    ks = sorted(set(df["threads"]))
    out = []
    one = slower(df, VM, PM_NAME, 1)
    out.append(Claim(
        id="overhead-1t", figure="Fig 1",
        claim="fixed virtualization overhead: the VM takes 24% longer than the PM at 1 thread",
        paper="24%", source=SOURCE, kind=CALIBRATION, type=POINT, estimate=one,
        ours=one.text(1, pct=True), verdict=judge_point(one, VIRT_OVERHEAD, ref=0),
        note=f"an input, not a result: [host.costs] virt_overhead = {VIRT_OVERHEAD} (common.VIRT_OVERHEAD); "
             "T_VM / T_PM - 1 paired on the seed"))
    at8 = slower(df, VM, PM_NAME, 8)
    out.append(Claim(
        id="gap-8t", figure="Fig 1", claim="at 8 threads the VM takes 72% longer than the PM",
        paper=f"+{PAPER_GAP_8:.0%}", source=SOURCE, type=POINT, estimate=at8, ours=at8.text(1, pct=True),
        verdict=judge_point(at8, PAPER_GAP_8, ref=0), cause=WORKLOAD,
        note="T_VM / T_PM - 1 paired on the seed; reference 0 (the 24% input alone already gives the direction). "
             "The size rests on tascell-fib's assumed module sensitivity s_fe = 0.20 (docs/model.md §13)"))
    gap8 = seed_ratio(df, VM, PM_NAME, 8)
    above = {k: seedwise(lambda a, b: a - b, gap8, seed_ratio(df, VM, PM_NAME, k)) for k in ks if k != 8}
    out.append(Claim(
        id="gap-largest-8t", figure="Fig 1", claim="the VM-PM difference is largest at 8 threads",
        paper="maximized in 8 threads", source=SOURCE, type=DIRECTION,
        ours="gap at 8 minus gap at k (points of T_VM/T_PM - 1): " + items_text(above, 1),
        verdict=worst(judge_direction(e, +1) for e in above.values()), n=min_n(above.values()), cause=MECHANISM,
        note="per seed, (T_VM/T_PM - 1) at 8 threads minus that at each other thread count; each above 0 beyond noise. "
             "The bare-metal PM keeps one busy thread per module (Linux 3.13's balancer finds no node above its capacity of 4 "
             "cores with every worker busy), so its 16-thread gap keeps the VM's loss"))
    if {4, 8, 12, 16} <= set(ks):
        e48_vm, e48_pm = seed_efficiency(df, VM, 4, 8), seed_efficiency(df, PM_NAME, 4, 8)
        e812, e1216 = seed_efficiency(df, VM, 8, 12), seed_efficiency(df, VM, 12, 16)
        knee = seedwise(lambda v, p: v - p, e48_vm, e48_pm)
        out.append(Claim(
            id="vm-steep-4-8", figure="Fig 1",
            claim="from 4 threads the VM's improvement slows steeply, the PM's gradually: efficiency 4->8 lower in the VM",
            paper="steeply slowed down in a VM, gradually in a PM", source=SOURCE, type=DIRECTION, estimate=knee,
            ours=f"VM minus PM efficiency 4->8: {knee.text(3)} (VM {seedwise(float, e48_vm).text(3)}, "
                 f"PM {seedwise(float, e48_pm).text(3)})",
            verdict=judge_direction(knee, -1), cause=MECHANISM,
            note="efficiency of a step = (T(a)/T(b)) / (b/a), per seed; VM minus PM paired on the seed, below 0 beyond noise"))
        again = seedwise(lambda a, b: a - b, e812, e48_vm)
        out.append(Claim(
            id="vm-recovers-8-12", figure="Fig 1",
            claim="the VM improves largely again above 8 threads: efficiency 8->12 above 4->8",
            paper="improved largely again after 8 threads", source=SOURCE, type=DIRECTION, estimate=again,
            ours=f"efficiency 8->12 minus 4->8: {again.text(3)}", verdict=judge_direction(again, +1), cause=MECHANISM,
            note="the VM's per-seed efficiencies of the two steps, paired on the seed"))
        slows = seedwise(lambda a, b: a - b, e1216, e812)
        out.append(Claim(
            id="vm-slows-12-16", figure="Fig 1",
            claim="the VM's improvement slows again above 12 threads: efficiency 12->16 below 8->12",
            paper="slowed down again in more than 12 threads", source=SOURCE, type=DIRECTION, estimate=slows,
            ours=f"efficiency 12->16 minus 8->12: {slows.text(3)}", verdict=judge_direction(slows, -1), cause=MECHANISM,
            note="the VM's per-seed efficiencies of the two steps, paired on the seed"))
    return out


main = figure_main(FIG, measure, write_outputs, claims)


if __name__ == "__main__":
    main(parse_args(__doc__))
