"""The one list of results: a new result is one line of :data:`RESULTS`.

The engine (:mod:`labkit.claims`) finds every claim and figure here; claims a test
declares for itself are added with :func:`register` (never a result's own).
"""

from __future__ import annotations

from labkit.results import live_figures
from labkit.results.claim import Claim, Drawing, Result, check, declared
from labkit.results.r1 import claims as r1_claims
from labkit.results.r1 import figures as r1_figures
from labkit.results.r2 import claims as r2_claims
from labkit.results.r2 import figures as r2_figures
from labkit.results.r3 import claims as r3_claims

#: The results, in the order the summary lists them.
RESULTS: tuple[Result, ...] = (
    Result("R1", r1_claims.CLAIMS, r1_figures.FIGURES, declared(r1_claims)),
    Result("R2", r2_claims.CLAIMS, r2_figures.FIGURES, declared(r2_claims)),
    Result("R3", r3_claims.CLAIMS, {}, declared(r3_claims)),
)
#: Notebook 04's figures: the three results on the running kernel, side by side.
SHARED_FIGURES: dict[str, Drawing] = live_figures.FIGURES

_EXTRA: dict[str, Claim] = {}  # claims a test declares (ids of results not listed here)


def _claims() -> dict[str, Claim]:
    out = {c.id: c for r in RESULTS for c in r.claims}
    if len(out) != sum(len(r.claims) for r in RESULTS):
        raise ValueError("two claims share an id")
    return out


CLAIMS: dict[str, Claim] = _claims()


def register(*claims: Claim) -> None:
    """Declare claims beyond the listed results (a test's own).

    Raises:
        ValueError: for an id not shaped ``R<n>.name``, a side other than "model" or
            "live", or an id already taken by another claim.
    """
    for c in claims:
        check(c)
        old = CLAIMS.get(c.id) or _EXTRA.get(c.id)
        if old is not None and old != c:
            raise ValueError(f"claim {c.id!r} is already declared")
        _EXTRA[c.id] = c


def get(claim_id: str) -> Claim:
    """The claim ``claim_id``.

    Raises:
        KeyError: for an unknown id (the message lists the known ones).
    """
    found = CLAIMS.get(claim_id) or _EXTRA.get(claim_id)
    if found is None:
        raise KeyError(f"unknown claim {claim_id!r}; known: {', '.join(ids())}")
    return found


def ids(result: str | None = None) -> list[str]:
    """The claim ids by result, each result's in declaration order (only ``result``'s if
    given)."""
    keys = [k for k in [*CLAIMS, *_EXTRA] if result is None or k.split(".")[0] == result]
    return sorted(keys, key=lambda k: int(k.split(".")[0][1:]))


def figures() -> dict[str, Drawing]:
    """Every figure by name: each result's, then notebook 04's.

    Raises:
        ValueError: for a name two results both draw.
    """
    out: dict[str, Drawing] = {}
    for table in [*(r.figures for r in RESULTS), SHARED_FIGURES]:
        twice = set(out) & set(table)
        if twice:
            raise ValueError(f"figures drawn twice: {sorted(twice)}")
        out.update(table)
    return out


__all__ = ["CLAIMS", "RESULTS", "figures", "get", "ids", "register"]
