"""Figures 5, 7, 8 and 9: per-pCPU usage maps of tascell-fib (``pcpu_busy_ms[p]`` / run time).

Seed 001 sections III-E to III-G measured pCPU utilization with xenmon:
- Figure 5, 8 threads in 0-16 and 8-8: "In 8-8, four pCPUs (1, 3, 4, and 6) in processor 1 and
  four pCPUs (16, 19, 20, and 22) in processor 2 were mainly used. In 0-16 ... eight pCPUs
  (16-23) in processor 2 were used."
- Figure 7, 16 threads in 7-9: nine modules used, "the number of competing modules is only seven".
- Figure 8, 8-8 at 1-16 threads: "only one core in each module was used until 8 threads", then
  the other core of each module.
- Figure 9, 0-16 at 1-16 threads: node 2's modules one core each (1-4 threads), then their
  other cores (5-8), then node 3's modules (9-12), then their other cores (13-16).

The runs are Figure 4's (same points, same saved runs). The maps show the mean utilization over
seeds; the claims read each run (seed) alone: with k threads its *used* pCPUs are its k busiest
(a vCPU can move, so a threshold on the mean would blur two seeds' choices), and a claim holds
for a thread count when it holds in every seed.

    python experiments/xen_cmt/fig05_07_08_09_usage.py [--quick]
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from common import (
    utilization, CORES_PER_MODULE, DIRECTION, NODE_PCPUS, NOT_REPRODUCED, PCPUS, REPRODUCED, Claim, Settings,
    dist, heatmap, out_dir, parse_args, report, run_points, thread_counts, usage_matrix,
    write_csv,
)

FIG = "fig05_07_08_09"


def measure(settings: Settings, threads=None, seeds=None) -> pd.DataFrame:
    ks = threads or thread_counts(settings)
    return run_points(["fib"], [dist("0-16"), dist("8-8"), dist("7-9")], ks, settings, seeds)


def used(row: np.ndarray, k: int) -> list[int]:
    """The ``k`` busiest pCPUs of a utilization row, in pCPU order."""
    return sorted(int(p) for p in np.argsort(-row, kind="stable")[:k])


def per_seed(df: pd.DataFrame, placement: str, k: int) -> list[list[int]]:
    """Used pCPUs of each seed's run of ``placement`` at ``k`` threads."""
    u = utilization(df[(df["placement"] == placement) & (df["threads"] == k)])
    return [used(r[[f"u{p}" for p in range(PCPUS)]].to_numpy(dtype=float), k) for _, r in u.iterrows()]


def competing(u: list[int]) -> int:
    return sum(1 for p in u if p % CORES_PER_MODULE == 0 and p + 1 in u)


def write_outputs(df: pd.DataFrame) -> dict:
    d = out_dir(FIG)
    maps = {}
    rows = []
    for placement in ("0-16", "8-8", "7-9"):
        sub = df[df["placement"] == placement]
        ks = sorted(set(sub["threads"]))
        m = usage_matrix(sub, "threads", ks)
        maps[placement] = dict(zip(ks, m))
        for k, r in zip(ks, m):
            rows.append({"placement": placement, "threads": k, **{f"u{p}": r[p] for p in range(PCPUS)},
                         "competing_modules": sub[sub["threads"] == k]["competing_modules"].mean()})
    write_csv(pd.DataFrame(rows), FIG, "usage")
    both = np.vstack([maps["0-16"][8], maps["8-8"][8]])
    heatmap(both, ["0-16", "8-8"], d / "fig05.png", "Figure 5: pCPU usage, 8 threads (mean of seeds)", "distribution")
    if 16 in maps["7-9"]:
        heatmap(maps["7-9"][16][None, :], ["7-9"], d / "fig07.png", "Figure 7: pCPU usage, 16 threads in 7-9 (mean of seeds)", "")
    for name, placement in (("fig08", "8-8"), ("fig09", "0-16")):
        ks = sorted(maps[placement])
        heatmap(np.vstack([maps[placement][k] for k in ks]), ks, d / f"{name}.png",
                f"Figure {name[-1]}: pCPU usage in {placement} by threads (mean of seeds)", "threads")
    return df


def claims(df: pd.DataFrame) -> list[Claim]:
    out = []
    s016 = per_seed(df, "0-16", 8)
    ok = all(u == list(range(16, 24)) for u in s016)
    out.append(Claim("Fig 5", "0-16, 8 threads: pCPUs 16-23 (node 2) used densely", "16-23",
                     f"8 busiest per seed: {s016}", REPRODUCED if ok else NOT_REPRODUCED, ""))
    s88 = per_seed(df, "8-8", 8)
    desc = "; ".join(f"{u} ({sum(p < 16 for p in u)} + {sum(p >= 16 for p in u)}, {competing(u)} doubled)" for u in s88)
    c88 = max(competing(u) for u in s88)
    split = all(sum(p < 16 for p in u) == 4 for u in s88)
    out.append(Claim("Fig 5", "8-8, 8 threads: four pCPUs per processor, one core per module",
                     "1, 3, 4, 6 and 16, 19, 20, 22 (no module doubled)", f"8 busiest per seed: {desc}",
                     REPRODUCED if split and c88 == 0 else (DIRECTION if c88 < 4 else NOT_REPRODUCED),
                     "D: fewer doubled modules than 0-16; Xen 4.4's _csched_cpu_pick moves a vCPU to the other socket "
                     "only when it has at least twice the idle cores (2x rule), so the 8-8 run can settle with a doubled module"))
    ks = sorted(set(df["threads"]))
    if 16 in ks:
        u79 = per_seed(df, "7-9", 16)
        got = sorted({(len({p // CORES_PER_MODULE for p in u}), competing(u)) for u in u79})
        out.append(Claim("Fig 7", "7-9, 16 threads: nine modules used, seven competing", "9 used, 7 competing",
                         f"(used, competing) per seed: {got}",
                         REPRODUCED if got == [(9, 7)] else NOT_REPRODUCED, ""))
    doubled = {k: max(competing(u) for u in per_seed(df, "8-8", k)) for k in ks}
    early = {k: v for k, v in doubled.items() if k <= 8}
    late = {k: v for k, v in doubled.items() if k > 8}
    out.append(Claim("Fig 8", "8-8: one core per module up to 8 threads, then second cores", "0 competing to 8, k-8 after",
                     f"doubled modules among the k busiest pCPUs by threads (worst seed): {doubled}",
                     REPRODUCED if all(v == 0 for v in early.values()) and all(v == k - 8 for k, v in late.items()) else
                     (DIRECTION if all(v <= 2 for v in early.values()) and all(v >= k - 8 for k, v in late.items()) else NOT_REPRODUCED),
                     "D: at most 2 doubled up to 8 threads (the 2x cross-socket rule)"))
    wrong = []
    total = len(df[df["placement"] == "0-16"])
    for k in ks:
        want2 = min(k, NODE_PCPUS)
        want = (want2, k - want2, max(0, want2 - 4), max(0, k - want2 - 4))
        for u in per_seed(df, "0-16", k):
            n2 = [p for p in u if 16 <= p < 24]
            n3 = [p for p in u if 24 <= p < 32]
            got = (len(n2), len(n3), competing(n2), competing(n3))
            if got != want:
                wrong.append(f"{k}: {got}")
    out.append(Claim("Fig 9", "0-16: node 2 modules, node 2 second cores, node 3 modules, node 3 second cores",
                     "in that order (4 threads each)",
                     ("every thread count and seed in that order" if not wrong else
                      f"{total - len(wrong)} of {total} (threads, seed) runs in that order; differs at " + "; ".join(wrong)),
                     REPRODUCED if not wrong else (DIRECTION if len(wrong) <= 0.1 * total else NOT_REPRODUCED),
                     "per run: (used in node 2, used in node 3, doubled in node 2, doubled in node 3); D: 90% of runs"))
    return out


def main(settings: Settings) -> list[Claim]:
    found = claims(write_outputs(measure(settings)))
    report(FIG, found)
    return found


if __name__ == "__main__":
    main(parse_args(__doc__))
