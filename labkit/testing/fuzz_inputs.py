"""What the fuzzer (:mod:`labkit.testing.fuzz_driver`) draws: hostile integers, junk,
guarded buffers and user memory, and the guards that catch a write outside them."""

from __future__ import annotations

import os
import random
from collections import deque
from typing import Any

import numpy as np

import labkit
from labkit import ITER_DEST, ITER_SOURCE, IovIter
from labkit.core.memory import PROT_NONE, PROT_READ, PROT_RW

ALLOWED = (OSError, ValueError, TypeError)
PAGE = labkit.PAGE_SIZE
GUARD = 2 * PAGE
EDGES = [0, 1, 7, PAGE - 1, PAGE, PAGE + 1, 2**31 - 1, 2**31, 2**32, 2**32 + 1]
EDGES += [2**63 - 1, 2**63, 2**64 - 1, 2**64, 2**100, labkit.MAX_RW_COUNT]
EDGES += [labkit.MAX_RW_COUNT + 1, -1, -(2**63), -(2**64), -(2**100)]
JUNK = [None, 1.5, float("inf"), float("nan"), "8", b"8", [1], {}, object(), np.float32(2)]
MAX_ITERS = 24
MAX_ARENAS = 12
MAX_OWNERS = 8
BIG = np.full(16 * PAGE + 3, 0xC3, np.uint8)  # what threads copy: big, for long races
BURST_SECONDS = 0.04
RECENT_GUARDS = 48  # guards of user mappings and page caches: the most recent are checked
# labkit.teach.viz imports matplotlib, whose ft2font aborts in ASan's C++ exception
# interceptor when the runtime is preloaded into an uninstrumented Python: not under it
VIZ = os.environ.get("LABKIT_UNDER_SANITIZER") != "1"


def pattern(n: int, salt: int) -> np.ndarray:
    """Guard bytes that change with position (a shifted copy does not match)."""
    return ((np.arange(n, dtype=np.uint32) * 131 + salt * 7 + 0x5A) & 0xFF).astype(np.uint8)


class Guard:
    """Bytes that must never change: a view and the copy they must equal."""

    def __init__(self, view: np.ndarray, name: str) -> None:
        self.view, self.expected, self.name = view, view.copy(), name

    def stray(self) -> int:
        return int(np.count_nonzero(self.view != self.expected))


class Inputs:
    """The values and memory a :class:`~labkit.testing.fuzz_driver.Fuzzer` draws (its state
    is set up by the Fuzzer)."""

    rng: random.Random
    guards: list[Guard]
    recent: deque[Guard]
    arenas: list[np.ndarray]
    mem: labkit.UserMemory
    regions: list[Any]
    pinned: set[int]

    # ---- values --------------------------------------------------------------------

    def integer(self, scale: int = 3 * PAGE) -> Any:
        r = self.rng.random()
        if r < 0.55:
            return self.rng.randrange(0, scale + 1)
        if r < 0.85:
            return self.rng.choice(EDGES)
        if r < 0.95:
            return self.rng.randrange(-(2**70), 2**70)
        return self.rng.choice(JUNK)

    def amount(self, it: IovIter) -> Any:
        """A byte count for an operation: hostile, or just around the iterator's edges."""
        r = self.rng.random()
        if r < 0.4:
            return self.integer()
        base = self.rng.choice([it.count, it.iov_offset, it.count + it.iov_offset])
        return max(0, base + self.rng.randint(-70, 70))

    def direction(self) -> Any:
        return self.rng.choice([ITER_DEST, ITER_SOURCE, ITER_DEST, ITER_SOURCE, 0, 1, 2, None])

    def arena(self) -> np.ndarray:
        """The inner part of a guarded numpy allocation (made on demand)."""
        if len(self.arenas) < MAX_ARENAS and (not self.arenas or self.rng.random() < 0.2):
            n = self.rng.choice([1, 16, 100, PAGE, 3 * PAGE + 5, 16 * PAGE + 3])
            whole = np.zeros(GUARD + n + GUARD, np.uint8)
            whole[:GUARD] = pattern(GUARD, len(self.guards))
            whole[GUARD + n :] = pattern(GUARD, len(self.guards) + 1)
            self.guards += [Guard(whole[:GUARD], "arena head"), Guard(whole[GUARD + n :], "tail")]
            self.arenas.append(whole[GUARD : GUARD + n])
        return self.rng.choice(self.arenas)

    def buffer(self) -> Any:
        """A buffer inside an arena, in one of the forms the API meets."""
        a = self.arena()
        lo = self.rng.randrange(0, len(a))
        piece = a[lo : self.rng.randrange(lo, len(a) + 1)]
        kind = self.rng.randrange(9)
        if kind == 0:
            return memoryview(piece)
        if kind == 1:
            ro = piece.view()
            ro.flags.writeable = False
            return ro
        if kind == 2:
            return piece[::2]  # not contiguous: refused
        if kind == 3 and len(piece) >= 8:
            return piece[: len(piece) // 8 * 8].view(np.float64)
        if kind == 4:
            return memoryview(piece)[::3]
        if kind == 5:
            return self.rng.choice([bytearray(self.rng.randrange(64)), bytes(5), b"", "text"])
        return piece

    def data(self) -> Any:
        r = self.rng.random()
        if r < 0.6:
            return bytes(self.rng.randrange(256) for _ in range(self.rng.randrange(0, 300)))
        if r < 0.8:
            return memoryview(bytearray(self.rng.randrange(0, 5000)))
        if r < 0.9:
            return np.full(self.rng.randrange(0, 9000), 0xEE, np.uint8)
        return self.rng.choice(JUNK + [np.zeros(3, object), np.zeros(8)[::2]])

    def region(self) -> Any:
        """An inner user mapping: guard pages around it, mapped and then unmapped."""
        if len(self.regions) < 8 and (not self.regions or self.rng.random() < 0.15):
            huge = self.rng.random() < 0.05
            size = (2 << 20) if huge else self.rng.choice([1, 2, 3, 5]) * PAGE
            guard = (2 << 20) if huge else GUARD
            prot = self.rng.choice([PROT_RW] * 6 + [PROT_READ, PROT_NONE])
            pieces = self.call(
                "map_contiguous",
                self.mem.map_contiguous,
                [(guard, PROT_RW), (size, prot), (guard, PROT_RW)],
                align=(2 << 20) if huge else PAGE,
            )
            if pieces:
                head, inner, tail = pieces
                # the guard bytes next to the inner mapping: an overflow lands there first
                for g, near in ((head, head.array[-GUARD:]), (tail, tail.array[:GUARD])):
                    near[:] = pattern(GUARD, self.calls)
                    self.recent.append(Guard(near, f"guard pages around {inner!r}"))
                    self.mem.unmap(g)
                self.regions.append(inner)
        return self.rng.choice(self.regions) if self.regions else None

    def address(self) -> tuple[Any, Any]:
        """(addr, length): mostly inside a user mapping, sometimes anywhere at all."""
        m = self.region()
        r = self.rng.random()
        if m is None or r < 0.15:
            return self.integer(2**47), self.integer()
        off = self.rng.randrange(0, m.size + 1)
        if r < 0.25:  # into the guard pages, which are not in the address space
            off = self.rng.choice([-GUARD, -1, m.size, m.size + 7])
        length = self.rng.randrange(0, m.size - min(off, m.size) + 1)
        if self.rng.random() < 0.2:
            length = self.integer(2**40)  # past the mapping: copies must fault there
        return m.addr + off, length
