"""Run every seed-002 (flexible micro-sliced cores) experiment script and time the whole set.

    python experiments/microsliced/run_all.py [--quick] [--seeds N] [--processes P]

Each script writes ``out/<fig>/`` (CSV, PNG, claims.csv) as when run alone; this script adds
``out/claims_all.csv`` (every claim beside ours) and ``out/run_all_times.csv`` (wall seconds per
script and in total); --quick writes under ``out/quick/`` instead. The scripts share one pool of
saved runs (``out/.runs/pool/``): a point run by one script is not run again by the next, and a
rerun resumes; delete that folder to measure the set from scratch.
"""

from __future__ import annotations

import common  # noqa: F401  (points the outputs at this set's out/)
from runkit import run_set

FIGURES = (
    "table2_yields",
    "table4_latency",
    "fig4_static",
    "fig5_throughput",
    "fig6_dynamic",
    "fig7_yields",
    "fig8_overhead",
    "fig9_iperf",
)


if __name__ == "__main__":
    run_set("seed-002 experiment set", FIGURES, __doc__)
