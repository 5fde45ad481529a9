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
  ("" where the original data allow no interval).
"""

from __future__ import annotations

from functools import cache
from typing import Any

from labkit.measure import host, sessions, setups
from labkit.measure.verdicts import Verdict, judge

#: The columns :func:`judge_row` adds to a summary row.
COLUMNS = ("scope", "original")


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
) -> tuple[Verdict, dict[str, str]]:
    """(the verdict, the ``scope`` and ``original`` columns) of a claim's row.

    ``claim`` None (a row without a claim id) is judged by the rule alone.
    """
    found = setups.mismatches(claim, quick) if claim else []
    v = judge(measured, band, noise=noise, setup=found)
    n = int(getattr(measured, "n_sessions", 1) or 1) if measured is not None else 1
    # one scope for every row of a run (the summary's header line); each row's own spread
    # between sessions is its noise column (Estimate.noise is the between-session SD then)
    where = sessions.scope_text(n, fingerprint())
    where += " (noise: the SD between sessions)" if n > 1 else ""
    extra = {"scope": where, "original": ""}
    if claim and measured is not None:
        extra["original"] = consistency(measured, original)
    return v, extra


__all__: list[str] = []  # internal: where a verdict holds, for labkit.run.reproduce
