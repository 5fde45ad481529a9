"""A seeded random-operation fuzzer of labkit's API; run as a script in a child process.

Usage: ``python -m labkit.testing.fuzz_driver --seed S --calls N``

Each step picks a random operation: building iterators of every type (over
numpy arrays, memoryviews, read-only and non-contiguous arrays, bytes and
bytearrays; imports of user memory; registered buffers with every seek and
every historical bug switch; page caches and folio queues), moving and
copying through them with hostile integers (negative, 2**32, 2**63, 2**64,
2**100, MAX_RW_COUNT + 1 ...) and junk values (floats, strings, bytes, None),
unmapping memory between an import and a copy, mapping more, threads driving
one iterator at the same time, and memoryviews left in reference cycles for
the collector.

Writes outside the buffers are detected with guard regions: every buffer the
fuzzer hands to labkit is the inner part of a larger allocation whose outer
parts are filled with a pattern and are never described to labkit (for user
memory: pages mapped with the inner mapping and then unmapped from the model,
so a copy that runs past the inner part must fault, not write).  Memory
unmapped by an operation is snapshotted and must not change afterwards either
(unless a registered buffer still pins it, as the kernel's does).  Every guard
is compared after every step.

Only OSError, ValueError (IterMisuseError included) and TypeError may come out
of a call; anything else is an "unexpected" exception.  The last line printed
is a JSON summary: calls, unexpected, stray_bytes, hangs, seconds.  Exit
status 0 when all are 0; 1 for a stray write or an unexpected exception (the
last steps are printed); 3 for a hang (a thread that does not finish); a
crash ends the process with its signal (the caller counts those).
"""

from __future__ import annotations

import argparse
import gc
import json
import mmap
import random
import sys
import threading
import time
import traceback
from collections import deque
from typing import Any

import numpy as np

import labkit
from labkit import ITER_DEST, ITER_SOURCE, IovIter
from labkit.core.fixed import BUGS, SEEKS
from labkit.core.memory import PROT_NONE
from labkit.measure import timers
from labkit.testing.fuzz_inputs import (
    ALLOWED,
    BIG,
    BURST_SECONDS,
    MAX_ITERS,
    MAX_OWNERS,
    PAGE,
    RECENT_GUARDS,
    VIZ,
    Guard,
    Inputs,
    pattern,
)


class Fuzzer(Inputs):
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.seed = seed
        self.calls = self.unexpected = self.stray = self.hangs = 0
        self.thread_calls = 0  # made by the threads of op_threads (not in the calls budget)
        self.log: deque[Any] = deque(maxlen=40)
        self.guards: list[Guard] = []  # around the numpy arenas, checked for the whole run
        self.recent: deque[Guard] = deque(maxlen=RECENT_GUARDS)  # around later memory
        self.arenas: list[np.ndarray] = []  # inner parts of guarded numpy allocations
        self.mem = labkit.UserMemory()
        self.regions: list[Any] = []  # inner user mappings (guards unmapped around them)
        self.pinned: set[int] = set()  # mappings a registered buffer covers
        self.regs: list[Any] = []
        self.iters: list[IovIter] = []
        self.owners: list[Any] = []  # page caches and folio queues

    # ---- bookkeeping ---------------------------------------------------------------

    def call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """One labkit call: counted, logged, only the documented exceptions allowed."""
        self.calls += 1
        # buffers are summarised at once: the log must not keep them alive (a lifetime
        # bug would hide behind that); numbers are kept as they are
        self.log.append((what, tuple(map(_brief, args)), kwargs))
        try:
            return fn(*args, **kwargs)
        except ALLOWED:
            return None
        except Exception:
            self.unexpected += 1
            self.log.append("UNEXPECTED " + traceback.format_exc(limit=4))
            return None

    def check_guards(self) -> None:
        for g in (*self.guards, *self.recent):
            n = g.stray()
            if n:
                self.stray += n
                self.log.append(f"STRAY: {n} bytes changed in {g.name}")
                g.expected = g.view.copy()  # count each write once

    # ---- operations ----------------------------------------------------------------

    def keep(self, it: Any) -> None:
        if isinstance(it, IovIter):
            self.iters.append(it)
            if len(self.iters) > MAX_ITERS:
                self.iters.pop(self.rng.randrange(len(self.iters)))

    def op_build_python(self) -> None:
        which = self.rng.randrange(5)
        d = self.direction()
        if which == 0:
            it = self.call("ubuf", IovIter.ubuf, d, self.buffer())
        elif which in (1, 2):
            bufs = [self.buffer() for _ in range(self.rng.randrange(0, 6))]
            count = self.rng.choice([None, None, self.integer()])
            make = IovIter.iovec if which == 1 else IovIter.kvec
            it = self.call("iovec/kvec", make, d, bufs, count=count)
        elif which == 3:
            entries = []
            for _ in range(self.rng.randrange(0, 5)):
                page = self.arena()
                off = self.rng.randrange(0, len(page) + 1)
                length = self.rng.randrange(0, len(page) - off + 1)
                if self.rng.random() < 0.2:
                    off, length = self.integer(), self.integer()
                entries.append((page, off, length))
            it = self.call("bvec", IovIter.bvec, d, entries, count=self.rng.choice([None, 10]))
        else:
            it = self.call("discard", IovIter.discard, d, self.integer(2**20))
        self.keep(it)

    def op_import(self) -> None:
        which = self.rng.randrange(4)
        d = self.direction()
        kernel = self.rng.choice(["6.3", "6.4", "6.4", "x", (6, 1), 6.4])
        if which <= 1:
            n = self.rng.choice([0, 1, 1, 2, 3, 8, 9, 20, 1025])
            iovecs = [self.address() for _ in range(n)]
            fast = self.rng.choice([8, 8, 0, 1, labkit.UIO_MAXIOV, self.integer()])
            it = self.call(
                "import_iovec",
                labkit.import_iovec,
                d,
                iovecs,
                self.mem,
                fast_segs=fast,
                kernel=kernel,
            )
        elif which == 2:
            it = self.call("import_ubuf", labkit.import_ubuf, d, *self.address(), self.mem)
        else:
            it = self.call(
                "import_single_range",
                labkit.import_single_range,
                d,
                *self.address(),
                self.mem,
                kernel=kernel,
            )
        self.keep(it)

    def op_register(self) -> None:
        m = self.region()
        if m is None:
            return
        off = self.rng.randrange(0, m.size)
        addr, length = m.addr + off, self.rng.randrange(1, m.size - off + 1)
        if self.rng.random() < 0.15:
            addr, length = self.integer(2**47), self.integer()
        shift = self.rng.choice([12, 12, 12, 21, 13, 31, self.integer()])
        reg = self.call(
            "register_buffer", labkit.register_buffer, self.mem, addr, length, folio_shift=shift
        )
        if reg is not None:  # its pages stay writable through it after an unmap
            self.regs = [*self.regs[-7:], reg]
            self.pinned.update(mm.addr for mm in reg._mappings)

    def op_import_fixed(self) -> None:
        if not self.regs:
            return self.op_register()
        reg = self.rng.choice(self.regs)
        seek = self.rng.choice(sorted(SEEKS) + ["nope"])
        bugs = [name for name, (_flag, where) in BUGS.items() if where == seek]
        bugs = self.rng.choice([(), tuple(bugs), ("count-2019",), ("nope",)])
        off = self.rng.randrange(0, reg.length + 1)
        length = self.rng.randrange(0, reg.length - off + 1)
        addr = reg.addr + off
        if self.rng.random() < 0.15:
            addr, length = self.integer(2**47), self.integer()
        it = self.call(
            "io_import_fixed", labkit.io_import_fixed, self.direction(), reg, addr, length,
            seek=seek, bugs=bugs,
        )  # fmt: skip
        self.keep(it)

    def op_pagecache(self) -> None:
        if (self.rng.random() < 0.5 or not self.owners) and len(self.owners) < MAX_OWNERS:
            pages = self.rng.choice([1, 2, 4, 33])
            region = mmap.mmap(-1, (pages + 2) * PAGE)
            whole = np.frombuffer(region, np.uint8)
            whole[:PAGE] = pattern(PAGE, 1)
            whole[-PAGE:] = pattern(PAGE, 2)
            self.recent.append(Guard(whole[:PAGE], "the page before a page cache"))
            self.recent.append(Guard(whole[-PAGE:], "the page after a page cache"))
            inner = whole[PAGE:-PAGE]
            if self.rng.random() < 0.5:
                owner = self.call("PageCache.from_buffer", labkit.PageCache.from_buffer, inner)
            else:
                owner = self.call("FolioQueue.from_buffer", labkit.FolioQueue.from_buffer, inner)
            if owner is not None:
                self.owners.append((owner, pages, region))
            return
        owner, pages, _region = self.rng.choice(self.owners)
        d = self.direction()
        if isinstance(owner, labkit.PageCache):
            if self.rng.random() < 0.2:
                self.call("PageCache.erase", owner.erase, self.rng.randrange(0, pages + 1))
            start = self.rng.randrange(0, pages * PAGE + 1)
            count = self.rng.choice([self.rng.randrange(0, pages * PAGE + 1), self.integer()])
            self.keep(self.call("xarray", IovIter.xarray, d, owner, start, count))
        else:
            r = self.rng.random()
            if r < 0.1:
                self.call("FolioQueue.clear", owner.clear, 0, self.rng.randrange(0, 32))
            elif r < 0.13:
                self.call("FolioQueue.free", owner.free)
            slot, off = self.rng.randrange(0, 32), self.rng.choice([0, 1, PAGE - 1, PAGE])
            self.keep(
                self.call(
                    "folio_queue",
                    IovIter.folio_queue,
                    d,
                    owner,
                    slot,
                    off,
                    self.rng.choice([None, self.integer()]),
                )  # fmt: skip
            )

    def op_iter(self, it: IovIter | None = None) -> None:
        if it is None:
            if not self.iters:
                return
            it = self.rng.choice(self.iters)
        op = self.rng.randrange(14)
        n = self.amount(it)
        if op == 0:
            self.call("advance", it.advance, n)
        elif op == 1:
            self.call("revert", it.revert, n)
        elif op == 2:
            self.call("truncate", it.truncate, n)
        elif op == 3:
            self.call("reexpand", it.reexpand, n)
        elif op in (4, 5):
            self.call("copy_to_iter", it.copy_to_iter, self.data())
        elif op == 6 and it.count <= 2**24:
            self.call("copy_from_iter", it.copy_from_iter, n)
        elif op == 7 and (it.iter_type == "DISCARD" or it.count <= 2**24):
            self.call("zero", it.zero, n)
        elif op == 8:
            self.call("npages", it.npages, n)
        elif op == 9:
            self.call("extract_pages", it.extract_pages, n, self.rng.choice([0, 1, 4, n]))
        elif op == 10:
            for q in (it.state, it.single_seg_count, it.alignment, it.iovec, lambda: repr(it)):
                self.call("query", q)
        elif op == 11 and VIZ:
            from labkit.teach import viz  # on use: matplotlib

            self.call("iter_segments", viz.iter_segments, it)
        elif op == 12 and it.count <= 2**20:
            self.call("time_advance", timers.time_advance, it, n, self.rng.choice([1, 5]))
        elif op == 13:
            self.call("single_seg_count", it.single_seg_count)

    def burst(self, it: IovIter) -> None:
        """What one of several threads sharing ``it`` does, for BURST_SECONDS: mostly
        whole copies and rewinds to the start (a race needs long C calls that overlap
        while the iterator still has bytes left), now and then any other move."""
        end = time.monotonic() + BURST_SECONDS
        full = it.count + it.iov_offset  # what a rewind gives back (the first segment's worth)
        while time.monotonic() < end:
            r = self.rng.random()
            if r < 0.35:
                self.call("copy_to_iter", it.copy_to_iter, BIG)
            elif r < 0.45 and it.count <= 2**24:
                self.call("copy_from_iter", it.copy_from_iter, min(it.count, len(BIG)))
            elif r < 0.55 and it.count <= 2**24:
                self.call("zero", it.zero, min(it.count, len(BIG)))
            elif r < 0.8:
                self.call("revert", it.revert, it.iov_offset)  # back to the start
            elif r < 0.97:
                self.call("reexpand", it.reexpand, max(full - it.iov_offset, 0))
            else:
                self.op_iter(it)

    def op_unmap(self) -> None:
        live = [m for m in self.regions if m.mapped]
        if not live:
            return
        m = self.rng.choice(live)
        self.call("unmap", self.mem.unmap, m)
        if m.addr not in self.pinned and m.prot != PROT_NONE:
            self.recent.append(Guard(m.array, f"unmapped {m!r}"))  # nothing may write it now
        self.regions.remove(m)

    def op_threads(self) -> None:
        """Three threads on one iterator at once; none may hang, nothing may escape.

        Half the time the iterator is a fresh one over the biggest arena or user
        mapping (long copies: wide windows for a race), else one from the pool.
        """
        it = self.rng.choice(self.iters) if self.iters else None
        if it is None or self.rng.random() < 0.5:
            big = max(self.arenas, key=len, default=None)
            m = max((r for r in self.regions if r.mapped), key=lambda r: r.size, default=None)
            d = self.rng.choice([ITER_DEST, ITER_SOURCE])
            if self.rng.random() < 0.5 and big is not None:
                it = self.call("ubuf", IovIter.ubuf, d, big) or it
            elif m is not None:
                span = [(m.addr, m.size)] * self.rng.choice([1, 1, 2])
                it = self.call("import_iovec", labkit.import_iovec, d, span, self.mem) or it
        if it is None:
            return
        seeds = [self.rng.randrange(2**32) for _ in range(3)]

        def run(seed: int) -> None:
            sub = Fuzzer.__new__(Fuzzer)
            sub.__dict__.update(self.__dict__)
            sub.rng = random.Random(seed)
            sub.log = deque(maxlen=5)
            sub.calls = sub.unexpected = 0
            start.wait(30)  # all three at once: the C calls overlap
            sub.burst(it)
            with lock:
                self.thread_calls += sub.calls
                self.unexpected += sub.unexpected
                self.log.extend(e for e in sub.log if isinstance(e, str))

        lock, start = threading.Lock(), threading.Barrier(3)
        threads = [threading.Thread(target=run, args=(s,), daemon=True) for s in seeds]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        if any(t.is_alive() for t in threads):
            self.hangs += 1
            self.log.append(f"HANG: a thread on {it!r} did not finish in 60 s")

    def op_cycle(self) -> None:
        """Memoryviews whose exports labkit holds, left in reference cycles."""
        mv = memoryview(bytearray(self.rng.randrange(1, 200)))
        it = self.call("ubuf(memoryview)", IovIter.ubuf, self.rng.choice([ITER_DEST, 7]), mv)
        box: list[Any] = [it, mv]
        box.append(box)

        def refused() -> None:
            try:
                IovIter.kvec(ITER_SOURCE, [bytearray(4)]).copy_to_iter(memoryview(bytearray(3)))
            except ALLOWED as exc:
                err = exc  # noqa: F841 - the frame, the exception and the view form a cycle

        self.call("refused copy in a cycle", refused)
        del box, mv, it
        gc.collect()

    OPS = [
        ("build_python", 10),
        ("import", 10),
        ("register", 2),
        ("import_fixed", 5),
        ("pagecache", 4),
        ("iter", 55),
        ("unmap", 2),
        ("threads", 1),
        ("cycle", 1),
    ]

    def step(self) -> None:
        names, weights = zip(*self.OPS, strict=True)
        getattr(self, "op_" + self.rng.choices(names, weights)[0])()
        self.check_guards()

    def run(self, calls: int) -> dict[str, Any]:
        start = time.monotonic()
        while self.calls < calls and not (self.stray or self.unexpected or self.hangs):
            self.step()
        return {
            "seed": self.seed,
            "calls": self.calls,
            "thread_calls": self.thread_calls,
            "unexpected": self.unexpected,
            "stray_bytes": self.stray,
            "hangs": self.hangs,
            "seconds": round(time.monotonic() - start, 2),
        }


def describe(entry: Any) -> str:
    """One line of the log: a message, or a call with its arguments."""
    if isinstance(entry, str):
        return entry
    what, args, kwargs = entry
    return f"{what}{args!r:.200}{kwargs!r:.100}"


class _Brief:
    """The type and size of an argument, without a reference to it."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _brief(value: Any) -> Any:
    """An argument as the log keeps it: numbers and strings as they are, others by type."""
    if value is None or isinstance(value, (int, float, str)):
        return value
    try:
        return _Brief(f"<{type(value).__name__} of {len(value)}>")
    except TypeError:
        return _Brief(f"<{type(value).__name__}>")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args(argv)
    fuzzer = Fuzzer(args.seed)
    summary = fuzzer.run(args.calls)
    failed = summary["stray_bytes"] or summary["unexpected"] or summary["hangs"]
    if failed:
        print("\n".join(map(describe, fuzzer.log)))
    print(json.dumps(summary), flush=True)
    if summary["hangs"]:
        return 3
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
