"""labkit against the running kernel: the same iovecs, the same real memory, every byte.

Each test gives iovec arrays to a real system call (readv/preadv2 from a memfd
and from an ext4 file, writev/pwritev2 to a memfd, process_vm_readv and
process_vm_writev on this process, vmsplice into a pipe) and to labkit's import_iovec +
copy_to_iter/copy_from_iter, over the same addresses of a labkit.UserMemory,
and compares the return value or errno and every readable byte of the memory
(or file) written, bytes outside the segments included.  labkit/testing/kernel_diff.py
holds the harness and, in its docstring, why each comparison is exact.

The same cases also run through labkit's 6.3 import: it must agree with the
running (6.4+) kernel except where the two eras differ, a single segment
longer than MAX_RW_COUNT that ends outside user space (6.3 checks the whole
length: EFAULT; 6.4 clamps it first).

Sizes: LABKIT_DIFF_CASES cases in all (default 5,000 in quick mode, 20,000
otherwise), spread over the six calls, seeded by LABKIT_DIFF_SEED (default
bench.DEFAULT_SEED).  benchmarks/kernel_differential.py runs longer and prints
the report.  A call the sandbox refuses (EPERM, ENOSYS) is skipped.
"""

from __future__ import annotations

import errno
import os

import pytest

import labkit
from labkit.config import quick_mode
from labkit.core.memory import PROT_NONE, PROT_READ, PROT_RW, USER_PTR_MAX
from labkit.measure.runner import DEFAULT_SEED
from labkit.testing import kernel_diff as kd

pytestmark = pytest.mark.slow  # make test-fast leaves it out

PAGE = labkit.PAGE_SIZE


def total_cases() -> int:
    return int(os.environ.get("LABKIT_DIFF_CASES", 5000 if quick_mode() else 20000))


def seed() -> int:
    return int(os.environ.get("LABKIT_DIFF_SEED", DEFAULT_SEED))


@pytest.fixture(scope="module")
def refused():
    return kd.probe_refusals(labkit.UserMemory())


@pytest.mark.parametrize("kind", kd.KINDS)
def test_random_iovecs_agree_with_the_kernel(kind, refused, tmp_path):
    if kind in refused:
        pytest.skip(f"{kind} is refused here ({refused[kind]})")
    cases = max(total_cases() // len(kd.KINDS), 1)
    runner = kd.Runner(seed() + kd.KINDS.index(kind), str(tmp_path))
    try:
        report = runner.run(cases, [kind])
    finally:
        runner.close()
    print(report.summary())
    assert not report.differences, "\n".join(str(d) for d in report.differences[:20])
    assert report.total == cases
    if cases >= 500:
        # the cases reached every outcome: a fault mid-way, all bytes, EFAULT, EINVAL
        for outcome in ("short", "all bytes", "EFAULT", "EINVAL"):
            assert report.outcomes.get(outcome, 0) >= cases // 100, (outcome, report.outcomes)


# ---- the named cases: one per kernel rule the differential run checks ------------------------


class World:
    """Memory [guard | M: 2 pages rw | U: hole | R: read-only | guard], and a pattern file."""

    def __init__(self, tmp_path) -> None:
        self.mem = labkit.UserMemory()
        self.arena = kd.Arena(self.mem, [PROT_RW, PROT_RW, PROT_NONE, PROT_READ])
        self.m = self.arena.start
        self.u = self.m + 2 * PAGE
        self.r = self.u + PAGE
        self.data = bytes((k * 7 + 1) % 251 for k in range(3 * PAGE))
        self.fd = os.memfd_create("labkit-differential")
        os.write(self.fd, self.data)

    def read(self, pairs, offset=0, kernel="6.4"):
        """(kernel's return, labkit's return); the arena's bytes must agree too."""
        fill = bytes(range(256)) * (self.arena.size // 256)
        self.arena.fill(fill)
        k = kd.sys_readv(self.fd, pairs, offset)
        kbytes = self.arena.snapshot()
        self.arena.fill(fill)
        lab = kd.model_read(pairs, self.mem, self.data, offset, kernel=kernel)
        if k == lab:
            assert self.arena.snapshot() == kbytes
        return k, lab


@pytest.fixture
def world(tmp_path, refused):
    if "preadv2 memfd" in refused:
        pytest.skip(f"preadv2 is refused here ({refused['preadv2 memfd']})")
    w = World(tmp_path)
    yield w
    os.close(w.fd)


def test_a_segment_running_into_a_hole_returns_the_bytes_before_it(world):
    assert world.read([(world.u - 100, 300)]) == (100, 100)


def test_null_after_a_mapped_segment_returns_the_first_segment(world):
    assert world.read([(world.m, 8), (0, 5)]) == (8, 8)


def test_an_unmapped_segment_never_reached_is_no_error(world):
    end = len(world.data) - 10
    assert world.read([(world.m, 10), (world.u, 10)], offset=end) == (10, 10)


def test_a_fault_on_the_first_byte_is_efault(world):
    assert world.read([(world.u, 10), (world.m, 10)]) == (-errno.EFAULT,) * 2
    assert world.read([(world.r, 10)]) == (-errno.EFAULT,) * 2  # read-only


@pytest.mark.parametrize("kernel", ["6.3", "6.4"])
def test_an_empty_segment_outside_user_space_is_efault(world, kernel):
    for addr in (0xFFFF800000000000, USER_PTR_MAX + 1, 2**64 - 1):
        assert world.read([(addr, 0), (world.m, 8)], kernel=kernel) == (-errno.EFAULT,) * 2
    # the top of user space itself is still user space
    assert world.read([(USER_PTR_MAX, 0), (world.m, 8)], kernel=kernel) == (8, 8)


def test_one_long_segment_is_clamped_before_access_ok_on_6_4_only(world):
    long = USER_PTR_MAX - world.m + 1  # ends one byte past user space
    assert world.read([(world.m, long)]) == (2 * PAGE, 2 * PAGE)  # clamped: up to the hole
    assert world.read([(world.m, long)], kernel="6.3") == (2 * PAGE, -errno.EFAULT)
    assert world.read([(world.m, long), (world.m, 1)]) == (-errno.EFAULT,) * 2


def test_limits_on_segments_and_lengths(world):
    assert world.read([]) == (0, 0)
    assert world.read([(world.m, 1)] * 1024) == (1024, 1024)
    assert world.read([(world.m, 1)] * 1025) == (-errno.EINVAL,) * 2
    # a length above SSIZE_MAX is EINVAL, even after a segment that is EFAULT
    assert world.read([(2**64 - 1, 10), (world.m, 2**63)]) == (-errno.EINVAL,) * 2


def test_vmsplice_into_a_hole_splices_the_pages_before_it(world, refused):
    if "vmsplice" in refused:
        pytest.skip(f"vmsplice is refused here ({refused['vmsplice']})")
    r, w = os.pipe2(os.O_NONBLOCK)
    try:
        slots = kd.fcntl.fcntl(w, kd.F_GETPIPE_SZ) // PAGE
        pairs = [(world.m + 1464, 8509)]  # 8,509 bytes, 6,728 of them before the hole
        k = kd.sys_vmsplice(w, pairs)
        kdata = os.read(r, max(k, 1)) if k > 0 else b""
        lab, ldata = kd.model_vmsplice(pairs, world.mem, slots)
        assert (k, lab) == (6728, 6728) and kdata == ldata
    finally:
        os.close(r)
        os.close(w)
