"""Bad input never crashes: the hostile-argument driver runs in a subprocess.

labkit/testing/bad_input_driver.py throws arbitrary integers (negative, huge, 2**64,
2**100), wrong types and unmapped addresses at the public API.  It runs in a
child process so that a segfault or an abort in the C core fails this test
(with the signal named) instead of taking pytest down; inside, only OSError,
ValueError (IterMisuseError included) and TypeError may come out.
"""

from __future__ import annotations

import signal
import subprocess
import sys

from childproc import describe, run_python

from labkit.config import quick_mode

DRIVER = ["-m", "labkit.testing.bad_input_driver"]


def run_driver(examples: int, timeout: float = 120) -> subprocess.CompletedProcess:
    return run_python([*DRIVER, str(examples)], timeout=timeout)


def test_hostile_arguments_raise_only_documented_exceptions():
    proc = run_driver(400 if quick_mode() else 1500)
    assert proc.returncode == 0, describe(proc)
    assert "only documented exceptions" in proc.stdout


def test_a_crash_in_the_child_is_reported_not_fatal(tmp_path):
    """The harness itself: a child that segfaults is seen as a failure with its signal."""
    script = tmp_path / "crash.py"
    script.write_text("import ctypes\nctypes.string_at(0)\n")
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, timeout=60)
    # SIGSEGV normally; SIGABRT under AddressSanitizer, which reports the SEGV and aborts
    assert proc.returncode in (-signal.SIGSEGV, -signal.SIGABRT)
    assert "killed by SIG" in describe(proc)
