"""Run-wide settings: quick mode, where data lives, and the time budget of a batch.

Quick mode (``LABKIT_QUICK=1``, or ``--quick`` on the command line, or the
``QUICK`` papermill parameter of a notebook) shrinks sizes and repeats so
that CI stays fast.  Full mode is what a reproduction publishes.

Every timing loop runs in C, where Python cannot interrupt it, so every loop
is bounded by a time budget as well as by its iteration count: a batch that
runs longer than the budget (10 s unless ``LABKIT_TIME_BUDGET`` or
:func:`set_time_budget` says otherwise) stops and raises
``OSError(ETIMEDOUT)``.  Python handles Ctrl-C between batches, so the budget
also bounds how long an interrupt waits.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

PACKAGE_DIR = Path(__file__).resolve().parent


def quick_mode(override: bool | None = None) -> bool:
    """True in quick mode: ``override`` if given, else ``LABKIT_QUICK`` is set and not "0"."""
    if override is not None:
        return bool(override)
    return os.environ.get("LABKIT_QUICK", "") not in ("", "0")


def repo_root() -> Path:
    """The checkout labkit runs from (the parent of the package directory)."""
    return PACKAGE_DIR.parent


def data_dir() -> Path:
    """``data/`` of the checkout, or ``LABKIT_DATA`` if set."""
    env = os.environ.get("LABKIT_DATA")
    return Path(env) if env else repo_root() / "data"


def time_budget() -> float:
    """The time budget of one timing batch, in seconds."""
    from labkit._ffi import lib

    return lib.lk_time_budget_ns() / 1e9


def set_time_budget(seconds: float) -> float:
    """Bound every later timing batch by ``seconds`` of wall time; returns the previous budget.

    Raises:
        ValueError: for a budget that is not a number of seconds > 0.
    """
    from labkit._ffi import check, lib

    seconds = float(seconds)
    if not 0 < seconds < 2**63 / 1e9 or math.isnan(seconds):
        raise ValueError(f"time budget must be a number of seconds > 0, got {seconds}")
    return check(lib.lk_set_time_budget_ns(max(1, int(seconds * 1e9))), "time budget") / 1e9


@contextmanager
def temporarily(setter: Callable[[T], T], value: T) -> Iterator[T]:
    """``setter(value)`` for a ``with`` block, then ``setter(previous)``.

    For the run-wide settings whose setter returns the previous value
    (:func:`set_time_budget`, :func:`labkit.live.set_clock`).
    """
    old = setter(value)
    try:
        yield value
    finally:
        setter(old)


def time_budget_of(seconds: float) -> AbstractContextManager[float]:
    """Use a time budget of ``seconds`` inside a ``with`` block."""
    return temporarily(set_time_budget, seconds)
