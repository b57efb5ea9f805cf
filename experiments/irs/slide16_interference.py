"""Slide 16: IRS's improvement with 1 to 4 interfering VMs (scalability and sensitivity).

Seed 003 slide 16 ("Scalability and Sensitivity Analysis", the trend of IRS's improvement with a
varying degree of interference, # of interfering VMs): the improvement decreases as interference
increases (slide 12: "improvement decreased as the level of interference [rose]"), yet "IRS can be
useful in a highly consolidated scenario".

Ours: the PARSEC programs of slide 12 (blocking) with 1, 2, 3 and 4 CPU hogs, hog k pinned on
pCPU k, IRS vs vanilla on the same seed. The 1, 2 and 4 runs are slide 12's (the shared pool).

    python experiments/irs/slide16_interference.py [--quick]
"""

from __future__ import annotations

import pandas as pd

from common import (
    DIRECTION, IRS, NOT_REPRODUCED, REPRODUCED, Claim, Settings, aggregate, compare, figure_main, line_plot,
    mean_improvement, out_dir, parse_args, parsec_set, pct, write_csv,
)
from slide12_parsec import interference_trend

FIG = "slide16"
LEVELS = (1, 2, 3, 4)
QUICK_LEVELS = (1, 4)


def measure(settings: Settings, seeds=None) -> pd.DataFrame:
    return compare(parsec_set(settings), [IRS], QUICK_LEVELS if settings.quick else LEVELS, settings, seeds)


def write_outputs(df: pd.DataFrame) -> pd.DataFrame:
    irs = df[df["scheme"] == IRS]
    write_csv(irs[["bench", "noise", "seed", "perf", "improvement", "preempt_notices", "irs_migrations"]], FIG, "runs")
    # The slide's line: the mean over programs per seed, then over seeds.
    per_seed = irs.groupby(["noise", "seed"], as_index=False)["improvement"].mean()
    agg = aggregate(per_seed, ["noise"], ["improvement"])
    write_csv(agg, FIG, "slide16_trend")
    write_csv(aggregate(irs, ["bench", "noise"], ["improvement"]), FIG, "slide16_by_program")
    line_plot(agg, "noise", None, "improvement", "# of interfering VMs", "IRS improvement over vanilla Xen",
              "Slide 16: IRS vs interference (PARSEC, blocking)", out_dir(FIG) / "slide16.png")
    return df


def claims(df: pd.DataFrame) -> list[Claim]:
    heavy = max(df["noise"])
    imp = mean_improvement(df, IRS, noise=heavy)
    return [
        interference_trend(df, "Slide 16", "1-4 interfering VMs"),
        Claim("Slide 16", "IRS is still useful in a highly consolidated scenario", "gain at 4 interfering VMs",
              f"{pct(imp)} at {heavy} interfering VMs", REPRODUCED if imp > 0.01 else (DIRECTION if imp > 0 else NOT_REPRODUCED),
              "R: above +1%"),
    ]


main = figure_main(FIG, measure, write_outputs, claims)


if __name__ == "__main__":
    main(parse_args(__doc__))
