"""The Python API: scenarios, runs and their results.

Every scenario is validated by the Rust loader (``vcpusim._core.load``), so errors raised here
are word for word the ones the CLI prints. Results keep the exact text Rust produced; the pandas
DataFrames are parsed from it on first use.
"""

from __future__ import annotations

import copy
import functools
import io
import json
import os
import tomllib
from pathlib import Path
from typing import Any, Mapping

import tomli_w

from . import _core
from ._core import ScenarioError

#: The files one run writes, in the order the CLI lists them.
RESULT_FILES = ("vms.csv", "metrics.csv", "summary.json")
TRACE_FILE = "trace.json"


class Scenario:
    """A validated scenario: its TOML text, where it came from, and a short summary.

    Build one with :meth:`from_toml` or :meth:`from_dict`; derive variants with :meth:`replace`
    (or :meth:`with_policy`, :meth:`with_seed`, :meth:`with_duration`). Scenarios are immutable.
    """

    def __init__(self, text: str, source: str = "<python>"):
        self._text = text
        self._source = source
        # Validates; raises ScenarioError naming source, key, bad value and what was expected.
        self._info = _core.load(text, source)

    @classmethod
    def from_toml(cls, path: str | os.PathLike) -> "Scenario":
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ScenarioError(f"{path}: no such scenario file") from None
        except (OSError, UnicodeDecodeError) as e:
            raise ScenarioError(f"{path}: cannot read the scenario: {e}") from None
        return cls(text, str(path))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = "<python>") -> "Scenario":
        """A scenario from the same structure as the TOML file (``{"host": {...}, "vm": [...]}``)."""
        try:
            text = tomli_w.dumps(dict(data))
        except (TypeError, ValueError) as e:
            raise ScenarioError(f"{source}: cannot be written as TOML: {e}") from None
        return cls(text, source)

    # --- what it is -------------------------------------------------------------------------

    @property
    def text(self) -> str:
        """The TOML text, exactly as it is run."""
        return self._text

    @property
    def source(self) -> str:
        return self._source

    @property
    def info(self) -> dict:
        """Summary from the loader: pcpus, policy, vms (names), vcpus, duration_ns, seed."""
        return dict(self._info)

    @property
    def policy(self) -> str:
        return self._info["policy"]

    @property
    def seed(self) -> int:
        return self._info["seed"]

    @property
    def duration_ns(self) -> int:
        return self._info["duration_ns"]

    @property
    def vm_names(self) -> list[str]:
        return list(self._info["vms"])

    def to_dict(self) -> dict:
        """The TOML as nested dicts (a fresh copy: changing it does not change the scenario)."""
        return tomllib.loads(self._text)

    # --- variants ----------------------------------------------------------------------------

    def replace(
        self,
        *,
        policy: str | None = None,
        params: Mapping[str, Any] | None = None,
        seed: int | None = None,
        duration: str | None = None,
        pcpus: int | None = None,
        check: bool | None = None,
        max_events: int | None = None,
        sample_every: str | None = None,
    ) -> "Scenario":
        """A copy with some values changed, validated again.

        ``policy`` replaces ``[host] policy`` and, unless ``params`` is given, drops the old
        policy's ``[host.params]`` (they belong to the old policy). ``params`` replaces
        ``[host.params]``. ``duration`` and ``sample_every`` are strings with a unit ("2s").
        """
        data = copy.deepcopy(self.to_dict())
        host = data.setdefault("host", {})
        if policy is not None:
            if policy != host.get("policy"):
                host.pop("params", None)
            host["policy"] = policy
        if params is not None:
            host["params"] = dict(params)
        if pcpus is not None:
            host["pcpus"] = pcpus
        run = data.setdefault("run", {})
        for key, value in (("seed", seed), ("duration", duration), ("check", check), ("max_events", max_events),
                           ("sample_every", sample_every)):
            if value is not None:
                run[key] = value
        return Scenario.from_dict(data, self._source)

    def with_policy(self, policy: str, **params: Any) -> "Scenario":
        return self.replace(policy=policy, params=params or None)

    def with_seed(self, seed: int) -> "Scenario":
        return self.replace(seed=seed)

    def with_duration(self, duration: str) -> "Scenario":
        return self.replace(duration=duration)

    def __repr__(self) -> str:
        info = self._info
        return (
            f"Scenario({self._source!r}: {info['pcpus']} pCPUs, policy {info['policy']!r}, "
            f"VMs {info['vms']}, duration {info['duration_ns'] / 1e9:g} s, seed {info['seed']})"
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Scenario) and (self._text, self._source) == (other._text, other._source)

    def __hash__(self) -> int:
        return hash((self._text, self._source))

    # Pickled by text and source (for process pools); unpickling validates again.
    def __reduce__(self):
        return (Scenario, (self._text, self._source))


class Result:
    """What one run produced: the exact texts Rust wrote, with parsed views of them."""

    def __init__(self, vms_csv: str, metrics_csv: str, summary_json: str, trace_json: str | None = None):
        self.vms_csv = vms_csv
        self.metrics_csv = metrics_csv
        self.summary_json = summary_json
        self.trace_json = trace_json

    @classmethod
    def _from_core(cls, output: Mapping[str, Any]) -> "Result":
        return cls(output["vms_csv"], output["metrics_csv"], output["summary_json"], output["trace_json"])

    @functools.cached_property
    def vms(self):
        """One row per VM (pandas DataFrame)."""
        import pandas as pd  # imported on first use: the CLI and worker processes do not need it

        return pd.read_csv(io.StringIO(self.vms_csv))

    @functools.cached_property
    def metrics(self):
        """One row per (VM, metric) (pandas DataFrame)."""
        import pandas as pd

        return pd.read_csv(io.StringIO(self.metrics_csv))

    @property
    def samples(self):
        """The CPU-usage time series of ``[run] sample_every`` (pandas DataFrame): one row per VM
        and sample instant, columns ``vm``, ``t_s``, ``pcpu_time_ms`` (cumulative) and ``share``
        (the VM's share of the host over the interval ending at ``t_s``). Empty without sampling."""
        m = self.metrics
        rows = m[m["metric"].str.startswith("pcpu_time_ms[")].copy()
        rows["t_s"] = rows["metric"].str.slice(len("pcpu_time_ms["), -len("s]")).astype(float)
        rows["pcpu_time_ms"] = rows["value"].astype(float)
        rows = rows[["vm", "t_s", "pcpu_time_ms"]].reset_index(drop=True)
        rows["share"] = interval_shares(rows, ["vm"], self.summary["pcpus"])
        return rows

    @functools.cached_property
    def summary(self) -> dict:
        return json.loads(self.summary_json)

    @property
    def trace(self) -> str | None:
        """Chrome trace-event JSON (open in Perfetto), or None when the run was not traced."""
        return self.trace_json

    def files(self) -> dict[str, str]:
        """File name -> exact content, as the CLI writes them."""
        files = dict(zip(RESULT_FILES, (self.vms_csv, self.metrics_csv, self.summary_json)))
        if self.trace_json is not None:
            files[TRACE_FILE] = self.trace_json
        return files

    def write(self, directory: str | os.PathLike) -> Path:
        """Write vms.csv, metrics.csv, summary.json (and trace.json when traced) into directory."""
        directory = Path(directory)
        try:
            directory.mkdir(parents=True, exist_ok=True)
            for name, content in self.files().items():
                # Bytes, not text mode: no newline translation, the files are exactly Rust's.
                (directory / name).write_bytes(content.encode("utf-8"))
        except OSError as e:
            raise _core.VcpusimError(f"cannot write results to {directory}: {e.strerror or e}") from None
        return directory

    @classmethod
    def read(cls, directory: str | os.PathLike) -> "Result":
        """Read back what :meth:`write` wrote."""
        directory = Path(directory)

        def text(name: str) -> str:
            return (directory / name).read_bytes().decode("utf-8")

        trace = text(TRACE_FILE) if (directory / TRACE_FILE).exists() else None
        return cls(text("vms.csv"), text("metrics.csv"), text("summary.json"), trace)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Result) and self.files() == other.files()

    def __repr__(self) -> str:
        return f"Result({len(self.vms)} VMs, summary={self.summary})"

    # Cached DataFrames are not pickled; they are rebuilt from the text on first use.
    def __getstate__(self):
        return {k: getattr(self, k) for k in ("vms_csv", "metrics_csv", "summary_json", "trace_json")}

    def __setstate__(self, state):
        self.__dict__.update(state)


def interval_shares(samples, by: list[str], pcpus: int):
    """Each sampled interval's share of the host, from cumulative ``pcpu_time_ms`` at ``t_s``
    (``[run] sample_every``), per group ``by`` (say one run's VMs, or several runs' VM rows):
    the time gained since the group's previous sample (or since 0) over pCPUs x the interval.
    Rows must be in time order within each group."""
    by_group = samples.groupby(by, sort=False)
    step_ms = by_group["pcpu_time_ms"].diff().fillna(samples["pcpu_time_ms"])
    span_ms = by_group["t_s"].diff().fillna(samples["t_s"]) * 1e3
    return step_ms / (span_ms * pcpus)


def as_scenario(scenario: "Scenario | Mapping[str, Any] | str | os.PathLike") -> Scenario:
    """A :class:`Scenario` as is, a mapping of TOML tables (:meth:`Scenario.from_dict`), or a
    scenario file's path (:meth:`Scenario.from_toml`); anything else is a ``TypeError`` naming what
    was given."""
    if isinstance(scenario, Scenario):
        return scenario
    if isinstance(scenario, Mapping):
        return Scenario.from_dict(scenario)
    if isinstance(scenario, (str, os.PathLike)):
        return Scenario.from_toml(scenario)
    raise TypeError(
        f"expected a Scenario, a dict of scenario tables or a scenario file path, got {type(scenario).__name__}"
    )


def load(path: str | os.PathLike) -> Scenario:
    """Shorthand for :meth:`Scenario.from_toml`."""
    return Scenario.from_toml(path)


def run(scenario: "Scenario | Mapping[str, Any] | str | os.PathLike", seed: int | None = None, trace: bool = False, check: bool = False) -> Result:
    """Run a scenario (a :class:`Scenario`, a dict of its tables, or a scenario file) and return
    its :class:`Result`.

    ``seed`` overrides ``[run] seed``; ``trace`` records a Chrome trace; ``check`` verifies engine
    invariants after every event (slow). The GIL is released while the simulation runs.
    """
    scenario = as_scenario(scenario)
    output = _core.run(scenario.text, scenario.source, seed=seed, trace=trace, check=check)
    return Result._from_core(output)


def catalog() -> dict:
    """Policies, workloads and other settings with their parameters and defaults."""
    return json.loads(_core.catalog())


def bench(
    duration: str | None = None, memory: bool = True, memory_short: str = "10s", memory_long: str = "40s", repeats: int = 5
) -> dict:
    """The standard benchmark on scenarios/quickstart.toml (see crates/vcpusim/src/bench.rs)."""
    return json.loads(_core.bench(duration, memory, memory_short, memory_long, repeats))
