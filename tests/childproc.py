"""Running a piece of labkit in a child Python, so that a crash fails a test instead of pytest.

A segfault, an abort or a sanitizer report in the C core kills only the
child; :func:`describe` names the signal and shows the end of its output.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def run_python(
    args: Sequence[str], *, timeout: float = 120, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """``python ARGS`` (a script path or ``-c CODE``) in the current environment.

    The checkout this file is in comes first on the child's ``sys.path``, so
    the child imports the same labkit as the tests (a script's own directory
    would otherwise come first, and an installed labkit after it).
    """
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=ROOT,
    )


def run_code(code: str, *, timeout: float = 120) -> subprocess.CompletedProcess:
    """``python -c code``."""
    return run_python(["-c", code], timeout=timeout)


def describe(proc: subprocess.CompletedProcess) -> str:
    """How the child ended (its signal or status) and the end of its output."""
    if proc.returncode < 0:
        what = f"killed by {signal.Signals(-proc.returncode).name}"
    else:
        what = f"exit status {proc.returncode}"
    return f"child {what}\n--- stdout\n{proc.stdout[-3000:]}\n--- stderr\n{proc.stderr[-6000:]}"
