"""The order in which pytest-xdist's workers get the test files (used by tests/conftest.py).

``make test`` runs the tests in two processes (``-n 2 --dist loadfile``): each test file, and
each stored notebook, runs whole in one worker, and a worker that runs out of work takes the
next file in collection order.  A long file taken last would leave the other worker idle, so
under xdist the slowest files come first, longest first; the rest keep pytest's order.  Only
the order changes: every test still runs, with the same fixtures and assertions.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: The slowest files, longest first (``pytest --durations`` over the whole suite in one
#: process): the sanitizer build reruns the core tests under ASan; the wheel
#: test builds and installs the wheel and reproduces from it; the browser test runs every
#: notebook in JupyterLab; the reproduce tests and the notebooks start Jupyter kernels.
SLOW_FIRST = (
    "tests/test_sanitizers.py",
    "tests/test_wheel.py",
    "tests/test_browser.py",
    "tests/test_reproduce_faults.py",
    "tests/test_workers.py",
    "tests/test_reproduce_hostile.py",
    "tests/test_reproduce.py",
    "notebooks/03-ubuf-import.ipynb",
    "notebooks/02-fixed-buffer-seek.ipynb",
    "notebooks/04-live-kernel.ipynb",
    "tests/test_sessions.py",
    "tests/test_fuzz.py",
    "tests/test_cli_errors.py",
    "notebooks/01-iov-iter-tour.ipynb",
    "tests/test_callgrind.py",
    "tests/test_fixed.py",
)


def rank(path: Path) -> int:
    """A file's place in :data:`SLOW_FIRST`, or ``len(SLOW_FIRST)`` (after them all)."""
    try:
        rel = Path(path).resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return len(SLOW_FIRST)
    return SLOW_FIRST.index(rel) if rel in SLOW_FIRST else len(SLOW_FIRST)
