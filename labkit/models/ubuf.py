"""Model experiments for the 2023 single-segment ``ITER_UBUF`` work (R2 and R3).

Two questions, each asked of C timing kernels over labkit's iterator core
(``labkit/csrc/models/ubuf_model.c``) and real user memory:

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

What a modelled call imports is a read variant of the one table the live
loops use (:data:`labkit.live.variants.VARIANTS`): ``read`` imports the buffer
(``import_ubuf``), the iovec variants the user's iovec array laid out as the
variant lays it (``import_iovec``).

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
from itertools import accumulate
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np

from labkit._args import SIZE_MAX, int_arg, iters_arg, size_arg
from labkit._ffi import check, ffi, lib, raise_errno
from labkit.budget import apply_setting
from labkit.config import quick_mode
from labkit.core.imports import kernel_era
from labkit.core.memory import PAGE_SIZE, UserMemory
from labkit.live.variants import VARIANTS, ReadVariant, read_variant
from labkit.models.shared import SharedMemory
from labkit.models.work import Work

if TYPE_CHECKING:  # typing.Unpack is Python 3.11+; only type checkers read it
    from typing_extensions import Unpack

OPS = {
    "advance": int(lib.LK_UBUF_OP_ADVANCE),
    "copy": int(lib.LK_UBUF_OP_COPY),
    "zero": int(lib.LK_UBUF_OP_ZERO),
}
"""What a modelled call does with its iterator."""

URING_VARIANTS: dict[str, tuple[str, str, bool]] = {
    "read": ("read", "6.4", False),
    "readv-iovec": ("readv1", "6.3", False),
    "readv-rewrite": ("readv1", "6.3", True),
    "readv-6.4": ("readv1", "6.4", False),
}
"""io_uring request variants: name -> (read variant, import era, R3's rewrite).
IORING_OP_READ; READV before 6.4 (ITER_IOVEC); READV with R3's rewrite to
READ; READV on 6.4+ (UBUF by the generic import, opcode still READV)."""

_URING_KERNEL = {
    "readv-iovec": " as IOVEC (6.3)",
    "readv-rewrite": " rewritten to READ (R3)",
    "readv-6.4": ", UBUF import (6.4+)",
    "read": "",
}
URING_LABELS = {
    name: str(VARIANTS[URING_VARIANTS[name][0]].uring) + kernel
    for name, kernel in _URING_KERNEL.items()
}
"""Human-readable names of :data:`URING_VARIANTS`: the io_uring opcode of the
read variant, and what the modelled kernel does with it."""

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


def _size(value: Any, name: str) -> int:
    """A byte count for the model: an int in 0..SIZE_MAX, else OSError(EINVAL)."""
    return int_arg(value, name, 0, SIZE_MAX, err=errno.EINVAL)


def _segments_arg(
    segments: Sequence[int] | None, size: int, variant: ReadVariant
) -> list[tuple[int, int]]:
    """The user's iovec array as (offset in the data buffer, length) pairs.

    By default the variant's own layout of ``size`` bytes; given lengths are
    laid end to end.
    """
    if segments is None:
        return variant.segments(size) if variant.vectored else [(0, size)]
    segs = [_size(s, f"segment {k} length") for k, s in enumerate(segments)]
    if len(segs) > int(lib.LK_UBUF_MAX_SEGS):
        raise_errno(
            errno.EINVAL,
            f"{len(segs)} segments, more than UIO_MAXIOV ({int(lib.LK_UBUF_MAX_SEGS)})",
        )
    if any(s < 0 for s in segs):
        raise_errno(errno.EINVAL, f"segment lengths must be >= 0, got {segs}")
    offsets = list(accumulate([0, *segs[:-1]])) if segs else []
    return list(zip(offsets, segs, strict=True))


class ModelOptions(TypedDict, total=False):
    """The keywords every model takes: what each call does and the memory it uses.

    ``op`` (default ``"zero"``), ``size`` (default ``PAGE_SIZE``), ``segments``,
    ``mem`` and ``shared`` (default None): see :class:`SyscallModel`.
    """

    op: str
    size: int
    segments: Sequence[int] | None
    mem: UserMemory | None
    shared: SharedMemory | None


class _Model:
    """Shared set-up: a data mapping, the user's iovec array in user memory, the C args."""

    _uring = False

    def __init__(
        self,
        variant: ReadVariant,
        era: int,
        *,
        op: str = "zero",
        size: int = PAGE_SIZE,
        segments: Sequence[int] | None = None,
        mem: UserMemory | None = None,
        shared: SharedMemory | None = None,
    ) -> None:
        if op not in OPS:
            raise ValueError(f"op must be one of {sorted(OPS)}, got {op!r}")
        size = _size(size, "size")
        self.op = op
        layout = _segments_arg(segments, size, variant)
        self.segments = [length for _, length in layout]
        total = max(size, max((off + n for off, n in layout), default=0))
        nseg = max(len(layout), 1)
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
            self._set_up(variant, era, layout, size, total, nseg, uvec_off, shared)
        except BaseException:
            if shared is None:
                self.mem.unmap(self.data)
                self.mem.unmap(self.uvec_map)
            raise

    def _set_up(
        self, variant: Any, era: int, layout: list, size: int, total: int, nseg: int,
        uvec_off: int, shared: Any,
    ) -> None:  # fmt: skip
        """The iovec array in user memory and the C arguments (after the mappings)."""
        self.uvec_addr = self.uvec_map.addr + uvec_off
        # the user's iovec array, written into user memory
        table = (
            self.uvec_map.array[uvec_off : uvec_off + nseg * 16].view(np.uint64).reshape(nseg, 2)
        )
        for k, (offset, length) in enumerate(layout):
            table[k] = (self.data.addr + offset, length)
        self.size = size
        self._src = np.frombuffer(bytes(range(256)) * (total // 256 + 1), dtype=np.uint8)
        self._csrc = ffi.from_buffer("uint8_t[]", self._src)
        self._shared = shared  # keeps the argument slot alive
        a = shared.args_slot() if shared is not None else ffi.new("struct lk_ubuf_args *")
        a.mm = self.mem.c_mm
        a.variant = variant.id
        a.era = era
        a.op = OPS[self.op]
        a.buf = self.data.addr
        a.len = size
        a.uvec = self.uvec_addr
        a.nr_segs = len(layout)
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
            OSError: the model's errno for a bad set-up (EFAULT, EINVAL, ENOMEM),
                EINVAL for iters < 1, ETIMEDOUT for a batch past the time budget.
        """
        iters = default_iters() if iters is None else iters_arg(iters)
        apply_setting()
        with self.mem.lock:  # the C loop reads the address-space table
            ns = float(self._timer()(self._args, iters))
        return float(check(ns, f"{self!r}: timing batch"))

    def batch(self, iters: int | None = None) -> Callable[[], float]:
        """A zero-argument callable running one batch (for ``labkit.measure.runner.run``)."""
        iters = default_iters() if iters is None else iters_arg(iters)
        return lambda: self.time(iters)

    def work(self, calls: int = 1) -> Work:
        """Run ``calls`` calls with counting on (untimed) and return the work done.

        Raises:
            OSError: the model's errno for a bad set-up; ETIMEDOUT when counting
                runs past the time budget (:func:`labkit.budget.set_time_budget`).
            ValueError: for calls < 0.
        """
        calls = size_arg(calls, "calls")
        w = ffi.new("struct lk_ubuf_work *")
        fn = lib.lk_ubuf_uring_work if self._uring else lib.lk_ubuf_syscall_work
        apply_setting()
        with self.mem.lock:
            check(fn(self._args, calls, w), f"{self!r}: counting {calls} calls")
        return Work._from_c(w)


class SyscallModel(_Model):
    """One modelled ``read()`` or ``readv()`` call over real user memory.

    Args:
        syscall: ``"read"`` (``import_ubuf`` of ``size`` bytes) or ``"readv"``
            (``import_iovec`` of the user's iovec array, held in user memory),
            or any system call variant of :data:`labkit.live.SYSCALL_VARIANTS`
            (``"readv_empty"``, ``"readv_split"``, ...), whose iovec layout
            of ``size`` bytes is then the default ``segments``.
        kernel: the import era for readv: ``"6.3"`` (one segment stays
            ITER_IOVEC) or ``"6.4"`` (one segment becomes ITER_UBUF).
        op: ``"zero"`` (``iov_iter_zero``, a page at a time, as /dev/zero),
            ``"copy"`` (``copy_to_iter`` from a kernel buffer) or
            ``"advance"`` (``iov_iter_advance``: no bytes move).
        size: bytes per call (read) and the default single segment (readv).
        segments: readv's segment lengths, laid end to end in one mapping
            (default: the variant's layout, ``[size]`` for readv;
            ``[4096, 0]``, the layout of ``readv_empty``, is the live A/B's proxy).
        mem: the user address space to map into (a new one by default).
        shared: a :class:`SharedMemory` whose data buffer and iovec-table page
            this model uses instead of mappings of its own (compare variants
            over the same physical memory).
    """

    def __init__(
        self,
        syscall: str = "readv",
        kernel: str = "6.4",
        **options: Unpack[ModelOptions],
    ) -> None:
        variant = read_variant("readv1" if syscall == "readv" else syscall, interface="syscall")
        super().__init__(variant, kernel_era(kernel), **options)
        self.syscall = syscall
        self.kernel = str(kernel)

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
        **options: Unpack[ModelOptions],
    ) -> None:
        if variant not in URING_VARIANTS:
            raise ValueError(f"variant must be one of {sorted(URING_VARIANTS)}, got {variant!r}")
        defer_every = int_arg(defer_every, "defer_every", 0, SIZE_MAX)
        if defer_every < 0:
            raise ValueError(f"defer_every must be >= 0, got {defer_every}")
        read, kernel, rewrite = URING_VARIANTS[variant]
        super().__init__(VARIANTS[read], kernel_era(kernel), **options)
        self.variant = variant
        self.defer_every = defer_every
        self.defer_alloc_ubuf = bool(defer_alloc_ubuf)
        self._args.rewrite = int(rewrite)
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
        models["readv 6.4 (4K+empty)"] = SyscallModel("readv_empty", "6.4", size=size, shared=sh)
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


#: The columns of :func:`work_table` a reader compares between eras (the iterator's work).
WORK_COLUMNS = (
    "ubuf_iters",
    "iovec_iters",
    "seg_steps",
    "uvec_bytes_read",
    "iovec_table_bytes",
    "iter_bytes_copied",
    "allocs",
    "frees",
    "bytes_moved",
)


def work_table(models: Mapping[str, _Model], calls: int = 1000) -> Any:
    """A pandas DataFrame of per-call work, one row per model (deterministic)."""
    import pandas as pd  # on use: the model's modules do not load pandas otherwise

    rows = []
    for name, m in models.items():
        w = m.work(calls)
        row = {"variant": name, "calls": w.calls}
        row.update(w.per_call())
        rows.append(row)
    return pd.DataFrame(rows).set_index("variant")


__all__ = [
    "URING_LABELS",
    "WORK_COLUMNS",
    "SyscallModel",
    "UringModel",
    "batches",
    "defer_every_for",
    "mechanics_models",
    "read_zero_models",
    "uring_models",
    "work_table",
]
