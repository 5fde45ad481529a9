"""labkit's one statistics module: figures with 95% intervals over batches, runs, sessions
and reproductions.

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
interval includes the spread between processes.

**The resampling engine.**  :func:`bootstrap` computes an :class:`Estimate` from
:class:`Sample` s and a vectorised statistic, over batches (scipy) or over runs:

* **One run**: :func:`scipy.stats.bootstrap` over the batches of each sample
  (resampled independently), BCa where it can be computed, the percentile
  interval where it cannot (the jackknife behind BCa is degenerate, e.g. many
  tied medians); :attr:`Estimate.method` says which.
* **Several runs**: the figure is the mean over runs of the statistic inside
  each run (every run weighs the same; a ratio is taken inside a run, where
  interleaving cancels that run's own speed, not between the pooled batches
  of fast and slow runs), and its interval comes from a cluster bootstrap:
  resample the runs with replacement, each run's batches kept as they were
  measured, compute the statistic inside each chosen run and average; the
  interval is the percentile one, widened for the few runs it rests on
  (:func:`small_sample_factor`: with 3 runs the plain percentile interval
  covers about 75% instead of 95%).

  **The batches of a run are not drawn again** (Davison & Hinkley, *Bootstrap
  Methods and their Application*, 1997, section 3.8; Ren et al., "Nonparametric
  bootstrapping for hierarchical data", J. Appl. Stat. 37(9), 2010): the spread
  of the per-run figures already holds the noise of the batches inside each
  run, so drawing batches as well counts that noise twice.  Simulated (runs of
  24 rounds, the figure the median of a run, 200 seeded tables each), with
  drawing batches too the 95% interval covered the truth 99.5-100% of the time
  when runs differ only by their batches' noise, and was 1.4x (48 runs) to 1.8x
  (3 runs) wider than needed; over runs alone it covered 94-96%.  Only a block
  of a single run has its batches drawn: they are then all there is.
  This is written with :class:`numpy.random.Generator` rather than scipy:
  ``scipy.stats.bootstrap`` resamples the observations of each sample
  independently, at one level, and has no notion of clusters; a nested
  resample would need randomness inside the statistic, which breaks the
  jackknife BCa relies on and scipy's vectorised calls.  BCa's acceleration
  would need a jackknife over runs, unreliable with three to five runs, so
  the interval over runs is the percentile one.  Samples of the same
  ``block`` (taken from the same table) share the run draw: a slow process
  slows every variant it measured, and interleaving is what lets a ratio
  cancel that; samples of another block (a separately measured F) are drawn
  on their own.

**Rounds are resampled, not batches one by one.**  The variants of an
experiment are interleaved: round k measures every variant once, one right
after the other.  When the samples of a block carry the same rounds (the
``repeat`` of each batch, :attr:`Sample.rounds`), a resample draws rounds, and
every sample takes its batch of each drawn round (scipy's ``paired=True`` with
one run; with several, the same draw for every sample in a block of one run and in
the within-run spread below).  A shared machine
changes speed within a run (a VM measured here ran 1.5x slower for half of a
run): a round is slow for every variant at once, so drawn as a whole it
leaves a ratio alone, while independent draws would pair one variant's slow
batches with another's fast ones and widen the interval for nothing.

Spreads, in the unit of the estimate:

* ``within_run``: the bootstrap standard error of the statistic inside one
  run (the median over runs; with several runs, from the same resampler
  restricted to each run's batches): how precisely one process pins the
  figure down;
* ``between_run``: 1.4826 x the median absolute deviation of the per-run
  estimates (a robust standard deviation): how far independent processes
  disagree; NaN with one run.  Well above ``within_run``, it says an interval
  over the batches of one process would understate the uncertainty.

One seeding rule: every interval draws from ``numpy.random.default_rng(seed)``
with ``seed = DEFAULT_SEED`` (20190729, the date of R1's fix mail) unless a seed
is given, so the same data always give the same interval; one default number
of resamples, :data:`DEFAULT_N_RESAMPLES`.  The interval is widened to contain
the point estimate where a BCa interval would exclude it.

**The session as the unit of replication.** Runs of one reproduction share the
host's speed state (two reproductions of R2's ns saved 30 minutes apart, each
interval covering its own session and missing the other: ``docs/history.md``). With
a persistent per-session offset an interval over the runs of one session cannot
cover the long-run mean however many runs it has (simulated with :func:`bootstrap`:
19% of the time at 3 runs, 0% at 6 or more; ``tests/test_sessions.py``).

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
estimate is returned.

**The spread between reproductions.** One reproduction's interval (above: a t
interval with S - 1 degrees of freedom over S sessions run minutes apart) covers the
noise between those sessions only.  Whether a verdict replicates is decided by the
spread between reproductions on one host (other days, other boots of the guest,
other code of the same estimator). :func:`between_reproductions` pools the figures
of k reproductions of one quantity, each with its own standard error, through the
one random-effects pool (:func:`random_effects`, the DerSimonian-Laird model)::

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
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as _scipy_stats

DEFAULT_CONFIDENCE = 0.95
DEFAULT_N_RESAMPLES = 2000
DEFAULT_SEED = 20190729

_MAD_TO_SD = 1.4826  # MAD of a normal sample x this = its standard deviation

Statistic = Callable[..., Any]


@dataclass(frozen=True)
class Estimate:
    """A figure with its interval, its method, its sample sizes and its spreads."""

    quantity: str  #: what was estimated, in words
    estimate: float
    ci_low: float
    ci_high: float
    confidence: float
    method: str  #: how the interval was computed
    n_runs: int  #: independent runs (worker processes)
    n_batches: int  #: batches per sample (the smallest sample's, if they differ)
    within_run: float  #: bootstrap standard error inside one run (median over runs)
    between_run: float  #: robust SD of the per-run estimates (NaN with one run)
    #: sessions behind the interval (:func:`pool`; 1: one session)
    n_sessions: int = 1
    #: SD of the per-session figures (NaN with one session)
    between_session: float = float("nan")

    @staticmethod
    def count(value: float, quantity: str, method: str) -> Estimate:
        """An exact count (instructions, calls) as an Estimate: no sampling, so its interval
        is the count itself, one run, no spread."""
        v = float(value)
        return Estimate(
            quantity=quantity,
            estimate=v,
            ci_low=v,
            ci_high=v,
            confidence=0.95,
            method=method,
            n_runs=1,
            n_batches=1,
            within_run=0.0,
            between_run=math.nan,
        )

    @property
    def noise(self) -> float:
        """The machine's noise for this figure: the between-session spread when there are
        several sessions, else the between-run spread when there are several runs, else the
        within-run one."""
        if self.n_sessions >= 2 and math.isfinite(self.between_session):
            return self.between_session
        if self.n_runs >= 2 and math.isfinite(self.between_run):
            return self.between_run
        return self.within_run

    def affine(self, scale: float, offset: float = 0.0, quantity: str | None = None) -> Estimate:
        """``scale * x + offset`` applied to the estimate and its interval (a negative
        scale swaps the bounds); spreads scale by ``|scale|``."""
        lo, hi = scale * self.ci_low + offset, scale * self.ci_high + offset
        if scale < 0:
            lo, hi = hi, lo
        return replace(
            self,
            quantity=quantity or self.quantity,
            estimate=scale * self.estimate + offset,
            ci_low=lo,
            ci_high=hi,
            within_run=abs(scale) * self.within_run,
            between_run=abs(scale) * self.between_run,
            between_session=abs(scale) * self.between_session,
        )

    def brief(self, fmt: str = "{:.4g}", scale: float = 1.0) -> str:
        """``"estimate [low, high]"`` with ``fmt`` (e.g. ``"{:+.1f}"``), times ``scale``."""
        est, lo, hi = (scale * v for v in (self.estimate, self.ci_low, self.ci_high))
        if scale < 0:
            lo, hi = hi, lo
        if math.isnan(lo) or math.isnan(hi):
            return f"{fmt.format(est)} [no interval]"
        return f"{fmt.format(est)} [{fmt.format(lo)}, {fmt.format(hi)}]"

    def as_dict(self) -> dict[str, Any]:
        """The fields as a plain dict (for DataFrames and JSON)."""
        return asdict(self)

    def __str__(self) -> str:
        pct = f"{100 * self.confidence:g}%"
        runs = f"{self.n_runs} run{'s' if self.n_runs != 1 else ''}"
        if self.n_sessions > 1:
            runs += f" in {self.n_sessions} sessions"
        return (
            f"{self.estimate:.4g} [{pct} CI {self.ci_low:.4g}, {self.ci_high:.4g}] "
            f"({runs}, {self.n_batches} batches; {self.method})"
        )


@dataclass(frozen=True)
class Sample:
    """The batches of one variant: values, the run each came from, and its round.

    Samples with the same ``block`` share the run draw of the bootstrap over
    runs (they were measured in the same processes); those whose
    ``(runs, rounds)`` are the same, in the same order, also share the draw of
    rounds (they were interleaved round by round).  ``rounds`` None: no
    pairing, each sample's batches are drawn on their own.
    """

    values: np.ndarray
    runs: np.ndarray
    block: int = 0
    rounds: np.ndarray | None = None

    @staticmethod
    def of(values: Any, runs: Any = None, block: int = 0, rounds: Any = None) -> Sample:
        """A sample from array-likes; ``runs`` None means one run, ``rounds`` None no pairing."""
        v = np.asarray(values, dtype=float).ravel()
        r = np.zeros(v.size, dtype=np.int64) if runs is None else np.asarray(runs).ravel()
        if r.size != v.size:
            raise ValueError(f"Sample: {v.size} values but {r.size} run labels")
        k = None if rounds is None else np.asarray(rounds).ravel()
        if k is not None and k.size != v.size:
            raise ValueError(f"Sample: {v.size} values but {k.size} round labels")
        if v.size == 0:
            raise ValueError("Sample: no values")
        if not np.isfinite(v).all():
            raise ValueError("Sample: values must be finite")
        return Sample(v, r, int(block), k)

    def pairs_with(self, other: Sample) -> bool:
        """True if ``other`` was measured in the same rounds of the same runs, in order."""
        return (
            self.block == other.block
            and self.rounds is not None
            and other.rounds is not None
            and np.array_equal(self.runs, other.runs)
            and np.array_equal(self.rounds, other.rounds)
        )


def _paired(samples: Sequence[Sample]) -> bool:
    """True if every sample pairs with the first (their rounds can be drawn as one)."""
    return len(samples) > 1 and all(samples[0].pairs_with(s) for s in samples[1:])


def _by_rounds(samples: Sequence[Sample]) -> bool:
    """True if a resample draws whole rounds: one sample with rounds, or samples that pair."""
    return samples[0].rounds is not None and (len(samples) == 1 or _paired(samples))


def _check(confidence: float, n_resamples: int) -> None:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if int(n_resamples) < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")


def _robust_sd(x: np.ndarray) -> float:
    x = x[np.isfinite(x)]
    if x.size < 2:
        return float("nan")
    return float(_MAD_TO_SD * np.median(np.abs(x - np.median(x))))


def _one_level(
    arrays: Sequence[np.ndarray],
    statistic: Statistic,
    confidence: float,
    n_resamples: int,
    seed: int,
    methods: Sequence[str] = ("BCa", "percentile"),
    paired: bool = False,
    over: str = "batches",
) -> tuple[float, float, float, str]:
    """(low, high, standard error, method) from scipy: over independent samples, or over
    rounds when ``paired`` (the samples' batches of one round are drawn together); ``over``
    names what was drawn in the method."""
    for method in methods:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # degenerate BCa: fall back, never print
            res = _scipy_stats.bootstrap(
                tuple(arrays),
                statistic,
                n_resamples=int(n_resamples),
                confidence_level=confidence,
                method=method,
                vectorized=True,
                paired=paired,
                rng=np.random.default_rng(seed),
            )
        lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
        if math.isfinite(lo) and math.isfinite(hi):
            return lo, hi, float(res.standard_error), f"{method} bootstrap over {over} (scipy)"
    return float("nan"), float("nan"), float("nan"), "no interval (bootstrap degenerate)"


def small_sample_factor(n_runs: int, confidence: float = DEFAULT_CONFIDENCE) -> float:
    """How much wider a percentile interval over ``n_runs`` runs is made: the expanded
    percentile interval, ``t(n-1) / z * sqrt(n / (n - 1))``, applied to the
    interval's distances from the estimate (their logarithms for a positive figure).

    A bootstrap over n runs treats those n as the whole population, so its
    percentile interval is too narrow when n is small: simulated over normal
    data, the 95% interval of a mean covers the truth 75% of the time with 3
    runs, 86% with 6, 90% with 12, 94% with 48; widened by this factor (2.69,
    1.44, 1.17, 1.04), 95%, 94%, 94%, 95% (Hesterberg, "What teachers should
    know about the bootstrap", The American Statistician 69(4), 2015: the
    expanded percentile interval).  1 for a single run (the batches are then
    the sample, and scipy's BCa interval is used).
    """
    n = int(n_runs)
    if n < 2:
        return 1.0
    q = 1 - (1 - confidence) / 2
    return float(_scipy_stats.t.ppf(q, n - 1) / _scipy_stats.norm.ppf(q) * math.sqrt(n / (n - 1)))


def _run_groups(samples: Sequence[Sample]) -> dict[int, list[Any]]:
    """Run labels of each block; every sample of a block must have every label."""
    labels: dict[int, list[Any]] = {}
    for s in samples:
        labels.setdefault(s.block, [])
        labels[s.block] = sorted(set(labels[s.block]) | set(s.runs.tolist()))
    for s in samples:
        missing = set(labels[s.block]) - set(s.runs.tolist())
        if missing:
            raise ValueError(
                f"a sample has no batches in run(s) {sorted(missing)} of its table: every "
                "variant must be measured in every run"
            )
    return labels


def _rounds_in(s: Sample, run: Any) -> np.ndarray | None:
    """The rounds of ``s``'s batches in ``run`` (all of them if ``s`` has no such run)."""
    if s.rounds is None:
        return None
    return s.rounds[s.runs == run] if (s.runs == run).any() else s.rounds


def _main_block(labels: dict[int, list[Any]]) -> int:
    """The block whose runs the estimate is averaged over: the one with the most runs."""
    return min(labels, key=lambda b: (-len(labels[b]), b))


def _draws_batches(runs: Sequence[Any]) -> bool:
    """Whether a resample draws batches inside the runs of a block: only for a block of
    one run (its batches are then all there is to draw; see the module)."""
    return len(runs) < 2


def _over_runs(
    samples: Sequence[Sample],
    labels: dict[int, list[Any]],
    statistic: Statistic,
    n_resamples: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """The mean of the per-run statistic over ``n_resamples`` resamples of the runs.

    Each resample draws as many runs as the main block has, with replacement
    (one draw per block: samples of a block share it), each drawn run with its
    batches as measured; in a block of one run, the batches are drawn instead,
    as many as there are, with replacement (one draw for the samples that pair
    with each other, :meth:`Sample.pairs_with`: their rounds are drawn whole).
    The statistic is computed inside each drawn run and averaged over them.
    """
    slots = len(labels[_main_block(labels)])
    draws = {b: rng.integers(0, len(lab), (n_resamples, slots)) for b, lab in labels.items()}
    resampled = []
    unit_draws: list[tuple[Sample, np.ndarray]] = []  # the batch draw of each pairing group
    for s in samples:
        groups = [s.values[s.runs == r] for r in labels[s.block]]
        width = max(g.size for g in groups)
        table = np.full((len(groups), width), np.nan)
        counts = np.array([g.size for g in groups])
        for k, g in enumerate(groups):
            table[k, : g.size] = g
        chosen = draws[s.block]  # (B, slots): which run fills each slot
        n = counts[chosen][:, :, None]  # batches in each chosen run
        if not _draws_batches(labels[s.block]):
            vals = table[chosen]  # the chosen runs as they were measured
            resampled.append(vals)
            continue
        unit = next((u for first, u in unit_draws if first.pairs_with(s)), None)
        if unit is None:
            unit = rng.random((n_resamples, slots, width))
            unit_draws.append((s, unit))
        pos = np.floor(unit * n).astype(np.int64)
        vals = table[chosen[:, :, None], pos]
        vals[np.arange(width)[None, None, :] >= n] = np.nan  # pad short runs
        resampled.append(vals)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        per_run = np.asarray(statistic(*resampled, axis=-1), dtype=float)  # (B, slots)
        return np.nanmean(per_run, axis=-1)


def bootstrap(
    samples: Sequence[Sample],
    statistic: Statistic,
    *,
    quantity: str,
    confidence: float = DEFAULT_CONFIDENCE,
    n_resamples: int = DEFAULT_N_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> Estimate:
    """The estimate of ``statistic`` over ``samples``, with its interval and spreads.

    With one run the estimate is the statistic of all batches; with several it
    is the mean over runs of the statistic inside each run (every run weighs the
    same, and a ratio is taken inside a run, where interleaving cancels that
    run's own speed).  ``statistic(*arrays, axis=-1)`` must be vectorised along
    its last axis (leading axes are resamples and runs) and ignore NaN (use
    :func:`nan_median`): runs with fewer batches than others are padded with NaN.

    Raises:
        ValueError: for no samples, a bad confidence or resample count, or a
            sample missing a run its table has.
    """
    _check(confidence, n_resamples)
    if not samples:
        raise ValueError("bootstrap: no samples")
    labels = _run_groups(samples)
    main = _main_block(labels)
    n_runs = len(labels[main])
    n_batches = min(s.values.size for s in samples)

    def per_run(r: Any) -> list[np.ndarray]:
        return [s.values[s.runs == r] if r in labels[s.block] else s.values for s in samples]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run_est = np.array([float(statistic(*per_run(r), axis=-1)) for r in labels[main]])
        point = float(np.mean(run_est))
    between = _robust_sd(run_est) if n_runs >= 2 else float("nan")
    if n_runs < 2 and n_batches < 2:
        lo = hi = se = float("nan")
        method = "no interval: a sample has a single batch"
    elif all(np.ptp(s.values) == 0 for s in samples):
        lo = hi = point
        se = 0.0
        method = "no spread (every batch equal): the interval is the point"
    elif n_runs < 2:
        lo, hi, se, method = _one_level(
            [s.values for s in samples],
            statistic,
            confidence,
            n_resamples,
            seed,
            paired=_paired(samples),
            over="rounds" if _by_rounds(samples) else "batches",
        )
    else:
        rng = np.random.default_rng(seed)
        if len(labels) == 1:
            # one block, its runs kept whole: a run's statistic is the same in every
            # resample, so the draws pick among the per-run figures (the draw _over_runs
            # would make, without its resamples x runs x batches table)
            draw = rng.integers(0, n_runs, (int(n_resamples), n_runs))
            boots = np.nanmean(run_est[draw], axis=-1)
        else:
            boots = _over_runs(samples, labels, statistic, int(n_resamples), rng)
        boots = boots[np.isfinite(boots)]
        alpha = (1 - confidence) / 2
        lo, hi = (float(q) for q in np.quantile(boots, [alpha, 1 - alpha]))
        k = small_sample_factor(n_runs, confidence)
        if point > 0 and boots.size and boots.min() > 0:
            # a positive figure (a time, a ratio) is widened on the log scale: it stays > 0
            lo, hi = point * (lo / point) ** k, point * (hi / point) ** k
        else:
            lo, hi = point - k * (point - lo), point + k * (hi - point)
        method = (
            f"percentile bootstrap over runs (each run's batches kept whole), widened "
            f"{k:.2f}x for {n_runs} runs; the mean of the per-run figures (numpy)"
        )
        ses = []
        for r in labels[main]:
            arrays = per_run(r)
            if any(np.ptp(a) > 0 for a in arrays):
                # the same resampler, inside this run only: its batches, no run draw
                one = [
                    Sample(a, np.zeros(a.size, dtype=np.int64), s.block, _rounds_in(s, r))
                    for a, s in zip(arrays, samples, strict=True)
                ]
                inner = _over_runs(one, _run_groups(one), statistic, int(n_resamples), rng)
                ses.append(float(np.nanstd(inner)))
        se = float(np.median(ses)) if ses else 0.0
    return Estimate(
        quantity=quantity,
        estimate=point,
        ci_low=min(lo, point) if math.isfinite(lo) else lo,
        ci_high=max(hi, point) if math.isfinite(hi) else hi,
        confidence=confidence,
        method=method,
        n_runs=n_runs,
        n_batches=n_batches,
        within_run=se,
        between_run=between,
    )


#: The column naming the independent run (worker process) of each batch.
RUN_COLUMN = "run"
#: The column naming the interleaved round of each batch (runner.measure's ``repeat``).
ROUND_COLUMN = "repeat"

# ---- statistics (vectorised along the last axis, NaN-aware) --------------------------


def nan_median(a: np.ndarray, axis: int = -1) -> np.ndarray:
    """The median along ``axis``, ignoring NaN: the median a :func:`bootstrap` statistic
    takes (NaN only pads runs with fewer batches; without any, ``np.median`` is faster)."""
    return np.nanmedian(a, axis=axis) if np.isnan(a).any() else np.median(a, axis=axis)


def _ratio(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    return nan_median(a, axis) / nan_median(b, axis)


def _difference(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    return nan_median(a, axis) - nan_median(b, axis)


def _composed(f: np.ndarray, a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    mf = nan_median(f, axis)
    return (mf + nan_median(a, axis)) / (mf + nan_median(b, axis))


def _slope_of(x: np.ndarray) -> Statistic:
    xc = x - x.mean()
    denom = float(xc @ xc)

    def slope(*groups: np.ndarray, axis: int = -1) -> np.ndarray:
        meds = np.stack([nan_median(g, axis) for g in groups], axis=-1)
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
        [s], nan_median, quantity=f"median{f' of {variant}' if variant else ''}", **_opts(kw)
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
            nan_median,
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
            [rounds], nan_median, quantity=f"median over rounds of {slow} - {fast}", **_opts(kw)
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
    return sum(nan_median(g, axis) for g in groups)


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


# ---- over sessions and reproductions: the session as the unit of replication ----------

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


# ---- the spread between reproductions ------------------------------------------------


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
        ValueError: as :func:`random_effects`, and for fewer than
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


__all__ = [
    "DEFAULT_CONFIDENCE",
    "DEFAULT_SEED",
    "SESSION_COLUMN",
    "Estimate",
    "Pooled",
    "Replication",
    "between_reproductions",
    "cluster",
    "over_sessions",
    "pool",
    "random_effects",
    "se_of_interval",
    "bootstrap",
    "bootstrap_median",
    "composed_ratio",
    "difference",
    "gain",
    "median",
    "median_ci",
    "nan_median",
    "ratio",
    "ratio_ci",
    "sample",
    "slope",
    "sum_of_medians",
    "to_frame",
    "welch_difference",
]
