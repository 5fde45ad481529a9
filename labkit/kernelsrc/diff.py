"""Differential sequences: labkit's model against the real ``lib/iov_iter.c``, step by step.

Each sequence is a constructor (``import_iovec`` of 0-17 or 1025 segments,
``import_single_range``, ``import_ubuf``, or ``iov_iter_kvec`` /
``iov_iter_bvec`` over kernel memory) then up to eight operations (advance,
revert, zero, copy_to_iter, copy_from_iter).  Addresses are drawn at the edges
that matter: page boundaries of an *arena* of real pages whose protections
vary (read-write, read-only, holes) between two guard pages, the NULL page,
the end of user space (``TASK_SIZE_MAX`` = 0x7ffffffff000) and beyond it;
lengths at 0, 1, pages, ``MAX_RW_COUNT`` +/- 1, ``SSIZE_MAX``, and negative.

The sequence runs on the model first (recording the concrete operations it
chose), then the memory is restored and the same operations run on the real
code over the same addresses.  After every step both sides' return value (or
errno), iterator state (type, direction, count, iov_offset, nr_segs, current
segment, whether the iovec array was allocated), the bytes read by a
copy_from_iter, and every byte of the arena's writable pages and of the
kernel buffers are compared.  The real code reads and writes user memory only
where the model's table allows (``KernelOracle.use_memory``), so neither side
can touch memory outside the arena.

A difference is *accepted* only when it is listed in :data:`ACCEPTED`, with the
kernel commit that explains it; anything else is reported.
"""

from __future__ import annotations

import errno
import mmap
import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from labkit.core.imports import MAX_RW_COUNT, import_iovec, import_single_range, import_ubuf
from labkit.core.iov_iter import IovIter
from labkit.core.memory import PAGE_SIZE, PROT_NONE, PROT_READ, PROT_RW, UserMemory
from labkit.errors import IterMisuseError
from labkit.kernelsrc.oracle import KernelOracle

PAGE = PAGE_SIZE
SSIZE_MAX = 2**63 - 1
TASK_SIZE_MAX = 0x7FFFFFFFF000
ARENA_PAGES = 6
KBUF_PAGES = 4

#: (labkit model era, real-code era) pairs compared.
PAIRS: tuple[tuple[str, str], ...] = (("6.3", "6.1"), ("6.4", "6.1+ubuf"), ("6.4", "6.12"))


@dataclass(frozen=True)
class Accepted:
    """A known difference between the model and one era's real code, and why."""

    field: str
    era: str
    model: Any
    kernel: Any
    only_type: str
    commit: str
    why: str


ACCEPTED: tuple[Accepted, ...] = (
    Accepted(
        "nr_segs",
        "6.1+ubuf",
        1,
        0,
        "UBUF",
        "cd0bd57a9de5 (v6.4) iov_iter: set nr_segs = 1 for ITER_UBUF",
        "6.1's iov_iter_ubuf() leaves nr_segs 0; the 6.4 series that made single-segment "
        "imports UBUF also set it to 1 (labkit models 6.4, the 6.1+ubuf era backports only "
        "the two import patches of the seed mail)",
    ),
)


@dataclass
class Difference:
    """One step where the model and the real code disagree."""

    sequence: int
    step: int
    what: str
    model: Any
    kernel: Any
    ops: list

    def __str__(self) -> str:
        return (
            f"sequence {self.sequence} step {self.step} ({self.what}): model {self.model!r}, "
            f"kernel {self.kernel!r}; ops {self.ops[: self.step + 1]}"
        )


@dataclass
class PairResult:
    """What one era pair's sequences found."""

    model: str
    era: str
    sequences: int = 0
    steps: int = 0
    differences: list[Difference] = field(default_factory=list)
    accepted: Counter = field(default_factory=Counter)
    ops: Counter = field(default_factory=Counter)

    def summary(self) -> str:
        acc = ", ".join(f"{k}: {v}" for k, v in sorted(self.accepted.items())) or "none"
        return (
            f"model {self.model} vs real {self.era}: {self.sequences} sequences, {self.steps} "
            f"steps, {len(self.differences)} differences; accepted: {acc}"
        )


class _World:
    """The memory both sides run over: the arena (user) and the kernel buffer."""

    def __init__(self, rng: random.Random) -> None:
        self.mem = UserMemory()
        prots = [
            rng.choice((PROT_RW, PROT_RW, PROT_RW, PROT_READ, PROT_NONE))
            for _ in range(ARENA_PAGES)
        ]
        pieces = [(PAGE, PROT_NONE), *((PAGE, p) for p in prots), (PAGE, PROT_NONE)]
        maps = self.mem.map_contiguous(pieces)
        self.base = maps[1].addr
        self.end = maps[-1].addr
        self.writable = [m for m in maps if m.prot == PROT_RW]
        self.kbuf = mmap.mmap(-1, KBUF_PAGES * PAGE)
        self.karr = np.frombuffer(self.kbuf, dtype=np.uint8)
        self.kaddr = self.karr.ctypes.data
        self.fill(rng)

    def fill(self, rng: random.Random) -> None:
        seed = rng.getrandbits(32)
        g = np.random.default_rng(seed)
        for m in self.writable:
            self.mem.view(m.addr, m.size)[:] = g.integers(0, 256, m.size, dtype=np.uint8)
        self.karr[:] = g.integers(0, 256, self.karr.size, dtype=np.uint8)

    def snapshot(self) -> bytes:
        parts = [self.mem.view(m.addr, m.size).tobytes() for m in self.writable]
        return b"".join(parts) + self.karr.tobytes()

    def restore(self, snap: bytes) -> None:
        at = 0
        for m in self.writable:
            self.mem.view(m.addr, m.size)[:] = np.frombuffer(snap[at : at + m.size], np.uint8)
            at += m.size
        self.karr[:] = np.frombuffer(snap[at:], np.uint8)


def _addr(rng: random.Random, w: _World) -> int:
    r = rng.random()
    if r < 0.75:
        page = rng.randrange(-1, ARENA_PAGES + 1)
        edge = rng.choice((0, 0, 1, -1, PAGE // 2, PAGE - 1, rng.randrange(PAGE)))
        return max(w.base + page * PAGE + edge, 0)
    if r < 0.82:
        return rng.choice((0, 1, PAGE - 1))
    if r < 0.95:
        return TASK_SIZE_MAX + rng.choice((-PAGE, -4097, -100, -1, 0, 1, PAGE))
    return rng.choice((2**47 + PAGE, 2**63, 2**64 - PAGE, 2**64 - 1))


def _length(rng: random.Random) -> int:
    r = rng.random()
    if r < 0.2:
        return 0
    if r < 0.75:
        return rng.choice((1, 2, 100, PAGE - 1, PAGE, PAGE + 1, rng.randrange(3 * PAGE)))
    if r < 0.85:
        return rng.randrange(ARENA_PAGES * PAGE + 2 * PAGE)
    return rng.choice(
        (
            MAX_RW_COUNT - 1,
            MAX_RW_COUNT,
            MAX_RW_COUNT + 1,
            2**31,
            SSIZE_MAX,
            SSIZE_MAX + 1,
            -1,
            -PAGE,
        )
    )


def _segments(rng: random.Random, w: _World) -> list[tuple[int, int]]:
    n = (
        1025
        if rng.random() < 0.03
        else rng.choice((0, 1, 1, 1, 2, 2, 3, 4, 8, 9, rng.randrange(18)))
    )
    return [(_addr(rng, w), _length(rng)) for _ in range(n)]


def _constructor(rng: random.Random, w: _World, era: str, oracle: KernelOracle) -> tuple:
    kinds = ["iovec"] * 6 + ["kvec", "bvec"]
    if oracle.has_import_single_range:
        kinds.append("single")
    if oracle.has_import_ubuf:
        kinds.append("ubuf")
    kind = rng.choice(kinds)
    d = rng.choice((0, 1))
    if kind == "iovec":
        return ("import_iovec", d, _segments(rng, w))
    if kind in ("single", "ubuf"):
        return (f"import_{kind}", d, _addr(rng, w), _length(rng))
    nseg = rng.choice((0, 1, 2, 3, 5, 8))
    size = KBUF_PAGES * PAGE
    if kind == "kvec":
        segs = []
        for _ in range(nseg):
            off = rng.randrange(size)
            segs.append((off, rng.choice((0, 1, rng.randrange(size - off + 1)))))
        total = sum(n for _, n in segs)
        return ("kvec", d, segs, rng.choice((total, total, rng.randrange(total + 1))))
    segs = []
    for _ in range(nseg):
        page = rng.randrange(KBUF_PAGES)
        span = (KBUF_PAGES - page) * PAGE
        off = rng.choice((0, 0, 1, PAGE - 1, rng.randrange(span)))
        segs.append((page, off, rng.choice((0, span - off, rng.randrange(span - off + 1)))))
    total = sum(n for _, _, n in segs)
    return ("bvec", d, segs, rng.choice((total, total, rng.randrange(total + 1))))


def _model_build(c: tuple, model: str, w: _World) -> tuple[IovIter | None, int]:
    kind, d = c[0], c[1]
    try:
        if kind == "import_iovec":
            it = import_iovec(d, c[2], w.mem, kernel=model)
            return it, it.count
        if kind == "import_single":
            return import_single_range(d, c[2], c[3], w.mem, kernel=model), 0
        if kind == "import_ubuf":
            return import_ubuf(d, c[2], c[3], w.mem), 0
        if kind == "kvec":
            bufs = [memoryview(w.kbuf)[off : off + n] for off, n in c[2]]
            return IovIter.kvec(d, bufs, c[3]), 0
        entries = [(memoryview(w.kbuf)[p * PAGE :], off, n) for p, off, n in c[2]]
        return IovIter.bvec(d, entries, c[3]), 0
    except OSError as exc:
        return None, -(exc.errno or errno.EIO)


def _kernel_build(c: tuple, it: Any, w: _World) -> int:
    kind, d = c[0], c[1]
    if kind == "import_iovec":
        return it.import_iovec(d, c[2])
    if kind == "import_single":
        return it.import_single_range(d, c[2], c[3])
    if kind == "import_ubuf":
        return it.import_ubuf(d, c[2], c[3])
    if kind == "kvec":
        return it.kvec(d, w.kbuf, c[2], c[3])
    return it.bvec(d, w.kbuf, c[2], c[3])


#: The most bytes one copy asks for: more than the arena holds, so copies still run off its end.
COPY_MAX = (ARENA_PAGES + 4) * PAGE


def _size(rng: random.Random, count: int, big: bool) -> int:
    choices = [
        0,
        1,
        count,
        count + 1,
        rng.randrange(count + 2),
        rng.randrange(min(count, 3 * PAGE) + 1),
    ]
    if big:
        return rng.choice([*choices, MAX_RW_COUNT + 1, 2**40])
    return min(rng.choice(choices), COPY_MAX)


def _state(it: IovIter) -> dict:
    s = it.state()
    s["heap"] = bool(it.heap_iovecs)
    return s


def _run_model(rng: random.Random, c: tuple, model: str, w: _World) -> tuple[list, list, dict]:
    """Run the constructor and up to eight operations on the model.

    Returns the operations chosen, a record per step, and the bytes each copy_to_iter wrote.
    """
    it, ret = _model_build(c, model, w)
    records = [(ret, None if it is None else _state(it), None, w.snapshot())]
    ops: list[tuple] = []
    payload: dict[int, bytes] = {}
    if it is None:
        return ops, records, payload
    consumed = 0
    for _ in range(rng.randrange(9)):
        count = it.count
        names = ["advance", "revert"] + (
            ["zero", "copy_to"] if it.direction == 0 else ["copy_from"]
        )
        name = rng.choice(names)
        data = None
        if name == "revert":
            n = rng.choice((0, consumed, rng.randrange(consumed + 1), consumed + 1))
            if n > consumed:  # past the start: a BUG in the kernel, a refusal here
                try:
                    it.revert(n)
                    raise AssertionError(f"model accepted revert({n}) past the start")
                except IterMisuseError:
                    continue
            it.revert(n)
            consumed -= n
            ret = 0
        elif name == "advance":
            n = _size(rng, count, big=True)
            it.advance(n)
            ret = 0
            consumed += count - it.count
        elif name == "zero":
            n = _size(rng, count, big=False)
            ret = it.zero(n)
            consumed += ret
        elif name == "copy_to":
            n = _size(rng, count, big=False)
            data = payload[len(ops)] = rng.randbytes(n)
            ret = it.copy_to_iter(data)
            consumed += ret
        else:
            n = _size(rng, count, big=False)
            data = it.copy_from_iter(n)
            ret = len(data)
            consumed += ret
        ops.append((name, n))
        records.append((ret, _state(it), data if name == "copy_from" else None, w.snapshot()))
    return ops, records, payload


def _run_kernel(c: tuple, ops: list, oracle: KernelOracle, w: _World, data_of: dict) -> list:
    it = oracle.iterator()
    ret = _kernel_build(c, it, w)
    st = it.state()
    records = [(ret, None if st is None or ret < 0 else _kstate(st), None, w.snapshot())]
    if ret < 0:
        return records
    consumed = 0
    for k, (name, n) in enumerate(ops):
        before = it.state().count
        data = None
        if name == "revert":
            if n > consumed:
                records.append(("revert past the start of the real iterator", None, None, b""))
                break
            it.revert(n)
            consumed -= n
            ret = 0
        elif name == "advance":
            it.advance(n)
            ret = 0
            consumed += before - it.state().count
        elif name == "zero":
            ret = it.zero(n)
            consumed += ret
        elif name == "copy_to":
            ret = it.copy_to_iter(data_of[k])
            consumed += ret
        else:
            data = it.copy_from_iter(n)
            ret = len(data)
            consumed += ret
        records.append((ret, _kstate(it.state()), data, w.snapshot()))
    return records


def _kstate(st: Any) -> dict:
    d = st.as_dict()
    d["heap"] = st.heap
    return d


def _compare(res: PairResult, seq: int, c: tuple, ops: list, mrec: list, krec: list) -> None:
    shown = [c[0], *ops]
    for step, (m, k) in enumerate(zip(mrec, krec, strict=False)):
        for what, mv, kv in (("return", m[0], k[0]), ("bytes read", m[2], k[2])):
            if mv != kv:
                res.differences.append(Difference(seq, step, what, mv, kv, shown))
                return
        ms, ks = m[1], k[1]
        if (ms is None) != (ks is None):
            res.differences.append(Difference(seq, step, "state", ms, ks, shown))
            return
        if ms is not None:
            for key in ms:
                if ms[key] == ks[key]:
                    continue
                acc = [
                    a
                    for a in ACCEPTED
                    if a.field == key and a.era == res.era and a.model == ms[key]
                    and a.kernel == ks[key] and ms["type"] == a.only_type
                ]  # fmt: skip
                if acc:
                    res.accepted[f"{key} ({acc[0].commit.split()[0]})"] += 1
                    continue
                res.differences.append(
                    Difference(seq, step, f"state.{key}", ms[key], ks[key], shown)
                )
                return
        if m[3] != k[3]:
            at = next(i for i, (a, b) in enumerate(zip(m[3], k[3], strict=False)) if a != b)
            res.differences.append(
                Difference(seq, step, f"memory byte {at}", m[3][at], k[3][at], shown)
            )
            return
    if len(mrec) != len(krec):
        res.differences.append(Difference(seq, len(krec), "steps", len(mrec), len(krec), shown))


def run_pair(
    pair: tuple[str, str], sequences: int, *, seed: int = 1, opt: str = "defconfig"
) -> PairResult:
    """Run ``sequences`` random sequences on the model era and the real era of ``pair``."""
    model, era = pair
    oracle = KernelOracle(era, opt)
    res = PairResult(model, era)
    rng = random.Random(f"{seed}:{model}:{era}")
    w = None
    try:
        for seq in range(sequences):
            if seq % 200 == 0:
                w = _World(rng)
                oracle.use_memory(w.mem)
            assert w is not None
            w.fill(rng)
            start = w.snapshot()
            c = _constructor(rng, w, era, oracle)
            ops, mrec, copy_data = _run_model(rng, c, model, w)
            w.restore(start)
            krec = _run_kernel(c, ops, oracle, w, copy_data)
            res.sequences += 1
            res.steps += len(mrec)
            res.ops.update([c[0], *(o[0] for o in ops)])
            _compare(res, seq, c, ops, mrec, krec)
    finally:
        oracle.use_memory(None)
    return res


__all__ = [
    "ACCEPTED",
    "PAIRS",
    "run_pair",
]
