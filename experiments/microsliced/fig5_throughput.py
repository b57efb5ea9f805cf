"""Figure 5: exim and psearchy throughput beside swaptions with 0 (baseline) to 6 static
micro-sliced cores, and swaptions' execution time.

Seed 002 section 6.2: exim's throughput 3.9 times the baseline's with one micro-sliced core at
the cost of 10% of swaptions' performance (the abstract: "up to 4.56x"); psearchy 1.4 times with
one core. Throughput = messages delivered / files indexed per simulated second.

    python experiments/microsliced/fig5_throughput.py [--quick]
"""

from __future__ import annotations

import pandas as pd

from common import (
    DIRECTION, NOT_REPRODUCED, REPRODUCED, Claim, Settings, figure_main, judge, parse_args, pct,
    static_measure, static_outputs,
)

FIG = "fig5"
BENCHES = ("mosbench.exim", "mosbench.psearchy")
VALUES = ["app_speedup", "co_speedup", "co_slowdown", "combined", "rate"]


def measure(settings: Settings) -> pd.DataFrame:
    return static_measure(BENCHES, settings)


def write_outputs(df: pd.DataFrame) -> pd.DataFrame:
    return static_outputs(df, FIG, "fig5_throughput", VALUES, ["exim", "psearchy"],
                          "Figure 5: throughput with static micro-sliced cores beside swaptions")


def at(agg: pd.DataFrame, bench: str, cores: int, value: str) -> float:
    row = agg[(agg["bench"] == bench) & (agg["cores"] == cores)]
    return float(row[f"{value}_mean"].iloc[0]) if len(row) else float("nan")


def claims(agg: pd.DataFrame) -> list[Claim]:
    out = []
    e1 = at(agg, "exim", 1, "app_speedup")
    out.append(Claim("Fig 5", "exim throughput with 1 micro core / baseline", "x3.9", f"x{e1:.2f}",
                     judge(e1 - 1, 2.9), "R: the gain within 25% of +290%; D: above baseline"))
    es = at(agg, "exim", 1, "co_slowdown")
    out.append(Claim("Fig 5", "swaptions slower beside exim, 1 micro core", "+10%", pct(es),
                     REPRODUCED if abs(es - 0.10) <= 0.05 else (DIRECTION if es > 0 else NOT_REPRODUCED), "R: within 5 points; D: slower"))
    sub = agg[(agg["bench"] == "exim") & (agg["cores"] > 0)].set_index("cores")["app_speedup_mean"]
    best = int(sub.idxmax())
    out.append(Claim("abstract", "exim: the largest improvement", "x4.56", f"x{sub[best]:.2f} ({best} cores)",
                     judge(sub[best] - 1, 3.56), "R: the gain within 25% of +356%; D: above baseline"))
    p1 = at(agg, "psearchy", 1, "app_speedup")
    out.append(Claim("Fig 5", "psearchy throughput with 1 micro core / baseline", "x1.4", f"x{p1:.2f}",
                     judge(p1 - 1, 0.4), "R: the gain within 25% of +40%; D: above baseline"))
    return out


main = figure_main(FIG, measure, write_outputs, claims)


if __name__ == "__main__":
    main(parse_args(__doc__))
