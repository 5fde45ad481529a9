"""Folios over real memory: the unit the page cache and folio queues hold.

A folio is ``2**order`` contiguous pages (4 KiB each) of real, page-aligned
memory.  :class:`Folio` either allocates fresh memory (:meth:`Folio.alloc`)
or describes memory the caller already has (:meth:`Folio.of`), for example
pages of a :class:`labkit.UserMemory` mapping, so that the bytes an iterator
moves can be compared with a whole image of that buffer.
"""

from __future__ import annotations

import errno
import mmap
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from labkit._args import int_arg
from labkit._ffi import ffi, raise_errno
from labkit.core.iter_args import buffer_arg

PAGE_SIZE = 4096
PAGE_SHIFT = 12


def order_arg(order: Any, max_order: int) -> int:
    """Validate a folio order: an int in 0..max_order (ValueError otherwise)."""
    return int_arg(order, "folio order", 0, max_order)


@dataclass(eq=False)
class Folio:
    """``2**order`` pages of real, page-aligned memory.

    Attributes:
        addr: the address of the first byte (a multiple of 4096).
        order: log2 of the number of pages.
        array: a writable ``numpy.uint8`` view of the ``PAGE_SIZE << order`` bytes.
    """

    addr: int
    order: int
    array: np.ndarray = field(repr=False)
    _owner: Any = field(repr=False, default=None)

    @property
    def size(self) -> int:
        """Bytes in the folio (``folio_size()``)."""
        return PAGE_SIZE << self.order

    @property
    def nr_pages(self) -> int:
        """Pages in the folio (``folio_nr_pages()``)."""
        return 1 << self.order

    def page(self, k: int) -> int:
        """The address of page ``k`` of the folio (``folio_page()``)."""
        if not 0 <= k < self.nr_pages:
            raise ValueError(f"page {k} of an order-{self.order} folio")
        return self.addr + k * PAGE_SIZE

    def holds(self, addr: int, length: int) -> bool:
        """True if ``[addr, addr + length)`` lies inside the folio."""
        return self.addr <= addr and addr + length <= self.addr + self.size

    @classmethod
    def alloc(cls, order: int = 0, *, max_order: int = 10) -> Folio:
        """Fresh zeroed memory for a folio of ``2**order`` pages (an anonymous mapping).

        Raises:
            ValueError: for an order outside ``0..max_order``.
        """
        order = order_arg(order, max_order)
        region = mmap.mmap(-1, PAGE_SIZE << order, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        array = np.frombuffer(region, dtype=np.uint8)
        return cls(addr=array.ctypes.data, order=order, array=array, _owner=region)

    @classmethod
    def of(cls, buf: Any, *, max_order: int = 10) -> Folio:
        """A folio over memory the caller owns: a writable, page-aligned buffer of
        ``PAGE_SIZE << order`` bytes (a numpy array, a memoryview, a slice of a
        :class:`labkit.Mapping`'s ``array``).  The folio keeps the buffer alive.

        Raises:
            TypeError: if ``buf`` is not a writable contiguous buffer.
            ValueError: if it does not start on a page boundary, or its length is
                not a power-of-two number of pages of an order up to ``max_order``.
        """
        array = getattr(buf, "array", buf)  # a labkit.Mapping gives its array
        # buffer_arg: the export is never on the caller's memoryview (gh-77894)
        cbuf = buffer_arg(array, writable=True, what="folio memory")
        addr, size = int(ffi.cast("uintptr_t", cbuf)), len(cbuf)
        if addr % PAGE_SIZE:
            raise ValueError(f"folio memory must start on a page boundary, not at {addr:#x}")
        pages = size // PAGE_SIZE
        if size % PAGE_SIZE or pages == 0 or pages & (pages - 1):
            raise ValueError(
                f"folio memory must be a power-of-two number of pages, got {size} bytes"
            )
        order = order_arg(pages.bit_length() - 1, max_order)
        view = np.frombuffer(ffi.buffer(cbuf), dtype=np.uint8)
        return cls(addr=addr, order=order, array=view, _owner=(cbuf, array))

    def __repr__(self) -> str:
        return f"Folio(addr={self.addr:#x}, order={self.order}, size={self.size})"


class FolioHolder:
    """What every container of folios answers about memory: is a range inside one
    folio it holds, and a view of that range (:class:`labkit.PageCache`,
    :class:`labkit.FolioQueue`)."""

    def _held_folios(self) -> list[Folio]:
        """Every folio held now, taken under the container's lock."""
        raise NotImplementedError

    def is_mapped(self, addr: int, length: int) -> bool:
        """True if ``[addr, addr + length)`` lies inside one folio held here."""
        return self._holding(addr, length) is not None

    def view(self, addr: int, length: int) -> Any:
        """A writable uint8 view of ``length`` bytes at ``addr`` inside one folio.

        Raises:
            OSError: EFAULT if the range is not inside one folio held here.
        """
        folio = self._holding(addr, length)
        if folio is None:
            raise_errno(errno.EFAULT, f"view: [{addr:#x}, +{length}) is not inside one folio")
        return folio.array[addr - folio.addr : addr - folio.addr + length]

    def _holding(self, addr: int, length: int) -> Folio | None:
        if length < 0:
            return None
        return next((f for f in self._held_folios() if f.holds(addr, length)), None)
