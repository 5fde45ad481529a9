"""Every stored notebook is executed, clean and parameterised (checked on the files)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
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


def test_every_figure_is_drawn(nb_path):
    """A matplotlib figure is stored as an image: an output whose only form is the text
    "<Figure size ...>" is a figure the reader never sees (a Figure that no front end drew)."""
    nb = nbformat.read(nb_path, as_version=4)
    for k, cell in enumerate(code_cells(nb)):
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            text = data.get("text/plain", "")
            if text.startswith("<Figure size"):
                assert any(m.startswith("image/") for m in data), (
                    f"{nb_path.name} code cell {k}: a figure stored as text only: {text!r}"
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
    """No widget state and no widget view is stored: without its state a view shows as
    "Error displaying widget: model not found" in a trusted notebook, so each widget output
    keeps only its line of text, and a cell that shows a drawing widget also holds its drawing
    as an ordinary image output (shown without a kernel)."""
    nb = nbformat.read(nb_path, as_version=4)
    assert "widgets" not in nb.metadata, f"{nb_path.name}: strip metadata.widgets before storing"
    for k, cell in enumerate(code_cells(nb)):
        outputs = cell.get("outputs", [])
        views = [o for o in outputs if WIDGET in o.get("data", {})]
        assert not views, (
            f"{nb_path.name} code cell {k}: a widget view is stored; "
            f"run python -m labkit.run.notebook_files {nb_path.relative_to(ROOT)}"
        )
        if DRAWS.search(cell.source):
            texts = ["".join(o.get("data", {}).get("text/plain", "")) for o in outputs]
            assert any(t.startswith("[stepper controls:") for t in texts), (
                f"{nb_path.name} code cell {k}: the controls' line of text is not stored"
            )
            assert any("image/png" in o.get("data", {}) for o in outputs), (
                f"{nb_path.name} code cell {k}: the drawing widget left no image"
            )


WIDGET = "application/vnd.jupyter.widget-view+json"
#: Cells that show a widget which draws (their drawing must be stored as an image too).
DRAWS = re.compile(r"stepper\.stepper\(")


def test_stored_as_jupyterlab_writes_it(nb_path):
    """Read with nbformat and written back as JupyterLab would (kernelspec, language_info,
    cell ids, nbformat.write): not one byte differs, so opening it changes nothing
    (tests/test_browser.py checks the same in JupyterLab itself)."""
    from labkit.run import notebook_files

    stored = nb_path.read_text(encoding="utf-8")
    nb = nbformat.read(nb_path, as_version=4)
    assert nb.metadata.get("kernelspec") == notebook_files.KERNELSPEC, nb.metadata.get("kernelspec")
    assert notebook_files.dumps(notebook_files.normalise(nb)) == stored, (
        f"{nb_path.name}: run python -m labkit.run.notebook_files {nb_path.relative_to(ROOT)}"
    )


def test_the_normaliser_gives_what_jupyterlab_writes(tmp_path):
    """A notebook as papermill leaves it (old kernelspec name, injected cell, papermill
    metadata, empty tags, no cell ids) comes out in the stored form, idempotently."""
    from labkit.run import notebook_files

    nb = nbformat.v4.new_notebook()
    nb.nbformat_minor = 4
    params = nbformat.v4.new_code_cell("QUICK = None", metadata={"tags": ["parameters"]})
    injected = nbformat.v4.new_code_cell("QUICK = True", metadata={"tags": ["injected-parameters"]})
    body = nbformat.v4.new_code_cell("print(1)", metadata={"tags": [], "papermill": {"x": 1}})
    body.outputs = [
        nbformat.v4.new_output("execute_result", {"text/plain": "1"}, execution_count=3)
    ]
    params.execution_count, injected.execution_count, body.execution_count = 1, 2, 3
    nb.cells = [params, injected, body]
    for c in nb.cells:
        c.pop("id", None)
    nb.metadata = {"kernelspec": {"name": "python3", "display_name": "Python 3"}, "papermill": {}}
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps(nb), encoding="utf-8")
    assert notebook_files.would_change(path)
    assert notebook_files.main([str(path), "--check"]) == 1
    assert notebook_files.main([str(path)]) == 0
    assert not notebook_files.would_change(path)
    out = nbformat.read(path, as_version=4)
    nbformat.validate(out)
    assert out.nbformat_minor == 5 and all(c.get("id") for c in out.cells)
    assert out.metadata.kernelspec == notebook_files.KERNELSPEC and "papermill" not in out.metadata
    assert [c.source for c in out.cells] == ["QUICK = None", "print(1)"]
    assert [c.execution_count for c in out.cells] == [1, 2]  # as if papermill's cell never ran
    assert out.cells[1].outputs[0].execution_count == 2 and out.cells[1].metadata == {}
    text = path.read_text(encoding="utf-8")
    assert text.endswith("}\n") and text.startswith('{\n "cells": [')


def test_the_normaliser_drops_widget_views_and_keeps_their_text():
    """A widget output keeps its other forms without its view; a view alone is dropped."""
    from labkit.run import notebook_files

    view = {"model_id": "0a1b", "version_major": 2, "version_minor": 0}
    cell = nbformat.v4.new_code_cell("show()")
    cell.outputs = [
        nbformat.v4.new_output("display_data", {WIDGET: view, "text/plain": "[controls]"}),
        nbformat.v4.new_output("display_data", {WIDGET: view}),
        nbformat.v4.new_output("display_data", {"image/png": "iVBO", "text/plain": "drawing"}),
    ]
    nb = nbformat.v4.new_notebook(cells=[cell])
    out = notebook_files.normalise(nb)
    assert [dict(o.data) for o in out.cells[0].outputs] == [
        {"text/plain": "[controls]"},
        {"image/png": "iVBO", "text/plain": "drawing"},
    ]
    assert WIDGET in nb.cells[0].outputs[0].data  # the notebook given is not modified


def test_the_normaliser_writes_whole_numbers_in_output_metadata_as_javascript_does():
    """JupyterLab's JSON writes -1.0 as -1: a stored phrase's numbers must already be so."""
    from labkit.run import notebook_files

    cell = nbformat.v4.new_code_cell("md")
    phrase = {"estimate": -1.0, "low": -1.0, "high": 2.5, "n": [3.0, 0.1], "role": "negative"}
    cell.outputs = [
        nbformat.v4.new_output(
            "display_data", {"text/markdown": "costs"}, metadata={"labkit": {"phrases": [phrase]}}
        )
    ]
    out = notebook_files.normalise(nbformat.v4.new_notebook(cells=[cell]))
    text = notebook_files.dumps(out)
    assert '"estimate": -1,' in text and '"high": 2.5' in text and "-1.0" not in text
    assert json.loads(text)["cells"][0]["outputs"][0]["metadata"]["labkit"]["phrases"][0]["n"] == [
        3,
        0.1,
    ]


def test_no_measured_interval_in_prose(nb_path):
    """Intervals are rendered from results by code, never typed into Markdown, where they
    contradict the outputs after the next run (tests/test_browser.py checks the rendered page)."""
    from labkit.run import notebook_files

    nb = nbformat.read(nb_path, as_version=4)
    found = [
        (k, hit)
        for k, cell in enumerate(nb.cells)
        if cell.cell_type == "markdown"
        for hit in notebook_files.intervals_in_prose(cell.source)
    ]
    assert not found, f"{nb_path.name}: intervals in Markdown cells: {found}"


def test_the_prose_check_catches_the_known_cases():
    from labkit.run import notebook_files

    for text in (
        "the full run's 0.992, 95% CI 0.990-0.995, even put",
        "a stored 1.0343 [1.0162, 1.0460] and",
        "about 3 ± 1 ns",
    ):
        assert notebook_files.intervals_in_prose(text), text
    for text in ("about 755x", "3% (0.860 s and 0.854 s)", "a list [a, b]", "see [1]"):
        assert not notebook_files.intervals_in_prose(text), text
