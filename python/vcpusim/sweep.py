"""Run many scenarios at once: local processes (`run_many`) or a Ray cluster (`run_many_ray`).

With ``out_dir``, result i is saved to ``out_dir/<i>/`` the moment it finishes (written to a
temporary folder, then renamed, so a folder that exists is complete). A sweep that dies loses
nothing already computed, and running the same sweep again skips the finished runs.
"""

from __future__ import annotations

import json
import os
import shutil
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from multiprocessing import get_context
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from . import _core
from .api import Result, Scenario, as_scenario

#: Written beside the results: what produced them, to refuse resuming a different sweep.
RUN_FILE = "run.json"
SCENARIO_FILE = "scenario.toml"


def _run_in_worker(text: str, source: str, trace: bool, check: bool) -> tuple:
    """One run in a worker process. Errors come back as data: ('error', class name, message)."""
    try:
        return ("ok", _core.run(text, source, trace=trace, check=check))
    except _core.VcpusimError as e:
        return ("error", type(e).__name__, str(e))


def _as_scenarios(scenarios: Iterable[Scenario | Mapping[str, Any] | str | os.PathLike]) -> list[Scenario]:
    return [as_scenario(s) for s in scenarios]


class _SweepDir:
    """The on-disk record of a sweep: ``<out_dir>/<i>/`` per finished run."""

    def __init__(self, out_dir: str | os.PathLike | None, trace: bool, check: bool):
        self.root = Path(out_dir) if out_dir is not None else None
        self.trace = trace
        self.check = check

    def _identity(self, scenario: Scenario) -> dict:
        return {"source": scenario.source, "trace": self.trace, "check": self.check}

    def finished(self, index: int, scenario: Scenario) -> Result | None:
        """The saved result of run ``index``, if it finished earlier with the same inputs."""
        if self.root is None:
            return None
        folder = self.root / str(index)
        if not folder.is_dir():
            return None
        try:
            same_text = (folder / SCENARIO_FILE).read_bytes().decode("utf-8") == scenario.text
            same_run = json.loads((folder / RUN_FILE).read_text(encoding="utf-8")) == self._identity(scenario)
        except (OSError, ValueError):
            same_text = same_run = False
        if not (same_text and same_run):
            raise _core.VcpusimError(
                f"{folder} holds the result of a different run than scenario {index} "
                f"({scenario.source}); use another out_dir or remove that folder"
            )
        return Result.read(folder)

    def save(self, index: int, scenario: Scenario, result: Result) -> None:
        if self.root is None:
            return
        folder = self.root / str(index)
        partial = self.root / f".{index}.partial"
        shutil.rmtree(partial, ignore_errors=True)
        result.write(partial)
        (partial / SCENARIO_FILE).write_bytes(scenario.text.encode("utf-8"))
        (partial / RUN_FILE).write_text(json.dumps(self._identity(scenario)), encoding="utf-8")
        os.replace(partial, folder)  # atomic: a folder named <i> is always complete


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

    return Progress(
        TextColumn("[bold]sweep"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        disable=not enabled,
    )


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

    If some runs fail, the others still finish (and are saved), then the first failure is raised.
    """
    scenarios = _as_scenarios(scenarios)
    record = _SweepDir(out_dir, trace, check)
    results: list[Result | None] = [record.finished(i, s) for i, s in enumerate(scenarios)]
    todo = [i for i, r in enumerate(results) if r is None]
    failures = _Failures(scenarios)

    def finish(index: int, outcome: tuple) -> None:
        if outcome[0] == "ok":
            results[index] = Result._from_core(outcome[1])
            record.save(index, scenarios[index], results[index])
        else:
            failures.add(index, outcome[1], outcome[2])

    with _progress_bar(progress) as bar:
        task = bar.add_task("runs", total=len(scenarios), completed=len(scenarios) - len(todo))
        workers = processes if processes is not None else (os.cpu_count() or 1)
        if workers <= 1 or len(todo) <= 1:
            for i in todo:
                finish(i, _run_in_worker(scenarios[i].text, scenarios[i].source, trace, check))
                bar.advance(task)
        else:
            _run_in_pool(scenarios, todo, min(workers, len(todo)), trace, check, finish, lambda: bar.advance(task))

    failures.raise_if_any()
    return results  # type: ignore[return-value]  # every entry is set once failures are raised


def _run_in_pool(
    scenarios: Sequence[Scenario],
    todo: Sequence[int],
    workers: int,
    trace: bool,
    check: bool,
    finish: Callable[[int, tuple], None],
    advance: Callable[[], None],
) -> None:
    # "spawn": fresh workers that share nothing with this process (no inherited threads or locks,
    # such as the progress bar's refresh thread).
    with ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn")) as pool:
        pending = {pool.submit(_run_in_worker, scenarios[i].text, scenarios[i].source, trace, check): i for i in todo}
        try:
            while pending:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    finish(pending.pop(future), future.result())
                    advance()
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            raise


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
    try:
        import ray
    except ImportError:
        raise ImportError("run_many_ray needs Ray, which is not installed: pip install 'vcpusim[ray]'") from None

    scenarios = _as_scenarios(scenarios)
    record = _SweepDir(out_dir, trace, check)
    results: list[Result | None] = [record.finished(i, s) for i, s in enumerate(scenarios)]
    todo = [i for i, r in enumerate(results) if r is None]
    failures = _Failures(scenarios)
    if not ray.is_initialized():
        ray.init(address=address, **ray_init)
    remote_run = ray.remote(_run_in_worker)

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
                    record.save(index, scenarios[index], results[index])
                else:
                    failures.add(index, outcome[1], outcome[2])
                bar.advance(task)

    failures.raise_if_any()
    return results  # type: ignore[return-value]
