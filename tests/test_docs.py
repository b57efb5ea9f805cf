"""The reference docs stay true to what the code writes and where their links point.

- docs/scenario-format.md's output tables name every vms.csv column, every metrics.csv metric and
  every summary.json key a run writes (a column added in Rust and not documented fails here).
- Every relative link in README.md and docs/*.md reaches an existing file, and every `#anchor`
  a heading of that file (as GitHub derives anchors from headings).
"""

from __future__ import annotations

import csv
import json
import re

import vcpusim
from conftest import REPO, SMALL_SCENARIO

FORMAT = (REPO / "docs" / "scenario-format.md").read_text(encoding="utf-8")


def _section(title: str) -> str:
    """The text of the section whose heading starts with `title`, up to the next heading of its level."""
    hashes = title.split(" ", 1)[0]
    rest = FORMAT[FORMAT.index(title) + len(title):]
    end = re.search(rf"\n{hashes} ", rest)
    return rest[: end.start()] if end else rest


def _documented(section: str, names: list[str]) -> list[str]:
    return [n for n in names if f"`{n}`" not in section]


def test_the_output_tables_name_everything_a_run_writes(tmp_path):
    # A pool change and a cap, so that the pool columns and keys carry something.
    scenario = SMALL_SCENARIO.replace(
        "[[vm]]\nname = \"seq\"",
        "[[vm]]\nname = \"seq\"\ncap = 50",
    )
    path = tmp_path / "scenario.toml"
    path.write_text(scenario)
    out = vcpusim.run(path).write(tmp_path / "run")
    with open(out / "vms.csv", newline="") as f:
        columns = next(csv.reader(f))
    with open(out / "metrics.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    # `name[detail]` metrics (by lock class, by pCPU, by vCPU) are documented by their name.
    metrics = sorted({re.sub(r"\[.*\]$", "", r["metric"]) for r in rows})
    summary = json.loads((out / "summary.json").read_text())
    assert "pool" in columns and "cap" in columns and "pools" in summary, "the run writes what this test checks"
    assert not _documented(_section("### `vms.csv`"), columns), "vms.csv columns missing from docs/scenario-format.md"
    # A distribution's metrics may be documented as a family ("the same six for `sched_latency`"),
    # and `name[...]` ones as `name[<what>]`.
    section = _section("### `metrics.csv`")
    family = lambda m: re.sub(r"_(count|mean_us|min_us|max_us|p\d+_us)$", "", m)  # noqa: E731
    undocumented = [m for m in metrics if not any(f"`{n}" + end in section for n in (m, family(m)) for end in ("`", "["))]
    assert not undocumented, f"metrics.csv metrics missing from docs/scenario-format.md: {undocumented}"
    assert not _documented(_section("### `summary.json`"), list(summary)), "summary.json keys missing from docs/scenario-format.md"


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation other than `-` and `_` dropped,
    spaces turned into `-`."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(path) -> set[str]:
    text = path.read_text(encoding="utf-8")
    text = re.sub(r"```.*?```", "", text, flags=re.S)  # no headings inside code blocks
    seen: dict[str, int] = {}
    anchors = set()
    for heading in re.findall(r"^#+ (.*)$", text, flags=re.M):
        base = _anchor(heading)
        n = seen.get(base, 0)
        anchors.add(base if n == 0 else f"{base}-{n}")
        seen[base] = n + 1
    return anchors


def test_relative_links_and_anchors_resolve():
    docs = [REPO / "README.md", REPO / "EXPERIMENTS.md", *sorted((REPO / "docs").glob("*.md"))]
    broken = []
    for doc in docs:
        text = re.sub(r"```.*?```", "", doc.read_text(encoding="utf-8"), flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue  # https:, mailto:
            path, _, anchor = target.partition("#")
            file = (doc.parent / path).resolve() if path else doc
            if not file.exists():
                broken.append(f"{doc.name}: {target} (no such file)")
            elif anchor and file.suffix == ".md" and anchor not in _anchors(file):
                broken.append(f"{doc.name}: {target} (no such heading)")
    assert not broken, broken


def test_the_host_and_vm_tables_name_every_key_the_loader_takes():
    catalog = vcpusim.catalog()
    for title, section in (("## `[host]`", "host"), ("## `[[vm]]`", "vm"), ("## `[run]`", "run")):
        keys = [k["name"] for k in catalog[section]]
        assert keys, section
        missing = _documented(_section(title), keys)
        assert not missing, f"{title} of docs/scenario-format.md does not name {missing}"
