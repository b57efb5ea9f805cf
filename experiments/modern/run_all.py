"""Run every modern-KVM experiment table (EXPERIMENTS.md E9) and time the set.

    python experiments/modern/run_all.py [--quick] [--seeds N] [--processes P]

Each table writes ``out/<table>/`` (CSV, PNG, claims.csv) as when run alone; this script adds
``out/claims_all.csv`` and ``out/run_all_times.csv``; --quick writes under ``out/quick/``. The
tables share one pool of saved runs (``out/.runs/pool/``): the baseline runs are computed once,
and a rerun resumes.
"""

from __future__ import annotations

import common  # noqa: F401  (points the outputs at this set's out/)
from runkit import run_set

FIGURES = (
    "table1_pv_tlb_flush",
    "table2_pv_sched_yield",
    "table3_pv_spinlock",
    "table4_vcpu_is_preempted",
    "table5_pv_ipi",
    "table6_kvm_spin",
    "table7_halt_poll",
    "table8_seed_schemes",
)


if __name__ == "__main__":
    run_set("modern KVM / Linux 6.x experiment set", FIGURES, __doc__)
