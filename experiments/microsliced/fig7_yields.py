"""Figure 7: yields by source (PLE, IPI, halt) of every target beside swaptions under the baseline
(B), the static best (S) and the dynamic scheme (D).

Seed 002 section 6.2 ("Figure 7 presents the number of yield events"): for the multi-threaded
applications (read as dedup and vips, the PARSEC targets) IPIs are the dominant source of yields;
dedup also generates many halts in the baseline (its CPU use drops while TLB shootdowns wait);
the schemes reduce the IPI-induced yields, and with them dedup's halts; for gmake, memclone and
exim pause-loop exits account for most of the yields and the schemes reduce them.

Sources are classified as the seed classifies them, by the guest kernel function at the yielding
vCPU's instruction pointer (section 4.1): vms.csv ``yields_in_lock_spin`` ("PLE": yields while
spinning for a lock), ``yields_in_ipi_wait`` ("IPI": yields while waiting for IPI
acknowledgements, pause-loop exits in ``smp_call_function_many``'s wait included) and
``yields_halt`` (HLT and SCHEDOP_poll blocks); the mechanism counts (``yields_ple``,
``yields_ipi``) are written beside them. The seed's counts are whole-run numbers of yield events, so a change between schemes is
of whole-run totals (common.py: per unit of work for a fixed-work benchmark, per second for exim),
the ratio of the means over seeds with its interval paired on the seed (``protocol.change``). A
source's dominance compares the sources of the same runs (per-seed differences); "most" is more
than half of a run's yields. S = the static count with the best mean throughput (common.static_best).

    python experiments/microsliced/fig7_yields.py [--quick]
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from common import (
    DIRECTION, FN_SOURCES, MEASURED, MECHANISM, NO_ESTIMATE, SHORT, TARGETS, YIELD_SOURCES, Claim, Estimate, Settings,
    count_change, figure_main, items_text, judge_direction, min_n, out_dir, parse_args, quick_configs,
    run_points, static_best, values, welch, worst, write_csv,
)

FIG = "fig7"
SRC = "§6.2, Fig 7"
MULTI = ("parsec.dedup", "parsec.vips")
PLE_APPS = ("mosbench.gmake", "memclone", "mosbench.exim")


def measure(settings: Settings) -> pd.DataFrame:
    return run_points(TARGETS, [c for c in quick_configs(settings) if c != "solo"], settings)


def schemes(df: pd.DataFrame, w: str) -> dict[str, str | None]:
    return {"B": "base", "S": static_best(df, w), "D": "dyn"}


def write_outputs(df: pd.DataFrame) -> pd.DataFrame:
    """CSV and PNG outputs; returns the runs, which the claims read."""
    rows = []
    for w in TARGETS:
        base_total = Estimate.of(values(df, "yields_total_run", w, "base")).mean
        for label, cfg in schemes(df, w).items():
            if cfg is None or not values(df, "rate", w, cfg):
                continue
            row = {"bench": SHORT[w], "scheme": label, "config": cfg}
            for s in dict.fromkeys(FN_SOURCES + ("yields_in_other",) + YIELD_SOURCES + ("yields_total",)):
                e = Estimate.of(values(df, f"{s}_run", w, cfg))
                row.update({f"{s}_run": e.mean, f"{s}_run_lo": e.lo, f"{s}_run_hi": e.hi,
                            f"{s}_of_base": e.mean / base_total if base_total > 0 else np.nan,
                            f"{s}_per_s": Estimate.of(values(df, f"{s}_per_s", w, cfg)).mean})
            rows.append(row)
    t = pd.DataFrame(rows)
    write_csv(t, FIG, "fig7_yields")

    fig, ax = plt.subplots(figsize=(10, 4))
    labels = [f"{r.bench}\n{r.scheme}" for r in t.itertuples()]
    bottom = np.zeros(len(t))
    for s, name in zip(FN_SOURCES, ("PLE (lock spin)", "IPI (wait for acks)", "halt")):
        ax.bar(range(len(t)), t[f"{s}_of_base"], bottom=bottom, label=name)
        bottom += t[f"{s}_of_base"].fillna(0).to_numpy()
    ax.set_xticks(range(len(t)))
    ax.set_xticklabels(labels, fontsize=7)
    ax.set_ylabel("whole-run yields / baseline's")
    ax.set_title("Figure 7: yields by source (B: baseline, S: static best, D: dynamic)")
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(out_dir(FIG) / "fig7.png", dpi=120)
    plt.close(fig)
    return df


def short(w: str) -> str:
    return SHORT[w]


def claims(df: pd.DataFrame) -> list[Claim]:
    out = []

    def src(w, s, cfg="base"):
        return values(df, s, w, cfg)

    def diff(w, a, b):
        """Per-seed difference of two sources of the same baseline runs."""
        return Estimate.of([x - y for x, y in zip(src(w, a), src(w, b))])

    def share(w, s):
        """Per seed, the source's share of the run's yields (0 in a run without any: psearchy)."""
        return [x / t if t > 0 else 0.0 for x, t in zip(src(w, s), src(w, "yields_total"))]

    others = {"ple": "yields_in_lock_spin", "halt": "yields_halt"}
    dom = {f"{short(w)} IPI-{o}": diff(w, "yields_in_ipi_wait", c) for w in MULTI for o, c in others.items()}
    out.append(Claim(
        id="ipi-dominant", figure="Fig 7", claim="dedup and vips (multi-threaded): IPIs the dominant source of yields, baseline",
        paper="the inter-processor interrupts are the dominant source of yields", source=SRC, type=DIRECTION,
        ours=items_text(dom, 0, pct=False) + " (yields per run)",
        verdict=worst(judge_direction(e, +1) for e in dom.values()), n=min_n(dom.values()), cause=MEASURED,
        note="IPI-wait yields minus each other source's, per seed in the same runs; sources by the yielder's "
             "kernel function as the seed's (a pause-loop exit in smp_call_function_many's wait is an IPI yield)"))

    dedup_h = share("parsec.dedup", "yields_halt")
    halts = {short(w): welch(dedup_h, share(w, "yields_halt")) for w in TARGETS if w != "parsec.dedup"}
    out.append(Claim(
        id="dedup-many-halts", figure="Fig 7", claim="dedup: many halts besides IPIs in the baseline (a larger halt share of its yields than the other targets')",
        paper="dedup generates many halt exceptions in addition to the IPIs in the baseline", source=SRC, type=DIRECTION,
        ours=f"dedup's halt share {Estimate.of(dedup_h).text(1, pct=True)}; minus the others': " + items_text(halts, 1),
        verdict=worst(judge_direction(e, +1) for e in halts.values()), n=min_n(halts.values()), cause=MECHANISM,
        note="'many' read against the other targets (the seed's 'interestingly'); Welch's interval (different workloads)"))

    def cuts(apps, source):
        found = {}
        for w in apps:
            for label, cfg in schemes(df, w).items():
                if label != "B":
                    found[f"{short(w)} {label}"] = count_change(df, w, source, cfg) if cfg else NO_ESTIMATE
        return found

    ipi = cuts(MULTI, "yields_in_ipi_wait")
    out.append(Claim(
        id="ipi-yields-cut", figure="Fig 7", claim="dedup and vips: S and D reduce the IPI-induced yields",
        paper="our proposed scheme is able to reduce the number of IPI-induced yields", source=SRC, type=DIRECTION,
        ours=items_text(ipi), verdict=worst(judge_direction(e, -1) for e in ipi.values()), n=min_n(ipi.values()),
        cause=MEASURED, note="change of whole-run IPI yields from the baseline, paired on the seed"))
    halt = cuts(("parsec.dedup",), "yields_halt")
    out.append(Claim(
        id="dedup-halts-cut", figure="Fig 7", claim="dedup: S and D reduce the halt-induced yields",
        paper="it results in a decreased number of halt-induced yields", source=SRC, type=DIRECTION,
        ours=items_text(halt), verdict=worst(judge_direction(e, -1) for e in halt.values()), n=min_n(halt.values()),
        cause=MECHANISM, note="change of whole-run halt yields from the baseline, paired on the seed"))

    most = {short(w): Estimate.of(share(w, "yields_in_lock_spin")) for w in PLE_APPS}
    out.append(Claim(
        id="ple-most", figure="Fig 7", claim="gmake, memclone and exim: pause-loop exits are most (more than half) of the yields, baseline",
        paper="the numbers of PLEs, which account for most of the yields", source=SRC, type=DIRECTION,
        ours=items_text(most, 1), verdict=worst(judge_direction(e, +1, ref=0.5) for e in most.values()),
        n=min_n(most.values()), cause=MECHANISM, note="lock-spin share of each run's yields, above one half beyond noise"))
    ple = cuts(PLE_APPS, "yields_in_lock_spin")
    out.append(Claim(
        id="ple-cut", figure="Fig 7", claim="gmake, memclone and exim: S and D reduce the pause-loop exits",
        paper="are effectively reduced by our schemes", source=SRC, type=DIRECTION,
        ours=items_text(ple), verdict=worst(judge_direction(e, -1) for e in ple.values()), n=min_n(ple.values()),
        cause=MECHANISM, note="change of whole-run PLE yields from the baseline, paired on the seed"))
    return out


main = figure_main(FIG, measure, write_outputs, claims)


if __name__ == "__main__":
    main(parse_args(__doc__))
