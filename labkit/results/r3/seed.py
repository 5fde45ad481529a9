"""R3's published figures, from the seed mail (this folder's ``published.csv``: eight one-second
IOPS samples per arm of fio's t/io_uring peak test over 24 NVMe drives, with their source).

:func:`published` gives the IOPS and the gain the claims compare with; :func:`original` the
original measurement's own interval of each claim (Welch 95% from the 8 + 8 samples,
:func:`labkit.measure.stats.welch_difference`, in the claim's unit).
"""

from __future__ import annotations

from dataclasses import replace

import pandas as pd

from labkit.measure import ledgers
from labkit.measure.stats import Estimate, welch_difference


def table() -> pd.DataFrame:
    """published.csv with ``ns_per_io`` = 1e9 / IOPS (aggregate over 24 drives: a rate, not a
    latency)."""
    df = ledgers.published("R3")
    df["ns_per_io"] = 1e9 / df["value"]
    return df


def published() -> dict[str, float]:
    """R3's published IOPS (mean of eight runs each side) and the gain."""
    df = table()
    before = float(df.loc[df["variant"] == "before", "value"].mean())
    after = float(df.loc[df["variant"] == "after", "value"].mean())
    return {
        "before_iops": before,
        "after_iops": after,
        "gain": after / before - 1,
        "time_saved_share": 1 - before / after,
        "n_before": int((df["variant"] == "before").sum()),
        "n_after": int((df["variant"] == "after").sum()),
    }


def gain_pct() -> float:
    """The published request-rate gain, in percent."""
    return 100 * published()["gain"]


def after_over_before() -> float:
    """The published IOPS after / before."""
    return 1 + published()["gain"]


def _scaled(e: Estimate, scale: float, offset: float, quantity: str) -> Estimate:
    return replace(e.affine(scale, offset), quantity=quantity, method=e.method + ", rescaled")


def originals() -> dict[str, Estimate]:
    """R3's request-rate gain from the 8 + 8 IOPS samples (%), and the ratio after / before."""
    df = table()
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


def original(claim_id: str) -> Estimate:
    """The original measurement's own interval of the claim ``claim_id`` (one of
    :func:`originals`)."""
    return originals()[claim_id]


__all__ = ["after_over_before", "gain_pct", "original", "originals", "published", "table"]
