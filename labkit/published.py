"""The published figures of the three results, as DataFrames.

The tables live in ``data/published/`` (one CSV per result, one row per
published figure, each with its source: seed file, mail subject, author and
date).  :func:`load` reads one and adds derived columns:

* R1: ``ns_per_op`` (the submission time, for the four timing rows);
* R2: ``ns_per_call`` = elapsed seconds / calls (10M reads of 4 KiB), and the
  same for usr and sys time (``usr_ns_per_call``, ``sys_ns_per_call``);
* R3: ``ns_per_io`` = 1e9 / IOPS (aggregate over 24 drives: a rate, not a latency).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from labkit import config
from labkit.measure.results import READ_CSV_EXACT

RESULTS = ("R1", "R2", "R3")
SOURCE_COLUMNS = ("source_file", "source_subject", "source_author", "source_date")


def published_dir() -> Path:
    """``data/published`` of the checkout, or its copy in an installed labkit (not LABKIT_DATA)."""
    return config.resource("published")


def path(result_id: str) -> Path:
    """The CSV of ``result_id`` ("R1", "R2" or "R3")."""
    rid = str(result_id).upper()
    if rid not in RESULTS:
        raise KeyError(f"unknown result {result_id!r}; expected one of {RESULTS}")
    return published_dir() / f"{rid}.csv"


def load_raw(result_id: str) -> pd.DataFrame:
    """The CSV exactly as stored, without derived columns."""
    p = path(result_id)
    if not p.exists():
        raise FileNotFoundError(f"published figures for {result_id} not found at {p}")
    return pd.read_csv(p, **READ_CSV_EXACT)


def load(result_id: str) -> pd.DataFrame:
    """The published figures of ``result_id`` with derived per-operation columns."""
    df = load_raw(result_id)
    rid = str(result_id).upper()
    if rid == "R1":
        df["ns_per_op"] = df["value"].where(df["unit"] == "ns").astype(float)
    elif rid == "R2":
        df["ns_per_call"] = df["value"] * 1e9 / df["calls"]
        df["usr_ns_per_call"] = df["usr_s"] * 1e9 / df["calls"]
        df["sys_ns_per_call"] = df["sys_s"] * 1e9 / df["calls"]
    elif rid == "R3":
        df["ns_per_io"] = 1e9 / df["value"]
    return df


def load_all() -> pd.DataFrame:
    """All three tables concatenated (columns a result lacks are NaN)."""
    return pd.concat([load(r) for r in RESULTS], ignore_index=True)


def r2_figures() -> dict[str, float]:
    """R2's published figures per call (mean of the two runs of each): ns, and the saving."""
    df = load("R2")
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


def r3_figures() -> dict[str, float]:
    """R3's published IOPS (mean of eight runs each side) and the gain."""
    df = load("R3")
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


__all__ = [
    "RESULTS",
    "SOURCE_COLUMNS",
    "load",
    "load_all",
    "load_raw",
    "path",
    "published_dir",
    "r2_figures",
    "r3_figures",
]
