"""The kernel's own KUnit iterator scenarios, rebuilt over labkit's iterators.

Source of the scenarios: David Howells' KUnit suite for iov_iter in the Linux
kernel, lib/tests/kunit_iov_iter.c (lib/kunit_iov_iter.c in older trees).
The range tables and the byte pattern below are the kernel's test data; the
code is labkit's own.  As there: 1 MiB buffers, a KVEC and a BVEC range
table, copy_to_iter and copy_from_iter, count and nr_segs 0 afterwards, and a
compare of the whole 1 MiB image with an expected image built separately.

The kernel can only run these for kernel-backed iterators; here the same
ranges also run over UBUF (one range at a time, the way the kernel's folioq
and xarray cases do it) and over IOVEC imported from a UserMemory with
labkit.import_iovec.
"""

from __future__ import annotations

import numpy as np
import pytest

import labkit
from labkit import ITER_DEST, ITER_SOURCE, IovIter

PAGE = labkit.PAGE_SIZE
BUFSIZE = 0x100000
NPAGES = BUFSIZE // PAGE

# (from, to) byte ranges of the 1 MiB buffer, as the kernel's kvec_test_ranges
KVEC_RANGES = [
    (0x00002, 0x00002),
    (0x00027, 0x03000),
    (0x05193, 0x18794),
    (0x20000, 0x20000),
    (0x20000, 0x24000),
    (0x24000, 0x27001),
    (0x29000, 0xFFFFB),
    (0xFFFFD, 0xFFFFE),
]

# (page, from, to) inside single pages, as the kernel's bvec_test_ranges
BVEC_RANGES = [
    (0, 0x0002, 0x0002),
    (1, 0x0027, 0x0893),
    (2, 0x0193, 0x0794),
    (3, 0x0000, 0x1000),
    (4, 0x0000, 0x1000),
    (5, 0x0000, 0x1000),
    (6, 0x0000, 0x0FFB),
    (6, 0x0FFD, 0x0FFE),
]


def pattern(x: np.ndarray) -> np.ndarray:
    """The kernel test's byte pattern: (u8)x + (u8)(x >> 8) + (u8)(x >> 16)."""
    x = np.asarray(x, dtype=np.uint64)
    return ((x & 0xFF) + ((x >> 8) & 0xFF) + ((x >> 16) & 0xFF)).astype(np.uint8)


def kvec_byte_offsets():
    """Offsets in the buffer of the KVEC ranges' bytes, in iterator order."""
    return np.concatenate([np.arange(a, b) for a, b in KVEC_RANGES])


def bvec_byte_offsets():
    return np.concatenate([np.arange(p * PAGE + a, p * PAGE + b) for p, a, b in BVEC_RANGES])


@pytest.fixture
def mem():
    return labkit.UserMemory()


@pytest.fixture
def buffers(mem):
    """The kernel test's two 1 MiB buffers, here two mappings of one UserMemory."""
    return mem.map(BUFSIZE), mem.map(BUFSIZE)


def expected_copy_to(offsets):
    """Expected image after copy_to_iter of pattern(0..) into the ranges."""
    image = np.zeros(BUFSIZE, np.uint8)
    image[offsets] = pattern(np.arange(offsets.size))
    return image


def expected_copy_from(offsets):
    """Expected scratch after copy_from_iter out of a pattern(i)-filled buffer."""
    image = np.zeros(BUFSIZE, np.uint8)
    image[: offsets.size] = pattern(offsets)
    return image


def assert_same_image(got: np.ndarray, want: np.ndarray) -> None:
    bad = np.nonzero(got != want)[0]
    assert bad.size == 0, (
        f"{bad.size} bytes differ, first at i={bad[0]:#x}: "
        f"got {got[bad[0]]:#x}, want {want[bad[0]]:#x}"
    )


# ---- iterator builders, one per type --------------------------------------------


def load_kvec(direction, buf):
    return IovIter.kvec(direction, [buf.array[a:b] for a, b in KVEC_RANGES])


def load_bvec(direction, buf, merge: bool):
    """The BVEC table; merge=True coalesces ranges that continue on the next page.

    The kernel's loader merges a range into the previous bvec when it starts
    at offset 0 of the page that follows the previous range's end (its pages
    are then one multi-page folio); whether that happens there depends on the
    physical pages it got.  Here the buffer is virtually contiguous, so both
    forms are built and must give the same bytes.
    """
    table: list[list] = []
    can_merge = None
    for page, a, b in BVEC_RANGES:
        if merge and a == 0 and a != b and page == can_merge:
            table[-1][2] += b
        else:
            table.append([page, a, b - a])
        can_merge = page + b // PAGE if b % PAGE == 0 else None
    bv = [(buf.array[p * PAGE :], off, length) for p, off, length in table]
    return IovIter.bvec(direction, bv), len(table)


def import_ranges(direction, mem, buf, ranges):
    return labkit.import_iovec(direction, [(buf.addr + a, b - a) for a, b in ranges], mem)


# ---- KVEC and BVEC, as the kernel runs them ---------------------------------------


def run_copy_to(it, buffer, scratch, nsegs):
    scratch.array[:] = pattern(np.arange(BUFSIZE))
    buffer.array[:] = 0
    assert it.nr_segs == nsegs
    size = it.count
    assert it.copy_to_iter(scratch.array) == size
    assert (it.count, it.nr_segs) == (0, 0)
    return size


def run_copy_from(it, buffer, scratch):
    buffer.array[:] = pattern(np.arange(BUFSIZE))
    scratch.array[:] = 0
    size = min(it.count, BUFSIZE)
    got = it.copy_from_iter(size)
    assert len(got) == size
    assert (it.count, it.nr_segs) == (0, 0)
    scratch.array[:size] = np.frombuffer(got, np.uint8)
    return size


def test_copy_to_kvec(buffers):
    buffer, scratch = buffers
    it = load_kvec(ITER_DEST, buffer)
    offsets = kvec_byte_offsets()
    assert run_copy_to(it, buffer, scratch, len(KVEC_RANGES)) == offsets.size
    assert_same_image(buffer.array, expected_copy_to(offsets))


def test_copy_from_kvec(buffers):
    buffer, scratch = buffers
    it = load_kvec(ITER_SOURCE, buffer)
    offsets = kvec_byte_offsets()
    assert run_copy_from(it, buffer, scratch) == offsets.size
    assert_same_image(scratch.array, expected_copy_from(offsets))


@pytest.mark.parametrize("merge", [False, True], ids=["page-per-bvec", "folio-merged"])
def test_copy_to_bvec(buffers, merge):
    buffer, scratch = buffers
    it, nsegs = load_bvec(ITER_DEST, buffer, merge)
    assert nsegs == (5 if merge else 8)
    offsets = bvec_byte_offsets()
    assert run_copy_to(it, buffer, scratch, nsegs) == offsets.size
    assert_same_image(buffer.array, expected_copy_to(offsets))


@pytest.mark.parametrize("merge", [False, True], ids=["page-per-bvec", "folio-merged"])
def test_copy_from_bvec(buffers, merge):
    buffer, scratch = buffers
    it, _ = load_bvec(ITER_SOURCE, buffer, merge)
    offsets = bvec_byte_offsets()
    assert run_copy_from(it, buffer, scratch) == offsets.size
    assert_same_image(scratch.array, expected_copy_from(offsets))


# ---- the same ranges over IOVEC (imported user memory) ------------------------------


def bvec_as_ranges():
    return [(p * PAGE + a, p * PAGE + b) for p, a, b in BVEC_RANGES]


@pytest.mark.parametrize("table", ["kvec", "bvec"])
def test_copy_to_iovec(mem, buffers, table):
    buffer, scratch = buffers
    ranges = KVEC_RANGES if table == "kvec" else bvec_as_ranges()
    it = import_ranges(ITER_DEST, mem, buffer, ranges)
    assert it.iter_type == "IOVEC" and not it.heap_iovecs  # 8 segments fit on the stack
    offsets = kvec_byte_offsets() if table == "kvec" else bvec_byte_offsets()
    assert run_copy_to(it, buffer, scratch, len(ranges)) == offsets.size
    assert_same_image(buffer.array, expected_copy_to(offsets))


@pytest.mark.parametrize("table", ["kvec", "bvec"])
def test_copy_from_iovec(mem, buffers, table):
    buffer, scratch = buffers
    ranges = KVEC_RANGES if table == "kvec" else bvec_as_ranges()
    it = import_ranges(ITER_SOURCE, mem, buffer, ranges)
    offsets = kvec_byte_offsets() if table == "kvec" else bvec_byte_offsets()
    assert run_copy_from(it, buffer, scratch) == offsets.size
    assert_same_image(scratch.array, expected_copy_from(offsets))


# ---- one range at a time: UBUF, and BVEC of single pages / folios --------------------
#
# As the kernel's folioq and xarray cases: an iterator over the whole buffer
# with count = to, advanced by from, then a copy of to - from bytes.


def per_range_iterators(kind, direction, mem, buffer):
    """Yield (range, iterator positioned at its start) for every KVEC range."""
    for a, b in KVEC_RANGES:
        if kind == "UBUF":
            it = labkit.import_ubuf(direction, buffer.addr, b, mem)
        elif kind == "BVEC-pages":
            table = [(buffer.array, k * PAGE, PAGE) for k in range(NPAGES)]
            it = IovIter.bvec(direction, table, count=b)
        else:  # BVEC-folios: 16 folios of 64 KiB
            fsize = 16 * PAGE
            table = [(buffer.array, k * fsize, fsize) for k in range(BUFSIZE // fsize)]
            it = IovIter.bvec(direction, table, count=b)
        it.advance(a)
        yield (a, b), it


def expected_offset(kind, b):
    if kind == "UBUF":
        return b
    return b % (PAGE if kind == "BVEC-pages" else 16 * PAGE)


per_range_kinds = pytest.mark.parametrize("kind", ["UBUF", "BVEC-pages", "BVEC-folios"])


@per_range_kinds
def test_copy_to_one_range_at_a_time(mem, buffers, kind):
    buffer, scratch = buffers
    scratch.array[:] = pattern(np.arange(BUFSIZE))
    done = 0
    for (a, b), it in per_range_iterators(kind, ITER_DEST, mem, buffer):
        size = b - a
        assert it.copy_to_iter(scratch.array[done : done + size]) == size
        assert it.count == 0
        assert it.iov_offset == expected_offset(kind, b), (a, b)
        done += size
    assert_same_image(buffer.array, expected_copy_to(kvec_byte_offsets()))


@per_range_kinds
def test_copy_from_one_range_at_a_time(mem, buffers, kind):
    buffer, scratch = buffers
    buffer.array[:] = pattern(np.arange(BUFSIZE))
    done = 0
    for (a, b), it in per_range_iterators(kind, ITER_SOURCE, mem, buffer):
        got = it.copy_from_iter(b - a)
        assert len(got) == b - a and it.count == 0
        assert it.iov_offset == expected_offset(kind, b), (a, b)
        scratch.array[done : done + len(got)] = np.frombuffer(got, np.uint8)
        done += len(got)
    assert_same_image(scratch.array, expected_copy_from(kvec_byte_offsets()))


def test_whole_buffer_ubuf_round_trip(mem, buffers):
    """As the kernel's iter_to_sg UBUF case: the whole 1 MiB of user memory, in and out."""
    buffer, scratch = buffers
    src = pattern(np.arange(BUFSIZE))
    it = labkit.import_ubuf(ITER_DEST, buffer.addr, BUFSIZE, mem)
    assert it.copy_to_iter(src) == BUFSIZE and it.count == 0
    back = labkit.import_ubuf(ITER_SOURCE, buffer.addr, BUFSIZE, mem)
    assert_same_image(np.frombuffer(back.copy_from_iter(BUFSIZE), np.uint8), src)
