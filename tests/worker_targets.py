"""Experiment functions for tests/test_workers.py: each runs inside a worker process.

Each is registered as a worker target under a ``test.`` id (a test-only
registration: the worker imports this module, which tests/ on the path the
parent hands to its workers makes importable, and finds the id).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

from labkit.measure import runner, workers


@workers.target("test.rows")
def rows(repeats: int = 2) -> runner.Rows:
    """Two trivial variants through runner.measure: rows with the thread counts."""
    return runner.measure("t", {"a": lambda: 1.0, "b": lambda: 2.0}, repeats=repeats, warmup=0)


@workers.target("test.raises_value_error")
def raises_value_error() -> runner.Rows:
    raise ValueError("a bad value, raised in the worker")


@workers.target("test.raises_os_error")
def raises_os_error() -> runner.Rows:
    raise OSError(22, "Invalid argument: raised in the worker")


@workers.target("test.killed")
def killed() -> runner.Rows:
    sys.stdout.write("about to die\n")
    sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGKILL)
    return []


@workers.target("test.sleeps")
def sleeps(seconds: float) -> runner.Rows:
    time.sleep(seconds)
    return rows()


@workers.target("test.with_a_thread")
def with_a_thread() -> runner.Rows:
    """Measure while a second (idle) thread exists: the single-thread rule must refuse."""
    stop = threading.Event()
    t = threading.Thread(target=stop.wait, daemon=True)
    t.start()
    try:
        return rows()
    finally:
        stop.set()
        t.join()


@workers.target("test.not_rows")
def not_rows() -> object:
    return 42


@workers.target("test.nested")
def nested() -> runner.Rows:
    return workers.run_in_workers(rows, runs=1)


@workers.target("test.imported_modules")
def imported_modules() -> runner.Rows:
    """What a worker has loaded once it imported every experiment module."""
    import labkit.experiments.fixed_seek
    import labkit.experiments.live_kernel
    import labkit.experiments.ubuf_import  # noqa: F401

    loaded = {name for name in ("pandas", "scipy", "matplotlib") if name in sys.modules}
    return [
        {
            "heavy": ",".join(sorted(loaded)),
            "pid": os.getpid(),
            "affinity": str(sorted(os.sched_getaffinity(0))),
        }
    ]


@workers.target("test.rotated_rows")
def rotated_rows() -> runner.Rows:
    """Three variants, rotated: the order the rows come in is the order they ran."""
    variants = {name: (lambda: 1.0) for name in ("a", "b", "c")}
    return runner.measure("rot", variants, repeats=2, warmup=0, rotate=True)


def _next_run(counter: str) -> int:
    """0, 1, 2, ...: how many workers called this before (a file of one byte per call)."""
    with open(counter, "ab") as f:
        f.write(b"x")
    return os.path.getsize(counter) - 1


@workers.target("test.fails_on_third")
def fails_on_third(counter: str, how: str) -> runner.Rows:
    """Rows for runs 0 and 1; run 2 dies, hangs, exits 0 without rows, raises or changes keys."""
    k = _next_run(counter)
    if k == 2:
        if how == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        elif how == "hang":
            time.sleep(600)
        elif how == "exit0":
            os._exit(0)
        elif how == "raise":
            raise ValueError("the third run fails")
        elif how == "keys":
            return [{"ns": 3.0, "extra": 1}]
    return [{"ns": float(k)}]


@workers.target("test.hangs_with_a_child")
def hangs_with_a_child(pidfile: str) -> runner.Rows:
    """Start a child that would outlive this worker, say its pid, then hang."""
    import subprocess

    child = subprocess.Popen(["sleep", "600"])
    with open(pidfile + ".tmp", "w") as f:
        f.write(str(child.pid))
    os.replace(pidfile + ".tmp", pidfile)
    time.sleep(600)
    return []


@workers.target("test.uneven_rows")
def uneven_rows() -> list[dict]:
    """Rows whose keys differ from row to row (the second has one the first lacks)."""
    return [{"a": 1}, {"a": 2, "b": 3}]
