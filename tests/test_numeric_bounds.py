"""Every numeric scenario key at its edges and beyond (0, 1, the largest integers, 1e300, 1e-300,
NaN, infinity, negative): the loader refuses the value with a clean error, or the run ends with a
clean error (its event cap) or with results that are possible (finite times, no VM given more
CPU time than the host had). Nothing panics and nothing saturates silently.

The keys come from vcpusim.catalog(), so a numeric key added later is walked too."""

import math

import pytest

import vcpusim

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


def sane(result, scenario) -> str | None:
    capacity_ms = scenario.info["pcpus"] * scenario.duration_ns / 1e6
    for row in result.vms.itertuples():
        if not (math.isfinite(row.cpu_time_ms) and 0 <= row.cpu_time_ms <= capacity_ms * 1.000001 + 0.001):
            return f"VM {row.vm}: cpu_time_ms {row.cpu_time_ms} with {capacity_ms} ms of pCPU time"
        if not (math.isfinite(row.cpu_share) and 0 <= row.cpu_share <= 1.000001):
            return f"VM {row.vm}: cpu_share {row.cpu_share}"
    return None


def test_every_numeric_key_at_its_edges_is_refused_cleanly_or_runs_sanely():
    failures, refused, ran = [], 0, 0
    for section, name, value in cases():
        path, needs = SECTIONS[section]
        data = base(needs)
        table = data["vm"][0] if path[0] == "vm0" else data
        for part in path[1:] if path[0] == "vm0" else path:
            table = table.setdefault(part, {})
        if section == "run" and name == "max_events":
            continue  # the walk's own guard against runs without end
        table[name] = value
        where = f"{section}.{name} = {value!r}"
        try:
            sc = vcpusim.Scenario.from_dict(data, "edges.toml")
        except vcpusim.ScenarioError as e:
            if "edges.toml" not in str(e):
                failures.append(f"{where}: the error names no file: {e}")
            refused += 1
            continue
        except Exception as e:  # anything else escaped the loader
            failures.append(f"{where}: {type(e).__name__} from the loader: {e}")
            continue
        try:
            result = vcpusim.run(sc)
        except (vcpusim.LimitError, vcpusim.DeadlockError):
            ran += 1  # a clean stop: the event cap, or a program that cannot go on
            continue
        except Exception as e:
            failures.append(f"{where}: {type(e).__name__} from the run: {e}")
            continue
        ran += 1
        problem = sane(result, sc)
        if problem:
            failures.append(f"{where}: {problem}")
    assert not failures, "\n".join(failures[:30])
    assert refused > 50 and ran > 50, (refused, ran)


def test_every_numeric_workload_parameter_at_its_edges_is_refused_cleanly_or_runs_sanely():
    failures, refused, ran = [], 0, 0
    for workload in vcpusim.catalog()["workloads"]:
        for param in workload["params"]:
            for value in values(param["expected"]):
                data = base({})
                data["vm"][0]["workload"] = workload["name"]
                data["vm"][0]["params"] = {param["name"]: value}
                where = f"{workload['name']} params.{param['name']} = {value!r}"
                try:
                    sc = vcpusim.Scenario.from_dict(data, "edges.toml")
                except vcpusim.ScenarioError as e:
                    if "edges.toml" not in str(e):
                        failures.append(f"{where}: the error names no file: {e}")
                    refused += 1
                    continue
                except Exception as e:
                    failures.append(f"{where}: {type(e).__name__} from the loader: {e}")
                    continue
                try:
                    result = vcpusim.run(sc)
                except (vcpusim.LimitError, vcpusim.DeadlockError):
                    ran += 1
                    continue
                except Exception as e:
                    failures.append(f"{where}: {type(e).__name__} from the run: {e}")
                    continue
                ran += 1
                problem = sane(result, sc)
                if problem:
                    failures.append(f"{where}: {problem}")
    assert not failures, "\n".join(failures[:30])
    assert refused > 100 and ran > 100, (refused, ran)
