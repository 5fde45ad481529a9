"""F, the fixed cost of one submission (notebook 02, R1), and what notebook 02's runs share.

F is what a submission costs besides the seek and the copy: measured, never
chosen, as the live io_uring READ_FIXED round trip of 1 byte where the kernel
allows io_uring, else one read(2) of 1 byte.  :mod:`labkit.experiments.fixed_seek`
re-exports everything here.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from labkit._args import positive_int
from labkit.config import quick_mode
from labkit.live.ring import Ring
from labkit.live.sources import open_zero
from labkit.live.syscalls import syscall_ns
from labkit.live.variants import DEFAULT_LENGTH, MAX_REGISTERED_BUFFER
from labkit.measure import runner, workers
from labkit.measure.experiment import in_workers

if TYPE_CHECKING:
    import pandas as pd


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


__all__: list[str] = []  # internal: the fixed cost F of labkit.experiments.fixed_seek
