"""What the drawings show, as plain data: segments, iterator state, their layout."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from labkit._ffi import ffi, lib


@dataclass(frozen=True)
class Segment:
    """One segment an iterator walks: a real address and a length in bytes."""

    addr: int
    length: int


@dataclass(frozen=True)
class IterState:
    """The state of an iterator, as the kernel keeps it.

    Attributes:
        iter_type: "UBUF", "IOVEC", "KVEC", "BVEC", "DISCARD", "XARRAY" or "FOLIOQ".
        count: bytes left.
        iov_offset: bytes consumed in the current segment.
        seg: index of the current segment in the segment array.
        nr_segs: segments left, the current one included.
        direction: "DEST" or "SOURCE".
    """

    iter_type: str
    count: int
    iov_offset: int
    seg: int
    nr_segs: int
    direction: str = "DEST"

    def describe(self) -> str:
        """One line: ``IOVEC ITER_DEST count=50 iov_offset=150 nr_segs=1 seg=1``."""
        return (
            f"{self.iter_type} ITER_{self.direction} count={self.count} "
            f"iov_offset={self.iov_offset} nr_segs={self.nr_segs} seg={self.seg}"
        )


@dataclass(frozen=True)
class SegmentLayout:
    """Where one segment sits in the iterator's byte stream, and how much of it is used.

    ``start`` is the position of the segment's first byte in the stream (the
    sum of the lengths before it).  ``consumed + remaining + outside ==
    length``: bytes before the current position, bytes within ``count`` after
    it, and bytes after the end of ``count``.
    """

    index: int
    addr: int
    length: int
    start: int
    consumed: int
    remaining: int
    outside: int


def _as_state(obj: Any) -> IterState:
    if isinstance(obj, IterState):
        return obj
    if isinstance(obj, dict):
        return _state_of(obj)
    return iter_state(obj)


def _state_of(d: dict[str, Any]) -> IterState:
    """An :class:`IterState` from a dict as :meth:`labkit.IovIter.state` gives
    (``iter_type`` may stand for ``type``; seg, nr_segs and direction may be left out)."""
    return IterState(
        iter_type=str(d.get("type", d.get("iter_type", "BVEC"))),
        count=int(d["count"]),
        iov_offset=int(d["iov_offset"]),
        seg=int(d.get("seg", 0)),
        nr_segs=int(d.get("nr_segs", 0)),
        direction=str(d.get("direction", "DEST")),
    )


def iter_state(it: Any) -> IterState:
    """The state of a :class:`labkit.IovIter` as an :class:`IterState`."""
    return _state_of(it.state())


def iter_segments(it: Any) -> list[Segment]:
    """Every segment of ``it`` as :class:`Segment` (address, length), from the first.

    The segments are read from the iterator's own C segment array (which the
    iterator keeps alive); no user memory is touched.  A UBUF iterator has one
    segment (its buffer); a DISCARD iterator has none.  An XARRAY iterator's
    segments are its file range split at folio boundaries, from its first
    byte; a FOLIOQ iterator's are the folios from its first slot to the end of
    the queue.  A hole (an index or a slot without a folio) has address 0.
    """
    with it._locked():  # one consistent reading, not while another thread moves it
        return _iter_segments(it)


def _iter_segments(it: Any) -> list[Segment]:
    c_it = it.c_iter
    kind = it.iter_type
    if kind == "DISCARD":
        return []
    if kind == "XARRAY":
        pieces = it.backing.pieces(it.xarray_start, int(c_it.xarray_len))
        return [Segment(addr, n) for _, addr, n in pieces]
    if kind == "FOLIOQ":
        queue = it.backing
        first = queue.segment_of(ffi.cast("const struct lk_folioq *", c_it.seg_first))
        return [Segment(addr, size) for addr, size in queue.slots(first, int(c_it.first_slot))]
    if kind == "UBUF":
        addr = ffi.new("uintptr_t *")
        length = ffi.new("size_t *")
        lib.lk_iter_current(c_it, addr, length)
        start = int(addr[0]) - int(c_it.iov_offset)
        return [Segment(start, int(c_it.ubuf_len))]
    total = int(lib.lk_iter_seg_index(c_it)) + int(c_it.nr_segs)
    if total == 0 or c_it.seg_first == ffi.NULL:
        return []
    if kind == "BVEC":
        bv = ffi.cast("const struct lk_bvec *", c_it.seg_first)
        return [
            Segment(int(bv[k].bv_page) + int(bv[k].bv_offset), int(bv[k].bv_len))
            for k in range(total)
        ]
    iov = ffi.cast("const struct lk_iovec *", c_it.seg_first)
    return [Segment(int(iov[k].iov_base), int(iov[k].iov_len)) for k in range(total)]


def layout(segments: Sequence[Segment | tuple[int, int]], state: Any) -> list[SegmentLayout]:
    """Split each segment into consumed / remaining / outside-count bytes.

    Args:
        segments: the iterator's segments, as :class:`Segment` or (addr, length).
        state: an :class:`IterState`, a state dict (``IovIter.state()``) or an IovIter.

    Raises:
        ValueError: if the state does not fit the segments (a position past the end).
    """
    st = _as_state(state)
    segs = [s if isinstance(s, Segment) else Segment(int(s[0]), int(s[1])) for s in segments]
    starts = np.concatenate([[0], np.cumsum([s.length for s in segs], dtype=np.int64)])
    if st.seg > len(segs):
        raise ValueError(f"state seg={st.seg} but only {len(segs)} segments")
    position = int(starts[min(st.seg, len(segs))]) + st.iov_offset
    end = position + st.count
    if end > int(starts[-1]):
        raise ValueError(
            f"position {position} + count {st.count} is past the segments' {int(starts[-1])} bytes"
        )
    out = []
    for k, s in enumerate(segs):
        a, b = int(starts[k]), int(starts[k + 1])
        consumed = max(0, min(b, position) - a)
        remaining = max(0, min(b, end) - max(a, position))
        out.append(
            SegmentLayout(
                k, s.addr, s.length, a, consumed, remaining, s.length - consumed - remaining
            )
        )
    return out
