"""One rule for every integer argument of the API (labkit._args), and the calls that broke it.

Integers only, through ``__index__`` (a float, a string or bytes is a
TypeError, never truncated or parsed); ranges checked before any C call, so
no value reaches cffi and comes back as an OverflowError; out of range is
ValueError, or OSError with the kernel's errno where the kernel has one.
"""

from __future__ import annotations

import errno
import math
import os

import numpy as np
import pytest

import labkit
from labkit import ITER_DEST, live
from labkit._args import (
    SIZE_MAX,
    address_arg,
    fd_arg,
    index_arg,
    int_arg,
    positive_int,
    seconds_arg,
    size_arg,
)
from labkit.measure import runner, timers
from labkit.models.ubuf import SyscallModel, UringModel, defer_every_for

PROBE = live.probe()
needs_uring = pytest.mark.skipif(not PROBE["available"], reason=PROBE["reason"] or "no io_uring")

JUNK = [4095.9, 12.9, 1e12, math.inf, math.nan, "8", b"8", None, [8], np.float64(2.0)]
HUGE = [2**32, 2**63, 2**64, 2**100, -(2**63) - 1, -(2**100)]


# ---- the helpers ---------------------------------------------------------------------


@pytest.mark.parametrize("value", JUNK)
def test_index_arg_takes_integers_only(value):
    with pytest.raises(TypeError, match="must be an integer"):
        index_arg(value, "x")


def test_index_arg_takes_numpy_integers_and_bools():
    assert index_arg(np.int64(7), "x") == 7 and index_arg(np.uint8(3), "x") == 3
    assert index_arg(True, "x") == 1


def test_int_arg_ranges_and_errors():
    assert int_arg(5, "x", 0, 10) == 5
    with pytest.raises(ValueError, match="x must be in 0..10, got 11"):
        int_arg(11, "x", 0, 10)
    with pytest.raises(OSError) as exc:
        int_arg(-1, "x", 0, err=errno.EFAULT)
    assert exc.value.errno == errno.EFAULT and "x must be >= 0" in str(exc.value)
    with pytest.raises(ValueError, match="<= 3"):
        int_arg(4, "x", maximum=3)


def test_the_named_helpers():
    assert size_arg(2**70) == SIZE_MAX
    with pytest.raises(ValueError):
        size_arg(-1)
    for fn, bad, err in (
        (lambda v: positive_int(v, "n"), 0, errno.EINVAL),
        (lambda v: positive_int(v, "n"), 2**64, errno.EINVAL),
        (address_arg, 2**64, errno.EFAULT),
        (address_arg, -1, errno.EFAULT),
        (fd_arg, 2**31, errno.EBADF),
        (fd_arg, -1, errno.EBADF),
        (seconds_arg, 0, errno.EINVAL),
        (seconds_arg, 1e12, errno.EINVAL),
        (seconds_arg, math.inf, errno.EINVAL),
        (seconds_arg, math.nan, errno.EINVAL),
    ):
        with pytest.raises(OSError) as exc:
            fn(bad)
        assert exc.value.errno == err, (fn, bad)
    assert fd_arg(-1, minimum=-1) == -1
    assert seconds_arg(np.float32(0.5)) == 0.5
    for junk in ("1", b"1", None, True):
        with pytest.raises(TypeError):
            seconds_arg(junk)


# ---- rings, models, registered buffers and timers: out-of-range and non-integer values -----


@pytest.fixture
def mem_reg():
    mem = labkit.UserMemory()
    m = mem.map(4 * labkit.PAGE_SIZE)
    return mem, m, labkit.register_buffer(mem, m.addr, 8192)


@pytest.fixture
def ring():
    if not PROBE["available"]:
        pytest.skip(PROBE["reason"])
    with live.Ring(4) as r:
        yield r


def _errno_of(call) -> int:
    with pytest.raises(OSError) as exc:
        call()
    return exc.value.errno


@needs_uring
def test_ring_entries_beyond_32_bits_is_einval():
    assert _errno_of(lambda: live.Ring(entries=2**32)) == errno.EINVAL
    assert _errno_of(lambda: live.Ring(4, flags=2**40)) == errno.EINVAL


def test_huge_timeouts_are_einval(ring):
    for t in (1e12, math.inf, math.nan, -1, 0):
        assert _errno_of(lambda t=t: ring.set_timeout(t)) == errno.EINVAL
    with pytest.raises(TypeError):
        ring.set_timeout("1")


def test_ring_offsets_and_descriptors_out_of_range(ring):
    with live.PatternFile(8192) as pf:
        assert _errno_of(lambda: ring.read("read", pf.fd, 64, offset=2**63)) == errno.EINVAL
        assert _errno_of(lambda: ring.read("read", 2**40, 64)) == errno.EBADF
        assert _errno_of(lambda: ring.read("read", pf.fd, 64, buf_offset=2**64)) == errno.EFAULT
        assert _errno_of(lambda: ring.memory(0, 2**63, "scratch")) == errno.EFAULT
        assert _errno_of(lambda: ring.memory(2**64, 1, "scratch")) == errno.EFAULT
        assert _errno_of(lambda: ring.register_files([2**40])) == errno.EBADF
        assert _errno_of(lambda: ring.register_buffer(2**64)) == errno.EFAULT
        for junk in (4095.9, "8", b"8"):
            with pytest.raises(TypeError):
                ring.read("read", pf.fd, 64, offset=junk)
            with pytest.raises(TypeError):
                ring.register_buffer(junk)
            with pytest.raises(TypeError):
                ring.fill(junk, "scratch")


def test_model_counts_out_of_range():
    with pytest.raises(ValueError, match="defer_every"):
        UringModel(defer_every=2**64)
    for junk in (2.5, "8", b"8"):
        with pytest.raises(TypeError):
            UringModel(defer_every=junk)
        with pytest.raises(TypeError):
            SyscallModel(size=junk)
        with pytest.raises(TypeError):
            SyscallModel(segments=[junk])
    model = SyscallModel()
    for junk in (2.5, "8"):
        with pytest.raises(TypeError):
            model.time(junk)
        with pytest.raises(TypeError):
            model.work(junk)
    assert _errno_of(lambda: model.time(2**64)) == errno.EINVAL  # iters_arg: as from C
    with pytest.raises(TypeError):
        defer_every_for("0.5")


def test_register_buffer_and_io_import_fixed_take_integers_only(mem_reg):
    mem, m, reg = mem_reg
    with pytest.raises(TypeError):
        labkit.register_buffer(mem, math.inf, 8192)
    with pytest.raises(TypeError):
        labkit.register_buffer(mem, str(m.addr), "8192", folio_shift=12.9)
    with pytest.raises(TypeError):
        labkit.register_buffer(mem, m.addr, 8192, folio_shift=12.9)
    with pytest.raises(TypeError):
        labkit.io_import_fixed(ITER_DEST, reg, reg.addr, 4095.9)
    with pytest.raises(TypeError):
        labkit.io_import_fixed(ITER_DEST, reg, float(reg.addr), 100)
    assert _errno_of(lambda: labkit.register_buffer(mem, 2**64, 8192)) == errno.EFAULT
    assert _errno_of(lambda: labkit.io_import_fixed(ITER_DEST, reg, reg.addr, 2**64)) == (
        errno.EFAULT
    )


def test_fast_segs_and_kernel_versions_take_integers_only():
    mem = labkit.UserMemory()
    m = mem.map(labkit.PAGE_SIZE)
    for junk in (b"8", "8", 8.0):
        with pytest.raises(TypeError):
            labkit.import_iovec(ITER_DEST, [(m.addr, 10)], mem, fast_segs=junk)
    with pytest.raises(ValueError):
        labkit.import_iovec(ITER_DEST, [(m.addr, 10)], mem, fast_segs=2**64)
    with pytest.raises(ValueError):
        labkit.kernel_era((6, 4.9))


def test_timers_and_runner_take_integers_only(mem_reg):
    _, _, reg = mem_reg
    with pytest.raises(TypeError):
        timers.time_fixed_seek(reg, 4095.9, 10, "shift", 10)
    with pytest.raises(TypeError):
        timers.time_fixed_seek(reg, 0, 10, "shift", 10.5)
    assert _errno_of(lambda: timers.time_empty(2**64)) == errno.EINVAL
    with pytest.raises(TypeError):
        runner.run({"a": lambda: 1.0}, repeats=2.5, cpu=None)
    with pytest.raises(TypeError):
        with runner.pinned("0"):
            pass
    with pytest.raises(TypeError):
        labkit.UserMemory().find(1.5)


@pytest.mark.parametrize("value", HUGE + JUNK)
def test_no_syscall_argument_overflows(value):
    """A descriptor or offset out of range is refused; 2**32 is a valid offset of /dev/zero."""
    zfd = live.open_zero()
    try:
        for call in (
            lambda: live.syscall_ns("read", value, iters=10),
            lambda: live.syscall_ns("read", zfd, iters=10, offset=value),
            lambda: live.syscall_read("read", value),
            lambda: live.syscall_read("pread", zfd, 64, offset=value),
        ):
            try:
                call()
            except (OSError, ValueError, TypeError):
                pass
            else:
                assert value == 2**32, value
    finally:
        os.close(zfd)


@pytest.mark.parametrize("direction", [1.0, 0.0, "1", None, 2, -1])
def test_direction_is_an_integer_0_or_1(direction):
    """Direction=1.0 was accepted."""
    from labkit.core.iter_args import direction_arg

    with pytest.raises((TypeError, ValueError)):
        direction_arg(direction)
    mem = labkit.UserMemory()
    m = mem.map(labkit.PAGE_SIZE)
    with pytest.raises((TypeError, ValueError)):
        labkit.import_ubuf(direction, mem, m.addr, 16)


def test_direction_takes_the_enum_and_integers():
    from labkit.core.iter_args import Direction, direction_arg

    assert direction_arg(ITER_DEST) is Direction.DEST
    assert direction_arg(1) is Direction.SOURCE and direction_arg(np.int64(0)) is Direction.DEST


def test_a_folio_sits_at_one_index_of_a_page_cache():
    """The same Folio could be added at two indices."""
    from labkit.core.folio import Folio
    from labkit.core.pagecache import PageCache

    cache = PageCache()
    folio = Folio.alloc(0)
    cache.add(3, folio)
    with pytest.raises(ValueError, match="already"):
        cache.add(7, folio)
    assert cache.add(8, Folio.alloc(0)) is not folio


def test_folio_queue_capacity_takes_integer_slots():
    """FolioQueue.capacity accepted a float slot (31.0)."""
    from labkit.core.folioq import NR_SLOTS, FolioQueue

    fq = FolioQueue()
    fq.append(0)
    assert fq.capacity(0, NR_SLOTS) == 0 and fq.capacity(0, 0) == labkit.PAGE_SIZE
    for slot in (float(NR_SLOTS), 0.0, "0"):
        with pytest.raises(TypeError):
            fq.capacity(0, slot)
    with pytest.raises(TypeError):
        fq.capacity(0.0, 0)
