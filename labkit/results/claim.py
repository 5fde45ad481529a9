"""What a result declares: its claims, the experiments that measure them, its figures.

An :class:`Experiment` is one measurement: its parameters (one
:class:`labkit.measure.experiment.Params` subclass, quick and full values),
how to measure ``k`` independent runs of it (each run a fresh single-threaded
worker process, started by its registered target id), how many runs its
budget allows, and which claim's interval decides when to stop adding runs.

A :class:`Claim` is one headline quantity: a short stable id (``R2.saved_share``)
that keys its result's ``bands.csv``, the summary and the figures; the
quantity's label (today's text, so the summary stays readable); its unit; the
experiment that measures it; ``estimate(rows, confidence)``; which column of
the summary its figure goes to (``model`` or ``live``); and the sentences of
its summary row.  Several claims may share one experiment (R2's time saved and
ns saved come from one live A/B): the engine measures it once.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from labkit.measure import ledgers
from labkit.report.summary import format_interval

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from labkit.claims.engine import Outcome, Session
    from labkit.measure.experiment import Params
    from labkit.measure.sequential import Budget
    from labkit.measure.stats import Estimate

#: ``measure(params, runs)``: the rows of ``runs`` independent runs (a ``run`` column).
Measure = Callable[["Params", int], "pd.DataFrame"]
#: ``estimate(rows, confidence)``: the claim's figure with its interval.
EstimateFn = Callable[["pd.DataFrame", float], "Estimate"]
#: A sentence of a summary row, from the claim's outcome.
Sentence = Callable[["Outcome"], str]
#: A figure drawn from what a session measured.
Drawing = Callable[["Session"], "Figure"]

_ID = re.compile(r"R\d+\.[a-z][a-z0-9_]*")


@dataclass(frozen=True)
class Experiment:
    """One measurement, shared by the claims it measures."""

    id: str  #: e.g. "R2.live_syscalls"
    params: type[Params]  #: its sizes: quick and full values, JSON round trip
    measure: Measure  #: ``runs`` independent runs in worker processes -> rows
    budget: Callable[[bool], Budget]  #: runs and seconds allowed (quick?) -> Budget
    decided_by: str | None = None  #: claim whose verdict stops the runs; None: min_runs runs
    unavailable: Callable[[Params], str] | None = None  #: why it cannot run here ("" if it can)
    #: its result table(s) in a full-mode reproduction: a name, or ``rows -> {name: rows}``
    results: str | Callable[[pd.DataFrame], dict[str, pd.DataFrame]] = ""


@dataclass(frozen=True)
class Claim:
    """One headline quantity of a result, with everything needed to judge it."""

    id: str  #: e.g. "R2.saved_share"; keys bands.csv, the summary and the figures
    label: str  #: the quantity in words, as the summary shows it
    unit: str  #: "ns", "%", "x", "instructions"
    experiment: Experiment
    estimate: EstimateFn
    reason: Sentence  #: what was compared, what may explain a difference
    side: str = "live"  #: the summary column its figure goes to: "live" or "model"
    other: Callable[[Outcome], float | None] | None = None  #: the other column's figure
    explained: Sentence | None = None  #: the measured cause of a difference, if shown
    #: the published figure its band surrounds, derived from the result's seed data
    #: (``rN/seed.py``); None for a band that states the claim's direction only
    published: Callable[[], float] | None = None
    #: the original measurement's own interval of the figure, where its data give one
    original: Callable[[], Estimate] | None = None
    #: a product's factors, each judged on its own (:class:`labkit.measure.verdicts.Factor`)
    factors: Callable[[Outcome], list[Any]] | None = None

    def band(self) -> ledgers.Band | None:
        """Its declared band (its result's ``bands.csv``) around its published figure, or
        None if it has none."""
        found = ledgers.claim_band(self.id)
        if found is None:
            return None
        return replace(found, published=None if self.published is None else self.published())

    @property
    def result(self) -> str:
        """ "R1", "R2", "R3": the result the claim belongs to."""
        return self.id.split(".", 1)[0]


@dataclass(frozen=True)
class Result:
    """One published result: its id, its claims and its figures (one line of
    :data:`labkit.results.registry.RESULTS`)."""

    id: str  #: "R1", "R2", "R3"
    claims: tuple[Claim, ...]
    figures: Mapping[str, Drawing] = field(default_factory=dict)
    #: every experiment its claims module declares (claimed or drawn), in declaration order
    experiments: tuple[Experiment, ...] = ()

    def __post_init__(self) -> None:
        for c in self.claims:
            check(c, self.id)


def declared(module: object) -> tuple[Experiment, ...]:
    """The experiments a module holds (its own and those it imports), in its order."""
    return tuple(v for v in vars(module).values() if isinstance(v, Experiment))


def check(c: Claim, result: str | None = None) -> None:
    """Raise ValueError for a claim id not shaped ``R<n>.name`` (of ``result`` if given) or a
    side other than "model" or "live"."""
    if not _ID.fullmatch(c.id):
        raise ValueError(f"claim id must look like 'R2.saved_share', got {c.id!r}")
    if result is not None and c.result != result:
        raise ValueError(f"claim {c.id!r} is not a claim of {result}")
    if c.side not in ("model", "live"):
        raise ValueError(f"{c.id}: side must be 'model' or 'live', got {c.side!r}")


def drawn(into: dict[str, Drawing], name: str) -> Callable[[Drawing], Drawing]:
    """Decorator: declare a drawing function as the figure ``name`` in ``into`` (the
    ``FIGURES`` of a result's figures module).

    Raises:
        ValueError: for a name ``into`` already holds.
    """

    def wrap(fn: Drawing) -> Drawing:
        if name in into:
            raise ValueError(f"figure {name!r} is already drawn by {into[name].__name__}")
        into[name] = fn
        return fn

    return wrap


class Quoted:
    """A figure as prose quotes it: ``format(q, "")`` is the estimate with its interval
    (and the claim's unit), ``format(q, ".2f")`` the estimate alone; ``q.low``,
    ``q.high``, ``q.runs`` and, for a claim's outcome, ``q.verdict``."""

    def __init__(self, value: Outcome | Estimate | None, unit: str = ""):
        is_outcome = hasattr(value, "claim")
        self.out = value if is_outcome else None
        self.est = value.estimate if is_outcome else value  # type: ignore[union-attr]
        self.unit = value.claim.unit if is_outcome else unit  # type: ignore[union-attr]

    def __format__(self, spec: str) -> str:
        if self.est is None:
            return "(not measured)"
        if spec:
            return format(self.est.estimate, spec)
        e = self.est
        text = format_interval({"estimate": e.estimate, "ci_low": e.ci_low, "ci_high": e.ci_high})
        return text + ("" if self.unit in ("", "x") else f" {self.unit}")

    @property
    def low(self) -> float:
        """The interval's lower end."""
        return self.est.ci_low

    @property
    def high(self) -> float:
        """The interval's upper end."""
        return self.est.ci_high

    @property
    def runs(self) -> int:
        """Independent runs behind the estimate."""
        return self.est.n_runs

    @property
    def verdict(self) -> str:
        """The rule's verdict of a claim (its row is recorded first)."""
        if self.out is None:
            raise AttributeError("only a claim has a verdict")
        return self.out.session.run(self.out.claim.id).verdict


__all__: list[str] = []  # internal: the results' declarations and labkit.claims use these
