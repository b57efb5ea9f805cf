"""Figure 3: tascell-fib with the guest's thread scheduler or Xen's vCPU scheduler disabled.

Seed 001 section III-C, in the 0-16 VM of Figure 1: "thread scheduler disabled" = each thread
pinned to its own vCPU (tascell's CPU affinity); "vCPU scheduler disabled" = "assigning pCPUs to
vCPUs one by one" (vCPU i on pCPU 16 + i). Claims: without the thread scheduler the time is 6-9%
shorter with the same scalability; without the vCPU scheduler the improvement "slowed down more
gradually like a PM".

**The thread scheduler cannot be disabled in vcpusim**: the guest has no thread CPU affinity
(sched_setaffinity). A VM's guest starts thread i on vCPU i (sim/build.rs) and wakes a thread on
its previous vCPU when that vCPU is idle, else on another idle one (guest/scheduler.rs
``wake_target``), and an idle vCPU pulls a queued thread (``pick_next``): threads can move. So
that curve is not drawn and its claim is "not modelled".

    python experiments/xen_cmt/fig03_schedulers.py [--quick]
"""

from __future__ import annotations

import pandas as pd

from common import (
    DIRECTION, NOT_REPRODUCED, PM, REPRODUCED, VCPU_PINNED, VM_0_16, Claim, Settings, aggregate,
    efficiency, figure_main, out_dir, parse_args, pct, run_points, series, thread_counts, time_plot,
    write_csv,
)

FIG = "fig03"
BOTH = "both enabled (0-16)"
VCPU_OFF = "vCPU scheduler disabled"


def measure(settings: Settings, threads=None, seeds=None) -> pd.DataFrame:
    df = run_points(["fib"], [VM_0_16, VCPU_PINNED, PM], threads or thread_counts(settings), settings, seeds)
    names = {VM_0_16.name: BOTH, VCPU_PINNED.name: VCPU_OFF, PM.name: PM.name}
    df["config"] = df["placement"].map(names)
    return df


def write_outputs(df: pd.DataFrame) -> pd.DataFrame:
    agg = aggregate(df, ["config", "threads"], ["runtime_s", "competing_modules"])
    write_csv(df[["config", "threads", "seed", "runtime_s", "competing_modules"]], FIG, "runs")
    write_csv(agg, FIG, "fig03_runtime")
    time_plot(agg[agg["config"] != PM.name], "config", out_dir(FIG) / "fig03.png",
              "Figure 3: tascell-fib with one scheduler disabled (0-16)")
    return agg


def claims(agg: pd.DataFrame) -> list[Claim]:
    t = {c: series(agg.rename(columns={"config": "placement"}), "runtime_s", placement=c) for c in dict.fromkeys(agg["config"])}
    both, vcpu = t[BOTH], t[VCPU_OFF]
    out = [Claim("Fig 3", "thread scheduler disabled: 6-9% shorter, same scalability", "-6 to -9%",
                 "not modelled", NOT_REPRODUCED,
                 "vcpusim's guest has no thread CPU affinity; adding it is a Rust change outside this task")]
    eff = {c: (efficiency(t[c], 4, 8), efficiency(t[c], 8, 12)) for c in (BOTH, VCPU_OFF, PM.name)}
    gap = {c: eff[c][1] - eff[c][0] for c in eff}
    r8 = vcpu[8] / both[8] - 1
    desc = "; ".join(f"{c}: 4->8 {eff[c][0]:.2f}, 8->12 {eff[c][1]:.2f}" for c in eff)
    smoother = abs(gap[VCPU_OFF]) < abs(gap[BOTH])
    out.append(Claim("Fig 3", "vCPU scheduler disabled: improvement slows more gradually, like a PM",
                     "gradual, like PM", f"{desc}; time at 8 threads {pct(r8)} vs both enabled",
                     REPRODUCED if smoother and r8 < 0 else (DIRECTION if smoother else NOT_REPRODUCED),
                     "gradual: |eff(8->12) - eff(4->8)| smaller than with both schedulers; R: also faster at 8"))
    return out


main = figure_main(FIG, measure, write_outputs, claims)


if __name__ == "__main__":
    main(parse_args(__doc__))
