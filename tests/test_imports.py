"""The import cases users hit, after LTP's readv01, readv02 and writev01.

LTP (linux-test-project/ltp, testcases/kernel/syscalls/readv, writev) checks
readv/writev with: zero vectors, a vector of length -1 (EINVAL), a bad buffer
address (EFAULT), zero-length vectors with NULL addresses (accepted), and
vectors of 1 GiB each (clamped).  labkit.import_iovec is the kernel's
import_iovec() those calls run; the cases below are its version of them,
plus the limits around them (UIO_MAXIOV, UIO_FASTIOV, MAX_RW_COUNT) and the
6.3/6.4 change that turns one segment into ITER_UBUF.

As in the kernel, an import checks only that each range lies in user space
(access_ok(): it must end at or below 0x7ffffffff000, and an empty segment's
address is checked too); a range that is in user space but not mapped is
imported, and the copy faults on it: it stops at the first unreachable byte
and returns the bytes done.  So readv02's (caddr_t)-1 fails at import, while a
readv into unmapped memory fails with EFAULT only because its copy moves
nothing.  tests/test_kernel_differential.py compares all of this with the
running kernel.
"""

from __future__ import annotations

import errno
import mmap
import threading

import numpy as np
import pytest

import labkit
from labkit import ITER_DEST, ITER_SOURCE, MAX_RW_COUNT, IovIter, IterMisuseError
from labkit._ffi import lib
from labkit.core.memory import PROT_NONE, PROT_READ, PROT_RW, USER_PTR_MAX, access_ok

PAGE = labkit.PAGE_SIZE
CHUNK = 64
GIB = 2**30


@pytest.fixture
def mem():
    return labkit.UserMemory()


@pytest.fixture
def buf(mem):
    return mem.map(16 * PAGE)


@pytest.fixture(scope="module")
def big():
    """A lazily-committed mapping just over 2 GiB: nothing is touched, so it costs nothing."""
    mem = labkit.UserMemory()
    try:
        m = mem.map(2 * GIB + PAGE)
    except OSError as exc:  # pragma: no cover - depends on the machine's overcommit policy
        pytest.skip(f"cannot reserve 2 GiB of address space here: {exc}")
    return mem, m


def state(it):
    return (it.iter_type, it.count, it.iov_offset, it.nr_segs, it.seg_index)


def unmapped_address(mem):
    """An address that was mapped and is not any more."""
    m = mem.map(PAGE)
    mem.unmap(m)
    return m.addr


# ---- readv01 / writev01: zero vectors, empty vectors ------------------------------------


@pytest.mark.parametrize("kernel", ["6.3", "6.4"])
def test_zero_segments_give_an_empty_iovec_iterator(mem, kernel):
    it = labkit.import_iovec(ITER_DEST, [], mem, kernel=kernel)
    assert state(it) == ("IOVEC", 0, 0, 0, 0)
    assert not it.heap_iovecs
    assert it.copy_to_iter(b"data") == 0


@pytest.mark.parametrize("kernel", ["6.3", "6.4"])
def test_readv01_one_chunk_then_two_null_vectors(mem, buf, kernel):
    it = labkit.import_iovec(ITER_DEST, [(buf.addr, CHUNK), (0, 0), (0, 0)], mem, kernel=kernel)
    assert state(it) == ("IOVEC", CHUNK, 0, 3, 0)
    assert it.copy_to_iter(b"\x42" * 1000) == CHUNK
    assert (buf.array[:CHUNK] == 0x42).all() and buf.array[CHUNK] == 0
    assert state(it) == ("IOVEC", 0, 0, 2, 1)  # a copy stops on the next (empty) segment


def test_writev01_block7_chunk_empty_and_null_vectors(mem, buf):
    arr = buf.array
    arr[12 * CHUNK : 13 * CHUNK] = 7
    vecs = [(buf.addr + 12 * CHUNK, CHUNK), (buf.addr + 13 * CHUNK, 0), (0, 0), (0, 0)]
    it = labkit.import_iovec(ITER_SOURCE, vecs, mem)
    assert it.count == CHUNK
    assert it.copy_from_iter(4 * CHUNK) == b"\x07" * CHUNK


def test_zero_length_segment_at_a_user_address_is_accepted_and_skipped(mem, buf):
    bad = unmapped_address(mem)
    vecs = [(buf.addr, 10), (bad, 0), (0, 0), (USER_PTR_MAX, 0), (bad, 0), (buf.addr + 100, 10)]
    it = labkit.import_iovec(ITER_DEST, vecs, mem)
    assert state(it) == ("IOVEC", 20, 0, 6, 0)
    it.advance(10)  # steps over the four empty segments
    assert state(it) == ("IOVEC", 10, 0, 1, 5)
    it.revert(10)
    assert it.copy_to_iter(b"\x01" * 20) == 20
    assert (buf.array[:10] == 1).all() and (buf.array[100:110] == 1).all()
    assert int(buf.array.sum()) == 20


@pytest.mark.parametrize("kernel", ["6.3", "6.4"])
@pytest.mark.parametrize(
    "addr", [USER_PTR_MAX + 1, 0x800000000000, 0xFFFF800000000000, 2**64 - 1, -1, 2**70]
)
def test_zero_length_segment_outside_user_space_is_efault(mem, buf, kernel, addr):
    # access_ok(addr, 0) still checks the address (the kernel: EFAULT for
    # [(0xffff800000000000, 0), (M, 8)]); an int outside 64 bits is no address at all
    with pytest.raises(OSError, match="segment 1 ") as exc:
        labkit.import_iovec(ITER_DEST, [(buf.addr, 8), (addr, 0)], mem, kernel=kernel)
    assert exc.value.errno == errno.EFAULT
    for one in ([(addr, 0)],):
        with pytest.raises(OSError, match="segment 0 ") as exc:
            labkit.import_iovec(ITER_DEST, one, mem, kernel=kernel)
        assert exc.value.errno == errno.EFAULT
    for call in (
        lambda: labkit.import_ubuf(ITER_DEST, addr, 0, mem),
        lambda: labkit.import_single_range(ITER_DEST, addr, 0, mem, kernel=kernel),
    ):
        with pytest.raises(OSError) as exc:
            call()
        assert exc.value.errno == errno.EFAULT
    assert not buf.array.any()


# ---- readv02 / writev01: EINVAL --------------------------------------------------------


@pytest.mark.parametrize("kernel", ["6.3", "6.4"])
@pytest.mark.parametrize("length", [-1, -CHUNK, 2**63, 2**64 - 1])
def test_negative_length_is_einval(mem, buf, kernel, length):
    with pytest.raises(OSError) as exc:
        labkit.import_iovec(ITER_DEST, [(buf.addr, length)], mem, kernel=kernel)
    assert exc.value.errno == errno.EINVAL
    assert "segment 0" in str(exc.value) and "negative" in str(exc.value)
    vecs = [(buf.addr, CHUNK), (buf.addr + CHUNK, CHUNK), (buf.addr, length)]
    with pytest.raises(OSError, match="segment 2") as exc:
        labkit.import_iovec(ITER_DEST, vecs, mem, kernel=kernel)
    assert exc.value.errno == errno.EINVAL


def test_length_that_fits_no_integer_type_is_einval(mem, buf):
    with pytest.raises(OSError) as exc:
        labkit.import_iovec(ITER_DEST, [(buf.addr, 2**64)], mem)
    assert exc.value.errno == errno.EINVAL


def test_more_than_uio_maxiov_segments_is_einval(mem, buf):
    vecs = [(buf.addr + k, 1) for k in range(labkit.UIO_MAXIOV + 1)]
    with pytest.raises(OSError, match="1025 segments") as exc:
        labkit.import_iovec(ITER_DEST, vecs, mem)
    assert exc.value.errno == errno.EINVAL


def test_uio_maxiov_segments_are_accepted(mem, buf):
    vecs = [(buf.addr + 2 * k, 1) for k in range(labkit.UIO_MAXIOV)]
    it = labkit.import_iovec(ITER_DEST, vecs, mem)
    assert state(it) == ("IOVEC", 1024, 0, 1024, 0)
    assert it.heap_iovecs
    assert it.copy_to_iter(b"\x09" * 2000) == 1024
    assert int((buf.array[:2048:2] == 9).sum()) == 1024 and not buf.array[1:2048:2].any()


# ---- EFAULT --------------------------------------------------------------------------------


@pytest.mark.parametrize("kernel", ["6.3", "6.4"])
def test_range_outside_user_space_is_efault_naming_the_segment(mem, buf, kernel):
    past_top = (USER_PTR_MAX - CHUNK + 1, CHUNK)  # ends one byte above user space
    for pos in range(3):
        vecs = [(buf.addr, CHUNK), (buf.addr + CHUNK, CHUNK), (buf.addr + 2 * CHUNK, CHUNK)]
        vecs[pos] = past_top
        with pytest.raises(OSError, match=f"segment {pos} ") as exc:
            labkit.import_iovec(ITER_DEST, vecs, mem, kernel=kernel)
        assert exc.value.errno == errno.EFAULT
    with pytest.raises(OSError, match="segment 0") as exc:
        labkit.import_iovec(ITER_DEST, [past_top], mem, kernel=kernel)
    assert exc.value.errno == errno.EFAULT
    # ending exactly at the top is in user space
    it = labkit.import_iovec(
        ITER_DEST, [(USER_PTR_MAX - CHUNK, CHUNK), (buf.addr, 1)], mem, kernel=kernel
    )
    assert it.count == CHUNK + 1
    assert not buf.array.any()


@pytest.mark.parametrize("kernel", ["6.3", "6.4"])
def test_unmapped_segment_is_imported_and_the_copy_stops_at_it(mem, buf, kernel):
    bad = unmapped_address(mem)
    for pos in range(3):
        buf.array[:] = 0
        vecs = [(buf.addr, CHUNK), (buf.addr + CHUNK, CHUNK), (buf.addr + 2 * CHUNK, CHUNK)]
        vecs[pos] = (bad, CHUNK)
        it = labkit.import_iovec(ITER_DEST, vecs, mem, kernel=kernel)
        assert state(it) == ("IOVEC", 3 * CHUNK, 0, 3, 0)
        assert it.copy_to_iter(b"\x07" * (3 * CHUNK)) == pos * CHUNK  # the bytes before the hole
        assert state(it) == ("IOVEC", (3 - pos) * CHUNK, 0, 3 - pos, pos)
        assert int((buf.array == 7).sum()) == pos * CHUNK
    it = labkit.import_iovec(ITER_DEST, [(bad, CHUNK)], mem, kernel=kernel)
    assert it.copy_to_iter(b"\x07" * CHUNK) == 0 and it.count == CHUNK
    assert it.zero(CHUNK) == 0 and it.count == CHUNK


@pytest.mark.parametrize("addr", [-1, 2**64 - 1, 2**64, 2**100, 0xFFFF800000000000])
def test_readv02_address_minus_one_and_other_impossible_addresses(mem, addr):
    # readv02 uses (caddr_t)-1: it wraps, or lies outside the address space
    with pytest.raises(OSError, match="segment 1") as exc:
        labkit.import_iovec(ITER_DEST, [(0, 0), (addr, CHUNK)], mem)
    assert exc.value.errno == errno.EFAULT


@pytest.mark.parametrize("kernel", ["6.3", "6.4"])
def test_null_is_a_user_address_the_copy_faults_on(mem, buf, kernel):
    # readv([(M, 8), (NULL, 5)]) returns 8 on the running kernel
    it = labkit.import_iovec(ITER_DEST, [(buf.addr, 8), (0, 5)], mem, kernel=kernel)
    assert it.count == 13
    assert it.copy_to_iter(b"\x01" * 13) == 8
    assert state(it) == ("IOVEC", 5, 0, 1, 1)
    one = labkit.import_iovec(ITER_DEST, [(0, 5)], mem, kernel=kernel)
    assert one.copy_to_iter(b"\x01" * 5) == 0


def test_segment_running_off_the_end_of_a_mapping_faults_at_the_end(mem, buf):
    it = labkit.import_iovec(ITER_DEST, [(buf.addr + buf.size - 10, 11), (buf.addr, 1)], mem)
    assert it.count == 12
    assert it.copy_to_iter(b"\x02" * 12) == 10
    assert state(it) == ("IOVEC", 2, 10, 2, 0)  # advanced by exactly the 10 bytes
    assert (buf.array[-10:] == 2).all() and buf.array[0] == 0
    assert it.copy_to_iter(b"\x02" * 2) == 0  # still at the fault: nothing moves
    assert state(it) == ("IOVEC", 2, 10, 2, 0)


def test_import_ubuf_and_single_range_do_not_check_mappings(mem, buf):
    bad = unmapped_address(mem)
    for it in (
        labkit.import_ubuf(ITER_DEST, bad, 10, mem),
        labkit.import_single_range(ITER_DEST, bad, 10, mem, kernel="6.3"),
        labkit.import_single_range(ITER_DEST, bad, 10, mem, kernel="6.4"),
    ):
        assert it.count == 10
        assert it.copy_to_iter(b"x" * 10) == 0 and it.count == 10
    it = labkit.import_ubuf(ITER_DEST, buf.addr, buf.size + 1, mem)
    assert it.copy_to_iter(b"\x03" * (buf.size + 1)) == buf.size
    assert (it.count, it.iov_offset) == (1, buf.size)
    for call in (
        lambda: labkit.import_ubuf(ITER_DEST, USER_PTR_MAX - 9, 10, mem),
        lambda: labkit.import_single_range(ITER_DEST, USER_PTR_MAX, 1, mem, kernel="6.3"),
        lambda: labkit.import_single_range(ITER_DEST, -1, 1, mem, kernel="6.4"),
    ):
        with pytest.raises(OSError) as exc:
            call()
        assert exc.value.errno == errno.EFAULT
    assert labkit.import_ubuf(ITER_DEST, USER_PTR_MAX - 10, 10, mem).count == 10
    assert labkit.import_ubuf(ITER_DEST, bad, 0, mem).count == 0


# ---- faults at copy time: holes, read-only memory ----------------------------------------


def test_access_ok_is_the_x86_64_range_check():
    assert USER_PTR_MAX == 0x7FFFFFFFF000 == lib.LK_USER_PTR_MAX
    assert (PROT_READ, labkit.core.memory.PROT_WRITE) == (lib.LK_PROT_READ, lib.LK_PROT_WRITE)
    assert access_ok(0, 0) and access_ok(0, USER_PTR_MAX) and not access_ok(0, USER_PTR_MAX + 1)
    assert access_ok(USER_PTR_MAX, 0) and not access_ok(USER_PTR_MAX + 1, 0)
    assert access_ok(USER_PTR_MAX - 10, 10) and not access_ok(USER_PTR_MAX - 10, 11)
    assert not access_ok(0xFFFF800000000000, 0) and not access_ok(2**64 - 1, 2)  # wraps
    assert not access_ok(-1, 0) and not access_ok(0, 2**64) and not access_ok(0, -1)
    assert access_ok(0x1000, 2**46) and not access_ok(0x1000, 2**62)


@pytest.mark.parametrize("kernel", ["6.3", "6.4"])
def test_copy_into_a_segment_that_runs_into_a_hole(mem, kernel):
    a, hole, b = mem.map_contiguous([(2 * PAGE, PROT_RW), (PAGE, PROT_NONE), (PAGE, PROT_RW)])
    assert (hole.addr, b.addr) == (a.end, hole.end)
    start = a.end - 100
    it = labkit.import_iovec(ITER_DEST, [(start, 300)], mem, kernel=kernel)
    assert it.copy_to_iter(b"\x05" * 300) == 100  # preadv2([(U-100, 300)]): 100
    assert (it.count, it.iov_offset) == (200, 100)
    assert (a.array[-100:] == 5).all() and not a.array[:-100].any() and not b.array.any()
    it = labkit.import_iovec(
        ITER_DEST, [(a.addr, 10), (hole.addr + 5, 10), (b.addr, 10)], mem, kernel=kernel
    )
    assert it.copy_to_iter(b"\x06" * 30) == 10  # stops at the hole, skips nothing
    assert state(it) == ("IOVEC", 20, 0, 2, 1)
    assert it.zero(20) == 0 and not b.array.any()
    with pytest.raises(OSError) as exc:
        _ = hole.array
    assert exc.value.errno == errno.EFAULT
    assert mem.accessible(start, 300, write=True) == 100 and not mem.is_mapped(hole.addr, 1)


def test_read_only_memory_can_be_read_not_written(mem):
    rw, ro = mem.map_contiguous([(PAGE, PROT_RW), (PAGE, PROT_READ)])
    rw.array[:] = 1
    assert not ro.array.flags.writeable and not ro.array.any()
    src = labkit.import_iovec(ITER_SOURCE, [(rw.end - 4, 8)], mem)
    assert src.copy_from_iter(8) == b"\x01" * 4 + b"\x00" * 4  # readable: all 8
    dst = labkit.import_iovec(ITER_DEST, [(rw.end - 4, 8)], mem)
    assert dst.copy_to_iter(b"\x09" * 8) == 4  # writable: only the first 4
    assert (dst.count, dst.iov_offset) == (4, 4)
    zero = labkit.import_ubuf(ITER_DEST, ro.addr, 10, mem)
    assert zero.zero(10) == 0 and zero.count == 10
    assert not ro.array.any()
    assert mem.is_mapped(ro.addr, PAGE) and not mem.is_mapped(ro.addr, PAGE, write=True)
    assert mem.accessible(rw.addr, 2 * PAGE) == 2 * PAGE
    assert mem.accessible(rw.addr, 2 * PAGE, write=True) == PAGE


# ---- UIO_FASTIOV: 8 segments on the stack, more allocated --------------------------------


@pytest.mark.parametrize(
    "nsegs,fast_segs,heap",
    [
        (2, 8, False),
        (8, 8, False),
        (9, 8, True),
        (20, 8, True),
        (9, 16, False),
        (16, 16, False),
        (17, 16, True),
        (2, 0, True),
        (2, 1, True),
    ],
)
def test_heap_iovecs_past_fast_segs(mem, buf, nsegs, fast_segs, heap):
    vecs = [(buf.addr + 100 * k, 10) for k in range(nsegs)]
    it = labkit.import_iovec(ITER_DEST, vecs, mem, fast_segs=fast_segs)
    assert it.heap_iovecs is heap
    assert state(it) == ("IOVEC", 10 * nsegs, 0, nsegs, 0)
    assert it.copy_to_iter(bytes(range(1, 10 * nsegs + 1))) == 10 * nsegs
    for k in range(nsegs):
        assert bytes(buf.array[100 * k : 100 * k + 10]) == bytes(range(10 * k + 1, 10 * k + 11))


def test_single_segment_allocates_nothing_on_6_4_but_does_on_6_3_with_no_fast_slots(mem, buf):
    assert not labkit.import_iovec(ITER_DEST, [(buf.addr, 8)], mem, fast_segs=0).heap_iovecs
    it = labkit.import_iovec(ITER_DEST, [(buf.addr, 8)], mem, fast_segs=0, kernel="6.3")
    assert it.heap_iovecs and it.iter_type == "IOVEC"


@pytest.mark.parametrize("fast_segs", [-1, labkit.UIO_MAXIOV + 1])
def test_fast_segs_out_of_range(mem, buf, fast_segs):
    with pytest.raises(ValueError, match="fast_segs"):
        labkit.import_iovec(ITER_DEST, [(buf.addr, 1)], mem, fast_segs=fast_segs)


# ---- MAX_RW_COUNT -------------------------------------------------------------------------


def test_max_rw_count_value():
    assert MAX_RW_COUNT == 0x7FFFF000 == (2**31 - 1) & ~(PAGE - 1)


def test_readv02_three_gib_vectors_are_clamped_to_max_rw_count(big):
    mem, m = big
    vecs = [(m.addr, GIB), (m.addr + CHUNK, GIB), (m.addr + 2 * CHUNK, GIB)]
    it = labkit.import_iovec(ITER_DEST, vecs, mem)
    assert state(it) == ("IOVEC", MAX_RW_COUNT, 0, 3, 0)
    assert it.iovec() == (m.addr, GIB)
    it.advance(GIB)
    assert it.iovec() == (m.addr + CHUNK, MAX_RW_COUNT - GIB)  # the second one is cut
    it.advance(MAX_RW_COUNT - GIB)
    # the third was cut to 0: advance steps over it, past the end
    assert state(it) == ("IOVEC", 0, 0, 0, 3)


@pytest.mark.parametrize("kernel,kind", [("6.3", "IOVEC"), ("6.4", "UBUF")])
def test_one_segment_longer_than_max_rw_count_is_clamped(big, kernel, kind):
    mem, m = big
    it = labkit.import_iovec(ITER_DEST, [(m.addr, m.size)], mem, kernel=kernel)
    assert it.iter_type == kind and it.count == MAX_RW_COUNT
    assert it.iovec() == (m.addr, MAX_RW_COUNT)
    for single in (
        labkit.import_single_range(ITER_DEST, m.addr, m.size, mem, kernel=kernel),
        labkit.import_ubuf(ITER_DEST, m.addr, m.size, mem),
    ):
        assert single.count == MAX_RW_COUNT


def test_import_ubuf_clamps_before_it_checks_import_iovec_checks_the_whole_segment(mem, buf):
    # import_ubuf() clamps the length, then calls access_ok(); __import_iovec()
    # calls access_ok() on each segment's full length, then clamps the total.
    m = buf
    too_long = USER_PTR_MAX - m.addr + 1  # ends past user space; its first 2 GiB do not
    assert labkit.import_ubuf(ITER_DEST, m.addr, too_long, mem).count == MAX_RW_COUNT
    assert labkit.import_iovec(ITER_DEST, [(m.addr, too_long)], mem).count == MAX_RW_COUNT
    with pytest.raises(OSError, match="segment 0") as exc:
        labkit.import_iovec(ITER_DEST, [(m.addr, too_long)], mem, kernel="6.3")
    assert exc.value.errno == errno.EFAULT
    with pytest.raises(OSError, match="segment 1") as exc:
        labkit.import_iovec(ITER_DEST, [(m.addr, 1), (m.addr, too_long)], mem)
    assert exc.value.errno == errno.EFAULT


def test_import_ubuf_negative_length_wraps_and_is_clamped(big):
    mem, m = big
    assert labkit.import_ubuf(ITER_DEST, m.addr, -1, mem).count == MAX_RW_COUNT


# ---- UBUF vs IOVEC per kernel --------------------------------------------------------------


@pytest.mark.parametrize(
    "kernel,kind",
    [
        ("6.3", "IOVEC"),
        ("6.4", "UBUF"),
        ("6.12", "UBUF"),
        ("5.15", "IOVEC"),
        ("7.0", "UBUF"),
        ((6, 3), "IOVEC"),
        ((6, 4), "UBUF"),
        (6.4, "UBUF"),
    ],
)
def test_single_segment_import_per_kernel(mem, buf, kernel, kind):
    it = labkit.import_iovec(ITER_DEST, [(buf.addr + 5, 100)], mem, kernel=kernel)
    assert (it.iter_type, it.count, it.nr_segs, it.user_backed) == (kind, 100, 1, True)
    assert it.iovec() == (buf.addr + 5, 100)
    assert it.copy_to_iter(b"\x03" * 150) == 100
    assert (buf.array[5:105] == 3).all() and buf.array[4] == 0 and buf.array[105] == 0
    single = labkit.import_single_range(ITER_DEST, buf.addr + 5, 100, mem, kernel=kernel)
    assert (single.iter_type, single.count, single.nr_segs) == (kind, 100, 1)


@pytest.mark.parametrize("kernel", ["6.3", "6.4"])
def test_two_segments_stay_iovec(mem, buf, kernel):
    it = labkit.import_iovec(ITER_DEST, [(buf.addr, 100), (buf.addr + 200, 0)], mem, kernel=kernel)
    assert state(it) == ("IOVEC", 100, 0, 2, 0)


def test_import_ubuf_is_ubuf_in_every_era(mem, buf):
    it = labkit.import_ubuf(ITER_SOURCE, buf.addr, 64, mem)
    assert state(it) == ("UBUF", 64, 0, 1, 0)
    buf.array[:64] = 0x11
    assert it.copy_from_iter(100) == b"\x11" * 64


def test_ubuf_and_iovec_move_the_same_bytes(mem, buf):
    arr = buf.array
    arr[:] = np.arange(arr.size) % 253
    out = []
    for kernel in ("6.3", "6.4"):
        it = labkit.import_iovec(ITER_SOURCE, [(buf.addr + 7, 3000)], mem, kernel=kernel)
        it.advance(100)
        it.revert(50)
        out.append((it.copy_from_iter(5000), it.count, it.iov_offset))
    want = bytes(arr[57:3007])
    assert out[0] == (want, 0, 0)  # IOVEC: the copy ended the segment, offset 0 past it
    assert out[1] == (want, 0, 3000)  # UBUF: the offset into its one buffer


# ---- copies after unmap fault short ------------------------------------------------------


def test_copy_after_unmap_faults_short(mem):
    a, b = mem.map(PAGE), mem.map(PAGE)
    it = labkit.import_iovec(ITER_DEST, [(a.addr, 100), (b.addr, 100)], mem)
    mem.unmap(b)
    assert it.copy_to_iter(b"\x05" * 200) == 100  # stops where the fault is
    assert state(it) == ("IOVEC", 100, 0, 1, 1)
    assert (a.array[:100] == 5).all()
    assert it.copy_to_iter(b"\x05" * 100) == 0  # still faulting: nothing moves
    assert state(it) == ("IOVEC", 100, 0, 1, 1)
    assert not b.array.any()  # the unmapped memory was never written


@pytest.mark.parametrize("kernel", ["6.3", "6.4"])
def test_copy_from_unmapped_single_segment(mem, kernel):
    a = mem.map(PAGE)
    a.array[:] = 1
    it = labkit.import_iovec(ITER_SOURCE, [(a.addr, 300)], mem, kernel=kernel)
    assert it.copy_from_iter(100) == b"\x01" * 100
    mem.unmap(a)
    assert it.copy_from_iter(100) == b""
    assert it.count == 200 and it.iov_offset == 100
    z = labkit.import_ubuf(ITER_DEST, mem.map(PAGE).addr, 10, mem)
    assert z.zero(10) == 10


def test_unmap_twice_and_foreign_mapping(mem):
    m = mem.map(PAGE)
    mem.unmap(m)
    with pytest.raises(OSError) as exc:
        mem.unmap(m)
    assert exc.value.errno == errno.EINVAL
    other = labkit.UserMemory().map(PAGE)
    with pytest.raises(OSError):
        mem.unmap(other)
    assert not mem.is_mapped(other.addr, 1)


# ---- direction --------------------------------------------------------------------------------


@pytest.mark.parametrize("kernel", ["6.3", "6.4"])
def test_imported_iterators_check_the_direction(mem, buf, kernel):
    src = labkit.import_iovec(ITER_SOURCE, [(buf.addr, 10)], mem, kernel=kernel)
    with pytest.raises(IterMisuseError):
        src.copy_to_iter(b"x")
    with pytest.raises(IterMisuseError):
        src.zero(1)
    dst = labkit.import_iovec(ITER_DEST, [(buf.addr, 10), (buf.addr, 5)], mem, kernel=kernel)
    with pytest.raises(IterMisuseError):
        dst.copy_from_iter(1)
    assert src.count == 10 and dst.count == 15
    assert not buf.array.any()


@pytest.mark.parametrize("direction", [2, -1, "READ", None, 0.5])
def test_bad_direction(mem, buf, direction):
    with pytest.raises((ValueError, TypeError)):
        labkit.import_iovec(direction, [(buf.addr, 1)], mem)
    with pytest.raises((ValueError, TypeError)):
        labkit.import_ubuf(direction, buf.addr, 1, mem)


def test_direction_constants():
    assert int(ITER_DEST) == 0 and int(ITER_SOURCE) == 1
    assert repr(ITER_DEST) == "ITER_DEST"


# ---- kernel_era and argument types --------------------------------------------------------


@pytest.mark.parametrize(
    "text,era",
    [
        ("6.3", 63),
        ("6.4", 64),
        ("6.4.0", 64),
        ("6.12", 64),
        ("6.10", 64),
        ("5.19", 63),
        ("4.20", 63),
        ("7.0", 64),
        ((6, 4), 64),
        ((6, 1), 63),
        (6.3, 63),
    ],
)
def test_kernel_era(text, era):
    assert labkit.kernel_era(text) == era


@pytest.mark.parametrize("bad", ["six", "6", "", None, "6.x", (6,), ()])
def test_kernel_era_rejects_nonsense(bad):
    with pytest.raises(ValueError, match="kernel"):
        labkit.kernel_era(bad)


def test_import_argument_types(mem, buf):
    with pytest.raises(TypeError, match="UserMemory"):
        labkit.import_iovec(ITER_DEST, [(buf.addr, 1)], object())
    with pytest.raises(TypeError, match="segment 0"):
        labkit.import_iovec(ITER_DEST, [buf.addr], mem)
    with pytest.raises(TypeError, match="segment 1"):
        labkit.import_iovec(ITER_DEST, [(buf.addr, 1), (buf.addr, 1, 2)], mem)
    with pytest.raises(TypeError):
        labkit.import_iovec(ITER_DEST, [(float(buf.addr), 1)], mem)
    with pytest.raises(TypeError):
        labkit.import_iovec(ITER_DEST, [(buf.addr, "1")], mem)
    with pytest.raises(TypeError):
        labkit.import_ubuf(ITER_DEST, str(buf.addr), 1, mem)
    with pytest.raises(ValueError):
        labkit.import_iovec(ITER_DEST, [(buf.addr, 1)], mem, kernel="latest")


def test_numpy_integers_are_accepted(mem, buf):
    it = labkit.import_iovec(ITER_DEST, [(np.uint64(buf.addr), np.int32(10))], mem)
    assert it.count == 10


def test_imported_iterator_keeps_its_address_space_alive(buf):
    mem = labkit.UserMemory()
    m = mem.map(PAGE)
    it = labkit.import_ubuf(ITER_DEST, m.addr, 10, mem)
    del mem
    assert it.copy_to_iter(b"abc") == 3
    assert bytes(m.array[:3]) == b"abc"


def test_mapping_attributes(mem):
    m = mem.map(3 * PAGE, align=4 * PAGE)
    assert m.addr % (4 * PAGE) == 0 and m.size == 3 * PAGE and m.end == m.addr + 3 * PAGE
    assert m.array.dtype == np.uint8 and m.array.size == 3 * PAGE and m.array.flags.writeable
    assert mem.is_mapped(m.addr, 3 * PAGE) and not mem.is_mapped(m.addr, 3 * PAGE + 1)
    assert mem.find(m.addr + 5) is m and mem.find(m.end) is None
    for size, align in ((0, PAGE), (-1, PAGE), (PAGE, 3000), (PAGE, 3 * PAGE)):
        with pytest.raises(OSError) as exc:
            mem.map(size, align=align)
        assert exc.value.errno == errno.EINVAL
    assert mmap.PAGESIZE == PAGE
    assert IovIter.ubuf(ITER_DEST, m.array).count == 3 * PAGE


# ---- threads: the address-space table is read with the GIL released -------------------


def waits_for_the_lock(mem, call):
    """True if ``call`` (run in another thread) waits while this thread holds mem.lock.

    cffi releases the GIL during C calls: a C call that reads the address-space
    table while map()/unmap() (which hold mem.lock) move it could read freed or
    half-moved memory, so every such call must take mem.lock too.
    """
    done = threading.Event()
    thread = threading.Thread(target=lambda: (call(), done.set()), daemon=True)
    with mem.lock:
        thread.start()
        waited = not done.wait(0.3)
    thread.join(30)
    return waited and done.is_set()


@pytest.mark.parametrize(
    "call",
    [
        lambda mem, m: labkit.import_iovec(
            ITER_DEST, [(m.addr, 10), (m.addr + 10, 10)], mem
        ).copy_to_iter(b"x" * 20),
        lambda mem, m: labkit.import_iovec(
            ITER_SOURCE, [(m.addr, 10)], mem, kernel="6.3"
        ).copy_from_iter(10),
        lambda mem, m: labkit.import_iovec(ITER_DEST, [(m.addr, 10), (1, 10)], mem).copy_to_iter(
            b"x" * 20
        ),
        lambda mem, m: labkit.import_ubuf(ITER_DEST, m.addr, 10, mem).zero(10),
        lambda mem, m: labkit.import_single_range(
            ITER_DEST, m.addr, 10, mem, kernel="6.3"
        ).copy_to_iter(b"x"),
        lambda mem, m: mem.is_mapped(m.addr, 10),
        lambda mem, m: mem.accessible(m.addr, 10),
        lambda mem, m: mem.find(m.addr),
        lambda mem, m: mem.mappings,
        lambda mem, m: mem.map(PAGE),
    ],
    ids=[
        "iovec-copy",
        "iovec-6.3-copy-from",
        "iovec-fault",
        "ubuf-zero",
        "single_range",
        "is_mapped",
        "accessible",
        "find",
        "mappings",
        "map",
    ],
)
def test_address_space_reads_take_the_lock(mem, buf, call):
    assert waits_for_the_lock(mem, lambda: call(mem, buf))


def test_imports_do_not_read_the_address_space(mem, buf):
    # access_ok() needs no mapping: an import proceeds while map()/unmap() hold the lock
    out = []
    thread = threading.Thread(
        target=lambda: out.append(
            labkit.import_iovec(ITER_DEST, [(buf.addr, 10), (1, 10)], mem).count
        ),
        daemon=True,
    )
    with mem.lock:
        thread.start()
        thread.join(30)
        assert out == [20]
