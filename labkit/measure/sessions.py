"""The session as the unit of replication: one interval over sessions, runs within them.

Runs of one reproduction share the host's speed state (two reproductions of R2's
ns saved 30 minutes apart, each interval covering its own session and missing the
other: ``docs/history.md``).  With a persistent per-session offset an interval over
the runs of one session cannot cover the long-run mean however many runs it has (simulated with
:func:`labkit.measure.stats.bootstrap`: 19% of the time at 3 runs, 0% at
6 or more; ``tests/test_sessions.py``).

:func:`random_effects` pools one figure per session (each with its own interval
over runs) into one interval with the session as the top level: the
DerSimonian-Laird estimate of the between-session variance tau^2, the
inverse-variance weighted mean with weights ``1 / (se_i^2 + tau^2)``, and the
Hartung-Knapp-Sidik-Jonkman interval (t with k - 1 degrees of freedom on the
weighted residual variance, never narrower than the DerSimonian-Laird one):
the interval meta-analyses use for few studies (IntHout, Ioannidis & Borm,
"The Hartung-Knapp-Sidik-Jonkman method for random effects meta-analysis is
straightforward and considerably outperforms the standard DerSimonian-Laird
method", BMC Med. Res. Methodol. 14:25, 2014).  The same pooling serves hosts
in the gallery (:mod:`labkit.report.gallery`), where each host is a "study".

:func:`pool` gives sessions :func:`cluster` instead: the sessions' figures with equal
weights, since a session's own interval rests on too few runs to weight it by.

:func:`over_sessions` applies it to a tidy table with a ``session`` column:
the figure of each session from the caller's statistic (an interval over that
session's runs), then the pooled one.  With one session the session's own
estimate is returned, and :func:`scope_text` says "one session".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from scipy import stats as _scipy_stats

from labkit.measure.stats import DEFAULT_CONFIDENCE, Estimate

#: The column naming the session of each batch (a repetition of the measuring part of a
#: reproduction, after a pause).
SESSION_COLUMN = "session"


@dataclass(frozen=True)
class Pooled:
    """The outcome of :func:`random_effects`."""

    estimate: float
    ci_low: float
    ci_high: float
    confidence: float
    k: int  #: how many groups (sessions, hosts) were pooled
    tau: float  #: estimated SD between groups beyond their own noise (DerSimonian-Laird)
    spread: float  #: SD of the group figures as measured (NaN for one group)
    i2: float  #: share of the groups' variation not explained by their own noise (0..1)
    method: str


def se_of(e: Any) -> float:
    """The standard error implied by an estimate's interval: half its width over z."""
    z = _scipy_stats.norm.ppf(1 - (1 - e.confidence) / 2)
    return (float(e.ci_high) - float(e.ci_low)) / (2 * z)


def random_effects(
    estimates: Sequence[float],
    ses: Sequence[float],
    *,
    confidence: float = DEFAULT_CONFIDENCE,
    what: str = "sessions",
) -> Pooled:
    """The random-effects pooled figure of ``estimates`` (one per group) with standard
    errors ``ses``, and its Hartung-Knapp-Sidik-Jonkman interval (see the module).

    One group gives its own figure and a normal interval from its SE.  Groups whose
    SEs are all 0 (exact counts) are pooled with equal weights.

    Raises:
        ValueError: for no groups, lengths that differ, a non-finite figure or a
            negative or non-finite SE, or a confidence outside (0, 1).
    """
    y = np.asarray(estimates, dtype=float)
    s = np.asarray(ses, dtype=float)
    if y.size == 0 or y.size != s.size:
        raise ValueError(f"random_effects: need one SE per figure, got {y.size} and {s.size}")
    if not (np.isfinite(y).all() and np.isfinite(s).all() and (s >= 0).all()):
        raise ValueError("random_effects: figures must be finite, SEs finite and >= 0")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    k = int(y.size)
    z = float(_scipy_stats.norm.ppf(1 - (1 - confidence) / 2))
    if k == 1:
        m, se = float(y[0]), float(s[0])
        return Pooled(
            m, m - z * se, m + z * se, confidence, 1, math.nan, math.nan, math.nan,
            f"one of {what}: its own interval (no spread between {what} measured)",
        )  # fmt: skip
    t = float(_scipy_stats.t.ppf(1 - (1 - confidence) / 2, k - 1))
    spread = float(np.std(y, ddof=1))
    if (s == 0).all():
        # exact figures (counts): all their spread is between the groups
        mu, se, tau2, i2 = float(y.mean()), spread / math.sqrt(k), spread**2, 1.0
    else:
        v = np.maximum(s**2, 1e-12 * float((s[s > 0] ** 2).min()))
        w = 1 / v
        ybar = float(w @ y / w.sum())
        q = float(w @ (y - ybar) ** 2)
        c = float(w.sum() - (w**2).sum() / w.sum())
        tau2 = max(0.0, (q - (k - 1)) / c) if c > 0 else 0.0
        i2 = max(0.0, (q - (k - 1)) / q) if q > 0 else 0.0
        ws = 1 / (v + tau2)
        mu = float(ws @ y / ws.sum())
        hk = float(ws @ (y - mu) ** 2) / (k - 1)
        se = math.sqrt(max(hk, 1.0) / ws.sum())  # never narrower than DerSimonian-Laird
    return Pooled(
        mu,
        mu - t * se,
        mu + t * se,
        confidence,
        k,
        math.sqrt(tau2),
        spread,
        i2,
        f"random effects over {k} {what} (DerSimonian-Laird tau, Hartung-Knapp-Sidik-"
        f"Jonkman interval, t with {k - 1} df)",
    )


def cluster(
    estimates: Sequence[float],
    *,
    confidence: float = DEFAULT_CONFIDENCE,
    what: str = "sessions",
) -> Pooled:
    """The equal-weight pooled figure of ``estimates`` (one per group): their mean, and
    the t interval with k - 1 degrees of freedom on their SD (the group figures are the
    sample; the groups' own intervals are not used).

    This is the interval :func:`pool` gives sessions: a session's interval rests on a
    few runs (4 in a full reproduction of 3 sessions), too few for its width to be a
    trustworthy weight: under inverse-variance weights one session whose few runs
    happened to agree outweighs the others (``docs/history.md`` has the case that
    showed it).

    Raises:
        ValueError: for fewer than two groups, a non-finite figure, or a confidence
            outside (0, 1).
    """
    y = np.asarray(estimates, dtype=float)
    if y.size < 2 or not np.isfinite(y).all():
        raise ValueError(f"cluster: need two or more finite figures, got {y.tolist()}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    k = int(y.size)
    t = float(_scipy_stats.t.ppf(1 - (1 - confidence) / 2, k - 1))
    mu, spread = float(y.mean()), float(np.std(y, ddof=1))
    half = t * spread / math.sqrt(k)
    return Pooled(
        mu, mu - half, mu + half, confidence, k, math.nan, spread, math.nan,
        f"mean of {k} {what}, equal weights ({100 * confidence:g}% t interval with {k - 1} df on "
        "their SD)",
    )  # fmt: skip


def pool(estimates: Sequence[Estimate], *, what: str = "sessions") -> Estimate:
    """Estimates of one figure, one per session (or host), pooled into one
    :class:`Estimate` with the session as the top level: sessions by :func:`cluster`
    (equal weights), hosts by :func:`random_effects`.

    The result's ``n_runs`` is the total over the sessions, ``between_session``
    the SD of their figures, ``between_run`` the median of theirs; one estimate
    is returned as it is (with ``n_sessions`` 1).

    Raises:
        ValueError: for no estimates, or estimates at different confidences.
    """
    if not estimates:
        raise ValueError("pool: no estimates")
    if len({e.confidence for e in estimates}) != 1:
        raise ValueError("pool: the estimates have different confidences")
    if len(estimates) == 1:
        return replace(estimates[0], n_sessions=1)
    figures = [e.estimate for e in estimates]
    if what == "sessions":
        p = cluster(figures, confidence=estimates[0].confidence, what=what)
    else:
        p = random_effects(
            figures, [se_of(e) for e in estimates], confidence=estimates[0].confidence, what=what
        )
    between_run = [e.between_run for e in estimates if math.isfinite(e.between_run)]
    return Estimate(
        quantity=estimates[0].quantity,
        estimate=p.estimate,
        ci_low=p.ci_low,
        ci_high=p.ci_high,
        confidence=p.confidence,
        method=f"{p.method}; within each: {estimates[0].method}",
        n_runs=sum(e.n_runs for e in estimates),
        n_batches=min(e.n_batches for e in estimates),
        within_run=float(np.median([e.within_run for e in estimates])),
        between_run=float(np.median(between_run)) if between_run else math.nan,
        n_sessions=p.k,
        between_session=p.spread,
    )


def over_sessions(
    df: Any,
    statistic: Callable[[Any], Estimate],
    *,
    session_col: str = SESSION_COLUMN,
) -> tuple[Estimate, list[Estimate]]:
    """``statistic`` (a tidy table -> :class:`Estimate`, e.g. ``lambda d: stats.difference(d,
    "a", "b")``) per session of ``df``, and the pooled estimate over sessions (:func:`pool`).

    A table without ``session_col`` is one session.

    Returns:
        (pooled, one estimate per session in session order).
    """
    if session_col not in df.columns:
        one = statistic(df)
        return replace(one, n_sessions=1), [one]
    per = [statistic(sub) for _, sub in df.groupby(session_col, sort=True)]
    return pool(per), per


def scope_text(
    n_sessions: int = 1, fingerprint: str | None = None, between_session: float = math.nan
) -> str:
    """Where a verdict holds: ``"on <host>, one session"`` or ``"on <host>, over 3 sessions
    (between-session SD 0.4)"`` (an estimate's ``n_sessions`` and ``between_session``)."""
    n = int(n_sessions or 1)
    host = f"on {fingerprint}, " if fingerprint else ""
    if n <= 1:
        return f"{host}one session (the interval covers runs, not sessions)"
    spread = (
        f" (between-session SD {between_session:.3g})" if math.isfinite(between_session) else ""
    )
    return f"{host}over {n} sessions{spread}"


__all__ = [
    "pool",
    "random_effects",
    "scope_text",
]
