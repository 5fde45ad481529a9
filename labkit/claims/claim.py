"""What a claim and an experiment declare, and the registry that holds them by id.

An :class:`Experiment` is one measurement: its parameters (one
:class:`labkit.experiments.params.Params` subclass, quick and full values),
how to measure ``k`` independent runs of it (each run a fresh single-threaded
worker process, started by its registered target id), how many runs its
budget allows, and which claim's interval decides when to stop adding runs.

A :class:`Claim` is one headline quantity: a short stable id (``R2.saved_share``)
that keys ``data/published/bands.csv``, the summary and the figures; the
quantity's label (today's text, so the summary stays readable); its unit; the
experiment that measures it; ``estimate(rows, confidence)``; which column of
the summary its figure goes to (``model`` or ``live``); and the sentences of
its summary row.  Several claims may share one experiment (R2's time saved and
ns saved come from one live A/B): the engine measures it once.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from labkit.claims.engine import Outcome
    from labkit.experiments.params import Params
    from labkit.measure.resampling import Estimate
    from labkit.measure.sequential import Budget

#: ``measure(params, runs)``: the rows of ``runs`` independent runs (a ``run`` column).
Measure = Callable[["Params", int], "pd.DataFrame"]
#: ``estimate(rows, confidence)``: the claim's figure with its interval.
EstimateFn = Callable[["pd.DataFrame", float], "Estimate"]
#: A sentence of a summary row, from the claim's outcome.
Sentence = Callable[["Outcome"], str]

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
    figure: Callable[..., Any] | None = None  #: ``figure(session)`` -> a matplotlib Figure
    #: a product's factors, each judged on its own (:class:`labkit.measure.evidence.Factor`)
    factors: Callable[[Outcome], list[Any]] | None = None

    @property
    def result(self) -> str:
        """ "R1", "R2", "R3": the result the claim belongs to."""
        return self.id.split(".", 1)[0]


_CLAIMS: dict[str, Claim] = {}


def register(*claims: Claim) -> None:
    """Add claims to the registry.

    Raises:
        ValueError: for an id not shaped ``R<n>.name``, a side other than
            "model" or "live", or an id already taken by another claim.
    """
    for c in claims:
        if not _ID.fullmatch(c.id):
            raise ValueError(f"claim id must look like 'R2.saved_share', got {c.id!r}")
        if c.side not in ("model", "live"):
            raise ValueError(f"{c.id}: side must be 'model' or 'live', got {c.side!r}")
        old = _CLAIMS.get(c.id)
        if old is not None and old != c:
            raise ValueError(f"claim {c.id!r} is already declared")
        _CLAIMS[c.id] = c


def get(claim_id: str) -> Claim:
    """The claim ``claim_id``.

    Raises:
        KeyError: for an unknown id (the message lists the known ones).
    """
    try:
        return _CLAIMS[claim_id]
    except KeyError:
        raise KeyError(f"unknown claim {claim_id!r}; known: {', '.join(ids())}") from None


def ids(result: str | None = None) -> list[str]:
    """The registered claim ids by result, each result's in declaration order (only
    ``result``'s if given)."""
    keys = [k for k in _CLAIMS if result is None or k.split(".")[0] == result]
    return sorted(keys, key=lambda k: int(k.split(".")[0][1:]))


__all__: list[str] = []  # internal: re-exported by labkit.claims
