"""The stored notebooks are one named run, the run data/reproduction/summary.csv reports.

``labkit.run.reference.store_reference`` runs the reproduction and stores it;
``check_reference`` finds what contradicts "these notebooks' outputs and this summary come
from the run that run.json names".  Here: the tooling end to end on two small notebooks in a
temporary folder (quick mode, about half a minute), each contradiction caught, and the
repository's own notebooks and data/reproduction checked once a reference run is stored.
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pandas as pd
import pytest

from labkit.run import notebook_files, reference

pytestmark = pytest.mark.slow  # make test-fast leaves it out

ROOT = Path(__file__).resolve().parent.parent

PARAMS = nbformat.v4.new_code_cell("QUICK = None", metadata={"tags": ["parameters"]})
SETUP = "import labkit\nfrom labkit import report\n\nQUICK = labkit.config.quick_mode(QUICK)"
INDEX = "print(report.format_summary(report.summary_table()))"
MEASURE = """from labkit.measure.stats import Estimate

est = Estimate("t", 1.2345678, 1.1111, 1.3333, 0.95, "test", 3, 10, 0.01, 0.02)
report.record("T1", "a figure", model=est.estimate, measured=est, reason="a test",
              verdict="reproduced")
print(report.format_summary(report.summary_table()))"""


def _notebook(title: str, *code: str) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(f"# {title}"), PARAMS.copy()]
    nb.cells += [nbformat.v4.new_code_cell(SETUP)] + [nbformat.v4.new_code_cell(c) for c in code]
    nb.metadata["kernelspec"] = dict(notebook_files.KERNELSPEC)
    return nb


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    base = tmp_path_factory.mktemp("reference")
    nbs = base / "notebooks"
    nbs.mkdir()
    nbformat.write(_notebook("Index", INDEX), nbs / "00-index.ipynb")
    nbformat.write(_notebook("Measure", MEASURE), nbs / "01-measure.ipynb")
    run = reference.store_reference(
        quick=True, out=base / "out", notebooks=nbs, reproduction=base / "rep", progress=False
    )
    return run, nbs, base / "rep"


def test_store_then_check_finds_nothing(stored):
    run, nbs, rep = stored
    assert reference.check_reference(nbs, rep) == []
    assert json.loads((rep / reference.RUN_FILE).read_text())["run"] == run["run"]
    assert run["mode"] == "quick" and set(run["notebooks"]) == {
        "00-index.ipynb",
        "01-measure.ipynb",
    }
    for path in sorted(nbs.glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        assert nb.metadata["labkit"]["run"] == run["run"]
        line = nb.cells[1]
        assert line.cell_type == "markdown" and run["run"] in line.source
        assert notebook_files.STORED_RUN_TAG in line.metadata["tags"]
        assert not notebook_files.would_change(path)  # as JupyterLab writes it
        assert not any("injected-parameters" in c.metadata.get("tags", []) for c in nb.cells)
    # the index was rerun after the run: its table shows the run's row
    index = (nbs / "00-index.ipynb").read_text()
    assert "1.235 [1.111, 1.333]" in index and "(no results recorded)" not in index


def _copy(stored, tmp_path):
    _, nbs, rep = stored
    import shutil

    shutil.copytree(nbs, tmp_path / "nbs")
    shutil.copytree(rep, tmp_path / "rep")
    return tmp_path / "nbs", tmp_path / "rep"


def test_a_notebook_of_another_run_is_caught(stored, tmp_path):
    nbs, rep = _copy(stored, tmp_path)
    path = nbs / "01-measure.ipynb"
    nb = json.loads(path.read_text())
    nb["metadata"]["labkit"]["run"] = "20200101T0000Z-elsewhere"
    path.write_text(json.dumps(nb))
    assert any("01-measure.ipynb: outputs of run" in p for p in reference.check_reference(nbs, rep))


def test_a_figure_that_differs_from_the_summary_is_caught(stored, tmp_path):
    nbs, rep = _copy(stored, tmp_path)
    path = nbs / "01-measure.ipynb"
    path.write_text(path.read_text().replace("1.235 [1.111, 1.333]", "1.236 [1.111, 1.333]"))
    problems = reference.check_reference(nbs, rep)
    assert problems == [
        "T1 'a figure': '1.235 [1.111, 1.333]' is not in the outputs of 01-measure.ipynb"
    ]


def test_a_summary_of_another_run_is_caught(stored, tmp_path):
    nbs, rep = _copy(stored, tmp_path)
    df = pd.read_csv(rep / "summary.csv")
    df.loc[0, "recorded"] = "2020-01-01T00:00:00+00:00"
    df.to_csv(rep / "summary.csv", index=False)
    problems = reference.check_reference(nbs, rep)
    assert any("SHA-256" in p for p in problems) and any("outside" in p for p in problems)


def test_reproduce_drops_the_stored_run_line(stored, tmp_path):
    """A notebook executed afresh describes its own run, not the stored one."""
    _, nbs, _ = stored
    path = tmp_path / "x.ipynb"
    path.write_bytes((nbs / "01-measure.ipynb").read_bytes())
    notebook_files.drop_stored_run_file(path)
    nb = nbformat.read(path, as_version=4)
    assert "labkit" not in nb.metadata
    assert all(notebook_files.STORED_RUN_TAG not in c.metadata.get("tags", []) for c in nb.cells)


def test_the_repository_holds_one_reference_run():
    rep = ROOT / "data" / "reproduction"
    if not (rep / reference.RUN_FILE).is_file():
        pytest.skip("no reference run stored yet (make reference stores one)")
    assert reference.check_reference(ROOT / "notebooks", rep) == []


def test_stored_outputs_name_the_code_they_come_from(stored, monkeypatch):
    """A stored run records the code id of the figure code; a change to one file of it makes
    the outputs stale, and the problem names the file and the command that regenerates."""
    run, nbs, rep = stored
    assert run["code"]["id"] == reference.code_id()
    assert reference.stale_outputs(nbs, rep) == []
    changed = dict(reference.code_manifest(), **{"labkit/results/r2/claims.py": "0" * 12})
    monkeypatch.setattr(reference, "code_manifest", lambda: changed)
    (problem,) = reference.stale_outputs(nbs, rep)
    assert "changed: labkit/results/r2/claims.py" in problem and "make reference" in problem


def test_the_figure_code_leaves_out_the_command_line_and_the_orchestration():
    files = reference.code_manifest()
    assert "labkit/results/r2/claims.py" in files and "labkit/results/r2/bands.csv" in files
    assert "labkit/report/gallery.py" in files and "labkit/claims/phrases.py" in files
    assert not any(f.startswith(("labkit/run/", "labkit/testing/")) for f in files)
    assert "labkit/cli.py" not in files


def test_the_repositorys_stored_outputs_come_from_its_code():
    """Fails until the reference run is made from this tree: `make reference`."""
    rep = ROOT / "data" / "reproduction"
    if not (rep / reference.RUN_FILE).is_file():
        pytest.skip("no reference run stored yet (make reference stores one)")
    problems = reference.stale_outputs(ROOT / "notebooks", rep)
    assert problems == [], "\n".join(problems)
