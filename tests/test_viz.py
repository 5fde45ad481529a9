"""labkit.teach.viz: the data behind the drawings, and the drawings' artists and labels."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.image import AxesImage  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

import labkit  # noqa: E402
from labkit import ITER_DEST, ITER_SOURCE, IovIter  # noqa: E402
from labkit.teach import viz  # noqa: E402

PAGE = labkit.PAGE_SIZE


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def gids(ax):
    return {a.get_gid() for a in ax.get_children() if a.get_gid()}


def texts(ax):
    return [t.get_text() for t in ax.texts]


@pytest.fixture
def mem():
    return labkit.UserMemory()


@pytest.fixture
def iov(mem):
    m = mem.map(3 * PAGE)
    a = m.addr
    it = labkit.import_iovec(
        ITER_DEST, [(a, 100), (a + 2000, 0), (a + PAGE, 200), (a + 2 * PAGE + 16, 150)], mem
    )
    return it, a


# ---- segments and state -----------------------------------------------------


def test_iter_segments_of_an_import_are_the_users_iovecs(iov):
    it, a = iov
    assert viz.iter_segments(it) == [
        viz.Segment(a, 100),
        viz.Segment(a + 2000, 0),
        viz.Segment(a + PAGE, 200),
        viz.Segment(a + 2 * PAGE + 16, 150),
    ]
    it.advance(320)  # the segment list does not depend on the position
    assert len(viz.iter_segments(it)) == 4


def test_iter_segments_of_each_constructor():
    bufs = [np.zeros(n, dtype=np.uint8) for n in (10, 0, 30)]
    addrs = [b.ctypes.data for b in bufs]
    for make in (IovIter.iovec, IovIter.kvec):
        it = make(ITER_DEST, bufs)
        assert [(s.addr, s.length) for s in viz.iter_segments(it)] == [
            (addrs[0], 10),
            (addrs[1], 0),
            (addrs[2], 30),
        ]
    page = np.zeros(2 * PAGE, dtype=np.uint8)
    bv = IovIter.bvec(ITER_DEST, [(page[:PAGE], 100, 50), (page[PAGE:], 0, PAGE)])
    assert viz.iter_segments(bv) == [
        viz.Segment(page.ctypes.data + 100, 50),
        viz.Segment(page.ctypes.data + PAGE, PAGE),
    ]
    buf = bytearray(64)
    u = IovIter.ubuf(ITER_DEST, buf)
    u.advance(10)
    (seg,) = viz.iter_segments(u)
    assert seg.length == 64 and u.iovec()[0] == seg.addr + 10
    assert viz.iter_segments(IovIter.discard(ITER_DEST, 5)) == []


def test_layout_splits_consumed_remaining_outside(iov):
    it, _ = iov
    it.advance(150)
    it.truncate(100)
    lay = viz.layout(viz.iter_segments(it), it)
    assert [(s.consumed, s.remaining, s.outside) for s in lay] == [
        (100, 0, 0),
        (0, 0, 0),
        (50, 100, 50),
        (0, 0, 150),
    ]
    assert [s.start for s in lay] == [0, 100, 100, 300]
    # a plain state dict works too
    lay = viz.layout([(0, 10), (0, 10)], {"count": 5, "iov_offset": 3, "seg": 1})
    assert (lay[1].consumed, lay[1].remaining, lay[1].outside) == (3, 5, 2)


def test_layout_rejects_a_state_past_the_segments():
    with pytest.raises(ValueError):
        viz.layout([(0, 10)], viz.IterState("IOVEC", 5, 8, 0, 1))
    with pytest.raises(ValueError):
        viz.layout([(0, 10)], viz.IterState("IOVEC", 0, 0, 3, 0))


# ---- draw_iter ----------------------------------------------------------------


def test_draw_iter_boxes_position_and_labels(iov, mem):
    it, _ = iov
    it.advance(150)
    ax = viz.draw_iter(it, contents=mem)
    g = gids(ax)
    assert {"seg0", "seg1", "seg2", "seg3", "position"} <= g
    assert {"consumed0", "consumed2", "remaining2", "remaining3"} <= g
    assert "remaining0" not in g and "outside3" not in g
    # the empty segment is a dashed line, the others are boxes
    seg1 = next(a for a in ax.get_children() if a.get_gid() == "seg1")
    assert isinstance(seg1, Line2D) and seg1.get_linestyle() == "--"
    pos = next(a for a in ax.get_children() if a.get_gid() == "position")
    assert pos.get_xdata()[0] == pytest.approx(150)  # bytes scale: x is the byte position
    title = ax.get_title(loc="left")
    assert "IOVEC ITER_DEST count=300 iov_offset=50 nr_segs=2 seg=2" in title
    assert "consumed 150 B" in title
    labels = texts(ax)
    assert any(t.startswith("seg 0: len 100") and "0x" in t for t in labels)
    assert any("iov_offset 50" in t for t in labels)
    # one byte strip per non-empty segment
    assert sum(isinstance(a, AxesImage) for a in ax.get_children()) == 3
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "consumed" in legend and "remaining (count)" in legend


def test_draw_iter_byte_strip_shows_real_bytes(mem):
    m = mem.map(PAGE)
    it = labkit.import_ubuf(ITER_DEST, m.addr, 64, mem)
    it.copy_to_iter(b"\xff" * 16)
    ax = viz.draw_iter(it, contents=mem)
    (img,) = [a for a in ax.get_children() if isinstance(a, AxesImage)]
    data = np.asarray(img.get_array())
    assert data.shape == (1, 64)
    assert data[0, :16].tolist() == [255] * 16 and data[0, 16:].tolist() == [0] * 48


def test_draw_iter_truncated_and_equal_scale(iov):
    it, _ = iov
    it.truncate(120)
    ax = viz.draw_iter(it, scale="equal", show_addr=False)
    assert "outside2" in gids(ax) and "outside3" in gids(ax)
    assert not any("0x" in t for t in texts(ax))
    assert ax.get_xlabel() == "segments (equal widths)"
    with pytest.raises(ValueError):
        viz.draw_iter(it, scale="log")


def test_draw_iter_discard_and_ubuf():
    ax = viz.draw_iter(IovIter.discard(ITER_DEST, 100))
    assert any("no memory" in t and "count=100" in t for t in texts(ax))
    u = IovIter.ubuf(ITER_SOURCE, bytes(32))
    u.advance(8)
    ax = viz.draw_iter(u)
    assert "UBUF ITER_SOURCE count=24 iov_offset=8" in ax.get_title(loc="left")


def test_draw_steps_logs_each_state(iov, mem):
    it, _ = iov
    fig, log = viz.draw_steps(
        it,
        [
            ("advance", 150),
            ("copy_to_iter", b"x" * 120),
            ("revert", 180),
            ("zero", 40),
            ("custom", lambda i: i.truncate(10)),
        ],
        contents=mem,
    )
    assert len(fig.axes) == 6
    assert [r["step"] for r in log] == [
        "start",
        "advance(150)",
        "copy_to_iter(120 bytes)",
        "revert(180)",
        "zero(40)",
        "custom",
    ]
    assert [(r["seg"], r["iov_offset"], r["count"]) for r in log] == [
        (0, 0, 450),
        (2, 50, 300),
        (2, 170, 180),
        (0, 90, 360),
        (2, 30, 320),
        (2, 30, 10),
    ]
    assert [r["returned"] for r in log] == ["", "", 120, "", 40, ""]
    assert fig.axes[2].get_title(loc="left").startswith("copy_to_iter(120 bytes) -> 120:")
    assert fig.axes[0].get_legend() is not None and fig.axes[1].get_legend() is None


def test_draw_side_by_side(mem):
    m = mem.map(PAGE)
    its = [
        (k, labkit.import_iovec(ITER_DEST, [(m.addr, PAGE)], mem, kernel=k)) for k in ("6.3", "6.4")
    ]
    fig = viz.draw_side_by_side(its)
    titles = [ax.get_title(loc="left") for ax in fig.axes]
    assert titles[0].startswith("6.3: IOVEC") and titles[1].startswith("6.4: UBUF")


# ---- bvec tables and seeks -------------------------------------------------------


@pytest.mark.parametrize("page_off", [0, 512, 3584, 4095])
def test_bvec_table_layout(page_off):
    base = 0x100000
    length = 5 * PAGE + 100
    rows = viz.bvec_table(base + page_off, length)
    assert rows[0] == (base, page_off, min(PAGE - page_off, length))
    assert all(r == (base + k * PAGE, 0, PAGE) for k, r in enumerate(rows[1:-1], start=1))
    assert sum(r[2] for r in rows) == length
    big = viz.bvec_table(base + page_off, 3 << 21, folio_shift=21)
    assert big[1][2] == 1 << 21 and sum(r[2] for r in big) == 3 << 21
    with pytest.raises(ValueError):
        viz.bvec_table(base, 0)
    with pytest.raises(ValueError):
        viz.bvec_table(base, 10, folio_shift=11)


@pytest.mark.parametrize("page_off", [0, 512, 4095])
def test_walk_and_shift_agree_with_the_c_model(mem, page_off):
    m = mem.map(8 * PAGE)
    length = 6 * PAGE - page_off + 1
    table = viz.bvec_table(m.addr + page_off, length)
    reg = labkit.register_buffer(mem, m.addr + page_off, length)
    assert viz.table_rows(reg.table) == table
    bvecs = [(m.array[p - m.addr : p - m.addr + PAGE], o, n) for p, o, n in table]
    offsets = sorted(
        {0, 1, table[0][2] - 1, table[0][2], table[0][2] + 1, length - 1, *range(0, length, 997)}
    )
    for off in offsets:
        it = IovIter.bvec(ITER_DEST, bvecs, count=length)
        it.advance(off)
        walk = viz.walk_seek(table, off)
        shift = viz.shift_seek(reg, off)
        assert walk[:2] == shift[:2] == (it.seg_index, it.iov_offset), off
        assert walk[2] == it.seg_index + 1 and shift[2] == 1
    with pytest.raises(ValueError):
        viz.walk_seek(table, length)
    with pytest.raises(ValueError):
        viz.shift_seek(reg, length)


def test_shift_seek_with_folios(mem):
    m = mem.map(5 << 21, align=2 << 20)
    reg = labkit.register_buffer(mem, m.addr + 4096, 4 << 21, folio_shift=21)
    table = viz.table_rows(reg.table)
    assert table == viz.bvec_table(m.addr + 4096, 4 << 21, folio_shift=21)
    for off in (0, (2 << 21) - 4097, (2 << 21) - 4096, (3 << 21) + 5):
        assert viz.shift_seek(reg, off) == (*viz.walk_seek(table, off)[:2], 1)


def test_draw_bvec_seek_marks_skipped_covered_and_landing():
    table = viz.bvec_table(0x7000_0000_0000 + 512, 8 * PAGE - 512)
    ax = viz.draw_bvec_seek(table, offset=13000, length=6000, visited=4, seek="walk")
    g = gids(ax)
    assert {"skipped0", "skipped1", "skipped2", "read3", "read4", "landing", "readspan"} <= g
    assert {f"bvec{k}" for k in range(8)} <= g and "read5" not in g
    title = ax.get_title(loc="left")
    assert title.startswith("walk: read of 6000 B at offset 13000") and "visited 4" in title
    assert any("lands: bvec 3, iov_offset=1224" in t.get_text() for t in ax.texts)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "bvecs walked over, one by one" in legend
    ax2 = viz.draw_bvec_seek(table, offset=13000, length=6000, visited=1, seek="shift")
    assert "bvecs jumped over" in [t.get_text() for t in ax2.get_legend().get_texts()]


def test_draw_bvec_seek_generic_inputs():
    # page indices instead of addresses, a structured table, an explicit state
    rows = [(0, 100, 3996), (1, 0, PAGE), (2, 0, PAGE), (3, 0, 10)]
    arr = np.array(rows, dtype=[("bv_page", "u8"), ("bv_offset", "u4"), ("bv_len", "u4")])
    # the registered buffer's own layout: page, len, offset
    reg_like = np.array(
        [(p, n, o) for p, o, n in rows], dtype=[("page", "<u8"), ("len", "<u4"), ("offset", "<u4")]
    )
    assert viz.table_rows(reg_like) == viz.table_rows(arr) == rows
    st = viz.IterState("BVEC", 50, 4000, 1, 3)
    ax = viz.draw_bvec_seek(arr, offset=3996 + 4000, length=50, state=st)
    g = gids(ax)
    assert "skipped0" in g and "read1" in g and "read2" not in g and "rest2" in g
    ax = viz.draw_bvec_seek(arr, offset=3996 + 4000, length=200, state=st)
    assert "read2" in gids(ax)  # 4000 + 200 crosses into bvec 2
    assert any("page 1" in t.get_text() for t in ax.texts)
    with pytest.raises(ValueError):
        viz.draw_bvec_seek(rows, offset=0, length=10**6)
    with pytest.raises(ValueError):
        viz.draw_bvec_seek([(0, 1)], offset=0, length=1)


def test_draw_bvec_seek_elides_long_tables():
    table = viz.bvec_table(0, 1 << 24)  # 4096 bvecs
    ax = viz.draw_bvec_seek(table, offset=(1 << 24) - 5000, length=4096)
    boxes = {x for x in gids(ax) if x.startswith("bvec")}
    assert len(boxes) <= 16 and "bvec0" in boxes and "bvec4095" in boxes
    assert any(x.startswith("gap") for x in gids(ax))
    assert any("bvecs ..." in t.get_text() for t in ax.texts)


def test_draw_seeks_one_row_per_seek(mem):
    table = viz.bvec_table(0x10000, 4 * PAGE)
    fig = viz.draw_seeks(
        table,
        offset=5000,
        length=10,
        seeks=[
            ("walk", viz.IterState("BVEC", 10, 904, 1, 3), 2),
            ("shift", viz.IterState("BVEC", 10, 904, 1, 1), 1),
        ],
    )
    assert [ax.get_title(loc="left").split(":")[0] for ax in fig.axes] == ["walk", "shift"]
