"""Table 8: what the seeds' schemes add on top of the modern guest, and what the guest's PV
features buy together.

Each scheme against its own host with the Linux 6.x guest (common.py): seed 000's urgent-vCPU-
first (``[host.uvf]``) over the Linux 3.2 CFS host with 6.6's KVM (UVF is a CFS/credit overlay);
seed 002's dynamic micro-sliced pool over Xen 4.7 credit; seed 003's IRS over Xen 4.4 credit
(the KVM-only PV features are off on Xen: the guest keeps PV qspinlock by SCHEDOP_poll and steal
time). Beside them, EEVDF (6.6) against CFS (3.2) with the same KVM and guest, and the Linux 6.x
guest against the seeds' Linux 3.2 guest on the modern host. The seeds measured their schemes
against 2011-2016 guests without PV TLB flush; whether the gain survives is the question.

    python experiments/modern/table8_seed_schemes.py [--quick]
"""

from __future__ import annotations

import pandas as pd

from common import (
    MODERN, Claim, Settings, aggregate, bar_plot, benches_set, compare, direction, figure_main, mean_gain,
    out_dir, parse_args, pct, write_csv,
)

FIG = "table8"
LAYOUTS = ("2vm", "1.5x")
#: (scheme, its reference, what the seed claimed on its own baseline).
PAIRS = (
    ("uvf", "host=cfs", "seed 000: UVF speeds up IPI-heavy VMs over CFS"),
    ("microsliced", "host=credit", "seed 002: micro-sliced cores speed up lock/IPI-heavy VMs over Xen 4.7 credit"),
    ("irs", "host=credit44", "seed 003: IRS speeds up blocking parallel VMs over Xen credit"),
    (MODERN, "host=cfs", "EEVDF (6.6) over CFS (3.2) as the KVM host scheduler"),
    (MODERN, "guest=linux-3.2", "the Linux 6.x guest's PV features together over the Linux 3.2 guest"),
)


def measure(settings: Settings, seeds=None) -> pd.DataFrame:
    rows = []
    for s, ref, _ in PAIRS:
        df = compare(benches_set(settings), ("2vm",) if settings.quick else LAYOUTS, [s], ref, settings, seeds)
        df = df[df["scheme"] == s].copy()
        df["pair"] = f"{s} over {ref}"
        rows.append(df)
    return pd.concat(rows, ignore_index=True)


def write_outputs(df: pd.DataFrame) -> pd.DataFrame:
    write_csv(df, FIG, "runs")
    agg = aggregate(df, ["pair", "bench", "layout"], ["gain", "perf"])
    write_csv(agg, FIG, FIG)
    agg["case"] = agg["bench"] + " " + agg["layout"]
    bar_plot(agg, "case", "pair", "gain", "gain over the reference (higher is better)",
             "Table 8: the seeds' schemes on a Linux 6.x guest", out_dir(FIG) / f"{FIG}.png", hline=0.0)
    return df


def claims(df: pd.DataFrame) -> list[Claim]:
    out = []
    for s, ref, text in PAIRS:
        pair = f"{s} over {ref}"
        sub = df[df["pair"] == pair]
        g = float(sub["gain"].mean())
        per = ", ".join(f"{b} {pct(float(sub[sub['bench'] == b]['gain'].mean()))}" for b in dict.fromkeys(sub["bench"]))
        out.append(Claim("Table 8", text, "gain on its own baseline", f"{pct(g)} mean ({per})", direction(g)))
    return out


main = figure_main(FIG, measure, write_outputs, claims)


if __name__ == "__main__":
    main(parse_args(__doc__))
