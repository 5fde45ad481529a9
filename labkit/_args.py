"""Checking the arguments of labkit's public API: one rule for every integer argument.

Integers only (``__index__``: a float, a string or bytes is a TypeError, never
silently truncated), ranges checked before any C call (so no value can reach
cffi and come back as an ``OverflowError``), and errors as the API documents
them: TypeError for a wrong type, ValueError (or OSError with the kernel's
errno, where the kernel would return one) for a value out of range.

============================  =========================================
helper                        out of range
============================  =========================================
:func:`int_arg`               ValueError, or OSError(``err``) if given
:func:`size_arg`              ValueError below 0; clamps to SIZE_MAX
:func:`positive_int`          OSError(EINVAL) below 1 or above maximum
:func:`iters_arg`             OSError(EINVAL) outside 1..SIZE_MAX
:func:`address_arg`           OSError(EFAULT) outside 0..SIZE_MAX
:func:`fd_arg`                OSError(EBADF) outside the C ``int``
:func:`seconds_arg`           OSError(EINVAL) unless 0 < s <= maximum
============================  =========================================
"""

from __future__ import annotations

import errno
import math
import numbers
import os
from typing import Any

SIZE_MAX = 2**64 - 1
"""The largest size_t / uint64_t."""
UINT_MAX = 2**32 - 1
"""The largest C ``unsigned int``."""
INT_MAX = 2**31 - 1
"""The largest C ``int``."""
INT64_MAX = 2**63 - 1
"""The largest int64_t (a file offset, a time in nanoseconds)."""
MAX_SECONDS = 86400.0 * 365
"""The longest time a labkit timeout may be (a year; far inside int64 nanoseconds)."""


def index_arg(value: Any, name: str) -> int:
    """``value`` as an int through ``__index__`` (int, numpy integer, bool).

    Raises:
        TypeError: for anything else (float, str, bytes, None, ...).
    """
    if isinstance(value, (str, bytes, bytearray)):  # never parsed as numbers
        raise TypeError(f"{name} must be an integer, not {type(value).__name__}")
    try:
        return value.__index__()
    except (AttributeError, TypeError):
        raise TypeError(f"{name} must be an integer, not {type(value).__name__}") from None


def _out_of_range(err: int | None, message: str) -> Exception:
    if err is None:
        return ValueError(message)
    return OSError(err, f"{os.strerror(err)}: {message}")


def int_arg(
    value: Any,
    name: str,
    minimum: int | None = None,
    maximum: int | None = None,
    *,
    err: int | None = None,
) -> int:
    """An integer in ``[minimum, maximum]`` (either bound may be None).

    Raises:
        TypeError: if ``value`` is not an integer (see :func:`index_arg`).
        ValueError: if it is out of range and ``err`` is None.
        OSError: with errno ``err`` if it is out of range and ``err`` is given.
    """
    n = index_arg(value, name)
    if (minimum is not None and n < minimum) or (maximum is not None and n > maximum):
        if maximum is None:
            bounds = f">= {minimum}"
        elif minimum is None:
            bounds = f"<= {maximum}"
        else:
            bounds = f"in {minimum}..{maximum}"
        raise _out_of_range(err, f"{name} must be {bounds}, got {n}")
    return n


def size_arg(n: Any, name: str = "n") -> int:
    """Validate a byte count: an int >= 0; values above SIZE_MAX clamp to it."""
    return min(int_arg(n, name, 0), SIZE_MAX)


def positive_int(value: Any, name: str, *, maximum: int = SIZE_MAX) -> int:
    """An int >= 1 (and <= ``maximum``, by default what a uint64_t holds).

    Out of range is OSError(EINVAL), like the kernel's answer to a bad count.
    """
    return int_arg(value, name, 1, maximum, err=errno.EINVAL)


def iters_arg(iters: Any) -> int:
    """A batch's iteration count: an int from 1 to SIZE_MAX; 0 is OSError(EINVAL), as from C."""
    return positive_int(iters, "iters", maximum=SIZE_MAX)


def address_arg(value: Any, name: str = "address") -> int:
    """A user address: an int in 0..SIZE_MAX; outside it is OSError(EFAULT), as the kernel."""
    return int_arg(value, name, 0, SIZE_MAX, err=errno.EFAULT)


def fd_arg(value: Any, name: str = "fd", *, minimum: int = 0) -> int:
    """A file descriptor: an int that fits a C ``int``; outside is OSError(EBADF).

    ``minimum`` is -1 where the kernel takes -1 (a sparse slot of
    ``IORING_REGISTER_FILES``).
    """
    return int_arg(value, name, minimum, INT_MAX, err=errno.EBADF)


def seconds_arg(value: Any, name: str = "timeout", *, maximum: float = MAX_SECONDS) -> float:
    """A duration in seconds: a real number with ``0 < value <= maximum``.

    Raises:
        TypeError: if ``value`` is not a real number (bool, str and bytes included).
        OSError: EINVAL if it is not finite or out of range.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number of seconds, not {type(value).__name__}")
    seconds = float(value)
    if not (math.isfinite(seconds) and 0 < seconds <= maximum):
        raise _out_of_range(
            errno.EINVAL, f"{name} must be > 0 and <= {maximum:g} seconds, got {value!r}"
        )
    return seconds


__all__: list[str] = []  # internal: argument checks for labkit's own modules
