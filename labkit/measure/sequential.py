"""Sequential stopping: add independent runs until a verdict is decided, or time runs out.

:func:`until_decided` asks a callable for independent runs (each a tidy table
of batches, one ``run`` value per worker process), analyses everything
measured so far after each addition, and stops as soon as the interval is
*decided* against the declared band (wholly inside: *reproduced*; wholly
outside: *differs*), or when the next addition would overrun the time budget
or the run cap.  A verdict that is already clear costs the minimum number of
runs; one that is close gets more, up to the budget.

Looking at the interval after every run and stopping when it looks decided
raises the chance of a wrong decision above the nominal 5%.  The driver
keeps it at or below 5% with a Bonferroni split over the looks it may take:
each look uses confidence ``1 - (1 - confidence) / looks``, where ``looks`` is
the number of analyses the run cap allows.  The estimate it returns carries
that confidence, so the interval a notebook reports is the one the decision
was made on.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from labkit.measure.stats import DEFAULT_CONFIDENCE, RUN_COLUMN, Estimate
from labkit.measure.verdicts import DIFFERS, REPRODUCED, Verdict, verdict

#: More runs: ``more(k)`` measures ``k`` new independent runs and returns their rows.
MoreRuns = Callable[[int], pd.DataFrame]
#: Analysis: ``analyse(rows, confidence)`` returns the Estimate the verdict is decided on.
Analyse = Callable[[pd.DataFrame, float], Estimate]

#: The fewest independent runs behind a verdict in full mode.  The expanded percentile
#: interval (:func:`labkit.measure.stats.small_sample_factor`) lets 3 runs of
#: normal data cover 95%, but the runs of a shared VM are not normal: the host moves
#: between speed states that last seconds to minutes, and 3 runs that fell in one state
#: see none of the others.  Over the 57 runs of R2's live A/B in ten full reproductions
#: on one host, intervals from disjoint blocks of 3 consecutive runs covered the day's
#: mean 15 (ns saved) and 16 (time saved) times in 19, from blocks of 6 every time in 7.
#: The rounds of a run are shared out (:meth:`Budget.share`), so 6 short runs cost what
#: 3 long did.
FULL_MIN_RUNS = 6


@dataclass(frozen=True, kw_only=True)
class Budget:
    """How many independent runs an experiment may take, and for how long (quick vs full).

    Additions stop at ``max_runs``, at ``budget_s`` seconds, or once they would
    take more than ``extra`` times what the first ``min_runs`` runs took.
    Keyword arguments only: ``Budget(min_runs=2, max_runs=3, budget_s=8.0)``.
    """

    min_runs: int
    max_runs: int
    budget_s: float
    extra: float | None = 0.5  #: None: only ``budget_s`` and ``max_runs`` stop additions
    doubling: bool = False  #: double the runs at each look (fewer looks) instead of adding one

    def kwargs(self) -> dict[str, Any]:
        """Keyword arguments for :func:`until_decided`."""
        return {
            "min_runs": self.min_runs,
            "max_runs": self.max_runs,
            "budget_s": self.budget_s,
            "extra": self.extra,
            "doubling": self.doubling,
        }

    def share(self, repeats: int, warmup: int = 0, least: int = 3) -> int:
        """Rounds per run so that ``min_runs`` runs, each with its own ``warmup`` rounds, cost
        about what one run of ``repeats`` + ``warmup`` rounds did (at least ``least``)."""
        total = int(repeats) + int(warmup)
        return max(int(least), math.ceil(total / self.min_runs) - int(warmup))


@dataclass
class Sequential:
    """What :func:`until_decided` measured and why it stopped."""

    data: pd.DataFrame  #: every row measured, ``run`` relabelled 0, 1, 2, ... across additions
    estimate: Estimate  #: the last analysis (at the per-look confidence)
    verdict: Verdict  #: the rule's verdict on that estimate
    n_runs: int
    seconds: float
    stopped: str  #: "decided", "time budget", "run cap"
    looks: int  #: analyses made
    confidence: float  #: the per-look confidence used
    history: list[dict[str, Any]] = field(default_factory=list)  #: one entry per look


def one_run(quick: bool) -> Budget:
    """The budget of an experiment measured once in either mode (a sweep shown as a figure,
    judged by no claim, or a count of instructions, which has no spread to look at)."""
    return Budget(min_runs=1, max_runs=1, budget_s=600.0)


def _relabel(df: pd.DataFrame, first: int, run_col: str) -> tuple[pd.DataFrame, int]:
    """``df`` with its runs renumbered from ``first``; (rows, number of runs)."""
    df = df.copy()
    if run_col not in df.columns or df.empty:
        df[run_col] = first
        return df, 1 if len(df) else 0
    labels = sorted(df[run_col].unique())
    df[run_col] = df[run_col].map({r: first + k for k, r in enumerate(labels)})
    return df, len(labels)


def _added(step: int, doubling: bool, n_runs: int, max_runs: int) -> int:
    """Runs the next addition takes: ``step`` of them, or as many as there are (doubling)."""
    return min(n_runs if doubling else step, max_runs - n_runs)


def looks_for(min_runs: int, max_runs: int, step: int = 1, *, doubling: bool = False) -> int:
    """How many analyses a run cap allows: one at ``min_runs``, one per addition after
    (``step`` runs at a time, or, ``doubling``, as many as there are: 3, 6, 12, ...)."""
    looks, n = 1, int(min_runs)
    while n < max_runs:
        n += _added(step, doubling, n, max_runs)
        looks += 1
    return looks


class Looks:
    """The looks of :func:`until_decided`, one addition at a time, for a caller that
    measures the runs itself (a scheduler interleaving several experiments' runs).

    ``want`` is how many new runs the next look needs (0 once stopped); hand them to
    :meth:`add` with the seconds this experiment's runs have taken so far (its own
    clock: time spent measuring other experiments does not count against its budget).
    :meth:`result` is the :class:`Sequential` once stopped.

    Args:
        analyse: ``analyse(rows, confidence)`` -> the Estimate to decide on.
        band: ``(low, high)``, or a :class:`labkit.measure.ledgers.Band` (its effect
            is then used for the noise guard unless ``effect`` is given).
        min_runs, max_runs, step: the first batch of runs, the cap, the increment.
        doubling: double the runs at each look instead of adding ``step``.
        budget_s: no addition is started that would, at the pace so far, end
            after this many seconds from the start.
        extra: nor one that would take the additions past ``extra`` times the
            time of the first ``min_runs`` runs (None: no such limit).
        confidence: the overall confidence, split over the looks (see the module).
        effect: the effect tested, for the noise guard.
        run_col: the column naming each row's run.

    Raises:
        ValueError: for min_runs < 1, max_runs < min_runs, step < 1 or budget_s <= 0.
    """

    def __init__(
        self,
        analyse: Analyse,
        band: tuple[float, float] | Any,
        *,
        min_runs: int = 2,
        max_runs: int = 6,
        step: int = 1,
        doubling: bool = False,
        budget_s: float = 60.0,
        extra: float | None = None,
        confidence: float = DEFAULT_CONFIDENCE,
        effect: float | None = None,
        run_col: str = RUN_COLUMN,
    ):
        if int(min_runs) < 1 or int(max_runs) < int(min_runs) or int(step) < 1:
            raise ValueError(
                f"need 1 <= min_runs <= max_runs and step >= 1, got {min_runs}, {max_runs}, {step}"
            )
        if not budget_s > 0:
            raise ValueError(f"budget_s must be > 0, got {budget_s}")
        if hasattr(band, "low") and hasattr(band, "high"):
            self.low, self.high = float(band.low), float(band.high)
            effect = band.effect if effect is None else effect
        else:
            self.low, self.high = (float(b) for b in band)
        self.analyse, self.effect, self.run_col = analyse, effect, run_col
        self.max_runs, self.step, self.doubling = int(max_runs), int(step), bool(doubling)
        self.budget_s, self.extra = float(budget_s), extra
        looks = looks_for(int(min_runs), self.max_runs, self.step, doubling=self.doubling)
        self.per_look = 1 - (1 - confidence) / looks
        self.want = int(min_runs)  #: runs the next look needs; 0 once stopped
        self.frames: list[pd.DataFrame] = []
        self.n_runs = 0
        self.history: list[dict[str, Any]] = []
        self.first_s: float | None = None
        self.stopped = ""
        self._last: tuple[pd.DataFrame, Estimate, Verdict] | None = None

    def add(self, rows: pd.DataFrame, elapsed: float) -> int:
        """Look at everything measured with ``rows`` (the ``want`` new runs) added, after
        ``elapsed`` seconds of this experiment's measuring; returns the next ``want``.

        Raises:
            ValueError: for rows holding no run, or an addition after the stop.
        """
        if not self.want:
            raise ValueError(f"Looks.add: already stopped ({self.stopped})")
        rows, got = _relabel(rows, self.n_runs, self.run_col)
        if got == 0:
            raise ValueError("until_decided: more() returned no rows")
        self.frames.append(rows)
        self.n_runs += got
        data = pd.concat(self.frames, ignore_index=True)
        est = self.analyse(data, self.per_look)
        v = verdict(
            est.estimate,
            est.ci_low,
            est.ci_high,
            self.low,
            self.high,
            noise=est.noise,
            effect=self.effect,
            confidence=self.per_look,
        )
        self._last = (data, est, v)
        self.first_s = elapsed if self.first_s is None else self.first_s
        self.history.append(
            {
                "n_runs": self.n_runs,
                "estimate": est.estimate,
                "ci_low": est.ci_low,
                "ci_high": est.ci_high,
                "verdict": v.verdict,
                "seconds": elapsed,
            }
        )
        want = _added(self.step, self.doubling, self.n_runs, self.max_runs)
        limit = self.budget_s
        if self.extra is not None:
            limit = min(limit, self.first_s * (1 + float(self.extra)))
        if v.verdict in (REPRODUCED, DIFFERS):
            self.stopped = "decided"
        elif self.n_runs >= self.max_runs:
            self.stopped = "run cap"
        elif elapsed + elapsed / self.n_runs * want > limit:
            self.stopped = "time budget"
        self.want = 0 if self.stopped else want
        return self.want

    def result(self, seconds: float) -> Sequential:
        """What was measured, once stopped; ``seconds`` the experiment's measuring time.

        Raises:
            ValueError: before the stop.
        """
        if self.want or self._last is None:
            raise ValueError("Looks.result: the looks have not stopped yet")
        data, est, v = self._last
        return Sequential(
            data=data,
            estimate=est,
            verdict=v,
            n_runs=self.n_runs,
            seconds=seconds,
            stopped=self.stopped,
            looks=len(self.history),
            confidence=self.per_look,
            history=self.history,
        )


def until_decided(
    more: MoreRuns,
    analyse: Analyse,
    band: tuple[float, float] | Any,
    *,
    clock: Callable[[], float] = time.monotonic,
    **rules: Any,
) -> Sequential:
    """Measure ``min_runs`` runs, then add ``step`` at a time until the verdict is decided.

    Args:
        more: ``more(k)`` returns the rows of ``k`` new independent runs (with a
            ``run`` column, or without one for a single run).
        analyse, band: as :class:`Looks`.
        clock: the clock the time budget is read on.
        **rules: :class:`Looks`' keyword arguments (``min_runs``, ``max_runs``,
            ``step``, ``doubling``, ``budget_s``, ``extra``, ``confidence``, ``effect``,
            ``run_col``), with its defaults.

    Returns:
        A :class:`Sequential`.

    Raises:
        ValueError: for the rules :class:`Looks` refuses, or an addition that returns
            no rows.
        TypeError: for a rule :class:`Looks` does not take.
    """
    looks = Looks(analyse, band, **rules)
    start = clock()
    while looks.want:
        rows = more(looks.want)
        looks.add(rows, clock() - start)
    return looks.result(clock() - start)


def repeated(measure: Callable[[], pd.DataFrame], run_col: str = RUN_COLUMN) -> MoreRuns:
    """A :data:`MoreRuns` from a callable measuring ONE run in this process: call it ``k``
    times and label the calls as runs.

    These runs are repeated measurements in the same process (fresh set-up each
    call), not independent worker processes: they include the spread between
    calls but not between processes.  Experiments that accept ``runs=`` should
    be passed as ``lambda k: experiment(..., runs=k)`` instead.
    """

    def more(k: int) -> pd.DataFrame:
        return pd.concat([measure().assign(**{run_col: i}) for i in range(k)], ignore_index=True)

    return more


__all__ = [
    "FULL_MIN_RUNS",
    "Budget",
    "Looks",
    "Sequential",
    "one_run",
    "until_decided",
]
