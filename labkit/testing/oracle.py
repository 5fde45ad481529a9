"""An independent, pure-Python oracle of the kernel's iov_iter position rules.

The C core walks segment arrays the way lib/iov_iter.c does.  This oracle
does not: it flattens the iterator into a list of byte addresses (one per byte
the segments hold, in order) and keeps the position as one flat index ``pos``.
The kernel's (segment, iov_offset) pair is then *derived* from ``pos`` with
prefix sums, following the rules today's kernel produces:

* ``advance`` lands on the segment that holds byte ``pos``: it steps over a
  finished segment and every empty segment after it (the loop
  ``if (size < len) break; size -= len`` never stops on a zero-length one).
* a copy (``copy_to_iter``/``copy_from_iter``/``iov_iter_zero``) that ends
  exactly at the end of a segment stops on the NEXT segment with offset 0 and
  does not skip any further empty segments (iterate_iovec/iterate_bvec leave
  the loop as soon as ``len`` reaches 0).  A copy that ends inside a segment
  stays on it.
* ``revert`` lands on the non-empty segment that holds the new ``pos``; when
  it only unwinds bytes of the current segment it keeps the segment.
* nothing moves when ``count`` is 0 (advance) or when no byte is copied.

Errors the model raises instead of the kernel's BUG/WARN are predicted too:
revert past the first byte, revert of more than MAX_RW_COUNT, reexpand past
the bytes the segments hold, a copy against the direction.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field

PAGE_SIZE = 4096
MAX_RW_COUNT = 0x7FFFFFFF & ~(PAGE_SIZE - 1)
SEGMENTED = ("IOVEC", "KVEC", "BVEC")


class OracleMisuse(Exception):
    """The operation is one the model refuses (IterMisuseError expected)."""


@dataclass
class Seg:
    """One segment: its first byte's address, its length, and for BVEC its bv_offset."""

    addr: int
    length: int
    bv_offset: int = 0


@dataclass
class Oracle:
    """The expected state of one iterator.

    ``memory`` is a shadow of the bytes the segments point into, keyed by
    address; copies read and write it in flat order, so overlapping segments
    behave as sequential memcpy calls do.
    """

    kind: str
    dest: bool
    segs: list[Seg]
    count: int
    memory: dict[int, int] = field(default_factory=dict)
    pos: int = 0  # flat byte position (for UBUF: iov_offset)
    idx: int = 0  # current segment index (derived, kept as the kernel keeps it)
    off: int = 0  # iov_offset

    def __post_init__(self) -> None:
        self.starts = [0]
        for s in self.segs:
            self.starts.append(self.starts[-1] + s.length)
        self.flat = [s.addr + k for s in self.segs for k in range(s.length)]

    # ---- derived state ------------------------------------------------------

    @property
    def total(self) -> int:
        return self.starts[-1]

    @property
    def nr_segs(self) -> int:
        if self.kind == "DISCARD":
            return 0
        if self.kind == "UBUF":
            return 1
        return len(self.segs) - self.idx

    @property
    def seg_index(self) -> int:
        return self.idx if self.kind in SEGMENTED else 0

    @property
    def iov_offset(self) -> int:
        return self.off

    def state(self) -> tuple[int, int, int, int]:
        return (self.count, self.iov_offset, self.nr_segs, self.seg_index)

    def _holding(self, p: int) -> int:
        """Index of the non-empty segment that holds flat byte p (len(segs) past the end).

        ``starts`` repeats a value once per empty segment; bisect_right picks
        the last segment starting at or before p, which is the non-empty one.
        """
        if p >= self.total:
            return len(self.segs)
        return bisect_right(self.starts, p) - 1

    def _place_holding(self, p: int) -> None:
        """Position at flat byte p on the segment that holds it (advance/revert rule)."""
        self.pos = p
        self.idx = self._holding(p)
        self.off = p - self.starts[self.idx] if self.idx < len(self.segs) else 0

    def _place_after_copy(self, p: int) -> None:
        """Position after a copy whose last byte was p - 1 (copy rule)."""
        self.pos = p
        last = bisect_right(self.starts, p - 1) - 1
        if p < self.starts[last + 1]:
            self.idx, self.off = last, p - self.starts[last]
        else:
            self.idx, self.off = last + 1, 0

    # ---- operations ---------------------------------------------------------

    def advance(self, n: int) -> None:
        n = min(n, self.count)
        if self.kind == "DISCARD":
            self.count -= n
            return
        if self.kind == "UBUF":
            self.count -= n
            self.pos = self.off = self.off + n
            return
        if self.count == 0:
            return
        self.count -= n
        self._place_holding(self.pos + n)

    def revert(self, n: int) -> None:
        if n == 0:
            return
        if n > MAX_RW_COUNT:
            raise OracleMisuse("revert > MAX_RW_COUNT")
        if self.kind == "DISCARD":
            if self.count + n > 2**64 - 1:
                raise OracleMisuse("revert would wrap count")
            self.count += n
            return
        if n > self.pos:
            raise OracleMisuse("revert past the start")
        self.count += n
        if self.kind == "UBUF":
            self.pos = self.off = self.off - n
        elif n <= self.off:
            self.off -= n
            self.pos -= n
        else:
            self._place_holding(self.pos - n)

    def truncate(self, n: int) -> None:
        self.count = min(self.count, n)

    def capacity(self) -> int:
        if self.kind == "DISCARD":
            return 2**64 - 1
        return self.total - self.pos

    def reexpand(self, n: int) -> None:
        if n > self.capacity():
            raise OracleMisuse("reexpand past the segments")
        self.count = n

    def _move(self, n: int) -> list[int]:
        """Addresses of the next n bytes, and the new position (copy rule)."""
        n = min(n, self.count)
        if n == 0:
            return []
        self.count -= n
        if self.kind == "DISCARD":
            return []
        addrs = self.flat[self.pos : self.pos + n]
        if self.kind == "UBUF":
            self.pos = self.off = self.off + n
        else:
            self._place_after_copy(self.pos + n)
        return addrs

    def copy_to(self, data: bytes) -> int:
        if not self.dest:
            raise OracleMisuse("copy_to_iter into a source")
        before = self.count
        for a, b in zip(self._move(len(data)), data, strict=False):
            self.memory[a] = b
        return before - self.count

    def copy_from(self, n: int) -> bytes:
        if self.dest:
            raise OracleMisuse("copy_from_iter out of a destination")
        return bytes(self.memory[a] for a in self._move(n))

    def zero(self, n: int) -> int:
        if not self.dest:
            raise OracleMisuse("zero into a source")
        before = self.count
        for a in self._move(n):
            self.memory[a] = 0
        return before - self.count

    # ---- queries ------------------------------------------------------------

    def single_seg_count(self) -> int:
        if self.kind in SEGMENTED and self.nr_segs > 1:
            return min(self.count, self.segs[self.idx].length - self.off)
        return self.count

    def iovec(self) -> tuple[int | None, int]:
        if self.kind == "DISCARD":
            raise OracleMisuse("iovec() of DISCARD")
        if self.idx >= len(self.segs):
            return (0, 0)
        s = self.segs[self.idx]
        # a zero-length buffer has no meaningful address: None means "any"
        addr = s.addr + self.off if s.length else None
        if self.kind == "UBUF":
            return (addr, self.count)
        return (addr, min(self.count, s.length - self.off))

    def _pieces(self):
        """(segment, skip, length) of what is left within count, from the current segment.

        Like the kernel's loops, walking stops once count bytes are covered;
        zero-length pieces met on the way are included.
        """
        left = self.count
        skip = self.off
        for s in self.segs[self.idx :]:
            if left == 0:
                break
            n = min(s.length - skip, left)
            yield s, skip, n
            left -= n
            skip = 0

    def npages(self, maxpages: int) -> int:
        """Pages touched, computed per piece from its first and last byte."""
        if self.count == 0 or maxpages <= 0 or self.kind == "DISCARD":
            return 0
        if self.kind == "UBUF":
            first = self.segs[0].addr + self.off
            pages = (first + self.count - 1) // PAGE_SIZE - first // PAGE_SIZE + 1
            return min(pages, maxpages)
        total = 0
        for s, skip, n in self._pieces():
            if self.kind == "BVEC":
                start = (s.bv_offset + skip) % PAGE_SIZE
                # bvec_npages() has no "if (len)": an empty piece that starts
                # inside a page still counts that page.
                pages = -(-(start + n) // PAGE_SIZE)
            elif n == 0:
                continue
            else:
                start = s.addr + skip
                pages = (start + n - 1) // PAGE_SIZE - start // PAGE_SIZE + 1
            total += pages
            if total > maxpages:
                return maxpages
        return total

    def alignment(self) -> int:
        if self.kind == "DISCARD":
            return 0
        if self.kind == "UBUF":
            return (self.segs[0].addr + self.off) | self.count if self.count else 0
        res = 0
        if self.count == 0:
            # the kernel's do-while looks at the current segment once even for count 0
            if self.idx < len(self.segs):
                s = self.segs[self.idx]
                if self.kind == "BVEC":
                    res |= s.bv_offset + self.off
                elif s.length - self.off:
                    res |= s.addr + self.off
            return res
        for s, skip, n in self._pieces():
            if self.kind == "BVEC":
                res |= (s.bv_offset + skip) | n
            elif n:
                res |= (s.addr + skip) | n
        return res


# ---- XARRAY and FOLIOQ -------------------------------------------------------------
#
