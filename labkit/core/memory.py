"""The modelled process address space: real anonymous mappings, checked on use.

:class:`UserMemory` owns real memory (anonymous ``mmap``) and registers each
mapping with the C core's address-space table.  Every user address the model
touches is checked against that table first, as the kernel's ``access_ok()``
and its fault handling would: a bad address is ``EFAULT``, never a crash.
"""

from __future__ import annotations

import errno
import mmap
import operator
import threading
from dataclasses import dataclass, field

import numpy as np

from labkit._ffi import ffi, lib, raise_errno

#: The page size of the model, from the C core (``LK_PAGE_SHIFT`` in lk_common.h):
#: every other module imports it from here.
PAGE_SHIFT = int(lib.LK_PAGE_SHIFT)
PAGE_SIZE = 1 << PAGE_SHIFT


@dataclass(eq=False)
class Mapping:
    """One mapping of a :class:`UserMemory`.

    Attributes:
        addr: the user address of the first byte (a real address, aligned as asked).
        size: length in bytes.
        array: a writable ``numpy.uint8`` view of the real bytes.
    """

    addr: int
    size: int
    array: np.ndarray = field(repr=False)
    _mmap: mmap.mmap = field(repr=False)
    mapped: bool = True

    @property
    def end(self) -> int:
        """One past the last address of the mapping."""
        return self.addr + self.size

    def __repr__(self) -> str:
        state = "" if self.mapped else ", unmapped"
        return f"Mapping(addr={self.addr:#x}, size={self.size}{state})"


class UserMemory:
    """A modelled user address space made of real anonymous mappings.

    Unmapping removes the range from the address space at once (later accesses
    are ``EFAULT``); the real memory is released when no Python object refers
    to it any more, so nothing can ever dangle.

    ``lock`` serialises every change of the address-space table with every C
    call that reads it (cffi releases the GIL during C calls): labkit's own
    code takes it around each such call.
    """

    def __init__(self) -> None:
        self._mm = ffi.gc(lib.lk_mm_new(), lib.lk_mm_free)
        if self._mm == ffi.NULL:
            raise MemoryError("cannot allocate the address-space table")
        self._maps: dict[int, Mapping] = {}
        self.lock = threading.RLock()

    @property
    def c_mm(self) -> object:
        """The C address-space table (for labkit's own C calls)."""
        return self._mm

    def map(self, size: int, *, align: int = PAGE_SIZE) -> Mapping:
        """Map ``size`` bytes of zeroed memory at an address aligned to ``align``.

        Raises:
            TypeError: if size or align is not an integer.
            OSError: EINVAL for a size <= 0 or an alignment that is not a power
                of two >= 4096; ENOMEM when the system has no memory for it.
        """
        try:
            size, align = operator.index(size), operator.index(align)
        except TypeError:
            raise TypeError(
                f"map: size and align must be integers, not "
                f"{type(size).__name__} and {type(align).__name__}"
            ) from None
        if size <= 0:
            raise_errno(errno.EINVAL, f"map: size must be > 0, got {size}")
        if align < PAGE_SIZE or align & (align - 1):
            raise_errno(errno.EINVAL, f"map: align must be a power of two >= 4096, got {align}")
        extra = align - PAGE_SIZE
        try:
            region = mmap.mmap(-1, size + extra, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        except (OverflowError, ValueError) as exc:
            raise_errno(errno.EINVAL, f"map: cannot map {size} bytes ({exc})")
        full = np.frombuffer(region, dtype=np.uint8)
        base = full.ctypes.data
        skip = (-base) % align
        array = full[skip : skip + size]
        addr = base + skip
        with self.lock:
            ret = lib.lk_mm_add(self._mm, addr, size)
            if ret < 0:
                raise_errno(-ret, f"map: cannot add {size} bytes at {addr:#x}")
            mapping = Mapping(addr=addr, size=size, array=array, _mmap=region)
            self._maps[addr] = mapping
        return mapping

    def unmap(self, mapping: Mapping) -> None:
        """Remove ``mapping`` from the address space.

        Raises:
            TypeError: if ``mapping`` is not a :class:`Mapping`.
            OSError: EINVAL if it is not mapped in this address space.
        """
        if not isinstance(mapping, Mapping):
            raise TypeError(f"unmap: expected a Mapping, not {type(mapping).__name__}")
        with self.lock:
            if self._maps.get(mapping.addr) is not mapping:
                raise_errno(errno.EINVAL, f"unmap: {mapping!r} is not mapped in this UserMemory")
            lib.lk_mm_remove(self._mm, mapping.addr)
            del self._maps[mapping.addr]
            mapping.mapped = False

    @property
    def mappings(self) -> list[Mapping]:
        """The live mappings, by address."""
        with self.lock:
            return [self._maps[a] for a in sorted(self._maps)]

    def access_ok(self, addr: int, length: int) -> bool:
        """True if ``[addr, addr + length)`` is mapped (always true for length 0)."""
        if not 0 <= addr < 2**64 or not 0 <= length < 2**64:
            return False
        with self.lock:
            return bool(lib.lk_mm_access_ok(self._mm, addr, length))

    def find(self, addr: int) -> Mapping | None:
        """The live mapping that holds ``addr``, or None."""
        with self.lock:
            for m in self._maps.values():
                if m.addr <= addr < m.end:
                    return m
        return None

    def view(self, addr: int, length: int) -> np.ndarray:
        """A writable uint8 view of ``length`` bytes at ``addr`` inside one mapping.

        Raises:
            OSError: EFAULT if the range is not inside one live mapping.
        """
        m = self.find(addr)
        if m is None or length < 0 or addr + length > m.end:
            raise_errno(errno.EFAULT, f"view: [{addr:#x}, +{length}) is not inside one mapping")
        return m.array[addr - m.addr : addr - m.addr + length]

    def __repr__(self) -> str:
        total = sum(m.size for m in self._maps.values())
        return f"UserMemory({len(self._maps)} mappings, {total} bytes)"
