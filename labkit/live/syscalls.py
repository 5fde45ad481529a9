"""Read-family system calls on a descriptor, timed in C (``csrc/live/live_sys.c``)."""

from __future__ import annotations

import errno
import os
import statistics
from collections.abc import Callable, Iterable
from typing import Any

from labkit._args import INT64_MAX, fd_arg, int_arg, positive_int
from labkit._ffi import check, ffi, lib
from labkit.budget import apply_setting
from labkit.live.sources import aligned_buffer, open_zero
from labkit.live.variants import DEFAULT_LENGTH, SYSCALL_VARIANTS, read_variant


def _syscall_id(name: str) -> int:
    return read_variant(name, interface="syscall").id


def _fd(fd: Any) -> int:
    """A descriptor (any C ``int``: the kernel answers EBADF for a bad one)."""
    return fd_arg(fd, "fd", minimum=-(2**31))


def _offset(offset: Any) -> int:
    """-1 (the file position) or a file offset; anything else is OSError(EINVAL)."""
    return int_arg(offset, "offset", -1, INT64_MAX, err=errno.EINVAL)


def syscall_ns(
    variant: str, fd: int, *, length: int = DEFAULT_LENGTH, iters: int = 100_000, offset: int = -1
) -> float:
    """One batch of ``iters`` calls of a read variant on ``fd``: nanoseconds per call.

    ``variant`` is one of :data:`SYSCALL_VARIANTS`.  ``offset`` -1 reads at the
    file position (``read``/``readv``; right for ``/dev/zero``); ``offset >= 0``
    reads at that offset every time (``pread64``/``preadv``; right for a small
    regular file).  A failed or short call raises OSError (EIO for short).
    """
    return syscall_variants(fd, length=length, iters=iters, offset=offset, names=(variant,))[
        variant
    ]()


def syscall_read(variant: str, fd: int, length: int = DEFAULT_LENGTH, offset: int = -1) -> bytes:
    """One untimed call of a read variant: the bytes it read (for correctness checks)."""
    vid = _syscall_id(variant)
    fd, offset = _fd(fd), _offset(offset)
    length = positive_int(length, "length", maximum=lib.LK_MAX_RW_COUNT)
    owner, buf = aligned_buffer(length)
    n = int(check(lib.lk_sys_read_once(vid, fd, buf, length, offset), f"{variant} on fd {fd}"))
    data = bytes(ffi.buffer(buf, n))
    del owner
    return data


def syscall_variants(
    fd: int,
    *,
    length: int = DEFAULT_LENGTH,
    iters: int = 100_000,
    offset: int = -1,
    names: Iterable[str] = SYSCALL_VARIANTS,
) -> dict[str, Callable[[], float]]:
    """Zero-argument callables, one per variant, each timing one batch (for the runner).

    The variants share one page-aligned buffer, kept alive by the callables.
    """
    ids = {name: _syscall_id(name) for name in names}
    fd, offset = _fd(fd), _offset(offset)
    length = positive_int(length, "length", maximum=lib.LK_MAX_RW_COUNT)
    iters = positive_int(iters, "iters")
    owner, buf = aligned_buffer(length)
    return {
        name: _bind(vid, fd, buf, owner, length, offset, iters, name) for name, vid in ids.items()
    }


def _bind(
    vid: int, fd: int, buf: Any, owner: Any, length: int, offset: int, iters: int, name: str
) -> Callable[[], float]:
    def run() -> float:
        _ = owner  # the closure keeps the buffer alive
        apply_setting()
        return check(lib.lk_time_syscall(vid, fd, buf, length, offset, iters), f"{name} on fd {fd}")

    run.__name__ = f"syscall_{name}"
    return run


def read_syscall_ns(
    *, length: int = DEFAULT_LENGTH, iters: int = 100_000, batches: int = 5
) -> float:
    """The cost of one plain ``read()`` of ``length`` bytes from /dev/zero (median of batches).

    Timed in the calling process: from a process with more than one thread
    every call costs more (:mod:`labkit.measure.threads`), so figures are
    measured through :func:`labkit.experiments.live_kernel.run_syscalls`,
    in single-threaded workers.
    """
    batches = positive_int(batches, "batches")
    zfd = open_zero()
    try:
        run = syscall_variants(zfd, length=length, iters=iters, names=("read",))["read"]
        run()
        return statistics.median(run() for _ in range(batches))
    finally:
        os.close(zfd)


__all__ = [
    "syscall_ns",
    "syscall_variants",
]
