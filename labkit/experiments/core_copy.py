"""The core copy/advance benchmark behind ``labkit bench copy``.

memcpy as the baseline, then copy_to_iter, copy_from_iter and advance for
every iterator type and size, measured side by side through
:func:`labkit.measure.runner.run` over the kernels of :mod:`labkit.measure.timers`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from labkit._args import index_arg, size_arg
from labkit._ffi import ffi, lib
from labkit.core.imports import import_iovec, import_ubuf
from labkit.core.iov_iter import ITER_DEST, ITER_SOURCE, IovIter
from labkit.core.memory import PAGE_SIZE, UserMemory
from labkit.measure import runner, stats, workers
from labkit.measure.experiment import Params, in_workers
from labkit.measure.timers import (
    time_advance,
    time_clock,
    time_copy_from_iter,
    time_copy_to_iter,
    time_empty,
    time_memcpy,
)

EXPERIMENT = "core-copy"
ITER_TYPES = ("UBUF", "IOVEC", "KVEC", "BVEC")
OPS = ("copy_to_iter", "copy_from_iter", "advance")
#: The large BVEC of the advance target: 1 GiB of 4 KiB pages.
BIG_BVEC_SEGMENTS = 262_144
#: UBUF and IOVEC over the same memory but built from Python buffers: no address
#: space, so no copy-time mapping checks (the difference is what the checks cost).
UNCHECKED_TYPES = ("UBUF-unchecked", "IOVEC-unchecked")


def repeated_page_bvec(direction: int, nr_segs: int, mem: UserMemory | None = None) -> IovIter:
    """A BVEC of ``nr_segs`` whole 4 KiB pages that all point at the same real page.

    Enough for advance, which walks the table and never touches page memory;
    a copy through it rewrites the one page over and over.  Builds the table
    in C, so a 262,144-entry table (1 GiB of "pages") takes milliseconds.
    """
    nr_segs = size_arg(nr_segs, "nr_segs")
    if not 1 <= nr_segs <= (1 << 32):
        raise ValueError(f"nr_segs must be in [1, 2**32], got {nr_segs}")
    mem = mem or UserMemory()
    page = mem.map(PAGE_SIZE)
    table = ffi.new("struct lk_bvec[]", nr_segs)
    lib.lk_bench_fill_bvec(table, nr_segs, page.addr, PAGE_SIZE, 0)
    return IovIter.bvec_from_table(direction, table, nr_segs, keep=(page, mem))


@dataclass
class CopySetup:
    """The memory and iterators of one size of the core benchmark."""

    size: int
    segments: int
    src: Any
    dst: Any
    dest: dict[str, IovIter]
    source: dict[str, IovIter]


def make_setup(size: int, mem: UserMemory, seg_size: int = PAGE_SIZE) -> CopySetup:
    """Page-aligned src and dst of ``size`` bytes and, per type, a destination iterator
    over dst and a source iterator over src, cut into ``seg_size`` segments.

    UBUF and IOVEC are user memory, imported from ``mem`` (``import_ubuf``, and
    ``import_iovec`` with the 6.3 import so that one segment stays an IOVEC):
    every copy through them checks each piece against the mappings before it
    touches it, as the kernel's copies fault at copy time.  KVEC and BVEC are
    kernel memory (no checks, as in the kernel).  The ``-unchecked`` UBUF and
    IOVEC are the same memory without an address space, for comparison.
    """
    size = size_arg(size, "size")
    if size < 1:
        raise ValueError("size must be >= 1")
    src_map, dst_map = mem.map(size), mem.map(size)
    src_map.array[:] = (bytearray(range(256)) * (size // 256 + 1))[:size]
    seg = min(seg_size, size)
    cuts = [(off, min(seg, size - off)) for off in range(0, size, seg)]

    def iters_over(m: Any, direction: int) -> dict[str, IovIter]:
        arr = m.array
        pieces = [arr[o : o + n] for o, n in cuts]
        return {
            "UBUF": import_ubuf(direction, m.addr, size, mem),
            "IOVEC": import_iovec(direction, [(m.addr + o, n) for o, n in cuts], mem, kernel="6.3"),
            "KVEC": IovIter.kvec(direction, pieces),
            "BVEC": IovIter.bvec(direction, [(p, 0, len(p)) for p in pieces]),
            "UBUF-unchecked": IovIter.ubuf(direction, arr),
            "IOVEC-unchecked": IovIter.iovec(direction, pieces),
        }

    return CopySetup(
        size,
        len(cuts),
        src_map.array,
        dst_map.array,
        iters_over(dst_map, ITER_DEST),
        iters_over(src_map, ITER_SOURCE),
    )


def _batched(kernel: Callable[[int], float], target_ns: float) -> Callable[[], float]:
    """A zero-argument variant running one calibrated batch of ``kernel``."""
    iters = runner.calibrate(kernel, target_ns=target_ns)
    return lambda: kernel(iters)


def variants_for(setup: CopySetup, target_ns: float) -> dict[str, Callable[[], float]]:
    """memcpy plus copy_to_iter / copy_from_iter / advance for every type, for one size."""
    n = setup.size
    out: dict[str, Callable[[], float]] = {
        "memcpy": _batched(lambda k: time_memcpy(setup.dst, setup.src, n, k), target_ns)
    }
    for t in ITER_TYPES:
        dest, source = setup.dest[t], setup.source[t]
        out[f"copy_to_iter {t}"] = _batched(
            lambda k, it=dest: time_copy_to_iter(it, setup.src, n, k), target_ns
        )
        out[f"copy_from_iter {t}"] = _batched(
            lambda k, it=source: time_copy_from_iter(it, setup.dst, n, k), target_ns
        )
        out[f"advance {t}"] = _batched(lambda k, it=dest: time_advance(it, n, k), target_ns)
    for t in UNCHECKED_TYPES:
        dest = setup.dest[t]
        out[f"copy_to_iter {t}"] = _batched(
            lambda k, it=dest: time_copy_to_iter(it, setup.src, n, k), target_ns
        )
    return out


def _split_variant(df: pd.DataFrame) -> pd.DataFrame:
    parts = df["variant"].str.split(" ", n=1, expand=True)
    df = df.copy()
    df["op"] = parts[0]
    df["iter_type"] = parts[1] if parts.shape[1] > 1 else None
    return df


@dataclass(frozen=True)
class CoreCopy(Params):
    """Sizes of the core benchmark.  Full mode: 64 B to 1 MiB, 3 runs of 14 repeats of 1 ms
    batches; quick: 4 KiB and 1 MiB, 1 run of 3 repeats of 0.3 ms.

    Batches of about 1 ms are 40,000 times the clock's cost, yet short enough
    that a preemption on a shared machine spoils few of them (the medians
    then ignore those).
    """

    sizes: tuple[int, ...]
    repeats: int
    warmup: int
    target_ns: float
    big_bvec_segments: int = BIG_BVEC_SEGMENTS
    runs: int = 1  #: independent runs (worker processes)

    @classmethod
    def quick(cls) -> CoreCopy:
        return cls((4096, 1 << 20), repeats=3, warmup=1, target_ns=3e5)

    @classmethod
    def full(cls) -> CoreCopy:
        return cls((64, 4096, 65536, 1 << 20), repeats=14, warmup=1, target_ns=1e6, runs=3)


def core_copy(
    quick: bool,
    *,
    repeats: int | None = None,
    cpu: int | None = None,
    progress: bool = False,
    sizes: Sequence[int] | None = None,
    runs: int | None = None,
    timeout: float = workers.DEFAULT_TIMEOUT,
) -> pd.DataFrame:
    """Run the core copy/advance benchmark; one row per sample.

    Per size: memcpy, copy_to_iter, copy_from_iter and advance for UBUF, IOVEC,
    KVEC and BVEC (segmented types cut into 4 KiB segments; UBUF and IOVEC
    imported from a UserMemory, so their copies do the copy-time mapping
    checks), and copy_to_iter for the ``-unchecked`` UBUF and IOVEC (the same
    memory without checks, to measure what they cost), interleaved in one
    :func:`labkit.measure.runner.run` with the order rotated each round (a variant run
    right after a light one, such as advance, was measured a few % slower:
    rotation spreads that over every variant).  Then, interleaved in a second run: the empty
    timing loop, the clock, and advance across a BVEC of 262,144 4 KiB pages
    (1 GiB; variant ``advance BVEC`` with ``size`` 1 GiB).

    The sizes are :class:`CoreCopy`'s for the mode, with ``repeats``, ``sizes``
    and ``runs`` replaced where given.  Repeated in ``runs`` single-threaded
    worker processes, one after another (:mod:`labkit.measure.workers`).

    Columns: experiment, variant, repeat, run, ns_per_op, size, segments,
    threads, io_threads, op, iter_type.
    """
    params = CoreCopy.for_mode(quick)
    params = params.replace(
        repeats=params.repeats if repeats is None else index_arg(repeats, "repeats"),
        sizes=tuple(params.sizes if sizes is None else sizes),
        runs=params.runs if runs is None else index_arg(runs, "runs"),
    )
    df = run_core_copy(params, cpu=cpu, runs=params.runs, timeout=timeout, progress=progress)
    return _split_variant(df)


@in_workers("model.core_copy")
def run_core_copy(params: CoreCopy, *, cpu: int | None = None) -> runner.Rows:
    """One run of :func:`core_copy`, in this (worker) process."""
    mem = UserMemory()
    rows: runner.Rows = []
    with runner.pinned(cpu) as pinned_cpu:
        for size in params.sizes:
            setup = make_setup(size, mem)
            rows += runner.measure(
                EXPERIMENT,
                variants_for(setup, params.target_ns),
                repeats=params.repeats,
                warmup=params.warmup,
                params={"size": size, "segments": setup.segments},
                cpu=pinned_cpu,
                rotate=True,
            )
        nbig = params.big_bvec_segments
        big = repeated_page_bvec(ITER_DEST, nbig, mem)
        big_bytes = nbig * PAGE_SIZE
        extra = {
            "empty": _batched(time_empty, params.target_ns),
            "clock": _batched(time_clock, params.target_ns),
            "advance BVEC": _batched(
                functools.partial(time_advance, big, big_bytes), params.target_ns
            ),
        }
        extra_rows = runner.measure(
            EXPERIMENT,
            extra,
            repeats=params.repeats,
            warmup=params.warmup,
            params={"size": big_bytes, "segments": nbig},
            cpu=pinned_cpu,
            rotate=True,
        )
    # the empty loop and the clock have no size: keep the columns, mark them 0
    for row in extra_rows:
        if row["variant"] in ("empty", "clock"):
            row["size"] = row["segments"] = 0
    return rows + extra_rows


def summarize(df: pd.DataFrame, *, seed: int = stats.DEFAULT_SEED) -> pd.DataFrame:
    """Per (size, variant): median ns/op with its interval, GB/s, % of memcpy, ns per segment."""
    med = stats.median_ci(df, by=["size", "segments", "variant"], seed=seed)
    med = _split_variant(med)
    copies = med["op"].isin(["memcpy", "copy_to_iter", "copy_from_iter"])
    med["GB_per_s"] = (med["size"] / med["median"]).where(copies)
    base = med[med["variant"] == "memcpy"].set_index("size")["median"]
    med["pct_of_memcpy"] = (100 * med["size"].map(base) / med["median"]).where(
        copies & (med["variant"] != "memcpy")
    )
    walks = (med["op"] == "advance") & (med["iter_type"] != "UBUF") & (med["segments"] > 0)
    med["ns_per_segment"] = (med["median"] / med["segments"]).where(walks)
    return med


@dataclass(frozen=True)
class Target:
    """One headline figure of the benchmark and the bound it should meet."""

    name: str
    value: float
    ci_low: float
    ci_high: float
    unit: str
    bound: str
    met: bool


def targets(df: pd.DataFrame, *, seed: int = stats.DEFAULT_SEED) -> list[Target]:
    """The four headline figures (those measured in ``df``): copy ratios, advance, empty loop.

    Bandwidth ratios are median(memcpy ns) / median(copy ns), measured side by
    side in one interleaved run, with bootstrap intervals.
    """
    out: list[Target] = []
    mib = df[df["size"] == 1 << 20]
    for t, bound in (("UBUF", 90.0), ("IOVEC", 80.0)):
        name = f"copy_to_iter {t}"
        if name in set(mib["variant"]) and "memcpy" in set(mib["variant"]):
            r = stats.ratio(mib, "memcpy", name, seed=seed)
            seg = int(mib.loc[mib["variant"] == name, "segments"].iloc[0])
            label = (
                "copy_to_iter into a 1 MiB UBUF"
                if t == "UBUF"
                else f"copy_to_iter into an IOVEC of {seg} x 4 KiB"
            )
            out.append(
                Target(
                    f"{label}, % of memcpy bandwidth",
                    100 * r.estimate,
                    100 * r.ci_low,
                    100 * r.ci_high,
                    "%",
                    f">= {bound:g}",
                    100 * r.estimate >= bound,
                )
            )
    big = df[(df["variant"] == "advance BVEC") & (df["segments"] == BIG_BVEC_SEGMENTS)]
    if len(big):
        per_seg = big.assign(ns_per_op=big["ns_per_op"] / BIG_BVEC_SEGMENTS)
        m, lo, hi = stats.bootstrap_median(per_seg["ns_per_op"], seed=seed)
        out.append(
            Target(
                f"advance across a {BIG_BVEC_SEGMENTS:,}-segment BVEC, per segment",
                m,
                lo,
                hi,
                "ns",
                "<= 1",
                m <= 1.0,
            )
        )
    empty = df[df["variant"] == "empty"]
    if len(empty):
        m, lo, hi = stats.bootstrap_median(empty["ns_per_op"], seed=seed)
        out.append(
            Target("empty operation (the timing loop alone)", m, lo, hi, "ns/op", "< 2", m < 2.0)
        )
    return out


__all__ = [
    "EXPERIMENT",
    "CoreCopy",
    "core_copy",
    "summarize",
    "targets",
]
