"""A/A calibration: an experiment's resolving power, measured in the same run as its A/B.

Every live A/B can carry an A/A twin: the same call measured as a second variant of the
same interleaved loop (``labkit.live.aa_twin("readv1")`` is ``"readv1_aa"``).  The
difference twin - variant has a known truth, 0, so

* its 95% interval must cover 0: over many A/A intervals about 95% do, and
  :func:`tally` counts how often they did;
* its half-width, in ns per call, is the **resolving power** of that
  experiment on that host: an A/B effect smaller than it cannot be told from
  nothing there (:class:`AA`).

R2's live A/B has a second correction measured in the same rounds, the cost of its
proxy's extra iovec: that is R2's own (:func:`labkit.results.r2.claims.proxy_corrected`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from labkit.live.variants import AA_SUFFIX
from labkit.measure import stats
from labkit.measure.stats import SESSION_COLUMN, Estimate, over_sessions


@dataclass(frozen=True)
class AA:
    """One A/A interval: the difference twin - variant, in ns per call."""

    variant: str
    estimate: Estimate

    @property
    def covers_zero(self) -> bool:
        """Whether the interval contains 0 (it should, about 95% of the time)."""
        return self.estimate.ci_low <= 0 <= self.estimate.ci_high

    @property
    def resolving_power(self) -> float:
        """Half the interval's width: the smallest effect this experiment resolves here."""
        return (self.estimate.ci_high - self.estimate.ci_low) / 2

    def sentence(self) -> str:
        """``"A/A readv1: +0.12 [-0.3, 0.54] ns, covers 0; resolving power 0.42 ns per call"``."""
        cover = "covers 0" if self.covers_zero else "MISSES 0"
        return (
            f"A/A {self.variant}: {self.estimate.brief('{:+.3g}')} ns, {cover}; "
            f"resolving power {self.resolving_power:.3g} ns per call"
        )


def aa(df: pd.DataFrame, variant: str, *, twin: str | None = None, **kw: Any) -> AA:
    """The A/A interval of ``variant`` against its twin in ``df`` (the rows of one
    interleaved loop that measured both): median over rounds of twin - variant.  The
    twin is ``variant + AA_SUFFIX`` unless ``twin`` names it (``"readv1_aa@32"`` beside
    ``"readv1@32"`` in the io_uring peak loop).

    This is the one definition of an experiment's resolving power, used by the summary
    rows and by ``benchmarks/aa_calibration.py`` alike: one analysis of the rows the A/B
    is judged on.  Rows of several sessions (a ``session`` column; run labels count
    within a session) give each session's interval pooled with the session as the top
    level (:func:`labkit.measure.stats.over_sessions`): pooling their runs as one
    session would pair the rounds of different sessions that share a run label.

    Raises:
        KeyError: if ``variant`` or its twin has no rows.
    """

    def one(d: pd.DataFrame) -> Estimate:
        return stats.difference(d, twin or variant + AA_SUFFIX, variant, **kw)

    if SESSION_COLUMN in df.columns and df[SESSION_COLUMN].nunique() > 1:
        return AA(variant, over_sessions(df, one)[0])
    return AA(variant, one(df))


def aa_by_run(df: pd.DataFrame, variant: str, **kw: Any) -> list[AA]:
    """One A/A interval per independent run of ``df`` (its rounds resampled; a run is a
    (session, run) pair), for :func:`tally`: how often the A/A intervals of single runs
    cover 0."""
    if "run" not in df.columns:
        return [aa(df, variant, **kw)]
    by = [c for c in (SESSION_COLUMN, "run") if c in df.columns]
    return [aa(sub, variant, **kw) for _, sub in df.groupby(by, sort=True)]


def tally(intervals: Sequence[AA]) -> dict[str, Any]:
    """How many A/A intervals covered 0, of how many, and the resolving powers.

    Returns:
        ``{"covered": int, "total": int, "share": float (NaN for none),
        "resolving_power": {variant: the median half-width}}``.
    """
    covered = sum(a.covers_zero for a in intervals)
    powers: dict[str, list[float]] = {}
    for a in intervals:
        powers.setdefault(a.variant, []).append(a.resolving_power)
    return {
        "covered": covered,
        "total": len(intervals),
        "share": covered / len(intervals) if intervals else math.nan,
        "resolving_power": {k: float(np.median(v)) for k, v in powers.items()},
    }


__all__ = [
    "AA",
    "aa",
    "aa_by_run",
    "tally",
]
