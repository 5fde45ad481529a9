"""The results' ledgers: each result's own facts, one CSV file per kind in its folder.

A result's folder (``labkit/results/rN/``, under :func:`labkit.config.results_dir`) holds,
beside its code, the declarations that are its own (:data:`KINDS`; columns in
``labkit/results/README.md``):

* ``published.csv``: its published figures, one row each with its source in the seed mail
  (seed file, mail subject, author and date): :func:`published` reads one as stored.  What
  a result derives from its table (per-call times, the gains its claims compare with) is
  the result's own (each result's ``seed.py``);
* ``bands.csv``: its claims' declared tolerance bands (:func:`bands`, :func:`claim_band`,
  :class:`Band`): what difference from the published figure still counts as the same
  result, with its reason and source.  Bands come from the claims themselves (their
  wording, the spread of the published samples), not from our measurements, and are the
  same in quick and full mode.  The figure a band surrounds is the claim's
  (``Claim.published``);
* ``setups.csv``: where a claim's setup differs from labkit's (:mod:`labkit.measure.setups`;
  a result with no such row has no file);
* ``evidence.csv``: what each claim's figure compares, and with what
  (:mod:`labkit.measure.evidence`).

The ledgers are append-only declarations: an amended band or a withdrawn setup stays in its
file.  A reader of one kind reads every result's file of that kind, result by result (R1,
R2, ..., R10), each file's rows in their order: :func:`rows` is that one reader.  A file
holds only its own result's rows: a row whose claim id or ``result`` names another result
is refused, naming the file and the line.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from labkit import config
from labkit.measure.results import READ_CSV_EXACT

#: The ledgers a result's folder may hold.
KINDS = ("published.csv", "bands.csv", "setups.csv", "evidence.csv")


@dataclass(frozen=True)
class Row:
    """One row of a ledger, as text (an empty cell is ""), with where it was read."""

    path: Path
    line: int  #: the row's number in its file, the header being line 1
    fields: dict[str, str]

    @property
    def where(self) -> str:
        """``".../labkit/results/r2/bands.csv line 3"``."""
        return f"{self.path} line {self.line}"


def result_of(path: Path) -> str:
    """The result whose ledger ``path`` is: "R2" for ``.../results/r2/bands.csv``."""
    return path.parent.name.upper()


def path(result_id: str, kind: str) -> Path:
    """Where the ledger ``kind`` of ``result_id`` ("R2") is, whether or not it exists."""
    return config.results_dir() / str(result_id).lower() / kind


def files(kind: str) -> list[Path]:
    """Every result's ledger ``kind`` (one of :data:`KINDS`), ordered by result number.

    Raises:
        KeyError: for a kind not in :data:`KINDS`.
    """
    if kind not in KINDS:
        raise KeyError(f"unknown ledger {kind!r}; expected one of {KINDS}")
    found = [p for p in config.results_dir().glob(f"r*/{kind}") if p.parent.name[1:].isdigit()]
    return sorted(found, key=lambda p: int(p.parent.name[1:]))


def read(file: str | Path, columns: Sequence[str]) -> list[Row]:
    """The rows of one CSV file, each cell as text.

    Raises:
        OSError: for a file that cannot be read; ValueError: naming the file, for a
            missing column among ``columns`` or a row with more cells than the header.
    """
    p = Path(file)
    with open(p, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        missing = set(columns) - set(reader.fieldnames or ())
        if missing:
            raise ValueError(f"{p}: no column(s) {sorted(missing)}")
        out = []
        for n, r in enumerate(reader, start=2):
            if None in r:
                raise ValueError(f"{p} line {n}: more cells than the header has columns")
            out.append(Row(p, n, {k: v or "" for k, v in r.items()}))
    return out


def rows(kind: str, columns: Sequence[str]) -> list[Row]:
    """Every row of every result's ledger ``kind``, result by result (:func:`files`).

    Raises:
        ValueError: naming the file, as :func:`read` does, and for a row of another
            result (its ``claim`` id's prefix or its ``result`` is not the folder's).
    """
    out = []
    for p in files(kind):
        own = result_of(p)
        for row in read(p, columns):
            claim, result = row.fields.get("claim"), row.fields.get("result")
            other = {claim.split(".")[0] if claim else own, result or own} - {own}
            if other:
                raise ValueError(f"{row.where}: a row of {sorted(other)} in {own}'s ledger")
            out.append(row)
    return out


# ---- the published figures and the bands ------------------------------------------

SOURCE_COLUMNS = ("source_file", "source_subject", "source_author", "source_date")

#: The results with published figures ("R1", "R2", "R3", ...): every result folder with a
#: ``published.csv``.
RESULTS = tuple(result_of(p) for p in files("published.csv"))


def published(result_id: str) -> pd.DataFrame:
    """The published figures of ``result_id`` (one of :data:`RESULTS`: "R1", "R2", "R3")
    exactly as stored.

    Raises:
        KeyError: for a result with no table; FileNotFoundError: for a missing file.
    """
    rid = str(result_id).upper()
    if rid not in RESULTS:
        raise KeyError(f"unknown result {result_id!r}; expected one of {RESULTS}")
    p = path(rid, "published.csv")
    if not p.exists():
        raise FileNotFoundError(f"published figures for {result_id} not found at {p}")
    return pd.read_csv(p, **READ_CSV_EXACT)


BAND_COLUMNS = (
    "claim",
    "result",
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
    low: float
    high: float
    null: float  #: the value meaning "no effect" (0 for gains and costs, 1 for ratios)
    unit: str
    reason: str
    source: str
    #: the published figure (the claim's, ``Claim.band``); None for a direction-only band
    published: float | None = None
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


def bands(*, amended: bool = False) -> pd.DataFrame:
    """The declared tolerance bands in force, one row per claim, read from every result's
    ``bands.csv``; ``amended=True`` adds the earlier bands that an amendment replaced
    (``status`` "amended"), which stay in the file.

    Every row says when it was declared (``declared``, ``declared_in``: the date and
    commit that first held it) and, for an amendment, what it amended and why.

    Raises:
        ValueError: naming the file, for a missing column, a status not in
            :data:`STATUSES`, a band that is not a number, a row of another result, a
            duplicate claim id among the bands in force, an amended band with no band in
            force, or a band with low >= high.
    """
    found = rows("bands.csv", BAND_COLUMNS)
    records = []
    for row in found:
        if row.fields["status"] not in STATUSES:
            raise ValueError(
                f"{row.where}: status must be one of {STATUSES}, got {row.fields['status']!r}"
            )
        try:
            numbers = {c: float(row.fields[c]) for c in _BAND_NUMBERS.values()}
        except ValueError:
            columns = ", ".join(_BAND_NUMBERS.values())
            raise ValueError(f"{row.where}: {columns} must be numbers") from None
        records.append({**row.fields, **numbers})
    df = pd.DataFrame(records) if records else pd.DataFrame(columns=BAND_COLUMNS)
    where = pd.Series([r.where for r in found], dtype=object)

    def problem(mask: pd.Series, what: str) -> None:
        if mask.any():
            raise ValueError(f"{what}: {df.loc[mask, 'claim'].tolist()} ({'; '.join(where[mask])})")

    is_old = df["status"] == "amended"
    in_force = df["claim"].where(~is_old)
    problem(is_old & ~df["claim"].isin(in_force), "amended bands without a band in force")
    problem(~is_old & in_force.duplicated(), "duplicate claim ids among the bands in force")
    problem(~(df["band_low"] < df["band_high"]), "band_low must be < band_high")
    old = df[is_old]
    df = df[~is_old].reset_index(drop=True)
    if amended and len(old):
        df = pd.concat([df, old], ignore_index=True)
    return df


def claim_band(claim_id: str, table: pd.DataFrame | None = None) -> Band | None:
    """The declared band of the claim ``claim_id`` (e.g. "R2.saved_share"), or None.

    ``table``: :func:`bands` read once by a caller that looks up many claims (reading
    and checking every result's bands.csv takes a few milliseconds); None reads it.
    """
    df = bands() if table is None else table
    return _band_of(df[df["claim"] == claim_id])


def amended_bands(claim_id: str) -> list[Band]:
    """The earlier bands of ``claim_id`` that an amendment replaced, oldest first ([] for
    none): a row judged against its band in force is also judged against these (with the
    published figure of the band in force: an amendment moves a band, not the figure)."""
    df = bands(amended=True)
    sel = df[(df["claim"] == claim_id) & (df["status"] == "amended")]
    return [_band_row(r) for _, r in sel.sort_values("declared", kind="stable").iterrows()]


def _band_of(sel: pd.DataFrame) -> Band | None:
    if sel.empty:
        return None
    return _band_row(sel.iloc[0])


#: Band's numeric fields and their columns in bands.csv; its text fields keep their names.
_BAND_NUMBERS = {"low": "band_low", "high": "band_high", "null": "null"}
_BAND_TEXTS = (
    *("claim", "result", "unit", "reason", "source"),
    *("declared", "declared_in", "status", "amendment"),
)


def _band_row(r: pd.Series) -> Band:
    """The Band of one row of bands.csv (its published figure is the claim's)."""
    return Band(
        **{field: float(r[column]) for field, column in _BAND_NUMBERS.items()},
        **{field: str(r[field]) for field in _BAND_TEXTS},
    )


#: ``read`` serves its siblings setups and evidence (a file named by its caller).
__all__ = [
    "STATUSES",
    "Band",
    "amended_bands",
    "bands",
    "claim_band",
    "files",
    "path",
    "published",
    "result_of",
    "rows",
]
