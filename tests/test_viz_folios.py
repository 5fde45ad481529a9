"""labkit.viz over XARRAY and FOLIOQ iterators: their segments, and the drawing."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.image import AxesImage  # noqa: E402

import labkit  # noqa: E402
from labkit import ITER_DEST, ITER_SOURCE, FolioQueue, IovIter, PageCache  # noqa: E402
from labkit.teach import viz  # noqa: E402

PAGE = labkit.PAGE_SIZE


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def gids(ax):
    return {a.get_gid() for a in ax.get_children() if a.get_gid()}


def position_x(ax):
    pos = next(a for a in ax.get_children() if a.get_gid() == "position")
    return pos.get_xdata()[0]


@pytest.fixture
def cache():
    c = PageCache()
    c.add(0)
    c.add(2, 1)  # index 1 is a hole
    return c


def test_iter_segments_of_an_xarray_split_at_folios_and_holes(cache):
    it = IovIter.xarray(ITER_DEST, cache, 100, 3 * PAGE)
    segs = viz.iter_segments(it)
    f0, f2 = cache.load(0)[1], cache.load(2)[1]
    assert segs == [
        viz.Segment(f0.addr + 100, PAGE - 100),
        viz.Segment(0, PAGE),
        viz.Segment(f2.addr, PAGE + 100),
    ]
    it.copy_to_iter(b"\x07" * PAGE)  # stops at the hole
    it.truncate(10)
    lay = viz.layout(segs, it)
    assert [(sl.consumed, sl.remaining, sl.outside) for sl in lay] == [
        (PAGE - 100, 0, 0),
        (0, 10, PAGE - 10),
        (0, 0, PAGE + 100),
    ]


def test_draw_xarray_places_the_position_in_its_piece(cache):
    it = IovIter.xarray(ITER_DEST, cache, 100, 3 * PAGE)
    it.advance(2 * PAGE)  # file position 2 * PAGE + 100: in folio 2, past the hole
    ax = viz.draw_iter(it, contents=cache, scale="equal")
    assert {"seg0", "seg1", "seg2", "position", "consumed2", "remaining2"} <= gids(ax)
    # equal widths: piece 2 spans [2, 3) and the position is 100 bytes into its PAGE + 100
    assert position_x(ax) == pytest.approx(2 + 100 / (PAGE + 100))
    assert "XARRAY ITER_DEST count=" in ax.get_title(loc="left")
    assert any("(no folio)" in t.get_text() for t in ax.texts)
    # byte strips for the two folios, none for the hole
    assert sum(isinstance(a, AxesImage) for a in ax.get_children()) == 2


def test_iter_segments_and_drawing_of_a_folio_queue():
    queue = FolioQueue()
    queue.extend([0] * 30 + [1, 0, 2])
    queue.clear(1, 0)  # slot 31 of the queue (segment 1, slot 0)
    it = IovIter.folio_queue(ITER_SOURCE, queue, 29, 10)
    segs = viz.iter_segments(it)
    assert [s.length for s in segs] == [PAGE, 2 * PAGE, PAGE, 4 * PAGE]
    assert segs[0].addr == queue.folio(0, 29).addr and segs[2].addr == 0
    got = it.copy_from_iter(10 * PAGE)
    assert len(got) == 3 * PAGE - 10  # to the cleared slot, across the segment boundary
    assert it.seg_index == 2 and queue.position(it) == (1, 0, 0)
    lay = viz.layout(segs, it)
    assert [sl.consumed for sl in lay] == [PAGE, 2 * PAGE, 0, 0]
    contents = [queue.folio(0, 29).array, queue.folio(0, 30).array, b"", queue.folio(1, 1).array]
    ax = viz.draw_iter(it, contents=contents)
    assert {"seg3", "position", "remaining2", "remaining3"} <= gids(ax)
    assert position_x(ax) == pytest.approx(3 * PAGE)
    fig, log = viz.draw_steps(it, [("advance", 2 * PAGE), ("revert", PAGE)])
    assert [row["seg"] for row in log] == [2, 3, 3]  # over the cleared slot's size
    assert [row["iov_offset"] for row in log] == [0, PAGE, 0]
    assert len(fig.axes) == 3


def test_draw_steps_through_an_xarray(cache):
    it = IovIter.xarray(ITER_DEST, cache, 0, 4 * PAGE)
    fig, log = viz.draw_steps(
        it,
        [("copy_to_iter", np.ones(2 * PAGE, np.uint8)), ("advance", PAGE), ("zero", PAGE)],
        contents=cache,
    )
    assert [row["returned"] for row in log] == ["", PAGE, "", PAGE]
    assert [row["iov_offset"] for row in log] == [0, PAGE, 2 * PAGE, 3 * PAGE]
    assert cache.load(2)[1].array[:PAGE].tolist() == [0] * PAGE
