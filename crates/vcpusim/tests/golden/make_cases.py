"""Write the golden suite's reduced figure cases (crates/vcpusim/tests/golden/cases/fig-*.toml).

Each figure script of experiments/asplos13 and experiments/hybrid builds its scenarios in
``measure(settings)`` and hands them to ``runkit.run_cases``. This script runs every ``measure``
with ``run_cases`` replaced by a catcher that keeps the cases and stops, picks three of each
figure's cases (first, middle, last), sets a short duration and seed 1, and writes each as TOML.
The written files are what the golden test runs, so the test needs no Python; run this again
only when a figure script's scenarios change (then bless the hashes: see README.md here).

    python crates/vcpusim/tests/golden/make_cases.py
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import tomli_w

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[3]
CASES = HERE / "cases"

#: Simulated time of a reduced case: long enough for every mechanism of the figure to act (PLE,
#: credit accounting every 30 ms, hybrid allocation periods), short enough for a debug build.
DURATION = "150ms"
PER_FIGURE = 3

SETS = {
    "asplos13": ["fig01_ipi_rates", "fig02_kernel_amplification", "fig07a_resched_dp", "fig07b_urgent_tslice",
                 "fig07c_urgent_allowance", "fig08_mix", "fig09_weighted_speedup", "fig10_resched_co",
                 "fig11_ple", "fig12_delayed_resched"],
    "hybrid": ["fig05_weight_sweep", "fig06_npb_slowdown", "fig07_spec_rate", "fig08_cpu_share", "fig09_pcps",
               "fig10_all_same_type", "fig11_mixes"],
}


class Caught(Exception):
    def __init__(self, cases, duration):
        self.cases = cases
        self.duration = duration


def catch(fig, cases, seeds, duration, *args, **kwargs):
    raise Caught(list(cases), duration)


def cases_of(set_name: str, module: str) -> list:
    return caught(set_name, module)[0]


def caught(set_name: str, module: str, quick: bool = True) -> tuple[list, str]:
    """The cases a figure's ``measure`` builds and the duration it runs them for (its quick
    settings, or the full ones: benches/experiment_cpu.py times those)."""
    folder = ROOT / "experiments" / set_name
    # Each set has its own common.py: drop the other set's modules before importing.
    for name in ["common", *SETS["asplos13"], *SETS["hybrid"]]:
        sys.modules.pop(name, None)
    sys.path.insert(0, str(folder))
    try:
        mod = importlib.import_module(module)
        common = importlib.import_module("common")
        for m in (mod, common, sys.modules["runkit"]):
            m.run_cases = catch
        try:
            mod.measure(common.Settings(quick=quick, seeds=1, processes=1))
        except Caught as c:
            return c.cases, c.duration
        raise RuntimeError(f"{set_name}/{module}: measure() never called run_cases")
    finally:
        sys.path.remove(str(folder))


def pick(cases: list) -> list:
    n = len(cases)
    idx = sorted({0, n // 2, n - 1})[:PER_FIGURE]
    return [cases[i] for i in idx]


def main() -> None:
    for old in CASES.glob("fig-*.toml"):
        old.unlink()
    written = 0
    for set_name, modules in SETS.items():
        for module in modules:
            for i, case in enumerate(pick(cases_of(set_name, module))):
                data = dict(case.scenario)
                data["run"] = {**data.get("run", {}), "duration": DURATION, "seed": 1}
                labels = ", ".join(f"{k}={v}" for k, v in case.labels.items())
                name = f"fig-{set_name}-{module.split('_')[0]}-{i}.toml"
                header = f"# Golden case: experiments/{set_name}/{module}.py [{labels}], reduced to {DURATION}.\n"
                header += "# Written by make_cases.py; do not edit by hand.\n\n"
                (CASES / name).write_text(header + tomli_w.dumps(data))
                written += 1
    print(f"wrote {written} cases to {CASES}")


if __name__ == "__main__":
    main()
