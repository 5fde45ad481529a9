"""Progress lines: labkit reproduce's (cells inside each notebook, the section, time left), and
the one line of the long kernel builds and boots (labkit kernel, labkit kernel vm)."""

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


# ---- the progress line of long builds and boots (labkit kernel, labkit kernel vm) ----------


def test_the_progress_line_counts_steps_on_stderr_and_prints_lines_above_it(capsys):
    from labkit._progress import progress_line

    with progress_line("building", 2, "kernels") as line:
        line.step("6.1 (base)")
        line.say("6.1 (base): built")
        line.done()
        line.step("6.1+v1 (base)")
        line.done()
    out, err = capsys.readouterr()
    assert out == "6.1 (base): built\n"
    assert "building: 0/2 kernels" in err and "building: 2/2 kernels" in err
    assert "6.1 (base)" in err and "6.1+v1 (base)" in err


def test_kernel_vm_build_shows_the_progress_line(monkeypatch, capsys, tmp_path):
    from labkit.cli import main
    from labkit.kernelvm import build

    def fake_build(era, config, *, src=None, force=False, log=None):  # a cached kernel
        log(f"{era} ({config}): cached")
        return build.Kernel(era, config, tmp_path / era, {"release": f"{era}-labkit"})

    monkeypatch.setattr(build, "build", fake_build)
    assert main(["kernel", "vm", "build", "--era", "6.1", "--config", "base"]) == 0
    out, err = capsys.readouterr()
    assert "labkit kernel vm build: 1/1 kernels" in err and "6.1 (base)" in err
    assert out.splitlines() == [
        "6.1 (base): cached",
        f"6.1 (base): 6.1-labkit -> {tmp_path / '6.1'}",
    ]


def test_kernel_vm_run_counts_builds_and_boots_on_the_progress_line(monkeypatch, capsys, tmp_path):
    from labkit.cli import main
    from labkit.kernelvm import build, guest, qemu

    booted = guest.parse(SAMPLE_BOOT)
    monkeypatch.setattr(
        build, "build", lambda era, config, **_kw: build.Kernel(era, config, tmp_path, {})
    )
    monkeypatch.setattr(guest, "initramfs", lambda _root: tmp_path / "initrd")
    monkeypatch.setattr(qemu, "boot", lambda *_a, **_kw: (booted, SAMPLE_BOOT, 1.0))
    args = ["kernel", "vm", "run", "--era", "6.1", "--group", "import", "--boots", "2"]
    assert main(args) == 0
    out, err = capsys.readouterr()
    assert "labkit kernel vm run: 3/3 builds and boots" in err  # one build, two boots
    assert "booting 6.1 base max #" in err
    assert "boot 6.1 base max #1: 1 s" in out


def test_kernel_boot_shows_the_progress_line(monkeypatch, capsys):
    import pandas as pd

    from labkit.cli import main
    from labkit.kernelsrc import boot, fingerprint

    df = pd.DataFrame(
        {"case": [fingerprint.FINGERPRINT] * 2, "where": ["uml", "host"], "result": ["1", "1"]}
    )
    extra = {"xstate_shim": False, "uml_release": "6.1.0", "uml_boot_seconds": 2.0}
    monkeypatch.setattr(boot, "measure", lambda **_kw: (df, extra))
    monkeypatch.setattr(fingerprint, "side_by_side", lambda d, model: d)
    assert main(["kernel", "boot"]) == 0
    out, err = capsys.readouterr()
    assert "labkit kernel boot: 1/1 boots" in err and "user-mode-linux 6.1" in err
    assert "booted in 2.0 s" in out


def test_the_oracle_build_of_kernel_diff_uses_the_same_line(monkeypatch, capsys):
    from labkit.kernelsrc import build
    from labkit.kernelsrc.cli import _build_with_progress

    built = []
    monkeypatch.setattr(build, "cached", lambda _era: None)
    monkeypatch.setattr(build, "build", lambda era, src=None: built.append(era))
    _build_with_progress(None)
    err = capsys.readouterr().err
    n = len(build.ERAS)
    assert sorted(built) == sorted(build.ERAS)
    assert f"building the kernel oracle: {n}/{n} eras" in err


SAMPLE_BOOT = """\
LABKIT-VM begin
LABKIT-VM uname 6.1.192
LABKIT-VM cpu 1 0 QEMU_TCG_CPU_version_2.5+
LABKIT-VM import IOVEC -1 14
LABKIT-VM row readv1 4096 1000 12 4842007 6 4842007 4842928 4842007
LABKIT-VM end
"""
