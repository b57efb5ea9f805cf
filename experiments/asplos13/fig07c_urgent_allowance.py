"""Figure 7(c): slowdown of vips and facesim, and vips's CPU time, vs the urgent allowance.

Seed 000 section 4.1.1: vips in an 8-vCPU VM beside two 8-vCPU VMs running facesim (whose
threads sleep and wake repeatedly), TLB-Co and Resched-DP enabled, preemption delay and urgent
tslice 500 us, LC balance placement. Claims: a larger allowance improves vips; it does so
without sacrificing facesim; an allowance above 12 ms helps (CFS places a waking vCPU up to half
of the 24 ms sched_latency, 12 ms, before min_vruntime). The paper settles on 18 ms.

Ours: ``[host.uvf] urgent_allowance`` swept; every VM with ``tlb_co`` and ``resched_dp = 500us``.
Slowdown = time per unit of progress (fixed duration, see common.py) over that of the same
application alone on the host (same seed); facesim's is the mean of its two VMs. vips's CPU
time is its ``tlb_wait_ms + spin_time_ms`` per unit of progress (plotted only). Every
comparison is a change of slowdown paired on the seed (``protocol.change``): "larger allowance"
is the paper's chosen 18 ms against 0 ms (the allowance used in every later experiment, and
surely inside the paper's sweep, which our copy does not show), for vips (a direction) and for
facesim (no effect, ``judge_no_effect``); "above 12 ms" is each allowance of our sweep above
12 ms against 12 ms.

    python experiments/asplos13/fig07c_urgent_allowance.py [--quick]
"""

from __future__ import annotations

import pandas as pd

from common import (
    DIRECTION, MECHANISM, NO_EFFECT, RESCHED_DP, URGENT_ALLOWANCE, Case, Claim, Settings, aggregate, change,
    figure_main, host, judge_direction, judge_no_effect, line_plot, out_dir, parallel_vm, parse_args, run_cases,
    seed_values, solo, uvf_host, worst, write_csv,
)

FIG = "fig07c"
ALLOWANCES_MS = (0, 3, 6, 9, 12, 15, 18, 24, 30)
#: The allowance the paper settles on (section 4.1.1, last paragraph: 18 ms).
CHOSEN_MS = int(URGENT_ALLOWANCE.removesuffix("ms"))
SOURCE = "§4.1.1, Fig 7c"


def scenario(allowance_ms: int) -> dict:
    uvf = {"tlb_co": True, "resched_dp": RESCHED_DP}
    return {"host": host(placement="lc-balance", uvf=uvf_host(allowance=f"{allowance_ms}ms")),
            "vm": [parallel_vm("vips", "vips", uvf=uvf), parallel_vm("facesim0", "facesim", uvf=uvf),
                   parallel_vm("facesim1", "facesim", uvf=uvf)]}


def measure(settings: Settings) -> pd.DataFrame:
    cases = [Case({"allowance_ms": a}, scenario(a)) for a in ALLOWANCES_MS]
    cases += [Case({"allowance_ms": -1, "solo": app}, solo(app)) for app in ("vips", "facesim")]
    df = run_cases(FIG, cases, settings.seed_list(), settings.duration("20s", "2s"), settings)
    solo_rows = df[df["vm"] == "solo"]
    solo_time = {(r.solo, r.seed): r.ms_per_unit for r in solo_rows.itertuples()}
    df = df[df["vm"] != "solo"].copy()
    df["app"] = df["vm"].str.rstrip("01")
    df["slowdown"] = [m / solo_time[(app, s)] for m, app, s in zip(df["ms_per_unit"], df["app"], df["seed"])]
    df["sync_ms_per_unit"] = (df["tlb_wait_ms"] + df["spin_time_ms"]) / df["progress"].where(df["progress"] > 0)
    return df.groupby(["allowance_ms", "app", "seed"], as_index=False)[["slowdown", "sync_ms_per_unit"]].mean()


def claims(measured: tuple[pd.DataFrame, pd.DataFrame]) -> list[Claim]:
    df, _ = measured

    def delta(app, a, base):
        """Change of ``app``'s slowdown at allowance ``a`` relative to allowance ``base``, paired on the seed."""
        return change(seed_values(df, "slowdown", app=app, allowance_ms=a),
                      seed_values(df, "slowdown", app=app, allowance_ms=base), paired=True)

    out = []
    vips = delta("vips", CHOSEN_MS, 0)
    out.append(Claim(
        id="vips-improves", figure="Fig 7c", claim=f"a larger urgent allowance ({CHOSEN_MS} ms vs 0) improves vips",
        paper="larger urgent allowance improves the performance of vips", source=SOURCE, type=DIRECTION,
        estimate=vips, ours=f"vips slowdown {CHOSEN_MS} ms vs 0 ms: {vips.text(1, pct=True)}",
        verdict=judge_direction(vips, -1), cause=MECHANISM,
        note="slowdown vs solorun, change paired on the seed; negative: faster"))
    face = delta("facesim", CHOSEN_MS, 0)
    out.append(Claim(
        id="facesim-unaffected", figure="Fig 7c",
        claim=f"the larger allowance ({CHOSEN_MS} ms vs 0) does not sacrifice facesim",
        paper="while not sacrificing that of facesim", source=SOURCE, type=NO_EFFECT, estimate=face,
        ours=f"facesim slowdown {CHOSEN_MS} ms vs 0 ms: {face.text(1, pct=True)}", verdict=judge_no_effect(face),
        cause=MECHANISM,
        note="no effect: the 95% interval of the paired change of facesim's slowdown (mean of its two VMs) "
             "within +-5%"))
    above = {a: delta("vips", a, 12) for a in ALLOWANCES_MS if a > 12}
    out.append(Claim(
        id="above-12ms", figure="Fig 7c", claim="an urgent allowance above 12 ms improves vips over 12 ms",
        paper="an urgent allowance value larger than 12ms helps", source=SOURCE, type=DIRECTION,
        ours="vips slowdown vs 12 ms: " + ", ".join(f"{a} ms {c.text(1, pct=True)}" for a, c in above.items()),
        verdict=worst(judge_direction(c, -1) for c in above.values()), n=min(c.n for c in above.values()),
        cause=MECHANISM,
        note="each allowance of our sweep above 12 ms faster than 12 ms beyond noise, paired on the seed"))
    return out


def write_outputs(df: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """CSV and PNG outputs; returns the runs and the aggregate, which the claims read."""
    agg = aggregate(df, ["allowance_ms", "app"], ["slowdown", "sync_ms_per_unit"])
    write_csv(df, FIG, "runs")
    write_csv(agg, FIG, "fig07c_urgent_allowance")
    line_plot(agg, "allowance_ms", "app", "slowdown", "urgent allowance (ms)", "slowdown vs solorun",
              "Figure 7c: vips beside two facesim VMs", out_dir(FIG) / "fig07c_slowdown.png")
    line_plot(agg[agg["app"] == "vips"], "allowance_ms", None, "sync_ms_per_unit", "urgent allowance (ms)",
              "vips TLB-wait + spin ms per tile", "Figure 7c: vips CPU time in synchronization",
              out_dir(FIG) / "fig07c_vips_cycles.png")
    return df, agg


main = figure_main(FIG, measure, write_outputs, claims)


if __name__ == "__main__":
    main(parse_args(__doc__))
