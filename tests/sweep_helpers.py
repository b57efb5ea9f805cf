"""Stand-ins for vcpusim.runs._run_in_worker that kill their own worker process, importable by
the spawned workers (pytest puts tests/ on sys.path, and spawn hands sys.path to the workers)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

#: A file whose absence makes the "kill-once" run kill its worker (and create it).
MARKER_ENV = "VCPUSIM_TEST_KILL_MARKER"


def killing_worker(text: str, source: str, trace: bool, check: bool) -> tuple:
    """Runs like the real worker, except: source "kill-once" kills its worker the first time
    (SIGKILL, as the OOM killer would), "always-kill" every time."""
    if source == "always-kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if source == "kill-once":
        marker = Path(os.environ[MARKER_ENV])
        if not marker.exists():
            marker.write_text("killed once")
            os.kill(os.getpid(), signal.SIGKILL)
    from vcpusim.runs import _run_in_worker

    return _run_in_worker(text, source, trace, check)
