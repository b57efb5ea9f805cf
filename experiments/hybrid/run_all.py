"""Run every seed-004 (IEEE TC, hybrid scheduler) experiment script and time the whole set.

    python experiments/hybrid/run_all.py [--quick] [--seeds N] [--processes P]

Each figure writes ``out/figNN/`` (CSV, PNG, claims.csv) as when run alone; this script adds
``out/claims_all.csv`` (every claim beside ours) and ``out/run_all_times.csv`` (wall seconds per
figure and in total); --quick writes under ``out/quick/`` instead. Finished runs are kept under
``out/.runs/``, so a rerun resumes; delete that folder to measure the set from scratch.
"""

from __future__ import annotations

import common  # noqa: F401  (points the outputs at this set's out/)
from runkit import run_set

FIGURES = (
    "fig05_weight_sweep",
    "fig06_npb_slowdown",
    "fig07_spec_rate",
    "fig08_cpu_share",
    "fig09_pcps",
    "fig10_all_same_type",
    "fig11_mixes",
)


if __name__ == "__main__":
    run_set("seed-004 experiment set", FIGURES, __doc__)
