"""The iterator's vocabulary: type names, directions, and Python buffers as C arguments.

Shared by :mod:`labkit.core.iov_iter` and the modules that build iterators
over other memory (:mod:`labkit.core.pagecache`, :mod:`labkit.core.folioq`),
so that none of them needs to import the others.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from labkit._args import index_arg
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
    """Validate a direction (ITER_DEST or ITER_SOURCE, or the integers 0/1).

    Raises:
        TypeError: for a direction that is not an integer (1.0, "1", None).
        ValueError: for an integer other than 0 and 1.
    """
    if isinstance(direction, Direction):
        return direction
    n = index_arg(direction, "direction")
    try:
        return Direction(n)
    except ValueError:
        raise ValueError(
            f"direction must be ITER_DEST (0) or ITER_SOURCE (1), got {direction!r}"
        ) from None


def buffer_arg(buf: Any, writable: bool, what: str = "buf") -> Any:
    """A cffi ``uint8_t[]`` over a contiguous buffer of plain bytes (kept alive by the result).

    The export the result holds is taken on a private numpy array over the
    buffer, never on the caller's object: a ``memoryview`` holding an export
    must not be collected in a reference cycle on CPython before 3.12.7
    (gh-77894: its ``tp_clear`` frees the view under the export and the
    interpreter crashes), and numpy arrays are not collected by the cycle
    collector at all.  Release the result (``with``, or ``ffi.release``) as
    soon as it is no longer needed.

    Raises:
        TypeError: if ``buf`` has no buffer, is not C-contiguous, holds Python
            objects (numpy ``object`` arrays), or is read-only when
            ``writable``.
    """
    kind = type(buf).__name__
    try:
        view = memoryview(buf)
    except ValueError as exc:  # a released memoryview
        raise ValueError(f"{what}: {exc}") from None
    except TypeError:
        raise TypeError(
            f"{what} must be a contiguous {'writable ' if writable else ''}buffer "
            f"(numpy array, bytearray, memoryview), not {kind}"
        ) from None
    with view:
        if "O" in view.format:
            raise TypeError(f"{what}: a {kind} of Python objects is not memory to copy into")
        if not view.c_contiguous:
            raise TypeError(f"{what}: the {kind} is not C-contiguous")
        if writable and view.readonly:
            raise TypeError(f"{what} must be writable, and this {kind} is read-only")
        # np.frombuffer shares the view's managed buffer: no export on ``view``
        array = np.frombuffer(view, dtype=np.uint8)
    return ffi.from_buffer("uint8_t[]", array, require_writable=writable)


def release(cbufs: Iterable[Any]) -> None:
    """Release the exports of :func:`buffer_arg` results (before raising, or when done)."""
    for cb in cbufs:
        ffi.release(cb)


@contextmanager
def released_on_error(cbufs: list[Any]) -> Iterator[list[Any]]:
    """Release the exports in ``cbufs`` if the block raises: no export may outlive a
    refused call (one held on a memoryview in the exception's frame is gh-77894)."""
    try:
        yield cbufs
    except BaseException:
        release(cbufs)
        raise


def address_of(cbuf: Any) -> int:
    """The address of a cffi buffer."""
    return int(ffi.cast("uintptr_t", cbuf))


__all__: list[str] = []  # internal: argument checks of the core's iterator modules
