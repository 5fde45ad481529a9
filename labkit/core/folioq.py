"""``FolioQueue``: a chain of folio-queue segments, and ITER_FOLIOQ over it (Linux 6.12+).

The kernel's ``struct folio_queue`` (include/linux/folio_queue.h, used by
netfs for its rolling buffers) is a doubly linked chain of segments; each has
31 folio slots (PAGEVEC_SIZE) and records each slot's folio order.  Folios
are appended at the tail; a new segment is linked when the tail is full, as
the kernel's users (and its KUnit test) do.  ``IovIter.folio_queue(direction,
queue, first_slot, offset, count)`` walks it as ``iov_iter_folio_queue()``.

A slot can be cleared (``folioq_clear()``): it keeps its order, so the
iterator's advance still steps over its size, but copies stop there.

:meth:`FolioQueue.free` stands for freeing the queue: afterwards the queue
and every iterator over it refuse to be used (:class:`labkit.IterMisuseError`).
The real memory is released only when no Python object refers to it, so a
stale C pointer can never dangle.
"""

from __future__ import annotations

import operator
import threading
from typing import Any

from labkit._args import int_arg, size_arg
from labkit._ffi import ffi, lib, raise_errno
from labkit.core.folio import PAGE_SIZE, Folio, FolioHolder, order_arg
from labkit.core.iter_args import direction_arg
from labkit.errors import IterMisuseError

NR_SLOTS = int(lib.LK_FOLIOQ_NR_SLOTS)
"""Folio slots in one segment (PAGEVEC_SIZE, 31)."""
MAX_FOLIO_ORDER = int(lib.LK_MAX_FOLIO_ORDER)
"""The largest folio order a queue holds (MAX_PAGE_ORDER on x86-64: 10, 4 MiB)."""


class _CheckedLock:
    """The queue's lock, refusing entry once the queue is freed."""

    def __init__(self, queue: FolioQueue) -> None:
        self._queue = queue

    def __enter__(self) -> None:
        self._queue._lock.acquire()
        if self._queue._freed:
            self._queue._lock.release()
            raise IterMisuseError(
                "the folio queue was freed: it and its iterators can no "
                "longer be used (the kernel would touch freed memory)"
            )

    def __exit__(self, *exc: object) -> None:
        self._queue._lock.release()


class FolioQueue(FolioHolder):
    """A queue of folios over real memory, in segments of 31 slots.

    ``lock`` serialises changes of the queue with every C call that reads it
    (labkit's iterators take it) and raises IterMisuseError once the queue is
    freed.
    """

    NR_SLOTS = NR_SLOTS
    MAX_ORDER = MAX_FOLIO_ORDER

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._freed = False
        self._segs: list[Any] = []
        self._folios: list[list[Folio | None]] = []
        self.lock = _CheckedLock(self)
        self._new_segment()

    def _new_segment(self) -> None:
        seg = ffi.new("struct lk_folioq *")  # zeroed, as the kernel's kzalloc + folioq_init
        if self._segs:
            seg.prev = self._segs[-1]
            self._segs[-1].next = seg
        self._segs.append(seg)
        self._folios.append([None] * NR_SLOTS)

    # ---- building ----------------------------------------------------------

    def append(self, folio: Folio | int = 0) -> tuple[int, int]:
        """Add a folio at the tail (``folioq_append()``); returns (segment, slot).

        A new segment is linked when the tail segment is full.

        Args:
            folio: a :class:`Folio`, or an order (0..10) to allocate a fresh one.

        Raises:
            ValueError: for an order above 10.
            IterMisuseError: if the queue was freed.
        """
        if not isinstance(folio, Folio):
            folio = Folio.alloc(order_arg(folio, self.MAX_ORDER), max_order=self.MAX_ORDER)
        order_arg(folio.order, self.MAX_ORDER)
        with self.lock:
            if self._segs[-1].nr >= NR_SLOTS:
                self._new_segment()
            seg = len(self._segs) - 1
            slot = lib.lk_folioq_append(self._segs[seg], folio.addr, folio.order)
            if slot < 0:
                raise_errno(-slot, f"append {folio!r}")
            self._folios[seg][slot] = folio
            return seg, int(slot)

    def extend(self, folios: Any) -> None:
        """Append every folio (or order) of an iterable."""
        for f in folios:
            self.append(f)

    @classmethod
    def from_buffer(cls, buf: Any) -> FolioQueue:
        """Each page of a page-aligned buffer as an order-0 folio, in order.

        This is the kernel KUnit test's folio queue: copies through the iterator
        land in the buffer, so they can be checked against a whole image of it.
        """
        array = getattr(buf, "array", buf)
        size = len(memoryview(array).cast("B"))
        if size % PAGE_SIZE:
            raise ValueError(f"the buffer must be a whole number of pages, got {size} bytes")
        queue = cls()
        for k in range(size // PAGE_SIZE):
            queue.append(Folio.of(array[k * PAGE_SIZE : (k + 1) * PAGE_SIZE]))
        return queue

    def clear(self, segment: int, slot: int) -> Folio | None:
        """Take the folio out of a slot (``folioq_clear()``); the slot keeps its order.

        Raises:
            ValueError: for a segment or slot that was never filled.
            IterMisuseError: if the queue was freed.
        """
        with self.lock:
            seg = self._seg(segment)
            slot = self._slot_arg(slot)
            if lib.lk_folioq_clear(seg, slot) < 0:
                raise ValueError(f"segment {segment} has no slot {slot} (it holds {seg.nr})")
            folio, self._folios[segment][slot] = self._folios[segment][slot], None
            return folio

    def free(self) -> None:
        """Free the queue: it and every iterator over it can no longer be used."""
        with self._lock:
            self._freed = True

    # ---- queries -------------------------------------------------------------

    @property
    def freed(self) -> bool:
        """True once :meth:`free` was called."""
        return self._freed

    @property
    def nr_segments(self) -> int:
        """Segments in the chain."""
        return len(self._segs)

    def segment_count(self, segment: int) -> int:
        """Slots filled in a segment (``folioq_count()``), cleared ones included."""
        return int(self._seg(segment).nr)

    def folio(self, segment: int, slot: int) -> Folio | None:
        """The folio in a slot, or None (never filled, or cleared)."""
        self._seg(segment)
        return self._folios[segment][self._slot_arg(slot)]

    def folio_size(self, segment: int, slot: int) -> int:
        """``folioq_folio_size()``: PAGE_SIZE << the slot's order (4096 for an unfilled slot)."""
        seg = self._seg(segment)
        return PAGE_SIZE << int(seg.orders[self._slot_arg(slot)])

    def __len__(self) -> int:
        """Slots filled in the whole queue."""
        return sum(int(s.nr) for s in self._segs)

    def capacity(self, segment: int = 0, slot: int = 0, offset: int = 0) -> int:
        """Bytes from (segment, slot, offset) to the end of the last slot filled
        (slot may be 31: past the segment's last slot)."""
        slot = self._slot_arg(slot, past_end=True)
        with self.lock:
            return int(lib.lk_folioq_capacity(self._seg(segment), slot, size_arg(offset)))

    def slots(self, segment: int = 0, slot: int = 0) -> list[tuple[int, int]]:
        """(address, size) of every slot from (segment, slot) to the last one filled.

        The address is 0 for a slot without a folio (cleared); sizes are
        ``folio_size()``, the steps the kernel's advance takes.
        """
        out: list[tuple[int, int]] = []
        last = len(out)
        with self._lock:
            for s in range(self._seg_index_arg(segment), len(self._segs)):
                seg = self._segs[s]
                for k in range(slot if s == segment else 0, NR_SLOTS):
                    folio = self._folios[s][k]
                    out.append((folio.addr if folio else 0, PAGE_SIZE << int(seg.orders[k])))
                    if k < seg.nr:
                        last = len(out)
        return out[:last]

    def segment_of(self, c_segment: Any) -> int:
        """The index of a C segment pointer in the chain (for an iterator's state)."""
        for k, seg in enumerate(self._segs):
            if seg == c_segment:
                return k
        raise ValueError("that segment is not in this queue")

    def position(self, it: Any) -> tuple[int, int, int]:
        """Where a FOLIOQ ``IovIter`` over this queue is: (segment, slot, iov_offset)."""
        seg = lib.lk_iter_folioq(it.c_iter)
        if seg == ffi.NULL:
            raise ValueError(f"position: {it.iter_type} is not a FOLIOQ iterator")
        return self.segment_of(seg), it.folioq_slot, it.iov_offset

    def _held_folios(self) -> list[Folio]:
        with self._lock:  # the raw lock: a freed queue still answers
            return [folio for row in self._folios for folio in row if folio is not None]

    def _seg_index_arg(self, segment: Any) -> int:
        try:
            k = operator.index(segment)
        except TypeError:
            raise TypeError(f"segment must be an integer, not {type(segment).__name__}") from None
        if not 0 <= k < len(self._segs):
            raise ValueError(f"segment {segment} is not in 0..{len(self._segs) - 1}")
        return k

    @staticmethod
    def _slot_arg(slot: Any, past_end: bool = False) -> int:
        """A slot index, 0..NR_SLOTS-1 (NR_SLOTS too if ``past_end``): integers only."""
        top = NR_SLOTS if past_end else NR_SLOTS - 1
        return int_arg(slot, "slot", 0, top)

    def _seg(self, segment: Any) -> Any:
        return self._segs[self._seg_index_arg(segment)]

    def c_segment(self, segment: int = 0) -> Any:
        """The C ``struct lk_folioq *`` of a segment (for labkit's own C calls)."""
        return self._seg(segment)

    def __repr__(self) -> str:
        state = ", freed" if self._freed else ""
        return f"FolioQueue({len(self)} folios in {len(self._segs)} segments{state})"


def new_folio_queue_iter(
    direction: Any, folioq: FolioQueue, first_slot: Any, offset: Any, count: Any, segment: Any
) -> Any:
    """The C iterator of ``IovIter.folio_queue`` (see its docstring), arguments checked."""
    d = direction_arg(direction)
    if not isinstance(folioq, FolioQueue):
        raise TypeError(f"folioq must be a labkit.FolioQueue, not {type(folioq).__name__}")
    try:
        first_slot, offset = operator.index(first_slot), operator.index(offset)
    except TypeError:
        raise TypeError("first_slot and offset must be integers") from None
    if not 0 <= first_slot <= NR_SLOTS:
        raise ValueError(f"first_slot must be in 0..{NR_SLOTS}, got {first_slot}")
    with folioq.lock:
        seg = folioq.c_segment(segment)
        filled = first_slot < seg.nr
        size = PAGE_SIZE << int(seg.orders[first_slot]) if filled else 0
        if offset < 0 or (offset >= size if filled else offset != 0):
            where = (
                f"its {size}-byte folio"
                if filled
                else "a slot that holds no folio (only offset 0 is allowed there)"
            )
            raise ValueError(f"folio_queue: offset {offset} is not inside {where}")
        capacity = int(lib.lk_folioq_capacity(seg, first_slot, offset))
        count = capacity if count is None else size_arg(count, "count")
        if count > capacity:
            raise ValueError(
                f"folio_queue: count {count} runs past the end of the queue "
                f"({capacity} bytes from segment {segment}, slot {first_slot}, "
                f"offset {offset})"
            )
        it = ffi.new("struct lk_iov_iter *")
        ret = lib.lk_iter_folio_queue(it, d, seg, first_slot, offset, count)
    if ret < 0:
        raise_errno(-ret, "folio_queue")
    return it
