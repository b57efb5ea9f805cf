"""Figure 6: the number of competing modules of tascell-fib in 0-16 and 8-8 at 1-16 threads.

Seed 001 section III-F: per second, the product of the two cores' utilizations of each module,
summed over modules and averaged (vms.csv ``competing_modules``, docs/model.md section 13).
Claims: it "has a strong correlation with the performance"; in 0-16 it rises between 4 and 8
and between 12 and 16 threads and not between 8 and 12; in 8-8 it is "largely different" (one
core per module up to 8 threads, Figure 8). The runs are Figure 4's.

    python experiments/xen_cmt/fig06_competing_modules.py [--quick]
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from common import (
    DIRECTION, NOT_REPRODUCED, REPRODUCED, Claim, Settings, aggregate, dist, figure_main, out_dir,
    parse_args, run_points, series, thread_counts, time_plot, write_csv,
)

FIG = "fig06"


def measure(settings: Settings, threads=None, seeds=None) -> pd.DataFrame:
    return run_points(["fib"], [dist("0-16"), dist("8-8")], threads or thread_counts(settings), settings, seeds)


def write_outputs(df: pd.DataFrame) -> pd.DataFrame:
    agg = aggregate(df, ["placement", "threads"], ["competing_modules", "runtime_s"])
    write_csv(agg, FIG, "fig06_competing_modules")
    time_plot(agg, "placement", out_dir(FIG) / "fig06.png", "Figure 6: competing modules, tascell-fib",
              value="competing_modules", ylabel="competing modules", log=False)
    return agg


def claims(agg: pd.DataFrame) -> list[Claim]:
    cm = {p: series(agg, "competing_modules", placement=p) for p in ("0-16", "8-8")}
    t = {p: series(agg, "runtime_s", placement=p) for p in ("0-16", "8-8")}
    a = cm["0-16"]
    up48, up812, up1216 = a[8] - a[4], a[12] - a[8], a[16] - a[12]
    out = [Claim("Fig 6", "0-16: competing modules rise 4->8 and 12->16 threads, flat 8->12", "rise, flat, rise",
                 f"+{up48:.2f}, {up812:+.2f}, +{up1216:.2f} (at 4/8/12/16: {a[4]:.2f}/{a[8]:.2f}/{a[12]:.2f}/{a[16]:.2f})",
                 REPRODUCED if up48 > 3 and abs(up812) < 0.5 and up1216 > 3 else
                 (DIRECTION if up48 > up812 and up1216 > up812 else NOT_REPRODUCED),
                 "R: each rise above 3 (of 4 possible), the flat part within 0.5")]
    b = cm["8-8"]
    low = max(b[k] for k in b if k <= 8)
    out.append(Claim("Fig 6", "8-8: no competing modules up to 8 threads (Figure 8), rising after", "~0 up to 8",
                     f"at most {low:.2f} up to 8 threads (at 8: {b[8]:.2f}), {b[12]:.2f} at 12, {b[16]:.2f} at 16",
                     REPRODUCED if low < 0.25 else (DIRECTION if b[8] < a[8] else NOT_REPRODUCED),
                     "D: fewer than 0-16 at 8; credit's cross-socket 2x rule (Xen 4.4 _csched_cpu_pick) "
                     "can leave a vCPU doubled up on a module when the other socket has fewer than twice the idlers"))
    # Correlation: inverse efficiency (k x T(k) / T(1)) against competing modules, both series.
    xs, ys = [], []
    for p in t:
        for k in t[p]:
            xs.append(cm[p][k])
            ys.append(k * t[p][k] / t[p][1])
    r = float(np.corrcoef(xs, ys)[0, 1])
    out.append(Claim("Fig 6", "competing modules correlate strongly with performance", "strong",
                     f"Pearson r = {r:.2f} between competing modules and k x T(k) / T(1) over both series",
                     REPRODUCED if r > 0.8 else (DIRECTION if r > 0.5 else NOT_REPRODUCED), "R: r > 0.8; D: r > 0.5"))
    return out


main = figure_main(FIG, measure, write_outputs, claims)


if __name__ == "__main__":
    main(parse_args(__doc__))
