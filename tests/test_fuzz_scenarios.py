"""The fast subset of the scenario fuzzer (benches/fuzz_scenarios.py): 300 mutants of the
repository's scenarios, each refused cleanly by the loader or run to possible results."""

import sys
from pathlib import Path
from types import SimpleNamespace

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benches"))
import fuzz_scenarios  # noqa: E402


def test_the_first_300_mutants_are_refused_cleanly_or_run_sanely():
    docs = fuzz_scenarios.load_sources()
    outcomes = [fuzz_scenarios.classify(seed, docs) for seed in range(300)]
    failures = [(seed, what) for seed, (kind, what) in enumerate(outcomes) if kind == "failure"]
    assert not failures, failures[:10]
    kinds = {kind for kind, _ in outcomes}
    assert kinds == {"refused", "sane"}, kinds


def test_a_mutant_is_its_seed_and_impossible_results_are_told():
    docs = fuzz_scenarios.load_sources()
    assert fuzz_scenarios.mutant(7, docs) == fuzz_scenarios.mutant(7, docs)
    assert fuzz_scenarios.mutant(7, docs) != fuzz_scenarios.mutant(8, docs)
    scenario = SimpleNamespace(info={"pcpus": 2}, duration_ns=10_000_000)
    ok = SimpleNamespace(vms=pd.DataFrame({"vm": ["a"], "cpu_time_ms": [20.0], "cpu_share": [1.0]}))
    too_much = SimpleNamespace(vms=pd.DataFrame({"vm": ["a"], "cpu_time_ms": [20.5], "cpu_share": [1.0]}))
    assert fuzz_scenarios.sane(ok, scenario) is None
    assert "cpu_time_ms 20.5" in fuzz_scenarios.sane(too_much, scenario)
