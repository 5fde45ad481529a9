"""Bands from the original's own uncertainty, beside the headline bands.

The headline bands (``data/published/bands.csv``) surround the *rounded* claim
("about 3%").  The original measurement had its own uncertainty: R2's mail gives
two runs per arm (readv(1) 1.84 and 1.83 s before, 1.78 and 1.78 s after, 10M
calls), R3's eight one-second samples per arm.  :func:`original_estimates` turns
them into Welch 95% intervals (:func:`labkit.measure.stats.welch_difference`)
in the unit of each claim (the mean the change is expressed against taken as
known): for R2's saving about [-0.5, 6.5]%, so the original
measurement alone cannot tell a 0.5% saving from a 6% one.
:func:`consistency` then says whether labkit's interval is consistent with the
original measurement as well as whether it lies in the rounded headline's band.

R1 gives one measurement per cell (head and tail, before and after): no
interval can be formed from it (:data:`NO_INTERVAL`).
"""

from __future__ import annotations

from dataclasses import replace

from labkit import published
from labkit.measure.resampling import Estimate
from labkit.measure.stats import welch_difference

#: Claims whose original data allow no interval, and why.
NO_INTERVAL = {
    "R1": "one published measurement per cell (head and tail, before and after the fix): "
    "the original's own spread cannot be estimated (only the two heads' factor 1.109, "
    "which the headline band already uses)",
}


def _scaled(e: Estimate, scale: float, offset: float, quantity: str) -> Estimate:
    return replace(e.affine(scale, offset), quantity=quantity, method=e.method + ", rescaled")


def r2_estimates() -> dict[str, Estimate]:
    """R2's saving from Jens's two runs per arm: share (%), ns per call, and the ratio."""
    df = published.load("R2")
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


def r3_estimates() -> dict[str, Estimate]:
    """R3's request-rate gain from the 8 + 8 IOPS samples (%), and the ratio after / before."""
    df = published.load("R3")
    iops = df[df["quantity"] == "iops"]
    before = iops[iops["variant"] == "before"]["value"].to_numpy(dtype=float)
    after = iops[iops["variant"] == "after"]["value"].to_numpy(dtype=float)
    d = welch_difference(after, before, quantity="IOPS after - before")
    gain = _scaled(d, 100 / before.mean(), 0.0, "original: request-rate gain at peak (%)")
    return {
        "R3.ubuf_gain": gain,
        "R3.read_gain": gain,
        "R3.cpu_ratio": _scaled(d, 1 / before.mean(), 1.0, "original: IOPS after / before"),
    }


def original_estimates() -> dict[str, Estimate]:
    """Every claim whose original data give an interval, by claim id (see the module)."""
    return {**r2_estimates(), **r3_estimates()}


def consistency(measured: Estimate | None, original: Estimate | None) -> str:
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


__all__ = [
    "consistency",
    "original_estimates",
]
