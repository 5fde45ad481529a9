"""Where a summary row's verdict holds, and what else it is judged against.

:func:`judge_row` is what :func:`labkit.report.summary.record` asks for a claim:

* the verdict: *not comparable* when the claim's declared setup differs from
  labkit's in this mode (:mod:`labkit.measure.setups`), else the rule's
  (:func:`labkit.measure.verdicts.judge`);
* ``scope``: the host fingerprint and the sessions behind the interval
  (``"on AMD EPYC fam 25 model 1 stepping 1, KVM, ucode 0x1000065, one session
  (the interval covers runs, not sessions)"``);
* ``original``: whether the figure is consistent with the original
  measurement's own interval (``original``, which the claim declares from its
  result's seed data), beside the verdict against the rounded headline's band
  ("" where the original data allow no interval);
* ``estimand`` and ``evidence``: what the claim is about and what the row's
  figure compares, with what and where (:mod:`labkit.measure.evidence`); the
  verdict is stated as that evidence may state it (only the change itself in a
  booted kernel says *reproduced* or *differs*; a product is judged with its
  factors);
* ``amended``: the row's verdict under each earlier declaration of its band or
  setup made after results existed (:func:`labkit.published.amended_bands`,
  ``after_results`` in setups.csv), "" where there is none.
"""

from __future__ import annotations

import dataclasses
from functools import cache
from typing import Any

from labkit import published
from labkit.measure import evidence, host, sessions, setups
from labkit.measure.verdicts import Verdict, judge

#: The columns :func:`judge_row` adds to a summary row.
COLUMNS = ("scope", "original", "estimand", "evidence", "amended")


@cache
def fingerprint() -> str:
    """This host's one line (:func:`labkit.measure.host.fingerprint`), read once."""
    return host.fingerprint(host.host_record())


def consistency(measured: Any, original: Any) -> str:
    """Whether labkit's interval is consistent with the original measurement's.

    "consistent with the original measurement" when the two 95% intervals overlap
    (a lenient test: two intervals can overlap while their difference is
    significant, never the reverse), "outside the original measurement's
    interval" when they are disjoint; empty when either is missing.
    """
    if measured is None or original is None:
        return ""
    o = f"[{original.ci_low:.3g}, {original.ci_high:.3g}]"
    if measured.ci_high < original.ci_low or measured.ci_low > original.ci_high:
        return f"outside the original measurement's own 95% interval {o}"
    return f"consistent with the original measurement's own 95% interval {o}"


def judge_row(
    claim: str | None,
    measured: Any,
    band: Any,
    *,
    noise: float | None = None,
    quick: bool | None = None,
    original: Any = None,
    factors: Any = None,
) -> tuple[Verdict, dict[str, str]]:
    """(the verdict, the columns of :data:`COLUMNS`) of a claim's row.

    ``claim`` None (a row without a claim id) is judged by the rule alone.  ``factors``:
    the :class:`labkit.measure.evidence.Factor` list of a product claim.
    """
    found = setups.mismatches(claim, quick) if claim else []
    ev = evidence.of(claim)
    v = _stated(judge(measured, band, noise=noise, setup=found), ev, factors)
    n = int(getattr(measured, "n_sessions", 1) or 1) if measured is not None else 1
    # one scope for every row of a run (the summary's header line); each row's own spread
    # between sessions is its noise column (Estimate.noise is the between-session SD then)
    where = sessions.scope_text(n, fingerprint())
    where += " (noise: the SD between sessions)" if n > 1 else ""
    extra = {"scope": where, "original": "", "estimand": "", "evidence": "", "amended": ""}
    if ev is not None:
        role = "" if ev.role == "claim" else f" [{ev.role}]"
        extra.update(estimand=ev.estimand, evidence=ev.sentence() + role)
    if claim and measured is not None:
        extra["original"] = consistency(measured, original)
        extra["amended"] = _amended(claim, measured, band, noise, found, ev, factors)
    return v, extra


def _stated(rule: Verdict, ev: Any, factors: Any) -> Verdict:
    """The rule's verdict as the evidence may state it, a product with its factors."""
    return evidence.judge_product(evidence.restate(rule, ev), factors or [], ev)


def _amended(
    claim: str, measured: Any, band: Any, noise: Any, found: list[Any], ev: Any, factors: Any
) -> str:
    """The row's verdict under each declaration its band or setup amended after results
    (an amended band keeps the published figure of ``band``, the band in force)."""
    said = []
    for old in published.amended_bands(claim):
        then = dataclasses.replace(band, low=old.low, high=old.high) if band else old
        v = _stated(judge(measured, then, noise=noise, setup=found), ev, factors)
        said.append(
            f"against the band declared on {old.declared} ({old.declared_in}), "
            f"[{old.low:g}, {old.high:g}], {old.amendment}: {v.verdict}"
        )
    late = [m for m in found if m.after_results]
    if late:
        v = _stated(judge(measured, band, noise=noise), ev, factors)
        when = ", ".join(sorted({f"{m.declared} ({m.declared_in})" for m in late}))
        said.append(
            f"setups declared on {when}, after results ({late[0].after_results}); "
            f"against its band alone: {v.verdict}"
        )
    return "; ".join(said)


__all__: list[str] = []  # internal: where a verdict holds, for labkit.run.reproduce
