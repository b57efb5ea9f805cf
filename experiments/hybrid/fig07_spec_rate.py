"""Figure 7: SPEC CPU2000 rate of 176.gcc and 256.bzip2 in V1, Credit vs CON vs HIT.

Seed 004 section 6.2: the Figure 5 setup (V0 idle, V1 with 4 vCPUs capped at its weight's
share, weight 512 to 32) with four copies of a SPEC CPU2000 benchmark in V1, measured by the
SPEC rate metric. Claim: "the performance of the Hybrid Scheduler is close to the performance of
the credit scheduler when workloads are high-throughput applications" (no synchronization
between the copies, one VM with a workload).

Ours: rate = copies x 3600 / runtime (reference runs per simulated hour; SPEC's own rate
multiplies the same ratio by the reference time, a constant per benchmark), where runtime is V1's
completion time, i.e. when the last copy finishes.

    python experiments/hybrid/fig07_spec_rate.py [--quick]
"""

from __future__ import annotations

import pandas as pd

from common import (
    CON,
    CREDIT,
    DIRECTION,
    HIT,
    NOT_REPRODUCED,
    REPRODUCED,
    SPEC_SET,
    THREADS,
    WEIGHTS,
    Claim,
    Settings,
    aggregate,
    figure_main,
    line_plot,
    out_dir,
    parse_args,
    per_seed_ratio,
    run_single_vm,
    scale,
    weight_grid,
    write_csv,
)

FIG = "fig07"
SCHEDULERS = (CREDIT, CON, HIT)
#: "close": rates within this fraction of Credit's (our threshold).
CLOSE = 0.05


def measure(settings: Settings, benches=SPEC_SET, weights=WEIGHTS, seeds=None) -> pd.DataFrame:
    s = scale(settings)
    df = run_single_vm(FIG, weight_grid(benches, weights, SCHEDULERS, s), settings, seeds)
    # Runs per simulated hour, in full reference runs (a scaled run counts as its fraction of one).
    df["rate"] = THREADS * 3600 * s / df["runtime_s"]
    return per_seed_ratio(df, "rate", ["bench", "weight", "seed"], "scheduler", CREDIT.name, "rate_vs_credit")


def claims(agg: pd.DataFrame) -> list[Claim]:
    hybrid = agg[agg["scheduler"] != CREDIT.name]
    out = []
    for b in dict.fromkeys(agg["bench"]):
        sub = hybrid[hybrid["bench"] == b]
        lo, hi = sub["rate_vs_credit_mean"].min(), sub["rate_vs_credit_mean"].max()
        worst = max(abs(lo - 1), abs(hi - 1))
        out.append(Claim("Fig 7", f"{b}: Hybrid (CON, HIT) rate close to Credit's", "close",
                         f"Hybrid/Credit rate {lo:.3f}-{hi:.3f} over weights {', '.join(str(w) for w in sorted(set(sub['weight']), reverse=True))}",
                         REPRODUCED if worst <= CLOSE else (DIRECTION if worst <= 3 * CLOSE else NOT_REPRODUCED),
                         f"close: within {CLOSE:.0%}"))
    return out


def write_outputs(df: pd.DataFrame) -> pd.DataFrame:
    agg = aggregate(df, ["bench", "weight", "scheduler"], ["rate", "rate_vs_credit", "runtime_s", "cpu_share"])
    write_csv(df, FIG, "runs")
    write_csv(agg, FIG, "fig07_rate")
    d = out_dir(FIG)
    for i, b in enumerate(dict.fromkeys(agg["bench"])):
        line_plot(agg[agg["bench"] == b], "weight", "scheduler", "rate", "weight of V1",
                  "rate (reference runs per hour)", f"Figure 7{'ab'[i] if i < 2 else ''}: {b} x{THREADS} in V1, capped",
                  d / f"fig07_{b}.png")
    return agg


main = figure_main(FIG, measure, write_outputs, claims)


if __name__ == "__main__":
    main(parse_args(__doc__))
