"""The kernel's side of the differential run: real system calls over real arenas, and
the seeded cases (see :mod:`labkit.testing.kernel_diff` for why the comparisons are exact)."""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import fcntl
import os
from collections.abc import Callable, Sequence

import numpy as np

import labkit
from labkit import MAX_RW_COUNT
from labkit.core.memory import PROT_NONE, PROT_READ, PROT_RW, USER_PTR_MAX, UserMemory

PAGE = labkit.PAGE_SIZE
SSIZE_MAX = 2**63 - 1
F_GETPIPE_SZ = getattr(fcntl, "F_GETPIPE_SZ", 1032)

# ---- the real system calls -----------------------------------------------------------------

_libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
_ssize = ctypes.c_ssize_t
_vp = ctypes.c_void_p
for _name, _args in (
    ("readv", [ctypes.c_int, _vp, ctypes.c_int]),
    ("writev", [ctypes.c_int, _vp, ctypes.c_int]),
    ("preadv2", [ctypes.c_int, _vp, ctypes.c_int, ctypes.c_int64, ctypes.c_int]),
    ("pwritev2", [ctypes.c_int, _vp, ctypes.c_int, ctypes.c_int64, ctypes.c_int]),
    ("process_vm_readv", [ctypes.c_int, _vp, ctypes.c_ulong, _vp, ctypes.c_ulong, ctypes.c_ulong]),
    ("process_vm_writev", [ctypes.c_int, _vp, ctypes.c_ulong, _vp, ctypes.c_ulong, ctypes.c_ulong]),
    ("vmsplice", [ctypes.c_int, _vp, ctypes.c_size_t, ctypes.c_uint]),
):
    _fn = getattr(_libc, _name)
    _fn.argtypes = _args
    _fn.restype = _ssize


def _ret(value: int) -> int:
    return value if value >= 0 else -ctypes.get_errno()


class IovecArray:
    """A C ``struct iovec[]`` holding (base, len) pairs as 64-bit values, kept alive."""

    def __init__(self, pairs: Sequence[tuple[int, int]]) -> None:
        self.array = np.zeros((max(len(pairs), 1), 2), dtype=np.uint64)
        if pairs:
            self.array[: len(pairs)] = np.array(
                [(a % 2**64, n % 2**64) for a, n in pairs], dtype=np.uint64
            )
        self.n = len(pairs)
        self.ptr = self.array.ctypes.data


def sys_readv(fd: int, pairs: Sequence[tuple[int, int]], offset: int | None) -> int:
    """readv (at the file position) or preadv2(offset, flags 0); bytes or -errno."""
    v = IovecArray(pairs)
    if offset is None:
        return _ret(_libc.readv(fd, v.ptr, v.n))
    return _ret(_libc.preadv2(fd, v.ptr, v.n, offset, 0))


def sys_writev(fd: int, pairs: Sequence[tuple[int, int]], offset: int | None) -> int:
    """writev (at the file position) or pwritev2(offset, flags 0); bytes or -errno."""
    v = IovecArray(pairs)
    if offset is None:
        return _ret(_libc.writev(fd, v.ptr, v.n))
    return _ret(_libc.pwritev2(fd, v.ptr, v.n, offset, 0))


def sys_vm_rw(
    write: bool, local: Sequence[tuple[int, int]], remote: Sequence[tuple[int, int]], flags: int = 0
) -> int:
    """process_vm_readv/writev on this very process; bytes or -errno."""
    lv, rv = IovecArray(local), IovecArray(remote)
    fn = _libc.process_vm_writev if write else _libc.process_vm_readv
    return _ret(fn(os.getpid(), lv.ptr, lv.n, rv.ptr, rv.n, flags))


SPLICE_F_NONBLOCK = 2


def sys_vmsplice(pipe_w: int, pairs: Sequence[tuple[int, int]]) -> int:
    """vmsplice of user memory into the (empty, non-blocking) pipe ``pipe_w``; bytes or -errno."""
    v = IovecArray(pairs)
    return _ret(_libc.vmsplice(pipe_w, v.ptr, v.n, SPLICE_F_NONBLOCK))


def refusal(call: Callable[[], int]) -> str | None:
    """Why a probe call was refused (EPERM/ENOSYS: a sandbox), or None if it ran."""
    ret = call()
    if ret in (-errno.EPERM, -errno.ENOSYS, -errno.EACCES):
        return os.strerror(-ret)
    return None


# ---- memory --------------------------------------------------------------------------------


class Arena:
    """Pages of real memory with per-page protections, between two PROT_NONE guard pages."""

    def __init__(self, mem: UserMemory, prots: Sequence[int]) -> None:
        runs: list[list[int]] = []
        for p in prots:
            if runs and runs[-1][1] == p:
                runs[-1][0] += 1
            else:
                runs.append([1, p])
        pieces = [(PAGE, PROT_NONE)] + [(n * PAGE, p) for n, p in runs] + [(PAGE, PROT_NONE)]
        self.maps = mem.map_contiguous(pieces)
        self.mem = mem
        self.prots = list(prots)
        self.start = self.maps[1].addr
        self.end = self.maps[-1].addr
        self.size = self.end - self.start
        self.writable = [m for m in self.maps if m.prot == PROT_RW]
        self.readable = [m for m in self.maps if m.prot != PROT_NONE]
        #: addresses where the protection changes, guards included
        self.edges = [m.addr for m in self.maps[1:]]

    def fill(self, data: bytes) -> None:
        """Set every writable byte (``data`` holds at least ``size`` bytes, by arena offset)."""
        buf = np.frombuffer(data, dtype=np.uint8)
        for m in self.writable:
            off = m.addr - self.start
            m.array[:] = buf[off : off + m.size]

    def snapshot(self) -> bytes:
        """Every readable byte, in address order (PROT_NONE pages cannot change)."""
        return b"".join(m.array.tobytes() for m in self.readable)

    def read(self, addr: int, n: int) -> bytes:
        """``n`` bytes at ``addr``, across adjacent readable mappings."""
        out = []
        while n:
            m = self.mem.find(addr)
            k = min(n, m.end - addr)
            out.append(self.mem.view(addr, k).tobytes())
            addr, n = addr + k, n - k
        return b"".join(out)

    def write(self, addr: int, data: bytes) -> None:
        """Store ``data`` at ``addr``, across adjacent writable mappings."""
        pos = 0
        while pos < len(data):
            m = self.mem.find(addr + pos)
            k = min(len(data) - pos, m.end - addr - pos)
            self.mem.view(addr + pos, k)[:] = np.frombuffer(data[pos : pos + k], dtype=np.uint8)
            pos += k


def unmapped_below_top(pages: int = 16) -> bool:
    """True if /proc/self/maps shows nothing in the last ``pages`` pages of user space."""
    low = USER_PTR_MAX - pages * PAGE
    with open("/proc/self/maps") as f:
        for line in f:
            start, end = (int(x, 16) for x in line.split()[0].split("-"))
            if start < USER_PTR_MAX and end > low:
                return False
    return True


def null_page_unmapped() -> bool:
    """True if nothing is mapped in the first page (it never can be on x86-64 Linux)."""
    with open("/proc/self/maps") as f:
        return all(int(line.split("-")[0], 16) >= PAGE for line in f)


# ---- generating cases ----------------------------------------------------------------------

NON_USER = (
    USER_PTR_MAX + 1,
    USER_PTR_MAX + PAGE,
    0x800000000000,
    0xFFFF800000000000,
    0xFFFFFFFFFF600000,
    2**63,
    2**64 - 1,
    2**64 - PAGE,
)
HUGE_INVALID = (2**63, 2**63 + 1, 2**64 - 1, 2**64 - PAGE, 2**63 + MAX_RW_COUNT)


class Generator:
    """Seeded random iovec arrays over arenas (see the module docstring)."""

    def __init__(self, rng: np.random.Generator, *, top_free: bool, null_free: bool) -> None:
        self.rng = rng
        self.top_free = top_free
        self.null_free = null_free

    def _int(self, lo: int, hi: int) -> int:
        """Uniform in [lo, hi)."""
        return int(self.rng.integers(lo, hi))

    def _pick(self, seq: Sequence):
        return seq[self._int(0, len(seq))]

    def prots(self, pages: int) -> list[int]:
        """A protection per page: mostly read-write, with holes and read-only pages."""
        return [
            self._pick((PROT_RW,) * 6 + (PROT_NONE, PROT_NONE, PROT_READ, PROT_READ))
            for _ in range(pages)
        ]

    def length(self, small: bool, room: int) -> int:
        r = self.rng.random()
        if r < 0.12:
            return 0
        if small or r < 0.45:
            return self._int(1, 300)
        if r < 0.75:
            return self._int(1, PAGE + 1)
        return self._int(1, max(room, 2))

    def segment(self, arena: Arena, small: bool, hostile: bool) -> tuple[int, int]:
        """One (address, length); only a hostile case draws the error-prone kinds."""
        r = self.rng.random()
        if not hostile:
            r *= 0.73  # the first three kinds only
        if r < 0.50:  # anywhere in the arena, guards included
            start = self._int(arena.start - 64, arena.end + 64)
            return start, self.length(small, arena.end + PAGE - start)
        if r < 0.68:  # around a change of protection
            start = self._pick(arena.edges) + self._int(-300, 300)
            return start, self.length(small, arena.end + PAGE - start)
        if r < 0.73:  # the NULL page
            if not self.null_free:
                return 0, 0
            return self._int(0, 64), self._pick((0, 0, 1, self._int(1, 100)))
        if r < 0.79:  # empty, at any address at all
            return self._pick(
                (
                    *NON_USER,
                    USER_PTR_MAX,
                    USER_PTR_MAX - 1,
                    0,
                    self._int(0, 2**63) * 2 + self._int(0, 2),
                )
            ), 0
        if r < 0.83:  # outside user space
            return self._pick(NON_USER) - self._int(0, 2), self._int(1, 100)
        if r < 0.88:  # at the top of user space
            if not self.top_free:
                return arena.start, 0
            back = self._int(0, 3 * PAGE)
            return USER_PTR_MAX - back, self._pick((back, back + 1, self._int(0, 2 * PAGE), 0))
        if r < 0.94:  # huge lengths
            start = self._int(arena.start - 64, arena.end)
            return start, self._pick(
                (
                    *HUGE_INVALID,
                    SSIZE_MAX,
                    MAX_RW_COUNT,
                    MAX_RW_COUNT + 1,
                    MAX_RW_COUNT - 1,
                    MAX_RW_COUNT + self._int(1, PAGE),
                    2**31,
                    2**32,
                    2**40,
                    2**46,
                    USER_PTR_MAX - start,
                    USER_PTR_MAX - start + 1,
                    USER_PTR_MAX - start + self._int(0, 2 * MAX_RW_COUNT),
                )
            )
        return self._int(arena.start, arena.end), 0  # empty, inside the arena

    def nr_segs(self, hostile: bool) -> int:
        r = self.rng.random()
        if not hostile:
            r *= 0.92  # at most 1023 segments
        if r < 0.04:
            return 0
        if r < 0.26:
            return 1
        if r < 0.62:
            return self._int(2, 9)
        if r < 0.84:
            return self._int(9, 41)
        if r < 0.92:
            return self._int(41, 1024)
        if r < 0.96:
            return 1024
        return self._pick((1025, 1026, 1100, 2048))

    def iovecs(self, arena: Arena, hostile: bool | None = None) -> list[tuple[int, int]]:
        """An iovec array: in half the cases (unless ``hostile`` says) only arena
        segments and the NULL page, which fault but pass the import."""
        if hostile is None:
            hostile = self.rng.random() < 0.5
        n = self.nr_segs(hostile)
        small = n > 40
        return [self.segment(arena, small, hostile) for _ in range(n)]
