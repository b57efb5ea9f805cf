"""Figure 7: yields by source (PLE, IPI, halt) of every target beside swaptions under the baseline
(B), the static best (S) and the dynamic scheme (D).

Seed 002 section 6.2: for the multi-threaded applications IPIs are the dominant source; dedup also
halts a lot in the baseline (its CPU use drops while TLB shootdowns wait) and the schemes cut its
IPI yields and with them its halts; for gmake, memclone and exim pause-loop exits are most of the
yields and the schemes reduce them. Sources are vms.csv ``yields_ple`` (PLE exits),
``yields_ipi`` (SCHEDOP_yield after IPIs to a preempted target), ``yields_halt`` (HLT and
SCHEDOP_poll blocks), per simulated second. S = the static count with the best mean throughput.

    python experiments/microsliced/fig7_yields.py [--quick]
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from common import (
    DIRECTION, NOT_REPRODUCED, REPRODUCED, SHORT, TARGETS, Claim, Settings, aggregate, app, figure_main,
    normalized, out_dir, parse_args, quick_configs, run_points, write_csv,
)

FIG = "fig7"
SOURCES = ("yields_ple", "yields_ipi", "yields_halt")


def measure(settings: Settings) -> pd.DataFrame:
    return run_points(TARGETS, [c for c in quick_configs(settings) if c != "solo"], settings)


def write_outputs(df: pd.DataFrame) -> pd.DataFrame:
    a = app(normalized(df))
    a["bench"] = a["workload"].map(SHORT)
    for s in SOURCES:
        a[f"{s}_per_s"] = pd.to_numeric(a[s], errors="coerce") / a["sim_s"]
    cols = [f"{s}_per_s" for s in SOURCES]
    agg = aggregate(a, ["bench", "config"], cols + ["speedup"])
    static = agg[agg["config"].str.match(r"^s\d+$")]
    best = static.loc[static.groupby("bench")["speedup_mean"].idxmax(), ["bench", "config"]].set_index("bench")["config"]
    rows = []
    for b in agg["bench"].unique():
        for label, cfg in (("B", "base"), ("S", best.get(b)), ("D", "dyn")):
            r = agg[(agg["bench"] == b) & (agg["config"] == cfg)]
            if len(r):
                rows.append({"bench": b, "scheme": label, "config": cfg, **{s: float(r[f"{s}_per_s_mean"].iloc[0]) for s in SOURCES}})
    t = pd.DataFrame(rows)
    t["total"] = t[list(SOURCES)].sum(axis=1)
    write_csv(t, FIG, "fig7_yields")

    fig, ax = plt.subplots(figsize=(10, 4))
    labels = [f"{r.bench}\n{r.scheme}" for r in t.itertuples()]
    bottom = np.zeros(len(t))
    for s, name in zip(SOURCES, ("PLE", "IPI", "halt")):
        ax.bar(range(len(t)), t[s], bottom=bottom, label=name)
        bottom += t[s].to_numpy()
    ax.set_xticks(range(len(t)))
    ax.set_xticklabels(labels, fontsize=7)
    ax.set_ylabel("yields per second")
    ax.set_title("Figure 7: yields by source (B: baseline, S: static best, D: dynamic)")
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(out_dir(FIG) / "fig7.png", dpi=120)
    plt.close(fig)
    return t


def claims(t: pd.DataFrame) -> list[Claim]:
    x = t.set_index(["bench", "scheme"])
    out = []

    def share(b, s, src):
        r = x.loc[(b, s)]
        return r[src] / r["total"] if r["total"] > 0 else float("nan")

    for b in ("dedup", "vips"):
        ipi = share(b, "B", "yields_ipi")
        top = max(SOURCES, key=lambda s: x.loc[(b, "B"), s])
        out.append(Claim("Fig 7", f"{b} (multi-threaded): IPIs the dominant source of yields, baseline", "IPI dominant",
                         f"IPI {ipi:.0%}, PLE {share(b, 'B', 'yields_ple'):.0%}, halt {share(b, 'B', 'yields_halt'):.0%}",
                         REPRODUCED if top == "yields_ipi" else (DIRECTION if ipi > 0.2 else NOT_REPRODUCED), "R: the largest source; D: over 20%"))
    h = share("dedup", "B", "yields_halt")
    out.append(Claim("Fig 7", "dedup: many halts besides IPIs in the baseline", "many halts", f"halt {h:.0%} of yields",
                     REPRODUCED if h > 0.2 else (DIRECTION if h > 0.05 else NOT_REPRODUCED), "R: over 20% of its yields; D: over 5%"))
    for s in ("S", "D"):
        ib, i_s = x.loc[("dedup", "B"), "yields_ipi"], x.loc[("dedup", s), "yields_ipi"]
        hb, hs = x.loc[("dedup", "B"), "yields_halt"], x.loc[("dedup", s), "yields_halt"]
        out.append(Claim("Fig 7", f"dedup ({s}): fewer IPI yields and with them fewer halts", "both down",
                         f"IPI {ib:,.0f} -> {i_s:,.0f}/s, halt {hb:,.0f} -> {hs:,.0f}/s",
                         REPRODUCED if i_s < ib and hs < hb else (DIRECTION if i_s < ib or hs < hb else NOT_REPRODUCED), "R: both fall; D: one"))
    for b in ("gmake", "memclone", "exim"):
        p = share(b, "B", "yields_ple")
        fs, fd = x.loc[(b, "S"), "total"] / x.loc[(b, "B"), "total"] - 1, x.loc[(b, "D"), "total"] / x.loc[(b, "B"), "total"] - 1
        out.append(Claim("Fig 7", f"{b}: PLE most of the yields, reduced by S and D", "PLE most; both reduce",
                         f"PLE {p:.0%}; S {fs:+.0%}, D {fd:+.0%} of all yields",
                         REPRODUCED if p > 0.5 and fs < 0 and fd < 0 else (DIRECTION if p > 0.5 and (fs < 0 or fd < 0) else NOT_REPRODUCED),
                         "R: PLE over half and both schemes fewer yields; D: one scheme"))
    return out


main = figure_main(FIG, measure, write_outputs, claims)


if __name__ == "__main__":
    main(parse_args(__doc__))
