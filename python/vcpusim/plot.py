"""Plots of one result (``result.plot.timeline()``, ``.shares()``, ``.breakdown()``) and the HTML
that notebooks show for results and scenarios.

The plots use matplotlib, an optional dependency (``pip install "vcpusim[plot]"``), imported on
first use; each returns the matplotlib ``Axes`` it drew on (pass ``ax=`` to draw on your own).
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:  # pragma: no cover
    from .api import Result, Scenario

#: One colour per activity, the same in every plot (the breakdown's bars, the timeline's vCPU
#: rows).
ACTIVITY_COLOURS = {
    "user": "tab:green",
    "kernel": "tab:blue",
    "spin": "tab:red",
    "user-spin": "tab:pink",
    "tlb-wait": "tab:orange",
    "irq": "tab:purple",
    "overhead": "tab:gray",
}
#: vms.csv's time columns that split each VM's CPU time (they sum to ``cpu_time_ms``), in the
#: order the breakdown stacks them, with their legend labels and activities.
BREAKDOWN_COLUMNS = (
    ("user_time_ms", "user", "user"),
    ("kernel_time_ms", "kernel", "kernel"),
    ("spin_time_ms", "spin (kernel spinlocks)", "spin"),
    ("user_spin_ms", "spin (user)", "user-spin"),
    ("tlb_wait_ms", "TLB-shootdown wait", "tlb-wait"),
    ("irq_time_ms", "interrupts", "irq"),
    ("overhead_ms", "hypervisor overhead", "overhead"),
)
#: What the vCPU rows of a timeline show for each state slice of the trace (metrics/trace.rs):
#: the activities' colours while it runs; while it does not, colours apart from them and from
#: each other (runnable ones warm, halted a mid grey that shows on white).
VCPU_STATE_COLOURS = {
    **ACTIVITY_COLOURS,
    "runnable: preempted": "#8c2d04",
    "runnable: yielded": "#e6ab02",
    "runnable: woken": "#66c2a5",
    "runnable: starting": "#66c2a5",
    "halted": "#9e9e9e",
}
#: vms.csv columns a notebook shows for a result.
HTML_COLUMNS = ("vm", "policy", "vcpus", "cpu_time_ms", "spin_time_ms", "tlb_wait_ms", "lhp_count", "progress",
                "completion_time_ms")


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError("plots need matplotlib, which is not installed: pip install \"vcpusim[plot]\"") from None
    return plt


def _axes(ax, size):
    if ax is not None:
        return ax
    # Constrained layout keeps a legend placed beside the axes inside the figure when saved.
    _, ax = _pyplot().subplots(figsize=size, layout="constrained")
    return ax


#: Line styles that tell apart lines drawn in the same place (identical VMs, sweep groups).
LINE_STYLES = ("-", "--", "-.", ":")


def _legend_beside(ax, **kwargs):
    """The legend to the right of the axes (constrained layout keeps it in a saved figure)."""
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0), **kwargs)


def _vm_colours(result: "Result") -> dict:
    """A colour per VM, by its place in the run's VM list: the same VM has the same colour in
    every plot of the result."""
    palette = _pyplot().get_cmap("tab10")
    return {vm: palette(i % 10) for i, vm in enumerate(dict.fromkeys(result.vms["vm"]))}


def _time_unit(span_s: float) -> tuple[str, float]:
    """The unit a time axis spanning ``span_s`` seconds reads best in, and its scale from s."""
    if span_s < 2e-3:
        return "us", 1e6
    if span_s < 2.0:
        return "ms", 1e3
    return "s", 1.0


def _seconds(value: Any, name: str) -> float | None:
    """A window bound: seconds (a number) or a duration string ("1.5s", "200ms")."""
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        units = (("ns", 1e-9), ("us", 1e-6), ("ms", 1e-3), ("s", 1.0))
        for unit, scale in units:
            if value.endswith(unit):
                try:
                    return float(value[: -len(unit)]) * scale
                except ValueError:
                    break
    raise ValueError(f"plot: {name}: expected seconds (a number) or a duration such as \"1.5s\", got {value!r}")


class ResultPlots:
    """``result.plot``: the plots of one :class:`~vcpusim.Result`."""

    def __init__(self, result: "Result"):
        self._result = result

    def breakdown(self, ax=None):
        """Each VM's CPU time split by what it did (user, kernel, spinning, TLB waits, interrupts,
        hypervisor overhead): one stacked bar per VM, in ms."""
        vms = self._result.vms
        ax = _axes(ax, (max(5, 0.8 * len(vms) + 2), 4))
        bottom = [0.0] * len(vms)
        for column, label, activity in BREAKDOWN_COLUMNS:
            if column not in vms:
                continue
            values = vms[column].astype(float).tolist()
            ax.bar(vms["vm"], values, bottom=bottom, label=label, color=ACTIVITY_COLOURS[activity])
            bottom = [b + v for b, v in zip(bottom, values)]
        ax.set_ylabel("CPU time (ms)")
        ax.set_title(f"CPU time by activity ({self._result.summary['policy']})")
        _legend_beside(ax)
        return ax

    def shares(self, ax=None):
        """Each VM's share of the host over time, from ``[run] sample_every`` (one line per VM,
        each point the share over the interval ending there)."""
        samples = self._result.samples
        if samples.empty:
            raise ValueError("plot.shares needs a CPU-usage time series: set [run] sample_every (say \"100ms\") "
                             "in the scenario, or scenario.replace(sample_every=\"100ms\")")
        ax = _axes(ax, (7, 4))
        colours = _vm_colours(self._result)
        # Identical VMs draw identical lines: a line style of its own for each keeps them apart.
        for i, (vm, rows) in enumerate(samples.groupby("vm", sort=False)):
            ax.step(rows["t_s"], rows["share"], where="pre", label=vm, color=colours.get(vm),
                    linestyle=LINE_STYLES[i % len(LINE_STYLES)])  # each value covers the interval before it
        ax.set_xlabel("simulated time (s)")
        ax.set_ylabel("share of the host")
        ax.set_ylim(bottom=0)
        ax.set_title("CPU share over time")
        _legend_beside(ax)
        return ax

    def timeline(self, start: Any = None, end: Any = None, tracks: str = "pcpus", ax=None):
        """A Gantt chart from the run's trace (run with ``trace=True`` or ``trace_from`` /
        ``trace_to``): ``tracks="pcpus"`` draws one row per pCPU coloured by the VM on it;
        ``"vcpus"`` one row per vCPU coloured by its state (running user/kernel/spin ...,
        runnable, halted). ``start`` / ``end`` bound the window (seconds, or "1.5s"). The time axis
        is in the unit of the window drawn: microseconds under 2 ms, milliseconds under 2 s, else
        seconds (the axis label says which)."""
        if self._result.trace_json is None:
            raise ValueError("plot.timeline needs a traced run: vcpusim.run(..., trace=True), or trace_from/trace_to "
                             "for a window")
        if tracks not in ("pcpus", "vcpus"):
            raise ValueError(f"plot.timeline: tracks: expected \"pcpus\" or \"vcpus\", got {tracks!r}")
        lo, hi = _seconds(start, "start"), _seconds(end, "end")
        # Parsed once per result (Result.trace_spans): drawing several windows does not re-read it.
        spans = self._result.trace_spans(lo, hi)
        cut_ns = self._result.trace_complete_until_ns()
        threads = self._result.trace_tracks()
        processes = self._result.trace_processes()
        host = spans["pid"] == 0
        spans = spans[host] if tracks == "pcpus" else spans[~host & spans["name"].isin(list(VCPU_STATE_COLOURS))]
        keys = spans["vm"] if tracks == "pcpus" else spans["name"]
        rows: dict[tuple[int, int], list] = {}
        for pid, tid, t0, t1, colour_key in zip(spans["pid"], spans["tid"], spans["start_s"], spans["end_s"], keys):
            rows.setdefault((int(pid), int(tid)), []).append((t0, t1 - t0, str(colour_key)))
        order = sorted(threads) if tracks == "vcpus" else sorted(k for k in threads if k[0] == 0)
        order = [k for k in order if (k[0] == 0) == (tracks == "pcpus")]
        ax = _axes(ax, (10, max(2.5, 0.35 * len(order) + 1)))
        vm_colours = _vm_colours(self._result)
        used: dict[str, Any] = {}
        # The time axis in the unit of the window drawn (us, ms or s).
        drawn = [(t0, t0 + w) for spans in rows.values() for t0, w, _ in spans]
        first = lo if lo is not None else min((a for a, _ in drawn), default=0.0)
        last = hi if hi is not None else max((b for _, b in drawn), default=first + 1.0)
        unit, scale = _time_unit(max(last - first, 0.0))
        for y, key in enumerate(order):
            # One collection per row and colour: a busy window holds many thousands of slices.
            bars: dict[str, list] = {}
            for t0, width, colour_key in rows.get(key, []):
                bars.setdefault(colour_key, []).append((t0 * scale, width * scale))
            for colour_key, spans in bars.items():
                if tracks == "pcpus":
                    colour = vm_colours.get(colour_key, "black")
                else:
                    colour = VCPU_STATE_COLOURS[colour_key]
                used.setdefault(colour_key, colour)
                ax.broken_barh(spans, (y - 0.4, 0.8), facecolors=colour, linewidth=0)
        labels = [threads[k] if k[0] == 0 else f"{processes.get(k[0], k[0]).removeprefix('VM ')} {threads[k]}" for k in order]
        ax.set_yticks(range(len(order)))
        ax.set_yticklabels(labels)
        ax.invert_yaxis()
        if lo is not None or hi is not None:
            ax.set_xlim(left=None if lo is None else lo * scale, right=None if hi is None else hi * scale)
        ax.set_xlabel(f"simulated time ({unit})")
        ax.set_title("pCPUs (colour: VM)" if tracks == "pcpus" else "vCPUs (colour: state)")
        from matplotlib.lines import Line2D
        from matplotlib.patches import Patch

        handles = [Patch(color=c, label=k) for k, c in used.items()]
        if cut_ns is not None:
            # The trace hit its event cap here: the slices open then end at the line, and
            # nothing after it was recorded (not idle: unknown).
            ax.axvline(cut_ns / 1e9 * scale, color="black", linestyle="--", linewidth=1)
            handles.append(Line2D([], [], color="black", linestyle="--", label="trace cut: nothing recorded after"))
        _legend_beside(ax, handles=handles)
        return ax


def sweep(table, x: str, y: str, hue: str | None = None, by: Sequence[str] = ("vm",), ax=None):
    """A sweep's ``y`` against ``x``: one line per ``hue`` value (and per VM, ``by``), each point
    the mean over the rows that share it (the seeds) with its 95% Student-t interval as an error
    bar (:func:`vcpusim.aggregate`, the experiment ledgers' interval). ``table`` is a sweep's
    table (``vcpusim.sweep`` or ``sweep.csv`` read with pandas); ``x``, ``y`` and ``hue`` are its
    columns (a grid key such as ``"host.policy"`` or a result column such as ``"cpu_time_ms"``).
    Returns the matplotlib ``Axes``."""
    import pandas as pd

    from .grids import aggregate

    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"plot.sweep: table: expected a sweep's table (a pandas DataFrame), got {type(table).__name__}")
    groups = [c for c in (hue, *by) if c is not None and c in table.columns and c != x]
    for name, column in (("x", x), ("y", y), ("hue", hue)):
        if column is not None and column not in table.columns:
            raise KeyError(f"plot.sweep: {name}: no column {column!r} in the table")
    agg = aggregate(table, [*groups, x], [y])
    ax = _axes(ax, (7, 4))
    for i, (key, rows) in enumerate(agg.groupby(groups, sort=False) if groups else [((), agg)]):
        rows = rows.sort_values(x)
        lo, hi = rows[f"{y}_lo"], rows[f"{y}_hi"]
        err = [(rows[f"{y}_mean"] - lo).fillna(0).clip(lower=0), (hi - rows[f"{y}_mean"]).fillna(0).clip(lower=0)]
        label = ", ".join(str(k) for k in (key if isinstance(key, tuple) else (key,)))
        ax.errorbar(rows[x], rows[f"{y}_mean"], yerr=err, label=label or y, capsize=3,
                    linestyle=LINE_STYLES[i % len(LINE_STYLES)], marker="o", markersize=3)
    ax.set_xlabel(x)
    ax.set_ylabel(f"{y} (mean, 95% interval)")
    if groups:
        _legend_beside(ax, title=", ".join(groups))
    return ax


def result_html(result: "Result") -> str:
    """A notebook's view of a result: the run in one line and the per-VM table."""
    s = result.summary
    head = (f"<p><b>vcpusim result</b>: {html.escape(str(s.get('scenario')))}, policy {html.escape(str(s.get('policy')))}, "
            f"{s.get('pcpus')} pCPUs, seed {s.get('seed')}, {s.get('sim_time_ns', 0) / 1e9:g} s simulated, "
            f"{s.get('events'):,} events, host busy {s.get('host_busy_share', 0):.1%}</p>")
    vms = result.vms
    table = vms[[c for c in HTML_COLUMNS if c in vms.columns]].to_html(index=False, na_rep="-", float_format=lambda v: f"{v:.1f}")
    warnings = "".join(f"<p>warning: {html.escape(w)}</p>" for w in result.warnings)
    return head + table + warnings


def scenario_html(scenario: "Scenario") -> str:
    """A notebook's view of a scenario: its summary and, folded, its TOML."""
    info = scenario.info
    rows = [("source", scenario.source), ("policy", info["policy"]), ("pCPUs", info["pcpus"]),
            ("VMs", ", ".join(info["vms"])), ("vCPUs", info["vcpus"]), ("duration", f"{info['duration_ns'] / 1e9:g} s"),
            ("seed", info["seed"])]
    body = "".join(f"<tr><th style=\"text-align:left\">{k}</th><td style=\"text-align:left\">{html.escape(str(v))}</td></tr>"
                   for k, v in rows)
    return (f"<table><caption><b>vcpusim scenario</b></caption>{body}</table>"
            f"<details><summary>TOML</summary><pre>{html.escape(scenario.text)}</pre></details>")
