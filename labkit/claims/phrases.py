"""Words that interpret a figure, chosen from the figure: never typed beside it.

Prose around a result says what the result means (the rewrite *saves* or *costs*; worker
threads *were seen* or *were not*; a verdict *was decided* or *was not*; a figure *is* or
*is not* the one another notebook uses).  Each helper here takes the figure and the words
for each case and returns a :class:`Phrase`: the words of the case the figure is in, which
remembers the case (its ``role``) and the numbers it was chosen from.

:func:`labkit.claims.markdown` fills a template with phrases and stores each one's record
in its output's metadata (``labkit.phrases``), so a test reading an executed notebook can
check every phrase against its numbers by a rule of its own.  The cases:

* :func:`sign`: ``positive`` when the whole interval is above 0, ``negative`` when it is
  below, ``neither`` when it contains 0;
* :func:`count`: ``some`` when the count is above 0, else ``none``;
* :func:`decided`: ``decided`` for a verdict that decides (reproduced, differs, consistent
  in magnitude, not consistent, factors cancel), else ``undecided``;
* :func:`same`: ``same`` when two intervals overlap, else ``different``.
"""

from __future__ import annotations

from typing import Any

from labkit.measure.stats import Estimate

#: The verdicts that decide a claim (the others leave it open or unjudged).
DECIDING = (
    "reproduced",
    "differs",
    "consistent in magnitude",
    "not consistent",
    "factors cancel",
)


class Phrase(str):
    """Words chosen from a figure: a ``str``, with ``kind``, ``role`` and ``numbers``."""

    kind: str
    role: str
    numbers: dict[str, Any]

    def __new__(cls, text: str, kind: str, role: str, **numbers: Any) -> Phrase:
        obj = super().__new__(cls, text)
        obj.kind, obj.role, obj.numbers = kind, role, numbers
        return obj

    def record(self) -> dict[str, Any]:
        """What the metadata keeps: the words, the kind, the case and the numbers."""
        return {"text": str(self), "kind": self.kind, "role": self.role, **self.numbers}


def _estimate(value: Any) -> Estimate:
    """An Estimate from an Estimate, a quoted claim, an outcome or a claim id."""
    if isinstance(value, str):
        from labkit.claims.engine import session  # the current session runs the claim

        value = session().run(value, record=False).estimate
    if isinstance(value, Estimate):
        return value
    est = getattr(value, "est", None)  # a quoted claim
    if est is None:
        est = getattr(value, "estimate", None)  # a claim's outcome
    if not isinstance(est, Estimate):
        raise TypeError(f"not a measured figure: {value!r}")
    return est


def sign(value: Any, *, positive: str, negative: str, neither: str) -> Phrase:
    """``positive``, ``negative`` or ``neither`` by where the interval of ``value`` lies
    against 0 (``value``: an Estimate, a quoted claim or a claim id)."""
    e = _estimate(value)
    lo, hi = float(e.ci_low), float(e.ci_high)
    role = "positive" if lo > 0 else "negative" if hi < 0 else "neither"
    text = {"positive": positive, "negative": negative, "neither": neither}[role]
    return Phrase(text, "sign", role, estimate=float(e.estimate), low=lo, high=hi)


def count(n: int, *, some: str, none: str) -> Phrase:
    """``some`` when ``n`` > 0, else ``none``; ``{n}`` in either is replaced by ``n``."""
    n = int(n)
    role = "some" if n > 0 else "none"
    text = (some if n > 0 else none).replace("{n}", f"{n:,}")
    return Phrase(text, "count", role, n=n)


def decided(verdict: str, *, yes: str, no: str) -> Phrase:
    """``yes`` for a verdict that decides (:data:`DECIDING`), else ``no``; ``{verdict}`` in
    either is replaced by the verdict."""
    role = "decided" if verdict in DECIDING else "undecided"
    text = (yes if role == "decided" else no).replace("{verdict}", verdict)
    return Phrase(text, "decided", role, verdict=verdict)


def same(a: Any, b: Any, *, same_text: str, different_text: str) -> Phrase:
    """``same_text`` when the intervals of ``a`` and ``b`` overlap, else ``different_text``."""
    ea, eb = _estimate(a), _estimate(b)
    overlap = float(ea.ci_low) <= float(eb.ci_high) and float(eb.ci_low) <= float(ea.ci_high)
    role = "same" if overlap else "different"
    return Phrase(
        same_text if overlap else different_text,
        "same",
        role,
        a=float(ea.estimate),
        a_low=float(ea.ci_low),
        a_high=float(ea.ci_high),
        b=float(eb.estimate),
        b_low=float(eb.ci_low),
        b_high=float(eb.ci_high),
    )


__all__ = ["Phrase", "count", "decided", "same", "sign"]
