"""A bundle's summary rows as today's claims: keyed by claim id, judged by today's bands.

:func:`normalised` is what :func:`labkit.report.gallery.compare` reads every bundle's
summary through: old rows (before claim ids) get their claim from their label, every
row with a band is judged again by today's band and rule, its verdict stated as its
evidence allows (:mod:`labkit.measure.evidence`), and each row names its estimator
(:mod:`labkit.report.estimators`).
"""

from __future__ import annotations

import pandas as pd

from labkit import published
from labkit.measure import evidence, setups
from labkit.measure.verdicts import judge
from labkit.report import estimators

#: Labels of earlier summaries (before claim ids) that today's bands cannot map, measuring
#: the same thing: label -> claim id.  Renamed since, or a claim with no band.
#: (R3's old instruction row, READV(IOVEC) against READ, is not R3's rewrite: not mapped.)
RENAMED = {
    "after the fix: tail / head": "R1.tail_over_head",
    "live: READ_FIXED tail / head on today's kernel": "R1.live_tail_over_head",
    "model: ns saved per request by READV -> READ, no deferral": "R3.model_ns_saved",
}


def normalised(summary: pd.DataFrame, bands: pd.DataFrame | None = None) -> pd.DataFrame:
    """A bundle's summary keyed by claim id and judged by today's bands and rule.

    Rows without a ``claim`` (summaries from before claim ids) get one from their label
    (today's bands, or :data:`RENAMED`); a row with a claim is judged again against
    today's band of that claim, not comparable where its setup says so
    (:func:`labkit.measure.verdicts.judge`), the verdict it was recorded with kept in
    ``recorded_verdict``.  ``key`` is the claim id, else ``"result: quantity"``;
    ``measures`` is the quantity the row measured, by the label it was recorded
    with (up to :data:`RENAMED`): rows of one key that measure different quantities
    are never pooled (nor rows whose summaries name different ``definition`` s).
    ``bands``: :func:`labkit.published.bands`, read once by a caller with many
    summaries (None: read here).
    """
    bands = published.bands() if bands is None else bands
    by_label = dict(zip(bands["quantity"], bands["claim"], strict=True))
    out = summary.copy()
    if "claim" not in out.columns:
        out["claim"] = None
    rows = []
    for _, r in out.iterrows():
        r = r.copy()
        claim = r.get("claim")
        if not isinstance(claim, str) or not claim:
            claim = by_label.get(str(r["quantity"])) or RENAMED.get(str(r["quantity"]))
        r["claim"] = claim
        r["recorded_verdict"] = r.get("verdict")
        label = str(r["quantity"])
        r["measures"] = label
        band = published.claim_band(claim, bands) if claim else None
        if band is not None:
            quick = bool(r.get("quick")) if not pd.isna(r.get("quick", None)) else False
            v = judge(estimators.estimate_of(r), band, setup=setups.mismatches(claim, quick))
            v = evidence.restate(v, evidence.of(claim))
            r["verdict"], r["quantity"] = v.verdict, band.quantity
            r["band_low"], r["band_high"] = band.low, band.high
            if label in RENAMED:  # renamed since, the same quantity
                r["measures"] = band.quantity
        r["key"] = claim or f"{r['result']}: {r['quantity']}"
        r["estimator"] = estimators.of_row(r).id
        rows.append(r)
    return pd.DataFrame(rows)


__all__: list[str] = []  # internal: labkit.report.gallery reads bundles through it
