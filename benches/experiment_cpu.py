"""CPU time of a representative subset of the experiment sets under several builds (a speed-up
of the experiment sets, measured honestly on a shared machine).

The subset: three cases of each figure script of experiments/asplos13 (E4) and experiments/hybrid
(E5), the first, middle and last that ``measure`` builds (the golden suite's choice,
crates/vcpusim/tests/golden/make_cases.py), at the figure's full duration and seed 1. Each case
is written as a scenario file and run by every build's ``run_file`` example (which builds the
whole report, as a sweep does, and prints vms.csv and summary.json), the builds interleaved case
by case in an order that rotates, so that load from other users falls on all of them alike. What
counts is CPU time (user + system of the child, ``getrusage(RUSAGE_CHILDREN)``), not wall time.
The outputs of every build must be byte-identical (else the comparison is refused).

    python benches/experiment_cpu.py NAME=PATH/TO/run_file NAME=... [--sets asplos13,hybrid]
        [--only fig07a,fig09] [--rounds N] [--json]

``--rounds N`` runs the whole alternation N times and reports each round's totals and the median
and range of each build's speed-up over the rounds: on a shared machine one round's ratio can
swing by 10% or more (docs/speed.md: one pair of builds read 0.89x, then 1.03x), so a claim
should rest on several rounds. ``--only`` keeps the cases whose name contains one of the
comma-separated words (``asplos13-fig07a-0`` and so on).

e.g. a build of an older commit and one of HEAD:
    (git worktree add --detach /tmp/pre 7b2213c && cd /tmp/pre && cargo build --release -p vcpusim --example run_file)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable

import tomli_w

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "crates" / "vcpusim" / "tests" / "golden"))
sys.path.insert(0, str(ROOT / "experiments"))
import make_cases  # noqa: E402


def write_cases(sets: list[str], folder: Path) -> list[tuple[str, Path]]:
    """The subset as scenario files: (set, path) per case."""
    out = []
    for set_name in sets:
        for module in make_cases.SETS[set_name]:
            cases, duration = make_cases.caught(set_name, module, quick=False)
            for i, case in enumerate(make_cases.pick(cases)):
                data = dict(case.scenario)
                data["run"] = {**data.get("run", {}), "duration": case.duration or duration, "seed": 1}
                path = folder / f"{set_name}-{module.split('_')[0]}-{i}.toml"
                path.write_text(tomli_w.dumps(data))
                out.append((set_name, path))
    return out


def child_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_one(binary: str, scenario: Path) -> tuple[float, str]:
    before = child_cpu()
    done = subprocess.run([binary, str(scenario)], capture_output=True, check=True)
    return child_cpu() - before, hashlib.sha256(done.stdout).hexdigest()


def measure(builds: dict[str, str], cases: list[tuple[str, Path]], rounds: int = 1,
            run: Callable[[str, Path], tuple[float, str]] = run_one) -> dict:
    """Every case under every build, ``rounds`` times; the builds alternate case by case, in an
    order that rotates from one case to the next and goes on rotating across rounds. ``cpu_s``
    is each build's total per set over all rounds; ``rounds`` has each round's totals and
    ``speedup`` each build's speed-up over the first build per round, with their median."""
    names = list(builds)
    sets = sorted({s for s, _ in cases})
    per_case, per_round = [], []
    k = 0
    for r in range(rounds):
        cpu = {(n, s): 0.0 for n in names for s in sets}
        for set_name, path in cases:
            order = names[k % len(names):] + names[:k % len(names)]
            k += 1
            row = {"round": r + 1, "case": path.stem, "set": set_name}
            hashes = set()
            for n in order:
                t, h = run(builds[n], path)
                cpu[(n, set_name)] += t
                row[n] = t
                hashes.add(h)
            if len(hashes) != 1:
                raise SystemExit(f"{path.stem}: the builds' outputs differ; CPU times of different results are not comparable")
            per_case.append(row)
            print(f"  {r + 1}/{rounds} {path.stem:28} " + "  ".join(f"{n} {row[n]:7.2f}s" for n in names), file=sys.stderr)
        per_round.append({n: {s: cpu[(n, s)] for s in sets} | {"all": sum(cpu[(n, s)] for s in sets)} for n in names})
    totals = {n: {s: sum(rd[n][s] for rd in per_round) for s in [*sets, "all"]} for n in names}
    first = names[0]
    speedup = {}
    for n in names:
        ratios = [rd[first]["all"] / rd[n]["all"] for rd in per_round if rd[n]["all"] > 0]
        speedup[n] = {"per_round": ratios, "median": statistics.median(ratios) if ratios else None}
    return {"builds": builds, "cases": len(cases), "rounds": per_round, "per_case": per_case, "cpu_s": totals,
            "speedup_vs": first, "speedup": speedup}


def parse_builds(items: list[str]) -> dict[str, str]:
    """NAME=PATH pairs, each PATH an executable file; a SystemExit naming the bad one otherwise."""
    builds = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise SystemExit(f"build {item!r}: expected NAME=PATH (e.g. main=target/release/examples/run_file)")
        if name in builds:
            raise SystemExit(f"build {item!r}: the name {name!r} is given twice")
        if not (Path(path).is_file() and os.access(path, os.X_OK)):
            raise SystemExit(f"build {item!r}: {path} is not an executable file (build it with "
                             "cargo build --release -p vcpusim --example run_file)")
        builds[name] = path
    return builds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("builds", nargs="+", help="NAME=PATH of a run_file example binary")
    ap.add_argument("--sets", default="asplos13,hybrid")
    ap.add_argument("--only", default="", help="keep the cases whose name contains one of these comma-separated words")
    ap.add_argument("--rounds", type=int, default=1, help="run the whole alternation this many times (at least 1)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.rounds < 1:
        ap.error(f"--rounds: expected at least 1, got {args.rounds}")
    builds = parse_builds(args.builds)
    sets = [s.strip() for s in args.sets.split(",") if s.strip()]
    unknown = [s for s in sets if s not in make_cases.SETS]
    if unknown:
        ap.error(f"unknown set {unknown[0]!r}; expected some of {', '.join(make_cases.SETS)}")
    words = [w.strip() for w in args.only.split(",") if w.strip()]
    with tempfile.TemporaryDirectory() as tmp:
        cases = write_cases(sets, Path(tmp))
        if words:
            cases = [(s, p) for s, p in cases if any(w in p.stem for w in words)]
            if not cases:
                ap.error(f"--only {args.only!r}: no case of the sets {', '.join(sets)} has one of those words in its name")
        report = measure(builds, cases, args.rounds)
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(report_text(report))


def report_text(report: dict) -> str:
    """The report as the command prints it."""
    first, rounds = report["speedup_vs"], len(report["rounds"])
    lines = [f"{report['cases']} cases, {rounds} round(s), one run per build and round, CPU seconds (user + sys), all rounds:"]
    for n, t in report["cpu_s"].items():
        ratios = "  ".join(f"{s} {report['cpu_s'][first][s] / t[s]:.2f}x" for s in t if t[s] > 0)
        lines.append(f"  {n:10} " + "  ".join(f"{s} {v:8.2f}" for s, v in t.items()) + f"   speed-up vs {first}: {ratios}")
    if rounds > 1:
        lines.append(f"speed-up vs {first}, round by round (all sets):")
        for n, sp in report["speedup"].items():
            if n != first and sp["per_round"]:
                per = " ".join(f"{x:.2f}x" for x in sp["per_round"])
                lines.append(f"  {n:10} median {sp['median']:.2f}x, range {min(sp['per_round']):.2f}-{max(sp['per_round']):.2f}x  ({per})")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
