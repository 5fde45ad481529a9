"""A registered buffer's bvec table and where a seek lands: references and drawings."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Patch, Rectangle

from labkit.core.fixed import RegisteredBuffer, io_import_fixed
from labkit.core.iter_args import ITER_DEST
from labkit.core.memory import PAGE_SHIFT, PAGE_SIZE
from labkit.report.plots import COLORS
from labkit.teach.viz.iters import _new_axes
from labkit.teach.viz.state import IterState, _as_state


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


def shift_seek(reg: RegisteredBuffer, offset: int) -> tuple[int, int, int]:
    """Where byte ``offset`` of the registered buffer ``reg`` lands by today's shift
    (io_import_fixed): no walk.

    Inside the first bvec the offset stays as it is; otherwise the index is
    ``1 + ((offset - first_len) >> folio_shift)`` and the offset inside the
    folio is ``(offset - first_len) & (folio_size - 1)``.  The answer is the
    model's own seek (:func:`labkit.io_import_fixed` with ``seek="shift"``).

    Returns:
        (index of the bvec, offset inside that bvec's bytes, bvecs visited: 1).

    Raises:
        ValueError: if ``offset`` is not inside the buffer.
    """
    if not 0 <= offset < reg.length:
        raise ValueError(f"offset {offset} is not inside the buffer's {reg.length} bytes")
    it = io_import_fixed(ITER_DEST, reg, reg.addr + offset, 1, seek="shift")
    return it.seg_index, it.iov_offset, it.visited


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
            face = COLORS["skipped"]
            gid = f"skipped{k}"
        elif k in covered:
            face = COLORS["target"]
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
                color=COLORS["position"],
                arrowprops={"arrowstyle": "-|>", "color": COLORS["position"]},
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
                facecolor=COLORS["position"],
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
            Patch(facecolor=COLORS["skipped"], label=f"bvecs {skipped}"),
            Patch(facecolor=COLORS["target"], label="bvecs the read covers"),
            Patch(facecolor=COLORS["position"], label="the bytes read"),
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
    seeks = list(seeks)
    fig, axes = plt.subplots(len(seeks), 1, figsize=(width, 2.4 * len(seeks)), squeeze=False)
    for (name, st, vis), row in zip(seeks, axes, strict=True):
        draw_bvec_seek(
            table, offset=offset, length=length, state=st, visited=vis, seek=name, ax=row[0]
        )
    fig.tight_layout()
    return fig
