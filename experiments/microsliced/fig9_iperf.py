"""Figure 9: iPerf on a mixed vCPU (iperf's server and a CPU hog on one vCPU) beside lookbusy,
both VMs pinned to one pCPU, baseline vs one micro-sliced core: TCP throughput, UDP jitter, and
what lookbusy keeps.

Seed 002 section 6.2: the baseline's throughput "is improved in the micro-sliced scheme" and
"Jitters are also significantly improved, from over 8ms to near 0ms". Scenario: common.
iperf_scenario (a second pCPU holds the micro pool; detection of ple, ipi and irq on). Also
reported: lookbusy's CPU time, which the seed does not give: an accelerated vCPU returns to the
normal pool UNDER and BOOSTed (the authors' released code, docs/model.md § seed 002: micro-sliced
cores), so it preempts lookbusy on every frame.

    python experiments/microsliced/fig9_iperf.py [--quick]
"""

from __future__ import annotations

import pandas as pd

from common import (
    DIRECTION, NOT_REPRODUCED, REPRODUCED, Claim, Settings, aggregate, bar_plot, figure_main, out_dir,
    parse_args, run_iperf, write_csv,
)

FIG = "fig9"
MICRO = ("base", "s1")


def measure(settings: Settings) -> pd.DataFrame:
    return run_iperf([(c, p, m) for c in ("solo", "mixed") for p in ("tcp", "udp") for m in MICRO if not (c == "solo" and m != "base")], settings)


def write_outputs(df: pd.DataFrame) -> dict:
    io = df[df["vm"] == "io"].copy()
    busy = df[df["vm"] == "busy"][["case", "protocol", "config", "seed", "cpu_time_ms", "sim_s"]].rename(columns={"cpu_time_ms": "lookbusy_cpu_ms"})
    t = io.merge(busy, on=["case", "protocol", "config", "seed", "sim_s"], how="left")
    t["lookbusy_share"] = t["lookbusy_cpu_ms"] / (t["sim_s"] * 1e3)
    t["scheme"] = t["case"] + "/" + t["config"]
    write_csv(t[["case", "protocol", "config", "seed", "throughput_mbps", "jitter_ms", "lookbusy_cpu_ms", "lookbusy_share"]], FIG, "runs")
    agg = aggregate(t, ["scheme", "protocol"], ["throughput_mbps", "jitter_ms", "lookbusy_share"])
    write_csv(agg, FIG, "fig9_iperf")
    tcp, udp = agg[agg["protocol"] == "tcp"], agg[agg["protocol"] == "udp"]
    bar_plot(tcp, "scheme", None, "throughput_mbps", "TCP throughput (Mbit/s)", "Figure 9a: iPerf TCP", out_dir(FIG) / "fig9_tcp.png")
    bar_plot(udp, "scheme", None, "jitter_ms", "UDP jitter (ms)", "Figure 9a: iPerf UDP jitter", out_dir(FIG) / "fig9_jitter.png")
    return {"agg": agg}


def claims(data: dict) -> list[Claim]:
    a = data["agg"].set_index(["scheme", "protocol"])
    tb, tm = a.loc[("mixed/base", "tcp"), "throughput_mbps_mean"], a.loc[("mixed/s1", "tcp"), "throughput_mbps_mean"]
    jb, jm = a.loc[("mixed/base", "udp"), "jitter_ms_mean"], a.loc[("mixed/s1", "udp"), "jitter_ms_mean"]
    lb, lm = a.loc[("mixed/base", "tcp"), "lookbusy_share_mean"], a.loc[("mixed/s1", "tcp"), "lookbusy_share_mean"]
    return [
        Claim("Fig 9", "mixed vCPU: TCP throughput improved by a micro core", "improved", f"{tb:.0f} -> {tm:.0f} Mbit/s",
              REPRODUCED if tm > 1.2 * tb else (DIRECTION if tm > tb else NOT_REPRODUCED), "R: over +20%; D: higher"),
        Claim("Fig 9", "mixed vCPU: UDP jitter from over 8 ms to near 0", "> 8 ms -> ~0", f"{jb:.2f} -> {jm:.3f} ms",
              REPRODUCED if jb > 8 and jm < 0.5 else (DIRECTION if jm < jb else NOT_REPRODUCED), "R: baseline over 8 ms and micro under 0.5 ms; D: lower"),
        Claim("Fig 9", "lookbusy's share of its pCPU (not in the seed)", "not given", f"{lb:.0%} -> {lm:.1%} (TCP runs)",
              NOT_REPRODUCED if lm < 0.5 * lb else REPRODUCED,
              "not a claim of the seed: N marks the co-runner's starvation under the released code's return path (UNDER + BOOST)"),
    ]


main = figure_main(FIG, measure, write_outputs, claims)


if __name__ == "__main__":
    main(parse_args(__doc__))
