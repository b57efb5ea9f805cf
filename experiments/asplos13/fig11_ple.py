"""Figure 11 and Table 2: UVF on a host with pause-loop exiting.

Seed 000 section 4.3: the mix of section 4.1.2 (a parallel application in an 8-vCPU VM beside
four UP VMs running x264) on a Xeon E5607 (2.27 GHz) with PLE on (PLE_Gap 128, PLE_Window 4096),
for streamcluster, facesim (futex-intensive), ferret and vips (TLB-intensive). UVF = LC balance
with Resched-DP and TLB-Co; urgent state is cancelled on a pause-loop exit. Claims: UVF is 8-13%
faster than Baseline; it cuts the CPU spent spinning and in TLB shootdown; it cuts pause-loop
exits by 44.5% (streamcluster), 97.7% (facesim), 74.0% (ferret) and 37.9% (vips) (Table 2; the
text's "37.9-97.7%" is the same four values and is not a claim of its own).

Ours: ``[host.ple]`` on with a 4096-cycle window at 2.27 GHz, no window growth (KVM 3.2).
The judged runs draw the host's switch and exit charges around their values by the default
``[host.costs] variation`` (2.5%, measured: docs/model.md section 4). ``fig11_variation.csv`` repeats
every case with exact charges and with wider spreads (VARIATIONS below): a sensitivity, not judged.
Execution time T = simulated time per unit of progress over a fixed duration (see common.py);
spin + TLB-wait CPU time and pause-loop exits of the parallel VM per unit of its progress (the
paper counts them over a fixed amount of work). Every UVF-vs-Baseline comparison is paired on the
seed (``protocol.change``: the ratio of the means minus one, its interval from the per-seed
differences); the speed-up is 1 - T_uvf / T_Baseline and is judged per application against the
paper's range, each Table 2 cut as a point value of its own.

    python experiments/asplos13/fig11_ple.py [--quick]
"""

from __future__ import annotations

import pandas as pd

from common import (
    BASELINE, DIRECTION, LC_DP_TLB, MECHANISM, PLE_ON, POINT, RANGE, Case, Claim, Settings, aggregate,
    bar_plot, change, figure_main, judge_direction, judge_point, judge_range, mix_with_up_vms, out_dir, parse_args,
    per_seed_ratio, run_cases, seed_values, worst, write_csv,
)

FIG = "fig11"
APPS = ("streamcluster", "facesim", "ferret", "vips")
CONFIGS = (BASELINE, LC_DP_TLB)
#: §4.3: "the performance is improved by 8-13% in our scheme".
PAPER_IMPROVEMENT = (0.08, 0.13)
#: Table 2: reduction in pause-loop exits by UVF vs Baseline.
TABLE2 = {"streamcluster": 0.445, "facesim": 0.977, "ferret": 0.740, "vips": 0.379}


#: A sensitivity, not judged: the host's switch and exit charges exact (0) and drawn around their
#: values more widely than the measured default (``[host.costs] variation``). With exact charges
#: the spinners' pause-loop exits are strictly periodic and KVM 3.2's directed yields can boost two
#: stacked siblings in turn inside each other's switch-in (EXPERIMENTS.md E4).
VARIATIONS = (0.0, 0.05, 0.5)


def with_variation(scenario: dict, variation: float) -> dict:
    scenario["host"].setdefault("costs", {})["variation"] = variation
    return scenario


def per_unit(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """The parallel VM's rows with the per-unit measures and their ratios to Baseline (``keys``:
    the point, the seed included)."""
    par = df[df["vm"] == "par"].copy()
    per = par["progress"].where(par["progress"] > 0)
    par["sync_ms_per_unit"] = (par["spin_time_ms"] + par["tlb_wait_ms"]) / per
    par["ple_exits_per_unit"] = par["ple_exit_count"] / per
    par = per_seed_ratio(par, "ms_per_unit", keys, "config", BASELINE.name, "norm_time")
    par = per_seed_ratio(par, "ple_exits_per_unit", keys, "config", BASELINE.name, "ple_ratio")
    par = per_seed_ratio(par, "sync_ms_per_unit", keys, "config", BASELINE.name, "sync_ratio")
    par["improvement"] = 1 - par["norm_time"]
    par["ple_cut"] = 1 - par["ple_ratio"]
    return par


def measure(settings: Settings) -> tuple[pd.DataFrame, pd.DataFrame]:
    seeds, duration = settings.seed_list(), settings.duration("20s", "2s")
    cases = [Case({"app": app, "config": c.name}, mix_with_up_vms(c, app, ple=PLE_ON)) for app in APPS for c in CONFIGS]
    par = per_unit(run_cases(FIG, cases, seeds, duration, settings), ["app", "seed"])
    varied = [Case({"app": app, "config": c.name, "variation": j}, with_variation(mix_with_up_vms(c, app, ple=PLE_ON), j))
              for j in VARIATIONS for app in APPS for c in CONFIGS]
    sens = per_unit(run_cases(FIG, varied, seeds, duration, settings), ["app", "variation", "seed"])
    return par, sens


def claims(measured: tuple[pd.DataFrame, pd.DataFrame]) -> list[Claim]:
    par, _ = measured

    def uvf_vs_base(app, value):
        """``value`` under UVF over Baseline minus one, paired on the seed."""
        return change(seed_values(par, value, app=app, config=LC_DP_TLB.name),
                      seed_values(par, value, app=app, config=BASELINE.name), paired=True)

    out = []
    lo, hi = PAPER_IMPROVEMENT
    imp = {a: -uvf_vs_base(a, "ms_per_unit") for a in APPS}
    out.append(Claim(
        id="uvf-faster-8-13", figure="Fig 11", claim="with PLE on, UVF is 8-13% faster than Baseline, each app",
        paper="improved by 8-13%", source="§4.3, Fig 11", type=RANGE,
        ours=", ".join(f"{a} {e.text(1, pct=True)}" for a, e in imp.items()),
        verdict=worst(judge_range(e, lo, hi, ref=0.0) for e in imp.values()), n=min(e.n for e in imp.values()),
        cause=MECHANISM, note="1 - T_uvf/T_Baseline per app, paired on the seed; each app's mean in the range"))
    sync = {a: uvf_vs_base(a, "sync_ms_per_unit") for a in APPS}
    out.append(Claim(
        id="uvf-cuts-spin-tlb", figure="Fig 11",
        claim="with PLE on, UVF cuts the CPU spent spinning and in TLB shootdown, each app",
        paper="significantly reduces the CPU cycles for lock spinning and TLB shutdown", source="§4.3, Fig 11",
        type=DIRECTION, ours=", ".join(f"{a} {e.text(1, pct=True)}" for a, e in sync.items()),
        verdict=worst(judge_direction(e, -1) for e in sync.values()), n=min(e.n for e in sync.values()),
        cause=MECHANISM,
        note="spin + TLB-wait CPU time per unit of work (the figure's stacked cycles), UVF over Baseline - 1, "
             "paired on the seed"))
    for app, paper in TABLE2.items():
        cut = -uvf_vs_base(app, "ple_exits_per_unit")
        out.append(Claim(
            id=f"ple-exit-cut-{app}", figure="Table 2", claim=f"{app}: UVF cuts pause-loop exits by {paper:.1%}",
            paper=f"{paper * 100:.1f}%", source="§4.3, Table 2", type=POINT, estimate=cut,
            ours=f"{cut.text(1, pct=True)} (reduction)", verdict=judge_point(cut, paper, ref=0.0), cause=MECHANISM,
            note="1 - exits_uvf/exits_Baseline, exits per unit of work, paired on the seed"))
    return out


def write_outputs(measured: tuple[pd.DataFrame, pd.DataFrame]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """CSV and PNG outputs; returns the runs (which the claims read) and the aggregate."""
    par, sens = measured
    columns = ["norm_time", "improvement", "sync_ms_per_unit", "sync_ratio", "ple_exits_per_unit", "ple_cut",
               "ple_exit_count"]
    agg = aggregate(par, ["app", "config"], columns)
    write_csv(par, FIG, "runs")
    write_csv(agg, FIG, "fig11_ple")
    write_csv(aggregate(sens, ["variation", "app", "config"], columns + ["progress"]), FIG, "fig11_variation")
    bar_plot(agg, "app", "config", "norm_time", "execution time / Baseline",
             "Figure 11: parallel VM + four UP VMs, PLE on", out_dir(FIG) / "fig11_time.png", hline=1.0)
    bar_plot(agg, "app", "config", "ple_exits_per_unit", "pause-loop exits per unit of work",
             "Table 2: pause-loop exits", out_dir(FIG) / "table2_ple_exits.png", log=True)
    return par, agg


main = figure_main(FIG, measure, write_outputs, claims)


if __name__ == "__main__":
    main(parse_args(__doc__))
