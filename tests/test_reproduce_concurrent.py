"""`labkit reproduce` running notebooks side by side (quick mode under a minute).

Clock-free: two notebooks prove they ran at once by waiting for a file the other writes
(the wait's limit only bounds a failure), and one after another by finding the state the
other wrote when it finished.
"""

from __future__ import annotations

import io
import json
import os
import signal

import pytest
from test_reproduce import make_notebook

from labkit import cli
from labkit.report import bundle
from labkit.run import lanes, reproduce, run_state
from labkit.run.progress import Planned, Progress

pytestmark = pytest.mark.slow  # make test-fast leaves it out

# A cell writes ``<out>/started-<name>`` (its kernel is running) and what its kernel sees.
SAY = (
    "import json, os, pathlib, time\n"
    "OUT = pathlib.Path(os.environ['LABKIT_OUT'])\n"
    "ME = os.environ['LABKIT_NOTEBOOK']\n"
    "(OUT / f'started-{ME}').write_text('')\n"
    "(OUT / f'env-{ME}.json').write_text(json.dumps(\n"
    "    {k: os.environ.get(k) for k in ('LABKIT_NOTEBOOK', 'LABKIT_OUT', 'LABKIT_QUICK')}\n"
    "    | {'cwd': os.getcwd()}))\n"
)


def wait_for(other: str) -> str:
    """A cell that waits (180 s at most, then fails) until notebook ``other`` has started
    (generous: a loaded CI machine starts kernels slowly; the limit only bounds a failure)."""
    return (
        f"for _ in range(1800):\n"
        f"    if (OUT / 'started-{other}').exists():\n"
        f"        break\n"
        f"    time.sleep(0.1)\n"
        f"else:\n"
        f"    raise RuntimeError('{other} never ran beside me')\n"
    )


def finished(other: str) -> str:
    """A cell that fails unless notebook ``other`` finished before this one started."""
    return (
        f"state = json.loads((OUT / '.state' / '{other.removesuffix('.ipynb')}.json')"
        f".read_text())\n"
        f"assert state['status'] == 'ran', state\n"
    )


RECORD = (
    "from labkit import report\n"
    "report.record('T9', f'row of {ME}', published=1, model=1, live=None, unit='x',\n"
    "              verdict='reproduced', reason='a test row')\n"
)


def rows_by_notebook(out):
    return {row["quantity"]: row["notebook"] for _, row in run_state.recorded_rows(out)}


def test_side_by_side_each_kernel_sees_its_own_environment(tmp_path):
    nbs, out = tmp_path / "nbs", tmp_path / "out"
    nbs.mkdir()
    make_notebook(nbs / "01-a.ipynb", SAY, wait_for("02-b.ipynb"), RECORD)
    make_notebook(nbs / "02-b.ipynb", SAY, wait_for("01-a.ipynb"), RECORD)
    make_notebook(nbs / "03-c.ipynb", SAY, RECORD)
    before, here = dict(os.environ), os.getcwd()
    rep = reproduce.run(quick=True, out=out, notebooks=nbs, progress=False, jobs=2)
    assert dict(os.environ) == before  # nothing of this process's environment was set
    assert os.getcwd() == here  # nor its working directory (papermill's cwd= changes it)
    assert [r.name for r in rep.runs] == ["01-a.ipynb", "02-b.ipynb", "03-c.ipynb"]
    assert [r.status for r in rep.runs] == ["ran"] * 3, [r.error for r in rep.runs]
    for name in ("01-a.ipynb", "02-b.ipynb", "03-c.ipynb"):
        seen = json.loads((out / f"env-{name}.json").read_text())
        assert seen == {
            "LABKIT_NOTEBOOK": name,
            "LABKIT_OUT": str(out),
            "LABKIT_QUICK": "1",
            "cwd": str(nbs.resolve()),  # each kernel starts in the notebooks' folder
        }
        assert bundle.load_state(out, name)["status"] == "ran"
    assert rows_by_notebook(out) == {
        f"row of {n}": n for n in ("01-a.ipynb", "02-b.ipynb", "03-c.ipynb")
    }
    assert list(rep.summary["quantity"]) == [
        f"row of {n}" for n in ("01-a.ipynb", "02-b.ipynb", "03-c.ipynb")
    ]


def test_a_failing_notebook_does_not_lose_the_one_beside_it(tmp_path):
    nbs, out = tmp_path / "nbs", tmp_path / "out"
    nbs.mkdir()
    make_notebook(nbs / "01-fails.ipynb", SAY, wait_for("02-ok.ipynb"), RECORD, "1 / 0")
    make_notebook(nbs / "02-ok.ipynb", SAY, wait_for("01-fails.ipynb"), RECORD)
    rep = reproduce.run(quick=True, out=out, notebooks=nbs, progress=False, jobs=2)
    assert [r.status for r in rep.runs] == ["failed", "ran"]
    assert "ZeroDivisionError" in rep.runs[0].error and rep.runs[0].cell == 5
    assert rep.exit_status == reproduce.EXIT_NOTEBOOK_FAILED
    assert bundle.load_state(out, "02-ok.ipynb")["status"] == "ran"
    assert (out / "notebooks" / "02-ok.ipynb").is_file()
    assert rows_by_notebook(out) == {"row of 02-ok.ipynb": "02-ok.ipynb"}  # not half of 01's


def test_one_job_runs_them_one_after_another(tmp_path):
    nbs, out = tmp_path / "nbs", tmp_path / "out"
    nbs.mkdir()
    make_notebook(nbs / "01-a.ipynb", SAY)
    make_notebook(nbs / "02-b.ipynb", SAY, finished("01-a.ipynb"))
    make_notebook(nbs / "03-c.ipynb", SAY, finished("02-b.ipynb"))
    rep = reproduce.run(quick=True, out=out, notebooks=nbs, progress=False, jobs=1)
    assert [r.status for r in rep.runs] == ["ran"] * 3, [r.error for r in rep.runs]


def test_notebooks_that_time_themselves_never_run_side_by_side(tmp_path):
    """A notebook using `claims` without a measuring phase measures time in its kernel:
    then one after another, whatever `jobs` says; after the phase, side by side."""
    nbs = tmp_path / "nbs"
    nbs.mkdir()
    make_notebook(nbs / "01-a.ipynb", SAY + "# (uses labkit.claims)")
    make_notebook(nbs / "02-b.ipynb", SAY, finished("01-a.ipynb"))
    rep = reproduce.run(quick=True, out=tmp_path / "o1", notebooks=nbs, progress=False, jobs=2)
    assert [r.status for r in rep.runs] == ["ran", "ran"], [r.error for r in rep.runs]
    make_notebook(nbs / "01-a.ipynb", SAY + "# (uses labkit.claims)", wait_for("02-b.ipynb"))
    make_notebook(nbs / "02-b.ipynb", SAY, wait_for("01-a.ipynb"))
    calls = []
    rep = reproduce.run(
        quick=True,
        out=tmp_path / "o2",
        notebooks=nbs,
        progress=False,
        jobs=2,
        measure=lambda out, quick: calls.append((out, quick)),
    )
    assert calls == [(tmp_path / "o2", True)]
    assert [r.status for r in rep.runs] == ["ran", "ran"], [r.error for r in rep.runs]


@pytest.mark.parametrize("jobs", [0, -1, 1.5, True])
def test_bad_jobs_is_a_clear_error(tmp_path, jobs):
    nbs = tmp_path / "nbs"
    nbs.mkdir()
    make_notebook(nbs / "01-a.ipynb", "x = 1")
    with pytest.raises(ValueError, match="jobs"):
        reproduce.run(quick=True, out=tmp_path / "out", notebooks=nbs, jobs=jobs)


def test_cli_jobs_zero_is_a_usage_error(tmp_path, capsys):
    nbs = tmp_path / "nbs"
    nbs.mkdir()
    make_notebook(nbs / "01-a.ipynb", "x = 1")
    args = ["reproduce", "--quick", "--out", str(tmp_path / "out"), "--notebooks", str(nbs)]
    with pytest.raises(SystemExit) as info:  # the one rule for numbers, checked by argparse
        cli.main([*args, "--jobs", "0"])
    assert info.value.code == reproduce.EXIT_USAGE
    assert "--jobs" in capsys.readouterr().err.splitlines()[-1]
    assert not (tmp_path / "out" / "notebooks").exists()


def test_default_jobs_follows_the_cpus(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    assert lanes.default_jobs() == 2
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
    assert lanes.default_jobs() == 1
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(64)), raising=False)
    assert lanes.default_jobs() == lanes.MAX_DEFAULT_JOBS


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_names_every_running_notebook(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    sections = [None, "1. Setup", "2. More"]
    planned = [
        Planned("01-a.ipynb", True, [1, 2], sections, {1: 1.0, 2: 2.0}),
        Planned("02-b.ipynb", True, [1, 2], sections, {1: 1.0, 2: 2.0}),
        Planned("03-c.ipynb", True, [1], sections[:2], {1: 1.0}),
    ]
    plain = io.StringIO()
    prog = Progress(planned, stream=plain, lanes=2)
    prog.notebook_start("01-a.ipynb")
    prog.notebook_start("02-b.ipynb")
    prog.cell_start(2, "01-a.ipynb")
    prog.cell_start(1, "02-b.ipynb")
    assert prog.cell_of("01-a.ipynb") == 2 and prog.cell_of("02-b.ipynb") == 1
    prog.notebook_done("02-b.ipynb", "ran", 2.0)
    prog.notebook_done("01-a.ipynb", "failed", 3.0)
    prog.close()
    assert plain.getvalue().splitlines() == [
        "[1/3] 01-a.ipynb: 2 code cells, about 0:03 last time",
        "[2/3] 02-b.ipynb: 2 code cells, about 0:03 last time",
        "[2/3] 02-b.ipynb: ran in 2.0 s",
        "[1/3] 01-a.ipynb: failed in 3.0 s",
    ]
    term = Terminal()
    prog = Progress(planned, stream=term, lanes=2)
    prog.notebook_start("01-a.ipynb")
    prog.notebook_start("02-b.ipynb")
    prog.cell_start(2, "01-a.ipynb")
    prog.cell_start(1, "02-b.ipynb")
    line = term.getvalue().split("\r")[-1]
    assert line.startswith("[1/3] 01-a  cell 2/2 | [2/3] 02-b  cell 1/2  (0:00 elapsed, about"), (
        line
    )
    prog.close()


def cells(*sources):
    return [{"cell_type": "code", "source": s} for s in sources]


def test_a_notebook_reading_the_rows_sees_them_as_one_after_another():
    """The reader waits for earlier recorders; later recorders wait for the reader."""
    plans = [
        cells("x = 1"),  # records nothing
        cells("from labkit import claims", "claims.run('R1.ns_per_page')"),  # records
        cells("report.summary_table(out)"),  # reads
        cells("y = 2"),
        cells("report.record('T', 'q', reason='r')"),  # records
        None,  # an unreadable notebook
    ]
    assert lanes.waits_for(plans) == [[], [], [1], [], [2], []]
    assert lanes.lanes(2, clock_inside=True) == 1 and lanes.lanes(2, clock_inside=False) == 2


def test_the_shipped_notebooks_order():
    """Notebook 00 reads this run's rows: the notebooks recording rows (02-04) start after
    it; 01 records none and runs beside it."""
    nbs = reproduce.find_notebooks(reproduce.notebooks_dir())
    plans = [run_state.read_notebook(nb)["cells"] for nb in nbs]
    names = [nb.name[:2] for nb in nbs]
    waits = {names[k]: [names[j] for j in w] for k, w in enumerate(lanes.waits_for(plans))}
    assert waits["00"] == [] and waits["01"] == []
    assert all(waits[n] == ["00"] for n in names[2:]), waits


CLOCKS = ("perf_counter", "monotonic", "time.time(", "time_ns", "timeit", "measure.runner")


def test_no_notebook_reads_a_clock_itself():
    """Side by side is sound because the notebooks time nothing themselves: every timed
    experiment a claim uses is one the measuring phase measures first, and no notebook's
    code calls a clock (a tripwire: a notebook that starts timing must change this)."""
    from labkit.claims import schedule
    from labkit.results import registry

    planned = {e.id for e in schedule.experiments() if schedule.timed(e)}
    checked = 0
    for cid in registry.ids():
        exp = registry.get(cid).experiment
        if exp is not None and schedule.timed(exp):
            assert exp.id in planned, f"{cid}: {exp.id} is timed but not in the measuring phase"
            checked += 1
    assert checked >= 5  # the live and model timings of R1, R2, R3
    for nb in reproduce.find_notebooks(reproduce.notebooks_dir()):
        code = lanes._code(run_state.read_notebook(nb)["cells"])
        found = [c for c in CLOCKS if c in code]
        assert not found, f"{nb.name} reads a clock itself: {found}"


def test_ctrl_c_stops_every_running_notebook_and_starts_no_other(tmp_path):
    """Two notebooks hang side by side, a third waits for a lane: one Ctrl-C stops both
    (interrupted, their states left for a rerun), the third never starts, exit 130."""
    from test_reproduce_faults import reproduce_cmd, start_and_wait

    hang = (
        "if os.environ.get('LABKIT_TEST_HANG'):\n"
        "    (OUT / f'hanging-{ME}').write_text('')\n"
        "    if (OUT / 'hanging-01-a.ipynb').exists() and (OUT / 'hanging-02-b.ipynb').exists():\n"
        "        pathlib.Path(os.environ['LABKIT_TEST_HANG']).write_text('both')\n"
        "    time.sleep(120)\n"
    )
    nbs, out = tmp_path / "nbs", tmp_path / "out"
    nbs.mkdir()
    make_notebook(nbs / "01-a.ipynb", SAY, wait_for("02-b.ipynb"), hang)
    make_notebook(nbs / "02-b.ipynb", SAY, wait_for("01-a.ipynb"), hang)
    make_notebook(nbs / "03-c.ipynb", SAY)
    proc = start_and_wait(reproduce_cmd(nbs, out, "--jobs", "2"), tmp_path / "hang")
    os.kill(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "interrupted in 01-a" in lines[0], err
    assert "0 completed notebook(s) kept" in lines[0]
    for name in ("01-a.ipynb", "02-b.ipynb"):
        assert bundle.load_state(out, name)["status"] in ("running", "interrupted")
    assert not (out / "started-03-c.ipynb").exists()  # never started
    assert not list((out / "notebooks").glob(".*"))  # no partial file left behind
    rep = reproduce.run(quick=True, out=out, notebooks=nbs, progress=False, jobs=2)
    assert [r.status for r in rep.runs] == ["ran"] * 3, [r.error for r in rep.runs]


def test_a_bug_around_one_notebook_does_not_lose_the_others(tmp_path, monkeypatch):
    """An exception outside the notebook's own run (here: the progress display) fails
    that notebook, named, and the others still run."""
    nbs = tmp_path / "nbs"
    nbs.mkdir()
    for name in ("01-a", "02-b", "03-c"):
        make_notebook(nbs / f"{name}.ipynb", "x = 1")
    real = Progress.notebook_start

    def broken(self, name):
        if name == "02-b.ipynb":
            raise RuntimeError("a bug")
        real(self, name)

    monkeypatch.setattr(Progress, "notebook_start", broken)
    rep = reproduce.run(quick=True, out=tmp_path / "out", notebooks=nbs, progress=False, jobs=2)
    assert [r.status for r in rep.runs] == ["ran", "failed", "ran"]
    assert "labkit reproduce itself failed: RuntimeError: a bug" in rep.runs[1].error
    assert rep.exit_status == reproduce.EXIT_NOTEBOOK_FAILED
