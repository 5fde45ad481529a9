"""The clock the live loops read: wall time or the calling thread's CPU time."""

from __future__ import annotations

from contextlib import AbstractContextManager

from labkit._ffi import check, lib
from labkit.config import temporarily

#: Clocks the live loops can read: "wall" (lk_clock_ns, CLOCK_MONOTONIC_RAW, the
#: default) or "cpu" (the calling thread's CPU time, CLOCK_THREAD_CPUTIME_ID).
CLOCKS: dict[str, int] = {"wall": lib.LK_LIVE_CLOCK_WALL, "cpu": lib.LK_LIVE_CLOCK_THREAD_CPU}


def get_clock() -> str:
    """The clock the live loops read now: "wall" or "cpu"."""
    value = lib.lk_live_get_clock()
    return next(name for name, v in CLOCKS.items() if v == value)


def set_clock(name: str) -> str:
    """Choose the clock of the live loops; returns the previous one.

    "cpu" counts only the CPU time of the calling thread (user + system), so
    time spent preempted by other work on a shared machine drops out.  It is
    right for work done in the calling thread: system calls, and io_uring
    requests that complete inline (/dev/zero).  It is wrong for requests
    handed to io-wq workers (their time is in other threads): use "wall" there.
    """
    if name not in CLOCKS:
        raise ValueError(f"clock must be one of {tuple(CLOCKS)}, got {name!r}")
    old = lib.lk_live_set_clock(CLOCKS[name])
    check(old, f"set clock {name}")
    return next(k for k, v in CLOCKS.items() if v == old)


def clock(name: str) -> AbstractContextManager[str]:
    """Use clock ``name`` for the live loops inside a ``with`` block."""
    return temporarily(set_clock, name)
