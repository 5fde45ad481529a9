"""``PageCache``: an XArray of folios indexed by page index, and ITER_XARRAY over it.

The kernel keeps a file's cached pages in ``mapping->i_pages``, an XArray
indexed by page index (file position >> 12).  A folio of order ``n`` (``2**n``
pages) is stored at an index that is a multiple of ``2**n`` and covers the
``2**n`` indices from there.  :class:`PageCache` is that table over real
memory (``labkit/csrc/core/iov_xarray.c``); ``IovIter.xarray(direction, cache,
start, count)`` walks ``count`` bytes of it from file position ``start``, as
``iov_iter_xarray()`` does.

Holes: an index with no folio.  The model's copies stop at the first hole
(the bytes before it are moved, the iterator is left there); the kernel's
iterate_xarray() skips missing indices and goes on with the next folio
present, landing the bytes at an offset that folio does not hold, which is a
caller bug (the range must be populated and pinned).  Page listing
(``extract_pages``) stops at a hole in the kernel as in the model.
"""

from __future__ import annotations

import errno
import operator
import threading
from typing import Any

from labkit._args import int_arg, size_arg
from labkit._ffi import ffi, lib, owned, raise_errno
from labkit.core.folio import PAGE_SHIFT, PAGE_SIZE, Folio, FolioHolder, order_arg
from labkit.core.iter_args import direction_arg

MAX_PAGECACHE_ORDER = int(lib.LK_MAX_PAGECACHE_ORDER)
"""The largest folio order a page-cache mapping holds (x86-64: 9, i.e. 2 MiB)."""
MAX_LFS_FILESIZE = int(lib.LK_MAX_LFS_FILESIZE)
"""The largest file position (loff_t): a range must end at or before it."""
MAX_INDEX = MAX_LFS_FILESIZE >> PAGE_SHIFT
"""The largest page index a folio can cover."""


def _index_arg(index: Any) -> int:
    return int_arg(index, "page index", 0, MAX_INDEX)


class PageCache(FolioHolder):
    """A file's page cache: folios of order 0..9 over real memory, by page index.

    ``lock`` serialises changes of the table with every C call that reads it
    (cffi releases the GIL during C calls); labkit's iterators take it.
    """

    MAX_ORDER = MAX_PAGECACHE_ORDER

    def __init__(self) -> None:
        self._xa = owned(lib.lk_xa_new, lib.lk_xa_free, "the XArray")
        self._folios: dict[int, Folio] = {}
        self._index_of: dict[int, int] = {}  # id(folio) -> its index (the folio is held)
        self.lock = threading.RLock()

    @property
    def c_xarray(self) -> Any:
        """The C ``struct lk_xarray *`` (for labkit's own C calls)."""
        return self._xa

    def add(self, index: int, folio: Folio | int = 0) -> Folio:
        """Store a folio at page ``index`` (``filemap_add_folio()``) and return it.

        Args:
            index: the folio's first page index, a multiple of ``2**order``.
            folio: a :class:`Folio`, or an order (0..9) to allocate a fresh one.

        Raises:
            ValueError: for an order above 9 or an index that is not a
                multiple of ``2**order`` or runs past the largest file position.
            OSError: EEXIST if an index the folio would cover holds one already.
        """
        index = _index_arg(index)
        if not isinstance(folio, Folio):
            folio = Folio.alloc(order_arg(folio, self.MAX_ORDER), max_order=self.MAX_ORDER)
        order_arg(folio.order, self.MAX_ORDER)
        if index % folio.nr_pages:
            raise ValueError(
                f"an order-{folio.order} folio must sit at a multiple of "
                f"{folio.nr_pages}, not at index {index}"
            )
        if index + folio.nr_pages - 1 > MAX_INDEX:
            raise ValueError(f"a folio at index {index} runs past the largest file position")
        with self.lock:
            held = self._index_of.get(id(folio))
            if held is not None:  # a folio has one index (folio->index), one mapping
                raise ValueError(f"add: this folio is already in the page cache at index {held}")
            ret = lib.lk_xa_store(self._xa, index, folio.addr, folio.order)
            if ret == -errno.EEXIST:
                raise_errno(
                    errno.EEXIST,
                    f"add: indices {index}..{index + folio.nr_pages - 1} already hold a folio",
                )
            if ret < 0:
                raise_errno(-ret, f"add: index {index}, {folio!r}")
            self._folios[index] = folio
            self._index_of[id(folio)] = index
        return folio

    def populate(self, first: int, npages: int, order: int = 0) -> list[Folio]:
        """Fill ``npages`` indices from ``first`` with fresh folios of one order.

        Raises:
            ValueError: if ``first`` or ``npages`` is not a multiple of ``2**order``.
        """
        order = order_arg(order, self.MAX_ORDER)
        first, npages = _index_arg(first), size_arg(npages, "npages")
        step = 1 << order
        if first % step or npages % step:
            raise ValueError(f"first and npages must be multiples of {step} for order {order}")
        return [self.add(first + k, order) for k in range(0, npages, step)]

    @classmethod
    def from_buffer(cls, buf: Any, first: int = 0) -> PageCache:
        """Each page of a page-aligned buffer as an order-0 folio, from index ``first``.

        This is the kernel KUnit test's xarray: the buffer's pages stored at
        consecutive indices, so copies through the iterator land in the buffer.
        """
        array = getattr(buf, "array", buf)
        cache = cls()
        size = len(memoryview(array).cast("B"))
        if size % PAGE_SIZE:
            raise ValueError(f"the buffer must be a whole number of pages, got {size} bytes")
        for k in range(size // PAGE_SIZE):
            cache.add(first + k, Folio.of(array[k * PAGE_SIZE : (k + 1) * PAGE_SIZE]))
        return cache

    def erase(self, index: int) -> Folio:
        """Remove the folio that covers page ``index`` (a hole punch) and return it.

        Raises:
            OSError: ENOENT if no folio covers it.
        """
        index = _index_arg(index)
        first = ffi.new("uint64_t *")
        with self.lock:
            if lib.lk_xa_erase(self._xa, index, first) < 0:
                raise_errno(errno.ENOENT, f"erase: no folio covers index {index}")
            folio = self._folios.pop(int(first[0]))
            self._index_of.pop(id(folio), None)
            return folio

    def load(self, index: int) -> tuple[int, Folio] | None:
        """(first index, folio) of the folio that covers page ``index``, or None (a hole)."""
        index = _index_arg(index)
        first, addr, order = ffi.new("uint64_t *"), ffi.new("uintptr_t *"), ffi.new("unsigned *")
        with self.lock:
            if lib.lk_xa_load(self._xa, index, first, addr, order) < 0:
                return None
            return int(first[0]), self._folios[int(first[0])]

    def folios(self) -> list[tuple[int, Folio]]:
        """Every (first index, folio), by index."""
        with self.lock:
            return sorted(self._folios.items())

    def __len__(self) -> int:
        return len(self._folios)

    def pieces(self, start: int, length: int) -> list[tuple[int, int, int]]:
        """The file range ``[start, start + length)`` split at folio boundaries.

        Returns (file position, address, length) per piece, address 0 for a
        hole (the bytes between two folios, or past the last one).
        """
        out: list[tuple[int, int, int]] = []
        pos, end = start, start + length
        for index, folio in self.folios():
            first, last = index * PAGE_SIZE, index * PAGE_SIZE + folio.size
            if last <= pos:
                continue
            if first >= end:
                break
            if first > pos:
                out.append((pos, 0, first - pos))
                pos = first
            n = min(end, last) - pos
            out.append((pos, folio.addr + pos - first, n))
            pos += n
        if pos < end:
            out.append((pos, 0, end - pos))
        return out

    def _held_folios(self) -> list[Folio]:
        with self.lock:
            return list(self._folios.values())

    def __repr__(self) -> str:
        pages = sum(f.nr_pages for f in self._folios.values())
        return f"PageCache({len(self._folios)} folios, {pages} pages)"


def new_xarray_iter(direction: Any, xarray: PageCache, start: Any, count: Any) -> Any:
    """The C iterator of ``IovIter.xarray`` (see its docstring), arguments checked."""
    d = direction_arg(direction)
    if not isinstance(xarray, PageCache):
        raise TypeError(f"xarray must be a labkit.PageCache, not {type(xarray).__name__}")
    try:
        start = operator.index(start)
    except TypeError:
        raise TypeError(f"start must be an integer, not {type(start).__name__}") from None
    count = size_arg(count, "count")
    if not 0 <= start <= MAX_LFS_FILESIZE or count > MAX_LFS_FILESIZE - start:
        raise ValueError(
            f"xarray: the range [{start}, +{count}) does not fit in file "
            f"positions (0..{MAX_LFS_FILESIZE})"
        )
    it = ffi.new("struct lk_iov_iter *")
    with xarray.lock:
        ret = lib.lk_iter_xarray(it, d, xarray.c_xarray, start, count)
    if ret < 0:
        raise_errno(-ret, "xarray")
    return it
