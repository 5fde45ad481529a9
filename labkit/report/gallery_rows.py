"""A bundle's summary rows as today's claims: keyed by claim id, judged by today's bands.

:func:`normalised` is what :func:`labkit.report.gallery.compare` reads every bundle's
summary through: every row with a band is judged again by today's band and rule, its
verdict stated as its evidence allows (:func:`labkit.measure.verdicts.restate`), and each row
names its estimator (:mod:`labkit.report.estimators`).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import pandas as pd

from labkit.measure import ledgers
from labkit.measure.verdicts import judge, restate
from labkit.report import estimators


def normalised(summary: pd.DataFrame, bands: pd.DataFrame | None = None) -> pd.DataFrame:
    """A bundle's summary keyed by claim id and judged by today's bands and rule.

    A row with a claim is judged again against today's band of that claim around the
    published figure it recorded, not comparable where its setup says so
    (:func:`labkit.measure.verdicts.judge`), its verdict stated as its evidence allows,
    the verdict it was recorded with kept in ``recorded_verdict``.  ``key`` is the claim
    id, else ``"result: quantity"``; ``measures`` is the quantity the row measured, by
    the label it was recorded with: rows of one key that measure different quantities
    are never pooled (nor rows whose summaries name different ``definition`` s), and
    ``estimator`` names how its figure was estimated (:mod:`labkit.report.estimators`).
    ``bands``: :func:`labkit.measure.ledgers.bands`, read once by a caller with many
    summaries (None: read here).
    """
    bands = ledgers.bands() if bands is None else bands
    out = summary.copy()
    if "claim" not in out.columns:
        out["claim"] = None
    rows = []
    for _, r in out.iterrows():
        r = r.copy()
        claim = r.get("claim")
        claim = claim if isinstance(claim, str) and claim else None
        r["claim"] = claim
        r["recorded_verdict"] = r.get("verdict")
        r["measures"] = str(r["quantity"])
        band = ledgers.claim_band(claim, bands) if claim else None
        if band is not None:
            band = replace(band, published=_finite_or_none(r.get("published")))
            quick = bool(r.get("quick")) if not pd.isna(r.get("quick", None)) else False
            v = judge(estimators.estimate_of(r), band, setup=ledgers.mismatches(claim, quick))
            v = restate(v, ledgers.evidence_of(claim))
            r["verdict"] = v.verdict
            r["band_low"], r["band_high"] = band.low, band.high
        r["key"] = claim or f"{r['result']}: {r['quantity']}"
        r["estimator"] = estimators.of_row(r).id
        rows.append(r)
    return pd.DataFrame(rows)


def _finite_or_none(value: Any) -> float | None:
    """A recorded figure as a float, None when missing or not a number."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


__all__: list[str] = []  # internal: labkit.report.gallery reads bundles through it
