"""Figure 7: SPEC CPU2000 rate of 176.gcc and 256.bzip2 in V1, Credit vs CON vs HIT.

Seed 004 section 6.2: the Figure 5 setup (V0 idle, V1 with 4 vCPUs capped at its weight's
share, weight 512 to 32) with four copies of a SPEC CPU2000 benchmark in V1, measured by the
SPEC rate metric. Claim: "the performance of the Hybrid Scheduler is close to the performance of
the credit scheduler when workloads are high-throughput applications" (no synchronization
between the copies, one VM with a workload).

Ours: rate = copies x 3600 / runtime (reference runs per simulated hour; SPEC's own rate
multiplies the same ratio by the reference time, a constant per benchmark), where runtime is V1's
completion time, i.e. when the last copy finishes. "Close" is a "no effect" claim judged by the
protocol: the Hybrid Scheduler's rate over Credit's minus one, paired on the seed, at every
benchmark, weight and Hybrid configuration (CON, HIT), the claim taking the lowest verdict. The
text says it of both panels alike, so the two benchmarks are items of one claim.

    python experiments/hybrid/fig07_spec_rate.py [--quick]
"""

from __future__ import annotations

import pandas as pd

from common import (
    CON,
    CREDIT,
    HIT,
    MECHANISM,
    NO_EFFECT,
    SPEC_SET,
    THREADS,
    WEIGHTS,
    Claim,
    Settings,
    aggregate,
    figure_main,
    judge_no_effect,
    items_text,
    min_n,
    paired_change,
    line_plot,
    out_dir,
    parse_args,
    per_seed_ratio,
    run_single_vm,
    scale,
    weight_grid,
    worst,
    write_csv,
)

FIG = "fig07"
SCHEDULERS = (CREDIT, CON, HIT)
SOURCE = "§6.2, text on Fig 7a-b"


def measure(settings: Settings, benches=SPEC_SET, weights=WEIGHTS, seeds=None) -> pd.DataFrame:
    s = scale(settings)
    df = run_single_vm(FIG, weight_grid(benches, weights, SCHEDULERS, s), settings, seeds)
    # Runs per simulated hour, in full reference runs (a scaled run counts as its fraction of one).
    df["rate"] = THREADS * 3600 * s / df["runtime_s"]
    return per_seed_ratio(df, "rate", ["bench", "weight", "seed"], "scheduler", CREDIT.name, "rate_vs_credit")


def claims(measured: tuple[pd.DataFrame, pd.DataFrame]) -> list[Claim]:
    df, _ = measured
    benches = list(dict.fromkeys(df["bench"]))
    weights = sorted(set(df["weight"]), reverse=True)
    close = {f"{b}@{w}/{s.name}": paired_change(df, "rate", {"scheduler": s.name}, {"scheduler": CREDIT.name},
                                                  bench=b, weight=w)
             for b in benches for w in weights for s in (CON, HIT)}
    return [Claim(
        id="hybrid-close-to-credit", figure="Fig 7",
        claim=f"the Hybrid Scheduler's (CON, HIT) SPEC rate is close to Credit's ({', '.join(benches)}; "
              f"weights {', '.join(map(str, weights))})",
        paper="the performance of the Hybrid Scheduler is close to the performance of the credit scheduler",
        source=SOURCE, type=NO_EFFECT, ours="rate vs Credit: " + items_text(close),
        verdict=worst(judge_no_effect(c) for c in close.values()), n=min_n(close.values()), cause=MECHANISM,
        note="Hybrid's rate over Credit's minus one, paired on the seed, every benchmark, weight and Hybrid "
             "configuration")]


def write_outputs(df: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """CSV and PNG outputs; returns the runs and the aggregate (the claims read the runs)."""
    agg = aggregate(df, ["bench", "weight", "scheduler"], ["rate", "rate_vs_credit", "runtime_s", "cpu_share"])
    write_csv(df, FIG, "runs")
    write_csv(agg, FIG, "fig07_rate")
    d = out_dir(FIG)
    for i, b in enumerate(dict.fromkeys(agg["bench"])):
        line_plot(agg[agg["bench"] == b], "weight", "scheduler", "rate", "weight of V1",
                  "rate (reference runs per hour)", f"Figure 7{'ab'[i] if i < 2 else ''}: {b} x{THREADS} in V1, capped",
                  d / f"fig07_{b}.png")
    return df, agg


main = figure_main(FIG, measure, write_outputs, claims)


if __name__ == "__main__":
    main(parse_args(__doc__))
