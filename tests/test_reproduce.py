"""`labkit reproduce` on a tiny temporary notebook set: outputs, resume, --force, failures."""

from __future__ import annotations

import json
import os
from pathlib import Path

import nbformat
import pytest

from labkit import cli
from labkit.run import reproduce

pytestmark = pytest.mark.slow  # make test-fast leaves it out

PARAMS = "QUICK = None"


def make_notebook(path: Path, *cells: str) -> Path:
    """A notebook whose first code cell is the tagged parameters cell, then ``cells``."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    p = nbformat.v4.new_code_cell(PARAMS)
    p.metadata["tags"] = ["parameters"]
    nb.cells = [nbformat.v4.new_markdown_cell("# a test notebook"), p]
    nb.cells += [nbformat.v4.new_code_cell(c) for c in cells]
    nbformat.write(nb, path)
    return path


GOOD = [
    "import os\nimport labkit\nQUICK = labkit.config.quick_mode(QUICK)\nprint('quick', QUICK)",
    "from labkit import report\n"
    "report.record('T1', 'answer', published=42, model=41.5, live=None, unit='x',\n"
    "              verdict='reproduced', reason='a test row')\n"
    "open('cwd-check.txt').read()",
    "import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\nax.plot([1, 2], [3, 4])\n"
    "report.savefig(fig, 't1-line')",
]


@pytest.fixture(scope="module")
def nbset(tmp_path_factory):
    folder = tmp_path_factory.mktemp("nbs")
    (folder / "cwd-check.txt").write_text("the notebooks dir is the cwd")
    make_notebook(folder / "01-good.ipynb", *GOOD)
    make_notebook(
        folder / "02-second.ipynb",
        "from labkit import report\nreport.record('T2', 'gain', published='3%', "
        "model=2.9, live=3.1, unit='%', verdict='consistent', reason='second')",
    )
    make_notebook(folder / "notes.ipynb", "raise SystemExit('not numbered: never run')")
    return folder


@pytest.fixture(scope="module")
def first_run(nbset, tmp_path_factory):
    out = tmp_path_factory.mktemp("out")
    rep = reproduce.run(quick=True, out=out, notebooks=nbset, progress=False)
    return out, rep


def test_runs_numbered_notebooks_in_order_and_writes_outputs(first_run):
    out, rep = first_run
    assert [r.name for r in rep.runs] == ["01-good.ipynb", "02-second.ipynb"]
    assert [r.status for r in rep.runs] == ["ran", "ran"], [r.error for r in rep.runs]
    assert rep.ok
    for name in ("01-good", "02-second"):
        executed = nbformat.read(out / "notebooks" / f"{name}.ipynb", as_version=4)
        codes = [c for c in executed.cells if c.cell_type == "code"]
        assert all(c.execution_count for c in codes)
        injected = [c for c in codes if "injected-parameters" in c.metadata.get("tags", [])]
        assert injected and "QUICK = True" in injected[0].source
        assert (
            (out / "html" / f"{name}.html")
            .read_text()
            .lstrip()
            .lower()
            .startswith("<!doctype html")
        )
    first = nbformat.read(out / "notebooks" / "01-good.ipynb", as_version=4)
    assert "quick True" in first.cells[3].outputs[0]["text"]
    assert {p.name for p in (out / "figures").iterdir()} == {
        "t1-line.png",
        "t1-line.svg",
        "t1-line.json",
    }
    index = (out / "index.html").read_text()
    assert "html/01-good.html" in index and "T2" in index and "t1-line.png" in index


def test_summary_table_gathers_the_notebooks_rows(first_run):
    out, rep = first_run
    assert list(rep.summary["result"]) == ["T1", "T2"]
    t1 = rep.summary.iloc[0]
    assert (t1.published, t1.model, t1.verdict, t1.notebook, t1.quick) == (
        42.0,
        41.5,
        "reproduced",
        "01-good.ipynb",
        True,
    )
    assert rep.summary.iloc[1].published == "3%"
    text = (out / "summary.txt").read_text()
    assert "T1" in text and "reproduced" in text and "a test row" in text
    # keyed by claim id (empty for these test rows, which have no declared band)
    assert (out / "summary.csv").read_text().startswith("claim,result,quantity,published")


def test_second_run_skips_and_force_reruns(first_run, nbset, capsys):
    out, _ = first_run
    again = reproduce.run(quick=True, out=out, notebooks=nbset, progress=False)
    assert [r.status for r in again.runs] == ["up to date", "up to date"]
    assert list(again.summary["result"]) == ["T1", "T2"]
    # full mode is different parameters: not the same run
    assert reproduce.run_hash(nbset / "01-good.ipynb", {"QUICK": True}) != reproduce.run_hash(
        nbset / "01-good.ipynb", {"QUICK": False}
    )
    rc = cli.main(
        [
            "reproduce",
            "--quick",
            "--out",
            str(out),
            "--notebooks",
            str(nbset),
            "--force",
            "--no-progress",
        ]
    )
    assert rc == 0
    printed = capsys.readouterr().out
    assert printed.count("  ran ") == 2, printed
    assert "result" in printed and "published" in printed and "verdict" in printed
    assert "T2" in printed and "consistent" in printed


def test_changed_notebook_is_rerun_alone(tmp_path):
    nbs = tmp_path / "nbs"
    nbs.mkdir()
    make_notebook(nbs / "01-a.ipynb", "x = 1")
    make_notebook(nbs / "02-b.ipynb", "y = 2")
    out = tmp_path / "out"
    reproduce.run(quick=True, out=out, notebooks=nbs, progress=False, html_report=False)
    make_notebook(nbs / "02-b.ipynb", "y = 3")
    rep = reproduce.run(quick=True, out=out, notebooks=nbs, progress=False, html_report=False)
    assert [r.status for r in rep.runs] == ["up to date", "ran"]


def test_failure_names_the_notebook_and_the_cell(tmp_path, capsys):
    nbs = tmp_path / "nbs"
    nbs.mkdir()
    make_notebook(nbs / "01-fine.ipynb", "x = 1")
    make_notebook(nbs / "02-broken.ipynb", "a = 1", "b = 1 / 0  # boom", "c = 3")
    out = tmp_path / "out"
    rc = cli.main(
        ["reproduce", "--quick", "--out", str(out), "--notebooks", str(nbs), "--no-progress"]
    )
    assert rc == 1
    err = capsys.readouterr().err
    assert "02-broken.ipynb" in err and "ZeroDivisionError" in err
    assert "b = 1 / 0" in err and "01-fine" not in err
    state = json.loads((out / ".state" / "02-broken.json").read_text())
    assert state["status"] == "failed" and state["cell"] is not None
    source = nbformat.read(nbs / "02-broken.ipynb", as_version=4)
    assert state["cell"] == 3 and "1 / 0" in source.cells[state["cell"]].source
    assert "cell 3" in err
    # a failed notebook is rerun next time, the good one is not
    rep = reproduce.run(quick=True, out=out, notebooks=nbs, progress=False, html_report=False)
    assert [r.status for r in rep.runs] == ["up to date", "failed"]


def test_no_notebooks_is_a_clear_error(tmp_path, capsys):
    rc = cli.main(
        [
            "reproduce",
            "--quick",
            "--out",
            str(tmp_path / "o"),
            "--notebooks",
            str(tmp_path),
            "--no-progress",
        ]
    )
    assert rc == 2
    assert "no notebooks" in capsys.readouterr().err


def test_notebooks_dir_from_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("LABKIT_NOTEBOOKS", str(tmp_path))
    assert reproduce.notebooks_dir() == tmp_path
    monkeypatch.delenv("LABKIT_NOTEBOOKS")
    assert reproduce.notebooks_dir().name == "notebooks"


def test_hash_covers_cells_not_outputs(tmp_path):
    nb = make_notebook(tmp_path / "01-x.ipynb", "print(1)")
    h1 = reproduce.run_hash(nb, {"QUICK": True})
    data = json.loads(nb.read_text())
    data["cells"][2]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "1\n"}]
    data["cells"][2]["execution_count"] = 7
    nb.write_text(json.dumps(data))
    assert reproduce.run_hash(nb, {"QUICK": True}) == h1
    data["cells"][2]["source"] = "print(2)"
    nb.write_text(json.dumps(data))
    assert reproduce.run_hash(nb, {"QUICK": True}) != h1


def test_environment_is_restored(first_run, nbset):
    out, _ = first_run
    before = {k: os.environ.get(k) for k in ("LABKIT_OUT", "LABKIT_NOTEBOOK")}
    reproduce.run(quick=True, out=out, notebooks=nbset, progress=False)
    assert {k: os.environ.get(k) for k in before} == before


def test_index_orders_figures_as_the_notebooks_and_links_their_sections(tmp_path):
    nbs = tmp_path / "nbs"
    nbs.mkdir()
    plot = (
        "import matplotlib.pyplot as plt\nfrom labkit import report\n"
        "fig, ax = plt.subplots()\nax.plot([1, 2], label='{label}')\nax.legend()\n"
        "ax.set_title('{title}')\nreport.savefig(fig, '{name}'{caption})"
    )
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    p = nbformat.v4.new_code_cell(PARAMS)
    p.metadata["tags"] = ["parameters"]
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Figures in order"),
        p,
        nbformat.v4.new_markdown_cell("## 1. The zebra section"),
        nbformat.v4.new_code_cell(
            plot.format(label="published (2019)", title="Zebra", name="zz-first", caption="")
        ),
        nbformat.v4.new_markdown_cell("The zebra figure shows *stripes*."),
        nbformat.v4.new_markdown_cell("## 2. The `aardvark` section"),
        nbformat.v4.new_code_cell(
            plot.format(
                label="ours (model)",
                title="Aardvark",
                name="aa-second",
                caption=", caption='Ours against the published figure.'",
            )
        ),
    ]
    nbformat.write(nb, nbs / "01-figs.ipynb")
    out = tmp_path / "out"
    rep = reproduce.run(quick=True, out=out, notebooks=nbs, progress=False)
    assert rep.ok, [r.error for r in rep.runs]
    page = (out / "index.html").read_text()
    first, second = page.index("figures/zz-first.png"), page.index("figures/aa-second.png")
    assert first < second  # the notebook's order, not the alphabet
    zebra = page[first:second]
    assert "<strong>Zebra</strong>" in zebra and "<em>stripes</em>" in zebra
    assert "Drawn: published (2019)." in zebra
    assert "html/01-figs.html#1.-The-zebra-section" in zebra
    aardvark = page[second:]
    assert "Ours against the published figure." in aardvark and "ours (model)" in aardvark
    assert "section “2. The aardvark section”" in aardvark
    html_page = (out / "html" / "01-figs.html").read_text()
    assert 'id="1.-The-zebra-section"' in html_page
