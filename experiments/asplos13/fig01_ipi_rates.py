"""Figure 1: IPIs per second per vCPU of each PARSEC application running alone, by type.

Seed 000 section 3.1: each application runs with eight threads (PARSEC `-n 8`; 26 for dedup, 34 for ferret) in an 8-vCPU VM on the 8-pCPU
host, alone; KVM counts the IPIs. The text gives the TLB-shootdown rates of dedup, ferret and
vips (1761, 443 and 1350 IPIs/s/vCPU, section 3.1.1) and says blackscholes, freqmine and raytrace
barely communicate; the reschedule-IPI bars exist only in the plot, which our copy lacks.

Ours: ``ipi_resched_count`` and ``ipi_tlb_count`` of vms.csv divided by simulated seconds and by
8 vCPUs (counts are one per target, as KVM counts injected IPIs). Fixed duration; no execution
time is involved. This is the calibration check of the PARSEC models.

    python experiments/asplos13/fig01_ipi_rates.py [--quick]
"""

from __future__ import annotations

from common import (
    DIRECTION, NOT_REPRODUCED, PAR_VCPUS, PARSEC_APPS, REPRODUCED, Case, Claim, Settings, aggregate, bar_plot,
    figure_main, fmt, out_dir, parse_args, run_cases, solo, write_csv,
)

FIG = "fig01"
#: Section 3.1.1: "dedup, ferret, and vips ... 1761, 443, and 1350 IPIs per second per vCPU".
PAPER_TLB_RATE = {"dedup": 1761.0, "ferret": 443.0, "vips": 1350.0}
#: Section 3.1.1: "all applications except blackscholes, freqmine, and raytrace" communicate.
QUIET_APPS = ("blackscholes", "freqmine", "raytrace")
#: How close a calibrated rate must be to count as within the paper's value.
TOLERANCE = 0.25


def measure(settings: Settings):
    cases = [Case({"app": app}, solo(app)) for app in PARSEC_APPS]
    df = run_cases(FIG, cases, settings.seed_list(), settings.duration("10s", "2s"), settings)
    df["resched_ipi_rate"] = df["ipi_resched_count"] / df["sim_s"] / PAR_VCPUS
    df["tlb_ipi_rate"] = df["ipi_tlb_count"] / df["sim_s"] / PAR_VCPUS
    df["ipi_rate"] = df["resched_ipi_rate"] + df["tlb_ipi_rate"]
    return df, aggregate(df, ["app"], ["resched_ipi_rate", "tlb_ipi_rate", "ipi_rate"])


def claims(agg) -> list[Claim]:
    a = agg.set_index("app")
    out = []
    for app, paper in PAPER_TLB_RATE.items():
        mean, sd = a.loc[app, "tlb_ipi_rate_mean"], a.loc[app, "tlb_ipi_rate_std"]
        close = abs(mean - paper) <= TOLERANCE * paper
        out.append(Claim("Fig 1", f"{app} TLB-shootdown IPIs/s/vCPU solo", f"{paper:.0f}", fmt(mean, sd, 0),
                         REPRODUCED if close else NOT_REPRODUCED, f"tolerance ±{TOLERANCE:.0%}"))
    # Relative order of the three TLB-heavy applications (dedup > vips > ferret).
    order = sorted(PAPER_TLB_RATE, key=lambda k: -a.loc[k, "tlb_ipi_rate_mean"])
    paper_order = sorted(PAPER_TLB_RATE, key=lambda k: -PAPER_TLB_RATE[k])
    out.append(Claim("Fig 1", "order of TLB rates", " > ".join(paper_order), " > ".join(order),
                     REPRODUCED if order == paper_order else NOT_REPRODUCED))
    quiet = a.loc[list(QUIET_APPS), "ipi_rate_mean"]
    others = a.drop(index=list(QUIET_APPS))["ipi_rate_mean"]
    lowest = quiet.max() < others.min()
    out.append(Claim(
        "Fig 1", "blackscholes, freqmine, raytrace barely communicate (lowest IPI rates)",
        "the three lowest",
        f"max of the three {quiet.max():.1f}/s/vCPU; min of the others {others.min():.1f} ({others.idxmin()})",
        REPRODUCED if lowest else (DIRECTION if quiet.mean() < others.median() else NOT_REPRODUCED)))
    return out


def plot(agg) -> None:
    long = []
    for kind, col in (("reschedule", "resched_ipi_rate"), ("TLB shootdown", "tlb_ipi_rate")):
        sub = agg[["app", f"{col}_mean", f"{col}_std"]].rename(
            columns={f"{col}_mean": "rate_mean", f"{col}_std": "rate_std"})
        sub["type"] = kind
        long.append(sub)
    import pandas as pd

    bar_plot(pd.concat(long), "app", "type", "rate", "IPIs / s / vCPU", "Figure 1: IPI rates, solo (8 vCPUs)",
             out_dir(FIG) / "fig01_ipi_rates.png")


def write_outputs(measured) -> pd.DataFrame:
    """CSV and PNG outputs; returns the aggregate the claims read."""
    df, agg = measured
    write_csv(df, FIG, "runs")
    write_csv(agg, FIG, "fig01_ipi_rates")
    plot(agg)
    return agg


main = figure_main(FIG, measure, write_outputs, claims)


if __name__ == "__main__":
    main(parse_args(__doc__))
