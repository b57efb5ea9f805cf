"""Slide 14: server throughput and latency, IRS vs vanilla Xen (ApacheBench against httpd).

Seed 003 slide 14 ("Multi-threaded Performance", improvement on server throughput and latency,
IRS vs vanilla Xen/Linux, higher is better). Claim: "ab had a large number of threads,
improvement on a few threads did not contribute to the overall performance": IRS has no effect
on ab's throughput or latency.

Ours: the ``ab`` model (httpd 2.2 worker MPM: a listener and 25 workers, ab -c 100; docs/model.md
§ seed 003: workloads) in the 4-vCPU VM, 1, 2 or 4 CPU hogs as in slide 12. Throughput is ab's
"Requests per second" (vms.csv ``requests_per_sec``), latency its "Time per request (mean)"
(``time_per_request_ms``), under IRS and (for context) IRS without its migrator. The claim is a
"no effect" (docs/validation.md): IRS's change of throughput and of latency over vanilla, at each
level, paired on the seed (``protocol.change``), each 95% interval within +-5%; the claim takes
the lowest verdict over the six items. The CSV's ``latency_improvement`` is vanilla's time over
IRS's, minus 1 (higher is better, as the slide plots it).

    python experiments/irs/slide14_server.py [--quick]
"""

from __future__ import annotations

import pandas as pd

from common import (
    AB, IRS, IRS_NOMIG, NO_EFFECT, VANILLA, WORKLOAD, Claim, Settings, aggregate, bar_plot, compare, figure_main,
    items_text, judge_no_effect, levels_of, min_n, noise_levels, out_dir, parse_args, per_seed_ratio,
    program_change, select, vms, worst, write_csv,
)

FIG = "slide14"


def measure(settings: Settings, seeds=None) -> pd.DataFrame:
    df = compare([AB], [IRS, IRS_NOMIG], noise_levels(settings), settings, seeds)
    df["requests_per_sec"] = pd.to_numeric(df["requests_per_sec"], errors="coerce")
    df["time_per_request_ms"] = pd.to_numeric(df["time_per_request_ms"], errors="coerce")
    keys = ["bench", "noise", "seed"]
    df = per_seed_ratio(df, "requests_per_sec", keys, "scheme", VANILLA, "tput_ratio")
    df = per_seed_ratio(df, "time_per_request_ms", keys, "scheme", VANILLA, "lat_ratio")
    df["throughput_improvement"] = df["tput_ratio"] - 1
    df["latency_improvement"] = 1 / df["lat_ratio"] - 1
    return df


def write_outputs(df: pd.DataFrame) -> pd.DataFrame:
    write_csv(df[["scheme", "noise", "seed", "requests_per_sec", "time_per_request_ms", "throughput_improvement",
                  "latency_improvement", "preempt_notices", "irs_migrations", "irs_wake_preemptions", "spin_time_ms",
                  "lwp_count"]], FIG, "runs")
    irs = df[df["scheme"].isin([IRS, IRS_NOMIG])]
    agg = aggregate(irs, ["scheme", "noise"], ["throughput_improvement", "latency_improvement"])
    write_csv(agg, FIG, "slide14_improvement")
    irs = irs.assign(label=irs["scheme"].map({IRS: "IRS", IRS_NOMIG: "IRS w/o migrator"}))
    long = pd.concat([irs.assign(metric=irs["label"] + " throughput", improvement=irs["throughput_improvement"]),
                      irs.assign(metric=irs["label"] + " latency", improvement=irs["latency_improvement"])])
    bar_plot(aggregate(long, ["noise", "metric"], ["improvement"]), "noise", "metric", "improvement",
             "IRS over vanilla Xen (higher is better)", "Slide 14: ab throughput and latency",
             out_dir(FIG) / "slide14.png", hline=0.0)
    return df


def claims(df: pd.DataFrame) -> list[Claim]:
    items = {}
    for n in levels_of(df, IRS):
        items[f"throughput at {vms(n)}"] = program_change(df, AB, IRS, n, value="requests_per_sec")
        items[f"latency at {vms(n)}"] = program_change(df, AB, IRS, n, value="time_per_request_ms")
    nomig = {n: program_change(df, AB, IRS_NOMIG, n, value="requests_per_sec") for n in levels_of(df, IRS_NOMIG)}
    spin = {s: select(df, scheme=s)["spin_time_ms"].astype(float).mean() for s in (VANILLA, IRS, IRS_NOMIG)}
    return [Claim(
        id="ab-no-effect", figure="Slide 14",
        claim="IRS does not change ab's throughput or latency (ab has many threads: moving a few does not help)",
        paper="ab had a large number of threads, improvement on a few threads did not contribute to the overall "
              "performance", source="slide 14 text", type=NO_EFFECT, ours=items_text(items), n=min_n(items.values()),
        verdict=worst(judge_no_effect(e) for e in items.values()), cause=WORKLOAD,
        note="change over vanilla (latency: time per request, negative = faster), paired on the seed. Context: "
             f"IRS w/o migrator throughput {items_text(nomig)}; kernel spin per run vanilla {spin[VANILLA]:.0f} ms, "
             f"IRS {spin[IRS]:.0f} ms, IRS w/o migrator {spin[IRS_NOMIG]:.0f} ms")]


main = figure_main(FIG, measure, write_outputs, claims)


if __name__ == "__main__":
    main(parse_args(__doc__))
