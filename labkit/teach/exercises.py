"""Short exercises for the iterator tour (notebook 01), with checks a student can run.

Each :class:`Exercise` asks one question about the model and checks an answer
against the model itself: the expected answer is computed by running labkit's
C iterator over real memory when the check runs, never written down here.
In a notebook::

    from labkit.teach import exercises
    print(exercises.ADVANCE.question)
    answer = (2, 50, 150)          # your answer
    exercises.ADVANCE.check(answer)

``check`` prints what is right or wrong (with a hint); ``is_correct`` returns it
as a bool.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from labkit.core.memory import PAGE_SIZE


@dataclass
class Exercise:
    """One question, a hint, and a check against the model."""

    name: str
    question: str
    hint: str
    solve: Callable[[], Any] = field(repr=False)

    def solution(self) -> Any:
        """The model's answer (computed now, by running the model)."""
        return self.solve()

    def is_correct(self, answer: Any) -> bool:
        """True if ``answer`` matches the model's answer.

        ``None`` or ``...`` means "not answered yet" (False).  Tuples and lists
        compare element by element; strings ignore case and surrounding spaces.
        """
        if answer is None or answer is Ellipsis:
            return False
        return _normalise(answer) == _normalise(self.solution())

    def check(self, answer: Any) -> None:
        """Print whether ``answer`` is right, with a hint if it is not (see :meth:`is_correct`)."""
        if answer is None or answer is Ellipsis:
            print(f"[{self.name}] no answer yet.\n{self.question}")
        elif self.is_correct(answer):
            print(f"[{self.name}] correct: {_show(self.solution())}.")
        else:
            print(f"[{self.name}] not yet: you said {_show(answer)}.\nHint: {self.hint}")


def _normalise(value: Any) -> Any:
    if isinstance(value, str):
        return value.strip().upper()
    if isinstance(value, (tuple, list)):
        return tuple(_normalise(v) for v in value)
    if hasattr(value, "__index__"):
        return int(value)
    return value


def _show(value: Any) -> str:
    if isinstance(value, (tuple, list)):
        return "(" + ", ".join(_show(v) for v in value) + ")"
    return repr(value)


# ---- the model runs behind every answer -------------------------------------------


def _iovec_100_0_200() -> Any:
    import labkit

    mem = labkit.UserMemory()
    m = mem.map(2 * PAGE_SIZE)
    return labkit.import_iovec(
        labkit.ITER_DEST, [(m.addr, 100), (m.addr + 2000, 0), (m.addr + PAGE_SIZE, 200)], mem
    )


def _solve_advance() -> tuple[int, int, int]:
    it = _iovec_100_0_200()
    it.advance(150)
    return (it.seg_index, it.iov_offset, it.count)


def _solve_revert() -> tuple[int, int, int]:
    it = _iovec_100_0_200()
    it.advance(150)
    it.revert(60)
    return (it.seg_index, it.iov_offset, it.count)


def _solve_import() -> tuple[str, str]:
    import labkit

    mem = labkit.UserMemory()
    m = mem.map(PAGE_SIZE)
    return tuple(
        labkit.import_iovec(labkit.ITER_DEST, [(m.addr, PAGE_SIZE)], mem, kernel=k).iter_type
        for k in ("6.3", "6.4")
    )


def _solve_seek() -> tuple[int, int]:
    """A buffer registered 512 bytes into a page, 6 pages long; read at byte 10000."""
    import labkit
    from labkit.teach import viz

    mem = labkit.UserMemory()
    m = mem.map(8 * PAGE_SIZE)
    table = viz.bvec_table(m.addr + 512, 6 * PAGE_SIZE)
    bvecs = [(m.array[p - m.addr : p - m.addr + PAGE_SIZE], off, n) for p, off, n in table]
    it = labkit.IovIter.bvec(labkit.ITER_DEST, bvecs)
    it.advance(10000)  # the model's own walk, in C
    return (it.seg_index, it.iov_offset)


ADVANCE = Exercise(
    "advance",
    "An ITER_DEST IOVEC iterator has three segments of 100, 0 and 200 bytes. After "
    "advance(150), what are (seg, iov_offset, count)?",
    "advance steps over every segment whose whole length fits in what is left, "
    "empty ones included; iov_offset counts from the start of the segment it stops in.",
    _solve_advance,
)

REVERT = Exercise(
    "revert",
    "The same iterator, after advance(150), is reverted by 60 bytes. What are "
    "(seg, iov_offset, count) now?",
    "revert first uses up iov_offset inside the current segment, then walks back "
    "over whole segments; an empty segment holds no bytes to give back.",
    _solve_revert,
)

IMPORT = Exercise(
    "import",
    "readv() is called with a single 4096-byte iovec. Which iterator type does "
    "import_iovec build under kernel 6.3, and under 6.4? Answer (type_6_3, type_6_4).",
    "Since Linux 6.4 a single segment is imported as the simplest type there is.",
    _solve_import,
)

SEEK = Exercise(
    "seek",
    "A buffer is registered starting 512 bytes into a page and is 6 pages long, so "
    "its first bvec holds 3584 bytes and the others 4096. A READ_FIXED starts at byte "
    "10000 of the buffer. In which bvec does it land, and at which offset inside that "
    "bvec? Answer (bvec index, iov_offset).",
    "Take the first bvec's length off first; what is left, divided by the page size, "
    "says how many whole pages to skip; the remainder is the offset.",
    _solve_seek,
)

ALL: tuple[Exercise, ...] = (ADVANCE, REVERT, IMPORT, SEEK)
"""Every exercise of the tour, in order."""
