"""Smoke test of the seed-001 experiment pipeline (experiments/xen_cmt): Figure 1 and the usage
maps (Figures 5, 7, 8, 9) end to end with --quick settings (1 s of tascell-fib work, threads 1, 4,
8, 12, 16, one seed), into a temporary folder.

The scripts' whole path runs (seed 001's host and VM, xl's node affinity, the bare-metal PM, the
shared pool of saved runs, aggregation, CSV, PNG, claim tables judged by the validation
protocol), and the numbers show what the model was built to show: the one-thread VM/PM ratio is
the configured overhead (a calibration row), and the 0-16 VM fills node 2 (pCPUs 16-23) before
node 3. With one seed nothing is beyond noise, so only verdicts that need no interval (absolute
counts) are asserted.
"""

import math
import sys
from pathlib import Path

import pytest

EXPERIMENTS = Path(__file__).resolve().parent.parent / "experiments" / "xen_cmt"
sys.path.insert(0, str(EXPERIMENTS))
# Every experiment set has a `common` module; another set's smoke test may have imported its own
# first, and the figure scripts below must get this set's.
for name in ("common", "fig01_pm_vs_vm", "fig05_07_08_09_usage"):
    sys.modules.pop(name, None)

import common  # noqa: E402
import fig01_pm_vs_vm  # noqa: E402
import fig05_07_08_09_usage  # noqa: E402

# ... and leave no `common` behind for a set collected after this one.
for name in ("common", "fig01_pm_vs_vm", "fig05_07_08_09_usage"):
    sys.modules.pop(name, None)
sys.path.remove(str(EXPERIMENTS))

VERDICTS = {common.R, common.D, common.N}


def saved(out: Path) -> list[str]:
    """The saved runs of the shared pool (one folder each; the pool also keeps an index file)."""
    return sorted(p.name for p in (out / ".runs" / "pool").iterdir() if p.is_dir())


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    out = tmp_path_factory.mktemp("xen_cmt")
    patch = pytest.MonkeyPatch()
    patch.setattr(common.OUT, "root", out)
    settings = common.Settings(quick=True, seeds=1, processes=2)
    fig1 = fig01_pm_vs_vm.main(settings)
    usage = fig05_07_08_09_usage.main(settings)
    runs = saved(out)
    yield out, settings, fig1, usage, runs
    patch.undo()


def test_csv_png_and_claims_are_written(outputs):
    out, *_ = outputs
    expected = {
        "fig01": ("runs.csv", "fig01_runtime.csv", "claims.csv", "fig01.png"),
        "fig05_07_08_09": ("usage.csv", "claims.csv", "fig05.png", "fig07.png", "fig08.png", "fig09.png"),
    }
    for fig, names in expected.items():
        for name in names:
            path = out / fig / name
            assert path.stat().st_size > 0, path
            if name.endswith(".png"):
                assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", path


def test_claims_follow_the_protocol(outputs):
    out, _, fig1, usage, _ = outputs
    for claims in (fig1, usage):
        assert {c.verdict for c in claims} <= VERDICTS
        ids = [c.id for c in claims]
        assert len(set(ids)) == len(ids), ids
        assert all(c.source and c.paper and c.ours for c in claims)
        # One seed: no interval, so no direction holds beyond noise and no prediction that needs one is R.
        assert all(c.n == 1 for c in claims)
    assert [c.id for c in fig1] == ["overhead-1t", "gap-8t", "gap-largest-8t", "vm-steep-4-8", "vm-recovers-8-12",
                                    "vm-slows-12-16"]
    assert all(c.verdict == common.N for c in fig1 if c.type == common.DIRECTION)
    written = common.pd.read_csv(out / "fig01" / "claims.csv")
    assert list(written["id"]) == [f"fig01.{c.id}" for c in fig1]
    assert set(written["n_seeds"]) == {1}


def test_one_thread_overhead_is_the_input_and_a_calibration(outputs):
    _, _, fig1, _, _ = outputs
    overhead = fig1[0]
    assert overhead.kind == common.CALIBRATION and overhead.type == common.POINT
    assert "virt_overhead" in overhead.note
    # One thread: nothing to contend for, so the VM is slower by the configured overhead (within
    # the few ms of vCPU start skew, 0.6% of these 1 s runs); paired on the seed, mean(T_VM)/mean(T_PM) - 1.
    assert overhead.estimate.mean == pytest.approx(common.VIRT_OVERHEAD, abs=0.01)
    runtime = common.pd.read_csv(outputs[0] / "fig01" / "fig01_runtime.csv").set_index(["placement", "threads"])
    ratio = runtime.loc[("0-16", 1), "runtime_s_mean"] / runtime.loc[("PM", 1), "runtime_s_mean"]
    assert ratio == pytest.approx(1 + common.VIRT_OVERHEAD, abs=0.01)


def test_usage_counts_are_judged_as_absolute_levels(outputs):
    _, _, _, usage, _ = outputs
    by_id = {c.id: c for c in usage}
    # Figure 5: the 0-16 VM's 8 busiest pCPUs are node 2's (16-23): a count with no reference, so
    # one seed can reproduce it. Figure 7: 16 threads in 7-9 cover nine modules (the seven
    # competing ones are the same measurement, an extra).
    assert by_id["016-8t-node2"].estimate.mean == 8 and by_id["016-8t-node2"].verdict == common.R
    assert by_id["79-16t-nine-modules"].estimate.mean == 9 and by_id["79-16t-nine-modules"].verdict == common.R
    assert by_id["79-16t-seven-competing"].kind == common.EXTRA
    assert by_id["016-module-order"].verdict == common.R, by_id["016-module-order"]


def test_runtimes_are_finite_and_the_0_16_vm_fills_node_2_first(outputs):
    out, settings, *_ = outputs
    df = common.run_points(["fib"], [common.VM_0_16], common.QUICK_THREADS, settings, [1])
    assert all(math.isfinite(v) and v > 0 for v in df["runtime_s"])
    # Seed 001 III-G: xl's node affinity {0, 2} with vCPU affinity 16-31: up to 8 threads the VM
    # runs on node 2 (16-23) only, four modules one core each at 4 threads.
    for k, want in ((4, 0), (8, 4)):
        busiest = fig05_07_08_09_usage.per_seed(df, "0-16", k)[0]
        assert all(16 <= p < 24 for p in busiest), (k, busiest)
        assert fig05_07_08_09_usage.competing(busiest) == want, (k, busiest)


def test_figures_share_the_pool_and_a_rerun_computes_nothing(outputs):
    out, settings, _, _, runs = outputs
    # Figure 1 ran 0-16 and PM, the usage maps 0-16, 8-8 and 7-9: 0-16 is shared, so 4 placements
    # x 5 thread counts, not 5 x 5.
    assert len(runs) == 4 * len(common.QUICK_THREADS)
    fig01_pm_vs_vm.main(settings)
    assert saved(out) == runs
