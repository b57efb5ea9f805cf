"""The live progress line of one run: simulated time against the run's duration, with the
elapsed wall time and an estimate of what is left (rich, on stderr).

The Rust run loop calls back about every 50 ms of wall time (``vcpusim._core.run(progress=...)``);
:class:`RunProgress` turns those calls into a rich progress bar. A run that ends early (every VM
reached its iteration target) simply stops short of the full bar.
"""

from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn


class RunProgress:
    """A context manager whose :meth:`update` is the ``progress`` callback of ``_core.run``.

    ``label`` names the run on the line; ``console`` defaults to stderr. Disabled (``enabled=False``)
    it records where the run is but draws nothing."""

    def __init__(self, label: str, duration_ns: int, enabled: bool = True, console: Console | None = None):
        self.duration_s = duration_ns / 1e9
        self.enabled = enabled
        #: The last simulated time reported (ns): where an interrupted run stopped.
        self.now_ns = 0
        self.events = 0
        self._bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.fields[sim]}"),
            TextColumn("elapsed"),
            TimeElapsedColumn(),
            TextColumn("left"),
            TimeRemainingColumn(),
            console=console or Console(stderr=True),
            disable=not enabled,
            transient=True,
        )
        self._task = self._bar.add_task(label, total=max(self.duration_s, 1e-9), sim=self._sim_text(0))

    def _sim_text(self, now_ns: int) -> str:
        return f"{now_ns / 1e9:.3g} / {self.duration_s:g} s simulated"

    def update(self, now_ns: int, duration_ns: int, events: int) -> None:
        self.now_ns, self.events = now_ns, events
        self._bar.update(self._task, completed=now_ns / 1e9, sim=self._sim_text(now_ns))

    # A disabled bar is never started: some rich versions (13.7) print a newline on stop even then.
    def __enter__(self) -> "RunProgress":
        if self.enabled:
            self._bar.start()
        return self

    def __exit__(self, *exc) -> None:
        if self.enabled:
            self._bar.stop()
