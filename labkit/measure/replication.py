"""The spread between reproductions: a random-effects model over stored reproductions.

One reproduction's interval (:mod:`labkit.measure.sessions`: a t interval with
S - 1 degrees of freedom over S sessions run minutes apart) covers the noise
between those sessions only.  Whether a verdict replicates is decided by the
spread between reproductions on one host (other days, other boots of the
guest, other code of the same estimator).  :func:`random_effects` pools the
figures of k reproductions of one quantity, each with its own standard error,
through the one random-effects pool (:func:`labkit.measure.sessions.random_effects`,
the DerSimonian-Laird model)::

    y_i = mu + u_i + e_i,   u_i ~ N(0, tau^2),   e_i ~ N(0, se_i^2)

* ``tau``: the SD between reproductions beyond their own intervals (method of
  moments from Cochran's Q, truncated at 0);
* the interval of ``mu``: Hartung-Knapp-Sidik-Jonkman (a t with k - 1 df on
  the weighted residuals, never narrower than DerSimonian-Laird's own: with a
  handful of reproductions the normal interval is too narrow);
* the **prediction interval**: where the next reproduction's figure is expected
  (Higgins, Thompson and Spiegelhalter 2009: ``mu +- t(k - 2) sqrt(tau^2 +
  se(mu)^2)``); it is the interval to set beside a band when asking whether a
  verdict will hold in the next reproduction.

:func:`se_of_interval` recovers a reproduction's standard error from its stored
interval and degrees of freedom.  Only figures of one estimator may be pooled
(the caller's duty: same claim, same correction, same confidence).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from labkit.measure.sessions import Pooled, random_effects


@dataclass(frozen=True)
class Replication:
    """The pooled figure of k reproductions, and where the next one is expected."""

    pooled: Pooled  #: the random-effects pool (its tau: the SD between reproductions)
    pred_low: float  #: the prediction interval of the next reproduction (NaN for k < 3)
    pred_high: float

    def sentence(self, unit: str = "") -> str:
        """``"4.8 [3.6, 6.0] ns over 5 reproductions; between them SD 0.51 ns; the next
        one expected in [2.5, 7.1] ns"``."""
        p, u = self.pooled, f" {unit}" if unit and unit not in ("%", "x") else unit
        pct = f"{100 * p.confidence:g}%"
        nxt = (
            f"; the next reproduction expected in [{self.pred_low:.3g}, {self.pred_high:.3g}]{u}"
            f" ({pct} prediction interval)"
            if math.isfinite(self.pred_low)
            else ""
        )
        return (
            f"{p.estimate:.3g} [{p.ci_low:.3g}, {p.ci_high:.3g}]{u} over {p.k} reproductions "
            f"({pct}, {p.method}); SD between reproductions beyond their own intervals "
            f"{p.tau:.3g}{u}{nxt}"
        )


def se_of_interval(
    ci_low: float, ci_high: float, df: int | None, confidence: float = 0.95
) -> float:
    """The standard error behind a symmetric interval: half its width over t(df) (over the
    normal quantile for ``df`` None).  A 3-session interval is a t with 2 df: its SE is
    half the width over 4.30, not over 1.96.

    Raises:
        ValueError: for ``ci_low > ci_high`` or ``df`` < 1.
    """
    from scipy.stats import norm, t  # here: scipy's import is slow, only this needs it

    if not ci_high >= ci_low:
        raise ValueError(f"se_of_interval: need ci_low <= ci_high, got [{ci_low}, {ci_high}]")
    if df is not None and df < 1:
        raise ValueError(f"se_of_interval: df must be >= 1, got {df}")
    q = (1 + confidence) / 2
    crit = norm.ppf(q) if df is None else t.ppf(q, df)
    return (ci_high - ci_low) / 2 / float(crit)


def between_reproductions(
    estimates: Sequence[float], ses: Sequence[float], confidence: float = 0.95
) -> Replication:
    """The random-effects pool of k reproductions' figures with their standard errors,
    and the prediction interval of the next reproduction (Higgins et al. 2009:
    ``mu +- t(k - 2) sqrt(tau^2 + se(mu)^2)``; NaN for fewer than 3).

    Raises:
        ValueError: as :func:`labkit.measure.sessions.random_effects`, and for fewer than
            2 reproductions.
    """
    from scipy.stats import t  # here: scipy's import is slow, only this needs it

    if len(estimates) < 2:
        raise ValueError(f"between_reproductions: need 2+ reproductions, got {len(estimates)}")
    p = random_effects(estimates, ses, confidence=confidence, what="reproductions")
    k = p.k
    if k < 3:
        return Replication(p, math.nan, math.nan)
    crit = float(t.ppf(1 - (1 - confidence) / 2, k - 1))
    se_mu = (p.ci_high - p.ci_low) / 2 / crit
    half = float(t.ppf(1 - (1 - confidence) / 2, k - 2)) * math.sqrt(p.tau**2 + se_mu**2)
    return Replication(p, p.estimate - half, p.estimate + half)


__all__ = ["Replication", "between_reproductions", "se_of_interval"]
