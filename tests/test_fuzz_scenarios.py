"""The fast subset of the scenario fuzzer (benches/fuzz_scenarios.py): 300 mutants of the
repository's scenarios, each refused cleanly by the loader or run to possible results."""

import sys
from pathlib import Path
from types import SimpleNamespace

import pandas as pd

from vcpusim.runs import implausible

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benches"))
import fuzz_scenarios  # noqa: E402


def test_the_first_300_mutants_are_refused_cleanly_or_run_sanely():
    docs = fuzz_scenarios.load_sources()
    outcomes = [fuzz_scenarios.classify(seed, docs) for seed in range(300)]
    failures = [(seed, what) for seed, (kind, what) in enumerate(outcomes) if kind == "failure"]
    assert not failures, failures[:10]
    kinds = {kind for kind, _ in outcomes}
    assert kinds == {"refused", "sane"}, kinds


def test_a_mutant_is_its_seed():
    docs = fuzz_scenarios.load_sources()
    assert fuzz_scenarios.mutant(7, docs) == fuzz_scenarios.mutant(7, docs)
    assert fuzz_scenarios.mutant(7, docs) != fuzz_scenarios.mutant(8, docs)


def test_impossible_results_are_told():
    scenario = SimpleNamespace(info={"pcpus": 2}, duration_ns=10_000_000)

    def result(cpu_time_ms, cpu_share):
        return SimpleNamespace(vms=pd.DataFrame({"vm": ["a"], "cpu_time_ms": [cpu_time_ms], "cpu_share": [cpu_share]}))

    assert implausible(result(20.0, 1.0), scenario) is None
    assert "cpu_time_ms 20.5" in implausible(result(20.5, 1.0), scenario)
    assert "cpu_time_ms nan" in implausible(result(float("nan"), 1.0), scenario)
    assert "cpu_share 1.5" in implausible(result(10.0, 1.5), scenario)
