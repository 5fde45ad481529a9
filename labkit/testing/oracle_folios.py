"""Oracles of the two folio-backed iterator types, ITER_XARRAY and ITER_FOLIOQ, in the
flat-position style of :mod:`labkit.testing.oracle` (whose rules they share)."""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

import numpy as np

from labkit.testing.oracle import MAX_RW_COUNT, PAGE_SIZE, OracleMisuse


class _FolioCopies:
    """The copies of the two folio oracles: bytes move through ``_move`` (the arena
    offsets of the next bytes, up to the first without one)."""

    dest: bool
    memory: np.ndarray

    def _move(self, n: int) -> list[int]:
        raise NotImplementedError

    def copy_to(self, data: bytes) -> int:
        if not self.dest:
            raise OracleMisuse("copy_to_iter into a source")
        offs = self._move(len(data))
        self.memory[offs] = np.frombuffer(data, np.uint8)[: len(offs)]
        return len(offs)

    def copy_from(self, n: int) -> bytes:
        if self.dest:
            raise OracleMisuse("copy_from_iter out of a destination")
        return self.memory[self._move(n)].tobytes()

    def zero(self, n: int) -> int:
        if not self.dest:
            raise OracleMisuse("zero into a source")
        offs = self._move(n)
        self.memory[offs] = 0
        return len(offs)


# The same flat-position idea for the two folio-backed types.  Memory is an
# arena (a numpy copy of a real mapping) and every folio is a page-aligned
# range of it, given by its arena offset.  A byte position either has an
# arena offset or none (a hole in the xarray, a cleared slot in the queue);
# copies move bytes up to the first byte without one.

FOLIOQ_NR_SLOTS = 31


def _pages_needed(size: int, start: int, maxpages: int) -> int:
    """The kernel's want_pages_array(): pages a listing may fill."""
    return min(-(-(size + start) // PAGE_SIZE), maxpages)


@dataclass
class XarrayOracle(_FolioCopies):
    """An ITER_XARRAY: ``folios`` maps first page index -> (order, arena offset).

    The position is ``pos`` bytes from file position ``start`` (the kernel's
    iov_offset); advance and revert move it and look at no folio; copies stop
    at the first hole; page listing stops at the first hole too.
    """

    folios: dict[int, tuple[int, int]]
    start: int
    count: int
    dest: bool
    memory: np.ndarray
    pos: int = 0

    def __post_init__(self) -> None:
        self.span = self.count
        self.cover: dict[int, int] = {}  # page index -> first index of its folio
        for first, (order, _) in self.folios.items():
            for k in range(1 << order):
                self.cover[first + k] = first

    def folio_at(self, filepos: int) -> tuple[int, int] | None:
        """(arena offset of the byte, bytes left in its folio), or None at a hole."""
        first = self.cover.get(filepos // PAGE_SIZE)
        if first is None:
            return None
        order, off = self.folios[first]
        inside = filepos - first * PAGE_SIZE
        return off + inside, (PAGE_SIZE << order) - inside

    def state(self) -> tuple[int, int, int, int]:
        return (self.count, self.pos, 0, 0)

    def advance(self, n: int) -> None:
        n = min(n, self.count)
        self.pos += n
        self.count -= n

    def revert(self, n: int) -> None:
        if n == 0:
            return
        if n > MAX_RW_COUNT:
            raise OracleMisuse("revert > MAX_RW_COUNT")
        if n > self.pos:
            raise OracleMisuse("revert past the start (the kernel BUG()s)")
        self.pos -= n
        self.count += n

    def truncate(self, n: int) -> None:
        self.count = min(self.count, n)

    def reexpand(self, n: int) -> None:
        if n > self.span - self.pos:
            raise OracleMisuse("reexpand past the range given at construction")
        self.count = n

    def _run(self, n: int) -> list[int]:
        """Arena offsets of the next bytes up to n, stopping at a hole."""
        out: list[int] = []
        p = self.start + self.pos
        while len(out) < n:
            here = self.folio_at(p)
            if here is None:
                break
            off, left = here
            k = min(left, n - len(out))
            out.extend(range(off, off + k))
            p += k
        return out

    def _move(self, n: int) -> list[int]:
        offs = self._run(min(n, self.count))
        self.pos += len(offs)
        self.count -= len(offs)
        return offs

    def single_seg_count(self) -> int:
        return self.count

    def iovec(self, base: int) -> tuple[int, int]:
        here = self.folio_at(self.start + self.pos)
        if here is None:
            return (0, 0)
        return (base + here[0], min(self.count, here[1]))

    def npages(self, maxpages: int) -> int:
        if self.count == 0 or maxpages <= 0:
            return 0
        return min(-(-((self.start + self.pos) % PAGE_SIZE + self.count) // PAGE_SIZE), maxpages)

    def alignment(self) -> int:
        return (self.start + self.pos) | self.count  # even for count 0, as the kernel

    def extract(self, maxsize: int, maxpages: int, base: int) -> tuple[int, int, list[int]]:
        size = min(maxsize, self.count, MAX_RW_COUNT)
        if size == 0:
            return (0, 0, [])
        filepos = self.start + self.pos
        offset0 = filepos % PAGE_SIZE
        want = _pages_needed(size, offset0, maxpages)
        pages = []
        index = filepos // PAGE_SIZE
        while len(pages) < want and self.folio_at(index * PAGE_SIZE) is not None:
            pages.append(base + self.folio_at(index * PAGE_SIZE)[0])
            index += 1
        if not pages:
            return (0, offset0, [])
        length = min(len(pages) * PAGE_SIZE - offset0, size)
        self.advance(length)
        return (length, offset0, pages)


@dataclass
class FolioqOracle(_FolioCopies):
    """An ITER_FOLIOQ over a queue given as flat slots from its head.

    ``slots[g]`` is (arena offset or None, folio size) for every slot up to the
    last one filled; slot g is slot ``g % 31`` of segment ``g // 31``.  The
    position is a flat slot ``g`` and the offset ``off`` in its folio, as the
    kernel keeps them (a walk that ends at a folio's end is on the next slot
    with offset 0, except a page listing, which stays at the folio's end).
    """

    slots: list[tuple[int | None, int]]
    nsegs: int
    first: int
    offset: int
    count: int
    dest: bool
    memory: np.ndarray
    at_slot_31: bool = False  # "past slot 30 of the previous segment", not yet moved on

    def __post_init__(self) -> None:
        self.starts = [0]
        for _, size in self.slots:
            self.starts.append(self.starts[-1] + size)
        self.g = self.first
        self.off = self.offset
        self.done = 0

    # ---- positions ----------------------------------------------------------------

    @property
    def total(self) -> int:
        return self.starts[-1]

    @property
    def flat(self) -> int:
        return self.starts[min(self.g, len(self.slots))] + self.off

    def _hold(self, p: int) -> None:
        """Go to the slot that holds flat byte p (past the last slot at the end)."""
        self.g = len(self.slots) if p >= self.total else bisect_right(self.starts, p) - 1
        self.off = p - self.starts[self.g] if self.g < len(self.slots) else 0
        self.at_slot_31 = False

    def where(self) -> tuple[int, int, int]:
        """(segment, slot, iov_offset), as the kernel's state says it."""
        g = self.g
        past_end = g % FOLIOQ_NR_SLOTS == 0 and g > 0 and g // FOLIOQ_NR_SLOTS >= self.nsegs
        if self.at_slot_31 or past_end:
            return (g // FOLIOQ_NR_SLOTS - 1, FOLIOQ_NR_SLOTS, self.off)
        return (g // FOLIOQ_NR_SLOTS, g % FOLIOQ_NR_SLOTS, self.off)

    def state(self) -> tuple[int, int, int, int]:
        return (self.count, self.off, 0, self.g - self.first)

    def _size(self, g: int) -> int:
        return self.slots[g][1] if g < len(self.slots) else PAGE_SIZE

    # ---- operations -----------------------------------------------------------------

    def advance(self, n: int) -> None:
        if self.count == 0:
            return
        n = min(n, self.count)
        self.count -= n
        self.done += n
        self._hold(self.flat + n)

    def revert(self, n: int) -> None:
        if n == 0:
            return
        if n > MAX_RW_COUNT:
            raise OracleMisuse("revert > MAX_RW_COUNT")
        if n > self.done:
            raise OracleMisuse("revert past the iterator's first byte")
        self.count += n
        self.done -= n
        if n <= self.off:
            self.off -= n
        else:
            self._hold(self.flat - n)

    def truncate(self, n: int) -> None:
        self.count = min(self.count, n)

    def reexpand(self, n: int) -> None:
        if n > self.total - self.flat:
            raise OracleMisuse("reexpand past the end of the queue")
        self.count = n

    def _run(self, n: int) -> list[int]:
        """Arena offsets of the next bytes up to n, stopping at a slot without a folio."""
        out: list[int] = []
        p = self.flat
        while len(out) < n and p < self.total:
            g = bisect_right(self.starts, p) - 1
            addr, size = self.slots[g]
            if addr is None:
                break
            inside = p - self.starts[g]
            k = min(size - inside, n - len(out))
            out.extend(range(addr + inside, addr + inside + k))
            p += k
        return out

    def _move(self, n: int) -> list[int]:
        n = min(n, self.count)
        if n == 0:
            return []
        offs = self._run(n)
        self.count -= len(offs)
        self.done += len(offs)
        self._hold(self.flat + len(offs))
        return offs

    def single_seg_count(self) -> int:
        # the kernel: the whole folio's size (not what is left of it), at most count
        return min(self._size(self.g), self.count) if self.count else 0

    def iovec(self, base: int) -> tuple[int, int]:
        if self.g >= len(self.slots) or self.slots[self.g][0] is None:
            return (0, 0)
        addr, size = self.slots[self.g]
        return (base + addr + self.off, min(self.count, size - self.off))

    def npages(self, maxpages: int) -> int:
        if self.count == 0 or maxpages <= 0:
            return 0
        return min(-(-(self.off % PAGE_SIZE + self.count) // PAGE_SIZE), maxpages)

    def alignment(self) -> int:
        return self.off | self.count

    def extract(self, maxsize: int, maxpages: int, base: int) -> tuple[int, int, list[int]]:
        size = min(maxsize, self.count, MAX_RW_COUNT)
        if size == 0:
            return (0, 0, [])
        self.at_slot_31 = False
        p = self.flat
        offset0 = self.off % PAGE_SIZE
        limit = min(size, _pages_needed(size, offset0, maxpages) * PAGE_SIZE - offset0)
        offs = self._run(limit)
        runs = np.asarray(offs, dtype=np.int64) // PAGE_SIZE  # every page the bytes touch, in order
        keep = np.concatenate([[True], runs[1:] != runs[:-1]]) if len(offs) else []
        pages = [base + int(r) * PAGE_SIZE for r in runs[keep]] if len(offs) else []
        self.count -= len(offs)
        self.done += len(offs)
        end = p + len(offs)
        if offs and len(offs) == limit:
            # the walk stops after its last piece: at a folio's end it stays on that folio
            g = bisect_right(self.starts, end - 1) - 1
            self.g, self.off = g, end - self.starts[g]
        else:
            self._hold(end)
        return (len(offs), offset0, pages)
