"""Figure 8: V1's CPU share while LU runs at weight 128 beside V0 at 256, Credit vs CON vs HIT.

Seed 004 section 6.2: XenMon samples V1's CPU usage for 60 s while LU runs; V1's weight is 128,
V0's 256, so "the theoretical CPU utilization percent of VM V1 is 33.3 percent", and "the
average CPU utilization of VM V1 is approximately equal to the theoretical value in the three
cases" (both schedulers keep shares by weight). Non-work-conserving, as in the rest of 6.2.

Ours: the theory is computed from the weights (weight / total weight, section 2.1); V1's share
is its CPU time over the host's (8 pCPUs x simulated time) for one whole LU run; the paper's
60-second XenMon window covers most of one class-A run at this weight (ours lasts about 50 s).
Like XenMon, the run samples V1's CPU time every second (`[run] sample_every`), and
fig08_series.png plots the per-second share as the paper's Figure 8 does.

The claim is a **calibration**, judged by the protocol but not counted: 33.3% is an input of the
scenario. ``work_conserving = false`` caps V1 at exactly this share, Credit's ``sdom->cap``
(``Credit::cap_percent`` = 100 x 8 x 128 / (128 + 256) = 266.7% of one pCPU) and the hybrid's
capped Algorithm 2 (PE_total x 128 / 384, V0 counted although idle), and LU's four spinning
threads want more than the cap, so the share equals the theory by construction as long as the
cap is enforced. Reproducing it shows the enforcement, not a prediction of the model. It is one
claim over the three schedulers ("in the three cases"), a point value with no reference (an
absolute level: R within the band of 33.3%). The vCPU-online figure of the same section
(66.7%) is the same measurement times 8/4 and is shown in the note, not judged again.

    python experiments/hybrid/fig08_cpu_share.py [--quick]
"""

from __future__ import annotations

import pandas as pd
import vcpusim

from common import (
    CALIBRATION,
    CON,
    CREDIT,
    DEFAULT_WEIGHT,
    HIT,
    MECHANISM,
    PCPUS,
    POINT,
    VM_VCPUS,
    Case,
    Claim,
    Estimate,
    Settings,
    aggregate,
    bar_plot,
    figure_main,
    judge_point,
    line_plot,
    min_n,
    out_dir,
    parse_args,
    run_single_vm,
    scale,
    single_vm,
    seed_values,
    weight_share,
    worst,
    write_csv,
)

FIG = "fig08"
BENCH = "lu"
WEIGHT = 128
SCHEDULERS = (CREDIT, CON, HIT)
SOURCE = "§6.2, text on Fig 8a-c"
#: XenMon-like sampling of V1's CPU time (the paper plots one point per second).
SAMPLE_EVERY = "1s"
SAMPLE_PREFIX = "pcpu_time_ms["


def theory(weight: int = WEIGHT) -> float:
    """V1's share of the host by weight, V0 (weight 256) counted although idle (caps, 6.2)."""
    return weight_share(weight, (DEFAULT_WEIGHT,))


def measure(settings: Settings, seeds=None) -> pd.DataFrame:
    s = scale(settings)
    cases = [Case({"bench": BENCH, "weight": WEIGHT, "scheduler": sch.name},
                  {**single_vm(sch, BENCH, WEIGHT, s), "run": {"sample_every": SAMPLE_EVERY}})
             for sch in SCHEDULERS]
    df = run_single_vm(FIG, cases, settings, seeds)
    df["share"] = df["cpu_share"].astype(float)
    # Section 6.2's other view of the same number: the time each of V1's vCPUs is on a pCPU.
    df["vcpu_online"] = df["share"] * PCPUS / VM_VCPUS
    return df


def series(df: pd.DataFrame) -> pd.DataFrame:
    """V1's share of the host in each sampled second: scheduler, seed, t_s, share."""
    v1 = df[df["vm"] == "v1"]
    cols = [c for c in v1.columns if c.startswith(SAMPLE_PREFIX)]
    long = v1.melt(id_vars=["scheduler", "seed"], value_vars=cols, var_name="sample", value_name="pcpu_time_ms")
    long = long.dropna(subset=["pcpu_time_ms"])
    long["pcpu_time_ms"] = long["pcpu_time_ms"].astype(float)
    long["t_s"] = long["sample"].str.slice(len(SAMPLE_PREFIX), -len("s]")).astype(float)
    long = long.sort_values(["scheduler", "seed", "t_s"]).reset_index(drop=True)
    long["share"] = vcpusim.interval_shares(long, ["scheduler", "seed"], PCPUS)
    return long[["scheduler", "seed", "t_s", "share"]].reset_index(drop=True)


def percent(e: Estimate) -> str:
    """A share as ``33.3% [33.1%, 33.5%]``."""
    return e.map(lambda x: 100 * x).text(1, unit="%")


def claims(measured: tuple[pd.DataFrame, pd.DataFrame]) -> list[Claim]:
    df, agg = measured
    t = theory()
    bounds = agg.set_index("scheduler")
    shares = {s: Estimate.of(seed_values(df, "share", scheduler=s)) for s in dict.fromkeys(df["scheduler"])}
    online = {s: Estimate.of(seed_values(df, "vcpu_online", scheduler=s)) for s in shares}
    per_second = "; ".join(f"{s} {bounds.loc[s, 'second_min']:.1%}-{bounds.loc[s, 'second_max']:.1%}" for s in shares)
    return [Claim(
        id="share-equals-theory", figure="Fig 8", kind=CALIBRATION,
        claim="V1's average CPU share equals the weights' theory under Credit, CON and HIT",
        paper=f"approximately equal to the theoretical {t:.1%} (weights {WEIGHT}:{DEFAULT_WEIGHT})",
        source=SOURCE, type=POINT,
        ours=", ".join(f"{s} {percent(e)}" for s, e in shares.items()),
        verdict=worst(judge_point(e, t) for e in shares.values()), n=min_n(shares.values()), cause=MECHANISM,
        note=f"input: the cap work_conserving = false gives V1 (Credit::cap_percent, {t * PCPUS * 100:.1f}% of a "
             f"pCPU; hybrid: capped Algorithm 2, PE by weight with V0 counted), so the share is the theory by "
             f"construction when the cap holds. Share = V1's CPU time over the host's for one LU run. vCPU online "
             f"(theory {t * PCPUS / VM_VCPUS:.1%}): " + ", ".join(f"{s} {percent(e)}" for s, e in online.items())
             + f"; per-second share: {per_second}")]


def write_outputs(df: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """CSV and PNG outputs; returns the runs and the aggregate (with each scheduler's per-second
    bounds), which the claims read."""
    agg = aggregate(df, ["scheduler"], ["share", "vcpu_online", "runtime_s"])
    agg["theory"] = theory()
    per_second = series(df)
    bounds = per_second.groupby("scheduler")["share"].agg(second_min="min", second_max="max")
    agg = agg.merge(bounds, left_on="scheduler", right_index=True, how="left")
    write_csv(df, FIG, "runs")
    write_csv(agg, FIG, "fig08_share")
    write_csv(per_second, FIG, "fig08_series")
    line_plot(aggregate(per_second, ["scheduler", "t_s"], ["share"]), "t_s", "scheduler", "share", "time (s)",
              "V1 share of the host (per second)",
              f"Figure 8: V1 (LU, weight {WEIGHT}) per-second share, theory {theory():.1%}",
              out_dir(FIG) / "fig08_series.png")
    bar_plot(agg, "scheduler", None, "share", "V1 share of the host", f"Figure 8: V1 (LU, weight {WEIGHT}) CPU share",
             out_dir(FIG) / "fig08_share.png", hline=theory())
    return df, agg


main = figure_main(FIG, measure, write_outputs, claims)


if __name__ == "__main__":
    main(parse_args(__doc__))
