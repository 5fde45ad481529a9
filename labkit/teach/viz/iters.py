"""Drawings of one iterator (:func:`draw_iter`) and of a sequence of operations on it."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle

from labkit.report.plots import COLORS
from labkit.teach.viz.state import (
    Segment,
    SegmentLayout,
    _as_state,
    iter_segments,
    iter_state,
    layout,
)


def _new_axes(ax: Any, figsize: tuple[float, float]) -> tuple[Any, Any]:
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
            Rectangle((0, 0), 1, 1, facecolor=COLORS["remaining"], edgecolor="black", gid="seg0")
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
                        facecolor=COLORS[name],
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
        Line2D([pos_x, pos_x], [-0.5, 1.0], color=COLORS["position"], linewidth=2, gid="position")
    )
    ax.text(
        pos_x,
        -0.55,
        f"position: seg {st.seg}, iov_offset {st.iov_offset}",
        ha="center",
        va="top",
        fontsize=8,
        color=COLORS["position"],
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
        Patch(facecolor=COLORS["consumed"], label="consumed"),
        Patch(facecolor=COLORS["remaining"], label="remaining (count)"),
        Patch(facecolor="white", hatch="//", edgecolor="black", label="outside count"),
        Line2D([], [], color=COLORS["position"], linewidth=2, label="position"),
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
    steps = list(steps)
    segs = iter_segments(it)
    fig, axes = plt.subplots(
        len(steps) + 1, 1, figsize=(width, 2.0 * (len(steps) + 1)), squeeze=False
    )
    log: list[dict[str, Any]] = [{"step": "start", "returned": "", **iter_state(it).__dict__}]

    def draw(k: int, title: str) -> None:
        draw_iter(
            it,
            axes[k][0],
            segments=segs,
            contents=contents,
            scale=scale,
            show_addr=show_addr,
            title=title,
            legend=k == 0,
        )

    draw(0, f"start: {iter_state(it).describe()}")
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
        draw(k, f"{label}{shown}: {st.describe()}")
    fig.tight_layout()
    return fig, log


def draw_side_by_side(iters: Sequence[tuple[str, Any]], *, width: float = 10.0) -> Any:
    """Draw several iterators one above the other, each titled ``"<label>: <state>"``."""
    iters = list(iters)
    fig, axes = plt.subplots(len(iters), 1, figsize=(width, 2.2 * len(iters)), squeeze=False)
    for k, ((label, it), row) in enumerate(zip(iters, axes, strict=True)):
        draw_iter(it, row[0], title=f"{label}: {iter_state(it).describe()}", legend=k == 0)
    fig.tight_layout()
    return fig


# ---- registered buffers: bvec tables and seeks ---------------------------------
