"""Unit tests of every iterator operation on every iterator type.

Expected values are worked out by hand from today's lib/iov_iter.c and
include/linux/iov_iter.h, and written next to each assertion.  Two rules are
easy to mix up and are tested side by side:

* ``iov_iter_advance`` (``if (size < len) break; size -= len``) steps over a
  finished segment AND every zero-length segment after it;
* a copy (``iterate_iovec``/``iterate_bvec``) that ends exactly at the end of
  a segment stops on the NEXT segment, offset 0, and skips no further empty
  segments, because the loop ends as soon as ``len`` reaches 0.
"""

from __future__ import annotations

import numpy as np
import pytest

import labkit
from labkit import ITER_DEST, ITER_SOURCE, IovIter, IterMisuseError

PAGE = labkit.PAGE_SIZE


@pytest.fixture
def mapping():
    """Five zeroed, page-aligned pages of real memory."""
    mem = labkit.UserMemory()
    return mem.map(5 * PAGE)


def state(it):
    return (it.count, it.iov_offset, it.nr_segs, it.seg_index)


# ---- IOVEC and KVEC ------------------------------------------------------------
#
# Segment layout used below (offsets into the page-aligned mapping):
#   seg 0: [4090, 4100)   10 bytes, crosses the page 0/1 boundary
#   seg 1: empty (at 5000)
#   seg 2: [8192, 8212)   20 bytes, starts a page
#   seg 3: empty (at 9000)
#   seg 4: empty (at 9100)
#   seg 5: [12278, 12308) 30 bytes, crosses the page 2/3 boundary
# total 60 bytes.

SEGS = [(4090, 10), (5000, 0), (8192, 20), (9000, 0), (9100, 0), (12278, 30)]


def vec(kind, direction, m, segs=SEGS, count=None):
    bufs = [m.array[o : o + n] for o, n in segs]
    make = IovIter.iovec if kind == "IOVEC" else IovIter.kvec
    return make(direction, bufs, count=count)


vec_kinds = pytest.mark.parametrize("kind", ["IOVEC", "KVEC"])


@vec_kinds
def test_vec_construction(kind, mapping):
    it = vec(kind, ITER_DEST, mapping)
    assert it.iter_type == kind
    assert it.direction == ITER_DEST
    assert it.user_backed == (kind == "IOVEC")
    assert state(it) == (60, 0, 6, 0)
    assert repr(it) == f"IovIter({kind}, ITER_DEST, count=60, iov_offset=0, nr_segs=6, seg=0)"
    assert it.state() == {
        "type": kind,
        "direction": "DEST",
        "count": 60,
        "iov_offset": 0,
        "nr_segs": 6,
        "seg": 0,
    }
    assert vec(kind, ITER_SOURCE, mapping).direction == ITER_SOURCE


@vec_kinds
def test_vec_advance_inside_a_segment(kind, mapping):
    it = vec(kind, ITER_DEST, mapping)
    it.advance(5)
    assert state(it) == (55, 5, 6, 0)
    it.advance(4)
    assert state(it) == (51, 9, 6, 0)


@vec_kinds
def test_vec_advance_steps_over_trailing_empty_segments(kind, mapping):
    it = vec(kind, ITER_DEST, mapping)
    it.advance(10)  # size 10: seg 0 done (10 < 10 is false), seg 1 (0) stepped, seg 2 holds
    assert state(it) == (50, 0, 4, 2)
    it.advance(20)  # seg 2 done, segs 3 and 4 (empty) stepped, stops on seg 5
    assert state(it) == (30, 0, 1, 5)
    it.advance(30)  # everything consumed: past the last segment
    assert state(it) == (0, 0, 0, 6)


@vec_kinds
def test_vec_copy_stops_on_the_next_segment_without_skipping_empties(kind, mapping):
    it = vec(kind, ITER_DEST, mapping)
    assert it.copy_to_iter(bytes(10)) == 10
    assert state(it) == (50, 0, 5, 1)  # on empty seg 1, not seg 2 as advance(10) gives
    assert it.copy_to_iter(bytes(20)) == 20
    assert state(it) == (30, 0, 3, 3)  # on empty seg 3, not seg 5 as advance gives
    # advance(0) with bytes left re-runs the walk: it steps over the empty segments
    it.advance(0)
    assert state(it) == (30, 0, 1, 5)


@vec_kinds
def test_vec_copy_and_advance_reach_the_same_state_at_the_very_end(kind, mapping):
    a = vec(kind, ITER_DEST, mapping)
    b = vec(kind, ITER_DEST, mapping)
    a.advance(60)
    assert b.copy_to_iter(bytes(60)) == 60
    assert state(a) == state(b) == (0, 0, 0, 6)


@vec_kinds
def test_vec_copy_skips_leading_empty_segments(kind, mapping):
    it = vec(kind, ITER_DEST, mapping)
    it.copy_to_iter(bytes(10))  # now on empty seg 1
    assert it.copy_to_iter(b"\x07" * 5) == 5
    assert state(it) == (45, 5, 4, 2)  # seg 1 stepped over, 5 bytes into seg 2
    assert bytes(mapping.array[8192:8198]) == b"\x07" * 5 + b"\x00"


@vec_kinds
def test_vec_advance_does_nothing_when_count_is_zero(kind, mapping):
    it = vec(kind, ITER_DEST, mapping)
    it.copy_to_iter(bytes(10))  # on empty seg 1
    it.truncate(0)
    it.advance(0)  # count 0: the kernel returns at once
    it.advance(7)
    assert state(it) == (0, 0, 5, 1)


@vec_kinds
def test_vec_advance_clamps_to_count(kind, mapping):
    it = vec(kind, ITER_DEST, mapping)
    it.advance(10**6)
    assert state(it) == (0, 0, 0, 6)
    t = vec(kind, ITER_DEST, mapping)
    t.truncate(10)
    t.advance(25)  # clamped to 10; the walk lands on seg 2
    assert state(t) == (0, 0, 4, 2)


@vec_kinds
def test_vec_revert(kind, mapping):
    it = vec(kind, ITER_DEST, mapping)
    it.advance(30)  # seg 5, offset 0
    it.revert(20)  # back over empty segs 4, 3 into seg 2: 20 <= 20
    assert state(it) == (50, 0, 4, 2)
    it.revert(5)  # back over empty seg 1 into seg 0 at 10 - 5
    assert state(it) == (55, 5, 6, 0)
    it.revert(5)  # unroll <= iov_offset: stays in seg 0
    assert state(it) == (60, 0, 6, 0)


@vec_kinds
def test_vec_revert_within_and_across_a_segment(kind, mapping):
    it = vec(kind, ITER_DEST, mapping)
    it.advance(15)  # seg 2, offset 5
    assert state(it) == (45, 5, 4, 2)
    it.revert(5)
    assert state(it) == (50, 0, 4, 2)  # stays on seg 2
    it.revert(1)  # back over empty seg 1: seg 0 at 10 - 1
    assert state(it) == (51, 9, 6, 0)


@vec_kinds
def test_vec_revert_back_to_the_start(kind, mapping):
    it = vec(kind, ITER_DEST, mapping)
    it.advance(60)
    it.revert(60)
    assert state(it) == (60, 0, 6, 0)
    it.copy_to_iter(bytes(60))
    it.revert(60)
    assert state(it) == (60, 0, 6, 0)


@vec_kinds
def test_vec_revert_past_the_start_is_refused_and_changes_nothing(kind, mapping):
    it = vec(kind, ITER_DEST, mapping)
    with pytest.raises(IterMisuseError, match="past the start"):
        it.revert(1)
    assert state(it) == (60, 0, 6, 0)
    it.advance(60)
    with pytest.raises(IterMisuseError):
        it.revert(61)
    assert state(it) == (0, 0, 0, 6)
    it.advance(0)
    it.revert(0)  # a zero revert is a no-op
    assert state(it) == (0, 0, 0, 6)
    with pytest.raises(IterMisuseError, match="MAX_RW_COUNT"):
        it.revert(labkit.MAX_RW_COUNT + 1)
    assert state(it) == (0, 0, 0, 6)


def test_revert_past_the_start_behind_leading_empty_segments(mapping):
    it = IovIter.kvec(ITER_DEST, [mapping.array[0:0], mapping.array[0:0], mapping.array[0:8]])
    it.advance(3)  # empty segs 0 and 1 stepped: seg 2, offset 3
    assert state(it) == (5, 3, 1, 2)
    with pytest.raises(IterMisuseError):
        it.revert(4)
    assert state(it) == (5, 3, 1, 2)
    it.revert(3)  # unroll <= iov_offset: stays on seg 2
    assert state(it) == (8, 0, 1, 2)


@vec_kinds
def test_vec_truncate_and_reexpand(kind, mapping):
    it = vec(kind, ITER_DEST, mapping)
    it.truncate(100)  # larger than count: no effect
    assert it.count == 60
    it.truncate(25)
    assert state(it) == (25, 0, 6, 0)
    it.reexpand(60)
    assert it.count == 60
    with pytest.raises(IterMisuseError, match="reexpand"):
        it.reexpand(61)
    assert it.count == 60
    it.advance(15)  # 45 bytes left in the segments
    it.truncate(3)
    it.reexpand(45)
    assert state(it) == (45, 5, 4, 2)
    with pytest.raises(IterMisuseError):
        it.reexpand(46)
    assert state(it) == (45, 5, 4, 2)


@vec_kinds
def test_vec_initial_count_below_the_segments(kind, mapping):
    it = vec(kind, ITER_DEST, mapping, count=12)
    assert state(it) == (12, 0, 6, 0)
    assert it.copy_to_iter(b"\x01" * 20) == 12
    assert state(it) == (0, 2, 4, 2)
    it.reexpand(48)  # capacity from here: 60 - 12
    assert it.count == 48
    with pytest.raises(ValueError, match="exceeds"):
        vec(kind, ITER_DEST, mapping, count=61)


@vec_kinds
def test_vec_single_seg_count(kind, mapping):
    it = vec(kind, ITER_DEST, mapping)
    assert it.single_seg_count() == 10
    it.advance(5)
    assert it.single_seg_count() == 5
    it.copy_to_iter(bytes(5))  # on empty seg 1, 5 segments left
    assert it.single_seg_count() == 0
    it.advance(0)  # seg 2
    assert it.single_seg_count() == 20
    it.truncate(3)
    assert it.single_seg_count() == 3
    it.reexpand(50)
    it.advance(20)  # seg 5 is the last: nr_segs 1 gives count
    assert it.nr_segs == 1
    assert it.single_seg_count() == 30


@vec_kinds
def test_vec_copy_to_iter_writes_the_segments_only(kind, mapping):
    arr = mapping.array
    it = vec(kind, ITER_DEST, mapping)
    data = bytes(range(1, 61))
    assert it.copy_to_iter(data[:15]) == 15
    assert it.copy_to_iter(data[15:] + b"extra bytes beyond count") == 45
    assert bytes(arr[4090:4100]) == data[:10]
    assert bytes(arr[8192:8212]) == data[10:30]
    assert bytes(arr[12278:12308]) == data[30:60]
    untouched = np.ones(arr.size, bool)
    for o, n in SEGS:
        untouched[o : o + n] = False
    assert not arr[untouched].any()
    assert it.copy_to_iter(b"more") == 0  # count 0


@vec_kinds
def test_vec_copy_from_iter(kind, mapping):
    arr = mapping.array
    arr[:] = np.arange(arr.size) % 251
    expect = b"".join(bytes(arr[o : o + n]) for o, n in SEGS)
    it = vec(kind, ITER_SOURCE, mapping)
    assert it.copy_from_iter(7) == expect[:7]
    assert state(it) == (53, 7, 6, 0)
    assert it.copy_from_iter(1000) == expect[7:]
    assert state(it) == (0, 0, 0, 6)
    assert it.copy_from_iter(5) == b""


@vec_kinds
def test_vec_zero(kind, mapping):
    arr = mapping.array
    arr[:] = 0xFF
    it = vec(kind, ITER_DEST, mapping)
    assert it.zero(15) == 15
    assert state(it) == (45, 5, 4, 2)
    assert not arr[4090:4100].any()
    assert not arr[8192:8197].any()
    assert (arr[8197:8212] == 0xFF).all()
    assert arr[4089] == 0xFF and arr[4100] == 0xFF
    assert it.zero(1000) == 45
    assert it.count == 0


@vec_kinds
def test_vec_npages(kind, mapping):
    it = vec(kind, ITER_DEST, mapping)
    # seg 0 spans pages 0-1 (2), seg 2 page 2 (1), seg 5 pages 2-3 (2); empty segs count nothing
    assert it.npages(100) == 5
    assert it.npages(3) == 3
    assert it.npages(0) == 0
    it.advance(10)
    assert it.npages(100) == 3
    it.truncate(2)
    assert it.npages(100) == 1
    it.truncate(0)
    assert it.npages(100) == 0


@vec_kinds
def test_vec_alignment(kind, mapping):
    base = mapping.addr
    it = vec(kind, ITER_DEST, mapping)
    assert it.alignment() == (base + 4090) | 10 | (base + 8192) | 20 | (base + 12278) | 30
    it.truncate(12)  # seg 0 whole, then 2 bytes of seg 2
    assert it.alignment() == (base + 4090) | 10 | (base + 8192) | 2
    it.reexpand(60)
    it.advance(12)
    assert it.alignment() == (base + 8194) | 18 | (base + 12278) | 30
    it.copy_to_iter(bytes(18))  # on empty seg 3
    it.truncate(0)
    # count 0: the kernel's do { } while (size) looks at the (empty) current segment only
    assert it.alignment() == 0


@vec_kinds
def test_vec_current_segment(kind, mapping):
    base = mapping.addr
    it = vec(kind, ITER_DEST, mapping)
    assert it.iovec() == (base + 4090, 10)
    it.advance(5)
    assert it.iovec() == (base + 4095, 5)
    it.truncate(2)
    assert it.iovec() == (base + 4095, 2)
    it.reexpand(55)
    it.copy_to_iter(bytes(5))  # empty seg 1
    assert it.iovec()[1] == 0
    it.advance(0)
    assert it.iovec() == (base + 8192, 20)
    it.advance(100)
    assert it.iovec() == (0, 0)  # no segment left


def test_iovec_name_is_constructor_on_the_class_and_accessor_on_an_instance(mapping):
    it = IovIter.iovec(ITER_DEST, [mapping.array[:4]])
    assert isinstance(it, IovIter)
    assert it.iovec() == (mapping.addr, 4)


@pytest.mark.parametrize("kind", ["IOVEC", "KVEC", "BVEC"])
def test_no_segments(kind):
    if kind == "BVEC":
        it = IovIter.bvec(ITER_DEST, [])
    else:
        it = (IovIter.iovec if kind == "IOVEC" else IovIter.kvec)(ITER_DEST, [])
    assert state(it) == (0, 0, 0, 0)
    it.advance(5)
    assert it.copy_to_iter(b"abc") == 0
    assert it.zero(3) == 0
    assert it.iovec() == (0, 0)
    assert it.npages(10) == 0
    assert it.alignment() == 0
    assert it.single_seg_count() == 0
    with pytest.raises(IterMisuseError):
        it.revert(1)
    assert state(it) == (0, 0, 0, 0)


# ---- UBUF ------------------------------------------------------------------------


def ubuf(direction, m, start=4000, length=200):
    return IovIter.ubuf(direction, m.array[start : start + length])


def test_ubuf_construction(mapping):
    it = ubuf(ITER_DEST, mapping)
    assert it.iter_type == "UBUF" and it.user_backed
    assert state(it) == (200, 0, 1, 0)
    assert repr(it) == "IovIter(UBUF, ITER_DEST, count=200, iov_offset=0, nr_segs=1, seg=0)"


def test_ubuf_advance_revert(mapping):
    it = ubuf(ITER_DEST, mapping)
    it.advance(30)
    assert state(it) == (170, 30, 1, 0)
    it.revert(30)
    assert state(it) == (200, 0, 1, 0)
    it.advance(10**9)
    assert state(it) == (0, 200, 1, 0)
    it.revert(200)  # back to the start
    assert state(it) == (200, 0, 1, 0)


def test_ubuf_revert_past_the_start_is_refused(mapping):
    it = ubuf(ITER_DEST, mapping)
    it.advance(30)
    with pytest.raises(IterMisuseError, match="past the start"):
        it.revert(31)
    assert state(it) == (170, 30, 1, 0)


def test_ubuf_truncate_reexpand_single_seg_count(mapping):
    it = ubuf(ITER_DEST, mapping)
    it.truncate(10)
    assert it.single_seg_count() == 10
    it.reexpand(200)
    with pytest.raises(IterMisuseError):
        it.reexpand(201)
    it.advance(30)
    it.reexpand(170)
    with pytest.raises(IterMisuseError):
        it.reexpand(171)
    assert state(it) == (170, 30, 1, 0)
    assert it.single_seg_count() == 170


def test_ubuf_copies(mapping):
    arr = mapping.array
    it = ubuf(ITER_DEST, mapping)
    assert it.copy_to_iter(b"\x05" * 150) == 150
    assert it.zero(10) == 10
    assert it.copy_to_iter(b"\x06" * 100) == 40
    assert state(it) == (0, 200, 1, 0)
    assert (arr[4000:4150] == 5).all() and not arr[4150:4160].any()
    assert (arr[4160:4200] == 6).all()
    assert arr[3999] == 0 and arr[4200] == 0
    src = ubuf(ITER_SOURCE, mapping)
    assert src.copy_from_iter(150) == b"\x05" * 150
    assert src.copy_from_iter(1000) == b"\x00" * 10 + b"\x06" * 40


def test_ubuf_queries(mapping):
    base = mapping.addr
    it = ubuf(ITER_DEST, mapping)  # [4000, 4200): pages 0 and 1
    assert it.iovec() == (base + 4000, 200)
    assert it.npages(10) == 2 and it.npages(1) == 1
    assert it.alignment() == (base + 4000) | 200
    it.advance(96)  # [4096, 4200): page 1 only
    assert it.iovec() == (base + 4096, 104)
    assert it.npages(10) == 1
    assert it.alignment() == (base + 4096) | 104
    it.truncate(0)
    assert it.npages(10) == 0 and it.alignment() == 0
    assert it.iovec() == (base + 4096, 0)


# ---- BVEC --------------------------------------------------------------------------
#
#   bvec 0: folio (pages 0-3), bv_offset 4000,  200 bytes: crosses the page 0/1 boundary
#   bvec 1: folio, bv_offset 5000, empty
#   bvec 2: single page 2 ([8192, 12288)), bv_offset 100, 50 bytes
#   bvec 3: folio, bv_offset 12200, 200 bytes: crosses the page 2/3 boundary inside the folio
# total 450 bytes.


def bvecs(direction, m, count=None):
    folio = m.array[: 4 * PAGE]
    page2 = m.array[2 * PAGE : 3 * PAGE]
    return IovIter.bvec(
        direction,
        [(folio, 4000, 200), (folio, 5000, 0), (page2, 100, 50), (folio, 12200, 200)],
        count=count,
    )


def test_bvec_construction(mapping):
    it = bvecs(ITER_DEST, mapping)
    assert it.iter_type == "BVEC" and not it.user_backed
    assert state(it) == (450, 0, 4, 0)


def test_bvec_advance_versus_copy(mapping):
    a = bvecs(ITER_DEST, mapping)
    a.advance(200)  # bvec 0 done, empty bvec 1 stepped
    assert state(a) == (250, 0, 2, 2)
    b = bvecs(ITER_DEST, mapping)
    assert b.copy_to_iter(bytes(200)) == 200
    assert state(b) == (250, 0, 3, 1)  # stops on the empty bvec 1
    b.advance(0)
    assert state(b) == (250, 0, 2, 2)
    a.advance(50)  # bvec 2 done: on bvec 3
    assert state(a) == (200, 0, 1, 3)
    a.advance(200)
    assert state(a) == (0, 0, 0, 4)


def test_bvec_copy_through_a_multipage_folio(mapping):
    arr = mapping.array
    it = bvecs(ITER_DEST, mapping)
    data = bytes((k * 7 + 3) % 256 for k in range(450))
    assert it.copy_to_iter(data) == 450
    assert state(it) == (0, 0, 0, 4)
    assert bytes(arr[4000:4200]) == data[:200]
    assert bytes(arr[8292:8342]) == data[200:250]
    assert bytes(arr[12200:12400]) == data[250:]
    src = bvecs(ITER_SOURCE, mapping)
    assert src.copy_from_iter(210) == data[:210]
    assert state(src) == (240, 10, 2, 2)
    assert src.copy_from_iter(500) == data[210:]


def test_bvec_revert(mapping):
    it = bvecs(ITER_DEST, mapping)
    it.advance(260)  # 10 bytes into bvec 3
    assert state(it) == (190, 10, 1, 3)
    it.revert(60)  # into bvec 2 (50): 50 <= 50 -> offset 0
    assert state(it) == (250, 0, 2, 2)
    it.revert(1)  # over the empty bvec 1 into bvec 0
    assert state(it) == (251, 199, 4, 0)
    it.revert(199)
    assert state(it) == (450, 0, 4, 0)
    with pytest.raises(IterMisuseError):
        it.revert(1)
    assert state(it) == (450, 0, 4, 0)


def test_bvec_truncate_reexpand_single_seg_count(mapping):
    it = bvecs(ITER_DEST, mapping)
    assert it.single_seg_count() == 200
    it.truncate(20)
    assert it.single_seg_count() == 20
    it.reexpand(450)
    with pytest.raises(IterMisuseError):
        it.reexpand(451)
    it.advance(205)
    assert it.single_seg_count() == 45
    it.advance(45)
    assert it.nr_segs == 1 and it.single_seg_count() == 200


def test_bvec_zero(mapping):
    arr = mapping.array
    arr[:] = 0xAA
    it = bvecs(ITER_DEST, mapping)
    it.advance(150)
    assert it.zero(100) == 100  # 50 of bvec 0, 50 of bvec 2
    assert not arr[4150:4200].any() and not arr[8292:8342].any()
    assert arr[4149] == 0xAA and arr[8342] == 0xAA and arr[12200] == 0xAA


def test_bvec_npages_and_alignment(mapping):
    it = bvecs(ITER_DEST, mapping)
    # bvec 0: (4000 + 200) -> 2 pages; bvec 1: empty, but bvec_npages() has no
    # "if (len)": DIV_ROUND_UP(5000 % 4096 + 0, 4096) = 1; bvec 2: 1; bvec 3: 4008 + 200 -> 2
    assert it.npages(100) == 6
    assert it.npages(4) == 4
    # iov_iter_alignment_bvec ORs bv_offset + skip and the length of every bvec met
    assert it.alignment() == 4000 | 200 | 5000 | 0 | 100 | 50 | 12200 | 200
    it.advance(210)  # 10 bytes into bvec 2
    assert it.npages(100) == 3
    assert it.alignment() == 110 | 40 | 12200 | 200
    it.truncate(0)
    assert it.npages(100) == 0
    assert it.alignment() == 110  # do { } while (size): the current bvec only


def test_bvec_current_segment(mapping):
    base = mapping.addr
    it = bvecs(ITER_DEST, mapping)
    assert it.iovec() == (base + 4000, 200)
    it.copy_to_iter(bytes(200))
    assert it.iovec() == (base + 5000, 0)
    it.advance(10)
    assert it.iovec() == (base + 2 * PAGE + 110, 40)
    it.advance(1000)
    assert it.iovec() == (0, 0)


def test_bvec_checks_its_table():
    page = np.zeros(PAGE, np.uint8)
    with pytest.raises(ValueError, match="does not fit"):
        IovIter.bvec(ITER_DEST, [(page, 4000, 200)])
    with pytest.raises(ValueError, match="exceeds"):
        IovIter.bvec(ITER_DEST, [(page, 0, 10)], count=11)
    with pytest.raises(TypeError):
        IovIter.bvec(ITER_DEST, [(page, 0)])


# ---- DISCARD -----------------------------------------------------------------------


def test_discard():
    it = IovIter.discard(ITER_DEST, 100)
    assert it.iter_type == "DISCARD" and not it.user_backed
    assert state(it) == (100, 0, 0, 0)
    assert repr(it) == "IovIter(DISCARD, ITER_DEST, count=100, iov_offset=0, nr_segs=0, seg=0)"
    it.advance(30)
    assert it.count == 70
    assert it.copy_to_iter(b"x" * 30) == 30
    assert it.zero(15) == 15
    assert it.count == 25
    assert it.single_seg_count() == 25
    assert it.npages(10) == 0 and it.alignment() == 0
    with pytest.raises(IterMisuseError):
        it.iovec()
    it.advance(1000)
    assert it.count == 0
    it.revert(50)  # the kernel only adds to count for DISCARD
    assert state(it) == (50, 0, 0, 0)
    with pytest.raises(IterMisuseError):
        it.revert(labkit.MAX_RW_COUNT + 1)
    it.truncate(5)
    it.reexpand(10**6)  # DISCARD has no memory to overrun
    assert it.count == 10**6


def test_discard_revert_does_not_wrap_count():
    # found by the property test: reexpand(SIZE_MAX) then revert(1) wrapped count to 0
    it = IovIter.discard(ITER_DEST, 10)
    it.reexpand(2**64 - 1)
    with pytest.raises(IterMisuseError, match="SIZE_MAX"):
        it.revert(1)
    assert state(it) == (2**64 - 1, 0, 0, 0)
    it.advance(5)
    it.revert(5)
    assert it.count == 2**64 - 1


def test_discard_is_a_destination_only():
    with pytest.raises(IterMisuseError):
        IovIter.discard(ITER_SOURCE, 10)


# ---- direction misuse --------------------------------------------------------------


def all_kinds(direction, m):
    return [
        vec("IOVEC", direction, m),
        vec("KVEC", direction, m),
        ubuf(direction, m),
        bvecs(direction, m),
    ]


def test_copy_against_the_direction_is_refused(mapping):
    for it in all_kinds(ITER_SOURCE, mapping):
        before = state(it)
        with pytest.raises(IterMisuseError, match="ITER_SOURCE"):
            it.copy_to_iter(b"abc")
        with pytest.raises(IterMisuseError):
            it.zero(3)
        assert state(it) == before
    for it in [*all_kinds(ITER_DEST, mapping), IovIter.discard(ITER_DEST, 10)]:
        before = state(it)
        with pytest.raises(IterMisuseError, match="ITER_DEST"):
            it.copy_from_iter(3)
        assert state(it) == before
    assert not mapping.array.any()


def test_bad_direction_values():
    buf = bytearray(4)
    for bad in (2, -1, "DEST", None):
        with pytest.raises((ValueError, TypeError)):
            IovIter.ubuf(bad, buf)


def test_source_accepts_read_only_buffers_destination_does_not():
    data = b"read only"
    it = IovIter.ubuf(ITER_SOURCE, data)
    assert it.copy_from_iter(100) == data
    with pytest.raises(TypeError, match="writable"):
        IovIter.ubuf(ITER_DEST, data)


def test_iterator_keeps_its_buffers_alive():
    it = IovIter.kvec(ITER_DEST, [bytearray(8), bytearray(8)])
    import gc

    gc.collect()
    assert it.copy_to_iter(b"x" * 16) == 16
