"""`labkit reproduce` under faults: kills, SIGINT, dead kernels, bad outputs, bad notebooks.

Each test starts from a tiny notebook set in a temporary folder (see test_reproduce.py).
"""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from test_reproduce import make_notebook

from labkit import cli
from labkit.report import bundle
from labkit.run import reproduce, run_state

pytestmark = pytest.mark.slow  # make test-fast leaves it out

ROOT = Path(__file__).resolve().parents[1]
# Notebooks may run side by side: the hang waits until 01-first has finished (its state
# says "ran"), so that what a kill or Ctrl-C finds is the same in either order.
HANG = (
    "import os, pathlib, time\n"
    "if os.environ.get('LABKIT_TEST_HANG'):\n"
    "    first = pathlib.Path(os.environ['LABKIT_OUT'], '.state', '01-first.json')\n"
    "    for _ in range(600):\n"
    '        if first.is_file() and \'"status": "ran"\' in first.read_text():\n'
    "            break\n"
    "        time.sleep(0.1)\n"
    "    pathlib.Path(os.environ['LABKIT_TEST_HANG']).write_text('started')\n"
    "    time.sleep(120)"
)


def two_notebooks(folder: Path, second: tuple[str, ...] = ("y = 2", HANG, "z = 3")) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    make_notebook(folder / "01-first.ipynb", "x = 1")
    make_notebook(folder / "02-second.ipynb", *second)
    return folder


def reproduce_cmd(nbs: Path, out: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "labkit.cli",
        "reproduce",
        "--quick",
        "--no-progress",
        "--out",
        str(out),
        "--notebooks",
        str(nbs),
        *extra,
    ]


def start_and_wait(cmd: list[str], marker: Path, timeout: float = 90) -> subprocess.Popen:
    """Start ``cmd`` in its own session with the hang switched on; wait until it hangs."""
    env = dict(os.environ, LABKIT_TEST_HANG=str(marker), PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(
        cmd,
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    deadline = time.monotonic() + timeout
    while not marker.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            out, err = proc.communicate()
            pytest.fail(f"the hanging cell never started: rc={proc.returncode}\n{out}\n{err}")
        time.sleep(0.2)
    return proc


def statuses(rep: reproduce.Reproduction) -> list[str]:
    return [r.status for r in rep.runs]


def test_killed_run_leaves_a_state_that_a_rerun_does_not_trust(tmp_path):
    """A --force run killed inside notebook 02 must not leave 02 'ran'."""
    nbs, out = two_notebooks(tmp_path / "nbs"), tmp_path / "out"
    first = reproduce.run(quick=True, out=out, notebooks=nbs, progress=False)
    assert statuses(first) == ["ran", "ran"]
    good = (out / "notebooks" / "02-second.ipynb").read_bytes()
    proc = start_and_wait(reproduce_cmd(nbs, out, "--force"), tmp_path / "hang")
    os.killpg(proc.pid, signal.SIGKILL)  # the command and its kernel, as `kill -9` would
    proc.communicate()
    state = bundle.load_state(out, "02-second.ipynb")
    assert state["status"] == "running"
    # the executed copy of the complete run was not replaced by the half-executed one
    assert (out / "notebooks" / "02-second.ipynb").read_bytes() == good
    again = reproduce.run(quick=True, out=out, notebooks=nbs, progress=False)
    assert statuses(again) == ["up to date", "ran"]
    assert "did not finish" in again.runs[1].reason
    assert bundle.load_state(out, "02-second.ipynb")["status"] == "ran"
    assert not list((out / "notebooks").glob(".*"))  # no partial file left behind


def test_rerun_detects_an_incomplete_or_replaced_executed_copy(tmp_path):
    nbs, out = two_notebooks(tmp_path / "nbs", ("y = 2",)), tmp_path / "out"
    reproduce.run(quick=True, out=out, notebooks=nbs, progress=False, html_report=False)
    executed = out / "notebooks" / "02-second.ipynb"
    nb = nbformat.read(executed, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.execution_count = None
    nbformat.write(nb, executed)
    rep = reproduce.run(quick=True, out=out, notebooks=nbs, progress=False, html_report=False)
    assert statuses(rep) == ["up to date", "ran"]
    assert "not the one its last run wrote" in rep.runs[1].reason


def test_sigint_ends_with_one_line_and_a_resumable_state(tmp_path):
    """Ctrl-C (to the command alone, then to the whole process group, as a terminal does)."""
    nbs, out = two_notebooks(tmp_path / "nbs"), tmp_path / "out"
    for k, to_group in enumerate((False, True)):
        marker = tmp_path / f"hang{k}"
        proc = start_and_wait(reproduce_cmd(nbs, out, "--force"), marker)
        if to_group:
            os.killpg(proc.pid, signal.SIGINT)
        else:
            os.kill(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err
        assert "Traceback" not in err
        lines = [line for line in err.splitlines() if line.strip()]
        assert len(lines) == 1 and "interrupted" in lines[0] and "02-second" in lines[0], err
        assert "run the same command again" in lines[0]
        assert bundle.load_state(out, "01-first.ipynb")["status"] == "ran"
        assert bundle.load_state(out, "02-second.ipynb")["status"] in ("running", "interrupted")
    rep = reproduce.run(quick=True, out=out, notebooks=nbs, progress=False)
    assert statuses(rep) == ["up to date", "ran"]


def test_dead_kernel_names_the_last_cell_that_started(tmp_path, capsys):
    """Not 'before any cell ran' when cells had run."""
    nbs = tmp_path / "nbs"
    nbs.mkdir()
    make_notebook(
        nbs / "01-dies.ipynb",
        "a = 1",
        "b = 2",
        "# NBVAL_IGNORE_OUTPUT\nimport os, signal\nos.kill(os.getpid(), signal.SIGKILL)",
        "c = 3",
    )
    make_notebook(nbs / "02-after.ipynb", "d = 4")
    rc = cli.main(
        ["reproduce", "--quick", "--no-progress", "--out", str(tmp_path / "o"), "--notebooks"]
        + [str(nbs)]
    )
    err = capsys.readouterr().err
    assert rc == reproduce.EXIT_NOTEBOOK_FAILED
    line = next(line for line in err.splitlines() if "01-dies" in line)
    assert "during cell 4" in line and "the kernel died" in line
    assert "`import os, signal`" in line  # the first line of code, not the NBVAL comment
    assert "before any cell" not in err
    state = bundle.load_state(tmp_path / "o", "02-after.ipynb")
    assert state["status"] == "ran"  # the other notebooks still ran


def test_failure_quotes_the_first_line_of_code(tmp_path, capsys):
    nbs = tmp_path / "nbs"
    nbs.mkdir()
    make_notebook(nbs / "01-x.ipynb", "# NBVAL_IGNORE_OUTPUT\n\n# a comment\nvalue = 1 / 0")
    out = str(tmp_path / "o")
    rc = cli.main(["reproduce", "--quick", "--no-progress", "--out", out, "--notebooks", str(nbs)])
    err = capsys.readouterr().err
    assert rc == 1 and "`value = 1 / 0`" in err and "NBVAL" not in err


def test_unreadable_notebook_is_named_and_the_others_run(tmp_path, capsys):
    nbs = tmp_path / "nbs"
    nbs.mkdir()
    (nbs / "01-broken.ipynb").write_text('{"cells": [ not json')
    make_notebook(nbs / "02-fine.ipynb", "x = 1")
    out = str(tmp_path / "o")
    rc = cli.main(["reproduce", "--quick", "--no-progress", "--out", out, "--notebooks", str(nbs)])
    captured = capsys.readouterr()
    assert rc == reproduce.EXIT_NOTEBOOK_FAILED
    assert "01-broken.ipynb" in captured.err and "not a valid notebook" in captured.err
    assert "Traceback" not in captured.err
    assert "ran          02-fine.ipynb" in captured.out


@pytest.fixture
def one_notebook(tmp_path):
    nbs = tmp_path / "nbs"
    nbs.mkdir()
    make_notebook(nbs / "01-x.ipynb", "x = 1")
    return nbs


def run_cli(nbs: Path, out: Path | str, capsys) -> tuple[int, str]:
    rc = cli.main(
        ["reproduce", "--quick", "--no-progress", "--out", str(out), "--notebooks"] + [str(nbs)]
    )
    return rc, capsys.readouterr().err


def one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_out_that_is_a_file_is_refused_before_anything_runs(one_notebook, tmp_path, capsys):
    target = tmp_path / "a-file"
    target.write_text("mine")
    rc, err = run_cli(one_notebook, target, capsys)
    assert rc == reproduce.EXIT_USAGE
    assert (
        one_line(err)
        == f"labkit reproduce: cannot write {target}: it exists and is not a directory"
    )
    assert target.read_text() == "mine"


def test_out_that_cannot_be_created(one_notebook, capsys):
    rc, err = run_cli(one_notebook, "/proc/self/labkit-out", capsys)
    assert rc == reproduce.EXIT_USAGE
    line = one_line(err)
    assert line.startswith("labkit reproduce: cannot write /proc/self/labkit-out")


def test_read_only_out(one_notebook, tmp_path, capsys, monkeypatch):
    out = tmp_path / "ro"
    out.mkdir()
    if os.geteuid() == 0:  # root writes through mode bits: make the probe see a read-only fs

        def refuse(*args, **kwargs):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(out / ".state"))

        monkeypatch.setattr(run_state.tempfile, "mkstemp", refuse)
    else:
        out.chmod(0o500)
    rc, err = run_cli(one_notebook, out, capsys)
    assert rc == reproduce.EXIT_USAGE
    line = one_line(err)
    assert str(out) in line and ("Read-only" in line or "Permission denied" in line)
    assert not (out / ".state" / "01-x.json").exists()


def test_out_without_free_space_is_refused_first(one_notebook, tmp_path, capsys, monkeypatch):
    class Usage:
        total, used, free = 1 << 30, (1 << 30) - (1 << 20), 1 << 20

    monkeypatch.setattr(run_state.shutil, "disk_usage", lambda path: Usage)
    rc, err = run_cli(one_notebook, tmp_path / "o", capsys)
    assert rc == reproduce.EXIT_USAGE
    assert "MB free" in one_line(err) and str(tmp_path / "o") in err
    assert not (tmp_path / "o" / "notebooks" / "01-x.ipynb").exists()


def test_disk_full_during_a_notebook_names_the_path_and_the_others_run(
    tmp_path, capsys, monkeypatch
):
    """ENOSPC while writing one notebook's outputs."""
    nbs, out = two_notebooks(tmp_path / "nbs", ("y = 2",)), tmp_path / "out"
    real = reproduce._html

    def full_disk(nb_path, dest):
        if "01-first" in str(dest):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(dest))
        real(nb_path, dest)

    monkeypatch.setattr(reproduce, "_html", full_disk)
    rc, err = run_cli(nbs, out, capsys)
    assert rc == reproduce.EXIT_OUTPUT_ERROR
    line = one_line(err)
    page = out.resolve() / "html" / "01-first.html"
    assert line == (
        f"labkit reproduce: OUTPUT ERROR 01-first.ipynb: cannot write {page}: "
        "No space left on device"
    )
    assert bundle.load_state(out, "01-first.ipynb")["status"] == "running"  # not trusted
    assert bundle.load_state(out, "02-second.ipynb")["status"] == "ran"
    leftovers = [p for p in out.rglob(".*") if p.is_file() and p.parent.name != ".state"]
    assert leftovers == []
    monkeypatch.setattr(reproduce, "_html", real)
    rep = reproduce.run(quick=True, out=out, notebooks=nbs, progress=False)
    assert statuses(rep) == ["ran", "up to date"] and rep.exit_status == 0


def test_rerun_keeps_the_report_of_the_run_that_produced_the_results(tmp_path):
    nbs, out = two_notebooks(tmp_path / "nbs", ("y = 2",)), tmp_path / "out"
    first = reproduce.run(quick=True, out=out, notebooks=nbs, progress=False)
    produced = [r.finished for r in first.runs]
    seconds = [r.seconds for r in first.runs]
    again = reproduce.run(quick=True, out=out, notebooks=nbs, progress=False)
    assert statuses(again) == ["up to date", "up to date"]
    assert [r.finished for r in again.runs] == produced
    assert [r.seconds for r in again.runs] == seconds
    page = (out / "index.html").read_text()
    assert "every notebook was up to date, nothing was rerun" in page
    assert produced[0][:10] in page and "up to date" in page
    assert all(r.code and r.code["labkit"] for r in again.runs)


def test_results_go_to_the_output_folder(tmp_path):
    """Result tables a notebook saves land in <out>/results, not in a data/ folder."""
    nbs = tmp_path / "nbs"
    nbs.mkdir()
    make_notebook(
        nbs / "01-saves.ipynb",
        "import pandas as pd\nfrom labkit.measure import results\n"
        "p = results.save('t-exp', pd.DataFrame({'a': [1]}), env={'hostname': 'h'})\n"
        "print(p.parent.parent.parent.name)",
    )
    out = tmp_path / "out"
    rep = reproduce.run(quick=True, out=out, notebooks=nbs, progress=False, html_report=False)
    assert rep.ok
    saved = list((out / "results" / "t-exp").glob("*.csv"))
    assert len(saved) == 1
    assert json.loads(saved[0].with_suffix(".json").read_text())["env"]["hostname"] == "h"
    assert not (ROOT / "data" / "results" / "t-exp").exists()
    assert not (ROOT / "labkit-results" / "results" / "t-exp").exists()
