"""The verdict: is a claim comparable here, the rule, and what its evidence may say.

First, before anything is measured: is the claim **not comparable** here?  When
labkit's setup differs from the claim's in a way that moves the figure by
construction (its result's ``setups.csv``, :func:`labkit.measure.ledgers.mismatches`:
R3's 24-drive peak against /dev/zero on one CPU, a quick-mode size against a full-size
band), :func:`not_comparable` says so, with what differs and what it would take to
compare; the row still shows labkit's estimate.  Otherwise three outcomes from an
interval and a band (plus *not measured*), :func:`verdict`:

* **reproduced**: the whole interval lies inside the band;
* **differs**: the whole interval lies outside the band;
* **inconclusive**: anything else; the reason says which edge is crossed and by
  how much the interval must shrink, or that it is wider than the band.  A
  wider (noisier) interval can never give *reproduced*.

A noise guard comes first: when the machine's noise for the figure (its
spread between independent runs) is larger than the effect tested (the
published figure's distance from "no effect"), the verdict is *inconclusive*
and the reason starts with :data:`TOO_NOISY`.  This is a two one-sided test
(TOST) in interval form at alpha = 0.025 per side: a 95% interval inside the band
rejects "below the band" and "above the band", each at 2.5% (a 90% interval would
be TOST at 0.05).  *differs* is the mirror: the interval wholly outside the band.

These three are the rule's outcomes.  What a row may *say* with them depends on its
evidence (its result's ``evidence.csv``, :func:`labkit.measure.ledgers.evidence_of`);
:func:`restate` turns the outcome into the row's verdict:

* only the change itself, before and after in a booted kernel (:func:`decisive`), says
  *reproduced* or *differs*;
* any other evidence is a stand-in: *consistent in magnitude* or *not consistent* with
  the claim (or *inconclusive*), never a reproduction;
* a method check says *check passed*, *check failed* or *check inconclusive*.

A product is judged by its factors (:func:`judge_product`): when the product lies in its
band while a factor does not, the verdict is *factors cancel*.  :data:`VERDICTS` lists
every verdict a row can carry.

Each verdict is at its own 95%: over the ~13 timed verdicts of a reproduction,
some of which share one loop (R2's three rows), about one in twenty verdicts
whose truth lies on a band's edge would land on the wrong side; no correction for
multiplicity is made, and :func:`multiplicity` says so in the summary.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from labkit.measure.ledgers import Evidence, Mismatch

#: The rule's outcomes (:func:`verdict`), as the change itself in a booted kernel says them.
REPRODUCED, DIFFERS, INCONCLUSIVE = "reproduced", "differs", "inconclusive"
#: The verdict of a claim whose setup labkit does not reproduce (:func:`not_comparable`).
NOT_COMPARABLE = "not comparable"
#: The verdict of a row without a figure or without a band.
NOT_MEASURED = "not measured"
#: What a stand-in's row says in place of "reproduced" and "differs" (:func:`restate`).
CONSISTENT, NOT_CONSISTENT = "consistent in magnitude", "not consistent"
#: What a method check says (:func:`restate`).
CHECK_PASSED, CHECK_FAILED, CHECK_OPEN = "check passed", "check failed", "check inconclusive"
#: The verdict of a product inside its band whose factors are not (:func:`judge_product`).
FACTORS_CANCEL = "factors cancel"
#: Every verdict a row can carry.
VERDICTS = (
    *(REPRODUCED, DIFFERS, INCONCLUSIVE, NOT_COMPARABLE, NOT_MEASURED),
    *(CONSISTENT, NOT_CONSISTENT, CHECK_PASSED, CHECK_FAILED, CHECK_OPEN, FACTORS_CANCEL),
)
#: The verdicts that decide, by kind (for counting and for stopping rules).
DECIDED = (REPRODUCED, DIFFERS, CONSISTENT, NOT_CONSISTENT, FACTORS_CANCEL)
#: The reason of a noise-guard verdict starts with this.
TOO_NOISY = "machine too noisy"


def _num(v: float) -> str:
    """A number for a reason: 4 significant digits, large ones in full."""
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if abs(v) >= 1e4:
        return f"{v:,.0f}"
    return f"{v:.4g}"


@dataclass(frozen=True)
class Verdict:
    """The outcome of :func:`verdict` and the sentence that says why."""

    verdict: str
    reason: str
    #: how many times narrower an inconclusive interval must get to decide (None otherwise)
    shrink: float | None = None


def _shrink(
    lo: float, est: float, hi: float, edge: float, side: str, unit: str
) -> tuple[str, float | None]:
    """What an interval crossing ``edge`` must lose to lie on one side of it, and the factor."""
    inside = est >= edge if side == "lower" else est <= edge
    if side == "lower":
        half, need = (est - lo, est - edge) if inside else (hi - est, edge - est)
    else:
        half, need = (hi - est, edge - est) if inside else (est - lo, est - edge)
    which = (
        ("lower" if side == "lower" else "upper")
        if inside
        else ("upper" if side == "lower" else "lower")
    )
    goal = "inside the band" if inside else f"wholly {'below' if side == 'lower' else 'above'} it"
    k = half / need if need > 0 else None
    factor = f" ({_factor(k)}x narrower)" if k is not None else ""
    return (
        f"it crosses the band's {side} edge {_num(edge)}{unit}; with its estimate "
        f"{'inside' if inside else 'outside'}, its {which} half ({_num(half)}{unit}) must "
        f"shrink to under {_num(need)}{unit}{factor} to lie {goal}"
    ), k


def verdict(
    estimate: float | None,
    ci_low: float | None,
    ci_high: float | None,
    band_low: float | None,
    band_high: float | None,
    *,
    noise: float | None = None,
    effect: float | None = None,
    unit: str = "",
    confidence: float = 0.95,
) -> Verdict:
    """The equivalence verdict of an interval against a declared tolerance band.

    * no estimate, or no band: *not measured*;
    * ``noise > effect`` (both given and finite): *inconclusive*, reason "machine
      too noisy: ...";
    * no interval (NaN bounds): *inconclusive*;
    * ``band_low <= ci_low`` and ``ci_high <= band_high``: *reproduced*;
    * ``ci_high < band_low`` or ``ci_low > band_high``: *differs*;
    * otherwise *inconclusive*, with which edge is crossed and how much the
      interval must shrink (or that it is wider than the band).

    Raises:
        ValueError: if ``ci_low > ci_high`` or ``band_low >= band_high``.
    """
    u = f" {unit}" if unit and unit not in ("%", "x") else unit
    pct = f"{100 * confidence:g}%"

    def missing(v: float | None) -> bool:
        return v is None or (isinstance(v, float) and math.isnan(v))

    if missing(estimate):
        return Verdict(NOT_MEASURED, "no figure measured")
    if missing(band_low) or missing(band_high):
        return Verdict(NOT_MEASURED, "no published figure or declared band to compare with")
    est, bl, bh = float(estimate), float(band_low), float(band_high)
    if not bl < bh:
        raise ValueError(f"verdict: band_low must be < band_high, got [{bl}, {bh}]")
    if math.isinf(bh):
        band = f"the band (at least {_num(bl)}{u})"
    elif math.isinf(bl):
        band = f"the band (at most {_num(bh)}{u})"
    else:
        band = f"the band [{_num(bl)}, {_num(bh)}]{u}"
    if noise is not None and effect is not None and math.isfinite(noise) and noise > effect:
        return Verdict(
            INCONCLUSIVE,
            f"{TOO_NOISY}: the figure's noise in this run ({_num(noise)}{u}, its spread between "
            f"runs, or within the one run) exceeds the effect tested ({_num(effect)}{u}, the "
            "published figure against no effect)",
        )
    if missing(ci_low) or missing(ci_high):
        return Verdict(INCONCLUSIVE, f"no interval around {_num(est)}{u} to compare with {band}")
    lo, hi = float(ci_low), float(ci_high)
    if lo > hi:
        raise ValueError(f"verdict: need ci_low <= ci_high, got [{lo}, {hi}]")
    ci = f"the {pct} interval [{_num(lo)}, {_num(hi)}]{u}"
    if bl <= lo and hi <= bh:
        return Verdict(REPRODUCED, f"{ci} lies inside {band}")
    if hi < bl or lo > bh:
        where = "below" if hi < bl else "above"
        return Verdict(DIFFERS, f"{ci} lies wholly {where} {band}")
    if hi - lo > bh - bl:
        k = (hi - lo) / (bh - bl)
        return Verdict(
            INCONCLUSIVE,
            f"{ci} is wider than {band} ({_num(hi - lo)} vs {_num(bh - bl)}{u}): it must "
            f"shrink at least {_factor(k)}x to decide",
            k,
        )
    side, edge = ("lower", bl) if lo < bl else ("upper", bh)
    text, k = _shrink(lo, est, hi, edge, side, u)
    return Verdict(INCONCLUSIVE, f"{ci} is undecided: {text}", k)


def _factor(k: float) -> str:
    """A shrink factor as the reason prints it: 2 significant digits, 3 under 1.1 (1.046x
    must not read as 1x)."""
    return f"{k:.3g}" if k < 1.1 else f"{k:.2g}"


def why_not_comparable(found: Sequence[Mismatch]) -> tuple[str, str]:
    """(what differs, what it would take) for a non-empty list of mismatches."""
    return (
        "; ".join(m.sentence() for m in found),
        "; ".join(dict.fromkeys(m.to_compare for m in found)),
    )


def not_comparable(differs: str, to_compare: str, estimate: str | None = None) -> Verdict:
    """The verdict of a claim labkit cannot reproduce by construction, decided before measuring.

    Args:
        differs: what differs between the claim's setup and labkit's
            (:func:`why_not_comparable`).
        to_compare: what it would take to make the comparison.
        estimate: labkit's estimate as shown, for the reason (the row keeps it in its
            columns).

    Raises:
        ValueError: for an empty ``differs`` or ``to_compare``.
    """
    if not differs.strip() or not to_compare.strip():
        raise ValueError("not_comparable: say what differs and what it would take to compare")
    shown = f"labkit's estimate ({estimate}) is shown, not judged: " if estimate else ""
    return Verdict(
        NOT_COMPARABLE,
        f"{shown}the setups differ ({differs.strip()}); to compare: {to_compare.strip()}",
    )


def judge(estimate: Any, band: Any, *, noise: float | None = None, setup: Any = None) -> Verdict:
    """:func:`verdict` of an Estimate (or None) against a Band (or None).

    ``setup``: the claim's mismatches that hold here
    (:func:`labkit.measure.ledgers.mismatches`); when there are any, the verdict is
    *not comparable* whatever was measured (:func:`not_comparable`).

    ``estimate`` has ``estimate``, ``ci_low``, ``ci_high``, ``noise`` and
    ``confidence`` (:class:`labkit.measure.stats.Estimate`); ``band`` has ``low``,
    ``high``, ``effect`` and ``unit`` (:class:`labkit.measure.ledgers.Band`).  ``noise``
    overrides the estimate's own.
    """
    if setup:
        shown = None
        if estimate is not None and hasattr(estimate, "brief"):
            shown = estimate.brief() + (f" {band.unit}" if band is not None and band.unit else "")
        return not_comparable(*why_not_comparable(list(setup)), estimate=shown)
    if band is None:
        return Verdict(NOT_MEASURED, "no published figure or declared band to compare with")
    if estimate is None:
        return Verdict(NOT_MEASURED, "no figure measured")
    v = verdict(
        estimate.estimate,
        estimate.ci_low,
        estimate.ci_high,
        band.low,
        band.high,
        noise=estimate.noise if noise is None else noise,
        effect=band.effect,
        unit=band.unit,
        confidence=estimate.confidence,
    )
    sessions = getattr(estimate, "n_sessions", 1) or 1
    if v.shrink is not None and v.shrink > 1 and sessions >= 2:
        more = sessions_to_shrink(sessions, v.shrink, estimate.confidence)
        v = Verdict(
            v.verdict,
            f"{v.reason} (the interval is over sessions: at this spread between sessions, "
            f"about {more} sessions instead of {sessions}; more runs per session do not "
            f"narrow it)",
            v.shrink,
        )
    elif v.shrink is not None and v.shrink > 1 and getattr(estimate, "n_runs", 0) >= 2:
        # an interval over runs narrows about as 1 / sqrt(runs)
        runs = math.ceil(estimate.n_runs * v.shrink**2)
        v = Verdict(
            v.verdict,
            f"{v.reason} (at this spread, about {runs} runs instead of {estimate.n_runs})",
            v.shrink,
        )
    return v


def decisive(ev: Evidence) -> bool:
    """Only the change itself, before and after in the same code of a booted kernel, can
    reproduce or contradict a claim.  The change's code alone in user space (UML's build
    of ``lib/iov_iter.o``) lacks x86-64's user-access code: there the 2023 import change
    saves 7 instructions per ``readv(1)``, in a booted x86-64 kernel 60."""
    return ev.role == "claim" and ev.compares == "change" and ev.instrument == "booted kernel"


def restate(rule: Verdict, ev: Evidence | None) -> Verdict:
    """The rule's verdict as the evidence ``ev`` may state it (unchanged for None).

    *not comparable* and *not measured* stay as they are.  A method check says *check
    passed*/*check failed*; a stand-in *consistent in magnitude*/*not consistent*; the
    change itself in a booted kernel keeps *reproduced*/*differs*.  *inconclusive* stays
    *inconclusive* for all.  The reason starts with what the evidence is.
    """
    if ev is None or rule.verdict not in (REPRODUCED, DIFFERS, INCONCLUSIVE):
        return rule
    inside = {REPRODUCED: True, DIFFERS: False}.get(rule.verdict)
    if ev.role == "method check":
        why = ev.note or "its outcome is fixed by construction"
        text = {True: CHECK_PASSED, False: CHECK_FAILED, None: CHECK_OPEN}[inside]
        return Verdict(
            text, f"a check of labkit's method, not a verdict on the claim ({why}): {rule.reason}"
        )
    if decisive(ev):
        return rule
    text = {True: CONSISTENT, False: NOT_CONSISTENT, None: INCONCLUSIVE}[inside]
    return Verdict(
        text,
        f"a stand-in ({ev.sentence()}), not the change itself: it can be consistent in "
        f"magnitude with the claim, not reproduce it; {rule.reason}",
        rule.shrink,
    )


@dataclass(frozen=True)
class Factor:
    """One factor of a product claim: its figure here against its published figure."""

    name: str  #: "walk-2019 ns per skipped page"
    estimate: float
    ci_low: float
    ci_high: float
    published: float
    band_low: float
    band_high: float
    unit: str = ""

    def judged(self, ev: Evidence | None) -> Verdict:
        """The factor's own verdict, stated as the product's evidence may state it."""
        rule = verdict(
            self.estimate,
            self.ci_low,
            self.ci_high,
            self.band_low,
            self.band_high,
            unit=self.unit,
        )
        return restate(rule, ev)

    def sentence(self, ev: Evidence | None) -> str:
        """``"F 875 [860, 890] ns, 0.64x the published 1,377 ns: not consistent"``."""
        u = f" {self.unit}" if self.unit else ""
        k = self.estimate / self.published if self.published else math.nan
        return (
            f"{self.name} {_g(self.estimate)} [{_g(self.ci_low)}, {_g(self.ci_high)}]{u}, "
            f"{k:.2f}x the published {_g(self.published)}{u}: {self.judged(ev).verdict}"
        )


def _g(v: float) -> str:
    return f"{v:,.0f}" if abs(v) >= 1e3 else f"{v:.3g}"


def judge_product(product: Verdict, factors: Sequence[Factor], ev: Evidence | None) -> Verdict:
    """A product's verdict from its factors': where the product lies inside its band
    (*reproduced* or *consistent in magnitude*) while a factor does not, the verdict is
    *factors cancel*; the reason names each factor's own verdict either way."""
    if not factors or product.verdict in (NOT_COMPARABLE, NOT_MEASURED):
        return product
    within = (REPRODUCED, CONSISTENT)
    said = [f.sentence(ev) for f in factors]
    off = [f for f in factors if f.judged(ev).verdict not in within]
    text = "; ".join(said)
    if product.verdict in within and off:
        return Verdict(
            FACTORS_CANCEL,
            f"the product lies in its band but {len(off)} of its {len(factors)} factors do "
            f"not, so their deviations cancel ({text}); {product.reason}",
        )
    return Verdict(product.verdict, f"{product.reason}; its factors: {text}", product.shrink)


def multiplicity(rows: Any) -> str:
    """One sentence for a summary: how many timed verdicts a run makes, how many loops
    they come from, and what 95% means across them.

    ``rows``: the summary's rows (dicts or a DataFrame's rows) with ``verdict``, ``unit``
    and ``method``; a timed verdict is one decided by the rule on an interval (not a
    count, not *not comparable* or *not measured*, not a check of the method).
    """
    timed = [
        r
        for r in rows
        if str(r.get("unit")) != "instructions"
        and "instruction count" not in str(r.get("method") or "")
        and str(r.get("verdict")) not in (NOT_COMPARABLE, NOT_MEASURED)
        and not str(r.get("verdict")).startswith("check ")
        and str(r.get("verdict")) != "nan"
    ]
    n = len(timed)
    r2 = sum(str(r.get("claim") or "").startswith("R2.") for r in timed)
    shared = f" ({r2} of them, R2's, read one loop: not independent)" if r2 > 1 else ""
    return (
        f"{n} timed verdicts{shared}, each a TOST at alpha = 0.025 per side (its 95% "
        "interval inside or wholly outside its band); no correction for multiplicity: with "
        f"{n} verdicts each at 95%, about {0.05 * n:.2g} could land on the wrong side of an "
        "edge their truth lies on"
    )


def sessions_to_shrink(sessions: int, shrink: float, confidence: float = 0.95) -> int:
    """Sessions an interval over ``sessions`` sessions needs to be ``shrink`` times narrower
    at the same spread between sessions: a t interval on the sessions' figures has the
    half-width t(confidence, S - 1) SD / sqrt(S) (:func:`labkit.measure.stats.cluster`), so the
    answer is the smallest S' with t(S' - 1) / sqrt(S') <= t(S - 1) / sqrt(S) / shrink.
    """
    from scipy.stats import norm, t  # here: scipy's import is slow, only this advice needs it

    if sessions < 2 or not shrink > 0 or not math.isfinite(shrink):
        raise ValueError(f"sessions_to_shrink: need 2+ sessions and a finite shrink > 0, got "
                         f"{sessions} and {shrink}")  # fmt: skip
    q = (1 + confidence) / 2
    goal = t.ppf(q, sessions - 1) / math.sqrt(sessions) / shrink
    # t(q, df) >= z(q): no fewer than (z / goal)^2 sessions will do; from there, a few steps
    n = max(sessions, math.ceil((norm.ppf(q) / goal) ** 2))
    while t.ppf(q, n - 1) / math.sqrt(n) > goal:
        n += 1
    return n


__all__ = [
    "CHECK_FAILED",
    "CHECK_OPEN",
    "CHECK_PASSED",
    "CONSISTENT",
    "DECIDED",
    "DIFFERS",
    "FACTORS_CANCEL",
    "INCONCLUSIVE",
    "NOT_COMPARABLE",
    "NOT_CONSISTENT",
    "NOT_MEASURED",
    "REPRODUCED",
    "TOO_NOISY",
    "VERDICTS",
    "Factor",
    "Verdict",
    "decisive",
    "judge",
    "judge_product",
    "multiplicity",
    "not_comparable",
    "restate",
    "sessions_to_shrink",
    "verdict",
    "why_not_comparable",
]
