"""ITER_XARRAY and ITER_FOLIOQ: the kernel's KUnit cases, and the model's edges.

The first part rebuilds the xarray and folioq cases of David Howells' KUnit
suite, lib/tests/kunit_iov_iter.c (copy_to/copy_from, extract_pages, and the
kvec and bvec extract_pages cases beside them), in labkit's words: a 1 MiB
buffer whose pages become the folios, one iterator per range of the kernel's
range table, and a compare of the whole 1 MiB image with one built
separately.  As the kernel's test scrambles its pages (so that the buffer is
not physically contiguous), the "scrambled" cases put the buffer's pages in
the cache or queue in a shuffled order and map each file position back to
its buffer page.

The second part checks what the kernel's semantics say at the edges (holes,
cleared slots, segment ends, the kernel's own quirks) and that bad input is a
clear exception.
"""

from __future__ import annotations

import errno

import numpy as np
import pytest
from test_kunit_scenarios import (
    BUFSIZE,
    BVEC_RANGES,
    KVEC_RANGES,
    NPAGES,
    assert_same_image,
    expected_copy_from,
    expected_copy_to,
    kvec_byte_offsets,
    load_bvec,
    load_kvec,
    pattern,
)

import labkit
from labkit import ITER_DEST, ITER_SOURCE, Folio, FolioQueue, IovIter, PageCache

PAGE = labkit.PAGE_SIZE
EXTRACT_MAXSIZE = 100 * 1024  # the kernel test's maxsize per call
EXTRACT_MAXPAGES = 8  # and its pagelist[8]


@pytest.fixture
def mem():
    return labkit.UserMemory()


@pytest.fixture
def buffers(mem):
    return mem.map(BUFSIZE), mem.map(BUFSIZE)


def page_order(scrambled: bool) -> np.ndarray:
    """perm[k]: the buffer page that holds file page k (the kernel test's swap when scrambled)."""
    perm = np.arange(NPAGES)
    if scrambled:
        for i in range(NPAGES // 4):
            perm[i], perm[i + NPAGES // 2] = perm[i + NPAGES // 2], perm[i]
    return perm


def buffer_offsets(file_offsets: np.ndarray, perm: np.ndarray) -> np.ndarray:
    """Where file positions live in the buffer."""
    return perm[file_offsets // PAGE] * PAGE + file_offsets % PAGE


def load_xarray(buf, perm) -> PageCache:
    """The kernel's iov_kunit_load_xarray: page k of the file is a buffer page."""
    cache = PageCache()
    for k, p in enumerate(perm):
        cache.add(k, Folio.of(buf.array[p * PAGE : (p + 1) * PAGE]))
    return cache


def load_folioq(buf, perm) -> FolioQueue:
    """The kernel's iov_kunit_load_folioq: one order-0 folio per page, 31 per segment."""
    queue = FolioQueue()
    for p in perm:
        queue.append(Folio.of(buf.array[p * PAGE : (p + 1) * PAGE]))
    return queue


scrambling = pytest.mark.parametrize("scrambled", [False, True], ids=["in-order", "scrambled"])


# ---- copy_to / copy_from, one iterator per range -------------------------------------


def per_range(kind, direction, container):
    """(range, iterator at the range's start), as the kernel's folioq and xarray cases."""
    for a, b in KVEC_RANGES:
        if kind == "XARRAY":
            it = IovIter.xarray(direction, container, a, b - a)
        else:
            it = IovIter.folio_queue(direction, container, 0, 0, b)
            it.advance(a)
        yield (a, b), it


def expected_iov_offset(kind, a, b):
    # xarray: iov_offset counts from the start; folioq: offset in the current folio
    return b - a if kind == "XARRAY" else b % PAGE


@pytest.mark.parametrize("kind", ["XARRAY", "FOLIOQ"])
@scrambling
def test_copy_to(buffers, kind, scrambled):
    buffer, scratch = buffers
    perm = page_order(scrambled)
    container = (load_xarray if kind == "XARRAY" else load_folioq)(buffer, perm)
    if kind == "FOLIOQ":
        assert container.nr_segments == -(-NPAGES // FolioQueue.NR_SLOTS)  # 9 segments
    scratch.array[:] = pattern(np.arange(BUFSIZE))
    buffer.array[:] = 0
    done = 0
    for (a, b), it in per_range(kind, ITER_DEST, container):
        assert it.copy_to_iter(scratch.array[done : done + b - a]) == b - a
        assert it.count == 0
        assert it.iov_offset == expected_iov_offset(kind, a, b), (a, b)
        done += b - a
    want = np.zeros(BUFSIZE, np.uint8)
    offsets = kvec_byte_offsets()
    want[buffer_offsets(offsets, perm)] = pattern(np.arange(offsets.size))
    assert_same_image(buffer.array, want)
    if not scrambled:
        assert_same_image(buffer.array, expected_copy_to(offsets))


@pytest.mark.parametrize("kind", ["XARRAY", "FOLIOQ"])
@scrambling
def test_copy_from(buffers, kind, scrambled):
    buffer, scratch = buffers
    perm = page_order(scrambled)
    container = (load_xarray if kind == "XARRAY" else load_folioq)(buffer, perm)
    buffer.array[:] = pattern(np.arange(BUFSIZE))
    scratch.array[:] = 0
    done = 0
    for (a, b), it in per_range(kind, ITER_SOURCE, container):
        got = it.copy_from_iter(b - a)
        assert len(got) == b - a and it.count == 0
        assert it.iov_offset == expected_iov_offset(kind, a, b), (a, b)
        scratch.array[done : done + len(got)] = np.frombuffer(got, np.uint8)
        done += len(got)
    offsets = kvec_byte_offsets()
    want = np.zeros(BUFSIZE, np.uint8)
    want[: offsets.size] = pattern(buffer_offsets(offsets, perm))
    assert_same_image(scratch.array, want)
    if not scrambled:
        assert_same_image(scratch.array, expected_copy_from(offsets))


@pytest.mark.parametrize("order", [1, 4, 8])
@pytest.mark.parametrize("kind", ["XARRAY", "FOLIOQ"])
def test_copy_to_large_folios(buffers, kind, order):
    """The same ranges over folios of 2**order pages carved from the buffer."""
    buffer, scratch = buffers
    fsize = PAGE << order
    folios = [Folio.of(buffer.array[k : k + fsize]) for k in range(0, BUFSIZE, fsize)]
    if kind == "XARRAY":
        container = PageCache()
        for k, f in enumerate(folios):
            container.add(k << order, f)
    else:
        container = FolioQueue()
        container.extend(folios)
    scratch.array[:] = pattern(np.arange(BUFSIZE))
    buffer.array[:] = 0
    done = 0
    for (a, b), it in per_range(kind, ITER_DEST, container):
        assert it.copy_to_iter(scratch.array[done : done + b - a]) == b - a
        assert it.count == 0
        if kind == "FOLIOQ":
            assert it.iov_offset == b % fsize and it.seg_index == b // fsize, (a, b)
        done += b - a
    assert_same_image(buffer.array, expected_copy_to(kvec_byte_offsets()))


def test_whole_buffer_round_trip_through_a_folio_queue(buffers):
    """One 1 MiB copy in and out across all nine segments."""
    buffer, scratch = buffers
    src = pattern(np.arange(BUFSIZE))
    queue = load_folioq(buffer, page_order(True))
    it = IovIter.folio_queue(ITER_DEST, queue)
    assert it.count == BUFSIZE and it.copy_to_iter(src) == BUFSIZE
    assert queue.position(it) == (8, NPAGES - 8 * 31, 0) and it.count == 0
    back = IovIter.folio_queue(ITER_SOURCE, queue, 0, 0, BUFSIZE)
    assert_same_image(np.frombuffer(back.copy_from_iter(BUFSIZE), np.uint8), src)


# ---- extract_pages, as the kernel's four cases ----------------------------------------


def check_extraction(it, size, from_, page_of):
    """Extract until count is 0, checking each call as the kernel test does.

    page_of(byte position) is the page address the byte must be in.  Returns
    the bytes left (0 when every byte was listed).
    """
    while it.count > 0:
        got = it.extract_pages(EXTRACT_MAXSIZE, EXTRACT_MAXPAGES)
        assert 0 <= got.length <= size
        size -= got.length
        assert it.count == size
        if got.length == 0:
            break
        assert 0 <= got.offset < PAGE
        assert len(got.pages) <= EXTRACT_MAXPAGES
        length, offset0 = got.length, got.offset
        for page in got.pages:
            part = min(length, PAGE - offset0)
            assert page == page_of(from_), f"byte {from_:#x}"
            assert offset0 == from_ % PAGE
            from_ += part
            length -= part
            if length == 0:
                break
            offset0 = 0
        assert length == 0
    return size


@pytest.mark.parametrize("kind", ["XARRAY", "FOLIOQ"])
@scrambling
def test_extract_pages(buffers, kind, scrambled):
    buffer, _ = buffers
    perm = page_order(scrambled)
    container = (load_xarray if kind == "XARRAY" else load_folioq)(buffer, perm)

    def page_of(pos):
        return buffer.addr + int(perm[pos // PAGE]) * PAGE

    for a, b in KVEC_RANGES:
        if kind == "XARRAY":
            it = IovIter.xarray(ITER_SOURCE, container, a, b - a)
        else:
            it = IovIter.folio_queue(ITER_SOURCE, container, 0, 0, b)
            it.advance(a)
        assert check_extraction(it, b - a, a, page_of) == 0, (a, b)
        assert it.count == 0
        if kind == "XARRAY":
            assert it.iov_offset == b - a


def test_extract_pages_kvec(buffers):
    """The kernel's extract_pages_kvec: the ranges one after another from one iterator."""
    buffer, _ = buffers
    it = load_kvec(ITER_DEST, buffer)
    size = it.count
    nonempty = [(a, b) for a, b in KVEC_RANGES if b > a]
    listed: list[int] = []
    while it.count:
        got = it.extract_pages(EXTRACT_MAXSIZE, EXTRACT_MAXPAGES)
        assert 0 < got.length <= size and 0 <= got.offset < PAGE
        size -= got.length
        assert it.count == size
        a, b = nonempty[0]
        assert got.pages[0] == buffer.addr + a // PAGE * PAGE and got.offset == a % PAGE
        assert got.pages == [got.pages[0] + k * PAGE for k in range(len(got.pages))]
        assert len(got.pages) == -(-(got.offset + got.length) // PAGE)
        listed.append(got.length)
        # one call never crosses into the next kvec
        if got.length == b - a:
            nonempty.pop(0)
        else:
            nonempty[0] = (a + got.length, b)
    assert size == 0 and not nonempty
    assert sum(listed) == sum(b - a for a, b in KVEC_RANGES)


@pytest.mark.parametrize("merge", [False, True], ids=["page-per-bvec", "folio-merged"])
def test_extract_pages_bvec(buffers, merge):
    """The kernel's extract_pages_bvec (the listing since Linux 6.13)."""
    buffer, _ = buffers
    it, _ = load_bvec(ITER_DEST, buffer, merge)
    size = it.count
    ranges = [(p * PAGE + a, p * PAGE + b) for p, a, b in BVEC_RANGES]
    k, from_ = 0, ranges[0][0]
    calls = 0
    while it.count:
        got = it.extract_pages(EXTRACT_MAXSIZE, EXTRACT_MAXPAGES)
        calls += 1
        assert 0 < got.length <= size
        size -= got.length
        assert it.count == size and 0 <= got.offset < PAGE
        length, offset0 = got.length, got.offset
        for page in got.pages:
            while from_ == ranges[k][1]:
                k += 1
                from_ = ranges[k][0]
            part = min(length, PAGE - offset0)
            assert page == buffer.addr + from_ // PAGE * PAGE
            assert offset0 == from_ % PAGE
            from_ += part
            length -= part
            if length == 0:
                break
            offset0 = 0
        assert length == 0
    assert size == 0
    # pages 3, 4, 5 and the first range of page 6 join at page boundaries:
    # one call lists them together whether or not the bvecs were merged
    assert calls == 4


# ---- holes, cleared slots and segment ends -------------------------------------------


def test_xarray_copy_stops_at_a_hole():
    cache = PageCache()
    f0, f2 = cache.add(0), cache.add(2, 1)  # pages 0, 2-3; index 1 is a hole
    it = IovIter.xarray(ITER_DEST, cache, 100, 4 * PAGE)
    assert it.copy_to_iter(b"\x01" * (4 * PAGE)) == PAGE - 100
    assert (it.count, it.iov_offset) == (3 * PAGE + 100, PAGE - 100)
    assert it.iovec() == (0, 0)  # no folio holds the current byte
    assert it.copy_to_iter(b"\x02" * 10) == 0  # still at the hole
    assert f0.array[100:].tolist() == [1] * (PAGE - 100) and not f0.array[:100].any()
    assert not f2.array.any()  # the kernel would have skipped into this folio
    it.advance(PAGE)  # over the hole, as the kernel's advance (no folio is looked at)
    assert it.iov_offset == 2 * PAGE - 100  # file position 2 * PAGE: folio 2's first byte
    assert it.copy_to_iter(b"\x03" * (2 * PAGE)) == 2 * PAGE
    assert f2.array.tolist() == [3] * (2 * PAGE)
    assert it.count == 100 and it.copy_to_iter(b"x" * 100) == 0  # page 4: past the last folio


def test_xarray_large_folio_offsets():
    """A position inside an order-3 folio lands at offset_in_folio(), whatever the start."""
    cache = PageCache()
    f = cache.add(8, 3)  # indices 8..15
    start = 11 * PAGE + 5
    it = IovIter.xarray(ITER_DEST, cache, start, 3 * PAGE)
    assert it.iovec() == (f.addr + 3 * PAGE + 5, 3 * PAGE)
    assert it.npages(100) == 4 and it.alignment() == start | 3 * PAGE
    assert it.copy_to_iter(bytes(range(256)) * 48) == 3 * PAGE
    assert f.array[3 * PAGE + 5 : 6 * PAGE + 5].tolist() == list(range(256)) * 48
    assert it.alignment() == start + 3 * PAGE  # count 0: the kernel still ORs the position


def test_xarray_extract_stops_at_a_hole_and_lists_subpages():
    cache = PageCache()
    f = cache.add(4, 2)  # indices 4..7
    cache.add(8)
    it = IovIter.xarray(ITER_SOURCE, cache, 5 * PAGE + 7, 10 * PAGE)
    got = it.extract_pages(1 << 20, 64)
    assert got.offset == 7
    assert got.pages == [f.page(1), f.page(2), f.page(3), cache.load(8)[1].addr]
    assert got.length == 4 * PAGE - 7 and it.iov_offset == got.length
    # the next index (9) is a hole: nothing is listed and the iterator stays
    assert it.extract_pages(1 << 20, 64) == (0, 0, [])
    assert it.iov_offset == 4 * PAGE - 7


def test_xarray_extract_at_a_hole_mid_page_lists_nothing():
    """The kernel returns maxsize here with no page listed (nr * PAGE_SIZE - offset wraps)."""
    cache = PageCache()
    cache.add(1)
    it = IovIter.xarray(ITER_SOURCE, cache, 100, 2 * PAGE)
    assert it.extract_pages(PAGE, 4) == (0, 100, [])
    assert (it.count, it.iov_offset) == (2 * PAGE, 0)


def test_folioq_cleared_slot_stops_copies_but_not_advance():
    queue = FolioQueue()
    queue.extend([0, 1, 0])
    queue.clear(0, 1)
    assert queue.folio(0, 1) is None and queue.folio_size(0, 1) == 2 * PAGE
    it = IovIter.folio_queue(ITER_DEST, queue, 0, 0, 4 * PAGE)
    assert it.copy_to_iter(b"a" * (4 * PAGE)) == PAGE
    assert queue.position(it) == (0, 1, 0)
    assert it.iovec() == (0, 0)
    assert it.extract_pages(PAGE, 4).length == 0
    it.advance(2 * PAGE)  # steps over the cleared folio's size
    assert queue.position(it) == (0, 2, 0)
    assert it.copy_to_iter(b"b" * PAGE) == PAGE
    assert queue.folio(0, 2).array.tobytes() == b"b" * PAGE


def test_folioq_segment_end_and_extension():
    """An iterator at slot 31 (past the segment) goes on in the segment appended later."""
    queue = FolioQueue()
    queue.extend([0] * 31)
    it = IovIter.folio_queue(ITER_DEST, queue, 31, 0, 0)
    assert queue.position(it) == (0, 31, 0) and it.seg_index == 0
    assert it.copy_to_iter(b"z") == 0  # count 0
    with pytest.raises(labkit.IterMisuseError):
        it.reexpand(1)  # nothing follows yet
    assert queue.append(1) == (1, 0)
    it.reexpand(2 * PAGE)
    assert it.single_seg_count() == 2 * PAGE
    assert it.copy_to_iter(b"y" * 10) == 10
    assert queue.position(it) == (1, 0, 10) and it.seg_index == 0
    assert queue.folio(1, 0).array[:10].tobytes() == b"y" * 10


def test_folioq_walk_crosses_segments_both_ways():
    queue = FolioQueue()
    queue.extend([0] * 40)
    it = IovIter.folio_queue(ITER_SOURCE, queue, 30, 5)
    assert it.count == 10 * PAGE - 5
    it.advance(PAGE - 5)  # the end of slot 30 is the end of segment 0
    assert queue.position(it) == (1, 0, 0) and it.seg_index == 1
    it.revert(10)  # back over the segment boundary
    assert queue.position(it) == (0, 30, PAGE - 10)
    it.revert(PAGE - 15)
    assert queue.position(it) == (0, 30, 5)
    with pytest.raises(labkit.IterMisuseError):
        it.revert(1)  # the iterator began at offset 5 of slot 30
    assert queue.position(it) == (0, 30, 5) and it.count == 10 * PAGE - 5
    it.advance(PAGE)
    assert queue.position(it) == (1, 0, 5)


def test_folioq_extract_stops_at_the_folio_end():
    """The page listing leaves iov_offset at the folio's size; the next walk moves on."""
    queue = FolioQueue()
    queue.extend([1, 0])
    it = IovIter.folio_queue(ITER_SOURCE, queue, 0, PAGE + 100)
    got = it.extract_pages(1 << 20, 1)
    assert got == (PAGE - 100, 100, [queue.folio(0, 0).page(1)])
    assert queue.position(it) == (0, 0, 2 * PAGE)
    assert it.single_seg_count() == min(2 * PAGE, it.count)  # the whole folio, as the kernel
    assert it.iovec() == (queue.folio(0, 0).addr + 2 * PAGE, 0)
    it.advance(0)
    assert queue.position(it) == (0, 1, 0)


def test_folioq_single_seg_count_is_the_whole_folio():
    queue = FolioQueue()
    queue.append(2)
    it = IovIter.folio_queue(ITER_DEST, queue, 0, 1000)
    assert it.single_seg_count() == it.count == 4 * PAGE - 1000
    it.truncate(100)
    assert it.single_seg_count() == 100
    it.truncate(0)
    assert it.single_seg_count() == 0
    it = IovIter.folio_queue(ITER_DEST, queue, 0, 1000, 3 * PAGE)
    it.advance(PAGE)
    # the kernel: umin(folio size, count), not what is left of the folio
    assert it.single_seg_count() == 2 * PAGE
    assert it.npages(100) == 3 and it.alignment() == (1000 + PAGE) | 2 * PAGE


# ---- UBUF / IOVEC page listing over imported memory -----------------------------------


def test_user_extract_pages_and_a_fault(mem):
    m = mem.map(3 * PAGE)
    hole = mem.map(PAGE)
    it = labkit.import_iovec(ITER_DEST, [(m.addr + 10, 0), (m.addr + 100, 2 * PAGE)], mem)
    got = it.extract_pages(1 << 20, 16)
    assert got == (2 * PAGE, 100, [m.addr, m.addr + PAGE, m.addr + 2 * PAGE])
    assert it.count == 0
    mem.unmap(hole)
    it = labkit.import_ubuf(ITER_SOURCE, m.addr + PAGE, 2 * PAGE, mem)
    mem.unmap(m)
    with pytest.raises(OSError) as exc:
        it.extract_pages(PAGE, 4)
    assert exc.value.errno == errno.EFAULT and it.count == 2 * PAGE


def test_ubuf_extract_stops_at_an_unmapped_page():
    mem = labkit.UserMemory()
    m = mem.map(2 * PAGE)
    it = labkit.import_ubuf(ITER_DEST, m.addr + 5, 2 * PAGE - 5, mem)
    # a UBUF that runs into unmapped memory: only the mapped pages are pinned
    first = it.extract_pages(PAGE, 1)
    assert first == (PAGE - 5, 5, [m.addr])
    assert it.extract_pages(1 << 20, 8) == (PAGE, 0, [m.addr + PAGE])


def test_discard_has_no_pages():
    it = IovIter.discard(ITER_DEST, 100)
    with pytest.raises(OSError) as exc:
        it.extract_pages(10, 1)
    assert exc.value.errno == errno.EFAULT and it.count == 100


# ---- bad input ------------------------------------------------------------------------


def test_folio_memory_is_checked():
    buf = np.zeros(3 * PAGE, np.uint8)
    aligned = Folio.alloc(1).array
    with pytest.raises(ValueError, match="page boundary"):
        Folio.of(aligned[1 : 1 + PAGE])
    with pytest.raises(ValueError, match="power-of-two"):
        Folio.of(Folio.alloc(2).array[: 3 * PAGE])
    with pytest.raises(TypeError):
        Folio.of(bytes(PAGE))  # read-only
    with pytest.raises(TypeError):
        Folio.of(buf[::2])  # not contiguous
    with pytest.raises(ValueError, match="order"):
        Folio.alloc(11)
    with pytest.raises(ValueError, match="order"):
        PageCache().add(0, 10)  # MAX_PAGECACHE_ORDER is 9
    with pytest.raises(ValueError, match="order"):
        FolioQueue().append(11)


def test_page_cache_checks_indices():
    cache = PageCache()
    with pytest.raises(ValueError, match="multiple"):
        cache.add(3, 1)
    cache.add(4, 2)
    with pytest.raises(OSError) as exc:
        cache.add(6)
    assert exc.value.errno == errno.EEXIST
    with pytest.raises(ValueError):
        cache.add(-1)
    with pytest.raises(ValueError):
        cache.add(2**51)
    with pytest.raises(OSError) as exc:
        cache.erase(9)
    assert exc.value.errno == errno.ENOENT
    assert cache.erase(5).order == 2 and len(cache) == 0


def test_iterator_arguments_are_checked():
    cache = PageCache()
    cache.add(0)
    with pytest.raises(ValueError):
        IovIter.xarray(2, cache, 0, 10)
    with pytest.raises(ValueError):
        IovIter.xarray(ITER_DEST, cache, -1, 10)
    with pytest.raises(ValueError):
        IovIter.xarray(ITER_DEST, cache, 2**63 - 10, 11)
    with pytest.raises(TypeError):
        IovIter.xarray(ITER_DEST, FolioQueue(), 0, 10)
    queue = FolioQueue()
    queue.extend([0, 1])
    with pytest.raises(ValueError, match="offset"):
        IovIter.folio_queue(ITER_DEST, queue, 1, 2 * PAGE)
    with pytest.raises(ValueError, match="offset"):
        IovIter.folio_queue(ITER_DEST, queue, 2, 1)  # an unfilled slot
    with pytest.raises(ValueError, match="first_slot"):
        IovIter.folio_queue(ITER_DEST, queue, 32, 0, 0)
    with pytest.raises(ValueError, match="past the end"):
        IovIter.folio_queue(ITER_DEST, queue, 0, 0, 3 * PAGE + 1)
    with pytest.raises(ValueError, match="segment"):
        IovIter.folio_queue(ITER_DEST, queue, 0, 0, 0, segment=1)
    with pytest.raises(ValueError, match="slot"):
        queue.clear(0, 2**32)
    with pytest.raises(TypeError):
        IovIter.folio_queue(ITER_DEST, cache, 0, 0, 0)
    it = IovIter.folio_queue(ITER_DEST, queue)
    with pytest.raises(ValueError, match="maxpages"):
        it.extract_pages(PAGE, 0)
    with pytest.raises(labkit.IterMisuseError):
        it.copy_from_iter(10)
    with pytest.raises(labkit.IterMisuseError):
        IovIter.xarray(ITER_SOURCE, cache, 0, 10).copy_to_iter(b"x")
    with pytest.raises(labkit.IterMisuseError):
        IovIter.xarray(ITER_SOURCE, cache, 0, 10).zero(1)


def test_revert_past_the_start_is_refused():
    cache = PageCache()
    cache.add(0)
    it = IovIter.xarray(ITER_DEST, cache, 100, 200)
    it.advance(50)
    with pytest.raises(labkit.IterMisuseError):
        it.revert(51)  # the kernel BUG()s: pages before the start are not pinned
    assert (it.count, it.iov_offset) == (150, 50)
    it.revert(50)
    assert (it.count, it.iov_offset) == (200, 0)
    with pytest.raises(labkit.IterMisuseError):
        it.reexpand(201)


def test_a_freed_queue_refuses_every_use():
    queue = FolioQueue()
    queue.extend([0, 0])
    it = IovIter.folio_queue(ITER_DEST, queue, 0, 0, PAGE)
    it.copy_to_iter(b"x" * 10)
    queue.free()
    calls = [
        lambda: it.advance(1),
        lambda: it.revert(1),
        lambda: it.truncate(1),
        lambda: it.reexpand(1),
        lambda: it.copy_to_iter(b"x"),
        lambda: it.zero(1),
        it.iovec,
        it.single_seg_count,
        lambda: it.npages(4),
        it.alignment,
        lambda: it.extract_pages(1, 1),
        lambda: queue.append(0),
        lambda: queue.clear(0, 0),
        lambda: IovIter.folio_queue(ITER_DEST, queue, 0, 0, 0),
    ]
    for call in calls:
        with pytest.raises(labkit.IterMisuseError, match="freed"):
            call()
    assert (it.count, it.iov_offset) == (PAGE - 10, 10)
    assert "freed" in repr(queue) and repr(it)  # inspection still works
