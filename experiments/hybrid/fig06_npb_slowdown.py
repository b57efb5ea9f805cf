"""Figure 6: slowdown of the NAS parallel benchmarks in V1 at weights 128, 64 and 32, Credit vs CON.

Seed 004 section 6.2: the Figure 5 setup (V0 idle, V1 with 4 vCPUs capped at its weight's
share) with each NPB benchmark (class A, 4 threads) in V1. "Slowdown" = the benchmark's runtime
over its runtime "on the same VM scheduled by the default Xen with the weight equaling 256".
Claims: "the CPS strategy (shown in CON) could improve the performance of all parallel
benchmarks including LU and SP"; LU "has the maximal performance degradation" under Credit
while SP "has normal performance degradation".

Ours: every NPB model of the build (BT, CG, DC, EP, FT, IS, LU, MG, SP, UA; the seed does not
list its set), runtime = completion time of one run, slowdown paired on the seed.

    python experiments/hybrid/fig06_npb_slowdown.py [--quick]
"""

from __future__ import annotations

import pandas as pd

from common import (
    CON,
    CREDIT,
    DEFAULT_WEIGHT,
    DIRECTION,
    FIG6_WEIGHTS,
    NOT_REPRODUCED,
    NPB_SET,
    REPRODUCED,
    Case,
    Claim,
    Settings,
    aggregate,
    bar_plot,
    beyond_noise,
    figure_main,
    out_dir,
    parse_args,
    run_single_vm,
    scale,
    single_vm,
    weight_grid,
    write_csv,
)

FIG = "fig06"
SCHEDULERS = (CREDIT, CON)
BASELINE = "Credit@256"
#: --quick: a subset without UA, whose Credit runs at low weight are the slowest to simulate
#: (pause-loop-exit storms under caps).
QUICK_SET = ("cg", "ep", "lu", "sp")


def measure(settings: Settings, benches=None, weights=FIG6_WEIGHTS, seeds=None) -> pd.DataFrame:
    s = scale(settings)
    benches = benches or (QUICK_SET if settings.quick else NPB_SET)
    cases = [Case({"bench": b, "weight": DEFAULT_WEIGHT, "scheduler": BASELINE},
                  single_vm(CREDIT, b, DEFAULT_WEIGHT, s)) for b in benches]
    cases += weight_grid(benches, weights, SCHEDULERS, s)
    df = run_single_vm(FIG, cases, settings, seeds)
    base = df[df["scheduler"] == BASELINE][["bench", "seed", "runtime_s"]].rename(columns={"runtime_s": "base_s"})
    df = df.merge(base, on=["bench", "seed"])
    df["slowdown"] = df["runtime_s"] / df["base_s"]
    return df


def claims(agg: pd.DataFrame) -> list[Claim]:
    agg = agg[agg["scheduler"] != BASELINE]
    rows = {(r["bench"], r["weight"], r["scheduler"]): r for _, r in agg.iterrows()}
    benches = list(dict.fromkeys(agg["bench"]))
    weights = sorted(set(agg["weight"]), reverse=True)
    out = []

    better, tied, worse = [], [], []
    for b in benches:
        for w in weights:
            cr, co = rows[(b, w, CREDIT.name)], rows[(b, w, CON.name)]
            if not beyond_noise(cr, co, "slowdown"):
                tied.append(f"{b}@{w}")
            elif co["slowdown_mean"] < cr["slowdown_mean"]:
                better.append(f"{b}@{w}")
            else:
                worse.append(f"{b}@{w}")
    n = len(benches) * len(weights)
    out.append(Claim("Fig 6", "CON improves every NPB benchmark at weights 128-32", f"all {n} cases",
                     f"CON faster in {len(better)}, tied in {len(tied)}, slower in {len(worse)}"
                     + (f" (slower: {', '.join(worse)})" if worse else ""),
                     REPRODUCED if len(better) == n else (DIRECTION if not worse and better else NOT_REPRODUCED),
                     "faster/slower: beyond two standard errors of the seed spread"))
    at_32 = {b: rows[(b, min(weights), CREDIT.name)]["slowdown_mean"] for b in benches}
    gain_32 = {b: at_32[b] / rows[(b, min(weights), CON.name)]["slowdown_mean"] for b in benches}
    top = max(at_32, key=at_32.get)
    if "lu" in benches:
        ranked = sorted(at_32, key=at_32.get, reverse=True)
        out.append(Claim("Fig 6", f"LU degrades most under Credit (weight {min(weights)})", "LU the maximum",
                         f"largest Credit slowdown: {top.upper()} x{at_32[top]:.2f}; LU x{at_32['lu']:.2f} "
                         f"(rank {ranked.index('lu') + 1} of {len(ranked)})",
                         REPRODUCED if top == "lu" else (DIRECTION if ranked.index("lu") < 3 else NOT_REPRODUCED),
                         "direction: LU among the three largest"))
    if "sp" in benches:
        med = sorted(at_32.values())[len(at_32) // 2]
        out.append(Claim("Fig 6", f"SP degrades 'normally' under Credit (weight {min(weights)})", "middling",
                         f"SP x{at_32['sp']:.2f}, median of the set x{med:.2f}; Credit/CON for SP {gain_32['sp']:.2f}",
                         REPRODUCED if at_32["sp"] < at_32.get("lu", float("inf")) else NOT_REPRODUCED,
                         "middling: below LU's"))
    return out


def write_outputs(df: pd.DataFrame) -> pd.DataFrame:
    agg = aggregate(df, ["bench", "weight", "scheduler"], ["slowdown", "runtime_s", "cpu_share"])
    write_csv(df, FIG, "runs")
    write_csv(agg, FIG, "fig06_slowdown")
    d = out_dir(FIG)
    sub = agg[agg["scheduler"] != BASELINE]
    for i, w in enumerate(sorted(set(sub["weight"]), reverse=True)):
        bar_plot(sub[sub["weight"] == w], "bench", "scheduler", "slowdown", f"slowdown vs {BASELINE}",
                 f"Figure 6{'abc'[i] if i < 3 else ''}: NPB in V1 at weight {w}, capped", d / f"fig06_w{w}.png",
                 hline=1.0, log=True)
    return agg


main = figure_main(FIG, measure, write_outputs, claims)


if __name__ == "__main__":
    main(parse_args(__doc__))
