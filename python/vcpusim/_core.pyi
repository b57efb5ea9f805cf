"""Types of the Rust extension (crates/vcpusim-py/src/lib.rs), for type checkers."""

from typing import Any, Callable

__version__: str

class VcpusimError(Exception): ...
class ScenarioError(VcpusimError): ...
class DeadlockError(VcpusimError): ...
class LimitError(VcpusimError): ...
class InternalError(VcpusimError): ...

def load(text: str, source: str = "<python>") -> dict[str, Any]: ...
def tables(text: str, source: str = "<python>") -> str: ...
def run(
    text: str,
    source: str = "<python>",
    seed: int | None = None,
    trace: bool = False,
    check: bool = False,
    trace_from: str | None = None,
    trace_to: str | None = None,
    trace_max_events: int | None = None,
    progress: Callable[[int, int, int], object] | None = None,
) -> dict[str, Any]: ...
def catalog() -> str: ...
def bench(
    duration: str | None = None,
    memory: bool = True,
    memory_short: str = "10s",
    memory_long: str = "40s",
    repeats: int = 5,
    scaling: bool = False,
    scaling_pcpus: str = "quick",
    scaling_policies: str = "cfs,credit,gang,hybrid,eevdf",
    scaling_sim_time: str = "2s",
) -> str: ...
def _panic_for_test(message: str) -> None: ...
