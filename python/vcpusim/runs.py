"""Run many scenarios at once: local processes (`run_many`) or a Ray cluster (`run_many_ray`).

With ``out_dir``, each result is saved the moment it finishes, in a folder named by a hash of
what produced it (the scenario's text, which holds its seed, its source name, the trace and
check flags, and the engine build, so a rebuilt vcpusim with another model recomputes): ``out_dir/<key>/`` with the result files, ``scenario.toml`` and ``run.json`` (the
inputs and the size and SHA-256 of every file). It is written to a temporary folder and renamed,
so a folder that exists was complete when written; on reading, every file is checked against
``run.json`` and a damaged folder is run again (with a warning). A sweep that dies loses nothing
already computed, running it again (in any order, with runs added or removed) skips the finished
runs, and ``out_dir/index.csv`` lists which folder holds which run of the last sweep.

A run this process saved (or found saved) in one sweep's folder is not computed again by
another sweep that has the same scenario under another source name (an experiment set's figures
share some runs): the same text, flags and engine give the same results but for the source name
``summary.json`` records, so the saved run is checked against its ``run.json``, given this
sweep's source name and saved in this sweep's folder (``_SweepDir.reused``; not for traced runs,
whose ``trace.json`` also names the source).

Worker processes are started with "spawn", without running the calling script again (they run
only vcpusim's own run function on a scenario's text, so they need nothing from the script; see
``_workers_skip_main_script``). A script that calls ``run_many`` must still do so under
``if __name__ == "__main__":``, so that whatever imports the script (another library's spawn
workers, a test collector) does not start the sweep again; without the guard ``run_many`` stops
at once with an error saying so. The workers are kept for the next
``run_many`` of the same process (with as many workers, while the environment, working directory
and ``sys.path`` are unchanged) and stopped at exit. A worker that dies (killed, out of memory)
loses only the runs it had; they are run again, and a run whose worker dies even when it runs
alone is reported as failed, after every other run has finished and been saved.
"""

from __future__ import annotations

import ast
import atexit
import contextlib
import hashlib
import json
import os
import shutil
import sys
import types
import warnings
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import get_context
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from . import _core
from .api import (RESULT_FILES, TRACE_FILE, Result, Scenario, _type_name, as_scenario, check_flag, check_writable,
                  engine_fingerprint, provenance)

#: Written beside the results: what produced them and the size and hash of every file.
RUN_FILE = "run.json"
SCENARIO_FILE = "scenario.toml"
INDEX_FILE = "index.csv"
#: Length of the hex key naming a result folder (64 bits of SHA-256).
KEY_CHARS = 16
#: Pooled attempts at the runs a dying worker took down, before each is run alone.
POOLED_ATTEMPTS = 2


def _run_in_worker(text: str, source: str, trace: bool, check: bool) -> tuple:
    """One run in a worker process. Errors come back as data: ('error', class name, message)."""
    try:
        return ("ok", _core.run(text, source, trace=trace, check=check))
    except _core.VcpusimError as e:
        return ("error", type(e).__name__, str(e))


def _as_scenarios(scenarios: Any, where: str) -> list[Scenario]:
    if isinstance(scenarios, (str, os.PathLike, Mapping, Scenario)):
        raise TypeError(
            f"{where}: scenarios: expected a list of scenarios (Scenario objects, dicts of tables or file paths), "
            f"got one {_type_name(scenarios)}; to run one scenario use vcpusim.run, or pass [it]"
        )
    try:
        items = list(scenarios)
    except TypeError:
        raise TypeError(f"{where}: scenarios: expected a list of scenarios, got {_type_name(scenarios)}") from None
    out = []
    for i, s in enumerate(items):
        try:
            out.append(as_scenario(s))
        except TypeError as e:
            raise TypeError(f"{where}: scenarios[{i}]: {e}") from None
    return out


def _check_processes(processes: Any, where: str) -> int:
    if processes is None:
        return os.cpu_count() or 1
    if isinstance(processes, bool) or not isinstance(processes, int):
        raise TypeError(f"{where}: processes: expected a positive integer or None (one per CPU), got {_type_name(processes)}")
    if processes < 1:
        raise ValueError(f"{where}: processes: expected a positive integer or None (one per CPU), got {processes}")
    return processes


def run_key(scenario: Scenario, trace: bool, check: bool) -> str:
    """The name of a run's result folder: a hash of everything its output depends on, the
    engine build included (:func:`engine_fingerprint`), and the source of every policy written
    in Python that the scenario names (:func:`vcpusim.policy.sources_fingerprint`)."""
    return _digest({"text": scenario.text, "source": scenario.source, "trace": trace, "check": check,
                    "engine": engine_fingerprint(), **_policy_sources(scenario)})[:KEY_CHARS]


def content_key(scenario: Scenario, trace: bool, check: bool) -> str:
    """A hash of what a run's results depend on except its source name (which only
    ``summary.json``'s ``scenario`` and a trace record): runs with equal content keys have the same
    results up to that name."""
    return _digest({"text": scenario.text, "trace": trace, "check": check, "engine": engine_fingerprint(),
                    **_policy_sources(scenario)})


def _policy_sources(scenario: Scenario) -> dict:
    """``{"policy_sources": ...}`` when the scenario names a policy written in Python (a changed
    policy must not find the old one's saved results), else nothing (the keys of other runs stay
    as they were)."""
    from .policy import sources_fingerprint

    fingerprint = sources_fingerprint(scenario.text)
    return {"policy_sources": fingerprint} if fingerprint else {}


def _digest(identity: dict) -> str:
    """The SHA-256 of ``identity`` written as JSON with sorted keys (hex)."""
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode("utf-8")).hexdigest()


#: Untraced runs this process saved or found saved, by content key: their folders (any sweep's),
#: where another sweep of the same scenario under another source name takes them from
#: (`_SweepDir.reused`). Only folders; each is checked against its run.json when taken.
_SAVED_RUNS: dict[str, Path] = {}


def relabel_summary(summary_json: str, old: str, new: str) -> str | None:
    """``summary.json`` as the run would have written it under source name ``new`` instead of
    ``old``: the top-level ``"scenario"`` line rewritten (JSON strings escape the same characters
    the same way in Python and in Rust's serde_json), the rest byte for byte. None when that
    line is not found exactly once or the result does not parse back to the same values."""
    def line(source: str) -> str:
        return f'\n  "scenario": {json.dumps(source, ensure_ascii=False)},\n'
    if summary_json.count(line(old)) != 1:
        return None
    out = summary_json.replace(line(old), line(new))
    try:
        before, after = json.loads(summary_json), json.loads(out)
    except ValueError:
        return None
    if after.get("scenario") != new or {**before, "scenario": new} != after:
        return None
    return out


def _remove(path: Path) -> None:
    """Remove ``path``: a link itself (never what it points to), or a folder and its contents."""
    if path.is_symlink():
        path.unlink(missing_ok=True)
    else:
        shutil.rmtree(path, ignore_errors=True)


def implausible(result: Result, scenario: Scenario) -> str | None:
    """What a result says that its run cannot have produced, or None: a VM's CPU time negative,
    not a number, or beyond what the host's pCPUs had in the run, or its CPU share outside
    [0, 1]. The sweep cache refuses such a saved result (an edited table whose hashes were
    recomputed: the cache is no protection against a user who means it, but such values are not
    served), and the fuzzers hold every run to it (benches/fuzz_scenarios.py)."""
    capacity_ms = scenario.info["pcpus"] * scenario.duration_ns / 1e6
    try:
        rows = list(zip(result.vms["vm"], (float(x) for x in result.vms["cpu_time_ms"]),
                        (float(x) for x in result.vms["cpu_share"])))
    except (KeyError, ValueError, TypeError):
        return "vms.csv has no readable cpu_time_ms or cpu_share"
    for vm, t, share in rows:
        # Written so that NaN fails each test; the slack covers the tables' three decimals.
        if not (0.0 <= t <= capacity_ms * 1.000001 + 0.001):
            return f"VM {vm}'s cpu_time_ms {t} is outside what {scenario.info['pcpus']} pCPUs had ({capacity_ms:.3f} ms)"
        if not (0.0 <= share <= 1.000001):
            return f"VM {vm}'s cpu_share {share} is outside [0, 1]"
    return None


class _SweepDir:
    """The on-disk record of a sweep: ``<out_dir>/<key>/`` per finished run."""

    def __init__(self, out_dir: str | os.PathLike | None, trace: bool, check: bool):
        self.root = check_writable(out_dir, "sweep results", "out_dir") if out_dir is not None else None
        self.trace = trace
        self.check = check

    def _identity(self, source: str) -> dict:
        """What run.json records beside its files, for a run named ``source``: the inputs and what
        computed it (the vcpusim version, its build and the engine's hash, :func:`provenance`)."""
        return {"source": source, "trace": self.trace, "check": self.check, "vcpusim": provenance()}

    def folder(self, scenario: Scenario) -> Path:
        assert self.root is not None
        return self.root / run_key(scenario, self.trace, self.check)

    def finished(self, scenario: Scenario) -> Result | None:
        """The saved result of this run, if an earlier sweep finished it and its folder is whole."""
        if self.root is None:
            return None
        folder = self.folder(scenario)
        if not (folder.is_dir() or folder.is_symlink()):
            return None
        problem = self._damage(folder, scenario.text, scenario.source)
        if problem is None:
            result = Result.read(folder)
            problem = implausible(result, scenario)
            if problem is None:
                self._remember(scenario, folder)
                return result
        warnings.warn(f"{folder}: {problem}; running {scenario.source} again", RuntimeWarning, stacklevel=3)
        _remove(folder)
        return None

    def _remember(self, scenario: Scenario, folder: Path) -> None:
        if not self.trace:
            _SAVED_RUNS[content_key(scenario, self.trace, self.check)] = folder.resolve()

    def reused(self, scenario: Scenario) -> Result | None:
        """The result of a run of the same scenario under another source name that this
        process saved or found in another folder (`_SAVED_RUNS`), checked against its run.json,
        given this scenario's source name and saved here; None when there is none (or it is
        damaged, gone, traced, or cannot be renamed: then the run is simply computed)."""
        if self.root is None or self.trace:
            return None
        other = _SAVED_RUNS.get(content_key(scenario, self.trace, self.check))
        if other is None or other == self.folder(scenario).resolve():
            return None
        try:
            source = json.loads((other / RUN_FILE).read_text(encoding="utf-8"))["source"]
            if not isinstance(source, str) or self._damage(other, scenario.text, source) is not None:
                return None
            found = Result.read(other)
            if implausible(found, scenario) is not None:
                return None
        except (OSError, ValueError, KeyError, TypeError, _core.VcpusimError):
            return None
        summary = relabel_summary(found.summary_json, source, scenario.source)
        if summary is None:
            return None
        result = Result(found.vms_csv, found.metrics_csv, summary, None)
        self.save(scenario, result)
        return result

    def _damage(self, folder: Path, text: str, source: str) -> str | None:
        """What is wrong with a saved folder of the run of ``text`` named ``source`` (missing,
        truncated or changed files), or None."""
        # A link is never a saved run: a folder or file swapped for a link to another (a forged
        # run, or another user's in a shared sweep folder) would be served as this run's.
        if folder.is_symlink():
            return "it is a symbolic link, not a folder this sweep wrote"
        try:
            record = json.loads((folder / RUN_FILE).read_text(encoding="utf-8"))
            files = record["files"]
        except (OSError, ValueError, KeyError, TypeError):
            return f"{RUN_FILE} is missing or unreadable"
        if {k: v for k, v in record.items() if k != "files"} != self._identity(source):
            return f"{RUN_FILE} names other inputs"
        expected = set(RESULT_FILES) | {SCENARIO_FILE} | ({TRACE_FILE} if self.trace else set())
        if set(files) != expected:
            return f"{RUN_FILE} lists {sorted(files)}, expected {sorted(expected)}"
        for name, want in files.items():
            if (folder / name).is_symlink() or (folder / RUN_FILE).is_symlink():
                return f"{name} is a symbolic link, not a file this sweep wrote"
            try:
                data = (folder / name).read_bytes()
            except OSError:
                return f"{name} is missing"
            if len(data) != want.get("bytes") or hashlib.sha256(data).hexdigest() != want.get("sha256"):
                return f"{name} is truncated or changed ({len(data)} bytes, {want.get('bytes')} written)"
        if (folder / SCENARIO_FILE).read_bytes().decode("utf-8") != text:
            return f"{SCENARIO_FILE} is another scenario"
        return None

    def save(self, scenario: Scenario, result: Result) -> None:
        if self.root is None:
            return
        folder = self.folder(scenario)
        partial = folder.with_name(f".{folder.name}.partial")
        try:
            # Made here, new: never a folder (or a link planted in its place) that exists already,
            # so the files cannot be redirected elsewhere.
            _remove(partial)
            os.mkdir(partial)
        except OSError as e:
            raise _core.VcpusimError(f"cannot write sweep results to {partial}: {e.strerror or e}") from None
        result.write(partial)
        try:
            (partial / SCENARIO_FILE).write_bytes(scenario.text.encode("utf-8"))
            files = {name: (partial / name).read_bytes() for name in [*result.files(), SCENARIO_FILE]}
            record = {**self._identity(scenario.source),
                      "files": {n: {"bytes": len(d), "sha256": hashlib.sha256(d).hexdigest()} for n, d in files.items()}}
            (partial / RUN_FILE).write_text(json.dumps(record, indent=1, sort_keys=True), encoding="utf-8")
            _remove(folder)  # a damaged earlier copy (or a link in its place)
            os.replace(partial, folder)  # atomic: a folder named <key> is always complete
            self._remember(scenario, folder)
        except OSError as e:
            _remove(partial)
            raise _core.VcpusimError(f"cannot write sweep results to {self.root}: {e.strerror or e}") from None

    def write_index(self, scenarios: Sequence[Scenario], results: Sequence[Result | None]) -> None:
        """``index.csv``: position in the last sweep, folder, source, and whether it finished."""
        if self.root is None:
            return
        lines = ["position,folder,source,finished"]
        for i, (s, r) in enumerate(zip(scenarios, results)):
            source = s.source.replace('"', '""')
            lines.append(f'{i},{run_key(s, self.trace, self.check)},"{source}",{"yes" if r is not None else "no"}')
        try:
            (self.root / INDEX_FILE).write_text("\n".join(lines) + "\n", encoding="utf-8")
        except OSError as e:
            raise _core.VcpusimError(f"cannot write sweep results to {self.root}: {e.strerror or e}") from None


class _Failures:
    """Errors of single runs, raised together once every other run has finished and been saved."""

    def __init__(self, scenarios: Sequence[Scenario]):
        self.scenarios = scenarios
        self.items: list[tuple[int, str, str]] = []

    def add(self, index: int, class_name: str, message: str) -> None:
        self.items.append((index, class_name, message))

    def raise_if_any(self) -> None:
        if not self.items:
            return
        self.items.sort()
        index, class_name, message = self.items[0]
        error_class = getattr(_core, class_name, _core.VcpusimError)
        more = f" ({len(self.items) - 1} more run(s) failed too)" if len(self.items) > 1 else ""
        raise error_class(f"run {index} ({self.scenarios[index].source}) failed{more}: {message}")


def _progress_bar(enabled: bool):
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    # "runs", not "sweep": run_many draws it too; each time says what it is.
    return Progress(
        TextColumn("[bold]runs"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("elapsed"),
        TimeElapsedColumn(),
        TextColumn("left"),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        disable=not enabled,
    )


GUARD_MESSAGE = (
    "run_many starts worker processes, which import {script} again; the call to run_many at line "
    "{line} runs at import time, so every worker would start the sweep again. Put the code that "
    "calls run_many under  if __name__ == \"__main__\":  (as in the README)"
)


def _check_main_guard(where: str) -> None:
    """Stop with a clear error when the calling script runs ``run_many`` at import time.

    A "spawn" worker runs the parent's main script again as ``__mp_main__`` unless told otherwise
    (ours are: ``_workers_skip_main_script``; other libraries' are not), so a call that is not
    under the ``__main__`` guard would start pools from inside those workers and die with
    BrokenProcessPool. Checked in two places: in a worker that is still importing the main
    script (the call itself is the proof), and in the parent, where the first frame of the main
    script's top-level code is looked up in the script's syntax tree."""
    from multiprocessing import current_process

    if getattr(current_process(), "_inheriting", False):
        raise _core.VcpusimError(f"{where}: " + GUARD_MESSAGE.format(script="the main script", line="?"))
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    spec = getattr(main, "__spec__", None)
    if path is None or (spec is not None and spec.name.split(".")[-1] == "__main__"):
        return  # interactive, a notebook, or `python -m pkg`: spawn does not run it again
    frame = sys._getframe(1)
    while frame is not None and not (frame.f_globals is main.__dict__ and frame.f_code.co_name == "<module>"):
        frame = frame.f_back
    if frame is None:
        return
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return
    line = frame.f_lineno
    for stmt in tree.body:
        if stmt.lineno <= line <= (stmt.end_lineno or stmt.lineno):
            if not _is_main_guard(stmt):
                raise _core.VcpusimError(f"{where}: " + GUARD_MESSAGE.format(script=path, line=line))
            return


def _is_main_guard(stmt: ast.stmt) -> bool:
    """``if __name__ == "__main__":`` (either side)."""
    if not isinstance(stmt, ast.If) or not isinstance(stmt.test, ast.Compare):
        return False
    sides = [stmt.test.left, *stmt.test.comparators]
    names = {s.id for s in sides if isinstance(s, ast.Name)}
    consts = {s.value for s in sides if isinstance(s, ast.Constant)}
    return "__name__" in names and "__main__" in consts


def run_many(
    scenarios: Iterable[Scenario | Mapping[str, Any] | str | os.PathLike],
    processes: int | None = None,
    progress: bool = True,
    out_dir: str | os.PathLike | None = None,
    trace: bool = False,
    check: bool = False,
) -> list[Result]:
    """Run every scenario (a :class:`Scenario`, a dict of its tables, or a file), ``processes``
    at a time (default: one per CPU), and return the results in the order of ``scenarios``.
    ``processes=1`` runs them in this process, one after another.

    The workers are separate processes that import the calling script again, so a script must
    call ``run_many`` under the main guard::

        import vcpusim

        if __name__ == "__main__":
            results = vcpusim.run_many([...], processes=2, out_dir="sweep/")

    With ``out_dir`` (checked to be writable before the first run) each result is saved as it
    finishes, under a folder named by a hash of its scenario (see the module doc), and a rerun
    skips finished runs, and takes (saving it here) a run of the same scenario under another
    source name that another sweep of this process saved (see the module doc). If some runs
    fail, the others still finish (and are saved), then the first failure is raised; a run whose
    worker process dies is run again, alone.
    """
    where = "run_many"
    scenarios = _as_scenarios(scenarios, where)
    workers = _check_processes(processes, where)
    for name, value in (("progress", progress), ("trace", trace), ("check", check)):
        check_flag(value, name, where)
    if workers > 1:
        _check_main_guard(where)
    record = _SweepDir(out_dir, trace, check)
    results: list[Result | None] = [record.finished(s) or record.reused(s) for s in scenarios]
    todo = [i for i, r in enumerate(results) if r is None]
    failures = _Failures(scenarios)

    def finish(index: int, outcome: tuple) -> None:
        if outcome[0] == "ok":
            results[index] = Result._from_core(outcome[1])
            record.save(scenarios[index], results[index])
        else:
            failures.add(index, outcome[1], outcome[2])

    try:
        with _progress_bar(progress) as bar:
            task = bar.add_task("runs", total=len(scenarios), completed=len(scenarios) - len(todo))
            if workers <= 1 or len(todo) <= 1:
                for i in todo:
                    finish(i, _run_in_worker(scenarios[i].text, scenarios[i].source, trace, check))
                    bar.advance(task)
            else:
                _run_in_pools(scenarios, todo, min(workers, len(todo)), trace, check, finish,
                              lambda: bar.advance(task), failures)
    finally:
        record.write_index(scenarios, results)

    failures.raise_if_any()
    return results  # type: ignore[return-value]  # every entry is set once failures are raised


def _run_in_pools(
    scenarios: Sequence[Scenario],
    todo: Sequence[int],
    workers: int,
    trace: bool,
    check: bool,
    finish: Callable[[int, tuple], None],
    advance: Callable[[], None],
    failures: _Failures,
) -> None:
    """Run ``todo`` in a pool of ``workers``. When a worker dies, the pool reports every run it
    had not finished as lost, without saying which one was running in the dead worker: those are
    run again in a new pool, and the ones lost again are then run alone, one worker each, so
    only a run that kills its worker by itself is reported as failed."""
    lost = list(todo)
    for _ in range(POOLED_ATTEMPTS):
        lost = _pool_round(scenarios, lost, min(workers, len(lost)), trace, check, finish, advance)
        if not lost:
            return
    for i in lost:
        if _pool_round(scenarios, [i], 1, trace, check, finish, advance):
            failures.add(i, "VcpusimError", "its worker process died (killed, or out of memory), even running alone")
            advance()


#: Worker pools kept between sweeps of this process, by worker count: (what their workers were
#: started with, the pool). Starting a "spawn" worker costs a new interpreter and vcpusim's import
#: (about 0.1 s; it skips the main script); a script that sweeps many times (the experiment sets:
#: one sweep per figure) pays it once per worker count.
_POOLS: dict[int, tuple[tuple, ProcessPoolExecutor]] = {}


def _spawn_state() -> tuple:
    """What a spawned worker takes from this process when it starts (environment, working
    directory, sys.path, argv, interpreter; not the main script, `_workers_skip_main_script`): a
    pool whose workers were started under other values is not reused, so a run sees what a fresh
    worker would."""
    return (tuple(sorted(os.environ.items())), os.getcwd(), tuple(sys.path), tuple(sys.argv), sys.executable)


def _pool(workers: int) -> ProcessPoolExecutor:
    """The kept pool of ``workers`` workers, or a new one (kept for the next sweep)."""
    state = _spawn_state()
    kept = _POOLS.get(workers)
    if kept is not None:
        # A kept pool whose worker died while it waited is found out by the executor's public
        # signal, BrokenProcessPool, at submit or at a result (_pool_round starts a new one).
        if kept[0] == state:
            return kept[1]
        _discard_pool(workers)
    # "spawn": fresh workers that share nothing with this process (no inherited threads or locks,
    # such as the progress bar's refresh thread).
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn"),
                               initializer=_start_worker, initargs=(os.getpid(),))
    _POOLS[workers] = (state, pool)
    return pool


def _start_worker(parent: int) -> None:
    """A worker's first act. It ends when the process that started it ends, however it ends (a
    SIGKILL gives it no chance to stop its workers). Linux's PR_SET_PDEATHSIG delivers SIGKILL to
    the worker when its parent dies; a parent already gone by now is caught by the pid check.
    Elsewhere nothing is set: a killed sweep's workers may outlive it there.

    It also ignores SIGINT: a Ctrl-C (or a notebook kernel's shutdown) reaches the whole process
    group, and the parent, which gets KeyboardInterrupt, stops its workers itself
    (`_stop_workers`); a worker waiting for its next run would otherwise die printing a traceback."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            PR_SET_PDEATHSIG = 1
            libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):
            return
        if os.getppid() != parent:
            os._exit(1)


def _stop_workers(pool: ProcessPoolExecutor) -> None:
    """Stop a pool's workers now (an interrupted sweep): their runs are abandoned, not waited for.
    Every finished run was saved when it finished."""
    processes = getattr(pool, "_processes", None) or {}
    for process in list(processes.values()):
        with contextlib.suppress(Exception):
            process.terminate()


@contextlib.contextmanager
def _workers_skip_main_script():
    """Workers started in this block do not run the main script.

    A "spawn" worker runs the parent's main script again (as ``__mp_main__``) before its first
    task, so that functions defined there can be unpickled; ours only ever run
    ``_run_in_worker`` (a vcpusim function, on a scenario's text), so that import is pure cost:
    the experiment sets' scripts import pandas and matplotlib, about 0.75 s of CPU per worker
    before its first run. ProcessPoolExecutor starts its "spawn" workers in ``submit``, where
    multiprocessing reads what to import from ``sys.modules["__main__"]``; while this block
    runs it finds a stand-in without a file (as in an interactive session, which spawn starts
    no script for), as ``runpy`` stands one in while it runs a module."""
    main = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        if main is None:
            del sys.modules["__main__"]
        else:
            sys.modules["__main__"] = main


def _discard_pool(workers: int) -> None:
    """Shut down and forget the kept pool of ``workers`` (broken, stale, or at exit)."""
    kept = _POOLS.pop(workers, None)
    if kept is not None:
        kept[1].shutdown(wait=True, cancel_futures=True)


@atexit.register
def _shutdown_pools() -> None:
    for workers in list(_POOLS):
        _discard_pool(workers)


def _pool_round(
    scenarios: Sequence[Scenario],
    items: Sequence[int],
    workers: int,
    trace: bool,
    check: bool,
    finish: Callable[[int, tuple], None],
    advance: Callable[[], None],
) -> list[int]:
    """One round over ``items`` in a pool of ``workers`` (the kept one when it is whole: see
    _pool); returns the runs lost to a dead worker (empty when none died). A pool that lost a
    worker is discarded, so the next round starts new workers."""
    lost: list[int] = []
    # Looked up at each call (not bound at import), so tests can stand in for the worker.
    work = _run_in_worker

    def submit_all(pool: ProcessPoolExecutor) -> dict:
        # `submit` is where the executor starts its workers.
        with _workers_skip_main_script():
            return {pool.submit(work, scenarios[i].text, scenarios[i].source, trace, check): i for i in items}

    pool = _pool(workers)
    try:
        pending = submit_all(pool)
    except BrokenProcessPool:  # a worker of the kept pool died while it waited (killed): a new pool
        _discard_pool(workers)
        pool = _pool(workers)
        pending = submit_all(pool)
    try:
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                index = pending.pop(future)
                try:
                    outcome = future.result()
                except BrokenProcessPool:
                    lost.append(index)
                    continue
                finish(index, outcome)
                advance()
    except BaseException:
        # Interrupted (Ctrl-C, an error saving a result): the runs in flight are abandoned, so
        # their workers are stopped at once rather than waited for.
        # (Before shutdown, which forgets the pool's processes.)
        _stop_workers(pool)
        pool.shutdown(wait=False, cancel_futures=True)
        _discard_pool(workers)
        raise
    if lost:
        _discard_pool(workers)
    return sorted(lost)


def require_ray(who: str):
    """The ``ray`` module, or an ImportError saying what to install (`who` needs it)."""
    try:
        import ray
    except ImportError:
        raise ImportError(f"{who} needs Ray, which is not installed: pip install 'vcpusim[ray]'") from None
    return ray


def run_many_ray(
    scenarios: Iterable[Scenario | Mapping[str, Any] | str | os.PathLike],
    progress: bool = True,
    out_dir: str | os.PathLike | None = None,
    trace: bool = False,
    check: bool = False,
    address: str | None = None,
    **ray_init: Any,
) -> list[Result]:
    """Like :func:`run_many`, on a Ray cluster (``address``; default: start or join a local one).
    Needs the optional dependency: ``pip install 'vcpusim[ray]'``."""
    where = "run_many_ray"
    scenarios = _as_scenarios(scenarios, where)
    for name, value in (("progress", progress), ("trace", trace), ("check", check)):
        check_flag(value, name, where)
    ray = require_ray("run_many_ray")

    record = _SweepDir(out_dir, trace, check)
    results: list[Result | None] = [record.finished(s) or record.reused(s) for s in scenarios]
    todo = [i for i, r in enumerate(results) if r is None]
    failures = _Failures(scenarios)
    if not ray.is_initialized():
        ray.init(address=address, **ray_init)
    remote_run = ray.remote(_run_in_worker)

    try:
        with _progress_bar(progress) as bar:
            task = bar.add_task("runs", total=len(scenarios), completed=len(scenarios) - len(todo))
            pending = {remote_run.remote(scenarios[i].text, scenarios[i].source, trace, check): i for i in todo}
            while pending:
                done, _ = ray.wait(list(pending), num_returns=1)
                for ref in done:
                    index = pending.pop(ref)
                    outcome = ray.get(ref)
                    if outcome[0] == "ok":
                        results[index] = Result._from_core(outcome[1])
                        record.save(scenarios[index], results[index])
                    else:
                        failures.add(index, outcome[1], outcome[2])
                    bar.advance(task)
    finally:
        record.write_index(scenarios, results)

    failures.raise_if_any()
    return results  # type: ignore[return-value]
