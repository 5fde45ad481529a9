"""The time budget of a timing batch: every C timing loop stops when it runs past it.

Every timing loop runs in C, where Python cannot interrupt it, so every loop
is bounded by a time budget as well as by its iteration count: a batch that
runs longer than the budget (10 s unless ``LABKIT_TIME_BUDGET`` or
:func:`set_time_budget` says otherwise) stops and raises
``OSError(ETIMEDOUT)``.  Python handles Ctrl-C between batches, so the budget
also bounds how long an interrupt waits.

``LABKIT_TIME_BUDGET`` is read (:func:`labkit.config.budget_setting`) by
:func:`apply_setting`, which every Python face of a timing loop calls before
its batch, not when labkit is imported; :func:`set_time_budget` overrides it.
"""

from __future__ import annotations

import math
from contextlib import AbstractContextManager

from labkit import config
from labkit._ffi import check, lib

_settled = False  # the setting has been applied, or overridden by set_time_budget


def apply_setting() -> None:
    """Give the C core the budget ``LABKIT_TIME_BUDGET`` asks for, once, unless
    :func:`set_time_budget` was called first.

    Raises:
        ValueError: naming the variable, for a value that is not a number of seconds > 0
            (raised again at every batch until the variable is fixed).
    """
    global _settled
    if _settled:
        return
    seconds = config.budget_setting()
    if seconds is not None:
        lib.lk_set_time_budget_ns(max(1, int(seconds * 1e9)))
    _settled = True


def time_budget() -> float:
    """The time budget of one timing batch, in seconds."""
    apply_setting()
    return lib.lk_time_budget_ns() / 1e9


def set_time_budget(seconds: float) -> float:
    """Bound every later timing batch by ``seconds`` of wall time; returns the previous budget.

    Raises:
        ValueError: for a budget that is not a number of seconds > 0.
    """
    global _settled
    seconds = float(seconds)
    if not 0 < seconds < 2**63 / 1e9 or math.isnan(seconds):
        raise ValueError(f"time budget must be a number of seconds > 0, got {seconds}")
    try:  # so that the budget returned (and restored by time_budget_of) is the setting's
        apply_setting()
    except ValueError:
        pass  # a bad LABKIT_TIME_BUDGET: the value given here replaces it
    _settled = True
    return check(lib.lk_set_time_budget_ns(max(1, int(seconds * 1e9))), "time budget") / 1e9


def time_budget_of(seconds: float) -> AbstractContextManager[float]:
    """Use a time budget of ``seconds`` inside a ``with`` block."""
    return config.temporarily(set_time_budget, seconds)


__all__ = [
    "apply_setting",
    "set_time_budget",
]
