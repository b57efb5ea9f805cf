"""Run every seed-004 (IEEE TC, hybrid scheduler) experiment script and time the whole set.

    python experiments/hybrid/run_all.py [--quick] [--seeds N] [--processes P]

Each figure writes ``out/figNN/`` (CSV, PNG, claims.csv) as when run alone; this script adds
``out/claims_all.csv`` (every claim beside ours) and ``out/run_all_times.csv`` (wall seconds per
figure and in total); --quick writes under ``out/quick/`` instead. Finished runs are kept under
``out/.runs/``, so a rerun resumes; delete that folder to measure the set from scratch.
"""

from __future__ import annotations

import importlib
import time

import pandas as pd
from rich.table import Table

import common
from common import DIRECTION, NOT_REPRODUCED, REPRODUCED, console, parse_args

FIGURES = (
    "fig05_weight_sweep",
    "fig06_npb_slowdown",
    "fig07_spec_rate",
    "fig08_cpu_share",
    "fig09_pcps",
    "fig10_all_same_type",
    "fig11_mixes",
)


def main() -> None:
    settings = parse_args(__doc__)
    times, claims = [], []
    start = time.perf_counter()
    for name in FIGURES:
        console.rule(name)
        t0 = time.perf_counter()
        figure_claims = importlib.import_module(name).main(settings)
        seconds = time.perf_counter() - t0
        verdicts = [c.verdict for c in figure_claims]
        times.append({"figure": name, "seconds": round(seconds, 1), "claims": len(verdicts),
                      REPRODUCED: verdicts.count(REPRODUCED), DIRECTION: verdicts.count(DIRECTION),
                      NOT_REPRODUCED: verdicts.count(NOT_REPRODUCED)})
        claims += [{"script": name, **c.__dict__} for c in figure_claims]
    total = time.perf_counter() - start
    times.append({"figure": "total", "seconds": round(total, 1), "claims": len(claims),
                  **{v: sum(t[v] for t in times) for v in (REPRODUCED, DIRECTION, NOT_REPRODUCED)}})
    out = common.OUT.root  # out/, or out/quick/ with --quick
    out.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(claims).to_csv(out / "claims_all.csv", index=False)
    pd.DataFrame(times).to_csv(out / "run_all_times.csv", index=False)

    table = Table(title=f"seed-004 experiment set ({'quick' if settings.quick else 'full'}), "
                        f"{settings.processes} processes")
    for col in times[0]:
        table.add_column(col, justify="left" if col == "figure" else "right")
    for t in times:
        table.add_row(*(str(v) for v in t.values()))
    console.print(table)


if __name__ == "__main__":
    main()
