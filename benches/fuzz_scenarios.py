"""Hostile scenarios, generated: mutants of the example scenarios, each loaded and (if the loader
takes it) run for a few milliseconds under an event cap, classified as

- ``refused``: the loader's clean error (``vcpusim.ScenarioError`` naming the file);
- ``sane``: a run that ended, or stopped cleanly (its event cap, a deadlock it reports), with
  possible results (``vcpusim.runs.implausible``: CPU times within the host's pCPU time, shares
  in [0, 1]);
- ``failure``: anything else (another exception, a loader error that names no file, impossible
  results).

Each mutant comes from one seed (``random.Random(seed)``), so a failure is reproduced by its seed.
The mutations: drop a key, set a key to a value of another type or to an edge value (0, -1,
2^63, 1e300, NaN, "", a long string, a list, a table), rename a key, duplicate a [[vm]] entry,
and cross a value from one scenario into another.

    python benches/fuzz_scenarios.py [--count N] [--first SEED] [--json]

tests/test_fuzz_scenarios.py runs a fast subset (the first 300 seeds); the full run is this
script with a large ``--count`` (100,000 takes about 75 s on the 2-core machine).
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import random
import sys
import tomllib
from pathlib import Path

import vcpusim
from vcpusim.runs import implausible

REPO = Path(__file__).resolve().parents[1]
SOURCES = sorted((REPO / "scenarios").rglob("*.toml"))

EDGE_VALUES = [0, -1, 1, 2**31, 2**63 - 1, 1e300, 1e-300, math.nan, math.inf, -math.inf, "", "x" * 300,
               "0-99999", "1ns", "300y", [], [1, 2], {}, {"a": 1}, True]


def _paths(node, prefix=()):
    """Every (path, value) of a TOML document's tables and arrays of tables."""
    if isinstance(node, dict):
        for k, v in node.items():
            yield prefix + (k,), v
            yield from _paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            if isinstance(v, dict):
                yield from _paths(v, prefix + (i,))


def _parent(doc, path):
    node = doc
    for p in path[:-1]:
        node = node[p]
    return node


def mutant(seed: int, docs: list[dict]) -> dict:
    """The scenario of ``seed``: one source document with one to three mutations."""
    rng = random.Random(seed)
    doc = copy.deepcopy(rng.choice(docs))
    # Short runs under a cap, whatever the mutation does to [run] (unless it removes them).
    run = doc.setdefault("run", {})
    if isinstance(run, dict):
        run["duration"] = "5ms"
        run["max_events"] = 200_000
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        paths = [p for p, _ in _paths(doc)]
        if not paths:
            break
        path = rng.choice(paths)
        parent = _parent(doc, path)
        key = path[-1]
        kind = rng.randrange(5)
        if kind == 0 and isinstance(parent, dict):
            del parent[key]
        elif kind == 1:
            # Mostly an edge of the value's own type (a run gets past the loader), else anything.
            old = parent[key]
            same = [v for v in EDGE_VALUES if type(v) is type(old)] if rng.random() < 0.7 else []
            parent[key] = copy.deepcopy(rng.choice(same or EDGE_VALUES))
        elif kind == 2 and isinstance(parent, dict) and isinstance(key, str):
            parent[key + rng.choice(["s", "_", "x"])] = parent.pop(key)
        elif kind == 3 and isinstance(doc.get("vm"), list) and doc["vm"]:
            doc["vm"].append(copy.deepcopy(rng.choice(doc["vm"])))
        else:
            other = rng.choice(docs)
            donor = [v for p, v in _paths(other) if not isinstance(v, (dict, list))]
            if donor:
                parent[key] = copy.deepcopy(rng.choice(donor))
    return doc


def classify_doc(doc: dict, source: str) -> tuple[str, str]:
    """("refused" | "sane" | "failure", what happened) for scenario ``doc`` named ``source``:
    loaded, and if the loader takes it, run under its event cap and held to
    ``vcpusim.runs.implausible`` (the sweep cache's test of possible results)."""
    try:
        sc = vcpusim.Scenario.from_dict(doc, source)
    except vcpusim.ScenarioError as e:
        return ("refused", "") if source in str(e) else ("failure", f"an error naming no file: {e}")
    except (TypeError, ValueError) as e:
        # from_dict's own refusals of what TOML cannot hold (a NaN key, a mixed array).
        return ("refused", "") if "from_dict" in str(e) or source in str(e) else ("failure", f"{type(e).__name__}: {e}")
    except Exception as e:
        return "failure", f"{type(e).__name__} from the loader: {e}"
    run = doc.get("run") if isinstance(doc.get("run"), dict) else {}
    uncapped = "max_events" not in run
    if (uncapped and sc.duration_ns > 10**9) or sc.info["pcpus"] > 4096 or sc.info["vcpus"] > 16384:
        return "refused", ""  # too large to run in a fast check: loading it was the test
    try:
        result = vcpusim.run(sc)
    except (vcpusim.LimitError, vcpusim.DeadlockError):
        return "sane", ""  # a clean stop: the event cap, or a program that cannot go on
    except vcpusim.ScenarioError as e:
        return ("refused", "") if source in str(e) else ("failure", f"a run error naming no file: {e}")
    except Exception as e:
        return "failure", f"{type(e).__name__} from the run: {e}"
    problem = implausible(result, sc)
    return ("failure", problem) if problem else ("sane", "")


def classify(seed: int, docs: list[dict]) -> tuple[str, str]:
    """``classify_doc`` of mutant ``seed``."""
    return classify_doc(mutant(seed, docs), f"fuzz-{seed}.toml")


def load_sources() -> list[dict]:
    return [tomllib.loads(p.read_text(encoding="utf-8")) for p in SOURCES]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--first", type=int, default=0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    docs = load_sources()
    counts = {"refused": 0, "sane": 0, "failure": 0}
    failures = []
    for seed in range(args.first, args.first + args.count):
        kind, what = classify(seed, docs)
        counts[kind] += 1
        if kind == "failure":
            failures.append({"seed": seed, "what": what})
    if args.json:
        print(json.dumps({"counts": counts, "failures": failures}, indent=1))
    else:
        print(f"{args.count} mutants of {len(docs)} scenarios: {counts['refused']} refused, {counts['sane']} ran sanely, "
              f"{counts['failure']} failures")
        for f in failures[:50]:
            print(f"  seed {f['seed']}: {f['what']}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
