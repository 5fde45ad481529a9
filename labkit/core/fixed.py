"""Registered ("fixed") buffers and ``io_import_fixed``: the model behind R1.

io_uring lets a program register a buffer once (``IORING_REGISTER_BUFFERS``)
and then read into any part of it with ``IORING_OP_READ_FIXED``.  The kernel
pins the pages at registration and describes them by a table of bvecs
(``io_sqe_buffer_register`` in ``io_uring/rsrc.c``, ``fs/io_uring.c`` in
2019).  Each read then builds a BVEC iterator over the part of the buffer it
targets (``io_import_fixed``), and *how it seeks* to that part is what the
2019 report was about: reading at the tail of a 1 GiB buffer took 1,039,879 ns
instead of about 11 µs, because the iterator was advanced to the offset one
page at a time.

History modelled here (all of it in ``io_import_fixed``):

* **walk-2019** — before July 2019: ``iov_iter_bvec`` over the whole table,
  then ``iov_iter_advance(iter, offset)``, which in Linux 5.2 walked a
  ``struct bvec_iter`` one single-page piece at a time.
* **shift-2019** — commit bd11b3a391e3 "io_uring: dont use iov_iter_advance()
  for fixed buffers" (Jens Axboe, July 2019, reported by Hrvoje Zeba): inside
  the first bvec advance, otherwise skip ``1 + ((offset - first_len) >>
  PAGE_SHIFT)`` bvecs.  Its iterator count assumed the first bvec was a full
  page; "io_uring: fix manual setup of iov_iter for fixed buffers" (Aleix Roca
  Nonell, Aug 2019) repaired it.  ``bugs=("count-2019",)`` brings the bug back.
* **off-by-one** — d6fef34ee4d1 "io_uring: fix off-by-one bvec index" (Keith
  Busch, Nov 2023): with ``offset <= first_len`` an offset equal to the first
  bvec's length stayed on the first bvec with nothing left in it, a
  zero-length segment that broke NVMe's PRP list building.
  ``bugs=("off-by-one-2023",)`` brings it back (on ``seek="shift"``).
* **folios** — "io_uring/rsrc: enable multi-hugepage buffer coalescing"
  (Chenliang Li, 2024): bvecs cover whole folios and the skip shifts by the
  folio size (``folio_shift``).
* **exact nr_segs** — 2025 ("send exact nr_segs for fixed buffer", Pavel
  Begunkov; the ``bv_offset`` term found in review by Nitesh Shetty): the
  iterator holds only the segments the read spans.  Only ``seek="shift"`` does
  this; the other seeks leave every bvec remaining in the table, as the kernel
  did.
* **walk** — today's ``iov_iter_advance`` on a fresh BVEC iterator (one step
  per bvec, not per page), for comparison.

Model notes.  In 2019 every bvec was one page, so ``shift-2019``'s
``PAGE_SHIFT`` is modelled as "the bvec size" and the seek also works on a
folio table; inside the first bvec it uses today's advance (at most two bvecs
examined), which gives the same state as the 2019 one.  ``walk-2019`` on a
folio table still steps one page at a time, as the 2019 ``bvec_iter`` did on
multi-page bvecs.  A zero-length read at the very end of the buffer is the
one case where the seeks' states may differ (``shift`` can leave iov_offset at
the end of the last bvec, as the kernel does; the walks step past it); none
of them copies anything there, and ``shift`` does not read past the table
where the kernel would read the ``bv_offset`` one entry beyond it.

Every seek runs in C (``labkit/csrc/core/fixed_buf.c``), and every one of them,
buggy or not, is bounded so that no copy can leave the registered memory.
"""

from __future__ import annotations

import errno
from collections.abc import Iterable
from typing import Any

import numpy as np

from labkit._args import SIZE_MAX, address_arg, int_arg
from labkit._ffi import ffi, lib, raise_errno
from labkit.core.iov_iter import IovIter, direction_arg
from labkit.core.memory import UserMapping, UserMemory

SEEKS: dict[str, int] = {
    "walk-2019": lib.LK_SEEK_WALK_2019,
    "walk": lib.LK_SEEK_WALK,
    "shift-2019": lib.LK_SEEK_SHIFT_2019,
    "shift": lib.LK_SEEK_SHIFT,
}
"""The four ways to seek, by name (see the module docstring)."""

BUGS: dict[str, tuple[int, str]] = {
    "count-2019": (lib.LK_FIXED_BUG_COUNT_2019, "shift-2019"),
    "off-by-one-2023": (lib.LK_FIXED_BUG_OFF_BY_ONE_2023, "shift"),
}
"""Historical bugs that can be switched back on: name -> (flag, the seek it lives in).

``count-2019``: the first shift-2019 counted the first bvec as a whole page, so
with a buffer that does not start on a page boundary the iterator's count
came out ``PAGE_SIZE - first_len`` bytes short (and, for a read shorter than
that, wrapped around below zero; the model clamps the count to what the
segments hold, as it does for any buggy count).

``off-by-one-2023``: ``offset <= first_len`` instead of ``<``: at an offset
equal to the first bvec's length the iterator stays on the first bvec with
iov_offset == its length, so its current segment is empty.
"""

MAX_REGISTER = int(lib.LK_FIXED_MAX_LEN)
"""The largest buffer io_uring registers (1 GiB)."""

BVEC_DTYPE = np.dtype([("page", "<u8"), ("len", "<u4"), ("offset", "<u4")])
"""The layout of ``struct lk_bvec``: page address, length, offset in the page (folio)."""


class RegisteredBuffer:
    """A registered buffer: user range plus its bvec table over the real pages.

    Built by :func:`register_buffer`.  It keeps the mappings it covers alive,
    as the kernel keeps registered pages pinned: unmapping them from the
    :class:`~labkit.UserMemory` does not free the memory under the table.

    Attributes:
        addr: user address of the first byte.
        length: bytes registered.
        nr_bvecs: entries in the bvec table.
        folio_shift: log2 of the size of each (non-first, non-last) bvec.
    """

    def __init__(self, c_buf: Any, mem: UserMemory, mappings: list[UserMapping]) -> None:
        """Wrap a C ``struct lk_fixed_buf`` (internal: use :func:`register_buffer`)."""
        self._buf = c_buf
        self._mem = mem
        self._mappings = tuple(mappings)
        self.addr = int(c_buf.ubuf)
        self.length = int(c_buf.len)
        self.nr_bvecs = int(c_buf.nr_bvecs)
        self.folio_shift = int(c_buf.folio_shift)
        self._table: np.ndarray | None = None

    @property
    def c_buf(self) -> Any:
        """The C ``struct lk_fixed_buf *`` (for labkit's own C calls)."""
        return self._buf

    @property
    def folio_size(self) -> int:
        """Bytes per whole bvec (``1 << folio_shift``)."""
        return 1 << self.folio_shift

    @property
    def first_len(self) -> int:
        """Length of the first bvec (from the buffer start to the page/folio end)."""
        return int(self._buf.bvec[0].bv_len)

    @property
    def table(self) -> np.ndarray:
        """The bvec table as a read-only numpy structured array (page, len, offset)."""
        if self._table is None:
            # a copy: a view of the C table would dangle once this buffer (which
            # frees the table) is gone while the array is still referenced
            raw = ffi.buffer(self._buf.bvec, self.nr_bvecs * ffi.sizeof("struct lk_bvec"))
            self._table = np.frombuffer(bytes(raw), dtype=BVEC_DTYPE)
        return self._table

    def view(self) -> np.ndarray:
        """A writable uint8 view of the registered bytes (for checking copies)."""
        for m in self._mappings:
            if m.addr <= self.addr and self.addr + self.length <= m.end:
                return m.array[self.addr - m.addr : self.addr - m.addr + self.length]
        # The range spans adjacent mappings: build an array over the real bytes,
        # through a pointer whose (no-op) destructor holds the mappings, so that
        # the array keeps their memory alive as the views of single mappings do.
        keep = self._mappings
        ptr = ffi.gc(ffi.cast("uint8_t *", self.addr), lambda _p, keep=keep: None)
        return np.frombuffer(ffi.buffer(ptr, self.length), dtype=np.uint8)

    def __repr__(self) -> str:
        return (
            f"RegisteredBuffer(addr={self.addr:#x}, length={self.length}, "
            f"nr_bvecs={self.nr_bvecs}, folio_shift={self.folio_shift})"
        )


def register_buffer(
    mem: UserMemory, addr: int, length: int, *, folio_shift: int = 12
) -> RegisteredBuffer:
    """Register ``length`` bytes at user address ``addr``, as ``io_sqe_buffer_register``.

    The bvec table is built in C: the first bvec starts at ``addr``'s offset
    within its page (folio) and runs to the page (folio) end or the buffer end;
    the rest are whole pages (folios of ``2**folio_shift`` bytes); the last may
    be short.

    Args:
        mem: the address space the buffer lives in.
        addr: user address of the first byte.
        length: bytes to register (1 to 1 GiB).
        folio_shift: 12 for ordinary pages; 21 models memory backed by 2 MiB
            huge folios, coalesced into one bvec per folio as Linux does since
            2024.  Every folio the buffer touches must then be mapped: map the
            memory with ``mem.map(size, align=2 << 20)`` and a size that is a
            multiple of 2 MiB.

    Raises:
        TypeError: if mem is not a UserMemory, or addr, length or folio_shift
            is not an integer.
        OSError: EFAULT for a length of 0 or above 1 GiB, or a range that is
            not mapped (as the kernel); EOVERFLOW for a range that wraps;
            EINVAL for a folio_shift outside 12..30 or folios not fully mapped.
    """
    if not isinstance(mem, UserMemory):
        raise TypeError(f"mem must be a labkit.UserMemory, not {type(mem).__name__}")
    addr = address_arg(addr, "register_buffer: address")
    length = int_arg(length, "register_buffer: length", 0, SIZE_MAX, err=errno.EFAULT)
    folio_shift = int_arg(folio_shift, "register_buffer: folio_shift", 0, 63, err=errno.EINVAL)
    out = ffi.new("struct lk_fixed_buf **")
    with mem.lock:
        ret = lib.lk_fixed_register(mem.c_mm, addr, length, folio_shift, out)
        if ret < 0:
            err = -ret
            if (
                err == errno.EINVAL
                and lib.LK_FIXED_MIN_FOLIO_SHIFT <= folio_shift <= lib.LK_FIXED_MAX_FOLIO_SHIFT
            ):
                why = (
                    f"the {1 << folio_shift}-byte folios around [{addr:#x}, +{length}) "
                    f"are not all mapped (map with align={1 << folio_shift})"
                )
            elif err == errno.EINVAL:
                why = f"folio_shift must be 12..30, got {folio_shift}"
            elif err == errno.EFAULT and (length == 0 or length > MAX_REGISTER):
                why = f"length {length} must be 1..{MAX_REGISTER} bytes"
            else:
                why = f"[{addr:#x}, +{length}) cannot be registered"
            raise_errno(err, f"register_buffer: {why}")
        end = addr + length
        covered = [m for m in mem.mappings if m.addr < end and addr < m.end]
        if folio_shift > 12:
            mask = (1 << folio_shift) - 1
            lo, hi = addr & ~mask, (end + mask) & ~mask
            covered = [m for m in mem.mappings if m.addr < hi and lo < m.end]
    c_buf = ffi.gc(out[0], lib.lk_fixed_unregister)
    return RegisteredBuffer(c_buf, mem, covered)


def seek_id(seek: str) -> int:
    """The C id of the seek named ``seek`` (one of :data:`SEEKS`); ValueError otherwise."""
    try:
        return SEEKS[seek]
    except (KeyError, TypeError):
        raise ValueError(f"seek must be one of {sorted(SEEKS)}, got {seek!r}") from None


def _bugs_arg(bugs: Iterable[str], seek: str) -> int:
    if isinstance(bugs, str):
        bugs = (bugs,)
    flags = 0
    for name in bugs:
        if name not in BUGS:
            raise ValueError(f"unknown bug {name!r}; known: {sorted(BUGS)}")
        flag, where = BUGS[name]
        if where != seek:
            raise ValueError(f"bug {name!r} lives in seek={where!r}, not seek={seek!r}")
        flags |= flag
    return flags


def check_registered(reg: Any) -> RegisteredBuffer:
    """``reg`` if it is a :class:`RegisteredBuffer`; TypeError otherwise."""
    if not isinstance(reg, RegisteredBuffer):
        raise TypeError(f"reg must be a RegisteredBuffer, not {type(reg).__name__}")
    return reg


def io_import_fixed(
    direction: int,
    reg: RegisteredBuffer,
    addr: int,
    length: int,
    *,
    seek: str = "shift",
    bugs: Iterable[str] = (),
) -> IovIter:
    """A BVEC iterator over ``length`` bytes at user ``addr`` inside ``reg``.

    As io_uring's ``io_import_fixed()`` (``io_uring/rsrc.c``), seeking to the
    address in one of four ways (``seek``): ``"walk-2019"``, ``"walk"``,
    ``"shift-2019"`` or ``"shift"`` (today's; see the module docstring).  All
    four leave the same count, iov_offset and current segment; only
    ``"shift"`` sets nr_segs to the segments the read spans, the others leave
    every bvec remaining in the table.  ``it.visited`` is the number of
    segments (for walk-2019: single-page pieces) the seek examined.

    Args:
        direction: ITER_DEST for a read (READ_FIXED), ITER_SOURCE for a write.
        reg: the registered buffer.
        addr: user address of the first byte to transfer.
        length: bytes to transfer.
        seek: which seek to use.
        bugs: historical bugs to switch back on (see :data:`BUGS`), each only
            valid with the seek it lived in.

    Raises:
        TypeError: if addr or length is not an integer.
        OSError: EFAULT if the range is outside the buffer, wraps, or is longer
            than MAX_RW_COUNT (as the kernel).
        ValueError: for an unknown seek or bug, or a bug with the wrong seek.
    """
    d = direction_arg(direction)
    reg = check_registered(reg)
    s = seek_id(seek)
    flags = _bugs_arg(bugs, seek)
    addr = address_arg(addr, "io_import_fixed: address")
    length = int_arg(length, "io_import_fixed: length", 0, SIZE_MAX, err=errno.EFAULT)
    it = ffi.new("struct lk_iov_iter *")
    ret = lib.lk_import_fixed(d, reg.c_buf, addr, length, s, flags, it)
    if ret == -errno.EFAULT:
        raise_errno(
            errno.EFAULT,
            f"io_import_fixed: [{addr:#x}, +{length}) is not inside "
            f"the registered [{reg.addr:#x}, +{reg.length}) or exceeds MAX_RW_COUNT",
        )
    if ret < 0:
        raise_errno(-ret, "io_import_fixed")
    return IovIter(it, (reg,))
