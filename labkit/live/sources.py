"""Data sources for the live loops: /dev/zero, and a tmpfs file of a known byte pattern."""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from labkit._args import positive_int
from labkit._ffi import ffi
from labkit.core.memory import PAGE_SIZE
from labkit.live.lifetime import Closeable
from labkit.live.probe import tmpfs_dir


def aligned_buffer(size: int) -> tuple[Any, Any]:
    """A zeroed page-aligned buffer of ``size`` bytes: (owner, pointer)."""
    owner = ffi.new("char[]", size + PAGE_SIZE)
    addr = int(ffi.cast("uintptr_t", owner))
    aligned = (addr + PAGE_SIZE - 1) & ~(PAGE_SIZE - 1)
    return owner, ffi.cast("char *", aligned)


def pattern_bytes(offset: int, n: int) -> bytes:
    """The byte pattern of a :class:`PatternFile` at file offsets ``[offset, offset + n)``.

    Each byte is a hash of its own file offset, so a read that lands at the
    wrong offset (even by one byte, or by a whole page) does not match.
    """
    if offset < 0 or n < 0:
        raise ValueError("offset and n must be >= 0")
    idx = np.arange(offset, offset + n, dtype=np.uint64)
    mixed = idx * np.uint64(2654435761) + (idx >> np.uint64(12)) * np.uint64(40503)
    return ((mixed >> np.uint64(7)) & np.uint64(0xFF)).astype(np.uint8).tobytes()


class PatternFile(Closeable):
    """A file of ``size`` bytes with :func:`pattern_bytes` content, opened read-only.

    Created in :func:`tmpfs_dir` (memory-backed, so reads never wait for a
    disk) unless ``directory`` is given.  The file has no name from the moment
    it exists (``O_TMPFILE``; where the file system lacks it, the name is
    unlinked right after the file is opened): it lives only as long as its
    descriptor, so nothing is left behind when the process dies, even by
    SIGKILL.  ``path`` opens it from this process while it is open
    (``/proc/self/fd/N``).  :meth:`close` closes it.  Use as a context manager.
    """

    def __init__(self, size: int = 64 * 1024, directory: str | os.PathLike[str] | None = None):
        size = positive_int(size, "size")
        d = Path(directory) if directory is not None else tmpfs_dir()
        wfd = _unnamed_file(d)
        try:
            chunk = 1 << 20
            for start in range(0, size, chunk):
                data = pattern_bytes(start, min(chunk, size - start))
                if os.pwrite(wfd, data, start) != len(data):
                    raise OSError(errno.ENOSPC, f"short write to a pattern file in {d}")
            self.fd: int = os.open(f"/proc/self/fd/{wfd}", os.O_RDONLY)
        finally:
            os.close(wfd)
        self.size = size
        self.path = Path(f"/proc/self/fd/{self.fd}")

    def expected(self, offset: int, n: int) -> bytes:
        """The bytes a read of ``n`` at ``offset`` must return."""
        return pattern_bytes(offset, n)

    def close(self) -> None:
        """Close the descriptor, which frees the file (idempotent)."""
        if getattr(self, "fd", -1) >= 0:
            os.close(self.fd)
            self.fd = -1


def _unnamed_file(directory: Path) -> int:
    """A read-write descriptor on a new file in ``directory`` that has no name there."""
    flag = getattr(os, "O_TMPFILE", None)
    if flag is not None:
        try:
            return os.open(directory, flag | os.O_RDWR, 0o600)
        except OSError as exc:  # a file system without O_TMPFILE says one of these
            if exc.errno not in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL):
                raise
    fd, name = tempfile.mkstemp(prefix="labkit-pattern-", dir=directory)
    os.unlink(name)  # at once: only the descriptor keeps the file
    return fd


def open_zero() -> int:
    """A read-only descriptor on ``/dev/zero`` (caller closes it)."""
    return os.open("/dev/zero", os.O_RDONLY)
