"""Differential testing of labkit against the running kernel, over the same real memory.

Each case is a seeded random iovec array (or two, for process_vm_readv/writev)
over *arenas*: runs of real pages mapped by a :class:`labkit.UserMemory` with
per-page protections (read-write, read-only, PROT_NONE holes), between two
PROT_NONE guard pages.  The same array is given

- to the running kernel, through the real system call (ctypes, libc): readv /
  preadv2 from a memfd and from an ext4 file, writev / pwritev2 to a memfd,
  process_vm_readv / process_vm_writev on this process, vmsplice; and
- to labkit: ``import_iovec`` and ``copy_to_iter`` / ``copy_from_iter``, in
  a few lines per call that say what the kernel's system call does around
  its iterator (:func:`model_read`, :func:`model_write`, :func:`model_vm_rw`,
  :func:`model_vmsplice`).

Both run on the same addresses, one after the other, from the same starting
bytes; the return value (or errno) and every readable byte of the memory
written (the destination arena, or the whole file) are compared.

Segments only ever point into an arena (a copy that runs off its end hits a
guard page, so the kernel can never write outside memory this module owns),
at the NULL page, at the top of user space (used only when /proc/self/maps
shows nothing mapped there), or outside user space; empty segments may
point anywhere.

Why the comparisons are exact (byte for byte, errno for errno) for the calls
tested, on x86-64 (checked by experiment on 6.18):

- readv/preadv2 from a memfd (shmem_file_read_iter) or an ext4 file
  (filemap_read) copy folio by folio with copy_folio_to_iter(); a fault stops
  the copy at the faulting byte (x86's copy_to_user is exact: rep movsb, or
  a byte-wise tail after a fault), the call returns the bytes done, or
  EFAULT if none.  labkit: copy the file's bytes from the offset into the
  iterator; 0 copied of a non-zero request is EFAULT.
- writev/pwritev2 to a memfd (generic_perform_write) fault in each chunk of
  the source before an atomic copy; a partial fault-in copies the prefix,
  shmem_write_end accepts a short copy, and the next chunk's fault-in fails:
  the count is exact.  labkit: copy out of the iterator until it stops.
- process_vm_readv/writev pin the remote pages page by page
  (pin_user_pages_remote; PROT_NONE or, for writing, read-only pages fail)
  and copy each with copy_page_to_iter/copy_page_from_iter; a local fault
  with bytes still wanted, or a remote page that cannot be pinned, ends the
  call with the bytes done (EFAULT if none).  The remote array is only
  checked for lengths and count (iovec_from_user), never with access_ok(),
  and not at all when the local iterator is empty.  The arenas' mappings
  are whole pages, so "pages that can be pinned" and "bytes that can be
  reached" are the same.
- vmsplice into an empty pipe pins page by page as well, and puts each
  page's piece of a segment in a pipe buffer of its own, until the pipe is
  full: the count depends on the pipe's size (F_GETPIPE_SZ, read here), which
  the model is given; with it the count is exact.

Not generated: memory that is unmapped under a running call, and totals
above MAX_RW_COUNT actually moved (that needs 2 GiB of memory; the clamp is
still exercised through the lengths it changes, and the 6.3/6.4 difference
in when it is applied).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import fcntl
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

import labkit
from labkit import ITER_DEST, ITER_SOURCE, MAX_RW_COUNT, UIO_MAXIOV
from labkit.core.memory import PROT_NONE, PROT_READ, PROT_RW, USER_PTR_MAX, UserMemory, access_ok

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


# ---- labkit's side: the system calls, written around labkit's iterator -----------------------


def _import(direction: int, pairs: Sequence[tuple[int, int]], mem: UserMemory, kernel: str):
    try:
        return labkit.import_iovec(direction, pairs, mem, kernel=kernel), 0
    except OSError as exc:
        return None, -exc.errno


def _copy_out(it: labkit.IovIter, limit: int, chunk: int = 1 << 16) -> bytes:
    """copy_from_iter up to ``limit`` bytes, a chunk at a time, until the copy stops short."""
    out = []
    while limit:
        want = min(chunk, limit)
        before = it.count
        got = it.copy_from_iter(want)
        assert it.count == before - len(got), "the iterator must advance by the bytes copied"
        out.append(got)
        limit -= len(got)
        if len(got) < want:
            break
    return b"".join(out)


def model_read(
    pairs: Sequence[tuple[int, int]], mem: UserMemory, data: bytes, offset: int, kernel: str = "6.4"
) -> int:
    """readv/preadv2 of a file holding ``data``, read at ``offset``: bytes or -errno.

    vfs_readv: import_iovec (its errno), 0 for an empty iterator, then the
    file's read_iter copies min(count, size - offset) bytes; a fault stops
    it, 0 bytes of a non-empty request is EFAULT.
    """
    it, err = _import(ITER_DEST, pairs, mem, kernel)
    if it is None:
        return err
    if it.count == 0:
        return 0
    chunk = data[offset : offset + it.count]
    if not chunk:
        return 0
    before = it.count
    n = it.copy_to_iter(chunk)
    assert it.count == before - n, "the iterator must advance by the bytes copied"
    return n if n else -errno.EFAULT


def model_write(
    pairs: Sequence[tuple[int, int]],
    mem: UserMemory,
    content: bytearray,
    offset: int,
    kernel: str = "6.4",
) -> int:
    """writev/pwritev2 at ``offset`` of a file holding ``content`` (updated in place).

    vfs_writev: import_iovec, 0 for an empty iterator, then
    generic_perform_write copies out of the iterator until it stops.  Since
    6.11 the source is faulted in only after a copy made no progress, so the
    first chunk's ->write_begin()/->write_end() run even when the very first
    byte faults: write_end(copied = 0) still sets i_size to the offset when
    that is past the end of the file (shmem and ext4 alike), and the call
    then fails with EFAULT.
    """
    it, err = _import(ITER_SOURCE, pairs, mem, kernel)
    if it is None:
        return err
    if it.count == 0:
        return 0
    got = _copy_out(it, it.count)
    if offset > len(content):
        content.extend(bytes(offset - len(content)))
    if not got:
        return -errno.EFAULT
    content[offset : offset + len(got)] = got
    return len(got)


def model_vm_rw(
    write: bool,
    local: Sequence[tuple[int, int]],
    remote: Sequence[tuple[int, int]],
    mem: UserMemory,
    remote_arena: Arena,
    flags: int = 0,
    kernel: str = "6.4",
) -> int:
    """process_vm_readv (write=False) or process_vm_writev on the own process.

    process_vm_rw: flags != 0 is EINVAL; import_iovec of the local array; an
    empty local iterator returns 0 before the remote array is looked at; the
    remote array is checked by iovec_from_user only (count, lengths); no
    remote length > 0 returns 0; then each remote segment is walked a page
    at a time: a page that cannot be pinned (for writing, when writing) ends
    the call, so does a local fault while bytes are still wanted.
    """
    if flags:
        return -errno.EINVAL
    it, err = _import(ITER_SOURCE if write else ITER_DEST, local, mem, kernel)
    if it is None:
        return err
    total = it.count
    if total == 0:
        return 0
    if len(remote) > UIO_MAXIOV or any(n % 2**64 > SSIZE_MAX for _a, n in remote):
        return -errno.EINVAL
    if not any(n for _a, n in remote):
        return 0
    rc = 0
    for addr, n in remote:
        if not it.count:
            break
        if not n:
            continue
        reach = mem.accessible(addr, n, write=write)
        if not reach:
            rc = -errno.EFAULT
            break
        want = min(reach, it.count)
        if write:
            got = _copy_out(it, want)
            remote_arena.write(addr, got)
            moved = len(got)
        else:
            before = it.count
            moved = it.copy_to_iter(remote_arena.read(addr, want))
            assert it.count == before - moved, "the iterator must advance by the bytes copied"
        if moved < want or (reach < n and it.count):
            rc = -errno.EFAULT
            break
    done = total - it.count
    return done if done else rc


def model_vmsplice(
    pairs: Sequence[tuple[int, int]], mem: UserMemory, slots: int, kernel: str = "6.4"
) -> tuple[int, bytes]:
    """vmsplice into an empty pipe of ``slots`` buffers: (bytes or -errno, the bytes).

    vmsplice: import_iovec, 0 for an empty iterator, then iter_to_pipe: pins
    the pages of the current (non-empty) segment (iov_iter_get_pages2, up to
    a hole) and puts each page's piece in its own pipe buffer until the pipe
    is full; a segment whose next page cannot be pinned ends the call (EFAULT
    if nothing was spliced).  So the count is the first ``slots`` page pieces
    up to the first unreachable page.  labkit: walk the iterator a page piece
    at a time (the arenas' pages are all-or-nothing), copying each out.
    """
    it, err = _import(ITER_SOURCE, pairs, mem, kernel)
    if it is None:
        return err, b""
    if it.count == 0:
        return 0, b""
    out = []
    while it.count and slots:
        it.advance(0)  # step over empty segments
        addr, seglen = it.iovec()
        piece = min(seglen, PAGE - addr % PAGE)
        got = _copy_out(it, piece)
        if len(got) < piece:
            assert not got, "a page is reachable in full or not at all"
            break
        out.append(got)
        slots -= 1
    data = b"".join(out)
    return (len(data) if data else -errno.EFAULT), data


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


# ---- running -------------------------------------------------------------------------------


@dataclass
class Difference:
    """One case where labkit and the kernel disagree."""

    kind: str
    case: int
    what: str
    kernel: object
    labkit: object
    detail: str

    def __str__(self) -> str:
        return (
            f"{self.kind} case {self.case}: {self.what}: kernel {self.kernel!r}, "
            f"labkit {self.labkit!r} ({self.detail})"
        )


@dataclass
class Report:
    """What a run compared."""

    seed: int
    cases: dict[str, int] = field(default_factory=dict)
    outcomes: dict[str, int] = field(default_factory=dict)
    differences: list[Difference] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def total(self) -> int:
        return sum(self.cases.values())

    def count(self, outcome: str) -> None:
        self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1

    def summary(self) -> str:
        kinds = ", ".join(f"{k} {v}" for k, v in self.cases.items())
        outs = ", ".join(f"{k} {v}" for k, v in sorted(self.outcomes.items()))
        skip = "".join(f"\n  skipped {k}: {v}" for k, v in self.skipped.items())
        return (
            f"{self.total} cases (seed {self.seed}; {kinds}) in {self.seconds:.1f} s: "
            f"{len(self.differences)} differences\n  outcomes: {outs}{skip}"
        )


def _outcome(ret: int, wanted: int) -> str:
    """EFAULT, EINVAL, ...; "0 bytes"; "all bytes" asked for; or "short" (a fault mid-way)."""
    if ret < 0:
        return errno.errorcode.get(-ret, str(-ret))
    if ret == 0:
        return "0 bytes"
    return "all bytes" if ret >= wanted else "short"


def _count(direction: int, pairs: Sequence[tuple[int, int]], mem: UserMemory) -> int:
    """The imported iterator's count (0 if the import fails)."""
    it, _err = _import(direction, pairs, mem, "6.4")
    return it.count if it is not None else 0


def _describe(pairs: Sequence[tuple[int, int]], arena: Arena) -> str:
    def one(a: int, n: int) -> str:
        if arena.start - PAGE <= a <= arena.end + PAGE:
            return f"(A{a - arena.start:+#x}, {n:#x})"
        return f"({a:#x}, {n:#x})"

    shown = ", ".join(one(a, n) for a, n in pairs[:12])
    more = f", ... {len(pairs)} in all" if len(pairs) > 12 else ""
    return f"[{shown}{more}] over pages {arena.prots}"


def _era63_expected(pairs: Sequence[tuple[int, int]], ret64: int) -> int:
    """What 6.3 returns where the 6.4 kernel returned ret64: the same, except that one
    segment longer than MAX_RW_COUNT is checked whole (6.4 clamps it first)."""
    if len(pairs) == 1:
        addr, n = pairs[0][0] % 2**64, pairs[0][1] % 2**64
        if n <= SSIZE_MAX and not access_ok(addr, n) and access_ok(addr, min(n, MAX_RW_COUNT)):
            return -errno.EFAULT
    return ret64


class Runner:
    """Runs cases of every kind over one set of arenas (rebuilt every ``batch`` cases)."""

    FILE_SIZE = 5 * PAGE + 123
    ARENA_PAGES = (4, 16)
    BATCH = 40

    def __init__(self, seed: int, workdir: str) -> None:
        self.rng = np.random.default_rng(seed)
        self.report = Report(seed)
        self.gen = Generator(
            self.rng, top_free=unmapped_below_top(), null_free=null_page_unmapped()
        )
        self.mem = UserMemory()
        self.pattern = self.rng.integers(1, 256, self.FILE_SIZE, dtype=np.uint8).tobytes()
        self.memfd = os.memfd_create("labkit-diff")
        os.write(self.memfd, self.pattern)
        self.path = os.path.join(workdir, "labkit-diff-pattern")
        self.filefd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        os.write(self.filefd, self.pattern)
        self.wfd = os.memfd_create("labkit-diff-write")
        self.pipe_r, self.pipe_w = os.pipe2(os.O_NONBLOCK)
        self.pipe_slots = fcntl.fcntl(self.pipe_w, F_GETPIPE_SZ) // PAGE
        self._arenas: tuple[Arena, Arena] | None = None
        self._left = 0

    def close(self) -> None:
        for fd in (self.memfd, self.filefd, self.wfd, self.pipe_r, self.pipe_w):
            os.close(fd)
        os.unlink(self.path)

    def arenas(self) -> tuple[Arena, Arena]:
        if self._left == 0:
            lo, hi = self.ARENA_PAGES
            old = self._arenas
            self._arenas = tuple(
                Arena(self.mem, self.gen.prots(self.gen._int(lo, hi + 1))) for _ in range(2)
            )
            if old:
                for arena in old:
                    for m in arena.maps:
                        self.mem.unmap(m)
            self._left = self.BATCH
        self._left -= 1
        return self._arenas

    def _fill(self, arena: Arena) -> bytes:
        data = self.rng.integers(0, 256, arena.size, dtype=np.uint8).tobytes()
        arena.fill(data)
        return data

    def _compare(
        self,
        kind: str,
        case: int,
        detail: str,
        kret: int,
        lret: int,
        kbytes: bytes,
        lbytes: bytes,
        wanted: int,
    ) -> None:
        self.report.cases[kind] = self.report.cases.get(kind, 0) + 1
        self.report.count(_outcome(kret, wanted))
        if kret != lret:
            self.report.differences.append(Difference(kind, case, "return", kret, lret, detail))
        elif kbytes != lbytes:
            first = (
                next(k for k in range(min(len(kbytes), len(lbytes))) if kbytes[k] != lbytes[k])
                if len(kbytes) == len(lbytes)
                else -1
            )
            self.report.differences.append(
                Difference(
                    kind,
                    case,
                    "bytes",
                    f"{len(kbytes)} bytes",
                    f"{len(lbytes)} bytes",
                    f"first difference at byte {first}; {detail}",
                )
            )

    def read_case(self, case: int, fd: int, kind: str) -> None:
        dest, _ = self.arenas()
        pairs = self.gen.iovecs(dest)
        offset = self.gen._int(0, self.FILE_SIZE + 64)
        positional = self.rng.random() < 0.5
        detail = f"offset {offset}, {'readv' if positional else 'preadv2'} {_describe(pairs, dest)}"
        fill = self._fill(dest)
        if positional:
            os.lseek(fd, offset, os.SEEK_SET)
        kret = sys_readv(fd, pairs, None if positional else offset)
        kbytes = dest.snapshot()
        dest.fill(fill)
        lret = model_read(pairs, dest.mem, self.pattern, offset)
        wanted = min(_count(ITER_DEST, pairs, dest.mem), max(self.FILE_SIZE - offset, 0))
        self._compare(kind, case, detail, kret, lret, kbytes, dest.snapshot(), wanted)
        dest.fill(fill)
        l63 = model_read(pairs, dest.mem, self.pattern, offset, kernel="6.3")
        want63 = _era63_expected(pairs, kret)
        self._compare63(
            kind, case, detail, want63, l63, kbytes if want63 == kret else None, dest.snapshot()
        )

    def _compare63(
        self,
        kind: str,
        case: int,
        detail: str,
        want: int,
        got: int,
        kbytes: bytes | None,
        lbytes: bytes,
    ) -> None:
        if want != got:
            self.report.differences.append(
                Difference(kind + " (6.3)", case, "return", want, got, detail)
            )
        elif kbytes is not None and kbytes != lbytes:
            self.report.differences.append(
                Difference(kind + " (6.3)", case, "bytes", "", "", detail)
            )

    def write_case(self, case: int) -> None:
        src, _ = self.arenas()
        pairs = self.gen.iovecs(src)
        initial = self.pattern[: self.gen._int(0, self.FILE_SIZE)]
        offset = self.gen._int(0, len(initial) + 64)
        positional = self.rng.random() < 0.5
        detail = (
            f"file of {len(initial)} bytes, offset {offset}, "
            f"{'writev' if positional else 'pwritev2'} {_describe(pairs, src)}"
        )
        self._fill(src)
        os.ftruncate(self.wfd, 0)
        os.pwrite(self.wfd, initial, 0)
        if positional:
            os.lseek(self.wfd, offset, os.SEEK_SET)
        kret = sys_writev(self.wfd, pairs, None if positional else offset)
        size = os.fstat(self.wfd).st_size
        kfile = os.pread(self.wfd, size, 0)
        content = bytearray(initial)
        lret = model_write(pairs, src.mem, content, offset)
        self._compare(
            "pwritev2 memfd",
            case,
            detail,
            kret,
            lret,
            kfile,
            bytes(content),
            _count(ITER_SOURCE, pairs, src.mem),
        )
        c63 = bytearray(initial)
        l63 = model_write(pairs, src.mem, c63, offset, kernel="6.3")
        want63 = _era63_expected(pairs, kret)
        self._compare63(
            "pwritev2 memfd",
            case,
            detail,
            want63,
            l63,
            kfile if want63 == kret else None,
            bytes(c63),
        )

    def vm_case(self, case: int, write: bool) -> None:
        local, remote = self.arenas()
        lpairs, rpairs = self.gen.iovecs(local), self.gen.iovecs(remote)
        flags = 1 if self.rng.random() < 0.01 else 0
        kind = "process_vm_writev" if write else "process_vm_readv"
        detail = (
            f"local {_describe(lpairs, local)}, remote {_describe(rpairs, remote)}, flags {flags}"
        )
        dest = remote if write else local
        self._fill(local if write else remote)
        fill = self._fill(dest)
        kret = sys_vm_rw(write, lpairs, rpairs, flags)
        kbytes = dest.snapshot()
        dest.fill(fill)
        lret = model_vm_rw(write, lpairs, rpairs, self.mem, remote, flags)
        wanted = min(
            _count(ITER_SOURCE if write else ITER_DEST, lpairs, self.mem),
            sum(n % 2**64 for _a, n in rpairs),
        )
        self._compare(kind, case, detail, kret, lret, kbytes, dest.snapshot(), wanted)
        dest.fill(fill)
        l63 = model_vm_rw(write, lpairs, rpairs, self.mem, remote, flags, kernel="6.3")
        want63 = kret if flags else _era63_expected(lpairs, kret)  # flags: EINVAL first
        self._compare63(
            kind, case, detail, want63, l63, kbytes if want63 == kret else None, dest.snapshot()
        )

    def vmsplice_case(self, case: int) -> None:
        src, _ = self.arenas()
        pairs = self.gen.iovecs(src)
        detail = f"{self.pipe_slots}-buffer pipe, {_describe(pairs, src)}"
        self._fill(src)
        kret = sys_vmsplice(self.pipe_w, pairs)
        kdata = b""
        while len(kdata) < kret:
            kdata += os.read(self.pipe_r, kret - len(kdata))
        lret, ldata = model_vmsplice(pairs, src.mem, self.pipe_slots)
        wanted = _count(ITER_SOURCE, pairs, src.mem)
        self._compare("vmsplice", case, detail, kret, lret, kdata, ldata, wanted)
        l63, d63 = model_vmsplice(pairs, src.mem, self.pipe_slots, kernel="6.3")
        want63 = _era63_expected(pairs, kret)
        self._compare63(
            "vmsplice", case, detail, want63, l63, kdata if want63 == kret else None, d63
        )

    def run(self, cases: int, kinds: Sequence[str]) -> Report:
        t0 = time.perf_counter()
        steps = {
            "preadv2 memfd": lambda k: self.read_case(k, self.memfd, "preadv2 memfd"),
            "preadv2 ext4 file": lambda k: self.read_case(k, self.filefd, "preadv2 ext4 file"),
            "pwritev2 memfd": self.write_case,
            "process_vm_readv": lambda k: self.vm_case(k, False),
            "process_vm_writev": lambda k: self.vm_case(k, True),
            "vmsplice": self.vmsplice_case,
        }
        for k in range(cases):
            steps[kinds[k % len(kinds)]](k)
        self.report.seconds += time.perf_counter() - t0
        return self.report


KINDS = (
    "preadv2 memfd",
    "preadv2 ext4 file",
    "pwritev2 memfd",
    "process_vm_readv",
    "process_vm_writev",
    "vmsplice",
)


def probe_refusals(mem: UserMemory) -> dict[str, str]:
    """Kinds the sandbox refuses (EPERM/ENOSYS on a harmless call), with the reason."""
    m = mem.map(PAGE)
    out = {}
    for kind, write in (("process_vm_readv", False), ("process_vm_writev", True)):
        why = refusal(lambda w=write: sys_vm_rw(w, [(m.addr, 8)], [(m.addr + 64, 8)]))
        if why:
            out[kind] = why
    r, w = os.pipe2(os.O_NONBLOCK)
    why = refusal(lambda: sys_vmsplice(w, [(m.addr, 8)]))
    os.close(r)
    os.close(w)
    if why:
        out["vmsplice"] = why
    fd = os.memfd_create("labkit-probe")
    try:
        for kind, call in (
            ("preadv2 memfd", lambda: sys_readv(fd, [(m.addr, 8)], 0)),
            ("pwritev2 memfd", lambda: sys_writev(fd, [(m.addr, 8)], 0)),
        ):
            why = refusal(call)
            if why:
                out[kind] = why
    finally:
        os.close(fd)
    if "preadv2 memfd" in out:
        out["preadv2 ext4 file"] = out["preadv2 memfd"]
    mem.unmap(m)
    return out


def run(cases: int, seed: int, workdir: str, kinds: Sequence[str] = KINDS) -> Report:
    """Run ``cases`` cases, spread over ``kinds`` minus those the sandbox refuses."""
    runner = Runner(seed, workdir)
    try:
        refused = probe_refusals(runner.mem)
        runnable = [k for k in kinds if k not in refused]
        runner.report.skipped = {k: v for k, v in refused.items() if k in kinds}
        if runnable:
            runner.run(cases, runnable)
        return runner.report
    finally:
        runner.close()
