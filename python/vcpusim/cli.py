"""The `vcpusim` command.

    vcpusim run FILE [--out DIR] [--seed N] [--set KEY=VALUE ...] [--trace] [--trace-from T] [--trace-to T]
    vcpusim sweep FILE --out DIR [--set KEY=VALUE ...] [--grid KEY=VALUES ...] [--processes N] [--ray ADDRESS]
    vcpusim validate FILE [--set KEY=VALUE ...]
    vcpusim advise FILE [--vm NAME ...] [--processes N] [--set KEY=VALUE ...] [--csv PATH]
    vcpusim list [WHAT] [--json]
    vcpusim bench [--json]
    vcpusim --version

Mistakes in a scenario or on the command line print `error: <message>` to stderr and exit with
status 2, without a traceback; a bug in vcpusim itself exits with status 3; Ctrl-C stops a run
within a fraction of a second, writes nothing and exits with status 130 (128 + SIGINT); SIGTERM
does the same and exits with status 143.
"""

from __future__ import annotations

import csv
import io
import json
import os
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, List, Optional

import typer
from typer.core import TyperCommand
from rich.console import Console
from rich.table import Table
from rich.text import Text

from . import _core
from .api import (
    MAX_SEED, PROTO_TRACE_FILE, TRACE_FILE, TRACE_FORMATS, Result, Scenario, _trace_format, bench as run_bench, catalog,
    check_writable,
)
from .progress import RunProgress

#: The per-VM columns `vcpusim run` shows (the contract columns of vms.csv).
VM_TABLE_COLUMNS = ("vm", "policy", "cpu_time_ms", "spin_time_ms", "tlb_wait_ms", "lhp_count", "progress", "completion_time_ms")
USER_ERROR_EXIT = 2
INTERNAL_ERROR_EXIT = 3
#: What shells report for a process stopped by Ctrl-C: 128 + SIGINT (2).
INTERRUPTED_EXIT = 130
#: And for one stopped by SIGTERM, which the command handles as Ctrl-C: 128 + SIGTERM (15).
TERMINATED_EXIT = 143

class _Command(TyperCommand):
    """Usage lines in the usual form (`vcpusim run [OPTIONS] FILE`): typer writes a required
    argument as `{FILE}`, which reads as a placeholder to fill in."""

    def collect_usage_pieces(self, ctx):
        return [piece[1:-1] if piece.startswith("{") and piece.endswith("}") else piece
                for piece in super().collect_usage_pieces(ctx)]


app = typer.Typer(
    help="Deterministic discrete-event simulator of vCPU scheduling on consolidated virtualized hosts.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # help texts name TOML tables like [run]: plain text, not markup
)
stdout = Console()
if not stdout.is_terminal:
    # Piped or captured output has no width of its own: give tables room for every column.
    stdout = Console(width=max(stdout.width, 120))
stderr = Console(stderr=True)


def _show_version(value: bool) -> None:
    if value:
        info = _core.build_info()
        print(f"vcpusim {_core.__version__}")
        print(f"build: {info['profile']}, {info['pgo_note']}")
        raise typer.Exit()


@app.callback()
def _main(
    version: bool = typer.Option(False, "--version", callback=_show_version, is_eager=True, help="Print the version and exit."),
) -> None:
    """Deterministic discrete-event simulator of vCPU scheduling on consolidated virtualized hosts."""


def _raised_by_policy(error: BaseException) -> bool:
    """Whether a policy written in Python raised `error` in a callback (its note says so)."""
    return any(" of simulated time (policy " in note for note in getattr(error, "__notes__", ()))


@contextmanager
def _errors_as_messages() -> Iterator[None]:
    """Turn vcpusim's exceptions into `error: ...` on stderr and an exit status; an exception a
    policy written in Python raised keeps its traceback (the user's own code)."""
    try:
        yield
    except Exception as e:
        if _raised_by_policy(e):
            import traceback

            traceback.print_exception(e, file=sys.stderr)
            raise typer.Exit(USER_ERROR_EXIT) from None
        if isinstance(e, _core.InternalError):
            print(f"error: {e}", file=sys.stderr)
            raise typer.Exit(INTERNAL_ERROR_EXIT) from None
        # vcpusim's own errors; arguments the engine refused (a --trace-from it cannot read, a
        # count past u64); an optional dependency not installed (--ray without vcpusim[ray]:
        # the message says what to install).
        if isinstance(e, (_core.VcpusimError, TypeError, ValueError, OverflowError, ImportError)):
            print(f"error: {e}", file=sys.stderr)
            raise typer.Exit(USER_ERROR_EXIT) from None
        raise


SET_HELP = (
    "Override a scenario key, validated as if written in the file: host.policy=credit, "
    "vm.NAME.vcpus=4 ([[vm]] entries by name), run.duration=2s, host.params.KEY=VALUE. "
    "VALUE is read as TOML (4, true, \"text\"), else as a string. Repeatable."
)


def _load(file: Path, sets: List[str]) -> Scenario:
    """The scenario file with the --set overrides applied (same loader, same messages)."""
    scenario = Scenario.from_toml(file)
    if not sets:
        return scenario
    values = {}
    for item in sets:
        key, eq, text = item.partition("=")
        if not eq or not key.strip():
            raise _core.ScenarioError(f"--set {item!r}: expected KEY=VALUE, such as host.policy=credit or vm.NAME.vcpus=4")
        values[key.strip()] = _toml_value(text.strip())
    return scenario.override(values, what="--set")


def _toml_value(text: str):
    """A --set value: a TOML value (4, 2.5, true, "x", [1, 2]) read by the loader's own parser;
    anything that is not one (credit, 2s, 0-3) is taken as the string it is."""
    try:
        return json.loads(_core.tables(f"value = {text}", "--set"))["value"]
    except _core.ScenarioError:
        return text


def _out_directory(value: Optional[str]) -> Optional[str]:
    """--out as typed: an empty one (an unset shell variable) would become "." once a Path, and
    the results would land in the current folder. None (no --out): nothing is written."""
    if value is not None and not value.strip():
        raise typer.BadParameter("expected a directory, got an empty string (is a shell variable unset?)")
    return value


@app.command(cls=_Command)
def run(
    file: Path = typer.Argument(..., metavar="FILE", help="Scenario TOML file."),
    out: Optional[str] = typer.Option(None, "--out", "-o", metavar="DIR", callback=_out_directory, help="Directory for vms.csv, metrics.csv, summary.json (and trace.json); without it the run only prints its table."),
    seed: Optional[int] = typer.Option(None, "--seed", min=0, max=MAX_SEED, metavar="N", help="Override the scenario's [run] seed (0 to 2^64-1)."),
    sets: List[str] = typer.Option([], "--set", metavar="KEY=VALUE", help=SET_HELP),
    trace: bool = typer.Option(False, "--trace", help="Also write trace.json (Chrome trace events; open in Perfetto)."),
    trace_from: Optional[str] = typer.Option(None, "--trace-from", metavar="TIME", help="Trace from this simulated time on (such as 2s; implies --trace)."),
    trace_to: Optional[str] = typer.Option(None, "--trace-to", metavar="TIME", help="Trace up to this simulated time (such as 2.5s; implies --trace)."),
    trace_max_events: Optional[int] = typer.Option(None, "--trace-max-events", min=1, max=2**64 - 1, metavar="N", help="Keep at most N trace events (default 2000000; implies --trace)."),
    trace_format: str = typer.Option("auto", "--trace-format", metavar="FORMAT", help="json (trace.json), perfetto (trace.pftrace: Perfetto's protobuf, about half the size) or auto: JSON up to 64 MB, protobuf above."),
    check: bool = typer.Option(False, "--check", help="Check engine invariants after every event (slow)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Do not print the per-VM table or the progress bar."),
) -> None:
    """Run a scenario, print its per-VM table and write its results to DIR (Ctrl-C stops it and
    writes nothing)."""
    traced = trace or trace_from is not None or trace_to is not None or trace_max_events is not None
    if trace_format not in TRACE_FORMATS:
        print(f"error: --trace-format: expected one of {', '.join(TRACE_FORMATS)}, got {trace_format!r}", file=sys.stderr)
        raise typer.Exit(USER_ERROR_EXIT)
    if out is None and traced:
        print("error: a trace is written to the --out folder; give --out DIR with --trace", file=sys.stderr)
        raise typer.Exit(USER_ERROR_EXIT)
    out = Path(out) if out is not None else None
    created = out is not None and _absent(out)
    with _errors_as_messages():
        scenario = _load(file, sets)
        if out is not None:
            check_writable(out)  # before simulating: a bad --out fails at once
        with RunProgress(f"running {file}", scenario.duration_ns, enabled=not quiet and stderr.is_terminal, console=stderr) as bar:
            try:
                output = _core.run(scenario.text, scenario.source, seed=seed, trace=trace, check=check,
                                   trace_from=trace_from, trace_to=trace_to, trace_max_events=trace_max_events,
                                   progress=bar.update)
            except KeyboardInterrupt:
                output = None
        if output is None:
            if created:
                _remove_if_empty(out)
            print(f"interrupted: stopped at t = {bar.now_ns / 1e9:.3f} s of {scenario.duration_ns / 1e9:g} s simulated; "
                  f"nothing written{f' to {out}' if out is not None else ''}", file=sys.stderr)
            raise typer.Exit(_interrupted_exit())
        result = Result._from_core(output)
        trace_file = None
        if result.trace_json is not None:
            trace_file = PROTO_TRACE_FILE if _trace_format(trace_format, result.trace_json) == "perfetto" else TRACE_FILE
        stale = [] if out is None else [out / n for n in (TRACE_FILE, PROTO_TRACE_FILE) if n != trace_file and (out / n).exists()]
        if out is not None:
            result.write(out, trace_format=trace_format)
    for message in result.warnings:
        print(f"warning: {message}", file=sys.stderr)
    for path in stale:
        print(f"removed {path}, left by an earlier traced run", file=sys.stderr)
    if not quiet or out is None:
        stdout.print(_vm_table(result, title=f"{file} (seed {seed if seed is not None else scenario.seed})"))
    if out is not None:
        names = [n for n in result.files() if n != TRACE_FILE] + ([trace_file] if trace_file else [])
        print(f"wrote {', '.join(str(out / name) for name in names)}")


def _absent(path: Path) -> bool:
    """Whether ``path`` does not exist yet. A path that cannot even be looked at (a name too
    long, a folder the user may not enter) counts as present, so nothing is removed on an
    interrupt; the write check (``check_writable``) then says why it cannot be used."""
    try:
        return not path.exists()
    except OSError:
        return False


def _remove_if_empty(directory: Path) -> None:
    try:
        directory.rmdir()
    except OSError:
        pass


def _vm_table(result: Result, title: str) -> Table:
    rows = list(csv.DictReader(io.StringIO(result.vms_csv)))
    header = rows[0].keys() if rows else next(csv.reader(io.StringIO(result.vms_csv)), [])
    columns = [c for c in VM_TABLE_COLUMNS if c in header]
    # With cpupools, say which pool each VM is in (beside its pool's policy).
    if "pool" in header and len({row["pool"] for row in rows}) > 1:
        columns.insert(columns.index("policy") + 1, "pool")
    table = Table(title=Text(title))
    for column in columns:
        if column in ("vm", "policy", "pool"):
            table.add_column(column, no_wrap=True)
        else:
            # Long headers wrap (never "cpu_ti…"): the names are the CSV's, users look them up.
            table.add_column(column, justify="right", overflow="fold")
    for row in rows:
        table.add_row(*(Text(_show_number(row[c])) for c in columns))
    return table


def _show_number(text: str) -> str:
    """Round long decimals for the screen; the CSV keeps full precision."""
    if text == "":
        return "-"
    try:
        value = float(text)
    except ValueError:
        return text
    return text if value.is_integer() and "." not in text else f"{value:.1f}"


GRID_HELP = (
    "Sweep a scenario key over values (replaces the [sweep] table's entry for it): "
    "host.policy=cfs,credit or vm.NAME.vcpus=[1,2,4] (a TOML array, else comma-separated values, "
    "each read as --set reads one). seed=1,2,3 sets run.seed. Repeatable."
)


def _grid_value(text: str) -> list:
    """A --grid value list: a TOML array, else comma-separated --set values."""
    value = _toml_value(text)
    if isinstance(value, list):
        return value
    return [_toml_value(part.strip()) for part in text.split(",")]


@app.command(cls=_Command)
def sweep(
    file: Path = typer.Argument(..., metavar="FILE", help="Scenario TOML file, with a [sweep] table or --grid."),
    out: str = typer.Option(..., "--out", "-o", metavar="DIR", callback=_out_directory, help="Directory for sweep.csv, sweep.parquet and the saved runs (runs/)."),
    sets: List[str] = typer.Option([], "--set", metavar="KEY=VALUE", help=SET_HELP),
    grid: List[str] = typer.Option([], "--grid", metavar="KEY=VALUES", help=GRID_HELP),
    processes: Optional[int] = typer.Option(None, "--processes", "-j", min=1, metavar="N", help="Worker processes (default: one per CPU)."),
    ray_address: Optional[str] = typer.Option(None, "--ray", metavar="ADDRESS", help="Run on this Ray cluster (auto, ray://host:10001) instead of local processes; needs vcpusim[ray]."),
    trace: bool = typer.Option(False, "--trace", help="Also write each run's trace.json (under DIR/runs/)."),
    check: bool = typer.Option(False, "--check", help="Check engine invariants after every event (slow)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar and no summary lines (warnings and errors still print)."),
) -> None:
    """Run every combination of the [sweep] table's values (or --grid's) and write one table, a row
    per run and VM. Runs are saved as they finish: run it again after a crash or Ctrl-C and only
    the unfinished runs are computed."""
    import warnings

    out = Path(out)

    from .grids import RUNS_DIR, grid_of, points, point_scenario, sweep_cases, TABLE_CSV, TABLE_PARQUET
    from .runs import _SweepDir

    with _errors_as_messages():
        base = _load(file, sets)
        axes = grid_of(base)
        for item in grid:
            key, eq, text = item.partition("=")
            if not eq or not key.strip() or not text.strip():
                raise _core.ScenarioError(f"--grid {item!r}: expected KEY=VALUES, such as host.policy=cfs,credit or seed=1,2,3")
            axes[key.strip()] = _grid_value(text.strip())
        if not axes:
            raise _core.ScenarioError(f"{file}: no [sweep] table and no --grid: nothing to sweep")
        if ray_address is not None:
            from .runs import require_ray

            require_ray("--ray")  # before the header and the run folders
        cases = [(point, point_scenario(base, point)) for point in points(axes)]
        check_writable(out, "sweep results")
        record = _SweepDir(out / RUNS_DIR, trace, check)
        saved = sum(record.folder(s).is_dir() for _, s in cases)
        if not quiet:
            print(f"sweep {file}: {len(cases)} runs over {', '.join(f'{k} ({len(v)})' for k, v in axes.items())}; "
                  f"{saved} saved earlier", file=sys.stderr)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                table = sweep_cases(cases, out=out, processes=processes, ray=ray_address,
                                    progress=not quiet and stderr.is_terminal, trace=trace, check=check)
            except KeyboardInterrupt:
                print(f"interrupted: the runs that finished are saved under {out / RUNS_DIR}; "
                      "run the same command again to finish the sweep", file=sys.stderr)
                raise typer.Exit(_interrupted_exit())
    for w in caught:
        print(f"warning: {w.message}", file=sys.stderr)
    written = [out / TABLE_CSV] + ([out / TABLE_PARQUET] if (out / TABLE_PARQUET).exists() else [])
    if not quiet:
        print(f"wrote {', '.join(map(str, written))} ({len(table)} rows)")


@app.command(cls=_Command)
def validate(
    file: Path = typer.Argument(..., metavar="FILE", help="Scenario TOML file."),
    sets: List[str] = typer.Option([], "--set", metavar="KEY=VALUE", help=SET_HELP),
) -> None:
    """Check a scenario without running it."""
    with _errors_as_messages():
        info = _load(file, sets).info
    vms = info["vms"]
    shown = ", ".join(vms[:8]) + (f", ... ({len(vms)} VMs)" if len(vms) > 8 else "")
    print(
        f"ok: {file}: {info['pcpus']} pCPUs, policy {info['policy']}, {info['vcpus']} vCPUs in VMs {shown}; "
        f"duration {info['duration_ns'] / 1e9:g} s, seed {info['seed']}"
    )


@app.command(cls=_Command)
def advise(
    file: Path = typer.Argument(..., metavar="FILE", help="Scenario TOML file."),
    vm: List[str] = typer.Option([], "--vm", metavar="NAME", help="Advise only this [[vm]] (repeatable; default: every VM)."),
    processes: Optional[int] = typer.Option(None, "--processes", min=1, help="Parallel runs (default: one per CPU)."),
    sets: List[str] = typer.Option([], "--set", metavar="KEY=VALUE", help=SET_HELP),
    csv_path: Optional[Path] = typer.Option(None, "--csv", metavar="PATH", help="Also write the candidate table as CSV."),
    seeds: int = typer.Option(5, "--seeds", min=1, max=1000, help="Seeds each candidate runs on (the scenario's and the next ones); the throughput is their mean with its 95% interval."),
    duration: Optional[str] = typer.Option(None, "--duration", metavar="TIME", help="Simulated time of each candidate's runs (such as 2s; default: the scenario's [run] duration); a VM making fewer than 100 units of progress a run is flagged as too short to rank on."),
) -> None:
    """Simulate candidate vCPU affinities for each VM (packed, spread, one core per module,
    node-local, as configured, none) on several seeds and print the best as xl and libvirt
    configuration, saying which candidates it does not beat beyond noise."""
    from .advise import advise as run_advise

    with _errors_as_messages():
        scenario = _load(file, sets)
        if csv_path is not None:
            if csv_path.is_dir():
                raise _core.VcpusimError(f"--csv {csv_path}: is a directory; expected a file to write, such as {csv_path / 'advise.csv'}")
            check_writable(csv_path.parent if str(csv_path.parent) else Path("."), "the --csv file")
        table = run_advise(scenario, vms=vm or None, processes=processes, progress=False, seeds=seeds, duration=duration)
    for name in dict.fromkeys(table["vm"]):
        mine = table[table["vm"] == name]
        unit = mine["progress_unit"].iloc[0]
        shown = Table(title=f"VM {name}: candidate affinities (throughput = {unit} per simulated second, "
                            f"mean and 95% interval over {seeds} seed{'s' if seeds != 1 else ''})")
        for column in ("candidate", "cpus", "pcpus", "memory_nodes", "throughput", "95% interval",
                       "competing_modules", "remote_memory_share", "best"):
            shown.add_column(column, justify="left" if column in ("candidate", "cpus", "memory_nodes") else "right")
        for _, row in mine.iterrows():
            def num(x, fmt):
                return "" if x is None or x != x else format(x, fmt)
            interval = (f"[{num(row['throughput_lo'], '.3f')}, {num(row['throughput_hi'], '.3f')}]"
                        if row["throughput_lo"] == row["throughput_lo"] else "")
            mark = "*" if row["best"] else ("tie" if row["tie"] else "")
            shown.add_row(row["candidate"], row["cpus"], str(row["pcpus"]), row["memory_nodes"] or "-",
                          num(row["throughput"], ".3f"), interval,
                          num(row["competing_modules"], ".2f"), num(row["remote_memory_share"], ".3f"), mark)
        stdout.print(shown)
        best = mine[mine["best"]].iloc[0]
        print(f"best for {name}: {best['why']}")
        print(f"  xl:      {best['xl']}")
        print("  libvirt: " + best["libvirt"].replace("\n", "\n           "))
    if csv_path is not None:
        with _errors_as_messages():
            try:
                table.drop(columns=["libvirt"]).to_csv(csv_path, index=False)
            except OSError as e:
                raise _core.VcpusimError(f"cannot write the --csv file {csv_path}: {e.strerror or e}") from None


#: The settings tables `vcpusim list` prints, by catalog section: their scenario table.
SETTINGS_TABLES = (("host", "[host]"), ("vm", "[[vm]]"), ("host_ple", "[host.ple]"), ("host_costs", "[host.costs]"),
                   ("host_halt_poll", "[host.halt_poll]"), ("host_uvf", "[host.uvf]"), ("vm_uvf", "[vm.uvf]"),
                   ("host_contention", "[host.contention]"), ("vm_contention", "[vm.contention]"),
                   ("host_microsliced", "[host.microsliced]"), ("host_irs", "[host.irs]"),
                   ("host_relaxed_co", "[host.relaxed_co]"), ("host_delay_preempt", "[host.delay_preempt]"),
                   ("guest", "[guest] / [vm.guest]"), ("run", "[run]"))


def _table_to_compare(path: Path, wheres: List[str], option: str):
    """A folder or CSV file for `vcpusim compare`: a sweep's folder (its sweep.csv), a run's
    folder (its vms.csv), or a CSV of either, with the --where filters applied."""
    import pandas as pd

    from .grids import TABLE_CSV

    if path.is_dir():
        for name in (TABLE_CSV, "vms.csv"):
            if (path / name).is_file():
                path = path / name
                break
        else:
            raise _core.VcpusimError(f"{path}: neither a sweep's folder ({TABLE_CSV}) nor a run's (vms.csv)")
    try:
        table = pd.read_csv(path)
    except (OSError, ValueError) as e:
        raise _core.VcpusimError(f"{path}: cannot read the table: {e}") from None
    for item in wheres:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise _core.VcpusimError(f"{option} {item!r}: expected COLUMN=VALUE, such as host.policy=credit")
        key = key.strip()
        if key not in table.columns:
            raise _core.VcpusimError(f"{option} {item!r}: {path} has no column {key!r}")
        table = table[table[key].astype(str) == value.strip()]
        if table.empty:
            raise _core.VcpusimError(f"{option} {item!r}: no run of {path} has {key} = {value.strip()}")
    return table


@app.command(cls=_Command)
def compare(
    a: Path = typer.Argument(..., metavar="A", help="The baseline: a sweep's or a run's output folder, or its CSV."),
    b: Path = typer.Argument(..., metavar="B", help="The other side, the same way (may be A itself with --where-b)."),
    metric: List[str] = typer.Option([], "--metric", metavar="COLUMN", help="Compare only this column (repeatable; default: every measured column)."),
    where: List[str] = typer.Option([], "--where", metavar="COLUMN=VALUE", help="Keep only the runs of both sides with this value (repeatable)."),
    where_a: List[str] = typer.Option([], "--where-a", metavar="COLUMN=VALUE", help="As --where, for A only."),
    where_b: List[str] = typer.Option([], "--where-b", metavar="COLUMN=VALUE", help="As --where, for B only."),
    show_all: bool = typer.Option(False, "--all", help="Show every metric, not only those that differ beyond noise."),
    csv_path: Optional[Path] = typer.Option(None, "--csv", metavar="PATH", help="Also write the whole comparison as CSV."),
) -> None:
    """Say, per VM and metric, whether B differs from A beyond noise: the 95% interval of the
    difference over seeds (paired on the seed when both ran the same seeds, else Welch's), the
    test the experiment ledgers use."""
    from .grids import compare as compare_tables

    with _errors_as_messages():
        ta = _table_to_compare(a, [*where, *where_a], "--where-a" if where_a else "--where")
        tb = _table_to_compare(b, [*where, *where_b], "--where-b" if where_b else "--where")
        try:
            out = compare_tables(ta, tb, metrics=metric or None)
        except (KeyError, ValueError) as e:
            raise _core.VcpusimError(str(e).strip("'\"")) from None
        if csv_path is not None:
            try:
                out.to_csv(csv_path, index=False)
            except OSError as e:
                raise _core.VcpusimError(f"--csv {csv_path}: cannot write it: {e.strerror or e}") from None
    shown = out if show_all else out[out["differs"]]
    tests = sorted(set(out["test"]))
    from rich import box

    table = Table(title=Text(f"B ({b}) against A ({a}): B - A and its 95% interval ({', '.join(tests)})"),
                  title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    for column in ("vm", "metric", "A", "B", "B - A", "95% interval", "change", "n"):
        table.add_column(column, justify="left" if column in ("vm", "metric") else "right", no_wrap=True)

    def num(x: float) -> str:
        return "-" if x != x else f"{x:.4g}"

    for row in shown.itertuples():
        interval = f"[{num(row.diff_lo)}, {num(row.diff_hi)}]" if row.diff_lo == row.diff_lo else "-"
        change = "-" if row.change != row.change else f"{row.change * 100:+.1f}%"
        # Text, not markup: metric names hold brackets (pcpu_busy_ms[0]).
        table.add_row(*(Text(c) for c in (str(row.vm), str(row.metric), num(row.a_mean), num(row.b_mean),
                                           num(row.diff), interval, change, f"{row.n_a}/{row.n_b}")))
    console = Console()
    if not console.is_terminal:
        # Into a file or a pipe: as wide as the table, not cut at 80 columns.
        console = Console(width=200)
    console.print(table)
    differ = int(out["differs"].sum())
    note = " (no intervals: one run a side; run more seeds)" if set(out["test"]) == {"none"} else ""
    print(f"{differ} of {len(out)} VM metrics differ beyond noise{note}")


@app.command("list", cls=_Command)
def list_(
    what: Optional[str] = typer.Argument(None, metavar="WHAT", show_default=False,
                                         help="Only this: 'policies', 'workloads', a table such as 'host.ple', or text a "
                                              "policy, workload or key name contains (e.g. 'parsec')."),
    json_output: bool = typer.Option(False, "--json", help="Print the catalog as JSON."),
) -> None:
    """List policies and workloads with their parameters and defaults, and every scenario key."""
    with _errors_as_messages():
        if json_output:
            print(_core.catalog())
            return
        entries = catalog()
        catalogs = [("policies", "Policies", "[host] policy"), ("workloads", "Workloads", "[[vm]] workload")]
        settings = [(section, title) for section, title in SETTINGS_TABLES if entries.get(section)]
        if what is not None:
            wanted = what.strip().lower().strip("[]")
            tables = {title.split(" ")[0].strip("[]"): section for section, title in settings}
            if wanted in ("policies", "workloads"):
                catalogs = [c for c in catalogs if c[0] == wanted]
                settings = []
            elif wanted in tables:
                catalogs, settings = [], [s for s in settings if s[0] == tables[wanted]]
            else:
                entries = {section: [e for e in items if wanted in e.get("name", "").lower()]
                           for section, items in entries.items()}
                catalogs = [c for c in catalogs if entries.get(c[0])]
                settings = [s for s in settings if entries.get(s[0])]
                if not catalogs and not settings:
                    raise _core.VcpusimError(f"list: no policy, workload or key name contains {what!r}; "
                                       f"or give 'policies', 'workloads' or a table: {', '.join(tables)}")
    for section, title, what_ in catalogs:
        stdout.print(_catalog_table(entries.get(section, []), f"{title}  ({what_} = NAME, parameters under {_params_table(section)})"))
    for section, title in settings:
        stdout.print(_settings_table(entries[section], title))


def _params_table(section: str) -> str:
    return "[host.params]" if section == "policies" else "[vm.params]"


def _catalog_table(items: list, title: str) -> Table:
    table = Table(title=Text(title), title_justify="left", show_lines=True)
    table.add_column("name", style="bold")
    table.add_column("parameter")
    table.add_column("default")
    table.add_column("meaning")
    for item in items:
        description = item.get("description", "")
        if item.get("progress_unit"):
            description += f"\nprogress: {item['progress_unit']}"
        table.add_row(Text(item.get("name", "?")), "", "", Text(description))
        for param in item.get("params", []):
            table.add_row("", Text(param.get("name", "?")), Text(_default(param)), Text(_meaning(param)))
        for param in item.get("vm_params", []):  # a policy's per-VM settings
            table.add_row("", Text(f"[vm.sched] {param.get('name', '?')}"), Text(_default(param)), Text(_meaning(param)))
    return table


def _settings_table(items: list, title: str) -> Table:
    table = Table(title=Text(title), title_justify="left")
    table.add_column("key", style="bold")
    table.add_column("default")
    table.add_column("meaning")
    for item in items:
        table.add_row(Text(item.get("name", "?")), Text(_default(item)), Text(_meaning(item)))
    return table


def _default(param: dict) -> str:
    default = param.get("default")
    if isinstance(default, bool):
        return "true" if default else "false"  # as written in TOML
    return "-" if default is None else str(default)


def _meaning(param: dict) -> str:
    expected = param.get("expected") or param.get("type")
    doc = param.get("doc", "")
    return f"{doc} ({expected})" if expected else doc


@app.command()
def bench(
    json_output: bool = typer.Option(False, "--json", help="Print the report as JSON."),
    duration: Optional[str] = typer.Option(None, "--duration", help="Simulated time of the timed run (default: the scenario's)."),
    memory: bool = typer.Option(True, "--memory/--no-memory", help="Check that peak memory stays flat as simulated time grows."),
    memory_short: str = typer.Option("10s", "--memory-short", help="Simulated time of the short memory run."),
    memory_long: str = typer.Option("40s", "--memory-long", help="Simulated time of the long memory run."),
    repeats: int = typer.Option(5, "--repeats", min=1, help="Times the timed run is repeated (each followed by a bare-heap timing)."),
    scaling: bool = typer.Option(False, "--scaling", help="Add the scaling table: the quickstart's mix per 8 pCPUs, every policy."),
    scaling_pcpus: str = typer.Option("quick", "--scaling-pcpus", help='pCPU counts: "quick" (8,32,128), "full" (8..1024) or a list like 8,64.'),
    scaling_policies: str = typer.Option("cfs,credit,gang,hybrid,eevdf", "--scaling-policies", help="Policies of the scaling table; a seed's mechanism over one: credit+microsliced, credit+irs, credit+relaxed-co, credit+delay-preempt, cfs+uvf, credit+uvf; or bare-metal (one Linux 3.13 machine on every pCPU)."),
    scaling_sim_time: str = typer.Option("2s", "--scaling-sim-time", help="Simulated time at 8 pCPUs (P pCPUs run 8/P of it)."),
    scaling_repeats: int = typer.Option(1, "--scaling-repeats", min=1, help="Runs per row of the scaling table (the fastest is reported)."),
    scenario: Optional[Path] = typer.Option(None, "--scenario", help="Time this scenario file in place of the quickstart (e.g. a PLE storm)."),
) -> None:
    """Run the standard benchmark (scenarios/quickstart.toml, or --scenario FILE): live events/s,
    stale events apart, against a bare binary heap of the engine's entry size; optionally the
    scaling table."""
    with _errors_as_messages():
        with stderr.status("benchmarking ..."):
            report = run_bench(
                duration, memory, memory_short, memory_long, repeats, scaling, scaling_pcpus, scaling_policies, scaling_sim_time,
                scaling_repeats, None if scenario is None else Scenario.from_toml(scenario),
            )
    if json_output:
        print(json.dumps(report, indent=2))
        return
    print(f"vcpusim bench: {report['scenario']}, {report['build_profile']} build, {report['repeats']} timed runs")
    print(f"build: {report['build_pgo_note']}")
    print(f"machine: {report['machine']['summary']}")
    table = Table()
    table.add_column("measure")
    table.add_column("value", justify="right")
    rows = [
        ("simulated time", f"{report['sim_time_ns'] / 1e9:g} s"),
        ("wall time per run (median / min)", f"{report['wall_time_s']:.3f} / {report['wall_time_min_s']:.3f} s"),
        ("live events per run", f"{report['events']:,}"),
        ("stale events (counted, did nothing)", f"{report['stale_events']:,}"),
        ("cancelled queue entries skipped", f"{report['cancelled_skipped']:,}"),
        ("peak event-queue length", f"{report['peak_queue_len']:,}"),
        ("live events per second (median)", f"{report['events_per_s']:,.0f}"),
        ("live events per second (best)", f"{report['events_per_s_best']:,.0f}"),
        ("ns per live event (median)", f"{report['ns_per_event']:.1f}"),
        ("simulated seconds per wall second", f"{report['sim_seconds_per_wall_second']:.2f}"),
        (f"bare heap ({report['entry_bytes']}-byte entries) events/s, median", f"{report['bare_heap_events_per_s']:,.0f}"),
        ("bare heap events/s, best", f"{report['bare_heap_events_per_s_best']:,.0f}"),
        ("engine speed vs bare heap (medians)", f"{report['events_per_s_vs_bare_heap']:.4f}"),
        ("peak RSS", "-" if report["peak_rss_kib"] is None else f"{report['peak_rss_kib'] / 1024:.1f} MiB"),
    ]
    mem = report.get("memory")
    if mem:
        growth = mem["growth_kib"]
        rows.append(
            (
                f"peak RSS growth {mem['short_sim_time_ns'] / 1e9:g} s -> {mem['long_sim_time_ns'] / 1e9:g} s simulated",
                "-" if growth is None else f"{growth / 1024:.1f} MiB",
            )
        )
    for measure, value in rows:
        table.add_row(measure, value)
    stdout.print(table)
    if report.get("scaling"):
        runs = report["scaling"][0]["runs"]
        scale = Table(
            title=f"scaling: the quickstart's mix per 8 pCPUs (fastest of {runs} run(s) of each row; "
            "events/s and ns/event of the event loop, setup apart)"
        )
        for name in ("policy", "pCPUs", "vCPUs", "sim ms", "live events", "events/s", "ns/event", "setup ms", "peak queue", "stale %", "peak RSS MiB (at start)"):
            scale.add_column(name, justify="left" if name == "policy" else "right")
        for row in report["scaling"]:
            stale = row["stale_events"] / max(1, row["events"] + row["stale_events"])
            rss = "-" if row["peak_rss_kib"] is None else f"{row['peak_rss_kib'] / 1024:.1f}" + ("" if row["rss_reset"] else "*")
            if row["peak_rss_kib"] is not None and row["rss_at_start_kib"] is not None:
                rss += f" ({row['rss_at_start_kib'] / 1024:.1f})"
            scale.add_row(
                row["policy"],
                str(row["pcpus"]),
                str(row["vcpus"]),
                f"{row['sim_time_ns'] / 1e6:.1f}",
                f"{row['events']:,}",
                f"{row['events_per_s']:,.0f}",
                f"{row['ns_per_event']:.1f}",
                f"{row['setup_s'] * 1e3:.1f}",
                f"{row['peak_queue_len']:,}",
                f"{100 * stale:.1f}",
                rss,
            )
        stdout.print(scale)


#: Set when SIGTERM stopped the command: it then exits 143 (128 + SIGTERM) instead of 130.
_terminated = False


def _on_sigterm(signum, frame) -> None:
    """SIGTERM (a job scheduler, `kill`): stop as Ctrl-C does, cleaning up the same way."""
    global _terminated
    _terminated = True
    raise KeyboardInterrupt


def _interrupted_exit() -> int:
    return TERMINATED_EXIT if _terminated else INTERRUPTED_EXIT


def main(argv: Optional[list[str]] = None) -> None:
    """Entry point of the `vcpusim` console script."""
    import signal

    # A scenario naming a policy written in Python (`python:my_policy:MyPolicy`) finds its module
    # in the current folder, as `python -m` would.
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())

    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        app(args=argv, prog_name="vcpusim")
    finally:
        signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    main()
