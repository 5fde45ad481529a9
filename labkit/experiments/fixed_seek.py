"""Notebook 02's experiments (R1): the cost of each seek, the modelled submission, and F.

Everything is measured through :func:`labkit.measure.runner.run` (pinned,
warmed up, variants interleaved) over the C timing kernels of
:mod:`labkit.measure.timers`; F, the fixed cost of one submission, is the
live io_uring READ_FIXED round trip where the kernel allows io_uring.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from labkit._args import positive_int
from labkit.config import quick_mode
from labkit.core.fixed import SEEKS, RegisteredBuffer
from labkit.core.memory import PAGE_SIZE
from labkit.live.ring import Ring
from labkit.live.sources import open_zero
from labkit.live.syscalls import read_syscall_ns
from labkit.live.variants import DEFAULT_LENGTH, MAX_REGISTERED_BUFFER
from labkit.measure import runner, stats
from labkit.measure.resampling import Estimate
from labkit.measure.sequential import Budget
from labkit.measure.timers import time_fixed_seek, time_fixed_submit

if TYPE_CHECKING:
    import pandas as pd


Runner = Callable[..., "pd.DataFrame"]


def _calibrate(kernel: Callable[[int], float], target_ns: float) -> int:
    return runner.calibrate(kernel, target_ns=target_ns, max_iters=10_000_000)


def seek_offsets(length: int, points_per_decade: int = 4) -> list[int]:
    """Page-aligned offsets from 0 to the last page of a ``length``-byte buffer, log-spaced."""
    last_page = (int(length) - PAGE_SIZE) // PAGE_SIZE
    if last_page < 1:
        return [0]
    n = max(2, round(points_per_decade * np.log10(max(last_page, 10))) + 1)
    pages = np.unique(np.round(np.logspace(0, np.log10(last_page), n)).astype(int))
    return [0] + [int(p) * PAGE_SIZE for p in pages]


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
) -> pd.DataFrame:
    """Cost of one ``io_import_fixed`` (seek only) at each offset, for each seek.

    One ``run`` (``labkit.measure.runner.run``: pinned to ``cpu``, warmed up, seeks
    interleaved) per offset; returns the concatenated tidy rows with the columns
    ``offset``, ``pages_skipped``, ``buffer``, ``folio_shift``, ``length``.
    """
    import pandas as pd

    run = run or runner.run
    frames = []
    for off in offsets:
        variants = {}
        for s in seeks:
            iters = _calibrate(
                lambda n, s=s, off=off: time_fixed_seek(reg, off, length, s, n), target_ns
            )
            variants[s] = lambda s=s, off=off, iters=iters: time_fixed_seek(
                reg, off, length, s, iters
            )
        frames.append(
            run(
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
        )
    return pd.concat(frames, ignore_index=True)


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
) -> pd.DataFrame:
    """Modelled submission cost (seek + copy of ``length`` bytes) at the head and the tail.

    Head: the first ``length`` bytes of the buffer; tail: the last
    ``length``.  Variants are named ``"<seek> head"`` / ``"<seek> tail"`` and
    interleaved in one ``run`` (pinned to ``cpu``); columns ``seek``, ``where``, ``buffer``,
    ``folio_shift``, ``length`` are added.
    """
    run = run or runner.run
    places = {"head": 0, "tail": reg.length - length}
    variants = {}
    for s in seeks:
        for where, off in places.items():
            iters = _calibrate(
                lambda n, s=s, off=off: time_fixed_submit(reg, off, length, s, n), target_ns
            )
            variants[f"{s} {where}"] = lambda s=s, off=off, iters=iters: time_fixed_submit(
                reg, off, length, s, iters
            )
    df = run(
        experiment,
        variants,
        repeats=repeats,
        cpu=cpu,
        params={"buffer": reg.length, "folio_shift": reg.folio_shift, "length": length},
    )
    df["seek"] = df["variant"].str.rsplit(" ", n=1).str[0]
    df["where"] = df["variant"].str.rsplit(" ", n=1).str[1]
    return df


def fixed_cost_source(*, target_ns: float = 2e6) -> tuple[str, Callable[[], float]]:
    """The measured fixed cost F of one submission: (description, zero-arg batch callable).

    F is what a submission costs besides the seek and the copy, so it is
    measured with a 1-byte transfer: the live io_uring READ_FIXED round trip
    at queue depth 1 (:func:`read_fixed_roundtrip_ns`) when the kernel allows
    io_uring; otherwise one real ``read()`` system call of 1 byte from
    /dev/zero (:func:`labkit.live.syscalls.read_syscall_ns`).  Never a chosen number.
    """

    def live_batch(n: int) -> float:
        return float(read_fixed_roundtrip_ns(buffer_size=1 << 20, length=1, iters=n, batches=1))

    def read_batch(n: int) -> float:
        return float(read_syscall_ns(length=1, iters=n, batches=1))

    try:
        iters = _calibrate(live_batch, target_ns)
        return (
            "live io_uring READ_FIXED round trip of 1 byte (labkit.live)",
            lambda: live_batch(iters),
        )
    except OSError:
        pass  # the kernel refused io_uring: fall back
    iters = _calibrate(read_batch, target_ns)
    return ("read(2) of 1 byte from /dev/zero, timed in C", lambda: read_batch(iters))


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
) -> float:
    """The live cost F of one READ_FIXED round trip at queue depth 1, in nanoseconds.

    Registers a buffer of ``buffer_size`` bytes (:func:`default_registered_size`
    if None), reads ``length`` bytes of /dev/zero into its head (or ``"tail"``)
    ``iters`` times per batch, and returns the median of ``batches`` batches.
    Raises OSError when io_uring is unavailable (see :func:`labkit.live.probe`).
    """
    if where not in ("head", "tail"):
        raise ValueError("where must be 'head' or 'tail'")
    size = default_registered_size() if buffer_size is None else buffer_size
    batches = positive_int(batches, "batches")
    zfd = open_zero()
    try:
        with Ring(8) as ring:
            ring.register_buffer(size)
            at = 0 if where == "head" else size - length
            run = ring.roundtrip_variant("read_fixed", zfd, length, iters=iters, buf_offset=at)
            run()  # warm-up
            return statistics.median(run() for _ in range(batches))
    finally:
        os.close(zfd)


# ---- the notebook's analysis (notebook 02) ---------------------------------------------


def runs_budget(quick: bool | None = None) -> Budget:
    """Independent runs of notebook 02's experiments: at least 2 (quick) or 3 (full), more
    while the verdict is undecided, up to 3 / 6 runs, 10 / 30 seconds per experiment, and
    half the time the first runs took."""
    return Budget(2, 3, 10.0) if quick_mode(quick) else Budget(3, 6, 30.0)


def submission_with_fixed(
    reg: RegisteredBuffer,
    fixed: tuple[str, Callable[[], float]],
    *,
    length: int = PAGE_SIZE,
    repeats: int,
    seeks: Iterable[str] = ("walk-2019", "shift"),
    target_ns: float = 2e6,
    cpu: int | None = None,
) -> pd.DataFrame:
    """One run of :func:`submission_experiment` with F measured beside it (variant ``"F"``).

    ``fixed`` is :func:`fixed_cost_source`'s (description, batch); F's rows carry
    ``source`` and the same ``buffer``/``length`` columns.
    """
    import pandas as pd

    name, batch = fixed
    sub = submission_experiment(
        reg, length=length, repeats=repeats, seeks=seeks, target_ns=target_ns, cpu=cpu
    )
    f = runner.run(
        "fixed-F",
        {"F": batch},
        repeats=repeats,
        cpu=cpu,
        params={"source": name, "buffer": reg.length, "length": length},
    )
    return pd.concat([sub, f], ignore_index=True)


#: The head/tail ratios of R1: label -> (numerator, denominator, key of published.r1_figures).
RATIOS = {
    "before fix: tail / head": ("walk-2019 tail", "walk-2019 head", "before_tail_over_head"),
    "tail: before / after fix (the 755x)": ("walk-2019 tail", "shift tail", "tail_speedup"),
    "after fix: tail / head": ("shift tail", "shift head", "after_tail_over_head"),
}
#: The four submissions of R1: label -> (variant, key of published.r1_figures).
SUBMISSIONS = {
    "before, head": ("walk-2019 head", "before_head_ns"),
    "before, tail": ("walk-2019 tail", "before_tail_ns"),
    "after, head": ("shift head", "after_head_ns"),
    "after, tail": ("shift tail", "after_tail_ns"),
}


def head_tail_ratios(df: pd.DataFrame, *, fixed: Any = "F", **kw: Any) -> dict[str, Estimate]:
    """The three :data:`RATIOS` as (F + seek + copy) / (F + seek + copy) Estimates."""
    return {
        label: stats.composed_ratio(df, num, den, fixed=fixed, **kw)
        for label, (num, den, _) in RATIOS.items()
    }


def submission_costs(df: pd.DataFrame, *, fixed: str = "F", **kw: Any) -> dict[str, Estimate]:
    """The four :data:`SUBMISSIONS` as F + (seek + copy) Estimates, in ns."""
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
    from labkit.published import r1_figures

    pub = r1_figures()
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
    import pandas as pd

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
    "default_registered_size",
    "fixed_cost_source",
    "head_tail_ratios",
    "ratios_by_size",
    "read_fixed_roundtrip_ns",
    "runs_budget",
    "seek_cost_experiment",
    "seek_offsets",
    "speedup_explained",
    "submission_costs",
    "submission_experiment",
    "submission_with_fixed",
]
