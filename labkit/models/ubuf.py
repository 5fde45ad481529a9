"""Model experiments for the 2023 single-segment ``ITER_UBUF`` work (R2 and R3).

Two questions, each asked of C timing kernels over labkit's iterator core
(``labkit/csrc/ubuf_model.c``) and real user memory:

* **R2** (merged for Linux 6.4): ``import_iovec()`` of one segment builds an
  ``ITER_UBUF`` instead of an ``ITER_IOVEC``.  :class:`SyscallModel` models one
  ``read()``/``readv()`` call: the import, then what the call does with the
  iterator (``"zero"``: ``iov_iter_zero()`` a page at a time, as /dev/zero's
  ``read_iter``; ``"copy"``: ``copy_to_iter()``; ``"advance"``: the iterator
  mechanics alone), in the 6.3 or the 6.4 era.
* **R3** (not merged): io_uring rewrote a one-segment ``READV`` into a
  ``READ``.  :class:`UringModel` models one request, including what a
  *deferred* request costs: a READV allocates async state, copies its iterator
  and its iovecs into it and frees it at completion; a READ keeps only
  ``(addr, len)`` and imports again when it is issued.

Every model offers :meth:`~SyscallModel.time` (one batch timed in C,
nanoseconds per call; feed :meth:`~SyscallModel.batch` to ``labkit.measure.runner.run``)
and :meth:`~SyscallModel.work` (the same calls counted, not timed: iterator
types, segment-table steps, iovec bytes copied, allocations), which is
deterministic and what the tests assert on.
"""

from __future__ import annotations

import errno
import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from labkit._args import SIZE_MAX, int_arg
from labkit._ffi import ffi, lib, raise_errno
from labkit.config import quick_mode
from labkit.core.imports import kernel_era
from labkit.core.memory import PAGE_SIZE, UserMemory

OPS = {
    "advance": int(lib.LK_UBUF_OP_ADVANCE),
    "copy": int(lib.LK_UBUF_OP_COPY),
    "zero": int(lib.LK_UBUF_OP_ZERO),
}
"""What a modelled call does with its iterator."""

URING_VARIANTS = {
    "read": int(lib.LK_URING_READ),
    "readv-iovec": int(lib.LK_URING_READV_IOVEC),
    "readv-rewrite": int(lib.LK_URING_READV_REWRITE),
    "readv-6.4": int(lib.LK_URING_READV_GENERIC64),
}
"""io_uring request variants: IORING_OP_READ; READV before 6.4 (ITER_IOVEC);
READV with R3's rewrite to READ; READV on 6.4+ (UBUF by the generic import,
opcode still READV)."""

URING_LABELS = {
    "readv-iovec": "READV as IOVEC (6.3)",
    "readv-rewrite": "READV rewritten to READ (R3)",
    "readv-6.4": "READV, UBUF import (6.4+)",
    "read": "READ",
}
"""Human-readable names of :data:`URING_VARIANTS`."""

ASYNC_STATE_BYTES = int(lib.lk_ubuf_async_size())
"""Size of the modelled io_uring async state (iovecs + iterator) a deferred READV allocates."""
ITER_STATE_BYTES = int(lib.lk_ubuf_iter_size())
"""Size of the modelled ``struct iov_iter`` copied into that state."""


def default_iters() -> int:
    """Calls per timed batch: long enough to dwarf the clock (fewer in quick mode)."""
    return 2_000 if quick_mode() else 20_000


def defer_every_for(rate: float) -> int:
    """The deterministic deferral period for a deferral rate: every k-th request, k = 1/rate.

    ``rate`` 0 means no request is deferred (k = 0); 1 defers every request.

    Raises:
        TypeError: if ``rate`` is not a real number (a string, None, ...).
        ValueError: for a rate outside [0, 1] or NaN.
    """
    if isinstance(rate, (str, bytes, bool)) or not isinstance(rate, numbers.Real):
        raise TypeError(f"defer rate must be a number, not {type(rate).__name__}")
    rate = float(rate)
    if not 0.0 <= rate <= 1.0 or math.isnan(rate):
        raise ValueError(f"defer rate must be in [0, 1], got {rate}")
    if rate == 0.0:
        return 0
    return max(1, round(1.0 / rate))


@dataclass(frozen=True)
class Work:
    """Work done by a number of modelled calls, counted by the C model.

    Attributes:
        calls: calls completed.
        ubuf_iters / iovec_iters: calls whose data moved through an ITER_UBUF / ITER_IOVEC.
        seg_steps: segment-table entries stepped over while moving data (0 for UBUF).
        uvec_bytes_read: bytes of the user's iovec array read (copy_from_user).
        iovec_table_bytes: bytes of iovec copied into a table the iterator walks
            (the on-stack fast array, an allocated array, or the async state).
        iter_bytes_copied: bytes of iterator state saved for deferred requests.
        imports: import_iovec/import_ubuf calls (a deferred READ imports twice).
        allocs / frees: heap allocations and frees.
        deferred: requests deferred (io_uring model).
        rewritten: READV requests turned into READ (R3).
        bytes_moved: data bytes moved into user memory.
    """

    calls: int
    ubuf_iters: int
    iovec_iters: int
    seg_steps: int
    uvec_bytes_read: int
    iovec_table_bytes: int
    iter_bytes_copied: int
    imports: int
    allocs: int
    frees: int
    deferred: int
    rewritten: int
    bytes_moved: int

    @classmethod
    def _from_c(cls, w: Any) -> Work:
        return cls(**{name: int(getattr(w, name)) for name in cls.__dataclass_fields__})

    def as_dict(self) -> dict[str, int]:
        """The counters as a plain dict."""
        return asdict(self)

    def per_call(self) -> dict[str, float]:
        """Every counter divided by the number of calls (empty counts stay 0)."""
        n = self.calls or 1
        return {k: v / n for k, v in self.as_dict().items() if k != "calls"}

    @property
    def overhead(self) -> int:
        """Bookkeeping beyond the data itself: segment steps + iovec and iterator
        bytes copied + allocations + frees (the quantities the 2023 changes remove)."""
        return (
            self.seg_steps
            + self.iovec_table_bytes
            + self.iter_bytes_copied
            + self.allocs
            + self.frees
        )


def _segments_arg(segments: Sequence[int] | None, size: int) -> list[int]:
    if segments is None:
        segments = [size]
    segs = list(segments)
    if len(segs) > int(lib.LK_UBUF_MAX_SEGS):
        raise_errno(
            errno.EINVAL,
            f"{len(segs)} segments, more than UIO_MAXIOV ({int(lib.LK_UBUF_MAX_SEGS)})",
        )
    return [_size(s, f"segment {k} length") for k, s in enumerate(segs)]


def _size(value: Any, name: str) -> int:
    """A byte count for the model: an int in 0..SIZE_MAX, else OSError(EINVAL)."""
    return int_arg(value, name, 0, SIZE_MAX, err=errno.EINVAL)


class SharedMemory:
    """One data buffer and one iovec-table page shared by several models.

    Variants compared with each other should zero the *same* physical page:
    on this kind of machine the cost of clearing a 4 KiB page depends on which
    page it is by more than the few nanoseconds being compared, and that
    effect lasts as long as the mapping.  Each model gets its own 64-byte slot
    of the table page for its iovec array.

    The C argument struct each model's timed loop reads on every call is
    carved from one block too, a 128-byte (two cache lines) slot per model,
    so that variants compared with each other read their arguments from
    equivalently placed memory instead of wherever the allocator put each
    one (a per-model placement moved a model's ns/call persistently by up to
    ~3.5 ns here, more than some differences being compared).
    """

    SLOT = 64
    ARGS_SLOT = 128
    ARGS_SLOTS = PAGE_SIZE // SLOT  # as many as the iovec table has slots

    def __init__(self, size: int = PAGE_SIZE, mem: UserMemory | None = None) -> None:
        self.mem = mem if mem is not None else UserMemory()
        self.data = self.mem.map(max(_size(size, "size"), 1))
        self.table = self.mem.map(PAGE_SIZE)
        self._next = 0
        # kernel-side memory (not in the modelled address space): argument slots
        self._args_block = ffi.new("char[]", self.ARGS_SLOT * (self.ARGS_SLOTS + 1))
        base = int(ffi.cast("uintptr_t", self._args_block))
        self._args_base = (-base) % self.ARGS_SLOT
        self._args_next = 0

    def data_for(self, size: int) -> Any:
        """The shared data mapping, if it holds ``size`` bytes."""
        if size > self.data.size:
            raise ValueError(f"shared data buffer holds {self.data.size} bytes, {size} needed")
        return self.data

    def table_for(self, nbytes: int) -> tuple[Any, int]:
        """A slot of the table page for an iovec array of ``nbytes``: (mapping, offset)."""
        need = -(-max(nbytes, 1) // self.SLOT) * self.SLOT
        if self._next + need > self.table.size:
            raise ValueError("shared iovec table page is full")
        off = self._next
        self._next += need
        return self.table, off

    def args_slot(self) -> Any:
        """A zeroed ``struct lk_ubuf_args *`` in the next 128-byte-aligned argument slot.

        The pointer is valid as long as this SharedMemory is alive.
        """
        if self._args_next >= self.ARGS_SLOTS:
            raise ValueError("shared argument block is full")
        off = self._args_base + self._args_next * self.ARGS_SLOT
        self._args_next += 1
        return ffi.cast("struct lk_ubuf_args *", self._args_block + off)


class _Model:
    """Shared set-up: a data mapping, the user's iovec array in user memory, the C args."""

    _uring = False

    def __init__(
        self,
        *,
        kind: int,
        op: str,
        size: int,
        segments: Sequence[int] | None,
        mem: UserMemory | None,
        shared: SharedMemory | None = None,
    ) -> None:
        if op not in OPS:
            raise ValueError(f"op must be one of {sorted(OPS)}, got {op!r}")
        size = _size(size, "size")
        self.op = op
        self.segments = _segments_arg(segments, size)
        total = max(size, sum(self.segments))
        nseg = max(len(self.segments), 1)
        if shared is not None:
            if mem is not None and mem is not shared.mem:
                raise ValueError("mem and shared.mem must be the same UserMemory")
            self.mem = shared.mem
            self.data = shared.data_for(max(total, 1))
            self.uvec_map, uvec_off = shared.table_for(nseg * 16)
        else:
            self.mem = mem if mem is not None else UserMemory()
            self.data = self.mem.map(max(total, 1))
            try:
                self.uvec_map, uvec_off = self.mem.map(nseg * 16), 0
            except BaseException:
                self.mem.unmap(self.data)  # a refused set-up leaves nothing mapped
                raise
        try:
            self._set_up(kind, size, total, nseg, uvec_off, shared)
        except BaseException:
            if shared is None:
                self.mem.unmap(self.data)
                self.mem.unmap(self.uvec_map)
            raise

    def _set_up(
        self, kind: int, size: int, total: int, nseg: int, uvec_off: int, shared: Any
    ) -> None:
        """The iovec array in user memory and the C arguments (after the mappings)."""
        self.uvec_addr = self.uvec_map.addr + uvec_off
        # the user's iovec array, written into user memory: segments laid end to end
        table = (
            self.uvec_map.array[uvec_off : uvec_off + nseg * 16].view(np.uint64).reshape(nseg, 2)
        )
        offset = 0
        for k, length in enumerate(self.segments):
            table[k] = (self.data.addr + offset, length)
            offset += length
        self.size = size
        self._src = np.frombuffer(bytes(range(256)) * (total // 256 + 1), dtype=np.uint8)
        self._csrc = ffi.from_buffer("uint8_t[]", self._src)
        self._shared = shared  # keeps the argument slot alive
        a = shared.args_slot() if shared is not None else ffi.new("struct lk_ubuf_args *")
        a.mm = self.mem.c_mm
        a.kind = kind
        a.op = OPS[self.op]
        a.buf = self.data.addr
        a.len = size
        a.uvec = self.uvec_addr
        a.nr_segs = len(self.segments)
        a.src = self._csrc
        a.src_len = len(self._src)
        self._args = a

    @property
    def buffer(self) -> np.ndarray:
        """The user memory the calls write into (a numpy view)."""
        return self.data.array

    def _timer(self) -> Callable[[Any, int], float]:
        return lib.lk_time_ubuf_uring if self._uring else lib.lk_time_ubuf_syscall

    def time(self, iters: int | None = None) -> float:
        """Run one batch of ``iters`` calls in C; nanoseconds per call.

        Raises:
            OSError: the model's errno for a bad set-up (EFAULT, EINVAL, ENOMEM).
            ValueError: for iters < 1 or above SIZE_MAX.
            TypeError: for iters that is not an integer.
        """
        iters = default_iters() if iters is None else int_arg(iters, "iters", 1, SIZE_MAX)
        with self.mem.lock:  # the C loop reads the address-space table
            ns = float(self._timer()(self._args, iters))
        if ns < 0:
            raise_errno(int(-ns), f"{self!r}: timing batch")
        return ns

    def batch(self, iters: int | None = None) -> Callable[[], float]:
        """A zero-argument callable running one batch (for ``labkit.measure.runner.run``)."""
        iters = default_iters() if iters is None else int_arg(iters, "iters", 1, SIZE_MAX)
        return lambda: self.time(iters)

    def work(self, calls: int = 1) -> Work:
        """Run ``calls`` calls with counting on (untimed) and return the work done.

        Raises:
            OSError: the model's errno for a bad set-up.
            ValueError: for calls < 0 or above SIZE_MAX.
            TypeError: for calls that is not an integer.
        """
        calls = int_arg(calls, "calls", 0, SIZE_MAX)
        w = ffi.new("struct lk_ubuf_work *")
        fn = lib.lk_ubuf_uring_work if self._uring else lib.lk_ubuf_syscall_work
        with self.mem.lock:
            ret = fn(self._args, calls, w)
        if ret < 0:
            raise_errno(-ret, f"{self!r}: counting {calls} calls")
        return Work._from_c(w)


class SyscallModel(_Model):
    """One modelled ``read()`` or ``readv()`` call over real user memory.

    Args:
        syscall: ``"read"`` (``import_ubuf`` of ``size`` bytes) or ``"readv"``
            (``import_iovec`` of the user's iovec array, held in user memory).
        kernel: the import era for readv: ``"6.3"`` (one segment stays
            ITER_IOVEC) or ``"6.4"`` (one segment becomes ITER_UBUF).
        op: ``"zero"`` (``iov_iter_zero``, a page at a time, as /dev/zero),
            ``"copy"`` (``copy_to_iter`` from a kernel buffer) or
            ``"advance"`` (``iov_iter_advance``: no bytes move).
        size: bytes per call (read) and the default single segment (readv).
        segments: readv's segment lengths, laid end to end in one mapping
            (default ``[size]``; ``[4096, 0]`` is the live A/B's proxy).
        mem: the user address space to map into (a new one by default).
        shared: a :class:`SharedMemory` whose data buffer and iovec-table page
            this model uses instead of mappings of its own (compare variants
            over the same physical memory).
    """

    def __init__(
        self,
        syscall: str = "readv",
        kernel: str = "6.4",
        *,
        op: str = "zero",
        size: int = PAGE_SIZE,
        segments: Sequence[int] | None = None,
        mem: UserMemory | None = None,
        shared: SharedMemory | None = None,
    ) -> None:
        if syscall not in ("read", "readv"):
            raise ValueError(f"syscall must be 'read' or 'readv', got {syscall!r}")
        kind = lib.LK_UBUF_KIND_READ if syscall == "read" else lib.LK_UBUF_KIND_READV
        era = kernel_era(kernel)  # before anything is mapped
        super().__init__(kind=kind, op=op, size=size, segments=segments, mem=mem, shared=shared)
        self.syscall = syscall
        self.kernel = str(kernel)
        self._args.era = era

    def __repr__(self) -> str:
        segs = "" if self.syscall == "read" else f", segments={self.segments}"
        return (
            f"SyscallModel({self.syscall!r}, kernel={self.kernel!r}, op={self.op!r}, "
            f"size={self.size}{segs})"
        )


class UringModel(_Model):
    """One modelled io_uring read request (R3), with deterministic deferral.

    Args:
        variant: one of :data:`URING_VARIANTS`: ``"readv-iovec"`` (READV before
            6.4), ``"readv-rewrite"`` (R3's patch: one segment -> READ),
            ``"readv-6.4"`` (UBUF by the generic import, opcode kept) or
            ``"read"`` (IORING_OP_READ of ``size`` bytes).
        defer_every: every k-th request is deferred (0: none); see
            :func:`defer_every_for` to derive k from a rate.
        defer_alloc_ubuf: model 6.3's ``-EAGAIN`` path, where a deferred READ
            also allocates async state and copies its (UBUF) iterator, instead
            of the commit message's account (a READ keeps only addr/len).
        op, size, segments, mem, shared: as for :class:`SyscallModel`.
    """

    _uring = True

    def __init__(
        self,
        variant: str = "readv-iovec",
        *,
        defer_every: int = 0,
        defer_alloc_ubuf: bool = False,
        op: str = "zero",
        size: int = PAGE_SIZE,
        segments: Sequence[int] | None = None,
        mem: UserMemory | None = None,
        shared: SharedMemory | None = None,
    ) -> None:
        if variant not in URING_VARIANTS:
            raise ValueError(f"variant must be one of {sorted(URING_VARIANTS)}, got {variant!r}")
        defer_every = int_arg(defer_every, "defer_every", 0, SIZE_MAX)
        super().__init__(
            kind=URING_VARIANTS[variant],
            op=op,
            size=size,
            segments=segments,
            mem=mem,
            shared=shared,
        )
        self.variant = variant
        self.defer_every = defer_every
        self.defer_alloc_ubuf = bool(defer_alloc_ubuf)
        self._args.defer_every = defer_every
        self._args.defer_alloc_ubuf = int(self.defer_alloc_ubuf)

    def __repr__(self) -> str:
        return (
            f"UringModel({self.variant!r}, defer_every={self.defer_every}, op={self.op!r}, "
            f"size={self.size}, segments={self.segments})"
        )


# ---- ready-made experiment sets (names are the variant labels used in notebook 03) ----


def mechanics_models(
    *, op: str = "advance", size: int = PAGE_SIZE, mem: UserMemory | None = None
) -> dict[str, SyscallModel]:
    """Experiment (a): import one iovec and iterate it, 6.3 (IOVEC) vs 6.4 (UBUF).

    The models share one data buffer and one iovec-table page (:class:`SharedMemory`).
    """
    sh = SharedMemory(size, mem)
    return {
        "6.3 (IOVEC)": SyscallModel("readv", "6.3", op=op, size=size, shared=sh),
        "6.4 (UBUF)": SyscallModel("readv", "6.4", op=op, size=size, shared=sh),
    }


def read_zero_models(
    *, size: int = PAGE_SIZE, proxy: bool = False, mem: UserMemory | None = None
) -> dict[str, SyscallModel]:
    """Experiment (b), R2's read-zero: read, readv(1) before and after 6.4.

    With ``proxy=True`` also readv(size + empty) on 6.4, the live A/B's IOVEC side.
    The models share one data buffer and one iovec-table page (:class:`SharedMemory`).
    """
    sh = SharedMemory(size, mem)
    models = {
        "read": SyscallModel("read", "6.4", size=size, shared=sh),
        "readv 6.3": SyscallModel("readv", "6.3", size=size, shared=sh),
        "readv 6.4": SyscallModel("readv", "6.4", size=size, shared=sh),
    }
    if proxy:
        models["readv 6.4 (4K+empty)"] = SyscallModel(
            "readv", "6.4", size=size, segments=[size, 0], shared=sh
        )
    return models


def uring_models(
    *,
    defer_every: int = 0,
    defer_alloc_ubuf: bool = False,
    size: int = PAGE_SIZE,
    variants: Sequence[str] | None = None,
    mem: UserMemory | None = None,
) -> dict[str, UringModel]:
    """Experiment (c), R3: READV as IOVEC vs READV rewritten to READ vs READ (and READV on 6.4)."""
    sh = SharedMemory(size, mem)
    names = list(variants) if variants is not None else list(URING_LABELS)
    return {
        URING_LABELS.get(v, v): UringModel(
            v, defer_every=defer_every, defer_alloc_ubuf=defer_alloc_ubuf, size=size, shared=sh
        )
        for v in names
    }


def batches(
    models: Mapping[str, _Model], iters: int | None = None
) -> dict[str, Callable[[], float]]:
    """The variants dict ``labkit.measure.runner.run`` takes: one zero-argument batch per model."""
    return {name: m.batch(iters) for name, m in models.items()}


def work_table(models: Mapping[str, _Model], calls: int = 1000) -> Any:
    """A pandas DataFrame of per-call work, one row per model (deterministic)."""
    import pandas as pd

    rows = []
    for name, m in models.items():
        w = m.work(calls)
        row = {"variant": name, "calls": w.calls}
        row.update(w.per_call())
        rows.append(row)
    return pd.DataFrame(rows).set_index("variant")


__all__ = [
    "ASYNC_STATE_BYTES",
    "ITER_STATE_BYTES",
    "OPS",
    "URING_LABELS",
    "URING_VARIANTS",
    "SharedMemory",
    "SyscallModel",
    "UringModel",
    "Work",
    "batches",
    "default_iters",
    "defer_every_for",
    "mechanics_models",
    "read_zero_models",
    "uring_models",
    "work_table",
]
