"""Run every seed-001 (Xen on AMD CMT + NUMA) experiment script and time the whole set.

    python experiments/xen_cmt/run_all.py [--quick] [--seeds N] [--processes P]

Each figure writes ``out/<fig>/`` (CSV, PNG, claims.csv) as when run alone; this script adds
``out/claims_all.csv`` (every claim beside ours) and ``out/run_all_times.csv`` (wall seconds per
figure and in total); --quick writes under ``out/quick/`` instead. The figures share one pool of
saved runs (``out/.runs/pool/``): a point run by one figure is not run again by the next, and a
rerun resumes; delete that folder to measure the set from scratch.
"""

from __future__ import annotations

import common  # noqa: F401  (points the outputs at this set's out/)
from runkit import run_set

FIGURES = (
    "fig01_pm_vs_vm",
    "fig03_schedulers",
    "fig04_distributions",
    "fig05_07_08_09_usage",
    "fig06_competing_modules",
    "fig10_11_node_affinity_reset",
    "fig12_13_no_affinity",
    "fig14_optimal",
    "fig15_other_apps",
)


if __name__ == "__main__":
    run_set("seed-001 experiment set", FIGURES, __doc__)
