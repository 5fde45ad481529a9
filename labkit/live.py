"""Live kernel experiments: read-family system calls and io_uring, timed in C.

The model in the rest of labkit answers *why*; this module asks the running
kernel *what it does today*.  Everything timed here runs in C
(``labkit/csrc/live_sys.c`` and ``live_uring.c``), through raw system calls
(no liburing): Python calls one batch and receives nanoseconds per operation,
so the harness (``labkit.bench.run``) can interleave variants.

Three parts:

- **System call loops** on a file descriptor: ``read``, ``readv`` with one
  segment (``ITER_UBUF`` since Linux 6.4), ``readv`` with the buffer plus an
  empty second segment (the same bytes through ``ITER_IOVEC``; it copies one
  more iovec, so it slightly overstates the UBUF gain), ``readv`` with two
  halves, and ``preadv2``.  See :func:`syscall_ns` and :func:`syscall_variants`.
- **io_uring** through :class:`Ring`: ring setup and mapping, a registered
  buffer (up to 1 GiB) and registered files, READ / READV / READ_FIXED at
  queue depth 1 (:meth:`Ring.roundtrip_ns`) and a batched peak loop in the
  spirit of fio's ``t/io_uring`` (:meth:`Ring.peak`).  Every wait is bounded
  by the ring's timeout: a request that never completes is ``OSError(ETIME)``,
  never a hang.
- **Probe and correctness**: :func:`probe` says whether io_uring is usable
  here and why not; :class:`PatternFile` is a tmpfs file with a known byte
  pattern so reads can be verified byte for byte.

For the fixed-buffer notebook, :func:`read_fixed_roundtrip_ns` is the live
cost F of one READ_FIXED round trip, and :func:`read_syscall_ns` a plain
``read()`` to fall back on where io_uring is unavailable.
"""

from __future__ import annotations

import errno
import os
import platform
import statistics
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from labkit._ffi import ffi, lib
from labkit.config import quick_mode

PAGE_SIZE = 4096
DEFAULT_LENGTH = 4096
#: The kernel refuses registered buffers above this size (EFAULT).
MAX_REGISTERED_BUFFER = 1 << 30

#: System call variants, in the order they are usually shown.
SYSCALL_VARIANTS: tuple[str, ...] = ("read", "readv1", "readv_empty", "readv_split", "preadv2")
_SYSCALL_FUNCS: dict[str, Callable[..., float]] = {
    "read": lib.lk_time_read,
    "readv1": lib.lk_time_readv1,
    "readv_empty": lib.lk_time_readv_empty,
    "readv_split": lib.lk_time_readv_split,
    "preadv2": lib.lk_time_preadv2,
}
_SYSCALL_IDS: dict[str, int] = {
    "read": lib.LK_SYS_READ,
    "readv1": lib.LK_SYS_READV1,
    "readv_empty": lib.LK_SYS_READV_EMPTY,
    "readv_split": lib.LK_SYS_READV_SPLIT,
    "preadv2": lib.LK_SYS_PREADV2,
}

#: io_uring operations labkit submits.
URING_OPS: tuple[str, ...] = ("read", "readv1", "readv_empty", "readv_split", "read_fixed")
_URING_IDS: dict[str, int] = {
    "read": lib.LK_UOP_READ,
    "readv1": lib.LK_UOP_READV1,
    "readv_empty": lib.LK_UOP_READV_EMPTY,
    "readv_split": lib.LK_UOP_READV_SPLIT,
    "read_fixed": lib.LK_UOP_READ_FIXED,
}

#: Human-readable names for plots and tables.
LABELS: dict[str, str] = {
    "read": "read",
    "readv1": "readv(1 x 4K)",
    "readv_empty": "readv(4K + empty)",
    "readv_split": "readv(2 x 2K)",
    "preadv2": "preadv2(1 x 4K)",
    "read_fixed": "READ_FIXED",
}


def _raise(err: int, what: str) -> None:
    """Raise OSError for a positive errno."""
    raise OSError(err, f"{os.strerror(err)}: {what}")


def _check(ret: float, what: str) -> float:
    """Return ``ret`` unless it is a negative errno (C convention), else raise OSError."""
    if ret < 0:
        _raise(int(-ret), what)
    return ret


def _positive_int(value: Any, name: str, *, maximum: int | None = None) -> int:
    """An int >= 1 (and <= maximum); bad sizes are OSError(EINVAL) like the kernel's."""
    try:
        n = value.__index__()
    except AttributeError:
        raise TypeError(f"{name} must be an integer, not {type(value).__name__}") from None
    if n < 1 or (maximum is not None and n > maximum):
        limit = f" and <= {maximum}" if maximum is not None else ""
        _raise(errno.EINVAL, f"{name} must be >= 1{limit}, got {n}")
    return n


def _aligned_buffer(size: int) -> tuple[Any, Any]:
    """A zeroed page-aligned buffer of ``size`` bytes: (owner, pointer)."""
    owner = ffi.new("char[]", size + PAGE_SIZE)
    addr = int(ffi.cast("uintptr_t", owner))
    aligned = (addr + PAGE_SIZE - 1) & ~(PAGE_SIZE - 1)
    return owner, ffi.cast("char *", aligned)


# --------------------------------------------------------------------------- clock

#: Clocks the live loops can read: "wall" (lk_clock_ns, CLOCK_MONOTONIC_RAW, the
#: default) or "cpu" (the calling thread's CPU time, CLOCK_THREAD_CPUTIME_ID).
CLOCKS: dict[str, int] = {"wall": lib.LK_LIVE_CLOCK_WALL, "cpu": lib.LK_LIVE_CLOCK_THREAD_CPU}


def get_clock() -> str:
    """The clock the live loops read now: "wall" or "cpu"."""
    value = lib.lk_live_get_clock()
    return next(name for name, v in CLOCKS.items() if v == value)


def set_clock(name: str) -> str:
    """Choose the clock of the live loops; returns the previous one.

    "cpu" counts only the CPU time of the calling thread (user + system), so
    time spent preempted by other work on a shared machine drops out.  It is
    right for work done in the calling thread: system calls, and io_uring
    requests that complete inline (/dev/zero).  It is wrong for requests
    handed to io-wq workers (their time is in other threads): use "wall" there.
    """
    if name not in CLOCKS:
        raise ValueError(f"clock must be one of {tuple(CLOCKS)}, got {name!r}")
    old = lib.lk_live_set_clock(CLOCKS[name])
    _check(old, f"set clock {name}")
    return next(k for k, v in CLOCKS.items() if v == old)


@contextmanager
def clock(name: str) -> Iterator[str]:
    """Use clock ``name`` for the live loops inside a ``with`` block."""
    old = set_clock(name)
    try:
        yield name
    finally:
        set_clock(old)


# --------------------------------------------------------------------------- environment


def kernel_release() -> str:
    """The running kernel's release string (``uname -r``)."""
    return platform.release()


def _mount_fstype(path: Path) -> str | None:
    """The file system type of the mount holding ``path`` (from /proc/self/mounts)."""
    try:
        lines = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return None
    best, fstype = "", None
    target = str(path.resolve())
    for line in lines:
        parts = line.split()
        if len(parts) < 3:
            continue
        mnt = parts[1]
        inside = target == mnt or target.startswith(mnt.rstrip("/") + "/")
        if inside and len(mnt) >= len(best):
            best, fstype = mnt, parts[2]
    return fstype


def tmpfs_dir() -> Path:
    """A writable directory on tmpfs (``/dev/shm`` normally), else the temp directory.

    Use :func:`is_tmpfs` to know which one you got.
    """
    for cand in (os.environ.get("LABKIT_TMPFS"), "/dev/shm", "/run/shm", tempfile.gettempdir()):
        if not cand:
            continue
        p = Path(cand)
        if p.is_dir() and os.access(p, os.W_OK) and _mount_fstype(p) == "tmpfs":
            return p
    return Path(tempfile.gettempdir())


def is_tmpfs(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` lives on a tmpfs mount."""
    return _mount_fstype(Path(path)) == "tmpfs"


def _io_uring_sysctl() -> int | None:
    try:
        return int(Path("/proc/sys/kernel/io_uring_disabled").read_text().strip())
    except (OSError, ValueError):
        return None


def probe() -> dict[str, Any]:
    """Can this process use io_uring here, and if not, why not.

    Returns a dict with ``available`` (bool), ``reason`` (a sentence),
    ``kernel`` (release), ``setup_errno`` (0 when io_uring_setup worked),
    ``io_uring_disabled`` (the sysctl, or None), ``features`` (IORING_FEAT_*
    bits), ``ext_arg`` (bounded waits in the kernel), ``ops`` (READ, READV,
    READ_FIXED supported) and ``tmpfs`` (the tmpfs directory used).
    Setting ``LABKIT_LIVE_URING=0`` reports io_uring as unavailable (to try the
    notebooks' skip paths).
    """
    info: dict[str, Any] = {
        "available": False,
        "reason": "",
        "kernel": kernel_release(),
        "setup_errno": None,
        "io_uring_disabled": _io_uring_sysctl(),
        "features": 0,
        "ext_arg": False,
        "ops": {},
        "tmpfs": str(tmpfs_dir()),
    }
    if os.environ.get("LABKIT_LIVE_URING", "") == "0":
        info["reason"] = "io_uring experiments switched off (LABKIT_LIVE_URING=0)"
        return info
    p = ffi.new("struct lk_uring_probe *")
    lib.lk_uring_probe(p)
    info["setup_errno"] = p.setup_errno
    info["features"] = p.features
    info["ext_arg"] = bool(p.ext_arg)
    info["ops"] = {"READ": p.op_read == 1, "READV": p.op_readv == 1,
                   "READ_FIXED": p.op_read_fixed == 1}
    if not p.have_header:
        info["reason"] = ("labkit was built without <linux/io_uring.h>: "
                          "io_uring support not compiled")
        return info
    e = p.setup_errno
    if e:
        sysctl = info["io_uring_disabled"]
        if e == errno.ENOSYS:
            why = "the kernel has no io_uring (built without it, or older than 5.1)"
        elif e == errno.EPERM and sysctl == 2:
            why = "io_uring is disabled on this machine (kernel.io_uring_disabled=2)"
        elif e == errno.EPERM and sysctl == 1:
            why = ("io_uring is restricted (kernel.io_uring_disabled=1) and this process "
                   "is not privileged or in kernel.io_uring_group")
        elif e == errno.EPERM:
            why = "io_uring_setup was refused (EPERM): a sandbox or seccomp filter blocks it"
        else:
            why = f"io_uring_setup failed: {os.strerror(e)}"
        info["reason"] = why
        return info
    missing = [name for name, ok in info["ops"].items() if not ok]
    if missing:
        info["reason"] = f"io_uring works but lacks {', '.join(missing)} (kernel too old)"
        return info
    info["available"] = True
    info["reason"] = ("io_uring_setup succeeded; READ, READV and READ_FIXED are supported"
                      + ("" if info["ext_arg"] else "; waits are polled (no IORING_FEAT_EXT_ARG)"))
    return info


# --------------------------------------------------------------------------- data sources


def pattern_bytes(offset: int, n: int) -> bytes:
    """The byte pattern of a :class:`PatternFile` at file offsets ``[offset, offset + n)``.

    Each byte is a hash of its own file offset, so a read that lands at the
    wrong offset (even by one byte, or by a whole page) does not match.
    """
    if offset < 0 or n < 0:
        raise ValueError("offset and n must be >= 0")
    idx = np.arange(offset, offset + n, dtype=np.uint64)
    mixed = (idx * np.uint64(2654435761) + (idx >> np.uint64(12)) * np.uint64(40503))
    return ((mixed >> np.uint64(7)) & np.uint64(0xFF)).astype(np.uint8).tobytes()


class PatternFile:
    """A file of ``size`` bytes with :func:`pattern_bytes` content, opened read-only.

    Created in :func:`tmpfs_dir` (memory-backed, so reads never wait for a
    disk) unless ``directory`` is given; removed on :meth:`close`.  Use as a
    context manager.
    """

    def __init__(self, size: int = 64 * 1024, directory: str | os.PathLike[str] | None = None):
        size = _positive_int(size, "size")
        d = Path(directory) if directory is not None else tmpfs_dir()
        fd, name = tempfile.mkstemp(prefix="labkit-pattern-", dir=d)
        try:
            chunk = 1 << 20
            for start in range(0, size, chunk):
                os.write(fd, pattern_bytes(start, min(chunk, size - start)))
        finally:
            os.close(fd)
        self.path = Path(name)
        self.size = size
        self.fd: int = os.open(name, os.O_RDONLY)

    def expected(self, offset: int, n: int) -> bytes:
        """The bytes a read of ``n`` at ``offset`` must return."""
        return pattern_bytes(offset, n)

    def close(self) -> None:
        """Close the descriptor and remove the file (idempotent)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
            self.path.unlink(missing_ok=True)

    def __enter__(self) -> PatternFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


def open_zero() -> int:
    """A read-only descriptor on ``/dev/zero`` (caller closes it)."""
    return os.open("/dev/zero", os.O_RDONLY)


# --------------------------------------------------------------------------- system calls


def _syscall_variant(name: str) -> str:
    if name not in _SYSCALL_FUNCS:
        raise ValueError(f"unknown system call variant {name!r}; choose from {SYSCALL_VARIANTS}")
    return name


def syscall_ns(variant: str, fd: int, *, length: int = DEFAULT_LENGTH, iters: int = 100_000,
               offset: int = -1) -> float:
    """One batch of ``iters`` calls of a read variant on ``fd``: nanoseconds per call.

    ``variant`` is one of :data:`SYSCALL_VARIANTS`.  ``offset`` -1 reads at the
    file position (``read``/``readv``; right for ``/dev/zero``); ``offset >= 0``
    reads at that offset every time (``pread64``/``preadv``; right for a small
    regular file).  A failed or short call raises OSError (EIO for short).
    """
    fn = _SYSCALL_FUNCS[_syscall_variant(variant)]
    length = _positive_int(length, "length", maximum=lib.LK_MAX_RW_COUNT)
    iters = _positive_int(iters, "iters")
    if offset < -1:
        _raise(errno.EINVAL, f"offset must be >= -1, got {offset}")
    owner, buf = _aligned_buffer(length)
    ns = _check(fn(fd, buf, length, offset, iters), f"{variant} on fd {fd}")
    del owner
    return ns


def syscall_read(variant: str, fd: int, length: int = DEFAULT_LENGTH, offset: int = -1) -> bytes:
    """One untimed call of a read variant: the bytes it read (for correctness checks)."""
    vid = _SYSCALL_IDS[_syscall_variant(variant)]
    length = _positive_int(length, "length", maximum=lib.LK_MAX_RW_COUNT)
    owner, buf = _aligned_buffer(length)
    n = int(_check(lib.lk_sys_read_once(vid, fd, buf, length, offset), f"{variant} on fd {fd}"))
    data = bytes(ffi.buffer(buf, n))
    del owner
    return data


def syscall_variants(fd: int, *, length: int = DEFAULT_LENGTH, iters: int = 100_000,
                     offset: int = -1, names: Iterable[str] = SYSCALL_VARIANTS,
                     ) -> dict[str, Callable[[], float]]:
    """Zero-argument callables, one per variant, each timing one batch (for ``bench.run``).

    The variants share one page-aligned buffer, kept alive by the callables.
    """
    length = _positive_int(length, "length", maximum=lib.LK_MAX_RW_COUNT)
    iters = _positive_int(iters, "iters")
    owner, buf = _aligned_buffer(length)

    return {name: _bind(_SYSCALL_FUNCS[_syscall_variant(name)], fd, buf, owner, length, offset,
                        iters, name) for name in names}


def _bind(fn: Callable[..., float], fd: int, buf: Any, owner: Any, length: int, offset: int,
          iters: int, name: str) -> Callable[[], float]:
    def run() -> float:
        _ = owner  # the closure keeps the buffer alive
        return _check(fn(fd, buf, length, offset, iters), f"{name} on fd {fd}")

    run.__name__ = f"syscall_{name}"
    return run


# --------------------------------------------------------------------------- io_uring


@dataclass(frozen=True)
class PeakResult:
    """One batch of the peak loop."""

    ns_per_io: float      #: wall time per completed IO
    cpu_ns_per_io: float  #: process CPU time per IO (all threads, io-wq workers included)
    iops: float           #: completed IOs per second of wall time
    iops_per_core: float  #: completed IOs per second of CPU time
    ios_per_enter: float  #: IOs per io_uring_enter call
    ios: int
    enters: int
    waits: int            #: enter calls made only to wait

    def as_dict(self) -> dict[str, float | int]:
        """The fields as a plain dict (a table row)."""
        return asdict(self)


class Ring:
    """An io_uring instance set up through raw system calls.

    ``entries`` SQ entries (the kernel rounds up to a power of two), ``scratch``
    bytes of page-aligned memory for READ/READV to read into, and ``timeout``
    seconds bounding every wait.  ``register_ring_fd`` registers the ring's
    own descriptor (as fio's ``t/io_uring`` does) to save a file lookup per
    enter.  Use as a context manager; after :meth:`close` every method raises
    ``OSError(EBADF)``.

    A request that does not complete within the timeout raises
    ``OSError(ETIME)``; while it stays in flight, further operations raise
    ``OSError(EBUSY)`` (closing the ring cancels it).
    """

    def __init__(self, entries: int = 64, *, flags: int = 0, scratch: int = 1 << 20,
                 timeout: float = 1.0, register_ring_fd: bool = False):
        entries = _positive_int(entries, "entries")
        scratch = _positive_int(scratch, "scratch")
        if not timeout > 0:
            _raise(errno.EINVAL, f"timeout must be > 0 seconds, got {timeout}")
        # every C call on the handle holds this lock (cffi releases the GIL): a
        # close() from another thread waits for a running batch instead of
        # unmapping the ring under it, and two threads never share the SQ/CQ
        self._lock = threading.RLock()
        self._ring: Any = None
        err = ffi.new("int *")
        handle = lib.lk_ring_open(entries, flags, scratch, int(timeout * 1e9), err)
        if handle == ffi.NULL:
            _raise(-err[0], f"io_uring ring of {entries} entries")
        self._ring = handle
        if register_ring_fd:
            try:
                _check(lib.lk_ring_register_ring_fd(handle), "registering the ring fd")
            except OSError:
                self.close()
                raise

    # -- lifetime
    def _h(self) -> Any:
        if self._ring is None:
            _raise(errno.EBADF, "the ring is closed")
        return self._ring

    def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(handle, *args)`` under the ring's lock; OSError(EBADF) once closed."""
        with self._lock:
            return fn(self._h(), *args)

    @property
    def closed(self) -> bool:
        """True after :meth:`close`."""
        return self._ring is None

    def close(self) -> None:
        """Unmap and close the ring (idempotent); pending requests are cancelled by the kernel.

        Called from another thread while an operation or batch runs, it waits
        for that batch to end (every wait in it is bounded by the timeout).
        """
        lock = getattr(self, "_lock", None)
        if lock is None:  # __init__ failed before the ring existed
            return
        with lock:
            if self._ring is not None:
                handle, self._ring = self._ring, None
                lib.lk_ring_close(handle)

    def __enter__(self) -> Ring:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    # -- state
    def info(self) -> dict[str, Any]:
        """Ring geometry and state: entries, features, registered buffer and files, in-flight."""
        out = ffi.new("struct lk_ring_info *")
        _check(self._call(lib.lk_ring_get_info, out), "ring info")
        return {k: getattr(out, k) for k in (
            "sq_entries", "cq_entries", "features", "flags", "ext_arg", "registered_ring",
            "scratch_len", "reg_len", "reg_hugepages", "nr_files", "inflight")}

    def set_timeout(self, seconds: float) -> None:
        """Bound every later wait by ``seconds``."""
        if not seconds > 0:
            _raise(errno.EINVAL, f"timeout must be > 0 seconds, got {seconds}")
        _check(self._call(lib.lk_ring_set_timeout, int(seconds * 1e9)), "set timeout")

    # -- registration
    def register_buffer(self, size: int, *, hugepages: bool = False) -> None:
        """Allocate ``size`` bytes of anonymous memory and register it as fixed buffer 0.

        ``hugepages=False`` asks for 4 KiB pages (``MADV_NOHUGEPAGE``), so the
        kernel's table has one bvec per page, as in 2019; ``True`` lets
        transparent huge pages back it (today's kernels then coalesce the
        table into folio-sized bvecs).  The kernel refuses more than 1 GiB
        (``OSError(EFAULT)``); 0 is ``OSError(EINVAL)``.
        """
        size = size.__index__()
        if size < 1:
            _raise(errno.EINVAL, f"buffer size must be >= 1, got {size}")
        _check(self._call(lib.lk_ring_register_buffer, size, int(bool(hugepages))),
               f"registering a {size}-byte buffer")

    def register_files(self, fds: Sequence[int]) -> None:
        """Register descriptors; operations with ``fixed_file=True`` use their index."""
        arr = ffi.new("int[]", list(fds))
        _check(self._call(lib.lk_ring_register_files, arr, len(fds)), "registering files")

    # -- memory the ring reads into
    def _area(self, where: str) -> int:
        if where not in ("scratch", "registered"):
            raise ValueError("where must be 'scratch' or 'registered'")
        return 0 if where == "scratch" else 1

    def fill(self, byte: int, where: str = "registered") -> None:
        """Set every byte of the scratch or registered buffer to ``byte``."""
        _check(self._call(lib.lk_ring_fill, self._area(where), byte & 0xFF), f"fill {where}")

    def memory(self, offset: int, n: int, where: str = "registered") -> bytes:
        """A copy of ``n`` bytes at ``offset`` of the scratch or registered buffer."""
        if offset < 0 or n < 0:
            _raise(errno.EINVAL, "offset and n must be >= 0")
        dst = ffi.new("char[]", max(n, 1))
        _check(self._call(lib.lk_ring_copy_out, self._area(where), offset, dst, n),
               f"{n} bytes at {offset} of the {where} buffer")
        return bytes(ffi.buffer(dst, n))

    # -- operations
    def _uop(self, op: str, fd: int, length: int, offset: int, buf_offset: int,
             fixed_file: bool) -> Any:
        if op not in _URING_IDS:
            raise ValueError(f"unknown io_uring op {op!r}; choose from {URING_OPS}")
        length = _positive_int(length, "length", maximum=lib.LK_MAX_RW_COUNT)
        if offset < -1:
            _raise(errno.EINVAL, f"offset must be >= -1, got {offset}")
        if buf_offset < 0:
            _raise(errno.EFAULT, f"buf_offset must be >= 0, got {buf_offset}")
        return ffi.new("struct lk_uop *", {
            "op": _URING_IDS[op], "fd": fd, "fixed_file": int(bool(fixed_file)),
            "len": length, "buf_off": buf_offset, "off": offset})

    def submit(self, op: str, fd: int, length: int = DEFAULT_LENGTH, *, offset: int = 0,
               buf_offset: int = 0, fixed_file: bool = False) -> int:
        """Submit one operation, wait for it (bounded) and return its completion's ``res``.

        ``op`` is one of :data:`URING_OPS`.  READ/READV read into the scratch
        buffer at ``buf_offset``; READ_FIXED into the registered buffer at
        ``buf_offset`` (the kernel checks that range: outside it is EFAULT).
        A negative ``res`` raises ``OSError`` with that errno; a timeout
        raises ``OSError(ETIME)``.
        """
        uop = self._uop(op, fd, length, offset, buf_offset, fixed_file)
        res = int(self._call(lib.lk_ring_do, uop))
        _check(res, f"io_uring {op} of {length} bytes on fd {fd}")
        return res

    def read(self, op: str, fd: int, length: int = DEFAULT_LENGTH, *, offset: int = 0,
             buf_offset: int = 0, fixed_file: bool = False) -> bytes:
        """:meth:`submit`, then return the bytes it wrote into the ring's memory."""
        res = self.submit(op, fd, length, offset=offset, buf_offset=buf_offset,
                          fixed_file=fixed_file)
        where = "registered" if op == "read_fixed" else "scratch"
        return self.memory(buf_offset, res, where)

    def roundtrip_ns(self, op: str, fd: int, length: int = DEFAULT_LENGTH, *,
                     iters: int = 20_000, offset: int = 0, buf_offset: int = 0,
                     fixed_file: bool = False) -> float:
        """One batch of queue-depth-1 round trips: nanoseconds per submit + wait + reap.

        Each round trip is one ``io_uring_enter`` that submits one SQE and
        waits (bounded) for its completion; every completion's ``res`` must
        equal ``length`` (else OSError: its errno, or EIO when short).
        """
        uop = self._uop(op, fd, length, offset, buf_offset, fixed_file)
        iters = _positive_int(iters, "iters")
        return _check(self._call(lib.lk_time_uring_qd1, uop, iters), f"io_uring {op} QD1")

    def peak(self, op: str, fd: int, length: int = DEFAULT_LENGTH, *, depth: int = 32,
             submit_batch: int = 8, complete_batch: int = 8, ios: int = 200_000,
             offset: int = 0, buf_offset: int = 0, fixed_file: bool = False) -> PeakResult:
        """One batch of the peak loop: keep ``depth`` requests in flight.

        As fio's ``t/io_uring``: submit in groups of ``submit_batch``, and when
        the queue is full wait for ``complete_batch`` completions in the same
        enter call.  All requests read into the same buffer.
        """
        uop = self._uop(op, fd, length, offset, buf_offset, fixed_file)
        depth = _positive_int(depth, "depth")
        submit_batch = _positive_int(submit_batch, "submit_batch", maximum=depth)
        complete_batch = _positive_int(complete_batch, "complete_batch", maximum=depth)
        ios = _positive_int(ios, "ios")
        out = ffi.new("struct lk_peak *")
        _check(self._call(lib.lk_time_uring_peak, uop, depth, submit_batch, complete_batch,
                                      ios, out), f"io_uring {op} peak loop")
        return PeakResult(
            ns_per_io=out.ns_per_io, cpu_ns_per_io=out.cpu_ns_per_io,
            iops=1e9 / out.ns_per_io, iops_per_core=1e9 / max(out.cpu_ns_per_io, 1e-9),
            ios_per_enter=out.ios_per_enter, ios=int(out.ios), enters=int(out.enters),
            waits=int(out.waits))

    def roundtrip_variant(self, op: str, fd: int, length: int = DEFAULT_LENGTH, *,
                          iters: int = 20_000, offset: int = 0, buf_offset: int = 0,
                          fixed_file: bool = False) -> Callable[[], float]:
        """A zero-argument callable timing one QD1 batch (for ``bench.run``)."""
        uop = self._uop(op, fd, length, offset, buf_offset, fixed_file)
        iters = _positive_int(iters, "iters")

        def run() -> float:
            return _check(self._call(lib.lk_time_uring_qd1, uop, iters), f"io_uring {op} QD1")

        run.__name__ = f"uring_{op}"
        return run

    def peak_variant(self, op: str, fd: int, length: int = DEFAULT_LENGTH,
                     **kwargs: Any) -> Callable[[], float]:
        """A zero-argument callable running one peak batch, returning ns per IO (wall)."""

        def run() -> float:
            return self.peak(op, fd, length, **kwargs).ns_per_io

        run.__name__ = f"uring_peak_{op}"
        return run


def io_wq_workers() -> int:
    """How many io-wq worker threads (``iou-wrk-*``) this process has right now.

    io_uring runs a request inline when the file can do it without blocking
    (``IOCB_NOWAIT``); otherwise it hands it to an io-wq worker thread, which
    costs a thread hand-off per request.  Workers linger for a while after use.
    """
    n = 0
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return 0
    for tid in tasks:
        try:
            if Path(f"/proc/self/task/{tid}/comm").read_text().startswith("iou-wrk"):
                n += 1
        except OSError:
            continue
    return n


# --------------------------------------------------------------------------- correctness


def verify_syscalls(length: int = DEFAULT_LENGTH, file_size: int = 64 * 1024,
                    offsets: Sequence[int] = (0, 4096, 12345)) -> dict[str, bool]:
    """Every system call variant returns exactly the pattern bytes at each offset.

    Returns ``{variant: ok}``; also checks that /dev/zero reads are all zero.
    """
    result: dict[str, bool] = {}
    with PatternFile(file_size) as pf:
        for name in SYSCALL_VARIANTS:
            ok = True
            for off in offsets:
                if off + length > file_size:
                    continue
                ok &= syscall_read(name, pf.fd, length, off) == pf.expected(off, length)
            result[name] = bool(ok)
    zfd = open_zero()
    try:
        result["dev_zero"] = all(syscall_read(n, zfd, length) == bytes(length)
                                 for n in SYSCALL_VARIANTS)
    finally:
        os.close(zfd)
    return result


def verify_uring(ring: Ring, length: int = DEFAULT_LENGTH, file_size: int = 64 * 1024,
                 offsets: Sequence[int] = (0, 4096, 12345)) -> dict[str, bool]:
    """Every io_uring op reads the pattern bytes, with ``res == length``.

    READ/READV variants read into the ring's scratch buffer; READ_FIXED (if a
    buffer is registered) into its head and its tail, and nothing else in the
    registered memory changes (checked around both landing zones).
    """
    result: dict[str, bool] = {}
    with PatternFile(file_size) as pf:
        for op in ("read", "readv1", "readv_empty", "readv_split"):
            ok = True
            for off in offsets:
                if off + length > file_size:
                    continue
                ring.fill(0xA5, "scratch")
                ok &= ring.read(op, pf.fd, length, offset=off) == pf.expected(off, length)
            result[op] = bool(ok)
        reg_len = ring.info()["reg_len"]
        if reg_len >= 2 * length:
            result["read_fixed_head_tail"] = fixed_lands_right(ring, pf, length)
    return result


def fixed_lands_right(ring: Ring, pf: PatternFile, length: int = DEFAULT_LENGTH,
                      file_offset: int = 0) -> bool:
    """READ_FIXED at the head and at the tail of the registered buffer land where asked.

    Poisons the registered memory, reads ``length`` pattern bytes to offset 0
    and to ``reg_len - length``, then checks those ranges hold the pattern and
    a page on either side still holds the poison.
    """
    reg_len = ring.info()["reg_len"]
    poison = 0x5A
    ring.fill(poison, "registered")
    expect = pf.expected(file_offset, length)
    ok = True
    for at in (0, reg_len - length):
        ok &= ring.submit("read_fixed", pf.fd, length, offset=file_offset, buf_offset=at) == length
        ok &= ring.memory(at, length) == expect
    guard = min(PAGE_SIZE, reg_len - 2 * length)
    if guard > 0:
        ok &= ring.memory(length, guard) == bytes([poison]) * guard
        ok &= ring.memory(reg_len - length - guard, guard) == bytes([poison]) * guard
    return bool(ok)


# --------------------------------------------------------------------------- experiments
#
# The notebook's experiments, measured through the harness (labkit.bench.run:
# pinned, warmed up, variants interleaved with the order rotated every round:
# A B C, B C A, ...).  Each returns the
# harness's tidy DataFrame (one row per batch).


@dataclass(frozen=True)
class Sizes:
    """Batch sizes and repeats of the live experiments (quick mode shrinks them)."""

    syscall_iters: int   #: system calls per batch
    uring_iters: int     #: QD1 round trips per batch
    repeats: int         #: interleaved rounds kept
    warmup: int          #: rounds thrown away first
    registered: int      #: registered buffer for READ_FIXED head vs tail
    peak_ios: int        #: IOs per peak batch
    depths: tuple[int, ...]  #: queue depths of the peak loop


def sizes(quick: bool | None = None) -> Sizes:
    """The experiment sizes for quick mode (CI) or full mode (a reproduction)."""
    if quick_mode(quick):
        return Sizes(syscall_iters=20_000, uring_iters=4_000, repeats=9, warmup=1,
                     registered=64 << 20, peak_ios=40_000, depths=(1, 4, 16, 64))
    return Sizes(syscall_iters=200_000, uring_iters=40_000, repeats=31, warmup=2,
                 registered=MAX_REGISTERED_BUFFER, peak_ios=400_000,
                 depths=(1, 2, 4, 8, 16, 32, 64, 128))


TARGETS: tuple[str, ...] = ("zero", "tmpfs")


class _Target:
    """An open data source: /dev/zero (read at the file position) or a tmpfs pattern file."""

    def __init__(self, target: str, length: int):
        if target not in TARGETS:
            raise ValueError(f"target must be one of {TARGETS}, got {target!r}")
        self.pattern: PatternFile | None = None
        if target == "zero":
            self.fd, self.offset = open_zero(), -1
        else:
            self.pattern = PatternFile(max(64 * 1024, 2 * length))
            self.fd, self.offset = self.pattern.fd, 0

    def close(self) -> None:
        if self.pattern is not None:
            self.pattern.close()
        else:
            os.close(self.fd)


def run_syscalls(target: str = "zero", *, length: int = DEFAULT_LENGTH, iters: int = 100_000,
                 repeats: int = 9, warmup: int = 1, names: Iterable[str] = SYSCALL_VARIANTS,
                 cpu: int | None = None, clock_name: str = "wall") -> Any:
    """read vs readv(1) vs readv(4K + empty) vs readv(2 x 2K) vs preadv2, interleaved.

    ``target`` "zero" reads /dev/zero at the file position (read/readv, as
    R2's read-zero); "tmpfs" reads a tmpfs file at offset 0 (pread/preadv,
    so the same bytes come back every call).  Rows carry ``target``,
    ``bytes`` and ``iters`` columns.
    """
    from labkit import bench

    src = _Target(target, length)
    try:
        offset = src.offset
        variants = syscall_variants(src.fd, length=length, iters=iters, offset=offset,
                                    names=names)
        with clock(clock_name):
            return bench.run("live-syscalls", variants, repeats=repeats, warmup=warmup,
                             params={"target": target, "bytes": length, "iters": iters,
                                     "clock": clock_name}, cpu=cpu, rotate=True)
    finally:
        src.close()


def run_uring_qd1(target: str = "zero", *, ops: Iterable[str] = URING_OPS,
                  length: int = DEFAULT_LENGTH, iters: int = 20_000, repeats: int = 9,
                  warmup: int = 1, register_ring_fd: bool = False,
                  cpu: int | None = None, clock_name: str = "wall") -> Any:
    """io_uring round trips at queue depth 1, one variant per op, interleaved.

    READ_FIXED reads into the head of a 1 MiB registered buffer.  Rows carry
    ``target``, ``bytes``, ``iters`` and ``registered_ring`` columns.
    """
    from labkit import bench

    src = _Target(target, length)
    try:
        with Ring(8, register_ring_fd=register_ring_fd) as ring:
            ring.register_buffer(max(1 << 20, length))
            variants = {op: ring.roundtrip_variant(op, src.fd, length, iters=iters,
                                                   offset=max(src.offset, 0))
                        for op in ops}
            with clock(clock_name):
                return bench.run("live-uring-qd1", variants, repeats=repeats, warmup=warmup,
                                 params={"target": target, "bytes": length, "iters": iters,
                                         "registered_ring": register_ring_fd,
                                         "clock": clock_name}, cpu=cpu, rotate=True)
    finally:
        src.close()


def run_fixed_head_tail(*, size: int, length: int = DEFAULT_LENGTH, iters: int = 20_000,
                        repeats: int = 9, warmup: int = 1, hugepages: bool = False,
                        cpu: int | None = None, clock_name: str = "wall") -> Any:
    """READ_FIXED of /dev/zero into the head vs the tail of one registered buffer (R1 today).

    Variants ``head`` (offset 0) and ``tail`` (offset ``size - length``);
    rows carry ``buffer_bytes``, ``pages_skipped`` (the pages before the
    tail), ``hugepages``, ``bytes`` and ``iters``.
    """
    from labkit import bench

    zfd = open_zero()
    try:
        with Ring(8) as ring:
            ring.register_buffer(size, hugepages=hugepages)
            variants = {
                "head": ring.roundtrip_variant("read_fixed", zfd, length, iters=iters),
                "tail": ring.roundtrip_variant("read_fixed", zfd, length, iters=iters,
                                               buf_offset=size - length),
            }
            with clock(clock_name):
                return bench.run("live-fixed-head-tail", variants, repeats=repeats,
                                 warmup=warmup,
                                 params={"buffer_bytes": size,
                                         "pages_skipped": (size - length) // PAGE_SIZE,
                                         "hugepages": hugepages, "bytes": length,
                                         "iters": iters, "clock": clock_name},
                                 cpu=cpu, rotate=True)
    finally:
        os.close(zfd)


def run_peak(*, ops: Iterable[str] = ("read", "readv1", "readv_empty"),
             depths: Sequence[int] = (1, 4, 16, 64), batch: int = 32, ios: int = 100_000,
             length: int = DEFAULT_LENGTH, repeats: int = 9, warmup: int = 1,
             cpu: int | None = None) -> Any:
    """The batched peak loop on /dev/zero, every (op, depth) interleaved.

    Submit and complete batches are ``min(batch, depth)`` (fio's t/io_uring
    uses 32 and 32).  ``ns_per_op`` is the process CPU time per IO, so
    ``1e9 / ns_per_op`` is IOPS per core; rows also carry ``wall_ns_per_io``,
    ``ios_per_enter``, ``op`` and ``depth``.
    """
    from labkit import bench

    ops = list(ops)
    depths = [int(d) for d in depths]
    zfd = open_zero()
    details: dict[str, list[PeakResult]] = {}
    try:
        with Ring(max(depths)) as ring:
            ring.register_buffer(max(1 << 20, length))

            def make(op: str, depth: int) -> Callable[[], float]:
                b = min(batch, depth)
                key = f"{op}@{depth}"
                details[key] = []

                def run() -> float:
                    res = ring.peak(op, zfd, length, depth=depth, submit_batch=b,
                                    complete_batch=b, ios=ios)
                    details[key].append(res)
                    return res.cpu_ns_per_io

                return run

            variants = {f"{op}@{d}": make(op, d) for d in depths for op in ops}
            df = bench.run("live-uring-peak", variants, repeats=repeats, warmup=warmup,
                           params={"bytes": length, "ios": ios, "batch": batch},
                           cpu=cpu, rotate=True)
    finally:
        os.close(zfd)
    kept = {k: v[len(v) - repeats:] for k, v in details.items()}
    df["op"] = df["variant"].str.split("@").str[0]
    df["depth"] = df["variant"].str.split("@").str[1].astype(int)
    rows = [kept[v][r] for v, r in zip(df["variant"], df["repeat"], strict=True)]
    df["wall_ns_per_io"] = [res.ns_per_io for res in rows]
    df["ios_per_enter"] = [res.ios_per_enter for res in rows]
    return df


# --------------------------------------------------------------------------- F for notebook 2


def default_registered_size(quick: bool | None = None) -> int:
    """The registered buffer size for R1: 1 GiB (the 2019 cap), 64 MiB in quick mode."""
    return (64 << 20) if quick_mode(quick) else MAX_REGISTERED_BUFFER


def read_fixed_roundtrip_ns(*, buffer_size: int | None = None, where: str = "head",
                            length: int = DEFAULT_LENGTH, iters: int = 20_000,
                            batches: int = 5) -> float:
    """The live cost F of one READ_FIXED round trip at queue depth 1, in nanoseconds.

    Registers a buffer of ``buffer_size`` bytes (:func:`default_registered_size`
    if None), reads ``length`` bytes of /dev/zero into its head (or ``"tail"``)
    ``iters`` times per batch, and returns the median of ``batches`` batches.
    Raises OSError when io_uring is unavailable (see :func:`probe`).
    """
    if where not in ("head", "tail"):
        raise ValueError("where must be 'head' or 'tail'")
    size = default_registered_size() if buffer_size is None else buffer_size
    batches = _positive_int(batches, "batches")
    zfd = open_zero()
    try:
        with Ring(8) as ring:
            ring.register_buffer(size)
            at = 0 if where == "head" else size - length
            run = ring.roundtrip_variant("read_fixed", zfd, length, iters=iters, buf_offset=at)
            run()  # warm-up
            return statistics.median(run() for _ in range(batches))
    finally:
        os.close(zfd)


def read_syscall_ns(*, length: int = DEFAULT_LENGTH, iters: int = 100_000,
                    batches: int = 5) -> float:
    """The cost of one plain ``read()`` of ``length`` bytes from /dev/zero (median of batches).

    The fallback for F where io_uring is unavailable: one system call that
    copies (clears) the same bytes, without the ring's submission and
    completion work.
    """
    batches = _positive_int(batches, "batches")
    zfd = open_zero()
    try:
        run = syscall_variants(zfd, length=length, iters=iters, names=("read",))["read"]
        run()
        return statistics.median(run() for _ in range(batches))
    finally:
        os.close(zfd)


__all__ = [
    "CLOCKS",
    "DEFAULT_LENGTH",
    "LABELS",
    "MAX_REGISTERED_BUFFER",
    "SYSCALL_VARIANTS",
    "URING_OPS",
    "PatternFile",
    "PeakResult",
    "Ring",
    "Sizes",
    "TARGETS",
    "default_registered_size",
    "clock",
    "fixed_lands_right",
    "get_clock",
    "io_wq_workers",
    "is_tmpfs",
    "kernel_release",
    "open_zero",
    "pattern_bytes",
    "probe",
    "read_fixed_roundtrip_ns",
    "read_syscall_ns",
    "run_fixed_head_tail",
    "run_peak",
    "run_syscalls",
    "run_uring_qd1",
    "set_clock",
    "sizes",
    "syscall_ns",
    "syscall_read",
    "syscall_variants",
    "tmpfs_dir",
    "verify_syscalls",
    "verify_uring",
]
