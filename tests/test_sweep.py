"""Sweeps: many runs in worker processes, saved as they finish, resumable."""

from __future__ import annotations

import json
import shutil
import sys
import warnings

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


def _folders(out):
    return sorted(p.name for p in out.iterdir() if p.is_dir())


def test_results_are_saved_by_content_and_a_rerun_in_any_order_skips_them(scenarios, tmp_path, monkeypatch):
    out = tmp_path / "sweep"
    first = vcpusim.run_many(scenarios, processes=2, progress=False, out_dir=out)
    keys = [vcpusim.runs.run_key(s, False, False) for s in scenarios]
    assert _folders(out) == sorted(keys)
    for key, scenario, result in zip(keys, scenarios, first):
        assert vcpusim.Result.read(out / key) == result
        assert (out / key / "scenario.toml").read_text() == scenario.text
    index = (out / "index.csv").read_text().splitlines()
    assert index[0] == "position,folder,source,finished"
    assert [line.split(",")[1] for line in index[1:]] == keys

    # Reordered, with one run dropped and one added: only the new one runs.
    ran = []
    real = vcpusim.runs._run_in_worker
    monkeypatch.setattr(vcpusim.runs, "_run_in_worker", lambda *a: ran.append(a[1]) or real(*a))
    extra = scenarios[0].with_seed(99)
    again = vcpusim.run_many([scenarios[3], extra, scenarios[1], scenarios[0]], processes=1, progress=False, out_dir=out)
    assert len(ran) == 1, "only the new run was computed"
    assert [r.files() for r in again] == [first[3].files(), vcpusim.run(extra).files(), first[1].files(), first[0].files()]


def test_results_of_another_engine_build_are_not_reused(scenarios, tmp_path, monkeypatch):
    out = tmp_path / "sweep"
    vcpusim.run_many(scenarios[:2], processes=1, progress=False, out_dir=out)
    before = _folders(out)
    ran = []
    real = vcpusim.runs._run_in_worker
    monkeypatch.setattr(vcpusim.runs, "_run_in_worker", lambda *a: ran.append(a[1]) or real(*a))
    # Another build of the engine (another model): every run is computed again, into new folders.
    monkeypatch.setattr(vcpusim.runs, "engine_fingerprint", lambda: "another build")
    vcpusim.run_many(scenarios[:2], processes=1, progress=False, out_dir=out)
    assert len(ran) == 2
    assert len(set(_folders(out)) - set(before)) == 2


def test_a_damaged_saved_run_is_run_again(scenarios, tmp_path):
    out = tmp_path / "sweep"
    first = vcpusim.run_many(scenarios[:3], processes=1, progress=False, out_dir=out)
    keys = [vcpusim.runs.run_key(s, False, False) for s in scenarios[:3]]
    # A truncated file, a missing one, and a folder without its record, as a dying disk leaves them.
    summary = out / keys[0] / "summary.json"
    summary.write_bytes(summary.read_bytes()[:10])
    (out / keys[1] / "metrics.csv").unlink()
    (out / keys[2] / "run.json").unlink()
    with pytest.warns(RuntimeWarning) as caught:
        again = vcpusim.run_many(scenarios[:3], processes=1, progress=False, out_dir=out)
    messages = " | ".join(str(w.message) for w in caught)
    assert "summary.json is truncated or changed" in messages
    assert "metrics.csv is missing" in messages
    assert "run.json is missing or unreadable" in messages
    assert [r.files() for r in again] == [r.files() for r in first]
    for key, result in zip(keys, first):
        assert vcpusim.Result.read(out / key) == result


def _renamed(scenario, source):
    return vcpusim.Scenario(scenario.text, source)


def _count_runs(monkeypatch):
    ran = []
    real = vcpusim.runs._run_in_worker
    monkeypatch.setattr(vcpusim.runs, "_run_in_worker", lambda *a: ran.append(a[1]) or real(*a))
    return ran


def test_a_run_saved_by_one_sweep_is_taken_by_another_sweep_of_it_under_another_name(scenarios, tmp_path, monkeypatch):
    # An experiment set's figures share runs: the same scenario text under each figure's name.
    first = vcpusim.run_many([_renamed(s, f"fig05[seed={i}]") for i, s in enumerate(scenarios[:3])],
                             processes=1, progress=False, out_dir=tmp_path / "fig05")
    ran = _count_runs(monkeypatch)
    second_scenarios = [_renamed(s, f"fig06[seed={i}]") for i, s in enumerate(scenarios[:3])] + [scenarios[3]]
    second = vcpusim.run_many(second_scenarios, processes=2, progress=False, out_dir=tmp_path / "fig06")
    assert ran == [scenarios[3].source], "only the run fig05 did not have was computed"
    # Byte for byte what computing them under the new names gives, summary.json's name included.
    fresh = [vcpusim.run(s) for s in second_scenarios]
    assert [r.files() for r in second] == [r.files() for r in fresh]
    assert [json.loads(r.summary_json)["scenario"] for r in second[:3]] == ["fig06[seed=0]", "fig06[seed=1]", "fig06[seed=2]"]
    assert [r.files() for r in first] != [r.files() for r in second[:3]], "the names differ"
    # Saved in the second sweep's folder too, whole: a rerun there reads them without the first.
    shutil.rmtree(tmp_path / "fig05")
    again = vcpusim.run_many(second_scenarios, processes=1, progress=False, out_dir=tmp_path / "fig06")
    assert len(ran) == 1
    assert [r.files() for r in again] == [r.files() for r in fresh]


def test_a_run_is_not_taken_from_a_damaged_or_removed_folder_or_into_a_traced_sweep(scenarios, tmp_path, monkeypatch):
    vcpusim.run_many(scenarios[:2], processes=1, progress=False, out_dir=tmp_path / "a")
    key = vcpusim.runs.run_key(scenarios[0], False, False)
    (tmp_path / "a" / key / "metrics.csv").write_text("changed")
    shutil.rmtree(tmp_path / "a" / vcpusim.runs.run_key(scenarios[1], False, False))
    ran = _count_runs(monkeypatch)
    renamed = [_renamed(s, "b") for s in scenarios[:2]]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # another sweep's damaged folder is not this sweep's to report
        got = vcpusim.run_many(renamed, processes=1, progress=False, out_dir=tmp_path / "b")
    assert len(ran) == 2, "both computed"
    assert [r.files() for r in got] == [vcpusim.run(s).files() for s in renamed]
    assert (tmp_path / "a" / key / "metrics.csv").read_text() == "changed", "left as it was"
    # A traced run's trace.json names its source too: a traced sweep computes its runs.
    vcpusim.run_many(renamed, processes=1, progress=False, out_dir=tmp_path / "c", trace=True)
    vcpusim.run_many([_renamed(s, "d") for s in scenarios[:2]], processes=1, progress=False, out_dir=tmp_path / "d", trace=True)
    assert len(ran) == 6


@pytest.mark.parametrize("source", ['plain', 'q"uo\\te', 'tab\tnew\nline\x01\x1f', 'é ü 漢 \u2028 /slash'])
def test_relabel_summary_writes_what_rust_writes_for_the_new_name(source):
    base = vcpusim.Scenario(SMALL_SCENARIO, "small.toml").with_duration("20ms")
    rust = vcpusim.run(_renamed(base, source)).summary_json
    ours = vcpusim.runs.relabel_summary(vcpusim.run(base).summary_json, "small.toml", source)
    assert ours == rust
    assert vcpusim.runs.relabel_summary(rust, "not its name", "x") is None


def test_a_killed_worker_loses_no_run(scenarios, tmp_path, monkeypatch):
    import sweep_helpers

    monkeypatch.setenv(sweep_helpers.MARKER_ENV, str(tmp_path / "killed"))
    monkeypatch.setattr(vcpusim.runs, "_run_in_worker", sweep_helpers.killing_worker)
    victim = vcpusim.Scenario(scenarios[1].text, "kill-once")
    runs = [scenarios[0], victim, scenarios[2], scenarios[3]]
    results = vcpusim.run_many(runs, processes=2, progress=False, out_dir=tmp_path / "sweep")
    assert (tmp_path / "killed").exists(), "the worker was killed"
    assert [r.files() for r in results] == [vcpusim.run(s).files() for s in runs]
    assert len(_folders(tmp_path / "sweep")) == 4
    # The pool that lost a worker is not kept; the next sweep runs.
    again = vcpusim.run_many(runs, processes=2, progress=False)
    assert [r.files() for r in again] == [r.files() for r in results]


def test_a_run_that_kills_its_worker_every_time_is_reported_and_the_others_are_saved(scenarios, tmp_path, monkeypatch):
    import sweep_helpers

    monkeypatch.setattr(vcpusim.runs, "_run_in_worker", sweep_helpers.killing_worker)
    killer = vcpusim.Scenario(scenarios[1].text, "always-kill")
    out = tmp_path / "sweep"
    with pytest.raises(vcpusim.VcpusimError, match=r"run 1 \(always-kill\) failed: its worker process died"):
        vcpusim.run_many([scenarios[0], killer, scenarios[2], scenarios[3]], processes=2, progress=False, out_dir=out)
    others = [scenarios[0], scenarios[2], scenarios[3]]
    assert _folders(out) == sorted(vcpusim.runs.run_key(s, False, False) for s in others)
    assert "always-kill" in (out / "index.csv").read_text()


def _kept_pool(workers=2):
    kept = vcpusim.runs._POOLS.get(workers)
    return kept[1] if kept is not None else None


def test_worker_processes_are_kept_between_sweeps_and_replaced_when_stale_or_dead(scenarios, monkeypatch):
    import os
    import signal
    import time

    expected = [vcpusim.run(s).files() for s in scenarios]
    assert [r.files() for r in vcpusim.run_many(scenarios, processes=2, progress=False)] == expected
    pool = _kept_pool()
    workers = set(pool._processes)
    assert len(workers) == 2
    # The next sweep runs in the same workers.
    assert [r.files() for r in vcpusim.run_many(scenarios[::-1], processes=2, progress=False)] == expected[::-1]
    assert _kept_pool() is pool and set(pool._processes) == workers
    # Another environment: workers started under the old one are not reused.
    monkeypatch.setenv("VCPUSIM_TEST_POOL_STATE", "changed")
    assert [r.files() for r in vcpusim.run_many(scenarios, processes=2, progress=False)] == expected
    assert _kept_pool() is not pool
    # A kept worker killed while idle (out of memory, say): the next sweep starts a new pool.
    pool = _kept_pool()
    os.kill(next(iter(pool._processes)), signal.SIGKILL)
    time.sleep(0.5)
    assert [r.files() for r in vcpusim.run_many(scenarios, processes=2, progress=False)] == expected
    assert _kept_pool() is not pool


def test_a_failing_run_does_not_lose_the_others(scenarios, tmp_path):
    out = tmp_path / "sweep"
    failing = scenarios[0].replace(max_events=10)
    with pytest.raises(vcpusim.LimitError, match=r"run 1 \(small\.toml\)"):
        vcpusim.run_many([scenarios[0], failing, scenarios[1]], processes=2, progress=False, out_dir=out)
    assert _folders(out) == sorted(vcpusim.runs.run_key(s, False, False) for s in (scenarios[0], scenarios[1]))


def test_progress_bar_does_not_change_results(scenarios):
    with_bar = vcpusim.run_many(scenarios[:2], processes=1, progress=True)
    assert [r.files() for r in with_bar] == [vcpusim.run(s).files() for s in scenarios[:2]]


def test_ray_sweep_without_ray_says_how_to_get_it(scenarios, monkeypatch):
    # Ray hidden (the test extras install it): `import ray` fails as where it is not installed.
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(ImportError, match=r"vcpusim\[ray\]"):
        vcpusim.run_many_ray(scenarios)


UNGUARDED = """\
import vcpusim
sc = vcpusim.Scenario.from_dict({small!r}, "small")
results = vcpusim.run_many([sc, sc.with_seed(2)], processes=2, progress=False)
print("done", len(results))
"""


def test_run_many_without_the_main_guard_says_so_instead_of_a_broken_pool(tmp_path):
    import subprocess
    import tomllib

    small = tomllib.loads(SMALL_SCENARIO)
    script = tmp_path / "sweep_script.py"
    script.write_text(UNGUARDED.format(small=small))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert done.returncode != 0
    assert "BrokenProcessPool" not in done.stderr
    assert f"{script}" in done.stderr and "line 3" in done.stderr, done.stderr
    assert 'if __name__ == "__main__":' in done.stderr, done.stderr

    # The same code under the guard runs; one process needs no guard at all.
    guarded = UNGUARDED.format(small=small).replace("results =", 'if __name__ == "__main__":\n    results =')
    guarded = guarded.replace('\nprint("done"', '\n    print("done"')
    script.write_text(guarded)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "done 2"
    script.write_text(UNGUARDED.format(small=small).replace("processes=2", "processes=1"))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr


IMPORT_COUNTING = """\
import os
import vcpusim
with open({marker!r}, "a") as f:
    f.write(str(os.getpid()) + "\\n")
if __name__ == "__main__":
    sc = vcpusim.Scenario.from_dict({small!r}, "small")
    results = vcpusim.run_many([sc, sc.with_seed(2), sc.with_seed(3)], processes=2, progress=False)
    print("done", len(results), len({{r.summary["seed"] for r in results}}))
"""


def test_sweep_workers_do_not_run_the_calling_script_again(tmp_path):
    # A spawn worker would run the script's top level again (multiprocessing's __mp_main__),
    # importing whatever the script imports before its first run; ours start without it.
    import subprocess
    import tomllib

    marker = tmp_path / "imports.txt"
    script = tmp_path / "counting_script.py"
    script.write_text(IMPORT_COUNTING.format(marker=str(marker), small=tomllib.loads(SMALL_SCENARIO)))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "done 3 3", done.stdout
    runs_of_script = marker.read_text().split()
    assert len(runs_of_script) == 1, f"the script ran in {len(runs_of_script)} processes (only the parent expected)"


@pytest.mark.parametrize("call, error, message", [
    (lambda s: vcpusim.run_many("file.toml"), TypeError, "run_many: scenarios: expected a list of scenarios .* got one str 'file.toml'"),
    (lambda s: vcpusim.run_many(5), TypeError, "run_many: scenarios: expected a list of scenarios, got int 5"),
    (lambda s: vcpusim.run_many([s, 5]), TypeError, r"run_many: scenarios\[1\]: expected a Scenario"),
    (lambda s: vcpusim.run_many([s], processes="2"), TypeError, "run_many: processes: expected a positive integer or None .* got str '2'"),
    (lambda s: vcpusim.run_many([s], processes=0), ValueError, "run_many: processes: expected a positive integer or None .* got 0"),
    (lambda s: vcpusim.run_many([s], processes=1, trace="yes"), TypeError, "run_many: trace: expected True or False, got str 'yes'"),
])
def test_run_many_argument_errors_name_the_argument(scenarios, call, error, message):
    with pytest.raises(error, match=message):
        call(scenarios[0])


def test_run_json_says_what_computed_the_run_and_results_honour_the_umask(scenarios, tmp_path):
    import os

    old = os.umask(0o022)
    try:
        out = tmp_path / "sweep"
        vcpusim.run_many(scenarios[:1], processes=1, progress=False, out_dir=out)
        folder = out / vcpusim.runs.run_key(scenarios[0], False, False)
        record = json.loads((folder / "run.json").read_text())
        assert record["vcpusim"] == {
            "version": vcpusim.__version__,
            "profile": vcpusim._core.build_info()["profile"],
            "pgo": bool(vcpusim._core.build_info()["pgo"]),
            "engine_sha256": vcpusim.runs.engine_fingerprint(),
        }
        # Every file of the run folder is 0644 under umask 022, result files included.
        modes = {p.name: p.stat().st_mode & 0o777 for p in folder.iterdir()}
        assert set(modes.values()) == {0o644}, modes
        # Under umask 077 a result is the user's alone.
        os.umask(0o077)
        private = vcpusim.run(scenarios[0]).write(tmp_path / "private")
        assert {p.stat().st_mode & 0o777 for p in private.iterdir()} == {0o600}
        # A written result says what computed it in a file of its own, as run.json does.
        assert json.loads((private / "provenance.json").read_text()) == {"vcpusim": record["vcpusim"]}
        assert "vcpusim" not in json.loads((private / "summary.json").read_text())
    finally:
        os.umask(old)
    # A saved run whose run.json names another build is not taken.
    record["vcpusim"]["version"] = "0.0.0-other"
    (folder / "run.json").write_text(json.dumps(record, indent=1, sort_keys=True))
    with pytest.warns(RuntimeWarning, match="names other inputs"):
        vcpusim.run_many(scenarios[:1], processes=1, progress=False, out_dir=out)


def test_the_progress_bar_says_runs_and_labels_its_times():
    from rich.console import Console

    bar = vcpusim.runs._progress_bar(True)
    bar.add_task("runs", total=4, completed=1)
    console = Console(record=True, width=120)
    console.print(bar.make_tasks_table(bar.tasks))
    line = console.export_text()
    assert line.lstrip().startswith("runs") and "1/4" in line, line
    assert "elapsed" in line and "left" in line, line
    assert "sweep" not in line, "run_many draws this bar too"
