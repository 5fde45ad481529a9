"""Importing user iovecs into iterators, as the kernel's system calls do.

``import_iovec`` is what readv/writev (and io_uring's READV/WRITEV) call on
the user's iovec array; ``import_ubuf`` and ``import_single_range`` are the
single-buffer forms.  ``kernel`` selects the era: before Linux 6.4 a single
segment became an ITER_IOVEC; since 6.4 (the 2023 change reproduced in
notebook 03) it becomes an ITER_UBUF.

An import checks what the kernel's checks, and nothing more: the number of
segments (at most UIO_MAXIOV), each length (it must fit in ssize_t), and, with
``access_ok()``, that each segment's range, empty ones included, lies in user
space.  It does not check that the memory is mapped: a copy through the
iterator finds a hole when it reaches it, and stops there with the bytes done
(see :class:`labkit.memory.UserMemory`), as the kernel's ``copy_to_iter()``
does.  So ``readv()`` of a segment that runs into unmapped memory returns a
short count, and only a fault on its very first byte is ``EFAULT``.
"""

from __future__ import annotations

import errno
from collections.abc import Sequence
from typing import Any

from labkit._args import index_arg, int_arg
from labkit._ffi import ffi, lib, raise_errno
from labkit.core.iov_iter import IovIter, direction_arg
from labkit.core.memory import USER_PTR_MAX, UserMemory

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
            major, minor = index_arg(kernel[0], "major"), index_arg(kernel[1], "minor")
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


#: Stands for an address that is no 64-bit value at all: access_ok() refuses it.
_NOT_AN_ADDRESS = 2**64 - 1


def _addr(addr: Any, what: str) -> int:
    """The address as a C pointer; an int outside 64 bits becomes one access_ok() refuses."""
    try:
        value = addr.__index__()
    except AttributeError:
        raise TypeError(f"{what}: address must be an integer, not {type(addr).__name__}") from None
    if not 0 <= value < 2**64:
        return _NOT_AN_ADDRESS
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
            ssize_t (any segment's: checked before any address); EFAULT for a
            segment, empty or not, whose range does not lie in user space
            (``access_ok()``; on 6.4 a single segment's length is clamped to
            MAX_RW_COUNT first, as ``import_ubuf()`` does).  Unmapped memory is
            not an error here: the copies fault on it.
        ValueError: for fast_segs outside 0..UIO_MAXIOV.
        TypeError: for an address, a length or fast_segs that is not an integer.
    """
    d = direction_arg(direction)
    mem = _mem_arg(mem)
    era = kernel_era(kernel)
    fast_segs = int_arg(fast_segs, "fast_segs", 0, UIO_MAXIOV)
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
        addr = _addr(addr, f"import_iovec: segment {k}")
        uvec[k].iov_base = addr
        uvec[k].iov_len = length
    fast = ffi.new("struct lk_iovec[]", max(fast_segs, 1))
    iovp = ffi.new("struct lk_iovec **")
    it = ffi.new("struct lk_iov_iter *")
    # the import does not read the address-space table (only copies do, under mem.lock)
    ret = lib.lk_import_iovec(d, uvec, len(pairs), fast_segs, fast, iovp, it, mem.c_mm, era)
    if ret < 0:
        _explain_import_error(-ret, uvec, len(pairs), era)
    heap = iovp[0] != ffi.NULL
    array = ffi.gc(iovp[0], lib.free) if heap else fast
    return IovIter(it, (array, mem), mem=mem, heap_iovecs=heap)


def _explain_import_error(err: int, uvec: Any, nr_segs: int, era: int) -> None:
    """Raise the import's errno with a message that names the bad segment."""
    lengths = [int(uvec[k].iov_len) for k in range(nr_segs)]
    if err == errno.EINVAL:
        for k, length in enumerate(lengths):
            if _signed(length) < 0:
                raise_errno(
                    err, f"import_iovec: segment {k} has a negative length ({_signed(length)})"
                )
    if err == errno.EFAULT:
        for k, length in enumerate(lengths):
            addr = int(uvec[k].iov_base)
            # __import_iovec() checks each segment's whole length, before the
            # MAX_RW_COUNT clamp; the 6.4 single-segment (UBUF) path clamps first
            checked = min(length, MAX_RW_COUNT) if era >= 64 and nr_segs == 1 else length
            if not lib.lk_access_ok(addr, checked):
                raise_errno(
                    err,
                    f"import_iovec: segment {k} [{addr:#x}, +{length}) does "
                    f"not lie in user space (access_ok: it must end at or below "
                    f"{USER_PTR_MAX:#x})",
                )
    raise_errno(err, "import_iovec")


def import_ubuf(direction: int, addr: int, length: int, mem: UserMemory) -> IovIter:
    """Import one user buffer as ITER_UBUF (``import_ubuf``).

    The length is clamped to MAX_RW_COUNT; a negative length wraps to a huge
    size_t, as in C, and is therefore clamped too.  Whether the memory is
    mapped is found out by the copies, not here.

    Raises:
        OSError: EFAULT if the (clamped) range does not lie in user space (``access_ok()``).
    """
    d = direction_arg(direction)
    mem = _mem_arg(mem)
    addr = _addr(addr, "import_ubuf")
    length = _length(length, "import_ubuf")
    it = ffi.new("struct lk_iov_iter *")
    ret = lib.lk_import_ubuf(d, addr, length, it, mem.c_mm)
    if ret < 0:
        raise_errno(
            errno.EFAULT,
            f"import_ubuf: [{addr:#x}, +{min(length, MAX_RW_COUNT)}) does not lie in user space",
        )
    return IovIter(it, (mem,), mem=mem)


def import_single_range(
    direction: int, addr: int, length: int, mem: UserMemory, *, kernel: str = "6.4"
) -> IovIter:
    """Import one user buffer (``import_single_range``): IOVEC before 6.4, UBUF since.

    Raises:
        OSError: EFAULT if the (clamped) range does not lie in user space (``access_ok()``).
    """
    d = direction_arg(direction)
    mem = _mem_arg(mem)
    era = kernel_era(kernel)
    addr = _addr(addr, "import_single_range")
    length = _length(length, "import_single_range")
    iov = ffi.new("struct lk_iovec *")
    it = ffi.new("struct lk_iov_iter *")
    ret = lib.lk_import_single_range(d, addr, length, iov, it, mem.c_mm, era)
    if ret < 0:
        raise_errno(
            errno.EFAULT,
            f"import_single_range: [{addr:#x}, "
            f"+{min(length, MAX_RW_COUNT)}) does not lie in user space",
        )
    return IovIter(it, (iov, mem), mem=mem)
