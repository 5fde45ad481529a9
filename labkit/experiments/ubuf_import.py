"""Notebook 03's experiments (R2, R3): the ITER_UBUF import models, measured and compared.

Each model experiment is repeated in ``Plan.runs`` independent single-threaded
worker processes (:mod:`labkit.measure.workers`); the rows say which run made
them (``run`` column).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any

from labkit.config import quick_mode
from labkit.core.memory import PAGE_SIZE
from labkit.measure import runner, workers

if TYPE_CHECKING:  # the analysis needs pandas and scipy; a worker must not import them
    from labkit.measure.resampling import Estimate
    from labkit.measure.sequential import Budget
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
        return Plan(iters=2_000, repeats=16, warmup=1, defer_rates=(0.0, 0.1, 1.0), runs=2)
    return Plan(
        iters=20_000,
        repeats=60,
        warmup=1,
        defer_rates=(0.0, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0),
        runs=5,
    )


def _plan_json(p: Plan) -> dict[str, Any]:
    return {**asdict(p), "defer_rates": list(p.defer_rates)}


def _plan(plan: dict[str, Any]) -> Plan:
    return Plan(**{**plan, "defer_rates": tuple(plan["defer_rates"])})


def _plan_runs(arguments: workers.Arguments) -> int:
    return arguments["p"].runs


def _measure(experiment: str, models: Any, p: Plan, cpu: int | None, **params: Any) -> runner.Rows:
    """One interleaved, rotated measurement of ``models`` in batches of ``p.iters``."""
    return runner.measure(
        experiment,
        batches(models, p.iters),
        repeats=p.repeats,
        warmup=p.warmup,
        rotate=True,
        cpu=cpu,
        params={**params, "bytes": PAGE_SIZE, "iters": p.iters},
    )


# Each experiment below is the function of one run, in one process; the decorator makes
# it the public experiment, with ``runs`` (None: ``p.runs``) and ``timeout`` arguments
# more, measured in that many single-threaded workers.
def _in_workers(target_id: str) -> Any:
    return workers.in_workers(target_id, _plan_runs, ship={"p": (_plan_json, _plan)})


@_in_workers("model.ubuf_mechanics")
def run_mechanics(p: Plan, *, op: str = "advance", cpu: int | None = None) -> runner.Rows:
    """Experiment (a) through the runner: 6.3 vs 6.4, import + iterate one segment.

    Repeated in ``runs`` worker processes (None: ``p.runs``); rows carry ``run``.
    """
    return _measure("ubuf-mechanics", mechanics_models(op=op), p, cpu, op=op)


@_in_workers("model.ubuf_read_zero")
def run_read_zero(p: Plan, *, cpu: int | None = None) -> runner.Rows:
    """Experiment (b) through the runner: read, readv 6.3, readv 6.4, the live proxy.

    Repeated in ``runs`` worker processes (None: ``p.runs``); rows carry ``run``.
    """
    return _measure("ubuf-read-zero", read_zero_models(proxy=True), p, cpu)


@_in_workers("model.ubuf_uring")
def run_uring(p: Plan, *, defer_alloc_ubuf: bool = False, cpu: int | None = None) -> runner.Rows:
    """Experiment (c) through ``labkit.measure.runner.run``, once per deferral rate of the plan.

    Rows carry ``defer_rate``, ``defer_every``, ``defer_alloc_ubuf`` and
    ``run`` columns; repeated in ``runs`` worker processes (None: ``p.runs``).
    """
    rows: runner.Rows = []
    for rate in p.defer_rates:
        k = defer_every_for(rate)
        models = uring_models(defer_every=k, defer_alloc_ubuf=defer_alloc_ubuf)
        rows += _measure(
            "ubuf-uring",
            models,
            p,
            cpu,
            defer_rate=rate,
            defer_every=k,
            defer_alloc_ubuf=defer_alloc_ubuf,
        )
    return rows


# ---- the notebook's analysis (notebook 03) ---------------------------------------------


def runs_budget(quick: bool | None = None) -> Budget:
    """Independent runs of notebook 03's experiments: at least 2 (quick) or 3 (full); the
    model experiments take no more (they decide no verdict)."""
    from labkit.measure.sequential import Budget

    return Budget(2, 2, 8.0) if quick_mode(quick) else Budget(3, 3, 30.0)


def per_run(p: Plan, budget: Budget) -> Plan:
    """``p`` with its rounds shared out over ``budget.min_runs`` runs."""
    return replace(p, repeats=budget.share(p.repeats, p.warmup))


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
    from labkit.measure import stats

    fast, slow = LIVE_PAIRS[name]
    return stats.gain(df, slow, fast, kind=kind, **kw).affine(100.0, quantity=f"{name} (%)")


def live_gain_by_run(df: Any, name: str, *, kind: str, run_col: str = "run") -> Any:
    """One row per run of ``df``: the run's :func:`live_gain` for :data:`LIVE_PAIRS` ``name``
    (``gain``, with ``ci_low`` and ``ci_high`` over that run's rounds) and the median time
    of its IOVEC side (``iovec_ns``, the machine's speed in that run).

    What a reader needs to see whether the gain depends on how fast the machine ran:
    on a shared VM the same run of calls takes 1.5x longer in some minutes than in others.
    """
    import pandas as pd

    from labkit.measure import stats

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
    "LIVE_PAIRS",
    "Plan",
    "instructions_table",
    "live_gain",
    "live_gain_by_run",
    "per_run",
    "plan",
    "run_mechanics",
    "run_read_zero",
    "run_uring",
    "runs_budget",
]
