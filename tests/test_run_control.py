"""Controlling one run: Ctrl-C (CLI and Python), progress, trace windows and cuts, and how results
are written (checked before simulating, all or nothing, no stale trace.json)."""

from __future__ import annotations

import errno
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
import warnings

import pytest
import vcpusim
import vcpusim.api
import vcpusim.cli
from conftest import SMALL_SCENARIO, run_cli, write_scenario

#: Simulated time no test waits for: a run of it is stopped long before it ends.
ENDLESS = SMALL_SCENARIO.replace('duration = "200ms"', 'duration = "1000000s"')
#: Ctrl-C must stop a run within 0.5 s; the tests allow a generous margin for a busy machine.
INTERRUPT_BOUND_S = 5.0


def _wait_for(predicate, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("sig, status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_ctrl_c_or_sigterm_stops_the_cli_run_with_128_plus_the_signal_and_writes_nothing(tmp_path, sig, status):
    path = write_scenario(tmp_path, ENDLESS)
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "vcpusim", "run", str(path), "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # The run has started once the out dir was checked (created); give it a moment in the loop.
        assert _wait_for(out.exists), "the run did not start"
        time.sleep(0.5)
        sent = time.monotonic()
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=60)
        took = time.monotonic() - sent
    finally:
        proc.kill()
    assert proc.returncode == status, (proc.returncode, stderr)
    assert took < INTERRUPT_BOUND_S, took
    assert "interrupted: stopped at t = " in stderr and "nothing written" in stderr, stderr
    assert "Traceback" not in stderr
    assert not out.exists(), "the out folder the run created is removed"


def test_ctrl_c_in_python_raises_keyboard_interrupt(tmp_path):
    script = tmp_path / "long_run.py"
    script.write_text(textwrap.dedent(f"""
        import sys, vcpusim
        print("started", flush=True)
        try:
            vcpusim.run(vcpusim.Scenario({ENDLESS!r}))
        except KeyboardInterrupt:
            print("KeyboardInterrupt", flush=True)
            sys.exit(0)
        print("finished?!", flush=True)
    """))
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "started"
        time.sleep(1.0)  # importing is done; the run is in Rust with the GIL released
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
        took = time.monotonic() - sent
    finally:
        proc.kill()
    assert stdout.strip() == "KeyboardInterrupt", (stdout, stderr)
    assert proc.returncode == 0
    assert took < INTERRUPT_BOUND_S, took


def test_progress_reports_simulated_time_and_a_failing_callback_stops_the_run():
    scenario = vcpusim.Scenario(SMALL_SCENARIO.replace('duration = "200ms"', 'duration = "60s"'))
    seen = []
    result = vcpusim.run(scenario, progress=lambda now, duration, events: seen.append((now, duration, events)))
    assert seen, "a run of a second or more of wall time reports progress"
    assert all(d == 60_000_000_000 for _, d, _ in seen)
    nows = [n for n, _, _ in seen]
    assert nows == sorted(nows) and 0 < nows[-1] <= 60_000_000_000
    assert [e for _, _, e in seen] == sorted(e for _, _, e in seen)
    # Watching changes nothing in the results.
    assert result.files() == vcpusim.run(scenario).files()

    class Stop(Exception):
        pass

    def stop(*_):
        raise Stop("enough")

    with pytest.raises(Stop, match="enough"):
        vcpusim.run(scenario, progress=stop)


def test_progress_bar_does_not_change_results(tmp_path):
    scenario = vcpusim.Scenario(SMALL_SCENARIO)
    assert vcpusim.run(scenario, progress=True).files() == vcpusim.run(scenario).files()
    with pytest.raises(TypeError, match="run: progress: expected True, False or a callable, got str"):
        vcpusim.run(scenario, progress="yes")


# --- traces --------------------------------------------------------------------------------------


def _trace_events(trace_json: str) -> list[dict]:
    return [e for e in json.loads(trace_json)["traceEvents"] if e["ph"] != "M"]


def test_a_cut_trace_warns_in_python_and_on_the_cli(small_toml, tmp_path):
    scenario = vcpusim.Scenario.from_toml(small_toml)
    with pytest.warns(vcpusim.TraceCutWarning, match=r"the trace is cut: it holds every event up to t = [\d.]+ s of the run's 0.200 s"):
        result = vcpusim.run(scenario, trace_max_events=500)
    other = json.loads(result.trace_json)["otherData"]
    assert other["dropped_events"] > 0 and 0 < other["complete_until_ns"] < 200_000_000
    # The 500 records up to the cut, the slices still open at the cut (ended there: at most one
    # per track and level) and the cut's marker.
    events = _trace_events(result.trace_json)
    assert 500 < len(events) <= 500 + 1 + 64, len(events)
    assert sum(e.get("name") == "trace cut" for e in events) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a whole trace raises no warning
        vcpusim.run(scenario, trace=True)

    done = run_cli("run", small_toml, "--out", tmp_path / "o", "--trace-max-events", "500", "--quiet")
    assert done.returncode == 0, done.stderr
    assert "warning: the trace is cut" in done.stderr and "--trace-from/--trace-to" in done.stderr


def test_a_trace_window_holds_only_that_window_and_reaches_past_a_cut(small_toml, tmp_path):
    scenario = vcpusim.Scenario.from_toml(small_toml)
    whole = _trace_events(vcpusim.run(scenario, trace=True).trace_json)
    windowed = vcpusim.run(scenario, trace_from="150ms", trace_to="160ms")
    events = _trace_events(windowed.trace_json)
    assert events, "the window holds events"
    for e in events:
        assert 150_000 <= e["ts"] < 160_000 and e["ts"] + e.get("dur", 0) <= 160_000 + 1e-6, e
    # Every instant of the whole trace inside the window is in the windowed one.
    inside = [e for e in whole if e["ph"] == "i" and 150_000 <= e["ts"] < 160_000]
    assert inside and inside == [e for e in events if e["ph"] == "i"]
    # A cap that cuts the whole run early leaves a late window whole: the cap is what the last
    # 10 ms hold (with room for spans that reach into them), far less than the whole run.
    cap = 2 * sum(1 for e in whole if e["ts"] + e.get("dur", 0) >= 190_000) + 100
    assert cap < len(whole) / 2
    with pytest.warns(vcpusim.TraceCutWarning):
        vcpusim.run(scenario, trace_max_events=cap)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        late = vcpusim.run(scenario, trace_from="190ms", trace_max_events=cap)
    assert min(e["ts"] for e in _trace_events(late.trace_json)) >= 190_000
    # The results themselves do not depend on tracing.
    assert windowed.vms_csv == vcpusim.run(scenario).vms_csv

    done = run_cli("run", small_toml, "--out", tmp_path / "o", "--trace-from", "150ms", "--trace-to", "160ms", "--quiet")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "o" / "trace.json").read_text() == windowed.trace_json


def test_a_trace_window_from_the_runs_end_on_warns_that_the_trace_is_empty(small_toml, tmp_path):
    scenario = vcpusim.Scenario.from_toml(small_toml)  # 200 ms
    with pytest.warns(vcpusim.TraceEmptyWarning,
                      match=r"the trace is empty: its window starts at t = 0\.200 s, and the run ended at t = 0\.200 s") as caught:
        empty = vcpusim.run(scenario, trace_from="200ms")
    assert issubclass(vcpusim.TraceEmptyWarning, vcpusim.TraceWarning) and len(caught) == 1
    assert _trace_events(empty.trace_json) == [], "only the track names"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a window that starts inside the run is no news
        late = vcpusim.run(scenario, trace_from="199ms")
    assert _trace_events(late.trace_json)

    done = run_cli("run", small_toml, "--out", tmp_path / "o", "--trace-from", "1s", "--quiet")
    assert done.returncode == 0, done.stderr
    assert "warning: the trace is empty: its window starts at t = 1.000 s" in done.stderr, done.stderr


@pytest.mark.parametrize("args, expected", [
    ({"trace_from": "2s", "trace_to": "1s"}, "trace_from (2s) must come before trace_to (1s)"),
    ({"trace_from": "soon"}, "trace_from:"),
    ({"trace_to": 1.5}, "run: trace_to: expected a duration"),
])
def test_bad_trace_windows_are_errors_naming_the_argument(args, expected):
    with pytest.raises((TypeError, ValueError), match=re.escape(expected)):
        vcpusim.run(vcpusim.Scenario(SMALL_SCENARIO), **args)


def test_bad_trace_window_on_the_cli_is_a_user_error(small_toml, tmp_path):
    done = run_cli("run", small_toml, "--out", tmp_path / "o", "--trace-from", "later")
    assert done.returncode == 2 and done.stderr.startswith("error: trace_from:"), done.stderr
    assert "Traceback" not in done.stderr


def test_a_stale_trace_is_removed_by_the_next_untraced_run(small_toml, tmp_path):
    out = tmp_path / "out"
    assert run_cli("run", small_toml, "--out", out, "--trace", "--quiet").returncode == 0
    assert (out / "trace.json").exists()
    done = run_cli("run", small_toml, "--out", out, "--seed", "2", "--quiet")
    assert done.returncode == 0, done.stderr
    assert not (out / "trace.json").exists()
    assert "removed" in done.stderr and "trace.json" in done.stderr
    assert vcpusim.Result.read(out).trace is None

    # The same through the API.
    scenario = vcpusim.Scenario.from_toml(small_toml)
    vcpusim.run(scenario, trace=True).write(out)
    vcpusim.run(scenario).write(out)
    assert not (out / "trace.json").exists()


def test_reading_a_trace_of_another_run_is_refused(small_toml, tmp_path):
    scenario = vcpusim.Scenario.from_toml(small_toml)
    vcpusim.run(scenario, seed=1, trace=True).write(tmp_path / "a")
    vcpusim.run(scenario, seed=2).write(tmp_path / "b")
    (tmp_path / "b" / "trace.json").write_bytes((tmp_path / "a" / "trace.json").read_bytes())  # as an older vcpusim left it
    with pytest.raises(vcpusim.VcpusimError, match=r"trace\.json is not the trace of the run in .*summary\.json \(seed 1 against 2\)"):
        vcpusim.Result.read(tmp_path / "b")
    assert vcpusim.Result.read(tmp_path / "a").trace is not None


@pytest.mark.parametrize("damage, reason", [
    ('{"seed": 1,', "Expecting"),        # cut short, as by a full disk
    ("[1, 2]", "it holds no JSON object"),
])
def test_reading_a_damaged_summary_is_refused_at_once_naming_it(small_toml, tmp_path, damage, reason):
    vcpusim.run(vcpusim.Scenario.from_toml(small_toml)).write(tmp_path)
    (tmp_path / "summary.json").write_text(damage)
    with pytest.raises(vcpusim.VcpusimError, match=rf"summary\.json is not the summary vcpusim writes \({reason}.*run again"):
        vcpusim.Result.read(tmp_path)


# --- writing results -----------------------------------------------------------------------------


def _run_cli_here(monkeypatch, *args) -> int:
    """`vcpusim ARGS` in this process (so the test can stand in for parts of it); the exit status."""
    with pytest.raises(SystemExit) as done:
        vcpusim.cli.app(args=[str(a) for a in args], prog_name="vcpusim")
    return done.value.code


def test_an_unwritable_out_fails_before_simulating(small_toml, tmp_path, monkeypatch, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    ran = []
    monkeypatch.setattr(vcpusim.cli._core, "run", lambda *a, **k: ran.append(a))
    assert _run_cli_here(monkeypatch, "run", small_toml, "--out", blocker / "out") == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: cannot write results to {blocker / 'out'}: "), err
    assert not ran, "nothing was simulated"


def test_run_many_checks_out_dir_before_the_first_run(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    ran = []
    monkeypatch.setattr(vcpusim.runs, "_run_in_worker", lambda *a: ran.append(a))
    with pytest.raises(vcpusim.VcpusimError, match=f"cannot write sweep results to {blocker / 'sweep'}"):
        vcpusim.run_many([vcpusim.Scenario(SMALL_SCENARIO)], processes=1, progress=False, out_dir=blocker / "sweep")
    assert not ran


def test_a_full_disk_names_the_directory_and_leaves_it_as_it_was(tmp_path, monkeypatch):
    out = tmp_path / "out"
    scenario = vcpusim.Scenario(SMALL_SCENARIO)
    old = vcpusim.run(scenario, seed=1).write(out)
    before = {p.name: p.read_bytes() for p in old.iterdir()}
    writes = []
    real_write = vcpusim.api._write_file

    def disk_fills(fd, data):
        writes.append(len(data))
        if len(writes) == 2:  # vms.csv fits, metrics.csv does not
            import os
            os.close(fd)
            raise OSError(errno.ENOSPC, "No space left on device")
        real_write(fd, data)

    monkeypatch.setattr(vcpusim.api, "_write_file", disk_fills)
    with pytest.raises(vcpusim.VcpusimError, match=f"cannot write results to {out}: No space left on device"):
        vcpusim.run(scenario, seed=2).write(out)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before, "no file changed, no temporary left"

    # A first write that fails leaves no empty summary.json behind.
    fresh = tmp_path / "fresh"
    writes.clear()
    with pytest.raises(vcpusim.VcpusimError, match="No space left on device"):
        vcpusim.run(scenario).write(fresh)
    assert list(fresh.iterdir()) == []


def test_a_full_disk_in_the_cli_is_a_user_error_and_writes_nothing(small_toml, tmp_path, monkeypatch, capsys):
    def full(fd, data):
        import os
        os.close(fd)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(vcpusim.api, "_write_file", full)
    out = tmp_path / "out"
    assert _run_cli_here(monkeypatch, "run", small_toml, "--out", out, "--quiet") == 2
    assert f"error: cannot write results to {out}: No space left on device" in capsys.readouterr().err
    assert list(out.iterdir()) == []


SWEEP_SCRIPT = """
import os, sys, time, vcpusim
from vcpusim import runs
if __name__ == "__main__":
    scenario = vcpusim.Scenario({endless!r})
    pids = sys.argv[1]
    import threading
    def record():
        # The two workers' pids, once both started (read from the kept pool).
        while True:
            procs = [p for _, pool in list(runs._POOLS.values()) for p in (getattr(pool, "_processes", None) or {{}}).values()]
            if len(procs) == 2:
                open(pids, "w").write(" ".join(str(p.pid) for p in procs))
                return
            time.sleep(0.05)
    threading.Thread(target=record, daemon=True).start()
    try:
        vcpusim.run_many([scenario.with_seed(1), scenario.with_seed(2)], processes=2, progress=False)
    except KeyboardInterrupt:
        print("KeyboardInterrupt", flush=True)
        sys.exit(0)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (dead, not yet reaped by its parent) counts as dead.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _start_sweep(tmp_path):
    script = tmp_path / "sweep.py"
    script.write_text(SWEEP_SCRIPT.format(endless=ENDLESS))
    pids = tmp_path / "pids"
    proc = subprocess.Popen([sys.executable, str(script), str(pids)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    assert _wait_for(lambda: pids.exists() and pids.read_text().strip()), "the workers did not start"
    time.sleep(1.0)  # both workers are inside their endless runs
    return proc, [int(p) for p in pids.read_text().split()]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="workers die with their parent through Linux's prctl")
def test_a_worker_ignores_sigint_and_leaves_stopping_to_its_parent(tmp_path):
    # A Ctrl-C or a notebook kernel's shutdown reaches the whole process group: a worker that
    # died of it would print a traceback; the parent stops its workers itself.
    proc, workers = _start_sweep(tmp_path)
    try:
        for pid in workers:
            os.kill(pid, signal.SIGINT)
        time.sleep(0.5)
        assert all(_alive(p) for p in workers), "a worker died of SIGINT"
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert "KeyboardInterrupt" in stdout, (stdout, stderr)
    assert "Traceback" not in stderr, stderr
    assert _wait_for(lambda: not any(_alive(p) for p in workers), timeout=10), "a worker outlived the sweep"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="workers die with their parent through Linux's prctl")
def test_ctrl_c_in_run_many_stops_its_workers_at_once(tmp_path):
    proc, workers = _start_sweep(tmp_path)
    try:
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
        took = time.monotonic() - sent
    finally:
        proc.kill()
    assert "KeyboardInterrupt" in stdout, (stdout, stderr)
    assert took < INTERRUPT_BOUND_S, f"the interpreter waited {took:.1f} s for workers computing abandoned runs"
    assert _wait_for(lambda: not any(_alive(p) for p in workers), timeout=10), "a worker outlived the sweep"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="workers die with their parent through Linux's prctl")
def test_workers_of_a_killed_sweep_do_not_outlive_it(tmp_path):
    proc, workers = _start_sweep(tmp_path)
    proc.kill()  # SIGKILL: the sweep gets no chance to stop anything
    proc.wait(timeout=60)
    assert _wait_for(lambda: not any(_alive(p) for p in workers), timeout=10), "orphaned workers live on"
