"""Table 4: performance loss solo vs co-run with swaptions: (a) gmake's spinlock waiting time by
kernel component, (b) dedup's and vips' TLB synchronization latency avg / min / max, (c) iPerf's
jitter and throughput solo and in the mixed co-run.

Seed 002 section 3.3. (a) is metrics.csv ``spin_wait_mean_us[<class>]`` (contended acquisitions,
lockstat's waittime-avg) for the classes page-reclaim, page-alloc, dentry, runqueue; (b) is
``tlb_shootdown_latency_mean_us`` / ``_min_us`` / ``_max_us`` (the span of
``native_flush_tlb_others``); (c) is Figure 9's scenario (common.iperf_scenario): "solo" iperf
alone, "mixed co-run" iperf's server and a hog on one vCPU beside lookbusy, TCP throughput and UDP
jitter.

    python experiments/microsliced/table4_latency.py [--quick]
"""

from __future__ import annotations

import pandas as pd

from common import (
    DIRECTION, NOT_REPRODUCED, REPRODUCED, SHORT, Claim, Settings, aggregate, app, figure_main,
    out_dir, parse_args, run_iperf, run_points, write_csv,
)
import matplotlib.pyplot as plt

FIG = "table4"
#: Table 4a (us): (solo, co-run).
TABLE_4A = {"page-reclaim": (1.03, 420.13), "page-alloc": (3.42, 1053.26), "dentry": (2.93, 1298.87), "runqueue": (1.22, 256.07)}
#: Table 4b (us): {bench: {config: (avg, min, max)}}.
TABLE_4B = {"dedup": {"solo": (28, 5, 1927), "base": (6354, 7, 74915)},
            "vips": {"solo": (55, 5, 2052), "base": (14928, 17, 121548)}}
#: Table 4c: (jitter ms, throughput Mbit/s).
TABLE_4C = {"solo": (0.0043, 936.3), "mixed": (9.2507, 435.6)}


def measure(settings: Settings) -> tuple[pd.DataFrame, pd.DataFrame]:
    df = run_points(["mosbench.gmake", "parsec.dedup", "parsec.vips"], ["solo", "base"], settings)
    io = run_iperf([(c, p, "base") for c in ("solo", "mixed") for p in ("tcp", "udp")], settings)
    return df, io


def write_outputs(data) -> dict:
    df, io = data
    a = app(df).copy()
    a["bench"] = a["workload"].map(SHORT)
    cols4a = [f"spin_wait_mean_us[{c}]" for c in TABLE_4A]
    cols4b = ["tlb_shootdown_latency_mean_us", "tlb_shootdown_latency_min_us", "tlb_shootdown_latency_max_us"]
    for c in cols4a + cols4b:
        a[c] = pd.to_numeric(a[c], errors="coerce")
    g = a[a["bench"] == "gmake"]
    agg_a = aggregate(g, ["config"], cols4a)
    write_csv(agg_a, FIG, "table4a_spinlock_wait")
    t = a[a["bench"].isin(["dedup", "vips"])]
    agg_b = aggregate(t, ["bench", "config"], cols4b)
    write_csv(agg_b, FIG, "table4b_tlb_latency")
    iov = io[io["vm"] == "io"]
    agg_c = aggregate(iov, ["case", "protocol"], ["throughput_mbps", "jitter_ms"])
    write_csv(agg_c, FIG, "table4c_iperf")
    write_csv(pd.concat([a[["bench", "config", "seed"] + cols4a + cols4b]]), FIG, "runs")

    fig, ax = plt.subplots(figsize=(6.4, 4))
    classes = list(TABLE_4A)
    x = range(len(classes))
    for i, cfg in enumerate(("solo", "base")):
        row = agg_a[agg_a["config"] == cfg].iloc[0]
        ax.bar([p + (i - 0.5) * 0.35 for p in x], [row[f"spin_wait_mean_us[{c}]_mean"] for c in classes], 0.35,
               label="co-run" if cfg == "base" else "solo")
    ax.set_xticks(list(x))
    ax.set_xticklabels(classes)
    ax.set_yscale("log")
    ax.set_ylabel("mean spinlock wait (us, log)")
    ax.set_title("Table 4a: gmake spinlock waits, solo vs co-run")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out_dir(FIG) / "table4a.png", dpi=120)
    plt.close(fig)
    return {"a": agg_a, "b": agg_b, "c": agg_c}


def _order(ours: float, paper: float) -> str:
    """R within a factor of 2; D within 10; N otherwise (latencies over orders of magnitude)."""
    if not (ours > 0):
        return NOT_REPRODUCED
    r = max(ours / paper, paper / ours)
    return REPRODUCED if r <= 2 else (DIRECTION if r <= 10 else NOT_REPRODUCED)


def claims(agg: dict) -> list[Claim]:
    out = []
    a = agg["a"].set_index("config")
    for cls, (solo_p, co_p) in TABLE_4A.items():
        solo, co = a.loc["solo", f"spin_wait_mean_us[{cls}]_mean"], a.loc["base", f"spin_wait_mean_us[{cls}]_mean"]
        out.append(Claim("Table 4a", f"gmake {cls} wait, solo", f"{solo_p} us", f"{solo:.2f} us",
                         REPRODUCED if solo > 0 and abs(solo - solo_p) <= 0.25 * solo_p else NOT_REPRODUCED,
                         "R: within 25% (a calibration target of the model)"))
        out.append(Claim("Table 4a", f"gmake {cls} wait, co-run", f"{co_p:,} us", f"{co:,.1f} us", _order(co, co_p),
                         "R: within a factor of 2; D: within 10"))
    b = agg["b"].set_index(["bench", "config"])
    for bench, rows in TABLE_4B.items():
        for cfg, (avg_p, min_p, max_p) in rows.items():
            avg = b.loc[(bench, cfg), "tlb_shootdown_latency_mean_us_mean"]
            mn = b.loc[(bench, cfg), "tlb_shootdown_latency_min_us_mean"]
            mx = b.loc[(bench, cfg), "tlb_shootdown_latency_max_us_mean"]
            label = "solo" if cfg == "solo" else "co-run"
            out.append(Claim("Table 4b", f"{bench} {label} TLB sync latency avg / min / max",
                             f"{avg_p:,} / {min_p} / {max_p:,} us", f"{avg:,.0f} / {mn:.0f} / {mx:,.0f} us",
                             _order(avg, avg_p), "verdict on the average: R within a factor of 2; D within 10"))
    c = agg["c"].set_index(["case", "protocol"])
    for case, (jit_p, tput_p) in TABLE_4C.items():
        tput, jit = c.loc[(case, "tcp"), "throughput_mbps_mean"], c.loc[(case, "udp"), "jitter_ms_mean"]
        label = "solo" if case == "solo" else "mixed co-run"
        out.append(Claim("Table 4c", f"iPerf {label} TCP throughput", f"{tput_p} Mbit/s", f"{tput:.1f} Mbit/s",
                         REPRODUCED if abs(tput - tput_p) <= 0.15 * tput_p else (DIRECTION if case == "mixed" and tput < 0.8 * c.loc[("solo", "tcp"), "throughput_mbps_mean"] else NOT_REPRODUCED),
                         "R: within 15%; D (mixed): below 80% of solo"))
        if case == "solo":
            v = REPRODUCED if jit < 0.1 else NOT_REPRODUCED
            note = "R: under 0.1 ms"
        else:
            v = REPRODUCED if abs(jit - jit_p) <= 0.25 * jit_p else (DIRECTION if jit > 1 else NOT_REPRODUCED)
            note = "R: within 25%; D: above 1 ms"
        out.append(Claim("Table 4c", f"iPerf {label} UDP jitter", f"{jit_p} ms", f"{jit:.4f} ms", v, note))
    return out


main = figure_main(FIG, measure, write_outputs, claims)


if __name__ == "__main__":
    main(parse_args(__doc__))
