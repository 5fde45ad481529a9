"""Python faces of the model's C timing kernels: one batch of ``iters`` operations each.

Each function runs one batch in C (loop and clock included, ``csrc/measure/
bench_core.c`` and ``csrc/core/fixed_buf.c``) and returns nanoseconds per
operation.  They check every buffer and length first, so no call can make the
C side touch memory it was not given.  As everywhere in labkit, ``iters`` < 1
is ``OSError(EINVAL)``, and a batch that runs past the time budget
(:func:`labkit.budget.set_time_budget`) is ``OSError(ETIMEDOUT)``.
"""

from __future__ import annotations

import errno
from typing import Any

from labkit._args import index_arg, iters_arg, size_arg
from labkit._ffi import check, ffi, lib, raise_errno
from labkit.budget import apply_setting
from labkit.core.fixed import RegisteredBuffer, check_registered, seek_id
from labkit.core.iov_iter import ITER_DEST, ITER_SOURCE, IovIter, buffer_arg
from labkit.errors import IterMisuseError


def _batch(ns: float, what: str) -> float:
    return float(check(ns, what))


def time_empty(iters: int) -> float:
    """ns per iteration of the timing loop with nothing in it (the harness's own cost)."""
    apply_setting()
    return _batch(lib.lk_time_empty(iters_arg(iters)), "time_empty")


def time_clock(iters: int) -> float:
    """ns per read of the clock every timing kernel uses (``lk_clock_ns``)."""
    apply_setting()
    return _batch(lib.lk_time_clock(iters_arg(iters)), "time_clock")


def time_memcpy(dst: Any, src: Any, n: int, iters: int) -> float:
    """ns per ``memcpy(dst, src, n)``; both buffers must hold at least ``n`` bytes."""
    d = buffer_arg(dst, writable=True, what="dst")
    s = buffer_arg(src, writable=False, what="src")
    n = size_arg(n)
    if n > len(d) or n > len(s):
        raise ValueError(f"time_memcpy: n={n} exceeds dst ({len(d)}) or src ({len(s)})")
    apply_setting()
    return _batch(lib.lk_time_memcpy(d, s, n, iters_arg(iters)), "time_memcpy")


def _time_copy(it: IovIter, buf: Any, n: int, iters: int, *, to_iter: bool) -> float:
    """copy_to_iter from ``buf`` (``to_iter``) or copy_from_iter into it, timed in C."""
    what, need, other = (
        ("time_copy_to_iter", ITER_DEST, "src")
        if to_iter
        else ("time_copy_from_iter", ITER_SOURCE, "dst")
    )
    if it.direction != need:
        raise IterMisuseError(
            f"{what} needs an {'ITER_DEST' if to_iter else 'ITER_SOURCE'} iterator"
        )
    b = buffer_arg(buf, writable=not to_iter, what=other)
    n = size_arg(n)
    if n > len(b):
        raise ValueError(f"{what}: n={n} exceeds {other} ({len(b)} bytes)")
    fn = lib.lk_time_copy_to_iter if to_iter else lib.lk_time_copy_from_iter
    iters = iters_arg(iters)
    apply_setting()
    with it._locked():
        return _batch(fn(it.c_iter, b, n, iters), what)


def time_copy_to_iter(it: IovIter, src: Any, n: int, iters: int) -> float:
    """ns per ``copy_to_iter(src, n)`` into a fresh copy of ``it`` (``it`` is unchanged).

    Raises:
        IterMisuseError: if ``it`` is not ITER_DEST.
    """
    return _time_copy(it, src, n, iters, to_iter=True)


def time_copy_from_iter(it: IovIter, dst: Any, n: int, iters: int) -> float:
    """ns per ``copy_from_iter(dst, n)`` out of a fresh copy of ``it`` (``it`` is unchanged).

    Raises:
        IterMisuseError: if ``it`` is not ITER_SOURCE.
    """
    return _time_copy(it, dst, n, iters, to_iter=False)


def time_advance(it: IovIter, n: int, iters: int) -> float:
    """ns per ``advance(n)`` of a fresh copy of ``it`` (``it`` is unchanged)."""
    n = size_arg(n)
    apply_setting()
    with it._locked():  # the C loop copies the iterator: not while another thread moves it
        return _batch(lib.lk_time_advance(it.c_iter, n, iters_arg(iters)), "time_advance")


def _offset_arg(reg: RegisteredBuffer, offset: int, length: int) -> tuple[int, int]:
    offset, length = index_arg(offset, "offset"), index_arg(length, "length")
    if offset < 0 or length < 0 or offset + length > reg.length:
        raise_errno(
            errno.EFAULT,
            f"offset {offset} + length {length} is outside the {reg.length}-byte registered buffer",
        )
    return offset, length


def time_fixed_seek(
    reg: RegisteredBuffer, offset: int, length: int, seek: str, iters: int
) -> float:
    """ns per ``io_import_fixed`` (range check + seek, no copy) at byte ``offset``.

    One batch of ``iters`` imports timed in C (``lk_time_fixed_seek``).
    """
    reg = check_registered(reg)
    offset, length = _offset_arg(reg, offset, length)
    apply_setting()
    ns = lib.lk_time_fixed_seek(reg.c_buf, offset, length, seek_id(seek), iters_arg(iters))
    return _batch(ns, "time_fixed_seek")


def time_fixed_submit(
    reg: RegisteredBuffer, offset: int, length: int, seek: str, iters: int, data: Any = None
) -> float:
    """ns per modelled submission: ``io_import_fixed`` + copy of ``length`` bytes.

    The copy moves ``data`` (default: ``length`` bytes of 0xA5) into the
    registered buffer at ``offset`` through the iterator, as a READ_FIXED would
    once the data arrived.  One batch of ``iters`` timed in C
    (``lk_time_fixed_submit``).
    """
    reg = check_registered(reg)
    offset, length = _offset_arg(reg, offset, length)
    src = bytes([0xA5]) * length if data is None else bytes(data)
    if len(src) < length:
        raise ValueError(f"data has {len(src)} bytes, fewer than length {length}")
    csrc = ffi.from_buffer(src)
    apply_setting()
    ns = lib.lk_time_fixed_submit(reg.c_buf, offset, length, seek_id(seek), csrc, iters_arg(iters))
    return _batch(ns, "time_fixed_submit")


__all__ = [
    "time_advance",
    "time_clock",
    "time_copy_from_iter",
    "time_copy_to_iter",
    "time_empty",
    "time_fixed_seek",
    "time_fixed_submit",
    "time_memcpy",
]
