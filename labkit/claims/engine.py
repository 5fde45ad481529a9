"""The one engine: measure a claim's experiment, decide its interval, record its summary row.

``run("R2.saved_share")`` looks the claim up, takes its experiment's
parameters for the mode (quick or full), and measures the experiment in
independent worker processes: its budget's first runs, then more while the
interval of the experiment's deciding claim is still undecided against that
claim's declared band (:func:`labkit.measure.sequential.until_decided`, whose
looks split the 95% confidence).  Then the claim's own estimate, at the
confidence the runs were decided on, is judged against its band by
:func:`labkit.report.summary.record` (the rule; no verdict is written here), and
its summary row is written, keyed by the claim's id.

A :class:`Session` holds what one reproduction measured: an experiment is
measured once per (experiment, parameters) and shared by every claim that
reads it, whichever claim asked first.  Rows carry ``session`` and ``run``
columns.  Under ``labkit reproduce`` the experiments were measured before
the notebooks ran, their runs interleaved and the measuring repeated once per
session (:mod:`labkit.claims.schedule`); a session then reads those rows
(:mod:`labkit.claims.stored`) instead of measuring.  Rows of several sessions
give each claim one interval with the session as the top level
(:meth:`Measured.estimate`).
"""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import pandas as pd

from labkit.claims import stored
from labkit.config import quick_mode
from labkit.measure import sequential
from labkit.measure.experiment import Params
from labkit.measure.stats import DEFAULT_CONFIDENCE, SESSION_COLUMN, Estimate, over_sessions
from labkit.report import summary
from labkit.results.claim import Claim, Experiment
from labkit.results.registry import get


@dataclass
class Measured:
    """What one experiment measured in a session (or why it could not)."""

    experiment: Experiment
    params: Params
    data: pd.DataFrame  #: every row, with ``session`` and ``run`` columns (empty if not run)
    confidence: float  #: the confidence the runs were decided on (per look)
    sequential: sequential.Sequential | None  #: the looks, when a claim decided the runs
    why_not: str = ""  #: non-empty when the experiment could not run here
    #: how the runs stopped, set only for rows read from a reproduction's measuring phase
    note: str = ""
    #: seconds its runs took (measuring only; NaN when not known)
    seconds: float = math.nan

    @property
    def n_runs(self) -> int:
        """Independent runs measured (over every session)."""
        return 0 if self.data.empty else len(self.data[["run", *self._by()]].drop_duplicates())

    @property
    def n_sessions(self) -> int:
        """Sessions the rows come from (1 for rows without a ``session`` column)."""
        by = self._by()
        return 1 if self.data.empty or not by else int(self.data[by[0]].nunique())

    def _by(self) -> list[str]:
        return [SESSION_COLUMN] if SESSION_COLUMN in self.data.columns else []

    def estimate(self, claim: Claim) -> Estimate | None:
        """``claim``'s estimate from these rows: with one session, at the confidence the
        runs were decided on; over several, each session's estimate at the overall
        confidence pooled with the session as the top level
        (:func:`labkit.measure.stats.over_sessions`: one analysis over sessions, the
        looks within each only decided when to stop adding runs to it)."""
        if self.why_not:
            return None
        if self.n_sessions > 1:
            pooled, _ = over_sessions(self.data, lambda d: claim.estimate(d, DEFAULT_CONFIDENCE))
            return pooled
        return claim.estimate(self.data, self.confidence)

    def stopped(self) -> str:
        """One line: runs, seconds and why the runs stopped."""
        s = self.sequential
        if self.why_not:
            return f"not measured: {self.why_not}"
        if self.note:
            return self.note
        if s is None:
            took = "" if math.isnan(self.seconds) else f" in {self.seconds:.0f} s"
            return f"{self.n_runs} runs{took}"
        return f"{s.n_runs} runs in {s.seconds:.0f} s (stopped: {s.stopped})"


@dataclass
class Outcome:
    """A claim judged in a session: its estimate, the other column, and its summary row."""

    claim: Claim
    session: Session
    measured: Measured
    estimate: Estimate | None  #: None when the experiment could not run here
    row: dict[str, Any] = field(default_factory=dict)  #: the summary row as recorded

    @property
    def params(self) -> Params:
        """The parameters the experiment ran with."""
        return self.measured.params

    @property
    def data(self) -> pd.DataFrame:
        """The experiment's rows."""
        return self.measured.data

    @property
    def verdict(self) -> str:
        """The rule's verdict ("reproduced", "differs", "inconclusive", "not measured")."""
        return str(self.row.get("verdict", ""))

    def of(self, claim_id: str) -> Outcome:
        """Another claim's outcome in the same session (run if needed)."""
        return self.session.run(claim_id, record=False)

    def brief(self, fmt: str = "{:.4g}") -> str:
        """``estimate [low, high] unit``, or "not measured"."""
        if self.estimate is None:
            return "not measured"
        unit = self.claim.unit
        return self.estimate.brief(fmt) + ("" if unit in ("", "x") else f" {unit}")

    def __str__(self) -> str:
        return f"{self.claim.id}: {self.brief()} -> {self.verdict}"


class Session:
    """What one reproduction measured: experiments by (id, parameters), claims by id."""

    def __init__(self, quick: bool | None = None, name: str | None = None):
        self.quick = quick_mode(quick)
        self.name = name or _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        self._measured: dict[tuple[str, str], Measured] = {}
        self._outcomes: dict[str, Outcome] = {}

    def params(self, experiment: Experiment) -> Params:
        """The experiment's parameters in this session's mode."""
        return experiment.params.for_mode(self.quick)

    def plan(self, claim_ids: Iterable[str]) -> list[tuple[Experiment, Params]]:
        """The measurements ``claim_ids`` need, each once, in first-needed order."""
        out: dict[tuple[str, str], tuple[Experiment, Params]] = {}
        for cid in claim_ids:
            exp = get(cid).experiment
            p = self.params(exp)
            out.setdefault((exp.id, p.key()), (exp, p))
        return list(out.values())

    def measure(self, experiment: Experiment, params: Params | None = None) -> Measured:
        """The experiment's rows in this session: measured on first use, then shared."""
        p = self.params(experiment) if params is None else params
        key = (experiment.id, p.key())
        if key not in self._measured:
            self._measured[key] = self._measure(experiment, p)
        return self._measured[key]

    def put(self, measured: Measured) -> None:
        """Take ``measured`` as this session's rows of its (experiment, parameters)."""
        self._measured[(measured.experiment.id, measured.params.key())] = measured

    def _measure(self, exp: Experiment, p: Params) -> Measured:
        why = exp.unavailable(p) if exp.unavailable is not None else ""
        if why:
            return Measured(exp, p, pd.DataFrame(), DEFAULT_CONFIDENCE, None, why)
        done = stored.load(exp.id, p.key(), self.quick)  # by labkit reproduce's measuring phase
        if done is not None:
            return Measured(exp, p, done.data, done.confidence, None, note=done.note)
        budget = exp.budget(self.quick)
        seq = None
        if exp.decided_by is None:
            data = exp.measure(p, budget.min_runs)
            confidence = DEFAULT_CONFIDENCE
        else:
            judge = get(exp.decided_by)
            band = judge.band()
            if band is None:
                raise ValueError(f"{exp.id}: its deciding claim {judge.id} has no band")
            seq = sequential.until_decided(
                partial(exp.measure, p), judge.estimate, band, **budget.kwargs()
            )
            data, confidence = seq.data, seq.confidence
        data = data.assign(session=self.name)
        return Measured(exp, p, data, confidence, seq)

    def run(self, claim_id: str, *, record: bool = True) -> Outcome:
        """The claim's outcome in this session (measured once; recorded if ``record``)."""
        out = self._outcomes.get(claim_id)
        if out is None:
            claim = get(claim_id)
            m = self.measure(claim.experiment)
            est = m.estimate(claim)
            out = Outcome(claim, self, m, est)
            self._outcomes[claim_id] = out
        if record and not out.row:
            out.row = _record(out)
        return out

    def outcomes(self) -> dict[str, Outcome]:
        """Every claim judged so far, by id."""
        return dict(self._outcomes)

    def measurements(self) -> list[Measured]:
        """Every experiment measured so far."""
        return list(self._measured.values())


def _finite(v: float | None) -> float | None:
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else v


def _record(out: Outcome) -> dict[str, Any]:
    """Write the claim's summary row through the rule (:func:`labkit.report.summary.record`)."""
    c, m, est = out.claim, out.measured, out.estimate
    figures: dict[str, Any] = {"model": None, "live": None}
    if m.why_not:
        return summary.record(
            c.result,
            c.label,
            claim=c.id,
            band=c.band(),
            unit=c.unit,
            measured=None,
            reason=m.why_not,
            quick=out.session.quick,
        )
    figures[c.side] = None if est is None else est.estimate
    if c.other is not None:
        figures["model" if c.side == "live" else "live"] = _finite(c.other(out))
    return summary.record(
        c.result,
        c.label,
        claim=c.id,
        band=c.band(),
        original=c.original() if c.original is not None else None,
        unit=c.unit,
        quick=out.session.quick,
        measured=est,
        reason=c.reason(out),
        explained=c.explained(out) if c.explained is not None else "",
        factors=c.factors(out) if c.factors is not None else None,
        **figures,
    )


_SESSION: Session | None = None


def session(quick: bool | None = None) -> Session:
    """The current session (a new one on first use, or when the mode changes)."""
    global _SESSION
    if _SESSION is None or _SESSION.quick != quick_mode(quick):
        _SESSION = Session(quick)
    return _SESSION


def new_session(quick: bool | None = None) -> Session:
    """Start a new session: nothing measured yet."""
    global _SESSION
    _SESSION = Session(quick)
    return _SESSION


def run(claim_id: str, *, quick: bool | None = None, record: bool = True) -> Outcome:
    """Measure and judge the claim ``claim_id`` in the current session; record its row.

    The experiment behind it is measured once per session (shared by the
    claims that read it).  Returns the :class:`Outcome`; its ``row`` is the
    summary row written (verdict by the rule against the declared band).
    """
    return session(quick).run(claim_id, record=record)


__all__ = ["Measured", "Outcome", "Session", "new_session", "run", "session"]
