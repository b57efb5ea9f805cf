"""Sweeps: many runs in worker processes, saved as they finish, resumable."""

from __future__ import annotations

import importlib.util

import pytest
import vcpusim
from conftest import SMALL_SCENARIO


@pytest.fixture
def scenarios():
    base = vcpusim.Scenario(SMALL_SCENARIO, "small.toml").with_duration("100ms")
    return [base.with_seed(seed) for seed in (1, 2, 3)] + [base.with_policy("credit").with_seed(1)]


def test_two_processes_give_the_same_results_as_sequential_runs(scenarios):
    parallel = vcpusim.run_many(scenarios, processes=2, progress=False)
    sequential = [vcpusim.run(s) for s in scenarios]
    assert [r.files() for r in parallel] == [r.files() for r in sequential]


def test_results_are_saved_as_they_finish_and_a_rerun_skips_them(scenarios, tmp_path):
    out = tmp_path / "sweep"
    first = vcpusim.run_many(scenarios, processes=2, progress=False, out_dir=out)
    assert sorted(p.name for p in out.iterdir()) == ["0", "1", "2", "3"]
    for i, result in enumerate(first):
        assert vcpusim.Result.read(out / str(i)) == result
        assert (out / str(i) / "scenario.toml").read_text() == scenarios[i].text

    # Mark run 0 on disk and drop run 2, as if the sweep had died before finishing it.
    marked = (out / "0" / "summary.json").read_text().rstrip() + "\n"
    (out / "0" / "summary.json").write_text(marked)
    for file in (out / "2").iterdir():
        file.unlink()
    (out / "2").rmdir()

    again = vcpusim.run_many(scenarios, processes=2, progress=False, out_dir=out)
    assert again[0].summary_json == marked, "run 0 was read from disk, not recomputed"
    assert again[2] == first[2], "run 2 was recomputed, with the same result"
    assert (out / "2").is_dir()


def test_resuming_into_a_folder_of_another_sweep_is_refused(scenarios, tmp_path):
    out = tmp_path / "sweep"
    vcpusim.run_many(scenarios[:1], processes=1, progress=False, out_dir=out)
    with pytest.raises(vcpusim.VcpusimError, match="different run"):
        vcpusim.run_many(scenarios[1:2], processes=1, progress=False, out_dir=out)


def test_a_failing_run_does_not_lose_the_others(scenarios, tmp_path):
    out = tmp_path / "sweep"
    failing = scenarios[0].replace(max_events=10)
    with pytest.raises(vcpusim.LimitError, match=r"run 1 \(small\.toml\)"):
        vcpusim.run_many([scenarios[0], failing, scenarios[1]], processes=2, progress=False, out_dir=out)
    assert sorted(p.name for p in out.iterdir()) == ["0", "2"]


def test_progress_bar_does_not_change_results(scenarios):
    with_bar = vcpusim.run_many(scenarios[:2], processes=1, progress=True)
    assert [r.files() for r in with_bar] == [vcpusim.run(s).files() for s in scenarios[:2]]


@pytest.mark.skipif(importlib.util.find_spec("ray") is not None, reason="ray is installed")
def test_ray_sweep_without_ray_says_how_to_get_it(scenarios):
    with pytest.raises(ImportError, match=r"vcpusim\[ray\]"):
        vcpusim.run_many_ray(scenarios)
