"""An io_uring instance through raw system calls (``csrc/live/live_uring.c``)."""

from __future__ import annotations

import errno
import threading
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, TypedDict

from labkit._args import (
    INT64_MAX,
    SIZE_MAX,
    UINT_MAX,
    fd_arg,
    index_arg,
    int_arg,
    positive_int,
    seconds_arg,
)
from labkit._ffi import check, ffi, lib, raise_errno
from labkit.budget import apply_setting
from labkit.live.lifetime import Closeable
from labkit.live.variants import DEFAULT_LENGTH, read_variant

if TYPE_CHECKING:  # typing.Unpack is Python 3.11+; only type checkers read it
    from typing_extensions import Unpack


@dataclass(frozen=True)
class PeakResult:
    """One batch of the peak loop."""

    ns_per_io: float  #: wall time per completed IO
    cpu_ns_per_io: float  #: process CPU time per IO (all threads, io-wq workers included)
    iops: float  #: completed IOs per second of wall time
    iops_per_core: float  #: completed IOs per second of CPU time
    ios_per_enter: float  #: IOs per io_uring_enter call
    ios: int
    enters: int
    waits: int  #: enter calls made only to wait

    def as_dict(self) -> dict[str, float | int]:
        """The fields as a plain dict (a table row)."""
        return asdict(self)


class Request(TypedDict, total=False):
    """Where one io_uring read goes: the keywords every :class:`Ring` operation takes.

    ``offset`` (default 0) is the file offset (-1: the file's position);
    ``buf_offset`` (default 0) the offset in the ring's buffer the read lands
    at; ``fixed_file`` (default False) makes ``fd`` an index into the
    registered files.
    """

    offset: int
    buf_offset: int
    fixed_file: bool


class Ring(Closeable):
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

    Arguments are checked as everywhere in labkit (``labkit._args``):
    integers only (TypeError otherwise); a count or size out of range is
    ``OSError(EINVAL)``, a descriptor outside a C ``int`` ``OSError(EBADF)``, a
    buffer offset outside the buffer ``OSError(EFAULT)``; a timeout is a
    number of seconds, ``0 < timeout <= labkit._args.MAX_SECONDS``
    (``OSError(EINVAL)`` otherwise).
    """

    def __init__(
        self,
        entries: int = 64,
        *,
        flags: int = 0,
        scratch: int = 1 << 20,
        timeout: float = 1.0,
        register_ring_fd: bool = False,
    ):
        entries = positive_int(entries, "entries", maximum=UINT_MAX)
        flags = int_arg(flags, "flags", 0, UINT_MAX, err=errno.EINVAL)
        scratch = positive_int(scratch, "scratch")
        timeout = seconds_arg(timeout, "timeout")
        # every C call on the handle holds this lock (cffi releases the GIL): a
        # close() from another thread waits for a running batch instead of
        # unmapping the ring under it, and two threads never share the SQ/CQ
        self._lock = threading.RLock()
        self._ring: Any = None
        err = ffi.new("int *")
        handle = lib.lk_ring_open(entries, flags, scratch, int(timeout * 1e9), err)
        if handle == ffi.NULL:
            raise_errno(-err[0], f"io_uring ring of {entries} entries")
        self._ring = handle
        if register_ring_fd:
            try:
                check(lib.lk_ring_register_ring_fd(handle), "registering the ring fd")
            except OSError:
                self.close()
                raise

    # -- lifetime
    def _h(self) -> Any:
        if self._ring is None:
            raise_errno(errno.EBADF, "the ring is closed")
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

    # -- state
    def info(self) -> dict[str, Any]:
        """Ring geometry and state: entries, features, registered buffer and files, in-flight."""
        out = ffi.new("struct lk_ring_info *")
        check(self._call(lib.lk_ring_get_info, out), "ring info")
        return {
            k: getattr(out, k)
            for k in (
                "sq_entries",
                "cq_entries",
                "features",
                "flags",
                "ext_arg",
                "registered_ring",
                "scratch_len",
                "reg_len",
                "reg_hugepages",
                "nr_files",
                "inflight",
            )
        }

    def set_timeout(self, seconds: float) -> None:
        """Bound every later wait by ``seconds`` (``0 < seconds <= MAX_SECONDS``)."""
        seconds = seconds_arg(seconds, "timeout")
        check(self._call(lib.lk_ring_set_timeout, int(seconds * 1e9)), "set timeout")

    # -- registration
    def register_buffer(self, size: int, *, hugepages: bool = False) -> None:
        """Allocate ``size`` bytes of anonymous memory and register it as fixed buffer 0.

        ``hugepages=False`` asks for 4 KiB pages (``MADV_NOHUGEPAGE``), so the
        kernel's table has one bvec per page, as in 2019; ``True`` lets
        transparent huge pages back it (today's kernels then coalesce the
        table into folio-sized bvecs).  The kernel refuses more than 1 GiB
        (``OSError(EFAULT)``); 0 is ``OSError(EINVAL)``.
        """
        size = min(int_arg(size, "buffer size", 1, err=errno.EINVAL), SIZE_MAX)
        check(
            self._call(lib.lk_ring_register_buffer, size, int(bool(hugepages))),
            f"registering a {size}-byte buffer",
        )

    def register_files(self, fds: Sequence[int]) -> None:
        """Register descriptors; operations with ``fixed_file=True`` use their index.

        -1 leaves a slot empty, as the kernel allows; a value outside a C
        ``int`` is ``OSError(EBADF)``; none, or more than 1024, ``OSError(EINVAL)``.
        """
        values = [fd_arg(fd, f"fds[{k}]", minimum=-1) for k, fd in enumerate(fds)]
        arr = ffi.new("int[]", values)
        check(self._call(lib.lk_ring_register_files, arr, len(values)), "registering files")

    # -- memory the ring reads into
    def _area(self, where: str) -> int:
        if where not in ("scratch", "registered"):
            raise ValueError("where must be 'scratch' or 'registered'")
        return 0 if where == "scratch" else 1

    def fill(self, byte: int, where: str = "registered") -> None:
        """Set every byte of the scratch or registered buffer to ``byte`` (taken modulo 256)."""
        value = index_arg(byte, "byte") & 0xFF
        check(self._call(lib.lk_ring_fill, self._area(where), value), f"fill {where}")

    def memory(self, offset: int, n: int, where: str = "registered") -> bytes:
        """A copy of ``n`` bytes at ``offset`` of the scratch or registered buffer.

        Raises:
            OSError: EINVAL for a negative offset or n; EFAULT for a range outside
                the buffer; ENOENT for the registered buffer when none is.
        """
        area = self._area(where)
        offset = min(int_arg(offset, "offset", 0, err=errno.EINVAL), SIZE_MAX)
        n = min(int_arg(n, "n", 0, err=errno.EINVAL), SIZE_MAX)
        with self._lock:
            info = self.info()
            size = info["scratch_len"] if area == 0 else info["reg_len"]
            # never allocate more than the buffer holds: the C copy refuses any n
            # beyond it (EFAULT) before it writes into dst
            dst = ffi.new("char[]", max(min(n, size), 1))
            check(
                lib.lk_ring_copy_out(self._h(), area, offset, dst, n),
                f"{n} bytes at {offset} of the {where} buffer",
            )
        return bytes(ffi.buffer(dst, n))

    # -- operations
    def _uop(
        self,
        op: str,
        fd: int,
        length: int,
        *,
        offset: int = 0,
        buf_offset: int = 0,
        fixed_file: bool = False,
    ) -> Any:
        """The C request of one operation, every argument checked (see :class:`Request`)."""
        vid = read_variant(op, interface="uring").id
        fd = fd_arg(fd, "fd", minimum=-(2**31))  # a negative fd completes with EBADF
        length = positive_int(length, "length", maximum=lib.LK_MAX_RW_COUNT)
        offset = int_arg(offset, "offset", -1, INT64_MAX, err=errno.EINVAL)
        buf_offset = int_arg(buf_offset, "buf_offset", 0, SIZE_MAX, err=errno.EFAULT)
        return ffi.new(
            "struct lk_uop *",
            {
                "op": vid,
                "fd": fd,
                "fixed_file": int(bool(fixed_file)),
                "len": length,
                "buf_off": buf_offset,
                "off": offset,
            },
        )

    def submit(
        self, op: str, fd: int, length: int = DEFAULT_LENGTH, **request: Unpack[Request]
    ) -> int:
        """Submit one operation, wait for it (bounded) and return its completion's ``res``.

        ``op`` is one of :data:`labkit.live.URING_OPS`.  READ/READV read into the scratch
        buffer at ``buf_offset``; READ_FIXED into the registered buffer at
        ``buf_offset`` (the kernel checks that range: outside it is EFAULT).
        The keywords (``offset``, ``buf_offset``, ``fixed_file``) are those of
        :class:`Request`.  A negative ``res`` raises ``OSError`` with that errno;
        a timeout raises ``OSError(ETIME)``.
        """
        uop = self._uop(op, fd, length, **request)
        res = int(self._call(lib.lk_ring_do, uop))
        check(res, f"io_uring {op} of {length} bytes on fd {fd}")
        return res

    def read(
        self, op: str, fd: int, length: int = DEFAULT_LENGTH, **request: Unpack[Request]
    ) -> bytes:
        """:meth:`submit`, then return the bytes it wrote into the ring's memory.

        Submit and copy-out are one critical section: another thread's request
        on this ring cannot overwrite the bytes before they are copied.
        """
        where = "registered" if read_variant(op).uring == "READ_FIXED" else "scratch"
        with self._lock:
            res = self.submit(op, fd, length, **request)
            return self.memory(request.get("buf_offset", 0), res, where)

    def roundtrip_ns(
        self,
        op: str,
        fd: int,
        length: int = DEFAULT_LENGTH,
        *,
        iters: int = 20_000,
        **request: Unpack[Request],
    ) -> float:
        """One batch of queue-depth-1 round trips: nanoseconds per submit + wait + reap.

        Each round trip is one ``io_uring_enter`` that submits one SQE and
        waits (bounded) for its completion; every completion's ``res`` must
        equal ``length`` (else OSError: its errno, or EIO when short).
        """
        return self.roundtrip_variant(op, fd, length, iters=iters, **request)()

    def peak(
        self,
        op: str,
        fd: int,
        length: int = DEFAULT_LENGTH,
        *,
        depth: int = 32,
        submit_batch: int = 8,
        complete_batch: int = 8,
        ios: int = 200_000,
        **request: Unpack[Request],
    ) -> PeakResult:
        """One batch of the peak loop: keep ``depth`` requests in flight.

        As fio's ``t/io_uring``: submit in groups of ``submit_batch``, and when
        the queue is full wait for ``complete_batch`` completions in the same
        enter call.  All requests read into the same buffer.
        """
        uop = self._uop(op, fd, length, **request)
        depth = positive_int(depth, "depth", maximum=UINT_MAX)
        submit_batch = positive_int(submit_batch, "submit_batch", maximum=depth)
        complete_batch = positive_int(complete_batch, "complete_batch", maximum=depth)
        ios = positive_int(ios, "ios")
        out = ffi.new("struct lk_peak *")
        apply_setting()
        check(
            self._call(lib.lk_time_uring_peak, uop, depth, submit_batch, complete_batch, ios, out),
            f"io_uring {op} peak loop",
        )
        return PeakResult(
            ns_per_io=out.ns_per_io,
            cpu_ns_per_io=out.cpu_ns_per_io,
            iops=1e9 / out.ns_per_io,
            iops_per_core=1e9 / max(out.cpu_ns_per_io, 1e-9),
            ios_per_enter=out.ios_per_enter,
            ios=int(out.ios),
            enters=int(out.enters),
            waits=int(out.waits),
        )

    def roundtrip_variant(
        self,
        op: str,
        fd: int,
        length: int = DEFAULT_LENGTH,
        *,
        iters: int = 20_000,
        **request: Unpack[Request],
    ) -> Callable[[], float]:
        """A zero-argument callable timing one QD1 batch (for ``labkit.measure.runner.run``)."""
        uop = self._uop(op, fd, length, **request)
        iters = positive_int(iters, "iters")

        def run() -> float:
            apply_setting()
            return check(self._call(lib.lk_time_uring_qd1, uop, iters), f"io_uring {op} QD1")

        run.__name__ = f"uring_{op}"
        return run
