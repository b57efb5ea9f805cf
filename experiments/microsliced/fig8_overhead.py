"""Figure 8: workloads that do not exercise OS services, with the dynamic scheme vs the baseline,
each beside swaptions.

Seed 002 section 6.2: "two multi-threaded applications from PARSEC and several single threaded
applications from SPEC CPU2006 ... On average, the performance overhead is around 2-3%". The seed
names neither the two PARSEC programs nor the SPEC ones: assumed here PARSEC blackscholes and
swaptions (user-level, CPU-bound) and the six SPEC CPU2006 copies the models have (bzip2, mcf,
hmmer, sjeng, libquantum, h264ref: 12 single-thread copies in the 12-vCPU VM, as SPECrate runs).
Overhead = baseline throughput / dynamic throughput - 1, per seed.

    python experiments/microsliced/fig8_overhead.py [--quick]
"""

from __future__ import annotations

import pandas as pd

from common import (
    DIRECTION, NOT_REPRODUCED, REPRODUCED, SHORT, Claim, Settings, aggregate, app, bar_plot, figure_main,
    normalized, out_dir, parse_args, pct, run_points, write_csv,
)

FIG = "fig8"
UNAFFECTED = ("parsec.blackscholes", "parsec.swaptions", "spec2006.bzip2", "spec2006.mcf", "spec2006.hmmer",
              "spec2006.sjeng", "spec2006.libquantum", "spec2006.h264ref")


def measure(settings: Settings) -> pd.DataFrame:
    return run_points(UNAFFECTED, ["base", "dyn"], settings)


def write_outputs(df: pd.DataFrame) -> pd.DataFrame:
    a = app(normalized(df))
    a = a[a["config"] == "dyn"].copy()
    a["bench"] = a["workload"].map(lambda w: SHORT.get(w, w.split(".", 1)[1]))
    a["overhead"] = 1 / a["speedup"] - 1
    write_csv(a[["bench", "seed", "speedup", "overhead"]], FIG, "runs")
    agg = aggregate(a, ["bench"], ["overhead"])
    write_csv(agg, FIG, "fig8_overhead")
    bar_plot(agg, "bench", None, "overhead", "execution time, dynamic / baseline - 1",
             "Figure 8: unaffected workloads beside swaptions", out_dir(FIG) / "fig8.png", hline=0.0)
    return agg


def claims(agg: pd.DataFrame) -> list[Claim]:
    mean = float(agg["overhead_mean"].mean())
    worst = agg.loc[agg["overhead_mean"].idxmax()]
    return [Claim("Fig 8", "average overhead of the dynamic scheme on unaffected workloads", "2-3%",
                  f"{pct(mean, 1)} (worst {worst['bench']} {pct(worst['overhead_mean'], 1)})",
                  REPRODUCED if 0.0 <= mean <= 0.04 else (DIRECTION if -0.02 <= mean <= 0.08 else NOT_REPRODUCED),
                  "R: 0 to 4%; D: -2 to 8%")]


main = figure_main(FIG, measure, write_outputs, claims)


if __name__ == "__main__":
    main(parse_args(__doc__))
