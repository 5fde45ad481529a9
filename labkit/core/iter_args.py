"""The iterator's vocabulary: type names, directions, and Python buffers as C arguments.

Shared by :mod:`labkit.core.iov_iter` and the modules that build iterators
over other memory (:mod:`labkit.core.pagecache`, :mod:`labkit.core.folioq`),
so that none of them needs to import the others.
"""

from __future__ import annotations

import enum
from typing import Any

from labkit._ffi import ffi, lib

TYPE_NAMES = {
    lib.LK_ITER_UBUF: "UBUF",
    lib.LK_ITER_IOVEC: "IOVEC",
    lib.LK_ITER_KVEC: "KVEC",
    lib.LK_ITER_BVEC: "BVEC",
    lib.LK_ITER_DISCARD: "DISCARD",
    lib.LK_ITER_XARRAY: "XARRAY",
    lib.LK_ITER_FOLIOQ: "FOLIOQ",
}
MAX_BVEC_FIELD = 2**32 - 1


class Direction(enum.IntEnum):
    """Data direction, numerically as the kernel's ITER_DEST (READ) and ITER_SOURCE (WRITE)."""

    DEST = lib.LK_ITER_DEST
    SOURCE = lib.LK_ITER_SOURCE

    def __repr__(self) -> str:
        return f"ITER_{self.name}"


ITER_DEST = Direction.DEST
"""A read: data is copied into the iterator's memory."""
ITER_SOURCE = Direction.SOURCE
"""A write: data is copied out of the iterator's memory."""


def direction_arg(direction: Any) -> Direction:
    """Validate a direction (ITER_DEST or ITER_SOURCE, or 0/1)."""
    try:
        return Direction(direction)
    except ValueError:
        raise ValueError(
            f"direction must be ITER_DEST (0) or ITER_SOURCE (1), got {direction!r}"
        ) from None


def buffer_arg(buf: Any, writable: bool, what: str = "buf") -> Any:
    """A cffi ``uint8_t[]`` over a contiguous buffer (kept alive by the result)."""
    try:
        return ffi.from_buffer("uint8_t[]", buf, require_writable=writable)
    except TypeError:
        raise TypeError(
            f"{what} must be a contiguous {'writable ' if writable else ''}buffer "
            f"(numpy array, bytearray, memoryview), not {type(buf).__name__}"
        ) from None
    except BufferError as exc:
        raise TypeError(f"{what}: {exc}") from None


def address_of(cbuf: Any) -> int:
    """The address of a cffi buffer."""
    return int(ffi.cast("uintptr_t", cbuf))


__all__ = [
    "ITER_DEST",
    "ITER_SOURCE",
    "MAX_BVEC_FIELD",
    "TYPE_NAMES",
    "Direction",
    "address_of",
    "buffer_arg",
    "direction_arg",
]
