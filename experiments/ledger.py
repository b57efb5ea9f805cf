"""The ledger as data: EXPERIMENTS.md's claim tables and tallies, and the README's fidelity line,
generated from the committed ``experiments/<set>/out/claims_all.csv`` files.

    python experiments/ledger.py            rewrite the generated parts of EXPERIMENTS.md and README.md
    python experiments/ledger.py --check    exit 1 when they differ from the CSVs, or a CSV breaks
                                            docs/validation.md (tests/test_ledger.py runs this)
    python experiments/ledger.py --summary  print the scoreboard

A generated part sits between two markers, ``<!-- ledger:KEY -->`` and ``<!-- /ledger:KEY -->``
(KEY: ``scoreboard``, ``E4:claims``, ``E4:tally``, ..., ``fidelity`` in the README); everything
outside the markers is written by hand and left alone. The explanations beside the tables are
keyed by claim id.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import protocol  # noqa: E402

REPO = HERE.parent
EXPERIMENTS_MD = REPO / "EXPERIMENTS.md"
README_MD = REPO / "README.md"


@dataclass(frozen=True)
class Ledger:
    """One ledger of EXPERIMENTS.md: its entry, the experiment set that fills it, and the paper."""

    key: str
    folder: str
    title: str

    def csv(self, root: Path = HERE) -> Path:
        return root / self.folder / "out" / "claims_all.csv"


LEDGERS = (
    Ledger("E4", "asplos13", "seed 000, Kim et al., ASPLOS'13"),
    Ledger("E5", "hybrid", "seed 004, Weng et al., IEEE TC"),
    Ledger("E6", "xen_cmt", "seed 001, Kourai and Nakata"),
    Ledger("E7", "microsliced", "seed 002, Ahn et al., EuroSys'18"),
    Ledger("E8", "irs", "seed 003, IRS slides"),
    Ledger("E9", "modern", "Linux 6.x KVM patches and the seeds' schemes"),
)

#: claims_all.csv's columns (runkit.CLAIM_COLUMNS after the script's name).
COLUMNS = ("script", "id", "figure", "claim", "kind", "type", "paper", "source", "ours", "mean", "ci_lo", "ci_hi",
           "n_seeds", "verdict", "cause", "note")


# --- Reading and checking a set's claims ---------------------------------------------------------


def read(ledger: Ledger, root: Path = HERE) -> pd.DataFrame:
    path = ledger.csv(root)
    if not path.exists():
        raise FileNotFoundError(f"{path}: missing; run python experiments/{ledger.folder}/run_all.py")
    return pd.read_csv(path, dtype=str, keep_default_na=False)


def problems(ledger: Ledger, df: pd.DataFrame) -> list[str]:
    """What in a set's claims breaks docs/validation.md: each problem names the claim."""
    where = f"{ledger.key} ({ledger.folder}/out/claims_all.csv)"
    if tuple(df.columns) != COLUMNS:
        return [f"{where}: columns {list(df.columns)}, expected {list(COLUMNS)}"]
    out = []
    dupes = sorted(set(df["id"][df["id"].duplicated()]))
    if dupes:
        out.append(f"{where}: ids repeat: {dupes}")
    for r in df.itertuples(index=False):
        at = f"{where} {r.id}"
        for field, allowed in (("kind", protocol.KINDS), ("type", protocol.TYPES), ("verdict", protocol.VERDICTS),
                               ("cause", protocol.CAUSES + ("",))):
            if getattr(r, field) not in allowed:
                out.append(f"{at}: {field} {getattr(r, field)!r} is not one of {allowed}")
        if r.kind == protocol.PREDICTION and r.verdict in (protocol.D, protocol.N) and not r.cause:
            out.append(f"{at}: a {r.verdict} prediction names no cause")
        if r.verdict == protocol.R and r.cause:
            out.append(f"{at}: an R claim names a cause")
        if not r.paper or not r.source:
            out.append(f"{at}: the paper's value and where it says it are required")
        if r.n_seeds:
            if float(r.n_seeds) < protocol.MIN_SEEDS:
                out.append(f"{at}: {r.n_seeds} seeds, fewer than {protocol.MIN_SEEDS}")
        elif not r.ours.startswith("not measured"):
            out.append(f"{at}: no seed count, and ours does not say 'not measured'")
    return out


# --- Tallies -------------------------------------------------------------------------------------


@dataclass
class Tally:
    """Verdicts of predictions, and the rows that are not counted."""

    r: int = 0
    d: int = 0
    n: int = 0
    calibration: int = 0
    extra: int = 0

    @classmethod
    def of(cls, df: pd.DataFrame) -> "Tally":
        p = df[df["kind"] == protocol.PREDICTION]["verdict"]
        return cls(int((p == protocol.R).sum()), int((p == protocol.D).sum()), int((p == protocol.N).sum()),
                   int((df["kind"] == protocol.CALIBRATION).sum()), int((df["kind"] == protocol.EXTRA).sum()))

    def __add__(self, o: "Tally") -> "Tally":
        return Tally(self.r + o.r, self.d + o.d, self.n + o.n, self.calibration + o.calibration, self.extra + o.extra)

    @property
    def predictions(self) -> int:
        return self.r + self.d + self.n

    @property
    def in_range(self) -> float:
        """R / predictions."""
        return self.r / self.predictions if self.predictions else math.nan

    @property
    def in_direction(self) -> float:
        """(R + D) / predictions."""
        return (self.r + self.d) / self.predictions if self.predictions else math.nan


def pct(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{x:.0%}"


# --- The generated parts -------------------------------------------------------------------------


def _cell(text: str) -> str:
    """A markdown table cell: one line, pipes escaped."""
    return re.sub(r"\s+", " ", str(text)).replace("|", "\\|").strip()


def claims_table(df: pd.DataFrame) -> str:
    """The ledger's claims: predictions first, then calibration and extra rows, in script order."""
    lines = []
    head = "| id | figure | claim | paper (where) | ours | n | verdict | cause | note |"
    rule = "|---|---|---|---|---|---|---|---|---|"
    for kind, title in ((protocol.PREDICTION, "Predictions (counted)"),
                        (protocol.CALIBRATION, "Calibration inputs (shown, not counted)"),
                        (protocol.EXTRA, "Extras: not claims of the paper (shown, not counted)")):
        rows = df[df["kind"] == kind]
        if rows.empty:
            continue
        lines += ["", f"*{title}*", "", head, rule]
        for r in rows.itertuples(index=False):
            n = str(int(float(r.n_seeds))) if r.n_seeds else ""
            cells = [f"`{r.id}`", r.figure, r.claim, f"{r.paper} ({r.source})", r.ours, n, f"**{r.verdict}**",
                     r.cause, r.note]
            lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines[1:])


def tally_text(t: Tally) -> str:
    return (f"**{t.predictions} predictions: {t.r} R, {t.d} D, {t.n} N; {pct(t.in_range)} in range, "
            f"{pct(t.in_direction)} in direction.** Not counted: {t.calibration} calibration "
            f"row{'s' if t.calibration != 1 else ''}, {t.extra} extra{'s' if t.extra != 1 else ''}.")


def scoreboard(tallies: dict[str, Tally]) -> str:
    """Per ledger and in total (docs/validation.md, Tallies)."""
    lines = ["| ledger | paper | predictions | R | D | N | in range | in direction | calibration | extra |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    total = Tally()
    for ledger in LEDGERS:
        t = tallies[ledger.key]
        total = total + t
        lines.append(f"| {ledger.key} | {ledger.title} | {t.predictions} | {t.r} | {t.d} | {t.n} | {pct(t.in_range)} | "
                     f"{pct(t.in_direction)} | {t.calibration} | {t.extra} |")
    lines.append(f"| **all** | | **{total.predictions}** | **{total.r}** | **{total.d}** | **{total.n}** | "
                 f"**{pct(total.in_range)}** | **{pct(total.in_direction)}** | {total.calibration} | {total.extra} |")
    return "\n".join(lines)


def fidelity_line(total: Tally) -> str:
    """The README's one-line fidelity statement."""
    return (f"Of the {total.predictions} published results vcpusim predicts (the five seed papers' and E9's Linux "
            f"patches'), "
            f"{pct(total.in_range)} reproduce in range and {pct(total.in_direction)} in direction "
            f"({total.r} R, {total.d} D, {total.n} N; EXPERIMENTS.md, judged by docs/validation.md).")


def parts(root: Path = HERE) -> tuple[dict[str, str], dict[str, str], list[str]]:
    """The generated parts of EXPERIMENTS.md and of the README by key, and every problem found."""
    md, readme, found = {}, {}, []
    tallies = {}
    for ledger in LEDGERS:
        try:
            df = read(ledger, root)
        except FileNotFoundError as e:
            found.append(str(e))
            tallies[ledger.key] = Tally()
            continue
        found += problems(ledger, df)
        if tuple(df.columns) != COLUMNS:  # not a table of this protocol: nothing to generate from it
            tallies[ledger.key] = Tally()
            continue
        tallies[ledger.key] = Tally.of(df)
        md[f"{ledger.key}:claims"] = claims_table(df)
        md[f"{ledger.key}:tally"] = tally_text(tallies[ledger.key])
    md["scoreboard"] = scoreboard(tallies)
    total = Tally()
    for t in tallies.values():
        total = total + t
    readme["fidelity"] = fidelity_line(total)
    return md, readme, found


MARKER = re.compile(r"<!-- ledger:(?P<key>[\w:]+) -->\n(?P<body>(?:.*?\n)??)<!-- /ledger:(?P=key) -->", re.S)


def fill(text: str, generated: dict[str, str], path: Path) -> tuple[str, list[str]]:
    """``text`` with every marked part replaced by its generated text; problems name the file and key."""
    seen, found = set(), []

    def sub(m: re.Match) -> str:
        key = m.group("key")
        seen.add(key)
        if key not in generated:
            found.append(f"{path.name}: marker ledger:{key} has nothing to generate")
            return m.group(0)
        return f"<!-- ledger:{key} -->\n{generated[key]}\n<!-- /ledger:{key} -->"

    out = MARKER.sub(sub, text)
    for key in sorted(set(generated) - seen):
        found.append(f"{path.name}: no markers for ledger:{key} (<!-- ledger:{key} --> ... <!-- /ledger:{key} -->)")
    return out, found


def run(check: bool, root: Path = HERE, files: tuple[Path, Path] = (EXPERIMENTS_MD, README_MD)) -> list[str]:
    """Regenerate (or, with ``check``, compare) the marked parts; returns the problems found."""
    md, readme, found = parts(root)
    for path, generated in zip(files, (md, readme)):
        old = path.read_text()
        new, issues = fill(old, generated, path)
        found += issues
        if new != old:
            if check:
                found.append(f"{path.name}: generated parts differ from the claims CSVs; run python experiments/ledger.py")
            else:
                path.write_text(new)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing; exit 1 on any difference")
    parser.add_argument("--summary", action="store_true", help="print the scoreboard and write nothing")
    a = parser.parse_args(argv)
    if a.summary:
        md, readme, found = parts()
        print(md["scoreboard"])
        print()
        print(readme["fidelity"])
    else:
        found = run(check=a.check)
    for p in found:
        print(p, file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
