"""The experiment sets' runner (experiments/runkit.py `run_set`): a figure made with `figure_main`
is drawn in a thread while the next figure measures, and the set's outputs keep figure order."""

import sys
import threading
import types
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "experiments"))

import runkit  # noqa: E402


def _claim(fig):
    return runkit.Claim(id="a-claim", figure=fig, claim=f"{fig} claim", paper="paper", source="§1", ours="ours",
                        verdict=runkit.R)


@pytest.fixture
def figures(monkeypatch, tmp_path):
    """Three figure modules: two made with figure_main (the first one's drawing waits until the
    second has started measuring, so it can only finish if the two overlap), one plain main."""
    second_measuring = threading.Event()
    log = []

    def make(name, measure, write_outputs):
        module = types.ModuleType(name)
        module.main = runkit.figure_main(name, measure, write_outputs, lambda agg: [_claim(name)])
        monkeypatch.setitem(sys.modules, name, module)

    def first_draw(measured):
        log.append(("first draws", threading.current_thread().name))
        assert second_measuring.wait(timeout=30), "the first figure was drawn before the second measured"
        return measured

    def second_measure(settings):
        second_measuring.set()
        log.append(("second measures", threading.current_thread().name))
        return pd.DataFrame({"x": [2]})

    make("fig_first", lambda settings: log.append(("first measures", threading.current_thread().name)), first_draw)
    make("fig_second", second_measure, lambda measured: log.append(("second draws", None)) or measured)
    plain = types.ModuleType("fig_plain")
    plain.main = lambda settings: log.append(("plain runs", None)) or [_claim("fig_plain")]
    monkeypatch.setitem(sys.modules, "fig_plain", plain)
    monkeypatch.setattr(runkit.OUT, "root", tmp_path)
    monkeypatch.setattr(sys, "argv", ["run_all.py"])
    return log


def test_a_figure_is_drawn_while_the_next_one_measures_and_outputs_keep_figure_order(figures, tmp_path, capsys):
    runkit.run_set("test set", ["fig_first", "fig_second", "fig_plain"], None)
    log = figures
    assert ("first measures", "MainThread") in log and ("second measures", "MainThread") in log
    assert [e for e in log if e[0] == "first draws"][0][1] != "MainThread"
    # The plain figure runs only once the drawn ones before it are done.
    assert [e[0] for e in log].index("plain runs") > [e[0] for e in log].index("second draws")
    claims = pd.read_csv(tmp_path / "claims_all.csv")
    assert list(claims["script"]) == ["fig_first", "fig_second", "fig_plain"]
    times = pd.read_csv(tmp_path / "run_all_times.csv")
    assert list(times["figure"]) == ["fig_first", "fig_second", "fig_plain", "total"]
    printed = capsys.readouterr().out
    tables = [printed.index(f"{fig}: the paper's claims vs ours") for fig in ("fig_first", "fig_second")]
    assert tables == sorted(tables), "each figure's claim table is printed, in figure order"


def test_a_figure_that_fails_while_drawn_stops_the_set_with_its_error(figures, monkeypatch):
    def broken(measured):
        raise ValueError("cannot draw")

    module = types.ModuleType("fig_broken")
    module.main = runkit.figure_main("fig_broken", lambda settings: None, broken, lambda agg: [])
    monkeypatch.setitem(sys.modules, "fig_broken", module)
    with pytest.raises(ValueError, match="cannot draw"):
        runkit.run_set("test set", ["fig_broken", "fig_plain"], None)
