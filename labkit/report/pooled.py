"""Several summaries of one host (sessions, reproductions), pooled with the session on top.

``labkit reproduce --sessions N`` pools inside the reproduction (its measuring
phase repeats N times, :mod:`labkit.claims.schedule`, and each claim's row is
already pooled).  :func:`pool_summaries` does the same for the summaries of
separate reproductions (``benchmarks/verdict_stability.py``): per claim, the runs'
estimates pooled over sessions (:func:`labkit.measure.stats.pool`: the
interval has the session as the unit of replication, its width includes the
spread between sessions), judged against the same band by the same rule
(:func:`labkit.measure.verdicts.verdict`, stated as the row's evidence allows:
:func:`labkit.measure.verdicts.restate`), with the between-session SD and the
scope ("on <host>, over N sessions") beside it.  A claim that is *not
comparable* in its sessions stays so; a claim a session did not measure is
pooled over the sessions that did.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pandas as pd

from labkit.measure import ledgers
from labkit.measure.stats import Estimate, pool
from labkit.measure.verdicts import NOT_COMPARABLE, restate, verdict
from labkit.report.summary import number as _num
from labkit.report.summary import scope_text

#: Columns the pooled summary adds to the summary's.
ADDED = ["n_sessions", "between_session", "session_estimates", "scope"]


def _estimate(r: Any) -> Estimate | None:
    est, lo, hi = _num(r.get("estimate")), _num(r.get("ci_low")), _num(r.get("ci_high"))
    if not (math.isfinite(est) and math.isfinite(lo) and math.isfinite(hi)):
        return None
    n = _num(r.get("n_runs"))
    return Estimate(
        quantity=str(r.get("quantity")),
        estimate=est,
        ci_low=lo,
        ci_high=hi,
        confidence=0.95,
        method=str(r.get("method") or ""),
        n_runs=int(n) if math.isfinite(n) else 1,
        n_batches=1,
        within_run=math.nan,
        between_run=_num(r.get("noise")),
    )


def _key(df: pd.DataFrame) -> list[str]:
    return (
        ["claim"] if "claim" in df.columns and df["claim"].notna().all() else ["result", "quantity"]
    )


def pool_summaries(tables: Sequence[pd.DataFrame], fingerprint: str | None = None) -> pd.DataFrame:
    """One summary from the summaries of several sessions (see the module).

    Rows keep the first session's columns (published, band, unit, notebook ...);
    ``estimate``, ``ci_low``, ``ci_high``, ``n_runs``, ``noise``, ``verdict``,
    ``method`` and ``reason`` are the pooled ones, and :data:`ADDED` columns follow.

    Raises:
        ValueError: with no tables.
    """
    if not tables:
        raise ValueError("pool_summaries: no session summaries")
    key = _key(tables[0])
    indexed = [t.drop_duplicates(key, keep="last").set_index(key, drop=False) for t in tables]
    keys: list[Any] = []
    for t in indexed:
        keys += [k for k in t.index if k not in keys]
    rows = []
    for k in keys:
        seen = [t.loc[k] for t in indexed if k in t.index]
        row = dict(seen[0])
        ests = [e for e in (_estimate(r) for r in seen) if e is not None]
        verdicts = {str(r.get("verdict")) for r in seen}
        row["session_estimates"] = "; ".join(f"{e.brief()}" for e in ests)
        if not ests:
            row.update(n_sessions=len(seen), between_session=math.nan)
        elif verdicts == {NOT_COMPARABLE}:
            p = pool(ests)
            row.update(estimate=p.estimate, ci_low=p.ci_low, ci_high=p.ci_high)
            row.update(n_sessions=p.n_sessions, between_session=p.between_session)
        else:
            p = pool(ests)
            rule = verdict(
                p.estimate,
                p.ci_low,
                p.ci_high,
                _num(row.get("band_low")),
                _num(row.get("band_high")),
                unit=str(row.get("unit") or ""),
            )
            claim = row.get("claim")
            v = restate(rule, ledgers.evidence_of(claim if isinstance(claim, str) else None))
            row.update(
                estimate=p.estimate,
                ci_low=p.ci_low,
                ci_high=p.ci_high,
                n_runs=p.n_runs,
                noise=p.noise,
                verdict=v.verdict,
                method=p.method,
                reason=f"{v.reason} (pooled over {p.n_sessions} sessions; per session: "
                f"{row['session_estimates']})",
                n_sessions=p.n_sessions,
                between_session=p.between_session,
            )
        row["scope"] = scope_text(row["n_sessions"], fingerprint, row["between_session"])
        rows.append(row)
    cols = list(tables[0].columns) + [c for c in ADDED if c not in tables[0].columns]
    return pd.DataFrame(rows, columns=cols)


__all__: list[str] = []  # internal: the summaries of separate reproductions pooled
