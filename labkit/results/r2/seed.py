"""R2's published figures, from the seed mail (this folder's ``published.csv``: Jens Axboe's
two runs per arm of 10M readv(1) calls of 4 KiB, stock and patched, with their source).

:func:`published` gives the per-call figures the claims compare with; :func:`original` the
original measurement's own interval of each claim (Welch 95% from the two runs per arm,
:func:`labkit.measure.stats.welch_difference`, in the claim's unit, the mean the change is
expressed against taken as known): about [-0.5, 6.5]% for the saving, so the original
measurement alone cannot tell a 0.5% saving from a 6% one.
"""

from __future__ import annotations

from dataclasses import replace

import pandas as pd

from labkit.measure import ledgers
from labkit.measure.stats import Estimate, welch_difference


def table() -> pd.DataFrame:
    """published.csv with ``ns_per_call`` = elapsed seconds / calls, and the same for usr and sys
    time (``usr_ns_per_call``, ``sys_ns_per_call``)."""
    df = ledgers.published("R2")
    df["ns_per_call"] = df["value"] * 1e9 / df["calls"]
    df["usr_ns_per_call"] = df["usr_s"] * 1e9 / df["calls"]
    df["sys_ns_per_call"] = df["sys_s"] * 1e9 / df["calls"]
    return df


def published() -> dict[str, float]:
    """R2's published figures per call (mean of the two runs of each): ns, and the saving."""
    df = table()
    el = df[df["quantity"] == "elapsed"]

    def mean(variant: str, kernel: str) -> float:
        sel = el[(el["variant"] == variant) & (el["kernel"] == kernel)]
        if sel.empty:
            raise KeyError(f"published R2 has no {variant}/{kernel} rows")
        return float(sel["ns_per_call"].mean())

    read = mean("read", "stock")
    before, after = mean("readv1", "stock"), mean("readv1", "patched")
    return {
        "read_ns": read,
        "readv_before_ns": before,
        "readv_after_ns": after,
        "saved_ns": before - after,
        "saved_share": (before - after) / before,
        "readv_minus_read_ns": after - read,
    }


def published_figure(key: str) -> float:
    """One of :func:`published` (a claim's published figure)."""
    return published()[key]


def saved_share_pct() -> float:
    """The published time saved per call, in percent."""
    return 100 * published()["saved_share"]


def before_over_after() -> float:
    """The published readv(1) time before / after the change."""
    f = published()
    return f["readv_before_ns"] / f["readv_after_ns"]


def _scaled(e: Estimate, scale: float, offset: float, quantity: str) -> Estimate:
    return replace(e.affine(scale, offset), quantity=quantity, method=e.method + ", rescaled")


def originals() -> dict[str, Estimate]:
    """R2's saving from Jens's two runs per arm: share (%), ns per call, and the ratio."""
    df = table()
    rv = df[(df["quantity"] == "elapsed") & (df["variant"] == "readv1")]
    before = rv[rv["kernel"] == "stock"]["value"].to_numpy(dtype=float)
    after = rv[rv["kernel"] == "patched"]["value"].to_numpy(dtype=float)
    calls = float(rv["calls"].iloc[0])
    d = welch_difference(before, after, quantity="readv(1) seconds saved, stock - patched")
    mb, ma = before.mean(), after.mean()
    return {
        "R2.saved_share": _scaled(d, 100 / mb, 0.0, "original: time saved per call (%)"),
        "R2.saved_ns": _scaled(d, 1e9 / calls, 0.0, "original: ns saved per call"),
        "R2.live_ratio": _scaled(d, 1 / ma, 1.0, "original: readv(1) before / after"),
    }


def original(claim_id: str) -> Estimate:
    """The original measurement's own interval of the claim ``claim_id`` (one of
    :func:`originals`)."""
    return originals()[claim_id]


__all__ = [
    "before_over_after",
    "published",
    "published_figure",
    "original",
    "originals",
    "saved_share_pct",
    "table",
]
