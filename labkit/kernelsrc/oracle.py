"""The real kernel code, loaded: one era's ``liblko`` (its own ``lib/iov_iter.c``) behind Python.

:class:`KernelOracle` loads one era's library (built by :mod:`labkit.kernelsrc.build`)
with cffi in ABI mode and points its user-copy stand-ins at a
:class:`labkit.UserMemory`'s table (the same ``lk_mm_accessible()`` the model
copies through), so the real code faults exactly where the model does.
:class:`KernelIter` is one ``struct iov_iter`` of that code, driven through the
kernel's own functions (``import_iovec``, ``iov_iter_advance``, ...).

Errors come back as the kernel returns them (a negative errno); nothing is
translated, because the point is to compare them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import cffi

from labkit._ffi import ffi as _core_ffi
from labkit._ffi import lib as _core_lib
from labkit.core.memory import PAGE_SIZE, PROT_READ, PROT_RW, UserMemory
from labkit.errors import IterMisuseError
from labkit.kernelsrc.build import GLUE, Built, build

#: The oracle's flat interface, as the C side declares it (glue/lko.h): cffi takes the header
#: itself, less its preprocessor lines, so C and Python share one declaration.
ffi = cffi.FFI()
ffi.cdef(
    "\n".join(
        line
        for line in (GLUE / "lko.h").read_text().splitlines()
        if not line.lstrip().startswith("#")
    )
)

#: The oracle's type codes (lko.h's enum lko_type) as labkit's type names.
TYPE_NAMES: dict[int, str] = {
    code: name.removeprefix("LKO_") for code, name in ffi.typeof("enum lko_type").elements.items()
}

_ACCESS_FN = int(_core_ffi.cast("uintptr_t", _core_ffi.addressof(_core_lib, "lk_mm_accessible")))

_loaded: dict[str, Any] = {}
#: The address space each loaded library faults by, kept alive as long as the library is
#: loaded (its table is what the library's stand-ins read).  One per library: the last
#: ``use_memory`` of any oracle of that era and level wins.
_memory_of: dict[str, UserMemory] = {}


@dataclass(frozen=True)
class KernelState:
    """A real ``struct iov_iter``'s fields, as labkit's ``IovIter.state()`` names them."""

    type: str
    direction: str
    count: int
    iov_offset: int
    nr_segs: int
    seg: int
    heap: bool

    def as_dict(self) -> dict[str, int | str]:
        return {
            "type": self.type,
            "direction": self.direction,
            "count": self.count,
            "iov_offset": self.iov_offset,
            "nr_segs": self.nr_segs,
            "seg": self.seg,
        }


class KernelOracle:
    """One era's real ``lib/iov_iter.c``, loaded (one library per era and opt level)."""

    def __init__(self, era: str, opt: str = "defconfig", built: Built | None = None) -> None:
        self.era = era
        self.opt = opt
        self.built = built or build(era)
        path = self._path = str(self.built.library(opt))
        if path not in _loaded:
            _loaded[path] = ffi.dlopen(path)
        self.lib = _loaded[path]
        code = int(self.lib.lko_version())
        self.version = f"{code >> 16}.{(code >> 8) & 0xFF}.{code & 0xFF}"
        self.has_import_single_range = bool(self.lib.lko_has(1))
        self.has_import_ubuf = bool(self.lib.lko_has(2))
        self._mem: UserMemory | None = None
        self.use_memory(None)

    def use_memory(self, mem: UserMemory | None) -> None:
        """Fault where ``mem`` says (its table); None: an empty address space (all faults).

        The real code then reads and writes user memory only where ``mem`` maps it.
        """
        if mem is None:
            mem = UserMemory()  # nothing mapped: every user access faults
        self._mem = _memory_of[self._path] = mem
        ctx = int(_core_ffi.cast("uintptr_t", mem.c_mm))
        self.lib.lkr_set_access(
            ffi.cast("lkr_access_fn", _ACCESS_FN), ffi.cast("void *", ctx), PROT_READ, PROT_RW
        )

    @property
    def warnings(self) -> int:
        """How many WARNs the real code has raised in this process."""
        return int(self.lib.lkr_warnings())

    def iterator(self) -> KernelIter:
        """A fresh, not yet initialised ``struct iov_iter``."""
        return KernelIter(self)


def _u64(value: int) -> int:
    return value % 2**64


class KernelIter:
    """One ``struct iov_iter`` of the real code; every method calls the kernel's function."""

    def __init__(self, oracle: KernelOracle) -> None:
        self.oracle = oracle
        self._lib = oracle.lib
        self._h = ffi.gc(self._lib.lko_new(), self._lib.lko_free)
        self._keep: list[Any] = []
        self._start_count: int | None = None

    def import_iovec(self, direction: int, pairs: Sequence[tuple[int, int]]) -> int:
        """``import_iovec()`` of the user's array; the total or a negative errno."""
        segs = ffi.new("struct lko_seg[]", max(len(pairs), 1))
        for k, (addr, length) in enumerate(pairs):
            segs[k].base = _u64(addr)
            segs[k].len = _u64(length)
        return self._constructed(
            int(self._lib.lko_import_iovec(self._h, int(direction), segs, len(pairs)))
        )

    def import_ubuf(self, direction: int, addr: int, length: int) -> int:
        """``import_ubuf()`` (6.2+, and 6.1+ubuf); 0 or a negative errno (-ENOSYS: absent)."""
        return self._constructed(
            int(self._lib.lko_import_ubuf(self._h, int(direction), _u64(addr), _u64(length)))
        )

    def import_single_range(self, direction: int, addr: int, length: int) -> int:
        """``import_single_range()`` (until 6.7); 0 or a negative errno (-ENOSYS: absent)."""
        return self._constructed(
            int(
                self._lib.lko_import_single_range(self._h, int(direction), _u64(addr), _u64(length))
            )
        )

    def _host(self, buf: Any, what: str) -> tuple[Any, int]:
        """A writable host buffer kept alive with the iterator, and its address."""
        try:
            cbuf = ffi.from_buffer(buf, require_writable=True)
        except TypeError:
            raise TypeError(
                f"{what}: buf must be a writable buffer (bytearray, mmap, numpy)"
            ) from None
        self._keep = [buf, cbuf]
        return cbuf, int(ffi.cast("uintptr_t", cbuf))

    def _constructed(self, ret: int) -> int:
        st = self.state() if ret >= 0 else None
        self._start_count = st.count if st is not None else None
        return ret

    def kvec(
        self, direction: int, buf: Any, segments: Sequence[tuple[int, int]], count: int
    ) -> int:
        """``iov_iter_kvec()`` over (offset, length) pieces of the host buffer ``buf``.

        Raises:
            ValueError: a piece outside ``buf``, or ``count`` above the pieces' total.
        """
        cbuf, base = self._host(buf, "kvec")
        segs = ffi.new("struct lko_seg[]", max(len(segments), 1))
        total = 0
        for k, (offset, length) in enumerate(segments):
            if not (0 <= offset and 0 <= length and offset + length <= len(cbuf)):
                raise ValueError(f"kvec: piece {k} ({offset}, {length}) is not inside buf")
            segs[k].base, segs[k].len = base + offset, length
            total += length
        if not 0 <= count <= total:
            raise ValueError(f"kvec: count {count} is not within 0..{total}")
        return self._constructed(
            int(self._lib.lko_kvec(self._h, int(direction), segs, len(segments), count))
        )

    def bvec(
        self, direction: int, buf: Any, entries: Sequence[tuple[int, int, int]], count: int
    ) -> int:
        """``iov_iter_bvec()`` over (page index, offset, length) of the page-aligned host ``buf``.

        The page of entry k is ``buf``'s page ``page index``; offset and length select its
        bytes (they may run on into the following pages, as a multi-page bvec does).

        Raises:
            ValueError: ``buf`` not page-aligned, an entry outside it, or ``count`` above the
                entries' total.
        """
        cbuf, base = self._host(buf, "bvec")
        if base % PAGE_SIZE:
            raise ValueError("bvec: buf must start on a page boundary")
        segs = ffi.new("struct lko_bseg[]", max(len(entries), 1))
        total = 0
        for k, (page, offset, length) in enumerate(entries):
            start = page * PAGE_SIZE + offset
            if not (0 <= page and 0 <= offset < 2**32 and 0 <= length < 2**32):
                raise ValueError(f"bvec: entry {k} has a negative or too large field")
            if start + length > len(cbuf):
                raise ValueError(f"bvec: entry {k} ({page}, {offset}, {length}) is not inside buf")
            segs[k].page_addr, segs[k].offset, segs[k].len = base + page * PAGE_SIZE, offset, length
            total += length
        if not 0 <= count <= total:
            raise ValueError(f"bvec: count {count} is not within 0..{total}")
        return self._constructed(
            int(self._lib.lko_bvec(self._h, int(direction), segs, len(entries), count))
        )

    def _valid(self, what: str) -> KernelState:
        st = self.state()
        if st is None:
            raise ValueError(f"{what}: the iterator has not been set up (no successful import)")
        return st

    def advance(self, n: int) -> None:
        """``iov_iter_advance()`` (the kernel clamps ``n`` to the count)."""
        self._valid("advance")
        self._lib.lko_advance(self._h, _u64(n))

    def revert(self, n: int) -> None:
        """``iov_iter_revert()``.

        Raises:
            IterMisuseError: for a revert past the iterator's first byte (a kernel BUG,
                here refused before the real code runs).
        """
        st = self._valid("revert")
        if self._start_count is None or not 0 <= n <= self._start_count - st.count:
            raise IterMisuseError(f"revert({n}) goes past the start of the iterator")
        self._lib.lko_revert(self._h, _u64(n))

    def zero(self, n: int) -> int:
        """``iov_iter_zero()``: bytes zeroed."""
        self._valid("zero")
        return int(self._lib.lko_zero(self._h, _u64(n)))

    def copy_to_iter(self, data: bytes) -> int:
        """``copy_to_iter()`` of ``data``: bytes copied."""
        self._valid("copy_to_iter")
        src = ffi.from_buffer(data)
        return int(self._lib.lko_copy_to(self._h, src, len(data)))

    def copy_from_iter(self, n: int) -> bytes:
        """``copy_from_iter()`` of up to ``n`` bytes: the bytes copied."""
        self._valid("copy_from_iter")
        dst = ffi.new("char[]", max(n, 1))
        done = int(self._lib.lko_copy_from(self._h, dst, n))
        return ffi.buffer(dst, done)[:]

    def state(self) -> KernelState | None:
        """The iterator's fields, or None before a successful constructor or import."""
        out = ffi.new("struct lko_state *")
        self._lib.lko_state(self._h, out)
        if not out.valid:
            return None
        return KernelState(
            type=TYPE_NAMES.get(int(out.type), "OTHER"),
            direction="SOURCE" if out.data_source else "DEST",
            count=int(out.count),
            iov_offset=int(out.iov_offset),
            nr_segs=int(out.nr_segs),
            seg=int(out.seg),
            heap=bool(out.heap),
        )
