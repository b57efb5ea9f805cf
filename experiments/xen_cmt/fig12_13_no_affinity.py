"""Figures 12 and 13: tascell-fib with no vCPU affinity, with xl's node affinity and without it
(execution time and competing modules), beside 8-8.

Seed 001 section IV-B: without ``cpus`` xl's node affinity {0, 2} leaves the VM pCPUs 0-7 and
16-23, "the same as 8-8"; with the node affinity disabled by the seed's tool it may use all 32.
Claims: with node affinity "the performance was similar to that for 8-8 although it was not
exactly the same"; with no node affinity "the performance improved well until 16 threads", but
the competing modules were "not zero, particularly, between 14 and 16 threads".

    python experiments/xen_cmt/fig12_13_no_affinity.py [--quick]
"""

from __future__ import annotations

import pandas as pd

from common import (
    DIRECTION, NOT_REPRODUCED, NO_AFFINITY, NO_AFFINITY_NO_NODE, REPRODUCED, VM_8_8, Claim, Settings,
    aggregate, efficiency, figure_main, out_dir, parse_args, pct, run_points, series, thread_counts,
    time_plot, write_csv,
)

FIG = "fig12_13"
PLACEMENTS = (NO_AFFINITY, NO_AFFINITY_NO_NODE, VM_8_8)


def measure(settings: Settings, threads=None, seeds=None) -> pd.DataFrame:
    return run_points(["fib"], PLACEMENTS, threads or thread_counts(settings), settings, seeds)


def write_outputs(df: pd.DataFrame) -> pd.DataFrame:
    agg = aggregate(df, ["placement", "threads"], ["runtime_s", "competing_modules"])
    write_csv(agg, FIG, "fig12_13")
    d = out_dir(FIG)
    time_plot(agg, "placement", d / "fig12.png", "Figure 12: no vCPU affinity", ideal_from=NO_AFFINITY_NO_NODE.name)
    time_plot(agg, "placement", d / "fig13.png", "Figure 13: competing modules, no vCPU affinity",
              value="competing_modules", ylabel="competing modules", log=False)
    return agg


def claims(agg: pd.DataFrame) -> list[Claim]:
    na, free, e88 = (series(agg, "runtime_s", placement=p.name) for p in PLACEMENTS)
    diff = {k: na[k] / e88[k] - 1 for k in na}
    worst = max(diff, key=lambda k: abs(diff[k]))
    out = [Claim("Fig 12", "no vCPU affinity, xl's node affinity: similar to 8-8, not exactly", "similar",
                 f"largest difference {pct(diff[worst])} at {worst} threads",
                 REPRODUCED if abs(diff[worst]) <= 0.10 else NOT_REPRODUCED, "R: within 10% at every thread count")]
    e_free, e_na = efficiency(free, 1, 16), efficiency(na, 1, 16)
    out.append(Claim("Fig 12", "no vCPU or node affinity: improves well until 16 threads", "scales to 16",
                     f"efficiency 1 -> 16 threads {e_free:.2f} (with node affinity {e_na:.2f}); "
                     f"12 -> 16 {efficiency(free, 12, 16):.2f}",
                     REPRODUCED if e_free >= 0.9 else (DIRECTION if e_free > e_na else NOT_REPRODUCED),
                     "R: efficiency >= 0.9; D: better than with node affinity"))
    cm = series(agg, "competing_modules", placement=NO_AFFINITY_NO_NODE.name)
    tail = {k: cm[k] for k in cm if k >= 14}
    out.append(Claim("Fig 13", "no vCPU or node affinity: competing modules not zero, particularly at 14-16 threads",
                     "not zero at 14-16", ", ".join(f"{k}: {v:.2f}" for k, v in tail.items()),
                     REPRODUCED if tail and min(tail.values()) > 0.1 else
                     (DIRECTION if tail and max(tail.values()) > 0.1 else NOT_REPRODUCED),
                     "R: above 0.1 at each of 14-16"))
    return out


main = figure_main(FIG, measure, write_outputs, claims)


if __name__ == "__main__":
    main(parse_args(__doc__))
