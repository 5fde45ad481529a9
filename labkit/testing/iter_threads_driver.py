"""Drive one iterator from several threads; run as a script in a subprocess.

Usage: ``python -m labkit.testing.iter_threads_driver KIND SECONDS`` with KIND one of
``ubuf`` (an ``IovIter.ubuf`` over a numpy array) or ``iovec`` (a user-backed
one-segment ``import_iovec``, which builds a UBUF since 6.4; ``iovec63``
keeps it an ITER_IOVEC).  The iterator's memory sits between two guard
regions of the same size inside one allocation (one mapping for the
user-backed kinds), so a write outside the iterator's segment lands in a
guard instead of crashing, and is counted.

Three threads hammer the one iterator with ``copy_to_iter`` of the whole
buffer, ``revert``, ``advance`` and ``reexpand`` (cffi releases the GIL in
every C call, so the threads really run the C core at the same time).  The
exit status is 0 when, after SECONDS of rounds, no guard byte changed; 1
when one did (the count is printed); a crash ends the process with its signal.
"""

from __future__ import annotations

import sys
import threading
import time

import numpy as np

import labkit
from labkit import ITER_DEST, IovIter

SIZE = 64 * 1024
THREADS = 3
ROUND_SECONDS = 0.2


def build(kind: str) -> tuple[object, list[np.ndarray], object]:
    """(iterator, guard regions, owner of the memory) for one round."""
    if kind == "ubuf":
        backing = np.zeros(3 * SIZE, np.uint8)
        it = IovIter.ubuf(ITER_DEST, backing[SIZE : 2 * SIZE])
        return it, [backing[:SIZE], backing[2 * SIZE :]], backing
    mem = labkit.UserMemory()
    m = mem.map(3 * SIZE)
    kernel = "6.3" if kind == "iovec63" else "6.4"
    it = labkit.import_iovec(ITER_DEST, [(m.addr + SIZE, SIZE)], mem, kernel=kernel)
    return it, [m.array[:SIZE], m.array[2 * SIZE :]], mem


def one_round(kind: str, seed: int) -> int:
    """Stray bytes written by one round of THREADS threads on one iterator."""
    it, guards, _owner = build(kind)
    data = np.full(SIZE, 0xAB, np.uint8)
    stop = time.monotonic() + ROUND_SECONDS

    def worker(k: int) -> None:
        rng = np.random.default_rng(seed * THREADS + k)
        while time.monotonic() < stop:
            for op in rng.integers(0, 4, 64):
                try:
                    if op == 0:
                        it.copy_to_iter(data)
                    elif op == 1:
                        it.revert(SIZE)
                    elif op == 2:
                        it.advance(int(rng.integers(0, SIZE)))
                    else:
                        it.reexpand(SIZE)
                except (ValueError, OSError):
                    pass  # documented refusals (revert past the start, ...)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(int(np.count_nonzero(g)) for g in guards)


def main(kind: str, seconds: float) -> int:
    end = time.monotonic() + seconds
    rounds = stray = 0
    while time.monotonic() < end and not stray:
        stray += one_round(kind, rounds)
        rounds += 1
    print(f"iter_threads_driver {kind}: {rounds} rounds, {stray} stray bytes")
    return 1 if stray else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], float(sys.argv[2])))
