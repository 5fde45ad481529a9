"""Registered ("fixed") buffers and ``io_import_fixed``: the R1 experiment.

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

Every seek runs in C (``labkit/csrc/fixed_buf.c``), and every one of them,
buggy or not, is bounded so that no copy can leave the registered memory.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from labkit._ffi import ffi, lib, raise_errno
from labkit.iov_iter import IovIter, direction_arg
from labkit.memory import PAGE_SIZE, Mapping, UserMemory

if TYPE_CHECKING:
    import pandas as pd

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

    def __init__(self, c_buf: Any, mem: UserMemory, mappings: list[Mapping]) -> None:
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
                return m.array[self.addr - m.addr:self.addr - m.addr + self.length]
        # The range spans adjacent mappings: build an array over the real bytes,
        # through a pointer whose (no-op) destructor holds the mappings, so that
        # the array keeps their memory alive as the views of single mappings do.
        keep = self._mappings
        ptr = ffi.gc(ffi.cast("uint8_t *", self.addr), lambda _p, keep=keep: None)
        return np.frombuffer(ffi.buffer(ptr, self.length), dtype=np.uint8)

    def segments_spanned(self, offset: int, length: int) -> int:
        """How many bvecs a read of ``length`` bytes at byte ``offset`` touches (0 if empty)."""
        if length <= 0:
            return 0
        return self._bvec_index(offset + length - 1) - self._bvec_index(offset) + 1

    def _bvec_index(self, offset: int) -> int:
        first = self.first_len
        if offset < first:
            return 0
        return 1 + ((offset - first) >> self.folio_shift)

    def __repr__(self) -> str:
        return (f"RegisteredBuffer(addr={self.addr:#x}, length={self.length}, "
                f"nr_bvecs={self.nr_bvecs}, folio_shift={self.folio_shift})")


def register_buffer(mem: UserMemory, addr: int, length: int, *,
                    folio_shift: int = 12) -> RegisteredBuffer:
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
        OSError: EFAULT for a length of 0 or above 1 GiB, or a range that is
            not mapped (as the kernel); EOVERFLOW for a range that wraps;
            EINVAL for a folio_shift outside 12..30 or folios not fully mapped.
    """
    if not isinstance(mem, UserMemory):
        raise TypeError(f"mem must be a labkit.UserMemory, not {type(mem).__name__}")
    addr, length, folio_shift = int(addr), int(length), int(folio_shift)
    if not 0 <= addr < 2**64:
        raise_errno(errno.EFAULT, f"register_buffer: address {addr:#x} is not a user address")
    if length < 0 or length >= 2**64:
        raise_errno(errno.EFAULT, f"register_buffer: bad length {length}")
    if not 0 <= folio_shift < 64:
        raise_errno(errno.EINVAL, f"register_buffer: folio_shift {folio_shift} out of range")
    out = ffi.new("struct lk_fixed_buf **")
    with mem.lock:
        ret = lib.lk_fixed_register(mem.c_mm, addr, length, folio_shift, out)
        if ret < 0:
            err = -ret
            if err == errno.EINVAL and lib.LK_FIXED_MIN_FOLIO_SHIFT <= folio_shift \
                    <= lib.LK_FIXED_MAX_FOLIO_SHIFT:
                why = (f"the {1 << folio_shift}-byte folios around [{addr:#x}, +{length}) "
                       f"are not all mapped (map with align={1 << folio_shift})")
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


def _seek_arg(seek: str) -> int:
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


def _reg_arg(reg: Any) -> RegisteredBuffer:
    if not isinstance(reg, RegisteredBuffer):
        raise TypeError(f"reg must be a RegisteredBuffer, not {type(reg).__name__}")
    return reg


def io_import_fixed(direction: int, reg: RegisteredBuffer, addr: int, length: int, *,
                    seek: str = "shift", bugs: Iterable[str] = ()) -> IovIter:
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
        OSError: EFAULT if the range is outside the buffer, wraps, or is longer
            than MAX_RW_COUNT (as the kernel).
        ValueError: for an unknown seek or bug, or a bug with the wrong seek.
    """
    d = direction_arg(direction)
    reg = _reg_arg(reg)
    s = _seek_arg(seek)
    flags = _bugs_arg(bugs, seek)
    addr, length = int(addr), int(length)
    if not 0 <= addr < 2**64 or not 0 <= length < 2**64:
        raise_errno(errno.EFAULT, f"io_import_fixed: [{addr:#x}, +{length}) is not a user range")
    it = ffi.new("struct lk_iov_iter *")
    ret = lib.lk_import_fixed(d, reg.c_buf, addr, length, s, flags, it)
    if ret == -errno.EFAULT:
        raise_errno(errno.EFAULT, f"io_import_fixed: [{addr:#x}, +{length}) is not inside "
                    f"the registered [{reg.addr:#x}, +{reg.length}) or exceeds MAX_RW_COUNT")
    if ret < 0:
        raise_errno(-ret, "io_import_fixed")
    return IovIter(it, (reg,))


def _offset_arg(reg: RegisteredBuffer, offset: int, length: int) -> tuple[int, int]:
    offset, length = int(offset), int(length)
    if offset < 0 or length < 0 or offset + length > reg.length:
        raise_errno(errno.EFAULT, f"offset {offset} + length {length} is outside the "
                    f"{reg.length}-byte registered buffer")
    return offset, length


def time_fixed_seek(reg: RegisteredBuffer, offset: int, length: int, seek: str,
                    iters: int) -> float:
    """ns per ``io_import_fixed`` (range check + seek, no copy) at byte ``offset``.

    One batch of ``iters`` imports timed in C (``lk_time_fixed_seek``).
    """
    reg = _reg_arg(reg)
    offset, length = _offset_arg(reg, offset, length)
    ns = lib.lk_time_fixed_seek(reg.c_buf, offset, length, _seek_arg(seek), max(int(iters), 1))
    if ns < 0:
        raise_errno(errno.EFAULT, "time_fixed_seek")
    return float(ns)


def time_fixed_submit(reg: RegisteredBuffer, offset: int, length: int, seek: str,
                      iters: int, data: Any = None) -> float:
    """ns per modelled submission: ``io_import_fixed`` + copy of ``length`` bytes.

    The copy moves ``data`` (default: ``length`` bytes of 0xA5) into the
    registered buffer at ``offset`` through the iterator, as a READ_FIXED would
    once the data arrived.  One batch of ``iters`` timed in C
    (``lk_time_fixed_submit``).
    """
    reg = _reg_arg(reg)
    offset, length = _offset_arg(reg, offset, length)
    src = bytes([0xA5]) * length if data is None else bytes(data)
    if len(src) < length:
        raise ValueError(f"data has {len(src)} bytes, fewer than length {length}")
    csrc = ffi.from_buffer(src)
    ns = lib.lk_time_fixed_submit(reg.c_buf, offset, length, _seek_arg(seek), csrc,
                                  max(int(iters), 1))
    if ns < 0:
        raise_errno(errno.EFAULT, "time_fixed_submit")
    return float(ns)


def time_read_syscall(length: int = 1, iters: int = 10_000, path: str = "/dev/zero") -> float:
    """ns per real ``read(fd, buf, length)`` system call on ``path``, timed in C.

    A measured stand-in for a submission's fixed cost F (system call entry and
    exit, file lookup, the driver) when the live io_uring round trip is not
    available.
    """
    length = int(length)
    if length < 0:
        raise ValueError(f"length must be >= 0, got {length}")
    buf = bytearray(max(length, 1))
    fd = os.open(path, os.O_RDONLY)
    try:
        ns = lib.lk_time_read_syscall(fd, ffi.from_buffer(buf), length, max(int(iters), 1))
    finally:
        os.close(fd)
    if ns < 0:
        raise_errno(int(-ns), f"read({path})")
    return float(ns)


# ---- experiment helpers (notebook 02) ------------------------------------------------

Runner = Callable[..., "pd.DataFrame"]


def _default_run() -> Runner:
    from labkit import bench  # the harness (labkit/bench.py)

    return bench.run


def _calibrate(kernel: Callable[[int], float], target_ns: float) -> int:
    from labkit import bench

    return bench.calibrate(kernel, target_ns=target_ns, max_iters=10_000_000)


def seek_offsets(length: int, points_per_decade: int = 4) -> list[int]:
    """Page-aligned offsets from 0 to the last page of a ``length``-byte buffer, log-spaced."""
    last_page = (int(length) - PAGE_SIZE) // PAGE_SIZE
    if last_page < 1:
        return [0]
    n = max(2, round(points_per_decade * np.log10(max(last_page, 10))) + 1)
    pages = np.unique(np.round(np.logspace(0, np.log10(last_page), n)).astype(int))
    return [0] + [int(p) * PAGE_SIZE for p in pages]


def seek_cost_experiment(reg: RegisteredBuffer, offsets: Iterable[int], *, length: int = PAGE_SIZE,
                         repeats: int, seeks: Iterable[str] = tuple(SEEKS),
                         target_ns: float = 2e6, run: Runner | None = None,
                         experiment: str = "fixed-seek", cpu: int | None = None) -> pd.DataFrame:
    """Cost of one ``io_import_fixed`` (seek only) at each offset, for each seek.

    One ``run`` (``labkit.bench.run``: pinned to ``cpu``, warmed up, seeks
    interleaved) per offset; returns the concatenated tidy rows with the columns
    ``offset``, ``pages_skipped``, ``buffer``, ``folio_shift``, ``length``.
    """
    import pandas as pd

    run = run or _default_run()
    frames = []
    for off in offsets:
        variants = {}
        for s in seeks:
            iters = _calibrate(
                lambda n, s=s, off=off: time_fixed_seek(reg, off, length, s, n), target_ns)
            variants[s] = (lambda s=s, off=off, iters=iters:
                           time_fixed_seek(reg, off, length, s, iters))
        frames.append(run(experiment, variants, repeats=repeats, cpu=cpu,
                          params={"offset": int(off), "pages_skipped": int(off) // PAGE_SIZE,
                                  "buffer": reg.length, "folio_shift": reg.folio_shift,
                                  "length": length}))
    return pd.concat(frames, ignore_index=True)


def submission_experiment(reg: RegisteredBuffer, *, length: int = PAGE_SIZE, repeats: int,
                          seeks: Iterable[str] = tuple(SEEKS), target_ns: float = 2e6,
                          run: Runner | None = None, experiment: str = "fixed-submit",
                          cpu: int | None = None) -> pd.DataFrame:
    """Modelled submission cost (seek + copy of ``length`` bytes) at the head and the tail.

    Head: the first ``length`` bytes of the buffer; tail: the last
    ``length``.  Variants are named ``"<seek> head"`` / ``"<seek> tail"`` and
    interleaved in one ``run`` (pinned to ``cpu``); columns ``seek``, ``where``, ``buffer``,
    ``folio_shift``, ``length`` are added.
    """
    run = run or _default_run()
    places = {"head": 0, "tail": reg.length - length}
    variants = {}
    for s in seeks:
        for where, off in places.items():
            iters = _calibrate(
                lambda n, s=s, off=off: time_fixed_submit(reg, off, length, s, n), target_ns)
            variants[f"{s} {where}"] = (lambda s=s, off=off, iters=iters:
                                        time_fixed_submit(reg, off, length, s, iters))
    df = run(experiment, variants, repeats=repeats, cpu=cpu,
             params={"buffer": reg.length, "folio_shift": reg.folio_shift, "length": length})
    df["seek"] = df["variant"].str.rsplit(" ", n=1).str[0]
    df["where"] = df["variant"].str.rsplit(" ", n=1).str[1]
    return df


def fixed_cost_source(*, target_ns: float = 2e6) -> tuple[str, Callable[[], float]]:
    """The measured fixed cost F of one submission: (description, zero-arg batch callable).

    F is what a submission costs besides the seek and the copy, so it is
    measured with a 1-byte transfer: the live io_uring READ_FIXED round trip
    at queue depth 1 (``labkit.live.read_fixed_roundtrip_ns``) when that module
    exists and the kernel allows io_uring; otherwise one real ``read()`` system
    call of 1 byte from /dev/zero, timed in C.  Never a chosen number.
    """
    try:
        from labkit import live  # type: ignore[attr-defined]

        fn = live.read_fixed_roundtrip_ns

        def live_batch(n: int) -> float:
            return float(fn(buffer_size=1 << 20, length=1, iters=n, batches=1))

        iters = _calibrate(live_batch, target_ns)
        return ("live io_uring READ_FIXED round trip of 1 byte (labkit.live)",
                lambda: live_batch(iters))
    except (ImportError, AttributeError, OSError):
        pass  # no live module, or the kernel refused io_uring: fall back
    iters = _calibrate(lambda n: time_read_syscall(1, n), target_ns)
    return ("read(2) of 1 byte from /dev/zero, timed in C",
            lambda: time_read_syscall(1, iters))


def composed_ratio_ci(fixed: Sequence[float], num: Sequence[float], den: Sequence[float], *,
                      n_boot: int = 4000, ci: float = 0.95,
                      seed: int = 0) -> tuple[float, float, float]:
    """(point, low, high) of (F + num) / (F + den) from medians, with a bootstrap interval.

    Each bootstrap round resamples the F, numerator and denominator samples
    independently (with replacement) and takes the ratio of the medians; the
    same resampled F enters numerator and denominator.
    """
    f, a, b = (np.asarray(x, dtype=float) for x in (fixed, num, den))
    if not (len(f) and len(a) and len(b)):
        raise ValueError("every sample set must be non-empty")
    rng = np.random.default_rng(seed)
    point = (np.median(f) + np.median(a)) / (np.median(f) + np.median(b))
    fm = np.median(rng.choice(f, (n_boot, len(f))), axis=1)
    am = np.median(rng.choice(a, (n_boot, len(a))), axis=1)
    bm = np.median(rng.choice(b, (n_boot, len(b))), axis=1)
    boots = (fm + am) / (fm + bm)
    lo, hi = np.quantile(boots, [(1 - ci) / 2, 1 - (1 - ci) / 2])
    return float(point), float(lo), float(hi)


def fit_ns_per_page(df: pd.DataFrame, *, seek: str = "walk-2019", min_pages: int = 1,
                    n_boot: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    """Slope of ns per seek against pages skipped: (point, low, high), 95 % bootstrap.

    Least squares on the per-offset medians of ``seek`` (offsets with at least
    ``min_pages`` pages skipped); the interval resamples the repeats within
    each offset.
    """
    d = df[(df["variant"] == seek) & (df["pages_skipped"] >= min_pages)]
    groups = [g["ns_per_op"].to_numpy() for _, g in d.groupby("pages_skipped")]
    x = np.array(sorted(d["pages_skipped"].unique()), dtype=float)
    if len(x) < 2:
        raise ValueError("need at least two offsets to fit a slope")
    y = np.array([np.median(g) for g in groups])
    point = float(np.polyfit(x, y, 1)[0])
    rng = np.random.default_rng(seed)
    slopes = []
    for _ in range(n_boot):
        yb = np.array([np.median(rng.choice(g, len(g))) for g in groups])
        slopes.append(np.polyfit(x, yb, 1)[0])
    lo, hi = np.quantile(slopes, [0.025, 0.975])
    return point, float(lo), float(hi)


__all__ = [
    "BUGS",
    "BVEC_DTYPE",
    "MAX_REGISTER",
    "PAGE_SIZE",
    "SEEKS",
    "RegisteredBuffer",
    "io_import_fixed",
    "register_buffer",
    "time_fixed_seek",
    "time_fixed_submit",
    "time_read_syscall",
    "composed_ratio_ci",
    "fit_ns_per_page",
    "fixed_cost_source",
    "seek_cost_experiment",
    "seek_offsets",
    "submission_experiment",
]
