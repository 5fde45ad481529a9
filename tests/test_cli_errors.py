"""Bad command-line input and environment: one clear line and a status, never a traceback.

Each case runs ``python -m labkit.cli`` in a child process (a bad
LABKIT_EXT_PATH fails when the command first uses the model).  The checks of
``--cpu`` and ``LABKIT_DATA`` come before the benchmark measures anything, so
its results cannot be lost to them.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from childproc import describe, run_python

pytestmark = pytest.mark.slow  # make test-fast leaves it out

BENCH = ["-m", "labkit.cli", "bench", "copy", "--quick", "--repeats", "1", "--no-progress"]


def _run(args, **env):
    full = dict(os.environ, LABKIT_QUICK="1", **env)
    return run_python(args, env=full, timeout=300)


def _one_clear_line(proc, *words):
    err = proc.stderr.strip()
    assert proc.returncode not in (0,) and proc.returncode > 0, describe(proc)
    assert "Traceback" not in proc.stderr and len(err.splitlines()) == 1, describe(proc)
    for w in words:
        assert w in err, describe(proc)
    # nothing was measured: the benchmark's header line comes after the checks
    assert "labkit bench copy:" not in proc.stdout, describe(proc)


@pytest.mark.parametrize("cpu", ["999", "-1"])
def test_a_cpu_this_process_may_not_use(cpu):
    proc = _run([*BENCH, "--no-save", "--cpu", cpu])
    _one_clear_line(proc, "--cpu", f"cpu {cpu} ")
    assert proc.returncode == 2


def test_labkit_data_is_a_file(tmp_path):
    f = tmp_path / "a-file"
    f.write_text("x")
    proc = _run(BENCH, LABKIT_DATA=str(f))
    _one_clear_line(proc, "LABKIT_DATA=", "Not a directory")


@pytest.mark.parametrize("where", ["/proc/self", "/sys"])
def test_labkit_data_where_nothing_can_be_written(where):
    if os.access(where, os.W_OK) and Path(where, "results").exists():
        pytest.skip(f"{where} has a results directory here")
    proc = _run(BENCH, LABKIT_DATA=where)
    _one_clear_line(proc, f"LABKIT_DATA={where}", "cannot write results")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_labkit_data_is_a_read_only_folder(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        proc = _run(BENCH, LABKIT_DATA=str(ro))
    finally:
        ro.chmod(0o755)
    _one_clear_line(proc, "Permission denied")


@pytest.mark.parametrize("kind", ["missing", "directory", "not-a-module", "another-module"])
def test_a_bad_labkit_ext_path(tmp_path, kind):
    path = {
        "missing": tmp_path / "nope.so",
        "directory": tmp_path,
        "not-a-module": tmp_path / "text.so",
        "another-module": tmp_path / "_other.so",
    }[kind]
    if kind == "not-a-module":
        path.write_text("not an ELF file")
    if kind == "another-module":
        import _ctypes as other  # any extension module that is not labkit's

        path.write_bytes(Path(other.__file__).read_bytes())
    proc = _run(["-m", "labkit.cli", "info"], LABKIT_EXT_PATH=str(path))
    err = proc.stderr.strip()
    assert proc.returncode == 1, describe(proc)
    assert "Traceback" not in proc.stderr and len(err.splitlines()) == 1, describe(proc)
    assert err.startswith("labkit: LABKIT_EXT_PATH=") and str(path) in err


def test_a_library_user_gets_the_exception_at_first_use(tmp_path):
    """A script gets CoreLoadError (an ImportError) when it first uses the model, with
    sys.excepthook untouched: only the labkit command shortens it to one line."""
    code = (
        "import sys\n"
        "import labkit\n"
        "hook = sys.excepthook\n"
        "try:\n"
        "    labkit.IovIter\n"
        "except ImportError as exc:\n"
        "    print(type(exc).__name__, 'caught', sys.excepthook is hook is sys.__excepthook__)\n"
    )
    proc = _run(["-c", code], LABKIT_EXT_PATH=str(tmp_path / "nope.so"))
    assert proc.returncode == 0 and "CoreLoadError caught True" in proc.stdout, describe(proc)
