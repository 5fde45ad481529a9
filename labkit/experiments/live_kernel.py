"""Notebook 04's experiments: the running kernel's read family and io_uring, interleaved.

Every timed loop here runs in spawned single-threaded worker processes
(:mod:`labkit.measure.workers`), ``runs`` of them one after another: a system
call from a process with more than one thread pays for the shared file table
on every call (see :mod:`labkit.measure.threads`).  The public functions take
JSON-able arguments, send them to the workers, and return the rows the
workers measured, with ``run``, ``threads`` and ``io_threads`` columns.  Each
is written as the function of one run, which each worker calls
(:func:`labkit.measure.experiment.in_workers`).
"""

from __future__ import annotations

import os
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

from labkit._args import UINT_MAX, positive_int
from labkit.core.memory import PAGE_SIZE
from labkit.live.clock import clock
from labkit.live.ring import PeakResult, Ring
from labkit.live.sources import PatternFile, open_zero
from labkit.live.syscalls import syscall_variants
from labkit.live.variants import AA_SUFFIX, DEFAULT_LENGTH, SYSCALL_VARIANTS, URING_OPS
from labkit.measure import runner
from labkit.measure.experiment import in_workers

# --------------------------------------------------------------------------- experiments
#
# The notebook's experiments, measured through the harness (labkit.measure.runner.run:
# pinned, warmed up, variants interleaved with the order rotated every round:
# A B C, B C A, ...).  Each returns the
# harness's tidy DataFrame (one row per batch).


#: What the system call experiments read: /dev/zero or a tmpfs file (in_workers checks it).
TargetName = Literal["zero", "tmpfs"]
TARGETS: tuple[str, ...] = typing.get_args(TargetName)


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


def _measure(
    experiment: str,
    variants: Mapping[str, runner.Variant],
    params: Mapping[str, Any],
    repeats: int,
    warmup: int,
    cpu: int | None,
    clock_name: str,
) -> runner.Rows:
    """One interleaved, rotated measurement timed by ``clock_name`` (a ``clock`` column
    after ``params``)."""
    with clock(clock_name):
        return runner.measure(
            experiment,
            variants,
            repeats=repeats,
            warmup=warmup,
            params={**params, "clock": clock_name},
            cpu=cpu,
            rotate=True,
        )


# Each experiment below is the function of one run, in one (worker) process; the
# decorator makes it the public experiment, with ``runs`` and ``timeout`` arguments
# more, measured in that many single-threaded workers.


@in_workers("live.syscalls", allow_io_threads=False)
def run_syscalls(
    target: TargetName = "zero",
    *,
    length: int = DEFAULT_LENGTH,
    iters: int = 100_000,
    repeats: int = 9,
    warmup: int = 1,
    names: Iterable[str] = SYSCALL_VARIANTS,
    cpu: int | None = None,
    clock_name: str = "wall",
) -> runner.Rows:
    """read vs readv(1) vs readv(4K + empty) vs readv(2 x 2K) vs preadv2, interleaved.

    ``target`` "zero" reads /dev/zero at the file position (read/readv, as
    R2's read-zero); "tmpfs" reads a tmpfs file at offset 0 (pread/preadv,
    so the same bytes come back every call).  Measured in ``runs``
    single-threaded workers that must have
    exactly one thread (no io_uring here, so no io-wq thread either).  Rows
    carry ``target``, ``bytes``, ``iters``, ``clock``, ``run``, ``threads``
    and ``io_threads`` columns.
    """
    src = _Target(target, length)
    try:
        offset = src.offset
        variants = syscall_variants(src.fd, length=length, iters=iters, offset=offset, names=names)
        params = {"target": target, "bytes": length, "iters": iters}
        return _measure("live-syscalls", variants, params, repeats, warmup, cpu, clock_name)
    finally:
        src.close()


@in_workers("live.uring_qd1")
def run_uring_qd1(
    target: TargetName = "zero",
    *,
    ops: Iterable[str] = URING_OPS,
    length: int = DEFAULT_LENGTH,
    iters: int = 20_000,
    repeats: int = 9,
    warmup: int = 1,
    register_ring_fd: bool = False,
    cpu: int | None = None,
    clock_name: str = "wall",
) -> runner.Rows:
    """io_uring round trips at queue depth 1, one variant per op, interleaved.

    READ_FIXED reads into the head of a 1 MiB registered buffer.  Measured in
    ``runs`` single-threaded workers; a request io_uring cannot complete
    inline (a tmpfs read) starts an io-wq thread, counted in ``io_threads``.
    Rows carry ``target``, ``bytes``, ``iters``, ``registered_ring``,
    ``clock``, ``run``, ``threads`` and ``io_threads`` columns.
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
            params = {
                "target": target,
                "bytes": length,
                "iters": iters,
                "registered_ring": register_ring_fd,
            }
            return _measure("live-uring-qd1", variants, params, repeats, warmup, cpu, clock_name)
    finally:
        src.close()


@in_workers("live.fixed_head_tail")
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
) -> runner.Rows:
    """READ_FIXED of /dev/zero into the head vs the tail of one registered buffer (R1 today).

    Variants ``head`` (offset 0), ``tail`` (offset ``size - length``) and
    ``head_aa`` (the head again: its A/A twin, :mod:`labkit.measure.calibration`),
    measured in ``runs`` single-threaded workers, each registering its own
    buffer; rows carry ``buffer_bytes``, ``pages_skipped`` (the pages before
    the tail), ``hugepages``, ``bytes``, ``iters``, ``clock``, ``run``,
    ``threads`` and ``io_threads``.
    """
    zfd = open_zero()
    try:
        with Ring(8) as ring:
            ring.register_buffer(size, hugepages=hugepages)
            tail = size - length
            variants = {
                "head": ring.roundtrip_variant("read_fixed", zfd, length, iters=iters),
                "tail": ring.roundtrip_variant(
                    "read_fixed", zfd, length, iters=iters, buf_offset=tail
                ),
                # the head's A/A twin: the same read in the same loop (labkit.measure.calibration)
                "head" + AA_SUFFIX: ring.roundtrip_variant("read_fixed", zfd, length, iters=iters),
            }
            params = {
                "buffer_bytes": size,
                "pages_skipped": tail // PAGE_SIZE,
                "hugepages": hugepages,
                "bytes": length,
                "iters": iters,
            }
            return _measure(
                "live-fixed-head-tail", variants, params, repeats, warmup, cpu, clock_name
            )
    finally:
        os.close(zfd)


@in_workers("live.peak")
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
) -> runner.Rows:
    """The batched peak loop on /dev/zero, every (op, depth) interleaved.

    Submit and complete batches are ``min(batch, depth)`` (fio's t/io_uring
    uses 32 and 32).  ``ns_per_op`` is the process CPU time per IO, so
    ``1e9 / ns_per_op`` is IOPS per core; rows also carry ``wall_ns_per_io``,
    ``ios_per_enter``, ``op``, ``depth``, ``run``, ``threads`` and
    ``io_threads``.  Measured in ``runs`` single-threaded workers.
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
            rows = runner.measure(
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
    for row in rows:
        op, depth = row["variant"].split("@")
        res = kept[row["variant"]][row["repeat"]]
        row.update(op=op, depth=int(depth), wall_ns_per_io=res.ns_per_io)
        row["ios_per_enter"] = res.ios_per_enter
    return rows


# ---- the notebook's analysis (notebooks 03 and 04) -------------------------------------


def ratio_table(df: Any, pairs: Iterable[tuple[str, str, str]], by: str) -> Any:
    """median(numerator) / median(denominator) per ``by`` group, for each (num, den, meaning).

    Returns one row per (group, pair): ``by``, numerator, denominator, the ratio
    (``estimate``) with its interval, runs, and the meaning.
    """
    import pandas as pd  # on use: the workers import this module

    from labkit.measure import stats  # on use: the workers import this module

    rows = []
    for num, den, meaning in pairs:
        r = stats.ratio_ci(df, num, den, by=by)
        r["meaning"] = meaning
        rows.append(r)
    out = pd.concat(rows, ignore_index=True)
    cols = [by, "numerator", "denominator", "estimate", "ci_low", "ci_high", "n_runs", "meaning"]
    return out[cols]
