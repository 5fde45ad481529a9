"""Notebook 03's experiments (R2, R3): the ITER_UBUF import models, measured and compared.

Each model experiment is repeated in ``Plan.runs`` independent single-threaded
worker processes (:mod:`labkit.measure.workers`); the rows say which run made
them (``run`` column).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from labkit.config import quick_mode
from labkit.core.memory import PAGE_SIZE
from labkit.measure import runner, workers
from labkit.models.ubuf import (
    batches,
    defer_every_for,
    mechanics_models,
    read_zero_models,
    uring_models,
)

# ---- the notebook's experiments and analysis (notebook 03) ---------------------------


@dataclass(frozen=True)
class Plan:
    """Sizes of the model experiments: calls per batch, rounds kept and thrown away
    (in each run), the io_uring deferral rates swept, and the independent runs."""

    iters: int
    repeats: int
    warmup: int
    defer_rates: tuple[float, ...]
    runs: int = 1


def plan(quick: bool | None = None) -> Plan:
    """The model experiments' sizes in quick mode (CI) or full mode (a reproduction)."""
    if quick_mode(quick):
        return Plan(iters=2_000, repeats=3, warmup=1, defer_rates=(0.0, 0.1, 1.0), runs=2)
    return Plan(
        iters=20_000,
        repeats=6,
        warmup=1,
        defer_rates=(0.0, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0),
        runs=5,
    )


def _in_workers(fn: Any, p: Plan, runs: int | None, cpu: int | None, **kwargs: Any) -> Any:
    """``fn(plan, cpu=cpu, **kwargs)`` in ``runs`` workers (None: the plan's runs)."""
    plan_ = asdict(p)
    plan_["defer_rates"] = list(p.defer_rates)
    return workers.run_in_workers(
        fn, {"plan": plan_, "cpu": cpu, **kwargs}, runs=p.runs if runs is None else runs, cpu=cpu
    )


def _plan(plan: dict[str, Any]) -> Plan:
    return Plan(**{**plan, "defer_rates": tuple(plan["defer_rates"])})


def run_mechanics(
    p: Plan, *, op: str = "advance", cpu: int | None = None, runs: int | None = None
) -> Any:
    """Experiment (a) through the runner: 6.3 vs 6.4, import + iterate one segment.

    Repeated in ``runs`` worker processes (None: ``p.runs``); rows carry ``run``.
    """
    return _in_workers(_mechanics_in_worker, p, runs, cpu, op=op)


def _mechanics_in_worker(plan: dict[str, Any], op: str, cpu: int | None) -> runner.Rows:
    """One run of :func:`run_mechanics`, in this (worker) process."""
    p = _plan(plan)
    return runner.measure(
        "ubuf-mechanics",
        batches(mechanics_models(op=op), p.iters),
        repeats=p.repeats,
        warmup=p.warmup,
        rotate=True,
        cpu=cpu,
        params={"op": op, "bytes": PAGE_SIZE, "iters": p.iters},
    )


def run_read_zero(p: Plan, *, cpu: int | None = None, runs: int | None = None) -> Any:
    """Experiment (b) through the runner: read, readv 6.3, readv 6.4, the live proxy.

    Repeated in ``runs`` worker processes (None: ``p.runs``); rows carry ``run``.
    """
    return _in_workers(_read_zero_in_worker, p, runs, cpu)


def _read_zero_in_worker(plan: dict[str, Any], cpu: int | None) -> runner.Rows:
    """One run of :func:`run_read_zero`, in this (worker) process."""
    p = _plan(plan)
    return runner.measure(
        "ubuf-read-zero",
        batches(read_zero_models(proxy=True), p.iters),
        repeats=p.repeats,
        warmup=p.warmup,
        rotate=True,
        cpu=cpu,
        params={"bytes": PAGE_SIZE, "iters": p.iters},
    )


def run_uring(
    p: Plan, *, defer_alloc_ubuf: bool = False, cpu: int | None = None, runs: int | None = None
) -> Any:
    """Experiment (c) through ``labkit.measure.runner.run``, once per deferral rate of the plan.

    Rows carry ``defer_rate``, ``defer_every``, ``defer_alloc_ubuf`` and
    ``run`` columns; repeated in ``runs`` worker processes (None: ``p.runs``).
    """
    return _in_workers(_uring_in_worker, p, runs, cpu, defer_alloc_ubuf=defer_alloc_ubuf)


def _uring_in_worker(plan: dict[str, Any], defer_alloc_ubuf: bool, cpu: int | None) -> runner.Rows:
    """One run of :func:`run_uring`, in this (worker) process."""
    p = _plan(plan)
    rows: runner.Rows = []
    for rate in p.defer_rates:
        k = defer_every_for(rate)
        models = uring_models(defer_every=k, defer_alloc_ubuf=defer_alloc_ubuf)
        rows += runner.measure(
            "ubuf-uring",
            batches(models, p.iters),
            repeats=p.repeats,
            warmup=p.warmup,
            rotate=True,
            cpu=cpu,
            params={
                "defer_rate": rate,
                "defer_every": k,
                "defer_alloc_ubuf": defer_alloc_ubuf,
                "bytes": PAGE_SIZE,
                "iters": p.iters,
            },
        )
    return rows


def difference_ci(
    df: Any,
    slow: str,
    fast: str,
    *,
    value: str = "ns_per_op",
    confidence: float = 0.95,
    n_boot: int = 2000,
    seed: int = 0,
) -> dict[str, float]:
    """median(slow) - median(fast) with a seeded bootstrap interval (the ns saved per call).

    Raises:
        KeyError: if either variant has no rows.
    """
    a = df.loc[df["variant"] == slow, value].to_numpy(dtype=float)
    b = df.loc[df["variant"] == fast, value].to_numpy(dtype=float)
    for name, arr in ((slow, a), (fast, b)):
        if arr.size == 0:
            raise KeyError(f"difference_ci: no rows with variant == {name!r}")
    rng = np.random.default_rng(seed)
    da = np.median(a[rng.integers(0, a.size, (n_boot, a.size))], axis=1)
    db = np.median(b[rng.integers(0, b.size, (n_boot, b.size))], axis=1)
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(da - db, [alpha, 1 - alpha])
    return {
        "saved_ns": float(np.median(a) - np.median(b)),
        "ci_low": float(lo),
        "ci_high": float(hi),
        "slow_ns": float(np.median(a)),
        "fast_ns": float(np.median(b)),
    }


def gain_ci(df: Any, slow: str, fast: str, *, kind: str = "time") -> dict[str, float]:
    """The gain of ``fast`` over ``slow`` with the harness's bootstrap ratio interval.

    ``kind="time"``: the share of time saved, 1 - t_fast / t_slow (R2's "about 3%").
    ``kind="rate"``: the throughput gain, t_slow / t_fast - 1 (R3's IOPS "+5.8%").
    """
    from labkit.measure import stats  # here, so that a worker need not import pandas

    if kind not in ("time", "rate"):
        raise ValueError(f"kind must be 'time' or 'rate', got {kind!r}")
    if kind == "time":
        r = stats.ratio_ci(df, fast, slow)
        return {
            "gain": 1 - r.ratio,
            "ci_low": 1 - r.ci_high,
            "ci_high": 1 - r.ci_low,
            "n": min(r.n_numerator, r.n_denominator),
        }
    r = stats.ratio_ci(df, slow, fast)
    return {
        "gain": r.ratio - 1,
        "ci_low": r.ci_low - 1,
        "ci_high": r.ci_high - 1,
        "n": min(r.n_numerator, r.n_denominator),
    }


__all__ = [
    "Plan",
    "difference_ci",
    "gain_ci",
    "plan",
    "run_mechanics",
    "run_read_zero",
    "run_uring",
]
