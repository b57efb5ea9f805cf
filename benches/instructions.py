"""Instructions per live event as the host grows, against a per-event target (within 1.5x from 8
to 1,024 pCPUs under every policy), counted by valgrind instead of timed.

On a shared machine the wall time of an event at 1,024 pCPUs moves by a fifth from one measurement
to the next (docs/speed.md), with the machine's memory hierarchy; the instructions an event
executes do not move at all. This counts them: for each policy and host size, the scaling
table's scenario (``vcpusim::bench::scaling_scenario``, the quickstart's mix once per 8 pCPUs)
is run twice by the ``scaling`` example under ``valgrind --tool=cachegrind --cache-sim=no``, to
the window's start and to its end, and the difference of the two runs' instructions is divided
by the difference of their live events (popped and not stale). Building the host, starting it
and ending the run cost the same in both runs and cancel, so the figure is the event loop's
alone, over the same stretch of simulated time at every size (the same phases of the workload,
the same number of slice boundaries). The runs are deterministic; the counts are the same from
one measurement to the next within a few instructions per event (hash seeds, the environment).

    python benches/instructions.py [--policies cfs,credit,gang,hybrid,eevdf] [--pcpus 8,64,256,1024]
        [--window 100ms,500ms] [--jobs N] [--exe PATH] [--json]

Needs valgrind and cargo; it builds the example itself (``cargo build --release -p vcpusim
--example scaling``, without the install's profile: instructions, not their speed). The default
table takes about four minutes of CPU (two and a half of wall time on this 2-core machine, after
the build), the runs spread over ``--jobs`` processes (default: every core; the counts do not
depend on it). The window is the same stretch of simulated time at every size; a short one can
leave the small hosts few events (100 -> 200 ms gives gang's 8-pCPU row 403), whose mix then
differs from the large hosts', so the default is 100 -> 500 ms. ``--policies`` also takes the
seeds' mechanisms (``credit+microsliced``, ``cfs+uvf`` and the others ``vcpusim bench`` lists) and
``bare-metal``: one Linux 3.13 machine on every pCPU (its load balancer at the host's size).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
TARGET = 1.5  # per-event cost within 1.5x from 8 to 1,024 pCPUs
POLICIES = "cfs,credit,gang,hybrid,eevdf"
PCPUS = "8,64,256,1024"
WINDOW = "100ms,500ms"
DURATION = re.compile(r"^(\d+)(ns|us|ms|s)$")
UNIT_NS = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
I_REFS = re.compile(r"I\s+refs:\s+([\d,]+)")
EVENTS = re.compile(r"^events (\d+) stale (\d+)$", re.M)

# One run: (policy, pcpus, duration) -> (instructions, events, stale).
Runner = Callable[[str, int, str], tuple[int, int, int]]


def parse_valgrind(stderr: str, stdout: str) -> tuple[int, int, int]:
    """(instructions, events, stale) of one run from cachegrind's summary and the example's line."""
    i = I_REFS.search(stderr)
    e = EVENTS.search(stdout)
    if not i or not e:
        missing = "cachegrind's 'I refs' line" if not i else "the example's 'events N stale S' line"
        raise SystemExit(f"valgrind run: {missing} is missing from its output:\n{stderr[-2000:]}{stdout[-500:]}")
    return int(i.group(1).replace(",", "")), int(e.group(1)), int(e.group(2))


def require(tool: str, why: str) -> None:
    """A SystemExit naming `tool` when it is not on PATH."""
    if shutil.which(tool) is None:
        raise SystemExit(f"{tool} was not found: this benchmark {why}")


VALGRIND_WHY = "counts instructions with cachegrind (apt install valgrind, or your system's package)"


def build_example(release: bool = True) -> str:
    """Build the ``scaling`` example (in release unless told; the tests count a debug build's) and
    return its path, from cargo's own messages so that ``CARGO_TARGET_DIR`` is followed."""
    require("valgrind", VALGRIND_WHY)
    require("cargo", "builds the `scaling` example (install Rust from rustup.rs)")
    done = subprocess.run(["cargo", "build", *(["--release"] if release else []), "-p", "vcpusim", "--example", "scaling",
                           "--message-format=json-render-diagnostics"],
                          cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"cargo build --example scaling failed:\n{done.stderr[-4000:]}")
    for line in done.stdout.splitlines():
        msg = json.loads(line)
        if msg.get("reason") == "compiler-artifact" and msg.get("target", {}).get("name") == "scaling" and msg.get("executable"):
            return msg["executable"]
    raise SystemExit("cargo build --example scaling named no executable")


def valgrind_runner(exe: str) -> Runner:
    """Run the example under cachegrind (no cache simulation: instructions only)."""

    def run(policy: str, pcpus: int, duration: str) -> tuple[int, int, int]:
        done = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
                               exe, policy, str(pcpus), duration], capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"{policy} at {pcpus} pCPUs, {duration}: the run failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
        return parse_valgrind(done.stderr, done.stdout)

    return run


def measure(policies: list[str], pcpus: list[int], window: tuple[str, str], run: Runner, jobs: int = 1) -> dict:
    """Every (policy, size) run to the window's start and to its end; per row the instructions per
    live event of the window at each size, and the largest size's against the first's."""
    start, end = window
    keys = [(p, n, d) for p in policies for n in pcpus for d in (start, end)]
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        counts = dict(zip(keys, pool.map(lambda k: run(*k), keys)))
    rows = []
    for policy in policies:
        cells = []
        for n in pcpus:
            (i0, e0, s0), (i1, e1, s1) = counts[(policy, n, start)], counts[(policy, n, end)]
            live = (e1 - s1) - (e0 - s0)
            if live <= 0:
                raise SystemExit(f"{policy} at {n} pCPUs: the run to {end} pops no more live events than the run to {start} "
                                 f"({e1 - s1} against {e0 - s0}); choose a later or longer --window")
            cells.append({"pcpus": n, "instructions": i1 - i0, "live_events": live, "stale_events": s1 - s0,
                          "per_event": (i1 - i0) / live})
        ratio = cells[-1]["per_event"] / cells[0]["per_event"]
        rows.append({"policy": policy, "sizes": cells, "ratio_last_to_first": ratio, "within_target": ratio <= TARGET})
    return {"window": {"start": start, "end": end}, "pcpus": pcpus, "target": TARGET, "rows": rows}


def report_text(report: dict) -> str:
    """The report as the command prints it: a Markdown table."""
    sizes = report["pcpus"]
    w = report["window"]
    lines = [f"Instructions per live event over {w['start']} -> {w['end']} simulated "
             f"(valgrind cachegrind; the difference of the two runs), at {' / '.join(map(str, sizes))} pCPUs:",
             "",
             f"| policy | instructions per live event | {sizes[-1]} vs {sizes[0]} | live events in the window |",
             "|---|---|---|---|"]
    for row in report["rows"]:
        per = " / ".join(f"{c['per_event']:,.0f}" for c in row["sizes"])
        events = " / ".join(f"{c['live_events']:,}" for c in row["sizes"])
        mark = "" if row["within_target"] else f" (over {report['target']}x)"
        lines.append(f"| {row['policy']} | {per} | {row['ratio_last_to_first']:.2f}x{mark} | {events} |")
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    ap.add_argument("--policies", default=POLICIES, help=f"comma-separated policies or policy+mechanism (default {POLICIES})")
    ap.add_argument("--pcpus", default=PCPUS, help=f"comma-separated host sizes, multiples of 8, the first the reference (default {PCPUS})")
    ap.add_argument("--window", default=WINDOW, help=f"START,END of the simulated window (default {WINDOW})")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="valgrind runs at once (default: every core)")
    ap.add_argument("--exe", help="count this `scaling` example binary (another checkout's, to compare two builds) "
                                   "instead of building this checkout's")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if args.exe is not None and not (Path(args.exe).is_file() and os.access(args.exe, os.X_OK)):
        ap.error(f"--exe {args.exe}: not an executable file (build one with cargo build --release -p vcpusim --example scaling)")
    args.policies = [p.strip() for p in args.policies.split(",") if p.strip()]
    if not args.policies:
        ap.error("--policies: expected at least one policy")
    try:
        args.pcpus = [int(p) for p in args.pcpus.split(",") if p.strip()]
    except ValueError:
        ap.error(f"--pcpus {args.pcpus!r}: expected comma-separated pCPU counts such as {PCPUS}")
    if len(args.pcpus) < 2 or any(p <= 0 or p % 8 for p in args.pcpus):
        ap.error(f"--pcpus {','.join(map(str, args.pcpus))}: expected two or more positive multiples of 8 (the mix is scaled per 8 pCPUs)")
    window = [d.strip() for d in args.window.split(",")]
    if len(window) != 2 or not all(DURATION.match(d) for d in window):
        ap.error(f"--window {args.window!r}: expected START,END as two durations such as {WINDOW}")
    if _ns(window[0]) >= _ns(window[1]):
        ap.error(f"--window {args.window!r}: the end must come after the start")
    args.window = (window[0], window[1])
    if args.jobs < 1:
        ap.error(f"--jobs: expected at least 1, got {args.jobs}")
    return args


def _ns(duration: str) -> int:
    m = DURATION.match(duration)
    assert m, duration
    return int(m.group(1)) * UNIT_NS[m.group(2)]


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.exe is None:
        exe = build_example()
    else:
        require("valgrind", VALGRIND_WHY)
        exe = args.exe
    run = valgrind_runner(exe)
    report = measure(args.policies, args.pcpus, args.window, run, args.jobs)
    print(json.dumps(report, indent=2) if args.json else report_text(report))


if __name__ == "__main__":
    main(sys.argv[1:])
