"""CPU time of a representative subset of the experiment sets under several builds (issue 15's
"experiment sets 2x faster" target, measured honestly on a shared machine).

The subset: three cases of each figure script of experiments/asplos13 (E4) and experiments/hybrid
(E5), the first, middle and last that ``measure`` builds (the golden suite's choice,
crates/vcpusim/tests/golden/make_cases.py), at the figure's full duration and seed 1. Each case
is written as a scenario file and run by every build's ``run_file`` example (which builds the
whole report, as a sweep does, and prints vms.csv and summary.json), the builds interleaved case
by case in an order that rotates, so that load from other users falls on all of them alike. What
counts is CPU time (user + system of the child, ``getrusage(RUSAGE_CHILDREN)``), not wall time.
The outputs of every build must be byte-identical (else the comparison is refused).

    python benches/experiment_cpu.py NAME=PATH/TO/run_file NAME=... [--sets asplos13,hybrid] [--json]

e.g. a build of the commit before issue 15 and one of HEAD:
    (git worktree add --detach /tmp/pre 7b2213c && cd /tmp/pre && cargo build --release -p vcpusim --example run_file)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

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


def measure(builds: dict[str, str], cases: list[tuple[str, Path]]) -> dict:
    names = list(builds)
    cpu = {(n, s): 0.0 for n in names for s, _ in cases}
    per_case = []
    for k, (set_name, path) in enumerate(cases):
        order = names[k % len(names):] + names[:k % len(names)]
        row = {"case": path.stem, "set": set_name}
        hashes = set()
        for n in order:
            t, h = run_one(builds[n], path)
            cpu[(n, set_name)] += t
            row[n] = t
            hashes.add(h)
        if len(hashes) != 1:
            raise SystemExit(f"{path.stem}: the builds' outputs differ; CPU times of different results are not comparable")
        per_case.append(row)
        print(f"  {path.stem:28} " + "  ".join(f"{n} {row[n]:7.2f}s" for n in names), file=sys.stderr)
    sets = sorted({s for s, _ in cases})
    totals = {n: {s: cpu[(n, s)] for s in sets} | {"all": sum(cpu[(n, s)] for s in sets)} for n in names}
    return {"builds": builds, "cases": len(cases), "per_case": per_case, "cpu_s": totals}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("builds", nargs="+", help="NAME=PATH of a run_file example binary")
    ap.add_argument("--sets", default="asplos13,hybrid")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    builds = dict(b.split("=", 1) for b in args.builds)
    sets = [s.strip() for s in args.sets.split(",") if s.strip()]
    unknown = [s for s in sets if s not in make_cases.SETS]
    if unknown:
        ap.error(f"unknown set {unknown[0]!r}; expected some of {', '.join(make_cases.SETS)}")
    with tempfile.TemporaryDirectory() as tmp:
        cases = write_cases(sets, Path(tmp))
        report = measure(builds, cases)
    if args.json:
        print(json.dumps(report, indent=2))
        return
    first = next(iter(builds))
    print(f"{report['cases']} cases, one run per build, CPU seconds (user + sys):")
    for n, t in report["cpu_s"].items():
        ratios = "  ".join(f"{s} {report['cpu_s'][first][s] / t[s]:.2f}x" for s in t if t[s] > 0)
        print(f"  {n:10} " + "  ".join(f"{s} {v:8.2f}" for s, v in t.items()) + f"   speed-up vs {first}: {ratios}")


if __name__ == "__main__":
    main()
