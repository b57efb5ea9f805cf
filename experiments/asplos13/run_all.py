"""Run every seed-000 (ASPLOS'13) experiment script and time the whole set.

    python experiments/asplos13/run_all.py [--quick] [--seeds N] [--processes P]

Each figure writes ``out/figNN/`` (CSV, PNG, claims.csv) as when run alone; this script adds
``out/claims_all.csv`` (every claim beside ours) and ``out/run_all_times.csv`` (wall seconds per
figure and in total); --quick writes under ``out/quick/`` instead. Finished runs are kept under ``out/.runs/``, so a rerun resumes; delete
that folder to measure the set from scratch.
"""

from __future__ import annotations

import common  # noqa: F401  (points the outputs at this set's out/)
from runkit import run_set

FIGURES = (
    "fig01_ipi_rates",
    "fig02_kernel_amplification",
    "fig07a_resched_dp",
    "fig07b_urgent_tslice",
    "fig07c_urgent_allowance",
    "fig08_mix",
    "fig09_weighted_speedup",
    "fig10_resched_co",
    "fig11_ple",
    "fig12_delayed_resched",
)


if __name__ == "__main__":
    run_set("seed-000 experiment set", FIGURES, __doc__)
