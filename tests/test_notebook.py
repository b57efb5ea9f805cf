"""The tutorial notebook (docs/tutorial.ipynb) runs from top to bottom without an error, and the
outputs it is committed with are what it prints now."""

from __future__ import annotations

import pytest

from conftest import REPO

NOTEBOOK = REPO / "docs" / "tutorial.ipynb"


def test_the_tutorial_notebook_runs():
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    saved = _texts(notebook)
    # Run from docs/, as a reader opening it there would; outputs are not saved back.
    nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    html = [o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {})]
    assert any("vcpusim scenario" in h for h in html) and any("vcpusim result" in h for h in html)
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) >= 5, "every plot cell drew a figure"
    # The notebook is committed with its outputs, and its text talks about their numbers: they
    # must be what a run gives now (scripts/refresh_tutorial.py saves them again).
    assert saved == _texts(notebook), "docs/tutorial.ipynb's saved outputs are stale: run scripts/refresh_tutorial.py"


def _texts(notebook) -> list:
    """Each code cell's printed and plain-text outputs (tables, values, reprs), in order."""
    texts = []
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        for o in cell.get("outputs", []):
            if o.get("output_type") == "stream":
                texts.append(o["text"])
            elif "text/plain" in o.get("data", {}):
                texts.append(o["data"]["text/plain"])
    return texts
