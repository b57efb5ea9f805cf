"""Figure 12: DelayedResched (the guest sends futex_wake's reschedule IPI after the unlock) vs
Resched-DP.

Seed 000 section 5: streamcluster and facesim (futex-intensive) in the mix of section 4.1.2 (an
8-vCPU VM beside four UP VMs running x264, no PLE). The guest kernel is modified so that
futex_wake and futex_requeue send the reschedule IPI after releasing the futex-queue spinlock.
Claims: DelayedResched improves both Baseline and LC Balance, and the gain is comparable to the
scheduling-based Resched-DP.

Ours: ``[vm.guest] futex_wake_ipi = "after-unlock"`` on the parallel VM for DelayedResched
(``"under-lock"``, Linux 3.2, otherwise). Execution time = simulated time per unit of progress
over a fixed duration (see common.py), normalized to Baseline on the same seed. "Comparable":
LC + DelayedResched within 10% of LC + Resched-DP.

    python experiments/asplos13/fig12_delayed_resched.py [--quick]
"""

from __future__ import annotations

import pandas as pd

from common import (
    BASELINE, DIRECTION, LC_BALANCE, LC_DP, NOT_REPRODUCED, REPRODUCED, Case, Claim, Settings, aggregate, bar_plot,
    beyond_noise, figure_main, mix_with_up_vms, out_dir, parse_args, per_seed_ratio, run_cases, write_csv,
)

FIG = "fig12"
APPS = ("streamcluster", "facesim")
DELAYED = {"futex_wake_ipi": "after-unlock"}
#: (label, scheme, guest override of the parallel VM)
VARIANTS = (
    ("Baseline", BASELINE, None),
    ("Baseline+DelayedResched", BASELINE, DELAYED),
    ("LC Balance", LC_BALANCE, None),
    ("LC+DelayedResched", LC_BALANCE, DELAYED),
    ("LC+Resched-DP", LC_DP, None),
)
COMPARABLE = 0.10


def measure(settings: Settings) -> pd.DataFrame:
    cases = [Case({"app": app, "variant": label}, mix_with_up_vms(cfg, app, guest=guest))
             for app in APPS for label, cfg, guest in VARIANTS]
    df = run_cases(FIG, cases, settings.seed_list(), settings.duration("20s", "2s"), settings)
    par = df[df["vm"] == "par"].copy()
    return per_seed_ratio(par, "ms_per_unit", ["app", "seed"], "variant", "Baseline", "norm_time")


def claims(agg: pd.DataFrame) -> list[Claim]:
    a = agg.set_index(["app", "variant"])
    out = []
    for base, delayed in (("Baseline", "Baseline+DelayedResched"), ("LC Balance", "LC+DelayedResched")):
        res = {}
        for app in APPS:
            b, d = a.loc[(app, base)], a.loc[(app, delayed)]
            res[app] = (d["norm_time_mean"] / b["norm_time_mean"] - 1,
                        d["norm_time_mean"] < b["norm_time_mean"] and beyond_noise(d, b, "norm_time"))
        out.append(Claim("Fig 12", f"DelayedResched improves {base}", "faster",
                         ", ".join(f"{app} {v:+.1%} time{'' if real else ' (noise)'}" for app, (v, real) in res.items()),
                         REPRODUCED if all(r for _, r in res.values()) else (DIRECTION if any(r for _, r in res.values()) else NOT_REPRODUCED)))
    comp = {app: a.loc[(app, "LC+DelayedResched"), "norm_time_mean"] / a.loc[(app, "LC+Resched-DP"), "norm_time_mean"] - 1
            for app in APPS}
    out.append(Claim("Fig 12", "DelayedResched comparable to Resched-DP (both with LC Balance)", "comparable",
                     ", ".join(f"{app}: DelayedResched {v:+.1%} vs Resched-DP" for app, v in comp.items()),
                     REPRODUCED if all(abs(v) <= COMPARABLE for v in comp.values()) else NOT_REPRODUCED,
                     f"comparable: within {COMPARABLE:.0%}"))
    return out


def write_outputs(par: pd.DataFrame) -> pd.DataFrame:
    """CSV and PNG outputs; returns the aggregate the claims read."""
    agg = aggregate(par, ["app", "variant"], ["norm_time", "ms_per_unit", "lhp_futex_count", "spin_time_ms"])
    write_csv(par, FIG, "runs")
    write_csv(agg, FIG, "fig12_delayed_resched")
    bar_plot(agg, "app", "variant", "norm_time", "execution time / Baseline",
             "Figure 12: DelayedResched vs Resched-DP", out_dir(FIG) / "fig12_delayed_resched.png", hline=1.0, log=True)
    return agg


main = figure_main(FIG, measure, write_outputs, claims)


if __name__ == "__main__":
    main(parse_args(__doc__))
