"""Run every seed-003 (IRS) experiment script and time the whole set.

    python experiments/irs/run_all.py [--quick] [--seeds N] [--processes P]

Each slide writes ``out/<slide>/`` (CSV, PNG, claims.csv) as when run alone; this script adds
``out/claims_all.csv`` (every claim beside ours) and ``out/run_all_times.csv`` (wall seconds per
script and in total); --quick writes under ``out/quick/`` instead. The scripts share one pool of
saved runs (``out/.runs/pool/``): a point run by one script is not run again by the next, and a
rerun resumes; delete that folder to measure the set from scratch.
"""

from __future__ import annotations

import common  # noqa: F401  (points the outputs at this set's out/)
from runkit import run_set

FIGURES = (
    "slide05_slowdown",
    "slide12_parsec",
    "slide13_npb",
    "slide14_server",
    "slide15_weighted",
    "slide16_interference",
    "slide18_stacking",
)


if __name__ == "__main__":
    run_set("seed-003 (IRS) experiment set", FIGURES, __doc__)
