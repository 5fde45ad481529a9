"""How many threads the measuring process has, and the single-thread rule of the workers.

Why it matters: a system call that takes a file descriptor looks the file up
with ``fdget()``, whose fast path (no reference count taken on the file) is
for a process whose file table is not shared, i.e. one with a single thread.
A Python process that imported numpy before pinning itself has an OpenBLAS
thread; a Jupyter kernel has about a dozen.  Measured from such a process,
``read(/dev/zero, 4 KiB)`` costs about a quarter more per call than from a
single-threaded C program (benchmarks/live_vs_bare_c.py), which is what the published figures
came from.  So every live loop is measured in a worker process
(:mod:`labkit.measure.workers`) that has exactly one thread while it measures,
and the runner checks that right before and right after measuring.

io_uring hands requests it cannot complete inline to io-wq worker threads
(``iou-wrk-*``); an SQPOLL ring has an ``iou-sqp-*`` thread.  These are kernel
threads of the process, listed in ``/proc/self/task`` like any other, and they
share its file table (``CLONE_FILES``), so they also take system calls off the
fast path.  They are counted separately (``io_threads``), never hidden:
/dev/zero completes inline and starts none, a tmpfs read is handed to one.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

TASK_DIR = Path("/proc/self/task")

#: Thread names (``comm``) of io_uring's kernel threads: io-wq workers and the SQPOLL thread.
IO_THREAD_PREFIXES = ("iou-wrk", "iou-sqp")


@dataclass(frozen=True)
class ThreadCount:
    """The threads of this process at one moment.

    Attributes:
        threads: tasks that are not io_uring kernel threads (1 in a worker).
        io_threads: io_uring's kernel threads (io-wq workers, SQPOLL).
    """

    threads: int
    io_threads: int

    @property
    def total(self) -> int:
        """Every entry of /proc/self/task: ``len(os.listdir('/proc/self/task'))``."""
        return self.threads + self.io_threads


def count_threads(task_dir: Path = TASK_DIR) -> ThreadCount | None:
    """The threads of this process now, from /proc/self/task (None where there is no /proc)."""
    try:
        tids = os.listdir(task_dir)
    except OSError:
        return None
    io = 0
    for tid in tids:
        try:
            comm = (task_dir / tid / "comm").read_text().strip()
        except OSError:  # the thread exited while we looked
            continue
        if comm.startswith(IO_THREAD_PREFIXES):
            io += 1
    return ThreadCount(threads=len(tids) - io, io_threads=io)


class ThreadCountError(RuntimeError):
    """A worker that must measure single-threaded found more threads."""


@dataclass(frozen=True)
class Rule:
    """What a worker requires while it measures.

    Attributes:
        allow_io_threads: whether io_uring's kernel threads may exist (they are
            recorded either way); False makes the rule "exactly one entry in
            /proc/self/task".
    """

    allow_io_threads: bool = True


_rule: Rule | None = None


def require_single_thread(rule: Rule | None) -> None:
    """Install (or, with None, remove) the single-thread rule :func:`observe` enforces.

    Set by :mod:`labkit.measure.workers` inside a worker; outside a worker no
    rule is installed and nothing is checked or added to the rows.
    """
    global _rule
    _rule = rule


def watching() -> bool:
    """True inside a worker with the single-thread rule installed."""
    return _rule is not None


def observe(experiment: str, when: str) -> ThreadCount:
    """Count the threads now and enforce the installed rule.

    Args:
        experiment: named in the error.
        when: "before" or "after" measuring, named in the error.

    Raises:
        ThreadCountError: if the rule is installed and the process has more
            than one thread (io_uring's kernel threads excepted where the rule
            allows them).
    """
    seen = count_threads()
    if seen is None:
        raise ThreadCountError(
            f"{experiment}: /proc/self/task is not readable: cannot count threads"
        )
    rule = _rule
    if rule is not None:
        extra = seen.threads != 1 or (seen.io_threads and not rule.allow_io_threads)
        if extra:
            raise ThreadCountError(
                f"{experiment}: the worker has {seen.threads} thread(s) and "
                f"{seen.io_threads} io_uring thread(s) {when} measuring; it must have exactly "
                "one thread" + ("" if rule.allow_io_threads else " and no io_uring thread")
            )
    return seen


__all__ = [
    "Rule",
    "count_threads",
]
