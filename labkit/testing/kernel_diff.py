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
  its iterator (:mod:`labkit.testing.kernel_model`; the real calls, the
  arenas and the case generator are in :mod:`labkit.testing.kernel_calls`).

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

import errno
import fcntl
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from labkit import ITER_DEST, ITER_SOURCE, MAX_RW_COUNT
from labkit.core.memory import UserMemory, access_ok
from labkit.testing.kernel_calls import (
    F_GETPIPE_SZ,
    PAGE,
    SSIZE_MAX,
    Arena,
    Generator,
    null_page_unmapped,
    refusal,
    sys_readv,
    sys_vm_rw,
    sys_vmsplice,
    sys_writev,
    unmapped_below_top,
)
from labkit.testing.kernel_model import (
    model_read,
    model_vm_rw,
    model_vmsplice,
    model_write,
    try_import,
)

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
    it, _err = try_import(direction, pairs, mem, "6.4")
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
