"""Figures 10 and 11: tascell-fib in 0-16 with the node affinity reset (execution time and
competing modules), beside 0-16 with xl's node affinity and 8-8.

Seed 001 section IV-A: the seed's tool resets the node affinity to all nodes, after which Xen
derives it from the vCPU affinity (nodes 2 and 3 for pCPUs 16-31): ``numa_placement = "off"``.
The VM's memory stays where xl put it (nodes 0 and 2). Claims: 0-16's performance "became almost
the same as that in 8-8"; its competing modules are fewer than 8-8's above 12 threads.

    python experiments/xen_cmt/fig10_11_node_affinity_reset.py [--quick]
"""

from __future__ import annotations

import pandas as pd

from common import (
    DIRECTION, NOT_REPRODUCED, REPRODUCED, VM_0_16, VM_0_16_FIXED, VM_8_8, Claim, Settings, aggregate,
    figure_main, out_dir, parse_args, pct, run_points, series, thread_counts, time_plot, write_csv,
)

FIG = "fig10_11"
PLACEMENTS = (VM_0_16_FIXED, VM_8_8, VM_0_16)


def measure(settings: Settings, threads=None, seeds=None) -> pd.DataFrame:
    return run_points(["fib"], PLACEMENTS, threads or thread_counts(settings), settings, seeds)


def write_outputs(df: pd.DataFrame) -> pd.DataFrame:
    agg = aggregate(df, ["placement", "threads"], ["runtime_s", "competing_modules"])
    write_csv(agg, FIG, "fig10_11")
    d = out_dir(FIG)
    time_plot(agg, "placement", d / "fig10.png", "Figure 10: 0-16 with the node affinity reset")
    time_plot(agg, "placement", d / "fig11.png", "Figure 11: competing modules, node affinity reset",
              value="competing_modules", ylabel="competing modules", log=False)
    return agg


def claims(agg: pd.DataFrame) -> list[Claim]:
    fixed, e88, old = (series(agg, "runtime_s", placement=p.name) for p in PLACEMENTS)
    diff = {k: fixed[k] / e88[k] - 1 for k in fixed}
    worst = max(diff, key=lambda k: abs(diff[k]))
    gain = {k: old[k] / fixed[k] - 1 for k in fixed}
    kg = max(gain, key=gain.get)
    out = [Claim("Fig 10", "0-16 with the node affinity reset: almost the same as 8-8", "almost the same",
                 f"largest difference {pct(diff[worst])} at {worst} threads; at 8: {pct(diff[8])} "
                 f"(reset gains up to {pct(gain[kg])} over xl's node affinity, at {kg})",
                 REPRODUCED if abs(diff[worst]) <= 0.05 else (DIRECTION if gain[kg] > 0.05 else NOT_REPRODUCED),
                 "R: within 5% at every thread count; D: the reset speeds 0-16 up by more than 5%")]
    cf, c88 = series(agg, "competing_modules", placement=VM_0_16_FIXED.name), series(agg, "competing_modules", placement=VM_8_8.name)
    above = [k for k in cf if k > 12]
    fewer = [k for k in above if cf[k] < c88[k] - 0.05]
    desc = ", ".join(f"{k}: {cf[k]:.2f} vs {c88[k]:.2f}" for k in above)
    out.append(Claim("Fig 11", "reset 0-16: fewer competing modules than 8-8 above 12 threads", "fewer",
                     f"{len(fewer)} of {len(above)} counts fewer ({desc})",
                     REPRODUCED if above and len(fewer) == len(above) else (DIRECTION if fewer else NOT_REPRODUCED),
                     "fewer: by more than 0.05"))
    return out


main = figure_main(FIG, measure, write_outputs, claims)


if __name__ == "__main__":
    main(parse_args(__doc__))
