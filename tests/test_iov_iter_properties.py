"""Property tests: random segment layouts and operation sequences against labkit.testing.oracle.

The second half does the same for XARRAY and FOLIOQ: random page caches (with
holes, folios of order 0..2) and folio queues (up to 40 folios, so that walks
cross the 31-slot segment boundary, some slots cleared), with page listing
(extract_pages) among the operations.

Every example builds one iterator of a random type over a random layout of
segments (empty ones included, overlapping allowed, crossing pages) inside one
real mapping, and the same iterator in the oracle; then it applies a random
sequence of operations to both and checks after each one that count,
iov_offset, nr_segs and the segment index agree, that the return values agree,
that refused operations raise IterMisuseError and leave the state unchanged,
and that the real memory holds exactly the bytes the oracle expects.

Profiles: ``full`` by default (LABKIT_EXAMPLES=N changes its example count),
``ci`` (fewer examples) when LABKIT_QUICK=1.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import labkit
from labkit.config import quick_mode
from labkit.testing.oracle import MAX_RW_COUNT, Oracle, OracleMisuse, Seg
from labkit.testing.oracle_folios import FOLIOQ_NR_SLOTS, FolioqOracle, XarrayOracle

settings.register_profile(
    "full",
    max_examples=int(os.environ.get("LABKIT_EXAMPLES", 400)),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "ci", max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
PROFILE = settings.get_profile("ci" if quick_mode() else "full")

PAGE = labkit.PAGE_SIZE
SIZE_MAX = 2**64 - 1
ARENA = 3 * PAGE
KINDS = ["UBUF", "IOVEC", "IOVEC_IMPORT", "KVEC", "BVEC", "BVEC_PAGES", "DISCARD"]


@pytest.fixture(scope="module")
def arena():
    mem = labkit.UserMemory()
    return mem, mem.map(ARENA)


lengths = st.one_of(st.just(0), st.integers(1, 64), st.integers(1, PAGE + 300))


@st.composite
def segment(draw, whole_page: bool = False):
    """(offset, length) inside the arena; whole_page keeps it inside one page."""
    length = draw(lengths)
    if whole_page:
        length = min(length, PAGE)
        page = draw(st.integers(0, ARENA // PAGE - 1))
        off = draw(st.integers(0, PAGE - length))
        return page * PAGE + off, length
    off = draw(st.integers(0, ARENA - length))
    return off, length


@st.composite
def layouts(draw):
    kind = draw(st.sampled_from(KINDS))
    dest = True if kind == "DISCARD" else draw(st.booleans())
    if kind == "UBUF":
        segs = [draw(segment())]
    elif kind == "DISCARD":
        segs = []
    else:
        segs = draw(st.lists(segment(whole_page=kind == "BVEC_PAGES"), min_size=0, max_size=7))
    total = sum(n for _, n in segs) if kind != "DISCARD" else draw(st.integers(0, 20000))
    count = total
    if kind in ("IOVEC", "KVEC", "BVEC", "BVEC_PAGES") and draw(st.booleans()):
        count = draw(st.integers(0, total))
    return kind, dest, segs, count, total


def sizes(total: int):
    return st.one_of(
        st.integers(0, total + 16), st.just(0), st.just(total), st.integers(0, 2**64 + 5)
    )


@st.composite
def operations(draw, total: int):
    ops = []
    for _ in range(draw(st.integers(1, 25))):
        name = draw(
            st.sampled_from(
                ["advance", "revert", "truncate", "reexpand", "copy", "copy_wrong", "zero", "query"]
            )
        )
        if name == "revert":
            n = draw(st.one_of(st.integers(0, total + 16), st.just(MAX_RW_COUNT + 1)))
        elif name in ("copy", "copy_wrong", "zero"):
            n = draw(st.integers(0, total + 16))
        else:
            n = draw(sizes(total))
        ops.append((name, n))
    return ops


def build(kind, dest, segs, count, mem, mapping):
    """The real iterator and its oracle."""
    arr = mapping.array
    d = labkit.ITER_DEST if dest else labkit.ITER_SOURCE
    base = mapping.addr
    oseg = [Seg(base + o, n, o) for o, n in segs]
    okind = {"IOVEC_IMPORT": "IOVEC", "BVEC_PAGES": "BVEC"}.get(kind, kind)
    if kind == "UBUF":
        o, n = segs[0]
        it = labkit.IovIter.ubuf(d, arr[o : o + n])
    elif kind == "IOVEC":
        it = labkit.IovIter.iovec(d, [arr[o : o + n] for o, n in segs], count=count)
    elif kind == "IOVEC_IMPORT":
        it = labkit.import_iovec(d, [(base + o, n) for o, n in segs], mem, kernel="6.3")
    elif kind == "KVEC":
        it = labkit.IovIter.kvec(d, [arr[o : o + n] for o, n in segs], count=count)
    elif kind == "BVEC":
        # one folio: the whole 3-page arena is the page_buf, bv_offset may pass a page
        it = labkit.IovIter.bvec(d, [(arr, o, n) for o, n in segs], count=count)
    elif kind == "BVEC_PAGES":
        bv = [(arr[o // PAGE * PAGE : o // PAGE * PAGE + PAGE], o % PAGE, n) for o, n in segs]
        it = labkit.IovIter.bvec(d, bv, count=count)
        oseg = [Seg(base + o, n, o % PAGE) for o, n in segs]
    else:
        it = labkit.IovIter.discard(d, count)
    memory = {base + k: int(v) for k, v in enumerate(arr)}
    return it, Oracle(okind, dest, oseg, count, memory)


def snapshot(it):
    return (it.count, it.iov_offset, it.nr_segs, it.seg_index)


def check_memory(mapping, oracle):
    expected = np.fromiter(
        (oracle.memory[mapping.addr + k] for k in range(ARENA)), dtype=np.uint8, count=ARENA
    )
    bad = np.nonzero(mapping.array != expected)[0]
    assert bad.size == 0, f"memory differs at arena offsets {bad[:10].tolist()}"


@PROFILE
@given(data=st.data())
def test_random_operations_match_oracle(arena, data):
    mem, mapping = arena
    kind, dest, segs, count, total = data.draw(layouts(), label="layout")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    mapping.array[:] = rng.integers(0, 256, ARENA, dtype=np.uint8)
    it, orc = build(kind, dest, segs, count, mem, mapping)
    assert it.iter_type == orc.kind
    assert snapshot(it) == orc.state(), "after construction"

    for step, (name, n) in enumerate(data.draw(operations(total), label="ops")):
        where = f"step {step}: {name}({n}) on {it!r}"
        n_c = min(n, SIZE_MAX)  # the API clamps sizes above SIZE_MAX (labkit._ffi.size_arg)
        before = snapshot(it)
        if name == "query":
            assert it.single_seg_count() == orc.single_seg_count(), where
            assert it.alignment() == orc.alignment(), where
            for maxpages in (1, 2, 64):
                assert it.npages(maxpages) == orc.npages(maxpages), (where, maxpages)
            if orc.kind == "DISCARD":
                with pytest.raises(labkit.IterMisuseError):
                    it.iovec()
            else:
                got, expect = it.iovec(), orc.iovec()
                assert got[1] == expect[1], where
                assert expect[0] is None or got[0] == expect[0], where
            continue
        try:
            if name == "advance":
                orc.advance(n_c)
            elif name == "revert":
                orc.revert(n_c)
            elif name == "truncate":
                orc.truncate(n_c)
            elif name == "reexpand":
                orc.reexpand(n_c)
            elif name == "zero":
                expect = orc.zero(n)
            elif (name == "copy") == dest:
                payload = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
                expect = orc.copy_to(payload)
            else:
                expect = orc.copy_from(n)
        except OracleMisuse:
            assert name not in ("advance", "truncate"), "the oracle never refuses these"
            with pytest.raises(labkit.IterMisuseError):
                if name == "revert":
                    it.revert(n)
                elif name == "reexpand":
                    it.reexpand(n)
                elif name == "zero":
                    it.zero(n)
                elif orc.dest:
                    it.copy_from_iter(n)
                else:
                    it.copy_to_iter(b"\x00" * n)
            assert snapshot(it) == before, f"{where}: refused, but the state changed"
            continue

        if name == "advance":
            it.advance(n)
        elif name == "revert":
            it.revert(n)
        elif name == "truncate":
            it.truncate(n)
        elif name == "reexpand":
            it.reexpand(n)
        elif name == "zero":
            assert it.zero(n) == expect, where
        elif (name == "copy") == dest:
            assert it.copy_to_iter(payload) == expect, where
        else:
            assert it.copy_from_iter(n) == expect, where
        assert snapshot(it) == orc.state(), where
        if name in ("zero", "copy", "copy_wrong") and dest:
            check_memory(mapping, orc)
    check_memory(mapping, orc)


@PROFILE
@given(layout=layouts(), cut=st.integers(0, 2**16))
def test_advance_then_revert_is_identity(arena, layout, cut):
    """Reverting what an advance or a copy consumed returns to the same flat byte."""
    mem, mapping = arena
    kind, dest, segs, count, total = layout
    it, orc = build(kind, dest, segs, count, mem, mapping)
    n = min(cut, it.count)
    it.advance(n)
    orc.advance(n)
    assert snapshot(it) == orc.state()
    moved = count - it.count
    if kind != "DISCARD" and n:
        it.revert(moved)
        orc.revert(moved)
        assert snapshot(it) == orc.state()
        assert it.count == count


# ---- XARRAY and FOLIOQ ------------------------------------------------------------------

FOLIO_ARENA_PAGES = 48


@pytest.fixture(scope="module")
def folio_arena():
    mem = labkit.UserMemory()
    return mem.map(FOLIO_ARENA_PAGES * PAGE)


@st.composite
def xarray_layouts(draw):
    """{first index: order}, holes between; at most FOLIO_ARENA_PAGES pages of folios."""
    folios, index, pages = {}, 0, 0
    for _ in range(draw(st.integers(0, 14))):
        if draw(st.integers(0, 3)) == 0:
            index += draw(st.integers(1, 3))  # a hole
            continue
        order = draw(st.sampled_from([0, 0, 0, 1, 2]))
        while index % (1 << order):
            order -= 1
        if pages + (1 << order) > FOLIO_ARENA_PAGES:
            break
        folios[index] = order
        index += 1 << order
        pages += 1 << order
    span = (index + 2) * PAGE
    start = draw(st.integers(0, span))
    count = draw(st.integers(0, span - start))
    return folios, start, count


@st.composite
def folioq_layouts(draw):
    """Orders of the folios in queue order, cleared slots, and where the iterator starts."""
    orders, pages = [], 0
    # often more than 31 folios, so that the walks cross a segment boundary
    for _ in range(draw(st.one_of(st.integers(0, 40), st.integers(30, 40)))):
        order = draw(st.sampled_from([0, 0, 0, 0, 0, 1, 2]))
        if pages + (1 << order) > FOLIO_ARENA_PAGES:
            order = 0
        if pages + 1 > FOLIO_ARENA_PAGES:
            break
        orders.append(order)
        pages += 1 << order
    cleared = draw(st.sets(st.integers(0, len(orders) - 1), max_size=3)) if orders else set()
    nsegs = max(1, -(-len(orders) // FOLIOQ_NR_SLOTS))
    seg = draw(st.integers(0, nsegs - 1))
    filled = min(FOLIOQ_NR_SLOTS, len(orders) - seg * FOLIOQ_NR_SLOTS)
    slot = draw(st.one_of(st.integers(0, FOLIOQ_NR_SLOTS), st.just(FOLIOQ_NR_SLOTS)))
    g = seg * FOLIOQ_NR_SLOTS + slot
    offset = draw(st.integers(0, (PAGE << orders[g]) - 1)) if slot < filled else 0
    return orders, sorted(cleared), seg, slot, offset


def place(orders, rng):
    """Arena offsets for folios of these orders, in a shuffled order, page-aligned."""
    order_of_placing = rng.permutation(len(orders))
    offsets, at = [0] * len(orders), 0
    for k in order_of_placing:
        offsets[k] = at * PAGE
        at += 1 << orders[k]
    return offsets


def folio_view(mapping, off, order):
    return labkit.Folio.of(mapping.array[off : off + (PAGE << order)])


def build_folio_iter(kind, dest, layout, mapping, rng):
    d = labkit.ITER_DEST if dest else labkit.ITER_SOURCE
    memory = mapping.array.copy()
    if kind == "XARRAY":
        folios, start, count = layout
        firsts = sorted(folios)
        offsets = place([folios[f] for f in firsts], rng)
        cache = labkit.PageCache()
        for f, off in zip(firsts, offsets, strict=True):
            cache.add(f, folio_view(mapping, off, folios[f]))
        it = labkit.IovIter.xarray(d, cache, start, count)
        table = {f: (folios[f], off) for f, off in zip(firsts, offsets, strict=True)}
        return it, cache, XarrayOracle(table, start, count, dest, memory)
    orders, cleared, seg, slot, offset = layout
    offsets = place(orders, rng)
    queue = labkit.FolioQueue()
    for order, off in zip(orders, offsets, strict=True):
        queue.append(folio_view(mapping, off, order))
    for g in cleared:
        queue.clear(g // FOLIOQ_NR_SLOTS, g % FOLIOQ_NR_SLOTS)
    slots = [
        (None if g in cleared else off, PAGE << order)
        for g, (order, off) in enumerate(zip(orders, offsets, strict=True))
    ]
    first = seg * FOLIOQ_NR_SLOTS + slot
    capacity = sum(size for _, size in slots[first:]) - offset
    count = int(rng.integers(0, max(capacity, 0) + 1))
    it = labkit.IovIter.folio_queue(d, queue, slot, offset, count, segment=seg)
    orc = FolioqOracle(
        slots,
        queue.nr_segments,
        first,
        offset,
        count,
        dest,
        memory,
        at_slot_31=slot == FOLIOQ_NR_SLOTS,
    )
    return it, queue, orc


def folio_snapshot(it, container):
    s = (it.count, it.iov_offset, it.nr_segs, it.seg_index)
    if it.iter_type == "FOLIOQ":
        return s, container.position(it)
    return s, None


def folio_expected(orc):
    return orc.state(), (orc.where() if isinstance(orc, FolioqOracle) else None)


@PROFILE
@given(data=st.data())
def test_folio_types_match_oracle(folio_arena, data):
    mapping = folio_arena
    kind = data.draw(st.sampled_from(["XARRAY", "FOLIOQ"]), label="kind")
    layout = data.draw(xarray_layouts() if kind == "XARRAY" else folioq_layouts(), label="layout")
    dest = data.draw(st.booleans(), label="dest")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    mapping.array[:] = rng.integers(0, 256, mapping.size, dtype=np.uint8)
    it, container, orc = build_folio_iter(kind, dest, layout, mapping, rng)
    base = mapping.addr
    assert it.iter_type == kind
    assert folio_snapshot(it, container) == folio_expected(orc), "after construction"
    span = max(it.count, 1) + 2 * PAGE
    names = [
        "advance",
        "revert",
        "truncate",
        "reexpand",
        "copy",
        "copy_wrong",
        "zero",
        "query",
        "extract",
    ]
    for step in range(data.draw(st.integers(1, 20), label="steps")):
        name = data.draw(st.sampled_from(names), label=f"op {step}")
        n = data.draw(
            st.one_of(st.integers(0, span), st.just(0), st.just(it.count)), label=f"n {step}"
        )
        where = f"step {step}: {name}({n}) on {it!r}"
        before = folio_snapshot(it, container)
        if name == "query":
            assert it.single_seg_count() == orc.single_seg_count(), where
            assert it.alignment() == orc.alignment(), where
            assert it.iovec() == orc.iovec(base), where
            for maxpages in (1, 3, 64):
                assert it.npages(maxpages) == orc.npages(maxpages), (where, maxpages)
            continue
        if name == "extract":
            maxpages = data.draw(st.sampled_from([1, 2, 8, 64]), label=f"maxpages {step}")
            expect = orc.extract(n, maxpages, base)
            got = it.extract_pages(n, maxpages)
            assert tuple(got) == expect, where
            assert folio_snapshot(it, container) == folio_expected(orc), where
            continue
        try:
            if name == "advance":
                orc.advance(n)
            elif name == "revert":
                orc.revert(n)
            elif name == "truncate":
                orc.truncate(n)
            elif name == "reexpand":
                orc.reexpand(n)
            elif name == "zero":
                expect = orc.zero(n)
            elif (name == "copy") == dest:
                payload = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
                expect = orc.copy_to(payload)
            else:
                expect = orc.copy_from(n)
        except OracleMisuse:
            with pytest.raises(labkit.IterMisuseError):
                if name == "revert":
                    it.revert(n)
                elif name == "reexpand":
                    it.reexpand(n)
                elif name == "zero":
                    it.zero(n)
                elif dest:
                    it.copy_from_iter(n)
                else:
                    it.copy_to_iter(b"\x00" * n)
            assert folio_snapshot(it, container) == before, f"{where}: refused, but moved"
            continue
        if name == "advance":
            it.advance(n)
        elif name == "revert":
            it.revert(n)
        elif name == "truncate":
            it.truncate(n)
        elif name == "reexpand":
            it.reexpand(n)
        elif name == "zero":
            assert it.zero(n) == expect, where
        elif (name == "copy") == dest:
            assert it.copy_to_iter(payload) == expect, where
        else:
            assert it.copy_from_iter(n) == expect, where
        assert folio_snapshot(it, container) == folio_expected(orc), where
        if dest and name in ("zero", "copy", "copy_wrong"):
            assert np.array_equal(mapping.array, orc.memory), f"{where}: memory differs"
    assert np.array_equal(mapping.array, orc.memory)
