"""Time vcpusim.grids.tidy (the sweep table: every run's CSVs read as one text, one pandas pivot
and merge) against building each run's own table (``Result.table``: a parse, pivot and merge per
run) and concatenating them, on saved runs, and check they hold the same values.

    python benches/tidy_bench.py experiments/hybrid/out/.runs   # every run folder under it
    python benches/tidy_bench.py                                # 60 small runs made here

Prints milliseconds per run of each (best of --repeats), their ratio, and whether the tables are
equal (values and column order; dtypes and CSV bytes too unless a column's type read per run
differs from the sweep's, which tests/test_tidy.py states). Each timing starts from fresh Result objects (no
DataFrame cached on them), as a sweep's results are.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd
import vcpusim
from vcpusim import grids

#: The quickstart, shortened: a barrier-synchronized SMP VM beside single-vCPU CPU-bound VMs.
QUICKSTART = Path(__file__).resolve().parents[1] / "scenarios" / "quickstart.toml"


def saved_runs(root: Path) -> list[list[vcpusim.Result]]:
    """The run folders under root, grouped by parent folder (one group per figure)."""
    groups: dict[Path, list[vcpusim.Result]] = {}
    for record in sorted(root.rglob("run.json")):
        groups.setdefault(record.parent.parent, []).append(vcpusim.Result.read(record.parent))
    return list(groups.values())


def small_runs(n: int) -> list[list[vcpusim.Result]]:
    base = vcpusim.Scenario.from_toml(QUICKSTART).with_duration("30ms")
    policies = ["cfs", "credit", "gang", "eevdf"]
    return [[vcpusim.run(base.with_policy(policies[i % 4]).with_seed(i)) for i in range(n)]]


def labelled(group: list[vcpusim.Result]) -> list[tuple[dict, vcpusim.Result]]:
    # Fresh copies: no DataFrame cached from an earlier timing.
    return [({"case": f"c{i % 7}", "seed": i % 3 + 1, "weight": 256, "scale": 0.5 * i},
             vcpusim.Result(r.vms_csv, r.metrics_csv, r.summary_json)) for i, r in enumerate(group)]


def per_run_tables(labelled, keys, labels_first):
    """Each run's own table with its labels and run folder, concatenated."""
    frames = []
    for (labels, result), key in zip(labelled, keys):
        frame = result.table.copy()
        for k, v in {**labels, grids.RUN_COLUMN: key}.items():
            frame[k] = v
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def best(fn, groups, repeats: int) -> tuple[float, list]:
    times, tables = [], []
    for _ in range(repeats):
        inputs = [labelled(g) for g in groups]
        t = time.perf_counter()
        tables = [fn(x, [f"{i:016x}" for i in range(len(x))], False) for x in inputs]
        times.append(time.perf_counter() - t)
    return min(times), tables


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="?", type=Path, help="a folder of saved runs (run_many's out_dir, or above)")
    parser.add_argument("--repeats", type=int, default=3)
    a = parser.parse_args()
    groups = saved_runs(a.runs) if a.runs else small_runs(60)
    n = sum(len(g) for g in groups)
    ref_s, ref_tables = best(per_run_tables, groups, a.repeats)
    new_s, new_tables = best(grids.tidy, groups, a.repeats)
    same = True
    for x, y in zip(ref_tables, new_tables):
        try:
            pd.testing.assert_frame_equal(x, y, check_dtype=False, check_exact=True)
        except AssertionError:
            same = False
    print(f"{n} runs in {len(groups)} tables: per-run tables {ref_s / n * 1e3:.2f} ms/run, tidy {new_s / n * 1e3:.2f} ms/run, "
          f"{ref_s / new_s:.1f}x; same values: {same}")


if __name__ == "__main__":
    main()
