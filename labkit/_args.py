"""Checking the arguments of labkit's public API: one rule for every integer argument.

Integers only (``__index__``: a float, a string or bytes is a TypeError, never
silently truncated), ranges checked before any C call, and errors as the API
documents them: TypeError for a wrong type, ValueError (or OSError with the
kernel's errno, where the kernel would return one) for a value out of range.
"""

from __future__ import annotations

import errno
import os
from typing import Any

SIZE_MAX = 2**64 - 1


def size_arg(n: Any, name: str = "n") -> int:
    """Validate a byte count: an int >= 0; values above SIZE_MAX clamp to it."""
    try:
        value = n.__index__()
    except AttributeError:
        raise TypeError(f"{name} must be an integer, not {type(n).__name__}") from None
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value}")
    return min(value, SIZE_MAX)


def positive_int(value: Any, name: str, *, maximum: int | None = None) -> int:
    """An int >= 1 (and <= ``maximum``); out of range is OSError(EINVAL), like the kernel's."""
    try:
        n = value.__index__()
    except AttributeError:
        raise TypeError(f"{name} must be an integer, not {type(value).__name__}") from None
    if n < 1 or (maximum is not None and n > maximum):
        limit = f" and <= {maximum}" if maximum is not None else ""
        raise OSError(
            errno.EINVAL, f"{os.strerror(errno.EINVAL)}: {name} must be >= 1{limit}, got {n}"
        )
    return n


def iters_arg(iters: Any) -> int:
    """A batch's iteration count: an int from 1 to SIZE_MAX; 0 is OSError(EINVAL), as from C."""
    return positive_int(iters, "iters", maximum=SIZE_MAX)


__all__ = ["SIZE_MAX", "iters_arg", "positive_int", "size_arg"]
