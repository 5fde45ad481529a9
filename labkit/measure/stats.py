"""labkit's one statistics module: figures with 95% intervals over batches and runs.

Every figure labkit reports is an :class:`Estimate` (point, interval, method,
runs, batches, within-run and between-run spread): :func:`median`,
:func:`ratio` and :func:`difference` (the median over interleaved rounds of each
round's ratio or difference; of the two medians where the variants were not
measured in the same rounds), :func:`gain` (``kind="time"``:
1 - fast/slow; ``kind="rate"``: slow/fast - 1), :func:`slope` (e.g. R1's ns
per skipped page), :func:`composed_ratio` ``(F + a) / (F + b)``; and tables of
them, :func:`median_ci` and :func:`ratio_ci`.

The data are the harness's tidy rows (one row per batch, ``ns_per_op``) with
an optional ``run`` column: one value per independent worker process.  A
missing ``run`` column, or a single value in it, means one run.  With one run
the interval is scipy's bootstrap over batches (BCa where it applies); with
several, a bootstrap over runs (each run's batches kept whole), so that the
interval includes the spread between processes.  The engine, its seeding rule
and its defaults are in :mod:`labkit.measure.resampling`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as _scipy_stats

from labkit.measure.resampling import (
    DEFAULT_CONFIDENCE,
    DEFAULT_SEED,
    Estimate,
    Sample,
    Statistic,
    bootstrap,
)

#: The column naming the independent run (worker process) of each batch.
RUN_COLUMN = "run"
#: The column naming the interleaved round of each batch (runner.measure's ``repeat``).
ROUND_COLUMN = "repeat"

# ---- statistics (vectorised along the last axis, NaN-aware) --------------------------


def _median(a: np.ndarray, axis: int = -1) -> np.ndarray:
    # NaN only pads runs with fewer batches in the resample over runs; np.median is faster
    return np.nanmedian(a, axis=axis) if np.isnan(a).any() else np.median(a, axis=axis)


def _ratio(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    return _median(a, axis) / _median(b, axis)


def _difference(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    return _median(a, axis) - _median(b, axis)


def _composed(f: np.ndarray, a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    mf = _median(f, axis)
    return (mf + _median(a, axis)) / (mf + _median(b, axis))


def _slope_of(x: np.ndarray) -> Statistic:
    xc = x - x.mean()
    denom = float(xc @ xc)

    def slope(*groups: np.ndarray, axis: int = -1) -> np.ndarray:
        meds = np.stack([_median(g, axis) for g in groups], axis=-1)
        return (meds - meds.mean(axis=-1, keepdims=True)) @ xc / denom

    return slope


# ---- samples from tidy tables ------------------------------------------------------


def runs_of(df: pd.DataFrame, run_col: str = RUN_COLUMN) -> np.ndarray:
    """The run label of every row (all 0 without a ``run`` column)."""
    if run_col in df.columns:
        return df[run_col].to_numpy()
    return np.zeros(len(df), dtype=np.int64)


def sample(
    df: pd.DataFrame,
    variant: str | None = None,
    *,
    variant_col: str = "variant",
    value: str = "ns_per_op",
    run_col: str = RUN_COLUMN,
    block: int = 0,
) -> Sample:
    """The batches of ``variant`` (all rows if None) in ``df``, with their runs and rounds.

    With a ``repeat`` column whose (run, repeat) pairs are unique, the batches
    are put in round order and carry their rounds, so that variants measured in
    the same rounds are resampled round by round (:class:`Sample`).

    Raises:
        KeyError: if ``value`` is not a column or the variant has no rows.
    """
    if value not in df.columns:
        raise KeyError(f"no column {value!r} in {list(df.columns)}")
    sub = df if variant is None else df[df[variant_col] == variant]
    if sub.empty:
        raise KeyError(f"no rows with {variant_col} == {variant!r}")
    rounds = None
    if ROUND_COLUMN in sub.columns:
        # in round order inside each run, so that interleaved variants pair round by round
        keys = [run_col, ROUND_COLUMN] if run_col in sub.columns else [ROUND_COLUMN]
        if not sub.duplicated(keys).any():
            sub = sub.sort_values(keys, kind="stable")
            rounds = sub[ROUND_COLUMN].to_numpy()
    return Sample.of(sub[value].to_numpy(dtype=float), runs_of(sub, run_col), block, rounds)


def _opts(kw: dict[str, Any]) -> dict[str, Any]:
    return {k: kw[k] for k in ("confidence", "n_resamples", "seed") if k in kw}


def median(
    data: pd.DataFrame | Sequence[float] | np.ndarray, variant: str | None = None, **kw: Any
) -> Estimate:
    """The median of ``ns_per_op`` (of one ``variant``), or of an array of values.

    Keywords: ``variant_col``, ``value``, ``run_col`` (for a table) and
    ``confidence``, ``n_resamples``, ``seed``.
    """
    if isinstance(data, pd.DataFrame):
        s = sample(
            data,
            variant,
            **{k: v for k, v in kw.items() if k in ("variant_col", "value", "run_col")},
        )
    else:
        s = Sample.of(data)
    return bootstrap(
        [s], _median, quantity=f"median{f' of {variant}' if variant else ''}", **_opts(kw)
    )


def _pair(df: pd.DataFrame, a: str, b: str, kw: dict[str, Any]) -> list[Sample]:
    keys = {k: v for k, v in kw.items() if k in ("variant_col", "value", "run_col")}
    return [sample(df, a, **keys), sample(df, b, **keys)]


def _per_round(samples: list[Sample], op: Any) -> Sample | None:
    """``op(a, b)`` of each round, as one sample, if the two samples pair round by round."""
    a, b = samples
    if not a.pairs_with(b):
        return None
    return Sample(op(a.values, b.values), a.runs, a.block, a.rounds)


def ratio(df: pd.DataFrame, numerator: str, denominator: str, **kw: Any) -> Estimate:
    """The ratio numerator / denominator of two variants of ``df``.

    Measured in the same interleaved rounds (a ``repeat`` column, see
    :func:`sample`), it is the median over rounds of each round's ratio: the
    two batches of a round ran back to back, so a round taken whole cancels the
    machine's speed at that moment (a ratio of the two medians can pair one
    variant's slow stretch with the other's fast one).  Otherwise,
    median(numerator) / median(denominator).

    Raises:
        KeyError: if a variant has no rows.
        ZeroDivisionError: if the denominator's median (or one of its paired batches) is 0.
    """
    samples = _pair(df, numerator, denominator, kw)
    if np.median(samples[1].values) == 0:
        raise ZeroDivisionError(f"ratio: the median of {denominator!r} is 0")
    rounds = None if (samples[1].values == 0).any() else _per_round(samples, np.divide)
    if rounds is not None:
        return bootstrap(
            [rounds],
            _median,
            quantity=f"median over rounds of {numerator} / {denominator}",
            **_opts(kw),
        )
    return bootstrap(
        samples, _ratio, quantity=f"median({numerator}) / median({denominator})", **_opts(kw)
    )


def difference(df: pd.DataFrame, slow: str, fast: str, **kw: Any) -> Estimate:
    """slow - fast, e.g. the nanoseconds saved per call: the median over rounds of each
    round's difference when the two were interleaved (as :func:`ratio`), else
    median(slow) - median(fast)."""
    samples = _pair(df, slow, fast, kw)
    rounds = _per_round(samples, np.subtract)
    if rounds is not None:
        return bootstrap(
            [rounds], _median, quantity=f"median over rounds of {slow} - {fast}", **_opts(kw)
        )
    return bootstrap(samples, _difference, quantity=f"median({slow}) - median({fast})", **_opts(kw))


GAIN_KINDS = ("time", "rate")


def gain(df: pd.DataFrame, slow: str, fast: str, *, kind: str = "time", **kw: Any) -> Estimate:
    """The gain of ``fast`` over ``slow`` (a fraction; x100 for percent).

    ``kind="time"``: the share of time saved, ``1 - t_fast / t_slow`` (R2's "about 3%").
    ``kind="rate"``: the throughput gain, ``t_slow / t_fast - 1`` (R3's IOPS "+5.8%").
    """
    if kind not in GAIN_KINDS:
        raise ValueError(f"kind must be one of {GAIN_KINDS}, got {kind!r}")
    if kind == "time":
        r = ratio(df, fast, slow, **kw)
        return r.affine(-1.0, 1.0, f"time saved, 1 - {fast} / {slow}")
    r = ratio(df, slow, fast, **kw)
    return r.affine(1.0, -1.0, f"rate gain, {slow} / {fast} - 1")


def slope(
    df: pd.DataFrame,
    *,
    x: str = "pages_skipped",
    variant: str | None = None,
    min_x: float | None = None,
    **kw: Any,
) -> Estimate:
    """Least-squares slope of the per-``x`` medians of ``value`` against ``x``.

    E.g. ns per skipped page of a seek: ``slope(seek_df, variant="walk-2019", min_x=16)``.
    Each x is one sample; the interval resamples batches within each x (and
    runs, when there are several).

    Raises:
        ValueError: with fewer than two distinct x values.
    """
    d = df if variant is None else df[df[kw.get("variant_col", "variant")] == variant]
    if min_x is not None:
        d = d[d[x] >= min_x]
    xs = np.array(sorted(d[x].unique()), dtype=float)
    if xs.size < 2:
        raise ValueError(f"slope: need at least two distinct {x} values, got {xs.size}")
    keys = {k: v for k, v in kw.items() if k in ("value", "run_col")}
    samples = [sample(d[d[x] == v], **keys) for v in xs]
    what = f"{variant} " if variant else ""
    return bootstrap(samples, _slope_of(xs), quantity=f"{what}slope per {x}", **_opts(kw))


def _fixed_sample(df: pd.DataFrame, fixed: Any, kw: dict[str, Any]) -> Sample:
    """F as a sample: a variant of ``df`` (same runs), or a table / array of its own."""
    keys = {k: v for k, v in kw.items() if k in ("variant_col", "value", "run_col")}
    if isinstance(fixed, str):
        return sample(df, fixed, **keys)
    if isinstance(fixed, pd.DataFrame):
        keys.pop("variant_col", None)
        return sample(fixed, block=1, **keys)
    return Sample.of(fixed, block=1)


def composed_ratio(
    df: pd.DataFrame,
    numerator: str,
    denominator: str,
    *,
    fixed: str | pd.DataFrame | Sequence[float] | np.ndarray,
    **kw: Any,
) -> Estimate:
    """(F + median(numerator)) / (F + median(denominator)), F = the median of ``fixed``.

    ``fixed`` is a variant of ``df`` (measured in the same runs: it shares their
    draw), or a table or array of its own (drawn on its own).  The same
    resampled F enters both terms.
    """
    samples = [_fixed_sample(df, fixed, kw), *_pair(df, numerator, denominator, kw)]
    return bootstrap(
        samples, _composed, quantity=f"(F + {numerator}) / (F + {denominator})", **_opts(kw)
    )


def _sum(*groups: np.ndarray, axis: int = -1) -> np.ndarray:
    return sum(_median(g, axis) for g in groups)


def sum_of_medians(df: pd.DataFrame, parts: Sequence[str], **kw: Any) -> Estimate:
    """median(part 1) + median(part 2) + ...: e.g. F + seek + copy of one submission.

    Raises:
        KeyError: if a part has no rows.
    """
    keys = {k: v for k, v in kw.items() if k in ("variant_col", "value", "run_col")}
    samples = [sample(df, p, **keys) for p in parts]
    return bootstrap(samples, _sum, quantity=" + ".join(parts), **_opts(kw))


# ---- tables of estimates -----------------------------------------------------------


def _groups(df: pd.DataFrame, by: Sequence[str]) -> Iterator[tuple[tuple[Any, ...], pd.DataFrame]]:
    if not by:
        yield (), df
        return
    for key, sub in df.groupby(list(by), sort=True, dropna=False):
        yield (key if isinstance(key, tuple) else (key,)), sub


#: Columns :func:`median_ci` adds after the ``by`` columns.
MEDIAN_COLUMNS = [
    "n",
    "median",
    "ci_low",
    "ci_high",
    "n_runs",
    "within_run",
    "between_run",
    "method",
]


def median_ci(
    df: pd.DataFrame,
    by: str | Sequence[str] = ("experiment", "variant"),
    *,
    value: str = "ns_per_op",
    **kw: Any,
) -> pd.DataFrame:
    """The median of ``value`` per group, with its interval (see :func:`median`).

    Returns:
        One row per group: the ``by`` columns, then :data:`MEDIAN_COLUMNS`.
    """
    by = [by] if isinstance(by, str) else list(by)
    missing = [c for c in [*by, value] if c not in df.columns]
    if missing:
        raise KeyError(f"median_ci: no column(s) {missing} in {list(df.columns)}")
    rows = []
    for key, sub in _groups(df, by):
        e = median(sub, value=value, **kw)
        rows.append(
            {
                **dict(zip(by, key, strict=True)),
                "n": len(sub),
                "median": e.estimate,
                "ci_low": e.ci_low,
                "ci_high": e.ci_high,
                "n_runs": e.n_runs,
                "within_run": e.within_run,
                "between_run": e.between_run,
                "method": e.method,
            }
        )
    return pd.DataFrame(rows, columns=[*by, *MEDIAN_COLUMNS])


def ratio_ci(
    df: pd.DataFrame,
    numerator: str,
    denominator: str,
    *,
    by: str | Sequence[str] | None = None,
    **kw: Any,
) -> pd.DataFrame:
    """:func:`ratio` per ``by`` group as a table: the ``by`` columns, ``numerator``,
    ``denominator`` and the Estimate's fields, one row per group (one row in all when
    ``by`` is None).  For the one :class:`Estimate`, call :func:`ratio`."""
    if by is None:
        e = ratio(df, numerator, denominator, **kw)
        return pd.DataFrame([{"numerator": numerator, "denominator": denominator, **e.as_dict()}])
    by_cols = [by] if isinstance(by, str) else list(by)
    rows = []
    for key, sub in _groups(df, by_cols):
        where = dict(zip(by_cols, key, strict=True))
        try:
            e = ratio(sub, numerator, denominator, **kw)
        except KeyError as exc:
            raise KeyError(f"{exc.args[0]} for {where}") from None
        rows.append({**where, "numerator": numerator, "denominator": denominator, **e.as_dict()})
    return pd.DataFrame(rows)


def to_frame(estimates: dict[str, Estimate], key: str = "name") -> pd.DataFrame:
    """Estimates by name as a table: ``key``, then the Estimate's fields."""
    return pd.DataFrame([{key: k, **e.as_dict()} for k, e in estimates.items()])


def welch_difference(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    *,
    confidence: float = DEFAULT_CONFIDENCE,
    quantity: str = "mean(a) - mean(b)",
) -> Estimate:
    """mean(a) - mean(b) with Welch's t interval (unequal variances, Welch-Satterthwaite
    degrees of freedom): the interval a published paper's own few runs allow, e.g. R2's
    two runs per arm (``n_runs`` is the smaller sample's size).

    Raises:
        ValueError: with fewer than two values in a sample, non-finite values, or no
            spread in either sample (the interval would be a point).
    """
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.size < 2 or y.size < 2 or not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise ValueError("welch_difference: need two or more finite values in each sample")
    va, vb = x.var(ddof=1) / x.size, y.var(ddof=1) / y.size
    if va + vb == 0:
        raise ValueError("welch_difference: neither sample has any spread")
    df = (va + vb) ** 2 / (va**2 / (x.size - 1) + vb**2 / (y.size - 1))
    se = float(np.sqrt(va + vb))
    t = float(_scipy_stats.t.ppf(1 - (1 - confidence) / 2, df))
    d = float(x.mean() - y.mean())
    return Estimate(
        quantity=quantity,
        estimate=d,
        ci_low=d - t * se,
        ci_high=d + t * se,
        confidence=confidence,
        method=f"Welch t interval ({x.size} + {y.size} values, {df:.3g} df)",
        n_runs=int(min(x.size, y.size)),
        n_batches=int(min(x.size, y.size)),
        within_run=se,
        between_run=float("nan"),
    )


def bootstrap_median(values: Sequence[float] | np.ndarray, **kw: Any) -> tuple[float, float, float]:
    """(median, low, high) of an array of values (see :func:`median`)."""
    e = median(np.asarray(values, dtype=float), **kw)
    return e.estimate, e.ci_low, e.ci_high


__all__ = [
    "DEFAULT_CONFIDENCE",
    "DEFAULT_SEED",
    "Estimate",
    "bootstrap",
    "bootstrap_median",
    "composed_ratio",
    "difference",
    "gain",
    "median",
    "median_ci",
    "ratio",
    "ratio_ci",
    "sample",
    "slope",
    "sum_of_medians",
    "to_frame",
    "welch_difference",
]
