"""Every numeric scenario key at its edges and beyond (0, 1, the largest integers, 1e300, 1e-300,
NaN, infinity, negative): the loader refuses the value with a clean error, or the run ends with a
clean error (its event cap) or with results that are possible. Nothing panics and nothing
saturates silently. Each case goes through the scenario fuzzer's classifier
(benches/fuzz_scenarios.py `classify_doc`), the same test as its mutants.

The keys come from vcpusim.catalog(), so a numeric key added later is walked too."""

import math
import sys
from pathlib import Path

import vcpusim

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benches"))
import fuzz_scenarios  # noqa: E402

#: Each section the walk covers: where its table goes, and what the scenario needs for the
#: section to be read (an overlay, a policy).
SECTIONS = {
    "host": (("host",), {}),
    "vm": (("vm0",), {}),
    "run": (("run",), {}),
    "host_ple": (("host", "ple"), {}),
    "host_costs": (("host", "costs"), {}),
    "guest": (("guest",), {}),
    "host_halt_poll": (("host", "halt_poll"), {"policy": "eevdf"}),
    "host_uvf": (("host", "uvf"), {"policy": "cfs"}),
    "host_microsliced": (("host", "microsliced"), {}),
    "host_irs": (("host", "irs"), {"overlay": "irs"}),
    "host_relaxed_co": (("host", "relaxed_co"), {"overlay": "relaxed-co"}),
    "host_delay_preempt": (("host", "delay_preempt"), {"overlay": "delay-preempt"}),
    "vm_contention": (("vm0", "contention"), {}),
    "vm_uvf": (("vm0", "uvf"), {"policy": "cfs", "uvf": True}),
}

DURATIONS = ["0ns", "1ns", "1s", "9223372036854775807ns", "18446744073709551615ns", "300y"]
INTEGERS = [0, 1, 2, 2**31, 2**63 - 1]
FLOATS = [0.0, 1e-300, 2.2e-16, 1.0, 1e300, math.nan, math.inf, -math.inf, -1.0]


def values(expected: str):
    if expected.startswith("a duration") or expected == "duration":
        return DURATIONS
    if "integer" in expected or expected.startswith("int"):
        return INTEGERS
    if expected.startswith("a number") or expected.startswith("number"):
        return FLOATS
    return []


def base(needs: dict) -> dict:
    host = {"pcpus": 4, "policy": needs.get("policy", "credit")}
    if "overlay" in needs:
        host["overlay"] = needs["overlay"]
    if needs.get("uvf"):
        host["uvf"] = {}
    return {
        "host": host,
        "vm": [{"name": "par", "vcpus": 4, "workload": "mutex"},
               {"name": "hog", "vcpus": 2, "workload": "cpu-bound"}],
        "run": {"duration": "5ms", "max_events": 200_000},
    }


def cases():
    catalog = vcpusim.catalog()
    for section, (path, needs) in SECTIONS.items():
        for key in catalog[section]:
            for value in values(key["expected"]):
                yield section, key["name"], value


def walk(cases) -> tuple[list[str], int, int]:
    """Each (label, scenario dict) through the fuzzer's classifier: the failures, and how many
    were refused and how many ran."""
    failures, counts = [], {"refused": 0, "sane": 0}
    for where, data in cases:
        kind, what = fuzz_scenarios.classify_doc(data, "edges.toml")
        if kind == "failure":
            failures.append(f"{where}: {what}")
        else:
            counts[kind] += 1
    return failures, counts["refused"], counts["sane"]


def with_key(section: str, name: str, value) -> dict:
    """The base scenario of ``section`` with its key ``name`` set to ``value``."""
    path, needs = SECTIONS[section]
    data = base(needs)
    table = data["vm"][0] if path[0] == "vm0" else data
    for part in path[1:] if path[0] == "vm0" else path:
        table = table.setdefault(part, {})
    table[name] = value
    return data


def test_every_numeric_key_at_its_edges_is_refused_cleanly_or_runs_sanely():
    # [run] max_events is the walk's own guard against runs without end.
    failures, refused, ran = walk((f"{section}.{name} = {value!r}", with_key(section, name, value))
                                  for section, name, value in cases() if (section, name) != ("run", "max_events"))
    assert not failures, "\n".join(failures[:30])
    assert refused > 50 and ran > 50, (refused, ran)


def workload_cases():
    for workload in vcpusim.catalog()["workloads"]:
        for param in workload["params"]:
            for value in values(param["expected"]):
                data = base({})
                data["vm"][0]["workload"] = workload["name"]
                data["vm"][0]["params"] = {param["name"]: value}
                yield f"{workload['name']} params.{param['name']} = {value!r}", data


def test_every_numeric_workload_parameter_at_its_edges_is_refused_cleanly_or_runs_sanely():
    failures, refused, ran = walk(workload_cases())
    assert not failures, "\n".join(failures[:30])
    assert refused > 100 and ran > 100, (refused, ran)
