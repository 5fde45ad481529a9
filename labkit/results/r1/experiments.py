"""Notebook 02's experiments (R1): the cost of each seek, the modelled submission, and F.

Everything is measured through :func:`labkit.measure.runner.run` (pinned,
warmed up, variants interleaved) over the C timing kernels of
:mod:`labkit.measure.timers`; F, the fixed cost of one submission, is the
live io_uring READ_FIXED round trip where the kernel allows io_uring.

Each experiment is repeated in ``runs`` independent single-threaded worker
processes (:mod:`labkit.measure.workers`): a worker registers its own buffer
with the geometry of the one passed in (length, folio size, offset in the
first folio), at its own address, so that allocation and placement change
from run to run.  The rows say which run made them (``run`` column).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from labkit._args import positive_int
from labkit.config import quick_mode
from labkit.core.fixed import SEEKS, RegisteredBuffer, io_import_fixed, register_buffer
from labkit.core.iter_args import ITER_DEST
from labkit.core.memory import PAGE_SIZE, UserMemory
from labkit.live.ring import Ring
from labkit.live.sources import open_zero
from labkit.live.syscalls import syscall_ns
from labkit.live.variants import DEFAULT_LENGTH, MAX_REGISTERED_BUFFER
from labkit.measure import runner, workers
from labkit.measure.experiment import Arguments, in_workers
from labkit.measure.timers import time_fixed_seek, time_fixed_submit

if TYPE_CHECKING:
    import pandas as pd

    from labkit.measure.stats import Estimate


# F, the fixed cost of one submission: what a submission costs besides the seek and the copy,
# measured, never chosen.


def calibrated(kernel: Callable[[int], float], target_ns: float) -> int:
    """The iterations that make one batch of ``kernel`` last about ``target_ns``."""
    return runner.calibrate(kernel, target_ns=target_ns, max_iters=10_000_000)


#: What F was measured as, by the kernel's answer to io_uring (the ``source`` column).
F_SOURCES = {
    "io_uring": "live io_uring READ_FIXED round trip of 1 byte (labkit.live)",
    "read": "read(2) of 1 byte from /dev/zero, timed in C",
}


@in_workers("live.fixed_cost")
def fixed_cost_experiment(
    *,
    repeats: int,
    warmup: int = 1,
    target_ns: float = 2e6,
    cpu: int | None = None,
) -> runner.Rows:
    """The measured fixed cost F of one submission: rows of variant ``"F"`` (experiment "fixed-F").

    F is what a submission costs besides the seek and the copy, so it is
    measured with a 1-byte transfer: the live io_uring READ_FIXED round trip
    at queue depth 1 into a registered buffer when the kernel allows io_uring;
    otherwise one real ``read()`` system call of 1 byte from /dev/zero.  Never
    a chosen number.  The ``source`` column says which (:data:`F_SOURCES`).
    Measured in ``runs`` single-threaded workers,
    batches of about ``target_ns``.
    """

    def measure(kernel: Callable[[int], float], source: str) -> runner.Rows:
        iters = calibrated(kernel, target_ns)
        return runner.measure(
            "fixed-F",
            {"F": lambda: kernel(iters)},
            repeats=repeats,
            warmup=warmup,
            params={"source": F_SOURCES[source]},
            cpu=cpu,
        )

    zfd = open_zero()
    try:
        try:
            with Ring(8) as ring:
                ring.register_buffer(1 << 20)
                return measure(
                    lambda n: ring.roundtrip_ns("read_fixed", zfd, 1, iters=n), "io_uring"
                )
        except OSError:
            pass  # the kernel refused io_uring: a plain read(2) stands in
        return measure(lambda n: syscall_ns("read", zfd, length=1, iters=n), "read")
    finally:
        os.close(zfd)


def default_registered_size(quick: bool | None = None) -> int:
    """The registered buffer size for R1: 1 GiB (the 2019 cap), 64 MiB in quick mode."""
    return (64 << 20) if quick_mode(quick) else MAX_REGISTERED_BUFFER


def read_fixed_roundtrip_ns(
    *,
    buffer_size: int | None = None,
    where: str = "head",
    length: int = DEFAULT_LENGTH,
    iters: int = 20_000,
    batches: int = 5,
    cpu: int | None = None,
    timeout: float = workers.DEFAULT_TIMEOUT,
) -> float:
    """The live cost F of one READ_FIXED round trip at queue depth 1, in nanoseconds.

    Registers a buffer of ``buffer_size`` bytes (:func:`default_registered_size`
    if None), reads ``length`` bytes of /dev/zero into its head (or ``"tail"``)
    ``iters`` times per batch, and returns the median of ``batches`` batches,
    measured in one single-threaded worker process.
    Raises OSError when io_uring is unavailable (see :func:`labkit.live.probe`).
    """
    if where not in ("head", "tail"):
        raise ValueError("where must be 'head' or 'tail'")
    size = default_registered_size() if buffer_size is None else int(buffer_size)
    at = 0 if where == "head" else size - int(length)
    iters, batches = positive_int(iters, "iters"), positive_int(batches, "batches")
    df: pd.DataFrame = _read_fixed_batches(
        size, at, int(length), iters, batches, cpu, runs=1, timeout=timeout
    )
    return float(df["ns_per_op"].median())


@in_workers("live.read_fixed_batches")
def _read_fixed_batches(
    size: int, at: int, length: int, iters: int, batches: int, cpu: int | None
) -> runner.Rows:
    """The batches of :func:`read_fixed_roundtrip_ns`, in one (worker) process."""
    zfd = open_zero()
    try:
        with Ring(8) as ring:
            ring.register_buffer(size)
            run = ring.roundtrip_variant("read_fixed", zfd, length, iters=iters, buf_offset=at)
            return runner.measure(
                "live-read-fixed",
                {"read_fixed": run},
                repeats=batches,
                warmup=1,
                params={"buffer_bytes": size, "buf_offset": at, "bytes": length, "iters": iters},
                cpu=cpu,
            )
    finally:
        os.close(zfd)


Runner = Callable[..., "pd.DataFrame"]
Measure = Callable[..., runner.Rows]

#: The largest alignment a worker's buffer copies from the original (a huge page).
_MAX_ALIGN = 2 << 20


def buffer_geometry(reg: RegisteredBuffer) -> dict[str, int]:
    """What a worker needs to register a buffer like ``reg``: JSON-able.

    ``length`` and ``folio_shift`` as given; ``align`` is the alignment of
    ``reg.addr``'s folio-aligned base (at least the folio, at most 2 MiB) and
    ``offset`` is ``reg.addr`` modulo it, so the first bvec has the same length.
    """
    folio = 1 << reg.folio_shift
    base = reg.addr - reg.addr % folio
    align = folio
    while align < _MAX_ALIGN and base % (align * 2) == 0:
        align *= 2
    return {
        "length": reg.length,
        "folio_shift": reg.folio_shift,
        "align": max(align, PAGE_SIZE),
        "offset": reg.addr % max(align, PAGE_SIZE),
    }


def registered_like(geometry: dict[str, int]) -> RegisteredBuffer:
    """A buffer with the geometry :func:`buffer_geometry` describes, in new memory."""
    folio = 1 << int(geometry["folio_shift"])
    span = int(geometry["offset"]) + int(geometry["length"])
    size = -(-span // folio) * folio
    mem = UserMemory()
    m = mem.map(size, align=int(geometry["align"]))
    return register_buffer(
        mem,
        m.addr + int(geometry["offset"]),
        int(geometry["length"]),
        folio_shift=int(geometry["folio_shift"]),
    )


def seek_offsets(length: int, points_per_decade: int = 4) -> list[int]:
    """Page-aligned offsets from 0 to the last page of a ``length``-byte buffer, log-spaced."""
    last_page = (int(length) - PAGE_SIZE) // PAGE_SIZE
    if last_page < 1:
        return [0]
    n = max(2, round(points_per_decade * np.log10(max(last_page, 10))) + 1)
    pages = np.unique(np.round(np.logspace(0, np.log10(last_page), n)).astype(int))
    return [0] + [int(p) * PAGE_SIZE for p in pages]


def landing(reg: RegisteredBuffer, length: int = PAGE_SIZE) -> pd.DataFrame:
    """Where each seek leaves the iterator for a read at the head, the middle and the tail
    of ``reg``: count, segment, offset, segments left, and how many segments (for
    walk-2019, single-page pieces) it examined (``visited``, counted in C, no clock)."""
    import pandas as pd  # on use: the workers import this module

    rows = []
    places = {"head": 0, "middle": reg.length // 2, "tail": reg.length - length}
    for where, off in places.items():
        for seek in SEEKS:
            it = io_import_fixed(ITER_DEST, reg, reg.addr + off, length, seek=seek)
            rows.append(
                {
                    "where": where,
                    "seek": seek,
                    "count": it.count,
                    "segment": it.seg_index,
                    "iov_offset": it.iov_offset,
                    "nr_segs": it.nr_segs,
                    "visited": it.visited,
                }
            )
    return pd.DataFrame(rows)


#: A worker gets a buffer shaped like the one passed in (:func:`buffer_geometry`).
_BUFFER_LIKE = {"reg": (buffer_geometry, registered_like)}


def _custom_run(arguments: Arguments) -> bool:
    return arguments["run"] is not None


def _measure_with(run: Runner | None) -> Measure:
    """runner.measure, or a custom ``run`` (a runner.run stand-in) giving rows the same way."""
    if run is None:
        return runner.measure
    return lambda *a, **k: run(*a, **k).to_dict("records")


# The two experiments below are each the function of one run, in one process; the
# decorator makes it the public experiment, with ``runs`` and ``timeout`` arguments
# more: measured in that many workers (1 unless given), each over its own
# buffer shaped like ``reg``, or all here with a custom ``run``.


@in_workers("model.fixed_seek", ship=_BUFFER_LIKE, here=_custom_run)
def seek_cost_experiment(
    reg: RegisteredBuffer,
    offsets: Iterable[int],
    *,
    length: int = PAGE_SIZE,
    repeats: int,
    seeks: Iterable[str] = tuple(SEEKS),
    target_ns: float = 2e6,
    run: Runner | None = None,
    experiment: str = "fixed-seek",
    cpu: int | None = None,
) -> runner.Rows:
    """Cost of one ``io_import_fixed`` (seek only) at each offset, for each seek.

    One ``run`` (``labkit.measure.runner.run``: pinned to ``cpu``, warmed up, seeks
    interleaved) per offset; returns the concatenated tidy rows with the columns
    ``offset``, ``pages_skipped``, ``buffer``, ``folio_shift``, ``length``.
    Repeated in ``runs`` worker processes, each
    over its own buffer shaped like ``reg`` (rows get ``run``, ``threads``,
    ``io_threads``); with a custom ``run`` it all happens in this process.
    """
    measure = _measure_with(run)
    rows: runner.Rows = []
    for off in offsets:
        variants = {}
        for s in seeks:
            iters = calibrated(
                lambda n, s=s, off=off: time_fixed_seek(reg, off, length, s, n), target_ns
            )
            variants[s] = lambda s=s, off=off, iters=iters: time_fixed_seek(
                reg, off, length, s, iters
            )
        rows += measure(
            experiment,
            variants,
            repeats=repeats,
            cpu=cpu,
            params={
                "offset": int(off),
                "pages_skipped": int(off) // PAGE_SIZE,
                "buffer": reg.length,
                "folio_shift": reg.folio_shift,
                "length": length,
            },
        )
    return rows


@in_workers("model.fixed_submit", ship=_BUFFER_LIKE, here=_custom_run)
def submission_experiment(
    reg: RegisteredBuffer,
    *,
    length: int = PAGE_SIZE,
    repeats: int,
    seeks: Iterable[str] = tuple(SEEKS),
    target_ns: float = 2e6,
    run: Runner | None = None,
    experiment: str = "fixed-submit",
    cpu: int | None = None,
) -> runner.Rows:
    """Modelled submission cost (seek + copy of ``length`` bytes) at the head and the tail.

    Head: the first ``length`` bytes of the buffer; tail: the last
    ``length``.  Variants are named ``"<seek> head"`` / ``"<seek> tail"`` and
    interleaved in one ``run`` (pinned to ``cpu``); columns ``seek``, ``where``, ``buffer``,
    ``folio_shift``, ``length`` are added.  Repeated in ``runs`` worker
    processes over buffers shaped like ``reg``;
    with a custom ``run`` it all happens in this process.
    """
    places = {"head": 0, "tail": reg.length - length}
    variants = {}
    for s in seeks:
        for where, off in places.items():
            iters = calibrated(
                lambda n, s=s, off=off: time_fixed_submit(reg, off, length, s, n), target_ns
            )
            variants[f"{s} {where}"] = lambda s=s, off=off, iters=iters: time_fixed_submit(
                reg, off, length, s, iters
            )
    rows = _measure_with(run)(
        experiment,
        variants,
        repeats=repeats,
        cpu=cpu,
        params={"buffer": reg.length, "folio_shift": reg.folio_shift, "length": length},
    )
    for row in rows:
        row["seek"], row["where"] = row["variant"].rsplit(" ", 1)
    return rows


# ---- the notebook's analysis (notebook 02) ---------------------------------------------


def submission_with_fixed(
    reg: RegisteredBuffer,
    *,
    length: int = PAGE_SIZE,
    repeats: int,
    seeks: Iterable[str] = ("walk-2019", "shift"),
    target_ns: float = 2e6,
    cpu: int | None = None,
    runs: int | None = None,
) -> pd.DataFrame:
    """:func:`submission_experiment` and F (:func:`fixed_cost_experiment`, variant ``"F"``),
    each in ``runs`` independent single-threaded workers; run ``i`` of F is paired with
    run ``i`` of the submissions (F's rows carry ``source`` and the same ``buffer`` and
    ``length`` columns).
    """
    import pandas as pd  # on use: the workers import this module

    sub = submission_experiment(
        reg, length=length, repeats=repeats, seeks=seeks, target_ns=target_ns, cpu=cpu, runs=runs
    )
    f = fixed_cost_experiment(repeats=repeats, target_ns=target_ns, cpu=cpu, runs=runs)
    f = f.assign(buffer=reg.length, length=length)
    return pd.concat([sub, f], ignore_index=True)


#: The head/tail ratios of R1: label -> (numerator, denominator, key of seed.published).
RATIOS = {
    "before fix: tail / head": ("walk-2019 tail", "walk-2019 head", "before_tail_over_head"),
    "tail: before / after fix (the 755x)": ("walk-2019 tail", "shift tail", "tail_speedup"),
    "after fix: tail / head": ("shift tail", "shift head", "after_tail_over_head"),
}
#: The four submissions of R1: label -> (variant, key of seed.published).
SUBMISSIONS = {
    "before, head": ("walk-2019 head", "before_head_ns"),
    "before, tail": ("walk-2019 tail", "before_tail_ns"),
    "after, head": ("shift head", "after_head_ns"),
    "after, tail": ("shift tail", "after_tail_ns"),
}


def head_tail_ratios(df: pd.DataFrame, *, fixed: Any = "F", **kw: Any) -> dict[str, Estimate]:
    """The three :data:`RATIOS` as (F + seek + copy) / (F + seek + copy) Estimates."""
    from labkit.measure import stats  # on use: the workers import this module

    return {
        label: stats.composed_ratio(df, num, den, fixed=fixed, **kw)
        for label, (num, den, _) in RATIOS.items()
    }


def submission_costs(df: pd.DataFrame, *, fixed: str = "F", **kw: Any) -> dict[str, Estimate]:
    """The four :data:`SUBMISSIONS` as F + (seek + copy) Estimates, in ns."""
    from labkit.measure import stats  # on use: the workers import this module

    return {
        label: stats.sum_of_medians(df, [fixed, variant], **kw)
        for label, (variant, _) in SUBMISSIONS.items()
    }


def speedup_explained(ratio: Estimate, f_ns: float, ns_per_page: float, pages: int) -> str:
    """The measured cause of a tail speed-up that differs from 755x, in one sentence.

    The speed-up is (F + pages x walk per page) / (F + shift) to first order, so
    755x scales with this machine's measured F and walk cost, and the pages
    skipped: 755 x (walk / 3.96) x (1,377 / F) x (pages / 262,143).
    """
    from labkit.results.r1 import seed  # on use: the workers import this module

    pub = seed.published()
    k_walk = ns_per_page / pub["ns_per_page"]
    k_f = pub["after_tail_ns"] / f_ns
    k_pages = pages / pub["pages"]
    predicted = pub["tail_speedup"] * k_walk * k_f * k_pages
    size = "" if pages == pub["pages"] else f" and {pages:,} pages skipped (x{k_pages:.3g})"
    return (
        f"measured here: F = {f_ns:,.0f} ns against {pub['after_tail_ns']:,.0f} ns in 2019 "
        f"(x{k_f:.2f} on the ratio), a walk of {ns_per_page:.2f} against "
        f"{pub['ns_per_page']:.2f} ns per page (x{k_walk:.2f}){size}: "
        f"{pub['tail_speedup']:.0f}x scaled by these predicts {predicted:.0f}x, "
        f"beside {ratio.estimate:.0f}x measured"
    )


def ratios_by_size(frames: Mapping[int, pd.DataFrame], *, fixed: Any, **kw: Any) -> pd.DataFrame:
    """The tail speed-up and the walk-2019 tail/head ratio per buffer size (bytes -> rows)."""
    import pandas as pd  # on use: the workers import this module

    from labkit.measure import stats  # on use: the workers import this module

    rows = []
    for size, d in frames.items():
        for label, (num, den) in (
            ("tail: walk-2019 / shift", ("walk-2019 tail", "shift tail")),
            ("walk-2019: tail / head", ("walk-2019 tail", "walk-2019 head")),
        ):
            e = stats.composed_ratio(d, num, den, fixed=fixed, **kw)
            rows.append({"buffer_MiB": size >> 20, "ratio": label, **e.as_dict()})
    return pd.DataFrame(rows)


__all__ = [
    "RATIOS",
    "SUBMISSIONS",
    "head_tail_ratios",
    "landing",
    "ratios_by_size",
    "seek_cost_experiment",
    "seek_offsets",
    "speedup_explained",
    "submission_costs",
    "submission_experiment",
    "submission_with_fixed",
]
