"""The modelled process address space: real anonymous mappings, checked on use.

:class:`UserMemory` owns real memory (anonymous ``mmap``) and registers each
mapping, with its protection, in the C core's address-space table.  As in the
kernel, user addresses are checked twice, at two different times:

- at import, :func:`access_ok` checks only that a range lies in user space
  (below the top of the user address space); it does not look at mappings;
- at copy time, each piece of user memory is looked up in the table before it
  is touched, and a copy stops at the first byte that is not mapped with the
  access it needs (written for a destination, read for a source), returning
  the bytes done, as the kernel's ``copy_to_user()`` does after a fault.

So a bad address is a short count or ``EFAULT``, never a crash.
"""

from __future__ import annotations

import errno
import mmap
import operator
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from labkit._args import index_arg
from labkit._ffi import ffi, lib, owned, raise_errno

#: The page size of the model, from the C core (``LK_PAGE_SHIFT`` in lk_common.h):
#: every other module imports it from here.
PAGE_SHIFT = int(lib.LK_PAGE_SHIFT)
PAGE_SIZE = 1 << PAGE_SHIFT
PROT_NONE = 0
"""No access: a hole a copy faults on (``mmap.PROT_NONE``)."""
# the values of mmap's (the C core's LK_PROT_* equal them, checked when it is compiled);
# plain numbers here so that importing labkit needs nothing new from an older build
PROT_READ = mmap.PROT_READ
"""Readable (``mmap.PROT_READ``): a source can be copied from it, a destination faults."""
PROT_WRITE = mmap.PROT_WRITE
"""Writable (``mmap.PROT_WRITE``); as on x86-64, writable memory is readable too."""
PROT_RW = PROT_READ | PROT_WRITE
_PROTS = (PROT_NONE, PROT_READ, PROT_RW)
_PROT_NAMES = {PROT_NONE: "PROT_NONE", PROT_READ: "PROT_READ", PROT_RW: "PROT_READ|PROT_WRITE"}
USER_PTR_MAX = 0x7FFFFFFFF000
"""The top of user space on x86-64 with 4-level page tables, 0x7ffffffff000
(``TASK_SIZE_MAX``, which the kernel's ``USER_PTR_MAX`` equals): the highest
address at which a range checked by :func:`access_ok` may end."""


def access_ok(addr: int, length: int) -> bool:
    """The kernel's ``access_ok(addr, length)`` on x86-64: does the range lie in user space?

    True when ``addr + length`` does not wrap and is at most :data:`USER_PTR_MAX`
    (``valid_user_address(addr + length)``).  An empty range is checked too: an
    address above the top of user space is refused even with length 0.  The
    mappings are not looked at: an unmapped range in user space is "ok" here,
    and faults when a copy reaches it.  Values outside 64 bits are never ok.
    """
    addr, length = operator.index(addr), operator.index(length)
    if not 0 <= addr < 2**64 or not 0 <= length < 2**64:
        return False
    return bool(lib.lk_access_ok(addr, length))


def _prot_arg(prot: object, what: str) -> int:
    try:
        value = operator.index(prot)
    except TypeError:
        raise TypeError(f"{what}: prot must be an integer, not {type(prot).__name__}") from None
    if value not in _PROTS:
        raise_errno(
            errno.EINVAL,
            f"{what}: prot must be PROT_NONE, PROT_READ or PROT_READ|PROT_WRITE, got {value}",
        )
    return value


@dataclass(eq=False)
class UserMapping:
    """One mapping of a :class:`UserMemory`.

    Attributes:
        addr: the user address of the first byte (a real address, aligned as asked).
        size: length in bytes.
        prot: PROT_NONE, PROT_READ or PROT_READ|PROT_WRITE, as the real pages are.
        mapped: False once :meth:`UserMemory.unmap` has removed it.
    """

    addr: int
    size: int
    _array: np.ndarray = field(repr=False)
    _mmap: mmap.mmap = field(repr=False)
    prot: int = PROT_RW
    mapped: bool = True

    @property
    def end(self) -> int:
        """One past the last address of the mapping."""
        return self.addr + self.size

    @property
    def array(self) -> np.ndarray:
        """A ``numpy.uint8`` view of the real bytes: writable for PROT_READ|PROT_WRITE,
        read-only for PROT_READ.

        Raises:
            OSError: EFAULT for a PROT_NONE mapping (its pages cannot be touched).
        """
        if self.prot == PROT_NONE:
            raise_errno(errno.EFAULT, f"{self!r} is PROT_NONE: its bytes cannot be read")
        return self._array

    def __repr__(self) -> str:
        state = "" if self.mapped else ", unmapped"
        prot = "" if self.prot == PROT_RW else f", {_PROT_NAMES[self.prot]}"
        return f"UserMapping(addr={self.addr:#x}, size={self.size}{prot}{state})"


class UserMemory:
    """A modelled user address space made of real anonymous mappings.

    Each mapping has a protection (PROT_READ|PROT_WRITE by default), set on
    the real pages when it is mapped and never changed afterwards: the
    table the C core checks and the page tables the running kernel checks
    always agree, so the same addresses can be handed to real system calls
    (tests/test_kernel_differential.py does).  :meth:`map_contiguous` puts
    mappings of different protections side by side: a PROT_NONE page right
    after writable memory is a hole a copy runs into.

    Unmapping removes the range from the modelled address space at once
    (later copies fault on it); the real memory stays allocated, and
    readable through ``UserMapping.array``, until no Python object refers to it
    any more, so nothing can ever dangle.  The running kernel would still
    reach such memory: differential tests use PROT_NONE holes instead.

    ``lock`` serialises every change of the address-space table with every C
    call that reads it (cffi releases the GIL during C calls): labkit's own
    code takes it around each such call.
    """

    def __init__(self) -> None:
        self._mm = owned(lib.lk_mm_new, lib.lk_mm_free, "the address-space table")
        self._maps: dict[int, UserMapping] = {}
        self.lock = threading.RLock()

    @property
    def c_mm(self) -> object:
        """The C address-space table (for labkit's own C calls)."""
        return self._mm

    def map(self, size: int, *, align: int = PAGE_SIZE, prot: int = PROT_RW) -> UserMapping:
        """Map ``size`` bytes of zeroed memory at an address aligned to ``align``.

        Args:
            size: bytes (> 0).
            align: a power of two >= 4096.
            prot: PROT_READ|PROT_WRITE (default), PROT_READ or PROT_NONE, for the
                real pages and for the model's checks alike.

        Raises:
            TypeError: if size, align or prot is not an integer.
            OSError: EINVAL for a size <= 0, an alignment that is not a power
                of two >= 4096 or another protection; ENOMEM when the system
                has no memory for it.
        """
        return self.map_contiguous([(size, prot)], align=align)[0]

    def map_contiguous(
        self, pieces: Sequence[tuple[int, int]], *, align: int = PAGE_SIZE
    ) -> list[UserMapping]:
        """Map adjacent mappings, one per ``(size, prot)``, the first aligned to ``align``.

        They are carved out of one real region, so each starts where the one
        before it ends: every size but the last must be a multiple of the page
        size (protections apply to whole pages).  Returns the mappings in
        address order.

        Raises:
            TypeError: for a piece that is not a (size, prot) pair of integers.
            OSError: EINVAL for no pieces, a size <= 0, a size other than the last
                that is not a multiple of 4096, a bad alignment or protection;
                ENOMEM when the system has no memory for it.
        """
        try:
            align = operator.index(align)
            specs = [(operator.index(size), prot) for size, prot in pieces]
        except (TypeError, ValueError):
            raise TypeError(
                "map: size and align must be integers, and pieces (size, prot) pairs"
            ) from None
        if not specs:
            raise_errno(errno.EINVAL, "map_contiguous: no pieces")
        specs = [(size, _prot_arg(prot, "map")) for size, prot in specs]
        for k, (size, _prot) in enumerate(specs):
            if size <= 0:
                raise_errno(errno.EINVAL, f"map: size must be > 0, got {size}")
            if k < len(specs) - 1 and size % PAGE_SIZE:
                raise_errno(
                    errno.EINVAL,
                    f"map_contiguous: piece {k} has {size} bytes, not "
                    "a multiple of the page size (only the last may be)",
                )
        if align < PAGE_SIZE or align & (align - 1):
            raise_errno(errno.EINVAL, f"map: align must be a power of two >= 4096, got {align}")
        total = sum(size for size, _prot in specs)
        extra = align - PAGE_SIZE
        try:
            region = mmap.mmap(-1, total + extra, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        except (OverflowError, ValueError) as exc:
            raise_errno(errno.EINVAL, f"map: cannot map {total} bytes ({exc})")
        full = np.frombuffer(region, dtype=np.uint8)
        base = full.ctypes.data
        skip = (-base) % align
        out: list[UserMapping] = []
        with self.lock:
            try:
                off = skip
                for size, prot in specs:
                    addr = base + off
                    array = full[off : off + size]
                    if prot != PROT_RW:
                        # whole pages: the last piece's tail page belongs to the region
                        ret = lib.lk_mprotect(addr, size, prot)
                        if ret < 0:
                            raise_errno(-ret, f"map: mprotect of {size} bytes at {addr:#x}")
                        if prot == PROT_READ:
                            array = array.view()
                            array.flags.writeable = False
                    ret = lib.lk_mm_add(self._mm, addr, size, prot)
                    if ret < 0:
                        raise_errno(-ret, f"map: cannot add {size} bytes at {addr:#x}")
                    mapping = UserMapping(
                        addr=addr, size=size, _array=array, _mmap=region, prot=prot
                    )
                    self._maps[addr] = mapping
                    out.append(mapping)
                    off += size
            except BaseException:
                for m in out:
                    lib.lk_mm_remove(self._mm, m.addr)
                    del self._maps[m.addr]
                    m.mapped = False
                raise
        return out

    def unmap(self, mapping: UserMapping) -> None:
        """Remove ``mapping`` from the address space.

        Raises:
            TypeError: if ``mapping`` is not a :class:`UserMapping`.
            OSError: EINVAL if it is not mapped in this address space.
        """
        if not isinstance(mapping, UserMapping):
            raise TypeError(f"unmap: expected a UserMapping, not {type(mapping).__name__}")
        with self.lock:
            if self._maps.get(mapping.addr) is not mapping:
                raise_errno(errno.EINVAL, f"unmap: {mapping!r} is not mapped in this UserMemory")
            lib.lk_mm_remove(self._mm, mapping.addr)
            del self._maps[mapping.addr]
            mapping.mapped = False

    @property
    def mappings(self) -> list[UserMapping]:
        """The live mappings, by address."""
        with self.lock:
            return [self._maps[a] for a in sorted(self._maps)]

    def accessible(self, addr: int, length: int, *, write: bool = False) -> int:
        """Bytes from ``addr``, up to ``length``, that a copy reaches before it faults.

        The model's page-table walk: the length of the prefix of
        ``[addr, addr + length)`` that lies in live mappings (adjacent ones are
        contiguous) readable, or with ``write`` writable.
        """
        addr, length = operator.index(addr), operator.index(length)
        if not 0 <= addr < 2**64 or length <= 0:
            return 0
        need = PROT_WRITE if write else PROT_READ
        with self.lock:
            return int(lib.lk_mm_accessible(self._mm, addr, min(length, 2**64 - 1), need, ffi.NULL))

    def is_mapped(self, addr: int, length: int, *, write: bool = False) -> bool:
        """True if all of ``[addr, addr + length)`` is mapped readable (or writable); an
        empty range always is.

        This is what a copy needs, not what an import checks (see :func:`access_ok`).
        """
        addr, length = operator.index(addr), operator.index(length)
        if length == 0:
            return True
        if not 0 <= addr < 2**64 or not 0 < length < 2**64:
            return False
        return self.accessible(addr, length, write=write) == length

    def find(self, addr: int) -> UserMapping | None:
        """The live mapping that holds ``addr``, or None (TypeError if it is not an integer)."""
        addr = index_arg(addr, "addr")
        with self.lock:
            for m in self._maps.values():
                if m.addr <= addr < m.end:
                    return m
        return None

    def view(self, addr: int, length: int) -> np.ndarray:
        """A uint8 view of ``length`` bytes at ``addr`` inside one mapping (read-only
        if the mapping is PROT_READ).

        Raises:
            OSError: EFAULT if the range is not inside one live, readable mapping.
        """
        m = self.find(addr)
        length = index_arg(length, "length")
        if m is None or length < 0 or addr + length > m.end or m.prot == PROT_NONE:
            raise_errno(
                errno.EFAULT, f"view: [{addr:#x}, +{length}) is not inside one readable mapping"
            )
        return m.array[addr - m.addr : addr - m.addr + length]

    def __repr__(self) -> str:
        total = sum(m.size for m in self._maps.values())
        return f"UserMemory({len(self._maps)} mappings, {total} bytes)"
