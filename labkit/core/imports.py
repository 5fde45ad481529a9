"""Importing user iovecs into iterators, as the kernel's system calls do.

``import_iovec`` is what readv/writev (and io_uring's READV/WRITEV) call on
the user's iovec array; ``import_ubuf`` and ``import_single_range`` are the
single-buffer forms.  ``kernel`` selects the era: before Linux 6.4 a single
segment became an ITER_IOVEC; since 6.4 (the 2023 change reproduced in
notebook 03) it becomes an ITER_UBUF.
"""

from __future__ import annotations

import errno
from collections.abc import Sequence
from typing import Any

from labkit._ffi import ffi, lib, raise_errno
from labkit.core.iov_iter import IovIter, direction_arg
from labkit.core.memory import UserMemory

MAX_RW_COUNT = int(lib.LK_MAX_RW_COUNT)
"""INT_MAX rounded down to a page: the most one read or write moves."""
UIO_MAXIOV = int(lib.LK_UIO_MAXIOV)
"""The most segments one import accepts (1024)."""
UIO_FASTIOV = int(lib.LK_UIO_FASTIOV)
"""Segments the kernel copies onto the stack before it allocates (8)."""


def kernel_era(kernel: str | float | tuple[int, int]) -> int:
    """63 for a kernel before 6.4, 64 for 6.4 and later ("6.3", "6.4", "6.12", (6, 1) ...)."""
    try:
        if isinstance(kernel, tuple):
            major, minor = int(kernel[0]), int(kernel[1])
        else:
            parts = str(kernel).split(".")
            major, minor = int(parts[0]), int(parts[1])
    except (ValueError, IndexError, TypeError):
        raise ValueError(f"kernel must be a version like '6.3' or '6.4', got {kernel!r}") from None
    return 64 if (major, minor) >= (6, 4) else 63


def _mem_arg(mem: Any) -> UserMemory:
    if not isinstance(mem, UserMemory):
        raise TypeError(f"mem must be a labkit.UserMemory, not {type(mem).__name__}")
    return mem


def _addr(addr: Any, what: str) -> int:
    try:
        value = addr.__index__()
    except AttributeError:
        raise TypeError(f"{what}: address must be an integer, not {type(addr).__name__}") from None
    if not 0 <= value < 2**64:
        raise_errno(errno.EFAULT, f"{what}: address {value:#x} is outside the address space")
    return value


def _length(length: Any, what: str) -> int:
    """The length as the kernel's size_t: a negative int wraps, as a C cast would."""
    try:
        value = length.__index__()
    except AttributeError:
        raise TypeError(f"{what}: length must be an integer, not {type(length).__name__}") from None
    if not -(2**63) <= value < 2**64:
        raise_errno(errno.EINVAL, f"{what}: length {value} does not fit in 64 bits")
    return value % 2**64


def _signed(length: int) -> int:
    return length - 2**64 if length >= 2**63 else length


def import_iovec(
    direction: int,
    iovecs: Sequence[tuple[int, int]],
    mem: UserMemory,
    *,
    fast_segs: int = UIO_FASTIOV,
    kernel: str = "6.4",
) -> IovIter:
    """Import the user's iovec array, as ``import_iovec()`` does for readv/writev.

    Args:
        direction: ITER_DEST for a read, ITER_SOURCE for a write.
        iovecs: the user's iovec array, as (address, length) pairs.
        mem: the user address space the addresses live in.
        fast_segs: how many segments fit in the caller's on-stack array; more
            are copied into an allocated one (``IovIter.heap_iovecs``).
        kernel: "6.3" keeps one segment as ITER_IOVEC; "6.4" (default) makes it
            ITER_UBUF.

    Returns:
        The iterator; its ``count`` is the total, clamped to MAX_RW_COUNT.

    Raises:
        OSError: EINVAL for more than 1024 segments or a length negative as
            ssize_t; EFAULT for a non-empty segment outside the mapped memory
            (an empty segment is accepted whatever its address).
    """
    d = direction_arg(direction)
    mem = _mem_arg(mem)
    era = kernel_era(kernel)
    if not 0 <= int(fast_segs) <= UIO_MAXIOV:
        raise ValueError(f"fast_segs must be in 0..{UIO_MAXIOV}, got {fast_segs}")
    pairs = list(iovecs)
    if len(pairs) > UIO_MAXIOV:
        raise_errno(
            errno.EINVAL,
            f"import_iovec: {len(pairs)} segments, more than UIO_MAXIOV ({UIO_MAXIOV})",
        )
    uvec = ffi.new("struct lk_iovec[]", max(len(pairs), 1))
    for k, pair in enumerate(pairs):
        try:
            addr, length = pair
        except (TypeError, ValueError):
            raise TypeError(f"import_iovec: segment {k} must be an (addr, length) pair") from None
        length = _length(length, f"import_iovec: segment {k}")
        try:
            addr = _addr(addr, f"import_iovec: segment {k}")
        except OSError:
            if length:
                raise
            addr = 0  # an empty segment is never touched, whatever its address
        uvec[k].iov_base = addr
        uvec[k].iov_len = length
    fast = ffi.new("struct lk_iovec[]", max(int(fast_segs), 1))
    iovp = ffi.new("struct lk_iovec **")
    it = ffi.new("struct lk_iov_iter *")
    # the address-space table is read in C with the GIL released: hold the
    # lock that map()/unmap() take, or a concurrent map() can move the table
    with mem.lock:
        ret = lib.lk_import_iovec(
            d, uvec, len(pairs), int(fast_segs), fast, iovp, it, mem.c_mm, era
        )
        if ret < 0:
            _explain_import_error(-ret, pairs, uvec, mem)
    heap = iovp[0] != ffi.NULL
    array = ffi.gc(iovp[0], lib.free) if heap else fast
    return IovIter(it, (array, mem), mem=mem, heap_iovecs=heap)


def _explain_import_error(err: int, pairs: list, uvec: Any, mem: UserMemory) -> None:
    """Raise the import's errno with a message that names the bad segment."""
    for k in range(len(pairs)):
        length = int(uvec[k].iov_len)
        if err == errno.EINVAL and _signed(length) < 0:
            raise_errno(err, f"import_iovec: segment {k} has a negative length ({_signed(length)})")
        if err == errno.EFAULT:
            addr = int(uvec[k].iov_base)
            # the C import checks each segment's whole length (as __import_iovec's
            # access_ok() does, before the MAX_RW_COUNT clamp); the single-segment
            # UBUF path checks the clamped length, a subset: the whole one covers both
            if not lib.lk_mm_access_ok(mem.c_mm, addr, length):
                raise_errno(
                    err,
                    f"import_iovec: segment {k} [{addr:#x}, +{length}) "
                    "is not in mapped user memory",
                )
    raise_errno(err, "import_iovec")


def import_ubuf(direction: int, addr: int, length: int, mem: UserMemory) -> IovIter:
    """Import one user buffer as ITER_UBUF (``import_ubuf``).

    The length is clamped to MAX_RW_COUNT; a negative length wraps to a huge
    size_t, as in C, and is therefore clamped too.

    Raises:
        OSError: EFAULT if the (clamped) range is not mapped.
    """
    d = direction_arg(direction)
    mem = _mem_arg(mem)
    addr = _addr(addr, "import_ubuf")
    length = _length(length, "import_ubuf")
    it = ffi.new("struct lk_iov_iter *")
    with mem.lock:
        ret = lib.lk_import_ubuf(d, addr, length, it, mem.c_mm)
    if ret < 0:
        raise_errno(
            errno.EFAULT,
            f"import_ubuf: [{addr:#x}, +{min(length, MAX_RW_COUNT)}) is not in mapped user memory",
        )
    return IovIter(it, (mem,), mem=mem)


def import_single_range(
    direction: int, addr: int, length: int, mem: UserMemory, *, kernel: str = "6.4"
) -> IovIter:
    """Import one user buffer (``import_single_range``): IOVEC before 6.4, UBUF since.

    Raises:
        OSError: EFAULT if the (clamped) range is not mapped.
    """
    d = direction_arg(direction)
    mem = _mem_arg(mem)
    era = kernel_era(kernel)
    addr = _addr(addr, "import_single_range")
    length = _length(length, "import_single_range")
    iov = ffi.new("struct lk_iovec *")
    it = ffi.new("struct lk_iov_iter *")
    with mem.lock:
        ret = lib.lk_import_single_range(d, addr, length, iov, it, mem.c_mm, era)
    if ret < 0:
        raise_errno(
            errno.EFAULT,
            f"import_single_range: [{addr:#x}, "
            f"+{min(length, MAX_RW_COUNT)}) is not in mapped user memory",
        )
    return IovIter(it, (iov, mem), mem=mem)
