"""The cost of a policy written in Python: the quickstart under the Python round robin of
examples/policies/ against the built-in credit and cfs, timed in one session and reported as
ratios (machines differ twofold from day to day; ratios measured side by side do not).

    python benches/python_policy.py [--repeats 5] [--scenario scenarios/quickstart.toml] [--json]

For each policy: the run's events, the median wall time of ``--repeats`` runs, and its ratio to
credit's. For the Python policy also the callbacks it answered (counted in one extra run by a
counting subclass, not in the timed ones) and callbacks per second of the timed runs. The
target (docs/speed.md): the Python round robin runs the quickstart within 10x credit's time.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import vcpusim

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "examples" / "policies"))
from round_robin import RoundRobin  # noqa: E402

CALLBACKS = ("insert_vcpu", "wake", "sleep", "yield_vcpu", "do_schedule", "adjust", "on_timer", "ipi_sent")


class CountingRoundRobin(RoundRobin):
    """The round robin, counting every callback the engine makes (defines them all, so the
    engine calls each; the timed runs use the plain class). Each insert counts twice: the round
    robin's ``insert_vcpu`` calls its ``wake``."""

    calls = 0


def _counting(name: str):
    def callback(self, *args):
        CountingRoundRobin.calls += 1
        base = getattr(RoundRobin, name, None)
        return base(self, *args) if base is not None and name in RoundRobin.__dict__ else None

    return callback


for _name in CALLBACKS:
    setattr(CountingRoundRobin, _name, _counting(_name))


def timed(scenario: vcpusim.Scenario, policy, repeats: int) -> tuple[float, int]:
    """Median wall seconds of `repeats` runs, and the run's events."""
    times, events = [], 0
    for _ in range(repeats):
        start = time.perf_counter()
        result = vcpusim.run(scenario, policy=policy)
        times.append(time.perf_counter() - start)
        events = result.summary["events"]
    return statistics.median(times), events


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--scenario", default=str(REPO / "scenarios" / "quickstart.toml"))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    scenario = vcpusim.load(args.scenario)
    rows = []
    for label, policy in (("credit", "credit"), ("cfs", "cfs"), ("python round robin", RoundRobin)):
        seconds, events = timed(scenario, policy, args.repeats)
        rows.append({"policy": label, "events": events, "seconds": seconds})
    CountingRoundRobin.calls = 0
    vcpusim.run(scenario, policy=CountingRoundRobin)
    credit = rows[0]["seconds"]
    for row in rows:
        row["ratio_to_credit"] = row["seconds"] / credit
    python = rows[-1]
    python["callbacks"] = CountingRoundRobin.calls
    python["callbacks_per_second"] = CountingRoundRobin.calls / python["seconds"]
    report = {"machine": f"{platform.node()} ({platform.machine()}, {platform.python_implementation()} "
                         f"{platform.python_version()})", "scenario": args.scenario, "repeats": args.repeats,
              "rows": rows}
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"{report['machine']}; {args.scenario}; median of {args.repeats} runs")
    print(f"{'policy':<20} {'events':>10} {'seconds':>9} {'x credit':>9}")
    for row in rows:
        print(f"{row['policy']:<20} {row['events']:>10} {row['seconds']:>9.4f} {row['ratio_to_credit']:>9.2f}")
    print(f"python round robin: {python['callbacks']} callbacks, {python['callbacks_per_second']:,.0f} per second")


if __name__ == "__main__":
    main()
