"""Drawing helpers for teaching: iterators over real memory, bvec tables and seeks.

Two kinds of pictures:

* :func:`draw_iter` draws one iterator: its segments as boxes laid end to end
  in the order the iterator walks them (each labelled with its index, length
  and real address), the bytes already consumed, the bytes still to come
  (``count``), bytes outside ``count`` (after a truncate), and the current
  position.  :func:`draw_steps` draws the same iterator before and after a
  sequence of operations (advance, revert, copy, zero ...), one row per step.
* :func:`draw_bvec_seek` draws a registered buffer's bvec table, given as
  generic ``(page, offset, length)`` rows, and where a seek to a byte offset
  lands, given as the iterator state after the seek.  It needs nothing but
  those inputs, so it works with a table built by hand (:func:`bvec_table`) as
  well as with one from :func:`labkit.register_buffer`.

Everything the pictures show is also available as plain data
(:func:`iter_segments`, :func:`iter_state`, :func:`layout`), which is what the
tests check.  The pure-Python references :func:`walk_seek` and
:func:`shift_seek` say where a byte offset of a bvec table lands; they are
teaching aids beside the C model, not a replacement for it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from labkit._ffi import ffi, lib

PAGE_SIZE = 4096
PAGE_SHIFT = 12

#: Colours used by every drawing (consumed, remaining, outside count, current position).
COLOURS = {
    "consumed": "#b0b0b0",
    "remaining": "#4c9be8",
    "outside": "#ffffff",
    "position": "#d62728",
    "skipped": "#e0e0e0",
    "target": "#f5a623",
    "current": "#2ca02c",
}


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
        return IterState(
            iter_type=str(obj.get("type", obj.get("iter_type", "BVEC"))),
            count=int(obj["count"]),
            iov_offset=int(obj["iov_offset"]),
            seg=int(obj.get("seg", 0)),
            nr_segs=int(obj.get("nr_segs", 0)),
            direction=str(obj.get("direction", "DEST")),
        )
    return iter_state(obj)


def iter_state(it: Any) -> IterState:
    """The state of a :class:`labkit.IovIter` as an :class:`IterState`."""
    s = it.state()
    return IterState(
        iter_type=str(s["type"]),
        count=int(s["count"]),
        iov_offset=int(s["iov_offset"]),
        seg=int(s["seg"]),
        nr_segs=int(s["nr_segs"]),
        direction=str(s["direction"]),
    )


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


def _fmt_bytes(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} B"


def _new_axes(ax: Any, figsize: tuple[float, float]) -> tuple[Any, Any]:
    import matplotlib.pyplot as plt

    if ax is None:
        fig, ax = plt.subplots(figsize=figsize)
        return fig, ax
    return ax.figure, ax


def _contents_of(contents: Any, seg: Segment, k: int) -> np.ndarray | None:
    """The real bytes of segment ``k``: from a UserMemory (checked) or a list of arrays."""
    if contents is None or seg.length == 0:
        return None
    view = getattr(contents, "view", None)
    if callable(view) and hasattr(contents, "is_mapped"):
        if not contents.is_mapped(seg.addr, seg.length):
            return None
        return np.asarray(view(seg.addr, seg.length))
    arrays = list(contents)
    if k >= len(arrays):
        return None
    arr = np.frombuffer(memoryview(arrays[k]).cast("B"), dtype=np.uint8)
    return arr[: seg.length]


def draw_iter(
    it: Any,
    ax: Any = None,
    *,
    segments: Sequence[Any] | None = None,
    state: Any = None,
    title: str | None = None,
    contents: Any = None,
    scale: str = "bytes",
    show_addr: bool = True,
    legend: bool = True,
) -> Any:
    """Draw an iterator: segments as boxes, consumed and remaining bytes, position, count.

    Args:
        it: a :class:`labkit.IovIter` (or None when ``segments`` and ``state`` are given).
        ax: matplotlib Axes to draw into; a new figure if None.
        segments: the segments to draw (default: :func:`iter_segments` of ``it``).
        state: the state to draw (default: the iterator's current state).
        title: the axes title (default: the state, one line).
        contents: the real bytes to show as a strip under each segment (0 white,
            255 black): a :class:`labkit.UserMemory` (read through its checked
            ``view``) or one array per segment.  None: no strip.
        scale: "bytes" (box widths proportional to lengths) or "equal" (one
            unit per segment, for segments of very different lengths).
        show_addr: label each box with its real address.
        legend: draw the legend (right of the axes).

    Returns:
        The matplotlib Axes.  Artists carry gids: ``seg<k>`` (the box),
        ``consumed<k>``, ``remaining<k>``, ``outside<k>``, ``position``,
        ``bytes<k>`` (the contents strip).
    """
    if scale not in ("bytes", "equal"):
        raise ValueError(f"scale must be 'bytes' or 'equal', not {scale!r}")
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch, Rectangle

    st = _as_state(it if state is None else state)
    segs = (
        iter_segments(it)
        if segments is None
        else [s if isinstance(s, Segment) else Segment(int(s[0]), int(s[1])) for s in segments]
    )
    fig, ax = _new_axes(ax, (10, 2.4))
    ax.set_title(title if title is not None else st.describe(), fontsize=9, loc="left")
    ax.set_yticks([])
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)

    if not segs:  # DISCARD: a count and no memory
        ax.add_patch(
            Rectangle((0, 0), 1, 1, facecolor=COLOURS["remaining"], edgecolor="black", gid="seg0")
        )
        ax.text(
            0.5,
            0.5,
            f"{st.iter_type}: no memory\ncount={st.count}",
            ha="center",
            va="center",
            fontsize=9,
        )
        ax.set_xlim(-0.05, 1.05)
        ax.set_ylim(-0.6, 1.6)
        ax.set_xticks([])
        return ax

    lay = layout(segs, st)
    folios = st.iter_type in ("XARRAY", "FOLIOQ")
    pos_seg, pos_off = st.seg, st.iov_offset
    if st.iter_type == "XARRAY":  # the kernel keeps it all in iov_offset: find the piece
        pos_seg = next((sl.index for sl in lay if sl.start + sl.length > st.iov_offset), len(lay))
        pos_off = st.iov_offset - (lay[pos_seg].start if pos_seg < len(lay) else 0)
    total = sum(s.length for s in segs)
    nonzero = [s.length for s in segs if s.length]
    if scale == "equal":
        widths = [1.0] * len(segs)
    else:  # x is the byte position; an empty segment is a dashed line at its boundary
        widths = [float(s.length) for s in segs]
    span = sum(widths) or 1.0
    x = 0.0
    pos_x = None
    for sl, w in zip(lay, widths, strict=True):

        def frac(nbytes: int, sl: SegmentLayout = sl, w: float = w) -> float:
            return w * nbytes / sl.length if sl.length else 0.0

        # consumed | remaining | outside, left to right
        parts = (("consumed", sl.consumed), ("remaining", sl.remaining), ("outside", sl.outside))
        px = x
        for name, nbytes in parts:
            if nbytes:
                ax.add_patch(
                    Rectangle(
                        (px, 0),
                        frac(nbytes),
                        1,
                        facecolor=COLOURS[name],
                        edgecolor="none",
                        hatch="//" if name == "outside" else None,
                        gid=f"{name}{sl.index}",
                    )
                )
                px += frac(nbytes)
        if sl.length == 0 and scale == "bytes":
            ax.add_line(
                Line2D(
                    [x, x],
                    [-0.05, 1.05],
                    color="black",
                    linestyle="--",
                    linewidth=1.5,
                    gid=f"seg{sl.index}",
                )
            )
            label_y, va = 1.32, "bottom"
        else:
            ax.add_patch(
                Rectangle(
                    (x, 0),
                    w,
                    1,
                    fill=False,
                    edgecolor="black",
                    linestyle="--" if sl.length == 0 else "-",
                    linewidth=1.2,
                    gid=f"seg{sl.index}",
                )
            )
            label_y, va = 1.06, "bottom"
        label = f"seg {sl.index}: len {sl.length}"
        if show_addr:
            label += "\n(no folio)" if folios and not sl.addr else f"\n{sl.addr:#x}"
        ax.text(x + w / 2, label_y, label, ha="center", va=va, fontsize=7)
        data = _contents_of(contents, segs[sl.index], sl.index)
        if data is not None:
            ax.imshow(
                data[np.newaxis, :],
                extent=(x, x + w, -0.42, -0.12),
                aspect="auto",
                cmap="Greys",
                vmin=0,
                vmax=255,
                interpolation="nearest",
                gid=f"bytes{sl.index}",
            )
            ax.add_patch(
                Rectangle((x, -0.42), w, 0.3, fill=False, edgecolor="#808080", linewidth=0.6)
            )
        if sl.index == pos_seg:
            pos_x = x + frac(pos_off) if sl.length else x
        x += w
    if pos_x is None:  # past the last segment
        pos_x = x
    ax.add_line(
        Line2D([pos_x, pos_x], [-0.5, 1.0], color=COLOURS["position"], linewidth=2, gid="position")
    )
    ax.text(
        pos_x,
        -0.55,
        f"position: seg {st.seg}, iov_offset {st.iov_offset}",
        ha="center",
        va="top",
        fontsize=8,
        color=COLOURS["position"],
    )
    ax.set_xlim(-0.02 * span, 1.02 * span)
    top = 1.6 if show_addr else 1.4
    if scale == "bytes" and any(sl.length == 0 for sl in lay):
        top += 0.4
    ax.set_ylim(-0.9, top)
    if scale == "bytes":
        ax.set_xlabel("byte position in the iterator (walk order)", fontsize=8)
    else:
        ax.set_xticks([])
        ax.set_xlabel("segments (equal widths)", fontsize=8)
    consumed = sum(sl.consumed for sl in lay)
    summary = (
        f"consumed {consumed} B, count {st.count} B, of {total} B in {len(segs)} "
        f"segment{'s' if len(segs) != 1 else ''}"
        + (f" ({len(nonzero)} non-empty)" if len(nonzero) != len(segs) else "")
    )
    ax.set_title(
        (title if title is not None else st.describe()) + "\n" + summary, fontsize=9, loc="left"
    )
    handles = [
        Patch(facecolor=COLOURS["consumed"], label="consumed"),
        Patch(facecolor=COLOURS["remaining"], label="remaining (count)"),
        Patch(facecolor="white", hatch="//", edgecolor="black", label="outside count"),
        Line2D([], [], color=COLOURS["position"], linewidth=2, label="position"),
    ]
    if contents is not None:
        handles.append(Patch(facecolor="black", label="byte strip: 0 white, 255 black"))
    if legend:
        ax.legend(
            handles=handles,
            loc="center left",
            fontsize=7,
            frameon=False,
            bbox_to_anchor=(1.01, 0.5),
        )
    return ax


def _op_label(name: str, args: Sequence[Any]) -> str:
    shown = []
    for a in args:
        if isinstance(a, (bytes, bytearray, memoryview, np.ndarray)):
            shown.append(f"{len(memoryview(a).cast('B'))} bytes")
        else:
            shown.append(repr(a))
    return f"{name}({', '.join(shown)})"


def draw_steps(
    it: Any,
    steps: Iterable[tuple[Any, ...]],
    *,
    contents: Any = None,
    scale: str = "bytes",
    show_addr: bool = False,
    width: float = 10.0,
) -> tuple[Any, list[dict[str, Any]]]:
    """Apply ``steps`` to ``it`` one by one and draw the iterator before and after each.

    Args:
        it: the iterator (it is changed by the steps).
        steps: tuples ``(method, *args)`` such as ``("advance", 150)``,
            ``("revert", 50)``, ``("copy_to_iter", b"...")``, ``("zero", 10)``,
            or ``(label, callable)`` where the callable takes the iterator.
        contents, scale, show_addr: as for :func:`draw_iter`.
        width: figure width in inches.

    Returns:
        (figure, log): the figure has one row per state (the first is the
        start); the log has one dict per row with the step's label, what it
        returned ("" for nothing, a length for bytes) and the state after it.
    """
    import matplotlib.pyplot as plt

    steps = list(steps)
    segs = iter_segments(it)
    fig, axes = plt.subplots(
        len(steps) + 1, 1, figsize=(width, 2.0 * (len(steps) + 1)), squeeze=False
    )
    log: list[dict[str, Any]] = [{"step": "start", "returned": "", **iter_state(it).__dict__}]
    draw_iter(
        it,
        axes[0][0],
        segments=segs,
        contents=contents,
        scale=scale,
        show_addr=show_addr,
        title=f"start: {iter_state(it).describe()}",
        legend=True,
    )
    for k, step in enumerate(steps, start=1):
        if len(step) == 2 and callable(step[1]):
            label, ret = str(step[0]), step[1](it)
        else:
            name, *args = step
            label = _op_label(str(name), args)
            ret = getattr(it, str(name))(*args)
        shown = (
            ""
            if ret is None
            else (f" -> {len(ret)} bytes" if isinstance(ret, bytes) else f" -> {ret}")
        )
        st = iter_state(it)
        returned = "" if ret is None else (len(ret) if isinstance(ret, bytes) else ret)
        log.append({"step": label, "returned": returned, **st.__dict__})
        draw_iter(
            it,
            axes[k][0],
            segments=segs,
            contents=contents,
            scale=scale,
            show_addr=show_addr,
            title=f"{label}{shown}: {st.describe()}",
            legend=False,
        )
    fig.tight_layout()
    return fig, log


def draw_side_by_side(iters: Sequence[tuple[str, Any]], *, width: float = 10.0) -> Any:
    """Draw several iterators one above the other, each titled ``"<label>: <state>"``."""
    import matplotlib.pyplot as plt

    iters = list(iters)
    fig, axes = plt.subplots(len(iters), 1, figsize=(width, 2.2 * len(iters)), squeeze=False)
    for k, ((label, it), row) in enumerate(zip(iters, axes, strict=True)):
        draw_iter(it, row[0], title=f"{label}: {iter_state(it).describe()}", legend=k == 0)
    fig.tight_layout()
    return fig


# ---- registered buffers: bvec tables and seeks ---------------------------------


def bvec_table(
    addr: int, length: int, *, folio_shift: int = PAGE_SHIFT
) -> list[tuple[int, int, int]]:
    """The bvec table io_uring builds when it registers ``[addr, addr + length)``.

    Rows are ``(page, offset, length)``, ``page`` the address of the page (or
    folio of ``2**folio_shift`` bytes) that holds the bytes: the first bvec
    starts at ``addr``'s offset in its folio and runs to the folio's end (or
    the buffer's end), the rest are whole folios, the last may be short.  A
    pure-Python teaching reference for drawings; the model's own registration
    is :func:`labkit.register_buffer`.
    """
    if length <= 0:
        raise ValueError(f"length must be > 0, got {length}")
    if folio_shift < PAGE_SHIFT:
        raise ValueError(f"folio_shift must be >= {PAGE_SHIFT}, got {folio_shift}")
    fsize = 1 << folio_shift
    rows = []
    page, off, left = addr - addr % fsize, addr % fsize, length
    while left:
        n = min(fsize - off, left)
        rows.append((page, off, n))
        left -= n
        page, off = page + fsize, 0
    return rows


def table_rows(table: Any) -> list[tuple[int, int, int]]:
    """A bvec table as a list of ``(page, offset, length)`` rows.

    Accepts rows of three ints, an (n, 3) array, or a structured numpy array whose
    field names contain "page", "off" and "len" (in any order, as
    ``RegisteredBuffer.table``).
    """
    arr = np.asarray(table)
    if arr.dtype.names:  # a structured numpy view (page, offset, length fields)
        names = arr.dtype.names
        page = next(n for n in names if "page" in n)
        off = next(n for n in names if "off" in n)
        ln = next(n for n in names if "len" in n)
        return list(zip(arr[page].tolist(), arr[off].tolist(), arr[ln].tolist(), strict=True))
    if arr.ndim != 2 or arr.shape[1] != 3:
        raise ValueError("table must be rows of (page, offset, length)")
    return [(int(p), int(o), int(n)) for p, o, n in arr.tolist()]


def walk_seek(table: Any, offset: int) -> tuple[int, int, int]:
    """Where byte ``offset`` of a bvec table lands by walking it, bvec by bvec.

    Returns:
        (index of the bvec, offset inside that bvec's bytes, bvecs visited).

    Raises:
        ValueError: if ``offset`` is not inside the table.
    """
    rows = table_rows(table)
    left = offset
    for k, (_page, _off, n) in enumerate(rows):
        if left < n:
            return k, left, k + 1
        left -= n
    raise ValueError(f"offset {offset} is past the table's {offset - left} bytes")


def shift_seek(table: Any, offset: int, *, folio_shift: int = PAGE_SHIFT) -> tuple[int, int, int]:
    """Where byte ``offset`` lands by today's shift (io_import_fixed): no walk.

    Inside the first bvec the offset stays as it is; otherwise the index is
    ``1 + ((offset - first_len) >> folio_shift)`` and the offset inside the
    folio is ``(offset - first_len) & (folio_size - 1)``.  Valid for tables
    of whole folios after the first (as :func:`bvec_table` builds).

    Returns:
        (index of the bvec, offset inside that bvec's bytes, bvecs visited: 1).
    """
    rows = table_rows(table)
    total = sum(r[2] for r in rows)
    if not 0 <= offset < total:
        raise ValueError(f"offset {offset} is not inside the table's {total} bytes")
    first_len = rows[0][2]
    if offset < first_len:
        return 0, offset, 1
    rest = offset - first_len
    return 1 + (rest >> folio_shift), rest & ((1 << folio_shift) - 1), 1


def _page_label(page: int, base: int, page_size: int) -> str:
    if page < (1 << 20):  # a page index, not an address
        return f"page {page}"
    return f"page +{(page - base) // page_size}"


def draw_bvec_seek(
    table: Any,
    *,
    offset: int,
    length: int,
    state: Any = None,
    visited: int | None = None,
    seek: str = "",
    ax: Any = None,
    page_size: int = PAGE_SIZE,
    max_boxes: int = 16,
) -> Any:
    """Draw a registered buffer's bvec table and where a seek to ``offset`` landed.

    Args:
        table: rows ``(page, offset, length)``: a list, an (n, 3) array, or the
            structured numpy view a registered buffer exposes.  ``page`` may be
            an address or a page index.
        offset: the byte of the buffer the read starts at.
        length: the bytes the read wants.
        state: the iterator state after the seek (IterState, state dict or
            IovIter); its ``seg`` and ``iov_offset`` locate the landing bvec.
            Default: :func:`walk_seek`'s answer with ``count=length``.
        visited: bvecs the seek examined (an iterator's ``visited`` counter),
            shown in the title.
        seek: the seek's name for the title ("walk", "shift", ...).
        ax: Axes to draw into; a new figure if None.
        page_size: bytes per page, for the labels.
        max_boxes: tables longer than this are drawn with the middle elided.

    Returns:
        The Axes.  Artists carry gids: ``bvec<k>`` (boxes), ``skipped<k>``,
        ``landing``, ``read<k>`` (bvecs the read covers), ``readspan`` (the
        bytes read), ``gap<k>`` (elisions).
    """
    from matplotlib.patches import Patch, Rectangle

    rows = table_rows(table)
    total = sum(r[2] for r in rows)
    if not 0 <= offset < total or length < 0 or offset + length > total:
        raise ValueError(f"read [{offset}, +{length}) is not inside the table's {total} bytes")
    if state is None:
        k, off, _ = walk_seek(rows, offset)
        st = IterState("BVEC", length, off, k, len(rows) - k)
    else:
        st = _as_state(state)
    landing = st.seg
    # the bvecs the read covers
    starts = np.concatenate([[0], np.cumsum([r[2] for r in rows], dtype=np.int64)])
    last = int(np.searchsorted(starts, offset + max(length, 1), side="left")) - 1
    last_off = offset + length - int(starts[last])  # where the read ends inside bvec `last`
    covered = set(range(landing, max(landing, last) + 1))
    xs: dict[int, float] = {}

    # which boxes to draw: head, around the landing, tail
    n = len(rows)
    if n <= max_boxes:
        shown = list(range(n))
    else:
        keep = {0, 1, 2, n - 2, n - 1} | set(range(max(0, landing - 2), min(n, landing + 4)))
        shown = sorted(keep)
    fig, ax = _new_axes(ax, (10, 2.6))
    base = rows[0][0]
    x = 0.0
    prev = None
    for k in shown:
        if prev is not None and k != prev + 1:
            ax.text(
                x + 0.4,
                0.5,
                f"... {k - prev - 1} bvecs ...",
                ha="center",
                va="center",
                fontsize=7,
                gid=f"gap{k}",
            )
            x += 0.8
        page, off, ln = rows[k]
        if k < landing:
            face = COLOURS["skipped"]
            gid = f"skipped{k}"
        elif k in covered:
            face = COLOURS["target"]
            gid = f"read{k}"
        else:
            face = "white"
            gid = f"rest{k}"
        ax.add_patch(Rectangle((x, 0), 1, 1, facecolor=face, edgecolor="none", gid=gid))
        ax.add_patch(Rectangle((x, 0), 1, 1, fill=False, edgecolor="black", gid=f"bvec{k}"))
        ax.text(
            x + 0.5,
            1.06,
            f"bvec {k}\n{_page_label(page, base, page_size)}\noff {off} len {ln}",
            ha="center",
            va="bottom",
            fontsize=6,
        )
        xs[k] = x
        if k == landing:
            frac = st.iov_offset / ln if ln else 0.0
            ax.annotate(
                f"lands: bvec {k}, iov_offset={st.iov_offset}",
                xy=(x + frac, 0),
                xytext=(x + frac, -0.6),
                ha="center",
                fontsize=8,
                color=COLOURS["position"],
                arrowprops={"arrowstyle": "-|>", "color": COLOURS["position"]},
                gid="landing",
            )
        x += 1.0
        prev = k
    if landing in xs and last in xs and length:
        ln0, ln1 = rows[landing][2], rows[last][2]
        x0 = xs[landing] + (st.iov_offset / ln0 if ln0 else 0.0)
        x1 = xs[last] + (last_off / ln1 if ln1 else 0.0)
        ax.add_patch(
            Rectangle(
                (x0, -0.2),
                max(x1 - x0, 0.01),
                0.12,
                facecolor=COLOURS["position"],
                edgecolor="none",
                gid="readspan",
            )
        )
    ax.set_xlim(-0.1, x + 0.1)
    ax.set_ylim(-0.9, 2.0)
    ax.set_yticks([])
    ax.set_xticks([])
    for side in ("left", "right", "top", "bottom"):
        ax.spines[side].set_visible(False)
    head = f"{seek}: " if seek else ""
    vis = f", bvecs visited {visited}" if visited is not None else ""
    ax.set_title(
        f"{head}read of {length} B at offset {offset} of a {total} B buffer ({n} bvecs){vis}",
        fontsize=10,
        loc="left",
    )
    skipped = "walked over, one by one" if visited is not None and visited > 1 else "jumped over"
    ax.legend(
        handles=[
            Patch(facecolor=COLOURS["skipped"], label=f"bvecs {skipped}"),
            Patch(facecolor=COLOURS["target"], label="bvecs the read covers"),
            Patch(facecolor=COLOURS["position"], label="the bytes read"),
        ],
        loc="lower right",
        fontsize=7,
        frameon=False,
        ncol=3,
        bbox_to_anchor=(1.0, -0.1),
    )
    return ax


def draw_seeks(
    table: Any,
    *,
    offset: int,
    length: int,
    seeks: Sequence[tuple[str, Any, int | None]],
    width: float = 10.0,
) -> Any:
    """Draw several seeks of one table one above the other.

    ``seeks`` holds ``(name, state_after_seek, visited)`` per seek.
    """
    import matplotlib.pyplot as plt

    seeks = list(seeks)
    fig, axes = plt.subplots(len(seeks), 1, figsize=(width, 2.4 * len(seeks)), squeeze=False)
    for (name, st, vis), row in zip(seeks, axes, strict=True):
        draw_bvec_seek(
            table, offset=offset, length=length, state=st, visited=vis, seek=name, ax=row[0]
        )
    fig.tight_layout()
    return fig
