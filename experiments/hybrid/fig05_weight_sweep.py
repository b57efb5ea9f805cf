"""Figure 5: LU and SP runtime in V1 as its weight falls from 512 to 32, Credit vs CON vs HIT.

Seed 004 section 6.2: V0 (Domain-0, 8 vCPUs, weight 256, idle) beside V1 (4 vCPUs) running NPB
LU or SP class A with 4 threads; V1 non-work-conserving (capped at its weight's share of the
8 pCPUs); Credit = Xen's credit scheduler, CON = Hybrid with V1 concurrent (CPS), HIT = Hybrid
with V1 high-throughput. Claims: (1) at weights 512, 256 and 128 Credit and CON perform alike;
(2) at 512 and 256 the runtime is the same (four vCPUs cannot use more than four pCPUs);
(3) at weight 32 the runtime grows more under Credit than under CON, "especially when the
workload is LU".

Ours: runtime = V1's completion time (one whole benchmark run, initialization and verification
included), in simulated seconds.

    python experiments/hybrid/fig05_weight_sweep.py [--quick]
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
    WEIGHTS,
    Claim,
    Settings,
    aggregate,
    beyond_noise,
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

FIG = "fig05"
BENCHES = ("lu", "sp")
SCHEDULERS = (CREDIT, CON, HIT)
#: "similar performance in Credit and CON": within this fraction of each other (our threshold).
SIMILAR = 0.10


def measure(settings: Settings, benches=BENCHES, weights=WEIGHTS, seeds=None) -> pd.DataFrame:
    s = scale(settings)
    df = run_single_vm(FIG, weight_grid(benches, weights, SCHEDULERS, s), settings, seeds)
    # Paired on the seed: each scheduler's runtime over Credit's at the same bench and weight.
    return per_seed_ratio(df, "runtime_s", ["bench", "weight", "seed"], "scheduler", CREDIT.name, "vs_credit")


def claims(agg: pd.DataFrame) -> list[Claim]:
    rows = {(r["bench"], r["weight"], r["scheduler"]): r for _, r in agg.iterrows()}
    benches = list(dict.fromkeys(agg["bench"]))
    weights = sorted(set(agg["weight"]), reverse=True)
    out = []

    high = [w for w in weights if w >= 128]
    ratios = {(b, w): rows[(b, w, CON.name)]["vs_credit_mean"] for b in benches for w in high}
    worst = max(abs(r - 1) for r in ratios.values())
    out.append(Claim("Fig 5", "Credit and CON alike at weights 512, 256, 128", "similar",
                     ", ".join(f"{b.upper()}@{w}: CON/Credit {r:.2f}" for (b, w), r in ratios.items()),
                     REPRODUCED if worst <= SIMILAR else (DIRECTION if worst <= 2 * SIMILAR else NOT_REPRODUCED),
                     f"alike: within {SIMILAR:.0%}"))

    if 512 in weights and 256 in weights:
        diffs = {(b, s.name): rows[(b, 512, s.name)]["runtime_s_mean"] / rows[(b, 256, s.name)]["runtime_s_mean"]
                 for b in benches for s in SCHEDULERS}
        worst = max(abs(d - 1) for d in diffs.values())
        out.append(Claim("Fig 5", "runtime at 512 equals runtime at 256", "same",
                         f"512/256 ratio {min(diffs.values()):.3f}-{max(diffs.values()):.3f} over benches and schedulers",
                         REPRODUCED if worst <= 0.02 else (DIRECTION if worst <= 0.1 else NOT_REPRODUCED),
                         "same: within 2%"))

    low = min(weights)
    base = max(w for w in weights if w <= 256)
    growth = {}
    for b in benches:
        for s in (CREDIT, CON):
            growth[(b, s.name)] = rows[(b, low, s.name)]["runtime_s_mean"] / rows[(b, base, s.name)]["runtime_s_mean"]
    for b in benches:
        cr, co = rows[(b, low, CREDIT.name)], rows[(b, low, CON.name)]
        larger = growth[(b, CREDIT.name)] > growth[(b, CON.name)] and beyond_noise(cr, co, "runtime_s")
        out.append(Claim("Fig 5", f"{b.upper()}: runtime grows more under Credit than CON at weight {low}",
                         "Credit > CON",
                         f"x{growth[(b, CREDIT.name)]:.2f} (Credit) vs x{growth[(b, CON.name)]:.2f} (CON) from {base} to {low}; "
                         f"Credit/CON {cr['runtime_s_mean'] / co['runtime_s_mean']:.2f}",
                         REPRODUCED if larger else NOT_REPRODUCED, "beyond two standard errors"))
    if "lu" in benches and "sp" in benches:
        gap = {b: rows[(b, low, CREDIT.name)]["runtime_s_mean"] / rows[(b, low, CON.name)]["runtime_s_mean"] for b in ("lu", "sp")}
        out.append(Claim("Fig 5", f"the Credit-CON gap at weight {low} is larger for LU than SP", "especially LU",
                         f"Credit/CON: LU {gap['lu']:.2f}, SP {gap['sp']:.2f}",
                         REPRODUCED if gap["lu"] > gap["sp"] > 1 else (DIRECTION if gap["lu"] > 1 else NOT_REPRODUCED)))
    return out


def write_outputs(df: pd.DataFrame) -> pd.DataFrame:
    agg = aggregate(df, ["bench", "weight", "scheduler"], ["runtime_s", "vs_credit", "cpu_share", "spin_time_ms"])
    write_csv(df, FIG, "runs")
    write_csv(agg, FIG, "fig05_runtime")
    d = out_dir(FIG)
    for i, b in enumerate(dict.fromkeys(agg["bench"])):
        line_plot(agg[agg["bench"] == b], "weight", "scheduler", "runtime_s", "weight of V1", "runtime (s)",
                  f"Figure 5{'ab'[i] if i < 2 else ''}: {b.upper()} in V1, capped", d / f"fig05_{b}.png")
    return agg


main = figure_main(FIG, measure, write_outputs, claims)


if __name__ == "__main__":
    main(parse_args(__doc__))
