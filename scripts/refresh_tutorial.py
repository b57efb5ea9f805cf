"""Run docs/tutorial.ipynb from top to bottom and save it with its outputs, so that it reads on
a repository page with the numbers its text talks about. tests/test_notebook.py runs it again
and checks that its tables and printed values are still what is saved; after a change that moves
them, run this, read the text against the new numbers, and commit both.

    python scripts/refresh_tutorial.py
"""

from __future__ import annotations

from pathlib import Path

import nbclient
import nbformat

NOTEBOOK = Path(__file__).resolve().parent.parent / "docs" / "tutorial.ipynb"


def main() -> None:
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    # Run from docs/, as a reader opening it there would; no timings, so that a rerun that
    # changes no number changes no byte but the figures'.
    nbclient.NotebookClient(notebook, timeout=600, kernel_name="python3", record_timing=False,
                            resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    nbformat.write(notebook, NOTEBOOK)
    print(f"wrote {NOTEBOOK} with its outputs")


if __name__ == "__main__":
    main()
