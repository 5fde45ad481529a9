"""A/A calibration and the live proxy's own bias, measured in the same run as the A/B.

**A/A.**  Every live A/B can carry an A/A twin: the same call measured as a
second variant of the same interleaved loop (``labkit.live.aa_twin("readv1")``
is ``"readv1_aa"``).  The difference twin - variant has a known truth, 0, so

* its 95% interval must cover 0: over many A/A intervals about 95% do, and
  :func:`tally` counts how often they did;
* its half-width, in ns per call, is the **resolving power** of that
  experiment on that host: an A/B effect smaller than it cannot be told from
  nothing there (:class:`AA`).

**The proxy's bias.**  On a kernel past 6.4 a readv with one segment is already
``ITER_UBUF``; R2's live A/B compares it with ``readv(4K + empty)`` (the same
bytes through ``ITER_IOVEC``), which copies one iovec more than a 6.3 readv(1)
did and so overstates the saving.  ``readv(4K + 2 empty)`` copies one more
again: ``readv_empty2 - readv_empty`` is the cost of one more empty iovec,
measured in the same rounds.  :func:`proxy_corrected` gives R2's ns saved, time
saved and ratio with that cost taken off (a difference of paired medians over
rounds, resampled together round by round), so the correction's uncertainty is
in the interval.  It assumes each extra empty iovec costs the same (the first
and the second are copied and stepped over alike); the raw figure is an upper
bound either way.
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
from labkit.measure.stats import SESSION_COLUMN, Estimate, Sample, bootstrap, over_sessions

#: R2's live A/B and its proxy-bias row: (IOVEC proxy, UBUF, the proxy with one empty more).
R2_PROXY = ("readv_empty", "readv1", "readv_empty2")


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


def _median(a: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.nanmedian(a, axis=axis) if np.isnan(a).any() else np.median(a, axis=axis)


def _rounds(df: pd.DataFrame, names: Sequence[str], kw: dict[str, Any]) -> list[Sample]:
    keys = {k: v for k, v in kw.items() if k in ("variant_col", "value", "run_col")}
    samples = [stats.sample(df, n, **keys) for n in names]
    if not all(samples[0].pairs_with(s) for s in samples[1:]):
        raise ValueError(
            f"proxy_corrected: {list(names)} must be measured in the same interleaved rounds"
        )
    return samples


def _bias(a: np.ndarray, b: np.ndarray, c: np.ndarray, axis: int = -1) -> np.ndarray:
    return _median(c - a, axis)


def _saved_raw(a: np.ndarray, b: np.ndarray, c: np.ndarray, axis: int = -1) -> np.ndarray:
    return _median(a - b, axis)


def _saved(a: np.ndarray, b: np.ndarray, c: np.ndarray, axis: int = -1) -> np.ndarray:
    return _median(a - b, axis) - _median(c - a, axis)


def _before(a: np.ndarray, c: np.ndarray, axis: int) -> np.ndarray:
    return _median(a, axis) - _median(c - a, axis)  # the proxy without its extra iovec


def _share_raw(a: np.ndarray, b: np.ndarray, c: np.ndarray, axis: int = -1) -> np.ndarray:
    return 100 * _median(a - b, axis) / _median(a, axis)


def _share(a: np.ndarray, b: np.ndarray, c: np.ndarray, axis: int = -1) -> np.ndarray:
    return 100 * _saved(a, b, c, axis) / _before(a, c, axis)


def _ratio_raw(a: np.ndarray, b: np.ndarray, c: np.ndarray, axis: int = -1) -> np.ndarray:
    return _median(a / b, axis)


def _ratio(a: np.ndarray, b: np.ndarray, c: np.ndarray, axis: int = -1) -> np.ndarray:
    return _before(a, c, axis) / (_before(a, c, axis) - _saved(a, b, c, axis))


def proxy_corrected(
    df: pd.DataFrame, names: Sequence[str] = R2_PROXY, **kw: Any
) -> dict[str, Estimate]:
    """R2's live estimate raw and corrected for the proxy's extra empty iovec.

    ``names`` = (proxy, ubuf, proxy2: the proxy with one empty iovec more), measured
    in the same interleaved rounds.  Every figure is a statistic of paired medians
    over rounds, and the three are resampled together, round by round (runs
    first, as :func:`labkit.measure.stats.difference`), so the correction's
    uncertainty is in each interval:

    * ``"bias_ns"``: median(proxy2 - proxy), the cost of one more empty iovec;
    * ``"saved_ns_raw"``: median(proxy - ubuf); ``"saved_ns"``: that minus the bias;
    * ``"saved_share_raw"`` / ``"saved_share"`` (percent): the ns saved over the
      proxy's median, and the corrected ns saved over (proxy's median - bias);
    * ``"ratio_raw"`` / ``"ratio"``: median(proxy / ubuf), and (proxy - bias) /
      (proxy - bias - corrected saving).

    The bias is taken off as a difference of two paired medians, not as a median
    of ``2 proxy - proxy2 - ubuf`` round by round: a loaded machine's one-sided
    spikes skew that sum (seen: -8.6 ns against a +1.8 ns difference of medians).

    Raises:
        KeyError: if a variant has no rows.
        ValueError: if the three were not measured in the same rounds.
    """
    samples = _rounds(df, names, kw)
    opts = {k: kw[k] for k in ("confidence", "n_resamples", "seed") if k in kw}
    a, b, c = names
    what = {
        "bias_ns": (_bias, f"median over rounds of {c} - {a}"),
        "saved_ns_raw": (_saved_raw, f"median over rounds of {a} - {b}"),
        "saved_ns": (_saved, f"median({a} - {b}) - median({c} - {a}) (bias removed)"),
        "saved_share_raw": (_share_raw, f"time saved, 100 median({a} - {b}) / median({a})"),
        "saved_share": (_share, "time saved with the proxy's extra iovec removed (%)"),
        "ratio_raw": (_ratio_raw, f"median over rounds of {a} / {b}"),
        "ratio": (_ratio, f"{a} / {b} with the proxy's extra iovec removed"),
    }
    return {k: bootstrap(samples, f, quantity=q, **opts) for k, (f, q) in what.items()}


__all__ = [
    "AA",
    "aa",
    "aa_by_run",
    "proxy_corrected",
    "tally",
]
