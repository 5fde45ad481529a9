"""Notebook 03's experiments (R2, R3): the ITER_UBUF import models, measured and compared.

Each model experiment is repeated in ``runs`` independent single-threaded worker
processes (:mod:`labkit.measure.workers`); the rows say which run made them
(``run`` column).  Their sizes are one :class:`ModelParams` (quick and full values).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from labkit.core.memory import PAGE_SIZE
from labkit.measure import runner
from labkit.measure.experiment import Params, in_workers

if TYPE_CHECKING:  # the analysis needs pandas and scipy; a worker must not import them
    from labkit.measure.stats import Estimate
from labkit.models.ubuf import (
    batches,
    defer_every_for,
    mechanics_models,
    read_zero_models,
    uring_models,
)


@dataclass(frozen=True)
class ModelParams(Params):
    """Sizes of the model experiments: calls per batch, interleaved rounds kept in each run
    (16 in all in quick mode, 60 in full, shared out over 2 or 3 runs, each run with its own
    warm-up round), and the io_uring deferral rates swept."""

    iters: int
    repeats: int
    warmup: int
    defer_rates: tuple[float, ...]

    @classmethod
    def quick(cls) -> ModelParams:
        return cls(iters=2_000, repeats=8, warmup=1, defer_rates=(0.0, 0.1, 1.0))

    @classmethod
    def full(cls) -> ModelParams:
        rates = (0.0, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0)
        return cls(iters=20_000, repeats=20, warmup=1, defer_rates=rates)


def _measure(
    experiment: str, models: Any, params: ModelParams, cpu: int | None, **extra: Any
) -> runner.Rows:
    """One interleaved, rotated measurement of ``models`` in batches of ``params.iters``."""
    return runner.measure(
        experiment,
        batches(models, params.iters),
        repeats=params.repeats,
        warmup=params.warmup,
        rotate=True,
        cpu=cpu,
        params={**extra, "bytes": PAGE_SIZE, "iters": params.iters},
    )


# Each experiment below is the function of one run, in one process; the decorator makes
# it the public experiment, with ``runs`` and ``timeout`` arguments more, measured in that
# many single-threaded workers.


@in_workers("model.ubuf_mechanics")
def run_mechanics(
    params: ModelParams, *, op: str = "advance", cpu: int | None = None
) -> runner.Rows:
    """Experiment (a) through the runner: 6.3 vs 6.4, import + iterate one segment.

    Repeated in ``runs`` worker processes; rows carry ``run``.
    """
    return _measure("ubuf-mechanics", mechanics_models(op=op), params, cpu, op=op)


@in_workers("model.ubuf_read_zero")
def run_read_zero(params: ModelParams, *, cpu: int | None = None) -> runner.Rows:
    """Experiment (b) through the runner: read, readv 6.3, readv 6.4, the live proxy.

    Repeated in ``runs`` worker processes; rows carry ``run``.
    """
    return _measure("ubuf-read-zero", read_zero_models(proxy=True), params, cpu)


@in_workers("model.ubuf_uring")
def run_uring(
    params: ModelParams, *, defer_alloc_ubuf: bool = False, cpu: int | None = None
) -> runner.Rows:
    """Experiment (c) through ``labkit.measure.runner.run``, once per deferral rate.

    Rows carry ``defer_rate``, ``defer_every``, ``defer_alloc_ubuf`` and
    ``run`` columns; repeated in ``runs`` worker processes.
    """
    rows: runner.Rows = []
    for rate in params.defer_rates:
        k = defer_every_for(rate)
        models = uring_models(defer_every=k, defer_alloc_ubuf=defer_alloc_ubuf)
        rows += _measure(
            "ubuf-uring",
            models,
            params,
            cpu,
            defer_rate=rate,
            defer_every=k,
            defer_alloc_ubuf=defer_alloc_ubuf,
        )
    return rows


# ---- the notebook's analysis (notebook 03) ---------------------------------------------


#: The live A/B pairs of R2 and R3: (UBUF side, IOVEC side) of the system calls and io_uring.
LIVE_PAIRS = {
    "readv(1) vs readv(4K+empty)": ("readv1", "readv_empty"),
    "io_uring QD1: READV(1) vs READV(4K+empty)": ("readv1", "readv_empty"),
    "io_uring QD1: READ vs READV(4K+empty)": ("read", "readv_empty"),
    "io_uring peak@32: READV(1) vs READV(4K+empty)": ("readv1@32", "readv_empty@32"),
    "io_uring peak@32: READ vs READV(4K+empty)": ("read@32", "readv_empty@32"),
}


def live_gain(df: Any, name: str, *, kind: str, **kw: Any) -> Estimate:
    """The gain of :data:`LIVE_PAIRS` ``name`` in percent: the UBUF side over the IOVEC side
    (``kind="time"``: time saved per call; ``"rate"``: requests per second)."""
    from labkit.measure import stats  # on use: the workers import this module

    fast, slow = LIVE_PAIRS[name]
    return stats.gain(df, slow, fast, kind=kind, **kw).affine(100.0, quantity=f"{name} (%)")


def live_gain_by_run(df: Any, name: str, *, kind: str, run_col: str = "run") -> Any:
    """One row per run of ``df``: the run's :func:`live_gain` for :data:`LIVE_PAIRS` ``name``
    (``gain``, with ``ci_low`` and ``ci_high`` over that run's rounds) and the median time
    of its IOVEC side (``iovec_ns``, the machine's speed in that run).

    What a reader needs to see whether the gain depends on how fast the machine ran:
    on a shared VM the same run of calls takes 1.5x longer in some minutes than in others.
    """
    import pandas as pd  # on use: the workers import this module

    from labkit.measure import stats  # on use: the workers import this module

    slow = LIVE_PAIRS[name][1]
    rows = []
    for run, d in df.groupby(run_col, sort=True):
        one = d.drop(columns=run_col)
        g = live_gain(one, name, kind=kind)
        rows.append(
            {
                run_col: run,
                "iovec_ns": stats.median(one, slow).estimate,
                "gain": g.estimate,
                "ci_low": g.ci_low,
                "ci_high": g.ci_high,
            }
        )
    return pd.DataFrame(rows)


def instructions_table(cg: Any) -> Any:
    """:func:`labkit.experiments.callgrind.measure` rows as variant x experiment."""
    return cg.pivot_table(
        index="variant", columns="experiment", values="instructions_per_call", sort=False
    )


__all__ = [
    "ModelParams",
    "instructions_table",
    "live_gain",
    "live_gain_by_run",
    "run_mechanics",
    "run_read_zero",
    "run_uring",
]
