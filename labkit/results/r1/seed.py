"""R1's published figures, from the seed mail (this folder's ``published.csv``, one row per
figure with its source: the 2019 io_uring fixed-buffer seek mail).

The mail gives one submission time per cell (head and tail, before and after the fix);
:func:`published` derives what the claims compare with (1 GiB assumed: the registration cap,
the buffer size was not published).  No interval of the original can be formed from one
measurement per cell (:data:`NO_INTERVAL`).
"""

from __future__ import annotations

import pandas as pd

from labkit.measure import ledgers

GIB_PAGES = (1 << 30) // 4096 - 1  #: pages skipped to reach the last page of 1 GiB

#: Why the original's data give no interval of their own.
NO_INTERVAL = (
    "one published measurement per cell (head and tail, before and after the fix): "
    "the original's own spread cannot be estimated (only the two heads' factor 1.109, "
    "which the headline band already uses)"
)


def table() -> pd.DataFrame:
    """published.csv with ``ns_per_op`` (the submission time, for the four timing rows)."""
    df = ledgers.published("R1")
    df["ns_per_op"] = df["value"].where(df["unit"] == "ns").astype(float)
    return df


def published() -> dict[str, float]:
    """R1's published submission times and what follows from them (1 GiB assumed for
    ``pages`` and ``ns_per_page``: the registration cap; the size was not published)."""
    t = table()
    t = t[t["unit"] == "ns"].set_index(["variant", "position"])["ns_per_op"]
    bh, bt = float(t["before", "head"]), float(t["before", "tail"])
    ah, at = float(t["after", "head"]), float(t["after", "tail"])
    return {
        "before_head_ns": bh,
        "before_tail_ns": bt,
        "after_head_ns": ah,
        "after_tail_ns": at,
        "pages": float(GIB_PAGES),
        "ns_per_page": (bt - at) / GIB_PAGES,
        "tail_speedup": bt / at,
        "before_tail_over_head": bt / bh,
        "after_tail_over_head": at / ah,
    }


def published_figure(key: str) -> float:
    """One of :func:`published` (a claim's published figure)."""
    return published()[key]


__all__ = ["GIB_PAGES", "published", "published_figure", "table"]
