"""vcpusim: a deterministic discrete-event simulator of vCPU scheduling on consolidated hosts.

    import vcpusim
    scenario = vcpusim.Scenario.from_toml("scenarios/quickstart.toml")
    result = vcpusim.run(scenario.with_policy("credit"), seed=2)
    result.vms          # pandas DataFrame, one row per VM
    result.write("out") # vms.csv, metrics.csv, summary.json, exactly as the CLI writes them

    result.plot.breakdown()  # matplotlib (the "plot" extra)

``vcpusim.sweep(scenario, grid={"host.policy": [...], "seed": range(3)}, out="dir")`` runs every
combination and returns one tidy table (a row per run and VM), saved as CSV and Parquet and
resumable; ``run_many`` runs a list of scenarios. Both start worker processes: a script that
calls them needs the ``if __name__ == "__main__":`` guard (see :func:`vcpusim.run_many`).
A scheduling policy of your own: subclass :class:`vcpusim.Policy` (``vcpusim.policy``).
"""

from ._core import DeadlockError, InternalError, LimitError, PolicyError, ScenarioError, VcpusimError
from ._core import __version__
from .api import Result, Scenario, TraceCutWarning, TraceEmptyWarning, TraceWarning, bench, catalog, interval_shares, load, run
from .runs import run_many, run_many_ray
from .grids import aggregate, compare, sweep, sweep_cases, tidy
from .advise import advise
from .policy import Policy

__all__ = [
    "Scenario",
    "Result",
    "load",
    "run",
    "run_many",
    "run_many_ray",
    "sweep",
    "sweep_cases",
    "tidy",
    "aggregate",
    "compare",
    "advise",
    "Policy",
    "catalog",
    "bench",
    "interval_shares",
    "VcpusimError",
    "ScenarioError",
    "DeadlockError",
    "LimitError",
    "InternalError",
    "PolicyError",
    "TraceCutWarning",
    "TraceEmptyWarning",
    "TraceWarning",
    "__version__",
]
