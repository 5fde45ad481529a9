"""Short exercises for the iterator tour (notebook 01), with checks a student can run.

Each :class:`Exercise` asks one question about the model and checks an answer
against the model itself: the expected answer is computed by running labkit's
C iterator over real memory when the check runs, never written down here.
In a notebook::

    from labkit.teach import exercises
    print(exercises.ADVANCE.question)
    answer = (2, 50, 150)          # your answer
    exercises.ADVANCE.check(answer)

``check`` first checks the shape of the answer (a tuple of so many integers,
or of iterator type names), then says part by part what is right and gives
the hint of each part that is not.  Iterator types may be written as the
kernel does (``"ITER_IOVEC"``) or as labkit prints them (``"IOVEC"``), in any
case.  ``is_correct`` returns the verdict as a bool, ``feedback`` as text.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import labkit
from labkit.core.memory import PAGE_SIZE

#: The kinds of answer a part takes.
INT, ITER_TYPE = "integer", "iterator type"


@dataclass(frozen=True)
class Part:
    """One part of an answer: its name, its kind (:data:`INT` or :data:`ITER_TYPE`), a hint."""

    name: str
    kind: str
    hint: str


@dataclass
class Feedback:
    """What a check found: ``correct``, and the lines it prints."""

    correct: bool
    lines: list[str]

    def __str__(self) -> str:
        return "\n".join(self.lines)


def _describe(value: Any) -> str:
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, dict):
        return f"a dict with keys {sorted(map(str, value))}"
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)}: {_show(value)}"
    return f"{type(value).__name__} {value!r}"


def _show(value: Any) -> str:
    if isinstance(value, (tuple, list)):
        return "(" + ", ".join(_show(v) for v in value) + ")"
    return repr(value)


def type_name(value: Any) -> str | None:
    """An iterator type written as the kernel or labkit does, normalised ("ITER_UBUF" -> "UBUF")."""
    if not isinstance(value, str):
        return None
    name = value.strip().upper()
    return name.removeprefix("ITER_") or None


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    try:
        return operator.index(value)
    except TypeError:
        return None


@dataclass
class Exercise:
    """One question, the parts of its answer, and a check against the model.

    Attributes:
        name: short name ("advance").
        question: the question, in words.
        hint: a hint for the whole question (printed when parts are wrong).
        solve: computes the model's answer (one value per part).
        parts: the parts of the answer, in order.
    """

    name: str
    question: str
    hint: str
    solve: Callable[[], Any] = field(repr=False)
    parts: tuple[Part, ...] = ()

    def solution(self) -> tuple[Any, ...]:
        """The model's answer (computed now, by running the model)."""
        return tuple(self.solve())

    def _shape(self) -> str:
        kinds = [p.kind for p in self.parts]
        if all(k == INT for k in kinds):
            what = f"{len(kinds)} integers"
        elif all(k == ITER_TYPE for k in kinds):
            what = f"{len(kinds)} iterator type names"
        else:
            what = f"{len(kinds)} values"
        return f"a tuple of {what}: ({', '.join(p.name for p in self.parts)})"

    def feedback(self, answer: Any) -> Feedback:
        """Check ``answer``: its shape first, then each part against the model."""
        tag = f"[{self.name}]"
        if answer is None or answer is Ellipsis:
            return Feedback(False, [f"{tag} no answer yet.", self.question])
        n = len(self.parts)
        if not isinstance(answer, (tuple, list)) or len(answer) != n:
            return Feedback(
                False,
                [
                    f"{tag} the answer should be {self._shape()}; you gave {_describe(answer)}.",
                ],
            )
        given: list[Any] = []
        bad_kind = []
        for part, value in zip(self.parts, answer, strict=True):
            v = _as_int(value) if part.kind == INT else type_name(value)
            if v is None:
                bad_kind.append(f"{part.name} should be an {part.kind}, not {_describe(value)}")
            given.append(v)
        if bad_kind:
            return Feedback(False, [f"{tag} the answer should be {self._shape()}:"] + bad_kind)
        expected = [
            type_name(v) if p.kind == ITER_TYPE else int(v)
            for p, v in zip(self.parts, self.solution(), strict=True)
        ]
        if given == expected:
            return Feedback(True, [f"{tag} correct: {_show(tuple(answer))}."])
        right = sum(g == e for g, e in zip(given, expected, strict=True))
        lines = [f"{tag} not yet: {right} of {n} right."]
        for part, g, e in zip(self.parts, given, expected, strict=True):
            if g == e:
                lines.append(f"  {part.name}: {_show(g)} is right")
            else:
                lines.append(f"  {part.name}: {_show(g)} is not. Hint: {part.hint}")
        lines.append(f"Hint: {self.hint}")
        return Feedback(False, lines)

    def is_correct(self, answer: Any) -> bool:
        """True if ``answer`` matches the model's answer, part by part.

        ``None`` or ``...`` means "not answered yet" (False).  Tuples and lists
        compare element by element; iterator type names ignore case, spaces and
        the kernel's ``ITER_`` prefix.
        """
        return self.feedback(answer).correct

    def check(self, answer: Any) -> None:
        """Print the :meth:`feedback` on ``answer``."""
        print(self.feedback(answer))


# ---- the model runs behind every answer -------------------------------------------


def _iovec_100_0_200() -> Any:
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


def _solve_import() -> tuple[str, ...]:
    mem = labkit.UserMemory()
    m = mem.map(PAGE_SIZE)
    return tuple(
        labkit.import_iovec(labkit.ITER_DEST, [(m.addr, PAGE_SIZE)], mem, kernel=k).iter_type
        for k in ("6.3", "6.4")
    )


def _solve_seek() -> tuple[int, int]:
    """A buffer registered 512 bytes into a page, 6 pages long; read at byte 10000."""
    from labkit.teach import viz  # on use: matplotlib, to draw a solution

    mem = labkit.UserMemory()
    m = mem.map(8 * PAGE_SIZE)
    table = viz.bvec_table(m.addr + 512, 6 * PAGE_SIZE)
    bvecs = [(m.array[p - m.addr : p - m.addr + PAGE_SIZE], off, n) for p, off, n in table]
    it = labkit.IovIter.bvec(labkit.ITER_DEST, bvecs)
    it.advance(10000)  # the model's own walk, in C
    return (it.seg_index, it.iov_offset)


_SEG = Part(
    "seg",
    INT,
    "count the segments stepped over from 0; an empty segment is stepped over like any other.",
)
_COUNT = Part("count", INT, "count is the bytes still to come: the total minus what was consumed.")

ADVANCE = Exercise(
    "advance",
    "An ITER_DEST IOVEC iterator has three segments of 100, 0 and 200 bytes. After "
    "advance(150), what are (seg, iov_offset, count)?",
    "advance steps over every segment whose whole length fits in what is left, "
    "empty ones included; iov_offset counts from the start of the segment it stops in.",
    _solve_advance,
    (
        _SEG,
        Part("iov_offset", INT, "the bytes consumed inside the segment it stops in."),
        _COUNT,
    ),
)

REVERT = Exercise(
    "revert",
    "The same iterator, after advance(150), is reverted by 60 bytes. What are "
    "(seg, iov_offset, count) now?",
    "revert first uses up iov_offset inside the current segment, then walks back "
    "over whole segments; an empty segment holds no bytes to give back.",
    _solve_revert,
    (
        Part("seg", INT, "60 bytes back is more than the 50 consumed in segment 2."),
        Part("iov_offset", INT, "what is left of segment 0 after taking the rest back from it."),
        Part("count", INT, "reverting gives bytes back: count grows by 60."),
    ),
)

IMPORT = Exercise(
    "import",
    "readv() is called with a single 4096-byte iovec. Which iterator type does "
    "import_iovec build under kernel 6.3, and under 6.4? Answer (type_6_3, type_6_4).",
    "Since Linux 6.4 a single segment is imported as the simplest type there is.",
    _solve_import,
    (
        Part("type under 6.3", ITER_TYPE, "before 6.4, readv() always built an array type."),
        Part("type under 6.4", ITER_TYPE, "one user buffer needs no array at all."),
    ),
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
    (
        Part("bvec index", INT, "bvec 0 holds only 3584 bytes; after it every bvec is a page."),
        Part("iov_offset", INT, "what is left of the offset after the whole bvecs skipped."),
    ),
)

ALL: tuple[Exercise, ...] = (ADVANCE, REVERT, IMPORT, SEEK)
"""Every exercise of the tour, in order."""
