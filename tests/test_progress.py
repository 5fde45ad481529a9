"""labkit reproduce's progress: cells inside each notebook, the section, time left."""

from __future__ import annotations

import io

import pytest

from labkit.run.progress import Planned, Progress, estimates_from_state, format_seconds


@pytest.fixture(autouse=True)
def wide_terminal(monkeypatch):
    """The status line is cut to the width of the terminal pytest runs in (COLUMNS first):
    80 columns in an xdist worker or a small window would cut the lines checked here."""
    monkeypatch.setenv("COLUMNS", "200")


class Terminal(io.StringIO):
    def isatty(self):
        return True


def planned(estimate=True):
    sections = [None, "1. Setup", "1. Setup", "2. The seek", "2. The seek"]
    est = {1: 2.0, 2: 3.0, 4: 30.0} if estimate else {}
    return [
        Planned("01-a.ipynb", False, [1], sections[:2], {1: 1.0}),
        Planned("02-b.ipynb", True, [1, 2, 4], sections, est, 3.0 if estimate else 0.0, 1.0),
    ]


def test_plain_stream_gets_one_line_per_notebook_start_and_end():
    out = io.StringIO()
    prog = Progress(planned(), stream=out)
    prog.notebook_start("02-b.ipynb")
    for k in (1, 2, 4):
        prog.cell_start(k)
    prog.notebook_done("02-b.ipynb", "ran", 36.2)
    prog.close()
    assert out.getvalue().splitlines() == [
        "[2/2] 02-b.ipynb: 3 code cells, about 0:39 last time",
        "[2/2] 02-b.ipynb: ran in 36.2 s",
    ]


def test_terminal_line_names_the_cell_the_section_and_the_time_left():
    out = Terminal()
    prog = Progress(planned(), stream=out)
    prog.notebook_start("02-b.ipynb")
    prog.cell_start(1)
    prog.cell_start(4)
    line = out.getvalue().split("\r")[-1]
    assert line.startswith("[2/2] 02-b  cell 3/3  2. The seek  (0:00 elapsed, about 0:")
    assert "left (from the last run)" in line
    prog.close()
    assert out.getvalue().endswith("\r")  # the status line is cleared at the end


def test_no_estimate_on_a_first_run():
    out = Terminal()
    prog = Progress(planned(estimate=False), stream=out)
    prog.notebook_start("02-b.ipynb")
    prog.cell_start(2)
    assert "no estimate yet (first run)" in out.getvalue()
    assert "cell 2/3  1. Setup" in out.getvalue()
    prog.close()


def test_disabled_prints_nothing():
    out = Terminal()
    prog = Progress(planned(), stream=out, enabled=False)
    prog.notebook_start("02-b.ipynb")
    prog.cell_start(1)
    prog.notebook_done("02-b.ipynb", "ran", 1.0)
    prog.close()
    assert out.getvalue() == ""


def test_estimates_come_from_a_finished_run_in_the_same_mode():
    state = {"status": "ran", "quick": True, "cell_seconds": {"1": 2.5, "4": 1}, "seconds": 6}
    state["html_seconds"] = 1.5
    assert estimates_from_state(state, quick=True) == ({1: 2.5, 4: 1.0}, 2.5, 1.5)
    assert estimates_from_state(state, quick=False) == ({}, 0.0, 0.0)
    none = ({}, 0.0, 0.0)
    assert estimates_from_state({"status": "running", "quick": True}, quick=True) == none
    assert format_seconds(65) == "1:05" and format_seconds(3723) == "1:02:03"
