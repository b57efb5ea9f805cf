"""Result.plot (timeline, shares, breakdown) and the notebook HTML of results and scenarios."""

from __future__ import annotations

import json

import pytest
import vcpusim
from conftest import SMALL_SCENARIO

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


@pytest.fixture(scope="module")
def traced():
    scenario = vcpusim.Scenario(SMALL_SCENARIO, "small.toml").replace(sample_every="50ms")
    return vcpusim.run(scenario, trace_from="100ms", trace_to="120ms")


def test_breakdown_stacks_each_vms_cpu_time(traced):
    ax = traced.plot.breakdown()
    vms = traced.vms
    # The stacked bars of each VM add up to its cpu_time_ms (the time columns split it). Each
    # column is rounded to the microsecond on its own, so the stack is within half a microsecond
    # per bar of the total.
    tops, bars = {}, {}
    for patch in ax.patches:
        x = round(patch.get_x() + patch.get_width() / 2)
        tops[x] = max(tops.get(x, 0.0), patch.get_y() + patch.get_height())
        bars[x] = bars.get(x, 0) + 1
    for i, total in enumerate(vms["cpu_time_ms"]):
        assert tops[i] == pytest.approx(total, abs=0.0005 * bars[i] + 1e-9), (i, bars[i])
    plt.close("all")


def test_shares_draws_each_vms_share_per_interval(traced):
    ax = traced.plot.shares()
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert set(lines) == set(traced.vms["vm"])
    samples = traced.samples
    for vm, line in lines.items():
        assert list(line.get_ydata()) == pytest.approx(samples[samples["vm"] == vm]["share"].tolist())
    plain = vcpusim.run(vcpusim.Scenario(SMALL_SCENARIO, "small.toml"))
    with pytest.raises(ValueError, match="sample_every"):
        plain.plot.shares()
    plt.close("all")


def test_timeline_draws_the_traced_window_per_pcpu_and_per_vcpu(traced):
    ax = traced.plot.timeline()
    assert [t.get_text() for t in ax.get_yticklabels()] == ["pCPU 0", "pCPU 1", "pCPU 2", "pCPU 3"]
    assert {t.get_text() for t in ax.get_legend().get_texts()} <= set(traced.vms["vm"])
    bars = sum(len(c.get_paths()) for c in ax.collections)
    slices = [e for e in json.loads(traced.trace_json)["traceEvents"] if e["ph"] == "X" and e["pid"] == 0 and e["dur"] > 0]
    assert bars == len(slices) > 10, "one bar per slice on the pCPUs"
    ax = traced.plot.timeline(start="105ms", end=0.11, tracks="vcpus")
    assert len(ax.get_yticklabels()) == 6  # 4 + 1 + 1 vCPUs
    # A 5 ms window reads in milliseconds.
    assert ax.get_xlim() == pytest.approx((105.0, 110.0)) and ax.get_xlabel() == "simulated time (ms)"
    states = {t.get_text() for t in ax.get_legend().get_texts()}
    assert states & {"runnable: preempted", "halted"} and states & {"user", "kernel", "spin"}
    with pytest.raises(ValueError, match="needs a traced run"):
        vcpusim.run(vcpusim.Scenario(SMALL_SCENARIO, "small.toml")).plot.timeline()
    with pytest.raises(ValueError, match="tracks"):
        traced.plot.timeline(tracks="threads")
    with pytest.raises(ValueError, match="start"):
        traced.plot.timeline(start="soon")
    plt.close("all")


def test_notebooks_show_results_and_scenarios_as_html(traced):
    html = traced._repr_html_()
    assert "vcpusim result" in html and "<table" in html and "parallel" in html and "seq-0" in html
    scenario = vcpusim.Scenario(SMALL_SCENARIO, "small<1>.toml")
    html = scenario._repr_html_()
    assert "vcpusim scenario" in html and "small&lt;1&gt;.toml" in html and "[[vm]]" in html


def test_a_trace_cut_at_its_cap_keeps_the_open_slices_and_marks_the_cut():
    import warnings as w

    with w.catch_warnings():
        w.simplefilter("ignore", vcpusim.TraceCutWarning)
        cut = vcpusim.run(vcpusim.Scenario(SMALL_SCENARIO, "small.toml"), trace_max_events=2000)
    doc = json.loads(cut.trace_json)
    at = doc["otherData"]["complete_until_ns"]
    assert at is not None and doc["otherData"]["dropped_events"] > 0
    marks = [e for e in doc["traceEvents"] if e.get("name") == "trace cut"]
    assert len(marks) == 1 and marks[0]["s"] == "g" and marks[0]["ts"] == pytest.approx(at / 1e3)
    # Every pCPU busy at the cut keeps a slice up to it: the pCPU track of the host (pid 0)
    # is not empty past the last slice that closed before the cut.
    ends = [e["ts"] + e["dur"] for e in doc["traceEvents"] if e.get("ph") == "X" and e["pid"] == 0]
    assert max(ends) == pytest.approx(at / 1e3), (max(ends), at / 1e3)
    assert all(e <= at / 1e3 + 1e-9 for e in ends)
    ax = cut.plot.timeline()
    assert any("trace cut" in t.get_text() for t in ax.get_legend().get_texts())


def test_saved_plots_keep_their_legends_and_share_colours(traced, tmp_path):
    from matplotlib.colors import to_hex

    from vcpusim.plot import ACTIVITY_COLOURS, VCPU_STATE_COLOURS

    for name, ax in (("breakdown", traced.plot.breakdown()), ("timeline", traced.plot.timeline(tracks="vcpus")),
                     ("shares", traced.plot.shares())):
        fig = ax.figure
        path = tmp_path / f"{name}.png"
        fig.savefig(path)
        renderer = fig.canvas.get_renderer()
        box = ax.get_legend().get_window_extent(renderer)
        figure = fig.bbox
        assert box.x0 >= figure.x0 - 1 and box.x1 <= figure.x1 + 1 and box.y0 >= figure.y0 - 1, f"{name}'s legend is cut off"
    # The breakdown's user bars are the timeline's user colour.
    ax = traced.plot.breakdown()
    user = [p for p in ax.patches if p.get_label() == "user" or p.get_label() == "_nolegend_"][0]
    assert to_hex(user.get_facecolor()) == to_hex(ACTIVITY_COLOURS["user"])
    # Not running is never an activity's colour, and halted shows on white.
    idle = {VCPU_STATE_COLOURS[k] for k in VCPU_STATE_COLOURS if k not in ACTIVITY_COLOURS}
    assert not idle & set(ACTIVITY_COLOURS.values())
    assert to_hex(VCPU_STATE_COLOURS["halted"]) not in ("#ffffff", "#f5f5f5")
    # A VM has one colour in the timeline and in the shares plot.
    timeline = traced.plot.timeline()
    shares = traced.plot.shares()
    by_vm = {t.get_text(): h.get_facecolor() for t, h in zip(timeline.get_legend().get_texts(), timeline.get_legend().legend_handles)}
    for line in shares.get_lines():
        if line.get_label() in by_vm:
            assert to_hex(line.get_color()) == to_hex(by_vm[line.get_label()])
    plt.close("all")


def test_a_sweep_plot_draws_means_with_their_intervals():
    from vcpusim import plot

    sc = vcpusim.Scenario(SMALL_SCENARIO, "small.toml").replace(duration="50ms")
    table = vcpusim.sweep(sc, grid={"host.policy": ["cfs", "credit"], "vm.parallel.threads": [2, 4], "seed": [1, 2, 3]},
                          processes=1)
    par = table[table["vm"] == "parallel"]
    ax = plot.sweep(par, x="vm.parallel.threads", y="cpu_time_ms", hue="host.policy")
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["cfs, parallel", "credit, parallel"]
    agg = vcpusim.aggregate(par, ["host.policy", "vm.parallel.threads"], ["cpu_time_ms"])
    for container, policy in zip(ax.containers, ["cfs", "credit"]):
        line, _, (bars,) = container.lines
        rows = agg[agg["host.policy"] == policy].sort_values("vm.parallel.threads")
        assert list(line.get_xdata()) == [2, 4]
        assert list(line.get_ydata()) == pytest.approx(rows["cpu_time_ms_mean"].tolist())
        spans = [seg[:, 1] for seg in bars.get_segments()]
        assert [s.min() for s in spans] == pytest.approx(rows["cpu_time_ms_lo"].tolist())
        assert [s.max() for s in spans] == pytest.approx(rows["cpu_time_ms_hi"].tolist())
    with pytest.raises(KeyError, match="plot.sweep: y: no column 'nope'"):
        plot.sweep(par, x="vm.parallel.threads", y="nope")
    plt.close("all")


def test_trace_spans_are_parsed_once_and_windowed(monkeypatch):
    scenario = vcpusim.Scenario(SMALL_SCENARIO, "small.toml")
    result = vcpusim.run(scenario, trace_from="100ms", trace_to="120ms")
    doc = json.loads(result.trace)
    slices = [e for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("dur", 0) > 0]
    spans = result.trace_spans()
    assert list(spans.columns) == ["pid", "tid", "name", "vm", "start_s", "end_s"]
    assert len(spans) == len(slices)
    # A window keeps exactly the slices that overlap it.
    window = result.trace_spans(0.105, 0.110)
    overlapping = [e for e in slices if e["ts"] / 1e6 + e["dur"] / 1e6 > 0.105 and e["ts"] / 1e6 < 0.110]
    assert 0 < len(window) == len(overlapping) < len(spans)
    assert ((window["end_s"] > 0.105) & (window["start_s"] < 0.110)).all()
    assert result.trace_tracks()[(0, 0)] == "pCPU 0"
    # Drawing more windows does not parse the trace again.
    calls = []
    real = json.loads
    monkeypatch.setattr(vcpusim.api.json, "loads", lambda *a, **k: calls.append(1) or real(*a, **k))
    result.plot.timeline("101ms", "103ms")
    result.plot.timeline("110ms", "115ms", tracks="vcpus")
    plt.close("all")
    assert calls == []
    with pytest.raises(ValueError, match="no trace"):
        vcpusim.run(scenario.replace(duration="10ms")).trace_spans()
