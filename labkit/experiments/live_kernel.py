"""Notebook 04's experiments: the running kernel's read family and io_uring, interleaved."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from labkit._args import UINT_MAX, positive_int
from labkit.config import quick_mode
from labkit.core.memory import PAGE_SIZE
from labkit.live.clock import clock
from labkit.live.ring import PeakResult, Ring
from labkit.live.sources import PatternFile, open_zero
from labkit.live.syscalls import syscall_variants
from labkit.live.variants import (
    DEFAULT_LENGTH,
    MAX_REGISTERED_BUFFER,
    SYSCALL_VARIANTS,
    URING_OPS,
)
from labkit.measure import runner, stats
from labkit.measure.sequential import Budget

# --------------------------------------------------------------------------- experiments
#
# The notebook's experiments, measured through the harness (labkit.measure.runner.run:
# pinned, warmed up, variants interleaved with the order rotated every round:
# A B C, B C A, ...).  Each returns the
# harness's tidy DataFrame (one row per batch).


@dataclass(frozen=True)
class Sizes:
    """Batch sizes and repeats of the live experiments (quick mode shrinks them)."""

    syscall_iters: int  #: system calls per batch
    uring_iters: int  #: QD1 round trips per batch
    repeats: int  #: interleaved rounds kept
    warmup: int  #: rounds thrown away first
    registered: int  #: registered buffer for READ_FIXED head vs tail
    peak_ios: int  #: IOs per peak batch
    depths: tuple[int, ...]  #: queue depths of the peak loop


def sizes(quick: bool | None = None) -> Sizes:
    """The experiment sizes for quick mode (CI) or full mode (a reproduction)."""
    if quick_mode(quick):
        return Sizes(
            syscall_iters=20_000,
            uring_iters=4_000,
            repeats=9,
            warmup=1,
            registered=64 << 20,
            peak_ios=40_000,
            depths=(1, 4, 16, 64),
        )
    return Sizes(
        syscall_iters=200_000,
        uring_iters=40_000,
        repeats=31,
        warmup=2,
        registered=MAX_REGISTERED_BUFFER,
        peak_ios=400_000,
        depths=(1, 2, 4, 8, 16, 32, 64, 128),
    )


TARGETS: tuple[str, ...] = ("zero", "tmpfs")


class _Target:
    """An open data source: /dev/zero (read at the file position) or a tmpfs pattern file."""

    def __init__(self, target: str, length: int):
        if target not in TARGETS:
            raise ValueError(f"target must be one of {TARGETS}, got {target!r}")
        self.pattern: PatternFile | None = None
        if target == "zero":
            self.fd, self.offset = open_zero(), -1
        else:
            self.pattern = PatternFile(max(64 * 1024, 2 * length))
            self.fd, self.offset = self.pattern.fd, 0

    def close(self) -> None:
        if self.pattern is not None:
            self.pattern.close()
        else:
            os.close(self.fd)


def run_syscalls(
    target: str = "zero",
    *,
    length: int = DEFAULT_LENGTH,
    iters: int = 100_000,
    repeats: int = 9,
    warmup: int = 1,
    names: Iterable[str] = SYSCALL_VARIANTS,
    cpu: int | None = None,
    clock_name: str = "wall",
) -> Any:
    """read vs readv(1) vs readv(4K + empty) vs readv(2 x 2K) vs preadv2, interleaved.

    ``target`` "zero" reads /dev/zero at the file position (read/readv, as
    R2's read-zero); "tmpfs" reads a tmpfs file at offset 0 (pread/preadv,
    so the same bytes come back every call).  Rows carry ``target``,
    ``bytes`` and ``iters`` columns.
    """
    src = _Target(target, length)
    try:
        offset = src.offset
        variants = syscall_variants(src.fd, length=length, iters=iters, offset=offset, names=names)
        with clock(clock_name):
            return runner.run(
                "live-syscalls",
                variants,
                repeats=repeats,
                warmup=warmup,
                params={"target": target, "bytes": length, "iters": iters, "clock": clock_name},
                cpu=cpu,
                rotate=True,
            )
    finally:
        src.close()


def run_uring_qd1(
    target: str = "zero",
    *,
    ops: Iterable[str] = URING_OPS,
    length: int = DEFAULT_LENGTH,
    iters: int = 20_000,
    repeats: int = 9,
    warmup: int = 1,
    register_ring_fd: bool = False,
    cpu: int | None = None,
    clock_name: str = "wall",
) -> Any:
    """io_uring round trips at queue depth 1, one variant per op, interleaved.

    READ_FIXED reads into the head of a 1 MiB registered buffer.  Rows carry
    ``target``, ``bytes``, ``iters`` and ``registered_ring`` columns.
    """
    src = _Target(target, length)
    try:
        with Ring(8, register_ring_fd=register_ring_fd) as ring:
            ring.register_buffer(max(1 << 20, length))
            variants = {
                op: ring.roundtrip_variant(
                    op, src.fd, length, iters=iters, offset=max(src.offset, 0)
                )
                for op in ops
            }
            with clock(clock_name):
                return runner.run(
                    "live-uring-qd1",
                    variants,
                    repeats=repeats,
                    warmup=warmup,
                    params={
                        "target": target,
                        "bytes": length,
                        "iters": iters,
                        "registered_ring": register_ring_fd,
                        "clock": clock_name,
                    },
                    cpu=cpu,
                    rotate=True,
                )
    finally:
        src.close()


def run_fixed_head_tail(
    *,
    size: int,
    length: int = DEFAULT_LENGTH,
    iters: int = 20_000,
    repeats: int = 9,
    warmup: int = 1,
    hugepages: bool = False,
    cpu: int | None = None,
    clock_name: str = "wall",
) -> Any:
    """READ_FIXED of /dev/zero into the head vs the tail of one registered buffer (R1 today).

    Variants ``head`` (offset 0) and ``tail`` (offset ``size - length``);
    rows carry ``buffer_bytes``, ``pages_skipped`` (the pages before the
    tail), ``hugepages``, ``bytes`` and ``iters``.
    """
    zfd = open_zero()
    try:
        with Ring(8) as ring:
            ring.register_buffer(size, hugepages=hugepages)
            variants = {
                "head": ring.roundtrip_variant("read_fixed", zfd, length, iters=iters),
                "tail": ring.roundtrip_variant(
                    "read_fixed", zfd, length, iters=iters, buf_offset=size - length
                ),
            }
            with clock(clock_name):
                return runner.run(
                    "live-fixed-head-tail",
                    variants,
                    repeats=repeats,
                    warmup=warmup,
                    params={
                        "buffer_bytes": size,
                        "pages_skipped": (size - length) // PAGE_SIZE,
                        "hugepages": hugepages,
                        "bytes": length,
                        "iters": iters,
                        "clock": clock_name,
                    },
                    cpu=cpu,
                    rotate=True,
                )
    finally:
        os.close(zfd)


def run_peak(
    *,
    ops: Iterable[str] = ("read", "readv1", "readv_empty"),
    depths: Sequence[int] = (1, 4, 16, 64),
    batch: int = 32,
    ios: int = 100_000,
    length: int = DEFAULT_LENGTH,
    repeats: int = 9,
    warmup: int = 1,
    cpu: int | None = None,
) -> Any:
    """The batched peak loop on /dev/zero, every (op, depth) interleaved.

    Submit and complete batches are ``min(batch, depth)`` (fio's t/io_uring
    uses 32 and 32).  ``ns_per_op`` is the process CPU time per IO, so
    ``1e9 / ns_per_op`` is IOPS per core; rows also carry ``wall_ns_per_io``,
    ``ios_per_enter``, ``op`` and ``depth``.
    """
    ops = list(ops)
    depths = [positive_int(d, "depth", maximum=UINT_MAX) for d in depths]
    zfd = open_zero()
    details: dict[str, list[PeakResult]] = {}
    try:
        with Ring(max(depths)) as ring:
            ring.register_buffer(max(1 << 20, length))

            def make(op: str, depth: int) -> Callable[[], float]:
                b = min(batch, depth)
                key = f"{op}@{depth}"
                details[key] = []

                def run() -> float:
                    res = ring.peak(
                        op, zfd, length, depth=depth, submit_batch=b, complete_batch=b, ios=ios
                    )
                    details[key].append(res)
                    return res.cpu_ns_per_io

                return run

            variants = {f"{op}@{d}": make(op, d) for d in depths for op in ops}
            df = runner.run(
                "live-uring-peak",
                variants,
                repeats=repeats,
                warmup=warmup,
                params={"bytes": length, "ios": ios, "batch": batch},
                cpu=cpu,
                rotate=True,
            )
    finally:
        os.close(zfd)
    kept = {k: v[len(v) - repeats :] for k, v in details.items()}
    df["op"] = df["variant"].str.split("@").str[0]
    df["depth"] = df["variant"].str.split("@").str[1].astype(int)
    rows = [kept[v][r] for v, r in zip(df["variant"], df["repeat"], strict=True)]
    df["wall_ns_per_io"] = [res.ns_per_io for res in rows]
    df["ios_per_enter"] = [res.ios_per_enter for res in rows]
    return df


# ---- the notebook's analysis (notebooks 03 and 04) -------------------------------------


def live_runs(quick: bool | None = None) -> Budget:
    """Independent runs of the live experiments behind a headline figure: at least 2 (quick)
    or 3 (full); more while the verdict is undecided, up to 3 / 5 runs, 8 / 40 s, and half
    the time the first runs took."""
    return Budget(2, 3, 8.0) if quick_mode(quick) else Budget(3, 5, 40.0)


def peak_runs(quick: bool | None = None) -> Budget:
    """Runs of the depth sweep of the peak loop (the longest experiment): as :func:`live_runs`,
    but no more than the first ones (its verdict is judged on them)."""
    b = live_runs(quick)
    return Budget(b.min_runs, b.min_runs, b.budget_s, 0.0)


def ratio_table(df: Any, pairs: Iterable[tuple[str, str, str]], by: str) -> Any:
    """median(numerator) / median(denominator) per ``by`` group, for each (num, den, meaning).

    Returns one row per (group, pair): ``by``, numerator, denominator, the ratio
    (``estimate``) with its interval, runs, and the meaning.
    """
    import pandas as pd

    rows = []
    for num, den, meaning in pairs:
        r = stats.ratio_ci(df, num, den, by=by)
        r["meaning"] = meaning
        rows.append(r)
    out = pd.concat(rows, ignore_index=True)
    cols = [by, "numerator", "denominator", "estimate", "ci_low", "ci_high", "n_runs", "meaning"]
    return out[cols]
