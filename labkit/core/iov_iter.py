"""``IovIter``: the kernel's ``struct iov_iter`` over real memory.

Each iterator is a C ``struct lk_iov_iter`` (``labkit/csrc/core/iov_iter.h``) whose
segments point into Python-owned buffers that the iterator keeps alive.  The
operations are the kernel's, with today's semantics; see the method
docstrings for the few places where the model refuses what the kernel trusts.
"""

from __future__ import annotations

import errno
import threading
from collections.abc import Iterable, Sequence
from typing import Any

from labkit._args import size_arg
from labkit._ffi import check, ffi, lib
from labkit.core.extract import extract_pages
from labkit.core.folioq import new_folio_queue_iter
from labkit.core.iter_args import (
    ITER_DEST,
    ITER_SOURCE,
    MAX_BVEC_FIELD,
    TYPE_NAMES,
    Direction,
    address_of,
    buffer_arg,
    direction_arg,
    released_on_error,
)
from labkit.core.pagecache import new_xarray_iter
from labkit.errors import IterMisuseError


class _ClassOrInstanceMethod:
    """``IovIter.iovec(...)`` builds an IOVEC iterator; ``it.iovec()`` is its current segment.

    The kernel uses the one name for both ideas (``iov_iter_init`` builds an
    "iovec" iterator, ``iov_iter_iovec()`` returns the current iovec), and so
    does labkit's API: on the class the name is the constructor, on an
    instance it is the accessor.
    """

    def __init__(self, on_class: Any, on_instance: Any) -> None:
        self._on_class = on_class
        self._on_instance = on_instance
        self.__doc__ = (
            f"On the class: {on_class.__func__.__doc__}\n\nOn an instance: {on_instance.__doc__}"
        )

    def __get__(self, obj: Any, cls: type | None = None) -> Any:
        if obj is None:
            return self._on_class.__get__(cls, cls)
        return self._on_instance.__get__(obj, cls)


class IovIter:
    """An iterator over memory segments, as the kernel's ``struct iov_iter``.

    Build one with the classmethods named after the kernel's constructors
    (:meth:`ubuf`, :meth:`iovec`, :meth:`kvec`, :meth:`bvec`, :meth:`discard`,
    :meth:`xarray`, :meth:`folio_queue`) or with :func:`labkit.import_iovec`
    and friends.  The iterator keeps alive
    every buffer it points into.

    Every operation holds the iterator's lock across its C call (cffi releases
    the GIL there): threads sharing an iterator see one operation after another.
    """

    __slots__ = ("_it", "_keep", "_mem", "_lock", "heap_iovecs", "__weakref__")

    def __init__(
        self, c_iter: Any, keep: Sequence[Any] = (), mem: Any = None, heap_iovecs: bool = False
    ) -> None:
        """Wrap a C iterator (internal: use the classmethods or the import functions)."""
        self._it = c_iter
        self._keep = tuple(keep)
        self._mem = mem
        self._lock = threading.RLock() if mem is None else None  # else mem.lock
        #: True when an import allocated the iovec array (more than fast_segs segments).
        self.heap_iovecs = heap_iovecs

    # ---- constructors ------------------------------------------------------

    @classmethod
    def ubuf(cls, direction: int, buf: Any) -> IovIter:
        """One user buffer (``iov_iter_ubuf``)."""
        d = direction_arg(direction)
        cbuf = buffer_arg(buf, writable=d == ITER_DEST)
        it = ffi.new("struct lk_iov_iter *")
        with released_on_error([cbuf]):
            check(lib.lk_iter_ubuf(it, d, address_of(cbuf), len(cbuf)), "ubuf")
        return cls(it, (cbuf,))

    @classmethod
    def _segments(
        cls, direction: int, bufs: Iterable[Any], count: int | None, kind: str
    ) -> IovIter:
        d = direction_arg(direction)
        cbufs: list[Any] = []
        with released_on_error(cbufs):
            for k, b in enumerate(bufs):
                cbufs.append(buffer_arg(b, writable=d == ITER_DEST, what=f"{kind} segment {k}"))
            segs = ffi.new("struct lk_iovec[]", max(len(cbufs), 1))
            for k, cb in enumerate(cbufs):
                segs[k].iov_base = address_of(cb)
                segs[k].iov_len = len(cb)
            total = sum(len(cb) for cb in cbufs)
            count = total if count is None else size_arg(count, "count")
            if count > total:
                raise ValueError(f"{kind}: count {count} exceeds the segments' {total} bytes")
            it = ffi.new("struct lk_iov_iter *")
            init = lib.lk_iter_init if kind == "iovec" else lib.lk_iter_kvec
            check(init(it, d, segs, len(cbufs), count), kind)
        return cls(it, (segs, *cbufs))

    @classmethod
    def _new_iovec(cls, direction: int, bufs: Iterable[Any], count: int | None = None) -> IovIter:
        """An array of user segments (``iov_iter_init``); count defaults to their total."""
        return cls._segments(direction, bufs, count, "iovec")

    @classmethod
    def kvec(cls, direction: int, bufs: Iterable[Any], count: int | None = None) -> IovIter:
        """An array of kernel segments (``iov_iter_kvec``); count defaults to their total."""
        return cls._segments(direction, bufs, count, "kvec")

    @classmethod
    def bvec(
        cls, direction: int, bvecs: Iterable[tuple[Any, int, int]], count: int | None = None
    ) -> IovIter:
        """An array of (page_buf, offset, length) (``iov_iter_bvec``).

        ``page_buf`` stands for the page (or the folio: several contiguous pages)
        and ``offset``/``length`` select the bytes inside it; both must fit in
        ``page_buf`` and in 32 bits, as the kernel's ``bv_offset``/``bv_len``.
        """
        d = direction_arg(direction)
        entries = list(bvecs)
        segs = ffi.new("struct lk_bvec[]", max(len(entries), 1))
        keep: list[Any] = [segs]
        with released_on_error(keep):
            return cls._bvec_fill(d, entries, segs, keep, count)

    @classmethod
    def bvec_from_table(cls, direction: int, table: Any, nr_segs: int, keep: Any = ()) -> IovIter:
        """A BVEC over the first ``nr_segs`` entries of a filled C ``struct lk_bvec[]``, count
        their total; ``keep``: the memory they point at, kept while the iterator lives."""
        d, n = direction_arg(direction), size_arg(nr_segs, "nr_segs")
        if n > len(table):
            raise ValueError(f"bvec_from_table: {n} entries asked of a table of {len(table)}")
        it = ffi.new("struct lk_iov_iter *")
        total = sum(int(table[k].bv_len) for k in range(n))
        check(lib.lk_iter_bvec(it, d, table, n, total), "bvec")
        return cls(it, [table, *keep])

    @classmethod
    def _bvec_fill(cls, d: Direction, entries: list, segs: Any, keep: list, count: Any) -> IovIter:
        total = 0
        for k, entry in enumerate(entries):
            try:
                page_buf, offset, length = entry
            except (TypeError, ValueError):
                raise TypeError(f"bvec {k} must be (page_buf, offset, length)") from None
            cb = buffer_arg(page_buf, writable=d == ITER_DEST, what=f"bvec {k} page_buf")
            keep.append(cb)
            offset, length = size_arg(offset, "offset"), size_arg(length, "length")
            if offset > MAX_BVEC_FIELD or length > MAX_BVEC_FIELD or offset + length > len(cb):
                raise ValueError(
                    f"bvec {k}: offset {offset} + length {length} does not fit in its "
                    f"{len(cb)}-byte page_buf (or in 32 bits)"
                )
            segs[k].bv_page = address_of(cb)
            segs[k].bv_offset = offset
            segs[k].bv_len = length
            total += length
        count = total if count is None else size_arg(count, "count")
        if count > total:
            raise ValueError(f"bvec: count {count} exceeds the segments' {total} bytes")
        it = ffi.new("struct lk_iov_iter *")
        check(lib.lk_iter_bvec(it, d, segs, len(entries), count), "bvec")
        return cls(it, keep)

    @classmethod
    def discard(cls, direction: int, count: int) -> IovIter:
        """A count of bytes to throw away (``iov_iter_discard``): ITER_DEST only."""
        d = direction_arg(direction)
        if d != ITER_DEST:
            raise IterMisuseError("discard: ITER_DISCARD is a destination only (kernel: BUG_ON)")
        it = ffi.new("struct lk_iov_iter *")
        check(lib.lk_iter_discard(it, d, size_arg(count, "count")), "discard")
        return cls(it)

    @classmethod
    def xarray(cls, direction: int, xarray: Any, start: int, count: int) -> IovIter:
        """``count`` bytes of a page-cache mapping from file position ``start``
        (``iov_iter_xarray``).

        ``xarray`` is a :class:`labkit.PageCache`; the walk starts in the folio
        that covers index ``start >> 12``.  Folios need not be present when the
        iterator is built; a copy stops at the first missing one (see
        :mod:`labkit.core.pagecache` for how the kernel differs there).

        Raises:
            ValueError: for a bad direction or a range past the largest file position.
        """
        return cls(new_xarray_iter(direction, xarray, start, count), (xarray,), mem=xarray)

    @classmethod
    def folio_queue(
        cls,
        direction: int,
        folioq: Any,
        first_slot: int = 0,
        offset: int = 0,
        count: int | None = None,
        *,
        segment: int = 0,
    ) -> IovIter:
        """``count`` bytes of a folio queue from ``offset`` in slot ``first_slot``
        (``iov_iter_folio_queue``, Linux 6.12+).

        ``folioq`` is a :class:`labkit.FolioQueue`; ``segment`` picks the queue
        segment the kernel would be given (default: the head).  ``first_slot``
        may be 31 (past the segment's last slot: the walk goes on in the next
        segment); count defaults to every byte from there to the queue's end.

        Raises:
            ValueError: for a bad direction, a slot above 31, an offset at or past
                the end of the slot's folio, or a count past the end of the queue.
            IterMisuseError: if the queue was freed.
        """
        it = new_folio_queue_iter(direction, folioq, first_slot, offset, count, segment)
        return cls(it, (folioq,), mem=folioq)

    # ---- state -------------------------------------------------------------

    @property
    def iter_type(self) -> str:
        """ "UBUF", "IOVEC", "KVEC", "BVEC", "DISCARD", "XARRAY" or "FOLIOQ"."""
        return TYPE_NAMES[self._it.iter_type]

    @property
    def direction(self) -> Direction:
        """ITER_DEST (a read fills it) or ITER_SOURCE (a write drains it)."""
        return Direction(int(self._it.data_source))

    @property
    def count(self) -> int:
        """Bytes left."""
        return int(self._it.count)

    @property
    def iov_offset(self) -> int:
        """Bytes consumed in the current segment (for UBUF: in the buffer)."""
        return int(self._it.iov_offset)

    @property
    def nr_segs(self) -> int:
        """Segments left, the current one included (0 for XARRAY and FOLIOQ, which
        have no array: there the kernel's nr_segs shares its storage with
        xarray_start and folioq_slot)."""
        if self._it.iter_type in (lib.LK_ITER_XARRAY, lib.LK_ITER_FOLIOQ):
            return 0
        return int(self._it.nr_segs)

    @property
    def folioq_slot(self) -> int:
        """FOLIOQ: the slot of the current folio in the current queue segment."""
        return int(self._it.folioq_slot)

    @property
    def xarray_start(self) -> int:
        """XARRAY: the file position of the iterator's first byte."""
        return int(self._it.xarray_start)

    @property
    def backing(self) -> Any:
        """What owns the memory walked, when something does: the UserMemory of an
        import, the PageCache of an XARRAY, the FolioQueue of a FOLIOQ; else None."""
        return self._mem

    @property
    def user_backed(self) -> bool:
        """True for UBUF and IOVEC (user memory)."""
        return bool(self._it.user_backed)

    @property
    def seg_index(self) -> int:
        """Index of the current segment in the array the iterator was built on (model only;
        FOLIOQ: slots from the first one, XARRAY: 0)."""
        return int(lib.lk_iter_seg_index(self._it))

    @property
    def visited(self) -> int:
        """Segments examined by the last advance or revert (model only; no clock needed)."""
        return int(self._it.visited)

    @property
    def c_iter(self) -> Any:
        """The C ``struct lk_iov_iter *`` (for labkit's own C calls)."""
        return self._it

    def state(self) -> dict[str, int | str]:
        """The iterator's state as a dict (type, direction, count, iov_offset, nr_segs, seg).

        Read without the lock (a freed FolioQueue's iterator can still be shown)."""
        return {
            "type": self.iter_type,
            "direction": self.direction.name,
            "count": self.count,
            "iov_offset": self.iov_offset,
            "nr_segs": self.nr_segs,
            "seg": self.seg_index,
        }

    def __repr__(self) -> str:
        s = self.state()
        return (
            f"IovIter({s['type']}, ITER_{s['direction']}, count={s['count']}, "
            f"iov_offset={s['iov_offset']}, nr_segs={s['nr_segs']}, seg={s['seg']})"
        )

    # ---- moving the position --------------------------------------------

    def advance(self, n: int) -> None:
        """Skip ``n`` bytes (clamped to count), stepping over finished and empty segments."""
        self._c(lib.lk_iter_advance, size_arg(n))

    def revert(self, n: int) -> None:
        """Walk back ``n`` bytes.

        Raises:
            IterMisuseError: for a revert past the iterator's first byte (a BUG
                in the kernel), of more than MAX_RW_COUNT (a WARN), or that
                would take a DISCARD's count past SIZE_MAX; the iterator is
                left unchanged.
        """
        ret = self._c(lib.lk_iter_revert, size_arg(n))
        if ret == -errno.ERANGE:
            raise IterMisuseError(
                f"revert({n}) goes past the start of the iterator (the kernel would BUG)"
            )
        if ret == -errno.EOVERFLOW:
            raise IterMisuseError(
                f"revert({n}) would take count past SIZE_MAX (count is {self.count})"
            )
        if ret < 0:
            raise IterMisuseError(
                f"revert({n}) is more than MAX_RW_COUNT (the kernel WARNs and ignores it)"
            )

    def truncate(self, n: int) -> None:
        """Limit count to ``n`` (no effect if count is already smaller)."""
        self._c(lib.lk_iter_truncate, size_arg(n))

    def reexpand(self, n: int) -> None:
        """Set count to ``n`` again after a truncate.

        Raises:
            IterMisuseError: if ``n`` is more than the segments hold from the
                current position (the kernel trusts its caller here).
        """
        n = size_arg(n)
        with self._locked():
            ret = lib.lk_iter_reexpand(self._it, n)
            capacity = lib.lk_iter_capacity(self._it)
        if ret < 0:
            raise IterMisuseError(f"reexpand({n}): only {capacity} bytes are left in the segments")

    def single_seg_count(self) -> int:
        """Bytes left in the current segment (count if there is at most one segment)."""
        return int(self._c(lib.lk_iter_single_seg_count))

    def _current_iovec(self) -> tuple[int, int]:
        """The current segment as (address, length), as ``iov_iter_iovec()``.

        Answers for UBUF (as proposed by Al Viro in the 2023 thread), IOVEC,
        KVEC and BVEC; for XARRAY and FOLIOQ, the rest of the current folio.
        (0, 0) when no segment is left (or no folio holds the current byte).

        Raises:
            IterMisuseError: for DISCARD, which has no memory.
        """
        addr = ffi.new("uintptr_t *")
        length = ffi.new("size_t *")
        ret = self._c(lib.lk_iter_current, addr, length)
        if ret == -errno.ENODATA:
            return (0, 0)
        if ret < 0:
            raise IterMisuseError("iovec(): a DISCARD iterator has no segments")
        return (int(addr[0]), int(length[0]))

    iovec = _ClassOrInstanceMethod(_new_iovec, _current_iovec)

    def npages(self, maxpages: int) -> int:
        """Pages the remaining bytes touch, at most ``maxpages``."""
        maxpages = min(size_arg(maxpages, "maxpages"), 2**31 - 1)
        return int(self._c(lib.lk_iter_npages, maxpages))

    def alignment(self) -> int:
        """OR of every remaining segment's address and length (``iov_iter_alignment``)."""
        return int(self._c(lib.lk_iter_alignment))

    def extract_pages(self, maxsize: int, maxpages: int) -> Any:
        """List the pages under the next bytes and advance past them (``iov_iter_extract_pages``).

        Returns an :class:`labkit.core.extract.ExtractedPages` (length, offset,
        pages): at most ``maxpages`` page addresses holding at most ``maxsize``
        bytes (also limited by count and MAX_RW_COUNT), and the offset of the
        first byte in the first page.  See :mod:`labkit.core.extract` per type.

        Raises:
            ValueError: if maxpages is 0.
            OSError: EFAULT for DISCARD, or when the first user page is not mapped.
        """
        with self._locked():
            discard = self.iter_type == "DISCARD"
            return extract_pages(self.c_iter, self.count, discard, maxsize, maxpages)

    # ---- moving bytes ------------------------------------------------------

    def _locked(self) -> Any:
        """Held across every C call on ``c_iter``: the lock of what owns the memory (a
        freed FolioQueue's refuses entry), else the iterator's own."""
        return self._mem.lock if self._mem is not None else self._lock

    def _c(self, fn: Any, *args: Any) -> Any:
        """``fn(c_iter, *args)``, a C call on the iterator, under :meth:`_locked`."""
        with self._locked():
            return fn(self._it, *args)

    def copy_to_iter(self, data: Any) -> int:
        """Copy ``data`` into the iterator's memory; returns bytes copied.

        At most count bytes are copied.  Imported user memory is checked here,
        not at import, as the kernel's ``copy_to_user()`` faults here: the copy
        stops at the first byte that is not mapped writable (a hole, a
        read-only or unmapped page), after moving every byte before it, and
        the iterator is advanced by exactly the bytes copied.  A return of 0
        with bytes asked for is the fault a system call reports as EFAULT.

        Raises:
            IterMisuseError: if the iterator is ITER_SOURCE (the kernel WARNs).
        """
        with buffer_arg(data, writable=False, what="data") as src, self._locked():
            ret = lib.lk_copy_to_iter(src, len(src), self._it)
        if ret < 0:
            raise IterMisuseError(
                "copy_to_iter into an ITER_SOURCE iterator (the kernel WARNs and copies nothing)"
            )
        return int(ret)

    def copy_from_iter(self, n: int) -> bytes:
        """Copy up to ``n`` bytes out of the iterator's memory.

        Imported user memory is checked as in :meth:`copy_to_iter`: the copy
        stops at the first byte that is not mapped readable, and returns (and
        advances past) the bytes before it.

        Raises:
            IterMisuseError: if the iterator is ITER_DEST (the kernel WARNs).
        """
        if not self._it.data_source:
            raise IterMisuseError(
                "copy_from_iter out of an ITER_DEST iterator (the kernel WARNs and copies nothing)"
            )
        n = size_arg(n)
        with self._locked():
            n = min(n, self.count)
            out = bytearray(n)
            with ffi.from_buffer(out) as dst:
                ret = lib.lk_copy_from_iter(dst, n, self._it)
        return bytes(out[:ret])

    def zero(self, n: int) -> int:
        """Write ``n`` zero bytes into the iterator's memory (at most count).

        Faults as :meth:`copy_to_iter` does: it stops at the first byte of
        imported user memory that is not mapped writable; returns the bytes zeroed.

        Raises:
            IterMisuseError: if the iterator is ITER_SOURCE (see ``lk_iov_iter_zero``).
        """
        with self._locked():
            ret = lib.lk_iov_iter_zero(size_arg(n), self._it)
        if ret < 0:
            raise IterMisuseError("zero() into an ITER_SOURCE iterator")
        return int(ret)


__all__ = [
    "ITER_DEST",
    "ITER_SOURCE",
    "IovIter",
    "buffer_arg",
]
