"""Figure 11 and Table 2: UVF on a host with pause-loop exiting.

Seed 000 section 4.3: the mix of section 4.1.2 (a parallel application in an 8-vCPU VM beside
four UP VMs running x264) on a Xeon E5607 (2.27 GHz) with PLE on (PLE_Gap 128, PLE_Window 4096),
for streamcluster, facesim (futex-intensive), ferret and vips (TLB-intensive). UVF = LC balance
with Resched-DP and TLB-Co; urgent state is cancelled on a pause-loop exit. Claims: UVF is 8-13%
faster than Baseline; it cuts the CPU spent spinning and in TLB shootdown; it cuts pause-loop
exits by 44.5% (streamcluster), 97.7% (facesim), 74.0% (ferret) and 37.9% (vips).

Ours: ``[host.ple]`` on with a 4096-cycle window at 2.27 GHz, no window growth (KVM 3.2).
Execution time = simulated time per unit of progress over a fixed duration (see common.py),
normalized to Baseline on the same seed; spin/TLB CPU and pause-loop exits of the parallel VM
per unit of its progress (the paper counts them over a fixed amount of work).

    python experiments/asplos13/fig11_ple.py [--quick]
"""

from __future__ import annotations

import pandas as pd

from common import (
    BASELINE, DIRECTION, LC_DP_TLB, NOT_REPRODUCED, PLE_ON, REPRODUCED, Case, Claim, Settings, aggregate, bar_plot,
    figure_main, mix_with_up_vms, out_dir, parse_args, per_seed_ratio, run_cases, write_csv,
)

FIG = "fig11"
APPS = ("streamcluster", "facesim", "ferret", "vips")
CONFIGS = (BASELINE, LC_DP_TLB)
PAPER_IMPROVEMENT = (0.08, 0.13)
#: Table 2: reduction in pause-loop exits by UVF vs Baseline.
TABLE2 = {"streamcluster": 0.445, "facesim": 0.977, "ferret": 0.740, "vips": 0.379}


def measure(settings: Settings) -> pd.DataFrame:
    cases = [Case({"app": app, "config": c.name}, mix_with_up_vms(c, app, ple=PLE_ON)) for app in APPS for c in CONFIGS]
    df = run_cases(FIG, cases, settings.seed_list(), settings.duration("20s", "2s"), settings)
    par = df[df["vm"] == "par"].copy()
    per_unit = par["progress"].where(par["progress"] > 0)
    par["sync_ms_per_unit"] = (par["spin_time_ms"] + par["tlb_wait_ms"]) / per_unit
    par["ple_exits_per_unit"] = par["ple_exit_count"] / per_unit
    par = per_seed_ratio(par, "ms_per_unit", ["app", "seed"], "config", BASELINE.name, "norm_time")
    par = per_seed_ratio(par, "ple_exits_per_unit", ["app", "seed"], "config", BASELINE.name, "ple_ratio")
    par = per_seed_ratio(par, "sync_ms_per_unit", ["app", "seed"], "config", BASELINE.name, "sync_ratio")
    par["improvement"] = 1 - par["norm_time"]
    par["ple_cut"] = 1 - par["ple_ratio"]
    return par


def claims(agg: pd.DataFrame) -> list[Claim]:
    u = agg[agg["config"] == LC_DP_TLB.name].set_index("app")
    out = []
    imp = u["improvement_mean"]
    lo, hi = PAPER_IMPROVEMENT
    out.append(Claim("Fig 11", "UVF faster than Baseline with PLE on", f"{lo:.0%} to {hi:.0%}",
                     ", ".join(f"{a} {v:+.1%}" for a, v in imp.items()),
                     REPRODUCED if all(lo - 0.05 <= v <= hi + 0.05 for v in imp)
                     else (DIRECTION if all(v > 0 for v in imp) else NOT_REPRODUCED),
                     "in range: within 5 points of 8-13%"))
    sync = u["sync_ratio_mean"]
    out.append(Claim("Fig 11", "UVF cuts CPU spent spinning and in TLB shootdown", "lower",
                     ", ".join(f"{a} x{v:.2f}" for a, v in sync.items()),
                     REPRODUCED if all(v < 1 for v in sync) else (DIRECTION if any(v < 1 for v in sync) else NOT_REPRODUCED),
                     "ratio to Baseline, per unit of work"))
    for app, paper in TABLE2.items():
        v, sd = u.loc[app, "ple_cut_mean"], u.loc[app, "ple_cut_std"]
        out.append(Claim("Table 2", f"{app}: reduction in pause-loop exits", f"{paper:.1%}", f"{v:.1%} ± {sd:.1%}",
                         REPRODUCED if v > 0 and abs(v - paper) <= 0.15 else (DIRECTION if v > 0 else NOT_REPRODUCED),
                         "per unit of work; in range: within 15 points"))
    return out


def write_outputs(par: pd.DataFrame) -> pd.DataFrame:
    """CSV and PNG outputs; returns the aggregate the claims read."""
    agg = aggregate(par, ["app", "config"], ["norm_time", "improvement", "sync_ms_per_unit", "sync_ratio",
                                             "ple_exits_per_unit", "ple_cut", "ple_exit_count"])
    write_csv(par, FIG, "runs")
    write_csv(agg, FIG, "fig11_ple")
    bar_plot(agg, "app", "config", "norm_time", "execution time / Baseline",
             "Figure 11: parallel VM + four UP VMs, PLE on", out_dir(FIG) / "fig11_time.png", hline=1.0)
    bar_plot(agg, "app", "config", "ple_exits_per_unit", "pause-loop exits per unit of work",
             "Table 2: pause-loop exits", out_dir(FIG) / "table2_ple_exits.png", log=True)
    return agg


main = figure_main(FIG, measure, write_outputs, claims)


if __name__ == "__main__":
    main(parse_args(__doc__))
