"""The golden suite again, through the installed extension: `cargo test` checks the outputs of a
build without the PGO profile (crates/vcpusim/tests/golden.rs); this checks the wheel that
`pip install .` built, with the profile when the build backend applied it (vcpusim --version
says). Optimization must not change one byte: every case's three outputs against the same
hashes.tsv."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from vcpusim import _core

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "crates" / "vcpusim" / "tests" / "golden"


def golden_cases() -> list[tuple[str, Path, list[str]]]:
    """(case name, scenario file, expected sha256 of vms.csv, metrics.csv, summary.json)."""
    cases = []
    for line in (GOLDEN / "hashes.tsv").read_text(encoding="utf-8").splitlines():
        if not line or line.startswith("#"):
            continue
        name, *hashes = line.split("\t")
        path = GOLDEN / "cases" / name.removeprefix("golden/") if name.startswith("golden/") else ROOT / name
        cases.append((name, path, hashes))
    return cases


CASES = golden_cases()


def test_every_case_is_there():
    # golden.rs holds the rows and the case files to each other both ways; here each row must
    # name a file, or the test below would check less than it says.
    assert len(CASES) >= 70
    assert all(path.is_file() for _, path, _ in CASES), [n for n, p, _ in CASES if not p.is_file()]


@pytest.mark.parametrize("name, path, hashes", CASES, ids=[c[0] for c in CASES])
def test_the_installed_build_gives_the_golden_outputs(name, path, hashes):
    # The case name is the scenario's source, as golden.rs runs it (summary.json records it).
    out = _core.run(path.read_text(encoding="utf-8"), name)
    got = [hashlib.sha256(out[k].encode()).hexdigest() for k in ("vms_csv", "metrics_csv", "summary_json")]
    assert got == hashes, f"{name}: {_core.build_info()['pgo_note']}"
