"""Statistics of timed samples: medians, ratios, differences with bootstrap intervals."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

DEFAULT_CONFIDENCE = 0.95
DEFAULT_N_BOOT = 2000
DEFAULT_SEED = 20190729

# ---- bootstrap --------------------------------------------------------------------


def _boot_medians(x: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    idx = rng.integers(0, len(x), size=(n_boot, len(x)))
    return np.median(x[idx], axis=1)


def _check_ci_args(confidence: float, n_boot: int) -> None:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if int(n_boot) < 1:
        raise ValueError(f"n_boot must be >= 1, got {n_boot}")


def bootstrap_median(
    values: Sequence[float] | np.ndarray,
    *,
    confidence: float = DEFAULT_CONFIDENCE,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = DEFAULT_SEED,
) -> tuple[float, float, float]:
    """(median, low, high): the sample median and its percentile-bootstrap interval."""
    _check_ci_args(confidence, n_boot)
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        raise ValueError("bootstrap_median: no values")
    rng = np.random.default_rng(seed)
    meds = _boot_medians(x, int(n_boot), rng)
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(meds, [alpha, 1 - alpha])
    return float(np.median(x)), float(lo), float(hi)


def _groups(df: pd.DataFrame, by: Sequence[str]) -> Iterator[tuple[tuple[Any, ...], pd.DataFrame]]:
    if not by:
        yield (), df
        return
    for key, sub in df.groupby(list(by), sort=True, dropna=False):
        yield (key if isinstance(key, tuple) else (key,)), sub


def median_ci(
    df: pd.DataFrame,
    by: str | Sequence[str] = ("experiment", "variant"),
    *,
    value: str = "ns_per_op",
    confidence: float = DEFAULT_CONFIDENCE,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = DEFAULT_SEED,
) -> pd.DataFrame:
    """Median of ``value`` per group, with a seeded percentile-bootstrap interval.

    Returns:
        One row per group: the ``by`` columns, then n, median, ci_low, ci_high.
    """
    by = [by] if isinstance(by, str) else list(by)
    missing = [c for c in [*by, value] if c not in df.columns]
    if missing:
        raise KeyError(f"median_ci: no column(s) {missing} in {list(df.columns)}")
    rows = []
    for key, sub in _groups(df, by):
        med, lo, hi = bootstrap_median(
            sub[value].to_numpy(), confidence=confidence, n_boot=n_boot, seed=seed
        )
        rows.append(
            {
                **dict(zip(by, key, strict=True)),
                "n": len(sub),
                "median": med,
                "ci_low": lo,
                "ci_high": hi,
            }
        )
    return pd.DataFrame(rows, columns=[*by, "n", "median", "ci_low", "ci_high"])


class RatioCI(NamedTuple):
    """A ratio of medians with its bootstrap interval."""

    numerator: str
    denominator: str
    ratio: float
    ci_low: float
    ci_high: float
    n_numerator: int
    n_denominator: int
    confidence: float


def bootstrap_ratio(
    num: Sequence[float] | np.ndarray,
    den: Sequence[float] | np.ndarray,
    *,
    confidence: float = DEFAULT_CONFIDENCE,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = DEFAULT_SEED,
) -> tuple[float, float, float]:
    """(ratio, low, high) for median(num) / median(den), each sample resampled independently."""
    _check_ci_args(confidence, n_boot)
    a = np.asarray(num, dtype=float)
    b = np.asarray(den, dtype=float)
    if a.size == 0 or b.size == 0:
        raise ValueError("bootstrap_ratio: both samples need at least one value")
    if np.median(b) == 0:
        raise ZeroDivisionError("bootstrap_ratio: the denominator's median is 0")
    rng = np.random.default_rng(seed)
    ma = _boot_medians(a, int(n_boot), rng)
    mb = _boot_medians(b, int(n_boot), rng)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = ma / mb
    ratios = ratios[np.isfinite(ratios)]
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(ratios, [alpha, 1 - alpha])
    return float(np.median(a) / np.median(b)), float(lo), float(hi)


def ratio_ci(
    df: pd.DataFrame,
    numerator: str,
    denominator: str,
    *,
    by: str | Sequence[str] | None = None,
    variant_col: str = "variant",
    value: str = "ns_per_op",
    confidence: float = DEFAULT_CONFIDENCE,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = DEFAULT_SEED,
) -> RatioCI | pd.DataFrame:
    """median(numerator) / median(denominator) with a seeded bootstrap interval.

    ``numerator`` and ``denominator`` are values of ``variant_col``.  Without
    ``by`` the result is one :class:`RatioCI`; with ``by`` (e.g. ``"size"``) a
    DataFrame with one row per group and the RatioCI fields as columns.

    Raises:
        KeyError: if a variant has no rows (in some group).
    """
    by_cols = [] if by is None else ([by] if isinstance(by, str) else list(by))
    rows = []
    for key, sub in _groups(df, by_cols):
        a = sub.loc[sub[variant_col] == numerator, value].to_numpy()
        b = sub.loc[sub[variant_col] == denominator, value].to_numpy()
        where = f" for {dict(zip(by_cols, key, strict=True))}" if by_cols else ""
        for name, arr in ((numerator, a), (denominator, b)):
            if arr.size == 0:
                raise KeyError(f"ratio_ci: no rows with {variant_col} == {name!r}{where}")
        r, lo, hi = bootstrap_ratio(a, b, confidence=confidence, n_boot=n_boot, seed=seed)
        ci = RatioCI(numerator, denominator, r, lo, hi, len(a), len(b), confidence)
        rows.append((key, ci))
    if by is None:
        return rows[0][1]
    return pd.DataFrame(
        [{**dict(zip(by_cols, key, strict=True)), **ci._asdict()} for key, ci in rows]
    )
