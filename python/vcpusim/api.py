"""The Python API: scenarios, runs and their results.

Every scenario is validated by the Rust loader (``vcpusim._core.load``), so errors raised here
are word for word the ones the CLI prints. Results keep the exact text Rust produced; the pandas
DataFrames are parsed from it on first use.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import io
import json
import os
import tempfile
import warnings
from pathlib import Path
from typing import Any, Callable, Mapping

import tomli_w

from . import _core
from ._core import ScenarioError, VcpusimError

#: The files one run writes, in the order the CLI lists them.
RESULT_FILES = ("vms.csv", "metrics.csv", "summary.json")
TRACE_FILE = "trace.json"
#: The trace in Perfetto's protobuf format (`Result.write(trace_format=...)`).
PROTO_TRACE_FILE = "trace.pftrace"
TRACE_FORMATS = ("auto", "json", "perfetto")
#: What computed a written result (:func:`provenance`), kept apart from the result files so that
#: those stay the same bytes for the same scenario and seed whatever build ran them.
PROVENANCE_FILE = "provenance.json"
#: Seeds are unsigned 64-bit integers (the Rust engine's u64).
MAX_SEED = 2**64 - 1



@functools.lru_cache(maxsize=1)
def engine_fingerprint() -> str:
    """SHA-256 of the compiled engine (the ``_core`` extension file): results saved by another
    build of vcpusim (another model) are not this build's results, so they are not reused."""
    return hashlib.sha256(Path(_core.__file__).read_bytes()).hexdigest()


@functools.lru_cache(maxsize=1)
def provenance() -> dict:
    """What computed a result: the vcpusim version, the build (its profile, and whether the
    profile-guided optimization applied) and the engine's hash (:func:`engine_fingerprint`)."""
    info = _core.build_info()
    return {"version": _core.__version__, "profile": info["profile"], "pgo": bool(info["pgo"]),
            "engine_sha256": engine_fingerprint()}

class TraceWarning(UserWarning):
    """Something to know about a run's trace; the run itself and its tables are whole."""


class TraceCutWarning(TraceWarning):
    """A traced run recorded more events than the trace keeps: the trace stops early. Trace a
    window instead (``trace_from`` / ``trace_to``; ``--trace-from`` / ``--trace-to`` on the CLI)."""


class TraceEmptyWarning(TraceWarning):
    """The trace window starts at or after the run's end, so the trace holds no event of it."""


def _trace_warning_class(message: str) -> type[TraceWarning]:
    """The class of one of the engine's trace warnings (report.rs `trace_warnings`)."""
    return TraceEmptyWarning if message.startswith("the trace is empty") else TraceCutWarning


def _type_name(value: Any) -> str:
    return f"{type(value).__name__} {value!r}" if isinstance(value, (str, int, float)) else type(value).__name__


def check_seed(seed: Any, where: str) -> None:
    """``seed`` is None or an integer 0..2**64-1; otherwise an error naming ``where``."""
    if seed is None:
        return
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"{where}: seed: expected an integer from 0 to {MAX_SEED}, got {_type_name(seed)}")
    if not 0 <= seed <= MAX_SEED:
        raise ValueError(f"{where}: seed: expected an integer from 0 to {MAX_SEED}, got {seed}")


def check_flag(value: Any, name: str, where: str) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"{where}: {name}: expected True or False, got {_type_name(value)}")


def _duration_text(value: Any, name: str, where: str) -> str | None:
    """A duration argument as the engine reads it: a string with a unit ("2s") or integer ns."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return f"{value}ns"
    raise TypeError(f"{where}: {name}: expected a duration such as \"2s\" or a number of ns, got {_type_name(value)}")


MAX_SCENARIO_BYTES = 64 << 20
"""The largest scenario file ``Scenario.from_toml`` reads: far above any real scenario (the
loader's own bounds, such as 65,536 VMs, fit in a few MiB), and it stops a device or a wrong
file from being read without end."""


def check_folder(directory: Any, param: str) -> Path:
    """``directory`` as a folder path: a ``str`` or ``os.PathLike`` that is not empty; otherwise a
    TypeError or ValueError naming the parameter ``param`` (an empty path would mean the current
    folder, which a caller never means by leaving a name blank)."""
    if isinstance(directory, bytes) or not isinstance(directory, (str, os.PathLike)):
        raise TypeError(f"{param}: expected a folder path (str or os.PathLike), got {_type_name(directory)}")
    text = os.fspath(directory)
    if isinstance(text, bytes):
        raise TypeError(f"{param}: expected a folder path (str or os.PathLike), got a bytes path {text!r}")
    if not text.strip():
        raise ValueError(f"{param}: empty folder path; give a folder (\".\" for the current one)")
    return Path(text)


def check_writable(directory: str | os.PathLike, what: str = "results", param: str = "directory") -> Path:
    """Create ``directory`` if needed and prove a file can be written there, before any work is
    done; otherwise a :class:`VcpusimError` naming the directory and the reason (a TypeError or
    ValueError naming ``param`` when it is not a folder path at all)."""
    directory = check_folder(directory, param)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".vcpusim-probe-", dir=directory)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise VcpusimError(f"cannot write {what} to {directory}: {e.strerror or e}") from None
    return directory


#: How deep scenario data may nest (tables in arrays in tables ...): far more than any scenario
#: needs (a program's nested loops add two levels each), and short of Python's recursion limit.
MAX_NESTING = 128


def _shape_problem(data: Any) -> str | None:
    """What makes nested scenario data unwritable as TOML, as "path: problem", or None: a None
    (TOML has no null), a table or array that contains itself, or nesting past MAX_NESTING.
    Walked with an explicit stack, so no depth of input reaches Python's recursion limit."""
    stack: list[tuple[Any, str, int, tuple[int, ...]]] = [(data, "", 0, ())]
    while stack:
        value, path, depth, open_ids = stack.pop()
        where = path or "(the scenario)"
        if value is None:
            return f"{where}: None cannot be written as TOML (TOML has no null): leave the key out for its default"
        if isinstance(value, (Mapping, list, tuple)):
            if id(value) in open_ids:
                return f"{where}: contains itself (a table or array that holds itself cannot be written as TOML)"
            if depth >= MAX_NESTING:
                return f"{where}: nested more than {MAX_NESTING} tables or arrays deep; a scenario nests a few levels"
            inner = (*open_ids, id(value))
            items = (value.items() if isinstance(value, Mapping) else enumerate(value))
            children = [(v, (f"{path}.{k}" if path else str(k)) if isinstance(value, Mapping) else f"{path}[{k}]")
                        for k, v in items]
            for v, p in reversed(children):
                stack.append((v, p, depth + 1, inner))
    return None


class Scenario:
    """A validated scenario: its TOML text, where it came from, and a short summary.

    Build one with :meth:`from_toml` or :meth:`from_dict`; derive variants with :meth:`replace`
    (or :meth:`with_policy`, :meth:`with_seed`, :meth:`with_duration`). Scenarios are immutable.
    """

    def __init__(self, text: str, source: str = "<python>"):
        if not isinstance(text, str):
            raise TypeError(f"Scenario: text: expected the TOML text as a str, got {_type_name(text)}")
        if not isinstance(source, str):
            raise TypeError(f"Scenario: source: expected a name (str), got {_type_name(source)}")
        for name, value in (("text", text), ("source", source)):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as e:
                line = value.count("\n", 0, e.start) + 1
                raise ScenarioError(f"{source.encode('utf-8', 'backslashreplace').decode()}: {name}: line {line}: "
                                    f"{value[e.start]!r} is a lone surrogate, which no UTF-8 text (so no TOML "
                                    "file) can hold") from None
        self._text = text
        self._source = source
        # Validates; raises ScenarioError naming source, key, bad value and what was expected.
        self._info = _core.load(text, source)

    @classmethod
    def from_toml(cls, path: str | os.PathLike) -> "Scenario":
        """The scenario in a TOML file (TOML text itself goes to ``Scenario(text)``)."""
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"from_toml: path: expected a file path (str or os.PathLike), got {_type_name(path)}")
        path = Path(path)
        try:
            with open(path, "rb") as f:
                data = f.read(MAX_SCENARIO_BYTES + 1)
            if len(data) > MAX_SCENARIO_BYTES:
                raise ScenarioError(f"{path}: larger than {MAX_SCENARIO_BYTES >> 20} MiB; a scenario is a TOML text "
                                    "file (is this the right file?)")
            text = data.decode("utf-8")
        except OSError as e:
            # TOML text passed as a path fails as a missing file, or, when long, as a name too long.
            if "\n" in str(path) and not isinstance(e, (IsADirectoryError, PermissionError)):
                raise ScenarioError("from_toml: path: got TOML text, not a file path: "
                                    "give the text to vcpusim.Scenario(text)") from None
            if isinstance(e, FileNotFoundError):
                raise ScenarioError(f"{path}: no such scenario file") from None
            raise ScenarioError(f"{path}: cannot read the scenario: {e}") from None
        except UnicodeDecodeError as e:
            raise ScenarioError(f"{path}: cannot read the scenario: {e}") from None
        return cls(text, str(path))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = "<python>") -> "Scenario":
        """A scenario from the same structure as the TOML file (``{"host": {...}, "vm": [...]}``)."""
        if not isinstance(data, Mapping):
            raise TypeError(f"from_dict: data: expected a dict of scenario tables, got {_type_name(data)}")
        problem = _shape_problem(data)
        if problem:
            raise ScenarioError(f"{source}: {problem}")
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
        """Summary from the loader: pcpus, policy, vms (names), vcpus, duration_ns, seed, and
        topology (one dict per pCPU: pcpu, socket, node, module, core, thread, llc)."""
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
        """The TOML as nested dicts (a fresh copy: changing it does not change the scenario).

        Parsed by the Rust loader's own TOML parser (``_core.tables``), so every form a scenario
        file may use (TOML 1.1: trailing commas and newlines in inline tables, ``\\xHH`` escapes)
        reads the same here as in ``vcpusim run``."""
        return json.loads(_core.tables(self._text, self._source))

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
        where = "replace"
        if policy is not None and not isinstance(policy, str):
            raise TypeError(f"{where}: policy: expected a policy name (str), got {_type_name(policy)}")
        if params is not None and not isinstance(params, Mapping):
            raise TypeError(f"{where}: params: expected a dict of [host.params] keys to values, got {_type_name(params)}")
        check_seed(seed, where)
        for name, value in (("duration", duration), ("sample_every", sample_every)):
            if value is not None and not isinstance(value, str):
                raise TypeError(f"{where}: {name}: expected a duration with a unit such as \"2s\", got {_type_name(value)}")
        for name, value in (("pcpus", pcpus), ("max_events", max_events)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise TypeError(f"{where}: {name}: expected an integer, got {_type_name(value)}")
        if check is not None:
            check_flag(check, "check", where)
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

    def override(self, values: Mapping[str, Any], what: str = "override") -> "Scenario":
        """A copy with scenario keys set by dotted path, validated again exactly as a file is:
        ``{"host.policy": "credit", "vm.par.vcpus": 4, "run.duration": "2s"}``.

        A path walks tables by key; in an array of tables (``[[vm]]``, ``[[host.pool]]``) the next
        part picks an entry by its ``name`` (or its 0-based index). Missing tables are created.
        As in :meth:`replace`, a new ``host.policy`` drops the old policy's ``[host.params]``
        unless ``host.params...`` is set too. ``what`` names the overrides in error messages
        (the CLI says ``--set``)."""
        if not isinstance(values, Mapping):
            raise TypeError(f"{what}: expected a dict of dotted keys to values, got {_type_name(values)}")
        data = self.to_dict()
        host = data.get("host") if isinstance(data.get("host"), dict) else {}
        new_policy = values.get("host.policy")
        sets_params = any(str(k).startswith("host.params") for k in values)
        if new_policy is not None and new_policy != host.get("policy") and not sets_params:
            host.pop("params", None)
        for key, value in values.items():
            set_path(data, key, value, f"{self._source}: {what} {key}")
        try:
            return Scenario.from_dict(data, self._source)
        except ScenarioError as e:
            shown = ", ".join(f"{k}={v!r}" for k, v in values.items())
            raise ScenarioError(f"{e} (after {what} {shown})") from None

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

    def _repr_html_(self) -> str:
        from .plot import scenario_html

        return scenario_html(self)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Scenario) and (self._text, self._source) == (other._text, other._source)

    def __hash__(self) -> int:
        return hash((self._text, self._source))

    # Pickled by text and source (for process pools); unpickling validates again.
    def __reduce__(self):
        return (Scenario, (self._text, self._source))


def _array_entry(items: list, parts: list[str], label: str, table: str) -> tuple[dict, int]:
    """The entry of an array of tables that the next parts name (by ``name``, longest match first,
    since names may hold dots; or by index) and how many parts that took."""
    for take in range(len(parts), 0, -1):
        name = ".".join(parts[:take])
        for item in items:
            if isinstance(item, dict) and item.get("name") == name:
                return item, take
    if parts[0].isdigit() and int(parts[0]) < len(items):
        return items[int(parts[0])], 1
    names = ", ".join(str(i.get("name")) for i in items if isinstance(i, dict) and "name" in i)
    raise ScenarioError(f"{label}: no [[{table}]] entry named {parts[0]!r} (entries: {names or 'none named'}; or give an index)")


def set_path(data: dict, key: str, value: Any, label: str) -> None:
    """Set ``value`` at dotted ``key`` in scenario tables (see :meth:`Scenario.override`)."""
    if not isinstance(key, str) or not key or any(p == "" for p in key.split(".")):
        raise ScenarioError(f"{label}: expected a dotted key such as host.policy or vm.NAME.vcpus")
    parts = key.split(".")
    node: Any = data
    walked: list[str] = []
    while len(parts) > 1:
        part = parts.pop(0)
        walked.append(part)
        child = node.get(part)
        if child is None:
            child = node[part] = {}
        if isinstance(child, list):
            entry, took = _array_entry(child, parts, label, ".".join(walked))
            walked.extend(parts[:took])
            del parts[:took]
            if not parts:
                raise ScenarioError(f"{label}: name a key of the [[{'.'.join(walked[:-took])}]] entry after its name")
            child = entry
        if not isinstance(child, dict):
            raise ScenarioError(f"{label}: {'.'.join(walked)} is a value ({child!r}), not a table")
        node = child
    node[parts[0]] = value


class Result:
    """What one run produced: the exact texts Rust wrote, with parsed views of them, and the
    run's warnings (such as a trace cut at its event cap; not part of the files)."""

    def __init__(self, vms_csv: str, metrics_csv: str, summary_json: str, trace_json: str | None = None,
                 warnings: list[str] | None = None):
        self.vms_csv = vms_csv
        self.metrics_csv = metrics_csv
        self.summary_json = summary_json
        self.trace_json = trace_json
        self.warnings = list(warnings or [])

    @classmethod
    def _from_core(cls, output: Mapping[str, Any]) -> "Result":
        return cls(output["vms_csv"], output["metrics_csv"], output["summary_json"], output["trace_json"],
                   output.get("warnings"))

    @functools.cached_property
    def vms(self):
        """One row per VM (pandas DataFrame). ``iterations`` is a nullable integer (``Int64``):
        empty for VMs without an iteration target."""
        import pandas as pd  # imported on first use: the CLI and worker processes do not need it

        return pd.read_csv(io.StringIO(self.vms_csv), dtype={"iterations": "Int64"})

    @functools.cached_property
    def metrics(self):
        """One row per (VM, metric) (pandas DataFrame)."""
        import pandas as pd

        return pd.read_csv(io.StringIO(self.metrics_csv))

    @functools.cached_property
    def table(self):
        """This run's table (pandas DataFrame): one row per VM, vms.csv's columns, each metric of
        metrics.csv as a column (sorted by name; empty for a VM that did not report it) and
        ``sim_s``: the rows a sweep's table (:func:`vcpusim.tidy`) has for this run, without the
        sweep's labels."""
        from .grids import tidy

        return tidy([({}, self)])

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

    @functools.cached_property
    def _trace_table(self):
        """The trace's complete slices and track names, parsed once (the JSON is large: a second
        of a busy host is tens of MB) and kept as compact columns, the parsed JSON dropped."""
        import pandas as pd

        if self.trace_json is None:
            raise ValueError("this run has no trace: run with trace=True, or trace_from/trace_to for a window")
        doc = json.loads(self.trace_json)
        events = doc["traceEvents"]
        tracks = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e.get("name") == "thread_name"}
        processes = {e["pid"]: e["args"]["name"] for e in events if e.get("name") == "process_name"}
        slices = [e for e in events if e.get("ph") == "X" and e.get("dur", 0) > 0]
        table = pd.DataFrame({
            "pid": pd.array([e["pid"] for e in slices], dtype="int32"),
            "tid": pd.array([e["tid"] for e in slices], dtype="int32"),
            "name": pd.Categorical([e["name"] for e in slices]),
            "vm": pd.Categorical([(e.get("args") or {}).get("vm") for e in slices]),
            "start_s": [e["ts"] / 1e6 for e in slices],
            "end_s": [(e["ts"] + e["dur"]) / 1e6 for e in slices],
        })
        cut_ns = (doc.get("otherData") or {}).get("complete_until_ns")
        return table, tracks, processes, cut_ns

    def trace_spans(self, start: float | None = None, end: float | None = None):
        """The trace's slices as a table, one row per slice: ``pid`` (0: the host's pCPU tracks,
        1 + VM index: that VM's vCPU tracks), ``tid`` (the pCPU or vCPU), ``name`` (the VM on a
        pCPU track, the activity on a vCPU track), ``vm`` (on pCPU tracks), ``start_s``, ``end_s``.
        ``start`` / ``end`` (seconds) keep the slices that overlap that window. The trace is parsed
        once per result and kept as these columns, so windows of one run are cheap to take; each
        call returns a table of its own."""
        table = self._trace_table[0]
        keep = None
        if start is not None:
            keep = table["end_s"] > start
        if end is not None:
            before_end = table["start_s"] < end
            keep = before_end if keep is None else keep & before_end
        return table.copy() if keep is None else table[keep].reset_index(drop=True)

    def trace_tracks(self) -> dict[tuple[int, int], str]:
        """Track names of the trace by (pid, tid): ``pCPU 3``, ``vCPU 0``..."""
        return dict(self._trace_table[1])

    def trace_processes(self) -> dict[int, str]:
        """Process names of the trace by pid: the host, ``VM par``..."""
        return dict(self._trace_table[2])

    def trace_complete_until_ns(self) -> int | None:
        """Where a trace cut at its event cap ends (None when it was not cut)."""
        return self._trace_table[3]

    def files(self) -> dict[str, str]:
        """File name -> exact content, as the CLI writes them."""
        files = dict(zip(RESULT_FILES, (self.vms_csv, self.metrics_csv, self.summary_json)))
        if self.trace_json is not None:
            files[TRACE_FILE] = self.trace_json
        return files

    def write(self, directory: str | os.PathLike, trace_format: str = "auto") -> Path:
        """Write vms.csv, metrics.csv, summary.json (and the trace when traced) into directory,
        with provenance.json beside them: the vcpusim version, build and engine hash that
        computed them (:func:`provenance`; a file of its own, so the result files are the same
        bytes for the same scenario and seed on any build).

        ``trace_format``: ``"json"`` writes ``trace.json`` (Chrome JSON), ``"perfetto"`` writes
        ``trace.pftrace`` (Perfetto's protobuf: the same tracks, slices, flows and counters, about
        half the size, opened by https://ui.perfetto.dev without its JSON importer's memory
        limit; :mod:`vcpusim.trace_proto`), ``"auto"`` JSON up to 64 MB of it, protobuf above.

        All or nothing: every file is first written beside its place under a temporary name and
        only then renamed over the old one, so a failure (a full disk) leaves the directory as it
        was and names it in the error. A ``trace.json`` of an earlier run is removed when this
        result has no trace, so a folder never mixes two runs."""
        directory = check_folder(directory, "Result.write: directory")
        if trace_format not in TRACE_FORMATS:
            raise ValueError(f"Result.write: trace_format: expected one of {', '.join(TRACE_FORMATS)}, got {trace_format!r}")
        temporary: list[Path] = []
        try:
            directory.mkdir(parents=True, exist_ok=True)
            written: dict[str, str | bytes] = {**self.files(), PROVENANCE_FILE: json.dumps({"vcpusim": provenance()}, indent=2) + "\n"}
            if self.trace_json is not None and _trace_format(trace_format, self.trace_json) == "perfetto":
                from . import trace_proto

                proto = io.BytesIO()
                trace_proto.write(written.pop(TRACE_FILE), proto)
                written[PROTO_TRACE_FILE] = proto.getvalue()
            for name, content in written.items():
                fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".partial", dir=directory)
                temporary.append(Path(tmp))
                # mkstemp makes the file 0600; a result file gets the mode any file the user
                # writes gets (0666 less the umask), as run.json and sweep.csv beside it do.
                os.fchmod(fd, 0o666 & ~_umask())
                # Bytes, not text mode: no newline translation, the files are exactly Rust's.
                _write_file(fd, content if isinstance(content, bytes) else content.encode("utf-8"))
            for tmp, name in zip(temporary, written):
                os.replace(tmp, directory / name)
            temporary.clear()
            # A trace of an earlier run, in either format, does not stay beside this one.
            for name in (TRACE_FILE, PROTO_TRACE_FILE):
                if name not in written:
                    (directory / name).unlink(missing_ok=True)
        except OSError as e:
            # os.replace names its target (a folder named vms.csv); else the directory.
            where = e.filename2 or directory
            raise VcpusimError(f"cannot write results to {where}: {e.strerror or e}") from None
        finally:
            for tmp in temporary:
                tmp.unlink(missing_ok=True)
        return directory

    @classmethod
    def read(cls, directory: str | os.PathLike) -> "Result":
        """Read back what :meth:`write` wrote. A ``trace.json`` that belongs to another run than
        ``summary.json`` (left by an older vcpusim) is refused with an error naming it."""
        directory = Path(directory)

        def text(name: str) -> str:
            try:
                return (directory / name).read_bytes().decode("utf-8")
            except (OSError, UnicodeDecodeError) as e:
                raise VcpusimError(f"cannot read {directory / name}: {getattr(e, 'strerror', None) or e}") from None

        summary = text("summary.json")
        try:
            if not isinstance(json.loads(summary), dict):
                raise ValueError("it holds no JSON object")
        except ValueError as e:
            raise VcpusimError(f"{directory / 'summary.json'} is not the summary vcpusim writes ({e}): "
                               "run again to write it anew") from None
        trace = None
        if (directory / TRACE_FILE).exists():
            trace = text(TRACE_FILE)
            problem = _trace_mismatch(trace, summary)
            if problem:
                raise VcpusimError(f"{directory / TRACE_FILE} is not the trace of the run in {directory / 'summary.json'} "
                                   f"({problem}): remove it or run again")
        return cls(text("vms.csv"), text("metrics.csv"), summary, trace)

    @property
    def plot(self):
        """Plots of this run (matplotlib, ``pip install "vcpusim[plot]"``): ``plot.timeline()``
        (pCPU or vCPU Gantt chart of a traced run), ``plot.shares()`` (each VM's share over time,
        with ``[run] sample_every``), ``plot.breakdown()`` (each VM's CPU time by activity)."""
        from .plot import ResultPlots

        return ResultPlots(self)

    def _repr_html_(self) -> str:
        from .plot import result_html

        return result_html(self)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Result) and self.files() == other.files()

    def __repr__(self) -> str:
        return f"Result({len(self.vms)} VMs, summary={self.summary})"

    # Cached DataFrames are not pickled; they are rebuilt from the text on first use.
    def __getstate__(self):
        return {k: getattr(self, k) for k in ("vms_csv", "metrics_csv", "summary_json", "trace_json", "warnings")}

    def __setstate__(self, state):
        state.setdefault("warnings", [])
        self.__dict__.update(state)


def _trace_format(trace_format: str, trace_json: str) -> str:
    """The format ``trace_format`` writes ``trace_json`` in: ``"auto"`` is protobuf above
    :data:`vcpusim.trace_proto.AUTO_PROTOBUF_BYTES` of JSON."""
    if trace_format != "auto":
        return trace_format
    from .trace_proto import AUTO_PROTOBUF_BYTES

    return "perfetto" if len(trace_json) > AUTO_PROTOBUF_BYTES else "json"


def _umask() -> int:
    """The process's umask: read from /proc on Linux (no change of process state), else set and
    restored at once."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _write_file(fd: int, data: bytes) -> None:
    """Write all of ``data`` to the open file ``fd`` and close it (one place, so tests can make it
    fail as a full disk would)."""
    with os.fdopen(fd, "wb") as f:
        f.write(data)
        f.flush()


#: The keys of a trace's ``otherData`` that say which run it belongs to, and summary.json's names.
_TRACE_IDENTITY = {"scenario": "scenario", "seed": "seed", "events": "events", "sim_time_ns": "sim_time_ns"}


def _trace_mismatch(trace: str, summary_json: str) -> str | None:
    """Why the trace is not the one of that summary (its first line names its run), or None."""
    first = trace.split("\n", 1)[0]
    head = first.removesuffix('"traceEvents":[').rstrip(",")
    try:
        other = json.loads(head + "}")["otherData"]
        summary = json.loads(summary_json)
    except (ValueError, KeyError, TypeError):
        return "its first line does not name its run, as vcpusim writes it"
    for key, summary_key in _TRACE_IDENTITY.items():
        if other.get(key) != summary.get(summary_key):
            return f"{key} {other.get(key)!r} against {summary.get(summary_key)!r}"
    return None


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


def run(
    scenario: "Scenario | Mapping[str, Any] | str | os.PathLike",
    seed: int | None = None,
    trace: bool = False,
    check: bool = False,
    *,
    trace_from: str | int | None = None,
    trace_to: str | int | None = None,
    trace_max_events: int | None = None,
    progress: bool | Callable[[int, int, int], None] = False,
    policy: Any = None,
) -> Result:
    """Run a scenario (a :class:`Scenario`, a dict of its tables, or a scenario file) and return
    its :class:`Result`.

    ``policy`` runs the scenario under another policy: a name (``"credit"``), or a policy
    written in Python (:class:`vcpusim.Policy`): an object, of which each pool naming it runs a
    deep copy, or a class, made with the scenario's ``[host.params]``. It replaces ``[host]
    policy`` (and drops ``[host.params]`` written for another policy).

    ``seed`` overrides ``[run] seed``; ``trace`` records a Chrome trace; ``trace_from`` /
    ``trace_to`` (durations such as ``"2s"``, or ns) trace only that window of simulated time
    (and imply ``trace``); ``trace_max_events`` caps the trace's records (default 2,000,000; it
    implies ``trace`` too); ``check`` verifies engine invariants after every event (slow).
    ``progress=True`` shows a progress bar on stderr (simulated time, elapsed, time left); a
    callable is called as ``progress(now_ns, duration_ns, events)`` about every 50 ms.

    The GIL is released while the simulation runs; Ctrl-C stops it within a fraction of a
    second with ``KeyboardInterrupt`` (and no result). A trace cut at its event cap raises a
    :class:`TraceCutWarning`, a window starting at or after the run's end a
    :class:`TraceEmptyWarning` (both are :class:`TraceWarning`).
    """
    where = "run"
    scenario = as_scenario(scenario)
    text, policies = _with_policy(scenario, policy, where)
    check_seed(seed, where)
    check_flag(trace, "trace", where)
    check_flag(check, "check", where)
    window = {"trace_from": _duration_text(trace_from, "trace_from", where),
              "trace_to": _duration_text(trace_to, "trace_to", where)}
    if trace_max_events is not None:
        if isinstance(trace_max_events, bool) or not isinstance(trace_max_events, int) or not 1 <= trace_max_events < 2**64:
            raise ValueError(f"{where}: trace_max_events: expected a positive integer below 2**64, got {_type_name(trace_max_events)}")
        window["trace_max_events"] = trace_max_events
    if progress is True:
        from .progress import RunProgress

        with RunProgress(f"running {scenario.source}", scenario.duration_ns) as bar:
            output = _core.run(text, scenario.source, seed=seed, trace=trace, check=check,
                               progress=bar.update, policies=policies, **window)
    elif progress is False or progress is None:
        output = _core.run(text, scenario.source, seed=seed, trace=trace, check=check, policies=policies, **window)
    elif callable(progress):
        output = _core.run(text, scenario.source, seed=seed, trace=trace, check=check,
                           progress=progress, policies=policies, **window)
    else:
        raise TypeError(f"{where}: progress: expected True, False or a callable, got {_type_name(progress)}")
    result = Result._from_core(output)
    for message in result.warnings:
        warnings.warn(f"{scenario.source}: {message}", _trace_warning_class(message), stacklevel=2)
    return result


def _with_policy(scenario: Scenario, policy: Any, where: str) -> tuple[str, dict | None]:
    """The text ``scenario`` runs under ``policy`` (see :func:`run`), and the Python policy
    objects or classes the engine takes by name."""
    if policy is None:
        return scenario.text, None
    from .policy import Policy, policy_name

    if isinstance(policy, str):
        name, given = policy, None
    elif isinstance(policy, Policy) or (isinstance(policy, type) and issubclass(policy, Policy)):
        name, given = policy_name(policy), {policy_name(policy): policy}
    else:
        raise TypeError(f"{where}: policy: expected a policy name, or a vcpusim.Policy subclass or object, got {_type_name(policy)}")
    data = scenario.to_dict()
    host = data.setdefault("host", {})
    if host.get("policy") != name:
        host.pop("params", None)
    host["policy"] = name
    return tomli_w.dumps(data), given


def catalog() -> dict:
    """Policies, workloads and other settings with their parameters and defaults."""
    return json.loads(_core.catalog())


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
    scaling_repeats: int = 1,
    scenario: "Scenario | None" = None,
) -> dict:
    """The standard benchmark on scenarios/quickstart.toml (see crates/vcpusim/src/bench.rs);
    with `scaling`, also the table of the quickstart's mix scaled to `scaling_pcpus` ("quick":
    8, 32, 128; "full": 8 to 1024; or a list like "8,64") under each of `scaling_policies` (policy
    names, or a seed's mechanism over one such as "credit+microsliced": `SCALING_MECHANISMS` in
    bench.rs), each row the fastest of `scaling_repeats` runs. A `scenario` is timed in place of the quickstart
    (the scaling table stays the quickstart's mix)."""
    if scenario is not None and not isinstance(scenario, Scenario):
        raise TypeError(f"bench: scenario: expected a vcpusim.Scenario, got {_type_name(scenario)}")
    for name, value in (("repeats", repeats), ("scaling_repeats", scaling_repeats)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise VcpusimError(f"bench: {name}: got {value!r}, expected a positive integer")
    return json.loads(
        _core.bench(
            duration, memory, memory_short, memory_long, repeats, scaling, scaling_pcpus, scaling_policies, scaling_sim_time,
            scaling_repeats, None if scenario is None else scenario._text, "<python>" if scenario is None else scenario._source,
        )
    )
