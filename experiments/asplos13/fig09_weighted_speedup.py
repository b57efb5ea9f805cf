"""Figure 9: weighted speedup of two 8-vCPU VMs, a PARSEC application beside freqmine (a) and
beside dedup (b), under the five schemes.

Seed 000 section 4.1.3: each application in an 8-vCPU VM beside an 8-vCPU VM running freqmine
(CPU-saturated, little communication, rarely preempts) or dedup (varying load, heavy
communication and TLB shootdowns). Weighted speedup = sum over both VMs of T_solo / T_corun.
Claims: (a) beside freqmine, communication-intensive applications degrade under Baseline, Balance
mostly resolves it, LC Balance does about the same, UVF improves further for the TLB-intensive
dedup, ferret and vips, and Resched-DP alone has little effect. (b) beside dedup, dedup's own
performance drops under Baseline, LC Balance beats Balance, UVF is best overall, and Resched-DP
alone lowers dedup (deferring its TLB shootdowns) until TLB-Co is added.

Ours: T = simulated time per unit of progress over a fixed duration (see common.py); T_solo
from the application alone on the host (same seed). UVF features are set on both VMs.

    python experiments/asplos13/fig09_weighted_speedup.py [--quick]
"""

from __future__ import annotations

import pandas as pd

from common import (
    BALANCE, BASELINE, DIRECTION, FIVE_CONFIGS, LC_BALANCE, LC_DP, LC_DP_TLB, NOT_REPRODUCED, PARSEC_APPS, REPRODUCED,
    Case, Claim, Settings, aggregate, bar_plot, figure_main, out_dir, parallel_vm, parse_args, run_cases, solo,
    write_csv,
)

FIG = "fig09"
CORUNNERS = ("freqmine", "dedup")
QUIET_APPS = ("blackscholes", "freqmine", "raytrace")
TLB_APPS = ("dedup", "ferret", "vips")
#: "About the same" / "little effect": weighted speedups within this fraction of each other.
SIMILAR = 0.05


def scenario(config, app: str, corunner: str) -> dict:
    uvf = config.vm_uvf()
    return {"host": config.host(), "vm": [parallel_vm("main", app, uvf=uvf), parallel_vm("corunner", corunner, uvf=uvf)]}


def measure(settings: Settings) -> pd.DataFrame:
    cases = [Case({"corunner": co, "app": app, "config": c.name}, scenario(c, app, co))
             for co in CORUNNERS for app in PARSEC_APPS for c in FIVE_CONFIGS]
    cases += [Case({"corunner": "-", "app": app, "config": "solo"}, solo(app)) for app in PARSEC_APPS]
    df = run_cases(FIG, cases, settings.seed_list(), settings.duration("20s", "2s"), settings)
    solo_rows = df[df["config"] == "solo"]
    solo_time = {(r.app, r.seed): r.ms_per_unit for r in solo_rows.itertuples()}
    df = df[df["config"] != "solo"].copy()
    df["workload"] = [a if vm == "main" else co for a, co, vm in zip(df["app"], df["corunner"], df["vm"])]
    df["speedup"] = [solo_time[(w, s)] / m for w, s, m in zip(df["workload"], df["seed"], df["ms_per_unit"])]
    wide = df.pivot_table(index=["corunner", "app", "config", "seed"], columns="vm", values="speedup")
    wide.columns = [f"{vm}_speedup" for vm in wide.columns]  # main_speedup, corunner_speedup
    wide = wide.reset_index()
    wide["weighted_speedup"] = wide["main_speedup"] + wide["corunner_speedup"]
    return wide


def claims(agg: pd.DataFrame) -> list[Claim]:
    ws = agg.set_index(["corunner", "app", "config"])
    comm = [a for a in PARSEC_APPS if a not in QUIET_APPS]
    out = []

    def w(co, app, cfg, col="weighted_speedup"):
        return ws.loc[(co, app, cfg), f"{col}_mean"]

    # (a) beside freqmine
    co = "freqmine"
    bal_up = [a for a in comm if w(co, a, BALANCE.name) > w(co, a, BASELINE.name)]
    out.append(Claim("Fig 9a", "beside freqmine, Balance resolves the Baseline degradation of communicating apps",
                     "Balance > Baseline for most", f"Balance > Baseline for {len(bal_up)} of {len(comm)}",
                     REPRODUCED if len(bal_up) >= 0.75 * len(comm) else (DIRECTION if bal_up else NOT_REPRODUCED)))
    similar = [a for a in PARSEC_APPS if abs(w(co, a, LC_BALANCE.name) / w(co, a, BALANCE.name) - 1) <= SIMILAR]
    out.append(Claim("Fig 9a", "LC Balance about the same as Balance beside freqmine", "similar",
                     f"within {SIMILAR:.0%} for {len(similar)} of {len(PARSEC_APPS)}",
                     REPRODUCED if len(similar) >= 0.75 * len(PARSEC_APPS) else (DIRECTION if similar else NOT_REPRODUCED)))
    tlb = {a: w(co, a, LC_DP_TLB.name) / w(co, a, LC_BALANCE.name) - 1 for a in TLB_APPS}
    out.append(Claim("Fig 9a", "UVF improves further for dedup, ferret, vips (vs LC Balance)", "improves",
                     ", ".join(f"{a} {v:+.1%}" for a, v in tlb.items()),
                     REPRODUCED if all(v > 0 for v in tlb.values()) else (DIRECTION if any(v > 0 for v in tlb.values()) else NOT_REPRODUCED)))
    dp = [a for a in PARSEC_APPS if abs(w(co, a, LC_DP.name) / w(co, a, LC_BALANCE.name) - 1) <= SIMILAR]
    out.append(Claim("Fig 9a", "Resched-DP alone has little effect beside freqmine", "little effect",
                     f"within {SIMILAR:.0%} of LC Balance for {len(dp)} of {len(PARSEC_APPS)}",
                     REPRODUCED if len(dp) >= 0.75 * len(PARSEC_APPS) else (DIRECTION if dp else NOT_REPRODUCED)))
    # (b) beside dedup
    co = "dedup"
    mean_dedup = {c.name: ws.xs(co, level="corunner").xs(c.name, level="config")["corunner_speedup_mean"].mean()
                  for c in FIVE_CONFIGS}
    out.append(Claim("Fig 9b", "beside dedup, dedup's performance drops under Baseline (vs Balance)", "drops",
                     f"dedup speedup, mean over apps: Baseline {mean_dedup[BASELINE.name]:.2f}, Balance {mean_dedup[BALANCE.name]:.2f}",
                     REPRODUCED if mean_dedup[BASELINE.name] < mean_dedup[BALANCE.name] else NOT_REPRODUCED))
    lc_win = [a for a in PARSEC_APPS if w(co, a, LC_BALANCE.name) > w(co, a, BALANCE.name)]
    out.append(Claim("Fig 9b", "LC Balance beats Balance beside dedup", "higher weighted speedup",
                     f"for {len(lc_win)} of {len(PARSEC_APPS)}",
                     REPRODUCED if len(lc_win) >= 0.75 * len(PARSEC_APPS) else (DIRECTION if len(lc_win) >= len(PARSEC_APPS) / 2 else NOT_REPRODUCED)))
    best = [a for a in PARSEC_APPS
            if w(co, a, LC_DP_TLB.name) >= max(w(co, a, c.name) for c in FIVE_CONFIGS) * (1 - 0.01)]
    out.append(Claim("Fig 9b", "UVF (LC+Resched-DP+TLB-Co) best overall beside dedup", "best",
                     f"best (within 1%) for {len(best)} of {len(PARSEC_APPS)}",
                     REPRODUCED if len(best) >= 0.75 * len(PARSEC_APPS) else (DIRECTION if len(best) >= len(PARSEC_APPS) / 2 else NOT_REPRODUCED)))
    drop, fixed = mean_dedup[LC_DP.name] < mean_dedup[LC_BALANCE.name], mean_dedup[LC_DP_TLB.name] > mean_dedup[LC_DP.name]
    out.append(Claim("Fig 9b", "Resched-DP alone lowers dedup; TLB-Co restores it", "drop, then recovery",
                     f"dedup speedup: LC {mean_dedup[LC_BALANCE.name]:.3f}, +DP {mean_dedup[LC_DP.name]:.3f}, "
                     f"+DP+TLB-Co {mean_dedup[LC_DP_TLB.name]:.3f}",
                     REPRODUCED if drop and fixed else (DIRECTION if fixed else NOT_REPRODUCED)))
    return out


def write_outputs(df: pd.DataFrame) -> pd.DataFrame:
    """CSV and PNG outputs; returns the aggregate the claims read."""
    agg = aggregate(df, ["corunner", "app", "config"], ["weighted_speedup", "main_speedup", "corunner_speedup"])
    write_csv(df, FIG, "runs")
    write_csv(agg, FIG, "fig09_weighted_speedup")
    for co, panel in zip(CORUNNERS, "ab"):
        bar_plot(agg[agg["corunner"] == co], "app", "config", "weighted_speedup", "weighted speedup",
                 f"Figure 9{panel}: corun with {co}", out_dir(FIG) / f"fig09{panel}_{co}.png", hline=1.0)
    return agg


main = figure_main(FIG, measure, write_outputs, claims)


if __name__ == "__main__":
    main(parse_args(__doc__))
