"""`labkit reproduce` against a hostile or confused user .

Planted links in the output folder, the source folder as the output, a second run
into the same folder, a cell timeout, and a summary that must list exactly the rows
the run's notebooks recorded.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from test_reproduce import make_notebook
from test_reproduce_faults import one_line, run_cli

from labkit import cli
from labkit.report import bundle
from labkit.run import reproduce, run_state

pytestmark = pytest.mark.slow  # make test-fast leaves it out

RECORD = (
    "from labkit import report\n"
    "report.record('T9', {q!r}, published=1, model=1, unit='x', verdict='reproduced', "
    "reason='a test row')"
)


@pytest.fixture
def nbs(tmp_path):
    folder = tmp_path / "nbs"
    folder.mkdir()
    make_notebook(folder / "01-a.ipynb", "x = 1")
    return folder


def test_planted_kernel_log_link_is_refused_and_its_target_kept(nbs, tmp_path, capsys):
    """Item 1: <out>/.state/01-a.kernel.log -> ~/precious.txt was truncated and written."""
    precious = tmp_path / "precious.txt"
    precious.write_text("data\n" * 100)
    out = tmp_path / "out"
    (out / ".state").mkdir(parents=True)
    (out / ".state" / "01-a.kernel.log").symlink_to(precious)
    rc, err = run_cli(nbs, out, capsys)
    assert precious.read_text() == "data\n" * 100
    assert rc == reproduce.EXIT_OUTPUT_ERROR
    assert "refusing to write through" in err and "01-a.kernel.log" in err
    assert bundle.load_state(out, "01-a.ipynb").get("status") != "ran"


@pytest.mark.parametrize("sub", ["summary", "notebooks", ".state"])
def test_planted_folder_link_is_refused_before_anything_runs(nbs, tmp_path, capsys, sub):
    """Item 1: a planted <out>/summary -> DIR link received tour--q.json."""
    victim = tmp_path / "victim"
    victim.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    (out / sub).symlink_to(victim)
    rc, err = run_cli(nbs, out, capsys)
    assert rc == reproduce.EXIT_USAGE
    line = one_line(err)
    assert "refusing to write through" in line and str(out / sub) in line
    assert list(victim.iterdir()) == []


def test_notebooks_command_refuses_a_dangling_link(nbs, tmp_path, capsys, monkeypatch):
    """Item 1: `labkit notebooks DIR` wrote through a dangling link in DIR."""
    monkeypatch.setenv("LABKIT_NOTEBOOKS", str(nbs))
    dest = tmp_path / "mine"
    dest.mkdir()
    (dest / "01-a.ipynb").symlink_to(tmp_path / "elsewhere.ipynb")
    rc = cli.main(["notebooks", str(dest), "--force"])
    err = capsys.readouterr().err
    assert rc == 2
    assert "refusing to write through" in one_line(err) and "01-a.ipynb" in err
    assert not (tmp_path / "elsewhere.ipynb").exists()
    clean = tmp_path / "clean"
    assert cli.main(["notebooks", str(clean)]) == 0
    assert (clean / "01-a.ipynb").read_bytes() == (nbs / "01-a.ipynb").read_bytes()


def test_cell_timeout_is_a_timeout_and_resumable(tmp_path, capsys):
    """Item 3: a cell timeout was reported as OUTPUT ERROR ... CellTimeoutError, exit 3."""
    nbs = tmp_path / "nbs"
    nbs.mkdir()
    make_notebook(nbs / "00-sleepy.ipynb", "import time\ntime.sleep(60)")
    out = tmp_path / "out"
    rc = cli.main(
        ["reproduce", "--quick", "--no-progress", "--out", str(out), "--notebooks", str(nbs)]
        + ["--timeout", "2"]
    )
    err = capsys.readouterr().err
    assert rc == reproduce.EXIT_NOTEBOOK_FAILED, err
    line = one_line(err)
    assert "OUTPUT ERROR" not in line and "FAILED 00-sleepy.ipynb: cell 2" in line
    assert "`import time`" in line and "2 s" in line and "--timeout" in line
    state = bundle.load_state(out, "00-sleepy.ipynb")
    assert state["status"] == "failed" and "timeout" in state["error"].lower()
    assert (out / "notebooks" / "00-sleepy.ipynb").is_file()  # the executed copy is kept
    ok, why = run_state.up_to_date(state, state["hash"], out / "notebooks" / "x", None)
    assert not ok and "failed" in why  # a rerun runs it again


@pytest.mark.parametrize("where", ["inside", "same"])
def test_out_containing_the_source_notebooks_is_refused(tmp_path, capsys, where):
    """Item 4: --out W --notebooks W/notebooks overwrote the user's source notebooks."""
    work = tmp_path / "W"
    src = work / "notebooks" if where == "inside" else work
    src.mkdir(parents=True)
    make_notebook(src / "01-a.ipynb", "x = 1")
    before = (src / "01-a.ipynb").read_bytes()
    rc, err = run_cli(src, work, capsys)
    assert rc == reproduce.EXIT_USAGE
    line = one_line(err)
    assert "notebooks folder" in line and str(src.resolve()) in line
    assert (src / "01-a.ipynb").read_bytes() == before
    assert not (work / ".state").exists()


def test_second_reproduction_into_a_locked_out_says_who_and_exits_2(nbs, tmp_path, capsys):
    """Item 6: two reproductions into one --out both ran everything and both exited 0."""
    out = tmp_path / "out"
    with run_state.out_lock(out):
        rc, err = run_cli(nbs, out, capsys)
    assert rc == reproduce.EXIT_USAGE
    line = one_line(err)
    assert f"pid {os.getpid()}" in line and "in use by another run" in line
    assert not (out / ".state" / "01-a.json").exists()


def test_the_lock_is_held_while_the_notebooks_run(tmp_path):
    nbs = tmp_path / "nbs"
    nbs.mkdir()
    make_notebook(
        nbs / "01-probe.ipynb",
        "import os, pathlib\nfrom labkit.run import run_state\n"
        "held = not run_state.out_lock(pathlib.Path(os.environ['LABKIT_OUT'])).try_acquire()\n"
        "assert held, 'the output folder was not locked'",
    )
    rep = reproduce.run(quick=True, out=tmp_path / "out", notebooks=nbs, progress=False)
    assert rep.ok, [r.describe_failure() for r in rep.failed]
    with run_state.out_lock(tmp_path / "out"):  # and released at the end
        pass


def _quantities(rep: reproduce.Reproduction) -> list[str]:
    return list(rep.summary["quantity"])


def test_summary_lists_exactly_the_rows_of_this_run(tmp_path):
    """Item 2: an edited notebook's old quantity and a failed notebook's rows stayed."""
    nbs, out = tmp_path / "nbs", tmp_path / "out"
    nbs.mkdir()
    make_notebook(nbs / "01-a.ipynb", RECORD.format(q="old quantity"))
    make_notebook(nbs / "02-b.ipynb", RECORD.format(q="b quantity"))
    first = reproduce.run(quick=True, out=out, notebooks=nbs, progress=False, html_report=False)
    assert first.ok and _quantities(first) == ["b quantity", "old quantity"]
    assert set(first.summary["origin"]) == {"this run"}

    make_notebook(nbs / "01-a.ipynb", RECORD.format(q="new quantity"))  # edited
    make_notebook(nbs / "02-b.ipynb", RECORD.format(q="b quantity"), "1 / 0")  # now fails
    again = reproduce.run(quick=True, out=out, notebooks=nbs, progress=False, html_report=False)
    assert [r.status for r in again.runs] == ["ran", "failed"]
    rows = again.summary.set_index("quantity")
    assert "old quantity" not in rows.index and "b quantity" not in rows.index
    assert rows.loc["new quantity", "origin"] == "this run"
    failed = again.summary[again.summary["notebook"] == "02-b.ipynb"]
    assert len(failed) == 1 and failed["verdict"].iloc[0] == "notebook failed"
    assert "ZeroDivisionError" in failed["reason"].iloc[0]
    assert "ZeroDivisionError" in (out / "summary.csv").read_text()

    make_notebook(nbs / "02-b.ipynb", RECORD.format(q="b quantity"))  # fixed again
    third = reproduce.run(quick=True, out=out, notebooks=nbs, progress=False, html_report=False)
    assert [r.status for r in third.runs] == ["up to date", "ran"]
    rows = third.summary.set_index("quantity")
    assert sorted(rows.index) == ["b quantity", "new quantity"]
    assert rows.loc["b quantity", "origin"] == "this run"
    assert rows.loc["new quantity", "origin"].startswith("carried over (up to date, run of ")
    assert rows.loc["new quantity", "reason"].startswith("[carried over (up to date, run of ")
    assert "[carried over" in (out / "summary.txt").read_text()


def test_rows_recorded_outside_the_run_are_not_reported(nbs, tmp_path):
    out = tmp_path / "out"
    stray = out / "summary" / "x--stray.json"
    stray.parent.mkdir(parents=True)
    stray.write_text('{"result": "X", "quantity": "stray", "notebook": ""}')
    rep = reproduce.run(quick=True, out=out, notebooks=nbs, progress=False, html_report=False)
    assert rep.ok and "stray" not in list(rep.summary["quantity"])


def test_the_state_survives_a_write_error(tmp_path, monkeypatch):
    """Item 3: a write error is a write error, and the state is resumable after it."""
    nbs, out = tmp_path / "nbs", tmp_path / "out"
    nbs.mkdir()
    make_notebook(nbs / "01-a.ipynb", "x = 1")
    real = run_state.write_state
    calls = {"n": 0}

    def fail_second(out_, name, state):
        calls["n"] += 1
        if calls["n"] == 2:
            raise run_state.OutputError(Path(out_) / ".state", "No space left on device")
        real(out_, name, state)

    monkeypatch.setattr(reproduce, "write_state", fail_second)
    rep = reproduce.run(quick=True, out=out, notebooks=nbs, progress=False, html_report=False)
    assert rep.runs[0].status == "output error" and "No space left" in rep.runs[0].error
    monkeypatch.setattr(reproduce, "write_state", real)
    rep = reproduce.run(quick=True, out=out, notebooks=nbs, progress=False, html_report=False)
    assert rep.runs[0].status == "ran"


def test_savefig_writes_no_figure_through_a_planted_link(tmp_path, monkeypatch):
    """Item 1: savefig drew into the predictable <out>/figures/.<name>.tmp.png first."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from labkit.report import summary

    precious = tmp_path / "precious.txt"
    precious.write_text("mine\n")
    out = tmp_path / "out"
    (out / "figures").mkdir(parents=True)
    for name in (".fig.tmp.png", ".fig.tmp.svg", "fig.png"):
        (out / "figures" / name).symlink_to(precious)
    monkeypatch.setenv("LABKIT_OUT", str(out))
    fig, ax = plt.subplots()
    ax.plot([1, 2], [3, 4])
    with pytest.raises(OSError, match="refusing to write through"):
        summary.savefig(fig, "fig")
    plt.close(fig)
    assert precious.read_text() == "mine\n"
