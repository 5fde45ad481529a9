"""What a verdict is about: each claim's estimand and the evidence behind its figure.

A verdict can only say as much as its evidence.  Each result's ``evidence.csv`` (its
ledger in ``labkit/results/rN/``, :mod:`labkit.measure.ledgers`) declares, per claim id,
the **estimand** (the quantity the published figure is about, in words), what is
**compared** and **with what**:

* compares (:data:`COMPARES`): ``change`` (the change itself, before and after
  in the same code), ``era`` (one kernel era against another), ``model``
  (labkit's model of the code), ``proxy`` (a stand-in measurement on a later
  kernel) or ``other quantity`` (a published figure set against a figure of
  another quantity);
* instrument (:data:`INSTRUMENTS`): ``booted kernel``, ``real code in user
  space``, ``labkit's model`` or ``live kernel``;
* config: the build or setup the figure comes from (where: the host is the
  row's scope);
* role (:data:`ROLES`): ``claim`` (the row judges the claim) or ``method
  check`` (its outcome is fixed by construction, or it only checks a direction
  no one published: it checks labkit's method and is not a verdict on the claim).

:func:`restate` turns the rule's outcome (:func:`labkit.measure.verdicts.verdict`:
inside the band, outside it, undecided) into what the evidence may say:

* only the change itself, in a booted kernel (:func:`decisive`), says
  *reproduced* or *differs*;
* any other evidence is a stand-in: *consistent in magnitude* or *not
  consistent* with the claim (or *inconclusive*), never a reproduction;
* a method check says *check passed*, *check failed* or *check inconclusive*.

A product is judged by its factors (:func:`judge_product`): when the product
lies in its band while a factor does not, the verdict is *factors cancel*.

The kernel bench's rows (x86-64 kernels built with and without a change and
booted under QEMU with ``-icount``) are the evidence :data:`BOOTED_CHANGE`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from labkit.measure import ledgers
from labkit.measure.verdicts import Verdict, verdict

#: Columns of evidence.csv.
COLUMNS = ("claim", "estimand", "compares", "instrument", "config", "role", "note")
#: What a row compares.
COMPARES = {
    "change": "the change itself, before and after in the same code",
    "era": "one kernel era against another",
    "model": "labkit's model of the code",
    "proxy": "a proxy on a later kernel",
    "other quantity": "a published figure against a figure of another quantity",
}
#: What a row measures with.
INSTRUMENTS = ("booted kernel", "real code in user space", "labkit's model", "live kernel")
#: What a row is for.
ROLES = ("claim", "method check")

#: The verdicts a stand-in's row can take in place of "reproduced" and "differs".
CONSISTENT, NOT_CONSISTENT = "consistent in magnitude", "not consistent"
#: The verdicts of a method check.
CHECK_PASSED, CHECK_FAILED, CHECK_OPEN = "check passed", "check failed", "check inconclusive"
#: The verdict of a product inside its band whose factors are not.
FACTORS_CANCEL = "factors cancel"
#: Every verdict :func:`restate` and :func:`judge_product` can give besides the rule's.
VERDICTS = (CONSISTENT, NOT_CONSISTENT, CHECK_PASSED, CHECK_FAILED, CHECK_OPEN, FACTORS_CANCEL)
#: Verdicts that decide, by kind (for counting and for stopping rules).
DECIDED = ("reproduced", "differs", CONSISTENT, NOT_CONSISTENT, FACTORS_CANCEL)


@dataclass(frozen=True)
class Evidence:
    """What one claim's row compares, with what and where (a row of evidence.csv)."""

    claim: str
    estimand: str
    compares: str
    instrument: str
    config: str = ""
    role: str = "claim"
    note: str = ""

    @property
    def decisive(self) -> bool:
        """Whether this evidence may say *reproduced* or *differs* (:func:`decisive`)."""
        return decisive(self)

    def sentence(self) -> str:
        """``"a proxy on a later kernel, with the live kernel (6.18 ...)"``."""
        where = f" ({self.config})" if self.config else ""
        the = "" if self.instrument.startswith("labkit's") else "the "
        return f"{COMPARES[self.compares]}, with {the}{self.instrument}{where}"


#: The evidence of the kernel bench's rows: the change itself, in a booted kernel.
BOOTED_CHANGE = Evidence(
    claim="",
    estimand="",
    compares="change",
    instrument="booted kernel",
    config="x86-64 6.1 tinyconfig with and without the change, -O2, QEMU -icount",
)


def decisive(ev: Evidence) -> bool:
    """Only the change itself, before and after in the same code of a booted kernel, can
    reproduce or contradict a claim.  The change's code alone in user space (UML's build
    of ``lib/iov_iter.o``) lacks x86-64's user-access code: there the 2023 import change
    saves 7 instructions per ``readv(1)``, in a booted x86-64 kernel 60."""
    return ev.role == "claim" and ev.compares == "change" and ev.instrument == "booted kernel"


def load(path: str | Path | None = None) -> dict[str, Evidence]:
    """Every row of every result's evidence.csv (or of the one file ``path``), by claim id.

    Raises:
        ValueError: naming the file, for a missing column, a row of another result, an
            empty claim or estimand, a duplicate claim, or a ``compares``, ``instrument``
            or ``role`` outside the vocabulary.
    """
    found = ledgers.rows("evidence.csv", COLUMNS) if path is None else ledgers.read(path, COLUMNS)
    out: dict[str, Evidence] = {}
    for row in found:
        ev = Evidence(*(row.fields[c].strip() for c in COLUMNS))
        problems = [
            f"{name} {value!r} not one of {sorted(allowed)}"
            for name, value, allowed in (
                ("compares", ev.compares, COMPARES),
                ("instrument", ev.instrument, INSTRUMENTS),
                ("role", ev.role, ROLES),
            )
            if value not in allowed
        ]
        if not ev.claim or not ev.estimand:
            problems.append("empty claim or estimand")
        if ev.claim in out:
            problems.append(f"claim {ev.claim} twice")
        if problems:
            raise ValueError(f"{row.where}: {'; '.join(problems)}")
        out[ev.claim] = ev
    return out


@cache
def _table() -> dict[str, Evidence]:
    return load()


def of(claim: str | None) -> Evidence | None:
    """The declared evidence of ``claim`` (None for no claim or no row)."""
    return _table().get(claim) if claim else None


def restate(rule: Verdict, ev: Evidence | None) -> Verdict:
    """The rule's verdict as the evidence ``ev`` may state it (unchanged for None).

    *not comparable* and *not measured* stay as they are.  A method check says *check
    passed*/*check failed*; a stand-in *consistent in magnitude*/*not consistent*; the
    change itself in a booted kernel keeps *reproduced*/*differs*.  *inconclusive* stays
    *inconclusive* for all.  The reason starts with what the evidence is.
    """
    if ev is None or rule.verdict not in ("reproduced", "differs", "inconclusive"):
        return rule
    inside = {"reproduced": True, "differs": False}.get(rule.verdict)
    if ev.role == "method check":
        why = ev.note or "its outcome is fixed by construction"
        text = {True: CHECK_PASSED, False: CHECK_FAILED, None: CHECK_OPEN}[inside]
        return Verdict(
            text, f"a check of labkit's method, not a verdict on the claim ({why}): {rule.reason}"
        )
    if decisive(ev):
        return rule
    text = {True: CONSISTENT, False: NOT_CONSISTENT, None: "inconclusive"}[inside]
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
    if not factors or product.verdict in ("not comparable", "not measured"):
        return product
    within = ("reproduced", CONSISTENT)
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


__all__ = ["BOOTED_CHANGE", "Evidence", "Factor", "judge_product", "of", "restate"]
