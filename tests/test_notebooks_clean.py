"""Every stored notebook is executed, clean and parameterised (checked on the files)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))
ABSOLUTE = re.compile(r"(?<![\w.~-])/(work|tmp|root|home)/")


def test_there_are_notebooks():
    names = [p.name for p in NOTEBOOKS]
    assert "00-index.ipynb" in names and "01-iov-iter-tour.ipynb" in names


@pytest.fixture(params=NOTEBOOKS, ids=lambda p: p.name)
def nb_path(request):
    return request.param


def code_cells(nb):
    return [c for c in nb.cells if c.cell_type == "code"]


def test_valid_and_executed_in_order(nb_path):
    nb = nbformat.read(nb_path, as_version=4)
    nbformat.validate(nb)
    counts = [c.execution_count for c in code_cells(nb)]
    assert counts and all(counts), f"{nb_path.name}: not every code cell was executed"
    assert counts == sorted(counts) and len(set(counts)) == len(counts), (
        f"{nb_path.name}: cells were not executed top to bottom in one run: {counts}"
    )


def test_no_stderr_and_no_errors(nb_path):
    nb = nbformat.read(nb_path, as_version=4)
    for k, cell in enumerate(code_cells(nb)):
        for out in cell.get("outputs", []):
            assert out.get("output_type") != "error", f"{nb_path.name} code cell {k}: error"
            assert not (out.get("output_type") == "stream" and out.get("name") == "stderr"), (
                f"{nb_path.name} code cell {k}: stderr output: {out.get('text', '')[:200]!r}"
            )


def test_no_absolute_paths(nb_path):
    text = nb_path.read_text(encoding="utf-8")
    found = sorted({m.group(0) for m in ABSOLUTE.finditer(text)})
    assert not found, f"{nb_path.name} holds machine paths: {found}"


def test_no_code_assumes_a_clone(nb_path):
    # labkit reproduce runs the notebooks from an installed wheel too, and with --out
    # anywhere: paths must come from labkit.config.data_dir(), not from the checkout.
    nb = nbformat.read(nb_path, as_version=4)
    for k, cell in enumerate(code_cells(nb)):
        for call in ("repo_root(", "checkout("):
            assert call not in cell.source, f"{nb_path.name} code cell {k} calls {call})"


def test_parameters_cell_first(nb_path):
    nb = nbformat.read(nb_path, as_version=4)
    first = code_cells(nb)[0]
    assert "parameters" in first.metadata.get("tags", []), (
        f"{nb_path.name}: the first code cell must be tagged 'parameters'"
    )
    assert re.search(r"^QUICK\s*=\s*None\b", first.source, re.M), first.source
    assert any("quick_mode(QUICK)" in c.source for c in code_cells(nb))


def test_the_checks_would_catch_a_dirty_notebook(tmp_path):
    """The rules above, applied to a notebook that breaks each of them."""
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("print(1)")
    cell.outputs = [nbformat.v4.new_output("stream", name="stderr", text="/home/me/x\n")]
    nb.cells = [cell, nbformat.v4.new_code_cell("x = 1")]
    text = json.dumps(nb)
    assert ABSOLUTE.search(text)
    assert not all(c.execution_count for c in nb.cells)
    assert "parameters" not in nb.cells[0].metadata.get("tags", [])


def test_no_stored_widget_state(nb_path):
    """Widget outputs carry a static drawing; their state is not stored (it would only bloat
    the file, and an HTML page would try to fetch the widgets' JavaScript to show it)."""
    nb = nbformat.read(nb_path, as_version=4)
    assert "widgets" not in nb.metadata, f"{nb_path.name}: strip metadata.widgets before storing"
    for cell in code_cells(nb):
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if "application/vnd.jupyter.widget-view+json" in data:
                assert "image/png" in data and "text/plain" in data, nb_path.name
