"""Smoke test of the seed-003 (IRS) experiment set (experiments/irs): every slide script end to
end with --quick settings (1 s runs, one seed, a few programs, 1 and 4 interfering VMs), into a
temporary folder, and slide 12's claims judged on made-up runs over five seeds.

The scripts' whole path runs (the 4-pCPU Xen 4.4 credit host, pinned VMs and CPU hogs, the IRS
overlay with and without its migrator, PLE, the shared pool of saved runs, aggregation, CSV, PNG,
claim tables), and the numbers show what the model was built to show: without interference every
scheme runs the same program at the same speed, IRS's notify-to-switch stays within the notify
delay, a --quick run returns every claim a full run does (its verdicts mean nothing: one seed,
no interval), and each claim is judged by the protocol on the measured values (a gain beyond
noise is R, a loss beyond noise is not "no gain").
"""

import math
import sys
from pathlib import Path

import pytest

EXPERIMENTS = Path(__file__).resolve().parent.parent / "experiments" / "irs"
SCRIPTS = ("slide05_slowdown", "slide12_parsec", "slide13_npb", "slide14_server", "slide15_weighted",
           "slide16_interference", "slide18_stacking")
sys.path.insert(0, str(EXPERIMENTS))
# Every experiment set has a `common` module; another set's smoke test may have imported its own
# first, and the scripts below must get this set's.
for name in ("common", *SCRIPTS):
    sys.modules.pop(name, None)

import common  # noqa: E402
import slide05_slowdown  # noqa: E402
import slide12_parsec  # noqa: E402
import slide13_npb  # noqa: E402
import slide14_server  # noqa: E402
import slide15_weighted  # noqa: E402
import slide16_interference  # noqa: E402
import slide18_stacking  # noqa: E402

MODULES = {name: sys.modules[name] for name in SCRIPTS}
# ... and leave no `common` behind for a set collected after this one.
for name in ("common", *SCRIPTS):
    sys.modules.pop(name, None)
sys.path.remove(str(EXPERIMENTS))

VERDICTS = {common.R, common.D, common.N}
#: Every script's claims, in a --quick run as in a full one.
IDS = {
    "slide05_slowdown": ["slower-than-fair-share", "work-stealing-resilient"],
    "slide12_parsec": ["decreasing", "few-interfered-gain", "few-interfered-migrates", "pipelines-little-room",
                       "ple-no-gain", "irs-beats-ple", "irs-beats-relaxed-co", "notify-delay"],
    "slide13_npb": ["ple-spinning-over-blocking", "relaxed-co-spinning-over-blocking", "no-idle-vcpu",
                    "scheduling-sooner", "vcpu-wait", "irs-beats-ple", "irs-beats-relaxed-co"],
    "slide14_server": ["ab-no-effect"],
    "slide15_weighted": ["weighted-speedup-22", "foreground-gain"],
    "slide16_interference": ["decreasing", "useful-consolidated"],
    "slide18_stacking": ["nomig-worse", "irs-beats-vanilla", "migrator-helps"],
}
OUT_DIRS = {"slide05_slowdown": "slide05", "slide12_parsec": "slide12", "slide13_npb": "slide13",
            "slide14_server": "slide14", "slide15_weighted": "slide15", "slide16_interference": "slide16",
            "slide18_stacking": "slide18"}


def saved(out: Path) -> list[str]:
    return sorted(p.name for p in (out / ".runs" / "pool").iterdir() if p.is_dir())


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    out = tmp_path_factory.mktemp("irs")
    patch = pytest.MonkeyPatch()
    patch.setattr(common.OUT, "root", out)
    settings = common.Settings(quick=True, seeds=1, processes=2)
    claims, added = {}, {}
    for name in SCRIPTS:
        before = len(saved(out)) if (out / ".runs" / "pool").exists() else 0
        claims[name] = MODULES[name].main(settings)
        added[name] = len(saved(out)) - before
    settings.added = added
    yield out, settings, claims, saved(out)
    patch.undo()


def test_every_script_writes_csv_png_and_claims(outputs):
    out, _, claims, _ = outputs
    for name, fig in OUT_DIRS.items():
        files = list((out / fig).iterdir())
        assert any(f.name == "claims.csv" for f in files), name
        pngs = [f for f in files if f.suffix == ".png"]
        assert pngs, name
        for f in files:
            assert f.stat().st_size > 0, f
        for f in pngs:
            assert f.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", f
        assert [c.id for c in claims[name]] == IDS[name], name
        for c in claims[name]:
            assert c.verdict in VERDICTS and c.paper and c.source and c.ours, (name, c)
            assert c.n == 1 or "not in this build" in c.ours, (name, c)  # a refused scheme: not measured
            assert c.cause, (name, c.id)  # every row names the cause a miss would have
        written = common.pd.read_csv(out / fig / "claims.csv")
        assert list(written["id"]) == [f"{fig}.{i}" for i in IDS[name]]


def test_one_measurement_counts_once_and_inputs_are_calibrations(outputs):
    _, _, claims, _ = outputs
    by = {(name, c.id): c for name, cs in claims.items() for c in cs}
    # Slide 12's trend is slide 16's runs at 1 and 4 VMs (--quick): the same numbers, one counted.
    s12, s16 = by[("slide12_parsec", "decreasing")], by[("slide16_interference", "decreasing")]
    assert (s12.kind, s16.kind) == (common.EXTRA, common.PREDICTION) and s12.ours == s16.ours
    # Slide 7's delay is set by the IRS model's notify_delay and handler: a calibration, inside 20-26 us.
    delay = by[("slide12_parsec", "notify-delay")]
    assert delay.kind == common.CALIBRATION and delay.type == common.RANGE
    assert 20.0 <= delay.estimate.mean <= 23.0 and delay.verdict == common.R
    # What the model cannot measure is N, "not measured", never a lenient verdict on a neighbour.
    for cid in ("no-idle-vcpu", "scheduling-sooner"):
        c = by[("slide13_npb", cid)]
        assert c.verdict == common.N and c.ours.startswith("not measured") and c.cause == common.MEASURED
    assert by[("slide13_npb", "vcpu-wait")].kind == common.EXTRA
    # With one seed nothing is beyond noise: no direction claim holds in a --quick run.
    assert all(c.verdict == common.N for cs in claims.values() for c in cs if c.type == common.DIRECTION)


def test_a_refused_scheme_is_not_measured(outputs, monkeypatch):
    _, _, claims, _ = outputs
    rc = [c for c in claims["slide12_parsec"] if c.id == "irs-beats-relaxed-co"]
    assert len(rc) == 1
    if common.available(common.RELAXED_CO) is None:
        assert "relaxed-Co" in rc[0].ours and not rc[0].ours.startswith("not measured")
    # A build that refuses relaxed-co: its claims are N, "not measured", with the loader's reason.
    monkeypatch.setitem(common._AVAILABLE, common.RELAXED_CO, "unknown overlay 'relaxed-co'")
    df = made_up_slide12({common.IRS: lambda b, n: 0.1, common.PLE: lambda b, n: 0.0,
                          common.RELAXED_CO: lambda b, n: 0.0})
    df = df[df["scheme"] != common.RELAXED_CO]
    c = {c.id: c for c in slide12_parsec.claims(df)}["irs-beats-relaxed-co"]
    assert c.verdict == common.N and c.ours.startswith("not measured") and "unknown overlay" in c.ours


def made_up_slide12(gain: dict, seeds=range(1, 6)):
    """Slide 12's table for three programs at 1, 2 and 4 VMs on five seeds: vanilla's performance
    100 + seed, each scheme's that times (1 + gain[scheme](bench, noise) + a small wobble by seed,
    program and level)."""
    rows = []
    for bench in ("bodytrack", "dedup", "streamcluster"):
        for noise in (1, 2, 4):
            for seed in seeds:
                base = 100.0 + seed
                for scheme in (common.VANILLA, common.PLE, common.RELAXED_CO, common.IRS):
                    wobble = 0.002 * ((seed * (noise + len(bench))) % 5 - 2)
                    g = 0.0 if scheme == common.VANILLA else gain[scheme](bench, noise) + wobble
                    irs = scheme == common.IRS
                    rows.append({"bench": bench, "scheme": scheme, "noise": noise, "layout": "pinned", "bg": "",
                                 "seed": seed, "perf": base * (1 + g), "ple_exit_count": 0,
                                 "preempt_notices": 10 if irs else 0, "irs_migrations": 9 if irs else 0,
                                 "notify_to_switch_mean_us": 20.0 if irs else 0.0,
                                 "notify_to_switch_max_us": 20.0 if irs else 0.0})
    return common.improvement(common.pd.DataFrame(rows))


def test_slide12_claims_on_five_seeds():
    def irs(bench, noise):  # pipelines (dedup) get nothing; the others gain less as interference rises
        return 0.0 if bench == "dedup" else {1: 0.30, 2: 0.15, 4: 0.05}[noise]

    verdicts = lambda df: {c.id: c.verdict for c in slide12_parsec.claims(df)}  # noqa: E731
    v = verdicts(made_up_slide12({common.IRS: irs, common.PLE: lambda b, n: 0.0,
                                  common.RELAXED_CO: lambda b, n: -0.10}))
    assert v == {"decreasing": common.R, "few-interfered-gain": common.R, "few-interfered-migrates": common.R,
                 "pipelines-little-room": common.R, "ple-no-gain": common.R, "irs-beats-ple": common.R,
                 "irs-beats-relaxed-co": common.R, "notify-delay": common.R}
    # PLE losing 20% beyond noise is not "no gain"; IRS then still beats it.
    v = verdicts(made_up_slide12({common.IRS: irs, common.PLE: lambda b, n: -0.20,
                                  common.RELAXED_CO: lambda b, n: -0.10}))
    assert v["ple-no-gain"] == common.N and v["irs-beats-ple"] == common.R
    # A pipeline that gains 30% beyond noise is not "little room".
    v = verdicts(made_up_slide12({common.IRS: lambda b, n: 0.30, common.PLE: lambda b, n: 0.0,
                                  common.RELAXED_CO: lambda b, n: 0.0}))
    assert v["pipelines-little-room"] == common.N and v["decreasing"] == common.N


def test_alone_every_scheme_runs_the_same_and_irs_switches_within_the_delay(outputs):
    out, settings, _, _ = outputs
    # No interference, nothing to preempt: IRS, PLE and vanilla give the same progress.
    pts = [common.point("bodytrack", s, 0, "solo") for s in (common.VANILLA, common.PLE, common.IRS)]
    df = common.par_rows(common.run_points(pts, settings, [1]))
    assert df["perf"].nunique() == 1 and df["perf"].iloc[0] > 0
    # Slide 12's IRS runs: every notice switched within notify_delay (23 us), and threads moved.
    runs = common.pd.read_csv(out / "slide12" / "runs.csv")
    irs = runs[(runs["scheme"] == common.IRS) & (runs["preempt_notices"] > 0)]
    assert len(irs) and (irs["notify_to_switch_max_us"] <= 23.0 + 1e-6).all()
    assert irs["irs_migrations"].sum() > 0
    assert all(math.isfinite(v) for v in runs["improvement"])


def test_scripts_share_the_pool_and_a_rerun_computes_nothing(outputs):
    out, settings, _, runs = outputs
    # Slide 16 at 1 and 4 interfering VMs (--quick) reads slide 12's IRS and vanilla points,
    # slides 13 and 14 read slide 12's PARSEC points, and slide 12 and 13's vanilla runs with 4
    # interfering VMs are slide 5's: each saved run was computed once.
    assert settings.added["slide16_interference"] == 0
    schemes = common.schemes_run((common.VANILLA, common.PLE, common.RELAXED_CO, common.IRS))
    per_program = len(schemes) * 2  # --quick's levels: 1 and 4 interfering VMs
    for script, progs in (("slide12_parsec", common.QUICK_PARSEC), ("slide13_npb", common.QUICK_NPB)):
        assert settings.added[script] == len(progs) * (per_program - 1), script  # less slide 5's vanilla at 4
    before = saved(out)
    assert set(runs) <= set(before)
    MODULES["slide12_parsec"].main(settings)
    MODULES["slide16_interference"].main(settings)
    MODULES["slide13_npb"].main(settings)
    assert saved(out) == before
