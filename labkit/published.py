"""The published figures of the three results, as DataFrames.

The tables live in ``data/published/`` (one CSV per result, one row per
published figure, each with its source: seed file, mail subject, author and
date).  :func:`load` reads one and adds derived columns:

* R1: ``ns_per_op`` (the submission time, for the four timing rows);
* R2: ``ns_per_call`` = elapsed seconds / calls (10M reads of 4 KiB), and the
  same for usr and sys time (``usr_ns_per_call``, ``sys_ns_per_call``);
* R3: ``ns_per_io`` = 1e9 / IOPS (aggregate over 24 drives: a rate, not a latency).

Each headline quantity also has a declared tolerance band (``bands.csv``,
:func:`bands`, :func:`band`): what difference from the published figure still
counts as the same result, with its reason and source.  Bands come from the
claims themselves (their wording, the spread of the published samples), not
from our measurements, and are the same in quick and full mode.
:func:`figures` gives the published figure each band surrounds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from labkit import config
from labkit.measure.results import READ_CSV_EXACT

SOURCE_COLUMNS = ("source_file", "source_subject", "source_author", "source_date")
GIB_PAGES = (1 << 30) // 4096 - 1  #: pages skipped to reach the last page of 1 GiB


def published_dir() -> Path:
    """``data/published`` of the checkout, or its copy in an installed labkit (not LABKIT_DATA)."""
    return config.resource("published")


def _results() -> tuple[str, ...]:
    """The results with published figures: one ``R<n>.csv`` each in :func:`published_dir`."""
    stems = [p.stem for p in published_dir().glob("R*.csv") if p.stem[1:].isdigit()]
    return tuple(sorted(stems, key=lambda s: int(s[1:])))


#: The results with published figures ("R1", "R2", "R3", ...), read from data/published/.
RESULTS = _results()


def path(result_id: str) -> Path:
    """The CSV of ``result_id`` (one of :data:`RESULTS`: "R1", "R2", "R3")."""
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


def r1_figures() -> dict[str, float]:
    """R1's published submission times and what follows from them (1 GiB assumed for
    ``pages`` and ``ns_per_page``: the registration cap; the size was not published)."""
    t = load("R1")
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


def figures() -> dict[str, float]:
    """The derived published figures the tolerance bands surround, by key.

    R1 (1 GiB assumed, the registration cap): ``before_tail_ns``,
    ``ns_per_page`` ((before tail - after tail) / pages), ``tail_speedup``
    (before tail / after tail, "about 755x"), ``after_tail_over_head``, ``after_tail_ns``
    (F: the after-fix tail submission);
    R2: ``saved_share_pct``, ``saved_ns``, ``readv_before_over_after``;
    R3: ``gain_pct``, ``readv_over_read`` (IOPS after / before).
    A band may instead name a quantity of its result's own CSV (:func:`table_figure`).
    """
    p1, p2, p3 = r1_figures(), r2_figures(), r3_figures()
    return {
        "before_tail_ns": p1["before_tail_ns"],
        "ns_per_page": p1["ns_per_page"],
        "tail_speedup": p1["tail_speedup"],
        "after_tail_over_head": p1["after_tail_over_head"],
        "after_tail_ns": p1["after_tail_ns"],
        "saved_share_pct": 100 * p2["saved_share"],
        "saved_ns": p2["saved_ns"],
        "readv_before_over_after": p2["readv_before_ns"] / p2["readv_after_ns"],
        "gain_pct": 100 * p3["gain"],
        "readv_over_read": 1 + p3["gain"],
    }


BAND_COLUMNS = (
    "claim",
    "result",
    "quantity",
    "figure",
    "band_low",
    "band_high",
    "null",
    "unit",
    "reason",
    "source",
    "declared",
    "declared_in",
    "status",
    "amendment",
)
#: Values of the ``status`` column: the band in force, or an earlier one it amended.
STATUSES = ("in force", "amended")


@dataclass(frozen=True)
class Band:
    """A declared tolerance band around a published figure (or a claim's direction)."""

    claim: str  #: the claim's id, e.g. "R2.saved_share" (:mod:`labkit.claims`)
    result: str
    quantity: str
    low: float
    high: float
    null: float  #: the value meaning "no effect" (0 for gains and costs, 1 for ratios)
    unit: str
    reason: str
    source: str
    figure: str = ""  #: key of :func:`figures`; empty for a direction-only band
    published: float | None = None  #: the published figure, None for a direction-only band
    declared: str = ""  #: the date the band was first committed (YYYY-MM-DD)
    declared_in: str = ""  #: the commit that first held it ("" while not yet committed)
    status: str = "in force"  #: "in force", or "amended" for a band an amendment replaced
    amendment: str = ""  #: what was amended and why, or when this band was replaced

    @property
    def effect(self) -> float | None:
        """How far the published figure is from no effect (None for a direction-only band)."""
        return None if self.published is None else abs(self.published - self.null)

    def contains(self, value: float) -> bool:
        """``low <= value <= high``."""
        return self.low <= float(value) <= self.high


def bands_path() -> Path:
    """``data/published/bands.csv``."""
    return published_dir() / "bands.csv"


def bands(*, amended: bool = False) -> pd.DataFrame:
    """The declared tolerance bands in force, one row per claim (and per (result,
    quantity)), with ``published``; ``amended=True`` adds the earlier bands that an
    amendment replaced (``status`` "amended"), which stay in the file.

    Every row says when it was declared (``declared``, ``declared_in``: the date and
    commit that first held it) and, for an amendment, what it amended and why.

    Raises:
        ValueError: for a missing column, a status not in :data:`STATUSES`, a duplicate
            claim id or (result, quantity) among the bands in force, a claim id not of its
            result, a band with low > high, or an unknown figure key.
    """
    df = pd.read_csv(bands_path(), **READ_CSV_EXACT)
    missing = [c for c in BAND_COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(f"{bands_path()}: missing column(s) {missing}")
    for c in ("declared", "declared_in", "amendment"):
        df[c] = df[c].fillna("").astype(str)
    bad_status = sorted(set(df["status"]) - set(STATUSES))
    if bad_status:
        raise ValueError(f"{bands_path()}: status must be one of {STATUSES}, got {bad_status}")
    old = df[df["status"] == "amended"]
    df = df[df["status"] == "in force"].reset_index(drop=True)
    orphans = sorted(set(old["claim"]) - set(df["claim"]))
    if orphans:
        raise ValueError(f"{bands_path()}: amended bands without a band in force: {orphans}")
    df["figure"] = df["figure"].fillna("").astype(str)
    for c in ("band_low", "band_high", "null"):
        df[c] = df[c].astype(float)
    dup = df.duplicated(["claim"])
    if dup.any():
        raise ValueError(f"{bands_path()}: duplicate claim ids {df.loc[dup, 'claim'].tolist()}")
    stray = [c for c, r in zip(df["claim"], df["result"], strict=True) if c.split(".")[0] != r]
    if stray:
        raise ValueError(f"{bands_path()}: claim ids not of their result: {stray}")
    dup = df.duplicated(["result", "quantity"])
    if dup.any():
        raise ValueError(f"{bands_path()}: duplicate bands {df.loc[dup, 'quantity'].tolist()}")
    bad = df[~(df["band_low"] < df["band_high"])]
    if len(bad):
        raise ValueError(
            f"{bands_path()}: band_low must be < band_high: {bad['quantity'].tolist()}"
        )
    figs = figures()

    def published(t: pd.DataFrame) -> list[float]:
        return [
            _published_of(str(r), str(k), figs)
            for r, k in zip(t["result"], t["figure"], strict=True)
        ]

    df["published"] = published(df)
    if amended and len(old):
        old = old.assign(figure=old["figure"].fillna("").astype(str))
        old = old.assign(published=published(old))
        for c in ("band_low", "band_high", "null"):
            old[c] = old[c].astype(float)
        df = pd.concat([df, old], ignore_index=True)
    return df


def _published_of(result_id: str, key: str, figs: dict[str, float]) -> float:
    """The published figure a band's ``figure`` key names (NaN for none)."""
    if not key:
        return math.nan
    if key in figs:
        return figs[key]
    value = table_figure(result_id, key)
    if value is None:
        raise ValueError(f"{bands_path()}: unknown figure key {key!r} of {result_id}")
    return value


def table_figure(result_id: str, quantity: str) -> float | None:
    """The mean ``value`` of the rows of ``R<n>.csv`` whose ``quantity`` is ``quantity``.

    The figure a band surrounds, for a result with no derived figures of its own
    in :func:`figures`: a new result needs only its CSV and its bands.  None if
    the result has no such rows (or no CSV).
    """
    try:
        df = load_raw(result_id)
    except (KeyError, FileNotFoundError):
        return None
    if "quantity" not in df.columns or "value" not in df.columns:
        return None
    sel = df.loc[df["quantity"] == quantity, "value"]
    return float(sel.astype(float).mean()) if len(sel) else None


def band(result_id: str, quantity: str) -> Band | None:
    """The declared band of one recorded quantity, or None if it has none."""
    df = bands()
    return _band_of(df[(df["result"] == result_id) & (df["quantity"] == quantity)])


def claim_band(claim_id: str, table: pd.DataFrame | None = None) -> Band | None:
    """The declared band of the claim ``claim_id`` (e.g. "R2.saved_share"), or None.

    ``table``: :func:`bands` read once by a caller that looks up many claims (reading
    and checking the bands file takes tens of milliseconds); None reads it.
    """
    df = bands() if table is None else table
    return _band_of(df[df["claim"] == claim_id])


def amended_bands(claim_id: str) -> list[Band]:
    """The earlier bands of ``claim_id`` that an amendment replaced, oldest first ([] for
    none): a row judged against its band in force is also judged against these."""
    df = bands(amended=True)
    sel = df[(df["claim"] == claim_id) & (df["status"] == "amended")]
    return [_band_row(r) for _, r in sel.sort_values("declared", kind="stable").iterrows()]


def _band_of(sel: pd.DataFrame) -> Band | None:
    if sel.empty:
        return None
    return _band_row(sel.iloc[0])


def _band_row(r: pd.Series) -> Band:
    pub = float(r["published"])
    return Band(
        claim=str(r["claim"]),
        result=str(r["result"]),
        quantity=str(r["quantity"]),
        low=float(r["band_low"]),
        high=float(r["band_high"]),
        null=float(r["null"]),
        unit=str(r["unit"]),
        reason=str(r["reason"]),
        source=str(r["source"]),
        figure=str(r["figure"]),
        published=None if math.isnan(pub) else pub,
        declared=str(r["declared"]),
        declared_in=str(r["declared_in"]),
        status=str(r["status"]),
        amendment=str(r["amendment"]),
    )


__all__ = [
    "GIB_PAGES",
    "Band",
    "amended_bands",
    "band",
    "bands",
    "claim_band",
    "load",
    "r1_figures",
    "r2_figures",
    "r3_figures",
]
