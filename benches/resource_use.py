"""Resource use against the size of the work: each input that once cost out of proportion to
what it asks, timed with the installed vcpusim (wall time and peak memory of a fresh process),
beside the figure the fuzzing run measured before the fix (on its own machine: compare the
ratios within a row, not the seconds across machines).

- cfs's idle paths: the quickstart mix on 1,024 / 4,096 / 16,384 flat pCPUs for 100 ms, and on
  16,384 pCPUs in 256 sockets, under cfs and eevdf: cfs should stay within 2x of eevdf;
- setup: 262,144 idle vCPUs (4,096 VMs of 64) on 16 pCPUs for 1 ms under credit, hybrid and cfs;
- metrics.csv: 64 one-vCPU VMs on 4,096 pCPUs for 200 ms (rows per VM bounded by where it ran);
- validate: a scenario with 100,000 `kernel_locks` names.

    python benches/resource_use.py [--only NAME] [--json]

Each case runs in a child process (`python -c`) that reports its own peak memory
(`resource.getrusage(RUSAGE_SELF)`, the interpreter and vcpusim's import included).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
QUICKSTART = (ROOT / "scenarios" / "quickstart.toml").read_text()


def quickstart(policy: str, pcpus: int, sockets: int = 1) -> str:
    text = QUICKSTART.replace("pcpus = 8", f"pcpus = {pcpus}\nsockets = {sockets}\nnuma_nodes = {sockets}", 1)
    text = text.replace('policy = "cfs"', f'policy = "{policy}"', 1)
    return text.replace('duration = "60s"', 'duration = "100ms"', 1)


def idle_vms(policy: str) -> str:
    return f"""[host]
pcpus = 16
policy = "{policy}"

[[vm]]
name = "idle"
count = 4096
vcpus = 64
workload = "idle"

[run]
duration = "1ms"
"""


def wide_metrics() -> str:
    return """[host]
pcpus = 4096
policy = "credit"

[[vm]]
name = "hog"
count = 64
vcpus = 1
workload = "cpu-bound"

[run]
duration = "200ms"
"""


def many_locks() -> str:
    names = ", ".join(f'"lock{i}"' for i in range(100_000))
    return f"""[host]
pcpus = 2

[[vm]]
name = "locks"
vcpus = 2
workload = "program"
threads = 2

[vm.program]
kernel_locks = [{names}]
threads = [[{{syscall = "1us", lock = 99999}}]]

[run]
duration = "1ms"
"""


# name -> (scenario text, what to do with it, the figure measured before the fix)
CASES: dict[str, tuple[str, str, str]] = {}
for p in (1024, 4096, 16384):
    CASES[f"cfs, quickstart, {p:,} pCPUs, 100 ms"] = (quickstart("cfs", p), "run", {1024: "0.31 s", 4096: "2.9 s", 16384: "44.9 s"}[p])
    CASES[f"eevdf, quickstart, {p:,} pCPUs, 100 ms"] = (quickstart("eevdf", p), "run", "0.25 s" if p == 16384 else "")
CASES["cfs, quickstart, 16,384 pCPUs in 256 sockets, 100 ms"] = (quickstart("cfs", 16384, 256), "run", "")
CASES["eevdf, quickstart, 16,384 pCPUs in 256 sockets, 100 ms"] = (quickstart("eevdf", 16384, 256), "run", "")
# The fuzzing run's 262,144 idle vCPUs were spread differently (its VM counts are not recorded).
for pol, before in (("credit", "7.9 s (its mix)"), ("hybrid", "102.6 s (its mix)"), ("cfs", "0.54 s (its mix)")):
    CASES[f"{pol}, 262,144 idle vCPUs (4,096 VMs of 64), 1 ms"] = (idle_vms(pol), "run", before)
CASES["credit, 64 VMs on 4,096 pCPUs, 200 ms: metrics.csv"] = (wide_metrics(), "metrics", "527 MB (another mix)")
CASES["validate, 100,000 kernel_locks names"] = (many_locks(), "validate", "6.6 s")

CHILD = """
import resource, sys, vcpusim
path, what, out = sys.argv[1:4]
sc = vcpusim.load(path)
if what != "validate":
    r = vcpusim.run(sc)
    if what == "metrics":
        r.write(out)
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def measure(text: str, what: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "case.toml"
        path.write_text(text)
        out = Path(tmp) / "out"
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", CHILD, str(path), what, str(out)], capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"resource_use.py: the case failed:\n{done.stderr}")
        wall = time.perf_counter() - start
        row = {"wall_s": round(wall, 2), "peak_mb": round(int(done.stdout.split()[-1]) / 1024)}
        if what == "metrics":
            size = (out / "metrics.csv").stat().st_size
            rows = sum(1 for _ in (out / "metrics.csv").open()) - 1
            row.update(metrics_mb=round(size / 2**20, 2), metrics_rows=rows)
        return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", help="run only the cases whose name contains this text")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = ap.parse_args()
    rows = []
    for name, (text, what, before) in CASES.items():
        if args.only and args.only not in name:
            continue
        row = {"case": name, "before_fix": before, **measure(text, what)}
        rows.append(row)
        if not args.json:
            extra = f", metrics.csv {row['metrics_mb']} MB ({row['metrics_rows']:,} rows)" if what == "metrics" else ""
            print(f"{name}: {row['wall_s']} s, peak {row['peak_mb']} MB{extra}" + (f"   [before the fix: {before}]" if before else ""))
    if args.json:
        print(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
