"""The measurement harness: pinned, warmed-up, interleaved repeats and bootstrap intervals.

Every labkit experiment measures through :func:`run`.  A *variant* is a
zero-argument callable that runs ONE batch of a C timing kernel
(``labkit/csrc/measure/bench_core.c`` and friends) and returns that batch's
nanoseconds per operation, or a sequence of per-operation samples.  The clock
and the timed loop are in C; Python only calls once per batch.

Method (what a reader of a performance paper expects):

* the measuring thread is pinned to one CPU, and its affinity is restored
  afterwards, even when a variant raises;
* each variant is warmed up before any sample is kept;
* the variants of one comparison are interleaved, A B A B ..., so that drift
  (frequency, other load on a shared machine) hits all of them alike;
* results are a tidy :class:`pandas.DataFrame`, one row per sample;
* :func:`median_ci` and :func:`ratio_ci` give percentile-bootstrap confidence
  intervals for medians and for ratios of medians; the resampling is seeded,
  so the same data always gives the same interval.
"""

from __future__ import annotations

import inspect
import math
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np
from tqdm.auto import tqdm

from labkit._args import index_arg, int_arg, iters_arg
from labkit.measure import threads

# tqdm's monitor is a thread: a single-threaded worker (labkit.measure.workers) must not get one
tqdm.monitor_interval = 0

if TYPE_CHECKING:
    import pandas as pd

Variant = Callable[[], "float | Sequence[float]"]

#: What :func:`measure` returns: one dict per sample, keys in column order.
Rows = list[dict[str, Any]]

#: Columns every :func:`run` result has (parameter columns follow).
COLUMNS = ("experiment", "variant", "repeat", "ns_per_op")

DEFAULT_CONFIDENCE = 0.95
DEFAULT_N_BOOT = 2000
DEFAULT_SEED = 20190729


# ---- pinning --------------------------------------------------------------------


def default_cpu() -> int:
    """The CPU :func:`run` pins to by default: the highest one this process may use."""
    return max(os.sched_getaffinity(0))


def cpu_arg(cpu: Any) -> int | None:
    """``cpu`` checked before anything runs: None (the default CPU), or one this
    process may use.

    Raises:
        TypeError: if ``cpu`` is not an integer (or None).
        ValueError: if it is not one of the CPUs this process may use.
    """
    if cpu is None:
        return None
    target = index_arg(cpu, "cpu")
    allowed = sorted(os.sched_getaffinity(0))
    if target not in allowed:
        raise ValueError(f"cpu {target} is not one this process may use ({_ranges(allowed)})")
    return target


def _ranges(cpus: Sequence[int]) -> str:
    """[0, 1, 2, 5] -> "0-2,5"."""
    runs: list[list[int]] = []
    for c in cpus:
        if runs and c == runs[-1][1] + 1:
            runs[-1][1] = c
        else:
            runs.append([c, c])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


@contextmanager
def pinned(cpu: int | None) -> Iterator[int]:
    """Pin the calling thread to ``cpu`` for the ``with`` block, then restore its affinity.

    ``cpu=None`` pins to :func:`default_cpu`.

    Raises:
        ValueError: if ``cpu`` is not one of the CPUs this process may use.
        TypeError: if ``cpu`` is not an integer (or None).
    """
    target = cpu_arg(cpu)
    before = os.sched_getaffinity(0)
    target = default_cpu() if target is None else target
    os.sched_setaffinity(0, {target})
    try:
        yield target
    finally:
        os.sched_setaffinity(0, before)


# ---- running ----------------------------------------------------------------------


def _samples(name: str, value: Any) -> list[float]:
    """A variant's return value as a list of finite, non-negative floats."""
    if isinstance(value, (int, float, np.integer, np.floating)):
        values = [float(value)]
    else:
        try:
            values = [float(v) for v in value]
        except TypeError:
            raise TypeError(
                f"variant {name!r} must return a float or a sequence of floats, "
                f"not {type(value).__name__}"
            ) from None
        if not values:
            raise ValueError(f"variant {name!r} returned no samples")
    for v in values:
        if not math.isfinite(v) or v < 0:
            raise ValueError(f"variant {name!r} returned {v!r} ns/op (expected finite and >= 0)")
    return values


def run(experiment: str, variants: Mapping[str, Variant], **options: Any) -> pd.DataFrame:
    """Measure ``variants`` side by side and return one row per sample.

    The rows of :func:`measure` (same arguments, the keyword-only ones in
    ``options``) as a DataFrame.

    Args:
        experiment: name recorded in the ``experiment`` column.
        variants: name -> zero-argument callable running ONE batch and returning
            its ns per operation (or a sequence of per-operation samples).
        repeats: rounds kept; in each round every variant runs once, in the
            order given (A B A B ...).
        warmup: rounds run first and thrown away (interleaved the same way).
        params: constant columns added to every row (e.g. ``{"size": 4096}``).
        cpu: the CPU to pin to; None picks :func:`default_cpu`.  The previous
            affinity is restored afterwards.
        progress: show a progress bar (tqdm) on stderr.
        rotate: start round r at variant r mod k (A B C, B C A, C A B, ...), so
            that every variant runs equally often in every position and after
            every other variant; this cancels order effects such as a variant
            paying a warm-up cost after a light one.  Off by default (A B A B).
            In run k of a worker (:func:`continue_rotation`) the rotation goes
            on from round k * repeats, as if the runs were one long run.

    Returns:
        A DataFrame with columns experiment, variant, repeat, ns_per_op and
        one column per ``params`` key.  Inside a worker
        (:mod:`labkit.measure.workers`) the threads of the process are counted
        right before the first batch and right after the last, the worker's
        single-thread rule is enforced (:func:`labkit.measure.threads.observe`),
        and the rows get ``threads`` and ``io_threads`` columns (the larger
        count of the two).

    Raises:
        ValueError: for no variants, repeats < 1, warmup < 0, a parameter
            named like a standard column, or a variant returning a negative
            or non-finite value.
        labkit.measure.threads.ThreadCountError: in a worker, when the process
            has more than one thread before or after measuring.
    """
    import pandas as pd  # on use: the workers import this module

    rows = measure(experiment, variants, **options)
    return pd.DataFrame(rows, columns=list(rows[0]))


def measure(
    experiment: str,
    variants: Mapping[str, Variant],
    *,
    repeats: int,
    warmup: int = 1,
    params: Mapping[str, Any] | None = None,
    cpu: int | None = None,
    progress: bool = False,
    rotate: bool = False,
) -> Rows:
    """:func:`run` without pandas: the rows as a list of dicts (what a worker sends back).

    Arguments, checks and errors as :func:`run`; every dict has the keys
    experiment, variant, repeat, ns_per_op, the ``params`` keys and, inside a
    worker, threads and io_threads, in that order.
    """
    if not variants:
        raise ValueError("run: no variants to measure")
    repeats = int_arg(repeats, "run: repeats", 1)
    warmup = int_arg(warmup, "run: warmup", 0)
    params = dict(params or {})
    clash = set(params) & set(COLUMNS)
    if clash:
        raise ValueError(f"run: parameter names {sorted(clash)} clash with standard columns")
    names = list(variants)
    rows: list[dict[str, Any]] = []
    total = (int(warmup) + int(repeats)) * len(names)
    bar = tqdm(total=total, desc=experiment, unit="batch", disable=not progress, file=sys.stderr)
    watch = threads.watching()
    seen = []
    with bar, pinned(cpu):
        if watch:
            seen.append(threads.observe(experiment, "before"))
        for _ in range(int(warmup)):
            for name in names:
                _samples(name, variants[name]())
                bar.update()
        for r in range(int(repeats)):
            shift = (r + _run_index * int(repeats)) % len(names) if rotate else 0
            for name in names[shift:] + names[:shift]:
                for v in _samples(name, variants[name]()):
                    rows.append(
                        {
                            "experiment": experiment,
                            "variant": name,
                            "repeat": r,
                            "ns_per_op": v,
                            **params,
                        }
                    )
                bar.update()
        if watch:
            seen.append(threads.observe(experiment, "after"))
    if watch:
        counts = {
            "threads": max(s.threads for s in seen),
            "io_threads": max(s.io_threads for s in seen),
        }
        for row in rows:
            row.update(counts)
    return rows


# run's signature, as help() and inspect show it, is measure's (run forwards it all)
run.__signature__ = inspect.signature(measure).replace(  # type: ignore[attr-defined]
    return_annotation="pd.DataFrame"
)

_run_index = 0


def continue_rotation(run: int) -> None:
    """Rotate the variants of this process's measurements as run ``run`` of several.

    Set by :mod:`labkit.measure.workers` in the worker of run ``run``, so that
    over the runs of an experiment every variant comes first equally often.
    """
    global _run_index
    _run_index = int(run)


def calibrate(
    kernel: Callable[[int], float],
    *,
    target_ns: float = 2e6,
    start: int = 1,
    max_iters: int = 1 << 34,
) -> int:
    """The batch size (iterations) for which one call of ``kernel(iters)`` lasts ``target_ns``.

    ``kernel(iters)`` runs a batch and returns ns per operation.  The batch is
    grown tenfold until it lasts at least a tenth of the target, then scaled
    to the target: long enough to dwarf the ~25 ns clock read.

    Raises:
        OSError: EINVAL for ``start`` or ``max_iters`` < 1.
    """
    iters = iters_arg(start)
    max_iters = iters_arg(max_iters)
    while True:
        ns = max(float(kernel(iters)), 0.0)
        total = ns * iters
        if total >= target_ns / 10 or iters >= max_iters:
            break
        iters = min(iters * 10, max_iters)
    if ns <= 0:
        return max_iters
    return int(min(max(1, math.ceil(target_ns / ns)), max_iters))
