"""The C core under AddressSanitizer and UndefinedBehaviorSanitizer.

Builds labkit/csrc with LABKIT_SANITIZE=1 into a temporary directory and runs
the core tests (unit, properties in the quick profile, KUnit scenarios,
imports, bad input) against that build in a child process; see
tests/run_sanitized.py and README.md, "Sanitizer build".  Any sanitizer report
aborts the child, and so fails this test.  It is part of the normal suite (CI
runs it once); it skips, saying why, where gcc or libasan is missing.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # make test-fast leaves it out

RUNNER = Path(__file__).with_name("run_sanitized.py")
sys.path.insert(0, str(RUNNER.parent))
from run_sanitized import SKIP, find_libasan, preload_env  # noqa: E402


@pytest.mark.skipif(
    os.environ.get("LABKIT_UNDER_SANITIZER") == "1",
    reason="already running under the sanitized build",
)
@pytest.mark.skipif(
    find_libasan() is None,
    reason="gcc or its libasan.so is missing: cannot build the sanitized core",
)
def test_core_tests_pass_under_asan_and_ubsan(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(RUNNER), str(tmp_path / "build")],
        capture_output=True,
        text=True,
        timeout=900,
    )
    if proc.returncode == SKIP:
        pytest.skip(proc.stderr.strip())
    tail = proc.stdout[-6000:] + "\n--- stderr\n" + proc.stderr[-6000:]
    assert proc.returncode == 0, f"sanitized run failed (status {proc.returncode}):\n{tail}"
    assert " passed" in proc.stdout and "AddressSanitizer" not in proc.stderr, tail


MATPLOTLIB = """
import io
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
fig, ax = plt.subplots()
ax.plot([1, 2], [3, 4])
ax.set_title("a title: ft2font lays it out")
fig.savefig(io.BytesIO(), format="png")
print("drawn")
"""


@pytest.mark.skipif(
    find_libasan() is None,
    reason="gcc or its libasan.so is missing: no sanitizer recipe to check",
)
def test_the_recipe_runs_a_script_that_imports_matplotlib():
    """With libasan alone preloaded, ft2font's first C++ exception aborted
    the process (CHECK failed: asan_interceptors.cpp:320 real___cxa_throw)."""
    env = dict(os.environ, **preload_env(find_libasan()), MPLBACKEND="Agg")
    proc = subprocess.run(
        [sys.executable, "-c", MATPLOTLIB], env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0 and "drawn" in proc.stdout, proc.stderr[-3000:]
