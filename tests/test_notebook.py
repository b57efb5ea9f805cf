"""The tutorial notebook (docs/tutorial.ipynb) runs from top to bottom without an error."""

from __future__ import annotations

import pytest

from conftest import REPO

NOTEBOOK = REPO / "docs" / "tutorial.ipynb"


def test_the_tutorial_notebook_runs():
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    # Run from docs/, as a reader opening it there would; outputs are not saved back.
    nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    html = [o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {})]
    assert any("vcpusim scenario" in h for h in html) and any("vcpusim result" in h for h in html)
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) >= 5, "every plot cell drew a figure"
