"""EXPERIMENTS.md's generated parts (experiments/ledger.py): the committed claim tables, tallies
and the README's fidelity line match the committed claims CSVs, and the CSVs follow
docs/validation.md; on made-up ledgers, generation fills the markers, counts only predictions,
and the check catches a stale table and every kind of malformed row."""

import sys
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("scipy")

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "experiments"))

import ledger  # noqa: E402


def test_the_committed_ledger_is_generated_from_the_committed_csvs():
    found = ledger.run(check=True)
    assert found == [], "\n".join(found)


def row(id, verdict="R", kind="prediction", cause="", n="5", ours="1.00 [0.90, 1.10]", **kw):
    r = {"script": "figx", "id": id, "figure": "Fig 1", "claim": "a claim", "kind": kind, "type": "point",
         "paper": "1.0", "source": "§1", "ours": ours, "mean": "1", "ci_lo": "0.9", "ci_hi": "1.1",
         "n_seeds": n, "verdict": verdict, "cause": cause, "note": ""}
    r.update(kw)
    return r


def made_up(tmp_path, rows_of):
    """Six sets' claims_all.csv under tmp_path (rows_of: ledger key -> rows), and a README and an
    EXPERIMENTS.md with every marker, empty."""
    for lg in ledger.LEDGERS:
        path = lg.csv(tmp_path)
        path.parent.mkdir(parents=True)
        pd.DataFrame(rows_of.get(lg.key, [row("fig1.a")]), columns=ledger.COLUMNS).to_csv(path, index=False)
    keys = ["scoreboard"] + [f"{lg.key}:{part}" for lg in ledger.LEDGERS for part in ("claims", "tally")]
    md = tmp_path / "EXPERIMENTS.md"
    md.write_text("# Ledger\n\nhand-written text\n\n" + "\n\n".join(f"<!-- ledger:{k} -->\nold\n<!-- /ledger:{k} -->"
                                                                    for k in keys) + "\n\nmore text\n")
    readme = tmp_path / "README.md"
    readme.write_text("intro\n<!-- ledger:fidelity -->\n<!-- /ledger:fidelity -->\nrest\n")  # an empty part
    return md, readme


def test_generation_fills_every_marker_and_counts_only_predictions(tmp_path):
    e4 = [row("fig1.a", "R"), row("fig1.b", "D", cause="workload calibration"),
          row("fig1.c", "N", cause="mechanism missing or wrong"), row("fig1.d", "N", cause="measured differently"),
          row("fig1.cal", "R", kind="calibration"), row("fig1.x", "N", kind="extra")]
    md, readme = made_up(tmp_path, {"E4": e4})
    assert ledger.run(check=False, root=tmp_path, files=(md, readme)) == []
    text = md.read_text()
    assert "hand-written text" in text and "more text" in text and "\nold\n" not in text
    assert "**4 predictions: 1 R, 1 D, 2 N; 25% in range, 50% in direction.** Not counted: 1 calibration row, 1 extra." in text
    # Five other ledgers of one R each: 9 predictions in all, 6 R, 1 D.
    assert "| **all** | | **9** | **6** | **1** | **2** | **67%** | **78%** | 1 | 1 |" in text
    assert "Of the 9 published results" in readme.read_text() and "67% reproduce in range and 78% in direction" in readme.read_text()
    # Calibration and extra rows are in the table, apart from the predictions.
    assert text.index("Predictions (counted)") < text.index("`fig1.c`") < text.index("Calibration inputs") < text.index("`fig1.cal`")
    # A second pass changes nothing, and the check agrees.
    assert ledger.run(check=True, root=tmp_path, files=(md, readme)) == []


def test_the_check_catches_a_stale_table(tmp_path):
    md, readme = made_up(tmp_path, {})
    ledger.run(check=False, root=tmp_path, files=(md, readme))
    md.write_text(md.read_text().replace("**R**", "**D**", 1))
    found = ledger.run(check=True, root=tmp_path, files=(md, readme))
    assert any("EXPERIMENTS.md: generated parts differ" in f for f in found)


@pytest.mark.parametrize("bad,expect", [
    (row("fig1.a", "N"), "a N prediction names no cause"),
    (row("fig1.a", "R", cause="workload calibration"), "an R claim names a cause"),
    (row("fig1.a", n="3"), "3 seeds, fewer than 5"),
    (row("fig1.a", n="", ours="0.5"), "does not say 'not measured'"),
    (row("fig1.a", kind="guess"), "kind 'guess'"),
    (row("fig1.a", verdict="reproduced"), "verdict 'reproduced'"),
    (row("fig1.a", cause="bad luck", verdict="D"), "cause 'bad luck'"),
    (row("fig1.a", source=""), "where it says it are required"),
])
def test_the_check_names_each_malformed_row(tmp_path, bad, expect):
    md, readme = made_up(tmp_path, {"E6": [bad]})
    found = ledger.run(check=True, root=tmp_path, files=(md, readme))
    assert any("E6" in f and "fig1.a" in f and expect in f for f in found), found


def test_repeated_ids_missing_markers_and_missing_csvs_are_reported(tmp_path):
    md, readme = made_up(tmp_path, {"E5": [row("fig1.a"), row("fig1.a")]})
    md.write_text(md.read_text().replace("<!-- ledger:E9:tally -->\nold\n<!-- /ledger:E9:tally -->", ""))
    ledger.LEDGERS[-1].csv(tmp_path).unlink()
    found = ledger.run(check=True, root=tmp_path, files=(md, readme))
    assert any("E5" in f and "ids repeat" in f for f in found)
    assert any("modern/out/claims_all.csv: missing" in f for f in found)
    # E9's claims cannot be generated without its CSV, so its markers have nothing to say.
    assert any("ledger:E9:claims has nothing to generate" in f for f in found)


def test_the_summary_prints_the_scoreboard(capsys):
    assert ledger.main(["--summary"]) == 0
    out = capsys.readouterr().out
    assert "| ledger |" in out and "| **all** |" in out and "published results vcpusim predicts" in out
